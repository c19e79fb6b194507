//===- Conv.cpp - lowering of kiln.conv -----------------------------------===//
//
// A convolution becomes a zero `tensor.pad` of the input (when any pad is
// nonzero) and one linalg convolution that accumulates into an init tensor
// holding the broadcast bias (or zero). The layouts the code generators
// recognize get named ops: `conv_{1,2,3}d_nc..._fc...` for one group,
// `depthwise_conv_{1,2,3}d_nc..._c...` when every channel is its own group,
// and `conv_2d_ngchw_gfchw` for other 2-D group counts. Anything else (grouped
// 1-D/3-D, more than three spatial dimensions) is one linalg.generic over the
// grouped layout `[N, G, C/G, D...] x [G, F/G, C/G, K...]`. Integer
// convolutions accumulate in the element type, as ONNX ConvInteger-free
// models expect.
//
// kiln.conv_integer is the same convolution accumulating in i32 from 8-bit
// operands: unsigned operands and operands with a zero point are widened to
// i32 with the zero point subtracted first; signed ones without a zero point
// enter the linalg op as i8, whose (signed) cast extends them.
//
//===----------------------------------------------------------------------===//

#include "lowering/KilnToLinalg.h"

#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace kiln;
using namespace kiln::lowering;

namespace {

/// The accumulator of a convolution producing `type`: the bias broadcast
/// along the channel dimensions, or zero. `type` is `[N, F, O...]`, or the
/// grouped `[N, G, F/G, O...]` when `grouped` (the bias `[F]` is then read as
/// `[G, F/G]`). A grouped convolution's accumulator is built in the grouped
/// layout itself rather than reshaped from `[N, F, O...]`: tiling the
/// convolution fuses its producers only through no reshape, and an unfused
/// accumulator stays whole outside the tile (on gfx, in every thread's
/// private memory, all of it copied out by every thread).
Value convInit(OpBuilder &b, Location loc, RankedTensorType type, Value bias,
               bool grouped = false) {
  Type elem = type.getElementType();
  if (!bias)
    return filledTensor(b, loc, type, scalarConstant(b, loc, elem, 0));
  MLIRContext *ctx = b.getContext();
  unsigned rank = type.getRank();
  SmallVector<AffineExpr> biasDims = {getAffineDimExpr(1, ctx)};
  if (grouped) {
    bias = reshapeTensor(
        b, loc, bias,
        RankedTensorType::get(type.getShape().slice(1, 2), elem));
    biasDims.push_back(getAffineDimExpr(2, ctx));
  }
  SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, biasDims, ctx),
                                 AffineMap::getMultiDimIdentityMap(rank, ctx)};
  return linalg::GenericOp::create(
             b, loc, type, ValueRange{bias},
             ValueRange{emptyTensor(b, loc, type)}, maps, iteratorTypes(rank),
             [](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc, args[0]);
             })
      .getResult(0);
}

/// `type` ([N, C, D...] or [F, C, K...]) with dimension `dim` split into
/// `groups` groups: [..., G, size/G, ...].
RankedTensorType groupedType(RankedTensorType type, unsigned dim,
                             int64_t groups) {
  SmallVector<int64_t> shape(type.getShape().take_front(dim));
  shape.push_back(groups);
  shape.push_back(type.getDimSize(dim) / groups);
  llvm::append_range(shape, type.getShape().drop_front(dim + 1));
  return RankedTensorType::get(shape, type.getElementType());
}

/// A grouped N-d convolution as one linalg.generic: `input` is the padded
/// `[N, C, D...]`, `filter` `[F, C/G, K...]`, `gInit` the grouped accumulator
/// `[N, G, F/G, O...]`; the result is `[N, G, F/G, O...]`. The channel
/// dimensions are split into groups so every indexing map is affine in the
/// loops `(n, g, f, o..., c, k...)`.
Value genericConv(OpBuilder &b, Location loc, Value input, Value filter,
                  Value gInit, int64_t groups, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> dilations) {
  MLIRContext *ctx = b.getContext();
  auto fType = cast<RankedTensorType>(filter.getType());
  auto gOutType = cast<RankedTensorType>(gInit.getType());
  Type elem = gOutType.getElementType();
  int64_t spatial = fType.getRank() - 2;
  Value gInput = reshapeTensor(
      b, loc, input,
      groupedType(cast<RankedTensorType>(input.getType()), 1, groups));
  Value gFilter = reshapeTensor(b, loc, filter, groupedType(fType, 0, groups));

  // Loops: n, g, f, o_1..o_s, c, k_1..k_s.
  unsigned loops = 3 + spatial + 1 + spatial;
  auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
  unsigned cLoop = 3 + spatial;
  SmallVector<AffineExpr> inExprs = {d(0), d(1), d(cLoop)};
  SmallVector<AffineExpr> fExprs = {d(1), d(2), d(cLoop)};
  SmallVector<AffineExpr> outExprs = {d(0), d(1), d(2)};
  for (int64_t i = 0; i < spatial; ++i) {
    AffineExpr o = d(3 + i), k = d(cLoop + 1 + i);
    inExprs.push_back(o * strides[i] + k * dilations[i]);
    fExprs.push_back(k);
    outExprs.push_back(o);
  }
  SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, inExprs, ctx),
                                 AffineMap::get(loops, 0, fExprs, ctx),
                                 AffineMap::get(loops, 0, outExprs, ctx)};
  SmallVector<int64_t> reductions;
  for (unsigned i = cLoop; i < loops; ++i)
    reductions.push_back(i);
  return linalg::GenericOp::create(
             b, loc, gOutType, ValueRange{gInput, gFilter}, ValueRange{gInit},
             maps, iteratorTypes(loops, reductions),
             [&](OpBuilder &nb, Location l, ValueRange args) {
               multiplyAccumulate(nb, l, args, elem);
             })
      .getResult(0);
}

/// Builds the named convolution op `OpTy` with strides and dilations.
template <typename OpTy>
Value namedConv(OpBuilder &b, Location loc, Value input, Value filter,
                Value init, DenseIntElementsAttr strides,
                DenseIntElementsAttr dilations) {
  return OpTy::create(b, loc, TypeRange{init.getType()},
                      ValueRange{input, filter}, ValueRange{init}, strides,
                      dilations)
      .getResult(0);
}

/// A convolution of `input` by `filter` (with `bias`, or null) into
/// `resultType`; see the file comment for the op each case becomes. The
/// operands may have narrower integer types than the result (the signless
/// `i8` operands of kiln.conv_integer), which linalg sign-extends.
Value lowerConv(OpBuilder &rewriter, Location loc, Value input, Value filter,
                Value bias, RankedTensorType resultType,
                ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                ArrayRef<int64_t> pads, int64_t groups) {
  auto inType = cast<RankedTensorType>(input.getType());
  auto fType = cast<RankedTensorType>(filter.getType());
  Type inElem = inType.getElementType(), fElem = fType.getElementType();
  int64_t rank = inType.getRank(), spatial = rank - 2;
  int64_t channels = inType.getShape()[1], filters = fType.getShape()[0];

  // Zero padding of the spatial dimensions, which start at `first`: 2 in
  // [N, C, D...], 3 in the grouped layout [N, G, C/G, D...]. A grouped 2-d
  // convolution pads after its reshape, so that the pad sits right under the
  // convolution, where tiling (cpu workgroups, gfx threads) fuses it; behind
  // a reshape it was materialized whole outside the tiles, in every tile (on
  // gfx, more private memory than a thread has).
  auto padded = [&](Value value, int64_t first) {
    if (llvm::all_of(pads, [](int64_t p) { return p == 0; }))
      return value;
    int64_t valueRank = cast<RankedTensorType>(value.getType()).getRank();
    SmallVector<int64_t> low(valueRank, 0), high(valueRank, 0);
    for (int64_t i = 0; i < spatial; ++i) {
      low[first + i] = pads[i];
      high[first + i] = pads[spatial + i];
    }
    return padTensor(rewriter, loc, value, low, high, scalarConstant(rewriter, loc, inElem, 0));
  };
  DenseIntElementsAttr stridesAttr = i64Vector(rewriter, strides);
  DenseIntElementsAttr dilationsAttr = i64Vector(rewriter, dilations);

  if (groups == 1) {
    input = padded(input, 2);
    Value init = convInit(rewriter, loc, resultType, bias);
    if (spatial == 1)
      return namedConv<linalg::Conv1DNcwFcwOp>(
          rewriter, loc, input, filter, init, stridesAttr, dilationsAttr);
    if (spatial == 2)
      return namedConv<linalg::Conv2DNchwFchwOp>(
          rewriter, loc, input, filter, init, stridesAttr, dilationsAttr);
    if (spatial == 3)
      return namedConv<linalg::Conv3DNcdhwFcdhwOp>(
          rewriter, loc, input, filter, init, stridesAttr, dilationsAttr);
  } else if (groups == channels && filters == channels && spatial <= 3) {
    // Depthwise: the filter [C, 1, K...] is [C, K...].
    input = padded(input, 2);
    Value init = convInit(rewriter, loc, resultType, bias);
    SmallVector<int64_t> shape = {channels};
    llvm::append_range(shape, fType.getShape().drop_front(2));
    filter = reshapeTensor(rewriter, loc, filter,
                           RankedTensorType::get(shape, fElem));
    if (spatial == 1)
      return namedConv<linalg::DepthwiseConv1DNcwCwOp>(
          rewriter, loc, input, filter, init, stridesAttr, dilationsAttr);
    if (spatial == 2)
      return namedConv<linalg::DepthwiseConv2DNchwChwOp>(
          rewriter, loc, input, filter, init, stridesAttr, dilationsAttr);
    return namedConv<linalg::DepthwiseConv3DNcdhwCdhwOp>(
        rewriter, loc, input, filter, init, stridesAttr, dilationsAttr);
  }
  Value gInit = convInit(rewriter, loc, groupedType(resultType, 1, groups),
                         bias, /*grouped=*/true);
  Value gResult;
  if (spatial == 2) {
    // [N, G*C', H, W] x [G*F', C', KH, KW] -> [N, G*F', OH, OW] through the
    // grouped layouts NGCHW x GFCHW -> NGFHW, padded after the reshape.
    Value gInput = padded(reshapeTensor(rewriter, loc, input, groupedType(inType, 1, groups)), 3);
    Value gFilter =
        reshapeTensor(rewriter, loc, filter, groupedType(fType, 0, groups));
    gResult = namedConv<linalg::Conv2DNgchwGfchwOp>(
        rewriter, loc, gInput, gFilter, gInit, stridesAttr, dilationsAttr);
  } else {
    gResult = genericConv(rewriter, loc, padded(input, 2), filter, gInit, groups, strides,
                          dilations);
  }
  return reshapeTensor(rewriter, loc, gResult, resultType);
}

/// Lowers `kiln.conv`.
struct ConvLowering : OpRewritePattern<ConvOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConvOp op,
                                PatternRewriter &rewriter) const override {
    auto resultType = cast<RankedTensorType>(op.getType());
    if (failed(requireStaticShapes(op)) ||
        failed(requireArithmeticType(op, resultType.getElementType())))
      return failure();
    rewriter.replaceOp(op, lowerConv(rewriter, op.getLoc(), op.getInput(),
                                     op.getFilter(), op.getBias(), resultType,
                                     op.getStrides(), op.getDilations(),
                                     op.getPads(), op.getGroups()));
    return success();
  }
};

/// A 1x1, stride-1, unpadded 2-d `kiln.conv_integer` of 8-bit activations
/// with one zero point z by int8 filters without one, as the GEMM
/// out[n, f, p] = sum_c w[f, c] * x[n, c, p] of the raw bytes (zero-extended
/// when unsigned) minus z * sum_c w[f, c]: the convolution then reads 8-bit
/// operands, which the CPU's dot-product instructions need. Null when the
/// convolution is not of that form.
static Value lowerQuantizedPointwise(PatternRewriter &rewriter, ConvIntegerOp op) {
  auto inType = cast<RankedTensorType>(op.getInput().getType());
  auto fType = cast<RankedTensorType>(op.getFilter().getType());
  auto outType = cast<RankedTensorType>(op.getType());
  std::optional<int64_t> inputZero = uniformZeroPoint(op.getInputZeroPoint());
  std::optional<int64_t> filterZero = uniformZeroPoint(op.getFilterZeroPoint());
  auto ones = [](ArrayRef<int64_t> v) { return llvm::all_of(v, [](int64_t x) { return x == 1; }); };
  if (!inputZero || filterZero != 0 || inType.getRank() != 4 || op.getGroups() != 1 ||
      !inType.getElementType().isInteger(8) || !fType.getElementType().isSignlessInteger(8) ||
      !ones(fType.getShape().drop_front(2)) || !ones(op.getStrides()) ||
      llvm::any_of(op.getPads(), [](int64_t p) { return p != 0; }))
    return Value();
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  int64_t n = inType.getDimSize(0), c = inType.getDimSize(1), f = fType.getDimSize(0);
  int64_t hw = inType.getDimSize(2) * inType.getDimSize(3);
  Type i8 = rewriter.getI8Type(), i32 = outType.getElementType();
  Value x = reinterpret(rewriter, loc, op.getInput(), signlessType(inType));
  x = reshapeTensor(rewriter, loc, x, RankedTensorType::get({n, c, hw}, i8));
  Value w = reshapeTensor(rewriter, loc, op.getFilter(), RankedTensorType::get({f, c}, i8));
  auto gemmType = RankedTensorType::get({n, f, hw}, i32);
  AffineExpr dn, df, dp, dc;
  bindDims(ctx, dn, df, dp, dc);
  SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {df, dc}, ctx),
                                 AffineMap::get(4, 0, {dn, dc, dp}, ctx),
                                 AffineMap::get(4, 0, {dn, df, dp}, ctx)};
  bool inputUnsigned = hasUnsignedElements(inType);
  Value gemm =
      linalg::GenericOp::create(
          rewriter, loc, gemmType, ValueRange{w, x},
          ValueRange{filledTensor(rewriter, loc, gemmType, scalarConstant(rewriter, loc, i32, 0))},
          maps, iteratorTypes(4, {3}),
          [&](OpBuilder &b, Location l, ValueRange args) {
            Value wv = convertScalar(b, l, args[0], i32);
            Value xv = convertScalar(b, l, args[1], i32, inputUnsigned);
            Value sum = arith::AddIOp::create(b, l, args[2], arith::MulIOp::create(b, l, wv, xv));
            linalg::YieldOp::create(b, l, sum);
          })
          .getResult(0);
  Value acc = reshapeTensor(rewriter, loc, gemm, outType);
  return subtractZeroPointSums(rewriter, loc, acc, op.getFilter(), /*kDim=*/1, {f, 1, 1},
                               *inputZero);
}

/// Any other `kiln.conv_integer` (grouped and depthwise ones included) of
/// 8-bit activations with one zero point z by int8 filters without one, on
/// 8-bit operands: unsigned
/// activations become signed ones by flipping their top bit (x - 128, so the
/// named convolution's sign extension reads them right) and z becomes
/// z - 128; the input is padded with that zero point, convolved as bytes and
/// z * (the filter's sums) subtracted: sum (x - z) * w over the window with
/// the zero point as padding (an output channel's window spans its group's
/// input channels, which are exactly its filter's elements). Depthwise
/// convolutions thus stay the named depthwise op the CPU pipeline
/// vectorizes. Null when the convolution is not of that form.
static Value lowerQuantizedConv(PatternRewriter &rewriter, ConvIntegerOp op) {
  auto inType = cast<RankedTensorType>(op.getInput().getType());
  auto fType = cast<RankedTensorType>(op.getFilter().getType());
  std::optional<int64_t> inputZero = uniformZeroPoint(op.getInputZeroPoint());
  std::optional<int64_t> filterZero = uniformZeroPoint(op.getFilterZeroPoint());
  if (!inputZero || filterZero != 0 || !inType.getElementType().isInteger(8) ||
      !fType.getElementType().isSignlessInteger(8))
    return Value();
  Location loc = op.getLoc();
  Type i8 = rewriter.getI8Type();
  int64_t zero = *inputZero;
  Value input = reinterpret(rewriter, loc, op.getInput(), signlessType(inType));
  if (hasUnsignedElements(inType)) {
    input = elementwise(rewriter, loc, RankedTensorType::get(inType.getShape(), i8), {input},
                        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
                          Value top = scalarConstant(b, l, i8, -128);
                          return arith::XOrIOp::create(b, l, args[0], top);
                        });
    zero -= 128;
  }
  int64_t rank = inType.getRank(), spatial = rank - 2;
  ArrayRef<int64_t> pads = op.getPads();
  SmallVector<int64_t> low(rank, 0), high(rank, 0);
  for (int64_t i = 0; i < spatial; ++i) {
    low[2 + i] = pads[i];
    high[2 + i] = pads[spatial + i];
  }
  input = padTensor(rewriter, loc, input, low, high, scalarConstant(rewriter, loc, i8, zero));
  SmallVector<int64_t> noPads(2 * spatial, 0);
  auto outType = cast<RankedTensorType>(op.getType());
  Value acc = lowerConv(rewriter, loc, input, op.getFilter(), Value(), outType, op.getStrides(),
                        op.getDilations(), noPads, op.getGroups());
  int64_t f = fType.getDimSize(0), k = fType.getNumElements() / f;
  Value filter = reshapeTensor(rewriter, loc, op.getFilter(), RankedTensorType::get({f, k}, i8));
  SmallVector<int64_t> sumShape(rank - 1, 1);
  sumShape[0] = f;
  return subtractZeroPointSums(rewriter, loc, acc, filter, /*kDim=*/1, sumShape, zero);
}

/// Lowers `kiln.conv_integer` to the convolution above accumulating in i32:
/// an operand that is unsigned or has a zero point is first widened to i32
/// with the zero point subtracted (so zero padding after the subtraction is
/// padding with the zero point); a signed operand without one stays `i8`.
struct ConvIntegerLowering : OpRewritePattern<ConvIntegerOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ConvIntegerOp op,
                                PatternRewriter &rewriter) const override {
    if (failed(requireStaticShapes(op)))
      return failure();
    Location loc = op.getLoc();
    if (Value conv = lowerQuantizedPointwise(rewriter, op)) {
      rewriter.replaceOp(op, conv);
      return success();
    }
    if (Value conv = lowerQuantizedConv(rewriter, op)) {
      rewriter.replaceOp(op, conv);
      return success();
    }
    auto operand = [&](Value value, Value zeroPoint, int64_t zeroPointAxis) {
      if (!zeroPoint &&
          getElementTypeOrSelf(value.getType()).isSignlessInteger())
        return value;
      return widenInteger(rewriter, loc, value, zeroPoint, zeroPointAxis);
    };
    Value input = operand(op.getInput(), op.getInputZeroPoint(), -1);
    // A per-output-channel zero point [F] runs along the filter's dimension 0.
    Value filterZp = op.getFilterZeroPoint();
    bool perChannel =
        filterZp && cast<RankedTensorType>(filterZp.getType()).getRank() == 1;
    Value filter = operand(op.getFilter(), filterZp, perChannel ? 0 : -1);
    rewriter.replaceOp(op, lowerConv(rewriter, loc, input, filter, Value(),
                                     op.getType(), op.getStrides(),
                                     op.getDilations(), op.getPads(),
                                     op.getGroups()));
    return success();
  }
};

} // namespace

void kiln::populateConvLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<ConvLowering, ConvIntegerLowering>(patterns.getContext());
}
