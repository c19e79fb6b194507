//===- FuzzNpz.cpp - Fuzz target for the .npz calibration-sample reader ---===//
//
// kiln-fuzz-npz: parses the input as one .npz calibration sample
// (compiler/quantize/CalibrationData.h, libzip underneath) for a model with
// two inputs, x (float32 [2, 3]) and ids (int64 [4]). A sample that parses
// holds both, with exactly their dtype, shape and byte size; anything else is
// an error message, never a crash, an out-of-bounds read or an allocation of
// what the archive merely claims.
//
//===----------------------------------------------------------------------===//

#include "quantize/CalibrationData.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

static void fail(const char *what) {
  std::fprintf(stderr, "kiln-fuzz-npz: %s\n", what);
  std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int64_t xShape[] = {2, 3}, idsShape[] = {4};
  std::vector<kiln_tensor_info_t> inputs(2);
  inputs[0].name = "x";
  inputs[0].dtype = KILN_DTYPE_F32;
  inputs[0].rank = 2;
  inputs[0].shape = xShape;
  inputs[1].name = "ids";
  inputs[1].dtype = KILN_DTYPE_I64;
  inputs[1].rank = 1;
  inputs[1].shape = idsShape;
  kiln::quantize::Sample sample;
  std::string error;
  if (!kiln::quantize::parseNpz(data, size, "fuzz.npz", inputs, sample, error)) {
    if (error.empty())
      fail("parse failed without an error message");
    return 0;
  }
  if (sample.inputs.size() != 2)
    fail("a parsed sample does not hold one tensor per input");
  if (sample.inputs[0].dtype != KILN_DTYPE_F32 ||
      sample.inputs[0].shape != std::vector<int64_t>{2, 3} ||
      sample.inputs[0].data.size() != 24 || sample.inputs[0].name != "x")
    fail("input x was accepted with another dtype, shape or size");
  if (sample.inputs[1].dtype != KILN_DTYPE_I64 ||
      sample.inputs[1].shape != std::vector<int64_t>{4} ||
      sample.inputs[1].data.size() != 32 || sample.inputs[1].name != "ids")
    fail("input ids was accepted with another dtype, shape or size");
  return 0;
}
