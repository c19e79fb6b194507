//===- DataMovement.cpp - ONNX shape and data movement ops -> kiln --------===//
//
// Reshape, Flatten, Squeeze and Unsqueeze (all kiln.reshape), Transpose,
// Concat, Slice, Split, Pad, Gather, GatherElements, ScatterElements (and
// the older Scatter), GatherND and ScatterND (as Gather and ScatterElements
// over rows), Compress, ReverseSequence, OneHot, Expand, Tile, Trilu, EyeLike, DepthToSpace,
// SpaceToDepth, and the shape computations Shape, Size, Range and
// ConstantOfShape, which become constants because every shape is static
// after import.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CheckedArithmetic.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// Axes from attribute `name` (before `inputSince`) or from input 1.
static FailureOr<SmallVector<int64_t>>
axesOperand(NodeContext &node, int64_t inputSince, StringRef name = "axes") {
  if (node.opset() < inputSince)
    return node.intsAttr(name);
  if (!node.hasInput(1))
    return SmallVector<int64_t>();
  return node.constantInts(1, name);
}

static LogicalResult convertReshape(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  auto requested = node.constantInts(1, "shape");
  if (failed(requested))
    return failure();
  bool allowZero = node.intAttr("allowzero", 0) != 0;
  SmallVector<int64_t> shape;
  int64_t inferred = -1, known = 1;
  for (auto [i, d] : llvm::enumerate(*requested)) {
    if (d == 0 && !allowZero) {
      if ((int64_t)i >= type.getRank()) {
        node.emitError() << "shape entry " << i << " copies a dimension the "
                         << "input " << type << " does not have";
        return failure();
      }
      d = type.getShape()[i];
    }
    if (d == -1) {
      if (inferred >= 0) {
        node.emitError() << "shape has more than one -1";
        return failure();
      }
      inferred = i;
    } else if (d < 0) {
      node.emitError() << "shape has an invalid entry " << d;
      return failure();
    } else {
      // (A fuzzed shape can overflow the product: that is an error, not UB.)
      std::optional<int64_t> product = llvm::checkedMul(known, d);
      if (!product) {
        node.emitError() << "shape [" << llvm::join(llvm::map_range(*requested, [](int64_t v) { return std::to_string(v); }), ", ")
                         << "] has more elements than Kiln can count";
        return failure();
      }
      known = *product;
    }
    shape.push_back(d);
  }
  int64_t total = type.getNumElements();
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      node.emitError() << "cannot infer the -1 entry: " << total
                       << " elements do not divide into " << known;
      return failure();
    }
    shape[inferred] = total / known;
  } else if (known != total) {
    node.emitError() << "cannot reshape " << type << " (" << total
                     << " elements) into " << known << " elements";
    return failure();
  }
  node.setOutput(0, node.reshape(input, shape));
  return success();
}

static LogicalResult convertFlatten(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  int64_t axis = node.intAttr("axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank) {
    node.emitError() << "axis " << node.intAttr("axis", 1)
                     << " is out of range for rank " << rank;
    return failure();
  }
  ArrayRef<int64_t> shape = type.getShape();
  node.setOutput(0, node.reshape(input, {computeProduct(shape.take_front(axis)),
                                         computeProduct(shape.drop_front(axis))}));
  return success();
}

static LogicalResult convertSqueeze(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  auto axes = axesOperand(node, 13);
  if (failed(axes))
    return failure();
  SmallVector<bool> drop(type.getRank(), false);
  if (axes->empty()) {
    for (auto [i, d] : llvm::enumerate(type.getShape()))
      drop[i] = d == 1;
  }
  for (int64_t axis : *axes) {
    auto a = node.normalizeAxis(axis, type.getRank());
    if (failed(a))
      return failure();
    if (type.getShape()[*a] != 1) {
      node.emitError() << "cannot squeeze dimension " << *a << " of size "
                       << type.getShape()[*a];
      return failure();
    }
    drop[*a] = true;
  }
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(type.getShape()))
    if (!drop[i])
      shape.push_back(d);
  node.setOutput(0, node.reshape(input, shape));
  return success();
}

static LogicalResult convertUnsqueeze(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  auto axes = axesOperand(node, 13);
  if (failed(axes))
    return failure();
  int64_t rank = type.getRank() + axes->size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t axis : *axes) {
    auto a = node.normalizeAxis(axis, rank);
    if (failed(a))
      return failure();
    if (inserted[*a]) {
      node.emitError() << "axis " << axis << " is listed twice";
      return failure();
    }
    inserted[*a] = true;
  }
  SmallVector<int64_t> shape;
  auto dims = type.getShape().begin();
  for (int64_t i = 0; i < rank; ++i)
    shape.push_back(inserted[i] ? 1 : *dims++);
  node.setOutput(0, node.reshape(input, shape));
  return success();
}

static LogicalResult convertTranspose(NodeContext &node) {
  Value input = node.input(0);
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  SmallVector<int64_t> perm = node.intsAttr("perm");
  if (!node.hasAttr("perm"))
    perm = llvm::to_vector(llvm::reverse(llvm::seq<int64_t>(0, rank)));
  SmallVector<int64_t> sorted(perm);
  llvm::sort(sorted);
  if (sorted != llvm::to_vector(llvm::seq<int64_t>(0, rank))) {
    node.emitError() << "perm is not a permutation of the input's " << rank
                     << " dimensions";
    return failure();
  }
  node.setOutput(0, node.create<TransposeOp>(input, perm));
  return success();
}

static LogicalResult convertConcat(NodeContext &node) {
  SmallVector<Value> inputs;
  for (unsigned i = 0; i < node.numInputs(); ++i)
    inputs.push_back(node.input(i));
  auto first = cast<RankedTensorType>(inputs.front().getType());
  auto axis = node.normalizeAxis(node.intAttr("axis", 0), first.getRank());
  if (failed(axis))
    return failure();
  for (Value v : inputs) {
    auto type = cast<RankedTensorType>(v.getType());
    bool fits = type.getRank() == first.getRank() &&
                type.getElementType() == first.getElementType();
    for (int64_t d = 0; fits && d < type.getRank(); ++d)
      fits = d == *axis || type.getShape()[d] == first.getShape()[d];
    if (!fits) {
      node.emitError() << "input " << type << " does not fit " << first
                       << " when concatenating along axis " << *axis;
      return failure();
    }
  }
  node.setOutput(0, node.create<ConcatOp>(inputs, *axis));
  return success();
}

/// Emits kiln.slice for ONNX-style starts/ends/axes/steps, clamping and
/// normalizing the bounds as ONNX specifies.
static FailureOr<Value> slice(NodeContext &node, Value input,
                              ArrayRef<int64_t> starts, ArrayRef<int64_t> ends,
                              ArrayRef<int64_t> axesIn,
                              ArrayRef<int64_t> stepsIn) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> axes(axesIn);
  if (axes.empty())
    axes = llvm::to_vector(llvm::seq<int64_t>(0, starts.size()));
  SmallVector<int64_t> steps(stepsIn);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    node.emitError() << "starts, ends, axes and steps differ in length";
    return failure();
  }
  SmallVector<int64_t> s(rank, 0), e(type.getShape()), st(rank, 1);
  SmallVector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    auto axis = node.normalizeAxis(axes[i], rank);
    if (failed(axis))
      return failure();
    if (seen[*axis]) {
      node.emitError() << "axis " << axes[i] << " is sliced twice";
      return failure();
    }
    seen[*axis] = true;
    int64_t dim = type.getShape()[*axis], step = steps[i];
    if (step == 0) {
      node.emitError() << "step of axis " << axes[i] << " is zero";
      return failure();
    }
    auto clampIndex = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0)
        v = v < -dim ? -dim - 1 : v + dim; // Stay below lo after clamping.
      return std::clamp(v, lo, hi);
    };
    if (step > 0) {
      s[*axis] = clampIndex(starts[i], 0, dim);
      e[*axis] = clampIndex(ends[i], 0, dim);
    } else {
      s[*axis] = clampIndex(starts[i], 0, dim - 1);
      e[*axis] = clampIndex(ends[i], -1, dim - 1);
    }
    st[*axis] = step;
  }
  return node.create<SliceOp>(input, s, e, st);
}

static LogicalResult convertSlice(NodeContext &node) {
  Value input = node.input(0);
  FailureOr<Value> result = failure();
  if (node.opset() < 10) {
    result = slice(node, input, node.intsAttr("starts"), node.intsAttr("ends"),
                   node.intsAttr("axes"), {});
  } else {
    auto starts = node.constantInts(1, "starts");
    auto ends = node.constantInts(2, "ends");
    if (failed(starts) || failed(ends))
      return failure();
    SmallVector<int64_t> axes, steps;
    if (node.hasInput(3)) {
      auto v = node.constantInts(3, "axes");
      if (failed(v))
        return failure();
      axes = *v;
    }
    if (node.hasInput(4)) {
      auto v = node.constantInts(4, "steps");
      if (failed(v))
        return failure();
      steps = *v;
    }
    result = slice(node, input, *starts, *ends, axes, steps);
  }
  if (failed(result))
    return failure();
  node.setOutput(0, *result);
  return success();
}

static LogicalResult convertSplit(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  auto axis = node.normalizeAxis(node.intAttr("axis", 0), type.getRank());
  if (failed(axis))
    return failure();
  int64_t dim = type.getShape()[*axis];
  unsigned outputs = node.numOutputs();
  SmallVector<int64_t> sizes;
  if (node.opset() < 13) {
    sizes = node.intsAttr("split");
  } else if (node.hasInput(1)) {
    auto v = node.constantInts(1, "split");
    if (failed(v))
      return failure();
    sizes = *v;
  }
  if (sizes.empty()) {
    // Equal parts; from opset 18 the last one may be smaller.
    int64_t parts = node.opset() >= 18 && node.hasAttr("num_outputs")
                        ? node.intAttr("num_outputs", outputs)
                        : outputs;
    if (parts != outputs || parts < 1) {
      node.emitError() << "num_outputs " << parts << " must be the number of outputs, "
                       << outputs;
      return failure();
    }
    int64_t chunk = llvm::divideCeil(dim, parts);
    if (node.opset() < 18 && dim % parts != 0) {
      node.emitError() << "dimension " << dim << " does not split into "
                       << parts << " equal parts";
      return failure();
    }
    for (int64_t i = 0, left = dim; i < parts; ++i, left -= chunk)
      sizes.push_back(std::min(chunk, left));
  }
  if (sizes.size() != outputs || llvm::any_of(sizes, [](int64_t s) {
        return s < 0;
      }) || std::accumulate(sizes.begin(), sizes.end(), int64_t(0)) != dim) {
    node.emitError() << "split sizes do not add up to dimension " << *axis
                     << " of size " << dim << " over " << outputs
                     << " outputs";
    return failure();
  }
  int64_t offset = 0;
  for (unsigned i = 0; i < outputs; ++i) {
    FailureOr<Value> part = slice(node, input, {offset}, {offset + sizes[i]},
                                  {*axis}, {1});
    if (failed(part))
      return failure();
    node.setOutput(i, *part);
    offset += sizes[i];
  }
  return success();
}

static LogicalResult convertPad(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  std::string mode = node.stringAttr("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    node.emitError() << "mode '" << mode << "' is not supported";
    return failure();
  }
  SmallVector<int64_t> pads;
  double value = 0.0;
  if (node.opset() < 11) {
    pads = node.intsAttr("pads");
    value = node.floatAttr("value", 0.0);
  } else {
    auto p = node.constantInts(1, "pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (node.hasInput(2)) {
      auto v = node.constantFloats(2, "constant_value");
      if (failed(v) || v->size() != 1) {
        node.emitError() << "constant_value must be a scalar constant";
        return failure();
      }
      value = (*v)[0];
    }
  }
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  if (node.opset() >= 18 && node.hasInput(3)) {
    auto a = node.constantInts(3, "axes");
    if (failed(a))
      return failure();
    axes.clear();
    for (int64_t axis : *a) {
      auto n = node.normalizeAxis(axis, rank);
      if (failed(n))
        return failure();
      axes.push_back(*n);
    }
  }
  if (pads.size() != 2 * axes.size()) {
    node.emitError() << "expected " << 2 * axes.size() << " pads, got "
                     << pads.size();
    return failure();
  }
  SmallVector<int64_t> full(2 * rank, 0);
  for (auto [i, axis] : llvm::enumerate(axes)) {
    full[axis] = pads[i];
    full[axis + rank] = pads[i + axes.size()];
  }
  for (int64_t d = 0; d < rank; ++d)
    if (type.getShape()[d] + full[d] + full[d + rank] < 0) {
      node.emitError() << "pads crop dimension " << d << " below zero";
      return failure();
    }
  OpBuilder &b = node.builder();
  node.setOutput(0, node.create<PadOp>(input, b.getDenseI64ArrayAttr(full),
                                       b.getStringAttr(mode),
                                       b.getF64FloatAttr(value)));
  return success();
}

static LogicalResult convertGather(NodeContext &node) {
  Value data = node.input(0);
  auto type = cast<RankedTensorType>(data.getType());
  auto axis = node.normalizeAxis(node.intAttr("axis", 0), type.getRank());
  if (failed(axis))
    return failure();
  if (!isa<IntegerType>(node.inputType(1).getElementType())) {
    node.emitError() << "indices must be int32 or int64, not " << node.inputType(1);
    return failure();
  }
  if (DenseElementsAttr indices = node.constantInput(1)) {
    int64_t dim = type.getShape()[*axis];
    for (const APInt &v : indices.getValues<APInt>()) {
      int64_t i = v.getSExtValue();
      if (i < -dim || i >= dim) {
        node.emitError() << "index " << i << " is out of range for axis "
                         << *axis << " of size " << dim;
        return failure();
      }
    }
  }
  node.setOutput(0, node.create<GatherOp>(data, node.input(1), *axis));
  return success();
}

/// The index operand of GatherElements, ScatterElements and OneHot: `i32`
/// and `i64` stay, other integer and float types become `i64` (truncating).
static Value indexOperand(NodeContext &node, Value indices) {
  Type element = cast<RankedTensorType>(indices.getType()).getElementType();
  if (element.isSignlessInteger(32) || element.isSignlessInteger(64))
    return indices;
  return node.cast(indices, node.builder().getI64Type());
}

/// Checks constant `indices` against an axis of `size`: ONNX makes an index
/// outside [-size, size) an error.
static LogicalResult checkConstantIndices(NodeContext &node, unsigned input,
                                          int64_t axis, int64_t size) {
  DenseElementsAttr indices = node.constantInput(input);
  if (!indices || !isa<IntegerType>(indices.getElementType()))
    return success();
  for (const APInt &v : indices.getValues<APInt>()) {
    int64_t i = v.getSExtValue();
    if (i < -size || i >= size) {
      node.emitError() << "index " << i << " is out of range for axis " << axis
                       << " of size " << size;
      return failure();
    }
  }
  return success();
}

static LogicalResult convertGatherElements(NodeContext &node) {
  Value data = node.input(0);
  auto type = cast<RankedTensorType>(data.getType());
  auto axis = node.normalizeAxis(node.intAttr("axis", 0), type.getRank());
  if (failed(axis) ||
      failed(checkConstantIndices(node, 1, *axis, type.getShape()[*axis])))
    return failure();
  node.setOutput(0, node.create<GatherElementsOp>(
                        data, indexOperand(node, node.input(1)), *axis));
  return success();
}

/// The `reduction` attribute of ScatterElements and ScatterND: none, add,
/// mul, max or min; failure after a diagnostic otherwise.
static FailureOr<std::string> scatterReduction(NodeContext &node) {
  std::string reduction = node.stringAttr("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" &&
      reduction != "max" && reduction != "min") {
    node.emitError() << "unknown reduction '" << reduction << "'";
    return failure();
  }
  return reduction;
}

/// ScatterElements, and Scatter (opsets 9 and 10, the same semantics
/// without `reduction`).
static LogicalResult convertScatterElements(NodeContext &node) {
  Value data = node.input(0);
  auto type = cast<RankedTensorType>(data.getType());
  auto axis = node.normalizeAxis(node.intAttr("axis", 0), type.getRank());
  if (failed(axis) ||
      failed(checkConstantIndices(node, 1, *axis, type.getShape()[*axis])))
    return failure();
  FailureOr<std::string> reduction = scatterReduction(node);
  if (failed(reduction))
    return failure();
  OpBuilder &b = node.builder();
  node.setOutput(0, node.create<ScatterElementsOp>(
                        data, indexOperand(node, node.input(1)), node.input(2),
                        b.getI64IntegerAttr(*axis), b.getStringAttr(*reduction)));
  return success();
}

/// The row numbers GatherND and ScatterND address: `indices` [..., m]
/// (negative entries counting from the end) index dimensions
/// [first, first + m) of `dataShape`; each index tuple becomes the number
/// of its row in those dimensions flattened, an i64 tensor of
/// indices.shape[:-1]. With `batchDims` (GatherND), dimensions [0, first)
/// are batch dimensions shared with the indices, and the row numbers count
/// across the batch too. Null after a diagnostic.
static Value rowNumbers(NodeContext &node, Value indices,
                        ArrayRef<int64_t> dataShape, int64_t first) {
  auto type = cast<RankedTensorType>(indices.getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t m = shape.empty() ? 0 : shape.back();
  if (shape.empty() || m < 1 || first + m > (int64_t)dataShape.size()) {
    node.emitError() << "indices " << type << " must end in a dimension of 1 to "
                     << (int64_t)dataShape.size() - first << " index entries";
    return Value();
  }
  if (shape.take_front(first) != dataShape.take_front(first)) {
    node.emitError() << "the first " << first << " dimensions of indices "
                     << type << " and data must agree (batch_dims)";
    return Value();
  }
  Type i64 = node.builder().getI64Type();
  indices = node.cast(indices, i64);
  // i < 0 ? i + dim : i, then the dot product with the row strides.
  SmallVector<int64_t> dims(dataShape.slice(first, m)), strides(m, 1);
  for (int64_t j = m - 2; j >= 0; --j)
    strides[j] = strides[j + 1] * dims[j + 1];
  auto vectorType = RankedTensorType::get({m}, i64);
  auto constant = [&](ArrayRef<int64_t> values) -> Value {
    return ConstantOp::create(node.builder(), node.loc(),
                              DenseElementsAttr::get(vectorType, values));
  };
  Value negative = node.create<LessOp>(indices, node.scalar(i64, 0));
  Value wrapped = node.create<AddOp>(indices, constant(dims));
  indices = node.create<SelectOp>(negative, wrapped, indices);
  OpBuilder &b = node.builder();
  Value rows = node.create<ReduceSumOp>(
      node.create<MulOp>(indices, constant(strides)),
      b.getDenseI64ArrayAttr({(int64_t)shape.size() - 1}), b.getBoolAttr(false));
  if (first == 0)
    return rows;
  // Batch b of the indices addresses the rows of batch b of the data.
  int64_t batches = computeProduct(shape.take_front(first));
  int64_t rowsPerBatch = computeProduct(dims);
  SmallVector<int64_t> offsets;
  for (int64_t i = 0; i < batches; ++i)
    offsets.push_back(i * rowsPerBatch);
  SmallVector<int64_t> offsetShape(shape.drop_back());
  std::fill(offsetShape.begin() + first, offsetShape.end(), 1);
  Value offset = ConstantOp::create(
      b, node.loc(),
      DenseElementsAttr::get(RankedTensorType::get(offsetShape, i64),
                             ArrayRef<int64_t>(offsets)));
  return node.create<AddOp>(rows, offset);
}

static LogicalResult convertGatherND(NodeContext &node) {
  // The data viewed as rows of its trailing dimensions, gathered by row
  // number: the result is indices.shape[:-1] + data.shape[b + m:].
  Value data = node.input(0);
  ArrayRef<int64_t> shape = node.inputType(0).getShape();
  int64_t batchDims = node.intAttr("batch_dims", 0);
  if (batchDims < 0 || batchDims >= (int64_t)shape.size() ||
      batchDims >= node.inputType(1).getRank()) {
    node.emitError() << "batch_dims " << batchDims
                     << " must be less than the ranks of data and indices";
    return failure();
  }
  Value rows = rowNumbers(node, node.input(1), shape, batchDims);
  if (!rows)
    return failure();
  int64_t m = node.inputType(1).getShape().back();
  SmallVector<int64_t> flat{computeProduct(shape.take_front(batchDims + m))};
  llvm::append_range(flat, shape.drop_front(batchDims + m));
  node.setOutput(0, node.create<GatherOp>(node.reshape(data, flat), rows,
                                          int64_t(0)));
  return success();
}

static LogicalResult convertScatterND(NodeContext &node) {
  // The data viewed as rows of its trailing dimensions and updated row by
  // row: kiln.scatter_elements along the rows with each row number
  // broadcast over its row.
  Value data = node.input(0);
  auto type = node.inputType(0);
  ArrayRef<int64_t> shape = type.getShape();
  Value rows = rowNumbers(node, node.input(1), shape, 0);
  if (!rows)
    return failure();
  FailureOr<std::string> reduction = scatterReduction(node);
  if (failed(reduction))
    return failure();
  int64_t m = node.inputType(1).getShape().back();
  ArrayRef<int64_t> rowShape = shape.drop_front(m);
  auto rowsType = cast<RankedTensorType>(rows.getType());
  SmallVector<int64_t> updatesShape(rowsType.getShape());
  llvm::append_range(updatesShape, rowShape);
  auto updatesType = node.inputType(2);
  if (updatesType.getShape() != ArrayRef<int64_t>(updatesShape) ||
      updatesType.getElementType() != type.getElementType()) {
    node.emitError() << "updates " << updatesType << " must have the shape "
                     << "indices.shape[:-1] + data.shape[m:] = "
                     << RankedTensorType::get(updatesShape,
                                              type.getElementType());
    return failure();
  }
  int64_t count = rowsType.getNumElements();
  SmallVector<int64_t> flat{computeProduct(shape.take_front(m))};
  llvm::append_range(flat, rowShape);
  SmallVector<int64_t> flatUpdates{count}, column{count};
  llvm::append_range(flatUpdates, rowShape);
  column.append(rowShape.size(), 1);
  Value index = node.create<ExpandOp>(
      RankedTensorType::get(flatUpdates, rowsType.getElementType()),
      node.reshape(rows, column));
  OpBuilder &b = node.builder();
  Value scattered = node.create<ScatterElementsOp>(
      node.reshape(data, flat), index,
      node.reshape(node.input(2), flatUpdates), b.getI64IntegerAttr(0),
      b.getStringAttr(*reduction));
  node.setOutput(0, node.reshape(scattered, shape));
  return success();
}

static LogicalResult convertCompress(NodeContext &node) {
  // The slices (or, without an axis, the elements of the flattened input)
  // whose condition is true: a gather of constant positions when the
  // condition is a constant, else a compaction whose size is known only at
  // run time (a Bounded value, see DataDependent.cpp).
  if (!node.inputType(1).getElementType().isInteger(1)) {
    node.emitError() << "condition must be a bool tensor, not " << node.inputType(1);
    return failure();
  }
  DenseElementsAttr condition = node.constantInput(1);
  auto inputAndAxis = axisOrFlattened(node);
  if (failed(inputAndAxis))
    return failure();
  auto [input, axis] = *inputAndAxis;
  int64_t size = cast<RankedTensorType>(input.getType()).getShape()[axis];
  int64_t entries = node.inputType(1).getNumElements();
  if (entries > size) {
    node.emitError() << "the condition has " << entries
                     << " entries, more than the " << size
                     << " of the compressed axis";
    return failure();
  }
  if (!condition) {
    // Entries past the condition's end are dropped, as if it were false.
    Value mask = node.reshape(node.input(1), {entries});
    if (entries < size)
      mask = node.create<ConcatOp>(
          ValueRange{mask, node.splat(RankedTensorType::get(
                                          {size - entries},
                                          node.builder().getI1Type()),
                                      0)},
          int64_t(0));
    node.setOutput(0, compactRows(node, input, axis, mask));
    return success();
  }
  SmallVector<int64_t> kept;
  int64_t i = 0;
  for (const APInt &v : condition.getValues<APInt>()) {
    if (!v.isZero())
      kept.push_back(i);
    ++i;
  }
  auto keptType =
      RankedTensorType::get({(int64_t)kept.size()}, node.builder().getI64Type());
  Value indices = ConstantOp::create(
      node.builder(), node.loc(),
      DenseElementsAttr::get(keptType, ArrayRef<int64_t>(kept)));
  node.setOutput(0, node.create<GatherOp>(input, indices, axis));
  return success();
}

static LogicalResult convertReverseSequence(NodeContext &node) {
  // For batch entry b, the first sequence_lens[b] steps along the time axis
  // reversed, the rest kept: a kiln.gather_elements along the time axis
  // with a constant index (the lengths must be constants).
  Value input = node.input(0);
  auto type = node.inputType(0);
  auto lengths = node.constantInts(1, "sequence_lens");
  if (failed(lengths))
    return failure();
  int64_t timeAxis = node.intAttr("time_axis", 0);
  int64_t batchAxis = node.intAttr("batch_axis", 1);
  if (type.getRank() < 2 || (timeAxis != 0 && timeAxis != 1) ||
      batchAxis != 1 - timeAxis) {
    node.emitError() << "time_axis and batch_axis must be 0 and 1 (either "
                        "way) of an input of rank >= 2, got "
                     << timeAxis << " and " << batchAxis << " for " << type;
    return failure();
  }
  int64_t steps = type.getShape()[timeAxis];
  int64_t batch = type.getShape()[batchAxis];
  if ((int64_t)lengths->size() != batch) {
    node.emitError() << "sequence_lens has " << lengths->size()
                     << " entries for a batch of " << batch;
    return failure();
  }
  // index[t, b] (or [b, t]): the time step output step t reads.
  SmallVector<int64_t> index(steps * batch);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t length = (*lengths)[b];
    if (length < 0 || length > steps) {
      node.emitError() << "sequence_lens[" << b << "] = " << length
                       << " is outside [0, " << steps << "]";
      return failure();
    }
    for (int64_t t = 0; t < steps; ++t) {
      int64_t source = t < length ? length - 1 - t : t;
      index[timeAxis == 0 ? t * batch + b : b * steps + t] = source;
    }
  }
  SmallVector<int64_t> indexShape(type.getRank(), 1);
  indexShape[timeAxis] = steps;
  indexShape[batchAxis] = batch;
  OpBuilder &b = node.builder();
  Type i64 = b.getI64Type();
  Value indices = ConstantOp::create(
      b, node.loc(),
      DenseElementsAttr::get(RankedTensorType::get(indexShape, i64),
                             ArrayRef<int64_t>(index)));
  indices = node.create<ExpandOp>(RankedTensorType::get(type.getShape(), i64),
                                  indices);
  node.setOutput(0, node.create<GatherElementsOp>(input, indices, timeAxis));
  return success();
}

static LogicalResult convertOneHot(NodeContext &node) {
  Value indices = indexOperand(node, node.input(0));
  auto type = cast<RankedTensorType>(indices.getType());
  auto depthValues = node.constantFloats(1, "depth");
  if (failed(depthValues))
    return failure();
  if (depthValues->size() != 1 || (*depthValues)[0] < 1) {
    node.emitError() << "depth must be one positive number";
    return failure();
  }
  auto axis = node.normalizeAxis(node.intAttr("axis", -1), type.getRank() + 1);
  if (failed(axis))
    return failure();
  OpBuilder &b = node.builder();
  node.setOutput(0, node.create<OneHotOp>(
                        indices, node.input(2), b.getI64IntegerAttr(*axis),
                        b.getI64IntegerAttr((int64_t)(*depthValues)[0])));
  return success();
}

static LogicalResult convertExpand(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  auto requested = node.constantInts(1, "shape");
  if (failed(requested))
    return failure();
  auto shape = broadcastShapes(type.getShape(), *requested);
  if (failed(shape)) {
    node.emitError() << "cannot expand " << type << " to the shape ["
                     << llvm::make_range(requested->begin(), requested->end())
                     << "]";
    return failure();
  }
  node.setOutput(0, node.create<ExpandOp>(
                        RankedTensorType::get(*shape, type.getElementType()),
                        input));
  return success();
}

static LogicalResult convertTile(NodeContext &node) {
  // [d0, d1] -> reshape [1, d0, 1, d1] -> expand [r0, d0, r1, d1]
  //          -> reshape [r0 * d0, r1 * d1].
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  auto repeats = node.constantInts(1, "repeats");
  if (failed(repeats))
    return failure();
  if ((int64_t)repeats->size() != type.getRank() ||
      llvm::any_of(*repeats, [](int64_t r) { return r < 0; })) {
    node.emitError() << "repeats must hold " << type.getRank()
                     << " non-negative entries";
    return failure();
  }
  SmallVector<int64_t> interleaved, expanded, result;
  for (auto [d, r] : llvm::zip(type.getShape(), *repeats)) {
    interleaved.append({1, d});
    expanded.append({r, d});
    result.push_back(r * d);
  }
  Value spread = node.reshape(input, interleaved);
  Value copies = node.create<ExpandOp>(
      RankedTensorType::get(expanded, type.getElementType()), spread);
  node.setOutput(0, node.reshape(copies, result));
  return success();
}

/// A constant rows x cols boolean matrix, true where `keep(j - i)` holds
/// for row i and column j; null after a diagnostic when it would be too
/// large to build at compile time.
static Value diagonalMask(NodeContext &node, int64_t rows, int64_t cols,
                          llvm::function_ref<bool(int64_t)> keep) {
  constexpr int64_t kMaxMask = int64_t(1) << 26;
  if (rows > kMaxMask / std::max<int64_t>(cols, 1)) {
    node.emitError() << "a " << rows << " x " << cols
                     << " matrix needs a mask of more than " << kMaxMask
                     << " elements, which Kiln does not build";
    return Value();
  }
  SmallVector<bool> mask;
  mask.reserve(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.push_back(keep(j - i));
  auto maskType =
      RankedTensorType::get({rows, cols}, node.builder().getI1Type());
  return ConstantOp::create(node.builder(), node.loc(),
                            DenseElementsAttr::get(maskType, mask));
}

static LogicalResult convertTrilu(NodeContext &node) {
  // A constant mask selects the kept triangle; the rest becomes zero.
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  if (type.getRank() < 2) {
    node.emitError() << "expected an input of rank >= 2, got " << type;
    return failure();
  }
  int64_t k = 0;
  if (node.hasInput(1)) {
    auto v = node.constantInts(1, "k");
    if (failed(v) || v->size() != 1)
      return failure();
    k = (*v)[0];
  }
  bool upper = node.intAttr("upper", 1) != 0;
  Value mask = diagonalMask(node, type.getShape()[type.getRank() - 2],
                            type.getShape().back(), [&](int64_t offset) {
                              return upper ? offset >= k : offset <= k;
                            });
  if (!mask)
    return failure();
  node.setOutput(0, node.create<SelectOp>(
                        mask, input, node.scalar(type.getElementType(), 0)));
  return success();
}

static LogicalResult convertEyeLike(NodeContext &node) {
  // Ones on the k-th diagonal of a matrix shaped like the input.
  auto type = node.inputType(0);
  if (type.getRank() != 2) {
    node.emitError() << "expected an input of rank 2, got " << type;
    return failure();
  }
  Type element = type.getElementType();
  if (node.hasAttr("dtype")) {
    FailureOr<Type> dtype =
        node.dataType(node.intAttr("dtype", 0), "attribute 'dtype'");
    if (failed(dtype))
      return failure();
    element = *dtype;
  }
  int64_t k = node.intAttr("k", 0);
  Value mask = diagonalMask(node, type.getShape()[0], type.getShape()[1],
                            [&](int64_t offset) { return offset == k; });
  if (!mask)
    return failure();
  node.setOutput(0, node.create<SelectOp>(mask, node.scalar(element, 1),
                                          node.scalar(element, 0)));
  return success();
}

/// DepthToSpace and SpaceToDepth move blocksize x blocksize blocks between
/// the channels and the spatial dimensions of an [N, C, H, W] input: a
/// reshape that splits the moved dimensions, a transpose, and a reshape
/// that merges them again.
static LogicalResult convertDepthSpace(NodeContext &node, bool toSpace) {
  auto type = node.inputType(0);
  int64_t b = node.intAttr("blocksize", 0);
  if (type.getRank() != 4) {
    node.emitError() << "expected an input of rank 4, got " << type;
    return failure();
  }
  if (b <= 0) {
    node.emitError() << "blocksize must be positive, got " << b;
    return failure();
  }
  auto shape = type.getShape();
  int64_t n = shape[0], c = shape[1], h = shape[2], w = shape[3];
  if (toSpace ? c % (b * b) != 0 : h % b != 0 || w % b != 0) {
    node.emitError() << (toSpace ? "the channels" : "the height and width")
                     << " of " << type << " are not multiples of "
                     << (toSpace ? "blocksize^2 = " : "blocksize = ")
                     << (toSpace ? b * b : b);
    return failure();
  }
  SmallVector<int64_t> split, perm, merged;
  if (!toSpace) {
    split = {n, c, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    merged = {n, c * b * b, h / b, w / b};
  } else if (node.stringAttr("mode", "DCR") == "DCR") {
    split = {n, b, b, c / (b * b), h, w};
    perm = {0, 3, 4, 1, 5, 2};
    merged = {n, c / (b * b), h * b, w * b};
  } else if (node.stringAttr("mode", "DCR") == "CRD") {
    split = {n, c / (b * b), b, b, h, w};
    perm = {0, 1, 4, 2, 5, 3};
    merged = {n, c / (b * b), h * b, w * b};
  } else {
    node.emitError() << "unknown mode '" << node.stringAttr("mode", "")
                     << "' (expected DCR or CRD)";
    return failure();
  }
  Value moved = node.create<TransposeOp>(node.reshape(node.input(0), split),
                                         ArrayRef<int64_t>(perm));
  node.setOutput(0, node.reshape(moved, merged));
  return success();
}

static LogicalResult convertShape(NodeContext &node) {
  auto type = node.inputType(0);
  int64_t rank = type.getRank();
  int64_t start = node.intAttr("start", 0), end = node.intAttr("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  SmallVector<int64_t> dims(type.getShape().slice(start, end - start));
  node.setOutput(0, i64Tensor(node, {(int64_t)dims.size()}, dims));
  return success();
}

static LogicalResult convertSize(NodeContext &node) {
  node.setOutput(0, i64Tensor(node, {}, {node.inputType(0).getNumElements()}));
  return success();
}

static LogicalResult convertConstantOfShape(NodeContext &node) {
  auto shape = node.constantInts(0, "input");
  if (failed(shape))
    return failure();
  if (llvm::any_of(*shape, [](int64_t d) { return d < 0; })) {
    node.emitError() << "the shape has a negative dimension";
    return failure();
  }
  Attribute element = node.builder().getF32FloatAttr(0.0f);
  if (node.hasAttr("value")) {
    auto value = dyn_cast_or_null<DenseElementsAttr>(node.tensorAttr("value"));
    if (!value || value.getNumElements() != 1) {
      node.emitError() << "attribute 'value' must be a one-element tensor";
      return failure();
    }
    element = *value.getValues<Attribute>().begin();
  }
  auto type = RankedTensorType::get(
      *shape, cast<TypedAttr>(element).getType());
  node.setOutput(0, ConstantOp::create(node.builder(), node.loc(),
                                       DenseElementsAttr::get(type, element)));
  return success();
}

static LogicalResult convertRange(NodeContext &node) {
  DenseElementsAttr operands[3];
  const char *names[3] = {"start", "limit", "delta"};
  for (auto [i, what] : llvm::enumerate(names)) {
    operands[i] = node.constantInput(i);
    if (!operands[i]) {
      node.notConstant(i, what, "a scalar constant");
      return failure();
    }
    if (operands[i].getNumElements() != 1) {
      node.emitError() << "input " << i << " ('" << what
                       << "') must be a scalar, got " << operands[i].getType();
      return failure();
    }
  }
  auto [start, limit, delta] = operands;
  Type element = start.getElementType();
  auto toDouble = [](DenseElementsAttr a) {
    return isa<FloatType>(a.getElementType())
               ? (*a.getValues<APFloat>().begin()).convertToDouble()
               : (double)(*a.getValues<APInt>().begin()).getSExtValue();
  };
  double s = toDouble(start), l = toDouble(limit), d = toDouble(delta);
  if (d == 0) {
    node.emitError() << "delta is zero";
    return failure();
  }
  int64_t count = std::max<int64_t>(0, (int64_t)std::ceil((l - s) / d));
  if (count > kMaxFoldElements) {
    node.emitError() << "the range has " << count << " elements, more than "
                     << "Kiln evaluates at compile time";
    return failure();
  }
  auto type = RankedTensorType::get({count}, element);
  SmallVector<Attribute> values;
  OpBuilder &b = node.builder();
  for (int64_t i = 0; i < count; ++i) {
    double v = s + i * d;
    values.push_back(isa<FloatType>(element)
                         ? Attribute(b.getFloatAttr(element, v))
                         : Attribute(b.getIntegerAttr(element, (int64_t)v)));
  }
  node.setOutput(0, ConstantOp::create(b, node.loc(),
                                       DenseElementsAttr::get(type, values)));
  return success();
}

void onnx_import::registerDataMovementPatterns(PatternRegistry &r) {
  r.add("Reshape", 7, convertReshape);
  r.add("EyeLike", 9, convertEyeLike);
  r.add("GatherND", 11, convertGatherND);
  r.add("ScatterND", 11, convertScatterND);
  r.add("Compress", 9, convertCompress);
  r.add("ReverseSequence", 10, convertReverseSequence);
  r.add("DepthToSpace", 7,
        [](NodeContext &n) { return convertDepthSpace(n, /*toSpace=*/true); });
  r.add("SpaceToDepth", 7,
        [](NodeContext &n) { return convertDepthSpace(n, /*toSpace=*/false); });
  r.add("Flatten", 7, convertFlatten);
  r.add("Squeeze", 7, convertSqueeze);
  r.add("Unsqueeze", 7, convertUnsqueeze);
  r.add("Transpose", 7, convertTranspose);
  r.add("Concat", 7, convertConcat);
  r.add("Slice", 7, convertSlice);
  r.add("Split", 7, convertSplit);
  r.add("Pad", 7, convertPad);
  r.add("Gather", 7, convertGather);
  r.add("GatherElements", 11, convertGatherElements);
  r.add("Scatter", 9, convertScatterElements);
  r.add("ScatterElements", 11, convertScatterElements);
  r.add("OneHot", 9, convertOneHot);
  r.add("Expand", 8, convertExpand);
  r.add("Tile", 7, convertTile);
  r.add("Trilu", 14, convertTrilu);
  r.add("Shape", 7, convertShape);
  r.add("Size", 7, convertSize);
  r.add("ConstantOfShape", 9, convertConstantOfShape);
  r.add("Range", 11, convertRange);
}
