//===- Quantization.cpp - ONNX (de)quantization ops -> kiln ---------------===//
//
// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear, the linear
// quantization of pre-quantized and dynamically quantized models, as
// kiln.quantize and kiln.dequantize (which the graph passes fold into integer
// contractions or expand into elementwise ops):
//   quantize:   q = saturate(round_half_even(x / scale) + zero_point)
//   dequantize: x = (q - zero_point) * scale
// with a per-tensor scale, or a per-axis one (a vector along `axis`).
// DynamicQuantizeLinear computes a uint8 scale and zero point from the
// range of its input (including 0) at run time.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/Sequence.h"

#include <cmath>

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// The integer types kiln.quantize and kiln.dequantize take (ONNX's int4,
/// uint4, int8, uint8, int16, uint16, and int32 for dequantized biases).
static bool isQuantizedType(Type type) {
  auto integer = dyn_cast<IntegerType>(type);
  if (!integer || integer.isSigned())
    return false;
  unsigned width = integer.getWidth();
  return width == 4 || width == 8 || width == 16 || (width == 32 && integer.isSignless());
}

/// `param` (a scale or zero point) shaped to broadcast against an input of
/// `shape`: a scalar or one-element tensor as a scalar, a vector along the
/// node's `axis` (default 1, since opset 13). Null after a diagnostic when
/// neither.
static Value broadcastParameter(NodeContext &node, Value param,
                                ArrayRef<int64_t> shape, StringRef what) {
  auto type = cast<RankedTensorType>(param.getType());
  if (type.getNumElements() == 1)
    return node.reshape(param, {});
  auto axis = node.normalizeAxis(
      node.opset() >= 13 ? node.intAttr("axis", 1) : 1, shape.size());
  if (failed(axis))
    return Value();
  if (type.getRank() == 1 && type.getShape()[0] == shape[*axis]) {
    SmallVector<int64_t> perAxis(shape.size(), 1);
    perAxis[*axis] = shape[*axis];
    return node.reshape(param, perAxis);
  }
  node.emitError() << what << " " << type
                   << " is neither one value nor a vector of "
                   << shape[*axis] << " along axis " << *axis;
  return Value();
}

Value onnx_import::quantizeLinear(NodeContext &node, Value x, Value scale,
                                  Value zeroPoint, Type quantized) {
  auto type = cast<RankedTensorType>(x.getType()).clone(quantized);
  return QuantizeOp::create(node.builder(), node.loc(), type, x, scale, zeroPoint);
}

/// The node's floating-point input 0, or null after a diagnostic.
static Value floatInput(NodeContext &node) {
  Value x = node.input(0);
  if (!isa<FloatType>(getElementTypeOrSelf(x.getType()))) {
    node.emitError() << "expected a floating-point input, got " << x.getType();
    return Value();
  }
  return x;
}

static LogicalResult convertQuantizeLinear(NodeContext &node) {
  Value x = floatInput(node);
  if (!x)
    return failure();
  auto type = cast<RankedTensorType>(x.getType());
  Type element = type.getElementType();
  if (node.intAttr("block_size", 0) != 0) {
    node.emitError() << "blocked quantization (block_size) is not supported";
    return failure();
  }
  Type quantized = IntegerType::get(node.context(), 8, IntegerType::Unsigned);
  if (node.hasInput(2))
    quantized = node.inputType(2).getElementType();
  if (!isQuantizedType(quantized) || quantized.isInteger(32)) {
    node.emitError() << "quantizing to " << quantized
                     << " is not supported (integer types only)";
    return failure();
  }
  Value scale = broadcastParameter(node, node.input(1), type.getShape(),
                                   "y_scale");
  if (!scale)
    return failure();
  if (getElementTypeOrSelf(scale.getType()) != element)
    scale = node.cast(scale, element);
  Value zeroPoint;
  if (node.hasInput(2)) {
    zeroPoint = broadcastParameter(node, node.input(2), type.getShape(),
                                   "y_zero_point");
    if (!zeroPoint)
      return failure();
  }
  node.setOutput(0, quantizeLinear(node, x, scale, zeroPoint, quantized));
  return success();
}

/// Blocked DequantizeLinear (opset 21): x_scale and x_zero_point have x's
/// shape with ceil(D / block_size) along `axis` (D = x's size there); each
/// applies to block_size consecutive elements along it. When the blocks
/// divide D, x is viewed with the axis split into [D / B, B] and the
/// parameters with a 1 after it, so that they broadcast (the form
/// kiln-fold-quantized-ops makes a kiln.matmul_int4 of); otherwise the
/// parameters are repeated along the axis and cut to D.
static LogicalResult convertBlockedDequantizeLinear(NodeContext &node) {
  Value x = node.input(0);
  auto type = cast<RankedTensorType>(x.getType());
  int64_t block = node.intAttr("block_size", 0);
  if (block < 0) {
    node.emitError() << "block_size must be positive, got " << block;
    return failure();
  }
  FailureOr<int64_t> axis = node.normalizeAxis(node.intAttr("axis", 1), type.getRank());
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> shape = type.getShape();
  int64_t d = shape[*axis], groups = llvm::divideCeil(d, block);
  SmallVector<int64_t> paramShape(shape);
  paramShape[*axis] = groups;
  auto check = [&](unsigned i, StringRef what) {
    auto t = node.inputType(i);
    if (t.getShape() == ArrayRef<int64_t>(paramShape))
      return true;
    node.emitError() << what << " " << t << " must have x's shape with ceil(" << d << " / "
                     << block << ") = " << groups << " along axis " << *axis << " (block_size "
                     << block << "), not " << t.getShape().size() << "-d ["
                     << llvm::make_range(t.getShape().begin(), t.getShape().end()) << "]";
    return false;
  };
  if (!check(1, "x_scale") || (node.hasInput(2) && !check(2, "x_zero_point")))
    return failure();
  Type element = getElementTypeOrSelf(node.inputType(1));
  if (!isa<FloatType>(element)) {
    node.emitError() << "x_scale must be a floating-point tensor, got " << node.inputType(1);
    return failure();
  }
  if (node.hasInput(2) && node.inputType(2).getElementType() != type.getElementType()) {
    node.emitError() << "x_zero_point " << node.inputType(2) << " differs in type from x "
                     << type;
    return failure();
  }
  Value scale = node.input(1);
  Value zeroPoint = node.hasInput(2) ? node.input(2) : Value();
  SmallVector<int64_t> split(shape.begin(), shape.begin() + *axis);
  split.push_back(groups);
  split.push_back(block);
  split.append(shape.begin() + *axis + 1, shape.end());
  SmallVector<int64_t> perBlock(split);
  perBlock[*axis + 1] = 1;
  auto spread = [&](Value param) -> Value {
    if (!param)
      return param;
    return node.reshape(param, perBlock);
  };
  if (d % block == 0) {
    Value q = node.reshape(x, split);
    auto splitType = RankedTensorType::get(split, element);
    Value y = DequantizeOp::create(node.builder(), node.loc(), splitType, q, spread(scale),
                                   spread(zeroPoint));
    node.setOutput(0, node.reshape(y, shape));
    return success();
  }
  // Ragged last block: each parameter repeated B times along the axis, cut
  // to D.
  SmallVector<int64_t> merged(paramShape);
  merged[*axis] = groups * block;
  OpBuilder &b = node.builder();
  auto repeat = [&](Value param) -> Value {
    if (!param)
      return param;
    auto t = cast<RankedTensorType>(param.getType());
    Value wide = node.create<ExpandOp>(RankedTensorType::get(split, t.getElementType()),
                                       spread(param));
    wide = node.reshape(wide, merged);
    SmallVector<int64_t> starts(shape.size(), 0), ends(shape), steps(shape.size(), 1);
    return node.create<SliceOp>(wide, b.getDenseI64ArrayAttr(starts),
                                b.getDenseI64ArrayAttr(ends), b.getDenseI64ArrayAttr(steps));
  };
  node.setOutput(0, DequantizeOp::create(b, node.loc(), type.clone(element), x, repeat(scale),
                                         repeat(zeroPoint)));
  return success();
}

static LogicalResult convertDequantizeLinear(NodeContext &node) {
  Value x = node.input(0);
  auto type = cast<RankedTensorType>(x.getType());
  if (!isQuantizedType(type.getElementType())) {
    node.emitError() << "expected an integer input (int4, uint4, int8, uint8, int16, uint16 "
                        "or int32), got " << type;
    return failure();
  }
  if (node.intAttr("block_size", 0) != 0)
    return convertBlockedDequantizeLinear(node);
  Value scale = broadcastParameter(node, node.input(1), type.getShape(),
                                   "x_scale");
  if (!scale)
    return failure();
  Type element = getElementTypeOrSelf(scale.getType());
  if (!isa<FloatType>(element)) {
    node.emitError() << "x_scale must be a floating-point tensor, got "
                     << node.inputType(1);
    return failure();
  }
  Value zeroPoint;
  if (node.hasInput(2)) {
    if (node.inputType(2).getElementType() != type.getElementType()) {
      node.emitError() << "x_zero_point " << node.inputType(2) << " differs in type from x "
                       << type;
      return failure();
    }
    zeroPoint = broadcastParameter(node, node.input(2), type.getShape(),
                                   "x_zero_point");
    if (!zeroPoint)
      return failure();
  }
  node.setOutput(0, DequantizeOp::create(node.builder(), node.loc(), type.clone(element),
                                         x, scale, zeroPoint));
  return success();
}

bool onnx_import::isQuantizedOutputZeroPoint(NodeContext &node, unsigned index) {
  auto integer = dyn_cast<IntegerType>(node.inputType(index).getElementType());
  if (integer && integer.getWidth() == 8 && !integer.isSigned())
    return true;
  node.emitError() << "y_zero_point " << node.inputType(index)
                   << " must be an int8 or uint8 tensor (it gives the output's type)";
  return false;
}

/// Whether every element of `x` is >= 0 (or NaN) by construction: the
/// result of a ReLU, a Clip from 0 or above, a sigmoid, an exponential, an
/// absolute value or a softmax, or of pooling, reshaping, transposing,
/// broadcasting or concatenating such values.
static bool isNonNegative(Value x, int depth = 0) {
  Operation *def = x.getDefiningOp();
  if (!def || depth > 16)
    return false;
  if (isa<ReluOp, SigmoidOp, ExpOp, AbsOp, SoftmaxOp>(def))
    return true;
  if (auto clip = dyn_cast<ClipOp>(def))
    return clip.getMin().convertToDouble() >= 0;
  if (isa<MaxPoolOp, AvgPoolOp, ReshapeOp, TransposeOp, ExpandOp>(def))
    return isNonNegative(def->getOperand(0), depth + 1);
  if (isa<ConcatOp>(def))
    return llvm::all_of(def->getOperands(),
                        [&](Value v) { return isNonNegative(v, depth + 1); });
  return false;
}

std::pair<Value, Value> onnx_import::dynamicQuantization(NodeContext &node, Value x) {
  // uint8 over [min(x, 0), max(x, 0)]: scale = (max - min) / 255,
  // zero point = saturate(round(-min / scale)).
  auto type = cast<RankedTensorType>(x.getType());
  Type element = type.getElementType();
  OpBuilder &b = node.builder();
  BoolAttr noKeepdims = b.getBoolAttr(false);
  auto allOf = [&](Value v) {
    return b.getDenseI64ArrayAttr(llvm::to_vector(
        llvm::seq<int64_t>(0, cast<RankedTensorType>(v.getType()).getRank())));
  };
  // A large tensor is reduced in two steps, rows of L contiguous elements
  // (a multiple of 16 up to 4096 that divides it; preferably one that
  // leaves a multiple of 16 rows, which the CPU splits into workgroups
  // evenly) and then the rows' results: the rows spread over the
  // workgroups, where one reduction of every element is one workgroup's.
  // (Minimum and maximum are exact in any order.)
  Value rows = x;
  if (type.hasStaticShape() && type.getNumElements() >= 8192) {
    int64_t n = type.getNumElements(), length = 0;
    for (int64_t l = 4096; l >= 256 && !length; l -= 16)
      if (n % l == 0 && (n / l) % 16 == 0)
        length = l;
    for (int64_t l = 4096; l >= 256 && !length; l -= 16)
      if (n % l == 0)
        length = l;
    if (length)
      rows = node.reshape(x, {n / length, length});
  }
  auto range = [&](auto tag) {
    using Op = decltype(tag);
    if (rows == x)
      return node.create<Op>(x, allOf(x), noKeepdims);
    Value partial = node.create<Op>(rows, b.getDenseI64ArrayAttr({1}), noKeepdims);
    return node.create<Op>(partial, allOf(partial), noKeepdims);
  };
  Value zero = node.scalar(element, 0);
  // min(x, 0) of a tensor that is never negative is 0: no pass over it. (A
  // NaN in x makes the maximum, and so the scale and zero point, NaN either
  // way.)
  Value lowest = isNonNegative(x) ? zero : node.create<MinOp>(range(ReduceMinOp()), zero);
  Value highest = node.create<MaxOp>(range(ReduceMaxOp()), zero);
  Value scale = node.create<DivOp>(node.create<SubOp>(highest, lowest),
                                   node.scalar(element, 255));
  Type u8 = IntegerType::get(node.context(), 8, IntegerType::Unsigned);
  Value zeroPoint = node.create<ClipOp>(
      node.create<RoundOp>(
          node.create<SubOp>(zero, node.create<DivOp>(lowest, scale))),
      b.getF64FloatAttr(0), b.getF64FloatAttr(255));
  return {scale, node.cast(zeroPoint, u8)};
}

static LogicalResult convertDynamicQuantizeLinear(NodeContext &node) {
  Value x = floatInput(node);
  if (!x)
    return failure();
  auto [scale, zeroPoint] = dynamicQuantization(node, x);
  Type u8 = IntegerType::get(node.context(), 8, IntegerType::Unsigned);
  node.setOutput(0, quantizeLinear(node, x, scale, zeroPoint, u8));
  node.setOutput(1, scale);
  node.setOutput(2, zeroPoint);
  return success();
}

void onnx_import::registerQuantizationPatterns(PatternRegistry &r) {
  r.add("QuantizeLinear", 10, convertQuantizeLinear);
  r.add("DequantizeLinear", 10, convertDequantizeLinear);
  r.add("DynamicQuantizeLinear", 11, convertDynamicQuantizeLinear);
}
