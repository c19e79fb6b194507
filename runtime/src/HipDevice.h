//===- HipDevice.h - AMD GPUs through HIP -----------------------*- C++ -*-===//
//
// The hip device: `hip:N` names HIP device N (`hip` is hip:0). Opening it
// checks that the HIP runtime is there and sees the device, and reads the
// device's gfx name, which picks the artifact's code object. A session on it
// holds a `HipProgram`: the code object loaded with hipModuleLoadData, every
// kernel resolved, device buffers for the arena and the constants (uploaded
// once), one stream, and the kernel arguments of every dispatch packed once.
// Every HIP call goes through a `HipApi` table, so tests can pass fakes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SRC_HIPDEVICE_H
#define KILN_RUNTIME_SRC_HIPDEVICE_H

#include "kiln/artifact.hpp"
#include "Commands.h"
#include "HipApi.h"

#include <memory>
#include <string>
#include <vector>

struct kiln_device_s;

namespace kiln::rt {

/// One HIP device, checked and named.
class HipDevice {
public:
  const hip::HipApi &api() const { return *api_; }
  /// The HIP device index N of `hip:N`.
  int index() const { return index_; }
  /// As HIP reports it, e.g. "gfx942:sramecc+:xnack-".
  const std::string &gcnArchName() const { return gcnArchName_; }

private:
  friend kiln_status_t createHipDevice(const std::string &, const hip::HipApi *,
                                       const std::string &, kiln_device_s **);
  const hip::HipApi *api_ = nullptr;
  int index_ = 0;
  std::string gcnArchName_;
};

/// True for the specs createHipDevice handles: "hip" and "hip:...".
bool isHipSpec(const std::string &spec);

/// kiln_device_create for a hip spec, over the symbol table `api` (nullptr
/// when the HIP runtime could not be loaded; `loadError` says why). The
/// device's target is its gfx name without feature suffixes. No runtime, no
/// device, or an index out of range: KILN_STATUS_UNSUPPORTED with one line
/// "no AMD GPU found (hip:N): <reason>[; use --device=cpu]". A malformed spec
/// is KILN_STATUS_INVALID_ARGUMENT. Production passes hip::loadHipApi's
/// table; tests pass fakes.
kiln_status_t createHipDevice(const std::string &spec, const hip::HipApi *api,
                              const std::string &loadError,
                              kiln_device_s **out);

/// A program of an artifact loaded on a hip device (see the file comment and
/// the gfx kernel ABI in docs/artifact-format.md).
class HipProgram {
public:
  /// Validates the code object `codeObject` (format "hsaco", an AMDGPU ELF,
  /// workgroup sizes of 1 to 1024 threads, grids HIP can launch) and loads
  /// it with `program`'s buffers. With `profiling`, each dispatch is timed
  /// with events.
  static kiln_status_t load(const HipDevice &device, const Artifact &artifact,
                            int codeObject,
                            const kiln::artifact::Program &program,
                            bool profiling, std::unique_ptr<HipProgram> &out);
  ~HipProgram();
  HipProgram(const HipProgram &) = delete;
  HipProgram &operator=(const HipProgram &) = delete;

  /// One run: `inputs[i]` is model input i and `outputs` the caller's output
  /// buffers, both already validated by the session. Copies the inputs in,
  /// launches every dispatch in order on the session's stream, copies the
  /// outputs out and waits. With profiling, adds each dispatch's time to
  /// `dispatchNs[i]`.
  /// Also copies each output extent (Program.extents, in order) to
  /// `extents`.
  /// A program with commands stops at `deadline` (checked per command).
  kiln_status_t run(const std::vector<const kiln_tensor_t *> &inputs,
                    kiln_tensor_t *outputs, int64_t *extents,
                    uint64_t *dispatchNs, const RunDeadline &deadline);

  /// Device base addresses, for tests.
  const void *arena() const { return arena_; }
  const void *constants() const { return constants_; }

private:
  HipProgram() = default;
  /// "<artifact>: dispatch I (kernel 'NAME')".
  std::string dispatchName(size_t index) const;
  /// Queues dispatch `i`.
  kiln_status_t launch(size_t i);
  class Commands;

  /// One kernel launch, fully prepared.
  struct Launch {
    hip::hipFunction_t function = nullptr;
    uint32_t kernel = 0;
    uint32_t workgroupCount = 0;
    uint32_t workgroupSize[3] = {1, 1, 1};
    std::vector<uint64_t> kernargs; // one device address per binding
  };
  /// A model input or output: where it lives.
  struct Transfer {
    bool constant = false; // outputs only: read from the host constants
    uint64_t offset = 0;
    uint64_t size = 0;
  };

  const hip::HipApi *api_ = nullptr;
  int device_ = 0;
  std::string artifactName_;
  const kiln::artifact::CodeObject *object_ = nullptr;
  const unsigned char *hostConstants_ = nullptr;
  hip::hipModule_t module_ = nullptr;
  void *arena_ = nullptr;
  void *constants_ = nullptr;
  hip::hipStream_t stream_ = nullptr;
  std::vector<hip::hipEvent_t> events_; // dispatches + 1 when profiling
  std::vector<Launch> launches_;
  std::vector<Transfer> inputs_, outputs_, extents_;
  const kiln::artifact::Program *program_ = nullptr;
  std::vector<int64_t> slots_; // the loop counters' host copies, per command
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_HIPDEVICE_H
