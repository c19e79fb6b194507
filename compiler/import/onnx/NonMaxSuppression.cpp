//===- NonMaxSuppression.cpp - ONNX NonMaxSuppression, unrolled -----------===//
//
// NonMaxSuppression selects, for every batch and class, boxes in descending
// score order (equal scores: lower box index first, as ONNX Runtime does),
// skipping a box whose IoU with an already selected box exceeds the
// threshold, and stops after max_output_boxes_per_class boxes. How many are
// selected is known only at run time: the result is a Bounded value
// (ImportPatterns.h) at B * C * min(N, max_output_boxes_per_class) rows
// (B * C * N when max_output_boxes_per_class is itself a run-time input).
//
// The decomposition works on all B * C (batch, class) groups at once:
//   - each box's rank is the number of boxes that come before it (higher
//     score, or equal score and lower index); a scatter of the box indices
//     by rank gives the score order, and a gather the boxes in that order;
//   - suppress[g, q, r] says the q-th box in order suppresses the r-th
//     (q < r, IoU above the threshold, computed as ONNX Runtime does: boxes
//     with an empty intersection or area never suppress);
//   - the greedy pass is unrolled over the N positions: alive[g, :] starts
//     as "score above score_threshold", and step r, when box r is alive
//     (selected), clears the boxes it suppresses. The boxes alive at the end
//     are the selected ones; the first max_output_boxes_per_class of them
//     per group are kept (stopping early does not change earlier choices);
//   - their (batch, class, box) rows are compacted (compactRows) and cut to
//     the bound.
// The count of selected boxes before each one is a product with a
// triangular 0/1 matrix, exact in f32 at these sizes.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// The most boxes per batch: the greedy pass is unrolled over them.
static constexpr int64_t kMaxNmsBoxes = 256;
/// The most elements of the [B * C, N, N] pairwise tensors.
static constexpr int64_t kMaxNmsPairs = int64_t(1) << 24;

/// A 0/1 f32 [n, n] constant with `[q, r]` set for q < r.
static Value strictUpper(NodeContext &node, int64_t n, Type element) {
  SmallVector<int64_t> values(n * n, 0);
  for (int64_t q = 0; q < n; ++q)
    for (int64_t r = q + 1; r < n; ++r)
      values[q * n + r] = 1;
  return node.cast(i64Tensor(node, {n, n}, values), element);
}

/// Optional scalar input `i` (one element, any shape) as a rank-0 tensor of
/// `element`; null when absent, failure after a diagnostic when it is not a
/// scalar.
static FailureOr<Value> scalarInput(NodeContext &node, unsigned i, StringRef what, Type element) {
  if (!node.hasInput(i))
    return Value();
  if (node.inputType(i).getNumElements() != 1) {
    node.emitError() << "input " << i << " ('" << what << "') must be a scalar, got "
                     << node.inputType(i);
    return failure();
  }
  return node.cast(node.reshape(node.input(i), {}), element);
}

/// NonMaxSuppression (opsets 10 and 11): see the file comment.
static LogicalResult convertNonMaxSuppression(NodeContext &node) {
  OpBuilder &b = node.builder();
  Type i64 = b.getI64Type();
  auto boxesType = node.inputType(0), scoresType = node.inputType(1);
  Type f = boxesType.getElementType();
  if (boxesType.getRank() != 3 || boxesType.getShape()[2] != 4 || scoresType.getRank() != 3 ||
      !isa<FloatType>(f) || scoresType.getElementType() != f ||
      scoresType.getShape()[0] != boxesType.getShape()[0] ||
      scoresType.getShape()[2] != boxesType.getShape()[1]) {
    node.emitError() << "boxes must be [B, N, 4] and scores [B, C, N] of the "
                        "same float type, got "
                     << boxesType << " and " << scoresType;
    return failure();
  }
  int64_t batches = boxesType.getShape()[0], n = boxesType.getShape()[1];
  int64_t classes = scoresType.getShape()[1], groups = batches * classes;

  int64_t maxOutput = 0;
  // max_output_boxes_per_class known only at run time: bounded by N boxes
  // per group, the limit compared at run time.
  Value runtimeMax;
  if (node.hasInput(2)) {
    if (!node.constantInput(2)) {
      if (node.inputType(2).getNumElements() != 1) {
        node.emitError() << "max_output_boxes_per_class must hold one value, got "
                         << node.inputType(2).getNumElements();
        return failure();
      }
      runtimeMax = node.cast(node.reshape(node.input(2), {}), f);
      maxOutput = n;
    }
  }
  if (node.hasInput(2) && !runtimeMax) {
    auto values = node.constantInts(2, "max_output_boxes_per_class");
    if (failed(values))
      return failure();
    if (values->size() != 1) {
      node.emitError() << "max_output_boxes_per_class must hold one value, got " << values->size();
      return failure();
    }
    maxOutput = values->front();
  }
  auto iouThreshold = scalarInput(node, 3, "iou_threshold", f);
  auto scoreThreshold = scalarInput(node, 4, "score_threshold", f);
  if (failed(iouThreshold) || failed(scoreThreshold))
    return failure();
  int64_t perGroup = std::clamp<int64_t>(maxOutput, 0, n);
  if (groups == 0 || perGroup == 0) {
    // Nothing is selected: one padding row and an extent of 0.
    node.setOutput(0, buildBounded(b, node.loc(), node.splat(RankedTensorType::get({1, 3}, i64), 0),
                                   0, node.scalar(i64, 0)));
    return success();
  }
  if (n > kMaxNmsBoxes || groups * n * n > kMaxNmsPairs) {
    node.emitError() << groups << " (batch, class) groups of " << n
                     << " boxes; NonMaxSuppression is unrolled over the boxes "
                        "and compares every pair, and Kiln supports at most "
                     << kMaxNmsBoxes << " boxes and " << kMaxNmsPairs << " pairs in all";
    return failure();
  }

  // Corners: lo = (y1, x1) and hi = (y2, x2), or (x, y) for center boxes.
  Value boxes = node.input(0);
  auto coordinate = [&](int64_t k) {
    return node.create<SliceOp>(boxes, b.getDenseI64ArrayAttr({0, 0, k}),
                                b.getDenseI64ArrayAttr({batches, n, k + 1}),
                                b.getDenseI64ArrayAttr({1, 1, 1}));
  };
  Value c0 = coordinate(0), c1 = coordinate(1), c2 = coordinate(2), c3 = coordinate(3);
  SmallVector<Value> corners;
  if (node.intAttr("center_point_box", 0) != 0) {
    Value half = node.scalar(f, 0.5);
    Value halfW = node.create<MulOp>(c2, half), halfH = node.create<MulOp>(c3, half);
    corners = {node.create<SubOp>(c0, halfW), node.create<SubOp>(c1, halfH),
               node.create<AddOp>(c0, halfW), node.create<AddOp>(c1, halfH)};
  } else {
    corners = {node.create<MinOp>(c0, c2), node.create<MinOp>(c1, c3), node.create<MaxOp>(c0, c2),
               node.create<MaxOp>(c1, c3)};
  }
  Value cornerTable = node.create<ConcatOp>(corners, int64_t(2));

  // The score order of every group: rank[g, i] is the number of boxes that
  // come before box i (NaN scores count as -inf, so ranks stay distinct).
  Value scores = node.reshape(node.input(1), {groups, n});
  Value isNaN = node.create<NotOp>(node.create<EqualOp>(scores, scores));
  Value keys = node.create<SelectOp>(
      isNaN, node.scalar(f, -std::numeric_limits<double>::infinity()), scores);
  Value keyJ = node.reshape(keys, {groups, n, 1}), keyI = node.reshape(keys, {groups, 1, n});
  SmallVector<int64_t> positions = llvm::to_vector(llvm::seq<int64_t>(0, n));
  Value iota = i64Tensor(node, {n}, positions);
  Value earlier = node.create<LessOp>(node.reshape(iota, {n, 1}), node.reshape(iota, {1, n}));
  Value before = node.create<OrOp>(node.create<GreaterOp>(keyJ, keyI),
                                   node.create<AndOp>(node.create<EqualOp>(keyJ, keyI), earlier));
  Value rank = node.create<ReduceSumOp>(node.cast(before, i64), b.getDenseI64ArrayAttr({1}),
                                        b.getBoolAttr(false));
  auto groupsByN = RankedTensorType::get({groups, n}, i64);
  Value order = node.create<ScatterElementsOp>(
      node.splat(groupsByN, 0), rank, node.create<ExpandOp>(groupsByN, node.reshape(iota, {1, n})),
      b.getI64IntegerAttr(1), b.getStringAttr("none"));

  // alive starts as the boxes above score_threshold, in score order.
  Value alive = node.splat(RankedTensorType::get({groups, n}, f), 1);
  if (*scoreThreshold)
    alive = node.create<GatherElementsOp>(
        node.cast(node.create<GreaterOp>(scores, *scoreThreshold), f), order, int64_t(1));

  // The corners in score order, [G, N, 4].
  Value sorted = node.create<ExpandOp>(RankedTensorType::get({batches, classes, n, 4}, f),
                                       node.reshape(cornerTable, {batches, 1, n, 4}));
  sorted = node.reshape(sorted, {groups, n, 4});
  Value sortedIndex = node.create<ExpandOp>(RankedTensorType::get({groups, n, 4}, i64),
                                            node.reshape(order, {groups, n, 1}));
  sorted = node.create<GatherElementsOp>(sorted, sortedIndex, int64_t(1));
  // Each sorted coordinate as a column [G, N, 1] (box q) and a row [G, 1, N]
  // (box r).
  Value columns[4], rows[4];
  for (int64_t k = 0; k < 4; ++k) {
    columns[k] = node.create<SliceOp>(sorted, b.getDenseI64ArrayAttr({0, 0, k}),
                                      b.getDenseI64ArrayAttr({groups, n, k + 1}),
                                      b.getDenseI64ArrayAttr({1, 1, 1}));
    rows[k] = node.reshape(columns[k], {groups, 1, n});
  }

  // suppress[g, q, r]: box q (selected first) suppresses box r, for q < r.
  Value zero = node.scalar(f, 0);
  Value overlaps, intersection;
  for (int64_t d = 0; d < 2; ++d) {
    Value lo = node.create<MaxOp>(columns[d], rows[d]);
    Value hi = node.create<MinOp>(columns[d + 2], rows[d + 2]);
    Value positive = node.create<GreaterOp>(hi, lo);
    Value side = node.create<SubOp>(hi, lo);
    overlaps = d ? node.create<AndOp>(overlaps, positive) : positive;
    intersection = d ? node.create<MulOp>(intersection, side) : side;
  }
  auto area = [&](Value *c) {
    return node.create<MulOp>(node.create<SubOp>(c[2], c[0]), node.create<SubOp>(c[3], c[1]));
  };
  Value areaQ = area(columns), areaR = area(rows);
  Value unionArea = node.create<SubOp>(node.create<AddOp>(areaQ, areaR), intersection);
  Value iou = node.create<DivOp>(intersection, unionArea);
  Value suppress = overlaps;
  for (Value positive : {intersection, areaQ, areaR, unionArea})
    suppress = node.create<AndOp>(suppress, node.create<GreaterOp>(positive, zero));
  Value threshold = *iouThreshold ? *iouThreshold : zero;
  suppress = node.create<AndOp>(suppress, node.create<GreaterOp>(iou, threshold));
  Value upper = strictUpper(node, n, f);
  Value suppressF = node.create<MulOp>(node.cast(suppress, f), upper);

  // The greedy pass: the box at position r, when alive, is selected and
  // clears the later boxes it suppresses.
  Value one = node.scalar(f, 1);
  alive = node.reshape(alive, {groups, 1, n});
  for (int64_t r = 0; r + 1 < n; ++r) {
    Value selected = node.create<SliceOp>(alive, b.getDenseI64ArrayAttr({0, 0, r}),
                                          b.getDenseI64ArrayAttr({groups, 1, r + 1}),
                                          b.getDenseI64ArrayAttr({1, 1, 1}));
    Value row = node.create<SliceOp>(suppressF, b.getDenseI64ArrayAttr({0, r, 0}),
                                     b.getDenseI64ArrayAttr({groups, r + 1, n}),
                                     b.getDenseI64ArrayAttr({1, 1, 1}));
    alive = node.create<MulOp>(alive, node.create<SubOp>(one, node.create<MulOp>(selected, row)));
  }
  alive = node.reshape(alive, {groups, n});

  // At most perGroup per group: the selected boxes with fewer than perGroup
  // selected before them in their group.
  Value rankInGroup = node.create<MatmulOp>(alive, upper);
  Value kept =
      node.create<AndOp>(node.create<GreaterOp>(alive, zero),
                         node.create<LessOp>(rankInGroup, runtimeMax ? runtimeMax
                                                                     : node.scalar(f, double(perGroup))));

  // The (batch, class, box) rows of every group's boxes in score order.
  SmallVector<int64_t> batchOf, classOf;
  for (int64_t g = 0; g < groups; ++g) {
    batchOf.push_back(g / classes);
    classOf.push_back(g % classes);
  }
  auto column = RankedTensorType::get({groups, n, 1}, i64);
  Value table = node.create<ConcatOp>(
      ValueRange{node.create<ExpandOp>(column, i64Tensor(node, {groups, 1, 1}, batchOf)),
                 node.create<ExpandOp>(column, i64Tensor(node, {groups, 1, 1}, classOf)),
                 node.reshape(order, {groups, n, 1})},
      int64_t(2));
  table = node.reshape(table, {groups * n, 3});
  // Compacted in order, then cut to the bound: at most perGroup rows per
  // group are kept.
  Value all = compactRows(node, table, 0, node.reshape(kept, {groups * n}));
  std::optional<Bounded> compacted = getBounded(all);
  Value padded = node.create<SliceOp>(compacted->padded, b.getDenseI64ArrayAttr({0, 0}),
                                      b.getDenseI64ArrayAttr({groups * perGroup, 3}),
                                      b.getDenseI64ArrayAttr({1, 1}));
  node.setOutput(0, buildBounded(b, node.loc(), padded, 0, compacted->extent));
  return success();
}

void onnx_import::registerNonMaxSuppressionPatterns(PatternRegistry &r) {
  r.add("NonMaxSuppression", 10, convertNonMaxSuppression);
}
