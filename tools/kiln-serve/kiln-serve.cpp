//===- kiln-serve.cpp - KServe v2 (Open Inference Protocol) server --------===//
//
// Serves the .kiln artifacts of a model repository over the REST binding of
// the KServe v2 / Open Inference Protocol:
//
//   GET  /v2/health/live, /v2/health/ready           200 or 400, empty body
//   GET  /v2                                         server metadata
//   GET  /v2/models/NAME[/versions/V]                model metadata
//   GET  /v2/models/NAME[/versions/V]/ready          200 or 400
//   POST /v2/models/NAME[/versions/V]/infer          JSON tensors in and out
//
// The repository holds DIR/NAME/VERSION/model.kiln (VERSION a number; a
// request without a version gets the highest) and an optional
// DIR/NAME/config.pbtxt (Triton's model configuration, the fields that
// apply: tools/kiln-serve/model_config.proto). Every model version is loaded
// at start; one that does not load stops the server with its error. Batched
// models (max_batch_size > 0, an artifact with batch buckets) run through the
// runtime's batcher; the binary tensor extension and GET /metrics
// (Prometheus text, on its own port) are served. Errors are {"error": ...}
// with 400, 404, 429 (queue full or timed out) or 500. See docs/serving.md.
//
// Links the runtime only (no MLIR, no LLVM); HTTP from cpp-httplib, JSON
// from nlohmann-json, the configuration from protobuf (Debian's
// libcpp-httplib-dev, nlohmann-json3-dev, libprotobuf-dev).
//
//===----------------------------------------------------------------------===//

#include "Protocol.h"
#include "kiln/runtime.hpp"
#include "kiln/support/TensorUtil.h"
#include "kiln/support/Version.h"
#include "kiln/support/Trace.h"
#include "grpc_predict_v2.grpc.pb.h"

#include <grpcpp/grpcpp.h>

#include <httplib.h>
#include <sys/socket.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace kiln;
using namespace kiln::serving;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const char *const kUsage =
    "usage: kiln-serve --model-repository=DIR [options]\n"
    "\n"
    "Serves the models of DIR (DIR/NAME/VERSION/model.kiln, with an optional\n"
    "DIR/NAME/config.pbtxt) over the KServe v2 REST protocol.\n"
    "\n"
    "options:\n"
    "  --http-port=N        port to listen on (default 8000; 0 picks a free one)\n"
    "  --grpc-port=N        port of the gRPC binding (default 8001; 0 picks one)\n"
    "  --metrics-port=N     port of GET /metrics, Prometheus text (default 8002;\n"
    "                       0 picks a free one)\n"
    "  --host=ADDRESS       address to listen on (default 127.0.0.1)\n"
    "  --device=DEVICE      cpu (default), hip:N or emu:GFX, for every model\n"
    "  --model-memory-limit=SIZE  bytes (K, M, G) a model version may use for its\n"
    "                       constants and arenas; a larger one does not load\n"
    "  --exit-on-error=B    true (default): a model that does not load stops the\n"
    "                       server; false: it is reported and the rest served\n"
    "  --threads=N          the device's worker threads (default: one per CPU)\n"
    "  --host-policy=NAME,cpu-cores=LIST  a host policy models may name in\n"
    "                       instance_group { host_policy: \"NAME\" }: they get\n"
    "                       their own device, its threads pinned to LIST (0-3,8)\n"
    "  --run-timeout-ms=N   a run longer than N ms stops and counts as a fault\n"
    "                       (default: none; per model: kiln.run_timeout_ms)\n"
    "  --http-threads=N     threads answering HTTP requests (default 64)\n"
    "  --trace=FILE         at exit, write a Chrome trace of the requests, their\n"
    "                       queueing, the batches and every dispatch\n"
    "  --help               print this help\n"
    "  --version            print the version and the devices it runs on\n"
    "\n"
    "Prints 'kiln-serve: listening on http://HOST:PORT ...' once it serves; stops\n"
    "on SIGINT or SIGTERM.\n";

[[noreturn]] void fatal(const std::string &message) {
  std::fprintf(stderr, "kiln-serve: error: %s\n", message.c_str());
  std::exit(1);
}

struct Options {
  std::string repository;
  std::string host = "127.0.0.1";
  uint64_t port = 8000;
  uint64_t metricsPort = 8002;
  uint64_t grpcPort = 8001;
  bool exitOnError = true;
  uint64_t modelMemoryLimit = 0; // bytes per model version; 0: none
  size_t httpThreads = 64;
  std::string device = "cpu";
  std::string trace; // --trace=FILE
  uint64_t threads = 0;
  std::map<std::string, std::string> hostPolicies; // name -> cpu-cores
  uint64_t runTimeoutMs = 0;
};

Options parseArguments(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], text;
    if (arg == "--version") {
      std::fputs(kiln::support::runtimeVersionText("kiln-serve").c_str(), stdout);
      std::exit(0);
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (support::flagValue(arg, "--model-repository=", options.repository)) {
    } else if (support::flagValue(arg, "--host=", options.host)) {
    } else if (support::flagValue(arg, "--device=", options.device)) {
    } else if (support::flagValue(arg, "--http-port=", text)) {
      if (!support::parseUint64(text, options.port) || options.port > 65535)
        fatal("--http-port: '" + text + "' is not a port (0-65535)");
    } else if (support::flagValue(arg, "--http-threads=", text)) {
      uint64_t n = 0;
      if (!support::parseUint64(text, n) || n < 1 || n > 4096)
        fatal("--http-threads: '" + text + "' is not a thread count (1-4096)");
      options.httpThreads = size_t(n);
    } else if (support::flagValue(arg, "--model-memory-limit=", text)) {
      uint64_t scale = 1;
      if (!text.empty() && (text.back() == 'K' || text.back() == 'M' || text.back() == 'G')) {
        scale = text.back() == 'K' ? 1ull << 10 : text.back() == 'M' ? 1ull << 20 : 1ull << 30;
        text.pop_back();
      }
      uint64_t n = 0;
      if (!support::parseUint64(text, n) || n > (UINT64_MAX >> 30))
        fatal("--model-memory-limit: '" + text + "' is not a size (bytes, or with K, M or G)");
      options.modelMemoryLimit = n * scale;
    } else if (support::flagValue(arg, "--exit-on-error=", text)) {
      if (text != "true" && text != "false")
        fatal("--exit-on-error: expected true or false, got '" + text + "'");
      options.exitOnError = text == "true";
    } else if (support::flagValue(arg, "--trace=", options.trace)) {
      if (options.trace.empty())
        fatal("--trace needs a file");
    } else if (support::flagValue(arg, "--grpc-port=", text)) {
      if (!support::parseUint64(text, options.grpcPort) || options.grpcPort > 65535)
        fatal("--grpc-port: '" + text + "' is not a port (0-65535)");
    } else if (support::flagValue(arg, "--metrics-port=", text)) {
      if (!support::parseUint64(text, options.metricsPort) || options.metricsPort > 65535)
        fatal("--metrics-port: '" + text + "' is not a port (0-65535)");
    } else if (support::flagValue(arg, "--threads=", text)) {
      if (!support::parseUint64(text, options.threads) || options.threads > 1024)
        fatal("--threads: '" + text + "' is not a thread count (0-1024)");
    } else if (support::flagValue(arg, "--host-policy=", text)) {
      // Triton's form: NAME,SETTING=VALUE (the value may hold commas).
      size_t comma = text.find(',');
      size_t equals = comma == std::string::npos ? comma : text.find('=', comma);
      if (comma == 0 || equals == std::string::npos)
        fatal("--host-policy: expected NAME,cpu-cores=LIST, got '" + text + "'");
      std::string setting = text.substr(comma + 1, equals - comma - 1);
      std::string value = text.substr(equals + 1);
      if (setting != "cpu-cores")
        fatal("--host-policy: '" + setting + "' is not a setting kiln-serve has (it has cpu-cores)");
      if (value.empty())
        fatal("--host-policy: cpu-cores needs a CPU list such as 0-3,8");
      options.hostPolicies[text.substr(0, comma)] = value;
    } else if (support::flagValue(arg, "--run-timeout-ms=", text)) {
      if (!support::parseUint64(text, options.runTimeoutMs) || options.runTimeoutMs > 86400000)
        fatal("--run-timeout-ms: '" + text + "' is not a time in milliseconds (0-86400000)");
    } else {
      fatal("unknown argument '" + arg + "' (see kiln-serve --help)");
    }
  }
  if (options.repository.empty())
    fatal("no --model-repository given (see kiln-serve --help)");
  return options;
}

//===----------------------------------------------------------------------===//
// The repository
//===----------------------------------------------------------------------===//

/// Counters of one model version for /metrics (the batcher keeps its own;
/// these are the server's view of every request).
/// --trace: every request, queueing, batch and dispatch (null without it).
support::TraceRecorder *traceRecorder = nullptr;

struct VersionStats {
  std::atomic<uint64_t> success{0}, failure{0}, requestNs{0};
  // Unbatched versions: each request is one execution of one row set.
  std::atomic<uint64_t> computeNs{0};
};

struct ModelVersion : ModelInterface {
  std::string path;
  std::string name; // "NAME/VERSION", for traces
  Artifact artifact;
  // Unbatched (max_batch_size 0): one session, run per request, one at a
  // time under runMutex; `waiting` counts the requests blocked on it.
  Session session;
  std::mutex runMutex;
  std::atomic<size_t> waiting{0};
  // Batched: every request goes through the batcher.
  kiln_batcher_t *batcher = nullptr;
  VersionStats stats;
  uint64_t memoryBytes = 0; // constants and the arenas of its sessions
  ModelPolicy policy;
  // Called with the error when a run of this version faults (set by the
  // repository, which unloads the model per `policy`).
  std::function<void(const std::string &)> onFault;
  std::string model; // NAME
  uint64_t number = 0;
  // Requests answered unrun after a fault (queued, or come too late).
  std::atomic<size_t> answeredUnrun{0};

  /// Why the repository lists the model unavailable after a fault with
  /// `message`.
  std::string unloadedWhy(const std::string &message) const {
    return "unloaded after a fault of version " + std::to_string(number) + ": " + message;
  }
  /// Why requests are answered unrun once such a fault unloads the model
  /// (what a request to an unavailable model is told).
  std::string faultReason(const std::string &message) const {
    return "model '" + model + "' is unavailable: " + unloadedWhy(message);
  }
  /// The version stops taking requests (a fault unloads its model): later
  /// ones are answered 503 with `reason` (the first reason stays), and its
  /// batcher's queue is answered too, unrun. Called from the batcher thread
  /// of the failed batch, before it takes the next, and by the repository.
  void close(const std::string &reason) {
    {
      std::lock_guard<std::mutex> lock(closeMutex);
      if (unloadReason.empty())
        unloadReason = reason;
      unloaded.store(true, std::memory_order_release);
    }
    if (batcher)
      answeredUnrun += kiln_batcher_close(batcher, reason.c_str());
  }
  bool closed() const { return unloaded.load(std::memory_order_acquire); }
  std::string closedReason() const {
    std::lock_guard<std::mutex> lock(closeMutex);
    return unloadReason;
  }

  ModelVersion() = default;
  ModelVersion(const ModelVersion &) = delete;
  ~ModelVersion() { kiln_batcher_destroy(batcher); }

private:
  mutable std::mutex closeMutex;
  std::atomic<bool> unloaded{false};
  std::string unloadReason;
};

struct Model {
  Config config;
  // By number; the last is the latest. In-flight requests share ownership:
  // a version unloaded or replaced while they run stays until they finish.
  std::map<uint64_t, std::shared_ptr<ModelVersion>> versions;
};

class Repository {
public:
  /// Loads every model of the repository. A model that does not load stops
  /// the server with its error (exitOnError), or is reported and left out.
  void start(const Options &options) {
    std::error_code ec;
    if (!fs::is_directory(options.repository, ec))
      fatal("--model-repository: '" + options.repository + "' is not a directory");
    options_ = options;
    for (const std::string &name : modelDirectories()) {
      try {
        std::shared_ptr<Model> model = readModel(name);
        if (model)
          models_[name] = std::move(model);
      } catch (const LoadError &e) {
        if (options.exitOnError)
          fatal(e.message);
        std::fprintf(stderr, "kiln-serve: warning: model '%s' is unavailable: %s\n",
                     name.c_str(), e.message.c_str());
        unavailable_[name] = e.message;
      }
    }
    if (models_.empty() && unavailable_.empty())
      fatal("--model-repository: '" + options.repository +
            "' holds no model (expected DIR/NAME/VERSION/model.kiln)");
  }

  struct Found {
    std::shared_ptr<const Model> model;
    std::shared_ptr<ModelVersion> version;
    uint64_t number = 0;
  };

  /// The model version a request names (the latest without a version).
  Found find(const std::string &name, const std::string &version) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto model = models_.find(name);
    if (model == models_.end()) {
      auto why = unavailable_.find(name);
      if (why != unavailable_.end())
        throw RequestError{404, "model '" + name + "' is unavailable: " + why->second};
      std::string names;
      for (const auto &[n, m] : models_)
        names += (names.empty() ? "" : ", ") + n;
      throw RequestError{404, "model '" + name + "' is not in the repository (it has: " +
                                  names + ")"};
    }
    Found found;
    found.model = model->second;
    if (version.empty()) {
      found.number = model->second->versions.rbegin()->first;
    } else if (!support::parseUint64(version, found.number) ||
               !model->second->versions.count(found.number)) {
      throw RequestError{404, "model '" + name + "' has no version '" + version + "'"};
    }
    found.version = model->second->versions.at(found.number);
    return found;
  }

  /// The loaded models now.
  std::map<std::string, std::shared_ptr<const Model>> models() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return models_;
  }

  /// Ready: every model that was asked to load did (unloaded ones aside).
  bool ready() const {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto &[name, reason] : unavailable_)
      if (reason != kUnloaded && !faulted_.count(name))
        return false;
    return true;
  }

  /// (Re)loads model `name` from the repository; the old versions keep
  /// serving until the new ones are ready, then drain. A model that does not
  /// load is reported (RequestError 400) and becomes unavailable.
  void load(const std::string &name) {
    std::lock_guard<std::mutex> loading(loadMutex_);
    std::vector<std::string> names = modelDirectories();
    if (std::find(names.begin(), names.end(), name) == names.end())
      throw RequestError{404, "the repository has no model '" + name + "' (no directory " +
                                  (fs::path(options_.repository) / name).string() +
                                  " with a version)"};
    std::shared_ptr<Model> model;
    try {
      model = readModel(name);
    } catch (const LoadError &e) {
      std::shared_ptr<const Model> old; // drained and freed after the lock
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = models_.find(name);
      if (it != models_.end()) {
        old = std::move(it->second);
        models_.erase(it);
      }
      unavailable_[name] = e.message;
      faulted_.erase(name);
      throw RequestError{400, "failed to load '" + name + "': " + e.message};
    }
    std::shared_ptr<const Model> old; // drained and freed after the lock
    std::lock_guard<std::mutex> lock(mutex_);
    std::swap(models_[name], old);
    models_[name] = std::move(model);
    unavailable_.erase(name);
    faulted_.erase(name);
  }

  /// Unloads model `name`: new requests get 404; those in flight finish.
  void unload(const std::string &name) {
    std::lock_guard<std::mutex> loading(loadMutex_);
    std::shared_ptr<const Model> old; // drained and freed after the lock
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = models_.find(name);
    if (it == models_.end())
      throw RequestError{400, "model '" + name + "' is not loaded"};
    old = std::move(it->second);
    models_.erase(it);
    unavailable_[name] = kUnloaded;
    faulted_.erase(name);
  }

  /// The repository index: every model directory, each loaded version READY,
  /// the others UNAVAILABLE with the reason.
  json index(bool readyOnly) const {
    std::vector<std::string> names = modelDirectories();
    std::lock_guard<std::mutex> lock(mutex_);
    json out = json::array();
    for (const std::string &name : names) {
      auto model = models_.find(name);
      if (model != models_.end()) {
        for (const auto &[number, v] : model->second->versions)
          out.push_back({{"name", name}, {"version", std::to_string(number)},
                         {"state", "READY"}, {"reason", ""}});
        continue;
      }
      if (readyOnly)
        continue;
      auto why = unavailable_.find(name);
      out.push_back({{"name", name}, {"state", "UNAVAILABLE"},
                     {"reason", why != unavailable_.end() ? why->second : "not loaded"}});
    }
    return out;
  }

private:
  static constexpr const char *kUnloaded = "unloaded";

  /// The directories of the repository that hold a version (DIR/NAME/N/).
  std::vector<std::string> modelDirectories() const {
    std::error_code ec;
    std::vector<std::string> names;
    for (const fs::directory_entry &entry : fs::directory_iterator(options_.repository, ec)) {
      if (!entry.is_directory())
        continue;
      for (const fs::directory_entry &version : fs::directory_iterator(entry.path(), ec)) {
        uint64_t number = 0;
        if (version.is_directory() &&
            support::parseUint64(version.path().filename().string(), number)) {
          names.push_back(entry.path().filename().string());
          break;
        }
      }
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  /// Reads and loads every version of model `name`; throws LoadError.
  std::shared_ptr<Model> readModel(const std::string &name) {
    std::error_code ec;
    fs::path dir = fs::path(options_.repository) / name;
    auto model = std::make_shared<Model>();
    if (fs::exists(dir / "config.pbtxt", ec))
      readConfig(dir / "config.pbtxt", model->config);
    const serve::ModelConfig &c = model->config.config;
    if (!c.name().empty() && c.name() != name)
      loadFailure(model->config.at("name") + ": '" + c.name() +
                  "' is not the model's directory '" + name + "'");
    for (const fs::directory_entry &entry : fs::directory_iterator(dir, ec)) {
      std::string version = entry.path().filename().string();
      uint64_t number = 0;
      if (!entry.is_directory() || !support::parseUint64(version, number))
        continue; // config files and the like
      fs::path file = entry.path() / "model.kiln";
      if (!fs::exists(file, ec))
        loadFailure(name + " version " + version + ": no model.kiln in " +
                    entry.path().string());
      auto v = std::make_shared<ModelVersion>();
      v->path = file.string();
      v->name = name + "/" + version;
      v->model = name;
      v->number = number;
      loadVersion(name, model->config, *v);
      v->onFault = [this, name, number, raw = v.get()](const std::string &message) {
        fault(name, number, raw, message);
      };
      model->versions[number] = std::move(v);
    }
    if (model->versions.empty())
      return nullptr;
    return model;
  }

  /// The device for `spec`, created once; with `cpus` (a host policy's
  /// cpu-cores) one of its own, one thread per listed CPU, pinned to them.
  Device &device(const std::string &spec, const std::string &cpus, const std::string &where) {
    std::string key = cpus.empty() ? spec : spec + "@" + cpus;
    auto it = devices_.find(key);
    if (it != devices_.end())
      return it->second;
    Device d;
    Status status = Device::create(spec, cpus.empty() ? uint32_t(options_.threads) : 0, d, cpus);
    if (!status.ok())
      loadFailure((cpus.empty() ? "" : where + ": ") + status.message());
    return devices_.emplace(key, std::move(d)).first->second;
  }

  /// A run of `v`, version `number` of model `name`, faulted with `message`:
  /// counted, and unless its policy says otherwise the model is unloaded
  /// (reported on stderr and in the index) while the others go on serving.
  /// POST .../load brings it back.
  void fault(const std::string &name, uint64_t number, const ModelVersion *v,
             const std::string &message) {
    std::shared_ptr<const Model> old; // drained and freed after the lock
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++faults_[name];
      if (!v->policy.unloadOnFault)
        return;
      auto it = models_.find(name);
      if (it == models_.end())
        return;
      auto version = it->second->versions.find(number);
      if (version == it->second->versions.end() || version->second.get() != v)
        return; // a reload replaced it already
      old = std::move(it->second);
      models_.erase(it);
      unavailable_[name] = v->unloadedWhy(message);
      faulted_.insert(name);
    }
    // Requests queued for the model, and those that found it before it was
    // unloaded, are answered without running (they would fault too; the
    // faulted version's batcher was closed by its failed batch already).
    std::string reason = v->faultReason(message);
    size_t cancelled = 0;
    for (const auto &[n, version] : old->versions) {
      version->close(reason);
      cancelled += version->answeredUnrun;
    }
    std::fprintf(stderr, "kiln-serve: warning: model '%s' version %llu faulted and was unloaded "
                         "(the other models go on; %zu queued request%s answered unrun): %s\n",
                 name.c_str(), (unsigned long long)number, cancelled, cancelled == 1 ? "" : "s",
                 message.c_str());
  }

public:
  /// Requests whose run faulted, per model name.
  std::map<std::string, uint64_t> faults() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return faults_;
  }

private:

  void loadVersion(const std::string &name, const Config &config, ModelVersion &v) {
    Status status = Artifact::open(v.path, v.artifact);
    if (!status.ok())
      loadFailure(status.message());
    const serve::ModelConfig &c = config.config;
    v.policy = readModelPolicy(config, ModelPolicy{options_.runTimeoutMs * 1000, true});
    // The device: the instance group's kind, else --device.
    std::string spec = options_.device;
    std::string cpus;      // the instance group's host policy's cpu-cores
    std::string cpusWhere; // and where the config names it, for errors
    uint32_t instances = 1;
    if (c.instance_group_size() > 1)
      loadFailure(config.at("instance_group", 1) + ": one instance group per model is supported");
    if (c.instance_group_size() == 1) {
      const serve::ModelInstanceGroup &g = c.instance_group(0);
      if (g.count() < 0 || g.count() > 64)
        loadFailure(config.at("instance_group", 0) + ": count " + std::to_string(g.count()) +
              " is not between 0 and 64");
      instances = g.count() ? uint32_t(g.count()) : 1;
      if (g.kind() == serve::ModelInstanceGroup::KIND_CPU)
        spec = "cpu";
      else if (g.kind() == serve::ModelInstanceGroup::KIND_GPU)
        spec = "hip:" + std::to_string(g.gpus_size() ? g.gpus(0) : 0);
      if (!g.host_policy().empty()) {
        auto policy = options_.hostPolicies.find(g.host_policy());
        if (policy == options_.hostPolicies.end())
          loadFailure(config.at("instance_group", 0) + ": host_policy '" + g.host_policy() +
                      "' is not one the server was given (kiln-serve --host-policy=" +
                      g.host_policy() + ",cpu-cores=LIST)");
        if (spec.rfind("hip", 0) == 0)
          loadFailure(config.at("instance_group", 0) + ": host_policy '" + g.host_policy() +
                      "' pins CPU threads, and device " + spec + " runs on a GPU");
        cpus = policy->second;
        cpusWhere = config.at("instance_group", 0) + ": host_policy '" + g.host_policy() + "'";
      }
    }
    Device &dev = device(spec, cpus, cpusWhere);
    const std::vector<uint32_t> programBatch = v.artifact.batchSizes(); // per program
    std::vector<uint32_t> buckets;
    for (uint32_t b : programBatch)
      if (b)
        buckets.push_back(b);
    if (c.max_batch_size() < 0)
      loadFailure(config.at("max_batch_size") + ": " + std::to_string(c.max_batch_size()) +
            " is negative");
    v.maxBatchSize = c.max_batch_size();
    if (c.has_dynamic_batching() && v.maxBatchSize == 0)
      loadFailure(config.at("dynamic_batching") + ": dynamic batching needs max_batch_size > 0");
    uint64_t arenas = 0;
    if (v.maxBatchSize > 0) {
      uint32_t largest = buckets.empty() ? 0 : *std::max_element(buckets.begin(), buckets.end());
      if (int64_t(largest) < v.maxBatchSize)
        loadFailure(config.at("max_batch_size") + ": " + std::to_string(v.maxBatchSize) + ", but " +
              v.path +
              (buckets.empty() ? std::string(" has no batch buckets (compile it with "
                                             "kiln-compile --batch-sizes=...)")
                               : " runs batches of at most " + std::to_string(largest) +
                                     " (kiln-compile --batch-sizes)"));
      kiln_batcher_options_t o;
      kiln_batcher_options_init(&o);
      if (traceRecorder) {
        o.trace_callback = support::TraceRecorder::callback;
        o.trace_user_data = traceRecorder;
      }
      o.instance_count = instances;
      o.run_timeout_us = v.policy.runTimeoutUs;
      std::vector<uint32_t> preferred;
      if (c.has_dynamic_batching()) {
        const serve::ModelDynamicBatching &d = c.dynamic_batching();
        for (int i = 0; i < d.preferred_batch_size_size(); ++i) {
          int32_t size = d.preferred_batch_size(i);
          if (size < 1 || size > v.maxBatchSize)
            loadFailure(config.at("dynamic_batching") + ".preferred_batch_size: " +
                  std::to_string(size) + " is not between 1 and max_batch_size (" +
                  std::to_string(v.maxBatchSize) + ")");
          preferred.push_back(uint32_t(size));
        }
        if (preferred.empty())
          preferred.push_back(uint32_t(v.maxBatchSize));
        o.max_queue_delay_us = d.max_queue_delay_microseconds();
        o.priority_levels = d.priority_levels();
        o.default_priority_level = d.default_priority_level();
        if (d.has_default_queue_policy()) {
          const serve::ModelQueuePolicy &q = d.default_queue_policy();
          o.max_queue_size = q.max_queue_size();
          o.default_timeout_us = q.default_timeout_microseconds();
          o.timeout_action = q.timeout_action() == serve::ModelQueuePolicy::DELAY
                                 ? KILN_TIMEOUT_DELAY
                                 : KILN_TIMEOUT_REJECT;
        }
        o.preferred_batch_sizes = preferred.data();
        o.preferred_batch_size_count = preferred.size();
      } else {
        o.single_requests = 1; // Triton's behavior without dynamic_batching
      }
      kiln_status_t created = kiln_batcher_create(dev.get(), v.artifact.get(), &o, &v.batcher);
      if (created) {
        std::string message = kiln_status_message(created);
        kiln_status_free(created);
        loadFailure(v.path + ": " + message);
      }
      // Requests see the rows of any bucket: dimension 0 is -1.
      size_t program = 0;
      for (size_t p = 0; p < programBatch.size(); ++p)
        if (programBatch[p]) {
          program = p;
          arenas += instances * kiln_artifact_arena_size(v.artifact.get(), p);
        }
      v.inputs = v.artifact.inputs(program);
      v.outputs = v.artifact.outputs(program);
    } else {
      kiln_session_options_t sessionOptions;
      kiln_session_options_init(&sessionOptions);
      sessionOptions.run_timeout_us = v.policy.runTimeoutUs;
      if (traceRecorder) {
        sessionOptions.trace_callback = support::TraceRecorder::callback;
        sessionOptions.trace_user_data = traceRecorder;
      }
      status = Session::create(dev, v.artifact, &sessionOptions, v.session);
      if (!status.ok())
        loadFailure(v.path + ": " + status.message());
      v.inputs = v.session.inputs();
      v.outputs = v.session.outputs();
      arenas = kiln_artifact_arena_size(v.artifact.get(), v.session.program());
    }
    v.memoryBytes = arenas + kiln_artifact_constants_size(v.artifact.get());
    if (options_.modelMemoryLimit && v.memoryBytes > options_.modelMemoryLimit)
      loadFailure(v.path + ": needs " + std::to_string(v.memoryBytes) + " bytes (constants " +
                  std::to_string(kiln_artifact_constants_size(v.artifact.get())) + ", arenas " +
                  std::to_string(arenas) + "), more than --model-memory-limit (" +
                  std::to_string(options_.modelMemoryLimit) + ")");
    // What the config says about the inputs and outputs must be the model's.
    auto checkTensors = [&](const char *field, const auto &list,
                            const std::vector<kiln_tensor_info_t> &model) {
      for (int i = 0; i < list.size(); ++i) {
        const serve::ModelTensor &t = list.Get(i);
        auto info = std::find_if(model.begin(), model.end(),
                                 [&](const kiln_tensor_info_t &m) { return t.name() == m.name; });
        if (info == model.end())
          loadFailure(config.at(field, i) + ": '" + t.name() + "' is not a tensor of " + v.path);
        if (t.data_type() != configType(info->dtype))
          loadFailure(config.at(field, i) + ": '" + t.name() + "' is " +
                serve::DataType_Name(t.data_type()) + ", the model's is " +
                serve::DataType_Name(configType(info->dtype)));
        std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
        std::vector<int64_t> want(info->shape + (v.maxBatchSize > 0 ? 1 : 0),
                                  info->shape + info->rank);
        if (dims != want)
          loadFailure(config.at(field, i) + ": '" + t.name() + "' has dims " + shapeText(dims) +
                ", the model's are " + shapeText(want) +
                (v.maxBatchSize > 0 ? " (without the batch dimension)" : ""));
      }
    };
    checkTensors("input", c.input(), v.inputs);
    checkTensors("output", c.output(), v.outputs);
  }

  Options options_;
  std::map<std::string, Device> devices_; // under loadMutex_ after start
  mutable std::mutex mutex_;              // models_ and unavailable_
  std::mutex loadMutex_;                  // one load or unload at a time
  std::map<std::string, std::shared_ptr<const Model>> models_;
  std::map<std::string, std::string> unavailable_; // name -> why
  std::set<std::string> faulted_;                  // unloaded by a fault
  std::map<std::string, uint64_t> faults_;         // name -> faulted requests
};

//===----------------------------------------------------------------------===//
// Requests
//===----------------------------------------------------------------------===//

/// A tensor's metadata: the protocol writes -1 for a dimension the request
/// decides (the batch, and an axis whose size the data decides).
json tensorMetadata(const kiln_tensor_info_t &info, bool batched, int32_t extentAxis = -1) {
  json shape = json::array();
  for (size_t d = 0; d < info.rank; ++d)
    shape.push_back(int64_t(d) == extentAxis || (batched && d == 0) ? int64_t(-1)
                                                                    : info.shape[d]);
  return {{"name", info.name}, {"datatype", protocolType(info.dtype)}, {"shape", shape}};
}

json modelMetadata(const std::string &name, const Model &model, const ModelVersion &v) {
  json versions = json::array();
  for (const auto &[number, version] : model.versions)
    versions.push_back(std::to_string(number));
  json inputs = json::array(), outputs = json::array();
  bool batched = v.maxBatchSize > 0;
  for (const kiln_tensor_info_t &info : v.inputs)
    inputs.push_back(tensorMetadata(info, batched));
  for (size_t i = 0; i < v.outputs.size(); ++i)
    outputs.push_back(tensorMetadata(v.outputs[i], batched,
                                     kiln_artifact_output_extent_axis(v.artifact.get(), i)));
  json metadata = {{"name", name}, {"versions", versions}, {"platform", "kiln"},
                   {"inputs", inputs}, {"outputs", outputs}};
  if (batched)
    metadata["max_batch_size"] = v.maxBatchSize;
  return metadata;
}


/// Whether a run error is a fault of the model (not of the request or the
/// queue): it unloads the model per its policy.
bool isFault(kiln_status_code_t code) {
  return code != KILN_STATUS_OK && code != KILN_STATUS_INVALID_ARGUMENT &&
         code != KILN_STATUS_UNAVAILABLE;
}

/// Runs `inputs` through the version's batcher and waits for its answer.
Status runBatched(ModelVersion &v, const std::vector<Tensor> &inputs, uint32_t priority,
                  uint64_t timeoutUs, std::vector<Tensor> &outputs) {
  struct Wait {
    ModelVersion *version = nullptr;
    std::mutex mutex;
    std::condition_variable done;
    bool finished = false;
    kiln_status_t status = nullptr;
    std::vector<Tensor> outputs;
  } wait;
  auto callback = [](void *user, kiln_status_t status, const kiln_tensor_t *results,
                     size_t count) {
    auto *w = static_cast<Wait *>(user);
    // A fault closes the batcher here, on its thread, before it takes the
    // next batch: the requests queued behind are answered unrun.
    if (status && isFault(kiln_status_code(status)) && w->version->policy.unloadOnFault)
      w->version->close(w->version->faultReason(kiln_status_message(status)));
    std::vector<Tensor> copies(count);
    for (size_t i = 0; i < count; ++i) {
      copies[i].name = results[i].name;
      copies[i].dtype = results[i].dtype;
      copies[i].shape.assign(results[i].shape, results[i].shape + results[i].rank);
      const auto *data = static_cast<const unsigned char *>(results[i].data);
      copies[i].data.assign(data, data + results[i].byte_size);
    }
    std::lock_guard<std::mutex> lock(w->mutex);
    w->status = status;
    w->outputs = std::move(copies);
    w->finished = true;
    w->done.notify_one();
  };
  wait.version = &v;
  std::vector<kiln_tensor_t> views;
  for (const Tensor &t : inputs)
    views.push_back(t.view());
  Status submitted(kiln_batcher_submit(v.batcher, views.data(), views.size(), priority,
                                       timeoutUs, callback, &wait));
  if (!submitted.ok())
    return submitted;
  std::unique_lock<std::mutex> lock(wait.mutex);
  wait.done.wait(lock, [&] { return wait.finished; });
  outputs = std::move(wait.outputs);
  return Status(wait.status);
}

/// The HTTP status of a runtime error.
int httpStatus(const Status &status) {
  switch (status.code()) {
  case KILN_STATUS_INVALID_ARGUMENT: return 400;
  case KILN_STATUS_UNAVAILABLE: return 429; // the queue is full, or a queue timeout
  case KILN_STATUS_DEADLINE_EXCEEDED: return 504; // the run passed its time limit
  default: return 500;
  }
}

/// Runs a request's inputs (each checked by describeInput): every model
/// input exactly once, the same rows in each when batched. Throws a
/// RequestError for what does not fit or fails.
std::vector<Tensor> execute(ModelVersion &v, const std::vector<Tensor> &inputs,
                            uint32_t priority, uint64_t timeoutUs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (inputs[i].name == inputs[j].name)
        throw RequestError{400, "input '" + inputs[i].name + "' is given twice"};
  for (const kiln_tensor_info_t &info : v.inputs)
    if (std::none_of(inputs.begin(), inputs.end(),
                     [&](const Tensor &t) { return t.name == info.name; }))
      throw RequestError{400, std::string("missing input '") + info.name + "'"};
  if (v.maxBatchSize > 0)
    for (const Tensor &t : inputs)
      if (t.shape[0] != inputs[0].shape[0])
        throw RequestError{400, "input '" + t.name + "' has " + std::to_string(t.shape[0]) +
                                    " rows, input '" + inputs[0].name + "' " +
                                    std::to_string(inputs[0].shape[0])};
  std::vector<Tensor> outputs;
  if (v.closed())
    throw RequestError{503, v.closedReason()};
  auto start = std::chrono::steady_clock::now();
  Status status;
  if (v.batcher) {
    status = runBatched(v, inputs, priority, timeoutUs, outputs);
  } else {
    // One run at a time. A run that faults closes the version before the
    // next waiting request takes the session: those waiting are answered
    // unrun, as a batcher's queue is.
    ++v.waiting;
    std::unique_lock<std::mutex> lock(v.runMutex);
    --v.waiting;
    if (v.closed())
      throw RequestError{503, v.closedReason()}; // counted by the fault
    start = std::chrono::steady_clock::now();
    status = v.session.run(inputs, outputs);
    v.stats.computeNs += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now() - start)
                                      .count());
    if (!status.ok() && isFault(status.code()) && v.policy.unloadOnFault) {
      v.answeredUnrun += v.waiting.load(); // each will find the version closed
      v.close(v.faultReason(status.message()));
    }
  }
  if (!status.ok()) {
    // Errors of the run itself, not of the request or the queue, are faults.
    kiln_status_code_t code = status.code();
    if (isFault(code) && v.onFault)
      v.onFault(status.message());
    if (code == KILN_STATUS_UNAVAILABLE && v.closed())
      throw RequestError{503, status.message()}; // closed by an unload, not a full queue
    throw RequestError{httpStatus(status), status.message()};
  }
  return outputs;
}

/// Runs `handle` for a request to `v`, counting it as a success or a
/// failure with its duration for /metrics.
template <typename F> auto counted(ModelVersion &v, F handle) {
  auto start = std::chrono::steady_clock::now();
  auto finish = [&](bool ok) {
    if (traceRecorder) {
      uint64_t end = support::TraceRecorder::nowNs();
      uint64_t duration = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now() - start)
                                       .count());
      traceRecorder->add("request", v.name, end - std::min(end, duration), duration,
                         {{"ok", ok ? "true" : "false"}});
    }
    (ok ? v.stats.success : v.stats.failure)++;
    v.stats.requestNs += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now() - start)
                                      .count());
  };
  try {
    auto result = handle();
    finish(true);
    return result;
  } catch (...) {
    finish(false);
    throw;
  }
}

/// An inference reply: its JSON header and, with the binary tensor
/// extension, the output bytes that follow it.
struct InferReply {
  json header;
  std::string binary;
};

InferReply infer(ModelVersion &v, const std::string &name, uint64_t version,
                 const std::string &body, size_t headerLength) {
  ParsedRequest parsed = parseInferRequest(v, body, headerLength);
  const std::map<std::string, bool> &wanted = parsed.wanted;
  bool allBinary = parsed.allBinary;
  std::vector<Tensor> outputs = execute(v, parsed.inputs, parsed.priority, parsed.timeoutUs);
  InferReply reply;
  json results = json::array();
  for (const Tensor &t : outputs) {
    auto want = wanted.find(t.name);
    if (!wanted.empty() && want == wanted.end())
      continue;
    json result = {{"name", t.name}, {"datatype", protocolType(t.dtype)}, {"shape", t.shape}};
    if (want != wanted.end() ? want->second : allBinary) {
      result["parameters"] = {{"binary_data_size", t.data.size()}};
      reply.binary.append(reinterpret_cast<const char *>(t.data.data()), t.data.size());
    } else {
      result["data"] = elements(t);
    }
    results.push_back(std::move(result));
  }
  reply.header = {{"model_name", name}, {"model_version", std::to_string(version)},
                  {"outputs", results}};
  if (!parsed.id.is_null())
    reply.header["id"] = parsed.id;
  return reply;
}

//===----------------------------------------------------------------------===//
// Metrics (Prometheus text format)
//===----------------------------------------------------------------------===//

std::string metrics(const Repository &repository) {
  struct Family {
    const char *name, *type, *help;
    std::string samples;
  };
  std::vector<Family> families = {
      {"kiln_inference_request_success", "counter", "Inference requests answered with outputs", {}},
      {"kiln_inference_request_failure", "counter", "Inference requests answered with an error", {}},
      {"kiln_inference_count", "counter", "Rows inferred for requests (a batch of 4 rows counts 4)", {}},
      {"kiln_inference_exec_count", "counter", "Program runs (batches)", {}},
      {"kiln_inference_request_duration_us", "counter", "Cumulative request duration in the server", {}},
      {"kiln_inference_queue_duration_us", "counter", "Cumulative time requests waited in the batch queue", {}},
      {"kiln_inference_compute_infer_duration_us", "counter", "Cumulative time of the runs, input gathering and output splitting included", {}},
      {"kiln_inference_pending_request_count", "gauge", "Requests queued now", {}},
      {"kiln_model_memory_bytes", "gauge", "Constants and arenas of the model version", {}},
      {"kiln_inference_batch_size", "histogram", "Rows per batch run (before padding to a bucket)", {}},
      {"kiln_model_fault_count", "counter", "Requests whose run faulted (an error of the run, not of the request), per model", {}},
  };
  auto sample = [](Family &f, const std::string &labels, uint64_t value,
                   const std::string &suffix = "") {
    f.samples += std::string(f.name) + suffix + "{" + labels + "} " + std::to_string(value) + "\n";
  };
  for (const auto &[name, model] : repository.models())
    for (const auto &[number, v] : model->versions) {
      std::string labels = "model=\"" + name + "\",version=\"" + std::to_string(number) + "\"";
      uint64_t success = v->stats.success, failure = v->stats.failure;
      kiln_batcher_stats_t b{};
      if (v->batcher)
        kiln_status_free(kiln_batcher_stats(v->batcher, &b));
      else
        b.executions = b.inferences = success;
      sample(families[0], labels, success);
      sample(families[1], labels, failure);
      sample(families[2], labels, b.inferences);
      sample(families[3], labels, b.executions);
      sample(families[4], labels, v->stats.requestNs / 1000);
      sample(families[5], labels, b.queue_ns / 1000);
      sample(families[6], labels, v->batcher ? b.compute_ns / 1000 : v->stats.computeNs / 1000);
      sample(families[7], labels, b.queue_depth);
      sample(families[8], labels, v->memoryBytes);
      if (v->batcher) {
        uint64_t cumulative = 0, sum = 0;
        for (size_t i = 0; i < b.histogram_size; ++i) {
          cumulative += b.batch_histogram[i];
          sum += (i + 1) * b.batch_histogram[i];
          sample(families[9], labels + ",le=\"" + std::to_string(i + 1) + "\"", cumulative,
                 "_bucket");
        }
        sample(families[9], labels + ",le=\"+Inf\"", cumulative, "_bucket");
        sample(families[9], labels, sum, "_sum");
        sample(families[9], labels, cumulative, "_count");
      }
    }
  for (const auto &[name, count] : repository.faults())
    sample(families[10], "model=\"" + name + "\"", count);
  std::string out;
  for (const Family &f : families)
    out += std::string("# HELP ") + f.name + " " + f.help + "\n# TYPE " + f.name + " " + f.type +
           "\n" + f.samples;
  return out;
}

//===----------------------------------------------------------------------===//
// The gRPC binding (inference.GRPCInferenceService)
//===----------------------------------------------------------------------===//

/// The gRPC status of a request error (the REST status's counterpart).
grpc::Status grpcStatus(const RequestError &e) {
  grpc::StatusCode code = e.status == 404   ? grpc::StatusCode::NOT_FOUND
                          : e.status == 400 ? grpc::StatusCode::INVALID_ARGUMENT
                          : e.status == 429 || e.status == 503 ? grpc::StatusCode::UNAVAILABLE
                          : e.status == 504 ? grpc::StatusCode::DEADLINE_EXCEEDED
                                            : grpc::StatusCode::INTERNAL;
  return grpc::Status(code, e.message);
}

/// Element i of a typed InferTensorContents into `tensor`; false when the
/// contents hold another count of elements than the shape (or the wrong
/// field for the type).
bool fromContents(const inference::InferTensorContents &c, Tensor &t) {
  size_t n = size_t(t.elementCount());
  auto fill = [&](const auto &values, auto cast) {
    using T = decltype(cast(values.Get(0)));
    if (size_t(values.size()) != n)
      return false;
    for (size_t i = 0; i < n; ++i)
      store<T>(t.data, i, cast(values.Get(int(i))));
    return true;
  };
  switch (t.dtype) {
  case KILN_DTYPE_BOOL: return fill(c.bool_contents(), [](bool v) { return uint8_t(v); });
  case KILN_DTYPE_I8: return fill(c.int_contents(), [](int32_t v) { return int8_t(v); });
  case KILN_DTYPE_I16: return fill(c.int_contents(), [](int32_t v) { return int16_t(v); });
  case KILN_DTYPE_I32: return fill(c.int_contents(), [](int32_t v) { return v; });
  case KILN_DTYPE_I64: return fill(c.int64_contents(), [](int64_t v) { return v; });
  case KILN_DTYPE_U8: return fill(c.uint_contents(), [](uint32_t v) { return uint8_t(v); });
  case KILN_DTYPE_U16: return fill(c.uint_contents(), [](uint32_t v) { return uint16_t(v); });
  case KILN_DTYPE_U32: return fill(c.uint_contents(), [](uint32_t v) { return v; });
  case KILN_DTYPE_U64: return fill(c.uint64_contents(), [](uint64_t v) { return v; });
  case KILN_DTYPE_F32: return fill(c.fp32_contents(), [](float v) { return v; });
  case KILN_DTYPE_F64: return fill(c.fp64_contents(), [](double v) { return v; });
  case KILN_DTYPE_F16:
    return fill(c.fp32_contents(), [](float v) { return support::floatToHalf(v); });
  case KILN_DTYPE_BF16:
    return fill(c.fp32_contents(), [](float v) { return support::floatToBfloat16(v); });
  }
  return false;
}

class GrpcService final : public inference::GRPCInferenceService::Service {
public:
  explicit GrpcService(Repository &repository) : repository_(repository) {}

  grpc::Status ServerLive(grpc::ServerContext *, const inference::ServerLiveRequest *,
                          inference::ServerLiveResponse *response) override {
    response->set_live(true);
    return grpc::Status::OK;
  }
  grpc::Status ServerReady(grpc::ServerContext *, const inference::ServerReadyRequest *,
                           inference::ServerReadyResponse *response) override {
    response->set_ready(repository_.ready());
    return grpc::Status::OK;
  }
  grpc::Status ModelReady(grpc::ServerContext *, const inference::ModelReadyRequest *request,
                          inference::ModelReadyResponse *response) override {
    try {
      repository_.find(request->name(), request->version());
    } catch (const RequestError &e) {
      return grpcStatus(e);
    }
    response->set_ready(true);
    return grpc::Status::OK;
  }
  grpc::Status ServerMetadata(grpc::ServerContext *, const inference::ServerMetadataRequest *,
                              inference::ServerMetadataResponse *response) override {
    response->set_name("kiln-serve");
    response->set_version("0.1");
    response->add_extensions("binary_tensor_data");
    return grpc::Status::OK;
  }
  grpc::Status ModelMetadata(grpc::ServerContext *, const inference::ModelMetadataRequest *request,
                             inference::ModelMetadataResponse *response) override {
    try {
      Repository::Found found = repository_.find(request->name(), request->version());
      // The same metadata as REST's, from the same function.
      json metadata = modelMetadata(request->name(), *found.model, *found.version);
      response->set_name(request->name());
      for (const json &version : metadata["versions"])
        response->add_versions(version.get<std::string>());
      response->set_platform("kiln");
      for (const char *side : {"inputs", "outputs"})
        for (const json &t : metadata[side]) {
          auto *m = std::string(side) == "inputs" ? response->add_inputs()
                                                  : response->add_outputs();
          m->set_name(t["name"].get<std::string>());
          m->set_datatype(t["datatype"].get<std::string>());
          for (const json &d : t["shape"])
            m->add_shape(d.get<int64_t>());
        }
    } catch (const RequestError &e) {
      return grpcStatus(e);
    }
    return grpc::Status::OK;
  }
  grpc::Status ModelInfer(grpc::ServerContext *, const inference::ModelInferRequest *request,
                          inference::ModelInferResponse *response) override {
    try {
      Repository::Found found = repository_.find(request->model_name(), request->model_version());
      ModelVersion &v = *found.version;
      counted(v, [&] {
        infer(v, *request, *response);
        return 0;
      });
      response->set_model_name(request->model_name());
      response->set_model_version(std::to_string(found.number));
      response->set_id(request->id());
    } catch (const RequestError &e) {
      return grpcStatus(e);
    }
    return grpc::Status::OK;
  }

  grpc::Status RepositoryIndex(grpc::ServerContext *, const inference::RepositoryIndexRequest *request,
                               inference::RepositoryIndexResponse *response) override {
    if (!request->repository_name().empty())
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "kiln-serve has one repository: leave repository_name empty");
    for (const json &entry : repository_.index(request->ready())) {
      auto *m = response->add_models();
      m->set_name(entry["name"].get<std::string>());
      if (entry.contains("version"))
        m->set_version(entry["version"].get<std::string>());
      m->set_state(entry["state"].get<std::string>());
      m->set_reason(entry["reason"].get<std::string>());
    }
    return grpc::Status::OK;
  }
  grpc::Status RepositoryModelLoad(grpc::ServerContext *,
                                   const inference::RepositoryModelLoadRequest *request,
                                   inference::RepositoryModelLoadResponse *) override {
    return repositoryCall(request->repository_name(), request->parameters_size(),
                          [&] { repository_.load(request->model_name()); });
  }
  grpc::Status RepositoryModelUnload(grpc::ServerContext *,
                                     const inference::RepositoryModelUnloadRequest *request,
                                     inference::RepositoryModelUnloadResponse *) override {
    return repositoryCall(request->repository_name(), request->parameters_size(),
                          [&] { repository_.unload(request->model_name()); });
  }

private:
  template <typename F>
  static grpc::Status repositoryCall(const std::string &repositoryName, int parameters, F call) {
    if (!repositoryName.empty())
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "kiln-serve has one repository: leave repository_name empty");
    if (parameters)
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "load and unload take no parameters (the model is read from the "
                          "repository)");
    try {
      call();
    } catch (const RequestError &e) {
      return grpcStatus(e);
    }
    return grpc::Status::OK;
  }

  static void infer(ModelVersion &v, const inference::ModelInferRequest &request,
                    inference::ModelInferResponse &response) {
    auto bad = [](const std::string &message) { return RequestError{400, message}; };
    bool raw = request.raw_input_contents_size() > 0;
    if (raw && request.raw_input_contents_size() != request.inputs_size())
      throw bad(std::to_string(request.raw_input_contents_size()) +
                " raw_input_contents for " + std::to_string(request.inputs_size()) +
                " inputs (give one per input, or none)");
    std::vector<Tensor> inputs;
    for (int i = 0; i < request.inputs_size(); ++i) {
      const auto &in = request.inputs(i);
      Tensor t = describeInput(v, in.name(), in.datatype(),
                               std::vector<int64_t>(in.shape().begin(), in.shape().end()));
      std::string where = "input '" + in.name() + "': ";
      if (raw) {
        const std::string &bytes = request.raw_input_contents(i);
        if (bytes.size() != t.data.size())
          throw bad(where + std::to_string(bytes.size()) +
                    " bytes of raw_input_contents, the shape holds " +
                    std::to_string(t.data.size()));
        std::memcpy(t.data.data(), bytes.data(), bytes.size());
      } else if (!fromContents(in.contents(), t)) {
        throw bad(where + "its contents do not hold " + std::to_string(t.elementCount()) +
                  " " + in.datatype() + " elements in the field of that type");
      }
      inputs.push_back(std::move(t));
    }
    auto parameter = [&](const char *name) -> int64_t {
      auto it = request.parameters().find(name);
      if (it == request.parameters().end())
        return 0;
      if (it->second.parameter_choice_case() != inference::InferParameter::kInt64Param ||
          it->second.int64_param() < 0)
        throw bad(std::string("parameter '") + name + "' must be a non-negative int64");
      return it->second.int64_param();
    };
    int64_t priority = parameter("priority");
    if (priority > int64_t(UINT32_MAX))
      throw bad("parameter 'priority' is too large");
    std::vector<std::string> wanted;
    for (const auto &out : request.outputs()) {
      if (std::none_of(v.outputs.begin(), v.outputs.end(),
                       [&](const kiln_tensor_info_t &i) { return out.name() == i.name; }))
        throw bad("no model output named '" + out.name() + "'");
      wanted.push_back(out.name());
    }
    std::vector<Tensor> outputs =
        execute(v, inputs, uint32_t(priority), uint64_t(parameter("timeout")));
    for (const Tensor &t : outputs) {
      if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), t.name) == wanted.end())
        continue;
      auto *out = response.add_outputs();
      out->set_name(t.name);
      out->set_datatype(protocolType(t.dtype));
      for (int64_t d : t.shape)
        out->add_shape(d);
      response.add_raw_output_contents(reinterpret_cast<const char *>(t.data.data()),
                                       t.data.size());
    }
  }

  Repository &repository_;
};

/// Debian's cpp-httplib is a compiled library whose listening sockets take a
/// backlog of 5: the kernel drops connections beyond it, and each dropped
/// client retries its SYN one second later. Raises the backlog of every
/// listening socket of the process (listen() again updates it on Linux).
void raiseListenBacklogs() {
  for (int fd = 0; fd < 1024; ++fd) {
    int listening = 0;
    socklen_t length = sizeof(listening);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0 && listening)
      listen(fd, 1024);
  }
}

std::atomic<bool> stopRequested{false};

void onSignal(int) { stopRequested = true; }

} // namespace

int main(int argc, char **argv) {
  Options options = parseArguments(argc, argv);
  support::TraceRecorder recorder;
  if (!options.trace.empty())
    traceRecorder = &recorder;
  Repository repository;
  repository.start(options);

  httplib::Server server;
  // Replies go out as several writes (headers, body): without TCP_NODELAY a
  // keep-alive client waits out the peer's delayed ACK (40 ms) per request.
  server.set_tcp_nodelay(true);
  // Enough HTTP workers that requests reach the model's queue (which bounds
  // and rejects them) instead of waiting in the socket's backlog.
  server.new_task_queue = [threads = options.httpThreads] {
    return new httplib::ThreadPool(threads);
  };
  auto reply = [](httplib::Response &res, int status, const json &body) {
    res.status = status;
    res.set_content(body.dump(), "application/json");
  };
  auto error = [&](httplib::Response &res, const RequestError &e) {
    reply(res, e.status, json{{"error", e.message}});
  };
  // Runs `handler`, turning a RequestError (and anything unexpected) into the
  // protocol's error reply.
  auto guarded = [&](auto handler) {
    return [=](const httplib::Request &req, httplib::Response &res) {
      try {
        handler(req, res);
      } catch (const RequestError &e) {
        error(res, e);
      } catch (const std::exception &e) {
        error(res, RequestError{500, std::string("internal error: ") + e.what()});
      }
    };
  };
  server.Get("/v2/health/live", [](const httplib::Request &, httplib::Response &res) {
    res.status = 200;
  });
  server.Get("/v2/health/ready", [&](const httplib::Request &, httplib::Response &res) {
    res.status = repository.ready() ? 200 : 400; // a model failed to load
  });
  server.Get("/v2", guarded([&](const httplib::Request &, httplib::Response &res) {
               reply(res, 200, {{"name", "kiln-serve"}, {"version", "0.1"},
                                {"extensions", json::array({"binary_tensor_data", "model_repository"})}});
             }));
  const char *modelRoute = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";
  server.Get(modelRoute, guarded([&](const httplib::Request &req, httplib::Response &res) {
               std::string name = req.matches[1];
               Repository::Found found = repository.find(name, req.matches[2]);
               reply(res, 200, modelMetadata(name, *found.model, *found.version));
             }));
  server.Get(std::string(modelRoute) + "/ready",
             guarded([&](const httplib::Request &req, httplib::Response &res) {
               repository.find(req.matches[1], req.matches[2]);
               res.status = 200;
             }));
  // The handler reads the body itself (a content reader): cpp-httplib would
  // otherwise refuse a body over 8 KiB sent as
  // application/x-www-form-urlencoded (413), which is what `curl -d
  // @request.json` sends. Every body is read as the protocol's JSON or binary
  // tensors, whatever its content type says.
  server.Post(std::string(modelRoute) + "/infer", [&](const httplib::Request &request,
                                                      httplib::Response &response,
                                                      const httplib::ContentReader &content) {
    std::string body;
    content([&](const char *data, size_t size) {
      body.append(data, size);
      return true;
    });
    guarded([&](const httplib::Request &req, httplib::Response &res) {
      std::string name = req.matches[1];
      Repository::Found found = repository.find(name, req.matches[2]);
      ModelVersion &v = *found.version;
      uint64_t number = found.number;
      size_t headerLength = std::string::npos;
      if (req.has_header("Inference-Header-Content-Length")) {
        std::string text = req.get_header_value("Inference-Header-Content-Length");
        uint64_t n = 0;
        if (!support::parseUint64(text, n))
          throw RequestError{400,
                             "Inference-Header-Content-Length '" + text + "' is not a byte count"};
        headerLength = size_t(std::min<uint64_t>(n, SIZE_MAX));
      }
      InferReply result = counted(v, [&] { return infer(v, name, number, body, headerLength); });
      if (result.binary.empty()) {
        reply(res, 200, result.header);
        return;
      }
      std::string header = result.header.dump();
      res.status = 200;
      res.set_header("Inference-Header-Content-Length", std::to_string(header.size()));
      res.set_content(header + result.binary, "application/octet-stream");
    })(request, response);
  });
  // The model repository extension: index, load (or reload), unload.
  server.Post("/v2/repository/index",
              guarded([&](const httplib::Request &req, httplib::Response &res) {
                bool readyOnly = false;
                if (!req.body.empty()) {
                  json body = json::parse(req.body, nullptr, false);
                  if (body.is_discarded() || !body.is_object())
                    throw RequestError{400, "the request body is not a JSON object"};
                  if (body.contains("ready")) {
                    if (!body["ready"].is_boolean())
                      throw RequestError{400, "'ready' must be true or false"};
                    readyOnly = body["ready"].get<bool>();
                  }
                }
                reply(res, 200, repository.index(readyOnly));
              }));
  server.Post(R"(/v2/repository/models/([^/]+)/load)",
              guarded([&](const httplib::Request &req, httplib::Response &res) {
                repository.load(req.matches[1]);
                reply(res, 200, json::object());
              }));
  server.Post(R"(/v2/repository/models/([^/]+)/unload)",
              guarded([&](const httplib::Request &req, httplib::Response &res) {
                repository.unload(req.matches[1]);
                reply(res, 200, json::object());
              }));
  server.set_error_handler([&](const httplib::Request &req, httplib::Response &res) {
    if (res.status == 404 && res.body.empty())
      reply(res, 404, json{{"error", "no route " + req.method + " " + req.path}});
  });

  // Prometheus metrics on their own port, as the KServe servers do.
  httplib::Server metricsServer;
  metricsServer.Get("/metrics", [&](const httplib::Request &, httplib::Response &res) {
    res.set_content(metrics(repository), "text/plain; version=0.0.4");
  });
  int metricsPort = int(options.metricsPort);
  if (metricsPort == 0) {
    metricsPort = metricsServer.bind_to_any_port(options.host);
    if (metricsPort < 0)
      fatal("cannot listen on " + options.host + " for metrics");
  } else if (!metricsServer.bind_to_port(options.host, metricsPort)) {
    fatal("cannot listen on " + options.host + ":" + std::to_string(metricsPort) +
          " for metrics");
  }
  std::thread metricsThread([&] { metricsServer.listen_after_bind(); });

  int port = int(options.port);
  if (port == 0) {
    port = server.bind_to_any_port(options.host);
    if (port < 0)
      fatal("cannot listen on " + options.host);
  } else if (!server.bind_to_port(options.host, port)) {
    fatal("cannot listen on " + options.host + ":" + std::to_string(port));
  }
  // The gRPC binding on its own port.
  GrpcService grpcService(repository);
  grpc::ServerBuilder grpcBuilder;
  int grpcPort = 0;
  grpcBuilder.AddListeningPort(options.host + ":" + std::to_string(options.grpcPort),
                               grpc::InsecureServerCredentials(), &grpcPort);
  grpcBuilder.RegisterService(&grpcService);
  grpcBuilder.SetMaxReceiveMessageSize(1 << 30);
  grpcBuilder.SetMaxSendMessageSize(1 << 30);
  std::unique_ptr<grpc::Server> grpcServer = grpcBuilder.BuildAndStart();
  if (!grpcServer || grpcPort == 0)
    fatal("cannot listen on " + options.host + ":" + std::to_string(options.grpcPort) +
          " for gRPC");

  raiseListenBacklogs();
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  std::thread watcher([&] {
    while (!stopRequested)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    server.stop();
    metricsServer.stop();
    grpcServer->Shutdown(); // answers the calls in flight first
  });
  std::printf("kiln-serve: listening on http://%s:%d (metrics on http://%s:%d/metrics, "
              "grpc on %s:%d)\n",
              options.host.c_str(), port, options.host.c_str(), metricsPort,
              options.host.c_str(), grpcPort);
  std::fflush(stdout);
  bool ok = server.listen_after_bind();
  stopRequested = true;
  watcher.join();
  metricsThread.join();
  grpcServer->Wait();
  if (traceRecorder) {
    std::string error;
    if (!recorder.write(options.trace, error)) {
      std::fprintf(stderr, "kiln-serve: error: %s\n", error.c_str());
      return 1;
    }
  }
  return ok ? 0 : 1;
}
