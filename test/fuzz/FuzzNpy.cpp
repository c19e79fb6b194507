//===- FuzzNpy.cpp - Fuzz target for the .npy reader ----------------------===//
//
// kiln-fuzz-npy: parses the input as a .npy file (runtime/support/Npy.h). A
// file that parses must hold exactly element count times element size bytes,
// and must survive an encode/parse roundtrip unchanged; anything else is an
// error message, never a crash or an out-of-bounds read.
//
//===----------------------------------------------------------------------===//

#include "kiln/support/Npy.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

/// Reports a broken invariant and aborts (the fuzzer keeps the input).
static void fail(const char *what) {
  std::fprintf(stderr, "kiln-fuzz-npy: %s\n", what);
  std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kiln::Tensor tensor;
  std::string error;
  if (!kiln::npy::parse(data, size, "fuzz.npy", tensor, error)) {
    if (error.empty())
      fail("parse failed without an error message");
    return 0;
  }
  uint64_t elements = 1;
  for (int64_t d : tensor.shape) {
    if (d < 0)
      fail("a negative dimension was accepted");
    elements *= uint64_t(d);
  }
  if (tensor.data.size() != elements * kiln_dtype_size(tensor.dtype))
    fail("the data size does not match the shape and dtype");

  std::string bytes;
  if (!kiln::npy::encode(tensor, bytes, error))
    fail("a parsed tensor does not encode");
  kiln::Tensor again;
  if (!kiln::npy::parse(bytes.data(), bytes.size(), "roundtrip.npy", again,
                        error))
    fail("an encoded tensor does not parse");
  if (again.dtype != tensor.dtype || again.shape != tensor.shape ||
      again.data != tensor.data)
    fail("the encode/parse roundtrip changed the tensor");
  return 0;
}
