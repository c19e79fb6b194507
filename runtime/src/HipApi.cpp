//===- HipApi.cpp - The HIP runtime, loaded with dlopen -------------------===//

#include "HipApi.h"

#include "Status.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <vector>

using namespace kiln::rt;
using namespace kiln::rt::hip;

namespace {

/// Whether a dlerror() message says that `name` itself does not exist (as
/// opposed to a library it needs, or a broken file).
bool isNotFound(const std::string &name, const std::string &message) {
  return message.compare(0, name.size() + 1, name + ":") == 0 &&
         message.find("No such file or directory") != std::string::npos;
}

/// dlopen's the first candidate that loads and resolves the symbols;
/// nullptr with `reason` otherwise.
HipApi *load(std::string &reason) {
  std::vector<std::string> candidates;
  const char *overridePath = std::getenv("KILN_HIP_LIBRARY");
  if (overridePath && *overridePath)
    candidates.push_back(overridePath);
  else
    candidates = {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
                  "libamdhip64.so.5"};

  void *handle = nullptr;
  std::string library, failure;
  for (const std::string &candidate : candidates) {
    handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      library = candidate;
      break;
    }
    const char *message = dlerror();
    std::string text = message ? message : candidate + ": dlopen failed";
    // Report the first failure that is not a plain "not found": a library
    // that exists but cannot be loaded says more.
    if (failure.empty() && !isNotFound(candidate, text))
      failure = text;
  }
  if (!handle) {
    if (!failure.empty()) {
      reason = "cannot load the HIP runtime: " + failure;
    } else {
      std::string names;
      for (size_t i = 0; i < candidates.size(); ++i)
        names += (i == 0                       ? ""
                  : i + 1 == candidates.size() ? " and "
                                               : ", ") +
                 candidates[i];
      reason = "the HIP runtime is not installed (" + names +
               (candidates.size() == 1 ? " was" : " were") + " not found)";
    }
    return nullptr;
  }

  std::unique_ptr<HipApi> api(new HipApi());
  api->library = library;
  std::string missing;
  auto resolve = [&](const char *name, bool required) -> void * {
    dlerror();
    void *symbol = dlsym(handle, name);
    if (!symbol && required)
      missing += (missing.empty() ? "" : ", ") + std::string(name);
    return symbol;
  };
  // dlsym returns object pointers; copy them into the function pointers.
  static_assert(sizeof(void (*)()) == sizeof(void *), "");
#define KILN_HIP_REQUIRED(ret, name, params)                                   \
  {                                                                            \
    void *symbol = resolve(#name, true);                                       \
    std::memcpy(&api->name, &symbol, sizeof(symbol));                          \
  }
#define KILN_HIP_OPTIONAL(ret, name, params)                                   \
  {                                                                            \
    void *symbol = resolve(#name, false);                                      \
    std::memcpy(&api->name, &symbol, sizeof(symbol));                          \
  }
#include "HipSymbols.def"
  if (!missing.empty()) {
    reason = "the HIP runtime " + library + " lacks " + missing;
    return nullptr; // the handle stays open: HIP does not like dlclose
  }
  return api.release();
}

struct Loaded {
  HipApi *api = nullptr;
  std::string reason;
};

} // namespace

const HipApi *kiln::rt::hip::loadHipApi(std::string &reason) {
  // Thread-safe one-time initialization; never freed (like the library).
  static const Loaded *loaded = [] {
    auto *l = new Loaded();
    l->api = load(l->reason);
    return l;
  }();
  if (!loaded->api)
    reason = loaded->reason;
  return loaded->api;
}

std::string kiln::rt::hip::errorString(const HipApi &api, hipError_t error) {
  const char *name =
      api.hipGetErrorString ? api.hipGetErrorString(error) : nullptr;
  if (name && *name)
    return strFormat("%s (error %d)", name, error);
  return strFormat("error %d", error);
}

kiln_status_t kiln::rt::hip::hipError(const HipApi &api, hipError_t error,
                                      const char *call,
                                      const std::string &where,
                                      kiln_status_code_t code) {
  if (error == hipErrorOutOfMemory)
    code = KILN_STATUS_OUT_OF_MEMORY;
  return makeStatus(code, where + ": " + call +
                              " failed: " + errorString(api, error));
}

std::string kiln::rt::hip::gfxTarget(const std::string &gcnArchName) {
  return gcnArchName.substr(0, gcnArchName.find(':'));
}

// Reading gcnArchName
// -------------------
// hipDeviceGetAttribute has no string attributes (the integer
// hipDeviceAttributeGcnArch cannot spell "gfx90a" and was dropped in ROCm 6),
// so the name comes from hipDeviceProp_t, whose layout changed in ROCm 6.0:
// - ROCm 5 (hipDeviceProp_tR0000): gcnArchName at byte 396, sizeof 792.
//   Checked with offsetof against Debian's ROCm 5.2 hip_runtime_api.h.
// - ROCm 6+ (hipDeviceProp_tR0600, a CUDA-12-like struct): gcnArchName at
//   byte 1160, sizeof 1472. Checked by compiling the struct of ROCm's
//   current hip_runtime_api.h.
// ROCm 6+ headers `#define hipGetDeviceProperties hipGetDevicePropertiesR0600`,
// but the library's unversioned symbol `hipGetDeviceProperties` still fills
// the R0000 layout (ROCm/clr issue 151, ROCm 6.0 to 6.3; ROCm/ROCm issue
// 2728); libamdhip64 exports hipGetDeviceProperties@@hip_4.2,
// hipGetDevicePropertiesR0000@@hip_4.2 and hipGetDevicePropertiesR0600@@hip_6.0
// (ROCm/hipfort PR 387). LLVM's offload-arch (clang/tools/offload-arch/
// AMDGPUArchByHIP.cpp, llvm-project PR 167695) reads offsets 1160 and 396 the
// same way, trying R0600 first; IREE moved to R0600 for its dlopen'ed HIP
// (iree-org/iree PR 16643).
// So: hipGetDevicePropertiesR0600 when the library has it (the versioned
// name freezes its layout), else (or when that fails) the unversioned symbol
// with the R0000 layout. The struct is written into a zeroed buffer several
// times larger than either layout, and the name is accepted only when it is
// NUL-terminated within its 256 bytes and starts with "gfx": anything else is
// an error, never a guess.
namespace {
/// The name at `offset` of a properties buffer, or "" if it is not a
/// plausible gcnArchName.
std::string archNameAt(const std::vector<unsigned char> &buffer,
                       size_t offset) {
  const char *name = reinterpret_cast<const char *>(buffer.data() + offset);
  size_t length = strnlen(name, kGcnArchNameSize);
  if (length == kGcnArchNameSize || length < 4 ||
      std::strncmp(name, "gfx", 3) != 0)
    return "";
  return std::string(name, length);
}
} // namespace

kiln_status_t kiln::rt::hip::queryGcnArchName(const HipApi &api, int device,
                                              const std::string &where,
                                              std::string &out) {
  static_assert(kGcnArchNameOffsetR0600 + kGcnArchNameSize <=
                        kDevicePropertiesBufferSize &&
                    kGcnArchNameOffsetR0000 + kGcnArchNameSize <=
                        kDevicePropertiesBufferSize,
                "the properties buffer must hold both layouts");
  std::vector<unsigned char> buffer;
  std::string tried;
  auto attempt = [&](hipError_t (*query)(void *, int), const char *call,
                     size_t offset) -> bool {
    if (!query)
      return false;
    buffer.assign(kDevicePropertiesBufferSize, 0);
    hipError_t error = query(buffer.data(), device);
    if (error == hipSuccess) {
      out = archNameAt(buffer, offset);
      if (!out.empty())
        return true;
      tried += strFormat("%s%s gave no gfx name at byte %zu",
                         tried.empty() ? "" : "; ", call, offset);
    } else {
      tried += strFormat("%s%s failed: %s", tried.empty() ? "" : "; ", call,
                         errorString(api, error).c_str());
    }
    return false;
  };
  if (attempt(api.hipGetDevicePropertiesR0600, "hipGetDevicePropertiesR0600",
              kGcnArchNameOffsetR0600) ||
      attempt(api.hipGetDeviceProperties, "hipGetDeviceProperties",
              kGcnArchNameOffsetR0000))
    return nullptr;
  if (tried.empty())
    tried = "the HIP runtime has neither hipGetDevicePropertiesR0600 nor "
            "hipGetDeviceProperties";
  return makeStatus(KILN_STATUS_UNSUPPORTED,
                    where + ": cannot read the device's gfx name (" + tried +
                        ")");
}
