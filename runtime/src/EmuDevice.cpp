//===- EmuDevice.cpp - Emulated gfx kernels on CPU fibers -----------------===//
//
// Every pool thread keeps a ThreadState (thread_local, freed at thread exit):
// the lane stacks, the LDS buffer and the lane records of the workgroup it
// runs. A hook records what the lane waits for and switches to the thread's
// scheduler context; the scheduler decides who runs next. Nothing unwinds an
// aborted workgroup's fibers: kernels hold no resources, and the next
// workgroup re-initializes every stack.
//
//===----------------------------------------------------------------------===//

#include "EmuDevice.h"

#include "Fiber.h"
#include "Status.h"
#include "ThreadPool.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

using namespace kiln::rt;
using kiln::emu::MatrixInstruction;

static_assert(offsetof(KilnEmuHooks, barrier) ==
                  kiln::emu::kHooksBarrierIndex * sizeof(void *),
              "the compiler calls hooks by index");
static_assert(offsetof(KilnEmuLane, runtime) == 40,
              "KilnEmuLane changed: update the compiler's copy of the ABI");
static_assert(offsetof(KilnEmuHooks, access) ==
                  kiln::emu::kHooksAccessIndex * sizeof(void *),
              "the compiler calls hooks by index");

namespace {

enum class LaneStatus : uint8_t { Ready, AtBarrier, AtMatrix, Finished };

struct Workgroup;

/// One lane: its ABI record (the kernel's `lane` argument), its fiber and
/// what it waits for.
struct Lane {
  KilnEmuLane abi;
  Fiber fiber;
  Workgroup *group = nullptr;
  LaneStatus status = LaneStatus::Finished;
  uint32_t site = 0;
  // At a matrix instruction: the instruction, flags and operand copies.
  const MatrixInstruction *inst = nullptr;
  uint32_t flags = 0;
  uint32_t a[kiln::emu::kMaxAbRegisters];
  uint32_t b[kiln::emu::kMaxAbRegisters];
  uint32_t c[kiln::emu::kMaxCdPerLane];
  void *d = nullptr;
};

/// The workgroup a thread runs.
struct Workgroup {
  const kiln::emu::Chip *chip = nullptr;
  const EmuLaunch *launch = nullptr;
  uint64_t id = 0;
  uint32_t size = 0;
  std::vector<Lane> lanes;
  Fiber scheduler;
  // Set by a hook that cannot continue; the scheduler aborts the workgroup.
  kiln_status_code_t errorCode = KILN_STATUS_OK;
  std::string error;
  int errorWave = -1;
  // The last instruction looked up (kernels pass string constants).
  const char *lastMnemonic = nullptr;
  const MatrixInstruction *lastInst = nullptr;
  // Collects the lanes' accesses when the launch wants statistics.
  EmuAccessRecorder *recorder = nullptr;
};

struct ThreadState {
  std::vector<FiberStack> stacks;
  std::vector<unsigned char> lds;
  Workgroup group;
  EmuAccessRecorder recorder;
};

ThreadState &threadState() {
  thread_local ThreadState state;
  return state;
}

void laneMain(void *arg) {
  Lane &lane = *static_cast<Lane *>(arg);
  Workgroup &group = *lane.group;
  // The kernel is called from assembly with a 64-byte aligned stack (see
  // callAligned), so the C++ type of the pointer does not matter.
  callAligned(reinterpret_cast<void (*)(void *, void *)>(group.launch->fn),
              &lane.abi, const_cast<void **>(group.launch->bindings));
  lane.status = LaneStatus::Finished;
  fiberSwitch(lane.fiber, group.scheduler);
  std::abort(); // a finished lane is never resumed
}

void hookBarrier(KilnEmuLane *abi, uint32_t site) {
  Lane &lane = *static_cast<Lane *>(abi->runtime);
  lane.status = LaneStatus::AtBarrier;
  lane.site = site;
  fiberSwitch(lane.fiber, lane.group->scheduler);
}

/// The instruction `mnemonic` names on the workgroup's chip, or nullptr with
/// the error recorded in the workgroup. A separate function so that its
/// strings are destroyed before the failing lane switches away for good (the
/// frames of an abandoned lane never unwind: whatever they own leaks).
const MatrixInstruction *lookupInstruction(Lane &lane, const char *mnemonic) {
  Workgroup &group = *lane.group;
  std::string error = "a matrix instruction without a name";
  const MatrixInstruction *inst =
      mnemonic ? kiln::emu::findInstruction(*group.chip, mnemonic, error)
               : nullptr;
  if (!inst) {
    uint32_t thread = lane.abi.threadId[0];
    group.errorCode = KILN_STATUS_UNSUPPORTED;
    group.error = strFormat("lane %u: ", thread) + error;
    group.errorWave = int(thread / uint32_t(group.chip->waveSize));
  }
  return inst;
}

void hookMatrix(KilnEmuLane *abi, uint32_t site, const char *mnemonic,
                uint32_t flags, const uint32_t *a, const uint32_t *b,
                const void *c, void *d) {
  Lane &lane = *static_cast<Lane *>(abi->runtime);
  Workgroup &group = *lane.group;
  const MatrixInstruction *inst = group.lastInst;
  if (!mnemonic || mnemonic != group.lastMnemonic) {
    inst = lookupInstruction(lane, mnemonic);
    if (!inst) {
      lane.status = LaneStatus::Finished;
      fiberSwitch(lane.fiber, group.scheduler);
      std::abort(); // never resumed
    }
    group.lastMnemonic = mnemonic;
    group.lastInst = inst;
  }
  std::memcpy(lane.a, a, sizeof(uint32_t) * size_t(inst->abRegisters()));
  std::memcpy(lane.b, b, sizeof(uint32_t) * size_t(inst->abRegisters()));
  std::memcpy(lane.c, c, sizeof(uint32_t) * size_t(inst->cdPerLane));
  lane.d = d;
  lane.inst = inst;
  lane.flags = flags;
  lane.site = site;
  lane.status = LaneStatus::AtMatrix;
  fiberSwitch(lane.fiber, group.scheduler);
}

/// Runs on the lane's fiber and returns at once: the recorder only buffers.
void hookAccess(KilnEmuLane *abi, const KilnEmuAccessSite *site,
                uint64_t address) {
  Lane &lane = *static_cast<Lane *>(abi->runtime);
  if (EmuAccessRecorder *recorder = lane.group->recorder)
    recorder->record(abi->threadId[0], site, address);
}

const KilnEmuHooks kHooks = {hookBarrier, hookMatrix, hookAccess};

/// "lane 3", "lanes 0-31, 40, 42-50".
std::string laneList(const std::vector<uint32_t> &lanes) {
  std::string text;
  for (size_t i = 0; i < lanes.size();) {
    size_t j = i;
    while (j + 1 < lanes.size() && lanes[j + 1] == lanes[j] + 1)
      ++j;
    if (!text.empty())
      text += ", ";
    text += std::to_string(lanes[i]);
    if (j > i)
      text += "-" + std::to_string(lanes[j]);
    i = j + 1;
  }
  return (lanes.size() == 1 ? "lane " : "lanes ") + text;
}

/// Lanes grouped by a description of what they do, in lane order:
/// "lanes 0-31 at site 1, lanes 32-63 at site 2".
class LaneGroups {
public:
  void add(const std::string &what, uint32_t lane) {
    for (auto &group : groups_)
      if (group.first == what) {
        group.second.push_back(lane);
        return;
      }
    groups_.push_back({what, {lane}});
  }
  size_t size() const { return groups_.size(); }
  std::string str() const {
    std::string text;
    for (const auto &group : groups_)
      text += (text.empty() ? "" : ", ") + laneList(group.second) + " " +
              group.first;
    return text;
  }

private:
  std::vector<std::pair<std::string, std::vector<uint32_t>>> groups_;
};

std::string matrixDescription(const Lane &lane, bool withFlags) {
  std::string text =
      strFormat("at matrix site %u (%s", lane.site, lane.inst->mnemonic);
  if (withFlags)
    text += strFormat(", flags 0x%x", lane.flags);
  return text + ")";
}

std::string stateDescription(const Lane &lane) {
  switch (lane.status) {
  case LaneStatus::Finished:
    return "finished";
  case LaneStatus::AtBarrier:
    return strFormat("wait at barrier site %u", lane.site);
  case LaneStatus::AtMatrix:
    return "wait " + matrixDescription(lane, false);
  case LaneStatus::Ready:
    break;
  }
  return "run";
}

class Scheduler {
public:
  explicit Scheduler(ThreadState &state) : state_(state), group_(state.group) {}

  /// Runs workgroup `id` of `launch` to completion.
  kiln_status_t run(const kiln::emu::Chip &chip, const EmuLaunch &launch,
                    uint64_t id);

private:
  kiln_status_t prepare(const kiln::emu::Chip &chip, const EmuLaunch &launch,
                        uint64_t id);
  /// Releases what can proceed; `released` false if nothing can.
  kiln_status_t resolve(bool &released);
  kiln_status_t runWave(uint32_t wave, uint32_t first, uint32_t end);
  kiln_status_t fail(kiln_status_code_t code, int wave,
                     const std::string &message) const;

  ThreadState &state_;
  Workgroup &group_;
};

kiln_status_t Scheduler::fail(kiln_status_code_t code, int wave,
                              const std::string &message) const {
  std::string where = strFormat("emu:%s: %s, workgroup %llu", group_.chip->name,
                                group_.launch->where.c_str(),
                                static_cast<unsigned long long>(group_.id));
  if (wave >= 0)
    where += strFormat(", wave %d", wave);
  return makeStatus(code, where + ": " + message);
}

kiln_status_t Scheduler::prepare(const kiln::emu::Chip &chip,
                                 const EmuLaunch &launch, uint64_t id) {
  const uint32_t size = launch.workgroupSize;
  group_.chip = &chip;
  group_.launch = &launch;
  group_.id = id;
  group_.size = size;
  group_.errorCode = KILN_STATUS_OK;
  group_.error.clear();
  group_.errorWave = -1;
  group_.lastMnemonic = nullptr;
  group_.lastInst = nullptr;
  while (state_.stacks.size() < size) {
    FiberStack stack;
    std::string error;
    if (!stack.allocate(kEmuLaneStackBytes, error))
      return fail(KILN_STATUS_OUT_OF_MEMORY, -1,
                  strFormat("lane %zu: ", state_.stacks.size()) + error);
    state_.stacks.push_back(std::move(stack));
  }
  if (group_.lanes.size() < size)
    group_.lanes.resize(size);
  if (state_.lds.size() < size_t(launch.ldsBytes) || state_.lds.empty())
    state_.lds.resize(launch.ldsBytes ? launch.ldsBytes : 1);
  std::memset(state_.lds.data(), 0xff, launch.ldsBytes);
  group_.recorder = nullptr;
  if (launch.stats) {
    // emuRun checked that the chip has a memory model.
    state_.recorder.begin(*emuMemoryModel(chip.name), launch.regions,
                          state_.lds.data(), size);
    group_.recorder = &state_.recorder;
  }

  for (uint32_t t = 0; t < size; ++t) {
    Lane &lane = group_.lanes[t];
    lane.abi.hooks = &kHooks;
    lane.abi.lds = state_.lds.data();
    lane.abi.threadId[0] = t;
    lane.abi.threadId[1] = lane.abi.threadId[2] = 0;
    lane.abi.blockId[0] = uint32_t(id);
    lane.abi.blockId[1] = lane.abi.blockId[2] = 0;
    lane.abi.runtime = &lane;
    lane.abi.accessStats = launch.stats ? 1u : 0u;
    lane.group = &group_;
    lane.status = LaneStatus::Ready;
    lane.inst = nullptr;
    fiberInit(lane.fiber, state_.stacks[t], laneMain, &lane);
  }
  return nullptr;
}

kiln_status_t Scheduler::run(const kiln::emu::Chip &chip,
                             const EmuLaunch &launch, uint64_t id) {
  KILN_RETURN_IF_ERROR(prepare(chip, launch, id));
  const uint32_t size = group_.size;
  const bool reversed = id & 1;
  for (;;) {
    for (uint32_t i = 0; i < size; ++i) {
      Lane &lane = group_.lanes[reversed ? size - 1 - i : i];
      if (lane.status != LaneStatus::Ready)
        continue;
      fiberSwitch(group_.scheduler, lane.fiber);
      if (group_.errorCode != KILN_STATUS_OK)
        return fail(group_.errorCode, group_.errorWave, group_.error);
    }
    // Every lane is stopped: no wave-level access is half recorded.
    if (group_.recorder)
      group_.recorder->combine();
    bool released = false;
    KILN_RETURN_IF_ERROR(resolve(released));
    if (!released) { // every lane finished
      if (group_.recorder)
        group_.recorder->end(*launch.stats);
      return nullptr;
    }
  }
}

kiln_status_t Scheduler::runWave(uint32_t wave, uint32_t first, uint32_t end) {
  const Lane &lead = group_.lanes[first];
  bool same = true, sameFlags = true;
  for (uint32_t t = first; t < end; ++t) {
    const Lane &lane = group_.lanes[t];
    same = same && lane.site == lead.site && lane.inst == lead.inst;
    sameFlags = sameFlags && lane.flags == lead.flags;
  }
  if (!same || !sameFlags) {
    LaneGroups groups;
    for (uint32_t t = first; t < end; ++t)
      groups.add(matrixDescription(group_.lanes[t], !sameFlags), t);
    return fail(KILN_STATUS_INVALID_ARTIFACT, int(wave),
                "the lanes reach different matrix instructions: " +
                    groups.str());
  }
  kiln::emu::LaneOperands operands[64];
  for (uint32_t t = first; t < end; ++t) {
    Lane &lane = group_.lanes[t];
    operands[t - first] = {lane.a, lane.b, lane.c, lane.d};
  }
  std::string error;
  if (!kiln::emu::execute(*lead.inst, lead.flags, operands, error))
    return fail(KILN_STATUS_INVALID_ARTIFACT, int(wave), error);
  for (uint32_t t = first; t < end; ++t)
    group_.lanes[t].status = LaneStatus::Ready;
  return nullptr;
}

kiln_status_t Scheduler::resolve(bool &released) {
  const uint32_t size = group_.size;
  const uint32_t waveSize = uint32_t(group_.chip->waveSize);
  released = false;
  // Waves whose lanes all wait at a matrix instruction run it.
  int stuckWave = -1;
  for (uint32_t first = 0; first < size; first += waveSize) {
    uint32_t end = first + waveSize < size ? first + waveSize : size;
    uint32_t atMatrix = 0;
    for (uint32_t t = first; t < end; ++t)
      atMatrix += group_.lanes[t].status == LaneStatus::AtMatrix;
    if (atMatrix == 0)
      continue;
    uint32_t wave = first / waveSize;
    if (end - first < waveSize) {
      uint32_t t = first;
      while (group_.lanes[t].status != LaneStatus::AtMatrix)
        ++t;
      return fail(KILN_STATUS_INVALID_ARTIFACT, int(wave),
                  strFormat("lane %u: %s needs %u lanes, the wave has %u "
                            "(workgroup size %u)",
                            t, group_.lanes[t].inst->mnemonic, waveSize,
                            end - first, size));
    }
    if (atMatrix == end - first) {
      KILN_RETURN_IF_ERROR(runWave(wave, first, end));
      released = true;
    } else if (stuckWave < 0) {
      stuckWave = int(wave);
    }
  }
  if (released)
    return nullptr;

  // Barriers release when every unfinished lane is at one.
  uint32_t unfinished = 0, atBarrier = 0;
  for (uint32_t t = 0; t < size; ++t) {
    const Lane &lane = group_.lanes[t];
    unfinished += lane.status != LaneStatus::Finished;
    atBarrier += lane.status == LaneStatus::AtBarrier;
  }
  if (unfinished == 0)
    return nullptr;
  if (atBarrier == unfinished) {
    const Lane *lead = nullptr;
    bool sameSite = true;
    for (uint32_t t = 0; t < size; ++t) {
      const Lane &lane = group_.lanes[t];
      if (lane.status != LaneStatus::AtBarrier)
        continue;
      lead = lead ? lead : &lane;
      sameSite = sameSite && lane.site == lead->site;
    }
    if (!sameSite) {
      LaneGroups sites;
      for (uint32_t t = 0; t < size; ++t)
        if (group_.lanes[t].status == LaneStatus::AtBarrier)
          sites.add(strFormat("at site %u", group_.lanes[t].site), t);
      return fail(KILN_STATUS_INVALID_ARTIFACT, -1,
                  "the lanes wait at different barriers: " + sites.str());
    }
    for (uint32_t t = 0; t < size; ++t)
      if (group_.lanes[t].status == LaneStatus::AtBarrier)
        group_.lanes[t].status = LaneStatus::Ready;
    released = true;
    return nullptr;
  }

  // Some wave waits at a matrix instruction that not all its lanes can
  // reach: they finished or wait at a barrier that waits for this wave.
  uint32_t first = uint32_t(stuckWave) * waveSize;
  uint32_t end = first + waveSize < size ? first + waveSize : size;
  LaneGroups states;
  for (uint32_t t = first; t < end; ++t)
    states.add(stateDescription(group_.lanes[t]), t);
  return fail(KILN_STATUS_INVALID_ARTIFACT, stuckWave,
              "deadlock: " + states.str());
}

/// A launch being run by the pool; the first error stops the rest.
struct Run {
  const kiln::emu::Chip *chip;
  const EmuLaunch *launch;
  std::atomic<bool> failed{false};
  std::mutex mutex;
  kiln_status_t status = nullptr; // of the lowest failed workgroup
  uint64_t failedId = 0;
};

void runChunk(void *context, uint64_t begin, uint64_t end) {
  Run &run = *static_cast<Run *>(context);
  Scheduler scheduler(threadState());
  for (uint64_t id = begin; id < end; ++id) {
    if (run.failed.load(std::memory_order_relaxed))
      return;
    kiln_status_t status = scheduler.run(*run.chip, *run.launch, id);
    if (!status)
      continue;
    std::lock_guard<std::mutex> lock(run.mutex);
    if (!run.status || id < run.failedId) {
      kiln_status_free(run.status);
      run.status = status;
      run.failedId = id;
    } else {
      kiln_status_free(status);
    }
    run.failed.store(true, std::memory_order_relaxed);
    return;
  }
}

} // namespace

kiln_status_t kiln::rt::emuCheckKernel(const std::string &item,
                                       uint64_t workgroupCount,
                                       const uint32_t *workgroupSize,
                                       size_t dims, uint32_t ldsBytes) {
  if (dims == 0 || workgroupSize[0] == 0)
    return makeStatus(KILN_STATUS_INVALID_ARTIFACT,
                      item + ": no workgroup size");
  for (size_t i = 1; i < dims; ++i)
    if (workgroupSize[i] != 1)
      return makeStatus(KILN_STATUS_UNSUPPORTED,
                        strFormat("%s: workgroup size dimension %zu is %u "
                                  "(the emu device runs 1-D workgroups)",
                                  item.c_str(), i, workgroupSize[i]));
  if (workgroupSize[0] > kEmuMaxWorkgroupSize)
    return makeStatus(KILN_STATUS_UNSUPPORTED,
                      strFormat("%s: %u lanes per workgroup (at most %u)",
                                item.c_str(), workgroupSize[0],
                                kEmuMaxWorkgroupSize));
  if (ldsBytes > kEmuMaxLdsBytes)
    return makeStatus(KILN_STATUS_UNSUPPORTED,
                      strFormat("%s: %u LDS bytes (at most %u)", item.c_str(),
                                ldsBytes, kEmuMaxLdsBytes));
  if (workgroupCount > (uint64_t(1) << 32))
    return makeStatus(
        KILN_STATUS_UNSUPPORTED,
        strFormat("%s: %llu workgroups (at most 2^32)", item.c_str(),
                  static_cast<unsigned long long>(workgroupCount)));
  return nullptr;
}

kiln_status_t kiln::rt::emuRun(ThreadPool *pool, const emu::Chip &chip,
                               const EmuLaunch &launch) {
  if (!kFibersSupported)
    return makeStatus(
        KILN_STATUS_UNSUPPORTED,
        strFormat("emu:%s: the emu device needs an x86-64 host", chip.name));
  uint32_t size = launch.workgroupSize;
  KILN_RETURN_IF_ERROR(
      emuCheckKernel(strFormat("emu:%s: %s", chip.name, launch.where.c_str()),
                     launch.workgroupCount, &size, 1, launch.ldsBytes));
  if (!launch.fn)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      strFormat("emu:%s: %s: no kernel function", chip.name,
                                launch.where.c_str()));
  if (launch.stats && !emuMemoryModel(chip.name))
    return makeStatus(KILN_STATUS_UNSUPPORTED,
                      strFormat("emu:%s: no memory model for access statistics",
                                chip.name));
  Run run;
  run.chip = &chip;
  run.launch = &launch;
  if (pool)
    pool->parallelFor(launch.workgroupCount, runChunk, &run);
  else
    runChunk(&run, 0, launch.workgroupCount);
  return run.status;
}
