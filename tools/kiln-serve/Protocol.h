//===- Protocol.h - kiln-serve's request and configuration parsers -*- C++ -*-===//
//
// What kiln-serve reads from the network and the repository, apart from the
// server itself: the KServe v2 JSON inference request (with the binary
// tensor extension), checked against a model's interface, and config.pbtxt.
// Kept apart so that the libFuzzer target (test/fuzz/FuzzServeRequest.cpp)
// runs exactly the parsers the server runs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_SERVE_PROTOCOL_H
#define KILN_TOOLS_KILN_SERVE_PROTOCOL_H

#include "kiln/runtime.hpp"
#include "model_config.pb.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kiln::serving {

using json = nlohmann::json;

/// A request error: the HTTP status and the message of {"error": ...}.
struct RequestError {
  int status;
  std::string message;
};

template <typename T> void store(Bytes &data, size_t i, T value) {
  std::memcpy(data.data() + i * sizeof(T), &value, sizeof(T));
}
template <typename T> T load(const Bytes &data, size_t i) {
  T value;
  std::memcpy(&value, data.data() + i * sizeof(T), sizeof(T));
  return value;
}

/// The protocol's name of a tensor data type ("FP32", ...).
const char *protocolType(kiln_dtype_t dtype);
/// The configuration's type of a dtype (TYPE_FP32, ...).
serve::DataType configType(kiln_dtype_t dtype);
/// "[2, 3]".
std::string shapeText(const std::vector<int64_t> &shape);
/// Appends the elements of `data` (nested arrays to any depth) in row-major
/// order.
void flatten(const json &data, std::vector<const json *> &out);
/// Element `i` of `tensor` from `value`; false when it is not a value of the
/// dtype.
bool storeElement(Tensor &tensor, size_t i, const json &value);
/// The elements of `tensor`, flat, as JSON values.
json elements(const Tensor &tensor);

/// Collects the text-format parser's first error as "FILE:LINE:COLUMN: ...".
class ConfigErrors : public google::protobuf::io::ErrorCollector {
public:
  explicit ConfigErrors(std::string file) : file_(std::move(file)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string &message) override {
    if (first_.empty())
      first_ = file_ + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) +
               ": " + message;
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber, const std::string &) override {}
  const std::string &first() const { return first_; }

private:
  std::string file_, first_;
};

/// A parsed config.pbtxt with where each field was written, for errors that
/// name the file, line and field.
struct Config {
  std::string path; // empty: the model has none
  serve::ModelConfig config;
  std::unique_ptr<google::protobuf::TextFormat::ParseInfoTree> locations =
      std::make_unique<google::protobuf::TextFormat::ParseInfoTree>();

  /// "PATH:LINE:COLUMN: field 'NAME'" of a top-level field.
  std::string at(const char *field, int index = -1) const {
    const google::protobuf::FieldDescriptor *f =
        serve::ModelConfig::descriptor()->FindFieldByName(field);
    // protobuf insists on index -1 for a singular field and a real index for
    // a repeated one (it aborts otherwise).
    google::protobuf::TextFormat::ParseLocation loc;
    if (f)
      loc = locations->GetLocation(f, f->is_repeated() ? std::max(index, 0) : -1);
    std::string where = path;
    if (loc.line >= 0)
      where += ":" + std::to_string(loc.line + 1) + ":" + std::to_string(loc.column + 1);
    return where + ": " + field;
  }

  /// "PATH:LINE:COLUMN: parameters 'KEY'" of the `parameters` entry `key`.
  std::string atParameter(const std::string &key) const;
};

/// Why a model did not load (reported, or fatal at start with
/// --exit-on-error=true).
struct LoadError {
  std::string message;
};
[[noreturn]] inline void loadFailure(const std::string &message) { throw LoadError{message}; }

/// Reads DIR/NAME/config.pbtxt; throws LoadError ("FILE:LINE:COLUMN: ...").
void readConfig(const std::filesystem::path &file, Config &out);
/// The same from text; `path` names it in errors.
void parseConfig(const std::string &text, const std::string &path, Config &out);

/// What a model's config sets for kiln-serve itself (its `parameters`).
struct ModelPolicy {
  uint64_t runTimeoutUs = 0; // 0: runs have no time limit
  bool unloadOnFault = true; // a run that faults unloads the model
};
/// Reads `config.parameters` over `defaults`; throws LoadError naming the
/// file, line and key of an unknown key or a bad value.
ModelPolicy readModelPolicy(const Config &config, const ModelPolicy &defaults);

/// What a model version takes and returns, as requests see it: the model's
/// tensors, or with 1 to maxBatchSize rows on dimension 0 when batched.
struct ModelInterface {
  std::vector<kiln_tensor_info_t> inputs, outputs;
  int64_t maxBatchSize = 0;
};

/// The binary part of a request (the binary tensor extension): the bytes
/// after the JSON header, handed out in the order the inputs ask for them.
struct BinaryData {
  const char *data = nullptr;
  size_t size = 0, used = 0;
};

/// An input named `name` with `datatype` and `shape` (as a request gives
/// them), checked against `v`; its data is sized, not filled. Throws
/// RequestError.
Tensor describeInput(const ModelInterface &v, const std::string &name,
                     const std::string &datatype, const std::vector<int64_t> &shape);
/// The input one entry of a JSON request's "inputs" gives.
Tensor inputTensor(const json &request, const ModelInterface &v, BinaryData &binary);

/// A JSON inference request, parsed and checked against the model.
struct ParsedRequest {
  std::vector<Tensor> inputs;
  /// The outputs asked for (none: all), each true when it goes binary.
  std::map<std::string, bool> wanted;
  bool allBinary = false; // binary_data_output
  uint32_t priority = 0;
  uint64_t timeoutUs = 0;
  json id; // null without one
};

/// Parses `body` (its first `headerLength` bytes JSON and the rest binary
/// data; all JSON with std::string::npos) against `v`; throws RequestError.
ParsedRequest parseInferRequest(const ModelInterface &v, const std::string &body,
                                size_t headerLength);

} // namespace kiln::serving

#endif // KILN_TOOLS_KILN_SERVE_PROTOCOL_H
