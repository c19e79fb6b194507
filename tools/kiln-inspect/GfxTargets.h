//===- GfxTargets.h - Occupancy facts of the gfx targets --------*- C++ -*-===//
//
// What limits how many waves of a kernel a SIMD holds at once on each gfx
// target Kiln compiles for: the VGPR file and its allocation granule, the
// SGPR limit (gfx9 only), the LDS a CU (or WGP) shares and its allocation
// granule, and the workgroup slots. The numbers and where each one comes from
// are in GfxTargets.cpp and docs/cli.md.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_INSPECT_GFXTARGETS_H
#define KILN_TOOLS_KILN_INSPECT_GFXTARGETS_H

#include <cstdint>
#include <string>

namespace kiln::inspect {

/// The occupancy-relevant facts of one gfx target.
struct GfxTarget {
  const char *name;   // "gfx942"
  const char *family; // "CDNA3"
  unsigned waveSize;  // the native (default) wavefront size
  unsigned maxWavesPerSimd;
  /// VGPRs per lane one SIMD holds for waves of `waveSize`, and the
  /// allocation granule (on CDNA3/4 VGPRs and AGPRs share this file).
  unsigned vgprFile;
  unsigned vgprGranule;
  /// True when a kernel compiled for wave64 on this wave32 target gets half
  /// the file at half the granule (RDNA3/4); false when wave64 is unknown.
  bool wave64HalvesFile;
  /// VGPRs and AGPRs share `vgprFile`, and .vgpr_count includes the AGPRs.
  bool agprsInVgprs;
  /// gfx9 limits waves by SGPRs (LLVM's getOccupancyWithNumSGPRs table).
  bool sgprsLimit;
  /// The block whose SIMDs share LDS and workgroup slots: a CU, or a WGP
  /// (two CUs) in the WGP mode RDNA kernels are compiled for by default.
  const char *ldsBlock;
  unsigned simdsPerBlock;
  uint64_t ldsPerBlock;        // bytes the block's workgroups share
  uint64_t ldsPerWorkgroup;    // the most one workgroup may allocate
  uint64_t ldsGranule;         // allocation granule in bytes
  unsigned workgroupsPerBlock; // barrier-limited workgroup slots
  /// Figures not yet backed by a public ISA guide (LLVM's model only).
  bool provisional;
};

/// The target named `name` ("gfx942", ...), or null.
const GfxTarget *lookupGfxTarget(const std::string &name);
/// "gfx942, gfx950, ..." for messages.
std::string knownGfxTargets();

/// Waves per SIMD a kernel allows, with the limit each resource sets.
struct Occupancy {
  bool known = false; // false: the target or wave size is not modeled
  unsigned wavesPerSimd = 0;
  unsigned byVgprs = 0, bySgprs = 0, byLds = 0, byWorkgroups = 0;
  unsigned wavesPerWorkgroup = 0;
  std::string limitedBy; // "vgprs", "sgprs", "lds", "workgroups" or "-"
  std::string note;      // why it is unknown or zero, else ""
};

/// Occupancy of a kernel using `vgprs` (VGPRs + AGPRs as the metadata's
/// .vgpr_count gives them), `sgprs` (.sgpr_count), `ldsBytes` per workgroup
/// and `workgroupSize` threads, compiled for `waveSize`.
Occupancy computeOccupancy(const GfxTarget &target, unsigned waveSize,
                           uint64_t vgprs, uint64_t sgprs, uint64_t ldsBytes,
                           uint64_t workgroupSize);

} // namespace kiln::inspect

#endif // KILN_TOOLS_KILN_INSPECT_GFXTARGETS_H
