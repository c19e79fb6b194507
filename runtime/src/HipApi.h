//===- HipApi.h - The HIP runtime, loaded with dlopen -----------*- C++ -*-===//
//
// The few HIP types the runtime needs, declared here so no HIP headers are
// needed at build time, and `HipApi`: one function pointer per entry of
// HipSymbols.def. `loadHipApi` fills the table once per process from
// libamdhip64 (dlopen + dlsym); tests fill a table with fakes instead, so the
// hip device builds and is tested on machines without ROCm or a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SRC_HIPAPI_H
#define KILN_RUNTIME_SRC_HIPAPI_H

#include "kiln/runtime.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::rt::hip {

/// HIP's error enum, returned as an int by every HIP call.
using hipError_t = int;
constexpr hipError_t hipSuccess = 0;
constexpr hipError_t hipErrorOutOfMemory = 2;
constexpr hipError_t hipErrorNoDevice = 100;

/// Opaque handles (pointers to runtime-private structs in HIP).
struct ihipModule_t;
struct ihipModuleSymbol_t;
struct ihipStream_t;
struct ihipEvent_t;
using hipModule_t = ihipModule_t *;
using hipFunction_t = ihipModuleSymbol_t *;
using hipStream_t = ihipStream_t *;
using hipEvent_t = ihipEvent_t *;
using hipDeviceptr_t = void *;

/// The `extra` array of hipModuleLaunchKernel: HIP defines these as the
/// pointer values 1, 2 and 3 (hip_runtime_api.h, ROCm 5 to 7).
inline void *const kLaunchParamBufferPointer = reinterpret_cast<void *>(1);
inline void *const kLaunchParamBufferSize = reinterpret_cast<void *>(2);
inline void *const kLaunchParamEnd = reinterpret_cast<void *>(3);

/// The HIP functions the runtime calls (HipSymbols.def). Optional entries may
/// be nullptr; required ones never are in a table from loadHipApi.
struct HipApi {
#define KILN_HIP_REQUIRED(ret, name, params) ret(*name) params = nullptr;
#include "HipSymbols.def"
  /// The library the table came from ("libamdhip64.so.6"), for messages.
  std::string library;
};

/// Loads the HIP runtime the first time it is called, trying
/// `libamdhip64.so`, `.so.7`, `.so.6` and `.so.5` in turn (or only the path
/// in the environment variable KILN_HIP_LIBRARY, when set), and resolves every
/// symbol. Returns the process-wide table, or nullptr with `reason` set to
/// one line saying why not. The library is never unloaded.
const HipApi *loadHipApi(std::string &reason);

/// "hipErrorNoDevice (error 100)", or "error 100" without hipGetErrorString.
std::string errorString(const HipApi &api, hipError_t error);

/// The status for a failed HIP call: "<where>: <call> failed: <error>".
/// hipErrorOutOfMemory becomes KILN_STATUS_OUT_OF_MEMORY, anything else
/// `code`.
kiln_status_t hipError(const HipApi &api, hipError_t error, const char *call,
                       const std::string &where,
                       kiln_status_code_t code = KILN_STATUS_INTERNAL);

/// The gcnArchName of HIP device `device` ("gfx942:sramecc+:xnack-"), read
/// from its properties; see HipApi.cpp for how the struct layout is chosen.
/// `where` prefixes error messages.
kiln_status_t queryGcnArchName(const HipApi &api, int device,
                               const std::string &where, std::string &out);

/// The target name of a gcnArchName: the part before the first ':' (the
/// features), e.g. "gfx942" for "gfx942:sramecc+:xnack-".
std::string gfxTarget(const std::string &gcnArchName);

/// Byte offsets of gcnArchName in the two hipDeviceProp_t layouts, and a size
/// larger than both structs (the buffer the properties are read into).
constexpr size_t kGcnArchNameOffsetR0000 = 396;
constexpr size_t kGcnArchNameOffsetR0600 = 1160;
constexpr size_t kGcnArchNameSize = 256;
constexpr size_t kDevicePropertiesBufferSize = 8192;

} // namespace kiln::rt::hip

/// Calls `api.name args`; on failure returns the status of hipError naming
/// the call and `where` from the enclosing function.
#define KILN_HIP_RETURN_IF_ERROR(api, where, name, args)                       \
  do {                                                                         \
    ::kiln::rt::hip::hipError_t kilnHipError_ = (api).name args;               \
    if (kilnHipError_ != ::kiln::rt::hip::hipSuccess)                          \
      return ::kiln::rt::hip::hipError((api), kilnHipError_, #name, (where));  \
  } while (false)

#endif // KILN_RUNTIME_SRC_HIPAPI_H
