//===- EmuDevice.h - Emulated gfx kernels on CPU fibers ---------*- C++ -*-===//
//
// The emu:<gfx> device runs the emulated code object of a gfx target (the
// gfx kernels compiled for the host, EmuAbi.h) on the cpu device's thread
// pool. Each pool thread runs whole workgroups: every lane of the workgroup
// is a fiber on its own 256 KiB stack (kept per thread, reused across
// dispatches), the lanes share an LDS buffer filled with 0xFF bytes (NaN as
// floats) before each workgroup, and a scheduler runs them round-robin, each
// until it finishes or calls a hook:
//
//   barrier   waits until every unfinished lane of the workgroup is at a
//             barrier, and all of them at the same one;
//   matrix    waits until every lane of its wave is at the same matrix
//             instruction with the same flags, then runs it for the wave
//             (EmuMatrix.h) and hands each lane its D elements.
//
// Lanes run in order on even workgroups and in reverse on odd ones, so a
// missing barrier shows up as a wrong result. What cannot complete is an
// error that names the dispatch, workgroup, wave, sites and lanes: lanes at
// different barriers or matrix instructions, a wave whose lanes cannot all
// reach its matrix instruction (a deadlock), copies of an operand that
// differ, an instruction the chip does not have.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SRC_EMUDEVICE_H
#define KILN_RUNTIME_SRC_EMUDEVICE_H

#include "kiln/runtime.h"
#include "kiln/emu_abi.h"
#include "EmuMatrix.h"
#include "EmuStats.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::rt {

class ThreadPool;

/// Lanes per workgroup the device runs at most (the gfx limit).
constexpr uint32_t kEmuMaxWorkgroupSize = 1024;
/// LDS bytes per workgroup the device provides at most.
constexpr uint32_t kEmuMaxLdsBytes = 1u << 20;
/// The stack of every lane (kernels may keep up to 64 KiB of private arrays).
constexpr size_t kEmuLaneStackBytes = 256 * 1024;

/// One emulated kernel launch.
struct EmuLaunch {
  KilnEmuKernelFn fn = nullptr;
  void *const *bindings = nullptr;
  uint64_t workgroupCount = 0; // at most 2^32 (blockId is 32-bit)
  uint32_t workgroupSize = 0;  // lanes, 1 to kEmuMaxWorkgroupSize
  uint32_t ldsBytes = 0;       // at most kEmuMaxLdsBytes
  /// Names the launch in messages, e.g. "dispatch 3 ('dispatch_3_matmul')".
  std::string where;
  /// Non-null: the kernel reports its LDS and global accesses (sets
  /// KilnEmuLane::accessStats) and they are added here (EmuStats.h).
  EmuStats *stats = nullptr;
  /// Global addresses inside one of these count from its start.
  std::vector<EmuRegion> regions;
};

/// Runs every workgroup of `launch` on `pool` (nullptr: on the calling
/// thread) as emulated `chip`. The first error stops the remaining
/// workgroups and is returned: KILN_STATUS_INVALID_ARTIFACT for a kernel
/// that cannot run as written (mismatched barriers or matrix instructions, a
/// deadlock, differing operand copies, bad flags), KILN_STATUS_UNSUPPORTED
/// for an instruction the chip lacks, KILN_STATUS_OUT_OF_MEMORY when stacks
/// cannot be mapped. Messages start "emu:<chip>: <where>, workgroup N".
/// Always KILN_STATUS_UNSUPPORTED on hosts without fibers.
kiln_status_t emuRun(ThreadPool *pool, const emu::Chip &chip,
                     const EmuLaunch &launch);

/// Checks that the device can run a kernel with this table entry; `item`
/// prefixes the message.
kiln_status_t emuCheckKernel(const std::string &item, uint64_t workgroupCount,
                             const uint32_t *workgroupSize, size_t dims,
                             uint32_t ldsBytes);

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_EMUDEVICE_H
