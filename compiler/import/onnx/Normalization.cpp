//===- Normalization.cpp - ONNX softmax and normalizations -> kiln --------===//
//
// Softmax/LogSoftmax (with the flatten-to-2-D semantics before opset 13),
// LayerNormalization and inference-mode BatchNormalization.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

static LogicalResult convertSoftmax(NodeContext &node, bool log) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  if (!isa<FloatType>(type.getElementType()) || type.getRank() == 0) {
    node.emitError() << "expected a floating-point input of rank >= 1, got "
                     << type;
    return failure();
  }
  int64_t rank = type.getRank();
  bool coerced = node.opset() < 13;
  auto axis = node.normalizeAxis(node.intAttr("axis", coerced ? 1 : -1), rank);
  if (failed(axis))
    return failure();
  OpBuilder &b = node.builder();
  if (!coerced || *axis == rank - 1) {
    node.setOutput(0, node.create<SoftmaxOp>(input, b.getI64IntegerAttr(*axis),
                                             b.getBoolAttr(log)));
    return success();
  }
  // Before opset 13 the input is viewed as [prod(dims < axis),
  // prod(dims >= axis)] and normalized along the second dimension.
  ArrayRef<int64_t> shape = type.getShape();
  Value flat = node.reshape(input, {computeProduct(shape.take_front(*axis)),
                                    computeProduct(shape.drop_front(*axis))});
  Value normalized = node.create<SoftmaxOp>(flat, b.getI64IntegerAttr(1),
                                            b.getBoolAttr(log));
  node.setOutput(0, node.reshape(normalized, shape));
  return success();
}

static LogicalResult convertLayerNorm(NodeContext &node) {
  if (node.hasOutput(1) || node.hasOutput(2)) {
    node.emitError() << "the Mean and InvStdDev outputs are not supported";
    return failure();
  }
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  auto axis = node.normalizeAxis(node.intAttr("axis", -1), type.getRank());
  if (failed(axis))
    return failure();
  Value scale = node.input(1);
  Value bias = node.hasInput(2) ? node.input(2) : Value();
  ArrayRef<int64_t> normalized = type.getShape().drop_front(*axis);
  for (Value param : {scale, bias}) {
    if (!param)
      continue;
    auto paramType = cast<RankedTensorType>(param.getType());
    auto shape = broadcastShapes(normalized, paramType.getShape());
    if (paramType.getElementType() != type.getElementType() || failed(shape) ||
        ArrayRef<int64_t>(*shape) != normalized) {
      node.emitError() << "scale/bias " << paramType
                       << " does not broadcast to the normalized dimensions";
      return failure();
    }
  }
  OpBuilder &b = node.builder();
  node.setOutput(0, node.create<LayerNormOp>(
                        type, input, scale, bias, b.getI64IntegerAttr(*axis),
                        b.getF64FloatAttr(node.floatAttr("epsilon", 1e-5))));
  return success();
}

static LogicalResult convertBatchNorm(NodeContext &node) {
  if (node.intAttr("training_mode", 0) || node.hasOutput(1) ||
      node.hasOutput(2)) {
    node.emitError() << "training mode is not supported";
    return failure();
  }
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  if (type.getRank() < 2) {
    node.emitError() << "expected an input of rank >= 2, got " << type;
    return failure();
  }
  for (unsigned i = 1; i < 5; ++i) {
    auto param = node.inputType(i);
    if (param.getRank() != 1 || param.getShape()[0] != type.getShape()[1] ||
        param.getElementType() != type.getElementType()) {
      node.emitError() << "input " << i << " has type " << param
                       << "; expected a vector of " << type.getShape()[1]
                       << " channels of " << type.getElementType();
      return failure();
    }
  }
  node.setOutput(0, node.create<BatchNormOp>(
                        type, input, node.input(1), node.input(2),
                        node.input(3), node.input(4),
                        node.builder().getF64FloatAttr(
                            node.floatAttr("epsilon", 1e-5))));
  return success();
}

void onnx_import::registerNormalizationPatterns(PatternRegistry &r) {
  r.add("Softmax", 7, [](NodeContext &n) { return convertSoftmax(n, false); });
  r.add("LogSoftmax", 7,
        [](NodeContext &n) { return convertSoftmax(n, true); });
  r.add("LayerNormalization", 17, convertLayerNorm);
  r.add("BatchNormalization", 7, convertBatchNorm);
}
