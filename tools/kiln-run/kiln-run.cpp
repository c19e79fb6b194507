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
    "  --cpus=LIST              pin the device's worker threads to these\n"
    "                           CPUs (0-3,8; default: unpinned)\n"
    "  --run-timeout-ms=N       stop the run if it takes longer than N ms\n"
    "                           (exit 1; a Loop that runs on)\n"
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
    "  --emu-stats[=FILE.json]  on an emu:GFX device: per kernel and LDS or\n"
    "                           global access site, the LDS bank-conflict\n"
    "                           cycles and the cache lines touched (the run\n"
    "                           is several times slower); with FILE, every\n"
    "                           site as JSON too\n"
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
  std::string cpus;
  uint64_t runTimeoutMs = 0;
  uint64_t batch = 0;
  std::string outputDir;
  bool bf16AsBits = false;
  bool printInfo = false;
  std::string trace;
  bool emuStats = false;
  std::string emuStatsJson;
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
    } else if (arg == "--emu-stats") {
      options.emuStats = true;
    } else if (support::flagValue(arg, "--emu-stats=", options.emuStatsJson)) {
      if (options.emuStatsJson.empty())
        fatal("--emu-stats= needs a file");
      options.emuStats = true;
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
    } else if (support::flagValue(arg, "--cpus=", options.cpus)) {
      if (options.cpus.empty())
        fatal("--cpus: expected a CPU list such as 0-3,8");
    } else if (support::flagValue(arg, "--run-timeout-ms=", text)) {
      if (!support::parseUint64(text, options.runTimeoutMs) ||
          options.runTimeoutMs < 1 || options.runTimeoutMs > 86400000)
        fatal("--run-timeout-ms: '" + text +
              "' is not a time limit in milliseconds (1-86400000)");
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
  kiln::Bytes bits(size_t(tensor.elementCount()) * 2);
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

const char *accessKindName(kiln_emu_access_kind_t kind) {
  switch (kind) {
  case KILN_EMU_LDS_LOAD:
    return "lds load";
  case KILN_EMU_LDS_STORE:
    return "lds store";
  case KILN_EMU_GLOBAL_LOAD:
    return "global load";
  case KILN_EMU_GLOBAL_STORE:
    return "global store";
  }
  return "?";
}

bool isLds(const kiln_emu_site_stats_t &site) {
  return site.kind == KILN_EMU_LDS_LOAD || site.kind == KILN_EMU_LDS_STORE;
}

/// Cycles over ideal cycles (LDS), 1 when nothing ran.
double conflictFactor(uint64_t cycles, uint64_t ideal) {
  return ideal ? double(cycles) / double(ideal) : 1.0;
}

/// Requested bytes over the bytes of the lines touched (global).
double coalescingEfficiency(uint64_t requested, uint64_t lines,
                            uint32_t lineBytes) {
  return lines ? double(requested) / double(lines * lineBytes) : 1.0;
}

/// The sites of --emu-stats as tables per dispatch, LDS sites by cycles and
/// global sites by lines touched, the costliest first.
void printEmuStats(const kiln_emu_memory_model_t &model,
                   const std::vector<kiln_emu_site_stats_t> &sites,
                   size_t dispatchCount, bool withJson) {
  const size_t kTop = 12;
  std::printf("emu stats: %s%s (%s)\n", model.chip,
              model.provisional ? " [provisional]" : "", model.basis);
  if (sites.empty())
    std::printf("  no LDS or global access was reported (an artifact compiled "
                "before --emu-stats existed reports none)\n");
  for (size_t d = 0; d < dispatchCount; ++d) {
    std::vector<kiln_emu_site_stats_t> lds, global;
    for (const kiln_emu_site_stats_t &site : sites)
      if (site.dispatch == d)
        (isLds(site) ? lds : global).push_back(site);
    if (lds.empty() && global.empty())
      continue;
    const char *kernel = (lds.empty() ? global : lds).front().kernel;
    uint64_t ideal = 0, cycles = 0, requested = 0, lines = 0;
    for (const auto &site : lds)
      ideal += site.ideal_cycles, cycles += site.cycles;
    for (const auto &site : global)
      requested += site.requested_bytes, lines += site.cache_lines;
    std::printf("dispatch %zu %s:", d, kernel);
    if (!lds.empty())
      std::printf(" LDS %" PRIu64 " cycles for %" PRIu64 " ideal (x%.2f)%s",
                  cycles, ideal, conflictFactor(cycles, ideal),
                  global.empty() ? "" : ";");
    if (!global.empty())
      std::printf(" global %" PRIu64 " B requested in %" PRIu64
                  " lines of %u B (efficiency %.2f)",
                  requested, lines, model.cache_line_bytes,
                  coalescingEfficiency(requested, lines, model.cache_line_bytes));
    std::printf("\n");
    std::sort(lds.begin(), lds.end(), [](const auto &a, const auto &b) {
      return a.cycles != b.cycles ? a.cycles > b.cycles : a.site < b.site;
    });
    std::sort(global.begin(), global.end(), [](const auto &a, const auto &b) {
      return a.cache_lines != b.cache_lines ? a.cache_lines > b.cache_lines
                                            : a.site < b.site;
    });
    auto where = [](const kiln_emu_site_stats_t &site) {
      std::string text = site.op;
      if (site.location[0])
        text += std::string(" @ ") + site.location;
      return text;
    };
    if (!lds.empty())
      std::printf("  %5s  %-12s %10s %6s %10s %10s %8s %6s  %s\n", "site",
                  "kind", "executions", "B/lane", "ideal", "cycles",
                  "conflict", "worst", "op @ location");
    for (size_t i = 0; i < lds.size() && i < kTop; ++i) {
      const auto &site = lds[i];
      std::printf("  %5u  %-12s %10" PRIu64 " %6u %10" PRIu64 " %10" PRIu64
                  " %7.2fx %5.1fx  %s\n",
                  site.site, accessKindName(site.kind), site.executions,
                  site.bytes_per_lane, site.ideal_cycles, site.cycles,
                  conflictFactor(site.cycles, site.ideal_cycles),
                  site.max_degree, where(site).c_str());
    }
    if (lds.size() > kTop)
      std::printf("  ... %zu more LDS sites%s\n", lds.size() - kTop,
                  withJson ? " (in the JSON file)" : " (--emu-stats=FILE.json lists all)");
    if (!global.empty())
      std::printf("  %5s  %-12s %10s %6s %10s %10s %10s  %s\n", "site", "kind",
                  "executions", "B/lane", "bytes", "lines", "efficiency",
                  "op @ location");
    for (size_t i = 0; i < global.size() && i < kTop; ++i) {
      const auto &site = global[i];
      std::printf("  %5u  %-12s %10" PRIu64 " %6u %10" PRIu64 " %10" PRIu64
                  " %10.3f  %s\n",
                  site.site, accessKindName(site.kind), site.executions,
                  site.bytes_per_lane, site.requested_bytes, site.cache_lines,
                  coalescingEfficiency(site.requested_bytes, site.cache_lines,
                                       model.cache_line_bytes),
                  where(site).c_str());
    }
    if (global.size() > kTop)
      std::printf("  ... %zu more global sites%s\n", global.size() - kTop,
                  withJson ? " (in the JSON file)" : " (--emu-stats=FILE.json lists all)");
  }
}

/// Every site as JSON, written through FILE.tmp and a rename.
void writeEmuStatsJson(const std::string &path, const std::string &device,
                       const kiln_emu_memory_model_t &model,
                       const std::vector<kiln_emu_site_stats_t> &sites) {
  std::string json = "{\"device\":" + support::jsonString(device) +
                     ",\"model\":{\"chip\":" + support::jsonString(model.chip) +
                     ",\"wave_size\":" + std::to_string(model.wave_size) +
                     ",\"lds_banks\":" + std::to_string(model.lds_banks) +
                     ",\"lds_bank_bytes\":" + std::to_string(model.lds_bank_bytes) +
                     ",\"cache_line_bytes\":" + std::to_string(model.cache_line_bytes) +
                     ",\"provisional\":" + (model.provisional ? "true" : "false") +
                     ",\"basis\":" + support::jsonString(model.basis) + "},\"sites\":[";
  char number[64];
  for (size_t i = 0; i < sites.size(); ++i) {
    const kiln_emu_site_stats_t &s = sites[i];
    json += i ? ",{" : "{";
    json += "\"dispatch\":" + std::to_string(s.dispatch) +
            ",\"kernel\":" + support::jsonString(s.kernel) +
            ",\"site\":" + std::to_string(s.site) +
            ",\"kind\":" + support::jsonString(accessKindName(s.kind)) +
            ",\"op\":" + support::jsonString(s.op) +
            ",\"location\":" + support::jsonString(s.location) +
            ",\"bytes_per_lane\":" + std::to_string(s.bytes_per_lane) +
            ",\"executions\":" + std::to_string(s.executions) +
            ",\"lane_accesses\":" + std::to_string(s.lane_accesses) +
            ",\"requested_bytes\":" + std::to_string(s.requested_bytes);
    if (isLds(s)) {
      std::snprintf(number, sizeof(number), "%.6g,\"max_degree\":%.6g",
                    conflictFactor(s.cycles, s.ideal_cycles), s.max_degree);
      json += ",\"ideal_cycles\":" + std::to_string(s.ideal_cycles) +
              ",\"cycles\":" + std::to_string(s.cycles) +
              ",\"conflicted_executions\":" + std::to_string(s.conflicted_executions) +
              ",\"conflict_factor\":" + number;
    } else {
      std::snprintf(number, sizeof(number), "%.6g",
                    coalescingEfficiency(s.requested_bytes, s.cache_lines,
                                         model.cache_line_bytes));
      json += ",\"cache_lines\":" + std::to_string(s.cache_lines) +
              ",\"segments_64\":" + std::to_string(s.segments_64) +
              ",\"efficiency\":" + number;
    }
    json += "}";
  }
  json += "]}\n";
  std::string tmp = path + ".tmp";
  FILE *file = std::fopen(tmp.c_str(), "wb");
  if (!file)
    fatal(path + ": cannot write: " + std::strerror(errno));
  bool ok = std::fwrite(json.data(), 1, json.size(), file) == json.size();
  ok = std::fclose(file) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    fatal(path + ": cannot write: " + std::strerror(errno));
  }
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
  status = Device::create(options.device, uint32_t(options.threads), device,
                          options.cpus);
  if (!status.ok())
    fatal(status.message());
  Session session;
  kiln_session_options_t sessionOptions;
  kiln_session_options_init(&sessionOptions);
  sessionOptions.batch_size = uint32_t(options.batch);
  sessionOptions.run_timeout_us = options.runTimeoutMs * 1000;
  if (options.emuStats) {
    if (options.device.rfind("emu:", 0) != 0)
      fatal("--emu-stats needs an emulated device (--device=emu:GFX), not '" +
            options.device + "'");
    sessionOptions.enable_emu_stats = 1;
  }
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

  if (options.emuStats) {
    kiln_emu_memory_model_t model;
    if (kiln_status_t error = kiln_session_emu_memory_model(session.get(), &model))
      fatal(Status(error).message());
    std::vector<kiln_emu_site_stats_t> sites(kiln_session_emu_site_count(session.get()));
    for (size_t i = 0; i < sites.size(); ++i)
      if (kiln_status_t error = kiln_session_emu_site_stats(session.get(), i, &sites[i]))
        fatal(Status(error).message());
    printEmuStats(model, sites, kiln_session_dispatch_count(session.get()),
                  !options.emuStatsJson.empty());
    if (!options.emuStatsJson.empty())
      writeEmuStatsJson(options.emuStatsJson, options.device, model, sites);
  }
  return 0;
}
