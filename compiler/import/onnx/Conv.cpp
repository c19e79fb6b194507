//===- Conv.cpp - ONNX Conv and ConvInteger -> kiln -----------------------===//
//
// Conv with groups, strides, dilations and explicit or automatic padding
// (NOTSET, SAME_UPPER, SAME_LOWER, VALID) becomes kiln.conv; ConvInteger, the
// same window over 8-bit operands with zero points, kiln.conv_integer. The
// window helpers are shared with the pooling patterns.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

FailureOr<SmallVector<int64_t>>
onnx_import::spatialAttr(NodeContext &node, StringRef name, int64_t spatial,
                         int64_t defaultValue) {
  if (!node.hasAttr(name))
    return SmallVector<int64_t>(spatial, defaultValue);
  SmallVector<int64_t> values = node.intsAttr(name);
  if ((int64_t)values.size() != spatial) {
    node.emitError() << "attribute '" << name << "' has " << values.size()
                     << " entries; the input has " << spatial
                     << " spatial dimensions";
    return failure();
  }
  return values;
}

FailureOr<SmallVector<int64_t>>
onnx_import::windowPads(NodeContext &node, ArrayRef<int64_t> in,
                        ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> dilations) {
  int64_t spatial = in.size();
  std::string autoPad = node.stringAttr("auto_pad", "NOTSET");
  if (autoPad == "NOTSET")
    return spatialAttr(node, "pads", 2 * spatial, 0);
  SmallVector<int64_t> pads(2 * spatial, 0);
  if (autoPad == "VALID")
    return pads;
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER") {
    node.emitError() << "unknown auto_pad '" << autoPad << "'";
    return failure();
  }
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t out = llvm::divideCeil(in[i], strides[i]);
    int64_t total = std::max<int64_t>(
        0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in[i]);
    int64_t small = total / 2, large = total - small;
    pads[i] = autoPad == "SAME_UPPER" ? small : large;
    pads[i + spatial] = autoPad == "SAME_UPPER" ? large : small;
  }
  return pads;
}

namespace {
/// The window of a Conv or ConvInteger node, checked against its operands.
struct ConvWindow {
  SmallVector<int64_t> strides, dilations, pads;
  int64_t groups;
};
} // namespace

/// Reads and checks the attributes of a Conv-like node (kernel_shape,
/// strides, dilations, pads or auto_pad, group) for `input` and `filter`.
static FailureOr<ConvWindow> convWindow(NodeContext &node,
                                        RankedTensorType inType,
                                        RankedTensorType filterType) {
  int64_t rank = inType.getRank();
  if (rank < 3 || filterType.getRank() != rank) {
    node.emitError() << "expected input and filter of equal rank >= 3, got "
                     << inType << " and " << filterType;
    return failure();
  }
  int64_t spatial = rank - 2;
  auto kernel = spatialAttr(node, "kernel_shape", spatial, 0);
  auto strides = spatialAttr(node, "strides", spatial, 1);
  auto dilations = spatialAttr(node, "dilations", spatial, 1);
  if (failed(kernel) || failed(strides) || failed(dilations))
    return failure();
  ArrayRef<int64_t> filterSpatial = filterType.getShape().drop_front(2);
  if (node.hasAttr("kernel_shape") && ArrayRef<int64_t>(*kernel) != filterSpatial) {
    node.emitError() << "kernel_shape does not match the filter " << filterType;
    return failure();
  }
  auto pads = windowPads(node, inType.getShape().drop_front(2), filterSpatial,
                         *strides, *dilations);
  if (failed(pads))
    return failure();
  // kiln.conv's shape inference checks the groups against the channels.
  return ConvWindow{*strides, *dilations, *pads, node.intAttr("group", 1)};
}

static LogicalResult convertConv(NodeContext &node) {
  Value input = node.input(0), filter = node.input(1);
  auto inType = cast<RankedTensorType>(input.getType());
  auto filterType = cast<RankedTensorType>(filter.getType());
  FailureOr<ConvWindow> window = convWindow(node, inType, filterType);
  if (failed(window))
    return failure();
  if (filterType.getElementType() != inType.getElementType()) {
    node.emitError() << "filter element type differs from the input's";
    return failure();
  }
  Value bias = node.hasInput(2) ? node.input(2) : Value();
  if (bias) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (biasType.getRank() != 1 ||
        biasType.getShape()[0] != filterType.getShape()[0]) {
      node.emitError() << "bias " << biasType << " does not match "
                       << filterType.getShape()[0] << " filters";
      return failure();
    }
  }
  OpBuilder &b = node.builder();
  node.setOutput(0,
                 node.create<ConvOp>(input, filter, bias,
                                     b.getDenseI64ArrayAttr(window->strides),
                                     b.getDenseI64ArrayAttr(window->dilations),
                                     b.getDenseI64ArrayAttr(window->pads),
                                     b.getI64IntegerAttr(window->groups)));
  return success();
}

/// ConvInteger's zero point input `i` (2: x_zero_point, a scalar; 3:
/// w_zero_point, a scalar or one per output channel), with one-element
/// tensors as scalars; null when absent.
static FailureOr<Value> convZeroPoint(NodeContext &node, unsigned i,
                                      RankedTensorType operandType) {
  if (!node.hasInput(i))
    return Value();
  Value zp = node.input(i);
  auto type = cast<RankedTensorType>(zp.getType());
  StringRef name = i == 2 ? "x_zero_point" : "w_zero_point";
  if (type.getElementType() != operandType.getElementType()) {
    node.emitError() << name << " element type " << type.getElementType()
                     << " differs from " << (i == 2 ? "x" : "w")
                     << " element type " << operandType.getElementType();
    return failure();
  }
  if (type.hasStaticShape() && type.getNumElements() == 1)
    return node.reshape(zp, {});
  int64_t filters = operandType.getShape()[0];
  if (i == 3 && type.getRank() == 1 && type.getShape()[0] == filters)
    return zp;
  if (i == 2)
    node.emitError() << name << " must be a scalar, got " << type;
  else
    node.emitError() << name << " must be a scalar or have one value per "
                     << "output channel (" << filters << "), got " << type;
  return failure();
}

/// ConvInteger: Conv's window over int8/uint8 operands with optional zero
/// points, an int32 result (kiln.conv_integer).
static LogicalResult convertConvInteger(NodeContext &node) {
  Value input = node.input(0), filter = node.input(1);
  auto inType = cast<RankedTensorType>(input.getType());
  auto filterType = cast<RankedTensorType>(filter.getType());
  if (!inType.getElementType().isInteger(8) ||
      !filterType.getElementType().isInteger(8)) {
    node.emitError() << "x and w must be int8 or uint8 tensors, got " << inType
                     << " and " << filterType;
    return failure();
  }
  FailureOr<ConvWindow> window = convWindow(node, inType, filterType);
  if (failed(window))
    return failure();
  FailureOr<Value> inputZp = convZeroPoint(node, 2, inType);
  FailureOr<Value> filterZp = convZeroPoint(node, 3, filterType);
  if (failed(inputZp) || failed(filterZp))
    return failure();
  OpBuilder &b = node.builder();
  node.setOutput(
      0, node.create<ConvIntegerOp>(input, filter, *inputZp, *filterZp,
                                    b.getDenseI64ArrayAttr(window->strides),
                                    b.getDenseI64ArrayAttr(window->dilations),
                                    b.getDenseI64ArrayAttr(window->pads),
                                    b.getI64IntegerAttr(window->groups)));
  return success();
}

void onnx_import::registerConvPatterns(PatternRegistry &r) {
  r.add("Conv", 7, convertConv);
  r.add("ConvInteger", 10, convertConvInteger);
}
