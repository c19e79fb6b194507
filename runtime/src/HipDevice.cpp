//===- HipDevice.cpp - AMD GPUs through HIP -------------------------------===//

#include "HipDevice.h"

#include "Commands.h"

#include "ArtifactFormat.h"
#include "Handles.h"
#include "Status.h"

#include <algorithm>
#include <cstring>
#include <elf.h>
#include <new>

using namespace kiln::rt;
using namespace kiln::rt::hip;
namespace fb = kiln::artifact;
using ull = unsigned long long;

#ifndef EM_AMDGPU
#define EM_AMDGPU 224
#endif

namespace {
/// Device indices above this are rejected as malformed rather than looked up.
constexpr unsigned kMaxDeviceIndex = 1u << 16;
/// HIP's limit on the threads of one workgroup.
constexpr uint64_t kMaxWorkgroupThreads = 1024;
} // namespace

//===----------------------------------------------------------------------===//
// The device
//===----------------------------------------------------------------------===//

bool kiln::rt::isHipSpec(const std::string &spec) {
  return spec == "hip" || spec.compare(0, 4, "hip:") == 0;
}

kiln_status_t kiln::rt::createHipDevice(const std::string &spec,
                                        const HipApi *api,
                                        const std::string &loadError,
                                        kiln_device_s **out) {
  unsigned index = 0;
  if (spec != "hip") {
    std::string digits = spec.substr(4);
    // At most 5 digits: no overflow.
    bool valid = !digits.empty() && digits.size() <= 5;
    for (char c : digits) {
      valid = valid && c >= '0' && c <= '9';
      index = index * 10 + unsigned(c - '0');
    }
    if (!valid || index > kMaxDeviceIndex)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        "invalid device '" + spec +
                            "' (expected hip or hip:N, N a device index)");
  }
  std::string name = strFormat("hip:%u", index);
  // One line, the same start whatever the reason, so tools and tests can
  // recognize it.
  auto unavailable = [&](const std::string &reason, bool suggestCpu) {
    return makeStatus(KILN_STATUS_UNSUPPORTED,
                      "no AMD GPU found (" + name + "): " + reason +
                          (suggestCpu ? "; use --device=cpu" : ""));
  };
  if (!api)
    return unavailable(loadError, true);
  int count = 0;
  hipError_t error = api->hipGetDeviceCount(&count);
  if (error != hipSuccess)
    return unavailable("hipGetDeviceCount failed: " + errorString(*api, error),
                       true);
  if (count <= 0)
    return unavailable("the HIP runtime (" + api->library + ") sees no devices",
                       true);
  if (index >= unsigned(count))
    return unavailable(
        strFormat("the HIP runtime sees %d device%s (hip:0%s)", count,
                  count == 1 ? "" : "s",
                  count == 1 ? "" : strFormat(" to hip:%d", count - 1).c_str()),
        false);

  std::unique_ptr<HipDevice> hipDevice(new (std::nothrow) HipDevice());
  std::unique_ptr<kiln_device_s> device(new (std::nothrow) kiln_device_s());
  if (!hipDevice || !device)
    return makeStatus(KILN_STATUS_OUT_OF_MEMORY, "out of memory");
  hipDevice->api_ = api;
  hipDevice->index_ = int(index);
  KILN_HIP_RETURN_IF_ERROR(*api, name, hipSetDevice, (int(index)));
  KILN_RETURN_IF_ERROR(
      queryGcnArchName(*api, int(index), name, hipDevice->gcnArchName_));
  device->name = name;
  device->target = gfxTarget(hipDevice->gcnArchName_);
  device->hip = std::move(hipDevice);
  *out = device.release();
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Loading a program
//===----------------------------------------------------------------------===//

/// Why the bytes are not an AMDGPU code object, or nullptr if the ELF header
/// looks right (HIP's own error for a bad image says much less).
static const char *checkHsacoHeader(const unsigned char *data, uint64_t size) {
  uint16_t machine, type;
  if (const char *problem = readElfHeader(data, size, machine, type))
    return problem;
  if (machine != EM_AMDGPU)
    return "not an AMDGPU ELF file";
  if (type != ET_DYN)
    return "not an ELF shared object (an HSA code object is one)";
  return nullptr;
}

HipProgram::~HipProgram() {
  if (!api_)
    return;
  // Errors are ignored: nothing can be done about them here.
  api_->hipSetDevice(device_);
  if (stream_)
    api_->hipStreamSynchronize(stream_);
  for (hipEvent_t event : events_)
    if (event)
      api_->hipEventDestroy(event);
  if (stream_)
    api_->hipStreamDestroy(stream_);
  if (constants_)
    api_->hipFree(constants_);
  if (arena_)
    api_->hipFree(arena_);
  if (module_)
    api_->hipModuleUnload(module_);
}

std::string HipProgram::dispatchName(size_t index) const {
  const fb::Kernel *kernel = object_->kernels()->Get(launches_[index].kernel);
  return strFormat("%s: dispatch %zu (kernel '%s')", artifactName_.c_str(),
                   index, Artifact::str(kernel->name()));
}

kiln_status_t HipProgram::load(const HipDevice &device,
                               const Artifact &artifact, int codeObject,
                               const fb::Program &program, bool profiling,
                               std::unique_ptr<HipProgram> &out) {
  const fb::CodeObject *object = artifact.manifest().code_objects()->Get(
      flatbuffers::uoffset_t(codeObject));
  std::string item =
      strFormat("%s: code object %d ('%s')", artifact.name().c_str(),
                codeObject, Artifact::str(object->target()));

  // Everything the artifact says is checked before the first HIP call.
  std::string format = Artifact::str(object->format());
  if (!format.empty() && format != "hsaco")
    return makeStatus(KILN_STATUS_UNSUPPORTED,
                      item + ": format '" + format +
                          "' is not supported by the hip device (expected "
                          "'hsaco')");
  const SectionEntry &section = artifact.sections()[object->section()];
  const unsigned char *bytes = artifact.sectionData(object->section());
  if (const char *problem = checkHsacoHeader(bytes, section.size))
    return makeStatus(KILN_STATUS_INVALID_ARTIFACT, item + ": " + problem);

  auto *kernels = object->kernels();
  size_t kernelCount = kernels ? kernels->size() : 0;
  std::vector<Launch> kernelLaunches(kernelCount);
  for (size_t k = 0; k < kernelCount; ++k) {
    const fb::Kernel *kernel = kernels->Get(flatbuffers::uoffset_t(k));
    std::string where = strFormat("%s: kernel %zu ('%s')", item.c_str(), k,
                                  Artifact::str(kernel->name()));
    auto invalid = [&](const std::string &message) {
      return makeStatus(KILN_STATUS_INVALID_ARTIFACT, where + ": " + message);
    };
    Launch &launch = kernelLaunches[k];
    launch.kernel = uint32_t(k);
    // Missing entries of workgroup_size are 1.
    auto *size = kernel->workgroup_size();
    size_t rank = size ? size->size() : 0;
    if (rank > 3)
      return invalid(
          strFormat("workgroup size has %zu dimensions (at most 3)", rank));
    std::string sizeText;
    uint64_t threads = 1;
    for (size_t d = 0; d < rank; ++d) {
      uint32_t n = size->Get(flatbuffers::uoffset_t(d));
      sizeText += strFormat("%s%u", d ? ", " : "", n);
      launch.workgroupSize[d] = n;
      // Saturated above the limit, so the product cannot overflow.
      threads = std::min(threads * n, kMaxWorkgroupThreads + 1);
    }
    if (threads == 0 || threads > kMaxWorkgroupThreads)
      return invalid(strFormat("workgroup size [%s] is not 1 to %llu threads",
                               sizeText.c_str(), ull(kMaxWorkgroupThreads)));
    uint64_t count = kernel->workgroup_count();
    if (count > UINT32_MAX ||
        count * launch.workgroupSize[0] > uint64_t(UINT32_MAX))
      return invalid(strFormat("%llu workgroups of %u threads along x exceed "
                               "HIP's grid limit (2^32 - 1 threads)",
                               ull(count), launch.workgroupSize[0]));
    launch.workgroupCount = uint32_t(count);
  }

  const HipApi &api = device.api();
  std::unique_ptr<HipProgram> p(new (std::nothrow) HipProgram());
  if (!p)
    return makeStatus(KILN_STATUS_OUT_OF_MEMORY, "out of memory");
  p->api_ = &api;
  p->device_ = device.index();
  p->artifactName_ = artifact.name();
  p->object_ = object;
  p->hostConstants_ = artifact.constants();
  KILN_HIP_RETURN_IF_ERROR(api, item, hipSetDevice, (p->device_));

  hipError_t error = api.hipModuleLoadData(&p->module_, bytes);
  if (error != hipSuccess) {
    p->module_ = nullptr;
    return hipError(api, error, "hipModuleLoadData",
                    item + " on " + device.gcnArchName(),
                    KILN_STATUS_UNSUPPORTED);
  }
  for (size_t k = 0; k < kernelCount; ++k) {
    const fb::Kernel *kernel = kernels->Get(flatbuffers::uoffset_t(k));
    error = api.hipModuleGetFunction(&kernelLaunches[k].function, p->module_,
                                     kernel->symbol()->c_str());
    if (error != hipSuccess)
      return hipError(api, error, "hipModuleGetFunction",
                      strFormat("%s: kernel %zu ('%s'): symbol '%s'",
                                item.c_str(), k, Artifact::str(kernel->name()),
                                kernel->symbol()->c_str()),
                      KILN_STATUS_INVALID_ARTIFACT);
  }

  // The arena, zeroed once like the cpu device's, and the constants section,
  // uploaded once.
  uint64_t arenaSize = program.arena_size();
  if (arenaSize > SIZE_MAX - fb::format::kSectionAlignment)
    return makeStatus(KILN_STATUS_OUT_OF_MEMORY,
                      strFormat("%s: the arena (%llu bytes) is too large",
                                artifact.name().c_str(), ull(arenaSize)));
  std::string arenaWhere = strFormat("%s: the arena (%llu bytes)",
                                     artifact.name().c_str(), ull(arenaSize));
  if (arenaSize != 0) {
    size_t bytesToAllocate = size_t(fb::format::alignUp(arenaSize));
    KILN_HIP_RETURN_IF_ERROR(api, arenaWhere, hipMalloc,
                             (&p->arena_, bytesToAllocate));
    KILN_HIP_RETURN_IF_ERROR(api, arenaWhere, hipMemset,
                             (p->arena_, 0, bytesToAllocate));
  }
  uint64_t constantsSize = artifact.constantsSize();
  if (constantsSize != 0) {
    std::string where = strFormat("%s: the constants (%llu bytes)",
                                  artifact.name().c_str(), ull(constantsSize));
    if (constantsSize > SIZE_MAX)
      return makeStatus(KILN_STATUS_OUT_OF_MEMORY, where + ": too large");
    KILN_HIP_RETURN_IF_ERROR(api, where, hipMalloc,
                             (&p->constants_, size_t(constantsSize)));
    KILN_HIP_RETURN_IF_ERROR(
        api, where, hipMemcpyHtoD,
        (p->constants_, artifact.constants(), size_t(constantsSize)));
  }

  KILN_HIP_RETURN_IF_ERROR(api, artifact.name(), hipStreamCreate,
                           (&p->stream_));

  auto address = [&](const fb::Binding *binding) -> uint64_t {
    auto *base = static_cast<unsigned char *>(
        binding->kind() == fb::BindingKind::Arena ? p->arena_ : p->constants_);
    return uint64_t(reinterpret_cast<uintptr_t>(base)) + binding->offset();
  };
  if (auto *inputs = program.inputs())
    for (const fb::Binding *binding : *inputs)
      p->inputs_.push_back({false, binding->offset(), binding->size()});
  if (auto *outputs = program.outputs())
    for (const fb::Binding *binding : *outputs)
      p->outputs_.push_back({binding->kind() == fb::BindingKind::Constant,
                             binding->offset(), binding->size()});
  if (auto *extents = program.extents())
    for (const fb::OutputExtent *extent : *extents)
      p->extents_.push_back({extent->extent()->kind() == fb::BindingKind::Constant,
                             extent->extent()->offset(), extent->extent()->size()});
  if (auto *dispatches = program.dispatches()) {
    for (const fb::Dispatch *dispatch : *dispatches) {
      Launch launch = kernelLaunches[dispatch->kernel()];
      if (auto *bindings = dispatch->bindings())
        for (const fb::Binding *binding : *bindings)
          launch.kernargs.push_back(address(binding));
      p->launches_.push_back(std::move(launch));
    }
  }

  p->program_ = &program;
  if (auto *commands = program.commands())
    p->slots_.assign(commands->size(), 0);
  // With commands a dispatch may run many times or not at all: the run is
  // not timed per dispatch.
  if (profiling && !program.commands()) {
    p->events_.assign(p->launches_.size() + 1, nullptr);
    for (hipEvent_t &event : p->events_)
      KILN_HIP_RETURN_IF_ERROR(api, artifact.name(), hipEventCreate, (&event));
  }
  out = std::move(p);
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

kiln_status_t HipProgram::launch(size_t i) {
  const HipApi &api = *api_;
  Launch &launch = launches_[i];
  if (launch.workgroupCount == 0)
    return nullptr;
  uint64_t noArguments = 0;
  size_t size = launch.kernargs.size() * sizeof(uint64_t);
  void *buffer = launch.kernargs.empty()
                     ? static_cast<void *>(&noArguments)
                     : static_cast<void *>(launch.kernargs.data());
  void *extra[] = {kLaunchParamBufferPointer, buffer, kLaunchParamBufferSize,
                   &size, kLaunchParamEnd};
  KILN_HIP_RETURN_IF_ERROR(
      api, dispatchName(i), hipModuleLaunchKernel,
      (launch.function, launch.workgroupCount, 1, 1, launch.workgroupSize[0],
       launch.workgroupSize[1], launch.workgroupSize[2], 0, stream_, nullptr,
       extra));
  return nullptr;
}

/// The commands of a program on the stream: copies stay on the device and
/// are queued like the dispatches; a jump's scalar is copied back and
/// waited for (the only point where a run with control flow waits).
class HipProgram::Commands : public CommandTarget {
public:
  explicit Commands(HipProgram &program) : p(program) {}
  kiln_status_t dispatch(uint32_t index) override { return p.launch(index); }
  kiln_status_t copy(const fb::Binding &src, uint64_t srcOffset,
                     const fb::Binding &dst, uint64_t dstOffset,
                     uint64_t size) override {
    KILN_HIP_RETURN_IF_ERROR(
        *p.api_, p.artifactName_ + ": a copy of the program", hipMemcpyDtoDAsync,
        (address(dst) + dstOffset, address(src) + srcOffset, size_t(size),
         p.stream_));
    return nullptr;
  }
  kiln_status_t read(const fb::Binding &src, void *out, size_t size) override {
    std::string where = p.artifactName_ + ": a condition of the program";
    KILN_HIP_RETURN_IF_ERROR(*p.api_, where, hipMemcpyDtoHAsync,
                             (out, address(src), size, p.stream_));
    KILN_HIP_RETURN_IF_ERROR(*p.api_, where, hipStreamSynchronize,
                             (p.stream_));
    return nullptr;
  }
  kiln_status_t writeInt64(const fb::Binding &dst, int64_t value,
                           size_t slot) override {
    // The slot outlives the queued copy: every loop iteration reads its
    // condition (and waits) before the same command writes again.
    p.slots_[slot] = value;
    KILN_HIP_RETURN_IF_ERROR(*p.api_, p.artifactName_ + ": a loop counter",
                             hipMemcpyHtoDAsync,
                             (address(dst), &p.slots_[slot], sizeof(int64_t),
                              p.stream_));
    return nullptr;
  }

private:
  unsigned char *address(const fb::Binding &b) const {
    return static_cast<unsigned char *>(b.kind() == fb::BindingKind::Arena
                                            ? p.arena_
                                            : p.constants_) +
           b.offset();
  }
  HipProgram &p;
};

kiln_status_t HipProgram::run(const std::vector<const kiln_tensor_t *> &inputs,
                              kiln_tensor_t *outputs, int64_t *extents,
                              uint64_t *dispatchNs,
                              const RunDeadline &deadline) {
  const HipApi &api = *api_;
  KILN_HIP_RETURN_IF_ERROR(api, artifactName_, hipSetDevice, (device_));
  // Once work is queued, an error must not return before the stream is idle:
  // queued copies still read the inputs and write the outputs.
  kiln_status_t status = [&]() -> kiln_status_t {
    auto *arena = static_cast<unsigned char *>(arena_);
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (inputs_[i].size != 0)
        KILN_HIP_RETURN_IF_ERROR(api,
                                 strFormat("%s: input %zu ('%s')",
                                           artifactName_.c_str(), i,
                                           inputs[i]->name),
                                 hipMemcpyHtoDAsync,
                                 (arena + inputs_[i].offset, inputs[i]->data,
                                  size_t(inputs_[i].size), stream_));

    bool timed = !events_.empty();
    if (timed)
      KILN_HIP_RETURN_IF_ERROR(api, artifactName_, hipEventRecord,
                               (events_[0], stream_));
    if (program_->commands()) {
      Commands target(*this);
      KILN_RETURN_IF_ERROR(
          runCommands(*program_, target, artifactName_, deadline));
    } else {
      for (size_t i = 0; i < launches_.size(); ++i) {
        KILN_RETURN_IF_ERROR(launch(i));
        if (timed)
          KILN_HIP_RETURN_IF_ERROR(api, dispatchName(i), hipEventRecord,
                                   (events_[i + 1], stream_));
      }
    }

    for (size_t i = 0; i < outputs_.size(); ++i) {
      const Transfer &t = outputs_[i];
      if (t.size == 0)
        continue;
      if (t.constant) {
        std::memcpy(outputs[i].data, hostConstants_ + t.offset, size_t(t.size));
        continue;
      }
      KILN_HIP_RETURN_IF_ERROR(
          api, strFormat("%s: output %zu", artifactName_.c_str(), i),
          hipMemcpyDtoHAsync,
          (outputs[i].data, arena + t.offset, size_t(t.size), stream_));
    }
    for (size_t i = 0; i < extents_.size(); ++i) {
      const Transfer &t = extents_[i];
      if (t.constant) {
        std::memcpy(&extents[i], hostConstants_ + t.offset, sizeof(int64_t));
        continue;
      }
      KILN_HIP_RETURN_IF_ERROR(
          api, strFormat("%s: output extent %zu", artifactName_.c_str(), i),
          hipMemcpyDtoHAsync,
          (&extents[i], arena + t.offset, sizeof(int64_t), stream_));
    }
    return nullptr;
  }();

  hipError_t error = api.hipStreamSynchronize(stream_);
  if (status)
    return status;
  if (error != hipSuccess)
    return hipError(api, error, "hipStreamSynchronize",
                    artifactName_ + ": the run");

  if (!events_.empty() && dispatchNs) {
    for (size_t i = 0; i < launches_.size(); ++i) {
      float milliseconds = 0;
      KILN_HIP_RETURN_IF_ERROR(api, dispatchName(i), hipEventElapsedTime,
                               (&milliseconds, events_[i], events_[i + 1]));
      if (milliseconds > 0)
        dispatchNs[i] += uint64_t(double(milliseconds) * 1e6 + 0.5);
    }
  }
  return nullptr;
}
