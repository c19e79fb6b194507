//===- Prefetch.cpp - kiln-cpu-prefetch-tiles ------------------------------===//
//
// A register tile whose operand block changes with the loop around its k
// loop (the next rows of a weight matrix, the next Winograd point's filter)
// reads that block from memory for the first time: at batch 1 a network's
// weights are read once per inference and are not in any cache. Each tile
// reads its block as many short streams (16 rows, a few lines each) that
// the hardware prefetchers do not follow in time, so the tile waits for
// memory instead of computing. This pass spreads software prefetches of
// the *next* tile's block over the current tile's k loop: while the FMAs
// of one tile run, the lines of the next arrive.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Analysis/TopologicalSortUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNCPUPREFETCHTILES
#include "codegen/cpu/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

constexpr int64_t kLineBytes = 64;

/// Row tiles over which the next column tile's panel of floats is
/// prefetched.
constexpr int64_t kSpreadTiles = 4;

/// Whether `loop` is the k loop of a register tile: it carries a vector
/// (the accumulator) from one step to the next and has static bounds.
bool isTileReductionLoop(scf::ForOp loop) {
  return llvm::any_of(loop.getInitArgs().getTypes(), llvm::IsaPred<VectorType>) &&
         getConstantIntValue(loop.getLowerBound()) && getConstantIntValue(loop.getStep());
}

/// The ops inside `outer` (but not `outer` itself) that compute `values`,
/// in an order they can be cloned in; none when one of them has side
/// effects or regions (then the address cannot be recomputed).
std::optional<SmallVector<Operation *>> addressSlice(ValueRange values, scf::ForOp outer,
                                                     scf::ForOp kLoop) {
  BackwardSliceOptions options;
  options.omitBlockArguments = true;
  options.inclusive = true;
  options.filter = [&](Operation *op) {
    return op != kLoop.getOperation() && outer->isProperAncestor(op);
  };
  SetVector<Operation *> slice;
  for (Value v : values)
    if (Operation *def = v.getDefiningOp(); def && options.filter(def))
      if (failed(getBackwardSlice(def, &slice, options)))
        return std::nullopt;
  for (Operation *op : slice)
    if (op->getNumRegions() != 0 || !isMemoryEffectFree(op))
      return std::nullopt;
  SmallVector<Operation *> ordered(slice.begin(), slice.end());
  // (Ops of one block: sorted by their position there, defs come first.)
  if (!computeTopologicalSorting(ordered))
    return std::nullopt;
  return ordered;
}

/// The bytes of the buffer `view` is a view of (a dispatch argument, an
/// allocation), or nullopt when unknown.
std::optional<int64_t> rootBytes(Value view) {
  while (auto op = view.getDefiningOp<ViewLikeOpInterface>())
    view = op.getViewSource();
  auto type = dyn_cast<MemRefType>(view.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return std::nullopt;
  return type.getNumElements() * llvm::divideCeil(type.getElementTypeBitWidth(), 8);
}

/// Whether an op of `slice` (an address computation) uses the induction
/// variable of `loop`.
bool dependsOn(ArrayRef<Operation *> slice, scf::ForOp loop) {
  Value iv = loop.getInductionVar();
  return llvm::any_of(slice, [&](Operation *op) { return llvm::is_contained(op->getOperands(), iv); });
}

/// A read of a register tile's k loop whose block moves with the loop
/// around it: the read and the ops (inside that loop) its address comes
/// from.
struct TileRead {
  vector::TransferReadOp read;
  SmallVector<Operation *> address;
};

/// `read` as a TileRead when it reads a 2-D tile of a buffer of at least
/// `minBytes` at an address that moves with `tileLoop`.
std::optional<TileRead> asTileRead(vector::TransferReadOp read, scf::ForOp kLoop,
                                   scf::ForOp tileLoop, int64_t minBytes,
                                   scf::ForOp steadyLoop = {}) {
  std::optional<int64_t> bytes = rootBytes(read.getBase());
  auto memrefType = dyn_cast<MemRefType>(read.getBase().getType());
  if (!bytes || *bytes < minBytes || !memrefType || read.getVectorType().getRank() != 2 ||
      !read.getPermutationMap().isMinorIdentity() || memrefType.getRank() < 2 ||
      !memrefType.getElementType().isIntOrFloat())
    return std::nullopt;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(memrefType.getStridesAndOffset(strides, offset)) || strides.back() != 1)
    return std::nullopt;
  SmallVector<Value> roots = {read.getBase()};
  llvm::append_range(roots, read.getIndices());
  std::optional<SmallVector<Operation *>> slice = addressSlice(roots, tileLoop, kLoop);
  if (!slice || !dependsOn(*slice, tileLoop) || (steadyLoop && dependsOn(*slice, steadyLoop)))
    return std::nullopt;
  return TileRead{read, std::move(*slice)};
}

/// Prefetches, at `b`'s insertion point in `kLoop`, what `t.read` will
/// read in the iteration `next` of `tileLoop`: spread over the k steps so
/// that each line of the next tile's block is asked for once.
void prefetchNextTile(const TileRead &t, scf::ForOp kLoop, scf::ForOp tileLoop, Value next,
                      OpBuilder &b, Value kRemap = {}) {
  vector::TransferReadOp read = t.read;
  Location loc = read.getLoc();
  VectorType vectorType = read.getVectorType();
  auto memrefType = cast<MemRefType>(read.getBase().getType());
  int64_t rows = vectorType.getDimSize(0), columns = vectorType.getDimSize(1);
  int64_t elementBytes = llvm::divideCeil(memrefType.getElementTypeBitWidth(), 8);
  int64_t rowBytes = columns * elementBytes;

  IRMapping mapping;
  mapping.map(tileLoop.getInductionVar(), next);
  if (kRemap)
    mapping.map(kLoop.getInductionVar(), kRemap);
  for (Operation *op : t.address)
    b.clone(*op, mapping);
  Value base = mapping.lookupOrDefault(read.getBase());
  SmallVector<Value> indices = llvm::map_to_vector(
      read.getIndices(), [&](Value v) { return mapping.lookupOrDefault(v); });
  size_t rowIndex = indices.size() - 2, columnIndex = indices.size() - 1;

  auto cst = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  auto add = [&](Value x, Value y) { return b.createOrFold<arith::AddIOp>(loc, x, y); };
  auto prefetch = [&](Value rowOffset, int64_t column) {
    SmallVector<Value> at(indices);
    at[rowIndex] = add(at[rowIndex], rowOffset);
    at[columnIndex] = add(at[columnIndex], cst(column));
    memref::PrefetchOp::create(b, loc, base, at, /*isWrite=*/false, /*localityHint=*/3,
                               /*isDataCache=*/true);
  };
  if (rowBytes >= kLineBytes) {
    // Every k step starts new lines in every row: all of them.
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < rowBytes; c += kLineBytes)
        prefetch(cst(r), c / elementBytes);
    return;
  }
  // A k step reads `rowBytes` of each row: a line lasts `steps` k steps.
  // Step i asks for the rows r with r % steps == i % steps.
  int64_t steps = kLineBytes / rowBytes;
  int64_t lower = *getConstantIntValue(kLoop.getLowerBound());
  int64_t step = *getConstantIntValue(kLoop.getStep());
  Value k = kLoop.getInductionVar();
  Value i = b.createOrFold<arith::DivUIOp>(
      loc, b.createOrFold<arith::SubIOp>(loc, k, cst(lower)), cst(step));
  Value phase = b.createOrFold<arith::RemUIOp>(loc, i, cst(steps));
  for (int64_t r = 0; r < rows; r += steps) {
    Value row = add(phase, cst(r));
    // (The last group may be short: its missing rows ask for the last row.)
    if (r + steps > rows)
      row = b.createOrFold<arith::MinUIOp>(loc, row, cst(rows - 1));
    prefetch(row, 0);
  }
}

struct KilnCPUPrefetchTilesPass
    : kiln::impl::KilnCPUPrefetchTilesBase<KilnCPUPrefetchTilesPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) {
      if (isTileReductionLoop(loop) && isa_and_nonnull<scf::ForOp>(loop->getParentOp()))
        loops.push_back(loop);
    });
    OpBuilder b(&getContext());
    llvm::SmallPtrSet<Operation *, 8> peeledLoops;
    for (scf::ForOp kLoop : loops) {
      auto tileLoop = cast<scf::ForOp>(kLoop->getParentOp());
      auto outerLoop = dyn_cast_or_null<scf::ForOp>(tileLoop->getParentOp());
      SmallVector<TileRead> reads, outerReads;
      for (auto read : kLoop.getBody()->getOps<vector::TransferReadOp>()) {
        if (std::optional<TileRead> t = asTileRead(read, kLoop, tileLoop, minBytes))
          reads.push_back(std::move(*t));
        else if (outerLoop)
          if (std::optional<TileRead> t =
                  asTileRead(read, kLoop, outerLoop, minBytes, /*steadyLoop=*/tileLoop))
            outerReads.push_back(std::move(*t));
      }
      if (!reads.empty()) {
        b.setInsertionPoint(kLoop);
        Value next = nextIteration(b, tileLoop);
        for (const TileRead &t : reads) {
          b.setInsertionPoint(t.read);
          prefetchNextTile(t, kLoop, tileLoop, next, b);
        }
      }
      // A block that stays while the tile loop runs (the right-hand panel
      // of a column tile, read by every row tile) moves with the loop
      // around it: the panel of the next column tile is prefetched during
      // the last kSpreadTiles row tiles, when the current one is in cache,
      // each asking for its share of the panel's rows (one tile asking for
      // a whole 32 KB panel in its 2048 cycles wanted more bandwidth than
      // one core gets from memory). Those iterations run as a loop of their
      // own after the tile loop (a branch in the k loop made the other row
      // tiles' code slower: ResNet-50's layer2 1x1 convolutions took 1.5x
      // as long).
      if (outerReads.empty() || tileLoop.getNumResults() != 0 ||
          !peeledLoops.insert(tileLoop.getOperation()).second)
        continue;
      std::optional<int64_t> lower = getConstantIntValue(tileLoop.getLowerBound());
      std::optional<int64_t> upper = getConstantIntValue(tileLoop.getUpperBound());
      std::optional<int64_t> step = getConstantIntValue(tileLoop.getStep());
      std::optional<int64_t> kLower = getConstantIntValue(kLoop.getLowerBound());
      std::optional<int64_t> kUpper = getConstantIntValue(kLoop.getUpperBound());
      if (!lower || !upper || !step || *step <= 0 || *upper - *lower < 2 * *step || !kLower ||
          !kUpper)
        continue;
      int64_t trips = (*upper - *lower + *step - 1) / *step;
      // (8-bit panels are a quarter of the bytes: one tile still asks in
      // time, and spreading made ResNet-50 INT8 ~2% slower.)
      bool floats = llvm::all_of(outerReads, [](TileRead &t) {
        return t.read.getVectorType().getElementTypeBitWidth() >= 32;
      });
      int64_t spread = floats ? std::min<int64_t>(kSpreadTiles, trips - 1) : 1;
      int64_t splitAt = *lower + (trips - spread) * *step;
      Location loc = tileLoop.getLoc();
      b.setInsertionPoint(tileLoop);
      Value next = nextIteration(b, outerLoop);
      Value splitValue = arith::ConstantIndexOp::create(b, loc, splitAt);
      b.setInsertionPointAfter(tileLoop);
      IRMapping cloned;
      auto tail = cast<scf::ForOp>(b.clone(*tileLoop.getOperation(), cloned));
      tail.getLowerBoundMutable().assign(splitValue);
      tileLoop.getUpperBoundMutable().assign(splitValue);
      auto tailK = cast<scf::ForOp>(cloned.lookup(kLoop.getOperation()));
      // Tile j of the last `spread` asks, at k step k, for the next panel's
      // row kLower + (j (kUpper - kLower) + k - kLower) / spread, at most the
      // last k step's (computed once per k step, for every read).
      b.setInsertionPointToStart(tailK.getBody());
      auto cst = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
      Value j = arith::DivUIOp::create(
          b, loc, arith::SubIOp::create(b, loc, tail.getInductionVar(), splitValue), cst(*step));
      Value k = arith::SubIOp::create(b, loc, tailK.getInductionVar(), cst(*kLower));
      Value row = arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, j, cst(*kUpper - *kLower)), k);
      row = arith::AddIOp::create(b, loc, arith::DivUIOp::create(b, loc, row, cst(spread)),
                                  cst(*kLower));
      int64_t kStep = getConstantIntValue(kLoop.getStep()).value_or(1);
      int64_t lastK = *kLower + (*kUpper - *kLower - 1) / kStep * kStep;
      row = arith::MinUIOp::create(b, loc, row, cst(lastK));
      for (TileRead &t : outerReads) {
        TileRead copy{cast<vector::TransferReadOp>(cloned.lookup(t.read.getOperation())), {}};
        for (Operation *op : t.address)
          copy.address.push_back(cloned.lookupOrDefault(op));
        b.setInsertionPoint(copy.read);
        prefetchNextTile(copy, tailK, outerLoop, next, b, row);
      }
    }
  }

  /// `loop`'s next value, or its own on the last iteration (past the
  /// block, a prefetch would ask for bytes nobody reads).
  static Value nextIteration(OpBuilder &b, scf::ForOp loop) {
    Location loc = loop.getLoc();
    Value iv = loop.getInductionVar();
    Value next = arith::AddIOp::create(b, loc, iv, loop.getStep());
    Value inRange =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, next, loop.getUpperBound());
    return arith::SelectOp::create(b, loc, inRange, next, iv);
  }

};

} // namespace
