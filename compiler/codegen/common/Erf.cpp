//===- Erf.cpp - f32 erf as one rational function --------------------------===//
//
// GELU's erf is the epilogue of every MLP expansion GEMM in BERT-, ViT- and
// ConvNeXt-style networks, evaluated once per output element, so its cost
// is paid next to K multiply-adds: MLIR's approximation (three intervals,
// each coefficient chosen by a chain of selects, then a rational function)
// took ~40 vector ops per 16 floats, a quarter of the time of ConvNeXt-T's
// 96 -> 384 products on the CPU. kiln-cpu-vectorize-gemm and
// kiln-gpu-lower-math both take this one, so that every target computes the
// same erf.
//
// Here erf(x) = x P(x^2) / Q(x^2) over all of [-c, c] (c = 3.925, beyond
// which erf(x) rounds to +-1 in f32), with P and Q of degree 5: one clamp,
// ten FMAs, a division and a clamp of the result to [-1, 1]. The
// coefficients are a rational minimax fit of our own (Lawson-weighted
// linearized least squares on Chebyshev nodes of [0, c], in double): 1.7e-8
// in exact arithmetic, within 3.5e-7 of the C library's erf when evaluated
// in f32 with FMAs (test/Driver/erf.test checks every point of a fine grid
// of [-6, 6]). NaN stays NaN (the clamps' ordered compares are false for
// it), the infinities give +-1.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/Passes.h"
#include "codegen/common/MathBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace {

/// Where erf(x) is +-1 in f32 (erfc(3.925) = 2.8e-8, under half an ulp
/// below 1, 3.0e-8).
constexpr double kErfClamp = 3.925;

/// x P(x^2) / Q(x^2), lowest degree first.
constexpr double kErfP[] = {1.12837899,      0.192965582,     0.0530832782,
                            0.00387598155,   0.000287476636,  2.03082504e-06};
constexpr double kErfQ[] = {1.0,             0.504342914,     0.115164436,
                            0.015187677,     0.00118965132,   3.80301681e-05};

struct ErfRational : OpRewritePattern<math::ErfOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::ErfOp op, PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return rewriter.notifyMatchFailure(op, "not f32");
    Location loc = op.getLoc();
    Value x = kiln::codegen::clampKeepingNaN(rewriter, loc, op.getOperand(), -kErfClamp, kErfClamp);
    Value t = arith::MulFOp::create(rewriter, loc, x, x);
    Value p = arith::MulFOp::create(rewriter, loc, x, kiln::codegen::horner(rewriter, loc, kErfP, t));
    Value ratio =
        arith::DivFOp::create(rewriter, loc, p, kiln::codegen::horner(rewriter, loc, kErfQ, t));
    rewriter.replaceOp(op, kiln::codegen::clampKeepingNaN(rewriter, loc, ratio, -1.0, 1.0));
    return success();
  }
};

} // namespace

namespace kiln::codegen {

void populateErfApproximationPatterns(RewritePatternSet &patterns) {
  // (Before upstream's math.erf approximation in the same pattern set,
  // which stays for f16, bf16 and f64.)
  patterns.add<ErfRational>(patterns.getContext(), /*benefit=*/2);
}

} // namespace kiln::codegen
