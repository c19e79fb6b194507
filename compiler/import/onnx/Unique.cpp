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
// first element where they differ). An entry is a first occurrence when no
// earlier row equals it; its slot in Y is the number of first occurrences
// that sort before it (or, unsorted, that come before it), and the first
// occurrences are placed there with placeRows. NaN equals NaN and sorts
// after every number, as numpy's unique does.
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

/// `a == b`, with NaN equal to NaN for floats.
static Value sameValue(NodeContext &node, Value a, Value b, Type element) {
  Value equal = node.create<EqualOp>(a, b);
  if (!isa<FloatType>(element))
    return equal;
  Value aNaN = node.create<NotOp>(node.create<EqualOp>(a, a));
  Value bNaN = node.create<NotOp>(node.create<EqualOp>(b, b));
  return node.create<OrOp>(equal, node.create<AndOp>(aNaN, bNaN));
}

/// `a < b`, with NaN after every number for floats.
static Value sortsBefore(NodeContext &node, Value a, Value b, Type element) {
  Value less = node.create<LessOp>(a, b);
  if (!isa<FloatType>(element))
    return less;
  Value aNumber = node.create<EqualOp>(a, a);
  Value bNaN = node.create<NotOp>(node.create<EqualOp>(b, b));
  return node.create<OrOp>(less, node.create<AndOp>(aNumber, bNaN));
}

/// `x` (i1) summed over `axis` as i64, the axis removed.
static Value countTrue(NodeContext &node, Value x, int64_t axis) {
  OpBuilder &b = node.builder();
  return node.create<ReduceSumOp>(node.cast(x, b.getI64Type()),
                                  b.getDenseI64ArrayAttr({axis}),
                                  b.getBoolAttr(false));
}

/// Unique (opset 11): see the file comment.
static LogicalResult convertUnique(NodeContext &node) {
  OpBuilder &b = node.builder();
  Type i64 = b.getI64Type();
  Value data = node.input(0);
  auto type = node.inputType(0);
  int64_t axis = 0;
  if (node.hasAttr("axis")) {
    auto normalized = node.normalizeAxis(node.intAttr("axis", 0), type.getRank());
    if (failed(normalized))
      return failure();
    axis = *normalized;
  } else {
    data = node.reshape(data, {type.getNumElements()});
  }
  auto dataType = cast<RankedTensorType>(data.getType());
  int64_t n = dataType.getShape()[axis];
  if (n == 0 || dataType.getNumElements() == 0) {
    node.emitError() << "the input is empty, which gives empty results Kiln "
                        "does not build";
    return failure();
  }
  int64_t m = dataType.getNumElements() / n;
  if (n > kMaxUniqueEntries || n * n * m > kMaxUniqueComparisons) {
    node.emitError() << "the input has " << n << " entries of " << m
                     << " elements; Unique compares every pair, and Kiln "
                        "supports at most "
                     << kMaxUniqueEntries << " entries and "
                     << kMaxUniqueComparisons << " compared elements";
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
  Value rowJ = node.reshape(rows, {n, 1, m}), rowI = node.reshape(rows, {1, n, m});

  // eq[j, i]: rows j and i are equal; less[j, i]: row j sorts before row i.
  Value same = sameValue(node, rowJ, rowI, element);
  Value eq = m == 1 ? node.reshape(same, {n, n})
                    : node.create<EqualOp>(
                          countTrue(node, node.create<NotOp>(same), 2),
                          node.scalar(i64, 0));
  SmallVector<int64_t> positions = llvm::to_vector(llvm::seq<int64_t>(0, n));
  Value iota = i64Tensor(node, {n}, positions);
  Value earlier = node.create<LessOp>(node.reshape(iota, {n, 1}),
                                      node.reshape(iota, {1, n}));
  Value key = earlier;
  if (node.intAttr("sorted", 1) != 0) {
    Value lt = sortsBefore(node, rowJ, rowI, element);
    if (m == 1) {
      key = node.reshape(lt, {n, n});
    } else {
      // lt at the first element where the rows differ (element 0 when they
      // are equal, where lt is false).
      Value differs = node.cast(node.create<NotOp>(same), i64);
      Value first = node.create<ArgMaxOp>(differs, b.getI64IntegerAttr(2),
                                          b.getBoolAttr(true),
                                          b.getBoolAttr(false));
      key = node.create<GatherElementsOp>(node.cast(lt, b.getI8Type()), first,
                                          int64_t(2));
      key = node.cast(node.reshape(key, {n, n}), b.getI1Type());
    }
  }

  // The first occurrences and their slots in Y (n, past the bound, for the
  // others).
  Value isFirst = node.create<EqualOp>(
      countTrue(node, node.create<AndOp>(eq, earlier), 0), node.scalar(i64, 0));
  Value firstJ = node.reshape(isFirst, {n, 1});
  Value slotOf = countTrue(node, node.create<AndOp>(key, firstJ), 0);
  Value slots = node.create<SelectOp>(isFirst, slotOf, node.scalar(i64, n));
  Value extent = node.create<ReduceSumOp>(node.cast(isFirst, i64),
                                          b.getDenseI64ArrayAttr({0}),
                                          b.getBoolAttr(false));
  auto bounded = [&](Value entries, int64_t along) {
    return buildBounded(b, node.loc(), placeRows(node, entries, along, slots, n),
                        along, extent);
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
  if (node.hasOutput(2)) {
    // Entry i's position: the slot of the first occurrence equal to it.
    Value firstEqual = node.cast(node.create<AndOp>(eq, firstJ), i64);
    Value weighted =
        node.create<MulOp>(firstEqual, node.reshape(slotOf, {n, 1}));
    node.setOutput(2, node.create<ReduceSumOp>(weighted,
                                               b.getDenseI64ArrayAttr({0}),
                                               b.getBoolAttr(false)));
  }
  if (node.hasOutput(3))
    node.setOutput(3, bounded(countTrue(node, eq, 1), 0));
  return success();
}

void onnx_import::registerUniquePatterns(PatternRegistry &r) {
  r.add("Unique", 11, convertUnique);
}
