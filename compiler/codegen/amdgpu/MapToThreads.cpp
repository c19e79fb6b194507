//===- MapToThreads.cpp - per-thread scf.forall -> gfx thread ids ---------===//
//
// After bufferization, the forall of kiln-gpu-distribute is replaced by its
// body, run by the thread whose global id equals the iteration's linear
// index. Block sizes are constants, so the id needs no gpu.block_dim.
// Temporaries become private-memory allocas at the function entry (a GPU
// kernel has no heap, and allocas elsewhere would grow the stack
// dynamically). A temporary whose size depends on the thread (a padded
// window's interior clipped at the border) gets an alloca of its constant
// upper bound, derived by interval arithmetic over the affine min/max the
// tiling built (ValueBoundsConstraintSet gives no upper bound of an
// affine.max), viewed at its actual size.
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

/// A closed integer interval.
struct Range {
  int64_t lo, hi;
};

/// The range of `expr` over `dims` and `syms`, or nullopt when it involves
/// more than sums, constant multiples and divisions by positive constants.
std::optional<Range> exprRange(AffineExpr expr, ArrayRef<Range> dims,
                               ArrayRef<Range> syms) {
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return Range{c.getValue(), c.getValue()};
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return dims[d.getPosition()];
  if (auto s = dyn_cast<AffineSymbolExpr>(expr))
    return syms[s.getPosition()];
  auto bin = cast<AffineBinaryOpExpr>(expr);
  std::optional<Range> l = exprRange(bin.getLHS(), dims, syms);
  std::optional<Range> r = exprRange(bin.getRHS(), dims, syms);
  if (!l || !r)
    return std::nullopt;
  switch (expr.getKind()) {
  case AffineExprKind::Add:
    return Range{l->lo + r->lo, l->hi + r->hi};
  case AffineExprKind::Mul: {
    int64_t p[] = {l->lo * r->lo, l->lo * r->hi, l->hi * r->lo, l->hi * r->hi};
    return Range{*llvm::min_element(p), *llvm::max_element(p)};
  }
  case AffineExprKind::FloorDiv:
  case AffineExprKind::CeilDiv:
    if (r->lo != r->hi || r->lo <= 0)
      return std::nullopt;
    if (expr.getKind() == AffineExprKind::FloorDiv)
      return Range{llvm::divideFloorSigned(l->lo, r->lo),
                   llvm::divideFloorSigned(l->hi, r->lo)};
    return Range{llvm::divideCeilSigned(l->lo, r->lo),
                 llvm::divideCeilSigned(l->hi, r->lo)};
  case AffineExprKind::Mod:
    if (r->lo != r->hi || r->lo <= 0)
      return std::nullopt;
    return Range{0, r->lo - 1};
  default:
    return std::nullopt;
  }
}

/// The range of index value `value` in a per-thread tile: constants, the
/// bounds of loop induction variables, and affine apply/min/max over them.
std::optional<Range> valueRange(Value value, unsigned depth = 0) {
  if (depth > 32)
    return std::nullopt;
  if (std::optional<int64_t> c = getConstantIntValue(value))
    return Range{*c, *c};
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    Operation *owner = arg.getOwner()->getParentOp();
    auto loop = dyn_cast_or_null<LoopLikeOpInterface>(owner);
    if (!loop)
      return std::nullopt;
    std::optional<SmallVector<Value>> ivs = loop.getLoopInductionVars();
    std::optional<SmallVector<OpFoldResult>> lbs = loop.getLoopLowerBounds(),
                                             ubs = loop.getLoopUpperBounds();
    if (!ivs || !lbs || !ubs)
      return std::nullopt;
    for (auto [iv, lb, ub] : llvm::zip(*ivs, *lbs, *ubs)) {
      if (iv != value)
        continue;
      std::optional<int64_t> l = getConstantIntValue(lb), u = getConstantIntValue(ub);
      if (!l || !u || *u <= *l)
        return std::nullopt;
      return Range{*l, *u - 1};
    }
    return std::nullopt;
  }
  Operation *def = value.getDefiningOp();
  AffineMap map;
  if (auto op = dyn_cast<affine::AffineApplyOp>(def))
    map = op.getAffineMap();
  else if (auto op = dyn_cast<affine::AffineMinOp>(def))
    map = op.getAffineMap();
  else if (auto op = dyn_cast<affine::AffineMaxOp>(def))
    map = op.getAffineMap();
  else
    return std::nullopt;
  SmallVector<Range> operands;
  for (Value operand : def->getOperands()) {
    std::optional<Range> r = valueRange(operand, depth + 1);
    if (!r)
      return std::nullopt;
    operands.push_back(*r);
  }
  ArrayRef<Range> dims = ArrayRef(operands).take_front(map.getNumDims());
  ArrayRef<Range> syms = ArrayRef(operands).drop_front(map.getNumDims());
  std::optional<Range> result;
  for (AffineExpr expr : map.getResults()) {
    std::optional<Range> r = exprRange(expr, dims, syms);
    if (!r)
      return std::nullopt;
    if (!result)
      result = r;
    else if (isa<affine::AffineMinOp>(def))
      result = Range{std::min(result->lo, r->lo), std::min(result->hi, r->hi)};
    else
      result = Range{std::max(result->lo, r->lo), std::max(result->hi, r->hi)};
  }
  return result;
}

/// The static type that holds every instance of `alloc` (its dynamic sizes
/// replaced by their constant upper bounds), or failure when a size has
/// none.
FailureOr<MemRefType> upperBoundType(memref::AllocOp alloc) {
  MemRefType type = alloc.getType();
  SmallVector<int64_t> shape(type.getShape());
  unsigned next = 0;
  for (int64_t &dim : shape) {
    if (!ShapedType::isDynamic(dim))
      continue;
    std::optional<Range> range = valueRange(alloc.getDynamicSizes()[next++]);
    if (!range)
      return failure();
    dim = std::max<int64_t>(range->hi, 0);
  }
  return MemRefType::get(shape, type.getElementType(), MemRefLayoutAttrInterface{},
                         type.getMemorySpace());
}

/// `storage` (static, contiguous) viewed as `alloc`'s type at `alloc`'s
/// (dynamic) sizes, contiguous row-major.
Value viewAtSize(OpBuilder &b, memref::AllocOp alloc, Value storage) {
  Location loc = alloc.getLoc();
  SmallVector<OpFoldResult> sizes = alloc.getMixedSizes();
  SmallVector<OpFoldResult> strides(sizes.size());
  AffineExpr s0, s1;
  bindSymbols(b.getContext(), s0, s1);
  OpFoldResult stride = b.getIndexAttr(1);
  for (int64_t i = sizes.size() - 1; i >= 0; --i) {
    strides[i] = stride;
    stride = affine::makeComposedFoldedAffineApply(b, loc, s0 * s1, {stride, sizes[i]});
  }
  return memref::ReinterpretCastOp::create(b, loc, alloc.getType(), storage,
                                           b.getIndexAttr(0), sizes, strides);
}

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
      FailureOr<MemRefType> type = upperBoundType(alloc);
      if (failed(type)) {
        alloc.emitError("temporary in a gfx kernel whose size has no upper "
                        "bound known at compile time");
        return signalPassFailure();
      }
      privateBytes += type->getNumElements() *
                      llvm::divideCeil(type->getElementTypeBitWidth(), 8);
      if (privateBytes > kMaxPrivateBytes) {
        alloc.emitError("per-thread temporaries of ")
            << privateBytes << " bytes exceed the " << kMaxPrivateBytes
            << " bytes a gfx thread may use";
        return signalPassFailure();
      }
      b.setInsertionPointToStart(&entry);
      Value alloca = memref::AllocaOp::create(b, alloc.getLoc(), *type,
                                              alloc.getAlignmentAttr());
      if (*type != alloc.getType()) {
        b.setInsertionPoint(alloc);
        alloca = viewAtSize(b, alloc, alloca);
      }
      alloc.replaceAllUsesWith(alloca);
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
