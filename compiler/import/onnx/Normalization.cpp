//===- Normalization.cpp - ONNX softmax and normalizations -> kiln --------===//
//
// Softmax/LogSoftmax (with the flatten-to-2-D semantics before opset 13),
// LayerNormalization (with its Mean and InvStdDev outputs),
// BatchNormalization (inference and training mode), InstanceNormalization,
// MeanVarianceNormalization and LRN.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/Sequence.h"

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

namespace {
/// The mean and (biased) variance of a tensor over some axes, kept as size-1
/// dimensions, and the tensor centered on its mean.
struct Moments {
  Value mean, centered, variance;
};
} // namespace

static Moments moments(NodeContext &node, Value x, ArrayRef<int64_t> axes) {
  OpBuilder &b = node.builder();
  DenseI64ArrayAttr axesAttr = b.getDenseI64ArrayAttr(axes);
  BoolAttr keepdims = b.getBoolAttr(true);
  Moments m;
  m.mean = node.create<ReduceMeanOp>(x, axesAttr, keepdims);
  m.centered = node.create<SubOp>(x, m.mean);
  m.variance = node.create<ReduceMeanOp>(
      node.create<MulOp>(m.centered, m.centered), axesAttr, keepdims);
  return m;
}

/// 1 / sqrt(variance + epsilon).
static Value invStdDev(NodeContext &node, Value variance, double epsilon) {
  Type element = getElementTypeOrSelf(variance.getType());
  return node.create<RsqrtOp>(
      node.create<AddOp>(variance, node.scalar(element, epsilon)));
}

/// LayerNormalization with its Mean and InvStdDev outputs: the statistics
/// over dimensions [axis, rank) in the stash type (kept as size-1
/// dimensions), then Y = (X - mean) * invStdDev * scale + bias in X's type.
static void convertLayerNormWithStatistics(NodeContext &node, Value input,
                                           Value scale, Value bias,
                                           int64_t axis, Type stash) {
  auto type = cast<RankedTensorType>(input.getType());
  Moments m = moments(node, node.cast(input, stash),
                      llvm::to_vector(llvm::seq<int64_t>(axis, type.getRank())));
  Value inv = invStdDev(node, m.variance, node.floatAttr("epsilon", 1e-5));
  Value normalized =
      node.cast(node.create<MulOp>(m.centered, inv), type.getElementType());
  Value result = node.create<MulOp>(normalized, scale);
  if (bias)
    result = node.create<AddOp>(result, bias);
  node.setOutput(0, result);
  if (node.hasOutput(1))
    node.setOutput(1, m.mean);
  if (node.hasOutput(2))
    node.setOutput(2, inv);
}

/// The floating-point input of rank >= `minRank`, or null after a
/// diagnostic.
static Value floatInput(NodeContext &node, int64_t minRank) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  if (!isa<FloatType>(type.getElementType()) || type.getRank() < minRank) {
    node.emitError() << "expected a floating-point input of rank >= "
                     << minRank << ", got " << type;
    return Value();
  }
  return input;
}

static LogicalResult convertInstanceNorm(NodeContext &node) {
  // Per sample and channel, over the spatial dimensions:
  // (x - mean) / sqrt(variance + epsilon) * scale[c] + bias[c].
  Value input = floatInput(node, 3);
  if (!input)
    return failure();
  auto type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank(), channels = type.getShape()[1];
  SmallVector<int64_t> perChannel(rank - 1, 1);
  perChannel[0] = channels;
  Value params[2];
  for (unsigned i = 1; i < 3; ++i) {
    auto paramType = node.inputType(i);
    if (paramType != RankedTensorType::get({channels}, type.getElementType())) {
      node.emitError() << "input " << i << " has type " << paramType
                       << "; expected a vector of " << channels
                       << " channels of " << type.getElementType();
      return failure();
    }
    params[i - 1] = node.reshape(node.input(i), perChannel);
  }
  Moments m =
      moments(node, input, llvm::to_vector(llvm::seq<int64_t>(2, rank)));
  Value normalized = node.create<MulOp>(
      m.centered,
      invStdDev(node, m.variance, node.floatAttr("epsilon", 1e-5)));
  node.setOutput(0, node.create<AddOp>(
                        node.create<MulOp>(normalized, params[0]), params[1]));
  return success();
}

static LogicalResult convertMeanVarianceNorm(NodeContext &node) {
  // (x - mean) / (sqrt(variance) + 1e-9) over `axes` (ONNX's function
  // body, epsilon included).
  Value input = floatInput(node, 1);
  if (!input)
    return failure();
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  SmallVector<int64_t> axes;
  for (int64_t axis : node.hasAttr("axes") ? node.intsAttr("axes")
                                           : SmallVector<int64_t>{0, 2, 3}) {
    auto normalized = node.normalizeAxis(axis, rank);
    if (failed(normalized))
      return failure();
    axes.push_back(*normalized);
  }
  Moments m = moments(node, input, axes);
  Type element = getElementTypeOrSelf(input.getType());
  Value std = node.create<AddOp>(node.create<SqrtOp>(m.variance),
                                 node.scalar(element, 1e-9));
  node.setOutput(0, node.create<DivOp>(m.centered, std));
  return success();
}

static LogicalResult convertLRN(NodeContext &node) {
  // x / (bias + alpha / size * sum of x^2 over the `size` channels around
  // c) ^ beta: the squares padded with zeros along the channels and summed
  // over `size` shifted slices.
  Value input = floatInput(node, 3);
  if (!input)
    return failure();
  int64_t size = node.intAttr("size", 0);
  if (size <= 0) {
    node.emitError() << "size must be positive, got " << size;
    return failure();
  }
  auto type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank(), channels = type.getShape()[1];
  Type element = type.getElementType();
  OpBuilder &b = node.builder();
  // The window of channel c is [c - before, c + after]; channels more than
  // C - 1 away are never real, so the padding (and the number of shifted
  // slices) stops there, whatever `size` says (it still scales alpha).
  SmallVector<int64_t> pads(2 * rank, 0);
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  pads[1] = std::min(before, std::max<int64_t>(channels - 1, 0));
  pads[rank + 1] = std::min(after, std::max<int64_t>(channels - 1, 0));
  int64_t shifts = pads[1] + pads[rank + 1] + 1;
  Value squares = node.create<MulOp>(input, input);
  Value padded = node.create<PadOp>(squares, b.getDenseI64ArrayAttr(pads),
                                    b.getStringAttr("constant"),
                                    b.getF64FloatAttr(0));
  Value sum;
  for (int64_t shift = 0; shift < shifts; ++shift) {
    SmallVector<int64_t> starts(rank, 0), ends(type.getShape()), steps(rank, 1);
    starts[1] = shift;
    ends[1] = shift + channels;
    Value window = node.create<SliceOp>(padded, b.getDenseI64ArrayAttr(starts),
                                        b.getDenseI64ArrayAttr(ends),
                                        b.getDenseI64ArrayAttr(steps));
    sum = sum ? node.create<AddOp>(sum, window) : window;
  }
  Value scaled = node.create<MulOp>(
      sum, node.scalar(element, node.floatAttr("alpha", 1e-4) / size));
  Value base = node.create<AddOp>(
      scaled, node.scalar(element, node.floatAttr("bias", 1.0)));
  Value denominator = node.create<PowOp>(
      base, node.scalar(element, node.floatAttr("beta", 0.75)));
  node.setOutput(0, node.create<DivOp>(input, denominator));
  return success();
}

static LogicalResult convertLayerNorm(NodeContext &node) {
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
  // The statistics are computed in `stash_type` (float unless it says
  // otherwise) and returned only when the node asks for them.
  if (node.hasOutput(1) || node.hasOutput(2)) {
    auto stash = node.dataType(node.intAttr("stash_type", 1), "stash_type");
    if (failed(stash))
      return failure();
    if (!isa<FloatType>(*stash)) {
      node.emitError() << "stash_type must be a floating-point type, got "
                       << *stash;
      return failure();
    }
    convertLayerNormWithStatistics(node, input, scale, bias, *axis, *stash);
    return success();
  }
  OpBuilder &b = node.builder();
  node.setOutput(0, node.create<LayerNormOp>(
                        type, input, scale, bias, b.getI64IntegerAttr(*axis),
                        b.getF64FloatAttr(node.floatAttr("epsilon", 1e-5))));
  return success();
}

static LogicalResult convertBatchNorm(NodeContext &node) {
  // Training mode (opset 14+) normalizes with the batch's statistics and
  // returns the updated running ones; before opset 14 the extra outputs
  // carry other statistics (saved mean/variance) that Kiln does not build.
  bool training = node.intAttr("training_mode", 0) != 0;
  if (!training && (node.hasOutput(1) || node.hasOutput(2))) {
    node.emitError() << "the running mean and variance outputs exist only in "
                        "training mode (training_mode = 1, opset 14+)";
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
  Value mean = node.input(3), variance = node.input(4);
  if (training) {
    // The batch's mean and (biased) variance over every dimension but the
    // channels, and the running statistics moved towards them by
    // 1 - momentum.
    SmallVector<int64_t> axes{0};
    llvm::append_range(axes, llvm::seq<int64_t>(2, type.getRank()));
    Moments batch = moments(node, input, axes);
    Value batchMean = node.reshape(batch.mean, {type.getShape()[1]});
    Value batchVariance = node.reshape(batch.variance, {type.getShape()[1]});
    Type element = type.getElementType();
    double momentum = node.floatAttr("momentum", 0.9);
    auto update = [&](Value running, Value batch) {
      return node.create<AddOp>(
          node.create<MulOp>(running, node.scalar(element, momentum)),
          node.create<MulOp>(batch, node.scalar(element, 1 - momentum)));
    };
    if (node.hasOutput(1))
      node.setOutput(1, update(mean, batchMean));
    if (node.hasOutput(2))
      node.setOutput(2, update(variance, batchVariance));
    mean = batchMean;
    variance = batchVariance;
  }
  node.setOutput(0, node.create<BatchNormOp>(
                        type, input, node.input(1), node.input(2), mean,
                        variance,
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
  r.add("InstanceNormalization", 7, convertInstanceNorm);
  r.add("MeanVarianceNormalization", 9, convertMeanVarianceNorm);
  r.add("LRN", 7, convertLRN);
}
