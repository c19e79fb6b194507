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
#include "llvm/ADT/SetVector.h"
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

/// Whether `op` is an elementwise generic that flips the top bit of its
/// single 8-bit input (x xor 0x80).
static bool isTopBitFlip(linalg::GenericOp op) {
  if (!op || op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      !llvm::all_of(op.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }) ||
      op.getNumReductionLoops() != 0)
    return false;
  Block *body = op.getBody();
  auto xori = dyn_cast<arith::XOrIOp>(body->getTerminator()->getOperand(0).getDefiningOp());
  if (!xori || !xori.getType().isInteger(8))
    return false;
  APInt bits;
  Value other = xori.getLhs() == body->getArgument(0) ? xori.getRhs() : xori.getLhs();
  return (xori.getLhs() == body->getArgument(0) || xori.getRhs() == body->getArgument(0)) &&
         matchPattern(other, m_ConstantInt(&bits)) && bits == APInt(8, 0x80);
}

/// `value` with its top bits flipped back when it was made by flipping them
/// (a flip, or a tensor.pad of one with a constant: the pad value flips too);
/// null otherwise. The quantized lowering flips uint8 activations so that
/// named convolutions read them as int8; the 8-bit im2col GEMM below reads
/// them as uint8 again.
static Value unflipped(RewriterBase &rewriter, Value value) {
  if (auto flip = value.getDefiningOp<linalg::GenericOp>(); isTopBitFlip(flip))
    return flip.getDpsInputs()[0];
  auto pad = value.getDefiningOp<tensor::PadOp>();
  if (!pad)
    return Value();
  auto flip = pad.getSource().getDefiningOp<linalg::GenericOp>();
  Value padValue = pad.getConstantPaddingValue();
  APInt bits;
  if (!isTopBitFlip(flip) || !padValue || !matchPattern(padValue, m_ConstantInt(&bits)))
    return Value();
  rewriter.setInsertionPoint(pad);
  Value unflippedPad = arith::ConstantOp::create(
      rewriter, pad.getLoc(), IntegerAttr::get(padValue.getType(), bits ^ APInt(8, 0x80)));
  return tensor::PadOp::create(rewriter, pad.getLoc(), pad.getResultType(),
                               flip.getDpsInputs()[0], pad.getMixedLowPad(),
                               pad.getMixedHighPad(), unflippedPad)
      .getResult();
}

/// The quantized lowering's zero-point correction of a convolution result
/// `acc`, `acc - z * sums[f]` (a generic reading `acc`, through the
/// expand_shape the im2col rewrite leaves, and the filter's sums broadcast
/// along F): the generic and z.
static std::optional<std::pair<linalg::GenericOp, int64_t>> zeroPointCorrection(Value acc) {
  if (!acc.hasOneUse())
    return std::nullopt;
  auto expand = dyn_cast<tensor::ExpandShapeOp>(*acc.getUsers().begin());
  if (!expand || !expand->hasOneUse())
    return std::nullopt;
  auto corr = dyn_cast<linalg::GenericOp>(*expand->getUsers().begin());
  if (!corr || corr.getNumDpsInputs() != 2 || corr.getDpsInputs()[0] != expand.getResult() ||
      corr.getNumReductionLoops() != 0)
    return std::nullopt;
  Block *body = corr.getBody();
  auto sub = dyn_cast_or_null<arith::SubIOp>(body->getTerminator()->getOperand(0).getDefiningOp());
  if (!sub || sub.getLhs() != body->getArgument(0))
    return std::nullopt;
  auto mul = sub.getRhs().getDefiningOp<arith::MulIOp>();
  if (!mul)
    return std::nullopt;
  Value other = mul.getLhs() == body->getArgument(1) ? mul.getRhs() : mul.getLhs();
  APInt z;
  if ((mul.getLhs() != body->getArgument(1) && mul.getRhs() != body->getArgument(1)) ||
      !matchPattern(other, m_ConstantInt(&z)))
    return std::nullopt;
  return std::make_pair(corr, z.getSExtValue());
}

/// The 8-bit form of an integer im2col GEMM (both operands int8 before
/// they were extended for the upstream rewrite): the gather copies bytes,
/// flipping their top bit (x + 128 as uint8), and the GEMM multiplies the
/// sign-extended filter by the zero-extended columns, from which 128 * (the
/// filter's row sums) is subtracted: sum w * x = sum w * (x + 128) -
/// 128 * sum w. So the GEMM reads 8-bit columns (a quarter of the i32
/// ones), uint8 x int8 as the CPU's dot-product instruction multiplies.
/// When `input` is itself flipped uint8 activations, the gather reads the
/// uint8 bytes before that flip (the very bytes flipping again would give),
/// so the flip is never computed. `gather` reads `input`
/// extended to i32; `filter` is the [F, ...] int8 filter.
static void narrowIntegerIm2Col(RewriterBase &rewriter, linalg::GenericOp gather, Value input,
                                Value filter) {
  if (!gather->hasOneUse())
    return;
  auto gemm = dyn_cast<linalg::GenericOp>(*gather->getUsers().begin());
  if (!gemm || gemm.getNumDpsInputs() != 2 || gemm.getDpsInputOperand(1)->get() != gather.getResult(0))
    return;
  Location loc = gemm.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  Type i8 = rewriter.getI8Type(), i32 = rewriter.getI32Type();
  auto colType = cast<RankedTensorType>(gather.getResult(0).getType()).clone(i8);
  Value raw = unflipped(rewriter, input);
  rewriter.setInsertionPoint(gemm);
  auto bytes = linalg::GenericOp::create(
      rewriter, gather.getLoc(), colType, ValueRange{raw ? raw : input},
      ValueRange{tensor::EmptyOp::create(rewriter, loc, colType.getShape(), i8)},
      gather.getIndexingMapsArray(), gather.getIteratorTypesArray(),
      [&](OpBuilder &b, Location l, ValueRange args) {
        if (raw) {
          linalg::YieldOp::create(b, l, args[0]);
          return;
        }
        Value top = arith::ConstantOp::create(b, l, IntegerAttr::get(i8, -128));
        linalg::YieldOp::create(b, l, arith::XOrIOp::create(b, l, args[0], top).getResult());
      });
  bytes->setAttr(kIm2ColAttr, gather->getAttr(kIm2ColAttr));
  auto fType = cast<RankedTensorType>(filter.getType());
  int64_t f = fType.getDimSize(0), k = fType.getNumElements() / f;
  SmallVector<ReassociationIndices> rows = {{0}, llvm::to_vector(llvm::seq<int64_t>(1, fType.getRank()))};
  Value w = tensor::CollapseShapeOp::create(rewriter, loc, RankedTensorType::get({f, k}, i8),
                                            filter, rows);
  auto outType = cast<RankedTensorType>(gemm.getResult(0).getType());
  auto product = linalg::GenericOp::create(
      rewriter, loc, outType, ValueRange{w, bytes.getResult(0)}, gemm.getDpsInits(),
      gemm.getIndexingMapsArray(), gemm.getIteratorTypesArray(),
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value x = arith::ExtSIOp::create(b, l, i32, args[0]);
        Value y = arith::ExtUIOp::create(b, l, i32, args[1]);
        Value sum = arith::AddIOp::create(b, l, args[2], arith::MulIOp::create(b, l, x, y));
        linalg::YieldOp::create(b, l, sum);
      });
  // After the quantized lowering's `acc - z * sums`, the two corrections
  // are one: `product - (z + 128) * sums` (none at all when z = -128, the
  // flipped zero point of uint8 activations without one).
  if (auto correction = zeroPointCorrection(gemm.getResult(0))) {
    auto [corr, z] = *correction;
    int64_t merged = z + 128;
    rewriter.replaceAllUsesWith(gemm.getResult(0), product.getResult(0));
    rewriter.eraseOp(gemm);
    rewriter.eraseOp(gather);
    Value acc = corr.getDpsInputs()[0];
    if (merged == 0) {
      rewriter.replaceOp(corr, acc);
      return;
    }
    rewriter.setInsertionPoint(corr);
    auto updated = linalg::GenericOp::create(
        rewriter, corr.getLoc(), corr.getResultTypes(), corr.getDpsInputs(), corr.getDpsInits(),
        corr.getIndexingMapsArray(), corr.getIteratorTypesArray(),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value c = arith::ConstantOp::create(b, l, IntegerAttr::get(i32, merged));
          Value shift = arith::MulIOp::create(b, l, c, args[1]);
          linalg::YieldOp::create(b, l, arith::SubIOp::create(b, l, args[0], shift).getResult());
        });
    rewriter.replaceOp(corr, updated.getResults());
    return;
  }
  // sums[f] = sum_k w[f, k]; out[n, f, p] = product - 128 * sums[f].
  auto sumType = RankedTensorType::get({f}, i32);
  Value zero = arith::ConstantOp::create(rewriter, loc, IntegerAttr::get(i32, 0));
  Value sumInit = linalg::FillOp::create(rewriter, loc, zero,
                                         tensor::EmptyOp::create(rewriter, loc, {f}, i32).getResult())
                      .getResult(0);
  AffineExpr d0, d1, d2;
  bindDims(ctx, d0, d1, d2);
  auto sums = linalg::GenericOp::create(
      rewriter, loc, sumType, ValueRange{w}, ValueRange{sumInit},
      ArrayRef<AffineMap>{AffineMap::get(2, 0, {d0, d1}, ctx), AffineMap::get(2, 0, {d0}, ctx)},
      ArrayRef<utils::IteratorType>{utils::IteratorType::parallel, utils::IteratorType::reduction},
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value v = arith::ExtSIOp::create(b, l, i32, args[0]);
        linalg::YieldOp::create(b, l, arith::AddIOp::create(b, l, args[1], v).getResult());
      });
  AffineMap id = AffineMap::getMultiDimIdentityMap(3, ctx);
  auto corrected = linalg::GenericOp::create(
      rewriter, loc, outType, ValueRange{product.getResult(0), sums.getResult(0)},
      ValueRange{tensor::EmptyOp::create(rewriter, loc, outType.getShape(), i32)},
      ArrayRef<AffineMap>{id, AffineMap::get(3, 0, {d1}, ctx), id},
      SmallVector<utils::IteratorType>(3, utils::IteratorType::parallel),
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value c = arith::ConstantOp::create(b, l, IntegerAttr::get(i32, 128));
        Value shift = arith::MulIOp::create(b, l, c, args[1]);
        linalg::YieldOp::create(b, l, arith::SubIOp::create(b, l, args[0], shift).getResult());
      });
  rewriter.replaceOp(gemm, corrected.getResult(0));
  rewriter.eraseOp(gather);
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
      Value input = conv.getInputs()[0], filterValue = conv.getInputs()[1];
      Type accElem = getElementTypeOrSelf(conv.getOutputs()[0].getType());
      bool bytes = getElementTypeOrSelf(input.getType()).isInteger(8) &&
                   getElementTypeOrSelf(filterValue.getType()).isInteger(8) &&
                   accElem.isInteger(32);
      for (OpOperand *operand : conv.getDpsInputOperands())
        operand->set(extendTo(rewriter, conv.getLoc(), operand->get(), accElem));
      FailureOr<std::pair<Operation *, Operation *>> result =
          linalg::rewriteInIm2Col(rewriter, conv);
      if (failed(result))
        continue; // stays a direct convolution
      result->first->setAttr(kIm2ColAttr, window);
      if (auto gather = dyn_cast<linalg::GenericOp>(result->first); gather && bytes)
        narrowIntegerIm2Col(rewriter, gather, input, filterValue);
    }
    // An elementwise epilogue that reads a GEMM's result through an
    // expand_shape adding unit dimensions (a [32, 1, 128] x [128, 384]
    // matmul is a [32, 384] GEMM expanded to [32, 1, 384]) first drops them:
    // a bias indexed by the last dimension alone would otherwise keep the
    // unit dimension from collapsing with it below, the reshape would stay
    // between GEMM and epilogue, and every workgroup of the epilogue would
    // recompute the whole GEMM outside its tile.
    {
      RewritePatternSet patterns(&getContext());
      linalg::ControlDropUnitDims control;
      control.controlFn = [](Operation *op) -> SmallVector<unsigned> {
        auto generic = dyn_cast<linalg::GenericOp>(op);
        if (!generic || generic.getNumLoops() != generic.getNumParallelLoops())
          return {};
        // The loops of unit dimensions the expand_shape grouped with others.
        llvm::SmallSetVector<unsigned, 4> unitDims;
        for (OpOperand *input : generic.getDpsInputOperands()) {
          auto expand = input->get().getDefiningOp<tensor::ExpandShapeOp>();
          auto producer = expand ? expand.getSrc().getDefiningOp<linalg::LinalgOp>() : nullptr;
          AffineMap map = generic.getMatchingIndexingMap(input);
          // (Or a product by weights in column panels, which reads them
          // through a map that is not a projection: n floordiv P, n mod P.)
          auto panelProduct = [](linalg::LinalgOp op) {
            return op.getNumReductionLoops() > 0 &&
                   llvm::any_of(op.getIndexingMapsArray(), [](AffineMap m) {
                     return llvm::any_of(m.getResults(), [](AffineExpr e) {
                       return e.getKind() == AffineExprKind::FloorDiv ||
                              e.getKind() == AffineExprKind::Mod;
                     });
                   });
          };
          if (!producer ||
              !(linalg::isaContractionOpInterface(producer) || panelProduct(producer)) ||
              !map.isProjectedPermutation())
            continue;
          for (ReassociationIndices group : expand.getReassociationIndices())
            if (group.size() > 1)
              for (int64_t dim : group)
                if (expand.getResultType().getDimSize(dim) == 1)
                  unitDims.insert(map.getDimPosition(dim));
        }
        return SmallVector<unsigned>(unitDims.begin(), unitDims.end());
      };
      linalg::populateFoldUnitExtentDimsPatterns(patterns, control);
      if (failed(applyPatternsGreedily(func, std::move(patterns))))
        return signalPassFailure();
    }
    // Collapse the epilogue onto the GEMM's iteration space (also for plain
    // matmuls, whose lowering folds leading dimensions into M): with no
    // reshape between them, the epilogue's workgroup tiles fuse the GEMM.
    RewritePatternSet patterns(&getContext());
    // (Not a grouped convolution's padded input: the lowering pads it after
    // reshaping it to the grouped layout, so that the pad, right under the
    // convolution, fuses into its tiles.)
    linalg::populateFoldReshapeOpsByCollapsingPatterns(patterns, [](OpOperand *use) {
      auto pad = dyn_cast<tensor::PadOp>(use->getOwner());
      return !pad || !llvm::any_of(pad->getUsers(), [](Operation *user) {
        return isa<linalg::Conv2DNgchwGfchwOp>(user);
      });
    });
    tensor::populateReassociativeReshapeFoldingPatterns(patterns);
    linalg::FillOp::getCanonicalizationPatterns(patterns, &getContext());
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, &getContext());
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, &getContext());
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return signalPassFailure();

    // A grouped 2-d convolution ([N, G, F/G, H, W], conv_2d_ngchw_gfchw) is
    // collapsed back to [N, F, ...] for its elementwise epilogue; the
    // epilogue is expanded to the grouped layout instead, the
    // collapse moving after it: with a reshape between them, the epilogue's
    // workgroups could not fuse the convolution, and every workgroup
    // recomputed all of it outside its tile (RegNet's grouped 3x3 layers:
    // 48 times, 1 s per image; on gfx every thread, past its private
    // memory).
    // So is its initial value (the bias broadcast to [N, F, H, W], read
    // through an expand_shape to the grouped layout): the generic that
    // makes it is expanded instead. Left behind the reshape, it stayed out
    // of the workgroups' tiles, and every workgroup broadcast the whole
    // bias again (RegNet's last stage: 110 times, 12 GFLOP/s).
    RewritePatternSet expand(&getContext());
    linalg::populateFoldReshapeOpsByExpansionPatterns(expand, [](OpOperand *use) {
      if (auto reshape = dyn_cast<tensor::ExpandShapeOp>(use->getOwner())) {
        auto producer = use->get().getDefiningOp<linalg::GenericOp>();
        return producer && producer.getNumLoops() == producer.getNumParallelLoops() &&
               reshape->hasOneUse() &&
               llvm::all_of(reshape->getUses(), [](OpOperand &init) {
                 auto conv = dyn_cast<linalg::Conv2DNgchwGfchwOp>(init.getOwner());
                 return conv && conv.isDpsInit(&init);
               });
      }
      auto collapse = use->get().getDefiningOp<tensor::CollapseShapeOp>();
      auto consumer = dyn_cast<linalg::GenericOp>(use->getOwner());
      if (!collapse || !consumer ||
          consumer.getNumLoops() != consumer.getNumParallelLoops())
        return false;
      Operation *producer = collapse.getSrc().getDefiningOp();
      return isa_and_present<linalg::Conv2DNgchwGfchwOp>(producer);
    });
    if (failed(applyPatternsGreedily(func, std::move(expand))))
      return signalPassFailure();
  }
};

} // namespace
