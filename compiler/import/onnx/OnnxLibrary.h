//===- OnnxLibrary.h - the parts of libonnx the importer uses ---*- C++ -*-===//
//
// libonnx reports errors by throwing; Kiln is built without exceptions. These
// wrappers (compiled with exceptions in their own file) turn every libonnx
// failure into a message.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_IMPORT_ONNX_ONNXLIBRARY_H
#define KILN_COMPILER_IMPORT_ONNX_ONNXLIBRARY_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace onnx {
class ModelProto;
class NodeProto;
} // namespace onnx

namespace kiln::onnx_import {

/// The newest opset libonnx 1.12's checker and shape inference know.
inline constexpr int64_t kLibOnnxMaxOpset = 17;

/// Parses a binary model (serialized ModelProto bytes); returns an error
/// message or "".
std::string parseModelBytes(llvm::StringRef bytes, onnx::ModelProto &model);
/// Parses ONNX text syntax with onnx::OnnxParser; returns a message or "".
std::string parseModelText(llvm::StringRef text, onnx::ModelProto &model);
/// Checks `node`'s inputs against libonnx's schema of its op at `opset` (the
/// newest it knows, for opsets past kLibOnnxMaxOpset): required inputs present
/// and named, at least the minimum count and, where the schema is current,
/// at most the maximum. Returns the complaint, or "" (also for ops libonnx
/// does not know).
std::string checkNodeInputs(const onnx::NodeProto &node, int64_t opset);
/// Converts `model` in place to opset `target` of the default domain with
/// libonnx's version converter (the way models older than Kiln's first
/// opset are imported); returns the converter's complaint or "".
std::string convertOpset(onnx::ModelProto &model, int64_t target);
/// Runs onnx::checker::check_model; returns its complaint or "".
std::string checkModelWithLibOnnx(const onnx::ModelProto &model);

} // namespace kiln::onnx_import

#endif // KILN_COMPILER_IMPORT_ONNX_ONNXLIBRARY_H
