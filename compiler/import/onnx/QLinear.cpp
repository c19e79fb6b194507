//===- QLinear.cpp - ONNX Runtime's quantized ops (com.microsoft) -> kiln -===//
//
// The quantized operators of ONNX Runtime's com.microsoft domain that its
// quantizer writes for CNNs and transformers (QOperator format) and that its
// graph optimizer leaves in saved models: QLinearAdd, QLinearMul,
// QLinearSigmoid, QLinearLeakyRelu, QLinearAveragePool,
// QLinearGlobalAveragePool, QLinearConcat, QLinearSoftmax, QLinearReduceMean,
// QGemm, MatMulIntegerToFloat and DynamicQuantizeMatMul.
//
// Each is its float operator between kiln.dequantize of its 8-bit inputs and
// kiln.quantize of its result, imported through the float operator's own
// pattern (NodeContext::importAs), so that attributes mean what they mean
// there. The graph passes then treat them as they treat QDQ models:
// kiln-fold-quantized-ops makes the matmuls integer contractions with their
// scales in the epilogue, and the elementwise ones fuse into one dispatch
// that reads and writes 8-bit tensors (kiln-expand-quantization).
//
// The quantization parameters are those of ONNX's QuantizeLinear: a scale
// (float) and an optional zero point (the quantized type; 0 when absent),
// one value per tensor (QGemm's B: also one per output column).
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/Sequence.h"

#include <cstring>

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

namespace {
/// A tensor's quantization parameters, shaped to broadcast against it.
struct QParams {
  Value scale;     // f32
  Value zeroPoint; // the quantized type, or null for 0
};
} // namespace

/// Whether `type` is an 8-bit integer tensor type (int8 or uint8).
static bool isEightBit(Type type) {
  auto integer = dyn_cast<IntegerType>(getElementTypeOrSelf(type));
  return integer && integer.getWidth() == 8 && !integer.isSigned();
}

/// The scale (input `scaleIndex`, named `scaleName`) and zero point (input
/// `zpIndex`, optional) of a tensor of integer type `quantized`: one value
/// each, as rank-0 tensors; or, when `perAxis` is given, also a vector of
/// perAxis->first values reshaped to perAxis->second. Failure after a
/// diagnostic.
static FailureOr<QParams>
qparams(NodeContext &node, unsigned scaleIndex, StringRef scaleName, unsigned zpIndex,
        Type quantized,
        std::optional<std::pair<int64_t, SmallVector<int64_t>>> perAxis = std::nullopt) {
  auto shaped = [&](unsigned i, StringRef what) -> Value {
    Value v = node.input(i);
    auto type = cast<RankedTensorType>(v.getType());
    if (type.hasStaticShape() && type.getNumElements() == 1)
      return node.reshape(v, {});
    if (perAxis && type.getRank() == 1 && type.getShape()[0] == perAxis->first)
      return node.reshape(v, perAxis->second);
    auto diag = node.emitError() << what << " " << type << " must be one value";
    if (perAxis)
      diag << " or " << perAxis->first << " (one per output column)";
    return Value();
  };
  if (!node.hasInput(scaleIndex)) {
    node.emitError() << scaleName << " (input " << scaleIndex << ") is required";
    return failure();
  }
  if (!isa<FloatType>(node.inputType(scaleIndex).getElementType())) {
    node.emitError() << scaleName << " must be a floating-point tensor, got "
                     << node.inputType(scaleIndex);
    return failure();
  }
  QParams params;
  params.scale = shaped(scaleIndex, scaleName);
  if (!params.scale)
    return failure();
  params.scale = node.cast(params.scale, node.builder().getF32Type());
  if (!node.hasInput(zpIndex))
    return params;
  std::string zpName = (scaleName.drop_back(strlen("scale")) + "zero_point").str();
  if (node.inputType(zpIndex).getElementType() != quantized) {
    node.emitError() << zpName << " " << node.inputType(zpIndex)
                     << " must have the quantized tensor's type " << quantized;
    return failure();
  }
  params.zeroPoint = shaped(zpIndex, zpName);
  if (!params.zeroPoint)
    return failure();
  return params;
}

/// Input `index` (named `name`: 8-bit) dequantized to f32 with the scale and
/// zero point at inputs `index + 1` and `index + 2`, or null after a
/// diagnostic.
static Value dequantizedInput(NodeContext &node, unsigned index, StringRef name,
                              unsigned scaleIndex, unsigned zpIndex) {
  Value q = node.input(index);
  if (!q || !isEightBit(q.getType())) {
    node.emitError() << name << " must be an int8 or uint8 tensor, got "
                     << (q ? q.getType() : Type());
    return Value();
  }
  FailureOr<QParams> params =
      qparams(node, scaleIndex, (name + "_scale").str(), zpIndex, getElementTypeOrSelf(q));
  if (failed(params))
    return Value();
  auto type = cast<RankedTensorType>(q.getType());
  return DequantizeOp::create(node.builder(), node.loc(),
                              type.clone(node.builder().getF32Type()), q, params->scale,
                              params->zeroPoint);
}

/// Quantizes `y` (f32) with the scale and zero point at inputs `scaleIndex`
/// and `zpIndex` to `quantized` and records it as output 0.
static LogicalResult setQuantizedOutput(NodeContext &node, Value y, unsigned scaleIndex,
                                        unsigned zpIndex, Type quantized) {
  if (node.hasInput(zpIndex))
    quantized = node.inputType(zpIndex).getElementType();
  if (!isEightBit(quantized)) {
    node.emitError() << "the output must be int8 or uint8, got " << quantized;
    return failure();
  }
  FailureOr<QParams> params = qparams(node, scaleIndex, "y_scale", zpIndex, quantized);
  if (failed(params))
    return failure();
  node.setOutput(0, quantizeLinear(node, y, params->scale, params->zeroPoint, quantized));
  return success();
}

/// Moves the channels of an NHWC tensor (ONNX Runtime's `channels_last`)
/// to dimension 1 (`toFront`) or back to the end.
static Value channelsLast(NodeContext &node, Value x, bool toFront) {
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  SmallVector<int64_t> order{0};
  if (toFront) {
    order.push_back(rank - 1);
    llvm::append_range(order, llvm::seq<int64_t>(1, rank - 1));
  } else {
    llvm::append_range(order, llvm::seq<int64_t>(2, rank));
    order.push_back(1);
  }
  return node.create<TransposeOp>(x, order);
}

/// QLinearAdd / QLinearMul (A, A_scale, A_zero_point, B, B_scale,
/// B_zero_point, C_scale, C_zero_point): the broadcasting float op of the
/// dequantized operands, quantized to C's parameters.
static LogicalResult convertQLinearBinary(NodeContext &node, StringRef floatOp) {
  Value a = dequantizedInput(node, 0, "A", 1, 2);
  Value b = a ? dequantizedInput(node, 3, "B", 4, 5) : Value();
  if (!b)
    return failure();
  auto y = node.importAs(floatOp, {a, b}, 1);
  if (failed(y))
    return failure();
  return setQuantizedOutput(node, y->front(), 6, 7, node.inputType(0).getElementType());
}

/// A unary op (X, X_scale, X_zero_point, Y_scale, Y_zero_point) with the
/// float op `floatOp`'s attributes (QLinearSigmoid, QLinearLeakyRelu,
/// QLinearAveragePool, QLinearGlobalAveragePool, QLinearReduceMean,
/// QLinearSoftmax), NHWC when its `channels_last` says so.
static LogicalResult convertQLinearUnary(NodeContext &node, StringRef floatOp,
                                         std::optional<int64_t> opset = std::nullopt) {
  Value x = dequantizedInput(node, 0, "X", 1, 2);
  if (!x)
    return failure();
  bool nhwc = node.intAttr("channels_last", 0) != 0;
  if (nhwc) {
    if (node.inputType(0).getRank() < 3) {
      node.emitError() << "channels_last needs an input of rank >= 3, got "
                       << node.inputType(0);
      return failure();
    }
    x = channelsLast(node, x, true);
  }
  auto y = node.importAs(floatOp, {x}, 1, {"channels_last", "opset"}, opset);
  if (failed(y))
    return failure();
  Value result = nhwc ? channelsLast(node, y->front(), false) : y->front();
  return setQuantizedOutput(node, result, 3, 4, node.inputType(0).getElementType());
}

/// QLinearSoftmax: Softmax with the semantics of the opset its required
/// `opset` attribute names (before 13: over the input flattened to 2-D at
/// `axis`), whose `axis` defaults to -1 in every opset.
static LogicalResult convertQLinearSoftmax(NodeContext &node) {
  if (!node.hasAttr("opset")) {
    node.emitError() << "attribute 'opset' (the Softmax opset it follows) is required";
    return failure();
  }
  int64_t opset = node.intAttr("opset", 13);
  if (opset < 1 || opset > node.opset()) {
    node.emitError() << "attribute 'opset' is " << opset << "; expected 1 to the model's opset "
                     << node.opset();
    return failure();
  }
  if (!node.hasAttr("axis") && opset < 13) {
    // Softmax before opset 13 defaults to axis 1; this op to -1.
    int64_t rank = node.inputType(0).getRank();
    if (rank > 2) {
      node.emitError() << "without an 'axis' attribute (-1 here, 1 in Softmax-" << opset
                       << ") on a rank-" << rank << " input, which Kiln does not support";
      return failure();
    }
  }
  return convertQLinearUnary(node, "Softmax", opset);
}

/// QLinearConcat (Y_scale, Y_zero_point, then X, X_scale, X_zero_point per
/// input): Concat of the dequantized inputs, quantized to Y's parameters.
static LogicalResult convertQLinearConcat(NodeContext &node) {
  unsigned n = node.numInputs();
  if (n < 5 || (n - 2) % 3 != 0) {
    node.emitError() << "expected Y_scale, Y_zero_point and a (tensor, scale, zero point) "
                        "triple per input, got "
                     << n << " inputs";
    return failure();
  }
  SmallVector<Value> inputs;
  Type quantized;
  for (unsigned i = 2; i < n; i += 3) {
    std::string name = "X" + std::to_string((i - 2) / 3);
    Value x = dequantizedInput(node, i, name, i + 1, i + 2);
    if (!x)
      return failure();
    Type element = node.inputType(i).getElementType();
    if (quantized && element != quantized) {
      node.emitError() << name << " " << node.inputType(i)
                       << " differs in type from the first input's " << quantized;
      return failure();
    }
    quantized = element;
    inputs.push_back(x);
  }
  auto y = node.importAs("Concat", inputs, 1);
  if (failed(y))
    return failure();
  return setQuantizedOutput(node, y->front(), 0, 1, quantized);
}

/// Input `index`, an 8-bit weight of rank >= 2 whose output columns run
/// along dimension `columnDim`, dequantized to f32 with the scale and zero
/// point of inputs `scaleIndex` and `zpIndex` (one value, or one per
/// column); its parameters in `params`. Null after a diagnostic.
static Value dequantizedWeight(NodeContext &node, unsigned index, int64_t columnDim,
                               unsigned scaleIndex, unsigned zpIndex, QParams &params) {
  Value bq = node.input(index);
  auto bType = cast<RankedTensorType>(bq.getType());
  if (!isEightBit(bType) || bType.getRank() < 2) {
    node.emitError() << "B must be an int8 or uint8 tensor of rank >= 2, got " << bType;
    return Value();
  }
  int64_t columns = bType.getShape()[columnDim];
  SmallVector<int64_t> columnShape(bType.getRank(), 1);
  columnShape[columnDim] = columns;
  FailureOr<QParams> found = qparams(node, scaleIndex, "b_scale", zpIndex, bType.getElementType(),
                                     std::make_pair(columns, columnShape));
  if (failed(found))
    return Value();
  params = *found;
  return DequantizeOp::create(node.builder(), node.loc(),
                              bType.clone(node.builder().getF32Type()), bq, params.scale,
                              params.zeroPoint);
}

/// QGemm (A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale,
/// y_zero_point): Gemm of the dequantized A and B (B per tensor or per
/// output column) with C, an int32 bias whose scale is alpha * a_scale *
/// b_scale; quantized to y's parameters when y_scale is given, else float.
static LogicalResult convertQGemm(NodeContext &node) {
  Value a = dequantizedInput(node, 0, "a", 1, 2);
  if (!a)
    return failure();
  if (node.inputType(3).getRank() != 2) {
    node.emitError() << "B must be a 2-d int8 or uint8 tensor, got " << node.inputType(3);
    return failure();
  }
  bool transB = node.intAttr("transB", 0) != 0;
  int64_t columns = node.inputType(3).getShape()[transB ? 0 : 1];
  QParams bParams;
  Value b = dequantizedWeight(node, 3, transB ? 0 : 1, 4, 5, bParams);
  if (!b)
    return failure();
  Type f32 = node.builder().getF32Type();
  Value c;
  if (node.hasInput(6)) {
    RankedTensorType cType = node.inputType(6);
    if (!cType.getElementType().isSignlessInteger(32)) {
      node.emitError() << "C must be an int32 tensor, got " << cType;
      return failure();
    }
    // C's scale is alpha * a_scale * b_scale: one value, or one per column
    // (C's last dimension) when b's is.
    Value bScale = bParams.scale;
    if (cast<RankedTensorType>(bScale.getType()).getRank() != 0) {
      if (cType.getRank() == 0 || cType.getShape().back() != columns) {
        node.emitError() << "C " << cType << " must have " << columns
                         << " columns to take b_scale's scale per column";
        return failure();
      }
      SmallVector<int64_t> perColumn(cType.getRank(), 1);
      perColumn.back() = columns;
      bScale = node.reshape(bScale, perColumn);
    }
    Value aScale = node.cast(node.reshape(node.input(1), {}), f32);
    Value scale = node.create<MulOp>(
        node.create<MulOp>(aScale, node.scalar(f32, node.floatAttr("alpha", 1.0))), bScale);
    c = DequantizeOp::create(node.builder(), node.loc(), cType.clone(f32), node.input(6), scale,
                             Value());
  }
  auto y = node.importAs("Gemm", {a, b, c}, 1);
  if (failed(y))
    return failure();
  if (!node.hasInput(7)) {
    if (node.hasInput(8)) {
      node.emitError() << "y_zero_point is given without y_scale";
      return failure();
    }
    node.setOutput(0, y->front());
    return success();
  }
  return setQuantizedOutput(node, y->front(), 7, 8, node.inputType(0).getElementType());
}

/// MatMul of `a` (f32) by input 1, B (8-bit, rank >= 2, dequantized with
/// the scale and zero point of inputs `scaleIndex` and `zpIndex`: one value
/// or one per output column), plus the float bias of input `biasIndex` when
/// present, as output 0: MatMulIntegerToFloat's product.
static LogicalResult setMatmulByDequantized(NodeContext &node, Value a, unsigned scaleIndex,
                                            unsigned zpIndex, unsigned biasIndex) {
  QParams bParams;
  Value b = dequantizedWeight(node, 1, node.inputType(1).getRank() - 1, scaleIndex, zpIndex,
                              bParams);
  if (!b)
    return failure();
  Type f32 = node.builder().getF32Type();
  auto y = node.importAs("MatMul", {a, b}, 1);
  if (failed(y))
    return failure();
  Value result = y->front();
  if (node.hasInput(biasIndex))
    result = node.create<AddOp>(result, node.cast(node.input(biasIndex), f32));
  node.setOutput(0, result);
  return success();
}

/// MatMulIntegerToFloat (A, B, a_scale, b_scale, a_zero_point,
/// b_zero_point, bias): MatMul of the dequantized operands (B's parameters
/// per tensor or per output column) plus the float bias.
static LogicalResult convertMatMulIntegerToFloat(NodeContext &node) {
  Value a = dequantizedInput(node, 0, "a", 2, 4);
  if (!a)
    return failure();
  return setMatmulByDequantized(node, a, 3, 5, 6);
}

/// DynamicQuantizeMatMul (A, B, b_scale, b_zero_point, bias): A quantized
/// to uint8 at run time as DynamicQuantizeLinear does, then
/// MatMulIntegerToFloat's product.
static LogicalResult convertDynamicQuantizeMatMul(NodeContext &node) {
  Value x = node.input(0);
  if (!isa<FloatType>(getElementTypeOrSelf(x.getType()))) {
    node.emitError() << "A must be a floating-point tensor, got " << x.getType();
    return failure();
  }
  x = node.cast(x, node.builder().getF32Type());
  auto [scale, zeroPoint] = dynamicQuantization(node, x);
  Type u8 = IntegerType::get(node.context(), 8, IntegerType::Unsigned);
  Value q = quantizeLinear(node, x, scale, zeroPoint, u8);
  Value a = DequantizeOp::create(node.builder(), node.loc(), x.getType(), q, scale, zeroPoint);
  return setMatmulByDequantized(node, a, 2, 3, 4);
}

void onnx_import::registerQLinearPatterns(PatternRegistry &r) {
  // libonnx knows no schema of these: each pattern first checks that the
  // inputs its schema requires are there.
  auto add = [&](StringRef op, std::initializer_list<unsigned> required, PatternFn fn) {
    SmallVector<unsigned> inputs(required);
    r.add(("com.microsoft." + op).str(), 1, [inputs, fn](NodeContext &node) {
      for (unsigned i : inputs)
        if (!node.hasInput(i)) {
          node.emitError() << "input " << i << " is required";
          return failure();
        }
      return fn(node);
    });
  };
  std::initializer_list<unsigned> unary = {0, 1, 3}, binary = {0, 1, 3, 4, 6};
  add("QLinearAdd", binary, [](NodeContext &n) { return convertQLinearBinary(n, "Add"); });
  add("QLinearMul", binary, [](NodeContext &n) { return convertQLinearBinary(n, "Mul"); });
  add("QLinearSigmoid", unary, [](NodeContext &n) { return convertQLinearUnary(n, "Sigmoid"); });
  add("QLinearLeakyRelu", unary,
      [](NodeContext &n) { return convertQLinearUnary(n, "LeakyRelu"); });
  add("QLinearAveragePool", unary,
      [](NodeContext &n) { return convertQLinearUnary(n, "AveragePool"); });
  add("QLinearGlobalAveragePool", unary,
      [](NodeContext &n) { return convertQLinearUnary(n, "GlobalAveragePool"); });
  // axes and keepdims as attributes: ReduceMean before opset 18.
  add("QLinearReduceMean", unary,
      [](NodeContext &n) { return convertQLinearUnary(n, "ReduceMean", 13); });
  add("QLinearSoftmax", unary, convertQLinearSoftmax);
  add("QLinearConcat", {0}, convertQLinearConcat);
  add("QGemm", {0, 1, 3, 4}, convertQGemm);
  add("MatMulIntegerToFloat", {0, 1, 2, 3}, convertMatMulIntegerToFloat);
  add("DynamicQuantizeMatMul", {0, 1, 2}, convertDynamicQuantizeMatMul);
}
