#include "kiln/Passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCPUWORKGROUPTOARGS
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

namespace {
struct KilnCPUWorkgroupToArgsPass : kiln::impl::KilnCPUWorkgroupToArgsBase<KilnCPUWorkgroupToArgsPass> {
  using KilnCPUWorkgroupToArgsBase::KilnCPUWorkgroupToArgsBase;
  void runOnOperation() override {}
};
} // namespace
