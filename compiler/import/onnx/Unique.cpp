//===- Unique.cpp - ONNX Unique as pairwise comparisons -------------------===//
//
// Unique's outputs have as many entries as the input has distinct values (or
// slices along `axis`), known only at run time: Y, indices and counts are
// Bounded values (ImportPatterns.h) at the bound n, the number of entries;
// inverse_indices has one entry per input entry and a static size.
//
// Everything comes from n x n comparisons of the entries, each entry seen as
// a row of the other dimensions' m elements: eq[j, i] says rows j and i are
// equal, less[j, i] that row j sorts before row i (lexicographically: at the
// first element where they differ). An entry is a first occurrence when the
// first row equal to it is itself; the slot of its value in Y is the number
// of first occurrences that sort before it (or, unsorted, that come before
// its first occurrence), which is also inverse_indices; the first
// occurrences are placed at their slots with placeRows. NaN equals NaN and
// sorts after every number, as numpy's unique does.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// The most entries (slices along the axis) Unique compares pairwise.
static constexpr int64_t kMaxUniqueEntries = 4096;
/// The most elements of the n x n x m comparison tensors.
static constexpr int64_t kMaxUniqueComparisons = int64_t(1) << 24;

namespace {
/// Pairwise comparisons of the rows of an [n, m] tensor, seen as `lhs`
/// [n, 1, m] against `rhs` [1, n, m]. For floats NaN equals NaN and sorts
/// after every number (numpy's unique).
struct RowComparison {
  RowComparison(NodeContext &node, Value rows, int64_t n, int64_t m, Type element)
      : node(node), lhs(node.reshape(rows, {n, 1, m})), rhs(node.reshape(rows, {1, n, m})),
        isFloat(isa<FloatType>(element)) {
    if (isFloat) {
      lhsNumber = node.create<EqualOp>(lhs, lhs);
      rhsNaN = node.create<NotOp>(node.create<EqualOp>(rhs, rhs));
    }
  }
  /// lhs == rhs, elementwise.
  Value same() {
    Value equal = node.create<EqualOp>(lhs, rhs);
    if (!isFloat)
      return equal;
    Value lhsNaN = node.create<NotOp>(lhsNumber);
    return node.create<OrOp>(equal, node.create<AndOp>(lhsNaN, rhsNaN));
  }
  /// lhs < rhs, elementwise.
  Value less() {
    Value less = node.create<LessOp>(lhs, rhs);
    if (!isFloat)
      return less;
    return node.create<OrOp>(less, node.create<AndOp>(lhsNumber, rhsNaN));
  }

  NodeContext &node;
  Value lhs, rhs, lhsNumber, rhsNaN;
  bool isFloat;
};
} // namespace

/// `x` (i1) summed over `axis` as i64, the axis removed.
static Value countTrue(NodeContext &node, Value x, int64_t axis) {
  OpBuilder &b = node.builder();
  return node.create<ReduceSumOp>(node.cast(x, b.getI64Type()), b.getDenseI64ArrayAttr({axis}),
                                  b.getBoolAttr(false));
}

/// Unique (opset 11): see the file comment.
static LogicalResult convertUnique(NodeContext &node) {
  OpBuilder &b = node.builder();
  Type i64 = b.getI64Type();
  auto dataAndAxis = axisOrFlattened(node);
  if (failed(dataAndAxis))
    return failure();
  auto [data, axis] = *dataAndAxis;
  auto dataType = cast<RankedTensorType>(data.getType());
  int64_t n = dataType.getShape()[axis];
  if (n == 0 || dataType.getNumElements() == 0) {
    node.emitError() << "the input is empty, which gives empty results Kiln "
                        "does not build";
    return failure();
  }
  int64_t m = dataType.getNumElements() / n;
  if (n > kMaxUniqueEntries || n * n > kMaxUniqueComparisons / m) {
    node.emitError() << "the input has " << n << " entries of " << m
                     << " elements; Unique compares every pair, and Kiln "
                        "supports at most "
                     << kMaxUniqueEntries << " entries and " << kMaxUniqueComparisons
                     << " compared elements";
    return failure();
  }

  // The entries as the rows of an [n, m] tensor (bool compared as i8).
  Type element = dataType.getElementType();
  Value rows = data;
  if (element.isInteger(1)) {
    element = b.getI8Type();
    rows = node.cast(rows, element);
  }
  if (axis != 0) {
    SmallVector<int64_t> permutation = {axis};
    for (int64_t d = 0; d < dataType.getRank(); ++d)
      if (d != axis)
        permutation.push_back(d);
    rows = node.create<TransposeOp>(rows, b.getDenseI64ArrayAttr(permutation));
  }
  RowComparison compare(node, rows, n, m, element);

  // eq[j, i]: rows j and i are equal; less[j, i]: row j sorts before row i.
  Value same = compare.same();
  Value differs = m == 1 ? Value() : node.create<NotOp>(same);
  Value eq = m == 1 ? node.reshape(same, {n, n})
                    : node.create<EqualOp>(countTrue(node, differs, 2), node.scalar(i64, 0));
  // The first occurrence of every entry's value (argmax takes the first of
  // the equal rows, and a row equals itself), and whether it is one.
  SmallVector<int64_t> positions = llvm::to_vector(llvm::seq<int64_t>(0, n));
  Value iota = i64Tensor(node, {n}, positions);
  Value firstOf = node.create<ArgMaxOp>(node.cast(eq, i64), b.getI64IntegerAttr(0),
                                        b.getBoolAttr(false), b.getBoolAttr(false));
  Value isFirst = node.create<EqualOp>(firstOf, iota);

  // key[j, i]: a first occurrence j takes a slot before entry i's value. In
  // both orders the count of such j is the slot of i's first occurrence.
  Value key;
  if (node.intAttr("sorted", 1) != 0) {
    Value lt = compare.less();
    if (m == 1) {
      key = node.reshape(lt, {n, n});
    } else {
      // lt at the first element where the rows differ (element 0 when they
      // are equal, where lt is false).
      Value first = node.create<ArgMaxOp>(node.cast(differs, i64), b.getI64IntegerAttr(2),
                                          b.getBoolAttr(true), b.getBoolAttr(false));
      key = node.create<GatherElementsOp>(node.cast(lt, b.getI8Type()), first, int64_t(2));
      key = node.cast(node.reshape(key, {n, n}), b.getI1Type());
    }
  } else {
    // Comparing with firstOf, not a constant triangle: no n x n constant.
    key = node.create<LessOp>(node.reshape(iota, {n, 1}), node.reshape(firstOf, {1, n}));
  }
  Value slotOf = countTrue(node, node.create<AndOp>(key, node.reshape(isFirst, {n, 1})), 0);
  // Past the bound (dropped) for the entries that are not first occurrences.
  Value slots = node.create<SelectOp>(isFirst, slotOf, node.scalar(i64, n));
  Value extent = node.create<ReduceSumOp>(node.cast(isFirst, i64), b.getDenseI64ArrayAttr({0}),
                                          b.getBoolAttr(false));
  auto bounded = [&](Value entries, int64_t along) {
    return buildBounded(b, node.loc(), placeRows(node, entries, along, slots, n), along, extent);
  };

  Value unique = data;
  if (dataType.getElementType().isInteger(1))
    unique = node.cast(unique, b.getI8Type());
  Value placed = placeRows(node, unique, axis, slots, n);
  if (dataType.getElementType().isInteger(1))
    placed = node.cast(placed, b.getI1Type());
  node.setOutput(0, buildBounded(b, node.loc(), placed, axis, extent));
  if (node.hasOutput(1))
    node.setOutput(1, bounded(iota, 0));
  if (node.hasOutput(2))
    node.setOutput(2, slotOf);
  if (node.hasOutput(3))
    node.setOutput(3, bounded(countTrue(node, eq, 1), 0));
  return success();
}

void onnx_import::registerUniquePatterns(PatternRegistry &r) { r.add("Unique", 11, convertUnique); }
