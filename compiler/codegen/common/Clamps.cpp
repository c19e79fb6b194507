//===- Clamps.cpp - max / min against a constant as one compare-select ----===//
//
// ReLU is max(x, 0), ReLU6 and Clip are a max and a min against constants,
// HardSigmoid and HardSwish clamp to [0, 1]: the epilogue of nearly every
// convolution of a CNN, and half the arithmetic of a depthwise 3x3 tap
// loop. `arith.maximumf` / `arith.minimumf` propagate NaN from either
// operand, which x86 has no instruction for: each became vmaxps, vcmpunordps
// and a blend. Against a constant that is not NaN, x < c ? c : x (x > c ? c
// : x for min) is the same function, with NaN in x passing through the
// ordered compare; x86 takes it as one vmaxps (vminps), whose
// second-operand-on-NaN rule is exactly that select. (The one difference:
// max(-0, +0) is -0 here, +0 for maximumf; no tolerance can tell.)
//
//===----------------------------------------------------------------------===//

#include "codegen/common/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace {

/// Whether `v` is a constant (scalar or splat) that is not NaN.
bool isOrderedConstant(Value v) {
  FloatAttr::ValueType value(0.0f);
  return matchPattern(v, m_ConstantFloat(&value)) && !value.isNaN();
}

template <typename Op, arith::CmpFPredicate beyond>
struct ClampToConstant : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;

  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    Value x = op.getLhs(), c = op.getRhs();
    if (!isOrderedConstant(c))
      std::swap(x, c);
    if (!isOrderedConstant(c))
      return rewriter.notifyMatchFailure(op, "no non-NaN constant operand");
    Value past = arith::CmpFOp::create(rewriter, op.getLoc(), beyond, x, c);
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, past, c, x);
    return success();
  }
};

} // namespace

namespace kiln::codegen {

void populateConstantClampPatterns(RewritePatternSet &patterns) {
  patterns.add<ClampToConstant<arith::MaximumFOp, arith::CmpFPredicate::OLT>,
               ClampToConstant<arith::MinimumFOp, arith::CmpFPredicate::OGT>>(
      patterns.getContext());
}

} // namespace kiln::codegen
