//===- Distribute.cpp - dispatch function -> one fused tile per gfx thread ===//
//
// The generic gfx path: the last op of a dispatch function is tiled into
// small per-thread tiles and every producer is fused into them, so a thread
// computes its slice of the whole chain (conv + bias + relu, softmax's
// max/exp/sum/divide) on its own, with no barrier and no shared memory.
// Matrix-core dispatches take the GEMM builder instead (GemmBuilder.cpp).
//
//===----------------------------------------------------------------------===//

#include "codegen/amdgpu/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SmallBitVector.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNGPUDISTRIBUTE
#include "codegen/amdgpu/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

/// The largest of `preferred`, halved down to 1, that divides `bound`:
/// whole tiles keep every shape in a thread static.
int64_t dividingTile(int64_t bound, int64_t preferred) {
  for (int64_t t = preferred; t > 1; t /= 2)
    if (bound % t == 0)
      return t;
  return 1;
}

/// Per-thread tile sizes of the consumer's loops (0 = not tiled).
SmallVector<int64_t> chooseThreadTiles(func::FuncOp func, TilingInterface consumer,
                                       ArrayRef<int64_t> bounds) {
  SmallVector<utils::IteratorType> iterators = consumer.getLoopIteratorTypes();
  SmallVector<unsigned> parallel;
  for (auto [i, it] : llvm::enumerate(iterators))
    if (it == utils::IteratorType::parallel)
      parallel.push_back(i);
  SmallVector<int64_t> tiles(bounds.size(), 0);
  for (unsigned i : parallel)
    tiles[i] = 1;
  if (parallel.empty())
    return tiles;

  bool consumerReduces = parallel.size() != bounds.size();
  bool contraction = false, convolution = false, producerReduces = false;
  // A reducing producer over more loops than the consumer has (a mean over
  // rows feeding a per-row op) leaves every consumer dim free to split.
  bool rowsReducedAway = false;
  func.walk([&](linalg::LinalgOp op) {
    bool conv = linalg::isaConvolutionOpInterface(op);
    bool gemmLike = linalg::isaContractionOpInterface(op) || conv;
    convolution |= conv;
    contraction |= gemmLike;
    if (!gemmLike && op.getNumReductionLoops() > 0 && op != consumer.getOperation()) {
      producerReduces = true;
      rowsReducedAway |= op.getNumLoops() > bounds.size();
    }
  });
  if (convolution && parallel.size() == 4) {
    // NCHW: one output pixel, 4 output channels. The padded input window a
    // thread gathers (C x KH x KW) is shared by its channels and does not
    // grow with a spatial tile.
    tiles[parallel[1]] = dividingTile(bounds[parallel[1]], 4);
  } else if (contraction) {
    // 4 x 4 outputs: each loaded input element feeds 4 products.
    unsigned last = parallel.back();
    tiles[last] = dividingTile(bounds[last], 4);
    if (parallel.size() >= 2) {
      unsigned rows = parallel[parallel.size() - 2];
      tiles[rows] = dividingTile(bounds[rows], 4);
    }
  } else if (producerReduces && !rowsReducedAway) {
    // A fused producer reduces rows (softmax, normalization): a thread
    // takes whole rows, so no row is reduced twice.
    tiles[parallel.back()] = 0;
  } else if (!consumerReduces) {
    unsigned last = parallel.back();
    tiles[last] = dividingTile(bounds[last], 4);
  }
  return tiles;
}

/// A concatenation (insert_slices of whole pieces into an empty tensor,
/// one after the other along one dimension) becomes a linalg.generic that
/// reads the piece each output element comes from: tileable, so a fused
/// consumer's threads each build only their own slice of it.
LogicalResult concatToGeneric(RewriterBase &rewriter, tensor::InsertSliceOp last) {
  SmallVector<tensor::InsertSliceOp> pieces;
  Value dest = last.getResult();
  while (auto insert = dest.getDefiningOp<tensor::InsertSliceOp>()) {
    pieces.push_back(insert);
    dest = insert.getDest();
  }
  auto empty = dest.getDefiningOp<tensor::EmptyOp>();
  auto type = cast<RankedTensorType>(last.getType());
  if (!empty || pieces.size() < 2 || !type.hasStaticShape())
    return failure();
  std::reverse(pieces.begin(), pieces.end());
  // The one dimension the pieces differ in, and that they cover in order.
  std::optional<unsigned> axis;
  int64_t covered = 0;
  for (tensor::InsertSliceOp piece : pieces) {
    if (!piece.hasUnitStride() || !piece.getSourceType().hasStaticShape() ||
        piece.getSourceType().getRank() != type.getRank())
      return failure();
    ArrayRef<int64_t> offsets = piece.getStaticOffsets();
    ArrayRef<int64_t> sizes = piece.getStaticSizes();
    for (unsigned d = 0; d < type.getRank(); ++d) {
      if (ShapedType::isDynamic(offsets[d]) || ShapedType::isDynamic(sizes[d]))
        return failure();
      if (sizes[d] == type.getDimSize(d) && offsets[d] == 0)
        continue;
      if (axis && *axis != d)
        return failure();
      axis = d;
    }
    if (!axis || offsets[*axis] != covered)
      return failure();
    covered += sizes[*axis];
  }
  if (covered != type.getDimSize(*axis))
    return failure();

  Location loc = last.getLoc();
  rewriter.setInsertionPoint(last);
  unsigned rank = type.getRank();
  SmallVector<AffineMap> maps = {rewriter.getMultiDimIdentityMap(rank)};
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, ValueRange{}, ValueRange{empty.getResult()}, maps,
      iterators, [&](OpBuilder &b, Location loc, ValueRange) {
        SmallVector<Value> idx;
        for (unsigned d = 0; d < rank; ++d)
          idx.push_back(linalg::IndexOp::create(b, loc, d));
        // Nested ifs: piece k when idx[axis] < end of piece k.
        std::function<Value(OpBuilder &, size_t)> select = [&](OpBuilder &b,
                                                               size_t k) -> Value {
          tensor::InsertSliceOp piece = pieces[k];
          int64_t offset = piece.getStaticOffsets()[*axis];
          auto read = [&](OpBuilder &b) {
            SmallVector<Value> local(idx);
            local[*axis] = arith::SubIOp::create(b, loc, idx[*axis],
                                                 arith::ConstantIndexOp::create(b, loc, offset));
            return tensor::ExtractOp::create(b, loc, piece.getSource(), local).getResult();
          };
          if (k + 1 == pieces.size())
            return read(b);
          int64_t end = offset + piece.getStaticSizes()[*axis];
          Value inPiece = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, idx[*axis],
                                                arith::ConstantIndexOp::create(b, loc, end));
          auto ifOp = scf::IfOp::create(
              b, loc, inPiece,
              [&](OpBuilder &b, Location loc) { scf::YieldOp::create(b, loc, read(b)); },
              [&](OpBuilder &b, Location loc) {
                scf::YieldOp::create(b, loc, select(b, k + 1));
              });
          return ifOp.getResult(0);
        };
        linalg::YieldOp::create(b, loc, select(b, 0));
      });
  rewriter.replaceOp(last, generic.getResults());
  return success();
}

/// A dispatch that is one tensor.extract_slice (a Slice, a Split output) as
/// a tileable linalg.generic over the result whose body reads the source at
/// offset + stride * index: untileable, the slice would be copied by one
/// thread (a 512-element copy unrolled into a single block that LLVM takes
/// seconds to schedule).
LogicalResult sliceToGeneric(RewriterBase &rewriter, tensor::ExtractSliceOp slice) {
  RankedTensorType type = slice.getType();
  if (!type.hasStaticShape() || !slice.getSourceType().hasStaticShape())
    return failure();
  for (ArrayRef<int64_t> values :
       {slice.getStaticOffsets(), slice.getStaticSizes(), slice.getStaticStrides()})
    if (llvm::any_of(values, ShapedType::isDynamic))
      return failure();
  llvm::SmallBitVector dropped = slice.getDroppedDims();
  Location loc = slice.getLoc();
  rewriter.setInsertionPoint(slice);
  unsigned rank = type.getRank();
  Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(), type.getElementType());
  auto generic = linalg::GenericOp::create(
      rewriter, loc, TypeRange{type}, ValueRange{}, ValueRange{init},
      SmallVector<AffineMap>{rewriter.getMultiDimIdentityMap(rank)},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &b, Location loc, ValueRange) {
        SmallVector<Value> at;
        unsigned next = 0;
        for (unsigned d = 0; d < slice.getSourceType().getRank(); ++d) {
          int64_t offset = slice.getStaticOffsets()[d], stride = slice.getStaticStrides()[d];
          if (dropped.test(d)) {
            at.push_back(arith::ConstantIndexOp::create(b, loc, offset));
            continue;
          }
          Value i = linalg::IndexOp::create(b, loc, next++);
          at.push_back(affine::AffineApplyOp::create(
              b, loc, AffineMap::get(1, 0, b.getAffineDimExpr(0) * stride + offset), i));
        }
        Value read = tensor::ExtractOp::create(b, loc, slice.getSource(), at);
        linalg::YieldOp::create(b, loc, read);
      });
  rewriter.replaceOp(slice, generic.getResults());
  return success();
}

/// `op` with its input `operand`, a tensor.pad of a function argument by a
/// constant, read through the pad instead: a linalg.generic over the same
/// loops whose body computes the padded index from the operand's indexing
/// map, reads the argument where that index falls inside it (clamped, so
/// every read is in bounds) and takes the padding value elsewhere. Tiled per
/// thread, a padded window is otherwise materialized in every thread's
/// private memory (a 3x3 conv over 960 channels needs 69 KB of it, a dilated
/// one megabytes); read through the pad, a thread keeps nothing but its
/// accumulators.
LogicalResult readThroughPad(RewriterBase &rewriter, linalg::LinalgOp op, OpOperand &operand) {
  auto pad = operand.get().getDefiningOp<tensor::PadOp>();
  if (!pad || !isa<BlockArgument>(pad.getSource()) || op.getNumDpsInits() == 0)
    return failure();
  Value padValue = pad.getConstantPaddingValue();
  auto sourceType = cast<RankedTensorType>(pad.getSource().getType());
  SmallVector<int64_t> low;
  for (OpFoldResult l : pad.getMixedLowPad()) {
    std::optional<int64_t> v = getConstantIntValue(l);
    if (!v)
      return failure();
    low.push_back(*v);
  }
  if (!padValue || !sourceType.hasStaticShape() || op->getNumRegions() != 1)
    return failure();
  AffineMap padMap = op.getMatchingIndexingMap(&operand);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *in : op.getDpsInputOperands())
    if (in != &operand) {
      inputs.push_back(in->get());
      maps.push_back(op.getMatchingIndexingMap(in));
    }
  SmallVector<Value> inits;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    inits.push_back(init.get());
    maps.push_back(op.getMatchingIndexingMap(&init));
  }
  Location loc = op.getLoc();
  Value source = pad.getSource();
  Block &body = op->getRegion(0).front();
  rewriter.setInsertionPoint(op);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, op->getResultTypes(), inputs, inits, maps, op.getIteratorTypesArray(),
      [&](OpBuilder &b, Location loc, ValueRange args) {
        SmallVector<Value> loops;
        for (unsigned d = 0; d < op.getNumLoops(); ++d)
          loops.push_back(linalg::IndexOp::create(b, loc, d));
        Value inside;
        SmallVector<Value> at;
        for (unsigned r = 0; r < padMap.getNumResults(); ++r) {
          Value padded = affine::AffineApplyOp::create(b, loc, padMap.getSubMap({r}), loops);
          Value index = arith::SubIOp::create(b, loc, padded,
                                              arith::ConstantIndexOp::create(b, loc, low[r]));
          Value zero = arith::ConstantIndexOp::create(b, loc, 0);
          Value size = arith::ConstantIndexOp::create(b, loc, sourceType.getDimSize(r));
          Value ok = arith::AndIOp::create(
              b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, index, zero),
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index, size));
          inside = inside ? arith::AndIOp::create(b, loc, inside, ok).getResult() : ok;
          at.push_back(arith::SelectOp::create(b, loc, ok, index, zero));
        }
        Value read = tensor::ExtractOp::create(b, loc, source, at);
        Value value = inside ? arith::SelectOp::create(b, loc, inside, read, padValue).getResult()
                             : read;
        IRMapping mapping;
        unsigned next = 0;
        for (OpOperand &o : op->getOpOperands())
          mapping.map(body.getArgument(o.getOperandNumber()),
                      &o == &operand ? value : args[next++]);
        for (Operation &inner : body.without_terminator())
          b.clone(inner, mapping);
        SmallVector<Value> yields;
        for (Value v : body.getTerminator()->getOperands())
          yields.push_back(mapping.lookupOrDefault(v));
        linalg::YieldOp::create(b, loc, yields);
      });
  rewriter.replaceOp(op, generic.getResults());
  return success();
}

struct KilnGPUDistributePass : kiln::impl::KilnGPUDistributeBase<KilnGPUDistributePass> {
  using KilnGPUDistributeBase::KilnGPUDistributeBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(kDispatchAttr) || func->hasAttr(kWorkgroupCountAttr))
      return;
    OpBuilder b(func);
    auto record = [&](int64_t tiles) {
      func->setAttr(kThreadTilesAttr, b.getI64IntegerAttr(tiles));
      func->setAttr(kWorkgroupSizeAttr, b.getI64IntegerAttr(workgroupSize));
      func->setAttr(kWorkgroupCountAttr,
                    b.getI64IntegerAttr(llvm::divideCeil(tiles, workgroupSize)));
    };
    // Concatenations become tileable generics (the last insert of each
    // chain; the earlier ones then die).
    SmallVector<tensor::InsertSliceOp> lastInserts;
    func.walk([&](tensor::InsertSliceOp insert) {
      if (!llvm::any_of(insert->getUsers(),
                        [](Operation *user) { return isa<tensor::InsertSliceOp>(user); }))
        lastInserts.push_back(insert);
    });
    {
      IRRewriter rewriter(func.getContext());
      for (tensor::InsertSliceOp insert : lastInserts)
        (void)concatToGeneric(rewriter, insert);
      // Windows over padded arguments (convs, pools) read through the pad.
      SmallVector<std::pair<linalg::LinalgOp, unsigned>> padded;
      func.walk([&](linalg::LinalgOp op) {
        for (OpOperand *in : op.getDpsInputOperands())
          if (in->get().getDefiningOp<tensor::PadOp>()) {
            padded.push_back({op, in->getOperandNumber()});
            break;
          }
      });
      for (auto [op, number] : padded)
        (void)readThroughPad(rewriter, op, op->getOpOperand(number));
      // A slice as the dispatch's result is read by every thread.
      auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
      for (Value result : ret.getOperands()) {
        while (isa_and_nonnull<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(
            result.getDefiningOp()))
          result = result.getDefiningOp()->getOperand(0);
        if (auto slice = result.getDefiningOp<tensor::ExtractSliceOp>())
          (void)sliceToGeneric(rewriter, slice);
      }
    }
    TilingInterface consumer = findDispatchConsumer(func);
    if (!consumer)
      return record(1); // one thread computes everything
    IRRewriter rewriter(consumer);
    SmallVector<int64_t> bounds;
    for (Range r : consumer.getIterationDomain(rewriter)) {
      std::optional<int64_t> size = getConstantIntValue(r.size);
      if (!size)
        return (void)(func.emitError("dynamic iteration domain in a dispatch"),
                      signalPassFailure());
      bounds.push_back(*size);
    }
    SmallVector<int64_t> tiles = chooseThreadTiles(func, consumer, bounds);
    int64_t count = 1;
    for (auto [tile, bound] : llvm::zip(tiles, bounds))
      if (tile)
        count *= llvm::divideCeil(bound, tile);
    if (count == 1)
      return record(1);

    if (failed(tileAndFuseIntoForall(consumer, tiles)))
      return (void)(consumer->emitError("failed to tile into gfx threads"), signalPassFailure());
    // Slices of an empty tensor are empty tensors of the slice's size: a
    // fused producer's init must not keep the whole output alive in every
    // thread's private memory.
    RewritePatternSet patterns(&getContext());
    tensor::populateFoldTensorEmptyPatterns(patterns);
    if (failed(applyPatternsGreedily(func, std::move(patterns))))
      return signalPassFailure();
    record(count);
  }
};
} // namespace
