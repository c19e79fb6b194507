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
