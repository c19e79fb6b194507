//===- Exp.cpp - f32 exp for the CPU in fifteen vector operations ---------===//
//
// exp is in every softmax, sigmoid and SiLU (EfficientNet's activation, the
// gate of LLaMA's MLP), evaluated once per element. MLIR's approximation
// clamps twice, rounds with a floor, clamps the exponent again and builds
// 2^n with a conversion, ~21 vector ops per 16 floats; this one takes 15:
//
//   x  = clamp(x, -87.68, 89.0)              (NaN passes)
//   t  = fma(x, log2(e), 1.5 * 2^23)         n = round(x log2 e) in t's low
//   nf = t - 1.5 * 2^23                          mantissa bits, and as a float
//   r  = x - nf ln2_hi - nf ln2_lo           |r| <= ln2 / 2, two FMAs
//   p  = P(r) ~ 2 e^r                        degree 6, six FMAs
//   e^x = p * bits((bits(t) << 23) + (126 << 23))     p * 2^(n - 1)
//
// Scaling by 2^(n - 1) with the 2 folded into P keeps 2^(n - 1) normal for
// every n up to 128, so exp overflows to +inf where the true value does
// (x > 88.7228) with no clamp of n; at the bottom, n = -126 gives a scale of
// +0, so e^x flushes to 0 below e^-86.99 = 1.8e-38 (where it is within
// 1.6x of the smallest normal float anyway). P is our own fit of 2 e^r on
// [-ln2 / 2, ln2 / 2] (Lawson-weighted least squares on Chebyshev nodes,
// relative error 1.9e-9 in exact arithmetic); evaluated in f32 with FMAs
// the whole function is within 8.0e-8 relative (about an ulp) of exp over
// [-86.9, 88.7] (test/Driver/exp.test checks every point of a fine grid
// against the C library). NaN stays NaN, +inf gives +inf, -inf gives 0.
//
// Only the CPU takes it: the gfx targets have exp in hardware (v_exp_f32).
//
//===----------------------------------------------------------------------===//

#include "codegen/common/MathBuilders.h"
#include "codegen/common/Passes.h"

using namespace mlir;

namespace {

/// The clamp: n = round(x log2 e) stays in [-126, 128].
constexpr double kExpLow = -87.68, kExpHigh = 89.0;
constexpr double kLog2E = 1.4426950408889634;
/// 1.5 * 2^23: adding it rounds to an integer held in the mantissa.
constexpr double kRoundingShift = 12582912.0;
/// ln 2 as the float nearest it plus the remainder.
constexpr double kLn2Hi = 0.693147182464599609375, kLn2Lo = -1.904654299957768e-09;
/// 2 e^r, lowest degree first.
constexpr double kTwoExpP[] = {2.000000001108368,   2.0000000726461766,  0.9999998415898387,
                               0.3333284034040994,  0.08333645128584398, 0.01674963156054244,
                               0.002767368373803524};

struct ExpPolynomial : OpRewritePattern<math::ExpOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::ExpOp op, PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return rewriter.notifyMatchFailure(op, "not f32");
    Location loc = op.getLoc();
    auto constant = [&](double v) { return kiln::codegen::f32Constant(rewriter, loc, type, v); };
    Value x = kiln::codegen::clampKeepingNaN(rewriter, loc, op.getOperand(), kExpLow, kExpHigh);
    Value shift = constant(kRoundingShift);
    Value t = math::FmaOp::create(rewriter, loc, x, constant(kLog2E), shift);
    Value n = arith::SubFOp::create(rewriter, loc, t, shift);
    Value r = math::FmaOp::create(rewriter, loc, n, constant(-kLn2Hi), x);
    r = math::FmaOp::create(rewriter, loc, n, constant(-kLn2Lo), r);
    Value p = kiln::codegen::horner(rewriter, loc, kTwoExpP, r);
    // 2^(n - 1) from t's bits: shifting left by 23 keeps n's low 9 bits
    // in the exponent field (the shift's own bits fall off the top).
    Type intType = rewriter.getI32Type();
    if (auto vector = dyn_cast<VectorType>(type))
      intType = vector.clone(intType);
    auto intConstant = [&](int64_t v) -> Value {
      auto attr = rewriter.getI32IntegerAttr(static_cast<int32_t>(v));
      if (auto vector = dyn_cast<VectorType>(intType))
        return arith::ConstantOp::create(rewriter, loc, DenseElementsAttr::get(vector, attr.getValue()));
      return arith::ConstantOp::create(rewriter, loc, attr);
    };
    Value bits = arith::BitcastOp::create(rewriter, loc, intType, t);
    bits = arith::ShLIOp::create(rewriter, loc, bits, intConstant(23));
    bits = arith::AddIOp::create(rewriter, loc, bits, intConstant(126 << 23));
    Value scale = arith::BitcastOp::create(rewriter, loc, type, bits);
    rewriter.replaceOpWithNewOp<arith::MulFOp>(op, p, scale);
    return success();
  }
};

} // namespace

namespace kiln::codegen {

void populateExpApproximationPatterns(RewritePatternSet &patterns) {
  // (Before upstream's math.exp approximation in the same pattern set,
  // which stays for f16, bf16 and f64.)
  patterns.add<ExpPolynomial>(patterns.getContext(), /*benefit=*/2);
}

} // namespace kiln::codegen
