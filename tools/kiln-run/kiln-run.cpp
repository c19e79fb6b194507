//===- kiln-run.cpp - Run a compiled .kiln artifact once ------------------===//
//
// Reads inputs from .npy files (or fills them with seeded random values),
// runs the model on a device and writes each output as a .npy file, printing
// one summary line per output. Links only the runtime (no MLIR or LLVM).
// Every error is one line "kiln-run: error: ..." on stderr and exit code 1;
// output files are written only after a successful run, each atomically.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime.hpp"
#include "kiln/support/Npy.h"
#include "kiln/support/TensorUtil.h"
#include "kiln/support/Version.h"
#include "kiln/support/Trace.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace kiln;

namespace {

const char *const kUsage =
    "usage: kiln-run MODEL.kiln [options]\n"
    "\n"
    "Runs a compiled model once and writes its outputs as .npy files.\n"
    "\n"
    "options:\n"
    "  --device=DEVICE          cpu (default); hip:N, AMD GPU N (hip is\n"
    "                           hip:0); or emu:GFX, a gfx chip emulated on\n"
    "                           the CPU (gfx942, gfx950, gfx1100, gfx1201,\n"
    "                           gfx1250; needs a model compiled with\n"
    "                           --emulation)\n"
    "  --input=NAME=@FILE.npy   read input NAME from a .npy file\n"
    "                           (a bfloat16 input takes a float32 file,\n"
    "                           rounded to nearest even, or a uint16 file\n"
    "                           holding the raw bfloat16 bits)\n"
    "  --input=NAME=random      fill input NAME with seeded random values\n"
    "                           (floats in [-1, 1), integers in [0, 4))\n"
    "  --batch=N                run the program of batch bucket N (a model\n"
    "                           compiled with --batch-sizes; default: the\n"
    "                           first program)\n"
    "  --seed=N                 seed for random inputs (default: 0)\n"
    "  --threads=N              worker threads including the caller\n"
    "                           (default: 0 = one per available CPU)\n"
    "  --output-dir=DIR         write OUTPUT.npy files into DIR (created if\n"
    "                           missing); without it outputs are only\n"
    "                           summarized\n"
    "  --bf16-npy=float32|uint16\n"
    "                           how bfloat16 outputs are written (.npy has\n"
    "                           no bfloat16): their exact float32 values\n"
    "                           (default) or their raw bits as uint16\n"
    "  --trace=FILE             write a Chrome trace (chrome://tracing,\n"
    "                           Perfetto) of the run and every dispatch\n"
    "  --print-info             print the model's inputs, outputs and arena\n"
    "                           size, and exit\n"
    "  --help                   print this help\n"
    "  --version                print the version and the devices it runs on\n";

[[noreturn]] void fatal(const std::string &message) {
  std::fprintf(stderr, "kiln-run: error: %s\n", message.c_str());
  std::exit(1);
}

struct InputSpec {
  std::string name;
  bool random = false;
  std::string path;
};

struct Options {
  std::string model;
  std::string device = "cpu";
  std::vector<InputSpec> inputs;
  uint64_t seed = 0;
  uint64_t threads = 0;
  uint64_t batch = 0;
  std::string outputDir;
  bool bf16AsBits = false;
  bool printInfo = false;
  std::string trace;
};

Options parseArguments(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string text;
    if (arg == "--version") {
      std::fputs(kiln::support::runtimeVersionText("kiln-run").c_str(), stdout);
      std::exit(0);
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--print-info") {
      options.printInfo = true;
    } else if (support::flagValue(arg, "--device=", options.device)) {
    } else if (support::flagValue(arg, "--trace=", options.trace)) {
      if (options.trace.empty())
        fatal("--trace needs a file");
    } else if (support::flagValue(arg, "--output-dir=", options.outputDir)) {
      if (options.outputDir.empty())
        fatal("--output-dir needs a directory");
    } else if (support::flagValue(arg, "--bf16-npy=", text)) {
      if (text != "float32" && text != "uint16")
        fatal("--bf16-npy: expected float32 or uint16, got '" + text + "'");
      options.bf16AsBits = text == "uint16";
    } else if (support::flagValue(arg, "--seed=", text)) {
      if (!support::parseUint64(text, options.seed))
        fatal("--seed: '" + text + "' is not a non-negative integer");
    } else if (support::flagValue(arg, "--batch=", text)) {
      if (!support::parseUint64(text, options.batch) || options.batch < 1 ||
          options.batch > 65536)
        fatal("--batch: '" + text + "' is not a batch size (1-65536)");
    } else if (support::flagValue(arg, "--threads=", text)) {
      if (!support::parseUint64(text, options.threads) ||
          options.threads > 1024)
        fatal("--threads: '" + text + "' is not a thread count (0-1024)");
    } else if (support::flagValue(arg, "--input=", text)) {
      InputSpec spec;
      size_t at = text.find("=@");
      const std::string randomSuffix = "=random";
      if (at != std::string::npos && at > 0 && at + 2 < text.size()) {
        spec.name = text.substr(0, at);
        spec.path = text.substr(at + 2);
      } else if (text.size() > randomSuffix.size() &&
                 text.compare(text.size() - randomSuffix.size(),
                              randomSuffix.size(), randomSuffix) == 0) {
        spec.name = text.substr(0, text.size() - randomSuffix.size());
        spec.random = true;
      } else {
        fatal("--input=" + text +
              ": expected NAME=@FILE.npy or NAME=random");
      }
      options.inputs.push_back(spec);
    } else if (!arg.empty() && arg[0] == '-') {
      fatal("unknown option '" + arg + "' (see kiln-run --help)");
    } else if (options.model.empty()) {
      options.model = arg;
    } else {
      fatal("more than one model given ('" + options.model + "' and '" + arg +
            "')");
    }
  }
  if (options.model.empty())
    fatal("no model given (usage: kiln-run MODEL.kiln [options]; see --help)");
  return options;
}

void printInfo(const Artifact &artifact) {
  kiln_artifact_t *a = artifact.get();
  std::printf("artifact: %s\n", kiln_artifact_name(a));
  std::printf("producer: %s\n", kiln_artifact_producer(a));
  std::printf("model: %s\n", kiln_artifact_model(a));
  std::string targets;
  for (const std::string &t : artifact.targets())
    targets += (targets.empty() ? "" : ", ") + t;
  std::printf("targets: %s\n", targets.empty() ? "none" : targets.c_str());
  std::printf("constants: %" PRIu64 " bytes\n",
              kiln_artifact_constants_size(a));
  auto print = [](const char *indent, const char *what,
                  const std::vector<kiln_tensor_info_t> &l) {
    for (const kiln_tensor_info_t &t : l)
      std::printf("%s%s %s: %s %s\n", indent, what, t.name, kiln_dtype_name(t.dtype),
                  support::shapeString(
                      std::vector<int64_t>(t.shape, t.shape + t.rank))
                      .c_str());
  };
  for (size_t i = 0; i < kiln_artifact_program_count(a); ++i) {
    uint32_t batch = kiln_artifact_program_batch_size(a, i);
    std::printf("program '%s': ", kiln_artifact_program_name(a, i));
    if (batch)
      std::printf("batch size %u, ", batch);
    std::printf("arena %" PRIu64 " bytes, %zu dispatches\n", kiln_artifact_arena_size(a, i),
                kiln_artifact_dispatch_count(a, i));
    if (batch) {
      print("  ", "input", artifact.inputs(i));
      print("  ", "output", artifact.outputs(i));
    }
  }
  print("", "input", artifact.inputs());
  print("", "output", artifact.outputs());
}

/// Creates `path` and missing parents.
void makeDirectories(const std::string &path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    std::string prefix = path.substr(0, slash);
    struct stat st;
    if (stat(prefix.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode))
        fatal(prefix + ": exists and is not a directory");
    } else if (mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) {
      fatal(prefix + ": cannot create the directory: " + std::strerror(errno));
    }
    if (slash == std::string::npos)
      return;
  }
}

/// A .npy given for a bfloat16 input, which .npy cannot hold: uint16 is
/// taken as the raw bits, float32 is rounded to nearest even; other dtypes
/// stay as they are (and the session names the mismatch).
void toBFloat16(Tensor &tensor) {
  if (tensor.dtype == KILN_DTYPE_U16) {
    tensor.dtype = KILN_DTYPE_BF16;
    return;
  }
  if (tensor.dtype != KILN_DTYPE_F32)
    return;
  std::vector<unsigned char> bits(size_t(tensor.elementCount()) * 2);
  for (uint64_t e = 0; e < tensor.elementCount(); ++e) {
    uint32_t f;
    std::memcpy(&f, tensor.data.data() + e * 4, 4);
    uint16_t b = (f & 0x7fffffffu) > 0x7f800000u
                     ? uint16_t((f >> 16) | 0x40) // NaN stays a (quiet) NaN
                     : uint16_t((f + 0x7fffu + ((f >> 16) & 1)) >> 16);
    std::memcpy(bits.data() + e * 2, &b, 2);
  }
  tensor.dtype = KILN_DTYPE_BF16;
  tensor.data = std::move(bits);
}

std::string formatValue(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.6g", value);
  return buffer;
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseArguments(argc, argv);

  Artifact artifact;
  Status status = Artifact::open(options.model, artifact);
  if (!status.ok())
    fatal(status.message());
  if (options.printInfo) {
    printInfo(artifact);
    return 0;
  }

  Device device;
  status = Device::create(options.device, uint32_t(options.threads), device);
  if (!status.ok())
    fatal(status.message());
  Session session;
  kiln_session_options_t sessionOptions;
  kiln_session_options_init(&sessionOptions);
  sessionOptions.batch_size = uint32_t(options.batch);
  support::TraceRecorder trace;
  if (!options.trace.empty()) {
    sessionOptions.trace_callback = support::TraceRecorder::callback;
    sessionOptions.trace_user_data = &trace;
  }
  status = Session::create(device, artifact, &sessionOptions, session);
  if (!status.ok())
    fatal(status.message());

  // Inputs: from files or random; names, dtypes and shapes are checked by
  // the session (random ones take the program's dtype and shape).
  std::vector<kiln_tensor_info_t> modelInputs = session.inputs();
  std::vector<std::pair<std::string, std::string>> pinned = artifact.pinnedInputs();
  std::vector<Tensor> inputs;
  for (const InputSpec &spec : options.inputs) {
    Tensor tensor;
    auto pin = std::find_if(pinned.begin(), pinned.end(),
                            [&](const auto &p) { return p.first == spec.name; });
    if (pin != pinned.end()) {
      // Folded into the code at compile time: only that very value may be given.
      std::string error;
      if (spec.random || !npy::read(spec.path, tensor, error) ||
          !support::equalsValueList(tensor, pin->second))
        fatal("input '" + spec.name + "' was pinned to " + pin->second +
              " at compile time (kiln-compile --input-value); this artifact cannot take " +
              (spec.random ? "random values" : error.empty() ? "another value" : error) +
              ": leave the input out, or compile again");
      continue;
    }
    if (spec.random) {
      const kiln_tensor_info_t *info = nullptr;
      std::string names;
      for (const kiln_tensor_info_t &m : modelInputs) {
        names += (names.empty() ? "" : ", ") + std::string(m.name);
        if (spec.name == m.name)
          info = &m;
      }
      if (!info)
        fatal("no model input named '" + spec.name +
              "' (the model's inputs are: " + (names.empty() ? "none" : names) +
              ")");
      tensor.dtype = info->dtype;
      tensor.shape.assign(info->shape, info->shape + info->rank);
      support::fillRandom(tensor, support::inputSeed(options.seed, spec.name));
    } else {
      std::string error;
      if (!npy::read(spec.path, tensor, error))
        fatal("input '" + spec.name + "': " + error);
      auto model = std::find_if(modelInputs.begin(), modelInputs.end(),
                                [&](const kiln_tensor_info_t &m) { return spec.name == m.name; });
      if (model != modelInputs.end() && model->dtype == KILN_DTYPE_BF16)
        toBFloat16(tensor);
    }
    tensor.name = spec.name;
    inputs.push_back(std::move(tensor));
  }

  std::vector<Tensor> outputs;
  uint64_t runStart = support::TraceRecorder::nowNs();
  status = session.run(inputs, outputs);
  if (!options.trace.empty()) {
    trace.add("run", "run", runStart, support::TraceRecorder::nowNs() - runStart,
              {{"model", options.model}, {"device", options.device}});
    std::string error;
    if (!trace.write(options.trace, error))
      fatal(error);
  }
  if (!status.ok())
    fatal(status.message());

  std::vector<std::string> paths(outputs.size());
  if (!options.outputDir.empty()) {
    makeDirectories(options.outputDir);
    std::set<std::string> used;
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string base = support::sanitizeFileName(outputs[i].name);
      std::string file = base;
      for (unsigned n = 1; !used.insert(file).second; ++n)
        file = base + "_" + std::to_string(n);
      paths[i] = options.outputDir + "/" + file + ".npy";
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor &output = outputs[i];
    support::Summary s = support::summarize(output);
    std::string line = output.name + ": " + kiln_dtype_name(output.dtype) +
                       " " + support::shapeString(output.shape);
    if (s.count != s.nanCount)
      line += " min " + formatValue(s.min) + " max " + formatValue(s.max) +
              " mean " + formatValue(s.mean);
    if (s.nanCount)
      line += " nan " + std::to_string(s.nanCount);
    if (!paths[i].empty()) {
      Tensor converted;
      const Tensor *toWrite = &output;
      if (output.dtype == KILN_DTYPE_BF16 && options.bf16AsBits) {
        converted.dtype = KILN_DTYPE_U16;
        converted.shape = output.shape;
        converted.data = output.data;
        toWrite = &converted;
        line += " (written as its uint16 bits)";
      } else if (output.dtype == KILN_DTYPE_BF16) {
        // .npy has no bfloat16: write the exact float32 values.
        converted.dtype = KILN_DTYPE_F32;
        converted.shape = output.shape;
        converted.data.resize(size_t(output.elementCount()) * 4);
        for (uint64_t e = 0; e < output.elementCount(); ++e) {
          float v = float(support::elementAsDouble(output, e));
          std::memcpy(converted.data.data() + e * 4, &v, 4);
        }
        toWrite = &converted;
        line += " (written as float32)";
      }
      std::string error;
      if (!npy::write(paths[i], *toWrite, error))
        fatal(error);
      line += " -> " + paths[i];
    }
    std::printf("%s\n", line.c_str());
  }
  return 0;
}
