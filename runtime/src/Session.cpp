//===- Session.cpp - One loaded program with its arena --------------------===//

#include "Session.h"

#include "ArtifactFormat.h"
#include "Commands.h"
#include "Handles.h"
#include "Status.h"

#include <chrono>
#include <cstdlib>
#include <cstring>

using namespace kiln::rt;
namespace fb = kiln::artifact;
using ull = unsigned long long;

namespace {
/// What a pool thread needs to run a chunk of one dispatch's workgroups.
struct KernelJob {
  CpuKernelFn fn;
  void *const *bindings;
};

void runKernelChunk(void *context, uint64_t begin, uint64_t end) {
  const KernelJob &job = *static_cast<const KernelJob *>(context);
  for (uint64_t id = begin; id < end; ++id)
    job.fn(job.bindings, int64_t(id));
}

/// "x, y, z".
std::string nameList(const std::vector<TensorInfo> &tensors) {
  std::string list;
  for (const TensorInfo &t : tensors) {
    if (!list.empty())
      list += ", ";
    list += t.name;
  }
  return list.empty() ? "none" : list;
}
} // namespace

Session::~Session() {
  // Before the artifact whose bytes they were loaded from.
  module_.reset();
  hip_.reset();
  std::free(arena_);
  if (artifactHandle_)
    kiln_artifact_release(artifactHandle_);
  if (device_)
    kiln_device_release(device_);
}

kiln_status_t Session::create(kiln_device_s *device, kiln_artifact_s *artifact,
                              const kiln_session_options_t &options,
                              std::unique_ptr<Session> &out) {
  const Artifact &a = *artifact->artifact;
  std::unique_ptr<Session> session(new Session());
  kiln_device_retain(device);
  session->device_ = device;
  kiln_artifact_retain(artifact);
  session->artifactHandle_ = artifact;
  session->artifact_ = &a;
  session->profiling_ = options.enable_profiling != 0;
  session->trace_ = options.trace_callback;
  session->traceUser_ = options.trace_user_data;
  session->wantEmuStats_ = options.enable_emu_stats != 0;
  session->runTimeoutUs_ = options.run_timeout_us;
  if (session->wantEmuStats_ && !device->emuChip)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "emu statistics need an emu:<gfx> device (the session's "
                      "device is '" + std::string(device->target) + "')");

  int programIndex = a.findProgram(options.program);
  auto *programs = a.manifest().programs();
  if (programIndex < 0) {
    std::string names;
    for (size_t i = 0; i < programs->size(); ++i)
      names += std::string(i ? ", " : "") +
               Artifact::str(programs->Get(flatbuffers::uoffset_t(i))->name());
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      a.name() + ": no program named '" + options.program +
                          "' (the artifact has: " + names + ")");
  }
  if (options.batch_size != 0) {
    int bucket = a.findBatchProgram(options.batch_size);
    if (bucket < 0 || (options.program && bucket != programIndex)) {
      std::string sizes;
      for (const ProgramInterface &p : a.programs())
        if (p.batchSize)
          sizes += (sizes.empty() ? "" : ", ") + std::to_string(p.batchSize);
      return makeStatus(
          KILN_STATUS_INVALID_ARGUMENT,
          a.name() + ": " +
              (bucket < 0 ? strFormat("no program for batch size %u", options.batch_size)
                          : strFormat("program '%s' does not run batch size %u",
                                      options.program, options.batch_size)) +
              (sizes.empty() ? std::string(" (it was compiled without --batch-sizes)")
                             : " (its batch sizes: " + sizes + ")"));
    }
    programIndex = bucket;
  }
  session->programIndex_ = size_t(programIndex);
  const fb::Program *program =
      programs->Get(flatbuffers::uoffset_t(programIndex));
  session->program_ = program;
  session->interface_ = &a.programs()[size_t(programIndex)];
  // The validator checked one extent per output with an extent axis.
  for (size_t i = 0; i < a.outputs().size(); ++i)
    if (a.outputs()[i].extentAxis >= 0)
      session->extentOutputs_.push_back(i);
  session->extents_.assign(session->extentOutputs_.size(), 0);
  session->runShapes_.resize(session->extentOutputs_.size());

  int codeObject = a.findCodeObject(device->target);
  if (codeObject < 0) {
    std::string targets;
    if (auto *objects = a.manifest().code_objects())
      for (size_t i = 0; i < objects->size(); ++i)
        targets += std::string(i ? ", " : "") +
                   Artifact::str(
                       objects->Get(flatbuffers::uoffset_t(i))->target());
    std::string hint;
    if (device->emuChip)
      hint = strFormat(" (compile with --target=%s --emulation)",
                       device->emuChip->name);
    return makeStatus(KILN_STATUS_UNSUPPORTED,
                      a.name() + ": no code object for target '" +
                          device->target + "' (the artifact has: " +
                          (targets.empty() ? "none" : targets) + ")" + hint);
  }
  session->codeObject_ =
      a.manifest().code_objects()->Get(flatbuffers::uoffset_t(codeObject));
  if (device->hip)
    KILN_RETURN_IF_ERROR(HipProgram::load(*device->hip, a, codeObject, *program,
                                          session->profiling_, session->hip_));
  else
    KILN_RETURN_IF_ERROR(session->loadHost(codeObject));

  if (auto *dispatches = program->dispatches()) {
    for (const fb::Dispatch *dispatch : *dispatches) {
      Dispatch d;
      d.kernel = dispatch->kernel();
      d.fn = session->module_ && !device->emuChip
                 ? session->module_->kernel(d.kernel)
                 : nullptr;
      d.workgroupCount =
          session->codeObject_->kernels()->Get(d.kernel)->workgroup_count();
      d.firstBinding = session->dispatches_.empty()
                           ? 0
                           : session->dispatches_.back().firstBinding +
                                 session->dispatches_.back().bindingCount;
      d.bindingCount = dispatch->bindings() ? dispatch->bindings()->size() : 0;
      d.manifest = dispatch;
      session->dispatches_.push_back(d);
    }
  }
  if (device->emuChip)
    KILN_RETURN_IF_ERROR(session->prepareEmu());
  session->dispatchNs_.assign(session->dispatches_.size(), 0);
  out = std::move(session);
  return nullptr;
}

kiln_status_t Session::loadHost(int codeObject) {
  const Artifact &a = *artifact_;
  KILN_RETURN_IF_ERROR(CpuModule::load(
      a, codeObject,
      device_->emuChip ? CpuModule::Kind::Emu : CpuModule::Kind::Cpu, module_));

  uint64_t arenaSize = program_->arena_size();
  if (arenaSize > SIZE_MAX - 2 * kiln::artifact::format::kSectionAlignment)
    return makeStatus(KILN_STATUS_OUT_OF_MEMORY,
                      strFormat("%s: the arena (%llu bytes) is too large",
                                a.name().c_str(), ull(arenaSize)));
  size_t allocation = size_t(kiln::artifact::format::alignUp(
      arenaSize ? arenaSize : 1));
  arena_ =
      std::aligned_alloc(kiln::artifact::format::kSectionAlignment, allocation);
  if (!arena_)
    return makeStatus(KILN_STATUS_OUT_OF_MEMORY,
                      strFormat("%s: cannot allocate the arena (%llu bytes)",
                                a.name().c_str(), ull(arenaSize)));
  std::memset(arena_, 0, allocation);

  auto *arena = static_cast<unsigned char *>(arena_);
  // Kernels receive `void *`; constants stay read-only in the mapping.
  auto *constants = const_cast<unsigned char *>(a.constants());
  auto address = [&](const fb::Binding *binding) -> unsigned char * {
    return (binding->kind() == fb::BindingKind::Arena ? arena : constants) +
           binding->offset();
  };
  if (auto *inputs = program_->inputs())
    for (const fb::Binding *binding : *inputs)
      inputAddresses_.push_back(address(binding));
  if (auto *outputs = program_->outputs())
    for (const fb::Binding *binding : *outputs)
      outputAddresses_.push_back(address(binding));
  if (auto *extents = program_->extents())
    for (const fb::OutputExtent *extent : *extents)
      extentAddresses_.push_back(address(extent->extent()));
  if (auto *dispatches = program_->dispatches())
    for (const fb::Dispatch *dispatch : *dispatches)
      if (auto *bindings = dispatch->bindings())
        for (const fb::Binding *binding : *bindings)
          bindings_.push_back(address(binding));
  planInPlaceOutputs();
  return nullptr;
}

void Session::planInPlaceOutputs() {
  // An emu run can fail part way (and must then leave the outputs
  // unwritten); programs with commands copy between bindings themselves.
  const auto *outputs = program_->outputs();
  if (device_->emuChip || program_->commands() || !outputs)
    return;
  auto *arena = static_cast<unsigned char *>(arena_);
  auto overlaps = [](const fb::Binding *a, const fb::Binding *b) {
    return a->offset() < b->offset() + b->size() &&
           b->offset() < a->offset() + a->size();
  };
  // Every arena range the program names, with where its address goes. A
  // binding is moved with an output when it lies inside the output's range,
  // so an output stays in the arena when some range straddles its bounds:
  // that range's buffer stays in the arena, and a view of it (a slice) may
  // lie inside the output's range without belonging to the output.
  // kiln-plan-memory places no buffer across an output's bounds; this keeps
  // other artifacts right.
  struct Named {
    Relocation::Kind kind;
    size_t index;
    const fb::Binding *binding;
  };
  std::vector<Named> named;
  auto name = [&](Relocation::Kind kind, size_t index, const fb::Binding *b) {
    if (b->kind() == fb::BindingKind::Arena)
      named.push_back({kind, index, b});
  };
  size_t flat = 0;
  if (auto *dispatches = program_->dispatches())
    for (const fb::Dispatch *dispatch : *dispatches)
      if (auto *bindings = dispatch->bindings())
        for (const fb::Binding *binding : *bindings)
          name(Relocation::Binding, flat++, binding);
  if (auto *inputs = program_->inputs())
    for (flatbuffers::uoffset_t i = 0; i < inputs->size(); ++i)
      name(Relocation::Input, i, inputs->Get(i));
  if (auto *extents = program_->extents())
    for (flatbuffers::uoffset_t i = 0; i < extents->size(); ++i)
      name(Relocation::Extent, i, extents->Get(i)->extent());
  auto inside = [](const fb::Binding *b, const fb::Binding *range) {
    return b->offset() >= range->offset() &&
           b->offset() + b->size() <= range->offset() + range->size();
  };
  std::vector<const fb::Binding *> ranges;
  for (flatbuffers::uoffset_t i = 0; i < outputs->size(); ++i) {
    const fb::Binding *o = outputs->Get(i);
    if (o->kind() != fb::BindingKind::Arena || o->size() == 0)
      continue;
    bool shared = false;
    for (flatbuffers::uoffset_t j = 0; j < outputs->size(); ++j)
      shared |= j != i && outputs->Get(j)->kind() == fb::BindingKind::Arena &&
                overlaps(o, outputs->Get(j));
    for (const Named &n : named)
      shared |= n.binding->size() != 0 && overlaps(n.binding, o) &&
                !inside(n.binding, o);
    if (shared)
      continue;
    inPlace_.push_back({i, arena + o->offset(), arena + o->offset()});
    ranges.push_back(o);
  }
  for (const Named &n : named)
    for (size_t k = 0; k < ranges.size(); ++k)
      if (inside(n.binding, ranges[k]))
        relocations_.push_back({n.kind, n.index, k,
                                n.binding->offset() - ranges[k]->offset()});
}

void Session::bindInPlaceOutputs(const kiln_tensor_t *outputs) {
  for (InPlaceOutput &o : inPlace_) {
    auto *data = static_cast<unsigned char *>(outputs[o.output].data);
    o.base = reinterpret_cast<uintptr_t>(data) %
                         kiln::artifact::format::kSectionAlignment ==
                     0
                 ? data
                 : o.arena;
    outputAddresses_[o.output] = o.base;
  }
  for (const Relocation &r : relocations_) {
    unsigned char *address = inPlace_[r.inPlace].base + r.delta;
    switch (r.kind) {
    case Relocation::Binding:
      bindings_[r.index] = address;
      break;
    case Relocation::Input:
      inputAddresses_[r.index] = address;
      break;
    case Relocation::Extent:
      extentAddresses_[r.index] = address;
      break;
    }
  }
}

kiln_status_t Session::checkInputs(
    const kiln_tensor_t *inputs, size_t inputCount,
    std::vector<const kiln_tensor_t *> &byModelIndex) const {
  const std::vector<TensorInfo> &expected = interface_->inputs;
  auto invalid = [](const std::string &message) {
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, message);
  };
  if (inputCount != 0 && !inputs)
    return invalid("inputs is NULL");
  byModelIndex.assign(expected.size(), nullptr);
  for (size_t i = 0; i < inputCount; ++i) {
    const kiln_tensor_t &t = inputs[i];
    if (!t.name)
      return invalid(strFormat("input %zu has no name", i));
    size_t index = 0;
    while (index < expected.size() && expected[index].name != t.name)
      ++index;
    if (index == expected.size())
      return invalid(strFormat("no model input named '%s' (the model's "
                               "inputs are: %s)",
                               t.name, nameList(expected).c_str()));
    if (byModelIndex[index])
      return invalid(strFormat("input '%s' is given twice", t.name));
    byModelIndex[index] = &t;
    const TensorInfo &e = expected[index];
    std::string expectedShape = shapeString(e.shape.data(), e.shape.size());
    if (t.dtype != e.dtype)
      return invalid(strFormat("input '%s': dtype %s does not match the "
                               "model's %s",
                               t.name, kiln_dtype_name(t.dtype),
                               kiln_dtype_name(e.dtype)));
    if (t.rank != 0 && !t.shape)
      return invalid(strFormat("input '%s': shape is NULL", t.name));
    bool sameShape = t.rank == e.shape.size();
    for (size_t d = 0; sameShape && d < t.rank; ++d)
      sameShape = t.shape[d] == e.shape[d];
    if (!sameShape)
      return invalid(strFormat("input '%s': shape %s does not match the "
                               "model's %s",
                               t.name, shapeString(t.shape, t.rank).c_str(),
                               expectedShape.c_str()));
    if (t.byte_size != e.byteSize)
      return invalid(strFormat("input '%s': %zu bytes of data, expected %llu "
                               "(%s %s)",
                               t.name, t.byte_size, ull(e.byteSize),
                               kiln_dtype_name(e.dtype),
                               expectedShape.c_str()));
    if (t.byte_size != 0 && !t.data)
      return invalid(strFormat("input '%s': data is NULL", t.name));
  }
  for (size_t i = 0; i < expected.size(); ++i)
    if (!byModelIndex[i])
      return invalid(strFormat("missing input '%s' (the model's inputs are: "
                               "%s)",
                               expected[i].name.c_str(),
                               nameList(expected).c_str()));
  return nullptr;
}

kiln_status_t Session::checkOutputs(const kiln_tensor_t *outputs,
                                    size_t outputCount) const {
  const std::vector<TensorInfo> &expected = interface_->outputs;
  if (outputCount != expected.size())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      strFormat("%zu output buffers given, the model has %zu "
                                "outputs (%s)",
                                outputCount, expected.size(),
                                nameList(expected).c_str()));
  if (outputCount != 0 && !outputs)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT, "outputs is NULL");
  for (size_t i = 0; i < outputCount; ++i) {
    const TensorInfo &e = expected[i];
    if (outputs[i].byte_size < e.byteSize)
      return makeStatus(
          KILN_STATUS_INVALID_ARGUMENT,
          strFormat("output '%s': a buffer of %zu bytes is too small for %s "
                    "%s (%llu bytes)",
                    e.name.c_str(), outputs[i].byte_size,
                    kiln_dtype_name(e.dtype),
                    shapeString(e.shape.data(), e.shape.size()).c_str(),
                    ull(e.byteSize)));
    if (e.byteSize != 0 && !outputs[i].data)
      return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                        strFormat("output '%s': data is NULL", e.name.c_str()));
  }
  return nullptr;
}

kiln_status_t Session::run(const kiln_tensor_t *inputs, size_t inputCount,
                           kiln_tensor_t *outputs, size_t outputCount) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<const kiln_tensor_t *> byModelIndex;
  KILN_RETURN_IF_ERROR(checkInputs(inputs, inputCount, byModelIndex));
  KILN_RETURN_IF_ERROR(checkOutputs(outputs, outputCount));

  RunDeadline deadline = RunDeadline::after(runTimeoutUs_);
  if (hip_)
    KILN_RETURN_IF_ERROR(hip_->run(byModelIndex, outputs, extents_.data(),
                                   profiling_ ? dispatchNs_.data() : nullptr,
                                   deadline));
  else
    KILN_RETURN_IF_ERROR(runHost(byModelIndex, outputs, deadline));

  const std::vector<TensorInfo> &expected = interface_->outputs;
  for (size_t i = 0; i < outputCount; ++i) {
    const TensorInfo &e = expected[i];
    kiln_tensor_t &t = outputs[i];
    t.name = e.name.c_str();
    t.dtype = e.dtype;
    t.rank = e.shape.size();
    t.shape = e.shape.data();
    t.byte_size = size_t(e.byteSize);
  }
  KILN_RETURN_IF_ERROR(applyExtents(outputs));
  ++runs_;
  return nullptr;
}

kiln_status_t Session::applyExtents(kiln_tensor_t *outputs) {
  const std::vector<TensorInfo> &expected = interface_->outputs;
  for (size_t k = 0; k < extentOutputs_.size(); ++k) {
    size_t i = extentOutputs_[k];
    const TensorInfo &e = expected[i];
    size_t axis = size_t(e.extentAxis);
    int64_t bound = e.shape[axis], extent = extents_[k];
    if (extent < 0 || extent > bound)
      return makeStatus(
          KILN_STATUS_INTERNAL,
          strFormat("output '%s': the program computed %lld entries along "
                    "axis %zu, outside its bound [0, %lld]",
                    e.name.c_str(), (long long)extent, axis, (long long)bound));
    // The buffer holds `outer` blocks of `bound * inner` bytes; keep the
    // first `extent * inner` of each, moved to the front in order (each
    // move goes to a lower address, so memmove in order is safe).
    uint64_t outer = 1, inner = kiln_dtype_size(e.dtype);
    for (size_t d = 0; d < e.shape.size(); ++d)
      if (d < axis)
        outer *= uint64_t(e.shape[d]);
      else if (d > axis)
        inner *= uint64_t(e.shape[d]);
    auto *data = static_cast<unsigned char *>(outputs[i].data);
    uint64_t kept = uint64_t(extent) * inner, block = uint64_t(bound) * inner;
    if (kept != block)
      for (uint64_t o = 0; o < outer; ++o)
        std::memmove(data + o * kept, data + o * block, size_t(kept));
    runShapes_[k] = e.shape;
    runShapes_[k][axis] = extent;
    outputs[i].shape = runShapes_[k].data();
    outputs[i].byte_size = size_t(outer * kept);
  }
  return nullptr;
}

kiln_status_t Session::prepareEmu() {
  const fb::CodeObject *object = codeObject_;
  if (wantEmuStats_) {
    emuModel_ = kiln::rt::emuMemoryModel(device_->emuChip->name);
    if (!emuModel_)
      return makeStatus(KILN_STATUS_UNSUPPORTED,
                        strFormat("emu:%s: no memory model for access statistics",
                                  device_->emuChip->name));
  }
  for (size_t i = 0; i < dispatches_.size(); ++i) {
    const Dispatch &d = dispatches_[i];
    const fb::Kernel *kernel = object->kernels()->Get(d.kernel);
    std::string item =
        strFormat("%s: code object '%s' kernel %u ('%s')",
                  artifact_->name().c_str(), Artifact::str(object->target()),
                  d.kernel, Artifact::str(kernel->name()));
    std::vector<uint32_t> size;
    if (auto *dims = kernel->workgroup_size())
      size.assign(dims->begin(), dims->end());
    KILN_RETURN_IF_ERROR(emuCheckKernel(item, d.workgroupCount, size.data(),
                                        size.size(), kernel->lds_bytes()));
    EmuLaunch launch;
    launch.fn = module_->emuKernel(d.kernel);
    launch.bindings = bindings_.data() + d.firstBinding;
    launch.workgroupCount = d.workgroupCount;
    launch.workgroupSize = size[0];
    launch.ldsBytes = kernel->lds_bytes();
    launch.where =
        strFormat("dispatch %zu ('%s')", i, Artifact::str(kernel->name()));
    if (wantEmuStats_) {
      emuStats_.emplace_back(new EmuStats());
      launch.stats = emuStats_.back().get();
      // On a GPU the arena and the constants are allocations aligned to more
      // than a cache line: lines count from their starts.
      launch.regions = {
          {reinterpret_cast<uintptr_t>(arena_), size_t(program_->arena_size())},
          {reinterpret_cast<uintptr_t>(artifact_->constants()),
           size_t(artifact_->constantsSize())}};
    }
    emuLaunches_.push_back(std::move(launch));
  }
  return nullptr;
}

kiln_status_t Session::runDispatch(size_t i) {
  using Clock = std::chrono::steady_clock;
  const Dispatch &d = dispatches_[i];
  Clock::time_point start;
  if (profiling_ || trace_)
    start = Clock::now();
  ThreadPool &pool = *device_->pool;
  if (device_->emuChip) {
    KILN_RETURN_IF_ERROR(emuRun(&pool, *device_->emuChip, emuLaunches_[i]));
  } else {
    KernelJob job{d.fn, bindings_.data() + d.firstBinding};
    pool.parallelFor(d.workgroupCount, runKernelChunk, &job);
  }
  if (profiling_ || trace_) {
    uint64_t ns = uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
    if (profiling_)
      dispatchNs_[i] += ns;
    if (trace_) {
      kiln_trace_event_t event{};
      event.category = "dispatch";
      event.name = Artifact::str(codeObject_->kernels()->Get(d.kernel)->name());
      event.start_ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    start.time_since_epoch())
                                    .count());
      event.duration_ns = ns;
      trace_(traceUser_, &event);
    }
  }
  return nullptr;
}

/// The commands of a program on the cpu and emu devices: the arena and the
/// constants are host memory, and a dispatch runs as runHost would run it.
class Session::HostCommands : public CommandTarget {
public:
  explicit HostCommands(Session &session) : session(session) {}
  kiln_status_t dispatch(uint32_t index) override {
    return session.runDispatch(index);
  }
  kiln_status_t copy(const fb::Binding &src, uint64_t srcOffset,
                     const fb::Binding &dst, uint64_t dstOffset,
                     uint64_t size) override {
    std::memmove(address(dst) + dstOffset, address(src) + srcOffset,
                 size_t(size));
    return nullptr;
  }
  kiln_status_t read(const fb::Binding &src, void *out, size_t size) override {
    std::memcpy(out, address(src), size);
    return nullptr;
  }
  kiln_status_t writeInt64(const fb::Binding &dst, int64_t value,
                           size_t) override {
    std::memcpy(address(dst), &value, sizeof(value));
    return nullptr;
  }

private:
  unsigned char *address(const fb::Binding &b) const {
    // Commands never write constants (the validator checked).
    auto *base = b.kind() == fb::BindingKind::Arena
                     ? static_cast<unsigned char *>(session.arena_)
                     : const_cast<unsigned char *>(session.artifact_->constants());
    return base + b.offset();
  }
  Session &session;
};

kiln_status_t Session::runHost(const std::vector<const kiln_tensor_t *> &inputs,
                               kiln_tensor_t *outputs,
                               const RunDeadline &deadline) {
  bindInPlaceOutputs(outputs);
  // memmove: an input placed in an output's bytes now lives in the caller's
  // output buffer, which the caller may have passed as that input too.
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]->byte_size != 0)
      std::memmove(inputAddresses_[i], inputs[i]->data, inputs[i]->byte_size);

  if (program_->commands()) {
    HostCommands target(*this);
    KILN_RETURN_IF_ERROR(
        runCommands(*program_, target, artifact_->name(), deadline));
  } else {
    for (size_t i = 0; i < dispatches_.size(); ++i) {
      KILN_RETURN_IF_ERROR(
          deadline.check(artifact_->name(), "dispatch", i, dispatches_.size()));
      KILN_RETURN_IF_ERROR(runDispatch(i));
    }
  }

  const std::vector<TensorInfo> &expected = interface_->outputs;
  for (size_t i = 0; i < expected.size(); ++i)
    if (expected[i].byteSize != 0 && outputs[i].data != outputAddresses_[i])
      std::memmove(outputs[i].data, outputAddresses_[i],
                   size_t(expected[i].byteSize));
  for (size_t k = 0; k < extentAddresses_.size(); ++k)
    std::memcpy(&extents_[k], extentAddresses_[k], sizeof(int64_t));
  return nullptr;
}

kiln_status_t Session::dispatchInfo(size_t index,
                                    kiln_dispatch_info_t &out) const {
  if (index >= dispatches_.size())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      strFormat("dispatch index %zu is out of range (%zu "
                                "dispatches)",
                                index, dispatches_.size()));
  const Dispatch &d = dispatches_[index];
  const fb::Kernel *kernel = codeObject_->kernels()->Get(d.kernel);
  out.name = Artifact::str(kernel->name());
  out.symbol = Artifact::str(kernel->symbol());
  out.ops = Artifact::str(d.manifest->ops());
  out.workgroup_count = d.workgroupCount;
  out.flops = d.manifest->flops();
  out.bytes = d.manifest->bytes();
  out.binding_count = d.bindingCount;
  return nullptr;
}

kiln_status_t Session::profile(uint64_t *runCount, uint64_t *dispatchNs,
                               size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!profiling_)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "profiling is not enabled for this session");
  if (dispatchNs && count != dispatchNs_.size())
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      strFormat("profile buffer holds %zu dispatches, the "
                                "program has %zu",
                                count, dispatchNs_.size()));
  if (runCount)
    *runCount = runs_;
  if (dispatchNs && count != 0)
    std::memcpy(dispatchNs, dispatchNs_.data(), count * sizeof(uint64_t));
  return nullptr;
}

void Session::resetProfile() {
  std::lock_guard<std::mutex> lock(mutex_);
  runs_ = 0;
  dispatchNs_.assign(dispatchNs_.size(), 0);
  for (auto &stats : emuStats_)
    stats->reset();
}

size_t Session::emuSiteCount() {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t count = 0;
  for (auto &stats : emuStats_)
    for (auto &site : stats->sites)
      count += site && site->executions != 0;
  return count;
}

kiln_status_t Session::emuSiteStats(size_t index, kiln_emu_site_stats_t &out) {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t seen = 0;
  for (size_t d = 0; d < emuStats_.size(); ++d) {
    for (auto &site : emuStats_[d]->sites) {
      if (!site || site->executions == 0 || seen++ != index)
        continue;
      const EmuSiteStats &s = *site;
      out = kiln_emu_site_stats_t();
      out.dispatch = d;
      out.kernel = Artifact::str(
          codeObject_->kernels()->Get(dispatches_[d].kernel)->name());
      out.site = s.id;
      out.kind = kiln_emu_access_kind_t(
          ((s.kind & KILN_EMU_ACCESS_GLOBAL) ? 2 : 0) +
          ((s.kind & KILN_EMU_ACCESS_STORE) ? 1 : 0));
      out.op = s.op.c_str();
      out.location = s.location.c_str();
      out.bytes_per_lane = s.bytes;
      out.executions = s.executions;
      out.lane_accesses = s.laneAccesses;
      out.requested_bytes = s.requestedBytes;
      out.ideal_cycles = s.idealCycles;
      out.cycles = s.cycles;
      out.conflicted_executions = s.conflictedExecutions;
      out.max_degree = s.maxDegree;
      out.cache_lines = s.lines;
      out.segments_64 = s.segments64;
      return nullptr;
    }
  }
  return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                    strFormat("emu site %zu is out of range (the session has %zu)",
                              index, seen));
}
