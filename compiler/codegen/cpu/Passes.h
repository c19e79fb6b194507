//===- Passes.h - x86-64 code generation passes -----------------*- C++ -*-===//
//
// Declarations of the cpu code generation passes (generated from Passes.td
// next to this file) and the marks they leave on the IR for each other.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPU_PASSES_H
#define KILN_CODEGEN_CPU_PASSES_H

#include "codegen/common/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace kiln {

#define GEN_PASS_DECL
#include "codegen/cpu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/cpu/Passes.h.inc"

namespace cpu {

// What kiln-cpu-distribute sizes workgroups for and kiln-cpu-vectorize-gemm
// then tiles, so both passes recognize the same ops.

/// Windowed ops tiled per window tap like depthwise convolutions: the
/// depthwise convolution itself, the grouped one, and NCHW max/sum pooling
/// (sum: the average pool's numerator).
inline bool isWindowOp(mlir::Operation *op) {
  return mlir::isa<mlir::linalg::DepthwiseConv2DNchwChwOp, mlir::linalg::Conv2DNgchwGfchwOp,
                   mlir::linalg::PoolingNchwMaxOp, mlir::linalg::PoolingNchwSumOp>(op);
}

/// Output channels of a grouped convolution's register tile (a factor of
/// its F/G channels per group, at most 4): each window tap's input row is
/// read once for all of them (kiln-cpu-vectorize-gemm), as a GEMM tile
/// reuses a column for its rows; kiln-cpu-distribute gives workgroups a
/// multiple of it. 1 for other ops.
inline int64_t groupedChannelTile(mlir::Operation *op) {
  auto conv = mlir::dyn_cast<mlir::linalg::Conv2DNgchwGfchwOp>(op);
  if (!conv)
    return 1;
  // The filter is [G, F/G, C/G, KH, KW].
  auto filter = mlir::cast<mlir::ShapedType>(conv.getInputs()[1].getType());
  int64_t perGroup = filter.getDimSize(1);
  for (int64_t tile : {4, 2})
    if (!mlir::ShapedType::isDynamic(perGroup) && perGroup % tile == 0)
      return tile;
  return 1;
}

/// The loop along which the first input of `op` that is read transposed (a
/// permutation whose contiguous dimension is not the innermost loop: NHWC
/// -> NCHW) is contiguous, or nothing.
inline std::optional<unsigned> transposedReadLoop(mlir::linalg::LinalgOp op) {
  for (mlir::OpOperand *input : op.getDpsInputOperands()) {
    mlir::AffineMap map = op.getMatchingIndexingMap(input);
    if (!map.isPermutation() || map.getNumResults() < 2)
      continue;
    unsigned contiguous = map.getDimPosition(map.getNumResults() - 1);
    if (contiguous != op.getNumLoops() - 1)
      return contiguous;
  }
  return std::nullopt;
}

} // namespace cpu

} // namespace kiln

#endif // KILN_CODEGEN_CPU_PASSES_H
