//===- DataDependent.cpp - outputs whose size the data decides ------------===//
//
// NonZero and Compress with a run-time condition produce tensors whose size
// along one axis depends on the values of their inputs. Kiln keeps every
// tensor static: such a value is its compile-time upper bound along that
// axis (`padded`) plus an i64 scalar computed at run time (`extent`), the
// pair carried through the importer as a Bounded value (ImportPatterns.h).
// A graph output that is one becomes two program results, the padded tensor
// and its extent, and the runtime returns the first `extent` entries along
// the axis (docs/architecture.md, "Data-dependent sizes").
//
// The values are placed with stream compaction: a mask says which rows are
// kept, its exclusive prefix sum gives each kept row its slot, and one
// kiln.scatter_elements writes the rows there (dropped rows go to a trash
// row past the bound, sliced off). The prefix sum is a Hillis-Steele scan,
// log2(n) shifted adds, so any length works.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

static constexpr llvm::StringLiteral kBoundedAttr = "kiln.bounded";

Value onnx_import::buildBounded(OpBuilder &b, Location loc, Value padded,
                                int64_t axis, Value extent) {
  auto type = cast<RankedTensorType>(padded.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[axis] = ShapedType::kDynamic;
  auto cast = UnrealizedConversionCastOp::create(
      b, loc, TypeRange{RankedTensorType::get(shape, type.getElementType())},
      ValueRange{padded, extent});
  cast->setAttr(kBoundedAttr, b.getI64IntegerAttr(axis));
  return cast.getResult(0);
}

std::optional<Bounded> onnx_import::getBounded(Value value) {
  auto cast = value ? value.getDefiningOp<UnrealizedConversionCastOp>() : nullptr;
  auto axis = cast ? cast->getAttrOfType<IntegerAttr>(kBoundedAttr) : nullptr;
  if (!axis)
    return std::nullopt;
  return Bounded{cast.getInputs()[0], axis.getInt(), cast.getInputs()[1]};
}

/// `x` (a 1-d i64 tensor) summed up to but excluding each position:
/// Hillis-Steele, `x += x shifted right by 2^k` for k = 0, 1, ... (the
/// shifted-in entries are zeros), then shifted once more for exclusivity.
static Value exclusivePrefixSum(NodeContext &node, Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t n = type.getShape()[0];
  auto shifted = [&](Value v, int64_t by) -> Value {
    if (by >= n)
      return node.splat(type, 0);
    Value zeros = node.splat(RankedTensorType::get({by}, type.getElementType()), 0);
    Value head = node.create<SliceOp>(v, node.builder().getDenseI64ArrayAttr({0}),
                                      node.builder().getDenseI64ArrayAttr({n - by}),
                                      node.builder().getDenseI64ArrayAttr({1}));
    return node.create<ConcatOp>(ValueRange{zeros, head}, int64_t(0));
  };
  for (int64_t by = 1; by < n; by *= 2)
    x = node.create<AddOp>(x, shifted(x, by));
  return shifted(x, 1);
}

Value onnx_import::placeRows(NodeContext &node, Value rows, int64_t axis,
                             Value slots, int64_t bound) {
  auto type = cast<RankedTensorType>(rows.getType());
  SmallVector<int64_t> shape(type.getShape());
  int64_t n = shape[axis];
  SmallVector<int64_t> column(shape.size(), 1);
  column[axis] = n;
  Value indices = node.create<ExpandOp>(
      RankedTensorType::get(shape, node.builder().getI64Type()),
      node.reshape(slots, column));
  SmallVector<int64_t> withTrash(shape);
  withTrash[axis] = bound + 1;
  Value data =
      node.splat(RankedTensorType::get(withTrash, type.getElementType()), 0);
  OpBuilder &b = node.builder();
  Value placed = node.create<ScatterElementsOp>(
      data, indices, rows, b.getI64IntegerAttr(axis), b.getStringAttr("none"));
  SmallVector<int64_t> starts(shape.size(), 0), ends(withTrash),
      steps(shape.size(), 1);
  ends[axis] = bound;
  return node.create<SliceOp>(placed, b.getDenseI64ArrayAttr(starts),
                              b.getDenseI64ArrayAttr(ends),
                              b.getDenseI64ArrayAttr(steps));
}

Value onnx_import::compactRows(NodeContext &node, Value rows, int64_t axis,
                               Value mask) {
  OpBuilder &b = node.builder();
  int64_t n = cast<RankedTensorType>(rows.getType()).getShape()[axis];
  Value ones = node.cast(mask, b.getI64Type());
  Value slots = node.create<SelectOp>(mask, exclusivePrefixSum(node, ones),
                                      node.scalar(b.getI64Type(), n));
  Value extent = node.create<ReduceSumOp>(ones, b.getDenseI64ArrayAttr({0}),
                                          b.getBoolAttr(false));
  return buildBounded(b, node.loc(), placeRows(node, rows, axis, slots, n),
                      axis, extent);
}

FailureOr<std::pair<Value, int64_t>> onnx_import::axisOrFlattened(NodeContext &node) {
  auto type = node.inputType(0);
  if (!node.hasAttr("axis"))
    return std::make_pair(node.reshape(node.input(0), {type.getNumElements()}), int64_t(0));
  auto axis = node.normalizeAxis(node.intAttr("axis", 0), type.getRank());
  if (failed(axis))
    return failure();
  return std::make_pair(node.input(0), *axis);
}

/// `x != 0` as i1 (x itself when it is bool).
static Value isNonZero(NodeContext &node, Value x) {
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  if (element.isInteger(1))
    return x;
  return node.create<NotOp>(node.create<EqualOp>(x, node.scalar(element, 0)));
}

static LogicalResult convertNonZero(NodeContext &node) {
  // The coordinates of the non-zero elements in row-major order, one column
  // each: a constant [rank, N] table of every element's coordinates
  // compacted by the mask of non-zeros.
  Value x = node.input(0);
  auto type = node.inputType(0);
  SmallVector<int64_t> shape(type.getShape());
  if (shape.empty())
    shape.push_back(1); // a scalar is one element (numpy's view of it)
  int64_t rank = shape.size(), count = computeProduct(shape);
  // The coordinate table is a constant of rank x count i64.
  constexpr int64_t kMaxNonZeroTable = int64_t(1) << 24;
  if (rank * count > kMaxNonZeroTable) {
    node.emitError() << "the input has " << count << " elements of rank " << rank
                     << "; NonZero supports at most " << kMaxNonZeroTable
                     << " coordinates (rank x elements)";
    return failure();
  }
  SmallVector<int64_t> strides = computeStrides(shape);
  SmallVector<int64_t> coordinates(rank * count);
  for (int64_t i = 0; i < count; ++i)
    for (int64_t d = 0; d < rank; ++d)
      coordinates[d * count + i] = i / strides[d] % shape[d];
  Value table = i64Tensor(node, {rank, count}, coordinates);
  Value mask = isNonZero(node, node.reshape(x, {count}));
  node.setOutput(0, compactRows(node, table, 1, mask));
  return success();
}

void onnx_import::registerDataDependentPatterns(PatternRegistry &r) {
  r.add("NonZero", 9, convertNonZero);
}
