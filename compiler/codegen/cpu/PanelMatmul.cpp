//===- PanelMatmul.cpp - vector kernel for few-row matmuls on panels ------===//
//
// kiln-cpu-lower-panel-matmuls: the linalg.generic of a kiln.matmul_panels
// (marked kiln.panel_matmul: out[m, n] += lhs[m, k] * w[n / P, k, n mod P]),
// on memrefs after bufferization, becomes an explicit vector kernel. Such a
// product has few rows and reads each weight once, so it is bound by the
// weights streaming from memory; in panels, the `vectors` panels of a step
// are `vectors` contiguous runs through K.
//
//   for n0 in blocks of 16 * vectors columns (then of 16, then the last
//       partial panel, whose loads and stores are masked):
//     for m0 in blocks of `rows` rows (then single rows):
//       acc[r][v] = out[m0 + r, n0 + 16 v : +16]
//       for k:
//         acc[r][v] += lhs[m0 + r, k] * w[n0 / P + v, k, 0 : 16]
//       out[..] = acc
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/KernelLoops.h"
#include "codegen/cpu/Passes.h"
#include "lowering/Passes.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNCPULOWERPANELMATMULS
#include "codegen/cpu/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;
using namespace kiln::cpu;

constexpr int64_t kLanes = 16;

struct PanelKernel {
  Value lhs, weights, out;
  Type elem;
  int64_t panel;
  /// The constant the result was filled with just before the product (its
  /// accumulators start from it instead of reading the result), or null.
  Value init;

  VectorType floats() const { return VectorType::get({kLanes}, elem); }

  /// 16 floats of `base` at `indices`; `inBounds` false masks the lanes
  /// past the end of the last dimension.
  Value read(ImplicitLocOpBuilder &b, Value base, ValueRange indices, bool inBounds) const {
    return readVector(b, floats(), base, indices, inBounds);
  }

  /// Rows m0 .. m0 + rows - 1 of `vectors` x 16 columns from n0.
  void emitRows(ImplicitLocOpBuilder &b, Value m0, Value n0, int64_t rows, int64_t vectors,
                bool inBounds) const {
    SmallVector<Value> rowIdx, columns, panels, inPanel, acc;
    for (int64_t r = 0; r < rows; ++r)
      rowIdx.push_back(plus(b, m0, r));
    for (int64_t v = 0; v < vectors; ++v) {
      columns.push_back(plus(b, n0, v * kLanes));
      panels.push_back(arith::DivUIOp::create(b, columns.back(), indexConst(b, panel)));
      inPanel.push_back(arith::RemUIOp::create(b, columns.back(), indexConst(b, panel)));
    }
    Value splat = init ? vector::BroadcastOp::create(b, floats(), init).getResult() : Value();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v)
        acc.push_back(splat ? splat : read(b, out, {rowIdx[r], columns[v]}, inBounds));
    Value k = memref::DimOp::create(b, lhs, 1);
    auto kLoop = loop(b, indexConst(b, 0), k, 1, acc,
                      [&](ImplicitLocOpBuilder &kb, Value kk, ValueRange carried) {
      SmallVector<Value> w, next(carried);
      // The panel is padded with zero columns: its reads stay in bounds.
      for (int64_t v = 0; v < vectors; ++v)
        w.push_back(read(kb, weights, {panels[v], kk, inPanel[v]}, true));
      for (int64_t r = 0; r < rows; ++r) {
        Value a = memref::LoadOp::create(kb, lhs, ValueRange{rowIdx[r], kk});
        Value bcast = vector::BroadcastOp::create(kb, floats(), a);
        for (int64_t v = 0; v < vectors; ++v)
          next[r * vectors + v] = vector::FMAOp::create(kb, bcast, w[v], next[r * vectors + v]);
      }
      return next;
    });
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t v = 0; v < vectors; ++v)
        vector::TransferWriteOp::create(b, kLoop.getResult(r * vectors + v), out,
                                        ValueRange{rowIdx[r], columns[v]},
                                        ArrayRef<bool>{inBounds});
  }

  /// Column blocks of `vectors` x 16 from `from` to `to`, every row.
  void emitColumns(ImplicitLocOpBuilder &b, Value from, Value to, int64_t vectors, int64_t rows,
                   bool inBounds) const {
    Value m = memref::DimOp::create(b, out, 0);
    loop(b, from, to, kLanes * vectors, {}, [&](ImplicitLocOpBuilder &cb, Value n0, ValueRange) {
      rowBlocks(cb, m, rows, [&](ImplicitLocOpBuilder &rb, Value m0, int64_t count) {
        emitRows(rb, m0, n0, count, vectors, inBounds);
      });
      return SmallVector<Value>{};
    });
  }
};

/// The linalg.fill of a constant into exactly `op`'s result buffer that
/// comes before `op` in its block with nothing in between touching that
/// buffer, or null. The kernel writes every element of the result, so such a
/// fill only gives the accumulators their first value: a logits matrix of
/// 128 x 32000 was written by the fill, then read and written by the kernel.
linalg::FillOp fillBefore(linalg::GenericOp op) {
  Value out = op.getDpsInits()[0];
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(prev);
        fill && fill.hasPureBufferSemantics() && fill.getDpsInits()[0] == out)
      return matchPattern(fill.getInputs()[0], m_Constant()) ? fill : linalg::FillOp();
    bool touches = llvm::any_of(prev->getOperands(), [&](Value v) { return v == out; }) ||
                   prev->getNumRegions() != 0;
    if (touches)
      return {};
  }
  return {};
}

LogicalResult lowerPanelMatmul(RewriterBase &rewriter, linalg::GenericOp op, int64_t rows,
                               int64_t vectors) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return op.emitOpError("kiln.panel_matmul: expected the generic of a kiln.matmul_panels on memrefs");
  auto weightsType = cast<MemRefType>(op.getDpsInputs()[1].getType());
  auto outType = cast<MemRefType>(op.getDpsInits()[0].getType());
  PanelKernel kernel{op.getDpsInputs()[0], op.getDpsInputs()[1], op.getDpsInits()[0],
                     outType.getElementType(), weightsType.getRank() == 3 ? weightsType.getDimSize(2) : 0};
  if (!isa<FloatType>(kernel.elem) || outType.getRank() != 2 ||
      cast<MemRefType>(kernel.lhs.getType()).getRank() != 2)
    return op.emitOpError("kiln.panel_matmul: expected float [M, K] x [N / P, K, P] -> [M, N]");
  // The workgroup's columns start at a panel (kiln-cpu-distribute tiles in
  // whole panels), and each 16 columns lie in one panel.
  if (ShapedType::isDynamic(kernel.panel) || kernel.panel % kLanes != 0)
    return op.emitOpError("kiln.panel_matmul: panels of ")
           << kernel.panel << " columns are not a multiple of 16";
  ImplicitLocOpBuilder b(op.getLoc(), rewriter);
  b.setInsertionPoint(op);
  if (linalg::FillOp fill = fillBefore(op)) {
    kernel.init = fill.getInputs()[0];
    rewriter.eraseOp(fill);
  }
  Value zero = indexConst(b, 0);
  Value n = memref::DimOp::create(b, kernel.out, 1);
  Value nWide = fullEnd(b, zero, n, kLanes * vectors);
  kernel.emitColumns(b, zero, nWide, vectors, rows, true);
  Value nFull = nWide;
  if (vectors > 1) {
    nFull = fullEnd(b, zero, n, kLanes);
    kernel.emitColumns(b, nWide, nFull, 1, rows, true);
  }
  // The last columns, fewer than 16: one masked block (unless none can be
  // left).
  std::optional<int64_t> staticN = getConstantIntValue(getAsOpFoldResult(n));
  if (!staticN || *staticN % kLanes != 0)
    kernel.emitColumns(b, nFull, n, 1, rows, false);
  rewriter.eraseOp(op);
  return success();
}

struct KilnCPULowerPanelMatmulsPass
    : kiln::impl::KilnCPULowerPanelMatmulsBase<KilnCPULowerPanelMatmulsPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    // (Integer ones are GEMM tiles: kiln-cpu-vectorize-gemm's
    // panelsToMatmuls, whatever their rows.)
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->hasAttr(kPanelMatmulAttr) &&
          isa<FloatType>(getElementTypeOrSelf(op.getDpsInits()[0].getType())))
        generics.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : generics)
      if (failed(lowerPanelMatmul(rewriter, op, std::max<int64_t>(rows, 1),
                                  std::max<int64_t>(vectors, 1))))
        return signalPassFailure();
  }
};

} // namespace
