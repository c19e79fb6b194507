//===- RaiseRotaryEmbeddings.cpp - kiln-raise-rotary-embeddings -----------===//
//
// Rotary position embeddings as exporters write them out (LLaMA-style
// models: `x * cos + rotate_half(x) * sin`, rotate_half a Slice, Neg,
// Slice and Concat) become one kiln.rotary_embedding. See the pass
// description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNRAISEROTARYEMBEDDINGS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// `slice` takes elements [start, start + size) of `x`'s last dimension,
/// every other dimension whole, step 1.
bool isLastDimSlice(SliceOp slice, Value x, int64_t start, int64_t size) {
  if (!slice || slice.getInput() != x)
    return false;
  auto in = cast<RankedTensorType>(x.getType());
  auto out = cast<RankedTensorType>(slice.getType());
  int64_t last = in.getRank() - 1;
  if (out.getShape().drop_back() != in.getShape().drop_back() || out.getShape()[last] != size)
    return false;
  for (auto [d, s] : llvm::enumerate(slice.getStarts()))
    if (s != (static_cast<int64_t>(d) == last ? start : 0))
      return false;
  return llvm::all_of(slice.getSteps(), [](int64_t step) { return step == 1; });
}

/// `v` is -`u` (kiln.neg, or a product by the scalar constant -1) read once;
/// `u`, or null.
Value negated(Value v) {
  if (auto neg = singleUseDef<NegOp>(v))
    return neg.getInput();
  auto mul = singleUseDef<MulOp>(v);
  if (!mul)
    return nullptr;
  for (auto [u, c] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())}) {
    auto cst = c.getDefiningOp<ConstantOp>();
    auto dense = cst ? dyn_cast<DenseFPElementsAttr>(cst.getValue()) : nullptr;
    if (dense && dense.isSplat() && dense.getSplatValue<APFloat>().convertToDouble() == -1.0 &&
        cast<RankedTensorType>(c.getType()).getNumElements() == 1 && u.getType() == mul.getType())
      return u;
  }
  return nullptr;
}

/// `rot` is rotate_half(x), concat(-x[..., D/2:], x[..., :D/2]) along the
/// last dimension, every value in it read once; x, or null.
Value matchRotateHalf(Value rot) {
  auto concat = singleUseDef<ConcatOp>(rot);
  auto type = cast<RankedTensorType>(rot.getType());
  int64_t last = type.getRank() - 1;
  if (!concat || concat.getInputs().size() != 2 || type.getRank() < 1 || concat.getAxis() != last)
    return nullptr;
  int64_t d = type.getShape()[last];
  if (ShapedType::isDynamic(d) || d % 2 != 0)
    return nullptr;
  Value upper = negated(concat.getInputs()[0]);
  auto upperSlice = upper ? singleUseDef<SliceOp>(upper) : SliceOp();
  auto lowerSlice = singleUseDef<SliceOp>(concat.getInputs()[1]);
  if (!upperSlice || !lowerSlice)
    return nullptr;
  Value x = upperSlice.getInput();
  if (x.getType() != rot.getType() || !isLastDimSlice(upperSlice, x, d / 2, d / 2) ||
      !isLastDimSlice(lowerSlice, x, 0, d / 2))
    return nullptr;
  return x;
}

/// `v` is `a * b` read once, `a` (either operand) satisfying `pred`; the
/// two operands in that order, or nullopt.
template <typename Pred>
std::optional<std::pair<Value, Value>> product(Value v, Pred pred) {
  auto mul = singleUseDef<MulOp>(v);
  if (!mul)
    return std::nullopt;
  for (auto [a, b] : {std::pair(mul.getLhs(), mul.getRhs()), std::pair(mul.getRhs(), mul.getLhs())})
    if (pred(a))
      return std::pair(a, b);
  return std::nullopt;
}

struct KilnRaiseRotaryEmbeddingsPass
    : kiln::impl::KilnRaiseRotaryEmbeddingsBase<KilnRaiseRotaryEmbeddingsPass> {
  void runOnOperation() override {
    SmallVector<AddOp> candidates;
    getOperation().walk([&](AddOp add) { candidates.push_back(add); });
    for (AddOp add : candidates) {
      auto type = dyn_cast<RankedTensorType>(add.getType());
      if (!type || !type.hasStaticShape() || !isa<FloatType>(type.getElementType()) ||
          type.getRank() < 1)
        continue;
      for (auto [c, s] : {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())}) {
        // s = rotate_half(x) * sin, c = x * cos, sin and cos broadcasting
        // to x (the products have x's type).
        Value x;
        auto sinTerm = product(s, [&](Value a) { return (x = matchRotateHalf(a)) != nullptr; });
        if (!sinTerm || x.getType() != type || s.getType() != type)
          continue;
        auto cosTerm = product(c, [&](Value a) { return a == x; });
        if (!cosTerm || c.getType() != type)
          continue;
        Value cos = cosTerm->second, sin = sinTerm->second;
        auto fits = [&](Value v) {
          auto t = cast<RankedTensorType>(v.getType());
          return t.getElementType() == type.getElementType() && t.getRank() <= type.getRank();
        };
        if (!fits(cos) || !fits(sin))
          continue;
        OpBuilder b(add);
        Value result = RotaryEmbeddingOp::create(b, add.getLoc(), type, x, cos, sin,
                                                 b.getBoolAttr(false));
        add.getResult().replaceAllUsesWith(result);
        eraseDeadChain(add);
        break;
      }
    }
  }
};

} // namespace
