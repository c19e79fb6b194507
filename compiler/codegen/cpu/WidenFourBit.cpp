//===- WidenFourBit.cpp - 4-bit integer contractions as 8-bit ones --------===//
//
// x86 has no 4-bit dot-product instruction, and a contraction of i4 values
// would be a scalar loop (LLVM's vectors of i4 are packed, the buffers hold
// one value per byte). 4-bit values are 8-bit values too: on the cpu a
// kiln.matmul_integer of `i4`/`ui4` operands (written in kiln IR; QDQ
// models fold to bytes marked kiln.four_bit instead) reads them extended
// to 8 bits, a small constant extended at compile time (the cast folds),
// so that the 8-bit kernels (vpdpbusd) take it.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"
#include "kiln/Dialect/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUWIDENFOURBIT
#include "codegen/cpu/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace {
using namespace kiln;

bool isFourBit(Value v) {
  auto integer = dyn_cast<IntegerType>(getElementTypeOrSelf(v.getType()));
  return integer && integer.getWidth() == 4;
}

/// `v` (4-bit elements) cast to 8-bit elements of the same signedness.
Value widen(PatternRewriter &rewriter, Location loc, Value v) {
  if (!v)
    return v;
  auto type = cast<RankedTensorType>(v.getType());
  auto four = cast<IntegerType>(type.getElementType());
  auto eight = IntegerType::get(rewriter.getContext(), 8, four.getSignedness());
  return rewriter.createOrFold<CastOp>(loc, type.clone(eight), v);
}

struct WidenFourBitMatmul : OpRewritePattern<MatmulIntegerOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulIntegerOp op, PatternRewriter &rewriter) const override {
    if (!isFourBit(op.getLhs()) && !isFourBit(op.getRhs()))
      return failure();
    Location loc = op.getLoc();
    auto maybe = [&](Value v) { return v && isFourBit(v) ? widen(rewriter, loc, v) : v; };
    rewriter.replaceOpWithNewOp<MatmulIntegerOp>(op, maybe(op.getLhs()), maybe(op.getRhs()),
                                                 maybe(op.getLhsZeroPoint()),
                                                 maybe(op.getRhsZeroPoint()));
    return success();
  }
};

struct KilnCPUWidenFourBitPass
    : kiln::impl::KilnCPUWidenFourBitBase<KilnCPUWidenFourBitPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<WidenFourBitMatmul>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
