//===- DataMovement.cpp - lowering of the data movement ops ---------------===//
//
// Data movement becomes tensor ops where they say it exactly and copying
// linalg.generic ops otherwise:
//   - transpose: `linalg.transpose`;
//   - concat: `tensor.insert_slice` of every operand into a `tensor.empty`;
//   - slice: `tensor.extract_slice` when every step is positive; with a
//     negative step, a linalg.generic over the result that reads element
//     `start + i * step` with `tensor.extract` (an input map reading
//     `n - 1 - i` would say it too, but tiling assumes maps that grow with
//     the loop and computes wrong slices for it);
//   - pad: negative pads crop with `tensor.extract_slice` first; constant
//     mode is a `tensor.pad`, reflect and edge modes a linalg.generic that
//     computes the source index of every output element and reads it with
//     `tensor.extract`;
//   - gather: a linalg.generic over the result that reads the index,
//     normalizes a negative one, clamps it into range (ONNX makes an out of
//     range index an error; the clamp only keeps the read in bounds) and
//     reads the data element with `tensor.extract`; gather_elements the
//     same with the index read at the result's position;
//   - scatter_elements: a gather too (each result element loops over the
//     updates along the axis that may land on it), so that no element is
//     written by two threads;
//   - one_hot: a linalg.generic comparing the index with the position;
//   - expand: a broadcasting linalg.generic that copies.
// (kiln.reshape is lowered in KilnToLinalg.cpp.)
//
//===----------------------------------------------------------------------===//

#include "lowering/KilnToLinalg.h"

#include <cmath>

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

/// The source, starts and steps of a positive-step slice (kiln.slice, or
/// the tensor.extract_slice it lowers to); nullopt for anything else.
struct StridedSlice {
  Value source;
  SmallVector<int64_t> starts, steps;
};
std::optional<StridedSlice> stridedSlice(Value value) {
  if (auto slice = value.getDefiningOp<SliceOp>()) {
    if (llvm::any_of(slice.getSteps(), [](int64_t s) { return s <= 0; }))
      return std::nullopt;
    return StridedSlice{slice.getInput(), llvm::to_vector(slice.getStarts()),
                        llvm::to_vector(slice.getSteps())};
  }
  auto extract = value.getDefiningOp<tensor::ExtractSliceOp>();
  if (!extract ||
      ShapedType::isDynamicShape(extract.getStaticOffsets()) ||
      ShapedType::isDynamicShape(extract.getStaticStrides()) ||
      extract.getSourceType().getRank() != extract.getResultType().getRank())
    return std::nullopt;
  return StridedSlice{extract.getSource(), llvm::to_vector(extract.getStaticOffsets()),
                      llvm::to_vector(extract.getStaticStrides())};
}

/// A concat along dimension 0 of the a x a windows of one source that
/// step by m along its last two dimensions (kiln-winograd-convs' tile
/// gather: window (i, j) starts at [0, ..., i, j] with steps [1, ..., m,
/// m]), as one generic `out[i, j, ..., y, x] = in[..., m*y + i, m*x + j]`
/// collapsed to the concat's shape: it tiles into workgroups, where a chain
/// of inserted slices is one serial copy.
LogicalResult lowerWindowGather(ConcatOp op, PatternRewriter &rewriter) {
  auto type = cast<RankedTensorType>(op.getType());
  int64_t rank = type.getRank(), count = op.getInputs().size();
  int64_t a = static_cast<int64_t>(std::lround(std::sqrt(double(count))));
  if (op.getAxis() != 0 || rank < 3 || a < 2 || a * a != count)
    return failure();
  auto pieceType = cast<RankedTensorType>(op.getInputs()[0].getType());
  std::optional<StridedSlice> first = stridedSlice(op.getInputs()[0]);
  if (!first || first->steps[rank - 1] != first->steps[rank - 2] ||
      cast<RankedTensorType>(first->source.getType()).getDimSize(0) != pieceType.getDimSize(0))
    return failure();
  int64_t m = first->steps[rank - 1];
  for (auto [k, input] : llvm::enumerate(op.getInputs())) {
    std::optional<StridedSlice> slice = stridedSlice(input);
    if (!slice || slice->source != first->source || input.getType() != pieceType)
      return failure();
    for (int64_t d = 0; d < rank; ++d) {
      int64_t start = d == rank - 2 ? int64_t(k) / a : d == rank - 1 ? int64_t(k) % a : 0;
      int64_t step = d >= rank - 2 ? m : 1;
      if (slice->starts[d] != start || slice->steps[d] != step)
        return failure();
    }
  }
  MLIRContext *ctx = rewriter.getContext();
  Location loc = op.getLoc();
  SmallVector<int64_t> shape = {a, a};
  llvm::append_range(shape, pieceType.getShape());
  auto outType = RankedTensorType::get(shape, type.getElementType());
  // Loops (i, j, d0, ..., d[rank-1]).
  SmallVector<AffineExpr> reads;
  for (int64_t d = 0; d < rank; ++d) {
    AffineExpr dim = getAffineDimExpr(2 + d, ctx);
    if (d == rank - 2)
      dim = dim * m + getAffineDimExpr(0, ctx);
    else if (d == rank - 1)
      dim = dim * m + getAffineDimExpr(1, ctx);
    reads.push_back(dim);
  }
  unsigned loops = unsigned(rank + 2);
  SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, reads, ctx),
                                 AffineMap::getMultiDimIdentityMap(loops, ctx)};
  auto gather = linalg::GenericOp::create(
      rewriter, loc, outType, ValueRange{first->source},
      ValueRange{emptyTensor(rewriter, loc, outType)}, maps, iteratorTypes(loops),
      [](OpBuilder &b, Location l, ValueRange args) { linalg::YieldOp::create(b, l, args[0]); });
  SmallVector<ReassociationIndices> groups = {{0, 1, 2}};
  for (int64_t d = 3; d < int64_t(loops); ++d)
    groups.push_back({d});
  rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(op, type, gather.getResult(0), groups);
  return success();
}

/// Lowers `kiln.concat`.
struct ConcatLowering : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    if (failed(requireStaticShapes(op)))
      return failure();
    if (succeeded(lowerWindowGather(op, rewriter)))
      return success();
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
    if (llvm::all_of(steps, [](int64_t step) { return step > 0; })) {
      rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
          op, type, op.getInput(), indexAttrs(rewriter, starts),
          indexAttrs(rewriter, sizes), indexAttrs(rewriter, steps));
      return success();
    }
    Value input = op.getInput();
    Value result =
        linalg::GenericOp::create(
            rewriter, loc, type, ValueRange{},
            ValueRange{emptyTensor(rewriter, loc, type)},
            ArrayRef<AffineMap>{
                AffineMap::getMultiDimIdentityMap(rank, getContext())},
            iteratorTypes(rank),
            [&](OpBuilder &b, Location l, ValueRange) {
              SmallVector<Value> indices;
              for (int64_t d = 0; d < rank; ++d) {
                Value i = linalg::IndexOp::create(b, l, d);
                Value scaled = arith::MulIOp::create(
                    b, l, i, arith::ConstantIndexOp::create(b, l, steps[d]));
                indices.push_back(arith::AddIOp::create(
                    b, l, scaled,
                    arith::ConstantIndexOp::create(b, l, starts[d])));
              }
              linalg::YieldOp::create(
                  b, l,
                  tensor::ExtractOp::create(b, l, input, indices).getResult());
            })
            .getResult(0);
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
    // The pad value is an arith.constant: floats and signless integers; an
    // unsigned tensor (uint8 activations padded with their zero point) is
    // padded as signless bits.
    bool isUnsigned = elem.isUnsignedInteger();
    double padValue = op.getValue().convertToDouble();
    Value input = op.getInput();
    if (constant && isUnsigned) {
      unsigned width = elem.getIntOrFloatBitWidth();
      APInt bits(width, static_cast<uint64_t>(padValue));
      padValue = static_cast<double>(bits.getSExtValue());
      elem = signlessType(elem);
      input = reinterpret(rewriter, loc, input, signlessType(inType));
      inType = cast<RankedTensorType>(input.getType());
    }
    if (constant && failed(requireArithmeticType(op, elem)))
      return failure();
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
      Value result = padTensor(rewriter, loc, input, low, high,
                               padScalar(rewriter, loc, elem, padValue));
      rewriter.replaceOp(op, reinterpret(rewriter, loc, result, type));
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

/// `raw`, an `i32` or `i64` index into an axis of `size` elements, as an
/// `index`: a negative one counts from the end. With `clamp` the result is
/// clamped into `[0, size)`, so that a read with it stays in bounds (ONNX
/// makes an out of range index an error); without, an out of range index
/// stays out of range (it matches no position).
Value axisIndex(OpBuilder &b, Location l, Value raw, int64_t size,
                bool clamp) {
  Value index = arith::IndexCastOp::create(b, l, b.getIndexType(), raw);
  Value zero = arith::ConstantIndexOp::create(b, l, 0);
  Value sizeValue = arith::ConstantIndexOp::create(b, l, size);
  Value neg =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, index, zero);
  index = arith::SelectOp::create(
      b, l, neg, arith::AddIOp::create(b, l, index, sizeValue), index);
  if (!clamp)
    return index;
  index = arith::MaxSIOp::create(b, l, index, zero);
  return arith::MinSIOp::create(
      b, l, index, arith::ConstantIndexOp::create(b, l, size - 1));
}

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
          Value index = axisIndex(b, l, args[0], axisSize, /*clamp=*/true);
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

/// Lowers `kiln.gather_elements`: a linalg.generic over the result that
/// reads the index at the same position, normalizes and clamps it like
/// `kiln.gather`, and reads the data element with `tensor.extract`.
struct GatherElementsLowering : OpRewritePattern<GatherElementsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherElementsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    auto dataType = cast<RankedTensorType>(op.getData().getType());
    if (failed(requireStaticShapes(op)))
      return failure();
    int64_t axis = op.getAxis(), rank = type.getRank();
    int64_t axisSize = dataType.getShape()[axis];
    if (type.getNumElements() == 0 || axisSize == 0) {
      rewriter.replaceOp(op, emptyTensor(rewriter, loc, type));
      return success();
    }
    AffineMap id = AffineMap::getMultiDimIdentityMap(rank, getContext());
    Value data = op.getData();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{op.getIndices()},
        ValueRange{emptyTensor(rewriter, loc, type)},
        ArrayRef<AffineMap>{id, id}, iteratorTypes(rank),
        [&](OpBuilder &b, Location l, ValueRange args) {
          SmallVector<Value> indices;
          for (int64_t d = 0; d < rank; ++d)
            indices.push_back(
                d == axis ? axisIndex(b, l, args[0], axisSize, /*clamp=*/true)
                          : linalg::IndexOp::create(b, l, d).getResult());
          linalg::YieldOp::create(
              b, l, tensor::ExtractOp::create(b, l, data, indices).getResult());
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// The scalar `reduction` of a `kiln.scatter_elements` applied to the
/// current element `acc` and the update `update`.
Value scatterCombine(OpBuilder &b, Location l, StringRef reduction, Value acc,
                     Value update) {
  bool isFloat = isa<FloatType>(acc.getType());
  if (reduction == "add")
    return isFloat ? arith::AddFOp::create(b, l, acc, update).getResult()
                   : arith::AddIOp::create(b, l, acc, update).getResult();
  if (reduction == "mul")
    return isFloat ? arith::MulFOp::create(b, l, acc, update).getResult()
                   : arith::MulIOp::create(b, l, acc, update).getResult();
  if (reduction == "max")
    return maxScalar(b, l, acc, update);
  if (reduction == "min")
    return minScalar(b, l, acc, update);
  return update; // "none": the update replaces the element
}

/// Lowers `kiln.scatter_elements` as a gather: a linalg.generic over
/// (result position p, update index k along the axis), k a reduction loop,
/// whose accumulator starts from data[p] and whose body reads the index and
/// the update at p with p[axis] = k (`tensor.extract`) and combines the
/// update into the element when the normalized index is p[axis] (and p lies
/// inside the updates' shape outside the axis). The k loop runs in order,
/// so the last of duplicate indices wins for `none`. No write depends on
/// another thread's: every result element is computed where it is stored,
/// which the cpu workgroups and the gfx per-thread tiles both need.
struct ScatterElementsLowering : OpRewritePattern<ScatterElementsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScatterElementsOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    auto updatesType = cast<RankedTensorType>(op.getUpdates().getType());
    if (failed(requireStaticShapes(op)))
      return failure();
    StringRef reduction = op.getReduction();
    // (The zero the accumulator starts from is an arith.constant.)
    if (failed(requireArithmeticType(op, type.getElementType())))
      return failure();
    if (type.getNumElements() == 0 || updatesType.getNumElements() == 0) {
      rewriter.replaceOp(op, elementwise(rewriter, loc, type, {op.getData()},
                                         copyBody));
      return success();
    }
    int64_t axis = op.getAxis(), rank = type.getRank();
    ArrayRef<int64_t> shape = type.getShape(), updates = updatesType.getShape();
    MLIRContext *ctx = getContext();
    // Inputs: the data at p, and the updates at (0, ..., k, ..., 0), whose
    // map gives the k loop its range (linalg derives loop bounds from the
    // operands' maps; that element is not used). The accumulator starts
    // from data[p] at k = 0; its initial value (a zero fill) is never used.
    // (A copy of the data as the initial value folds away into the data
    // itself, which then became the destination of the gfx threads' stores.)
    SmallVector<AffineExpr> outExprs, kExprs;
    for (int64_t d = 0; d < rank; ++d) {
      outExprs.push_back(getAffineDimExpr(d, ctx));
      kExprs.push_back(d == axis ? getAffineDimExpr(rank, ctx)
                                 : getAffineConstantExpr(0, ctx));
    }
    AffineMap outMap = AffineMap::get(rank + 1, 0, outExprs, ctx);
    Value init = filledTensor(
        rewriter, loc, type,
        scalarConstant(rewriter, loc, type.getElementType(), 0));
    Value indicesTensor = op.getIndices(), updatesTensor = op.getUpdates();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{op.getData(), updatesTensor},
        ValueRange{init},
        ArrayRef<AffineMap>{outMap, AffineMap::get(rank + 1, 0, kExprs, ctx),
                            outMap},
        iteratorTypes(rank + 1, {rank}),
        [&](OpBuilder &b, Location l, ValueRange args) {
          auto c = [&](int64_t v) {
            return arith::ConstantIndexOp::create(b, l, v).getResult();
          };
          // The position in indices/updates: p with p[axis] = k, clamped
          // into their shape (positions outside it match nothing).
          SmallVector<Value> at;
          Value inside;
          for (int64_t d = 0; d < rank; ++d) {
            if (d == axis) {
              at.push_back(linalg::IndexOp::create(b, l, rank));
              continue;
            }
            Value i = linalg::IndexOp::create(b, l, d);
            if (updates[d] >= shape[d]) {
              at.push_back(i);
              continue;
            }
            Value in =
                arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i,
                                      c(updates[d]));
            inside = inside ? arith::AndIOp::create(b, l, inside, in).getResult()
                            : in;
            at.push_back(arith::MinSIOp::create(b, l, i, c(updates[d] - 1)));
          }
          Value raw = tensor::ExtractOp::create(b, l, indicesTensor, at);
          Value target = axisIndex(b, l, raw, shape[axis], /*clamp=*/false);
          Value match = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::eq, target,
              linalg::IndexOp::create(b, l, axis));
          if (inside)
            match = arith::AndIOp::create(b, l, match, inside);
          Value update = tensor::ExtractOp::create(b, l, updatesTensor, at);
          Value first = arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq,
                                              at[axis], c(0));
          Value acc = arith::SelectOp::create(b, l, first, args[0], args[2]);
          Value combined = scatterCombine(b, l, reduction, acc, update);
          linalg::YieldOp::create(
              b, l,
              arith::SelectOp::create(b, l, match, combined, acc).getResult());
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// Lowers `kiln.one_hot`: a linalg.generic over the result that reads the
/// index of its position without the new axis, normalizes a negative one
/// and picks the on value where it equals the position along the axis.
struct OneHotLowering : OpRewritePattern<OneHotOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(OneHotOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(op.getType());
    if (failed(requireStaticShapes(op)))
      return failure();
    if (type.getNumElements() == 0) {
      rewriter.replaceOp(op, emptyTensor(rewriter, loc, type));
      return success();
    }
    int64_t axis = op.getAxis(), depth = op.getDepth(), rank = type.getRank();
    MLIRContext *ctx = getContext();
    SmallVector<AffineExpr> indexExprs;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        indexExprs.push_back(getAffineDimExpr(d, ctx));
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank, 0, indexExprs, ctx),
        AffineMap::getMultiDimIdentityMap(rank, ctx)};
    Value values = op.getValues();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{op.getIndices()},
        ValueRange{emptyTensor(rewriter, loc, type)}, maps, iteratorTypes(rank),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value index = axisIndex(b, l, args[0], depth, /*clamp=*/false);
          Value hot = arith::CmpIOp::create(
              b, l, arith::CmpIPredicate::eq, index,
              linalg::IndexOp::create(b, l, axis));
          Value zero = arith::ConstantIndexOp::create(b, l, 0);
          Value one = arith::ConstantIndexOp::create(b, l, 1);
          Value off = tensor::ExtractOp::create(b, l, values, ValueRange{zero});
          Value on = tensor::ExtractOp::create(b, l, values, ValueRange{one});
          linalg::YieldOp::create(
              b, l, arith::SelectOp::create(b, l, hot, on, off).getResult());
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
               GatherLowering, GatherElementsLowering, ScatterElementsLowering,
               OneHotLowering, ExpandLowering>(patterns.getContext());
}
