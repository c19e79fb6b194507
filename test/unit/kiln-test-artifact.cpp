//===- kiln-test-artifact.cpp - Writes a small valid artifact for tests ---===//
//
// kiln-test-artifact OUT.kiln [--code-object=LIB.so] [--symbol=NAME]
//                             [--target=NAME] [--gfx=TARGET=FILE]...
//                             [--gfx-kernel=NAME=SYMBOL[:THREADS[:LDS]]]...
//
// Writes an artifact with inputs x, y (float32 [4, 8]) and the output
// z = x + y, computed by one dispatch of the test kernel `add_f32` in
// 2 workgroups. The arena holds x at 0, y at 128 and z at 256 (384 bytes).
// The dispatch also gets a fourth binding, a constant float (2.0) that
// add_f32 ignores, so tests can patch a constant range too. --symbol and
// --target produce artifacts whose kernel symbol or target the cpu device
// cannot use (for error tests).
//
// --gfx adds FILE (a HSACO) as the code object of gfx TARGET; its kernel
// table comes from the --gfx-kernel options, in order: kernel i is named
// NAME, enters at SYMBOL, runs THREADS threads per workgroup (default 256)
// and allocates LDS bytes (default 0). Kernel tables must be equally long,
// so the cpu code object gets one add_f32 entry per --gfx-kernel (named
// alike), and each kernel after the first one more dispatch computing z.
//
//===----------------------------------------------------------------------===//

#include "artifact/ArtifactWriter.h"
#include "kiln/support/TensorUtil.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#ifndef KILN_TEST_KERNELS_PATH
#error "KILN_TEST_KERNELS_PATH must name the test kernel library"
#endif

using namespace kiln::artifact;

int main(int argc, char **argv) {
  std::string out, codeObjectPath = KILN_TEST_KERNELS_PATH;
  std::string symbol = "add_f32", target = "cpu";
  std::vector<std::pair<std::string, std::string>> gfxObjects; // target, file
  std::vector<KernelDesc> gfxKernels;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], text;
    if (kiln::support::flagValue(arg, "--code-object=", codeObjectPath) ||
        kiln::support::flagValue(arg, "--symbol=", symbol) ||
        kiln::support::flagValue(arg, "--target=", target))
      continue;
    if (kiln::support::flagValue(arg, "--gfx=", text)) {
      size_t eq = text.find('=');
      if (eq == 0 || eq == std::string::npos || eq + 1 == text.size()) {
        std::fprintf(stderr,
                     "kiln-test-artifact: error: --gfx=%s: expected "
                     "TARGET=FILE\n",
                     text.c_str());
        return 1;
      }
      gfxObjects.push_back({text.substr(0, eq), text.substr(eq + 1)});
      continue;
    }
    if (kiln::support::flagValue(arg, "--gfx-kernel=", text)) {
      // NAME=SYMBOL[:THREADS[:LDS]]
      KernelDesc kernel{"", "", 2, {256}, 0};
      size_t eq = text.find('=');
      std::string rest = eq == std::string::npos ? "" : text.substr(eq + 1);
      size_t colon = rest.find(':');
      kernel.name = text.substr(0, eq);
      kernel.symbol = rest.substr(0, colon);
      bool ok = eq != std::string::npos && !kernel.name.empty() &&
                !kernel.symbol.empty();
      if (ok && colon != std::string::npos) {
        std::string numbers = rest.substr(colon + 1);
        size_t second = numbers.find(':');
        uint64_t threads = 0, lds = 0;
        ok = kiln::support::parseUint64(numbers.substr(0, second), threads) &&
             threads > 0 && threads <= 1024 &&
             (second == std::string::npos ||
              (kiln::support::parseUint64(numbers.substr(second + 1), lds) &&
               lds <= UINT32_MAX));
        kernel.workgroupSize = {uint32_t(threads)};
        kernel.ldsBytes = uint32_t(lds);
      }
      if (!ok) {
        std::fprintf(stderr,
                     "kiln-test-artifact: error: --gfx-kernel=%s: "
                     "expected NAME=SYMBOL[:THREADS[:LDS]]\n",
                     text.c_str());
        return 1;
      }
      gfxKernels.push_back(kernel);
      continue;
    }
    if (arg.empty() || arg[0] == '-' || !out.empty()) {
      std::fprintf(stderr,
                   "usage: kiln-test-artifact OUT.kiln [--code-object=LIB.so] "
                   "[--symbol=NAME] [--target=NAME] [--gfx=TARGET=FILE]... "
                   "[--gfx-kernel=NAME=SYMBOL[:THREADS[:LDS]]]...\n");
      return 1;
    }
    out = arg;
  }
  if (out.empty()) {
    std::fprintf(stderr, "kiln-test-artifact: error: no output file\n");
    return 1;
  }
  auto readFile = [](const std::string &path, std::string &bytes) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream stream;
    stream << in.rdbuf();
    if (!in) {
      std::fprintf(stderr, "kiln-test-artifact: error: cannot read %s\n",
                   path.c_str());
      return false;
    }
    bytes = stream.str();
    return true;
  };
  std::string cpuBytes;
  if (!readFile(codeObjectPath, cpuBytes))
    return 1;
  if (!gfxObjects.empty() && gfxKernels.empty()) {
    std::fprintf(stderr, "kiln-test-artifact: error: --gfx needs at least one "
                         "--gfx-kernel\n");
    return 1;
  }

  ArtifactWriter writer;
  writer.setProducer("kiln-test-artifact");
  writer.setOptions("");
  writer.setModel("add.onnx");
  static const float two = 2.0f;
  uint64_t constant = writer.addConstant(&two, sizeof(two));
  writer.addInput({"x", DType::F32, {4, 8}});
  writer.addInput({"y", DType::F32, {4, 8}});
  writer.addOutput({"z", DType::F32, {4, 8}});

  CodeObjectDesc code;
  code.target = target;
  code.triple = "x86_64-unknown-linux-gnu";
  code.cpu = "x86-64";
  code.format = "elf-shared-object";
  code.bytes = cpuBytes;
  code.kernels.push_back({"dispatch_0_add", symbol, 2, {1}, 0});
  for (size_t k = 0; k < gfxKernels.size(); ++k) {
    if (k == 0)
      code.kernels[0].name = gfxKernels[0].name;
    else
      code.kernels.push_back({gfxKernels[k].name, symbol, 2, {1}, 0});
  }
  writer.addCodeObject(code);
  for (const auto &[gfxTarget, path] : gfxObjects) {
    CodeObjectDesc gfx;
    gfx.target = gfxTarget;
    gfx.triple = "amdgcn-amd-amdhsa";
    gfx.cpu = gfxTarget;
    gfx.format = "hsaco";
    if (!readFile(path, gfx.bytes))
      return 1;
    gfx.kernels = gfxKernels;
    writer.addCodeObject(gfx);
  }

  ProgramDesc program;
  program.arenaSize = 384;
  program.inputs = {{BindingDesc::Arena, 0, 128},
                    {BindingDesc::Arena, 128, 128}};
  program.outputs = {{BindingDesc::Arena, 256, 128}};
  DispatchDesc add;
  add.kernel = 0;
  add.bindings = {{BindingDesc::Arena, 0, 128},
                  {BindingDesc::Arena, 128, 128},
                  {BindingDesc::Arena, 256, 128},
                  {BindingDesc::Constant, constant, sizeof(two)}};
  add.flops = 32;
  add.bytes = 384;
  add.ops = "Add_0";
  program.dispatches.push_back(add);
  for (size_t k = 1; k < gfxKernels.size(); ++k) {
    add.kernel = uint32_t(k);
    program.dispatches.push_back(add);
  }
  writer.addProgram(program);

  std::string error;
  if (!writer.writeFile(out, error)) {
    std::fprintf(stderr, "kiln-test-artifact: error: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
