//===- Occupancy.cpp - Waves per SIMD a gfx kernel allows -----------------===//
//
// The model is the one LLVM's AMDGPU backend uses for the "; Occupancy: N"
// it prints with each kernel (AMDGPUBaseInfo.cpp getNumWavesPerEUWithNumVGPRs
// and getOccupancyWithNumSGPRs, AMDGPUSubtarget.cpp
// getOccupancyWithWorkGroupSizes), plus the LDS allocation granule, which that
// estimate leaves out (a FIXME there) but the hardware applies. The figures
// of each target, and their sources, are in GfxTargets.cpp.
//
//===----------------------------------------------------------------------===//

#include "targets/Occupancy.h"

#include <algorithm>

namespace kiln::gfx {

namespace {
// Callers keep `a` small enough for alignTo not to overflow (the figures come
// from untrusted metadata).
uint64_t divideCeil(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }
uint64_t alignTo(uint64_t a, uint64_t b) { return divideCeil(a, b) * b; }

/// Waves per SIMD when `workgroups` workgroups of `wavesPerWorkgroup` waves
/// are spread evenly over the block's SIMDs: the busiest SIMD's count, at
/// least 1 and at most the maximum (as LLVM's estimate reports it).
unsigned wavesFromWorkgroups(const Target &t, uint64_t workgroups, uint64_t wavesPerWorkgroup) {
  uint64_t waves = divideCeil(workgroups * wavesPerWorkgroup, t.simdsPerBlock);
  return unsigned(std::clamp<uint64_t>(waves, 1, t.maxWavesPerSimd));
}

} // namespace

Occupancy computeOccupancy(const Target &t, unsigned waveSize, uint64_t vgprs, uint64_t sgprs,
                           uint64_t ldsBytes, uint64_t workgroupSize) {
  Occupancy o;
  uint64_t vgprFile = t.vgprFile, vgprGranule = t.vgprGranule;
  if (waveSize != t.waveSize) {
    if (!(t.wave64HalvesFile && waveSize == 64)) {
      o.note = "wave" + std::to_string(waveSize) + " is not modeled on " + t.name;
      return o;
    }
    vgprFile /= 2;
    vgprGranule /= 2;
  }
  if (workgroupSize == 0) {
    o.note = "the workgroup size is unknown";
    return o;
  }
  o.known = true;
  const uint64_t maxWaves = t.maxWavesPerSimd;

  // VGPRs: whole granules out of the per-lane file [BaseInfo].
  if (vgprs < vgprGranule) {
    o.byVgprs = unsigned(maxWaves);
  } else if (vgprs > vgprFile) {
    o.byVgprs = 0;
    o.note = std::to_string(vgprs) + " VGPRs exceed the " + std::to_string(vgprFile) +
             " a SIMD lane has";
  } else {
    o.byVgprs = unsigned(std::clamp<uint64_t>(vgprFile / alignTo(vgprs, vgprGranule), 1, maxWaves));
  }

  // SGPRs: gfx8/gfx9 only [BaseInfo].
  o.bySgprs = unsigned(maxWaves);
  if (t.sgprsLimit) {
    unsigned waves = sgprs <= 80 ? 10 : sgprs <= 88 ? 9 : sgprs <= 100 ? 8 : 7;
    o.bySgprs = std::min<unsigned>(waves, unsigned(maxWaves));
  }

  // Workgroup slots: a one-wave workgroup takes a wave slot, a larger one
  // also a barrier [BaseInfo getMaxWorkGroupsPerCU].
  uint64_t waveSlots = maxWaves * t.simdsPerBlock;
  uint64_t wavesPerWorkgroup = divideCeil(workgroupSize, waveSize);
  if (wavesPerWorkgroup > waveSlots) {
    o.note = "a workgroup of " + std::to_string(workgroupSize) +
             " threads needs more waves than a " + t.ldsBlock + " holds";
    o.limitedBy = "workgroups";
    return o; // every wave count stays 0
  }
  o.wavesPerWorkgroup = unsigned(wavesPerWorkgroup);
  uint64_t slots = wavesPerWorkgroup == 1
                       ? waveSlots
                       : std::min<uint64_t>(waveSlots / wavesPerWorkgroup, t.workgroupsPerBlock);
  o.byWorkgroups = wavesFromWorkgroups(t, slots, wavesPerWorkgroup);

  // LDS: whole granules out of what the block's workgroups share.
  o.byLds = unsigned(maxWaves);
  uint64_t fit = 0;
  if (ldsBytes <= uint64_t(t.ldsPerWorkgroup) && ldsBytes != 0)
    fit = uint64_t(t.ldsPerBlock) / alignTo(ldsBytes, t.ldsGranule);
  if (ldsBytes != 0 && fit == 0) {
    o.byLds = 0;
    o.note = "LDS of " + std::to_string(ldsBytes) + " bytes exceeds the " +
             std::to_string(t.ldsPerWorkgroup) + " a workgroup can allocate";
  } else if (ldsBytes != 0) {
    o.byLds = wavesFromWorkgroups(t, fit, wavesPerWorkgroup);
  }

  o.wavesPerSimd = std::min({o.byVgprs, o.bySgprs, o.byWorkgroups, o.byLds});
  o.limitedBy = "-";
  if (o.wavesPerSimd < maxWaves) {
    // Name the first resource that sets the minimum.
    if (o.byVgprs == o.wavesPerSimd)
      o.limitedBy = "vgprs";
    else if (o.bySgprs == o.wavesPerSimd)
      o.limitedBy = "sgprs";
    else if (o.byLds == o.wavesPerSimd)
      o.limitedBy = "lds";
    else
      o.limitedBy = "workgroups";
  }
  return o;
}

} // namespace kiln::gfx
