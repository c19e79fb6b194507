//===- WireFormat.h - weights out of the ONNX protobuf ----------*- C++ -*-===//
//
// A binary .onnx file is a protobuf whose initializers carry the weights in
// `raw_data` byte fields. Parsing it with protobuf copies every weight into
// the parsed message. Instead, the importer maps the file, and this scanner
// rewrites the message without the large `raw_data` payloads and records
// where each payload sits in the file, so weight
// blobs point into the read-only mapping: the weights are never copied and
// their pages stay clean, shared with the page cache.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_IMPORT_ONNX_WIREFORMAT_H
#define KILN_COMPILER_IMPORT_ONNX_WIREFORMAT_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln::onnx_import {

struct StrippedModel {
  /// The ModelProto bytes with the large initializer payloads emptied.
  std::string bytes;
  /// For the i-th initializer of the main graph: where its `raw_data` was in
  /// the file, if it was taken out.
  struct Span {
    uint64_t offset, size;
  };
  std::vector<std::optional<Span>> initializerData;
};

/// Scans `file` (a serialized ModelProto). Payloads of at least `minBytes`
/// are taken out. Returns std::nullopt when the bytes are not well-formed
/// protobuf wire format (the caller then lets protobuf report the error).
std::optional<StrippedModel> stripInitializerData(llvm::StringRef file,
                                                  uint64_t minBytes);

} // namespace kiln::onnx_import

#endif // KILN_COMPILER_IMPORT_ONNX_WIREFORMAT_H
