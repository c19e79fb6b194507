//===- Occupancy.h - Waves per SIMD a gfx kernel allows ---------*- C++ -*-===//
//
// How many waves of a kernel a SIMD holds at once, from the kernel's
// resources (VGPRs, SGPRs, LDS, workgroup size) and the target's limits in
// the gfx target table. kiln-inspect reports it for every gfx kernel.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_TARGETS_OCCUPANCY_H
#define KILN_COMPILER_TARGETS_OCCUPANCY_H

#include "targets/GfxTargets.h"

#include <cstdint>
#include <string>

namespace kiln::gfx {

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
Occupancy computeOccupancy(const Target &target, unsigned waveSize, uint64_t vgprs, uint64_t sgprs,
                           uint64_t ldsBytes, uint64_t workgroupSize);

} // namespace kiln::gfx

#endif // KILN_COMPILER_TARGETS_OCCUPANCY_H
