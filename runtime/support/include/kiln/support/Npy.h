//===- Npy.h - NumPy .npy read and write ------------------------*- C++ -*-===//
//
// Reads and writes NumPy's .npy format, versions 1.0, 2.0 and 3.0, for
// little-endian C-order arrays of f2 f4 f8 i1 i2 i4 i8 u1 b1. Anything else
// (big-endian, Fortran order, structured or object dtypes, a truncated or
// malformed file) is a clear error naming the file; nothing here can read out
// of bounds.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SUPPORT_NPY_H
#define KILN_RUNTIME_SUPPORT_NPY_H

#include "kiln/runtime.hpp"

#include <string>

namespace kiln::npy {

/// Parses a whole .npy file held in memory into `out` (name left empty).
/// `name` prefixes error messages. On error `out` is untouched.
bool parse(const void *data, size_t size, const std::string &name,
           Tensor &out, std::string &error);

/// Reads and parses `path`.
bool read(const std::string &path, Tensor &out, std::string &error);

/// Encodes a tensor as .npy bytes (version 1.0, or 2.0 for a header longer
/// than 64 KiB). bfloat16 has no .npy dtype and is an error.
bool encode(const Tensor &tensor, std::string &out, std::string &error);

/// Writes `tensor` to `path` through `path.tmp` and a rename, so a failure
/// never leaves a partial file at `path`.
bool write(const std::string &path, const Tensor &tensor, std::string &error);

/// The .npy descriptor of `dtype` ("<f4", "|b1", ...), or nullptr.
const char *descriptor(kiln_dtype_t dtype);

} // namespace kiln::npy

#endif // KILN_RUNTIME_SUPPORT_NPY_H
