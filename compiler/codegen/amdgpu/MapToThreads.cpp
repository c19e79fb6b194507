//===- MapToThreads.cpp - per-thread scf.forall -> gfx thread ids ---------===//
//
// After bufferization, the forall of kiln-gpu-distribute is replaced by its
// body, run by the thread whose global id equals the iteration's linear
// index. Block sizes are constants, so the id needs no gpu.block_dim.
// Temporaries become private-memory allocas at the function entry (a GPU
// kernel has no heap, and allocas elsewhere would grow the stack
// dynamically).
//
//===----------------------------------------------------------------------===//

#include "codegen/amdgpu/Passes.h"

#include "mlir/Dialect/Affine/Utils.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNGPUMAPTOTHREADS
#include "codegen/amdgpu/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

/// Private memory per thread the generic path allows itself (scratch is
/// slow; LLVM's hard limit is 128 KiB of stack).
constexpr int64_t kMaxPrivateBytes = 64 * 1024;

struct KilnGPUMapToThreadsPass
    : kiln::impl::KilnGPUMapToThreadsBase<KilnGPUMapToThreadsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(kDispatchAttr))
      return;
    auto sizeAttr = func->getAttrOfType<IntegerAttr>(kWorkgroupSizeAttr);
    auto tilesAttr = func->getAttrOfType<IntegerAttr>(kThreadTilesAttr);
    if (!sizeAttr || !tilesAttr)
      return; // built by the GEMM builder: already thread-level code
    if (func.getNumResults() != 0) {
      func.emitError("expected a bufferized dispatch function without results "
                     "(run kiln-destination-args first)");
      return signalPassFailure();
    }
    Block &entry = func.getBody().front();
    Location loc = func.getLoc();
    OpBuilder b(&getContext());

    // Temporaries: private allocas at the entry, no deallocation.
    SmallVector<memref::AllocOp> allocs;
    func.walk([&](memref::AllocOp alloc) { allocs.push_back(alloc); });
    int64_t privateBytes = 0;
    for (memref::AllocOp alloc : allocs) {
      if (!alloc.getType().hasStaticShape()) {
        alloc.emitError("dynamically sized temporary in a gfx kernel");
        return signalPassFailure();
      }
      privateBytes += alloc.getType().getNumElements() *
                      llvm::divideCeil(alloc.getType().getElementTypeBitWidth(), 8);
      if (privateBytes > kMaxPrivateBytes) {
        alloc.emitError("per-thread temporaries of ")
            << privateBytes << " bytes exceed the " << kMaxPrivateBytes
            << " bytes a gfx thread may use";
        return signalPassFailure();
      }
      b.setInsertionPointToStart(&entry);
      auto alloca = memref::AllocaOp::create(b, alloc.getLoc(), alloc.getType(),
                                             alloc.getAlignmentAttr());
      alloc.replaceAllUsesWith(alloca.getResult());
      alloc.erase();
    }
    SmallVector<Operation *> deallocs;
    func.walk([&](Operation *op) {
      if (isa<memref::DeallocOp, bufferization::DeallocOp>(op))
        deallocs.push_back(op);
    });
    for (Operation *op : deallocs)
      op->erase();

    // The global thread id, and the guard `id < tiles`.
    b.setInsertionPoint(entry.getTerminator());
    SmallVector<scf::ForallOp> loops(entry.getOps<scf::ForallOp>());
    int64_t tiles = tilesAttr.getInt();
    Value block = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
    Value thread = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
    Value id = affine::AffineApplyOp::create(
        b, loc, b.getAffineDimExpr(0) * sizeAttr.getInt() + b.getAffineDimExpr(1),
        ValueRange{block, thread});
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, id,
                                          arith::ConstantIndexOp::create(b, loc, tiles));
    auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
    // Everything but the allocas runs in the guarded region (a dispatch
    // that was not tiled runs on thread 0 only).
    Block *body = &guard.getThenRegion().front();
    for (Operation &op : llvm::make_early_inc_range(entry)) {
      if (&op == guard || isa<memref::AllocaOp, arith::ConstantOp>(op) ||
          op.hasTrait<OpTrait::IsTerminator>() || id.getDefiningOp() == &op ||
          inRange.getDefiningOp() == &op || block.getDefiningOp() == &op ||
          thread.getDefiningOp() == &op)
        continue;
      if (op.isBeforeInBlock(guard))
        op.moveBefore(body->getTerminator());
    }
    if (loops.empty())
      return;
    if (loops.size() > 1 || loops.front().getNumResults() != 0) {
      func.emitError("expected one bufferized thread loop");
      return signalPassFailure();
    }
    scf::ForallOp forall = loops.front();
    std::optional<SmallVector<int64_t>> lbs = getConstantIntValues(forall.getMixedLowerBound());
    std::optional<SmallVector<int64_t>> ubs = getConstantIntValues(forall.getMixedUpperBound());
    std::optional<SmallVector<int64_t>> steps = getConstantIntValues(forall.getMixedStep());
    if (!lbs || !ubs || !steps) {
      forall.emitError("thread loop bounds must be static");
      return signalPassFailure();
    }
    b.setInsertionPoint(forall);
    SmallVector<int64_t> trips;
    for (auto [lb, ub, step] : llvm::zip(*lbs, *ubs, *steps))
      trips.push_back(llvm::divideCeil(ub - lb, step));
    auto delinearize = affine::AffineDelinearizeIndexOp::create(b, loc, id, trips);
    IRMapping map;
    for (auto [iv, idx, lb, step] :
         llvm::zip(forall.getInductionVars(), delinearize.getResults(), *lbs, *steps)) {
      Value value = affine::AffineApplyOp::create(
          b, loc, b.getAffineDimExpr(0) * step + lb, ValueRange{idx});
      map.map(iv, value);
    }
    for (Operation &op : forall.getBody()->without_terminator())
      b.clone(op, map);
    forall.erase();
  }
};
} // namespace
