#include "kiln/Passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUDISTRIBUTE
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

namespace {
struct KilnCPUDistributePass : kiln::impl::KilnCPUDistributeBase<KilnCPUDistributePass> {
  using KilnCPUDistributeBase::KilnCPUDistributeBase;
  void runOnOperation() override {}
};
} // namespace
