//===- Winograd.h - the transform matrices of F(m x m, 3 x 3) ---*- C++ -*-===//
//
// The matrices of Winograd's minimal filtering F(m, 3) that
// kiln.winograd_input and kiln.winograd_output are defined by, and that
// kiln-winograd-convs transforms the filters with: B^T (a x a), G (a x 3)
// and A^T (m x a), a = m + 2, row-major, with the interpolation points 0, 1,
// -1 (and 2, -2 for m = 4) and infinity.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_WINOGRAD_H
#define KILN_DIALECT_WINOGRAD_H

#include <cstdint>
#include <vector>

namespace kiln {

struct WinogradMatrices {
  int64_t m, a;
  std::vector<double> bt, g, at;
};

/// F(m, 3) for m = 2 or 4.
WinogradMatrices winogradMatrices(int64_t m);

/// Tiles of m outputs covering `outputs` (ceil).
inline int64_t winogradTiles(int64_t outputs, int64_t m) { return (outputs + m - 1) / m; }

} // namespace kiln

#endif // KILN_DIALECT_WINOGRAD_H
