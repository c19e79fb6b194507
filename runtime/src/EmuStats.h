//===- EmuStats.h - Memory statistics of emulated gfx kernels ---*- C++ -*-===//
//
// What static reading of a gfx kernel cannot tell: how many cycles its LDS
// accesses take once bank conflicts are counted, and how many cache lines its
// global accesses touch for the bytes they request. An emulated kernel
// reports every LDS and global load and store of every lane (the access hook
// of emu_abi.h, when KilnEmuLane::accessStats is set); lanes run one at a
// time as fibers, so the recorder buffers the lanes' accesses and combines
// them per wave-level access: the k-th execution of a site by each lane of a
// wave is one instruction of that wave. Buffers are combined whenever every
// lane of the workgroup is stopped (at a barrier, at a matrix instruction,
// or finished), which bounds them by the accesses between two such points.
//
// The figures follow the chip's memory model (emuMemoryModel): an LDS access
// is served in phases of `ldsBanks * ldsBankBytes` bytes (a phase takes
// 128 / bytes-per-lane consecutive lanes), and a phase takes as many cycles
// as the most distinct dwords any one bank must deliver (lanes reading the
// same dword share it); a global access touches the distinct cache lines its
// lanes' bytes fall in, addressed from the start of the arena or the
// constants (which the GPU allocates aligned to more than a line).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SRC_EMUSTATS_H
#define KILN_RUNTIME_SRC_EMUSTATS_H

#include "kiln/emu_abi.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln::rt {

/// The LDS bank and cache-line model of an emulated chip (sources in
/// EmuStats.cpp and docs/runtime.md).
struct EmuMemoryModel {
  const char *chip;
  uint32_t waveSize;
  uint32_t ldsBanks;
  uint32_t ldsBankBytes;
  uint32_t lineBytes; // cache line of global accesses
  bool provisional;   // no public documentation confirms it yet
  const char *basis;  // one line: what the figures rest on
};

/// The model of `chip` ("gfx942"), or nullptr.
const EmuMemoryModel *emuMemoryModel(const char *chip);

/// One access site of a kernel, summed over every wave-level execution.
struct EmuSiteStats {
  uint32_t id = 0;
  uint32_t kind = 0;  // KILN_EMU_ACCESS_*
  uint32_t bytes = 0; // per lane
  std::string op, location;
  uint64_t executions = 0;   // wave-level accesses
  uint64_t laneAccesses = 0; // lanes that took part, summed
  uint64_t requestedBytes = 0;
  // LDS: cycles without conflicts (one per phase with an active lane) and
  // with them; the worst single access's degree (its cycles / ideal).
  uint64_t idealCycles = 0;
  uint64_t cycles = 0;
  uint64_t conflictedExecutions = 0;
  double maxDegree = 0;
  // Global: distinct cache lines (and 64-byte segments) touched.
  uint64_t lines = 0;
  uint64_t segments64 = 0;
};

/// The statistics of one dispatch's launches. Sites are added as the
/// kernel first executes them; pointers to them stay valid.
struct EmuStats {
  std::mutex mutex;
  std::vector<std::unique_ptr<EmuSiteStats>> sites; // by site id, null gaps
  void reset();
};

/// A memory region whose offsets the GPU would see aligned (the arena, the
/// constants): global addresses are taken relative to its start.
struct EmuRegion {
  uintptr_t base = 0;
  size_t size = 0;
};

/// Buffers the accesses of one workgroup's lanes and folds them into
/// per-site figures. One per pool thread, reused from workgroup to workgroup.
class EmuAccessRecorder {
public:
  /// Starts a workgroup of `lanes` lanes; `lds` is its LDS base.
  void begin(const EmuMemoryModel &model, const std::vector<EmuRegion> &regions,
             const void *lds, uint32_t lanes);
  /// Lane `lane` accesses `address` at `site`.
  void record(uint32_t lane, const KilnEmuAccessSite *site, uint64_t address);
  /// Combines what was recorded into wave-level accesses (call only when no
  /// lane is between two accesses of one wave-level access: every lane is
  /// stopped).
  void combine();
  /// Combines and adds the workgroup's figures to `stats`.
  void end(EmuStats &stats);

private:
  struct Record {
    uint32_t wave, site, instance, lane; // lane within the wave
    uint64_t address;                    // LDS offset or global address
  };
  void combineGroup(const Record *first, const Record *last);

  const EmuMemoryModel *model_ = nullptr;
  std::vector<EmuRegion> regions_;
  uintptr_t lds_ = 0;
  uint32_t lanes_ = 0;
  std::vector<std::vector<uint32_t>> instances_; // [lane][site]
  std::vector<const KilnEmuAccessSite *> descriptors_; // by site id
  std::vector<Record> records_;
  std::vector<EmuSiteStats> sites_; // this workgroup's, by site id
  std::vector<uint64_t> scratch_;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_EMUSTATS_H
