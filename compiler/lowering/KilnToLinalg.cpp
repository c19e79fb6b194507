//===- KilnToLinalg.cpp - the kiln-lower-to-linalg pass and helpers -------===//
//
// The pass drives the per-family pattern sets with a partial conversion, so
// an op without a lowering is an error that names it. The helpers below are
// shared by the family files.
//
//===----------------------------------------------------------------------===//

#include "lowering/KilnToLinalg.h"
#include "kiln/Passes/Passes.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNLOWERTOLINALG
#include "lowering/Passes.h.inc"
} // namespace kiln

namespace kiln::lowering {

Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
}

Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type, Value value) {
  Value empty = emptyTensor(b, loc, type);
  return linalg::FillOp::create(b, loc, value, empty).getResult(0);
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto ft = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, FloatAttr::get(ft, value));
  auto it = cast<IntegerType>(type);
  if (it.getWidth() == 1)
    return arith::ConstantOp::create(b, loc, b.getBoolAttr(value != 0));
  return arith::ConstantOp::create(
      b, loc, IntegerAttr::get(it, static_cast<int64_t>(value)));
}

AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> shape,
                       ArrayRef<int64_t> resultShape) {
  unsigned rank = resultShape.size(), offset = rank - shape.size();
  SmallVector<AffineExpr> exprs;
  for (auto [i, dim] : llvm::enumerate(shape)) {
    if (dim == 1 && resultShape[offset + i] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(offset + i, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

bool hasUnsignedElements(Type type) {
  return getElementTypeOrSelf(type).isUnsignedInteger();
}

Type signlessType(Type type) {
  auto it = dyn_cast<IntegerType>(getElementTypeOrSelf(type));
  if (!it || it.isSignless())
    return type;
  Type signless = IntegerType::get(type.getContext(), it.getWidth());
  if (auto shaped = dyn_cast<ShapedType>(type))
    return shaped.clone(signless);
  return signless;
}

Value reinterpret(OpBuilder &b, Location loc, Value value, Type type) {
  if (value.getType() == type)
    return value;
  return UnrealizedConversionCastOp::create(b, loc, type, value).getResult(0);
}

/// Drops the unit dimensions of `operand` that broadcast against
/// `resultShape` (numpy-style, aligned on the right): a [1, C, 1, 1] bias of
/// an [N, C, H, W] result becomes a [C] tensor read through (d0..d3) -> (d1).
/// Maps without constant results let tile-and-fuse slice the operand along
/// the consumer's tile like any other, so per-channel epilogues fuse into the
/// contraction they follow. Returns the operand and its indexing map.
static std::pair<Value, AffineMap>
dropBroadcastUnitDims(OpBuilder &b, Location loc, Value operand,
                      ArrayRef<int64_t> resultShape) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(operand.getType());
  ArrayRef<int64_t> shape = type.getShape();
  unsigned rank = resultShape.size(), offset = rank - shape.size();
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices pending;
  SmallVector<int64_t> kept;
  SmallVector<AffineExpr> exprs;
  for (auto [i, dim] : llvm::enumerate(shape)) {
    pending.push_back(i);
    if (dim == 1 && resultShape[offset + i] != 1)
      continue;
    groups.push_back(std::move(pending));
    pending.clear();
    kept.push_back(dim);
    exprs.push_back(getAffineDimExpr(offset + i, ctx));
  }
  if (kept.size() == shape.size())
    return {operand, AffineMap::get(rank, 0, exprs, ctx)};
  if (!groups.empty())
    groups.back().append(pending.begin(), pending.end());
  auto collapsedType = RankedTensorType::get(kept, type.getElementType());
  Value collapsed =
      tensor::CollapseShapeOp::create(b, loc, collapsedType, operand, groups);
  return {collapsed, AffineMap::get(rank, 0, exprs, ctx)};
}

Value elementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                  ValueRange operands, ScalarBuilder body) {
  MLIRContext *ctx = b.getContext();
  // arith has no unsigned types: the generic computes on signless ones.
  SmallVector<Value> signlessOperands;
  SmallVector<AffineMap> maps;
  for (Value operand : operands) {
    auto [reduced, map] = dropBroadcastUnitDims(
        b, loc, reinterpret(b, loc, operand, signlessType(operand.getType())),
        resultType.getShape());
    signlessOperands.push_back(reduced);
    maps.push_back(map);
  }
  auto signlessResult = cast<RankedTensorType>(signlessType(resultType));
  maps.push_back(AffineMap::getMultiDimIdentityMap(resultType.getRank(), ctx));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, signlessResult, signlessOperands,
      emptyTensor(b, loc, signlessResult), maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value result = body(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, result);
      });
  return reinterpret(b, loc, generic.getResult(0), resultType);
}

void multiplyAccumulate(OpBuilder &b, Location loc, ValueRange args, Type elem,
                        bool lhsUnsigned) {
  Value x = convertScalar(b, loc, args[0], elem, lhsUnsigned);
  Value y = convertScalar(b, loc, args[1], elem);
  Value sum;
  if (isa<FloatType>(elem))
    sum = arith::AddFOp::create(b, loc, args[2], arith::MulFOp::create(b, loc, x, y));
  else
    sum = arith::AddIOp::create(b, loc, args[2], arith::MulIOp::create(b, loc, x, y));
  linalg::YieldOp::create(b, loc, sum);
}

Value convertScalar(OpBuilder &b, Location loc, Value value, Type to,
                    bool fromUnsigned) {
  bool toUnsigned = to.isUnsignedInteger();
  to = signlessType(to);
  Type from = value.getType();
  fromUnsigned = fromUnsigned || from.isUnsignedInteger();
  if (from == to)
    return value;
  auto fromFloat = dyn_cast<FloatType>(from), toFloat = dyn_cast<FloatType>(to);
  if (to.isInteger(1)) {
    Value zero = scalarConstant(b, loc, from, 0);
    if (fromFloat)
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, value, zero);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, value, zero);
  }
  if (fromFloat && toFloat) {
    if (fromFloat.getWidth() < toFloat.getWidth())
      return arith::ExtFOp::create(b, loc, to, value);
    return arith::TruncFOp::create(b, loc, to, value);
  }
  if (fromFloat) {
    if (toUnsigned)
      return arith::FPToUIOp::create(b, loc, to, value);
    return arith::FPToSIOp::create(b, loc, to, value);
  }
  if (toFloat) {
    if (from.isInteger(1) || fromUnsigned)
      return arith::UIToFPOp::create(b, loc, to, value);
    return arith::SIToFPOp::create(b, loc, to, value);
  }
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (fw == tw)
    return value; // Same bits, another signedness.
  if (fw < tw) {
    if (fw == 1 || fromUnsigned)
      return arith::ExtUIOp::create(b, loc, to, value);
    return arith::ExtSIOp::create(b, loc, to, value);
  }
  return arith::TruncIOp::create(b, loc, to, value);
}

std::optional<SmallVector<ReassociationIndices>>
reshapeReassociation(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() >= to.size())
    return getReassociationIndicesForCollapse(from, to);
  return getReassociationIndicesForCollapse(to, from);
}

Value reshapeTensor(OpBuilder &b, Location loc, Value value, RankedTensorType to) {
  auto from = cast<RankedTensorType>(value.getType());
  if (from == to)
    return value;
  if (auto reassoc = reshapeReassociation(from.getShape(), to.getShape())) {
    if (from.getRank() > to.getRank())
      return tensor::CollapseShapeOp::create(b, loc, to, value, *reassoc);
    if (from.getRank() < to.getRank())
      return tensor::ExpandShapeOp::create(b, loc, to, value, *reassoc);
  }
  SmallVector<int64_t> shape(to.getShape());
  auto shapeType = RankedTensorType::get({to.getRank()}, b.getI64Type());
  Value shapeValue = arith::ConstantOp::create(
      b, loc, DenseIntElementsAttr::get(shapeType, shape));
  return tensor::ReshapeOp::create(b, loc, to, value, shapeValue);
}


Value padTensor(OpBuilder &b, Location loc, Value source, ArrayRef<int64_t> low,
                ArrayRef<int64_t> high, Value padValue) {
  if (llvm::all_of(low, [](int64_t p) { return p == 0; }) &&
      llvm::all_of(high, [](int64_t p) { return p == 0; }))
    return source;
  auto type = cast<RankedTensorType>(source.getType());
  SmallVector<int64_t> shape;
  SmallVector<OpFoldResult> lowOfr, highOfr;
  for (auto [d, l, h] : llvm::zip_equal(type.getShape(), low, high)) {
    shape.push_back(d + l + h);
    lowOfr.push_back(b.getIndexAttr(l));
    highOfr.push_back(b.getIndexAttr(h));
  }
  auto padded = RankedTensorType::get(shape, type.getElementType());
  return tensor::PadOp::create(b, loc, padded, source, lowOfr, highOfr,
                               padValue);
}

static Value extremeValue(OpBuilder &b, Location loc, Type type, bool lowest) {
  if (auto ft = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(
        b, loc,
        FloatAttr::get(ft, APFloat::getInf(ft.getFloatSemantics(),
                                           /*Negative=*/lowest)));
  auto it = cast<IntegerType>(type);
  unsigned width = it.getWidth();
  APInt value = width == 1 ? APInt(1, lowest ? 0 : 1)
                : lowest   ? APInt::getSignedMinValue(width)
                           : APInt::getSignedMaxValue(width);
  return arith::ConstantOp::create(b, loc, IntegerAttr::get(it, value));
}

Value lowestValue(OpBuilder &b, Location loc, Type type) {
  return extremeValue(b, loc, type, /*lowest=*/true);
}

Value highestValue(OpBuilder &b, Location loc, Type type) {
  return extremeValue(b, loc, type, /*lowest=*/false);
}

Value maxScalar(OpBuilder &b, Location loc, Value x, Value y, bool isUnsigned) {
  if (isa<FloatType>(x.getType()))
    return arith::MaximumFOp::create(b, loc, x, y);
  if (x.getType().isInteger(1))
    return arith::OrIOp::create(b, loc, x, y);
  if (isUnsigned)
    return arith::MaxUIOp::create(b, loc, x, y);
  return arith::MaxSIOp::create(b, loc, x, y);
}

Value minScalar(OpBuilder &b, Location loc, Value x, Value y, bool isUnsigned) {
  if (isa<FloatType>(x.getType()))
    return arith::MinimumFOp::create(b, loc, x, y);
  if (x.getType().isInteger(1))
    return arith::AndIOp::create(b, loc, x, y);
  if (isUnsigned)
    return arith::MinUIOp::create(b, loc, x, y);
  return arith::MinSIOp::create(b, loc, x, y);
}

SmallVector<utils::IteratorType>
iteratorTypes(unsigned loops, ArrayRef<int64_t> reductionLoops) {
  SmallVector<utils::IteratorType> iterators(loops,
                                             utils::IteratorType::parallel);
  for (int64_t loop : reductionLoops)
    iterators[loop] = utils::IteratorType::reduction;
  return iterators;
}

LogicalResult requireStaticShapes(Operation *op) {
  auto isStatic = [](Type t) {
    auto shaped = dyn_cast<ShapedType>(t);
    return !shaped || shaped.hasStaticShape();
  };
  if (llvm::all_of(op->getOperandTypes(), isStatic) &&
      llvm::all_of(op->getResultTypes(), isStatic))
    return success();
  return op->emitOpError(
      "cannot be lowered to linalg: dynamic shapes are not supported");
}

LogicalResult requireArithmeticType(Operation *op, Type elementType) {
  if (elementType.isSignlessIntOrFloat())
    return success();
  return op->emitOpError("cannot be lowered to linalg: element type ")
         << elementType << " is not a float or a signless integer";
}

/// `scalar` (signless, of 8 bits or `i32`) as `i32`: zero-extended when
/// `isUnsigned`, sign-extended otherwise.
static Value extendToI32(OpBuilder &b, Location loc, Value scalar,
                         bool isUnsigned) {
  Type i32 = b.getI32Type();
  if (scalar.getType() == i32)
    return scalar;
  if (isUnsigned)
    return arith::ExtUIOp::create(b, loc, i32, scalar);
  return arith::ExtSIOp::create(b, loc, i32, scalar);
}

Value widenInteger(OpBuilder &b, Location loc, Value value, Value zeroPoint,
                   int64_t zeroPointAxis) {
  auto type = cast<RankedTensorType>(value.getType());
  bool isUnsigned = type.getElementType().isUnsignedInteger();
  Type i32 = b.getI32Type();
  SmallVector<Value> operands = {value};
  // A 1-D zero point along `zeroPointAxis` broadcasts as [1.., n, 1..].
  std::optional<RankedTensorType> zeroPointType;
  if (zeroPoint && zeroPointAxis >= 0) {
    SmallVector<int64_t> shape(type.getRank(), 1);
    shape[zeroPointAxis] = type.getShape()[zeroPointAxis];
    zeroPointType = RankedTensorType::get(shape, type.getElementType());
  }
  // A constant zero point is extended here: a splat becomes an i32 scalar
  // in the body, a vector an i32 constant (no unsigned tensor constants).
  std::optional<APInt> splatZeroPoint;
  if (zeroPoint) {
    DenseIntElementsAttr attr;
    if (matchPattern(zeroPoint, m_Constant(&attr))) {
      DenseElementsAttr extended = attr.mapValues(i32, [&](const APInt &v) {
        return isUnsigned ? v.zext(32) : v.sext(32);
      });
      if (extended.isSplat())
        splatZeroPoint = extended.getSplatValue<APInt>();
      else if (zeroPointType)
        operands.push_back(
            arith::ConstantOp::create(b, loc,
                                      extended.reshape(RankedTensorType::get(
                                          zeroPointType->getShape(), i32))));
      else
        operands.push_back(arith::ConstantOp::create(b, loc, extended));
    } else if (zeroPointType) {
      operands.push_back(reshapeTensor(b, loc, zeroPoint, *zeroPointType));
    } else {
      operands.push_back(zeroPoint);
    }
  }
  return elementwise(
      b, loc, RankedTensorType::get(type.getShape(), i32), operands,
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value x = extendToI32(nb, l, args[0], isUnsigned);
        Value zp;
        if (args.size() > 1)
          zp = extendToI32(nb, l, args[1], isUnsigned);
        else if (splatZeroPoint && !splatZeroPoint->isZero())
          zp = arith::ConstantOp::create(
              nb, l, IntegerAttr::get(i32, *splatZeroPoint));
        return zp ? arith::SubIOp::create(nb, l, x, zp).getResult() : x;
      });
}

std::optional<int64_t> uniformZeroPoint(Value zeroPoint) {
  if (!zeroPoint)
    return 0;
  DenseIntElementsAttr attr;
  if (!matchPattern(zeroPoint, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  APInt v = attr.getSplatValue<APInt>();
  return hasUnsignedElements(zeroPoint.getType()) ? v.getZExtValue() : v.getSExtValue();
}

Value subtractZeroPointSums(OpBuilder &b, Location loc, Value acc, Value weights,
                            int64_t kDim, ArrayRef<int64_t> sumShape,
                            int64_t zeroPoint) {
  if (zeroPoint == 0)
    return acc;
  MLIRContext *ctx = b.getContext();
  auto accType = cast<RankedTensorType>(acc.getType());
  auto wType = cast<RankedTensorType>(weights.getType());
  Type i32 = b.getI32Type();
  // sums[..] = sum over kDim of sext(weights[..]), the other dimensions kept.
  SmallVector<int64_t> reducedShape;
  SmallVector<AffineExpr> sumExprs;
  for (int64_t d = 0; d < wType.getRank(); ++d)
    if (d != kDim) {
      reducedShape.push_back(wType.getDimSize(d));
      sumExprs.push_back(getAffineDimExpr(d, ctx));
    }
  auto sumType = RankedTensorType::get(reducedShape, i32);
  unsigned loops = wType.getRank();
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(loops, ctx),
                                 AffineMap::get(loops, 0, sumExprs, ctx)};
  Value sums =
      linalg::GenericOp::create(
          b, loc, sumType, ValueRange{weights},
          ValueRange{filledTensor(b, loc, sumType, scalarConstant(b, loc, i32, 0))}, maps,
          iteratorTypes(loops, {kDim}),
          [&](OpBuilder &nb, Location l, ValueRange args) {
            Value w = convertScalar(nb, l, args[0], i32);
            linalg::YieldOp::create(nb, l, arith::AddIOp::create(nb, l, args[1], w).getResult());
          })
          .getResult(0);
  sums = reshapeTensor(b, loc, sums, RankedTensorType::get(sumShape, i32));
  return elementwise(b, loc, accType, {acc, sums},
                     [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                       Value z = scalarConstant(nb, l, i32, static_cast<double>(zeroPoint));
                       Value zs = arith::MulIOp::create(nb, l, z, args[1]);
                       return arith::SubIOp::create(nb, l, args[0], zs);
                     });
}

DenseIntElementsAttr i64Vector(OpBuilder &b, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({(int64_t)values.size()}, b.getI64Type());
  return DenseIntElementsAttr::get(type, values);
}

} // namespace kiln::lowering

namespace {
using namespace kiln;

struct ConstantLowering : OpRewritePattern<kiln::ConstantOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(kiln::ConstantOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, op.getType(), cast<TypedAttr>(op.getValue()));
    return success();
  }
};

struct ReshapeLowering : OpRewritePattern<kiln::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(kiln::ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, lowering::reshapeTensor(rewriter, op.getLoc(),
                                                   op.getInput(), op.getType()));
    return success();
  }
};

/// Programs (`@main` after outlining) keep their reshapes and constants:
/// those are views and bindings, not computation.
bool isProgramLevel(Operation *op) {
  return isa_and_nonnull<ProgramOp>(op->getParentOp());
}

/// Replaces every unsigned integer type in `func` (block arguments, results,
/// the signature, the types inside attributes such as constants' values) by
/// the signless type of the same width, then drops the casts that became
/// identities. After the lowering, signedness lives in the arith ops chosen
/// (divui, maxui, cmpi ult, extui, uitofp...), and the later stages (tiling,
/// vectorization, bufferization, the LLVM and GPU lowerings) see signless
/// integers only.
void eraseSignedness(func::FuncOp func) {
  AttrTypeReplacer replacer;
  replacer.addReplacement([](IntegerType type) -> std::optional<Type> {
    if (type.isSignless())
      return std::nullopt;
    return IntegerType::get(type.getContext(), type.getWidth());
  });
  // Constants keep their bytes under the signless type (the replacer does
  // not rebuild elements attributes from a replaced type).
  replacer.addReplacement([](DenseElementsAttr attr) -> std::optional<Attribute> {
    if (!kiln::lowering::hasUnsignedElements(attr.getType()))
      return std::nullopt;
    return attr.bitcast(kiln::lowering::signlessType(attr.getElementType()));
  });
  replacer.addReplacement(
      [](DenseResourceElementsAttr attr) -> std::optional<Attribute> {
        if (!kiln::lowering::hasUnsignedElements(attr.getType()))
          return std::nullopt;
        return DenseResourceElementsAttr::get(
            cast<ShapedType>(kiln::lowering::signlessType(attr.getType())),
            attr.getRawHandle());
      });
  replacer.recursivelyReplaceElementsIn(func, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);
  func.walk([](UnrealizedConversionCastOp cast) {
    if (cast->getNumOperands() == 1 && cast->getNumResults() == 1 &&
        cast.getOperand(0).getType() == cast.getResult(0).getType()) {
      cast.getResult(0).replaceAllUsesWith(cast.getOperand(0));
      cast.erase();
    }
  });
}

struct KilnLowerToLinalgPass
    : kiln::impl::KilnLowerToLinalgBase<KilnLowerToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    patterns.add<ConstantLowering, ReshapeLowering>(ctx);
    populateElementwiseLoweringPatterns(patterns);
    populateMatmulLoweringPatterns(patterns);
    populateConvLoweringPatterns(patterns);
    populatePoolingLoweringPatterns(patterns);
    populateReductionLoweringPatterns(patterns);
    populateNormalizationLoweringPatterns(patterns);
    populateDataMovementLoweringPatterns(patterns);

    ConversionTarget target(*ctx);
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect,
                           scf::SCFDialect, func::FuncDialect>();
    target.addIllegalDialect<KilnDialect>();
    target.addLegalOp<DispatchOp, YieldOp>();
    // The reinterpretations of unsigned tensors as signless ones around the
    // generics that compute on them (see `reinterpret`): they become
    // identities, and are removed, when the signedness is erased below.
    target.addLegalOp<UnrealizedConversionCastOp>();
    target.addDynamicallyLegalOp<kiln::ReshapeOp, kiln::ConstantOp>(
        [](Operation *op) { return isProgramLevel(op); });
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      return signalPassFailure();
    // A function that still holds kiln ops (a program, a function with
    // dispatch regions) keeps its types: they meet kiln ops' types.
    SmallVector<func::FuncOp> funcs;
    getOperation()->walk([&](func::FuncOp func) {
      WalkResult kiln = func.walk([](Operation *op) {
        return isa<KilnDialect>(op->getDialect()) ? WalkResult::interrupt()
                                                   : WalkResult::advance();
      });
      if (!kiln.wasInterrupted())
        funcs.push_back(func);
    });
    for (func::FuncOp func : funcs)
      eraseSignedness(func);
  }
};
} // namespace
