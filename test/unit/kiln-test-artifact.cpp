//===- kiln-test-artifact.cpp - Writes a small valid artifact for tests ---===//
//
// kiln-test-artifact OUT.kiln [--code-object=LIB.so] [--symbol=NAME]
//                             [--target=NAME]
//
// Writes an artifact with inputs x, y (float32 [4, 8]) and the output
// z = x + y, computed by one dispatch of the test kernel `add_f32` in
// 2 workgroups. The arena holds x at 0, y at 128 and z at 256 (384 bytes).
// The dispatch also gets a fourth binding, a constant float (2.0) that
// add_f32 ignores, so tests can patch a constant range too. --symbol and --target produce artifacts whose
// kernel symbol or target the cpu device cannot use (for error tests).
//
//===----------------------------------------------------------------------===//

#include "compiler/artifact/ArtifactWriter.h"
#include "runtime/support/TensorUtil.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#ifndef KILN_TEST_KERNELS_PATH
#error "KILN_TEST_KERNELS_PATH must name the test kernel library"
#endif

using namespace kiln::artifact;

int main(int argc, char **argv) {
  std::string out, codeObjectPath = KILN_TEST_KERNELS_PATH;
  std::string symbol = "add_f32", target = "cpu";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (kiln::support::flagValue(arg, "--code-object=", codeObjectPath) || kiln::support::flagValue(arg, "--symbol=", symbol) ||
        kiln::support::flagValue(arg, "--target=", target))
      continue;
    if (arg.empty() || arg[0] == '-' || !out.empty()) {
      std::fprintf(stderr,
                   "usage: kiln-test-artifact OUT.kiln [--code-object=LIB.so] "
                   "[--symbol=NAME] [--target=NAME]\n");
      return 1;
    }
    out = arg;
  }
  if (out.empty()) {
    std::fprintf(stderr, "kiln-test-artifact: error: no output file\n");
    return 1;
  }
  std::ifstream in(codeObjectPath, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  if (!in) {
    std::fprintf(stderr, "kiln-test-artifact: error: cannot read %s\n",
                 codeObjectPath.c_str());
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
  code.bytes = bytes.str();
  code.kernels.push_back({"dispatch_0_add", symbol, 2, {1}, 0});
  writer.addCodeObject(code);

  ProgramDesc program;
  program.arenaSize = 384;
  program.inputs = {{BindingDesc::Arena, 0, 128}, {BindingDesc::Arena, 128, 128}};
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
  writer.addProgram(program);

  std::string error;
  if (!writer.writeFile(out, error)) {
    std::fprintf(stderr, "kiln-test-artifact: error: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
