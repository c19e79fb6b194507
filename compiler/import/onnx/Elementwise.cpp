//===- Elementwise.cpp - ONNX elementwise ops -> kiln ---------------------===//
//
// Broadcasting binary ops, comparisons and logic, BitShift, variadic
// Max/Min/Sum/Mean, Where, unary math, IsNaN and IsInf, and parametric
// activations (Clip, LeakyRelu, Elu, Celu, HardSigmoid, HardSwish, PRelu,
// Gelu, ThresholdedRelu, Shrink, Selu, Softsign), Cast, Identity and Dropout.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/IR/TypeUtilities.h"

#include <cstdio>
#include <limits>

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// Emits `OpTy(lhs, rhs)` after checking that the element types agree.
template <typename OpTy>
static FailureOr<Value> binary(NodeContext &node, Value lhs, Value rhs) {
  Type l = cast<RankedTensorType>(lhs.getType()).getElementType();
  Type r = cast<RankedTensorType>(rhs.getType()).getElementType();
  if (l != r) {
    node.emitError() << "operand element types differ: " << l << " and " << r;
    return failure();
  }
  auto shape = broadcastShapes(cast<RankedTensorType>(lhs.getType()).getShape(),
                               cast<RankedTensorType>(rhs.getType()).getShape());
  if (failed(shape)) {
    node.emitError() << "operand shapes " << lhs.getType() << " and "
                     << rhs.getType() << " do not broadcast";
    return failure();
  }
  return node.create<OpTy>(lhs, rhs);
}

template <typename OpTy>
static LogicalResult convertBinary(NodeContext &node) {
  FailureOr<Value> result = binary<OpTy>(node, node.input(0), node.input(1));
  if (failed(result))
    return failure();
  node.setOutput(0, *result);
  return success();
}

/// Max, Min, Sum and Mean take one or more inputs.
template <typename OpTy>
static LogicalResult convertVariadic(NodeContext &node, bool mean = false) {
  Value acc = node.input(0);
  for (unsigned i = 1; i < node.numInputs(); ++i) {
    FailureOr<Value> next = binary<OpTy>(node, acc, node.input(i));
    if (failed(next))
      return failure();
    acc = *next;
  }
  if (mean && node.numInputs() > 1) {
    Type element = cast<RankedTensorType>(acc.getType()).getElementType();
    acc = node.create<DivOp>(acc, node.scalar(element, node.numInputs()));
  }
  node.setOutput(0, acc);
  return success();
}

template <typename OpTy>
static LogicalResult convertUnary(NodeContext &node) {
  node.setOutput(0, node.create<OpTy>(node.input(0)));
  return success();
}

static LogicalResult convertPow(NodeContext &node) {
  // ONNX lets the exponent have another type; kiln.pow takes the base's.
  Value base = node.input(0);
  Value exponent = node.cast(
      node.input(1), cast<RankedTensorType>(base.getType()).getElementType());
  FailureOr<Value> result = binary<PowOp>(node, base, exponent);
  if (failed(result))
    return failure();
  node.setOutput(0, *result);
  return success();
}

static LogicalResult convertWhere(NodeContext &node) {
  Value x = node.input(1), y = node.input(2);
  if (getElementTypeOrSelf(x.getType()) != getElementTypeOrSelf(y.getType())) {
    node.emitError() << "value element types differ: " << x.getType()
                     << " and " << y.getType();
    return failure();
  }
  node.setOutput(0, node.create<SelectOp>(node.input(0), x, y));
  return success();
}

static LogicalResult convertIdentity(NodeContext &node) {
  node.setOutput(0, node.input(0));
  return success();
}

/// Dropout. Inference (before opset 12, without a training_mode input, or
/// with a false one) and training with ratio 0 keep every element: the
/// output is the input and the mask all true. Training mode keeps an element
/// where a uniform draw (Random.cpp) is at least the ratio, as ONNX's
/// reference does: output = x * mask / (1 - ratio). A constant ratio must be
/// in [0, 1) (ratio 1 would divide by zero); a computed one is used as it
/// is.
static LogicalResult convertDropout(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  bool training = false;
  if (node.opset() >= 12 && node.hasInput(2)) {
    DenseElementsAttr mode = node.constantInput(2);
    if (!mode) {
      node.notConstant(2, "training_mode", "a boolean constant");
      return failure();
    }
    if (!mode.getElementType().isInteger(1) || mode.getNumElements() != 1) {
      node.emitError() << "training_mode must be one boolean, got "
                       << mode.getType();
      return failure();
    }
    training = *mode.getValues<bool>().begin();
  }
  double ratio = 0.5;
  Value computedRatio;
  if (training && node.hasInput(1)) {
    if (node.inputType(1).getNumElements() != 1) {
      node.emitError() << "ratio must be a scalar, got " << node.inputType(1);
      return failure();
    }
    if (node.constantInput(1)) {
      auto ratios = node.constantFloats(1, "ratio");
      if (failed(ratios))
        return failure();
      ratio = ratios->front();
    } else {
      computedRatio = node.reshape(node.input(1), {});
    }
  }
  if (training && !computedRatio && !(ratio >= 0 && ratio < 1)) {
    node.emitError() << "ratio must be in [0, 1), got " << ratio;
    return failure();
  }
  auto maskType =
      RankedTensorType::get(type.getShape(), node.builder().getI1Type());
  if (!training || (!computedRatio && ratio == 0)) {
    node.setOutput(0, input);
    if (node.hasOutput(1))
      node.setOutput(1, node.splat(maskType, 1));
    return success();
  }
  Type element = type.getElementType();
  if (!isa<FloatType>(element)) {
    node.emitError() << "training-mode Dropout takes a float tensor, got "
                     << element;
    return failure();
  }
  Value u = uniformDraws(node, type);
  Type drawType = getElementTypeOrSelf(u.getType());
  Value keep = node.create<GreaterEqualOp>(
      u, computedRatio ? node.cast(computedRatio, drawType)
                       : node.scalar(drawType, ratio));
  Value scale;
  if (computedRatio) {
    Value one = node.scalar(element, 1);
    scale = node.create<ReciprocalOp>(
        node.create<SubOp>(one, node.cast(computedRatio, element)));
  } else {
    scale = node.scalar(element, 1 / (1 - ratio));
  }
  Value kept = node.create<MulOp>(input, node.cast(keep, element));
  node.setOutput(0, node.create<MulOp>(kept, scale));
  node.setOutput(1, keep);
  return success();
}

static LogicalResult convertClip(NodeContext &node) {
  Value input = node.input(0);
  double lowest = -std::numeric_limits<double>::infinity();
  double highest = std::numeric_limits<double>::infinity();
  if (node.opset() < 11) {
    double lo = node.floatAttr("min", lowest), hi = node.floatAttr("max", highest);
    node.setOutput(0, node.create<ClipOp>(input, node.builder().getF64FloatAttr(lo),
                                          node.builder().getF64FloatAttr(hi)));
    return success();
  }
  // Since opset 11 the bounds are optional inputs; constant ones become
  // attributes, computed ones max/min ops.
  double bounds[2] = {lowest, highest};
  Value computed[2];
  for (unsigned i = 0; i < 2; ++i) {
    if (!node.hasInput(i + 1))
      continue;
    if (DenseElementsAttr c = node.constantInput(i + 1)) {
      FailureOr<SmallVector<double>> v =
          node.constantFloats(i + 1, i ? "max" : "min");
      if (failed(v) || v->size() != 1) {
        node.emitError() << (i ? "max" : "min") << " must be a scalar";
        return failure();
      }
      bounds[i] = (*v)[0];
    } else {
      computed[i] = node.input(i + 1);
    }
  }
  if (bounds[0] > bounds[1]) {
    node.emitError() << "min " << bounds[0] << " is greater than max "
                     << bounds[1];
    return failure();
  }
  Value result = input;
  if (bounds[0] != lowest || bounds[1] != highest)
    result = node.create<ClipOp>(result, node.builder().getF64FloatAttr(bounds[0]),
                                 node.builder().getF64FloatAttr(bounds[1]));
  if (computed[0]) {
    FailureOr<Value> v = binary<MaxOp>(node, result, computed[0]);
    if (failed(v))
      return failure();
    result = *v;
  }
  if (computed[1]) {
    FailureOr<Value> v = binary<MinOp>(node, result, computed[1]);
    if (failed(v))
      return failure();
    result = *v;
  }
  node.setOutput(0, result);
  return success();
}

static LogicalResult convertLeakyRelu(NodeContext &node) {
  node.setOutput(0, node.create<LeakyReluOp>(
                        node.input(0), node.builder().getF64FloatAttr(
                                           node.floatAttr("alpha", 0.01))));
  return success();
}

static LogicalResult convertElu(NodeContext &node) {
  node.setOutput(0, node.create<EluOp>(node.input(0),
                                       node.builder().getF64FloatAttr(
                                           node.floatAttr("alpha", 1.0))));
  return success();
}

static LogicalResult convertHardSigmoid(NodeContext &node) {
  OpBuilder &b = node.builder();
  node.setOutput(0, node.create<HardSigmoidOp>(
                        node.input(0),
                        b.getF64FloatAttr(node.floatAttr("alpha", 0.2)),
                        b.getF64FloatAttr(node.floatAttr("beta", 0.5))));
  return success();
}

static LogicalResult convertHardSwish(NodeContext &node) {
  // x * HardSigmoid(x) with alpha = 1/6, beta = 0.5.
  OpBuilder &b = node.builder();
  Value x = node.input(0);
  Value gate = node.create<HardSigmoidOp>(x, b.getF64FloatAttr(1.0 / 6.0),
                                          b.getF64FloatAttr(0.5));
  node.setOutput(0, node.create<MulOp>(x, gate));
  return success();
}

static LogicalResult convertSelu(NodeContext &node) {
  // gamma * Elu(x, alpha).
  OpBuilder &b = node.builder();
  Value x = node.input(0);
  Type element = getElementTypeOrSelf(x.getType());
  Value elu = node.create<EluOp>(
      x, b.getF64FloatAttr(node.floatAttr("alpha", 1.67326319217681884765625)));
  node.setOutput(0, node.create<MulOp>(
                        elu, node.scalar(element, node.floatAttr(
                                                      "gamma",
                                                      1.05070102214813232421875))));
  return success();
}

static LogicalResult convertSoftsign(NodeContext &node) {
  // x / (1 + |x|).
  Value x = node.input(0);
  Type element = getElementTypeOrSelf(x.getType());
  Value denominator =
      node.create<AddOp>(node.create<AbsOp>(x), node.scalar(element, 1));
  node.setOutput(0, node.create<DivOp>(x, denominator));
  return success();
}

static LogicalResult convertPRelu(NodeContext &node) {
  // x < 0 ? slope * x : x, with the slope broadcast against x.
  Value x = node.input(0);
  Value slope = node.input(1);
  Type element = getElementTypeOrSelf(x.getType());
  // Before opset 7 a vector slope was per channel (dimension 1); models
  // converted from opset 6 keep that form, which does not broadcast.
  ArrayRef<int64_t> shape = cast<RankedTensorType>(x.getType()).getShape();
  ArrayRef<int64_t> slopeShape = node.inputType(1).getShape();
  if (shape.size() >= 3 && slopeShape.size() == 1 &&
      slopeShape[0] == shape[1] && slopeShape[0] != shape.back() &&
      slopeShape[0] != 1) {
    SmallVector<int64_t> perChannel(shape.size() - 1, 1);
    perChannel[0] = shape[1];
    slope = node.reshape(slope, perChannel);
  }
  FailureOr<Value> scaled = binary<MulOp>(node, x, slope);
  if (failed(scaled))
    return failure();
  Value negative = node.create<LessOp>(x, node.scalar(element, 0));
  node.setOutput(0, node.create<SelectOp>(negative, *scaled, x));
  return success();
}

static LogicalResult convertGelu(NodeContext &node) {
  std::string approximate = node.stringAttr("approximate", "none");
  if (approximate != "none" && approximate != "tanh") {
    node.emitError() << "approximate must be \"none\" or \"tanh\", got \""
                     << approximate << "\"";
    return failure();
  }
  node.setOutput(0, node.create<GeluOp>(
                        node.input(0), node.builder().getStringAttr(approximate)));
  return success();
}

static LogicalResult convertBitShift(NodeContext &node) {
  std::string direction = node.stringAttr("direction", "");
  Type element = getElementTypeOrSelf(node.input(0).getType());
  if (!element.isUnsignedInteger()) {
    node.emitError() << "BitShift takes unsigned integers, got " << element;
    return failure();
  }
  if (direction == "LEFT")
    return convertBinary<ShiftLeftOp>(node);
  if (direction == "RIGHT")
    return convertBinary<ShiftRightOp>(node);
  node.emitError() << "direction must be \"LEFT\" or \"RIGHT\", got \""
                   << direction << "\"";
  return failure();
}

/// IsNaN: `not (x == x)`, one fused kernel (the comparison's only user).
static LogicalResult convertIsNaN(NodeContext &node) {
  Value x = node.input(0);
  node.setOutput(0, node.create<NotOp>(node.create<EqualOp>(x, x)));
  return success();
}

/// IsInf: `x == +inf`, `x == -inf`, or `|x| == inf` when both signs count.
static LogicalResult convertIsInf(NodeContext &node) {
  Value x = node.input(0);
  Type element = getElementTypeOrSelf(x.getType());
  bool positive = node.intAttr("detect_positive", 1) != 0;
  bool negative = node.intAttr("detect_negative", 1) != 0;
  double inf = std::numeric_limits<double>::infinity();
  if (!positive && !negative) {
    // Nothing is detected: false everywhere (x < x is false for every x).
    node.setOutput(0, node.create<LessOp>(x, x));
    return success();
  }
  Value v = positive && negative ? node.create<AbsOp>(x) : x;
  node.setOutput(0, node.create<EqualOp>(
                        v, node.scalar(element, negative && !positive ? -inf : inf)));
  return success();
}

/// ThresholdedRelu: `x > alpha ? x : 0`.
static LogicalResult convertThresholdedRelu(NodeContext &node) {
  Value x = node.input(0);
  Type element = getElementTypeOrSelf(x.getType());
  Value above = node.create<GreaterOp>(
      x, node.scalar(element, node.floatAttr("alpha", 1.0)));
  node.setOutput(0, node.create<SelectOp>(above, x, node.scalar(element, 0)));
  return success();
}

/// Celu: `alpha * elu(x / alpha)` with Elu's alpha of 1, which is
/// `max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`.
static LogicalResult convertCelu(NodeContext &node) {
  Value x = node.input(0);
  Type element = getElementTypeOrSelf(x.getType());
  double alpha = node.floatAttr("alpha", 1.0);
  if (alpha == 0) {
    node.emitError() << "alpha must not be 0";
    return failure();
  }
  OpBuilder &b = node.builder();
  if (alpha == 1.0) {
    node.setOutput(0, node.create<EluOp>(x, b.getF64FloatAttr(1.0)));
    return success();
  }
  Value scaled = node.create<DivOp>(x, node.scalar(element, alpha));
  Value elu = node.create<EluOp>(scaled, b.getF64FloatAttr(1.0));
  node.setOutput(0, node.create<MulOp>(elu, node.scalar(element, alpha)));
  return success();
}

/// Shrink: `x < -lambd ? x + bias : x > lambd ? x - bias : 0`. The two
/// common forms are chains that fuse into one kernel: hard shrink
/// (bias 0) as `|x| > lambd ? x : 0`, soft shrink (bias = lambd) as
/// `x - clip(x, -lambd, lambd)`.
static LogicalResult convertShrink(NodeContext &node) {
  Value x = node.input(0);
  Type element = getElementTypeOrSelf(x.getType());
  double lambd = node.floatAttr("lambd", 0.5), bias = node.floatAttr("bias", 0.0);
  if (lambd < 0) {
    node.emitError() << "lambd must not be negative, got " << lambd;
    return failure();
  }
  OpBuilder &b = node.builder();
  Value zero = node.scalar(element, 0);
  if (bias == 0) {
    Value magnitude = isa<FloatType>(element) ? node.create<AbsOp>(x) : x;
    Value outside = isa<FloatType>(element)
                        ? node.create<GreaterOp>(magnitude, node.scalar(element, lambd))
                        : node.create<OrOp>(
                              node.create<GreaterOp>(x, node.scalar(element, lambd)),
                              node.create<LessOp>(x, node.scalar(element, -lambd)));
    node.setOutput(0, node.create<SelectOp>(outside, x, zero));
    return success();
  }
  if (bias == lambd && isa<FloatType>(element)) {
    Value clipped = node.create<ClipOp>(x, b.getF64FloatAttr(-lambd),
                                        b.getF64FloatAttr(lambd));
    node.setOutput(0, node.create<SubOp>(x, clipped));
    return success();
  }
  Value below = node.create<LessOp>(x, node.scalar(element, -lambd));
  Value above = node.create<GreaterOp>(x, node.scalar(element, lambd));
  Value shiftedUp = node.create<AddOp>(x, node.scalar(element, bias));
  Value shiftedDown = node.create<SubOp>(x, node.scalar(element, bias));
  Value inner = node.create<SelectOp>(above, shiftedDown, zero);
  node.setOutput(0, node.create<SelectOp>(below, shiftedUp, inner));
  return success();
}

static LogicalResult convertCast(NodeContext &node, Type to) {
  node.setOutput(0, node.cast(node.input(0), to));
  return success();
}

//===----------------------------------------------------------------------===//
// com.microsoft RotaryEmbedding
//===----------------------------------------------------------------------===//

/// ONNX Runtime's RotaryEmbedding (what its transformer optimizer and model
/// builders leave in LLaMA-style models): input `x` as [B, N, S, H] or [B,
/// S, N H], `position_ids` [B, S] (or [1]: the first position, the others
/// following), half-width caches `cos_cache` and `sin_cache` [max_positions,
/// H / 2]. The caches are gathered by position and repeated to width H
/// (twice concatenated, or each element twice when `interleaved`): then it
/// is kiln.rotary_embedding. A partial rotation (rotary_embedding_dim under
/// H), a scale other than 1 and packed batching are errors.
static LogicalResult convertRotaryEmbeddingMs(NodeContext &node) {
  if (node.numInputs() != 4 || node.numOutputs() != 1) {
    node.emitError() << "expects 4 inputs (input, position_ids, cos_cache, sin_cache) and 1 "
                     << "output, got " << node.numInputs() << " and " << node.numOutputs();
    return failure();
  }
  for (unsigned i = 0; i < 4; ++i)
    if (!node.hasInput(i)) {
      node.emitError() << "input " << i << " is required";
      return failure();
    }
  Value x = node.input(0);
  RankedTensorType type = node.inputType(0);
  if (!isa<FloatType>(type.getElementType()) || !type.hasStaticShape() ||
      (type.getRank() != 3 && type.getRank() != 4)) {
    node.emitError() << "input must be a float tensor of rank 3 or 4 with a static shape, got "
                     << type;
    return failure();
  }
  if (node.intAttr("is_packed_batching", 0) != 0) {
    node.emitError() << "packed batching (is_packed_batching = 1) is not supported";
    return failure();
  }
  if (node.floatAttr("scale", 1.0) != 1.0) {
    char scale[32];
    std::snprintf(scale, sizeof scale, "%g", node.floatAttr("scale", 1.0));
    node.emitError() << "scale " << scale << " is not supported (only 1)";
    return failure();
  }
  bool interleaved = node.intAttr("interleaved", 0) != 0;
  RankedTensorType cosType = node.inputType(2), sinType = node.inputType(3);
  if (cosType != sinType || cosType.getRank() != 2 || !cosType.hasStaticShape() ||
      cosType.getElementType() != type.getElementType()) {
    node.emitError() << "cos_cache and sin_cache must both be [max_positions, H / 2] of the "
                     << "input's element type, got " << cosType << " and " << sinType;
    return failure();
  }
  int64_t half = cosType.getDimSize(1);
  if (half < 1 || cosType.getDimSize(0) < 1) {
    node.emitError() << "cos_cache and sin_cache must have at least one position and one "
                     << "column, got " << cosType;
    return failure();
  }
  if (node.intAttr("num_heads", 0) < 0) {
    node.emitError() << "num_heads must not be negative, got " << node.intAttr("num_heads", 0);
    return failure();
  }
  bool split = type.getRank() == 3; // [B, S, N H]
  int64_t b = type.getDimSize(0), s = type.getDimSize(split ? 1 : 2);
  int64_t hidden = type.getShape().back();
  int64_t heads = !split                          ? type.getDimSize(1)
                  : node.intAttr("num_heads", 0) ? node.intAttr("num_heads", 0)
                                                 : hidden / (2 * half);
  if (heads <= 0 || (split && hidden % heads != 0)) {
    node.emitError() << "num_heads " << heads << " does not divide the hidden size of " << type;
    return failure();
  }
  int64_t headSize = split ? hidden / heads : hidden;
  int64_t rotary = node.intAttr("rotary_embedding_dim", 0);
  if (2 * half != headSize || (rotary != 0 && rotary != headSize)) {
    node.emitError() << "a partial rotation (rotary dimension " << (rotary ? rotary : 2 * half)
                     << " of head size " << headSize << ") is not supported";
    return failure();
  }
  // Positions [B or 1, S].
  RankedTensorType posType = node.inputType(1);
  if (!isa<IntegerType>(posType.getElementType()) || !posType.hasStaticShape()) {
    node.emitError() << "position_ids must be an integer tensor with a static shape, got "
                     << posType;
    return failure();
  }
  Value positions = node.input(1);
  int64_t pb = b;
  if (posType.getRank() == 1 && posType.getDimSize(0) == 1) {
    // The first position: S consecutive ones.
    SmallVector<int64_t> steps(s);
    for (int64_t i = 0; i < s; ++i)
      steps[i] = i;
    auto stepType = RankedTensorType::get({1, s}, node.builder().getI64Type());
    Value offsets =
        node.cast(node.create<ConstantOp>(DenseElementsAttr::get(stepType, ArrayRef<int64_t>(steps))),
                  posType.getElementType());
    positions = node.create<AddOp>(node.reshape(positions, {1, 1}), offsets);
    pb = 1;
  } else if (posType.getRank() != 2 || posType.getDimSize(1) != s ||
             (posType.getDimSize(0) != b && posType.getDimSize(0) != 1)) {
    node.emitError() << "position_ids must be [" << b << ", " << s << "] or [1], got "
                     << posType;
    return failure();
  } else {
    pb = posType.getDimSize(0);
  }
  // Each cache gathered, [pb, S, H / 2], and repeated to [pb, S, H].
  auto widen = [&](Value cache) -> Value {
    Value rows = node.create<GatherOp>(cache, positions, int64_t(0));
    if (!interleaved)
      return node.create<ConcatOp>(ValueRange{rows, rows}, int64_t(2));
    Value column = node.reshape(rows, {pb, s, half, 1});
    Value pairs = node.create<ConcatOp>(ValueRange{column, column}, int64_t(3));
    return node.reshape(pairs, {pb, s, headSize});
  };
  Value cos = widen(node.input(2)), sin = widen(node.input(3));
  MLIRContext *ctx = node.context();
  Value y;
  if (!split) {
    // [B, N, S, H]: the tables broadcast along the heads.
    cos = node.reshape(cos, {pb, 1, s, headSize});
    sin = node.reshape(sin, {pb, 1, s, headSize});
    y = node.create<RotaryEmbeddingOp>(type, x, cos, sin, BoolAttr::get(ctx, interleaved));
  } else {
    auto heads4 = RankedTensorType::get({b, s, heads, headSize}, type.getElementType());
    cos = node.reshape(cos, {pb, s, 1, headSize});
    sin = node.reshape(sin, {pb, s, 1, headSize});
    Value rotated = node.create<RotaryEmbeddingOp>(heads4, node.reshape(x, heads4.getShape()), cos,
                                                   sin, BoolAttr::get(ctx, interleaved));
    y = node.reshape(rotated, type.getShape());
  }
  node.setOutput(0, y);
  return success();
}

void onnx_import::registerElementwisePatterns(PatternRegistry &r) {
  r.add("Add", 7, convertBinary<AddOp>);
  r.add("Sub", 7, convertBinary<SubOp>);
  r.add("Mul", 7, convertBinary<MulOp>);
  r.add("Div", 7, convertBinary<DivOp>);
  r.add("Pow", 7, convertPow);
  r.add("Mod", 10, [](NodeContext &node) -> LogicalResult {
    bool fmod = node.intAttr("fmod", 0) != 0;
    Type element = getElementTypeOrSelf(node.input(0).getType());
    if (!fmod && isa<FloatType>(element)) {
      node.emitError() << "floating-point Mod requires fmod = 1";
      return failure();
    }
    if (!fmod || isa<FloatType>(element) || element.isUnsignedInteger())
      return convertBinary<ModOp>(node);
    // Integer fmod takes the sign of the dividend: a - trunc(a / b) * b
    // (kiln.div truncates integers; kiln.mod takes the divisor's sign).
    FailureOr<Value> quotient =
        binary<DivOp>(node, node.input(0), node.input(1));
    if (failed(quotient))
      return failure();
    Value product = node.create<MulOp>(*quotient, node.input(1));
    node.setOutput(0, node.create<SubOp>(node.input(0), product));
    return success();
  });
  r.add("And", 7, convertBinary<AndOp>);
  r.add("Or", 7, convertBinary<OrOp>);
  r.add("Xor", 7, convertBinary<XorOp>);
  r.add("Equal", 7, convertBinary<EqualOp>);
  r.add("Less", 7, convertBinary<LessOp>);
  r.add("LessOrEqual", 12, convertBinary<LessEqualOp>);
  r.add("Greater", 7, convertBinary<GreaterOp>);
  r.add("GreaterOrEqual", 12, convertBinary<GreaterEqualOp>);
  r.add("Max", 7, [](NodeContext &n) { return convertVariadic<MaxOp>(n); });
  r.add("Min", 7, [](NodeContext &n) { return convertVariadic<MinOp>(n); });
  r.add("Sum", 7, [](NodeContext &n) { return convertVariadic<AddOp>(n); });
  r.add("Mean", 7,
        [](NodeContext &n) { return convertVariadic<AddOp>(n, /*mean=*/true); });
  r.add("Where", 9, convertWhere);

  r.add("com.microsoft.RotaryEmbedding", 1, convertRotaryEmbeddingMs);
  r.add("Abs", 7, convertUnary<AbsOp>);
  r.add("Neg", 7, convertUnary<NegOp>);
  r.add("Sign", 9, convertUnary<SignOp>);
  r.add("Relu", 7, convertUnary<ReluOp>);
  r.add("Sigmoid", 7, convertUnary<SigmoidOp>);
  r.add("Tanh", 7, convertUnary<TanhOp>);
  r.add("Exp", 7, convertUnary<ExpOp>);
  r.add("Log", 7, convertUnary<LogOp>);
  r.add("Sqrt", 7, convertUnary<SqrtOp>);
  r.add("Reciprocal", 7, convertUnary<ReciprocalOp>);
  r.add("Erf", 9, convertUnary<ErfOp>);
  r.add("Sin", 7, convertUnary<SinOp>);
  r.add("Cos", 7, convertUnary<CosOp>);
  r.add("Tan", 7, convertUnary<TanOp>);
  r.add("Asin", 7, convertUnary<AsinOp>);
  r.add("Acos", 7, convertUnary<AcosOp>);
  r.add("Atan", 7, convertUnary<AtanOp>);
  r.add("Sinh", 9, convertUnary<SinhOp>);
  r.add("Cosh", 9, convertUnary<CoshOp>);
  r.add("Asinh", 9, convertUnary<AsinhOp>);
  r.add("Acosh", 9, convertUnary<AcoshOp>);
  r.add("Atanh", 9, convertUnary<AtanhOp>);
  r.add("IsNaN", 9, convertIsNaN);
  r.add("IsInf", 10, convertIsInf);
  r.add("Floor", 7, convertUnary<FloorOp>);
  r.add("Ceil", 7, convertUnary<CeilOp>);
  r.add("Round", 11, convertUnary<RoundOp>);
  r.add("Softplus", 7, convertUnary<SoftplusOp>);
  r.add("Not", 7, convertUnary<NotOp>);
  r.add("Identity", 7, convertIdentity);
  r.add("Dropout", 7, convertDropout);

  r.add("Clip", 7, convertClip);
  r.add("LeakyRelu", 7, convertLeakyRelu);
  r.add("Elu", 7, convertElu);
  r.add("HardSigmoid", 7, convertHardSigmoid);
  r.add("HardSwish", 14, convertHardSwish);
  r.add("Selu", 7, convertSelu);
  r.add("Softsign", 7, convertSoftsign);
  r.add("PRelu", 7, convertPRelu);
  r.add("Gelu", 20, convertGelu);
  r.add("ThresholdedRelu", 10, convertThresholdedRelu);
  r.add("Celu", 12, convertCelu);
  r.add("Shrink", 9, convertShrink);
  r.add("BitShift", 11, convertBitShift);

  r.add("Cast", 7, [](NodeContext &node) -> LogicalResult {
    FailureOr<Type> to = node.dataType(node.intAttr("to", 0), "attribute 'to'");
    return failed(to) ? failure() : convertCast(node, *to);
  });
  r.add("CastLike", 15, [](NodeContext &node) {
    return convertCast(node, getElementTypeOrSelf(node.input(1).getType()));
  });
}
