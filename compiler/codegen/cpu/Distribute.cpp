//===- Distribute.cpp - dispatch function -> workgroups with fused tiles --===//
//
// The last computation of a dispatch function (the op producing its result,
// seen through trailing reshapes) is tiled along its outer parallel loops
// into an scf.forall, and every producer is fused into the tile. Each forall
// iteration is one workgroup: it computes its slice of the whole fused chain
// (conv + bias + relu + residual) while the data is hot.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Interfaces/TilingInterface.h"

#include <numeric>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNCPUDISTRIBUTE
#include "codegen/cpu/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

/// Iteration points (of the consumer's loop nest) below which a workgroup is
/// not worth its scheduling cost.
constexpr int64_t kMinPointsPerWorkgroup = 16384;

/// Workgroups a dispatch with enough work should have at least. Splitting an
/// im2col convolution's output channels repeats its gather per workgroup, so
/// this is kept low (measured on 2 cores: 4 beats 8 and 16 at 1 and 2
/// threads); a many-core host wants the gather as a dispatch of its own.
constexpr int64_t kMinWorkgroups = 4;

/// Panels the few-row panel kernel computes per step (its 4 vectors of 16
/// columns on AVX-512, 2 panels of 32): workgroups of few-row panel products
/// get whole multiples of this many panels where the columns allow.
constexpr int64_t kPanelKernelPanels = 4;

/// An f32 im2col convolution's workgroups gather a block of K x P floats (P
/// the image points they compute). Whole output rows whose points fill
/// 16-lane vectors (lcm(OW, 16): 4 rows of 28, 2 of 56) let
/// kiln-cpu-vectorize-gemm take its 8 x 32 register tile with no partial
/// vector; they are taken while the block stays this small (in L2 with the
/// weights' k block). One thread, 3x3 convolutions: 128 -> 128 channels at
/// stride 2 from 56 x 56 (OW 28; K 1152) 2.19 -> 1.62 ms; 64 -> 64 at
/// stride 1 on 56 x 56 (OW 56; K 576) 1.96 -> 1.68 ms; 256 -> 256 at stride
/// 2 from 28 x 28 (OW 14, K 2304: a 1 MiB block for 8 rows) was slower at
/// 5 and 8 rows than at 2 (2.27 -> 2.45 ms), and stays at 2.
constexpr int64_t kIm2ColBlockBytes = 768 * 1024;
constexpr int64_t kIm2ColMaxPoints = 128;

/// Columns per workgroup of a W4A8 product at least (4096 x 4096 at batch
/// 1, one thread: 64 workgroups of 64 columns 0.41 ms, 16 of 256 0.33 ms).
constexpr int64_t kW4A8Columns = 256;

/// Whether `op` is a generic whose loops are all parallel.
static bool isElementwiseGeneric(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  return generic && generic.getNumLoops() == generic.getNumParallelLoops() &&
         generic.hasPureTensorSemantics();
}

/// The parallel loops among `iterators`, outermost first.
static SmallVector<unsigned> parallelLoops(ArrayRef<utils::IteratorType> iterators) {
  SmallVector<unsigned> parallel;
  for (auto [i, it] : llvm::enumerate(iterators))
    if (it == utils::IteratorType::parallel)
      parallel.push_back(i);
  return parallel;
}

/// A dispatch whose result is a strided slice of an argument (the
/// subsampling kiln-unstride-pointwise-convs puts before a strided 1x1
/// convolution) has no linalg op: its copy would be one workgroup, a
/// strided memref copy (ResNet-50's layer2 subsampling: 40 us on one
/// thread, 110 on two). As a copy generic it is tiled into workgroups like
/// any elementwise op, each copying its block (62 us on two).
/// A dispatch whose result is an elementwise op reading an input transposed
/// (NHWC -> NCHW, perhaps with a residual add and a ReLU) whose loops
/// include runs that stay adjacent and in order in every operand (H and W
/// both ways): those runs are collapsed into one loop, so that the
/// transposed read becomes the 2-d [H W, C] -> [C, H W] one that
/// kiln-cpu-vectorize-gemm moves in 16 x 16 tiles. Uncollapsed, a 7 x 7
/// image (ResNet-50's layer4, after kiln-transpose-pointwise-convs) was
/// too short for the tiles and moved a column of 7 elements, 2048 floats
/// apart, at a time.
static void collapseTransposedReads(func::FuncOp func) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(findDispatchConsumer(func).getOperation());
  if (!isElementwiseGeneric(generic) || !cpu::transposedReadLoop(generic))
    return;
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (!llvm::all_of(maps, [](AffineMap m) { return m.isPermutation(); }))
    return;
  SmallVector<ReassociationIndices> runs;
  for (int64_t d = 0; d + 1 < int64_t(generic.getNumLoops()); ++d) {
    ReassociationIndices pair = {d, d + 1};
    if (!linalg::areDimSequencesPreserved(maps, pair))
      continue;
    if (!runs.empty() && runs.back().back() == d)
      runs.back().push_back(d + 1);
    else
      runs.push_back(pair);
  }
  if (runs.empty())
    return;
  IRRewriter rewriter(generic);
  FailureOr<linalg::CollapseResult> collapsed =
      linalg::collapseOpIterationDims(generic, runs, rewriter);
  if (succeeded(collapsed))
    rewriter.replaceOp(generic, collapsed->results);
}

static void sliceResultsToCopies(func::FuncOp func) {
  Block &body = func.getBody().front();
  if (!body.getOps<linalg::LinalgOp>().empty())
    return;
  Operation *ret = body.getTerminator();
  for (OpOperand &operand : ret->getOpOperands()) {
    auto slice = operand.get().getDefiningOp<tensor::ExtractSliceOp>();
    if (!slice || !isa<BlockArgument>(slice.getSource()) || !slice.getResultType().hasStaticShape())
      continue;
    OpBuilder b(ret);
    Location loc = slice.getLoc();
    RankedTensorType type = slice.getResultType();
    Value empty = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
    unsigned rank = type.getRank();
    SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(rank));
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    auto copy = linalg::GenericOp::create(
        b, loc, TypeRange{type}, ValueRange{slice.getResult()}, ValueRange{empty}, maps, iterators,
        [](OpBuilder &nb, Location nloc, ValueRange args) {
          linalg::YieldOp::create(nb, nloc, args[0]);
        });
    operand.set(copy.getResult(0));
  }
}

/// Whether `op`'s body divides or calls a math function (square roots,
/// exponentials, ...): many cycles per element.
static bool hasCostlyOps(linalg::GenericOp op) {
  return op.getBody()
      ->walk([](Operation *inner) {
        if (isa<arith::DivFOp, arith::RemFOp>(inner) ||
            inner->getDialect()->getNamespace() == "math")
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

/// Elementwise ops of a dispatch that feed only one other elementwise op are
/// merged into it (linalg's elementwise fusion), and the merged op reads a
/// value it used to get twice through one operand: SiLU (x * sigmoid(x)),
/// HardSwish and GELU written out become one op that reads the convolution
/// or matmul before it once, so that the register tiles of
/// kiln-cpu-vectorize-gemm take it as their epilogue (a product read by
/// two ops was stored, then read back by each).
static void fuseElementwiseChains(func::FuncOp func) {
  IRRewriter rewriter(func.getContext());
  // Transposes are elementwise generics with a permuted input map: as such
  // they merge into the ops that read them (a transpose, a layer scale and
  // a residual add become one op reading the untransposed input).
  SmallVector<linalg::TransposeOp> transposes;
  func.walk([&](linalg::TransposeOp op) { transposes.push_back(op); });
  for (linalg::TransposeOp op : transposes) {
    rewriter.setInsertionPoint(op);
    (void)linalg::generalizeNamedOp(rewriter, op);
  }
  bool changed = true;
  while (changed) {
    changed = false;
    SmallVector<linalg::GenericOp> consumers;
    func.walk([&](linalg::GenericOp op) {
      if (isElementwiseGeneric(op))
        consumers.push_back(op);
    });
    for (linalg::GenericOp consumer : consumers) {
      for (OpOperand *operand : consumer.getDpsInputOperands()) {
        Operation *producer = operand->get().getDefiningOp();
        // Not a costly producer the consumer broadcasts: merged, it would
        // be computed again for every element it is broadcast to (a layer
        // norm's 1 / sqrt(var + eps) per row became a square root and a
        // division per element, 60% of ViT-B/16's layer norms). Cheap ones
        // (a hard sigmoid's scale and clamp) still merge.
        if (!isElementwiseGeneric(producer) || !producer->hasOneUse() ||
            producer->getParentRegion() != consumer->getParentRegion() ||
            (!consumer.getMatchingIndexingMap(operand).isPermutation() &&
             hasCostlyOps(cast<linalg::GenericOp>(producer))) ||
            !linalg::areElementwiseOpsFusable(operand))
          continue;
        rewriter.setInsertionPoint(consumer);
        FailureOr<linalg::ElementwiseOpFusionResult> fused =
            linalg::fuseElementwiseOps(rewriter, operand);
        if (failed(fused))
          continue;
        for (auto [from, to] : fused->replacements)
          rewriter.replaceAllUsesWith(from, to);
        rewriter.eraseOp(consumer);
        if (producer->use_empty())
          rewriter.eraseOp(producer);
        changed = true;
        break;
      }
      if (changed)
        break;
    }
  }
  // One operand per value read.
  SmallVector<Operation *> generics;
  func.walk([&](linalg::GenericOp op) { generics.push_back(op); });
  RewritePatternSet patterns(func.getContext());
  linalg::populateEraseUnusedOperandsAndResultsPatterns(patterns);
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
  (void)applyOpPatternsGreedily(generics, std::move(patterns), config);
}

/// Output rows a workgroup of a window op (depthwise or grouped
/// convolution, pool) gets at least: kiln-cpu-vectorize-gemm tiles its taps
/// over 4 output rows, 4 independent multiply-adds per tap. With one row per
/// workgroup (rows are the outermost loop of such an op, split first) each
/// tile was one chain of dependent multiply-adds, 49 long for ConvNeXt's 7x7
/// depthwise convolutions (3x ONNX Runtime's time).
constexpr int64_t kWindowRows = 4;

/// The loop of `consumer` (the dispatch's last op `isWindow` picks, or an
/// elementwise op after it with the same result shape) that runs over
/// dimension `dim` of that op's result, if the dispatch has one.
static std::optional<unsigned> windowResultLoop(func::FuncOp func, TilingInterface consumer,
                                                function_ref<bool(Operation *)> isWindow,
                                                function_ref<unsigned(unsigned rank)> dim) {
  Operation *window = nullptr;
  func.walk([&](Operation *op) {
    if (isWindow(op))
      window = op;
  });
  auto linalgConsumer = dyn_cast<linalg::LinalgOp>(consumer.getOperation());
  if (!window || !linalgConsumer || linalgConsumer->getNumResults() != 1)
    return std::nullopt;
  auto result = cast<RankedTensorType>(window->getResult(0).getType());
  auto consumed = dyn_cast<RankedTensorType>(linalgConsumer->getResult(0).getType());
  if (!consumed || consumed.getShape() != result.getShape())
    return std::nullopt;
  AffineMap map = linalgConsumer.getIndexingMapMatchingResult(linalgConsumer->getResult(0));
  unsigned d = dim(result.getRank());
  if (!map.isProjectedPermutation() || map.getNumResults() <= d)
    return std::nullopt;
  return map.getDimPosition(d);
}

/// The loop of `consumer` that runs over the output rows of the dispatch's
/// window op (the op itself, or an elementwise op after it of the same
/// rank), if the dispatch has one.
static std::optional<unsigned> windowRowLoop(func::FuncOp func, TilingInterface consumer) {
  // NCHW (NGCHW) results: the rows are the second-to-last dimension.
  return windowResultLoop(
      func, consumer, [](Operation *op) { return cpu::isWindowOp(op); },
      [](unsigned rank) { return rank - 2; });
}

/// The loop of `consumer` that runs over the output channels of the
/// dispatch's grouped convolution ([N, G, F/G, H, W]: the third dimension)
/// and the register tile's channels (cpu::groupedChannelTile), if the
/// dispatch has one whose tile takes more than one channel.
static std::optional<std::pair<unsigned, int64_t>> windowChannelLoop(func::FuncOp func,
                                                                      TilingInterface consumer) {
  int64_t channels = 1;
  std::optional<unsigned> loop = windowResultLoop(
      func, consumer,
      [&](Operation *op) {
        if (!isa<linalg::Conv2DNgchwGfchwOp>(op))
          return false;
        channels = cpu::groupedChannelTile(op);
        return true;
      },
      [](unsigned) { return 2u; });
  if (!loop || channels == 1)
    return std::nullopt;
  return std::make_pair(*loop, channels);
}

/// The loop of an elementwise `consumer` along which one of its inputs is
/// contiguous when that is not its innermost loop (the input is read
/// transposed), if any: kiln-cpu-vectorize-gemm reads such an input in
/// 16 x 16 tiles, so workgroups take that loop in multiples of 16.
static std::optional<unsigned> transposedLoop(TilingInterface consumer) {
  auto generic = dyn_cast<linalg::GenericOp>(consumer.getOperation());
  if (!generic || generic.getNumLoops() != generic.getNumParallelLoops())
    return std::nullopt;
  return cpu::transposedReadLoop(generic);
}

/// Tile sizes over the parallel loops so that about `target` tiles result,
/// splitting the innermost dimensions first.
/// A tile is a multiple of its dimension's granule (the register tile of the
/// vector code: rows for the second-to-last dimension, vector width for the
/// last) or the whole dimension. Only the dimensions in `tileable` are tiled.
SmallVector<int64_t> chooseTileSizes(ArrayRef<int64_t> bounds,
                                     ArrayRef<utils::IteratorType> iterators,
                                     ArrayRef<bool> tileable, int64_t target,
                                     int64_t lastGranule, bool innermostFirst,
                                     std::optional<unsigned> rowLoop = std::nullopt,
                                     std::optional<unsigned> transposedLoop = std::nullopt,
                                     std::optional<std::pair<unsigned, int64_t>> channelLoop =
                                         std::nullopt) {
  SmallVector<int64_t> tiles(bounds.size(), 0);
  // The output's last two dimensions are the last two parallel loops.
  SmallVector<unsigned> parallel = parallelLoops(iterators);
  auto granule = [&](unsigned dim) -> int64_t {
    if (transposedLoop && dim == *transposedLoop)
      return 16;
    if (channelLoop && dim == channelLoop->first)
      return channelLoop->second;
    int64_t g = 1;
    if (!parallel.empty() && dim == parallel.back())
      g = lastGranule;
    else if (parallel.size() >= 2 && dim == parallel[parallel.size() - 2])
      g = 16;
    return rowLoop && dim == *rowLoop ? std::max(g, kWindowRows) : g;
  };
  int64_t remaining = target;
  // For GEMMs, innermost first: splitting the columns keeps each
  // workgroup's panel of the right-hand side (weights of a linear layer,
  // image columns of a convolution) to itself, read once and reused by every
  // row. Other dispatches split outermost first, so that rows reduced by a
  // fused producer (softmax, normalization) are not split and recomputed.
  SmallVector<unsigned> order(parallel);
  if (innermostFirst)
    std::reverse(order.begin(), order.end());
  for (unsigned i : order) {
    if (remaining <= 1)
      break;
    if (!tileable[i])
      continue;
    int64_t bound = bounds[i], g = granule(i);
    int64_t parts = std::min<int64_t>(llvm::divideCeil(bound, g), remaining);
    if (parts <= 1)
      continue;
    // The smallest multiple of the granule at least the ideal size that
    // divides the dimension: full tiles keep every shape static (and so
    // vectorizable). No such tile: the dimension stays whole.
    int64_t tile = static_cast<int64_t>(llvm::alignTo(llvm::divideCeil(bound, parts), g));
    while (tile < bound && bound % tile != 0)
      tile += g;
    if (tile >= bound)
      continue;
    tiles[i] = tile;
    remaining = static_cast<int64_t>(llvm::divideCeil(remaining, llvm::divideCeil(bound, tile)));
  }
  return tiles;
}

/// Workgroups a GEMM dispatch should have at least when it has the work for
/// them: enough for two or three threads to share evenly (workgroups go to
/// threads as they free up).
constexpr int64_t kMinGemmWorkgroups = 8;

/// Workgroup tiles of a GEMM dispatch whose result is a matrix or a batch
/// of matrices (at most one parallel loop before the last two has an extent
/// above 1), or nothing for any other.
/// A workgroup of r rows and c columns reads r x K of the left-hand side and
/// K x c of the right-hand side for r x c x K multiply-adds, so the whole
/// dispatch reads M N K (1 / r + 1 / c): the tiles are the largest (the
/// lowest sum) that still give `minCount` workgroups, at most `maxCount`.
/// Columns are a multiple of `columnGranule` (the widest register tile)
/// when that divides N, else of 16, and rows of 16; each tile divides its
/// dimension or is all of it, so every workgroup's shape is static.
/// Splitting the columns in 16s instead (the general rule below) gave
/// ViT-B/16's 197 x 3072 x 768 MLP 48 workgroups of one 16 x 16 register
/// tile column each, which read the activations 48 times: 1.7x the time of
/// 8 workgroups of 96 columns.
static std::optional<SmallVector<int64_t>>
chooseGemmTiles(ArrayRef<int64_t> bounds, ArrayRef<utils::IteratorType> iterators,
                int64_t columnGranule, bool exactGranule, int64_t minCount, int64_t maxCount) {
  SmallVector<unsigned> parallel = parallelLoops(iterators);
  if (parallel.size() < 2)
    return std::nullopt;
  // At most one batch loop (a batched product: Winograd's points, attention
  // heads); the other leading loops have extent 1.
  std::optional<unsigned> batchDim;
  for (unsigned d : ArrayRef(parallel).drop_back(2)) {
    if (bounds[d] == 1)
      continue;
    if (batchDim)
      return std::nullopt;
    batchDim = d;
  }
  unsigned rowDim = parallel[parallel.size() - 2], columnDim = parallel.back();
  int64_t rows = bounds[rowDim], columns = bounds[columnDim];
  auto candidates = [](int64_t extent, int64_t granule) {
    SmallVector<int64_t> sizes;
    for (int64_t size = granule; size < extent; size += granule)
      if (extent % size == 0)
        sizes.push_back(size);
    sizes.push_back(extent);
    return sizes;
  };
  SmallVector<int64_t> rowTiles = candidates(rows, 16);
  // (Weights in panels are tiled in whole panels: an N that is not a
  // multiple of the panel stays whole.)
  SmallVector<int64_t> columnTiles =
      columnGranule > 0 && columns % columnGranule == 0 ? candidates(columns, columnGranule)
      : exactGranule                                    ? SmallVector<int64_t>{columns}
                                                        : candidates(columns, 16);
  // Batch tiles split the work without adding reads: of two choices that
  // read as much, the one with more workgroups (at most maxCount) balances
  // the threads better.
  int64_t batch = batchDim ? bounds[*batchDim] : 1;
  SmallVector<int64_t> batchTiles = candidates(batch, 1);
  int64_t most = 0;
  for (int64_t b : batchTiles)
    for (int64_t r : rowTiles)
      for (int64_t c : columnTiles)
        if (int64_t count = (batch / b) * (rows / r) * (columns / c); count <= maxCount)
          most = std::max(most, count);
  int64_t needed = std::min(minCount, most);
  int64_t bestB = batch, bestR = rows, bestC = columns, bestCount = 0;
  double bestCost = 0;
  bool found = false;
  for (int64_t b : batchTiles)
    for (int64_t r : rowTiles)
      for (int64_t c : columnTiles) {
        int64_t count = (batch / b) * (rows / r) * (columns / c);
        if (count < needed || count > maxCount)
          continue;
        double cost = 1.0 / static_cast<double>(r) + 1.0 / static_cast<double>(c);
        if (!found || cost < bestCost || (cost == bestCost && batchDim && count > bestCount)) {
          found = true;
          bestCost = cost;
          bestCount = count;
          bestB = b;
          bestR = r;
          bestC = c;
        }
      }
  SmallVector<int64_t> tiles(bounds.size(), 0);
  if (batchDim)
    tiles[*batchDim] = bestB == batch ? 0 : bestB;
  tiles[rowDim] = bestR == rows ? 0 : bestR;
  tiles[columnDim] = bestC == columns ? 0 : bestC;
  return tiles;
}

struct KilnCPUDistributePass
    : kiln::impl::KilnCPUDistributeBase<KilnCPUDistributePass> {
  using KilnCPUDistributeBase::KilnCPUDistributeBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // (A function with its workgroup count has its workgroup loop already:
    // kiln-cpu-winograd-kernels.)
    if (!func->hasAttr(kDispatchAttr) || func->hasAttr(kWorkgroupCountAttr))
      return;
    fuseElementwiseChains(func);
    sliceResultsToCopies(func);
    collapseTransposedReads(func);
    OpBuilder b(func);
    TilingInterface consumer = findDispatchConsumer(func);
    SmallVector<int64_t> bounds;
    if (consumer) {
      IRRewriter rewriter(consumer);
      SmallVector<Range> domain = consumer.getIterationDomain(rewriter);
      for (Range r : domain) {
        std::optional<int64_t> size = getConstantIntValue(r.size);
        if (!size)
          return (void)(func.emitError("dynamic iteration domain in a dispatch"), signalPassFailure());
        bounds.push_back(*size);
      }
    }
    SmallVector<int64_t> tiles;
    if (consumer) {
      // Small dispatches get fewer workgroups: each should carry enough work
      // to pay for its scheduling.
      // Work is measured by the largest loop nest of the dispatch (the GEMM
      // behind a bias add has its k loop on top of the output's points).
      int64_t points = 1;
      for (int64_t bound : bounds)
        points *= bound;
      func.walk([&](linalg::LinalgOp op) {
        int64_t opPoints = 1;
        for (int64_t range : op.getStaticLoopRanges())
          opPoints *= std::max<int64_t>(range, 1);
        points = std::max(points, opPoints);
      });
      int64_t target = std::clamp<int64_t>(points / kMinPointsPerWorkgroup, 1, targetWorkgroups);
      // A W4A8 product (the int4 generic that also reads amax) quantizes
      // its rows again in every workgroup: at least kW4A8Columns columns
      // each, so that this stays small next to streaming the codes.
      func.walk([&](linalg::GenericOp op) {
        if (op->hasAttr(kInt4MatmulAttr) && op.getNumDpsInputs() == 5)
          if (auto out = dyn_cast<RankedTensorType>(op.getDpsInits()[0].getType()))
            target = std::clamp<int64_t>(out.getShape().back() / kW4A8Columns, 1, target);
      });
      // A convolution's im2col gather is fused into the GEMM's workgroups;
      // tiling the output channels too would gather the same columns again
      // in every workgroup, so only the image dimension is split.
      // Tiling a gather whose maps read `p mod OW` computes its input window
      // from the tile's end points, which is only right for tiles of whole
      // output rows: the image dimension's granule is then a multiple of OW.
      SmallVector<bool> tileable(bounds.size(), true);
      // An im2col convolution's batch loops (images), split one image per
      // workgroup before its image is: each image's gather is its own, so
      // this repeats none, where a tile of image rows across the whole batch
      // gathered every image's rows in one block (a batch of 32 ran 1.6x
      // slower per image than a batch of 1).
      SmallVector<unsigned> imageBatch;
      int64_t lastGranule = 16;
      func.walk([&](Operation *op) {
        if (std::optional<Im2ColWindow> window = Im2ColWindow::get(op)) {
          int64_t outWidth = window->outWidth;
          lastGranule = outWidth * llvm::divideCeil(16, outWidth);
          // The gather's result is [N, K, P].
          int64_t whole = std::lcm(outWidth, int64_t(16));
          auto gathered = dyn_cast<RankedTensorType>(op->getResult(0).getType());
          if (gathered && gathered.getRank() == 3 && gathered.hasStaticShape() &&
              gathered.getElementType().isF32() && whole <= kIm2ColMaxPoints &&
              whole < gathered.getDimSize(2) &&
              gathered.getDimSize(1) * whole * 4 <= kIm2ColBlockBytes)
            lastGranule = whole;
          // The image is the last parallel loop (the GEMM itself may be the
          // consumer, with its reduction loop after it).
          SmallVector<utils::IteratorType> iterators = consumer.getLoopIteratorTypes();
          unsigned image = bounds.size();
          for (unsigned i = 0; i < iterators.size(); ++i)
            if (iterators[i] == utils::IteratorType::parallel)
              image = i;
          for (unsigned i = 0; i < bounds.size(); ++i)
            tileable[i] = i == image;
          // Its batch: the parallel loops before the output channels.
          SmallVector<unsigned> parallel = parallelLoops(iterators);
          imageBatch.clear();
          for (unsigned i : ArrayRef(parallel).drop_back(std::min<size_t>(2, parallel.size())))
            if (bounds[i] > 1)
              imageBatch.push_back(i);
        }
      });
      bool isGemm = false;
      int64_t panel = 0;
      func.walk([&](linalg::LinalgOp op) {
        isGemm |= linalg::isaContractionOpInterface(op) || op->hasAttr(kInt4MatmulAttr) ||
                  op->hasAttr(kPanelMatmulAttr);
        // Weights in column panels (4-bit codes [N / P, K / G, G / 2, P] or
        // [N / P, K / G, G / 8, P, 4], floats [N / P, K, P]) are tiled in
        // whole panels: the column tiles of the result, and so every offset
        // along it, are multiples of the panel when its last dimension is
        // one.
        if (op->hasAttr(kInt4MatmulAttr) || op->hasAttr(kPanelMatmulAttr))
          if (auto weights = dyn_cast<RankedTensorType>(op.getDpsInputs()[1].getType()))
            if (op->hasAttr(kInt4MatmulAttr) ? weights.getRank() >= 4 : weights.getRank() == 3)
              panel = std::max(panel, weights.getDimSize(op->hasAttr(kInt4MatmulAttr) ? 3 : 2));
      });
      // Rows of the product: its parallel loops before the last.
      int64_t rows = 1;
      SmallVector<unsigned> parallel = parallelLoops(consumer.getLoopIteratorTypes());
      if (!parallel.empty())
        for (unsigned d : ArrayRef(parallel).drop_back())
          rows *= bounds[d];
      if (panel) {
        int64_t last = 0;
        for (auto [bound, iterator] : llvm::zip(bounds, consumer.getLoopIteratorTypes()))
          if (iterator == utils::IteratorType::parallel)
            last = bound;
        if (last % panel != 0)
          tileable.assign(bounds.size(), false);
        lastGranule = std::max(lastGranule, panel);
        // The few-row panel kernel streams 4 panels' columns at a time:
        // workgroups of one panel each stream a single panel (ResNet-50's
        // classifier in 32 workgroups: 0.54 -> 0.76 ms on one thread).
        if (rows < panelGemmRows && last % (kPanelKernelPanels * panel) == 0)
          lastGranule = std::max(lastGranule, kPanelKernelPanels * panel);
      }
      // A GEMM (no gather, no panels) whose last op computes the product's
      // matrix (the contraction itself or its elementwise epilogue): tiles
      // by the operands they read.
      bool matrixConsumer =
          (isa<linalg::LinalgOp>(consumer.getOperation()) &&
           linalg::isaContractionOpInterface(cast<linalg::LinalgOp>(consumer.getOperation()))) ||
          llvm::all_of(consumer.getLoopIteratorTypes(),
                       [](utils::IteratorType it) { return it == utils::IteratorType::parallel; });
      bool gathers = !llvm::all_of(tileable, [](bool t) { return t; });
      // Products by weights in panels: the same when they have the rows of
      // a GEMM (kiln-cpu-vectorize-gemm's panel-gemm-rows: they take its
      // register tiles), not for the few-row panel kernel, bound by
      // streaming the weights.
      std::optional<SmallVector<int64_t>> gemmTiles;
      if (isGemm && !gathers && matrixConsumer && (!panel || rows >= panelGemmRows))
        gemmTiles = chooseGemmTiles(bounds, consumer.getLoopIteratorTypes(),
                                    panel ? panel : columnGranule, panel != 0,
                                    std::min(kMinGemmWorkgroups, target), targetWorkgroups);
      if (gemmTiles)
        tiles = *gemmTiles;
      else {
        int64_t images = 1;
        for (unsigned d : imageBatch)
          images *= bounds[d];
        tiles = chooseTileSizes(bounds, consumer.getLoopIteratorTypes(), tileable,
                                llvm::divideCeil(target, images), lastGranule, isGemm,
                                windowRowLoop(func, consumer), transposedLoop(consumer),
                                windowChannelLoop(func, consumer));
        for (unsigned d : imageBatch)
          tiles[d] = 1;
      }
      // Late layers have few output rows: when the image dimension alone
      // gives too few workgroups to keep the cores busy, split the output
      // channels too (the gather they repeat is small next to the GEMM).
      int64_t count = 1;
      for (auto [tile, bound] : llvm::zip(tiles, bounds))
        if (tile)
          count *= llvm::divideCeil(bound, tile);
      if (!gemmTiles && count < std::min<int64_t>(kMinWorkgroups, target)) {
        SmallVector<bool> rest(bounds.size());
        for (auto [i, t] : llvm::enumerate(tiles))
          rest[i] = !tileable[i];
        SmallVector<int64_t> more = chooseTileSizes(
            bounds, consumer.getLoopIteratorTypes(), rest,
            llvm::divideCeil(std::min<int64_t>(kMinWorkgroups, target), count), lastGranule,
            isGemm, std::nullopt, std::nullopt, windowChannelLoop(func, consumer));
        for (auto [tile, extra] : llvm::zip(tiles, more))
          if (extra)
            tile = extra;
      }
    }
    if (!consumer || llvm::all_of(tiles, [](int64_t t) { return t == 0; })) {
      func->setAttr(kWorkgroupCountAttr, b.getI64IntegerAttr(1));
      return;
    }

    if (failed(tileAndFuseIntoForall(consumer, tiles)))
      return (void)(consumer->emitError("failed to tile into workgroups"), signalPassFailure());

    int64_t count = 1;
    for (auto [tile, bound] : llvm::zip(tiles, bounds))
      if (tile)
        count *= llvm::divideCeil(bound, tile);
    func->setAttr(kWorkgroupCountAttr, b.getI64IntegerAttr(count));
  }
};
} // namespace
