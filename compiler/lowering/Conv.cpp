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

/// The accumulator of a convolution producing `type` ([N, F, O...]): the
/// bias broadcast along dimension 1, or zero.
Value convInit(OpBuilder &b, Location loc, RankedTensorType type, Value bias) {
  Type elem = type.getElementType();
  if (!bias)
    return filledTensor(b, loc, type, scalarConstant(b, loc, elem, 0));
  MLIRContext *ctx = b.getContext();
  unsigned rank = type.getRank();
  SmallVector<AffineMap> maps = {
      AffineMap::get(rank, 0, {getAffineDimExpr(1, ctx)}, ctx),
      AffineMap::getMultiDimIdentityMap(rank, ctx)};
  return linalg::GenericOp::create(
             b, loc, type, ValueRange{bias},
             ValueRange{emptyTensor(b, loc, type)}, maps, iteratorTypes(rank),
             [](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc, args[0]);
             })
      .getResult(0);
}

/// A grouped N-d convolution as one linalg.generic: `input` is the padded
/// `[N, C, D...]`, `filter` `[F, C/G, K...]`, `init` `[N, F, O...]`. The
/// channel dimensions are split into groups so every indexing map is affine
/// in the loops `(n, g, f, o..., c, k...)`.
Value genericConv(OpBuilder &b, Location loc, Value input, Value filter,
                  Value init, int64_t groups, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> dilations) {
  MLIRContext *ctx = b.getContext();
  auto inType = cast<RankedTensorType>(input.getType());
  auto fType = cast<RankedTensorType>(filter.getType());
  auto outType = cast<RankedTensorType>(init.getType());
  Type elem = outType.getElementType();
  ArrayRef<int64_t> in = inType.getShape(), f = fType.getShape(),
                    out = outType.getShape();
  int64_t spatial = in.size() - 2;
  int64_t cg = f[1], fg = f[0] / groups;

  auto grouped = [&](ArrayRef<int64_t> lead, ArrayRef<int64_t> rest,
                     Type element) {
    SmallVector<int64_t> shape(lead);
    llvm::append_range(shape, rest);
    return RankedTensorType::get(shape, element);
  };
  Value gInput = reshapeTensor(
      b, loc, input,
      grouped({in[0], groups, cg}, in.drop_front(2), inType.getElementType()));
  Value gFilter = reshapeTensor(
      b, loc, filter,
      grouped({groups, fg, cg}, f.drop_front(2), fType.getElementType()));
  auto gOutType = grouped({out[0], groups, fg}, out.drop_front(2), elem);
  Value gInit = reshapeTensor(b, loc, init, gOutType);

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
  Value result = linalg::GenericOp::create(
                     b, loc, gOutType, ValueRange{gInput, gFilter},
                     ValueRange{gInit}, maps, iteratorTypes(loops, reductions),
                     [&](OpBuilder &nb, Location l, ValueRange args) {
                       multiplyAccumulate(nb, l, args, elem);
                     })
                     .getResult(0);
  return reshapeTensor(b, loc, result, outType);
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

  SmallVector<int64_t> low(rank, 0), high(rank, 0);
  for (int64_t i = 0; i < spatial; ++i) {
    low[2 + i] = pads[i];
    high[2 + i] = pads[spatial + i];
  }
  if (llvm::any_of(pads, [](int64_t p) { return p != 0; }))
    input = padTensor(rewriter, loc, input, low, high,
                      scalarConstant(rewriter, loc, inElem, 0));
  Value init = convInit(rewriter, loc, resultType, bias);
  DenseIntElementsAttr stridesAttr = i64Vector(rewriter, strides);
  DenseIntElementsAttr dilationsAttr = i64Vector(rewriter, dilations);

  if (groups == 1) {
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
  } else if (spatial == 2) {
    // [N, G*C', H, W] x [G*F', C', KH, KW] -> [N, G*F', OH, OW] through the
    // grouped layouts NGCHW x GFCHW -> NGFHW.
    auto grouped = [&](RankedTensorType type, int64_t lead, int64_t perGroup) {
      ArrayRef<int64_t> shape = type.getShape();
      SmallVector<int64_t> s(shape.take_front(lead));
      s.push_back(groups);
      s.push_back(perGroup);
      llvm::append_range(s, shape.drop_front(lead + 1));
      return RankedTensorType::get(s, type.getElementType());
    };
    auto padded = cast<RankedTensorType>(input.getType());
    Value gInput = reshapeTensor(rewriter, loc, input,
                                 grouped(padded, 1, channels / groups));
    Value gFilter = reshapeTensor(rewriter, loc, filter,
                                  grouped(fType, 0, filters / groups));
    Value gInit = reshapeTensor(rewriter, loc, init,
                                grouped(resultType, 1, filters / groups));
    Value gResult = namedConv<linalg::Conv2DNgchwGfchwOp>(
        rewriter, loc, gInput, gFilter, gInit, stridesAttr, dilationsAttr);
    return reshapeTensor(rewriter, loc, gResult, resultType);
  }
  return genericConv(rewriter, loc, input, filter, init, groups, strides,
                     dilations);
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
