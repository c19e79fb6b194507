//===- CountFlops.cpp - the arithmetic of a dispatch, counted once --------===//
//
// kiln-count-flops: right after the lowering to linalg, before any tiling,
// the iteration space of each linalg op of a dispatch function is the work
// it does: one operation per point, two (multiply and add) for ops with a
// reduction. The sum lands in the function's `kiln.flops`, which the driver
// copies into the variant's kiln.export.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/Passes.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNCOUNTFLOPS
#include "codegen/common/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

struct KilnCountFlopsPass : kiln::impl::KilnCountFlopsBase<KilnCountFlopsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // (Kernels built before the lowering to linalg count their own.)
    if (!func->hasAttr(kDispatchAttr) || func->hasAttr(kFlopsAttr))
      return;
    uint64_t flops = 0;
    func.walk([&](linalg::LinalgOp op) {
      uint64_t points = 1;
      for (int64_t bound : op.getStaticLoopRanges())
        points *= bound > 0 ? static_cast<uint64_t>(bound) : 1;
      flops += op.getNumReductionLoops() ? 2 * points : points;
    });
    func->setAttr(kFlopsAttr, IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                               static_cast<int64_t>(flops)));
  }
};
} // namespace
