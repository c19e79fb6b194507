//===- Passes.h - The kiln -> linalg lowering pass --------------*- C++ -*-===//
//
// Declarations of the lowering pass (generated from Passes.td next to this
// file). The patterns it applies are in KilnToLinalg.h.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_LOWERING_PASSES_H
#define KILN_LOWERING_PASSES_H

#include "kiln/Dialect/KilnDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

/// On the linalg.generic a kiln.matmul_int4 lowers to, which the cpu
/// backend gives its own vector kernel (kiln-cpu-lower-int4-matmuls).
inline constexpr llvm::StringLiteral kInt4MatmulAttr = "kiln.int4_matmul";
/// On the linalg.generic a kiln.matmul_panels lowers to (loops m, n, k; the
/// weights read at (n floordiv P, k, n mod P)), which the cpu backend's
/// kiln-cpu-lower-panel-matmuls makes its vector kernel.
inline constexpr llvm::StringLiteral kPanelMatmulAttr = "kiln.panel_matmul";

#define GEN_PASS_DECL
#include "lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lowering/Passes.h.inc"

} // namespace kiln

#endif // KILN_LOWERING_PASSES_H
