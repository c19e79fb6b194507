//===- Protocol.cpp - kiln-serve's request and configuration parsers -----===//

#include "Protocol.h"
#include "kiln/support/TensorUtil.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace kiln::serving {

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
// Model configuration (DIR/NAME/config.pbtxt)
//===----------------------------------------------------------------------===//




void readConfig(const fs::path &file, Config &out) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  if (!in && !in.eof())
    loadFailure(file.string() + ": cannot read the file");
  parseConfig(text.str(), file.string(), out);
}

void parseConfig(const std::string &text, const std::string &path, Config &out) {
  out.path = path;
  ConfigErrors errors(out.path);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(out.locations.get());
  if (!parser.ParseFromString(text, &out.config))
    loadFailure(errors.first().empty() ? out.path + ": not a model configuration" : errors.first());
}

std::string Config::atParameter(const std::string &key) const {
  // The parser recorded each entry's place by its index among the entries
  // it read, which is the order reflection lists them in.
  const google::protobuf::FieldDescriptor *field =
      serve::ModelConfig::descriptor()->FindFieldByName("parameters");
  const google::protobuf::Reflection *reflection = config.GetReflection();
  int count = reflection->FieldSize(config, field);
  int index = 0;
  for (int i = 0; i < count; ++i) {
    const google::protobuf::Message &entry = reflection->GetRepeatedMessage(config, field, i);
    const google::protobuf::FieldDescriptor *keyField = entry.GetDescriptor()->map_key();
    if (entry.GetReflection()->GetString(entry, keyField) == key) {
      index = i;
      break;
    }
  }
  return at("parameters", index) + " '" + key + "'";
}

ModelPolicy readModelPolicy(const Config &config, const ModelPolicy &defaults) {
  ModelPolicy policy = defaults;
  // Sorted, so that the first bad key reported does not depend on the map.
  std::map<std::string, std::string> parameters;
  for (const auto &[key, value] : config.config.parameters())
    parameters[key] = value.string_value();
  for (const auto &[key, value] : parameters) {
    if (key == "kiln.run_timeout_ms") {
      uint64_t ms = 0;
      if (!support::parseUint64(value, ms) || ms > 86400000)
        loadFailure(config.atParameter(key) + ": '" + value +
                    "' is not a time limit in milliseconds (0-86400000; 0: none)");
      policy.runTimeoutUs = ms * 1000;
    } else if (key == "kiln.unload_on_fault") {
      if (value != "true" && value != "false")
        loadFailure(config.atParameter(key) + ": '" + value + "' is not true or false");
      policy.unloadOnFault = value == "true";
    } else {
      loadFailure(config.atParameter(key) +
                  ": unknown parameter (kiln-serve reads kiln.run_timeout_ms and "
                  "kiln.unload_on_fault)");
    }
  }
  return policy;
}

/// The protocol's and the configuration's type names of the model's dtypes.
serve::DataType configType(kiln_dtype_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_F32: return serve::TYPE_FP32;
  case KILN_DTYPE_F16: return serve::TYPE_FP16;
  case KILN_DTYPE_BF16: return serve::TYPE_BF16;
  case KILN_DTYPE_F64: return serve::TYPE_FP64;
  case KILN_DTYPE_I8: return serve::TYPE_INT8;
  case KILN_DTYPE_I16: return serve::TYPE_INT16;
  case KILN_DTYPE_I32: return serve::TYPE_INT32;
  case KILN_DTYPE_I64: return serve::TYPE_INT64;
  case KILN_DTYPE_U8: return serve::TYPE_UINT8;
  case KILN_DTYPE_U16: return serve::TYPE_UINT16;
  case KILN_DTYPE_U32: return serve::TYPE_UINT32;
  case KILN_DTYPE_U64: return serve::TYPE_UINT64;
  case KILN_DTYPE_BOOL: return serve::TYPE_BOOL;
  }
  return serve::TYPE_INVALID;
}

std::string shapeText(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}



/// An input of `v` named `name` with `datatype` and `shape` (as a request
/// gives them), checked against the model's: a batched version takes 1 to
/// maxBatchSize rows. The tensor's data is sized, not filled.
Tensor describeInput(const ModelInterface &v, const std::string &name, const std::string &datatype,
                     const std::vector<int64_t> &shape) {
  const std::vector<kiln_tensor_info_t> &infos = v.inputs;
  auto bad = [](const std::string &message) { return RequestError{400, message}; };
  auto info = std::find_if(infos.begin(), infos.end(),
                           [&](const kiln_tensor_info_t &i) { return name == i.name; });
  if (info == infos.end()) {
    std::string names;
    for (const kiln_tensor_info_t &i : infos)
      names += (names.empty() ? "" : ", ") + std::string(i.name);
    throw bad("no model input named '" + name + "' (the model's inputs are: " + names + ")");
  }
  std::string where = "input '" + name + "': ";
  if (datatype != protocolType(info->dtype))
    throw bad(where + "datatype " + datatype + ", the model takes " + protocolType(info->dtype));
  std::vector<int64_t> want(info->shape, info->shape + info->rank);
  if (v.maxBatchSize > 0 && !shape.empty() && shape.size() == want.size() && shape[0] >= 1 &&
      shape[0] <= v.maxBatchSize)
    want[0] = shape[0];
  if (shape != want) {
    // Batched: "[n, 6] with n from 1 to 8".
    std::string takes = shapeText(want);
    if (v.maxBatchSize > 0) {
      takes = "[n";
      for (size_t d = 1; d < want.size(); ++d)
        takes += ", " + std::to_string(want[d]);
      takes += "] with n from 1 to " + std::to_string(v.maxBatchSize);
    }
    throw bad(where + "shape " + shapeText(shape) + ", the model takes " + takes);
  }
  Tensor tensor;
  tensor.name = name;
  tensor.dtype = info->dtype;
  tensor.shape = want;
  tensor.data.resize(size_t(tensor.elementCount() * kiln_dtype_size(info->dtype)));
  return tensor;
}

/// The model input `request` (one entry of "inputs") gives, checked against
/// the model's.
Tensor inputTensor(const json &request, const ModelInterface &v, BinaryData &binary) {
  auto bad = [](const std::string &message) { return RequestError{400, message}; };
  if (!request.is_object() || !request.contains("name") || !request["name"].is_string())
    throw bad("every entry of 'inputs' needs a 'name'");
  std::string name = request["name"].get<std::string>();
  std::string where = "input '" + name + "': ";
  if (!request.contains("datatype") || !request["datatype"].is_string())
    throw bad(where + "no 'datatype'");
  std::string datatype = request["datatype"].get<std::string>();
  if (!request.contains("shape") || !request["shape"].is_array())
    throw bad(where + "no 'shape'");
  std::vector<int64_t> shape;
  for (const json &d : request["shape"]) {
    if (!d.is_number_integer())
      throw bad(where + "'shape' must hold integers");
    shape.push_back(d.get<int64_t>());
  }
  Tensor tensor = describeInput(v, name, datatype, shape);
  uint64_t bytes = tensor.data.size();
  const json *parameters =
      request.contains("parameters") ? &request["parameters"] : nullptr;
  if (parameters && parameters->is_object() && parameters->contains("binary_data_size")) {
    const json &size = (*parameters)["binary_data_size"];
    if (!size.is_number_unsigned())
      throw bad(where + "'binary_data_size' must be a non-negative integer");
    uint64_t n = size.get<uint64_t>();
    if (n != bytes)
      throw bad(where + "binary_data_size " + std::to_string(n) + ", the shape holds " +
                std::to_string(bytes) + " bytes");
    if (n > binary.size - binary.used)
      throw bad(where + "binary_data_size " + std::to_string(n) + ", but only " +
                std::to_string(binary.size - binary.used) +
                " bytes of binary data are left in the request");
    if (request.contains("data"))
      throw bad(where + "both 'data' and 'binary_data_size'");
    const auto *from = reinterpret_cast<const unsigned char *>(binary.data + binary.used);
    tensor.data.assign(from, from + n);
    binary.used += n;
    return tensor;
  }
  if (!request.contains("data"))
    throw bad(where + "no 'data'");
  std::vector<const json *> values;
  flatten(request["data"], values);
  if (values.size() != tensor.elementCount())
    throw bad(where + std::to_string(values.size()) + " elements of data, the shape holds " +
              std::to_string(tensor.elementCount()));
  for (size_t i = 0; i < values.size(); ++i)
    if (!storeElement(tensor, i, *values[i]))
      throw bad(where + "element " + std::to_string(i) + " (" + values[i]->dump() +
                ") is not a " + datatype + " value");
  return tensor;
}

ParsedRequest parseInferRequest(const ModelInterface &v, const std::string &body,
                                size_t headerLength) {
  BinaryData binary;
  std::string text = body;
  if (headerLength != std::string::npos) {
    if (headerLength > body.size())
      throw RequestError{400, "Inference-Header-Content-Length " + std::to_string(headerLength) +
                                  " is more than the body's " + std::to_string(body.size()) +
                                  " bytes"};
    text = body.substr(0, headerLength);
    binary.data = body.data() + headerLength;
    binary.size = body.size() - headerLength;
  }
  json request = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded())
    throw RequestError{400, "the request body is not JSON"};
  if (!request.is_object() || !request.contains("inputs") || !request["inputs"].is_array())
    throw RequestError{400, "the request needs an 'inputs' array"};
  ParsedRequest parsed;
  std::vector<Tensor> &inputs = parsed.inputs;
  for (const json &entry : request["inputs"])
    inputs.push_back(inputTensor(entry, v, binary));
  if (binary.used != binary.size)
    throw RequestError{400, std::to_string(binary.size - binary.used) +
                                " bytes of binary data follow the JSON header that no input's "
                                "binary_data_size claims"};
  // Request parameters: binary outputs, priority and queue timeout.
  bool &allBinary = parsed.allBinary;
  uint32_t &priority = parsed.priority;
  uint64_t &timeoutUs = parsed.timeoutUs;
  if (request.contains("parameters")) {
    const json &p = request["parameters"];
    if (!p.is_object())
      throw RequestError{400, "'parameters' must be an object"};
    if (p.contains("binary_data_output")) {
      if (!p["binary_data_output"].is_boolean())
        throw RequestError{400, "'binary_data_output' must be true or false"};
      allBinary = p["binary_data_output"].get<bool>();
    }
    if (p.contains("priority")) {
      if (!p["priority"].is_number_unsigned() || p["priority"].get<uint64_t>() > UINT32_MAX)
        throw RequestError{400, "'priority' must be a non-negative integer"};
      priority = uint32_t(p["priority"].get<uint64_t>());
    }
    if (p.contains("timeout")) {
      if (!p["timeout"].is_number_unsigned())
        throw RequestError{400, "'timeout' must be a non-negative integer (microseconds)"};
      timeoutUs = p["timeout"].get<uint64_t>();
    }
  }
  // The outputs asked for (all without "outputs"), and which go binary.
  std::map<std::string, bool> &wanted = parsed.wanted;
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
      bool asBinary = allBinary;
      if (entry.contains("parameters") && entry["parameters"].is_object() &&
          entry["parameters"].contains("binary_data")) {
        if (!entry["parameters"]["binary_data"].is_boolean())
          throw RequestError{400, "output '" + out + "': 'binary_data' must be true or false"};
        asBinary = entry["parameters"]["binary_data"].get<bool>();
      }
      wanted[out] = asBinary;
    }
  }
  if (request.contains("id"))
    parsed.id = request["id"];
  return parsed;
}

} // namespace kiln::serving
