//===- OnnxLibrary.cpp - exception-safe wrappers around libonnx -----------===//
//
// Compiled with -fexceptions: libonnx throws, and nothing it throws may
// escape into the exception-free rest of Kiln.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/OnnxLibrary.h"

#include "onnx/checker.h"
#include "onnx/defs/parser.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <algorithm>
#include <climits>
#include <exception>

using namespace kiln::onnx_import;

std::string kiln::onnx_import::parseModelBytes(llvm::StringRef bytes,
                                               onnx::ModelProto &model) {
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const uint8_t *>(bytes.data()),
      static_cast<int>(std::min<size_t>(bytes.size(), INT_MAX)));
  stream.SetTotalBytesLimit(INT_MAX);
  if (bytes.size() > INT_MAX || !model.ParseFromCodedStream(&stream) ||
      !stream.ConsumedEntireMessage())
    return "not a valid ONNX model: the protobuf data is truncated or "
           "corrupted (or larger than 2 GiB; store large weights as "
           "external data)";
  if (!model.has_graph())
    return "not a valid ONNX model: it has no graph";
  return "";
}

std::string kiln::onnx_import::parseModelText(llvm::StringRef text,
                                              onnx::ModelProto &model) {
  try {
    std::string copy = text.str();
    onnx::Status status = onnx::OnnxParser::Parse(model, copy.c_str());
    if (!status.IsOK())
      return "cannot parse ONNX text: " + status.ErrorMessage();
  } catch (const std::exception &e) {
    return std::string("cannot parse ONNX text: ") + e.what();
  }
  return "";
}

std::string kiln::onnx_import::checkModelWithLibOnnx(const onnx::ModelProto &model) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    std::string message = e.what();
    // libonnx appends a context block; the first line is the diagnosis.
    return message.substr(0, message.find('\n'));
  }
  return "";
}

std::string kiln::onnx_import::checkNodeInputs(const onnx::NodeProto &node, int64_t opset) {
  try {
    const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(
        node.op_type(), static_cast<int>(std::min<int64_t>(opset, kLibOnnxMaxOpset)),
        node.domain());
    if (!schema)
      return "";
    const auto &formals = schema->inputs();
    int count = node.input_size();
    if (count < schema->min_input())
      return "needs at least " + std::to_string(schema->min_input()) + " inputs, has " +
             std::to_string(count);
    if (opset <= kLibOnnxMaxOpset && count > schema->max_input())
      return "takes at most " + std::to_string(schema->max_input()) + " inputs, has " +
             std::to_string(count);
    for (int i = 0; i < count && !formals.empty(); ++i) {
      size_t formalIndex = std::min<size_t>(i, formals.size() - 1);
      const auto &formal = formals[formalIndex];
      bool variadicTail = static_cast<size_t>(i) >= formals.size() - 1 &&
                          formal.GetOption() == onnx::OpSchema::Variadic;
      bool required = static_cast<size_t>(i) < formals.size()
                          ? formal.GetOption() == onnx::OpSchema::Single || variadicTail
                          : variadicTail;
      if (node.input(i).empty() && required)
        return "input " + std::to_string(i) + " ('" + formal.GetName() +
               "') is required but not given";
    }
    return "";
  } catch (...) {
    return "";
  }
}

std::string kiln::onnx_import::convertOpset(onnx::ModelProto &model, int64_t target) {
  // The converter's adapters (the broadcasting of Add, Gemm, ...) read the
  // shapes of their inputs: infer them first. Inference is best-effort; a
  // model it cannot type is still handed to the converter.
  try {
    onnx::shape_inference::InferShapes(model);
  } catch (...) {
  }
  try {
    onnx::ModelProto converted =
        onnx::version_conversion::ConvertVersion(model, static_cast<int>(target));
    model = std::move(converted);
    return "";
  } catch (const std::exception &e) {
    std::string what = e.what();
    // libonnx prefixes its messages with "[ONNXRuntimeError]"-like tags and
    // may span lines: keep the first line.
    return what.substr(0, what.find('\n'));
  } catch (...) {
    return "the version converter failed";
  }
}
