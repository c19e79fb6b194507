//===- FuzzOnnx.cpp - Fuzz target for binary ONNX models ------------------===//
//
// kiln-fuzz-onnx: the input is a serialized onnx::ModelProto, imported as
// kiln-compile imports a .onnx file (the wire-format scanner, protobuf,
// libonnx's checker, the graph importer), then verified. Also the body of
// kiln-fuzz-onnx-structured, which adds a custom mutator
// (FuzzOnnxMutator.cpp).
//
//===----------------------------------------------------------------------===//

#include "FuzzOnnxCommon.h"

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  kiln::fuzz::initImport();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return kiln::fuzz::importModel(data, size, /*text=*/false);
}
