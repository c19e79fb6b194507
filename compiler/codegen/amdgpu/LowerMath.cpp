//===- LowerMath.cpp - math ops without an AMDGPU intrinsic -> polynomials ===//

#include "kiln/Passes/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNGPULOWERMATH
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

namespace {
struct KilnGPULowerMathPass : kiln::impl::KilnGPULowerMathBase<KilnGPULowerMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // Ops LLVM lowers natively on AMDGPU stay: exp, exp2, log, log2, sqrt,
    // rsqrt (as 1/sqrt), fma, abs, floor, ceil, round, copysign, sin, cos.
    static const llvm::StringSet<llvm::MallocAllocator> native = {
        "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "fma", "absf", "floor",
        "ceil", "round", "roundeven", "copysign", "sin", "cos"};
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) { return !native.contains(name); });
    math::populateExpansionPatterns(patterns, {"powf", "fpowi", "ipowi", "tan",
                                               "sinh", "cosh", "asinh", "acosh",
                                               "atanh"});
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
