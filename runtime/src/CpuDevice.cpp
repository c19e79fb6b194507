//===- CpuDevice.cpp - Loading and calling cpu code objects ---------------===//

#include "CpuDevice.h"

#include "Status.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

using namespace kiln::rt;
namespace fb = kiln::artifact;

CpuModule::~CpuModule() {
  if (handle_)
    dlclose(handle_);
  if (fd_ < 0)
    return;
  // An object can outlive dlclose (DF_1_NODELETE, or a reference from
  // elsewhere). Then its path must keep naming it, so the descriptor is
  // deliberately left open for the life of the process.
  if (void *loaded = dlopen(path_.c_str(), RTLD_LAZY | RTLD_NOLOAD)) {
    dlclose(loaded);
    return;
  }
  dlerror();
  ::close(fd_);
}

/// Writes all of `data` to `fd`; false with errno set on failure.
static bool writeAll(int fd, const unsigned char *data, uint64_t size) {
  while (size != 0) {
    size_t chunk = size > (1u << 30) ? size_t(1u << 30) : size_t(size);
    ssize_t n = ::write(fd, data, chunk);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    data += n;
    size -= uint64_t(n);
  }
  return true;
}

/// The reason the bytes are not a loadable shared object for this host, or
/// nullptr if the ELF header looks right.
static const char *checkElfHeader(const unsigned char *data, uint64_t size) {
  uint16_t machine, type;
  if (const char *problem = readElfHeader(data, size, machine, type))
    return problem;
  if (type != ET_DYN)
    return "not an ELF shared object";
#if defined(__x86_64__)
  if (machine != EM_X86_64)
    return "not an x86-64 ELF file";
#endif
  return nullptr;
}

/// Writes `data` to an anonymous memory file and dlopen's it through
/// /proc/self/fd/N; `fd` and `path` are set on success (see CpuModule).
/// Without memfd or /proc, writes a temporary file with a name unique in this
/// process, dlopen's it and unlinks it.
static void *openFromMemory(const unsigned char *data, uint64_t size, int &fd,
                            std::string &path, std::string &error) {
  fd = memfd_create("kiln-cpu-code", MFD_CLOEXEC);
  if (fd >= 0) {
    path = "/proc/self/fd/" + std::to_string(fd);
    if (access(path.c_str(), F_OK) != 0) { // /proc not mounted
      ::close(fd);
      fd = -1;
    }
  }
  bool temporary = fd < 0;
  if (temporary) {
    // Loaded objects are recognized by path, so never reuse a name.
    static std::atomic<unsigned long> counter{0};
    const char *dir = std::getenv("TMPDIR");
    path = std::string(dir && *dir ? dir : "/tmp") + "/kiln-cpu-code-" +
           std::to_string(getpid()) + "-" + std::to_string(counter++) +
           "-XXXXXX";
    fd = mkstemp(&path[0]);
    if (fd < 0) {
      error = "cannot create a file for the code object: " +
              std::string(std::strerror(errno));
      return nullptr;
    }
  }
  void *handle = nullptr;
  if (!writeAll(fd, data, size)) {
    error = "cannot write the code object: " + std::string(std::strerror(errno));
  } else {
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *message = dlerror();
      error = message ? message : "dlopen failed";
    }
  }
  if (temporary) {
    unlink(path.c_str());
    ::close(fd);
    fd = -1;
  } else if (!handle) {
    ::close(fd);
    fd = -1;
  }
  return handle;
}

CpuKernelFn CpuModule::kernel(size_t index) const {
  static_assert(sizeof(CpuKernelFn) == sizeof(void *), "");
  CpuKernelFn fn;
  std::memcpy(&fn, &kernels_[index], sizeof(fn));
  return fn;
}

KilnEmuKernelFn CpuModule::emuKernel(size_t index) const {
  static_assert(sizeof(KilnEmuKernelFn) == sizeof(void *), "");
  KilnEmuKernelFn fn;
  std::memcpy(&fn, &kernels_[index], sizeof(fn));
  return fn;
}

/// The kernels allocate the intermediate buffers of a dispatch with malloc
/// and free them on every call. With glibc's defaults, freed memory past
/// 128 KiB at the top of the heap goes back to the kernel (M_TRIM_THRESHOLD)
/// and blocks of 128 KiB or more are mapped afresh (M_MMAP_THRESHOLD), so
/// every run faulted those pages in again: an INT8 MobileNetV3 spent 12.6% of
/// its time in the page-fault handler and ran 1.4-2x slower. The process
/// keeps them instead (blocks under 32 MiB from the heap, up to 256 MiB of
/// free heap kept), once, when the first cpu code object loads; not when the
/// user set glibc's malloc tunables (GLIBC_TUNABLES=glibc.malloc.*).
static void keepKernelScratch() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] {
    const char *tunables = std::getenv("GLIBC_TUNABLES");
    if (tunables && std::strstr(tunables, "glibc.malloc."))
      return;
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
  });
#endif
}

kiln_status_t CpuModule::load(const Artifact &artifact, int codeObject,
                              Kind kind, std::unique_ptr<CpuModule> &out) {
  keepKernelScratch();
  const fb::CodeObject *object =
      artifact.manifest().code_objects()->Get(flatbuffers::uoffset_t(codeObject));
  std::string item = strFormat("%s: code object %d ('%s')",
                               artifact.name().c_str(), codeObject,
                               Artifact::str(object->target()));
  std::string format = Artifact::str(object->format());
  const char *expected =
      kind == Kind::Cpu ? "elf-shared-object" : kiln::emu::kCodeObjectFormat;
  // Artifacts from before the format field have none: cpu objects.
  if (format != expected && !(format.empty() && kind == Kind::Cpu))
    return makeStatus(KILN_STATUS_UNSUPPORTED,
                      item + ": format '" + format +
                          "' is not supported by the " +
                          (kind == Kind::Cpu ? "cpu" : "emu") +
                          " device (expected '" + expected + "')");
  const SectionEntry &section = artifact.sections()[object->section()];
  const unsigned char *bytes = artifact.sectionData(object->section());
  if (const char *problem = checkElfHeader(bytes, section.size))
    return makeStatus(KILN_STATUS_INVALID_ARTIFACT,
                      item + ": " + problem);

  std::unique_ptr<CpuModule> module(new CpuModule());
  std::string error;
  module->handle_ =
      openFromMemory(bytes, section.size, module->fd_, module->path_, error);
  if (!module->handle_)
    return makeStatus(KILN_STATUS_UNSUPPORTED,
                      item + ": cannot load: " + error);
  auto *kernels = object->kernels();
  size_t count = kernels ? kernels->size() : 0;
  module->kernels_.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const fb::Kernel *kernel = kernels->Get(flatbuffers::uoffset_t(i));
    dlerror();
    void *symbol = dlsym(module->handle_, kernel->symbol()->c_str());
    if (!symbol)
      return makeStatus(
          KILN_STATUS_INVALID_ARTIFACT,
          strFormat("%s: kernel %zu ('%s'): symbol '%s' is not defined in the "
                    "code object",
                    item.c_str(), i, Artifact::str(kernel->name()),
                    kernel->symbol()->c_str()));
    module->kernels_[i] = symbol;
  }
  out = std::move(module);
  return nullptr;
}
