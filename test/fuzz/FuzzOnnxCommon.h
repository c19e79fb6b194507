//===- FuzzOnnxCommon.h - The ONNX importer's fuzz target body --*- C++ -*-===//
//
// Shared by kiln-fuzz-onnx, kiln-fuzz-onnxtxt and kiln-fuzz-onnx-structured
// (and their replay executables).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_FUZZ_FUZZONNXCOMMON_H
#define KILN_TEST_FUZZ_FUZZONNXCOMMON_H

#include <cstddef>
#include <cstdint>

namespace kiln::fuzz {

/// Creates this process's work directory (removed at exit). Called from
/// LLVMFuzzerInitialize, so that a replay's forked children share it.
void initImport();

/// Imports `data` as a binary ONNX model (`text` false) or ONNX text syntax
/// (`text` true) through importOnnxFile, in a fresh context whose
/// diagnostics are swallowed, then verifies the module. Aborts (so the
/// fuzzer keeps the input) when the import fails without an error, succeeds
/// with one, or returns a module that does not verify.
int importModel(const uint8_t *data, size_t size, bool text);

} // namespace kiln::fuzz

#endif // KILN_TEST_FUZZ_FUZZONNXCOMMON_H
