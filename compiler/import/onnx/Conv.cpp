//===- Conv.cpp - ONNX Conv, ConvInteger and ConvTranspose -> kiln --------===//
//
// Conv with groups, strides, dilations and explicit or automatic padding
// (NOTSET, SAME_UPPER, SAME_LOWER, VALID) becomes kiln.conv; ConvInteger, the
// same window over 8-bit operands with zero points, kiln.conv_integer
// (QLinearConv: that, plus its bias, requantized to the output's scale);
// ConvTranspose, a kiln.conv over the zero-interleaved input with the filter
// reversed and regrouped. The window helpers are shared with the pooling
// patterns.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/GraphImporter.h"
#include "import/onnx/ImportPatterns.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/InterleavedRange.h"

#include <cstring>

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
  if (llvm::any_of(strides, [](int64_t s) { return s < 1; })) {
    node.emitError() << "strides must be positive, got [" << llvm::interleaved(strides) << "]";
    return failure();
  }
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t out = llvm::divideCeil(in[i], strides[i]);
    // The padding SAME needs; kernels and dilations may be any int64, so the
    // sum is computed with overflow checks.
    std::optional<int64_t> span = llvm::checkedMulAdd<int64_t>(kernel[i] - 1, dilations[i], 1);
    std::optional<int64_t> reach =
        span ? llvm::checkedMulAdd<int64_t>(out - 1, strides[i], *span) : std::nullopt;
    std::optional<int64_t> needed = reach ? llvm::checkedSub(*reach, in[i]) : std::nullopt;
    if (!needed) {
      node.emitError() << "auto_pad " << autoPad << ": the padding of spatial dimension " << i
                       << " overflows int64 (kernel " << kernel[i] << ", dilation "
                       << dilations[i] << ", stride " << strides[i] << ")";
      return failure();
    }
    int64_t total = std::max<int64_t>(0, *needed);
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
  // A 1x1 convolution of a 1x1 image by constant filters (the squeeze-and-
  // excitation blocks of MobileNetV3, EfficientNet and RegNet) is a
  // matrix-vector product: imported as one, [N, C] x [C, F] with the filter
  // transposed at compile time (kiln-fold-weight-layouts), so that the
  // product streams contiguous weight rows instead of reading a filter
  // column of F strided values per input channel (measured 20x slower).
  auto spatialOnes = [](ArrayRef<int64_t> dims) {
    return llvm::all_of(dims, [](int64_t d) { return d == 1; });
  };
  if (window->groups == 1 && isa<FloatType>(inType.getElementType()) &&
      inType.hasStaticShape() && filterType.hasStaticShape() &&
      filter.getDefiningOp<ConstantOp>() && spatialOnes(inType.getShape().drop_front(2)) &&
      spatialOnes(filterType.getShape().drop_front(2)) && spatialOnes(window->strides) &&
      llvm::all_of(window->pads, [](int64_t p) { return p == 0; })) {
    int64_t n = inType.getDimSize(0), c = inType.getDimSize(1), f = filterType.getDimSize(0);
    Value rows = node.reshape(input, {n, c});
    Value weights = node.create<TransposeOp>(node.reshape(filter, {f, c}),
                                             SmallVector<int64_t>{1, 0});
    Value product = node.create<MatmulOp>(rows, weights);
    if (bias)
      product = node.create<AddOp>(product, node.reshape(bias, {1, f}));
    SmallVector<int64_t> outShape = {n, f};
    outShape.append(inType.getRank() - 2, 1);
    node.setOutput(0, node.reshape(product, outShape));
    return success();
  }
  node.setOutput(0,
                 node.create<ConvOp>(input, filter, bias,
                                     b.getDenseI64ArrayAttr(window->strides),
                                     b.getDenseI64ArrayAttr(window->dilations),
                                     b.getDenseI64ArrayAttr(window->pads),
                                     b.getI64IntegerAttr(window->groups)));
  return success();
}

/// The zero point of ConvInteger's (or QLinearConv's) input or filter, node
/// input `input` (x_zero_point: a scalar; w_zero_point, `filter`: a scalar
/// or one per output channel), with one-element tensors as scalars; null
/// when absent.
static FailureOr<Value> convZeroPoint(NodeContext &node, unsigned input,
                                      bool filter,
                                      RankedTensorType operandType) {
  if (!node.hasInput(input))
    return Value();
  unsigned i = filter ? 3 : 2;
  Value zp = node.input(input);
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

/// kiln.conv_integer of the node's 8-bit input (input 0) and filter (input
/// `filterInput`) with the zero points of inputs `inputZp` and `filterZp`
/// (when present): an int32 result, or failure after a diagnostic.
static FailureOr<Value> integerConv(NodeContext &node, unsigned filterInput,
                                    unsigned inputZp, unsigned filterZp) {
  Value input = node.input(0), filter = node.input(filterInput);
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
  FailureOr<Value> inputZero = convZeroPoint(node, inputZp, false, inType);
  FailureOr<Value> filterZero = convZeroPoint(node, filterZp, true, filterType);
  if (failed(inputZero) || failed(filterZero))
    return failure();
  OpBuilder &b = node.builder();
  return node.create<ConvIntegerOp>(input, filter, *inputZero, *filterZero,
                                    b.getDenseI64ArrayAttr(window->strides),
                                    b.getDenseI64ArrayAttr(window->dilations),
                                    b.getDenseI64ArrayAttr(window->pads),
                                    b.getI64IntegerAttr(window->groups));
}

/// ConvInteger: Conv's window over int8/uint8 operands with optional zero
/// points, an int32 result (kiln.conv_integer).
static LogicalResult convertConvInteger(NodeContext &node) {
  FailureOr<Value> result = integerConv(node, 1, 2, 3);
  if (failed(result))
    return failure();
  node.setOutput(0, *result);
  return success();
}

/// QLinearConv: ConvInteger's int32 result plus the int32 bias, scaled by
/// x_scale * w_scale / y_scale (w_scale a scalar or one per output
/// channel) and quantized to y's type with y_zero_point.
static LogicalResult convertQLinearConv(NodeContext &node) {
  if (!isQuantizedOutputZeroPoint(node, 7))
    return failure();
  FailureOr<Value> result = integerConv(node, 3, 2, 5);
  if (failed(result))
    return failure();
  Value acc = *result;
  OpBuilder &b = node.builder();
  auto inType = node.inputType(0), filterType = node.inputType(3);
  int64_t filters = filterType.getShape()[0];
  SmallVector<int64_t> perChannel(inType.getRank() - 1, 1);
  perChannel[0] = filters;
  auto channelShaped = [&](unsigned i, StringRef what) -> Value {
    Value v = node.input(i);
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getNumElements() == 1)
      return node.reshape(v, {});
    if (type.getRank() == 1 && type.getShape()[0] == filters)
      return node.reshape(v, perChannel);
    node.emitError() << what << " " << type
                     << " must be a scalar or have one value per output "
                     << "channel (" << filters << ")";
    return Value();
  };
  if (node.hasInput(8)) {
    Value bias = channelShaped(8, "B");
    if (!bias)
      return failure();
    acc = node.create<AddOp>(acc, bias);
  }
  Value filterScale = channelShaped(4, "w_scale");
  if (!filterScale)
    return failure();
  Type f32 = b.getF32Type();
  Value inputScale = node.create<MulOp>(
      node.cast(node.reshape(node.input(1), {}), f32),
      node.cast(filterScale, f32));
  Value scale = node.create<DivOp>(
      node.cast(node.reshape(node.input(6), {}), f32), inputScale);
  Value zeroPoint = node.reshape(node.input(7), {});
  node.setOutput(0, quantizeLinear(node, node.cast(acc, f32), scale, zeroPoint,
                                   node.inputType(7).getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ConvTranspose
//===----------------------------------------------------------------------===//
//
// ConvTranspose(x, W, B) is the gradient of a convolution with respect to its
// input. It becomes a stride-1 kiln.conv over x with `s - 1` zeros inserted
// between neighbouring elements of every spatial axis, padded by
// `d * (k - 1) - pad_begin` at the front and `d * (k - 1) - pad_end +
// output_padding` at the back (negative amounts crop), with the filter's
// spatial axes reversed and its channels regrouped from [C_in, C_out / g, K..]
// to [C_out, C_in / g, K..]. When W is a constant (as it is in exported
// models) the rearranged filter is computed here, once.

/// The begin-then-end paddings and the output sizes of a ConvTranspose node
/// with spatial input sizes `in`, from `pads`, `auto_pad` or `output_shape`.
/// Returns failure after a diagnostic.
static LogicalResult transposedWindow(NodeContext &node, ArrayRef<int64_t> in,
                                      ArrayRef<int64_t> kernel,
                                      ArrayRef<int64_t> strides,
                                      ArrayRef<int64_t> dilations,
                                      ArrayRef<int64_t> outputPadding,
                                      SmallVectorImpl<int64_t> &pads,
                                      SmallVectorImpl<int64_t> &out) {
  int64_t spatial = in.size();
  std::string autoPad = node.stringAttr("auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER") {
    node.emitError() << "unknown auto_pad '" << autoPad << "'";
    return failure();
  }
  // The output size with no padding: s * (in - 1) + output_padding +
  // d * (k - 1) + 1.
  SmallVector<int64_t> full;
  for (int64_t i = 0; i < spatial; ++i) {
    std::optional<int64_t> extent =
        llvm::checkedMulAdd<int64_t>(dilations[i], kernel[i] - 1, 1);
    std::optional<int64_t> size =
        extent ? llvm::checkedMulAdd<int64_t>(strides[i], in[i] - 1, *extent)
               : std::nullopt;
    size = size ? llvm::checkedAdd(*size, outputPadding[i]) : std::nullopt;
    if (!size) {
      node.emitError() << "the output size of spatial dimension " << i
                       << " overflows";
      return failure();
    }
    full.push_back(*size);
  }

  // The requested output sizes: output_shape, or in * s for SAME_*.
  SmallVector<int64_t> wanted;
  if (node.hasAttr("output_shape")) {
    FailureOr<SmallVector<int64_t>> sizes =
        spatialAttr(node, "output_shape", spatial, 0);
    if (failed(sizes))
      return failure();
    wanted = *sizes;
    if (llvm::any_of(wanted, [](int64_t v) { return v < 1; })) {
      node.emitError() << "output_shape must be positive, got ["
                       << llvm::interleaved(wanted) << "]";
      return failure();
    }
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t i = 0; i < spatial; ++i) {
      std::optional<int64_t> size = llvm::checkedMul(in[i], strides[i]);
      if (!size) {
        node.emitError() << "the output size of spatial dimension " << i
                         << " overflows";
        return failure();
      }
      wanted.push_back(*size);
    }
  }

  pads.assign(2 * spatial, 0);
  if (!wanted.empty()) {
    // The padding that gives the wanted size, split as the spec says
    // (opset 11): the odd element at the end for SAME_UPPER, at the start
    // otherwise. An output larger than the unpadded one (negative padding)
    // gets the extra elements at the end, as ONNX Runtime and the backend
    // tests have it.
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t total = full[i] - wanted[i];
      int64_t begin = 0;
      if (total > 0)
        begin = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i] = begin;
      pads[i + spatial] = total - begin;
    }
  } else if (autoPad == "NOTSET") {
    FailureOr<SmallVector<int64_t>> explicitPads =
        spatialAttr(node, "pads", 2 * spatial, 0);
    if (failed(explicitPads))
      return failure();
    if (llvm::any_of(*explicitPads, [](int64_t p) { return p < 0; })) {
      node.emitError() << "pads must be non-negative, got ["
                       << llvm::interleaved(*explicitPads) << "]";
      return failure();
    }
    pads.assign(explicitPads->begin(), explicitPads->end());
  }

  out.clear();
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t size = full[i] - pads[i] - pads[i + spatial];
    if (size < 1) {
      node.emitError() << "the output would have size " << size
                       << " along spatial dimension " << i;
      return failure();
    }
    out.push_back(size);
  }
  return success();
}

/// The filter of the stride-1 convolution equivalent to a ConvTranspose with
/// filter `filter` ([C_in, C_out / groups, K...]): [C_out, C_in / groups,
/// K...] with the spatial axes reversed. Computed here when `filter` is a
/// constant whose bytes can be read; built from kiln ops otherwise.
static Value transposedFilter(NodeContext &node, Value filter, int64_t groups) {
  auto type = cast<RankedTensorType>(filter.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rank = type.getRank();
  int64_t inPerGroup = shape[0] / groups, outPerGroup = shape[1];
  SmallVector<int64_t> resultShape = {groups * outPerGroup, inPerGroup};
  llvm::append_range(resultShape, shape.drop_front(2));
  auto resultType = RankedTensorType::get(resultShape, type.getElementType());

  // A constant filter: every result element's source, then its bytes.
  ElementsAttr value;
  if (auto cst = filter.getDefiningOp<ConstantOp>())
    value = cst.getValue();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(value);
      dense && dense.isSplat())
    return ConstantOp::create(node.builder(), node.loc(),
                              ElementsAttr(dense.resizeSplat(resultType)));
  std::optional<ArrayRef<char>> bytes;
  if (auto resource = dyn_cast_or_null<DenseResourceElementsAttr>(value)) {
    if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
      bytes = blob->getData();
  } else if (auto dense = dyn_cast_or_null<DenseElementsAttr>(value)) {
    if (!dense.getElementType().isInteger(1))
      bytes = dense.getRawData();
  }
  unsigned bits = type.getElementType().isIntOrFloat()
                      ? type.getElementType().getIntOrFloatBitWidth()
                      : 0;
  size_t elementBytes = bits / 8;
  if (bytes && bits % 8 == 0 && elementBytes > 0 &&
      bytes->size() == elementBytes * type.getNumElements()) {
    SmallVector<int64_t> strides = computeStrides(shape);
    SmallVector<int64_t> resultStrides = computeStrides(resultShape);
    std::vector<char> data(bytes->size());
    for (int64_t i = 0, e = resultType.getNumElements(); i < e; ++i) {
      SmallVector<int64_t> index = delinearize(i, resultStrides);
      // Result [o, c, k...] reads filter [g * inPerGroup + c, o % outPerGroup,
      // K - 1 - k...] where g = o / outPerGroup.
      int64_t group = index[0] / outPerGroup;
      int64_t source = (group * inPerGroup + index[1]) * strides[0] +
                       (index[0] % outPerGroup) * strides[1];
      for (int64_t d = 2; d < rank; ++d)
        source += (shape[d] - 1 - index[d]) * strides[d];
      std::memcpy(data.data() + i * elementBytes,
                  bytes->data() + source * elementBytes, elementBytes);
    }
    ElementsAttr result;
    if (resultType.getNumElements() <= GraphImporter::kInlineElements) {
      result = DenseElementsAttr::getFromRawBuffer(resultType, data);
    } else {
      std::string name = "transposed_filter";
      if (auto resource = dyn_cast<DenseResourceElementsAttr>(value))
        name = (resource.getRawHandle().getKey() + "_transposed").str();
      result = DenseResourceElementsAttr::get(
          resultType, name,
          HeapAsmResourceBlob::allocateAndCopyWithAlign(
              ArrayRef<char>(data), alignof(std::max_align_t)));
    }
    return ConstantOp::create(node.builder(), node.loc(), result);
  }

  // A filter computed at run time: reverse each spatial axis (a gather of
  // constant indices k - 1, ..., 0; a negative-step kiln.slice does not yet
  // compile for the gfx targets), then regroup the channels (one group: swap
  // the two channel dimensions).
  Value flipped = filter;
  for (int64_t d = 2; d < rank; ++d) {
    if (shape[d] == 1)
      continue;
    SmallVector<int64_t> reversed;
    for (int64_t k = shape[d] - 1; k >= 0; --k)
      reversed.push_back(k);
    auto indexType =
        RankedTensorType::get({shape[d]}, node.builder().getI64Type());
    Value indices = ConstantOp::create(
        node.builder(), node.loc(),
        ElementsAttr(DenseElementsAttr::get(indexType, ArrayRef(reversed))));
    flipped = node.create<GatherOp>(flipped, indices,
                                    node.builder().getI64IntegerAttr(d));
  }
  if (groups == 1) {
    SmallVector<int64_t> swap = {1, 0};
    for (int64_t d = 2; d < rank; ++d)
      swap.push_back(d);
    return node.create<TransposeOp>(flipped, swap);
  }
  SmallVector<int64_t> split = {groups, inPerGroup, outPerGroup};
  llvm::append_range(split, shape.drop_front(2));
  SmallVector<int64_t> perm = {0, 2, 1};
  for (int64_t d = 3; d <= rank; ++d)
    perm.push_back(d);
  Value swapped = node.create<TransposeOp>(node.reshape(flipped, split), perm);
  return node.reshape(swapped, resultShape);
}

/// ConvTranspose with groups, strides, dilations, output_padding and
/// explicit, automatic or output_shape-derived padding, as a kiln.conv over
/// the zero-interleaved input.
static LogicalResult convertConvTranspose(NodeContext &node) {
  Value input = node.input(0), filter = node.input(1);
  auto inType = cast<RankedTensorType>(input.getType());
  auto filterType = cast<RankedTensorType>(filter.getType());
  int64_t rank = inType.getRank();
  if (rank < 3 || filterType.getRank() != rank) {
    node.emitError() << "expected input and filter of equal rank >= 3, got "
                     << inType << " and " << filterType;
    return failure();
  }
  if (filterType.getElementType() != inType.getElementType()) {
    node.emitError() << "filter element type differs from the input's";
    return failure();
  }
  ArrayRef<int64_t> inShape = inType.getShape();
  ArrayRef<int64_t> filterShape = filterType.getShape();
  int64_t spatial = rank - 2;
  if (ShapedType::isDynamicShape(inShape.drop_front()) ||
      !filterType.hasStaticShape()) {
    node.emitError() << "needs static channel and spatial sizes, got input "
                     << inType << " and filter " << filterType;
    return failure();
  }

  auto kernel = spatialAttr(node, "kernel_shape", spatial, 0);
  auto strides = spatialAttr(node, "strides", spatial, 1);
  auto dilations = spatialAttr(node, "dilations", spatial, 1);
  auto outputPadding = spatialAttr(node, "output_padding", spatial, 0);
  if (failed(kernel) || failed(strides) || failed(dilations) ||
      failed(outputPadding))
    return failure();
  ArrayRef<int64_t> filterSpatial = filterShape.drop_front(2);
  if (node.hasAttr("kernel_shape") &&
      ArrayRef<int64_t>(*kernel) != filterSpatial) {
    node.emitError() << "kernel_shape does not match the filter " << filterType;
    return failure();
  }
  if (llvm::any_of(*strides, [](int64_t s) { return s < 1; }) ||
      llvm::any_of(*dilations, [](int64_t d) { return d < 1; })) {
    node.emitError() << "strides and dilations must be positive, got ["
                     << llvm::interleaved(*strides) << "] and ["
                     << llvm::interleaved(*dilations) << "]";
    return failure();
  }
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t adjust = (*outputPadding)[i];
    if (adjust < 0 || adjust >= std::max((*strides)[i], (*dilations)[i])) {
      node.emitError() << "output_padding " << adjust
                       << " of spatial dimension " << i
                       << " must be non-negative and less than its stride ("
                       << (*strides)[i] << ") or dilation (" << (*dilations)[i]
                       << ")";
      return failure();
    }
  }

  int64_t groups = node.intAttr("group", 1);
  int64_t channels = inShape[1];
  if (groups < 1 || channels % groups != 0 || filterShape[0] != channels) {
    node.emitError() << "group " << groups << " must divide the " << channels
                     << " input channels, and the filter " << filterType
                     << " must have one row per input channel";
    return failure();
  }
  if (!llvm::checkedMul(groups, filterShape[1])) {
    node.emitError() << "group " << groups << " times " << filterShape[1]
                     << " output channels per group overflows";
    return failure();
  }
  int64_t outChannels = groups * filterShape[1];
  Value bias = node.hasInput(2) ? node.input(2) : Value();
  if (bias) {
    auto biasType = cast<RankedTensorType>(bias.getType());
    if (biasType.getRank() != 1 || biasType.getShape()[0] != outChannels) {
      node.emitError() << "bias " << biasType << " does not match the "
                       << outChannels << " output channels";
      return failure();
    }
  }

  SmallVector<int64_t> pads, outSizes;
  if (failed(transposedWindow(node, inShape.drop_front(2), filterSpatial,
                              *strides, *dilations, *outputPadding, pads,
                              outSizes)))
    return failure();

  // Zero interleaving: [N, C, D, ...] -> [N, C, D, 1, ...] padded to
  // [N, C, D, s, ...], then [N, C, D * s, ...]. That leaves s - 1 zeros after
  // the last element too, which the end padding below accounts for.
  Value x = input;
  if (llvm::any_of(*strides, [](int64_t s) { return s > 1; })) {
    SmallVector<int64_t> split(inShape.take_front(2)), merged = split;
    SmallVector<int64_t> tail;
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t s = (*strides)[i], dim = inShape[i + 2];
      split.push_back(dim);
      tail.push_back(0);
      if (s > 1) {
        split.push_back(1);
        tail.push_back(s - 1);
      }
      merged.push_back(dim * s);
    }
    SmallVector<int64_t> interleave(split.size() + 2, 0);
    llvm::append_range(interleave, tail);
    OpBuilder &b = node.builder();
    x = node.create<PadOp>(node.reshape(x, split),
                           b.getDenseI64ArrayAttr(interleave),
                           b.getStringAttr("constant"), b.getF64FloatAttr(0));
    x = node.reshape(x, merged);
  }

  // The stride-1 convolution reads d * (k - 1) elements of padding on each
  // side of the interleaved input, less the ConvTranspose's pads, plus the
  // output_padding at the end; what would be negative is cropped first.
  SmallVector<int64_t> convPads(2 * spatial), crop(2 * rank, 0);
  bool crops = false;
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t reach = (*dilations)[i] * (filterSpatial[i] - 1);
    int64_t begin = reach - pads[i];
    int64_t end =
        reach - pads[i + spatial] + (*outputPadding)[i] - ((*strides)[i] - 1);
    convPads[i] = std::max<int64_t>(begin, 0);
    convPads[i + spatial] = std::max<int64_t>(end, 0);
    crop[i + 2] = std::min<int64_t>(begin, 0);
    crop[i + 2 + rank] = std::min<int64_t>(end, 0);
    crops |= begin < 0 || end < 0;
  }
  if (crops) {
    OpBuilder &b = node.builder();
    x = node.create<PadOp>(x, b.getDenseI64ArrayAttr(crop),
                           b.getStringAttr("constant"), b.getF64FloatAttr(0));
  }

  Value weights = transposedFilter(node, filter, groups);
  OpBuilder &b = node.builder();
  SmallVector<int64_t> ones(spatial, 1);
  Value result = node.create<ConvOp>(
      x, weights, bias, b.getDenseI64ArrayAttr(ones),
      b.getDenseI64ArrayAttr(*dilations), b.getDenseI64ArrayAttr(convPads),
      b.getI64IntegerAttr(groups));
  // (A failed inference left a stand-in value, already reported.)
  assert((!result.getDefiningOp<ConvOp>() ||
          cast<RankedTensorType>(result.getType()).getShape().drop_front(2) ==
              ArrayRef<int64_t>(outSizes)) &&
         "convolution size differs from ConvTranspose's output size");
  (void)outSizes;
  node.setOutput(0, result);
  return success();
}

void onnx_import::registerConvPatterns(PatternRegistry &r) {
  r.add("Conv", 7, convertConv);
  r.add("ConvInteger", 10, convertConvInteger);
  r.add("QLinearConv", 10, convertQLinearConv);
  // Opset 11 reworded the padding rules (output_shape = input * strides for
  // SAME_*, the odd padding element at the end for SAME_UPPER) to what
  // ONNX Runtime does for every opset; Kiln follows it from opset 1.
  r.add("ConvTranspose", 1, convertConvTranspose);
}
