//===- WorkgroupToArgs.cpp - the workgroup loop becomes the id argument ---===//
//
// The runtime calls a kernel once per workgroup id. After bufferization the
// workgroup loop (the scf.forall made by kiln-cpu-distribute) is replaced by
// its body, with the induction variables computed from a new trailing i64
// argument: the workgroup id, delinearized over the loop's trip counts.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNCPUWORKGROUPTOARGS
#include "codegen/cpu/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

struct KilnCPUWorkgroupToArgsPass
    : kiln::impl::KilnCPUWorkgroupToArgsBase<KilnCPUWorkgroupToArgsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(kDispatchAttr))
      return;
    if (func.getNumResults() != 0) {
      func.emitError("expected a bufferized dispatch function without results "
                     "(run kiln-destination-args first)");
      return signalPassFailure();
    }
    Block &entry = func.getBody().front();
    OpBuilder b(&getContext());
    Location loc = func.getLoc();
    Value workgroupId = entry.addArgument(b.getI64Type(), loc);
    func.setType(b.getFunctionType(entry.getArgumentTypes(), {}));

    SmallVector<scf::ForallOp> loops;
    for (auto forall : entry.getOps<scf::ForallOp>())
      loops.push_back(forall);
    if (loops.empty())
      return;
    if (loops.size() > 1 || loops.front().getNumResults() != 0) {
      func.emitError("expected one bufferized workgroup loop");
      return signalPassFailure();
    }
    scf::ForallOp forall = loops.front();
    std::optional<SmallVector<int64_t>> lbs =
        getConstantIntValues(forall.getMixedLowerBound());
    std::optional<SmallVector<int64_t>> ubs = getConstantIntValues(forall.getMixedUpperBound());
    std::optional<SmallVector<int64_t>> steps = getConstantIntValues(forall.getMixedStep());
    if (!lbs || !ubs || !steps) {
      forall.emitError("workgroup loop bounds must be static");
      return signalPassFailure();
    }

    b.setInsertionPoint(forall);
    Value linear = arith::IndexCastOp::create(b, loc, b.getIndexType(), workgroupId);
    unsigned rank = forall.getRank();
    SmallVector<Value> ivs(rank);
    for (int i = rank - 1; i >= 0; --i) {
      int64_t trips = llvm::divideCeil((*ubs)[i] - (*lbs)[i], (*steps)[i]);
      Value tripsValue = arith::ConstantIndexOp::create(b, loc, trips);
      Value index = i == 0 ? linear : arith::RemUIOp::create(b, loc, linear, tripsValue).getResult();
      if (i != 0)
        linear = arith::DivUIOp::create(b, loc, linear, tripsValue);
      Value scaled = arith::MulIOp::create(
          b, loc, index, arith::ConstantIndexOp::create(b, loc, (*steps)[i]));
      ivs[i] = arith::AddIOp::create(
          b, loc, scaled, arith::ConstantIndexOp::create(b, loc, (*lbs)[i]));
    }
    Block *body = forall.getBody();
    for (auto [iv, value] : llvm::zip(forall.getInductionVars(), ivs))
      iv.replaceAllUsesWith(value);
    body->getTerminator()->erase();
    entry.getOperations().splice(Block::iterator(forall), body->getOperations());
    forall.erase();
  }
};
} // namespace
