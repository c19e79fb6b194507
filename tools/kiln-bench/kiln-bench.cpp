//===- kiln-bench.cpp - Latency and per-dispatch profile of an artifact ---===//
//
// Runs a compiled model repeatedly on seeded random inputs and reports the
// latency distribution, throughput, arena size and the slowest dispatches.
// `--json` prints the same as one JSON line for scripts. Links only the
// runtime (no MLIR or LLVM).
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime.hpp"
#include "kiln/support/Npy.h"
#include "kiln/support/TensorUtil.h"
#include "kiln/support/Version.h"
#include "kiln/support/Trace.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

using namespace kiln;

namespace {

const char *const kUsage =
    "usage: kiln-bench MODEL.kiln [options]\n"
    "\n"
    "Measures the latency of a compiled model on random inputs.\n"
    "\n"
    "options:\n"
    "  --device=DEVICE      cpu (default); hip:N, AMD GPU N (hip is hip:0);\n"
    "                       or emu:GFX, a gfx chip emulated on the CPU\n"
    "                       (gfx942, gfx950, gfx1100, gfx1201, gfx1250;\n"
    "                       needs a model compiled with --emulation)\n"
    "  --batch=N            time the program of batch bucket N (a model\n"
    "                       compiled with --batch-sizes; default: the first)\n"
    "  --trace=FILE         write a Chrome trace of every run and dispatch\n"
    "                       (adds a clock read and a record per dispatch)\n"
    "  --threads=N          worker threads including the caller\n"
    "                       (default: 0 = one per available CPU)\n"
    "  --warmup=W           untimed runs first (default: 3)\n"
    "  --iterations=I       timed runs\n"
    "  --min-time=S         time runs until S seconds have passed\n"
    "                       (default: --min-time=1)\n"
    "  --seed=N             seed for the random inputs (default: 0)\n"
    "  --input=NAME=@FILE.npy  input NAME from a .npy file instead of random\n"
    "                       values (a trip count, a flag, real data)\n"
    "  --top=N              slowest dispatches to list (default: 10), each with\n"
    "                       its GFLOP/s (the FLOPs its code object records)\n"
    "  --peak-gflops=G      one thread's peak GFLOP/s (bench/fp32/peak.cpp\n"
    "                       measures it): --top also shows each dispatch's\n"
    "                       fraction of G x threads\n"
    "  --json               print one JSON line instead of the table\n"
    "  --help               print this help\n"
    "  --version            print the version and the devices it runs on\n";

[[noreturn]] void fatal(const std::string &message) {
  std::fprintf(stderr, "kiln-bench: error: %s\n", message.c_str());
  std::exit(1);
}

struct Options {
  std::string model;
  std::string device = "cpu";
  uint64_t threads = 0;
  uint64_t batch = 0;
  std::string trace;
  uint64_t warmup = 3;
  uint64_t iterations = 0; // 0: use minTime
  double minTime = 1.0;
  bool haveIterations = false, haveMinTime = false;
  uint64_t seed = 0;
  uint64_t top = 10;
  double peakGflops = 0; // 0: not given
  bool json = false;
  std::vector<std::pair<std::string, std::string>> inputFiles; // name, path
};

Options parseArguments(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto count = [&](const std::string &text, uint64_t &into, uint64_t min,
                     uint64_t max, const char *flag) {
      if (!support::parseUint64(text, into) || into < min || into > max)
        fatal(std::string(flag) + ": '" + text + "' is not an integer in [" +
              std::to_string(min) + ", " + std::to_string(max) + "]");
    };
    std::string text;
    if (arg == "--version") {
      std::fputs(kiln::support::runtimeVersionText("kiln-bench").c_str(), stdout);
      std::exit(0);
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--json") {
      options.json = true;
    } else if (support::flagValue(arg, "--device=", options.device)) {
    } else if (support::flagValue(arg, "--threads=", text)) {
      count(text, options.threads, 0, 1024, "--threads");
    } else if (support::flagValue(arg, "--trace=", options.trace)) {
      if (options.trace.empty())
        fatal("--trace needs a file");
    } else if (support::flagValue(arg, "--batch=", text)) {
      count(text, options.batch, 1, 65536, "--batch");
    } else if (support::flagValue(arg, "--warmup=", text)) {
      count(text, options.warmup, 0, 1000000, "--warmup");
    } else if (support::flagValue(arg, "--iterations=", text)) {
      count(text, options.iterations, 1, 100000000, "--iterations");
      options.haveIterations = true;
    } else if (support::flagValue(arg, "--min-time=", text)) {
      if (!support::parseDouble(text, options.minTime) || options.minTime < 0)
        fatal("--min-time: '" + text + "' is not a number of seconds");
      options.haveMinTime = true;
    } else if (support::flagValue(arg, "--seed=", text)) {
      count(text, options.seed, 0, UINT64_MAX, "--seed");
    } else if (support::flagValue(arg, "--input=", text)) {
      size_t at = text.find("=@");
      if (at == std::string::npos || at == 0 || at + 2 == text.size())
        fatal("--input=" + text + ": expected NAME=@FILE.npy");
      options.inputFiles.emplace_back(text.substr(0, at), text.substr(at + 2));
    } else if (support::flagValue(arg, "--top=", text)) {
      count(text, options.top, 0, 1000000, "--top");
    } else if (support::flagValue(arg, "--peak-gflops=", text)) {
      if (!support::parseDouble(text, options.peakGflops) || !(options.peakGflops > 0))
        fatal("--peak-gflops: '" + text + "' is not a positive number of GFLOP/s");
    } else if (!arg.empty() && arg[0] == '-') {
      fatal("unknown option '" + arg + "' (see kiln-bench --help)");
    } else if (options.model.empty()) {
      options.model = arg;
    } else {
      fatal("more than one model given ('" + options.model + "' and '" + arg +
            "')");
    }
  }
  if (options.model.empty())
    fatal("no model given (usage: kiln-bench MODEL.kiln [options]; see "
          "--help)");
  if (options.haveIterations && options.haveMinTime)
    fatal("--iterations and --min-time cannot be combined");
  return options;
}

/// Nearest-rank percentile of sorted values.
double percentile(const std::vector<double> &sorted, double p) {
  size_t rank = size_t(std::ceil(p / 100.0 * double(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank ? rank - 1 : 0)];
}

/// JSON numbers: 9 significant digits.
std::string number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.9g", value);
  return buffer;
}

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

/// Milliseconds with 4 significant digits below 1 ms, 3 decimals above.
std::string ms(double value) {
  char buffer[64];
  if (value >= 1.0 || value == 0.0)
    std::snprintf(buffer, sizeof(buffer), "%.3f", value);
  else
    std::snprintf(buffer, sizeof(buffer), "%.4g", value);
  return buffer;
}

std::string bytesString(uint64_t bytes) {
  char buffer[64];
  if (bytes < 1024)
    std::snprintf(buffer, sizeof(buffer), "%" PRIu64 " B", bytes);
  else if (bytes < 1024 * 1024)
    std::snprintf(buffer, sizeof(buffer), "%.1f KiB", double(bytes) / 1024);
  else
    std::snprintf(buffer, sizeof(buffer), "%.1f MiB",
                  double(bytes) / (1024 * 1024));
  return buffer;
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseArguments(argc, argv);

  Artifact artifact;
  Status status = Artifact::open(options.model, artifact);
  if (!status.ok())
    fatal(status.message());
  Device device;
  status = Device::create(options.device, uint32_t(options.threads), device);
  if (!status.ok())
    fatal(status.message());
  kiln_session_options_t sessionOptions;
  kiln_session_options_init(&sessionOptions);
  sessionOptions.enable_profiling = 1;
  sessionOptions.batch_size = uint32_t(options.batch);
  support::TraceRecorder trace;
  if (!options.trace.empty()) {
    sessionOptions.trace_callback = support::TraceRecorder::callback;
    sessionOptions.trace_user_data = &trace;
  }
  Session session;
  status = Session::create(device, artifact, &sessionOptions, session);
  if (!status.ok())
    fatal(status.message());

  std::vector<Tensor> inputs;
  std::vector<kiln_tensor_info_t> modelInputs = session.inputs();
  for (const auto &[name, path] : options.inputFiles)
    if (std::none_of(modelInputs.begin(), modelInputs.end(),
                     [&](const kiln_tensor_info_t &m) { return name == m.name; }))
      fatal("--input: no model input named '" + name + "'");
  for (const kiln_tensor_info_t &info : modelInputs) {
    Tensor t;
    auto file = std::find_if(options.inputFiles.begin(), options.inputFiles.end(),
                             [&](const auto &f) { return f.first == info.name; });
    if (file != options.inputFiles.end()) {
      std::string error;
      if (!npy::read(file->second, t, error))
        fatal("input '" + file->first + "': " + error);
    } else {
      t.dtype = info.dtype;
      t.shape.assign(info.shape, info.shape + info.rank);
      support::fillRandom(t, support::inputSeed(options.seed, info.name));
    }
    t.name = info.name; // the session checks dtype and shape
    inputs.push_back(std::move(t));
  }
  std::vector<kiln_tensor_t> views;
  for (const Tensor &t : inputs)
    views.push_back(t.view());
  // Output buffers are allocated once so the loop times only the run.
  std::vector<kiln_tensor_info_t> outputInfos = session.outputs();
  std::vector<kiln::Bytes> outputStorage(outputInfos.size());
  std::vector<kiln_tensor_t> outputs(outputInfos.size());
  for (size_t i = 0; i < outputInfos.size(); ++i) {
    outputStorage[i].resize(outputInfos[i].byte_size);
    outputs[i] = kiln_tensor_t();
    outputs[i].data = outputStorage[i].data();
    outputs[i].byte_size = outputStorage[i].size();
  }
  auto runOnce = [&]() {
    for (size_t i = 0; i < outputs.size(); ++i) // a run overwrites these
      outputs[i].byte_size = outputStorage[i].size();
    uint64_t start = support::TraceRecorder::nowNs();
    Status s(kiln_session_run(session.get(), views.data(), views.size(),
                              outputs.data(), outputs.size()));
    if (!s.ok())
      fatal(s.message());
    if (!options.trace.empty())
      trace.add("run", "run", start, support::TraceRecorder::nowNs() - start);
  };

  for (uint64_t i = 0; i < options.warmup; ++i)
    runOnce();
  session.resetProfile();

  using Clock = std::chrono::steady_clock;
  std::vector<double> latencies; // ms
  Clock::time_point begin = Clock::now();
  for (;;) {
    Clock::time_point start = Clock::now();
    runOnce();
    Clock::time_point end = Clock::now();
    latencies.push_back(
        std::chrono::duration<double, std::milli>(end - start).count());
    if (options.haveIterations) {
      if (latencies.size() >= options.iterations)
        break;
    } else if (std::chrono::duration<double>(end - begin).count() >=
                   options.minTime ||
               latencies.size() >= 10000000) {
      break;
    }
  }

  if (!options.trace.empty()) {
    std::string error;
    if (!trace.write(options.trace, error))
      fatal(error);
  }
  std::vector<double> sorted = latencies;
  std::sort(sorted.begin(), sorted.end());
  double total = std::accumulate(latencies.begin(), latencies.end(), 0.0);
  double mean = total / double(latencies.size());
  double median = percentile(sorted, 50), p90 = percentile(sorted, 90),
         p99 = percentile(sorted, 99);
  double throughput = total > 0 ? 1000.0 * double(latencies.size()) / total : 0;

  uint64_t runs = 0;
  std::vector<uint64_t> dispatchNs;
  status = session.profile(runs, dispatchNs);
  if (!status.ok())
    fatal(status.message());
  double dispatchTotal = 0;
  for (uint64_t ns : dispatchNs)
    dispatchTotal += double(ns);
  std::vector<size_t> order(dispatchNs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return dispatchNs[a] > dispatchNs[b];
  });
  order.resize(std::min<size_t>(order.size(), size_t(options.top)));

  uint64_t arena = kiln_artifact_arena_size(artifact.get(), 0);
  uint64_t constants = kiln_artifact_constants_size(artifact.get());
  uint32_t threads = device.threadCount();
  auto meanMs = [&](size_t d) {
    return runs ? double(dispatchNs[d]) / double(runs) / 1e6 : 0.0;
  };
  auto share = [&](size_t d) {
    return dispatchTotal > 0 ? double(dispatchNs[d]) / dispatchTotal : 0.0;
  };
  // GFLOP/s of a dispatch from its recorded FLOPs (0 when it records none),
  // and that as a fraction of the peak of the threads that ran it.
  auto gflops = [&](size_t d) {
    double ms = meanMs(d);
    uint64_t flops = session.dispatchInfo(d).flops;
    return ms > 0 ? double(flops) / (ms * 1e6) : 0.0;
  };
  double peak = options.peakGflops * double(threads ? threads : 1);

  if (options.json) {
    std::string json = "{\"model\":" + support::jsonString(options.model) +
                       ",\"device\":" + support::jsonString(options.device) +
                       ",\"threads\":" + std::to_string(threads) +
                       ",\"warmup\":" + std::to_string(options.warmup) +
                       ",\"iterations\":" + std::to_string(latencies.size()) +
                       ",\"latency_ms\":{\"median\":" + number(median) +
                       ",\"p90\":" + number(p90) + ",\"p99\":" +
                       number(p99) + ",\"min\":" + number(sorted.front()) +
                       ",\"max\":" + number(sorted.back()) +
                       ",\"mean\":" + number(mean) + "}" +
                       ",\"throughput_per_s\":" + number(throughput) +
                       ",\"arena_bytes\":" + std::to_string(arena) +
                       ",\"constants_bytes\":" + std::to_string(constants) +
                       ",\"dispatches\":" + std::to_string(dispatchNs.size()) +
                       ",\"top_dispatches\":[";
    for (size_t k = 0; k < order.size(); ++k) {
      size_t d = order[k];
      kiln_dispatch_info_t info = session.dispatchInfo(d);
      json += std::string(k ? "," : "") + "{\"index\":" + std::to_string(d) +
              ",\"name\":" + support::jsonString(info.name) +
              ",\"ops\":" + support::jsonString(info.ops) +
              ",\"mean_ms\":" + number(meanMs(d)) +
              ",\"flops\":" + std::to_string(info.flops) +
              ",\"gflops_per_s\":" + number(gflops(d)) +
              (peak > 0 ? ",\"of_peak\":" + fixed(gflops(d) / peak, 6) : std::string()) +
              ",\"share\":" + fixed(share(d), 6) + "}";
    }
    json += "]}";
    std::printf("%s\n", json.c_str());
    return 0;
  }

  std::printf("model: %s\n", options.model.c_str());
  if (threads == 0) // a GPU
    std::printf("device: %s (%s)\n", kiln_device_name(device.get()),
                kiln_device_target(device.get()));
  else
    std::printf("device: %s, %u thread%s\n", options.device.c_str(), threads,
                threads == 1 ? "" : "s");
  std::printf("arena: %s, constants: %s, dispatches: %zu\n",
              bytesString(arena).c_str(), bytesString(constants).c_str(),
              dispatchNs.size());
  std::printf("iterations: %zu (warmup %" PRIu64 ")\n", latencies.size(),
              options.warmup);
  std::printf("latency (ms): median %s  p90 %s  p99 %s  min %s  mean %s\n",
              ms(median).c_str(), ms(p90).c_str(), ms(p99).c_str(),
              ms(sorted.front()).c_str(), ms(mean).c_str());
  std::printf("throughput: %s inferences/s\n", fixed(throughput, 1).c_str());
  if (!order.empty()) {
    std::printf("slowest dispatches:\n");
    std::printf("  %5s  %-32s %10s %9s%s %7s  %s\n", "#", "dispatch", "mean ms", "GFLOP/s",
                peak > 0 ? "  of peak" : "", "share", "ops");
    for (size_t d : order) {
      kiln_dispatch_info_t info = session.dispatchInfo(d);
      double rate = gflops(d);
      std::string ofPeak = peak > 0 ? (info.flops ? fixed(100.0 * rate / peak, 1) + "%" : "-")
                                    : std::string();
      std::printf("  %5zu  %-32s %10s %9s%s %6s%%  %s\n", d, info.name,
                  ms(meanMs(d)).c_str(), info.flops ? fixed(rate, 1).c_str() : "-",
                  peak > 0 ? ("  " + std::string(7 - std::min<size_t>(7, ofPeak.size()), ' ') +
                              ofPeak).c_str()
                           : "",
                  fixed(100.0 * share(d), 1).c_str(), info.ops);
    }
  }
  return 0;
}
