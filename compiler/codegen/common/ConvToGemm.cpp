//===- ConvToGemm.cpp - convolutions as GEMMs -----------------------------===//
//
// kiln-conv-to-gemm: 2-d NCHW convolutions become GEMMs (directly for 1x1
// stride-1 convolutions, through an im2col gather otherwise), so every heavy
// kernel of a CNN, a transformer or an LLM is one kind of loop nest. The cpu
// pipeline takes the im2col form; the gfx pipeline only the 1x1 rewrite (its
// GEMM builder reads other convolutions as implicit GEMMs).
//
//===----------------------------------------------------------------------===//

#include "codegen/common/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNCONVTOGEMM
#include "codegen/common/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

/// out[n, f, hw] = w[f, c] * in[n, c, hw] for a 1x1, stride-1 convolution.
LogicalResult rewriteOneByOne(RewriterBase &rewriter, linalg::Conv2DNchwFchwOp conv) {
  auto input = cast<RankedTensorType>(conv.getInputs()[0].getType());
  auto filter = cast<RankedTensorType>(conv.getInputs()[1].getType());
  auto output = cast<RankedTensorType>(conv.getOutputs()[0].getType());
  if (filter.getDimSize(2) != 1 || filter.getDimSize(3) != 1 ||
      !llvm::all_of(conv.getStrides().getValues<int64_t>(), [](int64_t s) { return s == 1; }) ||
      input.getDimSize(2) != output.getDimSize(2) || input.getDimSize(3) != output.getDimSize(3))
    return failure();
  Location loc = conv.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  Type elem = output.getElementType();
  int64_t n = input.getDimSize(0), c = input.getDimSize(1), f = filter.getDimSize(0);
  int64_t hw = input.getDimSize(2) * input.getDimSize(3);
  SmallVector<ReassociationIndices> imageDims = {{0}, {1}, {2, 3}};
  SmallVector<ReassociationIndices> filterDims = {{0}, {1, 2, 3}};
  Value in = tensor::CollapseShapeOp::create(
      rewriter, loc, RankedTensorType::get({n, c, hw}, input.getElementType()),
      conv.getInputs()[0], imageDims);
  Value w = tensor::CollapseShapeOp::create(
      rewriter, loc, RankedTensorType::get({f, c}, filter.getElementType()),
      conv.getInputs()[1], filterDims);
  auto out3 = RankedTensorType::get({n, f, hw}, elem);
  Value init = tensor::CollapseShapeOp::create(rewriter, loc, out3, conv.getOutputs()[0], imageDims);
  AffineExpr dn, df, dp, dc;
  bindDims(ctx, dn, df, dp, dc);
  SmallVector<AffineMap> maps = {AffineMap::get(4, 0, {df, dc}, ctx),
                                 AffineMap::get(4, 0, {dn, dc, dp}, ctx),
                                 AffineMap::get(4, 0, {dn, df, dp}, ctx)};
  SmallVector<utils::IteratorType> iterators = {
      utils::IteratorType::parallel, utils::IteratorType::parallel,
      utils::IteratorType::parallel, utils::IteratorType::reduction};
  bool isFloat = isa<FloatType>(elem);
  auto gemm = linalg::GenericOp::create(
      rewriter, loc, out3, ValueRange{w, in}, ValueRange{init}, maps, iterators,
      [&](OpBuilder &b, Location l, ValueRange args) {
        // Integer convolutions may read i8 operands into an i32 accumulator:
        // extend them as the convolution did (signed, linalg's default cast).
        Value x = convertScalarToDtype(b, l, args[0], elem, /*isUnsignedCast=*/false);
        Value y = convertScalarToDtype(b, l, args[1], elem, /*isUnsignedCast=*/false);
        Value prod = isFloat ? arith::MulFOp::create(b, l, x, y).getResult()
                             : arith::MulIOp::create(b, l, x, y).getResult();
        Value sum = isFloat ? arith::AddFOp::create(b, l, args[2], prod).getResult()
                            : arith::AddIOp::create(b, l, args[2], prod).getResult();
        linalg::YieldOp::create(b, l, sum);
      });
  Value result = tensor::ExpandShapeOp::create(rewriter, loc, output, gemm.getResult(0), imageDims);
  rewriter.replaceOp(conv, result);
  return success();
}

/// `value` with its integer elements extended to integer type `elem` by a
/// linalg.generic (signed, as linalg's convolutions cast); `value` itself
/// when they already are `elem` or are floats.
static Value extendTo(RewriterBase &rewriter, Location loc, Value value, Type elem) {
  auto type = cast<RankedTensorType>(value.getType());
  // (Float operands keep their type: the matrix-core GEMMs read f16/bf16.)
  if (type.getElementType() == elem || !isa<IntegerType>(elem))
    return value;
  auto resultType = RankedTensorType::get(type.getShape(), elem);
  Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(), elem);
  AffineMap identity = rewriter.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(), utils::IteratorType::parallel);
  auto extend = linalg::GenericOp::create(
      rewriter, loc, resultType, ValueRange{value}, ValueRange{init},
      ArrayRef<AffineMap>{identity, identity}, iterators,
      [&](OpBuilder &b, Location l, ValueRange args) {
        linalg::YieldOp::create(
            b, l, convertScalarToDtype(b, l, args[0], elem, /*isUnsignedCast=*/false));
      });
  return extend.getResult(0);
}

struct KilnConvToGemmPass
    : kiln::impl::KilnConvToGemmBase<KilnConvToGemmPass> {
  using KilnConvToGemmBase::KilnConvToGemmBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<linalg::Conv2DNchwFchwOp> convs;
    func.walk([&](linalg::Conv2DNchwFchwOp conv) { convs.push_back(conv); });
    IRRewriter rewriter(&getContext());
    for (linalg::Conv2DNchwFchwOp conv : convs) {
      rewriter.setInsertionPoint(conv);
      if (succeeded(rewriteOneByOne(rewriter, conv)) || !im2col)
        continue;
      // The gather's indexing maps use `p mod OW`; tiles of its image
      // dimension must cover whole output rows (see kiln-cpu-distribute).
      // Its window is recorded for kiln-cpu-vectorize-gemm, which turns the
      // tiled gather into row copies. (Read before the rewrite erases the
      // convolution.)
      int64_t outputWidth = cast<ShapedType>(conv.getOutputs()[0].getType()).getDimSize(3);
      auto filter = cast<ShapedType>(conv.getInputs()[1].getType());
      SmallVector<int64_t> strides(conv.getStrides().getValues<int64_t>());
      SmallVector<int64_t> dilations(conv.getDilations().getValues<int64_t>());
      DenseI64ArrayAttr window =
          rewriter.getDenseI64ArrayAttr({outputWidth, filter.getDimSize(2), filter.getDimSize(3),
                                         strides[0], strides[1], dilations[0], dilations[1]});
      // The im2col rewrite reshapes the operands under the accumulator's
      // element type: operands of a narrower integer type (an i8 filter of
      // an integer convolution) are first extended as the convolution
      // would (signed, linalg's default cast).
      for (OpOperand *operand : conv.getDpsInputOperands())
        operand->set(extendTo(rewriter, conv.getLoc(), operand->get(),
                             getElementTypeOrSelf(conv.getOutputs()[0].getType())));
      FailureOr<std::pair<Operation *, Operation *>> result =
          linalg::rewriteInIm2Col(rewriter, conv);
      if (failed(result))
        continue; // stays a direct convolution
      result->first->setAttr(kIm2ColAttr, window);
    }
    // Collapse the epilogue onto the GEMM's iteration space (also for plain
    // matmuls, whose lowering folds leading dimensions into M): with no
    // reshape between them, the epilogue's workgroup tiles fuse the GEMM.
    RewritePatternSet patterns(&getContext());
    linalg::populateFoldReshapeOpsByCollapsingPatterns(
        patterns, [](OpOperand *) { return true; });
    tensor::populateReassociativeReshapeFoldingPatterns(patterns);
    linalg::FillOp::getCanonicalizationPatterns(patterns, &getContext());
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, &getContext());
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
