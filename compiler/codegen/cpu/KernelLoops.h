//===- KernelLoops.h - small builders for hand-written cpu kernels --*- C++ -*-===//
//
// What the explicit vector kernels (kiln-cpu-lower-int4-matmuls,
// kiln-cpu-lower-panel-matmuls) build their loops, indices and reads with.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_CPU_KERNELLOOPS_H
#define KILN_CODEGEN_CPU_KERNELLOOPS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace kiln::cpu {

inline mlir::Value indexConst(mlir::ImplicitLocOpBuilder &b, int64_t v) {
  return mlir::arith::ConstantIndexOp::create(b, v);
}

/// `base + offset`, or `base` itself for 0.
inline mlir::Value plus(mlir::ImplicitLocOpBuilder &b, mlir::Value base, int64_t offset) {
  return offset == 0 ? base : mlir::Value(mlir::arith::AddIOp::create(b, base, indexConst(b, offset)));
}

/// `for (i = lo; i < hi; i += step)` carrying `init`; `body` returns the
/// values to yield.
inline mlir::scf::ForOp
loop(mlir::ImplicitLocOpBuilder &b, mlir::Value lo, mlir::Value hi, int64_t step,
     mlir::ValueRange init,
     llvm::function_ref<llvm::SmallVector<mlir::Value>(mlir::ImplicitLocOpBuilder &, mlir::Value,
                                                       mlir::ValueRange)>
         body) {
  return mlir::scf::ForOp::create(
      b, lo, hi, indexConst(b, step), init,
      [&](mlir::OpBuilder &nb, mlir::Location loc, mlir::Value iv, mlir::ValueRange carried) {
        mlir::ImplicitLocOpBuilder ib(loc, nb);
        mlir::scf::YieldOp::create(ib, body(ib, iv, carried));
      });
}

/// `hi - (hi - lo) mod step`: the end of the full steps from lo.
inline mlir::Value fullEnd(mlir::ImplicitLocOpBuilder &b, mlir::Value lo, mlir::Value hi,
                           int64_t step) {
  mlir::Value span = mlir::arith::SubIOp::create(b, hi, lo);
  mlir::Value rest = mlir::arith::RemUIOp::create(b, span, indexConst(b, step));
  return mlir::arith::SubIOp::create(b, hi, rest);
}

/// Rows 0 .. m in blocks of `rows`, then the rest one at a time: `body`
/// gets the first row and how many the block has.
inline void
rowBlocks(mlir::ImplicitLocOpBuilder &b, mlir::Value m, int64_t rows,
          llvm::function_ref<void(mlir::ImplicitLocOpBuilder &, mlir::Value, int64_t)> body) {
  mlir::Value zero = indexConst(b, 0);
  mlir::Value mFull = fullEnd(b, zero, m, rows);
  auto blocks = [&](mlir::Value from, mlir::Value to, int64_t count) {
    loop(b, from, to, count, {},
         [&](mlir::ImplicitLocOpBuilder &rb, mlir::Value m0, mlir::ValueRange) {
           body(rb, m0, count);
           return llvm::SmallVector<mlir::Value>{};
         });
  };
  blocks(zero, mFull, rows);
  if (rows > 1)
    blocks(mFull, m, 1);
}

/// A 1-d vector of `type` read from `base` at `indices`, padded with zero;
/// `inBounds` false masks the lanes past the end of the last dimension.
inline mlir::Value readVector(mlir::ImplicitLocOpBuilder &b, mlir::VectorType type,
                              mlir::Value base, mlir::ValueRange indices, bool inBounds = true) {
  mlir::Type element = type.getElementType();
  mlir::Value pad = mlir::arith::ConstantOp::create(b, b.getZeroAttr(element));
  return mlir::vector::TransferReadOp::create(b, type, base, indices, pad,
                                              llvm::ArrayRef<bool>{inBounds});
}

} // namespace kiln::cpu

#endif // KILN_CODEGEN_CPU_KERNELLOOPS_H
