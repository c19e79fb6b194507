//===- Pooling.cpp - ONNX pooling -> kiln ---------------------------------===//
//
// MaxPool and AveragePool become kiln.max_pool / kiln.avg_pool (MaxPool of
// 8- and 16-bit integers through their exact f32 values); the global
// variants are reductions over the spatial dimensions. MaxPool's Indices
// output is an arg-max over the window taps, gathered from the input with
// constant positions; MaxUnpool scatters its input into zeros, plane by
// plane.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// At most this many window taps (output positions times kernel elements)
/// for MaxPool's Indices: their positions are constants built at import.
static constexpr int64_t kMaxWindowTaps = int64_t(1) << 24;

/// MaxPool's Indices output for `input` [N, C, spatial...] pooled to
/// `outShape`: for every output position, the index of the first largest
/// element of its window in the input flattened row-major (`columnMajor`:
/// its spatial dimensions flattened first dimension fastest, as
/// storage_order 1 asks), counting across the batch and channels. All the
/// windows' taps are read by one kiln.gather with constant positions, laid
/// out [output position, tap]; taps in the padding are -inf; a kiln.argmax
/// over the taps picks the first largest, whose index a second gather reads
/// from a constant table. Null after a diagnostic.
static Value maxPoolIndices(NodeContext &node, Value input,
                            ArrayRef<int64_t> outShape,
                            ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                            ArrayRef<int64_t> dilations, ArrayRef<int64_t> pads,
                            bool columnMajor) {
  auto type = cast<RankedTensorType>(input.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t spatial = shape.size() - 2;
  ArrayRef<int64_t> in = shape.drop_front(2), out = outShape.drop_front(2);
  int64_t planes = shape[0] * shape[1], planeSize = computeProduct(in);
  // Kernel sizes and output extents may be any positive int64: their
  // products are checked before the bound below.
  auto checkedProduct = [](ArrayRef<int64_t> sizes) -> std::optional<int64_t> {
    if (llvm::is_contained(sizes, 0))
      return 0;
    std::optional<int64_t> product = 1;
    for (int64_t size : sizes)
      product = product ? llvm::checkedMul(*product, size) : std::nullopt;
    return product;
  };
  std::optional<int64_t> positionCount = checkedProduct(out),
                         tapCount = checkedProduct(kernel);
  if (positionCount == 0 || tapCount == 0 || planes == 0)
    return node.splat(
        RankedTensorType::get(outShape, node.builder().getI64Type()), 0);
  int64_t positions = positionCount.value_or(0), taps = tapCount.value_or(0);
  if (!positionCount || !tapCount || positions > kMaxWindowTaps / taps) {
    node.emitError() << "the Indices output would need more than "
                     << kMaxWindowTaps
                     << " window taps (output positions times kernel size)";
    return Value();
  }
  SmallVector<int64_t> rowMajor(spatial, 1), colMajor(spatial, 1);
  for (int64_t i = spatial - 2; i >= 0; --i)
    rowMajor[i] = rowMajor[i + 1] * in[i + 1];
  for (int64_t i = 1; i < spatial; ++i)
    colMajor[i] = colMajor[i - 1] * in[i - 1];
  // For output position o and tap k: where the tap reads (0 in the
  // padding), whether it is in the padding, and the index it stands for.
  SmallVector<int64_t> reads, stored;
  SmallVector<bool> padded;
  reads.reserve(positions * taps);
  SmallVector<int64_t> o(spatial, 0);
  for (int64_t p = 0; p < positions; ++p) {
    SmallVector<int64_t> k(spatial, 0);
    for (int64_t t = 0; t < taps; ++t) {
      bool inside = true;
      int64_t flat = 0, colFlat = 0;
      for (int64_t i = 0; i < spatial && inside; ++i) {
        // Strides and dilations may be any positive int64: the tap's place
        // is computed in 128 bits and only used inside the input.
        using Wide = __int128;
        Wide at = Wide(o[i]) * strides[i] - pads[i] + Wide(k[i]) * dilations[i];
        inside = at >= 0 && at < in[i];
        if (inside) {
          flat += int64_t(at) * rowMajor[i];
          colFlat += int64_t(at) * colMajor[i];
        }
      }
      reads.push_back(inside ? flat : 0);
      if (columnMajor)
        stored.push_back(inside ? colFlat : 0);
      padded.push_back(!inside);
      for (int64_t i = spatial - 1; i >= 0 && ++k[i] == kernel[i]; --i)
        k[i] = 0;
    }
    for (int64_t i = spatial - 1; i >= 0 && ++o[i] == out[i]; --i)
      o[i] = 0;
  }
  OpBuilder &b = node.builder();
  Value readTable = i64Tensor(node, {positions * taps}, reads);
  Value window = node.create<GatherOp>(
      node.reshape(input, {shape[0], shape[1], planeSize}), readTable, int64_t(2));
  window = node.reshape(window, {shape[0], shape[1], positions, taps});
  if (llvm::is_contained(padded, true)) {
    auto maskType = RankedTensorType::get({positions, taps}, b.getI1Type());
    Value mask = ConstantOp::create(
        b, node.loc(), DenseElementsAttr::get(maskType, ArrayRef(padded)));
    window = node.create<SelectOp>(
        mask, node.scalar(type.getElementType(), -INFINITY), window);
  }
  Value tap = node.create<ArgMaxOp>(window, b.getI64IntegerAttr(3),
                                    b.getBoolAttr(false),
                                    b.getBoolAttr(false)); // [N, C, positions]
  SmallVector<int64_t> rowStarts;
  for (int64_t p = 0; p < positions; ++p)
    rowStarts.push_back(p * taps);
  Value entry =
      node.create<AddOp>(tap, i64Tensor(node, {positions}, rowStarts));
  // Row-major indices are the read positions themselves (both 0 in the
  // padding, which argmax never picks over a real tap).
  Value index = node.create<GatherOp>(
      columnMajor ? i64Tensor(node, {positions * taps}, stored) : readTable, entry,
      int64_t(0));
  SmallVector<int64_t> planeStarts;
  for (int64_t p = 0; p < planes; ++p)
    planeStarts.push_back(p * planeSize);
  index = node.create<AddOp>(
      index, i64Tensor(node, {shape[0], shape[1], 1}, planeStarts));
  return node.reshape(index, outShape);
}

template <typename OpTy>
static LogicalResult convertPool(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  // MaxPool of 8- and 16-bit integers (opset 12+) pools their exact f32
  // values.
  Type element = type.getElementType();
  bool narrowInteger = std::is_same_v<OpTy, MaxPoolOp> &&
                       isa<IntegerType>(element) &&
                       element.getIntOrFloatBitWidth() <= 16 &&
                       element.getIntOrFloatBitWidth() > 1;
  if (type.getRank() < 3 || (!isa<FloatType>(element) && !narrowInteger)) {
    node.emitError() << "expected a floating-point"
                     << (std::is_same_v<OpTy, MaxPoolOp>
                             ? " or 8/16-bit integer"
                             : "")
                     << " input of rank >= 3, got " << type;
    return failure();
  }
  if (narrowInteger)
    input = node.cast(input, node.builder().getF32Type());
  int64_t spatial = type.getRank() - 2;
  if (!node.hasAttr("kernel_shape")) {
    node.emitError() << "attribute 'kernel_shape' is required";
    return failure();
  }
  auto kernel = spatialAttr(node, "kernel_shape", spatial, 1);
  auto strides = spatialAttr(node, "strides", spatial, 1);
  auto dilations = spatialAttr(node, "dilations", spatial, 1);
  if (failed(kernel) || failed(strides) || failed(dilations))
    return failure();
  auto pads = windowPads(node, type.getShape().drop_front(2), *kernel,
                         *strides, *dilations);
  if (failed(pads))
    return failure();
  for (int64_t i = 0; i < spatial; ++i)
    if ((*pads)[i] >= (*kernel)[i] || (*pads)[i + spatial] >= (*kernel)[i]) {
      node.emitError() << "pads must be smaller than the kernel";
      return failure();
    }
  OpBuilder &b = node.builder();
  bool ceilMode = node.intAttr("ceil_mode", 0) != 0;
  Value result;
  if constexpr (std::is_same_v<OpTy, MaxPoolOp>) {
    result = node.create<MaxPoolOp>(
        input, b.getDenseI64ArrayAttr(*kernel), b.getDenseI64ArrayAttr(*strides),
        b.getDenseI64ArrayAttr(*dilations), b.getDenseI64ArrayAttr(*pads),
        b.getBoolAttr(ceilMode));
  } else {
    result = node.create<AvgPoolOp>(
        input, b.getDenseI64ArrayAttr(*kernel), b.getDenseI64ArrayAttr(*strides),
        b.getDenseI64ArrayAttr(*dilations), b.getDenseI64ArrayAttr(*pads),
        b.getBoolAttr(ceilMode),
        b.getBoolAttr(node.intAttr("count_include_pad", 0) != 0));
  }
  node.setOutput(0, narrowInteger ? node.cast(result, element) : result);
  if constexpr (std::is_same_v<OpTy, MaxPoolOp>) {
    if (node.hasOutput(1)) {
      Value indices = maxPoolIndices(
          node, input, cast<RankedTensorType>(result.getType()).getShape(),
          *kernel, *strides, *dilations, *pads,
          node.intAttr("storage_order", 0) != 0);
      if (!indices)
        return failure();
      node.setOutput(1, indices);
    }
  }
  return success();
}

template <typename OpTy>
static LogicalResult convertGlobalPool(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  if (type.getRank() < 3) {
    node.emitError() << "expected an input of rank >= 3, got " << type;
    return failure();
  }
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(2, type.getRank()));
  OpBuilder &b = node.builder();
  node.setOutput(0, node.create<OpTy>(input, b.getDenseI64ArrayAttr(axes),
                                      b.getBoolAttr(true)));
  return success();
}

/// MaxUnpool: X [N, C, spatial...] written into zeros at the positions its
/// indices give (flattened indices, as MaxPool's Indices output holds them).
/// The indices address the output of the size MaxPool's window arithmetic
/// gives back ((in - 1) * stride + kernel - pads; pads are ignored when
/// 'output_shape' is given, as the ONNX reference does), and that block
/// sits at the start of a larger 'output_shape', zero-padded at the end.
/// The scatter runs per (n, c) plane (a kiln.scatter_elements along the
/// plane): an index outside its own plane, which MaxPool never produces, is
/// dropped.
static LogicalResult convertMaxUnpool(NodeContext &node) {
  Value input = node.input(0);
  RankedTensorType type = node.inputType(0), indicesType = node.inputType(1);
  if (type.getRank() < 3 || !isa<FloatType>(type.getElementType())) {
    node.emitError() << "expected a floating-point input of rank >= 3, got "
                     << type;
    return failure();
  }
  if (indicesType.getShape() != type.getShape() ||
      !isa<IntegerType>(indicesType.getElementType())) {
    node.emitError() << "expected integer indices of X's shape, got "
                     << indicesType;
    return failure();
  }
  ArrayRef<int64_t> shape = type.getShape();
  int64_t rank = shape.size(), spatial = rank - 2;
  if (!node.hasAttr("kernel_shape")) {
    node.emitError() << "attribute 'kernel_shape' is required";
    return failure();
  }
  auto kernel = spatialAttr(node, "kernel_shape", spatial, 1);
  auto strides = spatialAttr(node, "strides", spatial, 1);
  if (failed(kernel) || failed(strides))
    return failure();
  SmallVector<int64_t> pads = node.intsAttr("pads");
  if (pads.empty())
    pads.assign(2 * spatial, 0);
  if ((int64_t)pads.size() != 2 * spatial) {
    node.emitError() << "attribute 'pads' must have " << 2 * spatial
                     << " entries, got " << pads.size();
    return failure();
  }
  bool given = node.hasInput(2);
  if (given)
    pads.assign(2 * spatial, 0);
  SmallVector<int64_t> inferred(shape.take_front(2));
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t size = (shape[i + 2] - 1) * (*strides)[i] + (*kernel)[i] -
                   pads[i] - pads[i + spatial];
    if ((*kernel)[i] < 1 || (*strides)[i] < 1 || pads[i] < 0 ||
        pads[i + spatial] < 0 || size < 1) {
      node.emitError() << "kernel_shape, strides and pads give spatial "
                          "dimension "
                       << i << " an output size of " << size;
      return failure();
    }
    inferred.push_back(size);
  }
  SmallVector<int64_t> outShape = inferred;
  if (given) {
    auto values = node.constantInts(2, "output_shape");
    if (failed(values))
      return failure();
    bool fits = (int64_t)values->size() == rank;
    for (int64_t i = 0; fits && i < rank; ++i)
      fits = (*values)[i] >= inferred[i];
    if (!fits) {
      InFlightDiagnostic diag = node.emitError();
      diag << "output_shape [";
      llvm::interleaveComma(*values, diag);
      diag << "] must have " << rank << " entries, none smaller than the "
           << "unpooled shape [";
      llvm::interleaveComma(inferred, diag);
      diag << "]";
      return failure();
    }
    outShape = *values;
    if (!isWithinSizeLimit(outShape)) {
      node.emitError() << "its result would have more than "
                       << kMaxTensorElements << " elements";
      return failure();
    }
  }

  int64_t planes = shape[0] * shape[1];
  int64_t planeSize = computeProduct(ArrayRef(inferred).drop_front(2));
  int64_t count = computeProduct(shape.drop_front(2));
  Type element = type.getElementType(), i64 = node.builder().getI64Type();
  OpBuilder &b = node.builder();
  Value result;
  if (planes == 0 || count == 0) {
    result = node.splat(RankedTensorType::get(inferred, element), 0);
  } else {
    // The index within its plane; one outside it matches no position.
    SmallVector<int64_t> planeStarts;
    for (int64_t p = 0; p < planes; ++p)
      planeStarts.push_back(p * planeSize);
    Value local = node.create<SubOp>(
        node.reshape(node.cast(node.input(1), i64), {planes, count}),
        i64Tensor(node, {planes, 1}, planeStarts));
    Value outside = node.create<OrOp>(
        node.create<LessOp>(local, node.scalar(i64, 0)),
        node.create<GreaterEqualOp>(local, node.scalar(i64, planeSize)));
    local = node.create<SelectOp>(outside, node.scalar(i64, planeSize), local);
    Value zeros =
        node.splat(RankedTensorType::get({planes, planeSize}, element), 0);
    result = node.create<ScatterElementsOp>(
        zeros, local, node.reshape(input, {planes, count}),
        b.getI64IntegerAttr(1), b.getStringAttr("none"));
    result = node.reshape(result, inferred);
  }
  if (outShape != inferred) {
    SmallVector<int64_t> padding(rank, 0);
    for (int64_t i = 0; i < rank; ++i)
      padding.push_back(outShape[i] - inferred[i]);
    result = node.create<PadOp>(result, b.getDenseI64ArrayAttr(padding),
                                b.getStringAttr("constant"),
                                b.getF64FloatAttr(0.0));
  }
  node.setOutput(0, result);
  return success();
}

void onnx_import::registerPoolingPatterns(PatternRegistry &r) {
  r.add("MaxPool", 7, convertPool<MaxPoolOp>);
  r.add("AveragePool", 7, convertPool<AvgPoolOp>);
  r.add("GlobalAveragePool", 7, convertGlobalPool<ReduceMeanOp>);
  r.add("GlobalMaxPool", 7, convertGlobalPool<ReduceMaxOp>);
  r.add("MaxUnpool", 9, convertMaxUnpool);
}
