//===- FuzzOnnxText.cpp - Fuzz target for ONNX text syntax ----------------===//
//
// kiln-fuzz-onnxtxt: the input is ONNX text syntax (a .onnxtxt file),
// parsed with libonnx's OnnxParser and imported as kiln-compile does, then
// verified.
//
//===----------------------------------------------------------------------===//

#include "FuzzOnnxCommon.h"

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  kiln::fuzz::initImport();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return kiln::fuzz::importModel(data, size, /*text=*/true);
}
