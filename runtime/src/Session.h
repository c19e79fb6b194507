//===- Session.h - One loaded program with its arena ------------*- C++ -*-===//
//
// A session binds an artifact's program to a device. On the cpu and emu
// devices: the loaded host code object, a 64-byte aligned arena, and every
// dispatch's binding addresses computed once (the emu device runs the same
// bindings through EmuDevice.h); on a hip device a HipProgram holds the same
// on the GPU. Runs are serialized by a mutex.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SRC_SESSION_H
#define KILN_RUNTIME_SRC_SESSION_H

#include "kiln/artifact.hpp"
#include "CpuDevice.h"
#include "EmuDevice.h"
#include "HipDevice.h"

#include <memory>
#include <mutex>
#include <vector>

struct kiln_artifact_s;
struct kiln_device_s;

namespace kiln::rt {

class Session {
public:
  /// Retains `device` and `artifact` for the session's lifetime.
  static kiln_status_t create(kiln_device_s *device, kiln_artifact_s *artifact,
                              const kiln_session_options_t &options,
                              std::unique_ptr<Session> &out);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  kiln_status_t run(const kiln_tensor_t *inputs, size_t inputCount,
                    kiln_tensor_t *outputs, size_t outputCount);

  size_t programIndex() const { return programIndex_; }
  size_t dispatchCount() const { return dispatches_.size(); }
  kiln_status_t dispatchInfo(size_t index, kiln_dispatch_info_t &out) const;
  kiln_status_t profile(uint64_t *runCount, uint64_t *dispatchNs,
                        size_t count);
  void resetProfile();
  /// Emu statistics (enable_emu_stats); see runtime.h.
  bool emuStatsEnabled() const { return !emuStats_.empty(); }
  const EmuMemoryModel *emuMemoryModel() const { return emuModel_; }
  size_t emuSiteCount();
  kiln_status_t emuSiteStats(size_t index, kiln_emu_site_stats_t &out);

  /// The arena base (64-byte aligned; cpu and emu devices), for tests.
  const void *arena() const { return arena_; }

private:
  Session() = default;
  kiln_status_t checkInputs(const kiln_tensor_t *inputs, size_t inputCount,
                            std::vector<const kiln_tensor_t *> &byModelIndex)
      const;
  kiln_status_t checkOutputs(const kiln_tensor_t *outputs,
                             size_t outputCount) const;

  struct Dispatch {
    CpuKernelFn fn; // cpu device only
    uint64_t workgroupCount;
    size_t firstBinding; // into bindings_ (cpu and emu devices)
    size_t bindingCount;
    uint32_t kernel;
    const kiln::artifact::Dispatch *manifest;
  };
  /// Loads the host code object (cpu or emu) and lays out the arena and the
  /// bindings.
  kiln_status_t loadHost(int codeObject);
  /// The emu device's launch of every dispatch (after dispatches_).
  kiln_status_t prepareEmu();
  /// Finds the outputs a cpu run can write straight into the caller's
  /// buffer (see InPlaceOutput) and every address that moves with them.
  void planInPlaceOutputs();
  /// Points every relocated address at the caller's buffer of its output
  /// (when that buffer is 64-byte aligned) or back at the arena.
  void bindInPlaceOutputs(const kiln_tensor_t *outputs);
  kiln_status_t runHost(const std::vector<const kiln_tensor_t *> &inputs,
                        kiln_tensor_t *outputs, const RunDeadline &deadline);
  /// Runs dispatch `i` on the cpu or emu device (and times it).
  kiln_status_t runDispatch(size_t i);
  class HostCommands;
  /// Shapes the outputs whose size the data decides from `extents_`: checks
  /// each extent against its bound, moves the first `extent` entries along
  /// the axis to the front of the caller's buffer and sets the run's shape.
  kiln_status_t applyExtents(kiln_tensor_t *outputs);

  kiln_device_s *device_ = nullptr;
  kiln_artifact_s *artifactHandle_ = nullptr;
  const Artifact *artifact_ = nullptr;
  const kiln::artifact::Program *program_ = nullptr;
  /// The program's inputs and outputs (the model's at its batch bucket's shapes).
  const ProgramInterface *interface_ = nullptr;
  size_t programIndex_ = 0;
  const kiln::artifact::CodeObject *codeObject_ = nullptr;
  std::unique_ptr<CpuModule> module_;
  std::unique_ptr<HipProgram> hip_; // on a hip device, instead of the rest
  std::vector<EmuLaunch> emuLaunches_; // on an emu device, per dispatch
  bool wantEmuStats_ = false;
  const EmuMemoryModel *emuModel_ = nullptr;
  std::vector<std::unique_ptr<EmuStats>> emuStats_; // per dispatch
  void *arena_ = nullptr;
  std::vector<Dispatch> dispatches_;
  std::vector<void *> bindings_;
  std::vector<unsigned char *> inputAddresses_;
  std::vector<const unsigned char *> outputAddresses_;
  /// An output the cpu device writes in place: its arena range is shared by
  /// no other output, and every binding, input place and extent that lies
  /// wholly inside that range (the output itself, views of it, and the
  /// tensors that used those bytes before it was defined: the memory plan
  /// never keeps two overlapping tensors live at once) moves with it to the
  /// caller's buffer for a run. Partly overlapping ones stay in the arena.
  struct InPlaceOutput {
    size_t output;              // model output index
    unsigned char *arena;       // its place in the arena
    unsigned char *base;        // this run's: arena or the caller's buffer
  };
  struct Relocation {
    enum Kind : uint8_t { Binding, Input, Extent } kind;
    size_t index;               // into bindings_, inputAddresses_ or extentAddresses_
    size_t inPlace;             // into inPlace_
    uint64_t delta;             // bytes from the output's start
  };
  std::vector<InPlaceOutput> inPlace_;
  std::vector<Relocation> relocations_;
  // Outputs with an extent axis, in output order: where the program leaves
  // the extent (host devices), its value after a run, and the shape the run
  // returns (kiln_tensor_t.shape points here until the next run).
  std::vector<size_t> extentOutputs_;
  std::vector<const unsigned char *> extentAddresses_;
  std::vector<int64_t> extents_;
  std::vector<std::vector<int64_t>> runShapes_;

  std::mutex mutex_; // serializes run and the profile
  bool profiling_ = false;
  uint64_t runTimeoutUs_ = 0; // 0: runs have no time limit
  kiln_trace_callback_t trace_ = nullptr;
  void *traceUser_ = nullptr;
  uint64_t runs_ = 0;
  std::vector<uint64_t> dispatchNs_;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_SESSION_H
