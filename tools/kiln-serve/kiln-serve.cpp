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
// request without a version gets the highest). Every model version is
// loaded at start on one device; a model that does not load stops the
// server with its error. Errors are {"error": "..."} with 400 (a bad
// request) or 404 (an unknown model or route). Requests to one model run one
// at a time (its session serializes them); requests to different models run
// concurrently on the HTTP library's worker threads.
//
// Links the runtime only (no MLIR, no LLVM); HTTP from cpp-httplib, JSON
// from nlohmann-json (Debian's libcpp-httplib-dev, nlohmann-json3-dev).
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime.hpp"
#include "kiln/support/TensorUtil.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

using namespace kiln;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

const char *const kUsage =
    "usage: kiln-serve --model-repository=DIR [options]\n"
    "\n"
    "Serves the models of DIR (DIR/NAME/VERSION/model.kiln) over the KServe v2\n"
    "REST protocol.\n"
    "\n"
    "options:\n"
    "  --http-port=N        port to listen on (default 8000; 0 picks a free one)\n"
    "  --host=ADDRESS       address to listen on (default 127.0.0.1)\n"
    "  --device=DEVICE      cpu (default), hip:N or emu:GFX, for every model\n"
    "  --threads=N          the device's worker threads (default: one per CPU)\n"
    "  --help               print this help\n"
    "\n"
    "Prints 'kiln-serve: listening on http://HOST:PORT' once it serves; stops\n"
    "on SIGINT or SIGTERM.\n";

[[noreturn]] void fatal(const std::string &message) {
  std::fprintf(stderr, "kiln-serve: error: %s\n", message.c_str());
  std::exit(1);
}

struct Options {
  std::string repository;
  std::string host = "127.0.0.1";
  uint64_t port = 8000;
  std::string device = "cpu";
  uint64_t threads = 0;
};

Options parseArguments(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], text;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (support::flagValue(arg, "--model-repository=", options.repository)) {
    } else if (support::flagValue(arg, "--host=", options.host)) {
    } else if (support::flagValue(arg, "--device=", options.device)) {
    } else if (support::flagValue(arg, "--http-port=", text)) {
      if (!support::parseUint64(text, options.port) || options.port > 65535)
        fatal("--http-port: '" + text + "' is not a port (0-65535)");
    } else if (support::flagValue(arg, "--threads=", text)) {
      if (!support::parseUint64(text, options.threads) || options.threads > 1024)
        fatal("--threads: '" + text + "' is not a thread count (0-1024)");
    } else {
      fatal("unknown argument '" + arg + "' (see kiln-serve --help)");
    }
  }
  if (options.repository.empty())
    fatal("no --model-repository given (see kiln-serve --help)");
  return options;
}

//===----------------------------------------------------------------------===//
// Data types
//===----------------------------------------------------------------------===//

/// The protocol's name of a tensor data type.
const char *protocolType(kiln_dtype_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_F32: return "FP32";
  case KILN_DTYPE_F16: return "FP16";
  case KILN_DTYPE_BF16: return "BF16";
  case KILN_DTYPE_F64: return "FP64";
  case KILN_DTYPE_I8: return "INT8";
  case KILN_DTYPE_I16: return "INT16";
  case KILN_DTYPE_I32: return "INT32";
  case KILN_DTYPE_I64: return "INT64";
  case KILN_DTYPE_U8: return "UINT8";
  case KILN_DTYPE_U16: return "UINT16";
  case KILN_DTYPE_U32: return "UINT32";
  case KILN_DTYPE_U64: return "UINT64";
  case KILN_DTYPE_BOOL: return "BOOL";
  }
  return "?";
}

/// A request error: the HTTP status and the message of {"error": ...}.
struct RequestError {
  int status;
  std::string message;
};

template <typename T> void store(std::vector<unsigned char> &data, size_t i, T value) {
  std::memcpy(data.data() + i * sizeof(T), &value, sizeof(T));
}
template <typename T> T load(const std::vector<unsigned char> &data, size_t i) {
  T value;
  std::memcpy(&value, data.data() + i * sizeof(T), sizeof(T));
  return value;
}

/// Appends the elements of `data` (a number, a bool, or arrays of them
/// nested to any depth: the protocol allows flat and nested) in row-major
/// order.
void flatten(const json &data, std::vector<const json *> &out) {
  if (data.is_array()) {
    for (const json &element : data)
      flatten(element, out);
    return;
  }
  out.push_back(&data);
}

/// Element `i` of `tensor` as `value` (checked against the data type).
bool storeElement(Tensor &tensor, size_t i, const json &value) {
  auto integer = [&](auto zero, int64_t lo, uint64_t hi) -> bool {
    using T = decltype(zero);
    if (value.is_number_unsigned()) {
      uint64_t v = value.get<uint64_t>();
      if (v > hi)
        return false;
      store<T>(tensor.data, i, T(v));
      return true;
    }
    if (!value.is_number_integer())
      return false;
    int64_t v = value.get<int64_t>();
    if (v < lo || (v > 0 && uint64_t(v) > hi))
      return false;
    store<T>(tensor.data, i, T(v));
    return true;
  };
  switch (tensor.dtype) {
  case KILN_DTYPE_F32:
    if (!value.is_number())
      return false;
    store<float>(tensor.data, i, value.get<float>());
    return true;
  case KILN_DTYPE_F64:
    if (!value.is_number())
      return false;
    store<double>(tensor.data, i, value.get<double>());
    return true;
  case KILN_DTYPE_F16:
  case KILN_DTYPE_BF16: {
    if (!value.is_number())
      return false;
    float v = value.get<float>();
    store<uint16_t>(tensor.data, i,
                    tensor.dtype == KILN_DTYPE_F16 ? support::floatToHalf(v)
                                                   : support::floatToBfloat16(v));
    return true;
  }
  case KILN_DTYPE_BOOL:
    if (value.is_boolean()) {
      tensor.data[i] = value.get<bool>() ? 1 : 0;
      return true;
    }
    return false;
  case KILN_DTYPE_I8: return integer(int8_t(), INT8_MIN, INT8_MAX);
  case KILN_DTYPE_I16: return integer(int16_t(), INT16_MIN, INT16_MAX);
  case KILN_DTYPE_I32: return integer(int32_t(), INT32_MIN, INT32_MAX);
  case KILN_DTYPE_I64: return integer(int64_t(), INT64_MIN, INT64_MAX);
  case KILN_DTYPE_U8: return integer(uint8_t(), 0, UINT8_MAX);
  case KILN_DTYPE_U16: return integer(uint16_t(), 0, UINT16_MAX);
  case KILN_DTYPE_U32: return integer(uint32_t(), 0, UINT32_MAX);
  case KILN_DTYPE_U64: return integer(uint64_t(), 0, UINT64_MAX);
  }
  return false;
}

/// The elements of `tensor`, flat, as JSON values.
json elements(const Tensor &tensor) {
  json out = json::array();
  size_t n = size_t(tensor.elementCount());
  for (size_t i = 0; i < n; ++i) {
    switch (tensor.dtype) {
    case KILN_DTYPE_F32: out.push_back(load<float>(tensor.data, i)); break;
    case KILN_DTYPE_F64: out.push_back(load<double>(tensor.data, i)); break;
    case KILN_DTYPE_F16: out.push_back(support::halfToFloat(load<uint16_t>(tensor.data, i))); break;
    case KILN_DTYPE_BF16:
      out.push_back(support::bfloat16ToFloat(load<uint16_t>(tensor.data, i)));
      break;
    case KILN_DTYPE_BOOL: out.push_back(tensor.data[i] != 0); break;
    case KILN_DTYPE_I8: out.push_back(load<int8_t>(tensor.data, i)); break;
    case KILN_DTYPE_I16: out.push_back(load<int16_t>(tensor.data, i)); break;
    case KILN_DTYPE_I32: out.push_back(load<int32_t>(tensor.data, i)); break;
    case KILN_DTYPE_I64: out.push_back(load<int64_t>(tensor.data, i)); break;
    case KILN_DTYPE_U8: out.push_back(load<uint8_t>(tensor.data, i)); break;
    case KILN_DTYPE_U16: out.push_back(load<uint16_t>(tensor.data, i)); break;
    case KILN_DTYPE_U32: out.push_back(load<uint32_t>(tensor.data, i)); break;
    case KILN_DTYPE_U64: out.push_back(load<uint64_t>(tensor.data, i)); break;
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// The repository
//===----------------------------------------------------------------------===//

struct ModelVersion {
  std::string path;
  Artifact artifact;
  Session session;
  std::vector<kiln_tensor_info_t> inputs, outputs;
};

struct Model {
  std::map<uint64_t, ModelVersion> versions; // by number; the last is the latest
};

class Repository {
public:
  void load(const Options &options) {
    std::error_code ec;
    if (!fs::is_directory(options.repository, ec))
      fatal("--model-repository: '" + options.repository + "' is not a directory");
    Status status = Device::create(options.device, uint32_t(options.threads), device_);
    if (!status.ok())
      fatal(status.message());
    std::vector<fs::path> names;
    for (const fs::directory_entry &entry : fs::directory_iterator(options.repository, ec))
      if (entry.is_directory())
        names.push_back(entry.path());
    std::sort(names.begin(), names.end());
    for (const fs::path &dir : names) {
      Model model;
      for (const fs::directory_entry &entry : fs::directory_iterator(dir, ec)) {
        std::string version = entry.path().filename().string();
        uint64_t number = 0;
        if (!entry.is_directory() || !support::parseUint64(version, number))
          continue; // config files and the like
        fs::path file = entry.path() / "model.kiln";
        if (!fs::exists(file, ec))
          fatal(dir.filename().string() + " version " + version + ": no model.kiln in " +
                entry.path().string());
        ModelVersion &v = model.versions[number];
        v.path = file.string();
        status = Artifact::open(v.path, v.artifact);
        if (!status.ok())
          fatal(status.message());
        status = Session::create(device_, v.artifact, nullptr, v.session);
        if (!status.ok())
          fatal(v.path + ": " + status.message());
        v.inputs = v.artifact.inputs();
        v.outputs = v.artifact.outputs();
      }
      if (model.versions.empty())
        continue; // a directory without versions is no model
      models_.emplace(dir.filename().string(), std::move(model));
    }
    if (models_.empty())
      fatal("--model-repository: '" + options.repository +
            "' holds no model (expected DIR/NAME/VERSION/model.kiln)");
  }

  /// The model version a request names (the latest without a version).
  ModelVersion &find(const std::string &name, const std::string &version, uint64_t &number) {
    auto model = models_.find(name);
    if (model == models_.end()) {
      std::string names;
      for (const auto &[n, m] : models_)
        names += (names.empty() ? "" : ", ") + n;
      throw RequestError{404, "model '" + name + "' is not in the repository (it has: " +
                                  names + ")"};
    }
    if (version.empty()) {
      number = model->second.versions.rbegin()->first;
      return model->second.versions.rbegin()->second;
    }
    if (!support::parseUint64(version, number) || !model->second.versions.count(number))
      throw RequestError{404, "model '" + name + "' has no version '" + version + "'"};
    return model->second.versions.at(number);
  }

  const std::map<std::string, Model> &models() const { return models_; }

private:
  Device device_;
  std::map<std::string, Model> models_;
};

//===----------------------------------------------------------------------===//
// Requests
//===----------------------------------------------------------------------===//

/// A tensor's metadata; `extentAxis` (the axis whose size the data decides,
/// or -1) is -1 in the shape, as the protocol writes a dynamic dimension.
json tensorMetadata(const kiln_tensor_info_t &info, int32_t extentAxis = -1) {
  json shape = json::array();
  for (size_t d = 0; d < info.rank; ++d)
    shape.push_back(int64_t(d) == extentAxis ? int64_t(-1) : info.shape[d]);
  return {{"name", info.name}, {"datatype", protocolType(info.dtype)}, {"shape", shape}};
}

json modelMetadata(const std::string &name, const Model &model, const ModelVersion &v) {
  json versions = json::array();
  for (const auto &[number, version] : model.versions)
    versions.push_back(std::to_string(number));
  json inputs = json::array(), outputs = json::array();
  for (const kiln_tensor_info_t &info : v.inputs)
    inputs.push_back(tensorMetadata(info));
  for (size_t i = 0; i < v.outputs.size(); ++i)
    outputs.push_back(
        tensorMetadata(v.outputs[i], kiln_artifact_output_extent_axis(v.artifact.get(), i)));
  return {{"name", name}, {"versions", versions}, {"platform", "kiln"},
          {"inputs", inputs}, {"outputs", outputs}};
}

/// The model input `request` (one entry of "inputs") gives, checked against
/// `info`.
Tensor inputTensor(const json &request, const std::vector<kiln_tensor_info_t> &infos) {
  auto bad = [](const std::string &message) { return RequestError{400, message}; };
  if (!request.is_object() || !request.contains("name") || !request["name"].is_string())
    throw bad("every entry of 'inputs' needs a 'name'");
  std::string name = request["name"].get<std::string>();
  auto info = std::find_if(infos.begin(), infos.end(),
                           [&](const kiln_tensor_info_t &i) { return name == i.name; });
  if (info == infos.end()) {
    std::string names;
    for (const kiln_tensor_info_t &i : infos)
      names += (names.empty() ? "" : ", ") + std::string(i.name);
    throw bad("no model input named '" + name + "' (the model's inputs are: " + names + ")");
  }
  std::string where = "input '" + name + "': ";
  if (!request.contains("datatype") || !request["datatype"].is_string())
    throw bad(where + "no 'datatype'");
  std::string datatype = request["datatype"].get<std::string>();
  if (datatype != protocolType(info->dtype))
    throw bad(where + "datatype " + datatype + ", the model takes " + protocolType(info->dtype));
  if (!request.contains("shape") || !request["shape"].is_array())
    throw bad(where + "no 'shape'");
  std::vector<int64_t> shape;
  for (const json &d : request["shape"]) {
    if (!d.is_number_integer())
      throw bad(where + "'shape' must hold integers");
    shape.push_back(d.get<int64_t>());
  }
  std::vector<int64_t> want(info->shape, info->shape + info->rank);
  if (shape != want) {
    auto text = [](const std::vector<int64_t> &s) {
      std::string out = "[";
      for (size_t i = 0; i < s.size(); ++i)
        out += (i ? ", " : "") + std::to_string(s[i]);
      return out + "]";
    };
    throw bad(where + "shape " + text(shape) + ", the model takes " + text(want));
  }
  if (request.contains("parameters") && request["parameters"].is_object() &&
      request["parameters"].contains("binary_data_size"))
    throw bad(where + "the binary tensor extension is not supported yet; send 'data' as JSON");
  if (!request.contains("data"))
    throw bad(where + "no 'data'");
  std::vector<const json *> values;
  flatten(request["data"], values);
  Tensor tensor;
  tensor.name = name;
  tensor.dtype = info->dtype;
  tensor.shape = want;
  if (values.size() != tensor.elementCount())
    throw bad(where + std::to_string(values.size()) + " elements of data, the shape holds " +
              std::to_string(tensor.elementCount()));
  tensor.data.resize(size_t(info->byte_size));
  for (size_t i = 0; i < values.size(); ++i)
    if (!storeElement(tensor, i, *values[i]))
      throw bad(where + "element " + std::to_string(i) + " (" + values[i]->dump() +
                ") is not a " + datatype + " value");
  return tensor;
}

json infer(ModelVersion &v, const std::string &name, uint64_t version, const std::string &body) {
  json request = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded())
    throw RequestError{400, "the request body is not JSON"};
  if (!request.is_object() || !request.contains("inputs") || !request["inputs"].is_array())
    throw RequestError{400, "the request needs an 'inputs' array"};
  std::vector<Tensor> inputs;
  for (const json &entry : request["inputs"]) {
    Tensor t = inputTensor(entry, v.inputs);
    if (std::any_of(inputs.begin(), inputs.end(), [&](const Tensor &o) { return o.name == t.name; }))
      throw RequestError{400, "input '" + t.name + "' is given twice"};
    inputs.push_back(std::move(t));
  }
  for (const kiln_tensor_info_t &info : v.inputs)
    if (std::none_of(inputs.begin(), inputs.end(),
                     [&](const Tensor &t) { return t.name == info.name; }))
      throw RequestError{400, std::string("missing input '") + info.name + "'"};
  // The outputs asked for (all without "outputs").
  std::vector<std::string> wanted;
  if (request.contains("outputs")) {
    if (!request["outputs"].is_array())
      throw RequestError{400, "'outputs' must be an array"};
    for (const json &entry : request["outputs"]) {
      if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string())
        throw RequestError{400, "every entry of 'outputs' needs a 'name'"};
      std::string out = entry["name"].get<std::string>();
      if (std::none_of(v.outputs.begin(), v.outputs.end(),
                       [&](const kiln_tensor_info_t &i) { return out == i.name; }))
        throw RequestError{400, "no model output named '" + out + "'"};
      wanted.push_back(out);
    }
  }
  std::vector<Tensor> outputs;
  Status status = v.session.run(inputs, outputs);
  if (!status.ok())
    throw RequestError{status.code() == KILN_STATUS_INVALID_ARGUMENT ? 400 : 500,
                       status.message()};
  json results = json::array();
  for (const Tensor &t : outputs) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), t.name) == wanted.end())
      continue;
    results.push_back({{"name", t.name}, {"datatype", protocolType(t.dtype)},
                       {"shape", t.shape}, {"data", elements(t)}});
  }
  json response = {{"model_name", name}, {"model_version", std::to_string(version)},
                   {"outputs", results}};
  if (request.contains("id"))
    response["id"] = request["id"];
  return response;
}

std::atomic<bool> stopRequested{false};

void onSignal(int) { stopRequested = true; }

} // namespace

int main(int argc, char **argv) {
  Options options = parseArguments(argc, argv);
  Repository repository;
  repository.load(options);

  httplib::Server server;
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
  server.Get("/v2/health/ready", [](const httplib::Request &, httplib::Response &res) {
    res.status = 200; // every model loaded before the server started
  });
  server.Get("/v2", guarded([&](const httplib::Request &, httplib::Response &res) {
               reply(res, 200, {{"name", "kiln-serve"}, {"version", "0.1"},
                                {"extensions", json::array()}});
             }));
  const char *modelRoute = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";
  server.Get(modelRoute, guarded([&](const httplib::Request &req, httplib::Response &res) {
               uint64_t number = 0;
               std::string name = req.matches[1];
               ModelVersion &v = repository.find(name, req.matches[2], number);
               reply(res, 200, modelMetadata(name, repository.models().at(name), v));
             }));
  server.Get(std::string(modelRoute) + "/ready",
             guarded([&](const httplib::Request &req, httplib::Response &res) {
               uint64_t number = 0;
               repository.find(req.matches[1], req.matches[2], number);
               res.status = 200;
             }));
  server.Post(std::string(modelRoute) + "/infer",
              guarded([&](const httplib::Request &req, httplib::Response &res) {
                uint64_t number = 0;
                std::string name = req.matches[1];
                ModelVersion &v = repository.find(name, req.matches[2], number);
                reply(res, 200, infer(v, name, number, req.body));
              }));
  server.set_error_handler([&](const httplib::Request &req, httplib::Response &res) {
    if (res.status == 404 && res.body.empty())
      reply(res, 404, json{{"error", "no route " + req.method + " " + req.path}});
  });

  int port = int(options.port);
  if (port == 0) {
    port = server.bind_to_any_port(options.host);
    if (port < 0)
      fatal("cannot listen on " + options.host);
  } else if (!server.bind_to_port(options.host, port)) {
    fatal("cannot listen on " + options.host + ":" + std::to_string(port));
  }
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  std::thread watcher([&] {
    while (!stopRequested)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    server.stop();
  });
  std::printf("kiln-serve: listening on http://%s:%d\n", options.host.c_str(), port);
  std::fflush(stdout);
  bool ok = server.listen_after_bind();
  stopRequested = true;
  watcher.join();
  return ok ? 0 : 1;
}
