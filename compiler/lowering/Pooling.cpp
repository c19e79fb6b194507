//===- Pooling.cpp - lowering of kiln.max_pool and kiln.avg_pool ----------===//
//
// Pooling pads the input (with -inf for max, 0 for average) so that every
// window lies inside the padded tensor, including the partial last window
// that `ceil_mode` adds past the end padding, then reduces each window with
// `linalg.pooling_nc{w,hw}_{max,sum}` (1-D and 2-D) or an equivalent
// linalg.generic (other ranks). Average pooling divides the window sums by
// the number of elements each window counts: the kernel taps inside the
// input (`count_include_pad = false`) or inside input and pads, but never
// the ceil-mode overhang (`count_include_pad = true`), as ONNX specifies.
// That count is a product of per-dimension counts known at compile time: a
// scalar when it is the same for every window, otherwise one small constant
// vector per dimension where it varies.
//
//===----------------------------------------------------------------------===//

#include "lowering/KilnToLinalg.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::lowering;

namespace {

/// The window geometry of one pooling op, per spatial dimension.
struct Window {
  SmallVector<int64_t> kernel, strides, dilations, padBegin, padEnd;
};

/// Max or sum over every window of the padded `input` into `init`.
Value poolWindows(OpBuilder &b, Location loc, Value input, Value init,
                  const Window &w, bool isMax) {
  auto type = cast<RankedTensorType>(init.getType());
  Type elem = type.getElementType();
  int64_t spatial = w.kernel.size();
  DenseIntElementsAttr strides = i64Vector(b, w.strides);
  DenseIntElementsAttr dilations = i64Vector(b, w.dilations);
  if (spatial == 1 || spatial == 2) {
    // The named ops take the window as an operand that only carries a shape.
    Value window = tensor::EmptyOp::create(b, loc, w.kernel, elem);
    SmallVector<Value> ins = {input, window};
    if (spatial == 1 && isMax)
      return linalg::PoolingNcwMaxOp::create(b, loc, TypeRange{type}, ins,
                                             ValueRange{init}, strides,
                                             dilations)
          .getResult(0);
    if (spatial == 1)
      return linalg::PoolingNcwSumOp::create(b, loc, TypeRange{type}, ins,
                                             ValueRange{init}, strides,
                                             dilations)
          .getResult(0);
    if (isMax)
      return linalg::PoolingNchwMaxOp::create(b, loc, TypeRange{type}, ins,
                                              ValueRange{init}, strides,
                                              dilations)
          .getResult(0);
    return linalg::PoolingNchwSumOp::create(b, loc, TypeRange{type}, ins,
                                            ValueRange{init}, strides,
                                            dilations)
        .getResult(0);
  }

  // Loops: n, c, o_1..o_s, k_1..k_s.
  MLIRContext *ctx = b.getContext();
  unsigned loops = 2 + 2 * spatial;
  SmallVector<AffineExpr> inExprs = {getAffineDimExpr(0, ctx),
                                     getAffineDimExpr(1, ctx)};
  SmallVector<AffineExpr> outExprs = inExprs, windowExprs;
  SmallVector<int64_t> reductions;
  for (int64_t i = 0; i < spatial; ++i) {
    AffineExpr o = getAffineDimExpr(2 + i, ctx);
    AffineExpr k = getAffineDimExpr(2 + spatial + i, ctx);
    inExprs.push_back(o * w.strides[i] + k * w.dilations[i]);
    outExprs.push_back(o);
    windowExprs.push_back(k);
    reductions.push_back(2 + spatial + i);
  }
  SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, inExprs, ctx),
                                 AffineMap::get(loops, 0, windowExprs, ctx),
                                 AffineMap::get(loops, 0, outExprs, ctx)};
  // As in the named ops, the window operand only gives the kernel loops
  // their extent.
  Value window = tensor::EmptyOp::create(b, loc, w.kernel, elem);
  return linalg::GenericOp::create(
             b, loc, type, ValueRange{input, window}, ValueRange{init}, maps,
             iteratorTypes(loops, reductions),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value r = isMax ? maxScalar(nb, l, args[2], args[0])
                               : arith::AddFOp::create(nb, l, args[2], args[0])
                                     .getResult();
               linalg::YieldOp::create(nb, l, r);
             })
      .getResult(0);
}

/// Divides the window sums `sums` by the number of elements each window
/// averages (see the file comment).
Value divideByCounts(OpBuilder &b, Location loc, Value sums,
                     ArrayRef<int64_t> inShape, const Window &w,
                     bool countIncludePad) {
  auto type = cast<RankedTensorType>(sums.getType());
  Type elem = type.getElementType();
  MLIRContext *ctx = b.getContext();
  int64_t spatial = w.kernel.size(), rank = type.getRank();

  // Per dimension, the count of every output position; dimensions where it
  // is the same everywhere fold into one scalar.
  double uniform = 1;
  SmallVector<Value> vectors;
  SmallVector<AffineMap> maps = {AffineMap::getMultiDimIdentityMap(rank, ctx)};
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t in = inShape[2 + i], out = type.getShape()[2 + i];
    SmallVector<double> counts;
    for (int64_t o = 0; o < out; ++o) {
      int64_t count = 0;
      for (int64_t k = 0; k < w.kernel[i]; ++k) {
        int64_t t = o * w.strides[i] - w.padBegin[i] + k * w.dilations[i];
        if (countIncludePad ? t < in + w.padEnd[i] : (t >= 0 && t < in))
          ++count;
      }
      // A window with no input element (dilation can skip over all of it)
      // sums to 0 and stays 0, as in ONNX Runtime.
      counts.push_back(std::max<int64_t>(count, 1));
    }
    if (counts.empty() || llvm::all_equal(counts)) {
      uniform *= counts.empty() ? 1 : counts.front();
      continue;
    }
    auto vectorType = RankedTensorType::get({out}, elem);
    SmallVector<APFloat> values;
    for (double c : counts) {
      APFloat v(c);
      bool lost;
      v.convert(cast<FloatType>(elem).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
      values.push_back(v);
    }
    vectors.push_back(arith::ConstantOp::create(
        b, loc, DenseFPElementsAttr::get(vectorType, values)));
    maps.push_back(
        AffineMap::get(rank, 0, {getAffineDimExpr(2 + i, ctx)}, ctx));
  }
  maps.push_back(AffineMap::getMultiDimIdentityMap(rank, ctx));

  SmallVector<Value> inputs = {sums};
  llvm::append_range(inputs, vectors);
  return linalg::GenericOp::create(
             b, loc, type, inputs, ValueRange{emptyTensor(b, loc, type)}, maps,
             iteratorTypes(rank),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               Value count;
               if (vectors.empty() || uniform != 1)
                 count = scalarConstant(nb, l, elem, uniform);
               for (Value c : args.slice(1, vectors.size()))
                 count =
                     count ? arith::MulFOp::create(nb, l, count, c).getResult()
                           : c;
               Value mean = arith::DivFOp::create(nb, l, args[0], count);
               linalg::YieldOp::create(nb, l, mean);
             })
      .getResult(0);
}

/// Lowers `kiln.max_pool` (`isMax`) and `kiln.avg_pool`.
template <typename OpTy, bool isMax>
struct PoolLowering : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto inType = cast<RankedTensorType>(op.getInput().getType());
    auto type = cast<RankedTensorType>(op.getType());
    if (failed(requireStaticShapes(op)))
      return failure();
    Type elem = type.getElementType();
    int64_t rank = inType.getRank(), spatial = rank - 2;
    ArrayRef<int64_t> pads = op.getPads();

    Window w;
    w.kernel.assign(op.getKernel().begin(), op.getKernel().end());
    w.strides.assign(op.getStrides().begin(), op.getStrides().end());
    w.dilations.assign(op.getDilations().begin(), op.getDilations().end());
    w.padBegin.assign(pads.begin(), pads.begin() + spatial);
    w.padEnd.assign(pads.begin() + spatial, pads.end());

    // Pad so the last window fits: with ceil_mode it may reach past the end
    // padding.
    SmallVector<int64_t> low(rank, 0), high(rank, 0);
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t in = inType.getShape()[2 + i], out = type.getShape()[2 + i];
      int64_t reach =
          (out - 1) * w.strides[i] + w.dilations[i] * (w.kernel[i] - 1) + 1;
      low[2 + i] = w.padBegin[i];
      high[2 + i] = std::max(w.padEnd[i], reach - in - w.padBegin[i]);
    }
    Value identity = isMax ? lowestValue(rewriter, loc, elem)
                           : scalarConstant(rewriter, loc, elem, 0);
    Value input = padTensor(rewriter, loc, op.getInput(), low, high, identity);
    Value init = filledTensor(rewriter, loc, type, identity);
    Value result = poolWindows(rewriter, loc, input, init, w, isMax);
    if constexpr (!isMax)
      result = divideByCounts(rewriter, loc, result, inType.getShape(), w,
                              op.getCountIncludePad());
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void kiln::populatePoolingLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<PoolLowering<MaxPoolOp, true>, PoolLowering<AvgPoolOp, false>>(
      patterns.getContext());
}
