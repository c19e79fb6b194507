//===- KilnFolds.cpp - kiln folders and canonicalization patterns ---------===//
//
// Folders evaluate the small integer computations that exported models carry
// for shapes (Shape -> Gather -> Concat -> Reshape chains) and remove
// identities (x + 0, reshape to the same type, identity transposes, zero
// points that are zero). They only materialize `dense` constants of at most
// kMaxFoldElements elements; weights stay `dense_resource` blobs and are never
// copied, except that a reshape of a blob reuses the blob under the new type.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnDialect.h"

#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/APSInt.h"

using namespace mlir;
using namespace kiln;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Returns `attr` as a dense constant small enough to fold, or null.
static DenseElementsAttr foldable(Attribute attr) {
  auto dense = dyn_cast_or_null<DenseIntOrFPElementsAttr>(attr);
  if (!dense || dense.getNumElements() > kMaxFoldElements)
    return nullptr;
  return dense;
}

static bool isFoldableResult(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  return ranked && ranked.hasStaticShape() &&
         ranked.getNumElements() <= kMaxFoldElements;
}

/// For every element of `resultShape` (row-major), the linear index of the
/// element of a tensor of `shape` that broadcasts to it.
static SmallVector<int64_t> broadcastMap(ArrayRef<int64_t> shape,
                                         ArrayRef<int64_t> resultShape) {
  int64_t count = computeProduct(resultShape);
  SmallVector<int64_t> resultStrides = computeStrides(resultShape);
  SmallVector<int64_t> strides = computeStrides(shape);
  size_t offset = resultShape.size() - shape.size();
  SmallVector<int64_t> map(count);
  for (int64_t i = 0; i < count; ++i) {
    SmallVector<int64_t> index = delinearize(i, resultStrides);
    int64_t linear = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != 1)
        linear += index[d + offset] * strides[d];
    map[i] = linear;
  }
  return map;
}

/// Builds a constant of `type` whose element i is `source[map[i]]`.
static DenseElementsAttr gatherElements(DenseElementsAttr source,
                                        RankedTensorType type,
                                        ArrayRef<int64_t> map) {
  if (source.isSplat())
    return source.resizeSplat(type);
  if (isa<FloatType>(source.getElementType())) {
    SmallVector<APFloat> values(source.getValues<APFloat>());
    SmallVector<APFloat> result;
    result.reserve(map.size());
    for (int64_t i : map)
      result.push_back(values[i]);
    return DenseElementsAttr::get(type, result);
  }
  SmallVector<APInt> values(source.getValues<APInt>());
  SmallVector<APInt> result;
  result.reserve(map.size());
  for (int64_t i : map)
    result.push_back(values[i]);
  return DenseElementsAttr::get(type, result);
}

static bool isSplatOf(Attribute attr, double value) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || !dense.isSplat())
    return false;
  Type element = dense.getElementType();
  if (isa<FloatType>(element))
    return dense.getSplatValue<APFloat>().convertToDouble() == value;
  if (isa<IntegerType>(element))
    return dense.getSplatValue<APInt>().getSExtValue() == (int64_t)value;
  return false;
}

using IntFn = function_ref<std::optional<APInt>(const APInt &, const APInt &,
                                                bool isUnsigned)>;
using FloatFn =
    function_ref<std::optional<APFloat>(const APFloat &, const APFloat &)>;

/// Folds an arithmetic binary op over two broadcast dense constants.
static Attribute foldArith(Attribute lhsAttr, Attribute rhsAttr, Type type,
                           IntFn intFn, FloatFn floatFn) {
  DenseElementsAttr lhs = foldable(lhsAttr), rhs = foldable(rhsAttr);
  if (!lhs || !rhs || !isFoldableResult(type))
    return {};
  auto resultType = cast<RankedTensorType>(type);
  SmallVector<int64_t> lmap =
      broadcastMap(lhs.getType().getShape(), resultType.getShape());
  SmallVector<int64_t> rmap =
      broadcastMap(rhs.getType().getShape(), resultType.getShape());
  Type element = lhs.getElementType();
  if (auto intType = dyn_cast<IntegerType>(element)) {
    if (!intFn)
      return {};
    SmallVector<APInt> l(lhs.getValues<APInt>()), r(rhs.getValues<APInt>());
    SmallVector<APInt> out;
    for (size_t i = 0; i < lmap.size(); ++i) {
      std::optional<APInt> v = intFn(l[lmap[i]], r[rmap[i]], intType.isUnsigned());
      if (!v)
        return {};
      out.push_back(*v);
    }
    return DenseElementsAttr::get(resultType, out);
  }
  if (isa<FloatType>(element)) {
    if (!floatFn)
      return {};
    SmallVector<APFloat> l(lhs.getValues<APFloat>()), r(rhs.getValues<APFloat>());
    SmallVector<APFloat> out;
    for (size_t i = 0; i < lmap.size(); ++i) {
      std::optional<APFloat> v = floatFn(l[lmap[i]], r[rmap[i]]);
      if (!v)
        return {};
      out.push_back(*v);
    }
    return DenseElementsAttr::get(resultType, out);
  }
  return {};
}

/// Folds a comparison over two broadcast dense constants into an i1 tensor.
static Attribute foldCompare(Attribute lhsAttr, Attribute rhsAttr, Type type,
                             function_ref<bool(int)> fromOrder) {
  DenseElementsAttr lhs = foldable(lhsAttr), rhs = foldable(rhsAttr);
  if (!lhs || !rhs || !isFoldableResult(type))
    return {};
  auto resultType = cast<RankedTensorType>(type);
  SmallVector<int64_t> lmap =
      broadcastMap(lhs.getType().getShape(), resultType.getShape());
  SmallVector<int64_t> rmap =
      broadcastMap(rhs.getType().getShape(), resultType.getShape());
  SmallVector<bool> out;
  Type element = lhs.getElementType();
  if (auto intType = dyn_cast<IntegerType>(element)) {
    SmallVector<APInt> l(lhs.getValues<APInt>()), r(rhs.getValues<APInt>());
    for (size_t i = 0; i < lmap.size(); ++i) {
      const APInt &a = l[lmap[i]], &b = r[rmap[i]];
      int order = intType.isUnsigned() ? (a.ult(b) ? -1 : a == b ? 0 : 1)
                                       : (a.slt(b) ? -1 : a == b ? 0 : 1);
      out.push_back(fromOrder(order));
    }
  } else if (isa<FloatType>(element)) {
    SmallVector<APFloat> l(lhs.getValues<APFloat>()), r(rhs.getValues<APFloat>());
    for (size_t i = 0; i < lmap.size(); ++i) {
      APFloat::cmpResult c = l[lmap[i]].compare(r[rmap[i]]);
      // Unordered (NaN) compares false under every predicate.
      out.push_back(c != APFloat::cmpUnordered &&
                    fromOrder(c == APFloat::cmpLessThan  ? -1
                              : c == APFloat::cmpEqual ? 0
                                                       : 1));
    }
  } else {
    return {};
  }
  return DenseElementsAttr::get(resultType, out);
}

/// Returns `value` when it already has the op's result type (the identity
/// fold of x + 0, x * 1, ...).
static OpFoldResult identityIfSameType(Value value, Type resultType) {
  return value.getType() == resultType ? OpFoldResult(value) : OpFoldResult();
}

//===----------------------------------------------------------------------===//
// Elementwise folders
//===----------------------------------------------------------------------===//

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 0))
    if (OpFoldResult r = identityIfSameType(getLhs(), getType()))
      return r;
  if (isSplatOf(adaptor.getLhs(), 0))
    if (OpFoldResult r = identityIfSameType(getRhs(), getType()))
      return r;
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a + b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return a + b;
      });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 0))
    if (OpFoldResult r = identityIfSameType(getLhs(), getType()))
      return r;
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a - b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return a - b;
      });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1))
    if (OpFoldResult r = identityIfSameType(getLhs(), getType()))
      return r;
  if (isSplatOf(adaptor.getLhs(), 1))
    if (OpFoldResult r = identityIfSameType(getRhs(), getType()))
      return r;
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a * b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return a * b;
      });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1))
    if (OpFoldResult r = identityIfSameType(getLhs(), getType()))
      return r;
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b,
         bool isUnsigned) -> std::optional<APInt> {
        if (b.isZero())
          return std::nullopt; // Left for run time, like any trap.
        return isUnsigned ? a.udiv(b) : a.sdiv(b);
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return a / b;
      });
}

OpFoldResult PowOp::fold(FoldAdaptor adaptor) {
  if (isSplatOf(adaptor.getRhs(), 1))
    return identityIfSameType(getLhs(), getType());
  return {};
}

OpFoldResult MaxOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b, bool u) -> std::optional<APInt> {
        return (u ? a.uge(b) : a.sge(b)) ? a : b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return llvm::maximum(a, b);
      });
}

OpFoldResult MinOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b, bool u) -> std::optional<APInt> {
        return (u ? a.ule(b) : a.sle(b)) ? a : b;
      },
      [](const APFloat &a, const APFloat &b) -> std::optional<APFloat> {
        return llvm::minimum(a, b);
      });
}

OpFoldResult ModOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b, bool u) -> std::optional<APInt> {
        if (b.isZero())
          return std::nullopt;
        if (u)
          return a.urem(b);
        // Python-style modulo: the result takes the divisor's sign.
        APInt r = a.srem(b);
        if (!r.isZero() && (r.isNegative() != b.isNegative()))
          r += b;
        return r;
      },
      nullptr);
}

OpFoldResult AndOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a & b;
      },
      nullptr);
}

OpFoldResult OrOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a | b;
      },
      nullptr);
}

OpFoldResult XorOp::fold(FoldAdaptor adaptor) {
  return foldArith(
      adaptor.getLhs(), adaptor.getRhs(), getType(),
      [](const APInt &a, const APInt &b, bool) -> std::optional<APInt> {
        return a ^ b;
      },
      nullptr);
}

OpFoldResult EqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(adaptor.getLhs(), adaptor.getRhs(), getType(),
                     [](int order) { return order == 0; });
}
OpFoldResult LessOp::fold(FoldAdaptor adaptor) {
  return foldCompare(adaptor.getLhs(), adaptor.getRhs(), getType(),
                     [](int order) { return order < 0; });
}
OpFoldResult LessEqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(adaptor.getLhs(), adaptor.getRhs(), getType(),
                     [](int order) { return order <= 0; });
}
OpFoldResult GreaterOp::fold(FoldAdaptor adaptor) {
  return foldCompare(adaptor.getLhs(), adaptor.getRhs(), getType(),
                     [](int order) { return order > 0; });
}
OpFoldResult GreaterEqualOp::fold(FoldAdaptor adaptor) {
  return foldCompare(adaptor.getLhs(), adaptor.getRhs(), getType(),
                     [](int order) { return order >= 0; });
}

OpFoldResult SelectOp::fold(FoldAdaptor adaptor) {
  auto cond = dyn_cast_or_null<DenseElementsAttr>(adaptor.getCondition());
  // Folding runs before verification (createOrFold): a condition that is
  // not boolean is the verifier's to report.
  if (cond && !cond.getElementType().isInteger(1))
    return {};
  if (cond && cond.isSplat()) {
    Value chosen =
        cond.getSplatValue<bool>() ? getTrueValue() : getFalseValue();
    if (OpFoldResult r = identityIfSameType(chosen, getType()))
      return r;
  }
  DenseElementsAttr c = foldable(cond), t = foldable(adaptor.getTrueValue()),
                    f = foldable(adaptor.getFalseValue());
  if (!c || !t || !f || !isFoldableResult(getType()))
    return {};
  ArrayRef<int64_t> shape = getType().getShape();
  SmallVector<int64_t> cmap = broadcastMap(c.getType().getShape(), shape);
  SmallVector<int64_t> tmap = broadcastMap(t.getType().getShape(), shape);
  SmallVector<int64_t> fmap = broadcastMap(f.getType().getShape(), shape);
  SmallVector<bool> conds(c.getValues<bool>());
  // Select from the concatenation [t..., f...] through one index map.
  SmallVector<int64_t> map(cmap.size());
  int64_t tSize = t.getNumElements();
  for (size_t i = 0; i < map.size(); ++i)
    map[i] = conds[cmap[i]] ? tmap[i] : tSize + fmap[i];
  RankedTensorType flatT = RankedTensorType::get({tSize}, t.getElementType());
  RankedTensorType flatF =
      RankedTensorType::get({f.getNumElements()}, f.getElementType());
  RankedTensorType joined = RankedTensorType::get(
      {tSize + f.getNumElements()}, t.getElementType());
  DenseElementsAttr both;
  if (isa<FloatType>(t.getElementType())) {
    SmallVector<APFloat> values(t.reshape(flatT).getValues<APFloat>());
    llvm::append_range(values, f.reshape(flatF).getValues<APFloat>());
    both = DenseElementsAttr::get(joined, values);
  } else {
    SmallVector<APInt> values(t.reshape(flatT).getValues<APInt>());
    llvm::append_range(values, f.reshape(flatF).getValues<APInt>());
    both = DenseElementsAttr::get(joined, values);
  }
  return gatherElements(both, getType(), map);
}

OpFoldResult NotOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr input = foldable(adaptor.getInput());
  if (!input)
    return {};
  return input.mapValues(input.getElementType(),
                         [](const APInt &v) { return ~v; });
}

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr input = foldable(adaptor.getInput());
  if (!input)
    return {};
  if (isa<FloatType>(input.getElementType()))
    return input.mapValues(input.getElementType(), [](const APFloat &v) {
      APFloat r = v;
      r.changeSign();
      return r.bitcastToAPInt();
    });
  return input.mapValues(input.getElementType(),
                         [](const APInt &v) { return -v; });
}

/// Folds a float unary op that maps each element through `fn`.
static Attribute
foldFloatUnary(Attribute attr,
               function_ref<APFloat(const APFloat &)> fn) {
  DenseElementsAttr input = foldable(attr);
  if (!input || !isa<FloatType>(input.getElementType()))
    return {};
  return input.mapValues(input.getElementType(), [&](const APFloat &v) {
    return fn(v).bitcastToAPInt();
  });
}

static APFloat rounded(const APFloat &v, APFloat::roundingMode mode) {
  APFloat r = v;
  r.roundToIntegral(mode);
  return r;
}

OpFoldResult FloorOp::fold(FoldAdaptor adaptor) {
  return foldFloatUnary(adaptor.getInput(), [](const APFloat &v) {
    return rounded(v, APFloat::rmTowardNegative);
  });
}

OpFoldResult CeilOp::fold(FoldAdaptor adaptor) {
  return foldFloatUnary(adaptor.getInput(), [](const APFloat &v) {
    return rounded(v, APFloat::rmTowardPositive);
  });
}

OpFoldResult RoundOp::fold(FoldAdaptor adaptor) {
  return foldFloatUnary(adaptor.getInput(), [](const APFloat &v) {
    return rounded(v, APFloat::rmNearestTiesToEven);
  });
}

/// relu and abs on a constant: floats through APFloat (NaN stays NaN, -0
/// is kept by relu as ONNX Runtime's max(x, 0) gives it), integers by sign.
OpFoldResult ReluOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr input = foldable(adaptor.getInput());
  if (!input)
    return {};
  if (isa<FloatType>(input.getElementType()))
    return foldFloatUnary(input, [](const APFloat &v) {
      return v.isNegative() && !v.isZero() && !v.isNaN()
                 ? APFloat::getZero(v.getSemantics())
                 : v;
    });
  auto type = cast<IntegerType>(input.getElementType());
  return input.mapValues(type, [&](const APInt &v) {
    return !type.isUnsigned() && v.isNegative() ? APInt::getZero(v.getBitWidth())
                                                 : v;
  });
}

OpFoldResult AbsOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr input = foldable(adaptor.getInput());
  if (!input)
    return {};
  if (isa<FloatType>(input.getElementType()))
    return foldFloatUnary(input, [](const APFloat &v) { return abs(v); });
  auto type = cast<IntegerType>(input.getElementType());
  return input.mapValues(type, [&](const APInt &v) {
    return !type.isUnsigned() && v.isNegative() ? -v : v;
  });
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  DenseElementsAttr input = foldable(adaptor.getInput());
  if (!input)
    return {};
  Type from = input.getElementType(), to = getType().getElementType();
  auto toInt = dyn_cast<IntegerType>(to);
  auto fromInt = dyn_cast<IntegerType>(from);
  auto toFloat = dyn_cast<FloatType>(to);
  if (fromInt && toInt) {
    return input.mapValues(to, [&](const APInt &v) {
      if (toInt.getWidth() == 1)
        return APInt(1, !v.isZero());
      return fromInt.isUnsigned() || fromInt.getWidth() == 1
                 ? v.zextOrTrunc(toInt.getWidth())
                 : v.sextOrTrunc(toInt.getWidth());
    });
  }
  if (fromInt && toFloat) {
    return input.mapValues(to, [&](const APInt &v) {
      APFloat r(toFloat.getFloatSemantics());
      bool isSigned = !fromInt.isUnsigned() && fromInt.getWidth() != 1;
      r.convertFromAPInt(v, isSigned, APFloat::rmNearestTiesToEven);
      return r.bitcastToAPInt();
    });
  }
  if (isa<FloatType>(from) && toInt) {
    bool invalid = false;
    Attribute result = input.mapValues(to, [&](const APFloat &v) {
      if (toInt.getWidth() == 1)
        return APInt(1, !v.isZero());
      APSInt r(toInt.getWidth(), toInt.isUnsigned());
      bool exact;
      if (v.convertToInteger(r, APFloat::rmTowardZero, &exact) ==
          APFloat::opInvalidOp)
        invalid = true;
      return APInt(r);
    });
    return invalid ? Attribute() : result;
  }
  if (isa<FloatType>(from) && toFloat) {
    return input.mapValues(to, [&](const APFloat &v) {
      APFloat r = v;
      bool losesInfo;
      r.convert(toFloat.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &losesInfo);
      return r.bitcastToAPInt();
    });
  }
  return {};
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

#define KILN_REDUCE_FOLD(OP)                                                   \
  OpFoldResult OP::fold(FoldAdaptor) {                                         \
    return getAxes().empty() ? identityIfSameType(getInput(), getType())       \
                             : OpFoldResult();                                 \
  }
KILN_REDUCE_FOLD(ReduceSumOp)
KILN_REDUCE_FOLD(ReduceMeanOp)
KILN_REDUCE_FOLD(ReduceMaxOp)
KILN_REDUCE_FOLD(ReduceMinOp)
KILN_REDUCE_FOLD(ReduceProdOp)
#undef KILN_REDUCE_FOLD

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (!getType().hasStaticShape())
    return {};
  // A weight blob is reshaped by reusing its bytes under the new type.
  if (auto blob =
          dyn_cast_or_null<DenseResourceElementsAttr>(adaptor.getInput()))
    return DenseResourceElementsAttr::get(getType(), blob.getRawHandle());
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  return {};
}

namespace {
/// reshape(reshape(x)) -> reshape(x).
struct FoldReshapeChain : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto producer = op.getInput().getDefiningOp<ReshapeOp>();
    if (!producer)
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(),
                                           producer.getInput());
    return success();
  }
};

/// transpose(transpose(x, p1), p2) -> transpose(x, p1 o p2).
struct FoldTransposeChain : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto producer = op.getInput().getDefiningOp<TransposeOp>();
    if (!producer)
      return failure();
    ArrayRef<int64_t> inner = producer.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t p : op.getPermutation())
      composed.push_back(inner[p]);
    rewriter.replaceOpWithNewOp<TransposeOp>(op, producer.getInput(),
                                             composed);
    return success();
  }
};

/// A zero point that is a constant zero is no zero point (exported models
/// often pass explicit zeros).
template <typename OpTy> struct DropZeroZeroPoints : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    bool changed = false;
    // One at a time, each range taken afresh: clearing one moves the
    // operands (and segment sizes) of the other.
    for (unsigned i : {0u, 1u}) {
      MutableOperandRange zp = zeroPoints(op)[i];
      if (zp.size() != 1 || !matchPattern(zp[0].get(), m_Zero()))
        continue;
      rewriter.modifyOpInPlace(op, [&] { zp.clear(); });
      changed = true;
    }
    return success(changed);
  }

  static SmallVector<MutableOperandRange> zeroPoints(MatmulIntegerOp op) {
    return {op.getLhsZeroPointMutable(), op.getRhsZeroPointMutable()};
  }
  static SmallVector<MutableOperandRange> zeroPoints(ConvIntegerOp op) {
    return {op.getInputZeroPointMutable(), op.getFilterZeroPointMutable()};
  }
};
} // namespace

void MatmulIntegerOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                  MLIRContext *context) {
  results.add<DropZeroZeroPoints<MatmulIntegerOp>>(context);
}

void ConvIntegerOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                                MLIRContext *context) {
  results.add<DropZeroZeroPoints<ConvIntegerOp>>(context);
}

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<FoldReshapeChain>(context);
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<FoldTransposeChain>(context);
}

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  bool identity = llvm::all_of(llvm::enumerate(perm), [](auto p) {
    return (int64_t)p.index() == p.value();
  });
  if (identity)
    return identityIfSameType(getInput(), getType());
  DenseElementsAttr input = foldable(adaptor.getInput());
  if (!input || !isFoldableResult(getType()))
    return {};
  ArrayRef<int64_t> outShape = getType().getShape();
  SmallVector<int64_t> outStrides = computeStrides(outShape);
  SmallVector<int64_t> inStrides = computeStrides(input.getType().getShape());
  SmallVector<int64_t> map(getType().getNumElements());
  for (int64_t i = 0; i < (int64_t)map.size(); ++i) {
    SmallVector<int64_t> index = delinearize(i, outStrides);
    int64_t linear = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      linear += index[d] * inStrides[perm[d]];
    map[i] = linear;
  }
  return gatherElements(input, getType(), map);
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1)
    return identityIfSameType(getInputs().front(), getType());
  if (!isFoldableResult(getType()))
    return {};
  SmallVector<DenseElementsAttr> inputs;
  for (Attribute attr : adaptor.getInputs()) {
    DenseElementsAttr dense = foldable(attr);
    if (!dense)
      return {};
    inputs.push_back(dense);
  }
  // Join all inputs into one flat list, then pick through an index map.
  int64_t axis = getAxis();
  ArrayRef<int64_t> outShape = getType().getShape();
  SmallVector<int64_t> outStrides = computeStrides(outShape);
  SmallVector<int64_t> bases, offsets;
  int64_t base = 0, offset = 0;
  for (DenseElementsAttr in : inputs) {
    bases.push_back(base);
    offsets.push_back(offset);
    base += in.getNumElements();
    offset += in.getType().getShape()[axis];
  }
  SmallVector<int64_t> map(getType().getNumElements());
  for (int64_t i = 0; i < (int64_t)map.size(); ++i) {
    SmallVector<int64_t> index = delinearize(i, outStrides);
    size_t which = llvm::upper_bound(offsets, index[axis]) - offsets.begin() - 1;
    index[axis] -= offsets[which];
    SmallVector<int64_t> strides =
        computeStrides(inputs[which].getType().getShape());
    map[i] = bases[which] + linearize(index, strides);
  }
  RankedTensorType flat = RankedTensorType::get({base}, getType().getElementType());
  DenseElementsAttr joined;
  if (isa<FloatType>(flat.getElementType())) {
    SmallVector<APFloat> values;
    for (DenseElementsAttr in : inputs)
      llvm::append_range(values, in.getValues<APFloat>());
    joined = DenseElementsAttr::get(flat, values);
  } else {
    SmallVector<APInt> values;
    for (DenseElementsAttr in : inputs)
      llvm::append_range(values, in.getValues<APInt>());
    joined = DenseElementsAttr::get(flat, values);
  }
  return gatherElements(joined, getType(), map);
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType() &&
      llvm::all_of(getSteps(), [](int64_t s) { return s == 1; }))
    return getInput();
  DenseElementsAttr input = foldable(adaptor.getInput());
  if (!input || !isFoldableResult(getType()))
    return {};
  ArrayRef<int64_t> starts = getStarts(), steps = getSteps();
  SmallVector<int64_t> outStrides = computeStrides(getType().getShape());
  SmallVector<int64_t> inStrides = computeStrides(input.getType().getShape());
  SmallVector<int64_t> map(getType().getNumElements());
  for (int64_t i = 0; i < (int64_t)map.size(); ++i) {
    SmallVector<int64_t> index = delinearize(i, outStrides);
    int64_t linear = 0;
    for (size_t d = 0; d < index.size(); ++d)
      linear += (starts[d] + index[d] * steps[d]) * inStrides[d];
    map[i] = linear;
  }
  return gatherElements(input, getType(), map);
}

OpFoldResult GatherOp::fold(FoldAdaptor adaptor) {
  DenseElementsAttr data = foldable(adaptor.getData());
  DenseElementsAttr indices = foldable(adaptor.getIndices());
  if (!data || !indices || !isFoldableResult(getType()))
    return {};
  int64_t axis = getAxis();
  ArrayRef<int64_t> dataShape = data.getType().getShape();
  int64_t axisSize = dataShape[axis];
  SmallVector<int64_t> idx;
  for (const APInt &v : indices.getValues<APInt>()) {
    int64_t i = v.getSExtValue();
    if (i < 0)
      i += axisSize;
    if (i < 0 || i >= axisSize)
      return {}; // Out of range: left for the verifier of a later stage.
    idx.push_back(i);
  }
  int64_t indexRank = indices.getType().getRank();
  SmallVector<int64_t> outStrides = computeStrides(getType().getShape());
  SmallVector<int64_t> dataStrides = computeStrides(dataShape);
  SmallVector<int64_t> idxStrides = computeStrides(indices.getType().getShape());
  SmallVector<int64_t> map(getType().getNumElements());
  for (int64_t i = 0; i < (int64_t)map.size(); ++i) {
    SmallVector<int64_t> out = delinearize(i, outStrides);
    SmallVector<int64_t> dataIndex(out.begin(), out.begin() + axis);
    ArrayRef<int64_t> idxIndex(out.data() + axis, indexRank);
    dataIndex.push_back(idx[linearize(idxIndex, idxStrides)]);
    dataIndex.append(out.begin() + axis + indexRank, out.end());
    map[i] = linearize(dataIndex, dataStrides);
  }
  return gatherElements(data, getType(), map);
}

OpFoldResult ExpandOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput());
  if (dense && dense.isSplat() && getType().hasStaticShape())
    return dense.resizeSplat(getType());
  DenseElementsAttr input = foldable(dense);
  if (!input || !isFoldableResult(getType()))
    return {};
  return gatherElements(
      input, getType(),
      broadcastMap(input.getType().getShape(), getType().getShape()));
}
