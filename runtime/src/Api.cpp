//===- Api.cpp - The C API over the runtime's C++ objects -----------------===//
//
// Argument checks, reference counting and conversions between the C structs
// and the internal classes. Nothing here throws (the runtime is built
// without exceptions); every failure becomes a kiln_status_t.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime.h"

#include "kiln/emu_abi.h"
#include "EmuMatrix.h"
#include "Fiber.h"
#include "Handles.h"
#include "Status.h"

#include <cstring>
#include <new>

using namespace kiln::rt;

namespace {
constexpr uint32_t kMaxThreads = 1024;

kiln_status_t nullArgument(const char *function, const char *argument) {
  return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                    std::string(function) + ": " + argument + " is NULL");
}

template <typename Handle> void release(Handle *handle) {
  if (handle && handle->references.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete handle;
}

template <typename Handle> void retain(Handle *handle) {
  if (handle)
    handle->references.fetch_add(1, std::memory_order_relaxed);
}

void fillInfo(const TensorInfo &t, kiln_tensor_info_t &out) {
  out.name = t.name.c_str();
  out.dtype = t.dtype;
  out.rank = t.shape.size();
  out.shape = t.shape.data();
  out.byte_size = size_t(t.byteSize);
}

const kiln::artifact::Program *program(const kiln_artifact_t *artifact,
                                       size_t index) {
  if (!artifact)
    return nullptr;
  auto *programs = artifact->artifact->manifest().programs();
  return index < programs->size()
             ? programs->Get(flatbuffers::uoffset_t(index))
             : nullptr;
}

kiln_status_t wrapArtifact(kiln_status_t status,
                           std::unique_ptr<Artifact> &artifact,
                           kiln_artifact_t **out) {
  if (status)
    return status;
  auto *handle = new (std::nothrow) kiln_artifact_s();
  if (!handle)
    return makeStatus(KILN_STATUS_OUT_OF_MEMORY, "out of memory");
  handle->artifact = std::move(artifact);
  *out = handle;
  return nullptr;
}
} // namespace

extern "C" {

//===----------------------------------------------------------------------===//
// Artifact
//===----------------------------------------------------------------------===//

kiln_status_t kiln_artifact_open(const char *path,
                                 kiln_artifact_t **out_artifact) {
  if (!path)
    return nullArgument("kiln_artifact_open", "path");
  if (!out_artifact)
    return nullArgument("kiln_artifact_open", "out_artifact");
  std::unique_ptr<Artifact> artifact;
  kiln_status_t status = Artifact::open(path, artifact);
  return wrapArtifact(status, artifact, out_artifact);
}

kiln_status_t kiln_artifact_open_memory(const void *data, size_t size,
                                        const char *name,
                                        kiln_artifact_t **out_artifact) {
  if (!out_artifact)
    return nullArgument("kiln_artifact_open_memory", "out_artifact");
  std::unique_ptr<Artifact> artifact;
  kiln_status_t status =
      Artifact::openMemory(data, size, name ? name : "<memory>", artifact);
  return wrapArtifact(status, artifact, out_artifact);
}

void kiln_artifact_retain(kiln_artifact_t *artifact) { retain(artifact); }
void kiln_artifact_release(kiln_artifact_t *artifact) { release(artifact); }

const char *kiln_artifact_name(const kiln_artifact_t *artifact) {
  return artifact ? artifact->artifact->name().c_str() : "";
}
const char *kiln_artifact_producer(const kiln_artifact_t *artifact) {
  return artifact ? Artifact::str(artifact->artifact->manifest().producer())
                  : "";
}
const char *kiln_artifact_options(const kiln_artifact_t *artifact) {
  return artifact ? Artifact::str(artifact->artifact->manifest().options())
                  : "";
}
const char *kiln_artifact_model(const kiln_artifact_t *artifact) {
  return artifact ? Artifact::str(artifact->artifact->manifest().model()) : "";
}

size_t kiln_artifact_pinned_input_count(const kiln_artifact_t *artifact) {
  return artifact ? artifact->artifact->pinnedInputs().size() : 0;
}
kiln_status_t kiln_artifact_pinned_input(const kiln_artifact_t *artifact, size_t index,
                                         const char **out_name, const char **out_value) {
  const char *function = "kiln_artifact_pinned_input";
  if (!artifact)
    return nullArgument(function, "artifact");
  if (!out_name)
    return nullArgument(function, "out_name");
  if (!out_value)
    return nullArgument(function, "out_value");
  const auto &pinned = artifact->artifact->pinnedInputs();
  if (index >= pinned.size())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      strFormat("%s: index %zu is out of range (%zu pinned inputs)", function,
                                index, pinned.size()));
  *out_name = pinned[index].first.c_str();
  *out_value = pinned[index].second.c_str();
  return nullptr;
}

size_t kiln_artifact_input_count(const kiln_artifact_t *artifact) {
  return artifact ? artifact->artifact->inputs().size() : 0;
}
size_t kiln_artifact_output_count(const kiln_artifact_t *artifact) {
  return artifact ? artifact->artifact->outputs().size() : 0;
}

static kiln_status_t tensorInfo(const kiln_artifact_t *artifact, size_t program,
                                size_t index, kiln_tensor_info_t *out, bool output,
                                const char *function) {
  if (!artifact)
    return nullArgument(function, "artifact");
  if (!out)
    return nullArgument(function, "out_info");
  const std::vector<ProgramInterface> &programs = artifact->artifact->programs();
  if (program >= programs.size())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      strFormat("%s: program %zu is out of range (%zu programs)", function,
                                program, programs.size()));
  const std::vector<TensorInfo> &tensors =
      output ? programs[program].outputs : programs[program].inputs;
  if (index >= tensors.size())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      strFormat("%s: index %zu is out of range (%zu %ss)",
                                function, index, tensors.size(),
                                output ? "output" : "input"));
  fillInfo(tensors[index], *out);
  return nullptr;
}

kiln_status_t kiln_artifact_input_info(const kiln_artifact_t *artifact,
                                       size_t index,
                                       kiln_tensor_info_t *out_info) {
  return tensorInfo(artifact, 0, index, out_info, false, "kiln_artifact_input_info");
}
kiln_status_t kiln_artifact_output_info(const kiln_artifact_t *artifact,
                                        size_t index,
                                        kiln_tensor_info_t *out_info) {
  return tensorInfo(artifact, 0, index, out_info, true, "kiln_artifact_output_info");
}
kiln_status_t kiln_artifact_program_input_info(const kiln_artifact_t *artifact,
                                               size_t program, size_t index,
                                               kiln_tensor_info_t *out_info) {
  return tensorInfo(artifact, program, index, out_info, false,
                    "kiln_artifact_program_input_info");
}
kiln_status_t kiln_artifact_program_output_info(const kiln_artifact_t *artifact,
                                                size_t program, size_t index,
                                                kiln_tensor_info_t *out_info) {
  return tensorInfo(artifact, program, index, out_info, true,
                    "kiln_artifact_program_output_info");
}
uint32_t kiln_artifact_program_batch_size(const kiln_artifact_t *artifact, size_t index) {
  if (!artifact || index >= artifact->artifact->programs().size())
    return 0;
  return artifact->artifact->programs()[index].batchSize;
}

int64_t kiln_artifact_output_extent_axis(const kiln_artifact_t *artifact,
                                         size_t index) {
  if (!artifact || index >= artifact->artifact->outputs().size())
    return -1;
  return artifact->artifact->outputs()[index].extentAxis;
}

size_t kiln_artifact_target_count(const kiln_artifact_t *artifact) {
  if (!artifact)
    return 0;
  auto *objects = artifact->artifact->manifest().code_objects();
  return objects ? objects->size() : 0;
}
const char *kiln_artifact_target(const kiln_artifact_t *artifact,
                                 size_t index) {
  if (index >= kiln_artifact_target_count(artifact))
    return nullptr;
  return Artifact::str(artifact->artifact->manifest()
                           .code_objects()
                           ->Get(flatbuffers::uoffset_t(index))
                           ->target());
}

size_t kiln_artifact_program_count(const kiln_artifact_t *artifact) {
  return artifact ? artifact->artifact->manifest().programs()->size() : 0;
}
const char *kiln_artifact_program_name(const kiln_artifact_t *artifact,
                                       size_t index) {
  auto *p = program(artifact, index);
  return p ? Artifact::str(p->name()) : nullptr;
}
uint64_t kiln_artifact_arena_size(const kiln_artifact_t *artifact,
                                  size_t index) {
  auto *p = program(artifact, index);
  return p ? p->arena_size() : 0;
}
size_t kiln_artifact_dispatch_count(const kiln_artifact_t *artifact,
                                    size_t index) {
  auto *p = program(artifact, index);
  return p && p->dispatches() ? p->dispatches()->size() : 0;
}
uint64_t kiln_artifact_constants_size(const kiln_artifact_t *artifact) {
  return artifact ? artifact->artifact->constantsSize() : 0;
}

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

void kiln_device_options_init(kiln_device_options_t *options) {
  if (options)
    std::memset(options, 0, sizeof(*options));
}

kiln_status_t kiln_device_create(const char *spec,
                                 const kiln_device_options_t *options,
                                 kiln_device_t **out_device) {
  if (!spec)
    return nullArgument("kiln_device_create", "spec");
  if (!out_device)
    return nullArgument("kiln_device_create", "out_device");
  if (isHipSpec(spec)) {
    std::string reason;
    const hip::HipApi *api = hip::loadHipApi(reason);
    return createHipDevice(spec, api, reason, out_device);
  }
  const kiln::emu::Chip *emuChip = nullptr;
  const size_t prefix = std::strlen(kiln::emu::kTargetPrefix);
  if (std::strncmp(spec, kiln::emu::kTargetPrefix, prefix) == 0) {
    emuChip = kiln::emu::findChip(spec + prefix);
    if (!emuChip)
      return makeStatus(
          KILN_STATUS_UNSUPPORTED,
          std::string("unsupported device '") + spec +
              "' (the emu device emulates: " + kiln::emu::chipNames() + ")");
    if (!kFibersSupported)
      return makeStatus(KILN_STATUS_UNSUPPORTED,
                        std::string(spec) +
                            ": the emu device needs an x86-64 host");
  } else if (std::strcmp(spec, "cpu") != 0) {
    return makeStatus(KILN_STATUS_UNSUPPORTED,
                      std::string("unsupported device '") + spec +
                          "' (this runtime supports: cpu, hip, hip:N, "
                          "emu:<gfx>)");
  }
  kiln_device_options_t defaults;
  kiln_device_options_init(&defaults);
  if (!options)
    options = &defaults;
  uint32_t threads = options->thread_count;
  cpu_set_t affinity;
  bool pinned = options->cpu_list && options->cpu_list[0];
  if (pinned)
    KILN_RETURN_IF_ERROR(ThreadPool::parseCpuList(options->cpu_list, affinity));
  if (threads == 0)
    threads = pinned ? unsigned(CPU_COUNT(&affinity))
                     : ThreadPool::availableCpus();
  if (threads > kMaxThreads)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      strFormat("thread count %u is too large (at most %u)",
                                threads, kMaxThreads));
  std::unique_ptr<kiln_device_s> device(new (std::nothrow) kiln_device_s());
  if (!device)
    return makeStatus(KILN_STATUS_OUT_OF_MEMORY, "out of memory");
  device->name = spec;
  // An emu device runs the code object stored under its own name.
  device->target = emuChip ? spec : "cpu";
  device->emuChip = emuChip;
  KILN_RETURN_IF_ERROR(
      ThreadPool::create(threads, device->pool, pinned ? &affinity : nullptr));
  *out_device = device.release();
  return nullptr;
}

void kiln_device_retain(kiln_device_t *device) { retain(device); }
void kiln_device_release(kiln_device_t *device) { release(device); }

const char *kiln_device_name(const kiln_device_t *device) {
  return device ? device->name.c_str() : "";
}
size_t kiln_emulated_target_count(void) {
  size_t count = 0;
  kiln::emu::allChips(count);
  return count;
}
const char *kiln_emulated_target(size_t index) {
  size_t count = 0;
  const kiln::emu::Chip *const *chips = kiln::emu::allChips(count);
  return index < count ? chips[index]->name : nullptr;
}
const char *kiln_device_target(const kiln_device_t *device) {
  return device ? device->target.c_str() : "";
}
uint32_t kiln_device_thread_count(const kiln_device_t *device) {
  return device && device->pool ? device->pool->threadCount() : 0;
}

//===----------------------------------------------------------------------===//
// Session
//===----------------------------------------------------------------------===//

void kiln_session_options_init(kiln_session_options_t *options) {
  if (options)
    std::memset(options, 0, sizeof(*options));
}

kiln_status_t kiln_session_create(kiln_device_t *device,
                                  kiln_artifact_t *artifact,
                                  const kiln_session_options_t *options,
                                  kiln_session_t **out_session) {
  if (!device)
    return nullArgument("kiln_session_create", "device");
  if (!artifact)
    return nullArgument("kiln_session_create", "artifact");
  if (!out_session)
    return nullArgument("kiln_session_create", "out_session");
  kiln_session_options_t defaults;
  kiln_session_options_init(&defaults);
  std::unique_ptr<Session> session;
  KILN_RETURN_IF_ERROR(Session::create(device, artifact,
                                       options ? *options : defaults, session));
  auto *handle = new (std::nothrow) kiln_session_s();
  if (!handle)
    return makeStatus(KILN_STATUS_OUT_OF_MEMORY, "out of memory");
  handle->session = std::move(session);
  *out_session = handle;
  return nullptr;
}

void kiln_session_retain(kiln_session_t *session) { retain(session); }
void kiln_session_release(kiln_session_t *session) { release(session); }

size_t kiln_session_program_index(const kiln_session_t *session) {
  return session ? session->session->programIndex() : 0;
}

kiln_status_t kiln_session_run(kiln_session_t *session,
                               const kiln_tensor_t *inputs,
                               size_t input_count, kiln_tensor_t *outputs,
                               size_t output_count) {
  if (!session)
    return nullArgument("kiln_session_run", "session");
  return session->session->run(inputs, input_count, outputs, output_count);
}

size_t kiln_session_dispatch_count(const kiln_session_t *session) {
  return session ? session->session->dispatchCount() : 0;
}

kiln_status_t kiln_session_dispatch_info(const kiln_session_t *session,
                                         size_t index,
                                         kiln_dispatch_info_t *out_info) {
  if (!session)
    return nullArgument("kiln_session_dispatch_info", "session");
  if (!out_info)
    return nullArgument("kiln_session_dispatch_info", "out_info");
  return session->session->dispatchInfo(index, *out_info);
}

kiln_status_t kiln_session_profile(kiln_session_t *session,
                                   uint64_t *out_run_count,
                                   uint64_t *out_dispatch_ns, size_t count) {
  if (!session)
    return nullArgument("kiln_session_profile", "session");
  return session->session->profile(out_run_count, out_dispatch_ns, count);
}

void kiln_session_reset_profile(kiln_session_t *session) {
  if (session)
    session->session->resetProfile();
}

kiln_status_t kiln_session_emu_memory_model(const kiln_session_t *session,
                                            kiln_emu_memory_model_t *out_model) {
  if (!session)
    return nullArgument("kiln_session_emu_memory_model", "session");
  if (!out_model)
    return nullArgument("kiln_session_emu_memory_model", "out_model");
  const kiln::rt::EmuMemoryModel *model = session->session->emuMemoryModel();
  if (!model)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "emu statistics are not enabled for this session");
  out_model->chip = model->chip;
  out_model->wave_size = model->waveSize;
  out_model->lds_banks = model->ldsBanks;
  out_model->lds_bank_bytes = model->ldsBankBytes;
  out_model->cache_line_bytes = model->lineBytes;
  out_model->provisional = model->provisional ? 1 : 0;
  out_model->basis = model->basis;
  return nullptr;
}

size_t kiln_session_emu_site_count(kiln_session_t *session) {
  return session ? session->session->emuSiteCount() : 0;
}

kiln_status_t kiln_session_emu_site_stats(kiln_session_t *session,
                                          size_t index,
                                          kiln_emu_site_stats_t *out_stats) {
  if (!session)
    return nullArgument("kiln_session_emu_site_stats", "session");
  if (!out_stats)
    return nullArgument("kiln_session_emu_site_stats", "out_stats");
  return session->session->emuSiteStats(index, *out_stats);
}

} // extern "C"
