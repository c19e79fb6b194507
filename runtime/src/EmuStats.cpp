//===- EmuStats.cpp - Memory statistics of emulated gfx kernels -----------===//
//
// The memory models and the folding of lane accesses into wave-level ones
// (see EmuStats.h). The runtime keeps its own table on purpose, like
// EmuMatrix.cpp: it does not link the compiler's target table.
//
//===----------------------------------------------------------------------===//

#include "EmuStats.h"

#include <algorithm>
#include <cstring>

using namespace kiln::rt;

namespace {

/// Sources:
/// - CDNA3 (gfx942): LDS of 32 banks, 4 bytes each (AMD, "Avoiding LDS Bank
///   Conflicts on AMD GPUs Using CK-Tile Framework", ROCm blog, 2025-07-25;
///   composable_kernel's "Understanding AMD GPU LDS and Bank Conflicts"). A
///   wave's access is served in phases: 32-bit (and narrower) accesses per
///   half wave (AMD APP SDK OpenCL optimization guide: "threads 0 through 31
///   are checked for conflicts as are threads 32 through 63"), 128-bit ones
///   in 8 phases of 8 consecutive lanes (composable_kernel's page, for
///   ds_write_b128); 64-bit ones, by the same 128 bytes per phase, in 4
///   phases of 16 lanes. Lanes reading one dword share it (a broadcast).
///   Cache lines: 128 bytes in the vector L1 and L2 of CDNA3 (AMD CDNA 3
///   white paper); the 64-byte segments HBM transfers are counted as well.
/// - CDNA4 (gfx950): assumed as CDNA3 (its LDS grew to 160 KiB; the bank
///   layout of its ISA guide was not checked here).
/// - RDNA3/RDNA4 (gfx1100, gfx1201): 32 banks of 4 bytes per CU, wave32 served
///   in the same 128-byte phases, 128-byte cache lines (AMD RDNA white
///   papers); assumed, not measured.
/// - gfx1250: no public ISA guide yet; the RDNA figures, provisional.
const EmuMemoryModel kModels[] = {
    {"gfx942", 64, 32, 4, 128, false,
     "CDNA3: 32 LDS banks x 4 B, 128 B per phase; 128 B cache lines"},
    {"gfx950", 64, 32, 4, 128, false,
     "CDNA4: as CDNA3 (assumed): 32 LDS banks x 4 B, 128 B per phase; 128 B "
     "cache lines"},
    {"gfx1100", 32, 32, 4, 128, false,
     "RDNA3: 32 LDS banks x 4 B per CU, 128 B per phase (assumed); 128 B "
     "cache lines"},
    {"gfx1201", 32, 32, 4, 128, false,
     "RDNA4: 32 LDS banks x 4 B per CU, 128 B per phase (assumed); 128 B "
     "cache lines"},
    {"gfx1250", 32, 32, 4, 128, true,
     "gfx1250 (provisional): RDNA's 32 LDS banks x 4 B, 128 B per phase; "
     "128 B cache lines"},
};

/// Consecutive lanes served together: as many as fill one phase, at least
/// one. Widths that are not a power of two round up (ds_read_b96 takes a
/// 128-bit lane slot).
uint32_t lanesPerPhase(const EmuMemoryModel &model, uint32_t bytes) {
  uint32_t slot = model.ldsBankBytes;
  while (slot < bytes)
    slot *= 2;
  uint32_t lanes = model.ldsBanks * model.ldsBankBytes / slot;
  return lanes ? lanes : 1;
}

} // namespace

const EmuMemoryModel *kiln::rt::emuMemoryModel(const char *chip) {
  for (const EmuMemoryModel &model : kModels)
    if (std::strcmp(model.chip, chip) == 0)
      return &model;
  return nullptr;
}

void EmuStats::reset() {
  std::lock_guard<std::mutex> lock(mutex);
  for (auto &site : sites) {
    if (!site)
      continue;
    EmuSiteStats cleared;
    cleared.id = site->id;
    cleared.kind = site->kind;
    cleared.bytes = site->bytes;
    cleared.op = std::move(site->op);
    cleared.location = std::move(site->location);
    *site = std::move(cleared);
  }
}

void EmuAccessRecorder::begin(const EmuMemoryModel &model,
                              const std::vector<EmuRegion> &regions,
                              const void *lds, uint32_t lanes) {
  model_ = &model;
  regions_ = regions;
  lds_ = reinterpret_cast<uintptr_t>(lds);
  lanes_ = lanes;
  if (instances_.size() < lanes)
    instances_.resize(lanes);
  for (uint32_t t = 0; t < lanes; ++t)
    std::fill(instances_[t].begin(), instances_[t].end(), 0u);
  records_.clear();
  std::fill(descriptors_.begin(), descriptors_.end(), nullptr);
  for (EmuSiteStats &site : sites_)
    site = EmuSiteStats();
}

void EmuAccessRecorder::record(uint32_t lane, const KilnEmuAccessSite *site,
                               uint64_t address) {
  uint32_t id = site->id;
  if (descriptors_.size() <= id)
    descriptors_.resize(id + 1, nullptr);
  descriptors_[id] = site;
  std::vector<uint32_t> &counts = instances_[lane];
  if (counts.size() <= id)
    counts.resize(id + 1, 0);
  if (site->kind & KILN_EMU_ACCESS_GLOBAL) {
    for (const EmuRegion &region : regions_)
      if (address - region.base < region.size) {
        address -= region.base;
        break;
      }
  } else {
    address -= lds_;
  }
  records_.push_back({lane / model_->waveSize, id, counts[id]++,
                      lane % model_->waveSize, address});
}

void EmuAccessRecorder::combine() {
  if (records_.empty())
    return;
  std::sort(records_.begin(), records_.end(),
            [](const Record &a, const Record &b) {
              if (a.wave != b.wave)
                return a.wave < b.wave;
              if (a.site != b.site)
                return a.site < b.site;
              if (a.instance != b.instance)
                return a.instance < b.instance;
              return a.lane < b.lane;
            });
  const Record *first = records_.data();
  const Record *end = first + records_.size();
  while (first != end) {
    const Record *last = first + 1;
    while (last != end && last->wave == first->wave &&
           last->site == first->site && last->instance == first->instance)
      ++last;
    combineGroup(first, last);
    first = last;
  }
  records_.clear();
}

/// One wave-level access: the lanes of [first, last), sorted by lane.
void EmuAccessRecorder::combineGroup(const Record *first, const Record *last) {
  const KilnEmuAccessSite &descriptor = *descriptors_[first->site];
  if (sites_.size() <= first->site)
    sites_.resize(first->site + 1);
  EmuSiteStats &site = sites_[first->site];
  const uint32_t bytes = descriptor.bytes ? descriptor.bytes : 1;
  const uint64_t lanes = uint64_t(last - first);
  site.executions += 1;
  site.laneAccesses += lanes;
  site.requestedBytes += lanes * bytes;

  if (descriptor.kind & KILN_EMU_ACCESS_GLOBAL) {
    // Distinct lines and 64-byte segments the lanes' bytes fall in.
    auto distinct = [&](uint64_t unit) {
      scratch_.clear();
      for (const Record *r = first; r != last; ++r)
        for (uint64_t u = r->address / unit; u <= (r->address + bytes - 1) / unit;
             ++u)
          scratch_.push_back(u);
      std::sort(scratch_.begin(), scratch_.end());
      return uint64_t(std::unique(scratch_.begin(), scratch_.end()) -
                      scratch_.begin());
    };
    site.lines += distinct(model_->lineBytes);
    site.segments64 += distinct(64);
    return;
  }

  // LDS: per phase of consecutive lanes, the cycles are the most distinct
  // dwords one bank must deliver. scratch_ holds (bank << 40 | dword).
  const uint32_t perPhase = lanesPerPhase(*model_, bytes);
  const uint64_t bankBytes = model_->ldsBankBytes;
  uint64_t ideal = 0, actual = 0;
  for (const Record *phase = first; phase != last;) {
    const uint32_t index = phase->lane / perPhase;
    const Record *next = phase;
    scratch_.clear();
    for (; next != last && next->lane / perPhase == index; ++next)
      for (uint64_t dword = next->address / bankBytes;
           dword <= (next->address + bytes - 1) / bankBytes; ++dword)
        scratch_.push_back((dword % model_->ldsBanks) << 40 | dword);
    std::sort(scratch_.begin(), scratch_.end());
    scratch_.erase(std::unique(scratch_.begin(), scratch_.end()),
                   scratch_.end());
    uint64_t worst = 0;
    for (size_t i = 0; i < scratch_.size();) {
      size_t j = i;
      while (j < scratch_.size() && scratch_[j] >> 40 == scratch_[i] >> 40)
        ++j;
      worst = std::max<uint64_t>(worst, j - i);
      i = j;
    }
    ideal += 1;
    actual += worst;
    phase = next;
  }
  site.idealCycles += ideal;
  site.cycles += actual;
  if (actual > ideal)
    site.conflictedExecutions += 1;
  site.maxDegree = std::max(site.maxDegree, double(actual) / double(ideal));
}

void EmuAccessRecorder::end(EmuStats &stats) {
  combine();
  std::lock_guard<std::mutex> lock(stats.mutex);
  if (stats.sites.size() < sites_.size())
    stats.sites.resize(sites_.size());
  for (size_t id = 0; id < sites_.size(); ++id) {
    const EmuSiteStats &local = sites_[id];
    if (local.executions == 0)
      continue;
    std::unique_ptr<EmuSiteStats> &total = stats.sites[id];
    if (!total) {
      const KilnEmuAccessSite &descriptor = *descriptors_[id];
      total.reset(new EmuSiteStats());
      total->id = descriptor.id;
      total->kind = descriptor.kind;
      total->bytes = descriptor.bytes;
      total->op = descriptor.op ? descriptor.op : "";
      total->location = descriptor.location ? descriptor.location : "";
    }
    total->executions += local.executions;
    total->laneAccesses += local.laneAccesses;
    total->requestedBytes += local.requestedBytes;
    total->idealCycles += local.idealCycles;
    total->cycles += local.cycles;
    total->conflictedExecutions += local.conflictedExecutions;
    total->maxDegree = std::max(total->maxDegree, local.maxDegree);
    total->lines += local.lines;
    total->segments64 += local.segments64;
  }
}
