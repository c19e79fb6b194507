//===- DataMovement.cpp - lowering of the data movement ops ---------------===//
//
// Data movement becomes tensor ops where they say it exactly and copying
// linalg.generic ops otherwise:
//   - transpose: `linalg.transpose`;
//   - concat: `tensor.insert_slice` of every operand into a `tensor.empty`;
//   - slice: `tensor.extract_slice` with the (positive) strides; dimensions
//     with negative steps take the same elements in increasing order and a
//     linalg.generic reverses them (its input map reads `n - 1 - i`);
//   - pad: negative pads crop with `tensor.extract_slice` first; constant
//     mode is a `tensor.pad`, reflect and edge modes a linalg.generic that
//     computes the source index of every output element and reads it with
//     `tensor.extract`;
//   - gather: a linalg.generic over the result that reads the index,
//     normalizes a negative one, clamps it into range (ONNX makes an out of
//     range index an error; the clamp only keeps the read in bounds) and
//     reads the data element with `tensor.extract`;
//   - expand: a broadcasting linalg.generic that copies.
// (kiln.reshape is lowered in KilnToLinalg.cpp.)
//
//===----------------------------------------------------------------------===//

#include "lowering/KilnToLinalg.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::lowering;

namespace {

SmallVector<OpFoldResult> indexAttrs(OpBuilder &b, ArrayRef<int64_t> values) {
  return llvm::map_to_vector(
      values, [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); });
}

Value copyBody(OpBuilder &, Location, ValueRange args) { return args[0]; }

/// Lowers `kiln.transpose`.
struct TransposeLowering : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(requireStaticShapes(op)))
      return failure();
    Value init = emptyTensor(rewriter, op.getLoc(), op.getType());
    rewriter.replaceOp(op, linalg::TransposeOp::create(rewriter, op.getLoc(),
                                                       op.getInput(), init,
                                                       op.getPermutation())
                               .getResult());
    return success();
  }
};

/// Lowers `kiln.concat`.
struct ConcatLowering : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    if (failed(requireStaticShapes(op)))
      return failure();
    int64_t axis = op.getAxis(), rank = type.getRank();
    Value result = emptyTensor(rewriter, loc, type);
    SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
    for (Value input : op.getInputs()) {
      auto inType = cast<RankedTensorType>(input.getType());
      if (inType.getShape()[axis] == 0)
        continue;
      result = tensor::InsertSliceOp::create(
          rewriter, loc, input, result, indexAttrs(rewriter, offsets),
          indexAttrs(rewriter, inType.getShape()),
          indexAttrs(rewriter, strides));
      offsets[axis] += inType.getShape()[axis];
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Lowers `kiln.slice`.
struct SliceLowering : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    if (failed(requireStaticShapes(op)))
      return failure();
    if (type.getNumElements() == 0) {
      rewriter.replaceOp(op, emptyTensor(rewriter, loc, type));
      return success();
    }
    ArrayRef<int64_t> starts = op.getStarts(), steps = op.getSteps(),
                      sizes = type.getShape();
    int64_t rank = type.getRank();
    // A backward dimension takes starts[d] - (n - 1) * |step| ... starts[d]
    // forward, then gets reversed.
    SmallVector<int64_t> offsets, strides, reversed;
    for (int64_t d = 0; d < rank; ++d) {
      if (steps[d] > 0) {
        offsets.push_back(starts[d]);
        strides.push_back(steps[d]);
        continue;
      }
      offsets.push_back(starts[d] + (sizes[d] - 1) * steps[d]);
      strides.push_back(-steps[d]);
      if (sizes[d] > 1)
        reversed.push_back(d);
    }
    Value result = tensor::ExtractSliceOp::create(
        rewriter, loc, type, op.getInput(), indexAttrs(rewriter, offsets),
        indexAttrs(rewriter, sizes), indexAttrs(rewriter, strides));
    if (!reversed.empty()) {
      MLIRContext *ctx = getContext();
      SmallVector<AffineExpr> exprs;
      for (int64_t d = 0; d < rank; ++d) {
        AffineExpr i = getAffineDimExpr(d, ctx);
        exprs.push_back(llvm::is_contained(reversed, d) ? sizes[d] - 1 - i : i);
      }
      SmallVector<AffineMap> maps = {
          AffineMap::get(rank, 0, exprs, ctx),
          AffineMap::getMultiDimIdentityMap(rank, ctx)};
      result = linalg::GenericOp::create(
                   rewriter, loc, type, ValueRange{result},
                   ValueRange{emptyTensor(rewriter, loc, type)}, maps,
                   iteratorTypes(rank),
                   [](OpBuilder &b, Location l, ValueRange args) {
                     linalg::YieldOp::create(b, l, args[0]);
                   })
                   .getResult(0);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// The scalar of element type `elem` that constant padding fills with.
Value padScalar(OpBuilder &b, Location loc, Type elem, double value) {
  if (elem.isInteger(1))
    return scalarConstant(b, loc, elem, value != 0 ? 1 : 0);
  if (auto it = dyn_cast<IntegerType>(elem)) {
    // Saturate into the type's range; truncate fractions towards zero.
    APSInt v(it.getWidth(), /*isUnsigned=*/false);
    bool exact;
    APFloat(value).convertToInteger(v, APFloat::rmTowardZero, &exact);
    return arith::ConstantOp::create(b, loc, IntegerAttr::get(it, v));
  }
  return scalarConstant(b, loc, elem, value);
}

/// Lowers `kiln.pad`.
struct PadLowering : OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PadOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    Type elem = type.getElementType();
    if (failed(requireStaticShapes(op)))
      return failure();
    int64_t rank = type.getRank();
    ArrayRef<int64_t> pads = op.getPads();

    // Negative pads crop first; what remains pads by non-negative amounts.
    SmallVector<int64_t> offsets(rank), sizes(rank), low(rank), high(rank);
    bool crops = false;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t lo = pads[d], hi = pads[d + rank], dim = inType.getShape()[d];
      offsets[d] = std::max<int64_t>(0, -lo);
      sizes[d] = std::max<int64_t>(0, dim + std::min<int64_t>(0, lo) +
                                          std::min<int64_t>(0, hi));
      low[d] = std::max<int64_t>(0, lo);
      high[d] = std::max<int64_t>(0, hi);
      crops |= lo < 0 || hi < 0;
    }
    StringRef mode = op.getMode();
    if (type.getNumElements() == 0) {
      rewriter.replaceOp(op, emptyTensor(rewriter, loc, type));
      return success();
    }
    bool constant = mode == "constant" ||
                    llvm::any_of(sizes, [](int64_t s) { return s == 0; });
    if (!constant && mode != "reflect" && mode != "edge")
      return rewriter.notifyMatchFailure(op, "unknown pad mode");
    // The pad value is an arith.constant: floats and signless integers only.
    if (constant && failed(requireArithmeticType(op, elem)))
      return failure();
    Value input = op.getInput();
    if (crops) {
      SmallVector<int64_t> ones(rank, 1);
      input = tensor::ExtractSliceOp::create(
          rewriter, loc, RankedTensorType::get(sizes, elem), input,
          indexAttrs(rewriter, offsets), indexAttrs(rewriter, sizes),
          indexAttrs(rewriter, ones));
    }

    if (constant) {
      // (Reflect and edge padding of an empty tensor have no source either;
      // ONNX rejects them, this fills with the constant.)
      Value result = padTensor(
          rewriter, loc, input, low, high,
          padScalar(rewriter, loc, elem, op.getValue().convertToDouble()));
      rewriter.replaceOp(op, result);
      return success();
    }

    // Reflect / edge: the source index of every output index, per dimension.
    bool reflect = mode == "reflect";
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{},
        ValueRange{emptyTensor(rewriter, loc, type)},
        ArrayRef<AffineMap>{
            AffineMap::getMultiDimIdentityMap(rank, getContext())},
        iteratorTypes(rank), [&](OpBuilder &b, Location l, ValueRange) {
          SmallVector<Value> indices;
          for (int64_t d = 0; d < rank; ++d) {
            Value i = linalg::IndexOp::create(b, l, d);
            if (low[d] == 0 && high[d] == 0) {
              indices.push_back(i);
              continue;
            }
            auto c = [&](int64_t v) {
              return arith::ConstantIndexOp::create(b, l, v).getResult();
            };
            Value zero = c(0), last = c(sizes[d] - 1);
            Value j = arith::SubIOp::create(b, l, i, c(low[d]));
            if (reflect) {
              // j < 0 -> -j; j > last -> 2 * last - j.
              Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt,
                                                j, zero);
              j = arith::SelectOp::create(
                  b, l, neg, arith::SubIOp::create(b, l, zero, j), j);
              Value past = arith::CmpIOp::create(
                  b, l, arith::CmpIPredicate::sgt, j, last);
              j = arith::SelectOp::create(
                  b, l, past,
                  arith::SubIOp::create(b, l, c(2 * (sizes[d] - 1)), j), j);
            }
            // Edge mode clamps; reflect clamps too, so pads wider than the
            // input (invalid in ONNX) still read in bounds.
            j = arith::MaxSIOp::create(b, l, j, zero);
            j = arith::MinSIOp::create(b, l, j, last);
            indices.push_back(j);
          }
          linalg::YieldOp::create(
              b, l,
              tensor::ExtractOp::create(b, l, input, indices).getResult());
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// Lowers `kiln.gather`.
struct GatherLowering : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    auto dataType = cast<RankedTensorType>(op.getData().getType());
    auto indicesType = cast<RankedTensorType>(op.getIndices().getType());
    if (failed(requireStaticShapes(op)))
      return failure();
    int64_t axis = op.getAxis(), rank = type.getRank();
    int64_t indicesRank = indicesType.getRank();
    int64_t axisSize = dataType.getShape()[axis];
    if (type.getNumElements() == 0 || axisSize == 0) {
      // Nothing to read (an empty axis only has out of range indices).
      rewriter.replaceOp(op, emptyTensor(rewriter, loc, type));
      return success();
    }

    MLIRContext *ctx = getContext();
    SmallVector<AffineExpr> indexExprs;
    for (int64_t i = 0; i < indicesRank; ++i)
      indexExprs.push_back(getAffineDimExpr(axis + i, ctx));
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank, 0, indexExprs, ctx),
        AffineMap::getMultiDimIdentityMap(rank, ctx)};
    Value data = op.getData();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{op.getIndices()},
        ValueRange{emptyTensor(rewriter, loc, type)}, maps, iteratorTypes(rank),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value index =
              arith::IndexCastOp::create(b, l, b.getIndexType(), args[0]);
          Value zero = arith::ConstantIndexOp::create(b, l, 0);
          Value size = arith::ConstantIndexOp::create(b, l, axisSize);
          Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt,
                                            index, zero);
          index = arith::SelectOp::create(
              b, l, neg, arith::AddIOp::create(b, l, index, size), index);
          index = arith::MaxSIOp::create(b, l, index, zero);
          index = arith::MinSIOp::create(
              b, l, index, arith::ConstantIndexOp::create(b, l, axisSize - 1));
          SmallVector<Value> indices;
          for (int64_t d = 0; d < axis; ++d)
            indices.push_back(linalg::IndexOp::create(b, l, d));
          indices.push_back(index);
          for (int64_t d = axis + indicesRank; d < rank; ++d)
            indices.push_back(linalg::IndexOp::create(b, l, d));
          linalg::YieldOp::create(
              b, l, tensor::ExtractOp::create(b, l, data, indices).getResult());
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// Lowers `kiln.expand`.
struct ExpandLowering : OpRewritePattern<ExpandOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ExpandOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(requireStaticShapes(op)))
      return failure();
    rewriter.replaceOp(op, elementwise(rewriter, op.getLoc(), op.getType(),
                                       {op.getInput()}, copyBody));
    return success();
  }
};

} // namespace

void kiln::populateDataMovementLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<TransposeLowering, ConcatLowering, SliceLowering, PadLowering,
               GatherLowering, ExpandLowering>(patterns.getContext());
}
