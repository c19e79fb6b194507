//===- Reduction.cpp - ONNX reductions -> kiln ----------------------------===//
//
// ReduceSum/Mean/Max/Min/Prod (axes as an attribute, or as an input from
// opset 13 for ReduceSum and opset 18 for the others), ReduceSumSquare,
// ReduceL1, ReduceL2, ReduceLogSum and ReduceLogSumExp, ArgMax/ArgMin, and
// Hardmax (a one-hot of the ArgMax), CumSum (a triangular matmul), and TopK
// (repeated ArgMax/ArgMin).
//
//===----------------------------------------------------------------------===//

#include "import/onnx/ImportPatterns.h"

#include "llvm/ADT/Sequence.h"

#include <limits>

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

/// The positions 0 .. n-1 along `axis` of `type` (n its size there), as an
/// i64 constant of size 1 in every other dimension.
static Value axisIota(NodeContext &node, RankedTensorType type, int64_t axis) {
  int64_t size = type.getShape()[axis];
  SmallVector<int64_t> shape(type.getRank(), 1);
  shape[axis] = size;
  SmallVector<int64_t> positions = llvm::to_vector(llvm::seq<int64_t>(0, size));
  OpBuilder &b = node.builder();
  return ConstantOp::create(
      b, node.loc(),
      DenseIntElementsAttr::get(RankedTensorType::get(shape, b.getI64Type()),
                                positions));
}

namespace {
enum class Pre { None, Square, Abs };
enum class Post { None, Sqrt };
} // namespace

/// Reads the reduction axes (attribute or input 1, per `axesAsInput`),
/// normalized and sorted; `noop` is set when the node asks for the identity.
static FailureOr<SmallVector<int64_t>> reductionAxes(NodeContext &node,
                                                     int64_t rank,
                                                     bool axesAsInput,
                                                     bool &noop) {
  SmallVector<int64_t> axes;
  if (axesAsInput) {
    if (node.hasInput(1)) {
      auto values = node.constantInts(1, "axes");
      if (failed(values))
        return failure();
      axes = *values;
    }
  } else {
    axes = node.intsAttr("axes");
  }
  noop = false;
  if (axes.empty()) {
    if (node.intAttr("noop_with_empty_axes", 0)) {
      noop = true;
      return axes;
    }
    return llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  for (int64_t &axis : axes) {
    auto normalized = node.normalizeAxis(axis, rank);
    if (failed(normalized))
      return failure();
    axis = *normalized;
  }
  llvm::sort(axes);
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    node.emitError() << "axes must be unique";
    return failure();
  }
  return axes;
}

template <typename OpTy, Pre pre = Pre::None, Post post = Post::None>
static LogicalResult convertReduce(NodeContext &node, bool axesAsInput) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  bool noop;
  auto axes = reductionAxes(node, type.getRank(), axesAsInput, noop);
  if (failed(axes))
    return failure();
  if (pre == Pre::Square)
    input = node.create<MulOp>(input, input);
  else if (pre == Pre::Abs)
    input = node.create<AbsOp>(input);
  if (noop) {
    node.setOutput(0, input);
    return success();
  }
  OpBuilder &b = node.builder();
  Value result =
      node.create<OpTy>(input, b.getDenseI64ArrayAttr(*axes),
                        b.getBoolAttr(node.intAttr("keepdims", 1) != 0));
  if (post == Post::Sqrt)
    result = node.create<SqrtOp>(result);
  node.setOutput(0, result);
  return success();
}

/// Registers a reduction whose axes move from attribute to input at
/// `inputSince`.
template <typename OpTy, Pre pre = Pre::None, Post post = Post::None>
static void addReduce(PatternRegistry &r, StringRef name, int64_t inputSince) {
  r.add(name, 7, [](NodeContext &n) {
    return convertReduce<OpTy, pre, post>(n, false);
  });
  r.add(name, inputSince, [](NodeContext &n) {
    return convertReduce<OpTy, pre, post>(n, true);
  });
}

/// ReduceLogSum: `log(sum(x))`; ReduceLogSumExp (`exp`): shifted by the
/// maximum so that no exp overflows, `log(sum(exp(x - m))) + m` with
/// `m = max(x)` over the same axes (kept as unit dimensions until the end).
static LogicalResult convertLogSum(NodeContext &node, bool axesAsInput,
                                   bool exp) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  if (!isa<FloatType>(type.getElementType())) {
    node.emitError() << "integer inputs are not supported, got "
                     << type.getElementType();
    return failure();
  }
  bool noop;
  auto axes = reductionAxes(node, type.getRank(), axesAsInput, noop);
  if (failed(axes))
    return failure();
  if (noop) {
    // Every "reduction" is of one element: log(x), or log(exp(x)) = x.
    node.setOutput(0, exp ? input : node.create<LogOp>(input));
    return success();
  }
  OpBuilder &b = node.builder();
  DenseI64ArrayAttr axesAttr = b.getDenseI64ArrayAttr(*axes);
  Value result;
  if (exp) {
    Value max = node.create<ReduceMaxOp>(input, axesAttr, b.getBoolAttr(true));
    Value shifted = node.create<ExpOp>(node.create<SubOp>(input, max));
    Value sum = node.create<ReduceSumOp>(shifted, axesAttr, b.getBoolAttr(true));
    result = node.create<AddOp>(node.create<LogOp>(sum), max);
  } else {
    Value sum = node.create<ReduceSumOp>(input, axesAttr, b.getBoolAttr(true));
    result = node.create<LogOp>(sum);
  }
  if (node.intAttr("keepdims", 1) == 0) {
    SmallVector<int64_t> shape;
    for (auto [i, dim] : llvm::enumerate(type.getShape()))
      if (!llvm::is_contained(*axes, static_cast<int64_t>(i)))
        shape.push_back(dim);
    result = node.reshape(result, shape);
  }
  node.setOutput(0, result);
  return success();
}

/// Hardmax: 1 at the first maximum along `axis`, 0 elsewhere: the argmax
/// (kept as a unit dimension) compared with the indices along the axis.
/// Before opset 13 the input is seen as 2-D, `[prod(dims < axis),
/// prod(dims >= axis)]`, and the maximum taken along the second dimension.
static LogicalResult convertHardmax(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  bool flatten = node.opset() < 13;
  auto axis = node.normalizeAxis(node.intAttr("axis", flatten ? 1 : -1),
                                 type.getRank());
  if (failed(axis))
    return failure();
  Value x = input;
  int64_t along = *axis;
  if (flatten) {
    int64_t outer = 1, inner = 1;
    for (auto [i, dim] : llvm::enumerate(type.getShape()))
      (static_cast<int64_t>(i) < *axis ? outer : inner) *= dim;
    x = node.reshape(input, {outer, inner});
    along = 1;
  }
  auto xType = cast<RankedTensorType>(x.getType());
  OpBuilder &b = node.builder();
  Value index = node.create<ArgMaxOp>(x, b.getI64IntegerAttr(along),
                                      b.getBoolAttr(true), b.getBoolAttr(false));
  Value hot = node.create<EqualOp>(index, axisIota(node, xType, along));
  Value result = node.cast(hot, xType.getElementType());
  if (flatten)
    result = node.reshape(result, type.getShape());
  node.setOutput(0, result);
  return success();
}

/// TopK by selection: K times the arg-max (arg-min when `largest` = 0)
/// along the axis, its value gathered and its position then masked with
/// the lowest (highest) value. The results come out sorted, equal values in
/// index order, as ONNX specifies; K * n comparisons, so K is bounded.
static LogicalResult convertTopK(NodeContext &node) {
  constexpr int64_t kMaxTopK = 256;
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  auto axis = node.normalizeAxis(node.intAttr("axis", -1), type.getRank());
  if (failed(axis))
    return failure();
  int64_t size = type.getShape()[*axis];
  int64_t k;
  // K given at run time: every entry sorted (k = the axis size), returned as
  // a Bounded value whose extent is K clamped to [0, size].
  Value runtimeK;
  if (node.opset() < 10) {
    k = node.intAttr("k", -1);
  } else if (!node.constantInput(1)) {
    if (node.inputType(1).getNumElements() != 1) {
      node.emitError() << "K must hold one value, got "
                       << node.inputType(1).getNumElements();
      return failure();
    }
    k = size;
    OpBuilder &b = node.builder();
    Value kValue = node.reshape(node.input(1), {});
    runtimeK = node.create<MinOp>(
        node.create<MaxOp>(kValue, node.scalar(b.getI64Type(), 0)),
        node.scalar(b.getI64Type(), size));
  } else {
    auto values = node.constantInts(1, "K");
    if (failed(values))
      return failure();
    if (values->size() != 1) {
      node.emitError() << "K must hold one value, got " << values->size();
      return failure();
    }
    k = values->front();
  }
  if (k < 0 || k > size) {
    node.emitError() << "K = " << k << " is outside [0, " << size
                     << "], the size of axis " << *axis;
    return failure();
  }
  if (runtimeK && k > kMaxTopK) {
    node.notConstant(1, "K",
                     "an integer constant (axis " + std::to_string(*axis) + " has " +
                         std::to_string(size) + " entries, more than the " +
                         std::to_string(kMaxTopK) + " a run-time K sorts)");
    return failure();
  }
  if (k > kMaxTopK) {
    node.emitError() << "K = " << k << " is more than the " << kMaxTopK
                     << " TopK selects";
    return failure();
  }
  if (k == 0) {
    node.emitError() << "K = 0 gives empty results, which Kiln does not build";
    return failure();
  }
  bool largest = node.opset() < 11 || node.intAttr("largest", 1) != 0;
  Type element = type.getElementType();
  double sentinel;
  if (auto floatType = dyn_cast<FloatType>(element))
    sentinel = largest ? -std::numeric_limits<double>::infinity()
                       : std::numeric_limits<double>::infinity();
  else if (element.isUnsignedInteger())
    sentinel = largest ? 0 : (double)APInt::getMaxValue(element.getIntOrFloatBitWidth()).getZExtValue();
  else
    sentinel = (double)(largest ? APInt::getSignedMinValue(element.getIntOrFloatBitWidth())
                                : APInt::getSignedMaxValue(element.getIntOrFloatBitWidth()))
                   .getSExtValue();
  OpBuilder &b = node.builder();
  Value iota = axisIota(node, type, *axis);
  Value masked = node.scalar(element, sentinel);
  Value remaining = input;
  SmallVector<Value> values, indices;
  for (int64_t i = 0; i < k; ++i) {
    Value index =
        largest ? node.create<ArgMaxOp>(remaining, b.getI64IntegerAttr(*axis),
                                        b.getBoolAttr(true), b.getBoolAttr(false))
                : node.create<ArgMinOp>(remaining, b.getI64IntegerAttr(*axis),
                                        b.getBoolAttr(true), b.getBoolAttr(false));
    indices.push_back(index);
    values.push_back(node.create<GatherElementsOp>(input, index, *axis));
    if (i + 1 < k)
      remaining = node.create<SelectOp>(node.create<EqualOp>(index, iota),
                                        masked, remaining);
  }
  auto concat = [&](ValueRange parts) {
    return parts.size() == 1 ? parts.front()
                             : node.create<ConcatOp>(parts, *axis);
  };
  auto result = [&](ValueRange parts) {
    Value joined = concat(parts);
    return runtimeK ? buildBounded(b, node.loc(), joined, *axis, runtimeK) : joined;
  };
  node.setOutput(0, result(values));
  if (node.hasOutput(1))
    node.setOutput(1, result(indices));
  return success();
}

/// CumSum along a constant `axis` as a product with a triangular matrix of
/// ones: `y[o, i, k] = sum_j T[i, j] * x[o, j, k]`, with `T[i, j]` set for
/// `j <= i` (`j < i` when `exclusive`; the transposed triangle when
/// `reverse`), the input seen as `[outer, n, inner]`. One kernel, exact in
/// every float and integer type, at n multiply-adds per element; axes longer
/// than `kMaxCumSumLength` are refused rather than given an n x n constant.
static LogicalResult convertCumSum(NodeContext &node) {
  constexpr int64_t kMaxCumSumLength = 1024;
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  auto axisValues = node.constantInts(1, "axis");
  if (failed(axisValues))
    return failure();
  if (axisValues->size() != 1) {
    node.emitError() << "axis must be a scalar, got " << axisValues->size()
                     << " values";
    return failure();
  }
  auto axis = node.normalizeAxis((*axisValues)[0], type.getRank());
  if (failed(axis))
    return failure();
  bool exclusive = node.intAttr("exclusive", 0) != 0;
  bool reverse = node.intAttr("reverse", 0) != 0;
  int64_t n = type.getShape()[*axis], outer = 1, inner = 1;
  for (auto [i, dim] : llvm::enumerate(type.getShape())) {
    if (static_cast<int64_t>(i) < *axis)
      outer *= dim;
    else if (static_cast<int64_t>(i) > *axis)
      inner *= dim;
  }
  if (n > kMaxCumSumLength) {
    node.emitError() << "axis " << *axis << " has " << n
                     << " elements; at most " << kMaxCumSumLength
                     << " are supported";
    return failure();
  }
  Type element = type.getElementType();
  if (!isa<FloatType>(element) && !element.isSignlessInteger()) {
    node.emitError() << "element type " << element << " is not supported";
    return failure();
  }
  auto maskType = RankedTensorType::get({n, n}, element);
  SmallVector<Attribute> mask;
  OpBuilder &b = node.builder();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      bool set = reverse ? (exclusive ? j > i : j >= i)
                         : (exclusive ? j < i : j <= i);
      mask.push_back(isa<FloatType>(element)
                         ? Attribute(b.getFloatAttr(element, set ? 1.0 : 0.0))
                         : Attribute(b.getIntegerAttr(element, set ? 1 : 0)));
    }
  Value triangle = ConstantOp::create(b, node.loc(),
                                      DenseElementsAttr::get(maskType, mask));
  Value x = node.reshape(input, {outer, n, inner});
  Value sums = node.create<MatmulOp>(triangle, x);
  node.setOutput(0, node.reshape(sums, type.getShape()));
  return success();
}

template <typename OpTy>
static LogicalResult convertArg(NodeContext &node) {
  Value input = node.input(0);
  auto type = cast<RankedTensorType>(input.getType());
  auto axis = node.normalizeAxis(node.intAttr("axis", 0), type.getRank());
  if (failed(axis))
    return failure();
  OpBuilder &b = node.builder();
  node.setOutput(0, node.create<OpTy>(
                        input, b.getI64IntegerAttr(*axis),
                        b.getBoolAttr(node.intAttr("keepdims", 1) != 0),
                        b.getBoolAttr(node.intAttr("select_last_index", 0) != 0)));
  return success();
}

void onnx_import::registerReductionPatterns(PatternRegistry &r) {
  addReduce<ReduceSumOp>(r, "ReduceSum", 13);
  addReduce<ReduceMeanOp>(r, "ReduceMean", 18);
  addReduce<ReduceMaxOp>(r, "ReduceMax", 18);
  addReduce<ReduceMinOp>(r, "ReduceMin", 18);
  addReduce<ReduceProdOp>(r, "ReduceProd", 18);
  addReduce<ReduceSumOp, Pre::Square>(r, "ReduceSumSquare", 18);
  addReduce<ReduceSumOp, Pre::Abs>(r, "ReduceL1", 18);
  addReduce<ReduceSumOp, Pre::Square, Post::Sqrt>(r, "ReduceL2", 18);
  r.add("ReduceLogSum", 7, [](NodeContext &n) { return convertLogSum(n, false, false); });
  r.add("ReduceLogSum", 18, [](NodeContext &n) { return convertLogSum(n, true, false); });
  r.add("ReduceLogSumExp", 7, [](NodeContext &n) { return convertLogSum(n, false, true); });
  r.add("ReduceLogSumExp", 18, [](NodeContext &n) { return convertLogSum(n, true, true); });
  r.add("Hardmax", 7, convertHardmax);
  r.add("CumSum", 11, convertCumSum);
  r.add("ArgMax", 7, convertArg<ArgMaxOp>);
  r.add("ArgMin", 7, convertArg<ArgMinOp>);
  r.add("TopK", 1, convertTopK);
}
