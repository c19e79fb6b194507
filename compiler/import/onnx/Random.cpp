//===- Random.cpp - ONNX random ops -> kiln -------------------------------===//
//
// RandomUniform(Like), RandomNormal(Like), Bernoulli and Multinomial, and the
// uniform draws of training-mode Dropout (Elementwise.cpp), built from
// integer elementwise kiln ops, so that every backend runs them without a
// random-number kernel of its own.
//
// The generator is counter based: an element's draw is a hash of its index
// and of the node's key, computed on ui32 tensors. The hash is MurmurHash3's
// 32-bit finalizer (fmix32: xor-shift 16, multiply 0x85ebca6b, xor-shift 13,
// multiply 0xc2b2ae35, xor-shift 16), applied once per dimension:
// h = fmix32(h + i_d) for each index i_d of the element, starting from the
// key. Each step runs on the broadcast shape so far ([d0, 1, 1], then
// [d0, d1, 1], ...), so no index tensor of the full size is ever built and
// nothing folds into a large constant (kiln.shift_right has no folder); a
// dimension longer than 4,096 is hashed as the digits of its index. The
// top bits of the hash become a float in [0, 1): 24 of them for f32, 32 for
// f64, and only as many as the output type holds exactly for f16 (11) and
// bf16 (8), so that a draw never rounds up to 1. Normal draws are
// Box-Muller from two uniforms (the second from fmix32(h ^ 0x9e3779b9)).
//
// The key is the FNV-1a hash of the `seed` attribute's float bits when the
// node has one, else of the node's name: without a seed the draws are fixed
// per artifact and the same in every run (ONNX Runtime draws new numbers per
// run; see docs/architecture.md).
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

namespace {
// MurmurHash3's fmix32 constants.
constexpr uint32_t kFmixMultiply1 = 0x85ebca6b;
constexpr uint32_t kFmixMultiply2 = 0xc2b2ae35;
// 2^32 / golden ratio: the xor that separates Box-Muller's second stream.
constexpr uint32_t kSecondStream = 0x9e3779b9;
// The longest index constant: longer dimensions are hashed as digits.
constexpr int64_t kMaxIotaLength = 4096;
// FNV-1a (32-bit) parameters.
constexpr uint32_t kFnvOffset = 2166136261u;
constexpr uint32_t kFnvPrime = 16777619u;
} // namespace

/// FNV-1a of `bytes`, 32 bits.
static uint32_t fnv1a(ArrayRef<uint8_t> bytes) {
  uint32_t h = kFnvOffset;
  for (uint8_t c : bytes)
    h = (h ^ c) * kFnvPrime;
  return h;
}

/// The generator key of `node`: its `seed` attribute's float bits, or its
/// name (the first output's when the node has none), hashed.
static uint32_t generatorKey(NodeContext &node) {
  if (node.hasAttr("seed")) {
    auto bits = llvm::bit_cast<uint32_t>(
        static_cast<float>(node.floatAttr("seed", 0.0)));
    uint8_t bytes[4] = {uint8_t(bits), uint8_t(bits >> 8), uint8_t(bits >> 16),
                        uint8_t(bits >> 24)};
    return fnv1a(bytes);
  }
  StringRef name = node.name();
  if (auto loc = dyn_cast<NameLoc>(node.loc()))
    name = loc.getName().getValue();
  return fnv1a(
      ArrayRef(reinterpret_cast<const uint8_t *>(name.data()), name.size()));
}

static Type ui32Type(NodeContext &node) {
  return node.builder().getIntegerType(32, /*isSigned=*/false);
}

/// MurmurHash3's fmix32 of every element of the ui32 tensor `h`.
static Value fmix32(NodeContext &node, Value h) {
  Type ui32 = ui32Type(node);
  auto xorShift = [&](Value v, unsigned amount) {
    return node.create<XorOp>(
        v, node.create<ShiftRightOp>(v, node.scalar(ui32, amount)));
  };
  h = xorShift(h, 16);
  h = node.create<MulOp>(h, node.scalar(ui32, kFmixMultiply1));
  h = xorShift(h, 13);
  h = node.create<MulOp>(h, node.scalar(ui32, kFmixMultiply2));
  return xorShift(h, 16);
}

/// The digits a dimension of `size` is hashed as: `size` itself when it is
/// at most kMaxIotaLength, else the row-major digits of a [rows, columns]
/// view (rows split again when needed) whose product is the smallest one
/// of that form that covers `size`.
static SmallVector<int64_t> indexDigits(int64_t size) {
  if (size <= kMaxIotaLength)
    return {size};
  int64_t rows = llvm::divideCeil(size, kMaxIotaLength);
  SmallVector<int64_t> digits = indexDigits(rows);
  digits.push_back(llvm::divideCeil(size, rows));
  return digits;
}

/// The hash of every element index of `shape` and `key`, a ui32 tensor of
/// that shape. A dimension longer than kMaxIotaLength is hashed as the
/// digits of its index (indexDigits), then merged back by a reshape and,
/// where the digits cover more than the dimension, sliced.
static Value hashIndices(NodeContext &node, ArrayRef<int64_t> shape,
                         uint32_t key) {
  SmallVector<int64_t> digits, merged;
  for (int64_t size : shape) {
    SmallVector<int64_t> d = indexDigits(size);
    merged.push_back(llvm::product_of(d));
    llvm::append_range(digits, d);
  }
  Type ui32 = ui32Type(node);
  Value h = node.scalar(ui32, key);
  bool mixed = false;
  for (auto [axis, size] : llvm::enumerate(digits)) {
    if (size == 1)
      continue;
    SmallVector<int64_t> iotaShape(digits.size(), 1);
    iotaShape[axis] = size;
    SmallVector<APInt> positions;
    positions.reserve(size);
    for (int64_t i = 0; i < size; ++i)
      positions.emplace_back(32, i);
    Value iota = ConstantOp::create(
        node.builder(), node.loc(),
        DenseElementsAttr::get(RankedTensorType::get(iotaShape, ui32),
                               positions));
    h = fmix32(node, node.create<AddOp>(h, iota));
    mixed = true;
  }
  if (!mixed)
    h = fmix32(node, h);
  h = node.reshape(h, merged);
  if (ArrayRef<int64_t>(merged) != shape) {
    SmallVector<int64_t> zeros(shape.size(), 0), ones(shape.size(), 1);
    h = node.create<SliceOp>(h, node.builder().getDenseI64ArrayAttr(zeros),
                             node.builder().getDenseI64ArrayAttr(shape),
                             node.builder().getDenseI64ArrayAttr(ones));
  }
  return h;
}

/// The type the draws for `element` are computed in: f64 for f64, else f32.
static FloatType computeType(NodeContext &node, Type element) {
  if (element.isF64())
    return node.builder().getF64Type();
  return node.builder().getF32Type();
}

/// The random bits of a uniform draw of float type `element`: every bit
/// of the hash for f64, its significand's width (with the implicit bit)
/// otherwise, so that the largest draw, 1 - 2^-bits, is exact.
static unsigned uniformBits(Type element) {
  if (element.isF64())
    return 32;
  return std::min(24u, cast<FloatType>(element).getFPMantissaWidth());
}

/// The top `bits` bits of the ui32 hashes `h` as floats of `type` in
/// [0, 1): (h >> (32 - bits)) * 2^-bits, exact.
static Value unitInterval(NodeContext &node, Value h, FloatType type,
                          unsigned bits) {
  if (bits < 32)
    h = node.create<ShiftRightOp>(h, node.scalar(ui32Type(node), 32 - bits));
  Value whole = node.cast(h, type);
  return node.create<MulOp>(whole,
                            node.scalar(type, std::ldexp(1.0, -(int)bits)));
}

Value onnx_import::uniformDraws(NodeContext &node, RankedTensorType type) {
  Value h = hashIndices(node, type.getShape(), generatorKey(node));
  return unitInterval(node, h, computeType(node, type.getElementType()),
                      uniformBits(type.getElementType()));
}

/// Standard normal draws, one per element of `type`, in its compute type:
/// Box-Muller, sqrt(-2 log(1 - u1)) cos(2 pi u2).
static Value normalDraws(NodeContext &node, RankedTensorType type) {
  FloatType compute = computeType(node, type.getElementType());
  unsigned bits = uniformBits(compute);
  Value h1 = hashIndices(node, type.getShape(), generatorKey(node));
  Value h2 = fmix32(
      node, node.create<XorOp>(h1, node.scalar(ui32Type(node), kSecondStream)));
  Value u1 = unitInterval(node, h1, compute, bits);
  Value u2 = unitInterval(node, h2, compute, bits);
  // 1 - u1 is in (0, 1]: the logarithm is finite.
  Value log =
      node.create<LogOp>(node.create<SubOp>(node.scalar(compute, 1), u1));
  Value radius =
      node.create<SqrtOp>(node.create<MulOp>(log, node.scalar(compute, -2)));
  Value angle =
      node.create<MulOp>(u2, node.scalar(compute, 2 * llvm::numbers::pi));
  return node.create<MulOp>(radius, node.create<CosOp>(angle));
}

/// The result type of a RandomUniform/RandomNormal node (the `shape`
/// attribute) or of its *Like form (the input's shape), with the `dtype`
/// attribute's element type or, without one, the input's (Like) or f32.
static FailureOr<RankedTensorType> randomResultType(NodeContext &node,
                                                    bool like) {
  SmallVector<int64_t> shape;
  Type element = node.builder().getF32Type();
  if (like) {
    RankedTensorType input = node.inputType(0);
    shape.assign(input.getShape().begin(), input.getShape().end());
    element = input.getElementType();
  } else {
    if (!node.hasAttr("shape")) {
      node.emitError() << "the 'shape' attribute is required";
      return failure();
    }
    shape = node.intsAttr("shape");
    for (int64_t d : shape)
      if (d < 0) {
        node.emitError() << "the 'shape' attribute has a negative dimension "
                         << d;
        return failure();
      }
  }
  if (node.hasAttr("dtype")) {
    FailureOr<Type> dtype =
        node.dataType(node.intAttr("dtype", 1), "attribute 'dtype'");
    if (failed(dtype))
      return failure();
    element = *dtype;
  }
  if (!isa<Float16Type, BFloat16Type, Float32Type, Float64Type>(element)) {
    node.emitError() << "the result must be float16, bfloat16, float or "
                        "double, got "
                     << element
                     << (node.hasAttr("dtype") || !like
                             ? ""
                             : " (the input's; set 'dtype')");
    return failure();
  }
  return RankedTensorType::get(shape, element);
}

/// An empty result is an empty constant: no draws are built for it.
static bool setEmptyResult(NodeContext &node, RankedTensorType type) {
  if (type.getNumElements() != 0)
    return false;
  node.setOutput(0, ConstantOp::create(
                        node.builder(), node.loc(),
                        DenseElementsAttr::get(type, ArrayRef<Attribute>())));
  return true;
}

/// RandomUniform(Like): low + (high - low) * u.
static LogicalResult convertRandomUniform(NodeContext &node, bool like) {
  FailureOr<RankedTensorType> type = randomResultType(node, like);
  if (failed(type))
    return failure();
  double low = node.floatAttr("low", 0.0), high = node.floatAttr("high", 1.0);
  if (!(low <= high)) {
    node.emitError() << "high (" << high << ") is less than low (" << low
                     << ")";
    return failure();
  }
  if (setEmptyResult(node, *type))
    return success();
  Value u = uniformDraws(node, *type);
  auto compute = cast<FloatType>(getElementTypeOrSelf(u.getType()));
  if (high - low != 1.0)
    u = node.create<MulOp>(u, node.scalar(compute, high - low));
  if (low != 0.0)
    u = node.create<AddOp>(u, node.scalar(compute, low));
  node.setOutput(0, node.cast(u, type->getElementType()));
  return success();
}

/// RandomNormal(Like): mean + scale * z.
static LogicalResult convertRandomNormal(NodeContext &node, bool like) {
  FailureOr<RankedTensorType> type = randomResultType(node, like);
  if (failed(type))
    return failure();
  if (setEmptyResult(node, *type))
    return success();
  double mean = node.floatAttr("mean", 0.0),
         scale = node.floatAttr("scale", 1.0);
  Value z = normalDraws(node, *type);
  auto compute = cast<FloatType>(getElementTypeOrSelf(z.getType()));
  if (scale != 1.0)
    z = node.create<MulOp>(z, node.scalar(compute, scale));
  if (mean != 0.0)
    z = node.create<AddOp>(z, node.scalar(compute, mean));
  node.setOutput(0, node.cast(z, type->getElementType()));
  return success();
}

/// Bernoulli: 1 where a uniform draw is below the input's probability, as
/// `dtype` (the input's type by default).
static LogicalResult convertBernoulli(NodeContext &node) {
  Value p = node.input(0);
  RankedTensorType type = node.inputType(0);
  if (!isa<FloatType>(type.getElementType())) {
    node.emitError() << "the probabilities must be floats, got "
                     << type.getElementType();
    return failure();
  }
  Type result = type.getElementType();
  if (node.hasAttr("dtype")) {
    FailureOr<Type> dtype =
        node.dataType(node.intAttr("dtype", 1), "attribute 'dtype'");
    if (failed(dtype))
      return failure();
    result = *dtype;
  }
  if (setEmptyResult(node, RankedTensorType::get(type.getShape(), result)))
    return success();
  Value u = uniformDraws(node, type);
  Value below =
      node.create<LessOp>(u, node.cast(p, getElementTypeOrSelf(u.getType())));
  node.setOutput(0, node.cast(below, result));
  return success();
}

/// Multinomial: `sample_size` draws per batch row from the categorical
/// distribution whose unnormalized log-probabilities are the row, by the
/// Gumbel-max trick: argmax_c(x[b, c] - log(-log(u[b, s, c]))) with u
/// uniform in (0, 1).
static LogicalResult convertMultinomial(NodeContext &node) {
  RankedTensorType type = node.inputType(0);
  if (type.getRank() != 2 || !isa<FloatType>(type.getElementType())) {
    node.emitError() << "the input must be a float tensor [batch, classes], "
                        "got "
                     << type;
    return failure();
  }
  int64_t samples = node.intAttr("sample_size", 1);
  if (samples < 1) {
    node.emitError() << "sample_size must be at least 1, got " << samples;
    return failure();
  }
  FailureOr<Type> result =
      node.dataType(node.intAttr("dtype", 6), "attribute 'dtype'");
  if (failed(result))
    return failure();
  if (!result->isInteger(32) && !result->isInteger(64)) {
    node.emitError() << "dtype must be int32 or int64, got " << *result;
    return failure();
  }
  int64_t batch = type.getDimSize(0), classes = type.getDimSize(1);
  if (classes == 0) {
    node.emitError() << "the input has no classes to draw from";
    return failure();
  }
  if (setEmptyResult(node, RankedTensorType::get({batch, samples}, *result)))
    return success();
  FloatType compute = computeType(node, type.getElementType());
  // (2k + 1) 2^-(bits + 1) for a k of `bits` bits: strictly inside (0, 1).
  unsigned bits = uniformBits(compute) - 1;
  Value h = hashIndices(node, {batch, samples, classes}, generatorKey(node));
  Value u = unitInterval(node, h, compute, bits);
  u = node.create<AddOp>(u,
                         node.scalar(compute, std::ldexp(1.0, -(int)bits - 1)));
  Value gumbel = node.create<NegOp>(
      node.create<LogOp>(node.create<NegOp>(node.create<LogOp>(u))));
  Value logits =
      node.reshape(node.cast(node.input(0), compute), {batch, 1, classes});
  OpBuilder &b = node.builder();
  Value index = node.create<ArgMaxOp>(
      node.create<AddOp>(logits, gumbel), b.getI64IntegerAttr(2),
      b.getBoolAttr(false), b.getBoolAttr(false));
  node.setOutput(0, node.cast(index, *result));
  return success();
}

void onnx_import::registerRandomPatterns(PatternRegistry &r) {
  r.add("RandomUniform", 7,
        [](NodeContext &n) { return convertRandomUniform(n, /*like=*/false); });
  r.add("RandomUniformLike", 7,
        [](NodeContext &n) { return convertRandomUniform(n, /*like=*/true); });
  r.add("RandomNormal", 7,
        [](NodeContext &n) { return convertRandomNormal(n, /*like=*/false); });
  r.add("RandomNormalLike", 7,
        [](NodeContext &n) { return convertRandomNormal(n, /*like=*/true); });
  r.add("Bernoulli", 15, convertBernoulli);
  r.add("Multinomial", 7, convertMultinomial);
}
