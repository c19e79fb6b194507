//===- kiln-loadgen.cpp - Load generator for KServe v2 servers ------------===//
//
// Drives a running server (kiln-serve or any KServe v2 server) over REST or
// gRPC at fixed concurrency levels or request rates, each for a bounded
// time, and prints throughput and latency percentiles per level. The inputs
// follow the model's metadata (dimension -1 takes --batch rows), random or
// from .npy files; every worker keeps one connection.
//
//===----------------------------------------------------------------------===//

#include "grpc_predict_v2.grpc.pb.h"
#include "kiln/support/Npy.h"
#include "kiln/support/TensorUtil.h"
#include "kiln/support/Version.h"

#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace kiln;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

const char *const kUsage =
    "usage: kiln-loadgen --model=NAME (--url=http://HOST:PORT | --grpc=HOST:PORT) [options]\n"
    "\n"
    "Sends inference requests to a KServe v2 server at each concurrency level\n"
    "(or request rate) for --duration seconds and prints requests/s and latency\n"
    "percentiles per level.\n"
    "\n"
    "options:\n"
    "  --model=NAME           the model (its metadata decides the inputs)\n"
    "  --model-version=V      a version (default: the server's choice)\n"
    "  --url=http://H:P       REST (binary tensor extension; --json-data for JSON)\n"
    "  --grpc=H:P             gRPC (raw_input_contents)\n"
    "  --concurrency=N[,N..]  closed loop: N requests in flight (default 1)\n"
    "  --request-rate=R[,R..] open loop: R requests/s on a schedule, at most\n"
    "                         --max-in-flight (default 256) outstanding\n"
    "  --duration=S           seconds per level (default 5)\n"
    "  --warmup=S             untimed seconds before each level (default 0.5)\n"
    "  --batch=N              rows of each request where the metadata says -1\n"
    "                         (default 1)\n"
    "  --input=NAME=@F.npy    an input from a .npy file (default: random)\n"
    "  --json-data            REST with JSON tensors instead of binary\n"
    "  --json                 print the results as JSON\n"
    "  --help                 print this help\n"
    "  --version              print the version and the devices it runs on\n";

[[noreturn]] void fatal(const std::string &message) {
  std::fprintf(stderr, "kiln-loadgen: error: %s\n", message.c_str());
  std::exit(1);
}

struct Options {
  std::string model, version, url, grpc;
  std::vector<uint64_t> concurrency, rates;
  uint64_t maxInFlight = 256;
  double duration = 5, warmup = 0.5;
  uint64_t batch = 1;
  std::map<std::string, std::string> inputFiles;
  bool jsonData = false, json = false;
};

std::vector<uint64_t> parseList(const std::string &flag, const std::string &text) {
  std::vector<uint64_t> values;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos
                                                                       : comma - start);
    uint64_t v = 0;
    if (!support::parseUint64(part, v) || v == 0 || v > 100000)
      fatal(flag + ": '" + part + "' is not a count from 1 to 100000");
    values.push_back(v);
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return values;
}

Options parseArguments(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], text;
    if (arg == "--version") {
      std::fputs(kiln::support::runtimeVersionText("kiln-loadgen").c_str(), stdout);
      std::exit(0);
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (support::flagValue(arg, "--model=", o.model)) {
    } else if (support::flagValue(arg, "--model-version=", o.version)) {
    } else if (support::flagValue(arg, "--url=", o.url)) {
    } else if (support::flagValue(arg, "--grpc=", o.grpc)) {
    } else if (support::flagValue(arg, "--concurrency=", text)) {
      o.concurrency = parseList("--concurrency", text);
    } else if (support::flagValue(arg, "--request-rate=", text)) {
      o.rates = parseList("--request-rate", text);
    } else if (support::flagValue(arg, "--max-in-flight=", text)) {
      if (!support::parseUint64(text, o.maxInFlight) || o.maxInFlight < 1 ||
          o.maxInFlight > 4096)
        fatal("--max-in-flight: '" + text + "' is not a count from 1 to 4096");
    } else if (support::flagValue(arg, "--duration=", text)) {
      if (!support::parseDouble(text, o.duration) || o.duration <= 0 || o.duration > 86400)
        fatal("--duration: '" + text + "' is not a number of seconds");
    } else if (support::flagValue(arg, "--warmup=", text)) {
      if (!support::parseDouble(text, o.warmup) || o.warmup < 0 || o.warmup > 3600)
        fatal("--warmup: '" + text + "' is not a number of seconds");
    } else if (support::flagValue(arg, "--batch=", text)) {
      if (!support::parseUint64(text, o.batch) || o.batch < 1 || o.batch > 65536)
        fatal("--batch: '" + text + "' is not a batch size (1-65536)");
    } else if (support::flagValue(arg, "--input=", text)) {
      size_t at = text.find("=@");
      if (at == std::string::npos || at == 0)
        fatal("--input=" + text + ": expected NAME=@FILE.npy");
      o.inputFiles[text.substr(0, at)] = text.substr(at + 2);
    } else if (arg == "--json-data") {
      o.jsonData = true;
    } else if (arg == "--json") {
      o.json = true;
    } else {
      fatal("unknown argument '" + arg + "' (see kiln-loadgen --help)");
    }
  }
  if (o.model.empty())
    fatal("no --model given (see --help)");
  if (o.url.empty() == o.grpc.empty())
    fatal("give one of --url (REST) and --grpc");
  if (!o.concurrency.empty() && !o.rates.empty())
    fatal("give --concurrency or --request-rate, not both");
  if (o.concurrency.empty() && o.rates.empty())
    o.concurrency = {1};
  return o;
}

/// The protocol's data type name -> the runtime's dtype.
kiln_dtype_t dtypeOf(const std::string &name) {
  static const std::map<std::string, kiln_dtype_t> types = {
      {"FP32", KILN_DTYPE_F32}, {"FP16", KILN_DTYPE_F16},  {"BF16", KILN_DTYPE_BF16},
      {"FP64", KILN_DTYPE_F64}, {"INT8", KILN_DTYPE_I8},   {"INT16", KILN_DTYPE_I16},
      {"INT32", KILN_DTYPE_I32}, {"INT64", KILN_DTYPE_I64}, {"UINT8", KILN_DTYPE_U8},
      {"UINT16", KILN_DTYPE_U16}, {"UINT32", KILN_DTYPE_U32}, {"UINT64", KILN_DTYPE_U64},
      {"BOOL", KILN_DTYPE_BOOL}};
  auto it = types.find(name);
  if (it == types.end())
    fatal("datatype " + name + " is not supported by kiln-loadgen");
  return it->second;
}

struct Input {
  std::string name, datatype;
  Tensor tensor;
};

/// One level's measurements.
struct Result {
  std::string mode; // "concurrency" or "rate"
  uint64_t level = 0;
  uint64_t ok = 0, errors = 0;
  double seconds = 0;
  std::vector<double> latencyMs;
  std::map<std::string, uint64_t> errorKinds;
};

/// Sends one request and returns "" or an error kind ("HTTP 429", "UNAVAILABLE").
class Sender {
public:
  virtual ~Sender() = default;
  virtual std::string send() = 0;
};

class RestSender final : public Sender {
public:
  RestSender(const std::string &url, const std::string &path, const std::string &body,
             size_t headerLength)
      : client_(url), path_(path), body_(body), headerLength_(headerLength) {
    client_.set_keep_alive(true);
    client_.set_tcp_nodelay(true); // headers and body go out as two writes
    client_.set_read_timeout(120, 0);
  }
  std::string send() override {
    httplib::Headers headers;
    if (headerLength_ != std::string::npos)
      headers.emplace("Inference-Header-Content-Length", std::to_string(headerLength_));
    auto response = client_.Post(path_, headers, body_,
                                 headerLength_ == std::string::npos ? "application/json"
                                                                    : "application/octet-stream");
    if (!response)
      return "connection: " + httplib::to_string(response.error());
    return response->status == 200 ? "" : "HTTP " + std::to_string(response->status);
  }

private:
  httplib::Client client_;
  std::string path_, body_;
  size_t headerLength_;
};

class GrpcSender final : public Sender {
public:
  GrpcSender(std::shared_ptr<grpc::Channel> channel, const inference::ModelInferRequest &request)
      : stub_(inference::GRPCInferenceService::NewStub(channel)), request_(request) {}
  std::string send() override {
    grpc::ClientContext context;
    inference::ModelInferResponse response;
    grpc::Status status = stub_->ModelInfer(&context, request_, &response);
    if (status.ok())
      return "";
    static const char *names[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
                                  "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
                                  "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                                  "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
                                  "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
                                  "UNAUTHENTICATED"};
    int code = int(status.error_code());
    return code >= 0 && code < 17 ? names[code] : "gRPC " + std::to_string(code);
  }

private:
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub_;
  inference::ModelInferRequest request_;
};

double percentile(std::vector<double> sorted, double p) {
  if (sorted.empty())
    return 0;
  double rank = p / 100 * double(sorted.size() - 1);
  size_t lo = size_t(std::floor(rank)), hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - double(lo));
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseArguments(argc, argv);

  // The model's inputs, from its metadata.
  json metadata;
  std::shared_ptr<grpc::Channel> channel;
  if (!options.url.empty()) {
    httplib::Client client(options.url);
    std::string path = "/v2/models/" + options.model +
                       (options.version.empty() ? "" : "/versions/" + options.version);
    auto response = client.Get(path);
    if (!response)
      fatal(options.url + ": cannot connect (" + httplib::to_string(response.error()) + ")");
    if (response->status != 200)
      fatal(options.url + path + ": HTTP " + std::to_string(response->status) + ": " +
            response->body);
    metadata = json::parse(response->body, nullptr, false);
    if (metadata.is_discarded() || !metadata.contains("inputs"))
      fatal(options.url + path + ": the metadata is not the protocol's JSON");
  } else {
    channel = grpc::CreateChannel(options.grpc, grpc::InsecureChannelCredentials());
    auto stub = inference::GRPCInferenceService::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    inference::ModelMetadataRequest request;
    request.set_name(options.model);
    request.set_version(options.version);
    inference::ModelMetadataResponse response;
    grpc::Status status = stub->ModelMetadata(&context, request, &response);
    if (!status.ok())
      fatal(options.grpc + ": ModelMetadata: " + status.error_message());
    metadata["inputs"] = json::array();
    for (const auto &t : response.inputs())
      metadata["inputs"].push_back({{"name", t.name()},
                                    {"datatype", t.datatype()},
                                    {"shape", std::vector<int64_t>(t.shape().begin(),
                                                                   t.shape().end())}});
  }
  std::vector<Input> inputs;
  for (const json &t : metadata["inputs"]) {
    Input in;
    in.name = t["name"].get<std::string>();
    in.datatype = t["datatype"].get<std::string>();
    auto file = options.inputFiles.find(in.name);
    if (file != options.inputFiles.end()) {
      std::string error;
      if (!npy::read(file->second, in.tensor, error))
        fatal("--input " + in.name + ": " + error);
    } else {
      in.tensor.dtype = dtypeOf(in.datatype);
      for (const json &d : t["shape"])
        in.tensor.shape.push_back(d.get<int64_t>() < 0 ? int64_t(options.batch)
                                                       : d.get<int64_t>());
      support::fillRandom(in.tensor, support::inputSeed(0, in.name));
    }
    in.tensor.name = in.name;
    inputs.push_back(std::move(in));
  }
  for (const auto &[name, path] : options.inputFiles)
    if (std::none_of(inputs.begin(), inputs.end(), [&](const Input &i) { return i.name == name; }))
      fatal("--input: the model has no input named '" + name + "'");

  // The request, built once.
  std::string body, path;
  size_t headerLength = std::string::npos;
  inference::ModelInferRequest grpcRequest;
  if (!options.url.empty()) {
    path = "/v2/models/" + options.model +
           (options.version.empty() ? "" : "/versions/" + options.version) + "/infer";
    json request = {{"inputs", json::array()}};
    std::string binary;
    for (const Input &in : inputs) {
      json entry = {{"name", in.name}, {"datatype", in.datatype}, {"shape", in.tensor.shape}};
      if (options.jsonData) {
        json data = json::array();
        kiln_dtype_t t = in.tensor.dtype;
        bool isFloat = t == KILN_DTYPE_F32 || t == KILN_DTYPE_F16 || t == KILN_DTYPE_BF16 ||
                       t == KILN_DTYPE_F64;
        for (uint64_t e = 0; e < in.tensor.elementCount(); ++e) {
          double v = support::elementAsDouble(in.tensor, e);
          if (t == KILN_DTYPE_BOOL)
            data.push_back(v != 0);
          else if (isFloat)
            data.push_back(v);
          else
            data.push_back(int64_t(v));
        }
        entry["data"] = data;
      } else {
        entry["parameters"] = {{"binary_data_size", in.tensor.data.size()}};
        binary.append(reinterpret_cast<const char *>(in.tensor.data.data()),
                      in.tensor.data.size());
      }
      request["inputs"].push_back(entry);
    }
    if (!options.jsonData)
      request["parameters"] = {{"binary_data_output", true}};
    body = request.dump();
    if (!options.jsonData) {
      headerLength = body.size();
      body += binary;
    }
  } else {
    grpcRequest.set_model_name(options.model);
    grpcRequest.set_model_version(options.version);
    for (const Input &in : inputs) {
      auto *t = grpcRequest.add_inputs();
      t->set_name(in.name);
      t->set_datatype(in.datatype);
      for (int64_t d : in.tensor.shape)
        t->add_shape(d);
      grpcRequest.add_raw_input_contents(
          reinterpret_cast<const char *>(in.tensor.data.data()), in.tensor.data.size());
    }
  }
  auto makeSender = [&]() -> std::unique_ptr<Sender> {
    if (!options.url.empty())
      return std::make_unique<RestSender>(options.url, path, body, headerLength);
    return std::make_unique<GrpcSender>(channel, grpcRequest);
  };

  std::vector<Result> results;
  bool rateMode = !options.rates.empty();
  for (uint64_t level : rateMode ? options.rates : options.concurrency) {
    Result result;
    result.mode = rateMode ? "rate" : "concurrency";
    result.level = level;
    std::mutex mutex;
    std::atomic<uint64_t> next{0};
    uint64_t workers = rateMode ? std::min<uint64_t>(options.maxInFlight, level) : level;
    // Warm-up, then the timed window; a request counts when it starts in it.
    Clock::time_point start = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(options.warmup));
    Clock::time_point stop = start + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(options.duration));
    std::vector<std::thread> threads;
    for (uint64_t w = 0; w < workers; ++w)
      threads.emplace_back([&] {
        std::unique_ptr<Sender> sender = makeSender();
        std::vector<double> latencies;
        std::map<std::string, uint64_t> errors;
        uint64_t ok = 0;
        for (;;) {
          Clock::time_point begin = Clock::now();
          if (rateMode) {
            // Request i is due at start + i / rate (warm-up requests are not scheduled).
            uint64_t i = next++;
            begin = start + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(double(i) / double(level)));
            if (begin >= stop)
              break;
            std::this_thread::sleep_until(begin);
          } else if (begin >= stop) {
            break;
          }
          std::string error = sender->send();
          double ms = std::chrono::duration<double, std::milli>(Clock::now() - begin).count();
          if (begin < start)
            continue; // warm-up
          if (error.empty()) {
            ++ok;
            latencies.push_back(ms);
          } else {
            ++errors[error];
          }
        }
        std::lock_guard<std::mutex> lock(mutex);
        result.ok += ok;
        result.latencyMs.insert(result.latencyMs.end(), latencies.begin(), latencies.end());
        for (const auto &[kind, n] : errors) {
          result.errorKinds[kind] += n;
          result.errors += n;
        }
      });
    for (std::thread &t : threads)
      t.join();
    // Requests are counted by their start in the window: the rates are per
    // second of the window.
    result.seconds = options.duration;
    std::sort(result.latencyMs.begin(), result.latencyMs.end());
    results.push_back(std::move(result));
  }

  uint64_t rows = options.batch;
  if (options.json) {
    json out = json::array();
    for (const Result &r : results) {
      json errors = json::object();
      for (const auto &[kind, n] : r.errorKinds)
        errors[kind] = n;
      out.push_back({{r.mode, r.level},
                     {"requests", r.ok},
                     {"errors", errors},
                     {"requests_per_second", double(r.ok) / r.seconds},
                     {"rows_per_second", double(r.ok * rows) / r.seconds},
                     {"latency_ms",
                      {{"p50", percentile(r.latencyMs, 50)},
                       {"p90", percentile(r.latencyMs, 90)},
                       {"p99", percentile(r.latencyMs, 99)},
                       {"max", r.latencyMs.empty() ? 0.0 : r.latencyMs.back()}}}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("model %s over %s, %llu row(s) per request, %.1f s per level\n",
              options.model.c_str(), options.url.empty() ? "gRPC" : "REST",
              (unsigned long long)rows, options.duration);
  std::printf("%12s %10s %10s %9s %9s %9s %9s  errors\n", rateMode ? "rate/s" : "concurrency",
              "req/s", "rows/s", "p50 ms", "p90 ms", "p99 ms", "max ms");
  for (const Result &r : results) {
    std::string errors;
    for (const auto &[kind, n] : r.errorKinds)
      errors += (errors.empty() ? "" : ", ") + std::to_string(n) + " " + kind;
    std::printf("%12llu %10.1f %10.1f %9.2f %9.2f %9.2f %9.2f  %s\n",
                (unsigned long long)r.level, double(r.ok) / r.seconds,
                double(r.ok * rows) / r.seconds, percentile(r.latencyMs, 50),
                percentile(r.latencyMs, 90), percentile(r.latencyMs, 99),
                r.latencyMs.empty() ? 0.0 : r.latencyMs.back(),
                errors.empty() ? "0" : errors.c_str());
  }
  return 0;
}
