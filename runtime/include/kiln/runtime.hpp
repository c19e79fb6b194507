//===- kiln/runtime.hpp - C++17 wrapper of the Kiln runtime -----*- C++ -*-===//
//
// Header-only RAII wrapper over kiln/runtime.h. Errors stay values (works
// with -fno-exceptions): calls return kiln::Status, results come back through
// reference parameters. Handles copy by retaining and release on
// destruction.
//
//   kiln::Artifact artifact;
//   kiln::Status status = kiln::Artifact::open("model.kiln", artifact);
//   if (!status.ok()) { fprintf(stderr, "%s\n", status.message()); ... }
//   kiln::Device device;
//   status = kiln::Device::create("cpu", /*threads=*/0, device);
//   kiln::Session session;
//   status = kiln::Session::create(device, artifact, nullptr, session);
//   std::vector<kiln::Tensor> outputs;
//   status = session.run({x.view(), y.view()}, outputs);
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_HPP
#define KILN_RUNTIME_HPP

#include "kiln/runtime.h"

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

/// Owns a kiln_status_t; default-constructed is OK.
class Status {
public:
  Status() = default;
  explicit Status(kiln_status_t status) : status_(status) {}
  Status(Status &&other) noexcept : status_(other.status_) {
    other.status_ = nullptr;
  }
  Status &operator=(Status &&other) noexcept {
    std::swap(status_, other.status_);
    return *this;
  }
  Status(const Status &) = delete;
  Status &operator=(const Status &) = delete;
  ~Status() { kiln_status_free(status_); }

  bool ok() const { return status_ == nullptr; }
  kiln_status_code_t code() const { return kiln_status_code(status_); }
  const char *message() const { return kiln_status_message(status_); }
  /// Gives up ownership of the C status.
  kiln_status_t release() { return std::exchange(status_, nullptr); }

private:
  kiln_status_t status_ = nullptr;
};

/// Allocates on 64-byte boundaries: a cpu session writes an output whose
/// buffer is aligned so in place, without copying it out of the arena
/// (kiln_session_run).
template <typename T> struct AlignedAllocator {
  using value_type = T;
  static constexpr std::size_t kAlignment = 64;
  AlignedAllocator() = default;
  template <typename U> AlignedAllocator(const AlignedAllocator<U> &) {}
  T *allocate(std::size_t n) {
    // An overflowing count asks for more than any allocation can be, which
    // fails as operator new fails (without exceptions too).
    std::size_t bytes =
        n > std::size_t(-1) / sizeof(T) ? std::size_t(-1) : n * sizeof(T);
    return static_cast<T *>(::operator new(bytes, std::align_val_t(kAlignment)));
  }
  void deallocate(T *p, std::size_t) {
    ::operator delete(p, std::align_val_t(kAlignment));
  }
  template <typename U> bool operator==(const AlignedAllocator<U> &) const {
    return true;
  }
  template <typename U> bool operator!=(const AlignedAllocator<U> &) const {
    return false;
  }
};
/// Bytes on a 64-byte boundary.
using Bytes = std::vector<unsigned char, AlignedAllocator<unsigned char>>;

/// A host tensor with its own storage.
struct Tensor {
  std::string name;
  kiln_dtype_t dtype = KILN_DTYPE_F32;
  std::vector<int64_t> shape;
  Bytes data;

  uint64_t elementCount() const {
    uint64_t n = 1;
    for (int64_t d : shape)
      n *= uint64_t(d);
    return n;
  }
  /// A view pointing into this tensor (valid while it is unchanged).
  kiln_tensor_t view() const {
    kiln_tensor_t t;
    t.name = name.c_str();
    t.dtype = dtype;
    t.rank = shape.size();
    t.shape = shape.data();
    t.data = const_cast<unsigned char *>(data.data());
    t.byte_size = data.size();
    return t;
  }
};

namespace detail {
/// A reference-counted C handle.
template <typename T, void (*Retain)(T *), void (*Release)(T *)> class Handle {
public:
  Handle() = default;
  Handle(const Handle &other) : handle_(other.handle_) {
    if (handle_)
      Retain(handle_);
  }
  Handle(Handle &&other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Handle &operator=(Handle other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  ~Handle() {
    if (handle_)
      Release(handle_);
  }
  T *get() const { return handle_; }
  explicit operator bool() const { return handle_ != nullptr; }
  /// Takes over one reference.
  void adopt(T *handle) { *this = Handle(handle); }

private:
  explicit Handle(T *handle) : handle_(handle) {}
  T *handle_ = nullptr;
};
} // namespace detail

class Artifact
    : public detail::Handle<kiln_artifact_t, kiln_artifact_retain,
                            kiln_artifact_release> {
public:
  static Status open(const std::string &path, Artifact &out) {
    kiln_artifact_t *handle = nullptr;
    Status status(kiln_artifact_open(path.c_str(), &handle));
    if (status.ok())
      out.adopt(handle);
    return status;
  }
  static Status openMemory(const void *data, size_t size,
                           const std::string &name, Artifact &out) {
    kiln_artifact_t *handle = nullptr;
    Status status(
        kiln_artifact_open_memory(data, size, name.c_str(), &handle));
    if (status.ok())
      out.adopt(handle);
    return status;
  }

  /// The inputs and outputs of program `program` (0: the model's).
  std::vector<kiln_tensor_info_t> inputs(size_t program = 0) const {
    return infos(program, kiln_artifact_input_count(get()),
                 kiln_artifact_program_input_info);
  }
  std::vector<kiln_tensor_info_t> outputs(size_t program = 0) const {
    return infos(program, kiln_artifact_output_count(get()),
                 kiln_artifact_program_output_info);
  }
  /// The batch bucket of each program (0 for one without: "main").
  std::vector<uint32_t> batchSizes() const {
    std::vector<uint32_t> result;
    for (size_t i = 0; i < kiln_artifact_program_count(get()); ++i)
      result.push_back(kiln_artifact_program_batch_size(get(), i));
    return result;
  }
  /// Graph inputs folded to constants at compile time: (name, value as written).
  std::vector<std::pair<std::string, std::string>> pinnedInputs() const {
    std::vector<std::pair<std::string, std::string>> result;
    for (size_t i = 0; i < kiln_artifact_pinned_input_count(get()); ++i) {
      const char *name = nullptr, *value = nullptr;
      if (kiln_artifact_pinned_input(get(), i, &name, &value) == nullptr)
        result.emplace_back(name, value);
    }
    return result;
  }
  std::vector<std::string> targets() const {
    std::vector<std::string> result;
    for (size_t i = 0; i < kiln_artifact_target_count(get()); ++i)
      result.push_back(kiln_artifact_target(get(), i));
    return result;
  }

private:
  using InfoFn = kiln_status_t (*)(const kiln_artifact_t *, size_t, size_t,
                                   kiln_tensor_info_t *);
  /// Empty for a program out of range.
  std::vector<kiln_tensor_info_t> infos(size_t program, size_t count, InfoFn fn) const {
    std::vector<kiln_tensor_info_t> result(count);
    for (size_t i = 0; i < count; ++i) {
      kiln_status_t status = fn(get(), program, i, &result[i]);
      if (status) {
        kiln_status_free(status);
        return {};
      }
    }
    return result;
  }
};

class Device : public detail::Handle<kiln_device_t, kiln_device_retain,
                                     kiln_device_release> {
public:
  /// `threads` 0: one per available CPU (or per CPU of `cpuList`).
  /// `cpuList` non-empty pins the device's threads ("0-3,8"; see
  /// kiln_device_options_t.cpu_list).
  static Status create(const std::string &spec, uint32_t threads,
                       Device &out, const std::string &cpuList = {}) {
    kiln_device_options_t options;
    kiln_device_options_init(&options);
    options.thread_count = threads;
    options.cpu_list = cpuList.empty() ? nullptr : cpuList.c_str();
    kiln_device_t *handle = nullptr;
    Status status(kiln_device_create(spec.c_str(), &options, &handle));
    if (status.ok())
      out.adopt(handle);
    return status;
  }
  uint32_t threadCount() const { return kiln_device_thread_count(get()); }
};

class Session : public detail::Handle<kiln_session_t, kiln_session_retain,
                                      kiln_session_release> {
public:
  /// `options` may be nullptr for defaults.
  static Status create(const Device &device, const Artifact &artifact,
                       const kiln_session_options_t *options, Session &out) {
    kiln_session_t *handle = nullptr;
    Status status(kiln_session_create(device.get(), artifact.get(), options,
                                      &handle));
    if (status.ok()) {
      out.adopt(handle);
      out.artifact_ = artifact;
    }
    return status;
  }

  /// The index of the program the session runs.
  size_t program() const { return kiln_session_program_index(get()); }
  /// Its inputs and outputs.
  std::vector<kiln_tensor_info_t> inputs() const { return artifact_.inputs(program()); }
  std::vector<kiln_tensor_info_t> outputs() const { return artifact_.outputs(program()); }

  /// Runs once; `outputs` is resized and filled with the program's outputs.
  Status run(const std::vector<kiln_tensor_t> &inputs,
             std::vector<Tensor> &outputs) {
    std::vector<kiln_tensor_info_t> infos = artifact_.outputs(program());
    std::vector<Tensor> results(infos.size());
    std::vector<kiln_tensor_t> buffers(infos.size());
    for (size_t i = 0; i < infos.size(); ++i) {
      results[i].data.resize(infos[i].byte_size);
      buffers[i] = kiln_tensor_t();
      buffers[i].data = results[i].data.data();
      buffers[i].byte_size = results[i].data.size();
    }
    Status status(kiln_session_run(get(), inputs.data(), inputs.size(),
                                   buffers.data(), buffers.size()));
    if (!status.ok())
      return status;
    for (size_t i = 0; i < infos.size(); ++i) {
      results[i].name = buffers[i].name;
      results[i].dtype = buffers[i].dtype;
      results[i].shape.assign(buffers[i].shape,
                              buffers[i].shape + buffers[i].rank);
      results[i].data.resize(buffers[i].byte_size); // an extent's run size
    }
    outputs = std::move(results);
    return status;
  }
  Status run(const std::vector<Tensor> &inputs, std::vector<Tensor> &outputs) {
    std::vector<kiln_tensor_t> views;
    for (const Tensor &t : inputs)
      views.push_back(t.view());
    return run(views, outputs);
  }

  size_t dispatchCount() const { return kiln_session_dispatch_count(get()); }
  /// Zeroed info when `index` is out of range.
  kiln_dispatch_info_t dispatchInfo(size_t index) const {
    kiln_dispatch_info_t info = kiln_dispatch_info_t();
    kiln_status_free(kiln_session_dispatch_info(get(), index, &info));
    return info;
  }
  /// Runs and total nanoseconds per dispatch since creation or reset.
  Status profile(uint64_t &runs, std::vector<uint64_t> &dispatchNs) const {
    dispatchNs.assign(dispatchCount(), 0);
    return Status(kiln_session_profile(get(), &runs, dispatchNs.data(),
                                       dispatchNs.size()));
  }
  void resetProfile() { kiln_session_reset_profile(get()); }

private:
  Artifact artifact_;
};

} // namespace kiln

#endif // KILN_RUNTIME_HPP
