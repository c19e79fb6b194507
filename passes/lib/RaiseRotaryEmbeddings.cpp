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

/// `slice` takes every other element of `x`'s last dimension from `start`
/// (0 or 1: [start::2]), every other dimension whole.
bool isStrideTwoLastDimSlice(SliceOp slice, Value x, int64_t start) {
  if (!slice || slice.getInput() != x)
    return false;
  auto in = cast<RankedTensorType>(x.getType());
  auto out = cast<RankedTensorType>(slice.getType());
  int64_t last = in.getRank() - 1;
  if (out.getShape().drop_back() != in.getShape().drop_back() ||
      out.getShape()[last] != in.getShape()[last] / 2)
    return false;
  for (auto [d, s] : llvm::enumerate(slice.getStarts()))
    if (s != (static_cast<int64_t>(d) == last ? start : 0))
      return false;
  for (auto [d, step] : llvm::enumerate(slice.getSteps()))
    if (step != (static_cast<int64_t>(d) == last ? 2 : 1))
      return false;
  return true;
}

/// `v` is `u` with a trailing dimension of 1 appended (a kiln.reshape read
/// once: an Unsqueeze at -1); `u`, or null.
Value unsqueezedLast(Value v) {
  auto reshape = singleUseDef<ReshapeOp>(v);
  if (!reshape)
    return nullptr;
  auto in = cast<RankedTensorType>(reshape.getInput().getType());
  auto out = cast<RankedTensorType>(v.getType());
  if (out.getRank() != in.getRank() + 1 || out.getShape().back() != 1 ||
      out.getShape().drop_back() != in.getShape())
    return nullptr;
  return reshape.getInput();
}

/// `rot` is rotate_every_two(x) (GPT-J-style, interleaved pairs):
/// `stack(-x[..., 1::2], x[..., ::2], axis=-1)` flattened back to x's
/// shape, which exporters write as two strided slices, a negation, two
/// unsqueezes at -1, a concat along the new axis and a reshape (the
/// negation before or after its unsqueeze); every value in it read once.
/// x, or null.
Value matchRotateEveryTwo(Value rot) {
  auto flatten = singleUseDef<ReshapeOp>(rot);
  if (!flatten)
    return nullptr;
  auto concat = singleUseDef<ConcatOp>(flatten.getInput());
  auto type = cast<RankedTensorType>(rot.getType());
  int64_t rank = type.getRank();
  if (!concat || concat.getInputs().size() != 2 || rank < 1 || concat.getAxis() != rank)
    return nullptr;
  int64_t d = type.getShape().back();
  auto pairs = cast<RankedTensorType>(concat.getType());
  if (ShapedType::isDynamic(d) || d % 2 != 0 || pairs.getRank() != rank + 1 ||
      pairs.getShape().back() != 2 || pairs.getShape().drop_back(2) != type.getShape().drop_back() ||
      pairs.getShape()[rank - 1] != d / 2)
    return nullptr;
  // The odd elements, negated before or after their unsqueeze.
  Value odd;
  if (Value u = unsqueezedLast(concat.getInputs()[0]))
    odd = negated(u);
  else if (Value n = negated(concat.getInputs()[0]))
    odd = unsqueezedLast(n);
  Value even = unsqueezedLast(concat.getInputs()[1]);
  auto oddSlice = odd ? singleUseDef<SliceOp>(odd) : SliceOp();
  auto evenSlice = even ? singleUseDef<SliceOp>(even) : SliceOp();
  if (!oddSlice || !evenSlice)
    return nullptr;
  Value x = oddSlice.getInput();
  if (x.getType() != rot.getType() || !isStrideTwoLastDimSlice(oddSlice, x, 1) ||
      !isStrideTwoLastDimSlice(evenSlice, x, 0))
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
        // s = rotate_half(x) * sin (or rotate_every_two(x) * sin, the
        // pairs interleaved), c = x * cos, sin and cos broadcasting to x
        // (the products have x's type).
        Value x;
        bool interleaved = false;
        auto sinTerm = product(s, [&](Value a) {
          if ((x = matchRotateHalf(a)))
            return true;
          interleaved = static_cast<bool>(x = matchRotateEveryTwo(a));
          return interleaved;
        });
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
                                                 b.getBoolAttr(interleaved));
        add.getResult().replaceAllUsesWith(result);
        eraseDeadChain(add);
        break;
      }
    }
  }
};

} // namespace
