//===- Gemm.cpp - register-tiled vector GEMMs -----------------------------===//
//
// kiln-cpu-vectorize-gemm: inside a workgroup, each contraction is tiled to
// a register tile, peeled into full and partial tiles, and the full tiles
// are vectorized; the accumulator tile stays in registers across the k loop
// and vector.contract becomes outer products (broadcast + FMA).
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/IntegerDot.h"
#include "codegen/cpu/Passes.h"
#include "lowering/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorTransforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNCPUVECTORIZEGEMM
#include "codegen/cpu/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

//===----------------------------------------------------------------------===//
// Register tiling and vectorization
//===----------------------------------------------------------------------===//

/// Tiles `op` by `tiles` (0 = not tiled) into scf.for loops in `interchange`
/// order (none: loop order) and peels every loop, so that the main part has
/// full (static) tiles. Innermost loop first: the partial iteration of an
/// outer loop then clones the inner loop already peeled, so that the tiles
/// of the remainder are static too (outer first, the last rows' tiles of a
/// depthwise convolution stayed dynamic, and scalar).
void tileAndPeel(RewriterBase &rewriter, TilingInterface op, ArrayRef<int64_t> tiles,
                 ArrayRef<int64_t> interchange = {}) {
  rewriter.setInsertionPoint(op);
  scf::SCFTilingOptions options;
  options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), tiles));
  if (!interchange.empty())
    options.setInterchange(interchange);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(rewriter, op, options);
  if (failed(tiled))
    return;
  rewriter.replaceOp(op, tiled->replacements);
  for (LoopLikeOpInterface loop : llvm::reverse(tiled->loops))
    if (auto forOp = dyn_cast<scf::ForOp>(loop.getOperation())) {
      scf::ForOp partial;
      (void)scf::peelForLoopAndSimplifyBounds(rewriter, forOp, partial);
    }
}

/// The loop order of register tiling: batch, n, m, k, so that a register-tile
/// column block of the right-hand side stays in L1 while the rows of the
/// left-hand side stream past it (none when the dimensions do not cover
/// every loop).
SmallVector<int64_t> registerTileOrder(const linalg::ContractionDimensions &dims,
                                       unsigned numLoops) {
  SmallVector<int64_t> order;
  llvm::append_range(order, dims.batch);
  llvm::append_range(order, dims.n);
  llvm::append_range(order, dims.m);
  llvm::append_range(order, dims.k);
  if (order.size() != numLoops)
    order.clear();
  return order;
}

/// Whether an operand of `op` has elements narrower than a byte (i1 masks,
/// i4) or that are not plain numbers. Such elements are stored one per byte
/// in memory but packed in LLVM's vectors: a vector load of a mask would
/// read bits, a vector store of one write them.
bool hasSubByteOperands(Operation *op) {
  return llvm::any_of(op->getOperandTypes(), [](Type t) {
    Type elem = getElementTypeOrSelf(t);
    return !elem.isIntOrIndexOrFloat() ||
           (!elem.isIndex() && elem.getIntOrFloatBitWidth() < 8);
  });
}

/// A generic from a tiled depthwise convolution: one window tap (unit
/// reduction loops) over a row segment.
bool isDepthwiseTap(linalg::LinalgOp op) {
  // (A comparison of a row with a scalar has this shape too: its i1 result
  // must stay scalar.)
  if (!isa<linalg::GenericOp>(op) || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 ||
      op->hasAttr(kIm2ColAttr) || linalg::isaContractionOpInterface(op) ||
      hasSubByteOperands(op))
    return false;
  bool anyReduction = false;
  for (auto [range, it] : llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray()))
    if (it == utils::IteratorType::reduction) {
      anyReduction = true;
      if (range != 1)
        return false;
    }
  if (anyReduction)
    return true;
  // After its unit dimensions are dropped: a row segment (or a block of
  // rows, tileDepthwiseTaps) times a scalar.
  if (op.getNumLoops() <= 2 && llvm::any_of(op.getDpsInputs(), [](Value v) {
        auto type = dyn_cast<RankedTensorType>(v.getType());
        return type && type.getRank() == 0;
      }))
    return true;
  // A grouped convolution's tap over several output channels
  // (cpu::groupedChannelTile): loops (f, rows, columns), the weights
  // indexed by f alone, the input rows by the rest.
  if (op.getNumLoops() != 3)
    return false;
  MLIRContext *ctx = op.getContext();
  AffineMap weights = AffineMap::get(3, 0, {getAffineDimExpr(0, ctx)}, ctx);
  bool anyWeights = false, anyRows = false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (map == weights)
      anyWeights = true;
    else if (map.getNumResults() == 2 && !map.isFunctionOfDim(0))
      anyRows = true;
  }
  if (!anyWeights || !anyRows || !op.getMatchingIndexingMap(op.getDpsInitOperand(0)).isIdentity())
    return false;
  // (Not any elementwise op of that shape: one that accumulates into its
  // output, out + in * w.)
  Block *body = op.getBlock();
  Operation *sum = body->getTerminator()->getOperand(0).getDefiningOp();
  Value out = body->getArguments().back();
  return sum && isa<arith::AddFOp, arith::AddIOp>(sum) &&
         (sum->getOperand(0) == out || sum->getOperand(1) == out);
}

/// The output channels of a depthwise tap (isDepthwiseTap): 1, or those of
/// a grouped convolution's tap, its first loop.
static int64_t tapChannels(linalg::LinalgOp op) {
  return op.getNumLoops() == 3 && op.getNumReductionLoops() == 0 ? op.getStaticLoopRanges()[0]
                                                                  : 1;
}

/// Rewrites a static im2col gather `cols[n, (c, kh, kw), (oh, ow)] =
/// in[n, c, oh*SH + kh*DH, ow*SW + kw*DW]` into loops over (n, c, kh, kw, oh)
/// that copy one output row (OW pixels, a strided segment of an input row)
/// each: no division or remainder per element, and contiguous copies for
/// unit strides, which LLVM vectorizes. The gather's tile (kiln-cpu-distribute)
/// covers whole output rows and reads a window of the input that starts at
/// the tile's first row, so the same formula holds inside a workgroup.
/// Every `stride`-th element of the row of `source` at `indices` (along its
/// innermost dimension), `lanes` of them: one vector read of the contiguous
/// span they lie in (`lanes * stride` lanes; `inBounds` when the whole span
/// is inside the row, else the lanes past its end are masked off) and, when
/// strided, one shuffle keeping every `stride`-th lane (AVX-512: two loads
/// and a vpermt2ps, where a strided read gathers element by element).
static Value readEveryNth(OpBuilder &b, Location loc, Value source, ValueRange indices,
                          int64_t lanes, int64_t stride, Value padding, bool inBounds) {
  // A long strided row in pieces of 16 lanes (one span of 16 * stride and
  // one shuffle each): one shuffle of a whole 7x7 stride-2 im2col row (224
  // lanes into 112) took ResNet-50's stem 2.8x the time of its GEMM.
  constexpr int64_t kPiece = 16;
  if (stride > 1 && lanes > kPiece) {
    auto type = cast<ShapedType>(source.getType());
    auto resultType = VectorType::get({lanes}, type.getElementType());
    Value result = ub::PoisonOp::create(b, loc, resultType);
    for (int64_t start = 0; start < lanes; start += kPiece) {
      SmallVector<Value> at(indices.begin(), indices.end());
      at.back() = arith::AddIOp::create(b, loc, at.back(),
                                        arith::ConstantIndexOp::create(b, loc, start * stride));
      Value piece = readEveryNth(b, loc, source, at, std::min(kPiece, lanes - start), stride,
                                 padding, inBounds);
      result = vector::InsertStridedSliceOp::create(b, loc, piece, result,
                                                    ArrayRef<int64_t>{start},
                                                    ArrayRef<int64_t>{1});
    }
    return result;
  }
  auto type = cast<ShapedType>(source.getType());
  auto spanType = VectorType::get({lanes * stride}, type.getElementType());
  SmallVector<bool> spanInBounds = {inBounds};
  Value span = vector::TransferReadOp::create(
      b, loc, spanType, source, indices, padding,
      b.getMultiDimIdentityMap(type.getRank()).getMinorSubMap(1), ArrayRef<bool>(spanInBounds));
  if (stride == 1)
    return span;
  SmallVector<int64_t> picks;
  for (int64_t i = 0; i < lanes; ++i)
    picks.push_back(i * stride);
  return vector::ShuffleOp::create(b, loc, span, span, picks);
}

LogicalResult rewriteIm2ColAsRowCopies(RewriterBase &rewriter, linalg::GenericOp gather) {
  std::optional<Im2ColWindow> window = Im2ColWindow::get(gather);
  if (!window || gather.getNumDpsInputs() != 1 || gather.getNumDpsInits() != 1 ||
      !gather.hasPureTensorSemantics())
    return failure();
  Value input = gather.getDpsInputs()[0];
  Value init = gather.getDpsInits()[0];
  auto inType = dyn_cast<RankedTensorType>(input.getType());
  auto outType = dyn_cast<RankedTensorType>(init.getType());
  if (!inType || !outType || !inType.hasStaticShape() || !outType.hasStaticShape() ||
      inType.getRank() != 4 || outType.getRank() != 3)
    return failure();
  const Im2ColWindow &w = *window;
  int64_t n = outType.getDimSize(0), k = outType.getDimSize(1), p = outType.getDimSize(2);
  int64_t c = inType.getDimSize(1);
  if (w.outWidth <= 0 || p % w.outWidth != 0 || k != c * w.kh * w.kw ||
      inType.getDimSize(0) != n)
    return failure();
  int64_t rows = p / w.outWidth;
  // Every row copy must stay inside the input window.
  if ((rows - 1) * w.sh + (w.kh - 1) * w.dh >= inType.getDimSize(2) ||
      (w.outWidth - 1) * w.sw + (w.kw - 1) * w.dw >= inType.getDimSize(3))
    return failure();

  Location loc = gather.getLoc();
  rewriter.setInsertionPoint(gather);
  auto cst = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(rewriter, loc, v); };
  SmallVector<Value> lbs(5, cst(0)), steps(5, cst(1));
  SmallVector<Value> ubs = {cst(n), cst(c), cst(w.kh), cst(w.kw), cst(rows)};
  auto rowType = RankedTensorType::get({w.outWidth}, inType.getElementType());
  auto outRowType = RankedTensorType::get({w.outWidth}, outType.getElementType());
  Block *body = gather.getBody();
  bool plainCopy = body->getTerminator()->getOperand(0) == body->getArgument(0);
  scf::LoopNest nest = scf::buildLoopNest(
      rewriter, loc, lbs, ubs, steps, ValueRange{init},
      [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange iters) -> scf::ValueVector {
        Value in = ivs[0], ic = ivs[1], ikh = ivs[2], ikw = ivs[3], ioh = ivs[4];
        auto mul = [&](Value v, int64_t by) -> Value {
          return arith::MulIOp::create(b, l, v, arith::ConstantIndexOp::create(b, l, by));
        };
        auto add = [&](Value x, Value y) -> Value { return arith::AddIOp::create(b, l, x, y); };
        Value h = add(mul(ioh, w.sh), mul(ikh, w.dh));
        Value col = mul(ikw, w.dw);
        Value kIndex = add(mul(add(mul(ic, w.kh), ikh), w.kw), ikw);
        Value pIndex = mul(ioh, w.outWidth);
        if (plainCopy) {
          // A vector read of the row (of the span it covers when strided)
          // and a vector write: as slices, the copy became a scalar loop
          // (7 moves per row of a 7x7 image, the gathers repeated by every
          // workgroup). The span is inside the row for the last kw too:
          // in bounds for all.
          int64_t available = inType.getDimSize(3) - (w.kw - 1) * w.dw;
          Value padding = ub::PoisonOp::create(b, l, inType.getElementType());
          Value row = readEveryNth(b, l, input, ValueRange{in, ic, h, col}, w.outWidth, w.sw,
                                   padding, w.outWidth * w.sw <= available);
          SmallVector<bool> inBounds = {true};
          Value written =
              vector::TransferWriteOp::create(b, l, row, iters[0], ValueRange{in, kIndex, pIndex},
                                              b.getMultiDimIdentityMap(3).getMinorSubMap(1),
                                              ArrayRef<bool>(inBounds))
                  .getResult();
          return {written};
        }
        SmallVector<OpFoldResult> srcOffsets = {in, ic, h, col};
        SmallVector<OpFoldResult> srcSizes = {b.getIndexAttr(1), b.getIndexAttr(1),
                                              b.getIndexAttr(1), b.getIndexAttr(w.outWidth)};
        SmallVector<OpFoldResult> srcStrides = {b.getIndexAttr(1), b.getIndexAttr(1),
                                                b.getIndexAttr(1), b.getIndexAttr(w.sw)};
        Value row = tensor::ExtractSliceOp::create(b, l, rowType, input, srcOffsets, srcSizes,
                                                   srcStrides);
        // A gather that maps its elements (the top-bit flip of an 8-bit
        // integer im2col) maps each row the same way.
        if (!plainCopy) {
          AffineMap id = b.getMultiDimIdentityMap(1);
          row = linalg::GenericOp::create(
                    b, l, outRowType, ValueRange{row},
                    ValueRange{tensor::EmptyOp::create(b, l, outRowType.getShape(),
                                                       outRowType.getElementType())},
                    ArrayRef<AffineMap>{id, id},
                    ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
                    [&](OpBuilder &nb, Location nl, ValueRange args) {
                      IRMapping mapping;
                      mapping.map(gather.getBody()->getArguments(), args);
                      for (Operation &inner : gather.getBody()->without_terminator())
                        nb.clone(inner, mapping);
                      Value yielded = gather.getBody()->getTerminator()->getOperand(0);
                      linalg::YieldOp::create(nb, nl, mapping.lookupOrDefault(yielded));
                    })
                    .getResult(0);
        }
        SmallVector<OpFoldResult> dstOffsets = {in, kIndex, pIndex};
        SmallVector<OpFoldResult> dstSizes = {b.getIndexAttr(1), b.getIndexAttr(1),
                                              b.getIndexAttr(w.outWidth)};
        SmallVector<OpFoldResult> dstStrides(3, b.getIndexAttr(1));
        Value updated = tensor::InsertSliceOp::create(b, l, row, iters[0], dstOffsets, dstSizes,
                                                      dstStrides);
        return {updated};
      });
  rewriter.replaceOp(gather, nest.results);
  return success();
}

bool hasStaticShapes(linalg::LinalgOp op) {
  return llvm::all_of(op->getOperandTypes(), [](Type t) {
    auto shaped = dyn_cast<ShapedType>(t);
    return !shaped || shaped.hasStaticShape();
  });
}

/// The reduction block of a cache-blocked contraction: the largest multiple
/// of `step` at most `limit` that divides `range` (full blocks keep every
/// tile static), or 0 when the reduction is short or has no such divisor
/// worth the extra loop.
int64_t chooseCacheBlock(int64_t range, int64_t limit, int64_t step) {
  if (range == ShapedType::kDynamic || limit <= 0 || range <= limit)
    return 0;
  for (int64_t block = limit - limit % step; block >= limit / 4; block -= step)
    if (block > 0 && range % block == 0)
      return block;
  return 0;
}

/// Math functions that kiln-cpu-vectorize-gemm replaces by polynomial
/// approximations on f32 (MLIR's: exp within about 1 ulp, tanh within a few
/// ulp; erf is codegen/common/Erf.cpp's rational function, within 3.5e-7),
/// which vectorize and inline where libm's would be a call per element.
bool isApproximated(StringRef opName) {
  return opName == math::ExpOp::getOperationName() || opName == math::ErfOp::getOperationName() ||
         opName == math::TanhOp::getOperationName();
}

/// An elementwise generic that vectorizes along its innermost loop: all
/// loops parallel, static shapes, an identity output map (its innermost loop
/// walks the output contiguously), inputs read through projected
/// permutations (broadcasts such as a bias), and a body of plain arithmetic
/// (no tensor.extract gathers, no linalg.index).
/// Whether the vectorizer takes `op`'s body: no tensor.extract, index or
/// region, and no math function that would be scalarized after the vector
/// dialect is gone (exp, erf and tanh on f32 become polynomials at the end
/// of this pass: isApproximated).
bool hasVectorizableBody(linalg::GenericOp op) {
  bool plain = true;
  op.getBody()->walk([&](Operation *inner) {
    if (isa<tensor::ExtractOp, linalg::IndexOp>(inner) || inner->getNumRegions() != 0)
      plain = false;
    if (inner->getDialect() && inner->getDialect()->getNamespace() == "math" &&
        !isa<math::SqrtOp, math::AbsFOp, math::FmaOp, math::LogOp, math::FloorOp,
             math::CeilOp, math::RoundEvenOp, math::TruncOp, math::CopySignOp,
             math::PowFOp>(inner) &&
        !(isApproximated(inner->getName().getStringRef()) &&
          getElementTypeOrSelf(inner->getResult(0).getType()).isF32()))
      plain = false;
  });
  return plain;
}

bool isVectorizableElementwise(linalg::GenericOp op) {
  if (op->hasAttr(kIm2ColAttr) || op.getNumLoops() == 0 ||
      op.getNumLoops() != op.getNumParallelLoops() || !op.hasPureTensorSemantics() ||
      !hasStaticShapes(op) || linalg::isaContractionOpInterface(op))
    return false;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (!op.getMatchingIndexingMap(&init).isIdentity())
      return false;
  for (OpOperand *input : op.getDpsInputOperands())
    if (!op.getMatchingIndexingMap(input).isProjectedPermutation())
      return false;
  return !hasSubByteOperands(op) && hasVectorizableBody(op);
}

/// Whether `op` accumulates into floats or 32-bit integers from operands of
/// a byte or more: the contractions this file register-tiles and
/// vectorizes. Integer contractions (kiln.matmul_integer, kiln.conv_integer)
/// widen their 8-bit operands to i32 and multiply-add in vector registers
/// like floats do.
bool hasRegisterAccumulator(linalg::LinalgOp op) {
  // (Not sub-byte operands: a vector of i4 is packed, their memory is not.)
  Type elem = getElementTypeOrSelf(op.getDpsInits()[0].getType());
  return (isa<FloatType>(elem) || elem.isInteger(32)) && !hasSubByteOperands(op);
}


/// Canonicalizes the loops and slices of peeled tiles so that full tiles
/// have static shapes, and gives each op the static operands that reach it
/// through static -> dynamic casts, so that it vectorizes.
LogicalResult makeTilesStatic(func::FuncOp func, RewriterBase &rewriter) {
  MLIRContext *ctx = func.getContext();
  {
    RewritePatternSet patterns(ctx);
    scf::ForOp::getCanonicalizationPatterns(patterns, ctx);
    affine::AffineMinOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExtractSliceOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::populateFoldTensorEmptyPatterns(patterns);
    tensor::EmptyOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CastOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return failure();
  }
  SmallVector<linalg::LinalgOp> casted;
  func.walk([&](linalg::LinalgOp op) {
    if (llvm::any_of(op->getOperands(), [](Value v) {
          auto cast = v.getDefiningOp<tensor::CastOp>();
          return cast && tensor::canFoldIntoConsumerOp(cast);
        }))
      casted.push_back(op);
  });
  for (linalg::LinalgOp op : casted) {
    SmallVector<Value> operands;
    for (Value v : op->getOperands()) {
      auto cast = v.getDefiningOp<tensor::CastOp>();
      operands.push_back(cast && tensor::canFoldIntoConsumerOp(cast) ? cast.getSource() : v);
    }
    SmallVector<Type> resultTypes;
    for (OpOperand &init : op.getDpsInitsMutable())
      resultTypes.push_back(operands[init.getOperandNumber()].getType());
    rewriter.setInsertionPoint(op);
    Operation *folded = mlir::clone(rewriter, op.getOperation(), resultTypes, operands);
    SmallVector<Value> replacements;
    for (auto [old, now] : llvm::zip(op->getResults(), folded->getResults()))
      replacements.push_back(
          old.getType() == now.getType()
              ? Value(now)
              : Value(tensor::CastOp::create(rewriter, op.getLoc(), old.getType(), now)));
    rewriter.replaceOp(op, replacements);
  }
  return success();
}

/// Makes the column tile `tile` of a contraction read its right-hand block
/// (the input indexed by n and not by m) from a contiguous copy.
void packRightHandPanel(RewriterBase &rewriter, linalg::LinalgOp tile) {
  FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(tile);
  if (failed(dims) || dims->n.empty())
    return;
  unsigned nDim = dims->n.back();
  for (OpOperand *input : tile.getDpsInputOperands()) {
    AffineMap map = tile.getMatchingIndexingMap(input);
    if (!map.isFunctionOfDim(nDim) ||
        llvm::any_of(dims->m, [&](unsigned d) { return map.isFunctionOfDim(d); }))
      continue;
    rewriter.setInsertionPoint(tile);
    Location loc = tile.getLoc();
    Value panel = input->get();
    Value empty = tensor::EmptyOp::create(rewriter, loc,
                                          tensor::getMixedSizes(rewriter, loc, panel),
                                          getElementTypeOrSelf(panel.getType()));
    // A static panel is copied a row (its innermost nr elements) at a time
    // with vector reads and writes: as a linalg.copy (or an identity
    // generic, which folds to one), it became scalar moves, a column at a
    // time.
    auto type = cast<RankedTensorType>(panel.getType());
    if (!type.hasStaticShape() || type.getRank() < 2) {
      Value packed = linalg::CopyOp::create(rewriter, loc, panel, empty).getResult(0);
      rewriter.modifyOpInPlace(tile, [&] { input->set(packed); });
      continue;
    }
    auto cst = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(rewriter, loc, v); };
    ArrayRef<int64_t> shape = type.getShape();
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t extent : shape.drop_back()) {
      lbs.push_back(cst(0));
      ubs.push_back(cst(extent));
      steps.push_back(cst(1));
    }
    auto rowType = VectorType::get({shape.back()}, type.getElementType());
    Value padding = ub::PoisonOp::create(rewriter, loc, type.getElementType());
    scf::LoopNest nest = scf::buildLoopNest(
        rewriter, loc, lbs, ubs, steps, ValueRange{empty},
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange iters) -> scf::ValueVector {
          SmallVector<Value> indices(ivs);
          indices.push_back(arith::ConstantIndexOp::create(b, l, 0));
          SmallVector<bool> inBounds = {true};
          Value row = vector::TransferReadOp::create(b, l, rowType, panel, indices, padding,
                                                     ArrayRef<bool>(inBounds));
          Value written =
              vector::TransferWriteOp::create(b, l, row, iters[0], indices, ArrayRef<bool>(inBounds))
                  .getResult();
          return {written};
        });
    rewriter.modifyOpInPlace(tile, [&] { input->set(nest.results.front()); });
  }
}

/// Marks the column tiles of a contraction whose right-hand panel is packed:
/// the tiles of their remaining loops, applied once their shapes are static.
constexpr StringLiteral kPackedTileAttr = "kiln.packed_tile";

/// Marks the ops of an epilogue tile (kiln-cpu-vectorize-gemm's
/// fuseEpilogues): a contraction, its accumulator's initial value and the
/// elementwise op that consumes it, tiled together to one register tile.
constexpr StringLiteral kFusedTileAttr = "kiln.fused_tile";

/// Whether `op` is part of an epilogue tile.
static bool isFusedTile(Operation *op) { return op->hasAttr(kFusedTileAttr); }

/// The rows of a contraction (the product of its m extents), or kDynamic.
static int64_t rowCount(ArrayRef<int64_t> ranges, const linalg::ContractionDimensions &dims) {
  int64_t rows = 1;
  for (unsigned d : dims.m) {
    if (ranges[d] == ShapedType::kDynamic)
      return ShapedType::kDynamic;
    rows *= ranges[d];
  }
  return rows;
}

/// The register tile of the pass: its options.
/// Whether every input of `op` has 8-bit elements: the contractions the
/// dot-product instructions take whole.
static bool hasByteInputs(linalg::LinalgOp op) {
  return llvm::all_of(op.getDpsInputs(), [](Value v) {
    return getElementTypeOrSelf(v.getType()).isInteger(8);
  });
}

struct RegisterTile {
  int64_t mr, nr, kc, kcCache;
  bool packPanels;
  int64_t lanes; // 32-bit lanes of a vector register
  int64_t wideMr = 0, wideNr = 0; // the wide tile (0: none)
  bool wideBytes = false; // 8-bit contractions take the wide tile too

  /// The register tile of `op`: the wide one (fewer rows, more columns)
  /// for a contraction of operands of 16 bits or more with at least
  /// `wideNr` columns and `mr` rows, else mr x nr. Each k step of a tile
  /// loads its columns' vectors and broadcasts one element per row, and
  /// x86 cores issue two or three loads per cycle against two FMAs: 16 x 16
  /// (1 vector and 16 broadcasts per 16 FMAs) measured at 65-70% of the FMA
  /// peak in L1, 8 x 32 (2 and 8 per 16) at 86-88% (an AVX-512 Xeon,
  /// 2026-12-04). Tiles of two 8-bit operands take it too with VNNI
  /// (`wideBytes`: two vpdpbusd per broadcast row, 8 broadcasts and 2
  /// column loads per 16 instructions where 16 x 16 needs 16 and 1), when
  /// the workgroup has enough rows that their columns are interleaved once
  /// for all its row tiles (interleaveDotProductColumns); other 8-bit tiles
  /// keep 16 columns, one dot-product instruction (IntegerDot.h). Narrow
  /// products (Winograd's 16 tiles of a 7x7 image) and single rows keep
  /// mr x nr.
  RegisterTile forContraction(linalg::LinalgOp op,
                              const linalg::ContractionDimensions &dims) const {
    RegisterTile t = *this;
    if (wideNr <= 0 || wideMr <= 0)
      return t;
    // (8-bit operands, both of them, on a VNNI machine: vpdpbusd tiles.)
    bool bytes = hasByteInputs(op);
    bool narrow = llvm::any_of(op->getOperandTypes(), [&](Type type) {
      Type elem = getElementTypeOrSelf(type);
      if (wideBytes && bytes && elem.isInteger(8))
        return false;
      return !elem.isIntOrFloat() || elem.getIntOrFloatBitWidth() < 16;
    });
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t rows = rowCount(ranges, dims);
    int64_t columns = ranges[dims.n.back()];
    // (The last column tile must be whole registers or a power of two
    // lanes, or one register and those: a 7x7 image's 49 columns as 32 +
    // 17 made tiles of 17 lanes, which LLVM splits element by element, and
    // ResNet-50 took 1.25x as long; 196 as 6 x 32 + 4 is fine; 49 is fine
    // since splitOddColumnTiles cuts the 17 into 16 + a one-column tile:
    // ResNet-50's layer4 0.86x the time of 16 x 16 tiles, MobileNet-v2's
    // last 1x1 convolution 0.92x.)
    int64_t rest = columns == ShapedType::kDynamic ? 0 : columns % wideNr;
    auto wholeOrPower = [&](int64_t n) {
      return n % lanes == 0 || (n < lanes && llvm::isPowerOf2_64(n));
    };
    bool wholeLast = wholeOrPower(rest) || (rest > lanes && rest < 2 * lanes &&
                                            (rest % lanes == 1 || wholeOrPower(rest % lanes)));
    // (A byte tile of 32 columns interleaves twice the columns per k step
    // of 16 rows: it pays only where the columns are interleaved once for
    // enough row tiles, interleaveDotProductColumns; and only where most
    // columns are in whole 32-column tiles: a 7x7 image's 49 columns as
    // 32 + 16 + 1 made ResNet-50's INT8 layer4 3x3 convolutions 1.3x
    // slower than 16 x 16 tiles, 56 as 32 + 16 + 8 1.07x.)
    if (bytes && (rows == ShapedType::kDynamic || columns == ShapedType::kDynamic ||
                  rows < cpu::kMinInterleavedRereads * wideMr ||
                  4 * (columns / wideNr) * wideNr < 3 * columns))
      return t;
    if (narrow || rows == ShapedType::kDynamic || rows < mr ||
        columns == ShapedType::kDynamic || columns < wideNr || !wholeLast)
      return t;
    t.mr = wideMr;
    t.nr = wideNr;
    return t;
  }

  /// Accumulator elements of the larger of the two tiles.
  int64_t tilePoints() const { return std::max(mr * nr, wideMr * wideNr); }
};

/// The float and i32 contractions of `func` (not the im2col gathers).
static SmallVector<linalg::LinalgOp> registerContractions(func::FuncOp func) {
  SmallVector<linalg::LinalgOp> contractions;
  func.walk([&](linalg::LinalgOp op) {
    if (op->hasAttr(kIm2ColAttr) || !linalg::isaContractionOpInterface(op))
      return;
    if (!hasRegisterAccumulator(op))
      return;
    contractions.push_back(op);
  });
  return contractions;
}

static void rewriteIm2ColGathers(func::FuncOp func, IRRewriter &rewriter) {
  // im2col gathers (tiled into workgroups by now) become row copies.
  SmallVector<linalg::GenericOp> gathers;
  func.walk([&](linalg::GenericOp op) {
    if (op->hasAttr(kIm2ColAttr))
      gathers.push_back(op);
  });
  for (linalg::GenericOp gather : gathers)
    (void)rewriteIm2ColAsRowCopies(rewriter, gather);
}

/// Rewrites a static `tensor.pad` by a constant inside a workgroup (the
/// padded window of a convolution, depthwise convolution or pool) into a
/// fill of its border and one vector copy per source row (in chunks of
/// at most kPadChunk lanes). Bufferized as is, the pad became a copy loop
/// that LLVM left scalar and fully unrolled: one move per element, more
/// instructions than a 3x3 depthwise convolution's nine FMAs per 16 outputs.
static void rewritePadsAsRowCopies(func::FuncOp func, IRRewriter &rewriter) {
  constexpr int64_t kPadChunk = 64;
  SmallVector<tensor::PadOp> pads;
  func.walk([&](tensor::PadOp pad) {
    if (pad->getParentOfType<scf::ForallOp>() && pad.getSourceType().hasStaticShape() &&
        pad.getResultType().hasStaticShape() && pad.getSourceType().getRank() >= 1 &&
        pad.getConstantPaddingValue() && !pad.getNofold() &&
        pad.getSourceType().getElementType().isIntOrFloat() &&
        pad.getSourceType().getElementType().getIntOrFloatBitWidth() >= 8 &&
        llvm::all_of(pad.getStaticLow(), [](int64_t v) { return v >= 0; }) &&
        llvm::all_of(pad.getStaticHigh(), [](int64_t v) { return v >= 0; }))
      pads.push_back(pad);
  });
  for (tensor::PadOp pad : pads) {
    Location loc = pad.getLoc();
    rewriter.setInsertionPoint(pad);
    RankedTensorType srcType = pad.getSourceType(), dstType = pad.getResultType();
    int64_t rank = srcType.getRank();
    Value filled = tensor::EmptyOp::create(rewriter, loc, dstType.getShape(),
                                           dstType.getElementType());
    if (srcType.getNumElements() == 0) {
      rewriter.replaceOp(pad, linalg::FillOp::create(rewriter, loc, pad.getConstantPaddingValue(),
                                                     ValueRange{filled})
                                  .getResult(0));
      continue;
    }
    // Only the border is filled: a slab per padded side (a memset of the
    // whole tile took a seventh of a stride-2 depthwise convolution).
    for (int64_t d = 0; d < srcType.getRank(); ++d)
      for (bool high : {false, true}) {
        int64_t size = high ? pad.getStaticHigh()[d] : pad.getStaticLow()[d];
        if (size == 0)
          continue;
        SmallVector<int64_t> offsets(srcType.getRank(), 0), sizes(dstType.getShape());
        offsets[d] = high ? pad.getStaticLow()[d] + srcType.getDimSize(d) : 0;
        sizes[d] = size;
        // (Filled through a slice of the tile itself, so that bufferization
        // writes in place.)
        SmallVector<OpFoldResult> at = getAsIndexOpFoldResult(rewriter.getContext(), offsets),
                                  extent = getAsIndexOpFoldResult(rewriter.getContext(), sizes),
                                  unit(sizes.size(), rewriter.getIndexAttr(1));
        Value slice = tensor::ExtractSliceOp::create(rewriter, loc, filled, at, extent, unit);
        Value slab = linalg::FillOp::create(rewriter, loc, pad.getConstantPaddingValue(),
                                            ValueRange{slice})
                         .getResult(0);
        filled = tensor::InsertSliceOp::create(rewriter, loc, slab, filled, at, extent, unit);
      }
    auto cst = [&](OpBuilder &b, int64_t v) -> Value {
      return arith::ConstantIndexOp::create(b, loc, v);
    };
    // A loop per outer dimension of more than one element.
    SmallVector<Value> lbs, ubs, steps;
    SmallVector<int64_t> looped;
    Value zero = cst(rewriter, 0), one = cst(rewriter, 1);
    for (int64_t d = 0; d + 1 < rank; ++d)
      if (srcType.getDimSize(d) != 1) {
        lbs.push_back(zero);
        ubs.push_back(cst(rewriter, srcType.getDimSize(d)));
        steps.push_back(one);
        looped.push_back(d);
      }
    int64_t width = srcType.getDimSize(rank - 1);
    ArrayRef<int64_t> low = pad.getStaticLow();
    Value padding = pad.getConstantPaddingValue();
    scf::LoopNest nest = scf::buildLoopNest(
        rewriter, loc, lbs, ubs, steps, ValueRange{filled},
        [&](OpBuilder &b, Location l, ValueRange loopIvs, ValueRange iters) -> scf::ValueVector {
          Value acc = iters[0];
          SmallVector<Value> ivs(rank - 1, zero);
          for (auto [d, iv] : llvm::zip(looped, loopIvs))
            ivs[d] = iv;
          for (int64_t start = 0; start < width; start += kPadChunk) {
            int64_t lanes = std::min(kPadChunk, width - start);
            SmallVector<Value> src(ivs.begin(), ivs.end()), dst;
            src.push_back(cst(b, start));
            for (auto [d, iv] : llvm::enumerate(ivs))
              dst.push_back(low[d] ? arith::AddIOp::create(b, l, iv, cst(b, low[d])).getResult()
                                   : iv);
            dst.push_back(cst(b, start + low[rank - 1]));
            SmallVector<bool> inBounds = {true};
            AffineMap minor = b.getMultiDimIdentityMap(rank).getMinorSubMap(1);
            auto vectorType = VectorType::get({lanes}, srcType.getElementType());
            Value row = vector::TransferReadOp::create(b, l, vectorType, pad.getSource(), src,
                                                       padding, minor, ArrayRef<bool>(inBounds));
            acc = vector::TransferWriteOp::create(b, l, row, acc, dst, minor,
                                                  ArrayRef<bool>(inBounds))
                      .getResult();
          }
          return {acc};
        });
    rewriter.replaceOp(pad, nest.results);
  }
}

/// Output rows of a window op's register tile (tileDepthwiseTaps).
constexpr int64_t kTapRows = 4;

/// A window op inside a workgroup whose accumulator fits a vector register
/// (float, or i32 from 8-bit integer operands): the ones register-tiled per
/// tap.
static bool isRegisterWindow(linalg::LinalgOp op) {
  Type result = getElementTypeOrSelf(op->getResult(0).getType());
  return cpu::isWindowOp(op) && op->getParentOfType<scf::ForallOp>() &&
         (isa<FloatType>(result) || result.isSignlessInteger(32));
}

static void tileDepthwiseTaps(func::FuncOp func, IRRewriter &rewriter, int64_t nr) {
  // Depthwise convolutions and pooling: one output row segment of `nr`
  // pixels per window tap, so that each tap is a vector FMA of a broadcast
  // weight and an input row segment (a vector max for max pooling) after
  // the unit dimensions are dropped below. Integer depthwise convolutions
  // (8-bit operands into i32, kiln.conv_integer) too: each tap is then a
  // vector multiply-add of sign-extended bytes.
  SmallVector<linalg::LinalgOp> windows;
  func.walk([&](linalg::LinalgOp op) {
    if (isRegisterWindow(op))
      windows.push_back(op);
  });
  for (linalg::LinalgOp op : windows) {
    // Every loop by 1 but one, by nr: the output width, so that each tap
    // reads a row segment of its input: contiguous when the window moves
    // by 1 along the width (the stride along the height does not matter:
    // stride (2, 1), as text recognizers downsample, still reads whole row
    // segments), every s-th element of a contiguous span when it moves by
    // s (ReadStridedRowsContiguously: one shuffle). (Before that pattern,
    // strided depthwise windows were tiled along the channels, whose
    // gathers were still cheaper than a row gather per tap; along the
    // width, MobileNet-v2's stride-2 depthwise layers take 0.5x the time.)
    // Several output rows per tile (kTapRows): each tap's multiply-add
    // (or max) then feeds that many independent accumulators. With one
    // row, the 9 taps of a 3x3 window were a chain of dependent adds, 4
    // cycles each, for 16 outputs.
    SmallVector<int64_t> tiles(op.getNumLoops(), 1);
    AffineMap outMap = op.getMatchingIndexingMap(&op.getDpsInitsMutable()[0]);
    unsigned width = outMap.getNumResults() - 1;
    auto dim = dyn_cast<AffineDimExpr>(outMap.getResult(width));
    auto rowDim = dyn_cast<AffineDimExpr>(outMap.getResult(width - 1));
    if (!dim || !rowDim)
      continue;
    tiles[dim.getPosition()] = nr;
    tiles[rowDim.getPosition()] = kTapRows;
    // (A grouped convolution: several output channels, each tap's input
    // rows read once for all of them.)
    if (int64_t channels = cpu::groupedChannelTile(op); channels > 1)
      if (auto channelDim = dyn_cast<AffineDimExpr>(outMap.getResult(width - 2)))
        tiles[channelDim.getPosition()] = channels;
    tileAndPeel(rewriter, cast<TilingInterface>(op.getOperation()), tiles);
  }
  // (Pools outside a workgroup loop stay named ops, as before.)
  SmallVector<linalg::LinalgOp> tiled;
  func.walk([&](linalg::LinalgOp op) {
    if (isa<linalg::DepthwiseConv2DNchwChwOp>(op) ||
        (cpu::isWindowOp(op) && op->getParentOfType<scf::ForallOp>()))
      tiled.push_back(op);
  });
  for (linalg::LinalgOp op : tiled) {
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> generic = linalg::generalizeNamedOp(rewriter, op);
    // A tap's multiply and add may fuse into one FMA (one rounding instead
    // of two: results move within rounding).
    if (succeeded(generic))
      generic->getBody()->walk([](arith::ArithFastMathInterface math) {
        if (isa<arith::MulFOp, arith::AddFOp>(math.getOperation()))
          math->setAttr(math.getFastMathAttrName(),
                        arith::FastMathFlagsAttr::get(math->getContext(),
                                                      arith::FastMathFlags::contract));
      });
  }
}

static void blockReductions(SmallVectorImpl<linalg::LinalgOp> &contractions,
                            IRRewriter &rewriter, const RegisterTile &t) {
  MLIRContext *ctx = rewriter.getContext();
  // Cache blocking: a long reduction is split into blocks of `kcCache`,
  // the outermost loop, so that the left-hand block of a workgroup (its
  // rows x kcCache) stays in L2 and a register-tile column of the
  // right-hand block (kcCache x nr) in L1 while the tiles below walk
  // them; without it every column tile streams all the workgroup's
  // weights again (ResNet-50's layer4: 2.4 MB per tile, 4 tiles).
  for (linalg::LinalgOp &op : contractions) {
    FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
    if (failed(dims) || dims->k.size() != 1)
      continue;
    unsigned kDim = dims->k.front();
    int64_t kRange = op.getStaticLoopRanges()[kDim];
    int64_t block = chooseCacheBlock(kRange, t.kcCache, t.kc);
    if (!block)
      continue;
    SmallVector<int64_t> tiles(op.getNumLoops(), 0);
    tiles[kDim] = block;
    rewriter.setInsertionPoint(op);
    scf::SCFTilingOptions options;
    options.setTileSizes(getAsIndexOpFoldResult(ctx, tiles));
    auto tiled = scf::tileUsingSCF(rewriter, cast<TilingInterface>(op.getOperation()), options);
    if (failed(tiled) || tiled->tiledOps.size() != 1)
      continue;
    rewriter.replaceOp(op, tiled->replacements);
    op = cast<linalg::LinalgOp>(tiled->tiledOps.front());
  }
}

/// Whether `op` is in a workgroup's body: inside the workgroup loop, or in a
/// dispatch of one workgroup (which has none).
static bool inWorkgroup(Operation *op) {
  if (op->getParentOfType<scf::ForallOp>())
    return true;
  auto func = op->getParentOfType<func::FuncOp>();
  auto count = func ? func->getAttrOfType<IntegerAttr>(kWorkgroupCountAttr) : IntegerAttr();
  return count && count.getInt() == 1;
}

/// Marks the ops of a row reduction tiled by tileRowReductions: the partial
/// reductions (one lane per `nr`-th element) and their merge.
constexpr StringLiteral kRowReductionAttr = "kiln.row_reduction";

/// Whether `op` reduces its innermost loop, which its inputs read along
/// their contiguous dimension, into one value per row (softmax's maximum
/// and sum of exponentials, a layer norm's mean and variance), with a body
/// the vectorizer takes.
static bool isRowReduction(linalg::GenericOp op, int64_t nr) {
  if (!inWorkgroup(op) || !hasStaticShapes(op) ||
      !op.hasPureTensorSemantics() || op.getNumDpsInits() != 1 || op.getNumLoops() < 2 ||
      op.getNumReductionLoops() != 1 || op->hasAttr(kIm2ColAttr) ||
      linalg::isaContractionOpInterface(op) || hasSubByteOperands(op))
    return false;
  unsigned last = op.getNumLoops() - 1;
  if (op.getIteratorTypesArray()[last] != utils::IteratorType::reduction)
    return false;
  int64_t range = op.getStaticLoopRanges()[last];
  if (range < 2 * nr ||
      !getElementTypeOrSelf(op.getDpsInits()[0].getType()).isF32())
    return false;
  AffineMap init = op.getMatchingIndexingMap(&op.getDpsInitsMutable()[0]);
  if (init != AffineMap::getMultiDimIdentityMap(op.getNumLoops(), op.getContext())
                  .getMajorSubMap(last))
    return false;
  for (OpOperand *input : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(input);
    if (!map.isProjectedPermutation() ||
        (map.isFunctionOfDim(last) && map.getResults().back() != getAffineDimExpr(last, op.getContext())))
      return false;
  }
  SmallVector<Operation *> combiners;
  if (!matchReduction(op.getRegionOutputArgs(), 0, combiners) || combiners.size() != 1 ||
      !isa<arith::AddFOp, arith::MaximumFOp, arith::MinimumFOp, arith::MaxNumFOp,
           arith::MinNumFOp>(combiners.front()))
    return false;
  return hasVectorizableBody(op);
}

/// A `linalg.reduce` over the trailing dimensions of its input (a global
/// average pool: the mean over H and W) becomes a generic over one trailing
/// dimension (H * W, the input collapsed), which tileRowReductions takes:
/// as a named op over two dimensions it became a scalar loop nest
/// (EfficientNet-B0's squeeze-and-excitation pools, 11% of its time at
/// 3 GFLOP/s). A reduction over every dimension (the range of a tensor that
/// dynamic quantization computes at run time) becomes one row, [1, N]: left
/// alone it was a scalar loop with a NaN check per element (0.29 ms per
/// activation of ResNet-50, 60% of its dynamically quantized run).
static void collapseTrailingReductions(func::FuncOp func, IRRewriter &rewriter) {
  SmallVector<linalg::ReduceOp> reductions;
  func.walk([&](linalg::ReduceOp op) {
    if (inWorkgroup(op) && op.getNumDpsInputs() == 1 && op.getNumDpsInits() == 1 &&
        op.hasPureTensorSemantics())
      reductions.push_back(op);
  });
  for (linalg::ReduceOp op : reductions) {
    auto type = dyn_cast<RankedTensorType>(op.getInputs()[0].getType());
    ArrayRef<int64_t> dims = op.getDimensions();
    if (!type || !type.hasStaticShape() || dims.empty())
      continue;
    int64_t rank = type.getRank(), count = dims.size();
    bool trailing = llvm::all_of(llvm::enumerate(dims), [&](auto d) {
      return d.value() == rank - count + static_cast<int64_t>(d.index());
    });
    if (!trailing)
      continue;
    rewriter.setInsertionPoint(op);
    Location loc = op.getLoc();
    Value input = op.getInputs()[0], init = op.getInits()[0];
    bool whole = count == rank; // one row of every element
    if (whole) {
      if (rank > 1)
        input = tensor::CollapseShapeOp::create(
            rewriter, loc, input,
            ArrayRef<ReassociationIndices>{llvm::to_vector(llvm::seq<int64_t>(0, rank))});
      auto rowType = RankedTensorType::get({1, type.getNumElements()}, type.getElementType());
      input = tensor::ExpandShapeOp::create(rewriter, loc, rowType, input,
                                            ArrayRef<ReassociationIndices>{{0, 1}});
      auto initType = cast<RankedTensorType>(init.getType());
      init = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get({1}, initType.getElementType()), init,
          ArrayRef<ReassociationIndices>{});
      rank = 2;
      count = 1;
    } else if (count > 1) {
      SmallVector<ReassociationIndices> groups;
      for (int64_t d = 0; d < rank - count; ++d)
        groups.push_back({d});
      groups.push_back(llvm::to_vector(llvm::seq<int64_t>(rank - count, rank)));
      input = tensor::CollapseShapeOp::create(rewriter, loc, input, groups);
    }
    auto reduced = linalg::ReduceOp::create(
        rewriter, loc, ValueRange{input}, ValueRange{init},
        ArrayRef<int64_t>{rank - count},
        [&](OpBuilder &b, Location l, ValueRange args) {
          IRMapping mapping;
          mapping.map(op.getCombiner().getArguments(), args);
          for (Operation &inner : op.getCombiner().front())
            b.clone(inner, mapping);
        });
    FailureOr<linalg::GenericOp> generic = linalg::generalizeNamedOp(
        rewriter, cast<linalg::LinalgOp>(reduced.getOperation()));
    Value result = succeeded(generic) ? (*generic)->getResult(0) : reduced->getResult(0);
    if (whole)
      result = tensor::CollapseShapeOp::create(rewriter, loc, op.getResult(0).getType(), result,
                                               ArrayRef<ReassociationIndices>{});
    rewriter.replaceOp(op, result);
  }
}

/// Row reductions along the contiguous innermost dimension, by rows: left
/// to LLVM, each row was a scalar loop (with softmax, a scalar polynomial
/// exponential per element: a BERT encoder's softmax over 4 x 128 x 128
/// scores took 0.32 ms, 1 GFLOP/s). Each row is instead reduced into `nr`
/// partial values, lane i taking elements i, i + nr, ... (one vector op per
/// `nr` elements; the partial sums start from the combiner's identity),
/// and the partial values into the row's result once, at its end. (The
/// order of a sum changes: results move within rounding.)
static void tileRowReductions(func::FuncOp func, IRRewriter &rewriter, int64_t nr) {
  SmallVector<linalg::GenericOp> reductions;
  func.walk([&](linalg::GenericOp op) {
    if (isRowReduction(op, nr))
      reductions.push_back(op);
  });
  MLIRContext *ctx = rewriter.getContext();
  for (linalg::GenericOp op : reductions) {
    unsigned last = op.getNumLoops() - 1;
    // One row at a time.
    SmallVector<int64_t> rows(op.getNumLoops(), 1);
    rows[last] = 0;
    scf::SCFTilingOptions rowTiling;
    rowTiling.setTileSizes(getAsIndexOpFoldResult(ctx, rows));
    rewriter.setInsertionPoint(op);
    FailureOr<scf::SCFTilingResult> perRow =
        scf::tileUsingSCF(rewriter, cast<TilingInterface>(op.getOperation()), rowTiling);
    if (failed(perRow) || perRow->tiledOps.size() != 1)
      continue;
    rewriter.replaceOp(op, perRow->replacements);
    Operation *row = perRow->tiledOps.front();
    // Its elements into nr partial values.
    SmallVector<int64_t> lanes(op.getNumLoops(), 0);
    lanes[last] = nr;
    scf::SCFTilingOptions partial;
    partial.setTileSizes(getAsIndexOpFoldResult(ctx, lanes));
    partial.setReductionTilingStrategy(ReductionTilingStrategy::PartialReductionOuterReduction);
    partial.setReductionDims({last});
    rewriter.setInsertionPoint(row);
    FailureOr<scf::SCFTilingResult> split =
        scf::tileUsingSCF(rewriter, cast<TilingInterface>(row), partial);
    if (failed(split))
      continue;
    rewriter.replaceOp(row, split->replacements);
    // A row that is not a multiple of nr: its last partial tile peeled,
    // static, reducing into the first lanes of the partial values.
    for (LoopLikeOpInterface loop : split->loops)
      if (auto forOp = dyn_cast<scf::ForOp>(loop.getOperation())) {
        scf::ForOp rest;
        if (succeeded(scf::peelForLoopAndSimplifyBounds(rewriter, forOp, rest)) && rest)
          rest->walk([&](linalg::LinalgOp tiled) {
            tiled->setAttr(kRowReductionAttr, rewriter.getUnitAttr());
          });
      }
    for (Operation *tiled : split->tiledOps)
      tiled->setAttr(kRowReductionAttr, rewriter.getUnitAttr());
    for (Operation *merge : split->mergeOps)
      merge->setAttr(kRowReductionAttr, rewriter.getUnitAttr());
    for (Value init : split->initialValues)
      if (Operation *def = init.getDefiningOp())
        def->setAttr(kRowReductionAttr, rewriter.getUnitAttr());
  }
}

static void tileElementwiseRows(func::FuncOp func, IRRewriter &rewriter, int64_t nr) {
  // Elementwise ops (a bias broadcast into a GEMM's accumulator, ReLU, a
  // residual add): rows of `nr` along the innermost (contiguous) output
  // dimension, vectorized below. LLVM left them scalar, fully unrolled.
  // (Transposes are generics by now: kiln-cpu-distribute generalized them
  // to merge them into their readers.)
  SmallVector<linalg::GenericOp> elementwise;
  func.walk([&](linalg::GenericOp op) {
    if (isVectorizableElementwise(op) && !isFusedTile(op) && !op->hasAttr(kRowReductionAttr))
      elementwise.push_back(op);
  });
  for (linalg::GenericOp op : elementwise) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<int64_t> tiles(ranges.size(), 1);
    tiles.back() = ranges.back() <= nr ? 0 : nr;
    // An input read transposed (a permutation whose contiguous dimension is
    // another loop than the innermost: NHWC -> NCHW around ConvNeXt's MLPs)
    // gets nr x nr tiles: its read becomes nr rows of nr contiguous elements
    // and a register transpose (lowerVectorTiles), where rows along the
    // output read one element per line (a gather).
    std::optional<unsigned> contiguous = cpu::transposedReadLoop(op);
    if (contiguous && ranges.back() >= nr && ranges[*contiguous] != ShapedType::kDynamic &&
        ranges[*contiguous] >= nr)
      tiles[*contiguous] = nr;
    tileAndPeel(rewriter, cast<TilingInterface>(op.getOperation()), tiles);
  }
}

/// The elementwise op that takes a contraction's result into a register
/// tile with it: the contraction's only user, reading it through one
/// operand with the identity map, one output, vectorizable, with loops that
/// are the contraction's output dimensions (none when there is no such op).
static linalg::GenericOp epilogueOf(Operation *producer) {
  if (producer->getNumResults() != 1 || !producer->getResult(0).hasOneUse())
    return {};
  OpOperand &use = *producer->getResult(0).getUses().begin();
  auto consumer = dyn_cast<linalg::GenericOp>(use.getOwner());
  if (!consumer || consumer.getNumDpsInits() != 1 || !isVectorizableElementwise(consumer) ||
      consumer.isDpsInit(&use) || !consumer.getMatchingIndexingMap(&use).isIdentity())
    return {};
  return consumer;
}

/// The chain of elementwise ops that ends a contraction's dispatch, each
/// the only user of the one before (a residual add, then a ReLU): the
/// epilogue of its register tile, first op first.
static SmallVector<linalg::GenericOp> epilogueChainOf(linalg::LinalgOp contraction) {
  SmallVector<linalg::GenericOp> chain;
  Operation *last = contraction.getOperation();
  while (linalg::GenericOp next = epilogueOf(last)) {
    if (!chain.empty() && next.getNumLoops() != chain.front().getNumLoops())
      break;
    chain.push_back(next);
    last = next.getOperation();
  }
  return chain;
}

/// Tiles the last op of an epilogue chain by `tiles` (in `order`, none: loop
/// order) and fuses into the tile the chain, the producer it ends (a
/// contraction or window op) and, when given, the producer's initial value
/// (`init`): one register tile of all of them. With no chain, the producer
/// itself is tiled (`tiles` over its loops) with its initial value.
static FailureOr<scf::SCFTileAndFuseResult>
tileEpilogueChain(RewriterBase &rewriter, ArrayRef<linalg::GenericOp> chain, Operation *producer,
                  Operation *init, ArrayRef<int64_t> tiles, ArrayRef<int64_t> order = {}) {
  scf::SCFTilingOptions tiling;
  tiling.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), tiles));
  if (!order.empty())
    tiling.setInterchange(order);
  scf::SCFTileAndFuseOptions options;
  options.setTilingOptions(tiling);
  options.setFusionControlFn(
      [&](tensor::ExtractSliceOp, OpResult result,
          bool) -> std::optional<scf::SCFTileAndFuseOptions::ControlFnResult> {
        Operation *owner = result.getOwner();
        if (owner == producer || (init && owner == init) || llvm::is_contained(chain, owner))
          return scf::SCFTileAndFuseOptions::ControlFnResult{};
        return std::nullopt;
      });
  Operation *consumer = chain.empty() ? producer : static_cast<Operation *>(chain.back());
  rewriter.setInsertionPoint(consumer);
  FailureOr<scf::SCFTileAndFuseResult> result = scf::tileConsumerAndFuseProducersUsingSCF(
      rewriter, cast<TilingInterface>(consumer), options);
  if (failed(result) ||
      !result->fusedProducers.contains(chain.empty() ? init : producer))
    return failure();
  return result;
}

/// Replaces the chain of a tiled epilogue (tileEpilogueChain) by the tile
/// loops' results, erases what is left unused and peels the tile loops,
/// innermost first: the partial iteration of an outer loop then clones the
/// inner loop already peeled, so every tile is static (outer first, a
/// partial column's row loop kept dynamic tiles, which stay scalar).
static void commitEpilogueTile(RewriterBase &rewriter, ArrayRef<linalg::GenericOp> chain,
                               Operation *producer, Operation *init,
                               const scf::SCFTileAndFuseResult &result) {
  Operation *consumer = chain.empty() ? producer : static_cast<Operation *>(chain.back());
  for (OpResult r : consumer->getResults())
    rewriter.replaceAllUsesWith(r, result.replacements.lookup(r));
  for (linalg::GenericOp e : llvm::reverse(chain))
    if (e->use_empty())
      rewriter.eraseOp(e);
  if (producer->use_empty())
    rewriter.eraseOp(producer);
  if (init && init->use_empty())
    rewriter.eraseOp(init);
  for (LoopLikeOpInterface loop : llvm::reverse(result.loops))
    if (auto forOp = dyn_cast<scf::ForOp>(loop.getOperation())) {
      scf::ForOp partial;
      (void)scf::peelForLoopAndSimplifyBounds(rewriter, forOp, partial);
    }
}

/// Marks the loops over weight panels of panelsToMatmuls (each step one
/// panel's whole product, not a block of its reduction).
constexpr StringLiteral kPanelLoopAttr = "kiln.panel_loop";

/// Whether `op` is inside a loop of the workgroup other than a panel loop:
/// a block of a cache-blocked reduction (blockReductions).
static bool inReductionBlock(Operation *op) {
  for (auto loop = op->getParentOfType<scf::ForOp>(); loop; loop = loop->getParentOfType<scf::ForOp>())
    if (!loop->hasAttr(kPanelLoopAttr))
      return true;
  return false;
}

/// Register tiles that carry their epilogue: a contraction whose reduction
/// is not cache-blocked (blockReductions) and whose result only an
/// elementwise op reads (a bias, ReLU, the zero-point correction of an
/// integer GEMM, a requantization; or a chain of them, epilogueChainOf:
/// ResNet's residual add and ReLU, whose separate ReLU pass over the stored
/// tile cost a 1x1 convolution with 64 input channels 1.22x its time) is
/// tiled together with those ops and with the producer of its
/// accumulator's initial value (a fill, a broadcast bias) to one register
/// tile: the tile starts from the initial
/// value, accumulates over the whole reduction and applies the epilogue in
/// registers before its one store. Tiled one after the other, the
/// accumulator made three round trips through memory per tile (initial
/// value written, read and written by the k loop, read by the epilogue):
/// 45% of a 1x1 convolution with 64 input channels. The contractions it
/// tiles leave `contractions` (tileContractions tiles the rest); returns
/// whether it tiled any.
static bool fuseEpilogues(SmallVectorImpl<linalg::LinalgOp> &contractions, IRRewriter &rewriter,
                          const RegisterTile &base) {
  MLIRContext *ctx = rewriter.getContext();
  SmallVector<linalg::LinalgOp> rest;
  for (linalg::LinalgOp op : contractions) {
    rest.push_back(op);
    if (!op->getParentOfType<scf::ForallOp>() || !hasStaticShapes(op) || inReductionBlock(op))
      continue;
    SmallVector<linalg::GenericOp> chain = epilogueChainOf(op);
    linalg::GenericOp epilogue = chain.empty() ? linalg::GenericOp() : chain.back();
    FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
    Operation *init = op.getDpsInits()[0].getDefiningOp();
    bool fuseInit = init && isa<linalg::FillOp, linalg::GenericOp>(init) && init->hasOneUse() &&
                    init->getParentRegion() == op->getParentRegion();
    // (No epilogue: the contraction is tiled with its initial value alone,
    // a zero fill of an LLM head, whose workgroup tile was otherwise filled
    // in memory first and read back by every register tile.)
    if ((!epilogue && !fuseInit) || failed(dims) || dims->m.empty() || dims->n.empty() ||
        dims->k.size() != 1)
      continue;
    RegisterTile t = base.forContraction(op, *dims);
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t rows = rowCount(ranges, *dims);
    // (A matrix-vector product keeps its wide one-row tile.)
    if (rows < t.mr)
      continue;
    // The epilogue's loops are the contraction's output dimensions (without
    // one, the tile is over the contraction's own loops, its reduction
    // whole).
    AffineMap outMap = op.getMatchingIndexingMap(&op.getDpsInitsMutable()[0]);
    if (!epilogue)
      outMap = AffineMap::getMultiDimIdentityMap(op.getNumLoops(), ctx);
    if (!outMap.isProjectedPermutation() ||
        (epilogue && outMap.getNumResults() != epilogue.getNumLoops()))
      continue;
    SmallVector<int64_t> tiles(outMap.getNumResults(), 1);
    SmallVector<int64_t> batchOrder, nOrder, mOrder, kOrder;
    for (unsigned i = 0; i < outMap.getNumResults(); ++i) {
      unsigned d = outMap.getDimPosition(i);
      if (llvm::is_contained(dims->k, d)) {
        tiles[i] = 0;
        kOrder.push_back(i);
        continue;
      }
      if (llvm::is_contained(dims->m, d)) {
        tiles[i] = d == dims->m.back() ? t.mr : 1;
        mOrder.push_back(i);
      } else if (llvm::is_contained(dims->n, d)) {
        tiles[i] = d == dims->n.back() ? t.nr : 1;
        nOrder.push_back(i);
      } else {
        batchOrder.push_back(i);
      }
      if (ranges[d] <= tiles[i])
        tiles[i] = 0;
    }
    // Column tiles outside row tiles: a column block of the right-hand
    // side (k x nr) stays in L1 while the rows stream past it.
    SmallVector<int64_t> order = batchOrder;
    llvm::append_range(order, nOrder);
    llvm::append_range(order, mOrder);
    llvm::append_range(order, kOrder);

    op->setAttr(kFusedTileAttr, UnitAttr::get(ctx));
    for (linalg::GenericOp e : chain)
      e->setAttr(kFusedTileAttr, UnitAttr::get(ctx));
    if (fuseInit)
      init->setAttr(kFusedTileAttr, UnitAttr::get(ctx));

    FailureOr<scf::SCFTileAndFuseResult> result = tileEpilogueChain(
        rewriter, chain, op.getOperation(), fuseInit ? init : nullptr, tiles, order);
    if (failed(result)) {
      for (Operation *o : {op.getOperation(), init})
        if (o)
          o->removeAttr(kFusedTileAttr);
      for (linalg::GenericOp e : chain)
        e->removeAttr(kFusedTileAttr);
      continue;
    }
    commitEpilogueTile(rewriter, chain, op.getOperation(), fuseInit ? init : nullptr, *result);
    rest.pop_back();
  }
  bool any = rest.size() != contractions.size();
  contractions.assign(rest.begin(), rest.end());
  return any;
}

/// Register tiles of window ops that carry their epilogue: a depthwise or
/// grouped convolution or a pool whose result only an elementwise chain
/// reads (MobileNet's bias and ReLU6) is tiled with that chain and with the
/// producer of its initial value (the broadcast bias, a fill) to one tile of
/// kTapRows x `nr` output pixels, the loop order of tileDepthwiseTaps; the
/// window's taps are tiled inside it by tileDepthwiseTaps. The tile starts
/// from the initial value in registers, runs the taps and the epilogue, and
/// stores once. Tiled apart, the initial value was written to a buffer of
/// the workgroup, read and written back by the taps and read again by the
/// epilogue: three more passes over every output pixel.
static bool fuseWindowEpilogues(func::FuncOp func, IRRewriter &rewriter, int64_t nr) {
  MLIRContext *ctx = rewriter.getContext();
  SmallVector<linalg::LinalgOp> windows;
  func.walk([&](linalg::LinalgOp op) {
    if (isRegisterWindow(op) && !op->getParentOfType<scf::ForOp>() && hasStaticShapes(op))
      windows.push_back(op);
  });
  bool any = false;
  for (linalg::LinalgOp op : windows) {
    SmallVector<linalg::GenericOp> chain = epilogueChainOf(op);
    if (chain.empty())
      continue;
    linalg::GenericOp epilogue = chain.back();
    AffineMap outMap = op.getMatchingIndexingMap(&op.getDpsInitsMutable()[0]);
    if (!outMap.isProjectedPermutation() || outMap.getNumResults() < 2 ||
        outMap.getNumResults() != epilogue.getNumLoops())
      continue;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    unsigned width = outMap.getNumResults() - 1;
    SmallVector<int64_t> tiles(epilogue.getNumLoops(), 1);
    tiles[width] = nr;
    tiles[width - 1] = kTapRows;
    for (unsigned i : {width - 1, width})
      if (ranges[outMap.getDimPosition(i)] <= tiles[i])
        tiles[i] = 0;
    // (A grouped convolution's tile: several output channels.)
    if (int64_t channels = cpu::groupedChannelTile(op); channels > 1 && width >= 2)
      tiles[width - 2] = channels;

    Operation *init = op.getDpsInits()[0].getDefiningOp();
    bool fuseInit = init && isa<linalg::FillOp, linalg::GenericOp>(init) && init->hasOneUse() &&
                    init->getParentRegion() == op->getParentRegion();
    FailureOr<scf::SCFTileAndFuseResult> result =
        tileEpilogueChain(rewriter, chain, op.getOperation(), fuseInit ? init : nullptr, tiles);
    if (failed(result))
      continue;
    any = true;
    // The tile's elementwise ops are whole tiles already (tileElementwiseRows
    // leaves them be); a fill becomes a generic, which vectorizes.
    for (Operation *fused : result->tiledAndFusedOps) {
      if (auto fill = dyn_cast<linalg::FillOp>(fused)) {
        rewriter.setInsertionPoint(fill);
        FailureOr<linalg::GenericOp> generic = linalg::generalizeNamedOp(rewriter, fill);
        if (succeeded(generic))
          fused = *generic;
      }
      if (isa<linalg::GenericOp>(fused))
        fused->setAttr(kFusedTileAttr, UnitAttr::get(ctx));
    }
    commitEpilogueTile(rewriter, chain, op.getOperation(), fuseInit ? init : nullptr, *result);
  }
  return any;
}

/// The reduction loops of the epilogue tiles' contractions (tiled by `kc`,
/// after the tiles' shapes are static), and their fills as generics, which
/// vectorize like the other elementwise ops of the tile.
static void tileFusedReductions(func::FuncOp func, IRRewriter &rewriter, const RegisterTile &t) {
  SmallVector<linalg::LinalgOp> tiles;
  func.walk([&](linalg::LinalgOp op) {
    if (isFusedTile(op))
      tiles.push_back(op);
  });
  for (linalg::LinalgOp op : tiles) {
    if (auto fill = dyn_cast<linalg::FillOp>(op.getOperation())) {
      rewriter.setInsertionPoint(fill);
      FailureOr<linalg::GenericOp> generic = linalg::generalizeNamedOp(rewriter, fill);
      if (succeeded(generic))
        (*generic)->setAttr(kFusedTileAttr, rewriter.getUnitAttr());
      continue;
    }
    FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
    if (!linalg::isaContractionOpInterface(op) || failed(dims) || dims->k.size() != 1)
      continue;
    SmallVector<int64_t> kTiles(op.getNumLoops(), 0);
    if (op.getStaticLoopRanges()[dims->k.front()] > t.kc)
      kTiles[dims->k.front()] = t.kc;
    tileAndPeel(rewriter, cast<TilingInterface>(op.getOperation()), kTiles);
  }
}

/// Register tiles of every contraction: mr x nr x kc (a matrix-vector
/// product: one row of up to 16 vectors), or column tiles first for those
/// whose right-hand panel gets packed (see packRightHandPanel).
static void tileContractions(ArrayRef<linalg::LinalgOp> contractions, IRRewriter &rewriter,
                             const RegisterTile &base) {
  for (linalg::LinalgOp op : contractions) {
    FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
    if (failed(dims) || dims->m.empty() || dims->n.empty() || dims->k.empty())
      continue;
    RegisterTile t = base.forContraction(op, *dims);
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<int64_t> tiles(op.getNumLoops(), 1);
    auto setTile = [&](ArrayRef<unsigned> group, int64_t size) {
      for (unsigned d : group.drop_back())
        tiles[d] = 1;
      tiles[group.back()] = size;
    };
    for (unsigned d : dims->batch)
      tiles[d] = 1;
    setTile(dims->m, t.mr);
    setTile(dims->n, t.nr);
    setTile(dims->k, t.kc);
    // A matrix-vector product (one row: LLM decoding, a batch-1 linear
    // layer) is bound by reading the weights: its register tile is one row
    // of up to 16 vectors, so every k step streams a long contiguous
    // segment of a weight row instead of 16 floats of it.
    int64_t rows = rowCount(ranges, *dims);
    int64_t nRange = ranges[dims->n.back()];
    if (rows == 1 && nRange != ShapedType::kDynamic) {
      for (int64_t width = 16 * t.nr; width > t.nr; width -= t.nr)
        if (nRange % width == 0) {
          tiles[dims->n.back()] = width;
          break;
        }
    }
    // Dynamic extents (partial workgroup tiles) keep their loops; static
    // dims smaller than the tile are taken whole.
    for (auto [i, range] : llvm::enumerate(ranges))
      if (range != ShapedType::kDynamic && range <= tiles[i])
        tiles[i] = 0;

    // Panel packing: when several row tiles reuse a column block of the
    // right-hand side (a weight matrix of a linear layer, the image of a 1x1
    // convolution), the block (k x nr) is first copied into a contiguous
    // panel: the register tiles then stream it row after row instead of
    // reading nr floats from k rows a whole matrix row apart (32000 floats
    // for an LLM head: a TLB miss per k step).
    int64_t nDim = dims->n.back();
    // (Byte tiles for VNNI read an interleaved copy of their columns
    // instead, made from the source: interleaveDotProductColumns.)
    bool interleaved = t.wideBytes && hasByteInputs(op);
    bool packPanel = t.packPanels && !interleaved && dims->n.size() == 1 && dims->k.size() == 1 &&
                     tiles[nDim] == t.nr && rows != ShapedType::kDynamic &&
                     rows >= 2 * t.mr && hasStaticShapes(op);
    if (packPanel) {
      // Column tiles first; the attribute (carried to every tile, peeled
      // ones included) holds the tiles of the remaining loops.
      SmallVector<int64_t> outer(op.getNumLoops(), 0), rest(tiles);
      for (unsigned d : dims->batch) {
        outer[d] = 1;
        rest[d] = 0;
      }
      outer[nDim] = t.nr;
      rest[nDim] = 0;
      op->setAttr(kPackedTileAttr, rewriter.getDenseI64ArrayAttr(rest));
      tileAndPeel(rewriter, cast<TilingInterface>(op.getOperation()), outer);
      continue;
    }
    tileAndPeel(rewriter, cast<TilingInterface>(op.getOperation()), tiles,
                registerTileOrder(*dims, op.getNumLoops()));
  }
}

/// With registers of fewer lanes than the tile's columns (AVX2: 8 lanes,
/// tiles of 16 columns), a register tile of a width between one and two
/// registers that is not a multiple of one (12 columns: a 14x14 image's
/// workgroup of 28 is 16 + 12) is split into registers' worth of columns and
/// the rest: LLVM keeps a loop-carried vector of 12 lanes, not a power of two
/// and wider than a register, in 12 scalar registers (measured: the 12-column
/// tiles took most of a 3x3 convolution's time).
/// Returns whether it split any.
static bool splitOddColumnTiles(func::FuncOp func, IRRewriter &rewriter, const RegisterTile &t) {
  if (t.lanes >= std::max(t.nr, t.wideNr))
    return false;
  SmallVector<std::pair<linalg::LinalgOp, unsigned>> odd;
  func.walk([&](linalg::LinalgOp op) {
    if (op->hasAttr(kIm2ColAttr) || !linalg::isaContractionOpInterface(op) ||
        !hasRegisterAccumulator(op) || !hasStaticShapes(op))
      return;
    FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
    if (failed(dims) || dims->n.empty())
      return;
    int64_t columns = op.getStaticLoopRanges()[dims->n.back()];
    if (columns > t.lanes && columns < std::max(t.nr, t.wideNr) && columns % t.lanes != 0)
      odd.push_back({op, dims->n.back()});
  });
  for (auto [op, nDim] : odd) {
    SmallVector<int64_t> tiles(op.getNumLoops(), 0);
    tiles[nDim] = t.lanes;
    tileAndPeel(rewriter, cast<TilingInterface>(op.getOperation()), tiles);
  }
  return !odd.empty();
}

static LogicalResult tilePackedPanels(func::FuncOp func, IRRewriter &rewriter) {
  // Each column tile reads its right-hand block from a packed copy; the
  // tiles get static shapes first, then their row and reduction loops (a
  // k loop over a static panel carries its accumulator in registers, like
  // any full tile).
  SmallVector<linalg::LinalgOp> packedTiles;
  func.walk([&](linalg::LinalgOp op) {
    if (op->hasAttr(kPackedTileAttr))
      packedTiles.push_back(op);
  });
  for (linalg::LinalgOp tile : packedTiles)
    packRightHandPanel(rewriter, tile);
  if (!packedTiles.empty()) {
    if (failed(makeTilesStatic(func, rewriter)))
      return failure();
    packedTiles.clear();
    func.walk([&](linalg::LinalgOp op) {
      if (op->hasAttr(kPackedTileAttr))
        packedTiles.push_back(op);
    });
  }
  for (linalg::LinalgOp op : packedTiles) {
    SmallVector<int64_t> rest(op->getAttrOfType<DenseI64ArrayAttr>(kPackedTileAttr).asArrayRef());
    op->removeAttr(kPackedTileAttr);
    FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(op);
    tileAndPeel(rewriter, cast<TilingInterface>(op.getOperation()), rest,
                succeeded(dims) ? registerTileOrder(*dims, op.getNumLoops())
                                : SmallVector<int64_t>());
  }
  return success();
}

static LogicalResult dropUnitDims(func::FuncOp func, MLIRContext *ctx) {
  // Register tiles are 2-d: drop the unit dimensions (batch, image rows)
  // so that contractions vectorize to plain (m, n, k) outer products.
  {
    RewritePatternSet patterns(ctx);
    linalg::ControlDropUnitDims control;
    control.rankReductionStrategy =
        linalg::ControlDropUnitDims::RankReductionStrategy::ExtractInsertSlice;
    control.controlFn = [&](Operation *op) -> SmallVector<unsigned> {
      auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
      auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
      if (!linalgOp || !hasStaticShapes(linalgOp) ||
          !(linalg::isaContractionOpInterface(linalgOp) || isDepthwiseTap(linalgOp) ||
            (generic && isVectorizableElementwise(generic))))
        return {};
      // A contraction tile keeps a unit row or column dimension, so that
      // it stays an outer product (broadcast + FMA) instead of becoming a
      // matrix-vector product vectorized along k into horizontal sums: a
      // one-row tile (the attention of one decoded token) keeps its row, a
      // one-column tile (the 49th pixel of a 7x7 image, where the sums
      // cost a third of the convolution) its column.
      SmallVector<int64_t> ranges = linalgOp.getStaticLoopRanges();
      std::optional<unsigned> keep;
      FailureOr<linalg::ContractionDimensions> dims = linalg::inferContractionDims(linalgOp);
      if (linalg::isaContractionOpInterface(linalgOp) && succeeded(dims) &&
          !dims->m.empty() && !dims->n.empty()) {
        bool oneRow = llvm::all_of(dims->m, [&](unsigned d) { return ranges[d] == 1; });
        keep = oneRow ? dims->m.back() : dims->n.back();
      }
      SmallVector<unsigned> unitDims;
      for (auto [i, range] : llvm::enumerate(ranges))
        if (range == 1 && keep != i)
          unitDims.push_back(i);
      return unitDims;
    };
    linalg::populateFoldUnitExtentDimsPatterns(patterns, control);
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return failure();
  }
  return success();
}

static void specializeContractions(func::FuncOp func, IRRewriter &rewriter) {
  // Name the 2-d contractions (linalg.matmul, ...): their vectorization is
  // a canonical vector.contract that lowers to outer products.
  {
    SmallVector<linalg::GenericOp> generics;
    func.walk([&](linalg::GenericOp op) {
      // (Not contractions that zero-extend an operand: named ops
      // sign-extend.)
      bool zeroExtends = false;
      op.getBody()->walk([&](arith::ExtUIOp) { zeroExtends = true; });
      if (!op->hasAttr(kIm2ColAttr) && linalg::isaContractionOpInterface(op) &&
          hasStaticShapes(op) && hasRegisterAccumulator(op) && !zeroExtends)
        generics.push_back(op);
    });
    for (linalg::GenericOp op : generics) {
      rewriter.setInsertionPoint(op);
      (void)linalg::specializeGenericOp(rewriter, op);
    }
  }
}

/// A window tap strided along its row (a stride-2 pool or depthwise
/// convolution tiled along the width) reads its input through `(d0) -> (d0 *
/// s)`, which the vectorizer does not take: the input becomes a strided
/// tensor.extract_slice of the row read through the identity (after
/// bufferization, a strided view that the vector read gathers from).
static void unstrideTapInputs(func::FuncOp func, IRRewriter &rewriter) {
  // (A grouped convolution's tap has a loop over channels first: its input
  // rows are indexed by the other two.)
  SmallVector<linalg::GenericOp> taps;
  func.walk([&](linalg::GenericOp op) {
    if (isDepthwiseTap(op) && op.getNumLoops() <= 3 && hasStaticShapes(op) &&
        op.getNumReductionLoops() == 0)
      taps.push_back(op);
  });
  MLIRContext *ctx = func.getContext();
  for (linalg::GenericOp op : taps) {
    SmallVector<int64_t> extents = op.getStaticLoopRanges();
    unsigned loops = extents.size();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    bool changed = false;
    for (OpOperand *input : op.getDpsInputOperands()) {
      AffineMap map = maps[input->getOperandNumber()];
      auto type = dyn_cast<RankedTensorType>(input->get().getType());
      if (!type || type.getRank() == 0 || type.getRank() > loops ||
          map.getNumResults() != type.getRank())
        continue;
      // Each result `d_i` or `d_i * s` for the trailing loops, at least one
      // strided.
      unsigned rank = type.getRank(), first = loops - rank;
      SmallVector<int64_t> strides;
      for (auto [i, result] : llvm::enumerate(map.getResults())) {
        int64_t stride = 0;
        unsigned loop = first + i;
        if (auto d = dyn_cast<AffineDimExpr>(result); d && d.getPosition() == loop)
          stride = 1;
        else if (auto mul = dyn_cast<AffineBinaryOpExpr>(result);
                 mul && mul.getKind() == AffineExprKind::Mul) {
          auto d = dyn_cast<AffineDimExpr>(mul.getLHS());
          auto c = dyn_cast<AffineConstantExpr>(mul.getRHS());
          if (d && c && d.getPosition() == loop && c.getValue() >= 1)
            stride = c.getValue();
        }
        if (!stride || (extents[loop] - 1) * stride >= type.getDimSize(i))
          break;
        strides.push_back(stride);
      }
      if (strides.size() != rank || llvm::all_of(strides, [](int64_t s) { return s == 1; }))
        continue;
      rewriter.setInsertionPoint(op);
      Value view = tensor::ExtractSliceOp::create(
          rewriter, op.getLoc(), input->get(),
          SmallVector<OpFoldResult>(rank, rewriter.getIndexAttr(0)),
          getAsIndexOpFoldResult(ctx, ArrayRef(extents).drop_front(first)),
          getAsIndexOpFoldResult(ctx, strides));
      rewriter.modifyOpInPlace(op, [&] { input->set(view); });
      maps[input->getOperandNumber()] = AffineMap::getMinorIdentityMap(loops, rank, ctx);
      changed = true;
    }
    if (changed)
      rewriter.modifyOpInPlace(op, [&] { op.setIndexingMapsAttr(rewriter.getAffineMapArrayAttr(maps)); });
  }
}

/// The part of `op`'s read that is not broadcast: the same source, indices
/// and padding read as `shape` through `map`, no mask.
static Value readUnbroadcast(PatternRewriter &rewriter, vector::TransferReadOp op,
                             ArrayRef<int64_t> shape, AffineMap map, ArrayRef<bool> inBounds) {
  return vector::TransferReadOp::create(
      rewriter, op.getLoc(), VectorType::get(shape, op.getVectorType().getElementType()),
      op.getBase(), op.getIndices(), AffineMapAttr::get(map), op.getPadding(), /*mask=*/Value(),
      rewriter.getBoolArrayAttr(inBounds));
}

/// A vector read that broadcasts a row of scalars over the trailing
/// dimensions (a grouped convolution's bias, one per output channel of a
/// 4 x 4 x 16 register tile: permutation map `(..., d) -> (d, 0, 0)`)
/// becomes a read of the row and one broadcast per scalar, inserted into
/// the tile. The generic lowering transposes a broadcast, element by
/// element: LLVM built the tile in memory, 256 scalar stores and 16 vector
/// loads.
struct ReadRowBroadcastPerElement : OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::TransferReadOp op,
                                PatternRewriter &rewriter) const override {
    VectorType type = op.getVectorType();
    AffineMap map = op.getPermutationMap();
    if (type.getRank() < 2 || type.isScalable() || op.getMask() || map.getNumResults() < 2 ||
        !op.getInBoundsValues().front())
      return failure();
    auto dim = dyn_cast<AffineDimExpr>(map.getResult(0));
    if (!dim || dim.getPosition() != map.getNumDims() - 1)
      return failure();
    for (AffineExpr e : map.getResults().drop_front())
      if (!isa<AffineConstantExpr>(e) || cast<AffineConstantExpr>(e).getValue() != 0)
        return failure();
    Location loc = op.getLoc();
    int64_t count = type.getDimSize(0);
    Value row = readUnbroadcast(rewriter, op, {count},
                                AffineMap::get(map.getNumDims(), 0, {dim}, op.getContext()), {true});
    auto innerType = VectorType::get(type.getShape().drop_front(), type.getElementType());
    Value result = ub::PoisonOp::create(rewriter, loc, type);
    for (int64_t i = 0; i < count; ++i) {
      Value scalar = vector::ExtractOp::create(rewriter, loc, row, ArrayRef<int64_t>{i});
      Value splat = vector::BroadcastOp::create(rewriter, loc, innerType, scalar);
      result = vector::InsertOp::create(rewriter, loc, splat, result, ArrayRef<int64_t>{i});
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A vector read broadcast along its leading dimensions (a grouped
/// convolution's input rows, the same for each output channel of the tile:
/// permutation map `(..., r, c) -> (0, r, c)`) becomes a read of the rows
/// and a vector.broadcast, so that the patterns for row reads below (padded
/// windows, strided rows) take it as they take a depthwise tap's.
struct ReadOnceForLeadingBroadcast : OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::TransferReadOp op,
                                PatternRewriter &rewriter) const override {
    VectorType type = op.getVectorType();
    AffineMap map = op.getPermutationMap();
    if (op.getMask() || type.isScalable())
      return failure();
    unsigned leading = 0;
    while (leading < map.getNumResults() && isa<AffineConstantExpr>(map.getResult(leading)))
      ++leading;
    unsigned rest = map.getNumResults() - leading;
    if (leading == 0 || rest == 0 ||
        map.dropResults(llvm::to_vector(llvm::seq<int64_t>(0, leading))) !=
            AffineMap::getMinorIdentityMap(map.getNumDims(), rest, op.getContext()))
      return failure();
    SmallVector<bool> inBounds = op.getInBoundsValues();
    Value rows = readUnbroadcast(
        rewriter, op, type.getShape().drop_front(leading),
        AffineMap::getMinorIdentityMap(map.getNumDims(), rest, op.getContext()),
        ArrayRef(inBounds).drop_front(leading));
    rewriter.replaceOpWithNewOp<vector::BroadcastOp>(op, type, rows);
    return success();
  }
};

/// A vector read of a strided row (a window tap of a stride-s pool or
/// depthwise convolution, unstrideTapInputs) gathers one element per lane:
/// 16 scalar loads and inserts for a 16-lane tap, 9 taps per output vector
/// of a 3x3 pool (ResNet-50's max pool at 3.5 GFLOP/s). This reads the
/// contiguous span the lanes come from instead (readEveryNth).
struct ReadStridedRowsContiguously : OpRewritePattern<vector::TransferReadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(vector::TransferReadOp read,
                                PatternRewriter &rewriter) const override {
    // One row segment, or a block of rows (a tap of a tile of several
    // output rows: one span per row).
    VectorType vectorType = read.getVectorType();
    auto slice = read.getBase().getDefiningOp<tensor::ExtractSliceOp>();
    if (vectorType.getRank() < 1 || vectorType.getRank() > 2 || vectorType.isScalable() ||
        read.getMask() || !slice ||
        slice.getResultType().getRank() != vectorType.getRank() ||
        !read.getPermutationMap().isMinorIdentity() ||
        llvm::any_of(read.getInBoundsValues(), [](bool b) { return !b; }) ||
        llvm::any_of(read.getIndices(), [](Value v) { return !isConstantIntValue(v, 0); }))
      return failure();
    int64_t lanes = vectorType.getShape().back();
    int64_t rows = vectorType.getRank() == 2 ? vectorType.getDimSize(0) : 1;
    // The dimensions of the slice with more than one element: the last one
    // (a static stride of 2 or more, as many elements as lanes) and, for a
    // block of rows, one before it with as many elements as rows.
    SmallVector<unsigned> dims;
    for (auto [d, size] : llvm::enumerate(slice.getStaticSizes()))
      if (size != 1)
        dims.push_back(d);
    if (dims.empty() || dims.size() > 2 || slice.getStaticSizes()[dims.back()] != lanes ||
        (dims.size() == 2 && slice.getStaticSizes()[dims.front()] != rows) ||
        (dims.size() == 1 && rows != 1))
      return failure();
    unsigned dim = dims.back();
    std::optional<int64_t> stride = getConstantIntValue(slice.getMixedStrides()[dim]);
    std::optional<int64_t> rowStride =
        dims.size() == 2 ? getConstantIntValue(slice.getMixedStrides()[dims.front()]) : 1;
    if (!stride || *stride < 2 || *stride > 8 || !rowStride)
      return failure();
    for (auto [d, s] : llvm::enumerate(slice.getMixedStrides()))
      if (d != dim && (dims.size() == 1 || d != dims.front()) && !isConstantIntValue(s, 1))
        return failure();
    int64_t span = (lanes - 1) * *stride + 1;
    Location loc = read.getLoc();
    SmallVector<OpFoldResult> sizes = slice.getMixedSizes();
    if (dims.size() == 2)
      sizes[dims.front()] = rewriter.getIndexAttr(1);
    sizes[dim] = rewriter.getIndexAttr(span);
    SmallVector<OpFoldResult> strides(sizes.size(), rewriter.getIndexAttr(1));
    auto rowType = RankedTensorType::get({span}, vectorType.getElementType());
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value result = rows == 1 ? Value() : ub::PoisonOp::create(rewriter, loc, vectorType);
    for (int64_t r = 0; r < rows; ++r) {
      SmallVector<OpFoldResult> offsets = slice.getMixedOffsets();
      if (dims.size() == 2)
        offsets[dims.front()] = affine::makeComposedFoldedAffineApply(
            rewriter, loc, rewriter.getAffineSymbolExpr(0) + r * *rowStride,
            {offsets[dims.front()]});
      Value source = tensor::ExtractSliceOp::create(rewriter, loc, rowType, slice.getSource(),
                                                    offsets, sizes, strides);
      Value row = readEveryNth(rewriter, loc, source, ValueRange{zero}, lanes, *stride,
                               read.getPadding(), /*inBounds=*/false);
      result = rows == 1 ? row : vector::InsertOp::create(rewriter, loc, row, result, r);
    }
    rewriter.replaceOp(read, result);
    return success();
  }
};

/// A vector read of a window of a workgroup's padded input (a tap of a
/// depthwise convolution or pool reading a slice of a `tensor.pad` by a
/// constant) reads the pad's source instead, one row at a time: the row
/// index clamped into the source, and a mask that keeps the lanes of a
/// row inside it (a row above or below the source and the columns left of
/// it are masked off; those right of it are out of bounds) so that they
/// read as the padding value. The padded copy of the workgroup's input is
/// then never made: it cost a stride-2 depthwise convolution 40% of its
/// time, a pass over the input before the taps could start. (A masked-off
/// lane does not touch memory, on AVX-512 and AVX2 alike: the first
/// columns of a row may start before it.)
struct ReadPaddedWindowsFromSource : OpRewritePattern<vector::TransferReadOp> {
  /// `byteMasks`: the ISA masks loads of 8- and 16-bit lanes (AVX-512BW);
  /// without it only 32-bit and wider lanes are read this way (AVX2 masks
  /// 32- and 64-bit lanes only: LLVM would split a masked byte load into a
  /// branch per lane).
  ReadPaddedWindowsFromSource(MLIRContext *ctx, bool byteMasks)
      : OpRewritePattern(ctx), byteMasks(byteMasks) {}

  LogicalResult matchAndRewrite(vector::TransferReadOp read,
                                PatternRewriter &rewriter) const override {
    VectorType vectorType = read.getVectorType();
    auto slice = read.getBase().getDefiningOp<tensor::ExtractSliceOp>();
    auto pad = slice ? slice.getSource().getDefiningOp<tensor::PadOp>() : tensor::PadOp();
    Type elem = vectorType.getElementType();
    unsigned bits = elem.isIntOrFloat() ? elem.getIntOrFloatBitWidth() : 0;
    if (!pad || vectorType.getRank() < 1 || vectorType.getRank() > 2 ||
        (bits < 32 && !byteMasks) || bits < 8 ||
        vectorType.isScalable() || read.getMask() || !pad.getConstantPaddingValue() ||
        !pad.getSourceType().hasStaticShape() || !pad->getParentOfType<scf::ForallOp>() ||
        slice.getResultType().getRank() != vectorType.getRank() ||
        !read.getPermutationMap().isMinorIdentity() ||
        llvm::any_of(pad.getMixedLowPad(), [](OpFoldResult v) { return !getConstantIntValue(v); }))
      return failure();
    // The slice's kept dimensions, in order: the read's rows (a block of
    // rows) and columns, the columns contiguous in the source.
    RankedTensorType source = pad.getSourceType();
    int64_t rank = source.getRank();
    llvm::SmallBitVector dropped = slice.getDroppedDims();
    SmallVector<unsigned> kept;
    for (unsigned d = 0; d < rank; ++d)
      if (!dropped.test(d))
        kept.push_back(d);
    if (kept.size() != static_cast<size_t>(vectorType.getRank()) || kept.back() != rank - 1 ||
        !isConstantIntValue(slice.getMixedStrides()[rank - 1], 1))
      return failure();
    std::optional<unsigned> rowDim;
    std::optional<int64_t> rowStride = 1;
    if (kept.size() == 2) {
      rowDim = kept.front();
      rowStride = getConstantIntValue(slice.getMixedStrides()[*rowDim]);
      if (!rowStride)
        return failure();
    }
    for (unsigned d = 0; d < rank; ++d)
      if (dropped.test(d) && !isConstantIntValue(slice.getMixedSizes()[d], 1))
        return failure();

    Location loc = read.getLoc();
    ArrayRef<int64_t> low = pad.getStaticLow();
    int64_t lanes = vectorType.getShape().back();
    int64_t rows = vectorType.getRank() == 2 ? vectorType.getDimSize(0) : 1;
    Type i1 = rewriter.getI1Type();
    auto index = [&](OpFoldResult v) { return getValueOrCreateConstantIndexOp(rewriter, loc, v); };
    auto cst = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(rewriter, loc, v); };
    // The source index of dimension d of the read's element (row r, lane 0).
    auto sourceIndex = [&](unsigned d, int64_t r) -> Value {
      Value at = index(slice.getMixedOffsets()[d]);
      if (!dropped.test(d)) {
        unsigned k = llvm::find(kept, d) - kept.begin();
        Value i = read.getIndices()[k];
        if (rowDim && d == *rowDim)
          i = arith::AddIOp::create(rewriter, loc, i, cst(r));
        if (rowDim && d == *rowDim && *rowStride != 1)
          i = arith::MulIOp::create(rewriter, loc, i, cst(*rowStride));
        at = arith::AddIOp::create(rewriter, loc, at, i);
      }
      return low[d] ? arith::SubIOp::create(rewriter, loc, at, cst(low[d])).getResult() : at;
    };
    auto rowType = VectorType::get({lanes}, vectorType.getElementType());
    auto maskType = VectorType::get({lanes}, i1);
    SmallVector<int64_t> laneNumbers = llvm::to_vector(llvm::seq<int64_t>(0, lanes));
    Value laneIndex = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(VectorType::get({lanes}, rewriter.getIndexType()),
                                              llvm::map_to_vector(laneNumbers, [&](int64_t v) {
                                                return APInt(64, v);
                                              })));
    Value zeroVec = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(VectorType::get({lanes}, rewriter.getIndexType()),
                                              APInt(64, 0)));
    Value result = rows == 1 ? Value() : ub::PoisonOp::create(rewriter, loc, vectorType);
    for (int64_t r = 0; r < rows; ++r) {
      SmallVector<Value> indices;
      Value inside = arith::ConstantOp::create(rewriter, loc, rewriter.getBoolAttr(true));
      for (int64_t d = 0; d + 1 < rank; ++d) {
        Value at = sourceIndex(d, r);
        // Rows outside the source: masked off, read at a clamped index.
        Value ge = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, at, cst(0));
        Value lt = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt, at,
                                         cst(source.getDimSize(d)));
        inside = arith::AndIOp::create(rewriter, loc, inside,
                                       arith::AndIOp::create(rewriter, loc, ge, lt));
        Value clamped = arith::MaxSIOp::create(rewriter, loc, at, cst(0));
        clamped = arith::MinSIOp::create(rewriter, loc, clamped, cst(source.getDimSize(d) - 1));
        indices.push_back(clamped);
      }
      Value column = sourceIndex(rank - 1, r);
      indices.push_back(column);
      Value columns = arith::AddIOp::create(
          rewriter, loc, laneIndex, vector::BroadcastOp::create(rewriter, loc, laneIndex.getType(), column));
      Value mask = arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::sge, columns, zeroVec);
      mask = arith::AndIOp::create(rewriter, loc, mask,
                                   vector::BroadcastOp::create(rewriter, loc, maskType, inside));
      SmallVector<bool> inBounds = {false};
      Value row = vector::TransferReadOp::create(
          rewriter, loc, rowType, pad.getSource(), indices, pad.getConstantPaddingValue(),
          AffineMap::getMinorIdentityMap(rank, 1, rewriter.getContext()),
          ArrayRef<bool>(inBounds));
      cast<vector::TransferReadOp>(row.getDefiningOp()).getMaskMutable().assign(mask);
      result = rows == 1 ? row : vector::InsertOp::create(rewriter, loc, row, result, r);
    }
    rewriter.replaceOp(read, result);
    return success();
  }

  bool byteMasks;
};

/// Vectorizes the static tiles that fit in registers.
static void vectorizeTiles(func::FuncOp func, IRRewriter &rewriter, const RegisterTile &t) {
  SmallVector<linalg::LinalgOp> toVectorize;
  func.walk([&](linalg::LinalgOp op) {
    if (op->hasAttr(kIm2ColAttr) || !hasStaticShapes(op))
      return;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t points = 1;
    for (int64_t r : ranges)
      points *= r;
    auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
    if ((linalg::isaContractionOpInterface(op) && hasRegisterAccumulator(op) &&
         points <= t.tilePoints() * t.kc) ||
        (isDepthwiseTap(op) && points <= kTapRows * t.nr * tapChannels(op)) ||
        // (Elementwise ops are rows of at most nr by now, but for those of
        // an epilogue tile: a register tile. Dropping unit dimensions
        // rebuilt them without the attribute that said so.)
        (generic && isVectorizableElementwise(generic) && points <= t.tilePoints()) ||
        (op->hasAttr(kRowReductionAttr) && points <= t.tilePoints()))
      toVectorize.push_back(op);
  });
  for (linalg::LinalgOp op : toVectorize) {
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::VectorizationResult> result = linalg::vectorize(
        rewriter, op, /*inputVectorSizes=*/{}, /*inputScalableVecDims=*/{},
        /*vectorizeNDExtract=*/false, /*flatten1DDepthwiseConv=*/false,
        /*assumeDynamicDimsMatchVecSizes=*/false, /*createNamedContraction=*/true);
    if (succeeded(result))
      rewriter.replaceOp(op, result->replacements);
  }
}

/// A register tile one column wide (the last column of a 7x7 image's 49,
/// 3 x 16 + 1) accumulates a column vector: lowered to outer products,
/// each k step is `mr` scalar FMAs, as many instructions as a 16-column
/// tile for 1/16 of its work (a fifth of ResNet-50's layer4 1x1
/// convolutions). Such a k loop instead keeps `mr` x `kc` partial sums (a
/// row's k steps side by side in one vector: one vector FMA per row and k
/// step of `kc`) and adds them up into the column once, after the loop.
/// (The sum's order changes: results move within rounding.)
static void splitOneColumnReductions(func::FuncOp func, RewriterBase &rewriter) {
  SmallVector<vector::ContractionOp> contracts;
  func.walk([&](vector::ContractionOp op) {
    auto loop = dyn_cast<scf::ForOp>(op->getParentOp());
    VectorType lhs = op.getLhsType();
    auto acc = dyn_cast<VectorType>(op.getAccType());
    auto rhs = op.getRhsType();
    if (!loop || !acc || lhs.getRank() != 2 || rhs.getRank() != 2 || acc.getRank() != 2 ||
        acc.getDimSize(1) != 1 || acc.getDimSize(0) < 2 || !lhs.getElementType().isF32() ||
        !rhs.getElementType().isF32() || !acc.getElementType().isF32() ||
        op.getKind() != vector::CombiningKind::ADD)
      return;
    MLIRContext *ctx = op.getContext();
    AffineExpr m, n, k;
    bindDims(ctx, m, n, k);
    SmallVector<AffineMap> maps = AffineMap::inferFromExprList(
        ArrayRef<ArrayRef<AffineExpr>>{{m, k}, {k, n}, {m, n}}, ctx);
    if (op.getIndexingMapsArray() != maps)
      return;
    // The accumulator is the loop's iter_arg, yielded back.
    auto arg = dyn_cast<BlockArgument>(op.getAcc());
    if (!arg || arg.getOwner() != loop.getBody() || !op->getResult(0).hasOneUse() ||
        !isa<scf::YieldOp>(*op->getResult(0).getUsers().begin()) || !arg.hasOneUse())
      return;
    unsigned index = arg.getArgNumber() - loop.getNumInductionVars();
    if (loop.getYieldedValues()[index] != op.getResult())
      return;
    contracts.push_back(op);
  });
  for (vector::ContractionOp op : contracts) {
    auto loop = cast<scf::ForOp>(op->getParentOp());
    auto arg = cast<BlockArgument>(op.getAcc());
    unsigned index = arg.getArgNumber() - loop.getNumInductionVars();
    VectorType lhs = op.getLhsType();
    auto acc = cast<VectorType>(op.getAccType());
    Location loc = op.getLoc();
    int64_t rows = lhs.getDimSize(0), steps = lhs.getDimSize(1);
    auto partialType = VectorType::get({rows, steps}, lhs.getElementType());

    // The loop carries partial sums from zero instead of the column.
    rewriter.setInsertionPoint(loop);
    Value zero = arith::ConstantOp::create(rewriter, loc, partialType,
                                           rewriter.getZeroAttr(partialType));
    Value init = loop.getInitArgs()[index];
    SmallVector<Value> inits(loop.getInitArgs());
    inits[index] = zero;
    auto newLoop = scf::ForOp::create(rewriter, loc, loop.getLowerBound(), loop.getUpperBound(),
                                      loop.getStep(), inits);
    Block *body = newLoop.getBody();
    SmallVector<Value> argReplacements(body->getArguments());
    // (The old body reads the old accumulator only in the contraction.)
    argReplacements[index + 1] = init;
    rewriter.mergeBlocks(loop.getBody(), body, argReplacements);
    rewriter.setInsertionPoint(op);
    // rhs: k x 1, the same k steps for every row.
    Value column = vector::ShapeCastOp::create(
        rewriter, loc, VectorType::get({steps}, lhs.getElementType()), op.getRhs());
    Value spread = vector::BroadcastOp::create(rewriter, loc, partialType, column);
    Value sums = vector::FMAOp::create(rewriter, loc, op.getLhs(), spread,
                                       body->getArgument(index + 1));
    auto yield = cast<scf::YieldOp>(body->getTerminator());
    rewriter.modifyOpInPlace(yield, [&] { yield->setOperand(index, sums); });
    rewriter.eraseOp(op);

    // After the loop: each row's partial sums, added to the column.
    rewriter.setInsertionPointAfter(newLoop);
    auto columnType = VectorType::get({rows}, acc.getElementType());
    Value start = vector::ShapeCastOp::create(rewriter, loc, columnType, init);
    Value total = vector::MultiDimReductionOp::create(
        rewriter, loc, newLoop.getResult(index), start, ArrayRef<bool>{false, true},
        vector::CombiningKind::ADD);
    Value result = vector::ShapeCastOp::create(rewriter, loc, acc, total);
    SmallVector<Value> results(newLoop.getResults());
    results[index] = result;
    rewriter.replaceOp(loop, results);
  }
}

/// Folds the vector transfers, keeps the accumulator in registers across
/// the k loop and lowers the contractions to outer products.
static LogicalResult lowerVectorTiles(func::FuncOp func, IRRewriter &rewriter, MLIRContext *ctx,
                                      cpu::DotISA dot) {
  {
    // Slices of slices of a padded window become one slice of the pad
    // (which ReadPaddedWindowsFromSource takes); other slices stay as they
    // are.
    SmallVector<Operation *> windowSlices;
    func.walk([&](tensor::ExtractSliceOp slice) {
      Value source = slice.getSource();
      while (auto inner = source.getDefiningOp<tensor::ExtractSliceOp>())
        source = inner.getSource();
      if (source.getDefiningOp<tensor::PadOp>())
        windowSlices.push_back(slice);
    });
    RewritePatternSet patterns(ctx);
    tensor::populateMergeConsecutiveInsertExtractSlicePatterns(patterns);
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    if (failed(applyOpPatternsGreedily(windowSlices, std::move(patterns), config)))
      return failure();
  }
  {
    RewritePatternSet patterns(ctx);
    vector::populateVectorReductionToContractPatterns(patterns);
    vector::populateSinkVectorOpsPatterns(patterns);
    cpu::populateReadByteTilesPlainlyPatterns(patterns);
    patterns.add<ReadStridedRowsContiguously, ReadRowBroadcastPerElement, ReadOnceForLeadingBroadcast>(ctx);
    patterns.add<ReadPaddedWindowsFromSource>(
        ctx, dot == cpu::DotISA::AVX512BW || dot == cpu::DotISA::AVX512VNNI);
    vector::TransferReadOp::getCanonicalizationPatterns(patterns, ctx);
    vector::TransferWriteOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExtractSliceOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::InsertSliceOp::getCanonicalizationPatterns(patterns, ctx);
    // Peeled tiles yield through static -> dynamic -> static cast pairs;
    // folding them lets the accumulator be hoisted below.
    tensor::CastOp::getCanonicalizationPatterns(patterns, ctx);
    scf::ForOp::getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return failure();
  }
  // Keep the accumulator tile in registers across the k loop.
  func.walk([&](scf::ForOp loop) {
    (void)hoistLoopInvariantSubsets(rewriter, cast<LoopLikeOpInterface>(loop.getOperation()));
  });
  splitOneColumnReductions(func, rewriter);
  cpu::interleaveDotProductColumns(func, rewriter, dot);
  {
    RewritePatternSet patterns(ctx);
    vector::populateVectorContractLoweringPatterns(
        patterns, vector::VectorContractLowering::OuterProduct);
    vector::populateVectorMultiReductionLoweringPatterns(
        patterns, vector::VectorMultiReductionLowering::InnerReduction);
    kiln::codegen::populateErfApproximationPatterns(patterns);
    kiln::codegen::populateExpApproximationPatterns(patterns);
    kiln::codegen::populateConstantClampPatterns(patterns);
    populateMathPolynomialApproximationPatterns(patterns, isApproximated);
    vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
    // (16 x 16 float tiles of a transposed read: 64 shuffles on AVX-512,
    // where element by element it was 256 extracts and inserts.)
    vector::populateVectorTransposeLoweringPatterns(patterns,
                                                    vector::VectorTransposeLowering::Shuffle16x16);
    if (dot == cpu::DotISA::None) {
      if (failed(applyPatternsGreedily(func, std::move(patterns))))
        return failure();
      return success();
    }
    // 8-bit tiles stay vector.contract, with the ops that feed them their
    // bytes, for kiln-cpu-lower-dot-products (after bufferization).
    llvm::DenseSet<Operation *> dotProducts;
    func.walk([&](vector::ContractionOp op) {
      SmallVector<Operation *> operands;
      if (cpu::isDotProductContract(op, dot, &operands)) {
        dotProducts.insert(op);
        dotProducts.insert(operands.begin(), operands.end());
      }
    });
    SmallVector<Operation *> rest;
    func.walk([&](Operation *op) {
      if (op != func && !dotProducts.contains(op))
        rest.push_back(op);
    });
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    if (failed(applyOpPatternsGreedily(rest, std::move(patterns), config)))
      return failure();
  }
  return success();
}

/// Marks the panel products panelsToMatmuls tiles by panel.
constexpr StringLiteral kPanelGemmAttr = "kiln.panel_gemm";

/// A workgroup of a float product by weights in column panels
/// (kiln.matmul_panels: `out[m, n] += lhs[m, k] * w[n / P, k, n mod P]`)
/// with at least `minRows` rows becomes one matmul per panel, each reading
/// its panel `[K, P]` as an ordinary right-hand side: the GEMM register
/// tiles then take it (an 8 x 32 tile per 32-column panel on AVX-512), and
/// since the panel is already one contiguous run through K, it is not copied
/// at run time. The product is tiled by panel together with its
/// accumulator's initial value and the elementwise chain that alone reads it
/// (bias, activation, residual), so that each panel's matmul keeps its
/// epilogue (fuseEpilogues). Fewer rows keep the panel kernel
/// (kiln-cpu-lower-panel-matmuls), bound by streaming the weights.
/// Workgroups start at a panel (kiln-cpu-distribute tiles in whole panels),
/// so every panel loop step is one whole panel.
static void panelsToMatmuls(func::FuncOp func, IRRewriter &rewriter, int64_t minRows,
                            const RegisterTile &t) {
  SmallVector<linalg::GenericOp> panels;
  func.walk([&](linalg::GenericOp op) {
    if (!op->hasAttr(kPanelMatmulAttr) || !op.hasPureTensorSemantics() || !hasStaticShapes(op) ||
        op.getNumDpsInputs() != 2)
      return;
    auto weights = cast<RankedTensorType>(op.getDpsInputs()[1].getType());
    auto out = cast<RankedTensorType>(op.getDpsInits()[0].getType());
    // (8-bit products of any rows, in a workgroup or the only one: the panel
    // kernel is float only.)
    bool integer = !isa<FloatType>(out.getElementType());
    if (!integer && !op->getParentOfType<scf::ForallOp>())
      return;
    if (weights.getRank() != 3 || out.getRank() != 2 ||
        (out.getDimSize(0) < minRows && !integer) ||
        out.getDimSize(1) % weights.getDimSize(2) != 0)
      return;
    panels.push_back(op);
  });
  for (linalg::GenericOp op : panels) {
    int64_t panel = cast<RankedTensorType>(op.getDpsInputs()[1].getType()).getDimSize(2);
    op->setAttr(kPanelGemmAttr, rewriter.getUnitAttr());
    // A long reduction is cache-blocked first (as blockReductions does for
    // other contractions), outside the panel loop: each block of the
    // left-hand side (rows x block) stays in L2 while every panel of the
    // workgroup reads it (panels outside would stream all of it per panel).
    // Such a product keeps its epilogue as a separate pass.
    int64_t k = cast<RankedTensorType>(op.getDpsInputs()[0].getType()).getDimSize(1);
    if (int64_t block = chooseCacheBlock(k, t.kcCache, t.kc)) {
      rewriter.setInsertionPoint(op);
      scf::SCFTilingOptions options;
      options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), {0, 0, block}));
      FailureOr<scf::SCFTilingResult> blocked =
          scf::tileUsingSCF(rewriter, cast<TilingInterface>(op.getOperation()), options);
      if (failed(blocked) || blocked->tiledOps.size() != 1)
        continue;
      rewriter.replaceOp(op, blocked->replacements);
      op = cast<linalg::GenericOp>(blocked->tiledOps.front());
    }
    // (A workgroup of one panel needs no panel loop.)
    if (cast<RankedTensorType>(op.getDpsInits()[0].getType()).getDimSize(1) == panel)
      continue;
    SmallVector<linalg::GenericOp> chain = epilogueChainOf(op);
    if (!chain.empty() && chain.back().getNumLoops() == 2) {
      Operation *init = op.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
      FailureOr<scf::SCFTileAndFuseResult> tiled =
          tileEpilogueChain(rewriter, chain, op, init, {0, panel});
      if (succeeded(tiled)) {
        for (LoopLikeOpInterface loop : tiled->loops)
          loop->setAttr(kPanelLoopAttr, rewriter.getUnitAttr());
        commitEpilogueTile(rewriter, chain, op, init, *tiled);
        continue;
      }
    }
    // Without an epilogue, a zero fill of the accumulator goes into the
    // panel loop too (each panel's register tiles then start from zeros in
    // registers, fuseEpilogues): filled whole first, the workgroup's output
    // (an LLM head's: 64 rows x 640 columns, 160 KiB) went out to L2 and
    // came back for every register tile.
    if (chain.empty())
      if (Operation *init = op.getDpsInits()[0].getDefiningOp<linalg::FillOp>();
          init && init->hasOneUse()) {
        FailureOr<scf::SCFTileAndFuseResult> tiled =
            tileEpilogueChain(rewriter, {}, op, init, {0, panel, 0});
        if (succeeded(tiled)) {
          for (LoopLikeOpInterface loop : tiled->loops)
            loop->setAttr(kPanelLoopAttr, rewriter.getUnitAttr());
          commitEpilogueTile(rewriter, {}, op, init, *tiled);
          continue;
        }
      }
    rewriter.setInsertionPoint(op);
    scf::SCFTilingOptions options;
    options.setTileSizes(getAsIndexOpFoldResult(rewriter.getContext(), {0, panel, 0}));
    FailureOr<scf::SCFTilingResult> tiled =
        scf::tileUsingSCF(rewriter, cast<TilingInterface>(op.getOperation()), options);
    if (failed(tiled))
      continue;
    for (LoopLikeOpInterface loop : tiled->loops)
      loop->setAttr(kPanelLoopAttr, rewriter.getUnitAttr());
    rewriter.replaceOp(op, tiled->replacements);
  }
  // Each panel's product reads its panel (or a block of its rows), `[1, K,
  // P]` from (n / P, k0, n mod P) with n mod P = 0, as a `[K, P]` matrix.
  SmallVector<linalg::GenericOp> tiles;
  func.walk([&](linalg::GenericOp op) {
    if (op->hasAttr(kPanelGemmAttr))
      tiles.push_back(op);
  });
  for (linalg::GenericOp tile : tiles) {
    auto slice = tile.getDpsInputs()[1].getDefiningOp<tensor::ExtractSliceOp>();
    auto sliceType = cast<RankedTensorType>(tile.getDpsInputs()[1].getType());
    auto out = cast<RankedTensorType>(tile.getDpsInits()[0].getType());
    if (!slice || sliceType.getDimSize(0) != 1 || out.getDimSize(1) != sliceType.getDimSize(2)) {
      tile->removeAttr(kPanelGemmAttr); // (left to the panel kernel)
      continue;
    }
    int64_t k = sliceType.getDimSize(1), panel = sliceType.getDimSize(2);
    rewriter.setInsertionPoint(tile);
    Location loc = tile.getLoc();
    OpFoldResult one = rewriter.getIndexAttr(1);
    auto panelType = RankedTensorType::get({k, panel}, sliceType.getElementType());
    Value weights = tensor::ExtractSliceOp::create(
        rewriter, loc, panelType, slice.getSource(), slice.getMixedOffsets(),
        ArrayRef<OpFoldResult>{one, rewriter.getIndexAttr(k), rewriter.getIndexAttr(panel)},
        ArrayRef<OpFoldResult>{one, one, one});
    Operation *matmul;
    if (isa<FloatType>(out.getElementType())) {
      matmul = linalg::MatmulOp::create(rewriter, loc, ValueRange{tile.getDpsInputs()[0], weights},
                                        ValueRange{tile.getDpsInits()[0]});
    } else {
      // (linalg.matmul sign-extends: the generic's own body says how each
      // byte operand extends.)
      MLIRContext *ctx = rewriter.getContext();
      AffineExpr m, n, kk;
      bindDims(ctx, m, n, kk);
      auto generic = linalg::GenericOp::create(
          rewriter, loc, TypeRange{out}, ValueRange{tile.getDpsInputs()[0], weights},
          ValueRange{tile.getDpsInits()[0]},
          SmallVector<AffineMap>{AffineMap::get(3, 0, {m, kk}, ctx),
                                 AffineMap::get(3, 0, {kk, n}, ctx),
                                 AffineMap::get(3, 0, {m, n}, ctx)},
          tile.getIteratorTypesArray());
      rewriter.cloneRegionBefore(tile.getRegion(), generic.getRegion(), generic.getRegion().end());
      matmul = generic;
    }
    rewriter.replaceOp(tile, matmul->getResults());
  }
}

struct KilnCPUVectorizeGemmPass
    : kiln::impl::KilnCPUVectorizeGemmBase<KilnCPUVectorizeGemmPass> {
  using KilnCPUVectorizeGemmBase::KilnCPUVectorizeGemmBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MLIRContext *ctx = &getContext();
    std::optional<cpu::DotISA> dot = cpu::parseDotISA(dotISA);
    if (!dot) {
      func.emitError() << "unknown dot-product ISA '" << dotISA
                       << "' (none, avx2, avx512bw, avx512vnni)";
      return signalPassFailure();
    }
    RegisterTile tile{mr, nr, kc, kcCache, packPanels, vectorLanes, wideMr, wideNr,
                      *dot == cpu::DotISA::AVX512VNNI};
    IRRewriter rewriter(ctx);
    if (panelGemmRows > 0)
      panelsToMatmuls(func, rewriter, panelGemmRows, tile);
    SmallVector<linalg::LinalgOp> contractions = registerContractions(func);
    rewriteIm2ColGathers(func, rewriter);
    if (fuseEpilogueTiles && fuseWindowEpilogues(func, rewriter, nr) &&
        failed(makeTilesStatic(func, rewriter)))
      return signalPassFailure();
    tileDepthwiseTaps(func, rewriter, nr);
    blockReductions(contractions, rewriter, tile);
    if (fuseEpilogueTiles && fuseEpilogues(contractions, rewriter, tile)) {
      if (failed(makeTilesStatic(func, rewriter)))
        return signalPassFailure();
      tileFusedReductions(func, rewriter, tile);
    }
    collapseTrailingReductions(func, rewriter);
    tileRowReductions(func, rewriter, nr);
    tileElementwiseRows(func, rewriter, nr);
    tileContractions(contractions, rewriter, tile);
    if (failed(tilePackedPanels(func, rewriter)) || failed(makeTilesStatic(func, rewriter)))
      return signalPassFailure();
    if (failed(dropUnitDims(func, ctx)))
      return signalPassFailure();
    if (splitOddColumnTiles(func, rewriter, tile) && failed(makeTilesStatic(func, rewriter)))
      return signalPassFailure();
    specializeContractions(func, rewriter);
    unstrideTapInputs(func, rewriter);
    vectorizeTiles(func, rewriter, tile);
    if (failed(lowerVectorTiles(func, rewriter, ctx, *dot)))
      return signalPassFailure();
    // (After the window reads that bypass them: what reads a pad then.)
    rewritePadsAsRowCopies(func, rewriter);
    // (Tiles that stayed linalg ops, e.g. dynamic ones, keep the marker.)
    func.walk([](Operation *op) {
      op->removeAttr(kFusedTileAttr);
      op->removeAttr(kRowReductionAttr);
      op->removeAttr(kPanelLoopAttr);
    });
  }
};
} // namespace
