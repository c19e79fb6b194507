//===- RaiseRmsNorms.cpp - kiln-raise-rms-norms ---------------------------===//
//
// RMSNorm as exporters write it out (LLaMA-style models: Pow, ReduceMean,
// Add, Sqrt, Div, Mul, Mul) becomes one kiln.rms_norm. See the pass
// description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNRAISERMSNORMS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The value of a splat float constant with at most one element per
/// dimension (a scalar), or nullopt.
std::optional<double> scalarConstant(Value v) {
  auto cst = v.getDefiningOp<ConstantOp>();
  if (!cst)
    return std::nullopt;
  auto type = cast<RankedTensorType>(cst.getType());
  auto dense = dyn_cast<DenseFPElementsAttr>(cst.getValue());
  if (!dense || !dense.isSplat() ||
      llvm::any_of(type.getShape(), [](int64_t d) { return d != 1; }))
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

/// The RMSNorm of `x` over its dimensions [axis, rank).
struct RmsNorm {
  Value x;
  int64_t axis;
  double epsilon;
};

/// `v` is mean(x^2) + eps over x's trailing axes (x * x or x ^ 2), every
/// value used once.
std::optional<RmsNorm> matchMeanSquare(Value v, Value x) {
  auto add = singleUseDef<AddOp>(v);
  if (!add)
    return std::nullopt;
  ReduceMeanOp mean;
  std::optional<double> eps;
  for (auto [m, e] : {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())})
    if ((mean = singleUseDef<ReduceMeanOp>(m)) && (eps = scalarConstant(e)))
      break;
  if (!mean || !eps || !mean.getKeepdims())
    return std::nullopt;
  Value q = mean.getInput();
  if (!q.hasOneUse())
    return std::nullopt;
  if (auto mul = q.getDefiningOp<MulOp>()) {
    if (mul.getLhs() != x || mul.getRhs() != x)
      return std::nullopt;
  } else if (auto pow = q.getDefiningOp<PowOp>()) {
    std::optional<double> two = scalarConstant(pow.getRhs());
    if (pow.getLhs() != x || !two || *two != 2.0)
      return std::nullopt;
  } else {
    return std::nullopt;
  }
  // The trailing axes.
  ArrayRef<int64_t> axes = mean.getAxes();
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  if (axes.empty())
    return std::nullopt;
  for (auto [i, axis] : llvm::enumerate(axes))
    if (axis != rank - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i))
      return std::nullopt;
  return RmsNorm{x, axes.front(), *eps};
}

/// `s` is sqrt(mean(x^2) + eps).
std::optional<RmsNorm> matchRoot(Value s, Value x) {
  auto sqrt = singleUseDef<SqrtOp>(s);
  return sqrt ? matchMeanSquare(sqrt.getInput(), x) : std::nullopt;
}

/// `n` is x / sqrt(...), x * (1 / sqrt(...)), x * reciprocal(sqrt(...)) or
/// x * rsqrt(mean(x^2) + eps).
std::optional<RmsNorm> matchNormalized(Value n) {
  if (auto div = singleUseDef<DivOp>(n))
    return matchRoot(div.getRhs(), div.getLhs());
  auto mul = singleUseDef<MulOp>(n);
  if (!mul)
    return std::nullopt;
  for (auto [x, r] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())}) {
    std::optional<RmsNorm> found;
    if (auto div = singleUseDef<DivOp>(r)) {
      std::optional<double> one = scalarConstant(div.getLhs());
      if (one && *one == 1.0)
        found = matchRoot(div.getRhs(), x);
    } else if (auto recip = singleUseDef<ReciprocalOp>(r)) {
      found = matchRoot(recip.getInput(), x);
    } else if (auto rsqrt = singleUseDef<RsqrtOp>(r)) {
      found = matchMeanSquare(rsqrt.getInput(), x);
    }
    if (found)
      return found;
  }
  return std::nullopt;
}

struct KilnRaiseRmsNormsPass : kiln::impl::KilnRaiseRmsNormsBase<KilnRaiseRmsNormsPass> {
  void runOnOperation() override {
    SmallVector<MulOp> candidates;
    getOperation().walk([&](MulOp mul) { candidates.push_back(mul); });
    for (MulOp mul : candidates) {
      // (kiln.rms_norm is lowered for static shapes.)
      auto type = dyn_cast<RankedTensorType>(mul.getType());
      if (!type || !type.hasStaticShape() || !isa<FloatType>(type.getElementType()))
        continue;
      for (auto [n, w] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())}) {
        std::optional<RmsNorm> norm = matchNormalized(n);
        if (!norm || norm->x.getType() != type)
          continue;
        // The scale: the trailing dimensions of the normalized ones.
        auto scale = cast<RankedTensorType>(w.getType());
        ArrayRef<int64_t> normalized = type.getShape().drop_front(norm->axis);
        if (scale.getElementType() != type.getElementType() ||
            scale.getRank() > static_cast<int64_t>(normalized.size()) ||
            scale.getShape() != normalized.take_back(scale.getRank()))
          continue;
        OpBuilder b(mul);
        Value result = RmsNormOp::create(b, mul.getLoc(), type, norm->x, w,
                                         b.getI64IntegerAttr(norm->axis),
                                         b.getF64FloatAttr(norm->epsilon));
        mul.getResult().replaceAllUsesWith(result);
        // The chain, now unused, from its end.
        eraseDeadChain(mul);
        break;
      }
    }
  }
};

} // namespace
