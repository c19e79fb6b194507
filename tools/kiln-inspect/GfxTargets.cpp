//===- GfxTargets.cpp - Occupancy facts of the gfx targets ----------------===//
//
// The model is the one LLVM's AMDGPU backend uses for the "; Occupancy: N"
// it prints with each kernel (AMDGPUBaseInfo.cpp getNumWavesPerEUWithNumVGPRs
// and getOccupancyWithNumSGPRs, AMDGPUSubtarget.cpp
// getOccupancyWithWorkGroupSizes), plus the LDS allocation granule, which that
// estimate leaves out (a FIXME there) but the hardware applies.
//
// Where each number comes from:
// [BaseInfo] llvm/lib/Target/AMDGPU/Utils/AMDGPUBaseInfo.cpp (IsaInfo):
//   getTotalNumVGPRs (512 with gfx90a insts; 1536/768 in wave32/64 with the
//   1.5x VGPR feature of gfx11/gfx12; 1024/512 otherwise on gfx10+),
//   getVGPRAllocGranule (8 with gfx90a insts; 24/12 with 1.5x VGPRs),
//   getMaxWavesPerEU (8 on gfx90a+, 16 on gfx10.3+), getEUsPerCU (4; 2 in CU
//   mode), getLocalMemorySize (doubled in WGP mode), getMaxWorkGroupsPerCU
//   (16 barriers, 32 in WGP mode), getOccupancyWithNumSGPRs (gfx8/9:
//   10/9/8/7 waves at <=80/<=88/<=100/more SGPRs; gfx10+ unlimited).
// [td] llvm/lib/Target/AMDGPU/AMDGPU.td: the addressable local memory size
//   features, 65536 (gfx942, gfx11, gfx12), 163840 (gfx950) and 327680
//   (gfx1250); Feature1024AddressableVGPRs (gfx1250). LLVM 22's llc rejects
//   more LDS per workgroup than these.
// [Usage] llvm/docs/AMDGPUUsage.rst, COMPUTE_PGM_RSRC2 LDS_SIZE granularity:
//   128 dwords (512 B), 320 dwords (1280 B) on GFX950, 512 dwords (2048 B) on
//   GFX125* (llvm-project PR #167614); wavefront sizes in the processor
//   table.
// [probe] Checked on this toolchain (LLVM 22.1): llc's "; Occupancy:" for
//   VGPR counts 1-256 and for LDS of 4-64 KiB at workgroup sizes 64/256/1024
//   on every target below matches this model without the LDS granule, and
//   the COMPUTE_PGM_RSRC2.LDS_SIZE llc writes (amdpal, for 513 and 2049
//   bytes) shows the granules: 512 B on gfx942, gfx1100 and gfx1201, 1280 B
//   on gfx950, 2048 B on gfx1250.
// gfx1250 (1024 VGPRs, granule 16, 320 KiB LDS per CU, no WGP mode) has no
// public ISA guide yet: its numbers are LLVM 22's model only, so they are
// marked provisional and the tool says so.
//
//===----------------------------------------------------------------------===//

#include "GfxTargets.h"

#include <algorithm>

using namespace kiln::inspect;

// Fields: name, family, wave size, max waves per SIMD, VGPR file, VGPR
// granule, wave64 halves the file, AGPRs in the VGPR count, SGPRs limit, LDS
// block, SIMDs per block, LDS per block, LDS per workgroup, LDS granule,
// workgroups per block, provisional.
static const GfxTarget kTargets[] = {
    // CDNA3 (MI300X, MI325X). VGPRs and AGPRs share 512 registers per lane
    // [BaseInfo]; 64 KiB LDS per CU [td]; 512 B LDS granule [Usage].
    {"gfx942", "CDNA3", 64, 8, 512, 8, false, true, true, "CU", 4, 65536, 65536,
     512, 16, false},
    // CDNA4 (MI350X, MI355X): as gfx942 with 160 KiB LDS [td] allocated in
    // 1280 B blocks [Usage].
    {"gfx950", "CDNA4", 64, 8, 512, 8, false, true, true, "CU", 4, 163840,
     163840, 1280, 16, false},
    // RDNA3 (W7900, 7900 XTX): 1536 VGPRs per lane in wave32, granule 24
    // [BaseInfo]; 64 KiB per workgroup [td], 128 KiB per WGP (4 SIMDs, 32
    // workgroups) in the default WGP mode [BaseInfo].
    {"gfx1100", "RDNA3", 32, 16, 1536, 24, true, false, false, "WGP", 4, 131072,
     65536, 512, 32, false},
    // RDNA4 (R9700, 9070 XT): the same figures as gfx1100.
    {"gfx1201", "RDNA4", 32, 16, 1536, 24, true, false, false, "WGP", 4, 131072,
     65536, 512, 32, false},
    // MI400 series: 1024 VGPRs, granule 16, 16 waves per SIMD, 320 KiB LDS
    // per CU in 2048 B blocks, 4 SIMDs and 16 workgroups per CU (LLVM 22's
    // model [probe], [td], [Usage]; provisional).
    {"gfx1250", "gfx12.5", 32, 16, 1024, 16, false, false, false, "CU", 4,
     327680, 327680, 2048, 16, true},
};

const GfxTarget *kiln::inspect::lookupGfxTarget(const std::string &name) {
  for (const GfxTarget &target : kTargets)
    if (name == target.name)
      return &target;
  return nullptr;
}

std::string kiln::inspect::knownGfxTargets() {
  std::string names;
  for (const GfxTarget &target : kTargets)
    names += (names.empty() ? "" : ", ") + std::string(target.name);
  return names;
}

// Callers keep `a` small enough for alignTo not to overflow (the figures come
// from untrusted metadata).
static uint64_t divideCeil(uint64_t a, uint64_t b) {
  return a / b + (a % b != 0);
}
static uint64_t alignTo(uint64_t a, uint64_t b) { return divideCeil(a, b) * b; }

/// Waves per SIMD when `workgroups` workgroups of `wavesPerWorkgroup` waves
/// are spread evenly over the block's SIMDs: the busiest SIMD's count, at
/// least 1 and at most the maximum (as LLVM's estimate reports it).
static unsigned wavesFromWorkgroups(const GfxTarget &t, uint64_t workgroups,
                                    uint64_t wavesPerWorkgroup) {
  uint64_t waves = divideCeil(workgroups * wavesPerWorkgroup, t.simdsPerBlock);
  return unsigned(std::clamp<uint64_t>(waves, 1, t.maxWavesPerSimd));
}

Occupancy kiln::inspect::computeOccupancy(const GfxTarget &t, unsigned waveSize,
                                          uint64_t vgprs, uint64_t sgprs,
                                          uint64_t ldsBytes,
                                          uint64_t workgroupSize) {
  Occupancy o;
  uint64_t vgprFile = t.vgprFile, vgprGranule = t.vgprGranule;
  if (waveSize != t.waveSize) {
    if (!(t.wave64HalvesFile && waveSize == 64)) {
      o.note =
          "wave" + std::to_string(waveSize) + " is not modeled on " + t.name;
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
    o.note = std::to_string(vgprs) + " VGPRs exceed the " +
             std::to_string(vgprFile) + " a SIMD lane has";
  } else {
    o.byVgprs = unsigned(std::clamp<uint64_t>(
        vgprFile / alignTo(vgprs, vgprGranule), 1, maxWaves));
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
                       : std::min<uint64_t>(waveSlots / wavesPerWorkgroup,
                                            t.workgroupsPerBlock);
  o.byWorkgroups = wavesFromWorkgroups(t, slots, wavesPerWorkgroup);

  // LDS: whole granules out of what the block's workgroups share.
  o.byLds = unsigned(maxWaves);
  uint64_t fit = 0;
  if (ldsBytes <= t.ldsPerWorkgroup && ldsBytes != 0)
    fit = t.ldsPerBlock / alignTo(ldsBytes, t.ldsGranule);
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
