//===- CpuDevice.h - Loading and calling cpu code objects -------*- C++ -*-===//
//
// The cpu code object is an x86-64 ELF shared object. It is written to an
// anonymous memory file (memfd_create) and dlopen'ed through /proc/self/fd,
// so nothing touches the disk; every kernel symbol is resolved up front.
// Without memfd or /proc it falls back to a temporary file. The emu devices'
// code objects (format "emu-elf-shared-object", EmuAbi.h) are host shared
// objects too and load the same way; only their kernels' signature differs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SRC_CPUDEVICE_H
#define KILN_RUNTIME_SRC_CPUDEVICE_H

#include "kiln/artifact.hpp"
#include "kiln/emu_abi.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::rt {

/// The kernel ABI: called once per workgroup id, concurrently.
using CpuKernelFn = void (*)(void *const *bindings, int64_t workgroupId);

/// A host shared object with the kernels of one code object.
class CpuModule {
public:
  /// The kernel ABI a code object is loaded for.
  enum class Kind {
    Cpu, // format "elf-shared-object" (or none), CpuKernelFn
    Emu, // format "emu-elf-shared-object", KilnEmuKernelFn
  };

  /// Loads code object `codeObject` of `artifact` and resolves its kernels.
  static kiln_status_t load(const Artifact &artifact, int codeObject, Kind kind,
                            std::unique_ptr<CpuModule> &out);
  ~CpuModule();
  CpuModule(const CpuModule &) = delete;
  CpuModule &operator=(const CpuModule &) = delete;

  /// Kernel `index` of a Kind::Cpu module.
  CpuKernelFn kernel(size_t index) const;
  /// Kernel `index` of a Kind::Emu module.
  KilnEmuKernelFn emuKernel(size_t index) const;

private:
  CpuModule() = default;
  void *handle_ = nullptr;
  // The dynamic loader recognizes loaded objects by path, so the memfd
  // behind /proc/self/fd/N stays open while the object is loaded: a reused
  // N would otherwise hand back this object instead of loading a new one.
  int fd_ = -1;
  std::string path_;
  std::vector<void *> kernels_;
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_CPUDEVICE_H
