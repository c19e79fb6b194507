//===- Reduction.cpp - lowering of the reduction ops ----------------------===//
//
// `reduce_{sum,mean,max,min,prod}` become one `linalg.reduce` over the
// listed axes into a tensor filled with the reduction's identity (0, 1,
// -inf/+inf or the integer extremes); the mean divides the sums afterwards,
// and `keepdims` re-inserts the unit dimensions with `tensor.expand_shape`.
// `argmax`/`argmin` are one linalg.generic with two outputs (the running
// extreme and its i64 index) that reduces along the axis and takes an element
// when it is strictly better (first index wins) or, with
// `select_last_index`, at least as good.
//
//===----------------------------------------------------------------------===//

#include "lowering/KilnToLinalg.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::lowering;

namespace {

enum class ReduceKind { Sum, Mean, Max, Min, Prod };

bool isFloat(Type t) { return isa<FloatType>(t); }

/// `type` without the dimensions in `dims` (sorted).
RankedTensorType dropDims(RankedTensorType type, ArrayRef<int64_t> dims) {
  SmallVector<int64_t> shape;
  for (auto [i, d] : llvm::enumerate(type.getShape()))
    if (!llvm::is_contained(dims, (int64_t)i))
      shape.push_back(d);
  return RankedTensorType::get(shape, type.getElementType());
}

Value combine(OpBuilder &b, Location loc, ReduceKind kind, Value acc, Value x) {
  bool fp = isFloat(x.getType());
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Mean:
    return fp ? arith::AddFOp::create(b, loc, acc, x).getResult()
              : arith::AddIOp::create(b, loc, acc, x).getResult();
  case ReduceKind::Prod:
    return fp ? arith::MulFOp::create(b, loc, acc, x).getResult()
              : arith::MulIOp::create(b, loc, acc, x).getResult();
  case ReduceKind::Max:
    return maxScalar(b, loc, acc, x);
  case ReduceKind::Min:
    return minScalar(b, loc, acc, x);
  }
  llvm_unreachable("unknown reduction");
}

Value identity(OpBuilder &b, Location loc, ReduceKind kind, Type elem) {
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Mean:
    return scalarConstant(b, loc, elem, 0);
  case ReduceKind::Prod:
    return scalarConstant(b, loc, elem, 1);
  case ReduceKind::Max:
    return lowestValue(b, loc, elem);
  case ReduceKind::Min:
    return highestValue(b, loc, elem);
  }
  llvm_unreachable("unknown reduction");
}

/// Lowers the `kiln.reduce_*` op `OpTy` computing `kind`.
template <typename OpTy, ReduceKind kind>
struct ReduceLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = op.getInput();
    auto inType = cast<RankedTensorType>(input.getType());
    auto type = cast<RankedTensorType>(op.getType());
    Type elem = type.getElementType();
    if (failed(requireStaticShapes(op)) ||
        failed(requireArithmeticType(op, elem)))
      return failure();
    ArrayRef<int64_t> axes = op.getAxes();
    if (axes.empty()) {
      rewriter.replaceOp(op, input);
      return success();
    }

    RankedTensorType reducedType = dropDims(inType, axes);
    Value init = filledTensor(rewriter, loc, reducedType,
                              identity(rewriter, loc, kind, elem));
    Value result = linalg::ReduceOp::create(
                       rewriter, loc, ValueRange{input}, ValueRange{init}, axes,
                       [&](OpBuilder &b, Location l, ValueRange args) {
                         linalg::YieldOp::create(
                             b, l, combine(b, l, kind, args[1], args[0]));
                       })
                       .getResult(0);

    int64_t count = 1;
    for (int64_t axis : axes)
      count *= inType.getShape()[axis];
    // (The integer mean of nothing stays 0 rather than dividing by zero; the
    // float one is 0 / 0 = NaN, as in numpy.)
    if (kind == ReduceKind::Mean && (isFloat(elem) || count != 0)) {
      result =
          elementwise(rewriter, loc, reducedType, {result},
                      [&](OpBuilder &b, Location l, ValueRange args) -> Value {
                        Value n = scalarConstant(b, l, elem, count);
                        if (isFloat(elem))
                          return arith::DivFOp::create(b, l, args[0], n);
                        return arith::DivSIOp::create(b, l, args[0], n);
                      });
    }
    rewriter.replaceOp(op, reshapeTensor(rewriter, loc, result, type));
    return success();
  }
};

/// Lowers `kiln.argmax` (`isMax`) and `kiln.argmin`.
template <typename OpTy, bool isMax>
struct ArgLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = op.getInput();
    auto inType = cast<RankedTensorType>(input.getType());
    Type elem = inType.getElementType();
    if (failed(requireStaticShapes(op)) ||
        failed(requireArithmeticType(op, elem)))
      return failure();
    int64_t axis = op.getAxis(), rank = inType.getRank();
    bool last = op.getSelectLastIndex();

    RankedTensorType valueType = dropDims(inType, {axis});
    auto indexType =
        RankedTensorType::get(valueType.getShape(), rewriter.getI64Type());
    Value valueInit = filledTensor(rewriter, loc, valueType,
                                   isMax ? lowestValue(rewriter, loc, elem)
                                         : highestValue(rewriter, loc, elem));
    Value indexInit =
        filledTensor(rewriter, loc, indexType,
                     scalarConstant(rewriter, loc, rewriter.getI64Type(), 0));

    MLIRContext *ctx = rewriter.getContext();
    AffineMap identityMap = AffineMap::getMultiDimIdentityMap(rank, ctx);
    AffineMap reducedMap = identityMap.dropResult(axis);
    SmallVector<AffineMap> maps = {identityMap, reducedMap, reducedMap};

    // Strict comparison keeps the first extreme, non-strict the last.
    using FP = arith::CmpFPredicate;
    using IP = arith::CmpIPredicate;
    FP fp = isMax ? (last ? FP::OGE : FP::OGT) : (last ? FP::OLE : FP::OLT);
    IP ip = isMax ? (last ? IP::sge : IP::sgt) : (last ? IP::sle : IP::slt);
    if (elem.isInteger(1))
      ip = isMax ? (last ? IP::uge : IP::ugt) : (last ? IP::ule : IP::ult);

    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{valueType, indexType}, ValueRange{input},
        ValueRange{valueInit, indexInit}, maps, iteratorTypes(rank, {axis}),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value x = args[0], best = args[1], bestIndex = args[2];
          Value better =
              isFloat(elem)
                  ? arith::CmpFOp::create(b, l, fp, x, best).getResult()
                  : arith::CmpIOp::create(b, l, ip, x, best).getResult();
          Value index = arith::IndexCastOp::create(
              b, l, b.getI64Type(), linalg::IndexOp::create(b, l, axis));
          linalg::YieldOp::create(
              b, l,
              ValueRange{
                  arith::SelectOp::create(b, l, better, x, best),
                  arith::SelectOp::create(b, l, better, index, bestIndex)});
        });
    rewriter.replaceOp(
        op, reshapeTensor(rewriter, loc, generic.getResult(1), op.getType()));
    return success();
  }
};

} // namespace

void kiln::populateReductionLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<ReduceLowering<ReduceSumOp, ReduceKind::Sum>,
               ReduceLowering<ReduceMeanOp, ReduceKind::Mean>,
               ReduceLowering<ReduceMaxOp, ReduceKind::Max>,
               ReduceLowering<ReduceMinOp, ReduceKind::Min>,
               ReduceLowering<ReduceProdOp, ReduceKind::Prod>,
               ArgLowering<ArgMaxOp, true>, ArgLowering<ArgMinOp, false>>(
      patterns.getContext());
}
