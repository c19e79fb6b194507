//===- LowerMath.cpp - math ops without an AMDGPU intrinsic -> polynomials ===//

#include "codegen/amdgpu/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNGPULOWERMATH
#include "codegen/amdgpu/Passes.h.inc"
} // namespace kiln

namespace {

/// "f32", "v4f32", "f16": the overload suffix of an LLVM intrinsic.
std::string intrinsicSuffix(Type type) {
  std::string prefix;
  if (auto vec = dyn_cast<VectorType>(type)) {
    prefix = "v" + std::to_string(vec.getNumElements());
    type = vec.getElementType();
  }
  if (type.isF32())
    return prefix + "f32";
  if (type.isF16())
    return prefix + "f16";
  if (type.isF64())
    return prefix + "f64";
  if (type.isBF16())
    return prefix + "bf16";
  return "";
}

/// A math op LLVM lowers natively on AMDGPU becomes a call of its LLVM
/// intrinsic (`llvm.call_intrinsic`), which convert-gpu-to-rocdl keeps as
/// it is; math ops and the matching `llvm.intr.*` ops it would turn into
/// device-library calls.
template <typename MathOp>
struct ToIntrinsic : OpRewritePattern<MathOp> {
  ToIntrinsic(MLIRContext *ctx, StringRef name)
      : OpRewritePattern<MathOp>(ctx), name(name.str()) {}
  LogicalResult matchAndRewrite(MathOp op, PatternRewriter &rewriter) const override {
    std::string suffix = intrinsicSuffix(op.getType());
    if (suffix.empty())
      return failure();
    // AMDGPU has no f64 exp, log or sine instructions (the device library
    // would be needed): the f64 value is computed in f32, about 1e-7
    // relative error, and extended back.
    Type elem = getElementTypeOrSelf(op.getType());
    if (elem.isF64() && inF32.contains(name)) {
      Location loc = op.getLoc();
      Type f32 = rewriter.getF32Type();
      if (auto vec = dyn_cast<VectorType>(op.getType()))
        f32 = vec.clone(f32);
      SmallVector<Value> narrowed;
      for (Value operand : op->getOperands())
        narrowed.push_back(arith::TruncFOp::create(rewriter, loc, f32, operand));
      auto call = LLVM::CallIntrinsicOp::create(
          rewriter, loc, f32,
          rewriter.getStringAttr("llvm." + name + "." + intrinsicSuffix(f32)),
          narrowed);
      rewriter.replaceOpWithNewOp<arith::ExtFOp>(op, op.getType(),
                                                 call.getResult(0));
      return success();
    }
    auto call = LLVM::CallIntrinsicOp::create(
        rewriter, op.getLoc(), op.getType(),
        rewriter.getStringAttr("llvm." + name + "." + suffix), op->getOperands());
    rewriter.replaceOp(op, call.getResults());
    return success();
  }
  std::string name;
  /// The intrinsics without an f64 form on AMDGPU.
  inline static const llvm::StringSet<llvm::MallocAllocator> inF32 = {
      "exp", "exp2", "log", "log2", "sin", "cos"};
};

/// rsqrt(x) = 1 / sqrt(x).
struct RsqrtToSqrt : OpRewritePattern<math::RsqrtOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::RsqrtOp op, PatternRewriter &rewriter) const override {
    Value sqrt = math::SqrtOp::create(rewriter, op.getLoc(), op.getOperand());
    Value one = arith::ConstantOp::create(rewriter, op.getLoc(), op.getType(),
                                          rewriter.getOneAttr(op.getType()));
    rewriter.replaceOpWithNewOp<arith::DivFOp>(op, one, sqrt);
    return success();
  }
};

struct KilnGPULowerMathPass : kiln::impl::KilnGPULowerMathBase<KilnGPULowerMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // Ops LLVM lowers natively on AMDGPU stay: exp, exp2, log, log2, sqrt,
    // rsqrt (as 1/sqrt), fma, abs, floor, ceil, round, copysign, sin, cos.
    static const llvm::StringSet<llvm::MallocAllocator> native = {
        "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "fma", "absf", "floor",
        "ceil", "round", "roundeven", "copysign", "sin", "cos"};
    // (f32 erf: the rational function the cpu takes too, Erf.cpp.)
    kiln::codegen::populateErfApproximationPatterns(patterns);
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) { return !native.contains(name); });
    math::populateExpansionPatterns(patterns, {"powf", "fpowi", "ipowi", "tan",
                                               "sinh", "cosh", "asinh", "acosh",
                                               "atanh"});
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();

    RewritePatternSet intrinsics(&getContext());
    MLIRContext *ctx = &getContext();
    intrinsics.add<RsqrtToSqrt>(ctx);
    intrinsics.add<ToIntrinsic<math::ExpOp>>(ctx, "exp");
    intrinsics.add<ToIntrinsic<math::Exp2Op>>(ctx, "exp2");
    intrinsics.add<ToIntrinsic<math::LogOp>>(ctx, "log");
    intrinsics.add<ToIntrinsic<math::Log2Op>>(ctx, "log2");
    intrinsics.add<ToIntrinsic<math::SqrtOp>>(ctx, "sqrt");
    intrinsics.add<ToIntrinsic<math::FmaOp>>(ctx, "fma");
    intrinsics.add<ToIntrinsic<math::AbsFOp>>(ctx, "fabs");
    intrinsics.add<ToIntrinsic<math::FloorOp>>(ctx, "floor");
    intrinsics.add<ToIntrinsic<math::CeilOp>>(ctx, "ceil");
    intrinsics.add<ToIntrinsic<math::RoundOp>>(ctx, "round");
    intrinsics.add<ToIntrinsic<math::RoundEvenOp>>(ctx, "roundeven");
    intrinsics.add<ToIntrinsic<math::CopySignOp>>(ctx, "copysign");
    intrinsics.add<ToIntrinsic<math::SinOp>>(ctx, "sin");
    intrinsics.add<ToIntrinsic<math::CosOp>>(ctx, "cos");
    if (failed(applyPatternsGreedily(getOperation(), std::move(intrinsics))))
      return signalPassFailure();
  }
};
} // namespace
