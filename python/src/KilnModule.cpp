//===- KilnModule.cpp - The _kiln Python extension ------------------------===//
//
// pybind11 bindings of the Kiln runtime's C API (kiln/runtime.h): artifacts,
// devices and sessions, with numpy arrays as tensors. The package around it,
// python/kiln/, defines the exception classes raised here (handed over once
// through _set_error_classes) and kiln.compile; docs/python.md is the guide.
//
// No copies where the layout allows: an input array that is C-contiguous
// with the input's dtype goes to the runtime as it is (others are converted
// once), and every output is a numpy array allocated here that the runtime
// writes into. The GIL is released while the runtime works (opening an
// artifact, creating a device or session, running).
//
// Links the runtime only: no MLIR or LLVM.
//
//===----------------------------------------------------------------------===//

#include "kiln/runtime.h"
#include "kiln/runtime.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace py = pybind11;
using namespace py::literals;

namespace {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// A runtime error status on its way to Python, where it becomes the
/// kiln.Error subclass of its code (raiseStatusError).
class StatusError : public std::runtime_error {
public:
  StatusError(kiln_status_code_t code, const std::string &message)
      : std::runtime_error(message), code_(code) {}
  kiln_status_code_t code() const { return code_; }

private:
  kiln_status_code_t code_;
};

/// Throws a failed status as a StatusError; nothing for success.
void check(const kiln::Status &status) {
  if (!status.ok())
    throw StatusError(status.code(), status.message());
}
void check(kiln_status_t status) { check(kiln::Status(status)); }

[[noreturn]] void invalidArgument(const std::string &message) {
  throw StatusError(KILN_STATUS_INVALID_ARGUMENT, message);
}

/// kiln.Error and its subclass per status code, handed over once by
/// kiln/__init__.py. The references are never dropped: errors may be raised
/// until the interpreter shuts down, and no destructor of a static runs after
/// it.
struct ErrorClasses {
  PyObject *base = nullptr;
  std::unordered_map<int, PyObject *> byCode;
};
ErrorClasses &errorClasses() {
  static ErrorClasses *classes = new ErrorClasses();
  return *classes;
}

void setErrorClasses(py::handle base, py::dict byCode) {
  auto isErrorClass = [](py::handle cls) {
    return PyType_Check(cls.ptr()) &&
           PyType_IsSubtype(reinterpret_cast<PyTypeObject *>(cls.ptr()),
                            reinterpret_cast<PyTypeObject *>(PyExc_Exception));
  };
  if (!isErrorClass(base))
    throw py::type_error("_set_error_classes: the base must be an Exception "
                         "subclass");
  ErrorClasses classes;
  classes.base = base.inc_ref().ptr();
  for (auto item : byCode) {
    if (!isErrorClass(item.second))
      throw py::type_error("_set_error_classes: every value must be an "
                           "Exception subclass");
    classes.byCode[item.first.cast<int>()] = item.second.inc_ref().ptr();
  }
  std::swap(errorClasses(), classes); // the old references stay (see above)
}

/// Sets the Python error for `error`: kiln.Error's subclass for the code,
/// constructed as cls(message, code). Before kiln/__init__.py registered the
/// classes (only when _kiln is imported alone) it is a RuntimeError.
void raiseStatusError(const StatusError &error) {
  const char *what = error.what();
  py::handle message =
      PyUnicode_DecodeUTF8(what, Py_ssize_t(std::strlen(what)), "replace");
  if (!message)
    return; // the decoding error is set
  const ErrorClasses &classes = errorClasses();
  PyObject *cls = classes.base;
  auto found = classes.byCode.find(int(error.code()));
  if (found != classes.byCode.end())
    cls = found->second;
  PyObject *exception =
      cls ? PyObject_CallFunction(cls, "Oi", message.ptr(), int(error.code()))
          : PyObject_CallFunctionObjArgs(PyExc_RuntimeError, message.ptr(),
                                         nullptr);
  message.dec_ref();
  if (!exception)
    return; // the constructor's own error is set
  PyErr_SetObject(reinterpret_cast<PyObject *>(Py_TYPE(exception)), exception);
  Py_DECREF(exception);
}

//===----------------------------------------------------------------------===//
// Conversions
//===----------------------------------------------------------------------===//

/// Runtime text (names, messages, manifest strings) as a Python str: UTF-8,
/// with any invalid byte replaced so that nothing fails on a damaged name.
py::str text(const char *s) {
  if (!s)
    s = "";
  PyObject *str =
      PyUnicode_DecodeUTF8(s, Py_ssize_t(std::strlen(s)), "replace");
  if (!str)
    throw py::error_already_set();
  return py::reinterpret_steal<py::str>(str);
}

/// "'name'" the way Python writes it.
std::string quoted(const std::string &name) {
  return py::repr(text(name.c_str())).cast<std::string>();
}

/// The Python type name of `value`, for messages.
std::string typeName(py::handle value) { return Py_TYPE(value.ptr())->tp_name; }

/// `value` as a str, or a TypeError naming `what` and what it got.
std::string requireStr(py::handle value, const char *what) {
  if (!PyUnicode_Check(value.ptr()))
    throw py::type_error(std::string(what) + " must be a str, got " +
                         typeName(value));
  return value.cast<std::string>();
}

/// `value` as an integer in [0, max], or an error naming `what`.
uint64_t requireCount(py::handle value, const char *what, uint64_t max) {
  if (!PyLong_Check(value.ptr()))
    throw py::type_error(std::string(what) + " must be an int, got " +
                         typeName(value));
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (overflow != 0 || v < 0 || uint64_t(v) > max)
    invalidArgument(std::string(what) + " must be in [0, " +
                    std::to_string(max) + "], got " +
                    py::str(value).cast<std::string>());
  return uint64_t(v);
}

/// A file system path (str, bytes or os.PathLike) as the bytes to open.
std::string fsPath(py::handle path, const char *what) {
  if (path.is_none())
    throw py::type_error(
        std::string(what) +
        " must be a path (str, bytes or os.PathLike), got None");
  py::bytes encoded = py::module_::import("os").attr("fsencode")(path);
  std::string result = encoded;
  if (result.find('\0') != std::string::npos)
    invalidArgument(std::string(what) + " contains a null byte");
  return result;
}

/// The numpy dtype of a Kiln dtype. bfloat16 has none: its values are their
/// raw bits, uint16.
py::dtype numpyDtype(kiln_dtype_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_F32:
    return py::dtype("float32");
  case KILN_DTYPE_F16:
    return py::dtype("float16");
  case KILN_DTYPE_BF16:
    return py::dtype("uint16");
  case KILN_DTYPE_F64:
    return py::dtype("float64");
  case KILN_DTYPE_I8:
    return py::dtype("int8");
  case KILN_DTYPE_I16:
    return py::dtype("int16");
  case KILN_DTYPE_I32:
    return py::dtype("int32");
  case KILN_DTYPE_I64:
    return py::dtype("int64");
  case KILN_DTYPE_U8:
    return py::dtype("uint8");
  case KILN_DTYPE_BOOL:
    return py::dtype("bool");
  case KILN_DTYPE_U16:
    return py::dtype("uint16");
  case KILN_DTYPE_U32:
    return py::dtype("uint32");
  case KILN_DTYPE_U64:
    return py::dtype("uint64");
  }
  // Artifacts are validated when opened, so this is a runtime newer than
  // these bindings.
  throw StatusError(KILN_STATUS_UNSUPPORTED,
                    "dtype " + std::to_string(int(dtype)) +
                        " has no numpy equivalent in these bindings");
}

/// "float32[1, 3, 8, 8]" (bfloat16 says how numpy holds it).
std::string describe(kiln_dtype_t dtype, const std::vector<int64_t> &shape) {
  std::string s = kiln_dtype_name(dtype);
  if (dtype == KILN_DTYPE_BF16)
    s += " (numpy uint16 bits)";
  s += "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

py::tuple shapeTuple(const std::vector<int64_t> &shape) {
  py::tuple result(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    result[i] = py::int_(shape[i]);
  return result;
}

//===----------------------------------------------------------------------===//
// Artifact descriptions
//===----------------------------------------------------------------------===//

/// One input or output of a program (kiln.TensorInfo).
struct TensorInfo {
  std::string name;
  kiln_dtype_t dtype = KILN_DTYPE_F32;
  std::vector<int64_t> shape; ///< for an extent axis, its bound there
  uint64_t byteSize = 0;
  int64_t extentAxis = -1; ///< the axis the data decides, or -1

  TensorInfo(const kiln_tensor_info_t &info, int64_t extentAxis)
      : name(info.name ? info.name : ""), dtype(info.dtype),
        shape(info.shape, info.shape + info.rank), byteSize(info.byte_size),
        extentAxis(extentAxis) {}

  uint64_t elementCount() const {
    uint64_t n = 1;
    for (int64_t d : shape)
      n *= uint64_t(d);
    return n;
  }
  std::string repr() const {
    std::string s = "TensorInfo(name=" + quoted(name) + ", dtype='" +
                    kiln_dtype_name(dtype) + "', shape=" +
                    py::repr(shapeTuple(shape)).cast<std::string>();
    if (extentAxis >= 0)
      s += ", extent_axis=" + std::to_string(extentAxis);
    return s + ")";
  }
};

/// One program of an artifact (kiln.Program): "main", or one per batch bucket.
struct Program {
  size_t index = 0;
  std::string name;
  uint32_t batchSize = 0;
  std::vector<TensorInfo> inputs, outputs;
  uint64_t arenaSize = 0;
  size_t dispatchCount = 0;

  std::string repr() const {
    std::string s = "Program(name=" + quoted(name);
    if (batchSize)
      s += ", batch_size=" + std::to_string(batchSize);
    return s + ")";
  }
};

/// One dispatch of a session's program (kiln.Dispatch).
struct Dispatch {
  std::string name, symbol, ops;
  uint64_t workgroupCount = 0, flops = 0, bytes = 0;
  size_t bindingCount = 0;
};

py::list infoList(const std::vector<TensorInfo> &infos) {
  py::list result;
  for (const TensorInfo &info : infos)
    result.append(py::cast(info));
  return result;
}

//===----------------------------------------------------------------------===//
// kiln.Artifact
//===----------------------------------------------------------------------===//

class PyArtifact {
public:
  static std::unique_ptr<PyArtifact> open(py::handle path) {
    std::string file = fsPath(path, "the artifact path");
    kiln::Artifact handle;
    {
      py::gil_scoped_release nogil;
      check(kiln::Artifact::open(file, handle));
    }
    return std::unique_ptr<PyArtifact>(new PyArtifact(std::move(handle)));
  }

  static std::unique_ptr<PyArtifact> fromBytes(py::handle data,
                                               py::handle name) {
    std::string label = requireStr(name, "the artifact name");
    // PyBUF_SIMPLE: any contiguous bytes-like object (bytes, bytearray,
    // memoryview, numpy array), read in place.
    Py_buffer view;
    if (PyObject_GetBuffer(data.ptr(), &view, PyBUF_SIMPLE) != 0)
      throw py::error_already_set();
    std::unique_ptr<Py_buffer, void (*)(Py_buffer *)> release(&view,
                                                              PyBuffer_Release);
    kiln::Artifact handle;
    {
      py::gil_scoped_release nogil;
      check(kiln::Artifact::openMemory(view.buf, size_t(view.len), label,
                                       handle));
    }
    return std::unique_ptr<PyArtifact>(new PyArtifact(std::move(handle)));
  }

  const kiln::Artifact &handle() const { return handle_; }
  kiln_artifact_t *get() const { return handle_.get(); }
  const std::vector<Program> &programs() const { return programs_; }

  /// The program named `name`, or an error listing them.
  const Program &programNamed(const std::string &name) const {
    for (const Program &program : programs_)
      if (program.name == name)
        return program;
    std::string names;
    for (const Program &program : programs_)
      names += (names.empty() ? "" : ", ") + program.name;
    invalidArgument(kiln_artifact_name(get()) + std::string(": no program ") +
                    quoted(name) + " (its programs are: " + names + ")");
  }

  py::list targets() const {
    py::list result;
    for (size_t i = 0; i < kiln_artifact_target_count(get()); ++i)
      result.append(text(kiln_artifact_target(get(), i)));
    return result;
  }

  py::dict pinnedInputs() const {
    py::dict result;
    for (const auto &[name, value] : handle_.pinnedInputs())
      result[text(name.c_str())] = text(value.c_str());
    return result;
  }

  std::string repr() const {
    std::string s =
        "kiln.Artifact(" +
        py::repr(text(kiln_artifact_name(get()))).cast<std::string>() +
        ", targets=" + py::repr(targets()).cast<std::string>();
    if (programs_.size() > 1) {
      s += ", programs=[";
      for (size_t i = 0; i < programs_.size(); ++i)
        s += (i ? ", " : "") + quoted(programs_[i].name);
      s += "]";
    }
    return s + ")";
  }

private:
  explicit PyArtifact(kiln::Artifact handle) : handle_(std::move(handle)) {
    kiln_artifact_t *a = get();
    for (size_t p = 0; p < kiln_artifact_program_count(a); ++p) {
      Program program;
      program.index = p;
      const char *name = kiln_artifact_program_name(a, p);
      program.name = name ? name : "";
      program.batchSize = kiln_artifact_program_batch_size(a, p);
      program.arenaSize = kiln_artifact_arena_size(a, p);
      program.dispatchCount = kiln_artifact_dispatch_count(a, p);
      for (size_t i = 0; i < kiln_artifact_input_count(a); ++i) {
        kiln_tensor_info_t info;
        check(kiln_artifact_program_input_info(a, p, i, &info));
        program.inputs.emplace_back(info, -1);
      }
      for (size_t i = 0; i < kiln_artifact_output_count(a); ++i) {
        kiln_tensor_info_t info;
        check(kiln_artifact_program_output_info(a, p, i, &info));
        program.outputs.emplace_back(info,
                                     kiln_artifact_output_extent_axis(a, i));
      }
      programs_.push_back(std::move(program));
    }
  }

  kiln::Artifact handle_;
  std::vector<Program> programs_;
};

//===----------------------------------------------------------------------===//
// kiln.Device
//===----------------------------------------------------------------------===//

class PyDevice {
public:
  PyDevice(py::handle spec, py::handle threads, py::handle cpus) {
    std::string name = requireStr(spec, "the device spec");
    uint32_t threadCount =
        uint32_t(requireCount(threads, "threads", UINT32_MAX));
    std::string cpuList = cpus.is_none() ? std::string() : requireStr(cpus, "cpus");
    if (!cpus.is_none() && cpuList.empty())
      invalidArgument("cpus: expected a CPU list such as \"0-3,8\"");
    py::gil_scoped_release nogil;
    check(kiln::Device::create(name, threadCount, handle_, cpuList));
  }

  const kiln::Device &handle() const { return handle_; }
  kiln_device_t *get() const { return handle_.get(); }

  std::string repr() const {
    std::string s = "kiln.Device(" +
                    py::repr(text(kiln_device_name(get()))).cast<std::string>();
    if (kiln_device_thread_count(get()))
      s += ", threads=" + std::to_string(kiln_device_thread_count(get()));
    return s + ")";
  }

private:
  kiln::Device handle_;
};

//===----------------------------------------------------------------------===//
// kiln.Session
//===----------------------------------------------------------------------===//

class PySession {
public:
  PySession(py::handle artifact, py::handle device, py::handle program,
            py::handle batchSize, bool profile, py::handle runTimeoutMs) {
    // An artifact or its path; a device or its spec.
    if (py::isinstance<PyArtifact>(artifact))
      artifact_ = py::reinterpret_borrow<py::object>(artifact);
    else
      artifact_ = py::cast(PyArtifact::open(artifact));
    if (py::isinstance<PyDevice>(device))
      device_ = py::reinterpret_borrow<py::object>(device);
    else if (PyUnicode_Check(device.ptr()))
      device_ = py::cast(std::make_unique<PyDevice>(device, py::int_(0), py::none()));
    else
      throw py::type_error("the device must be a kiln.Device or a device spec "
                           "str such as \"cpu\", got " +
                           typeName(device));
    const PyArtifact &a = artifact_.cast<const PyArtifact &>();
    const PyDevice &d = device_.cast<const PyDevice &>();

    kiln_session_options_t options;
    kiln_session_options_init(&options);
    std::string programName;
    if (PyLong_Check(program.ptr())) {
      size_t index = size_t(requireCount(program, "program", UINT32_MAX));
      if (index >= a.programs().size())
        invalidArgument("program index " + std::to_string(index) +
                        " is out of range (the artifact has " +
                        std::to_string(a.programs().size()) + " programs)");
      programName = a.programs()[index].name;
      options.program = programName.c_str();
    } else if (!program.is_none()) {
      programName = requireStr(program, "program");
      a.programNamed(programName); // a clear error for an unknown name
      options.program = programName.c_str();
    }
    options.batch_size =
        uint32_t(requireCount(batchSize, "batch_size", UINT32_MAX));
    options.enable_profiling = profile ? 1 : 0;
    options.run_timeout_us =
        requireCount(runTimeoutMs, "run_timeout_ms", 86400000) * 1000;
    {
      py::gil_scoped_release nogil;
      check(kiln::Session::create(d.handle(), a.handle(), &options, handle_));
    }
    program_ = &a.programs().at(handle_.program());

    for (size_t i = 0; i < program_->inputs.size(); ++i) {
      const TensorInfo &info = program_->inputs[i];
      inputIndex_.emplace(info.name, i);
      inputDtypes_.push_back(numpyDtype(info.dtype));
    }
    for (const TensorInfo &info : program_->outputs) {
      OutputSlot slot;
      slot.key = text(info.name.c_str());
      slot.dtype = numpyDtype(info.dtype);
      if (info.extentAxis >= 0)
        slot.allocShape = {py::ssize_t(info.elementCount())};
      else
        slot.allocShape.assign(info.shape.begin(), info.shape.end());
      outputs_.push_back(std::move(slot));
    }
  }

  const py::object &artifact() const { return artifact_; }
  const py::object &device() const { return device_; }
  const Program &program() const { return *program_; }

  /// session.run({name: array}) -> {name: array}, the outputs in the
  /// program's order.
  py::dict run(py::handle inputsArg) {
    py::dict inputs = asDict(inputsArg);
    const std::vector<TensorInfo> &expected = program_->inputs;

    // Inputs: the arrays to pass (held until the run ends) and their views.
    std::vector<py::array> arrays;
    std::vector<std::vector<int64_t>> shapes;
    std::vector<kiln_tensor_t> tensors;
    arrays.reserve(inputs.size());
    shapes.reserve(inputs.size());
    tensors.reserve(inputs.size());
    for (auto item : inputs) {
      if (!PyUnicode_Check(item.first.ptr()))
        throw py::type_error("input names must be str, got " +
                             typeName(item.first));
      Py_ssize_t length = 0;
      const char *utf8 = PyUnicode_AsUTF8AndSize(item.first.ptr(), &length);
      if (!utf8)
        throw py::error_already_set();
      auto found = inputIndex_.find(std::string(utf8, size_t(length)));
      if (found == inputIndex_.end())
        invalidArgument("no model input named " +
                        quoted(std::string(utf8, size_t(length))) +
                        " (the model's inputs are: " + inputNames() + ")");
      const TensorInfo &info = expected[found->second];
      arrays.push_back(
          inputArray(info, inputDtypes_[found->second], item.second));
      const py::array &array = arrays.back();
      shapes.emplace_back(array.shape(), array.shape() + array.ndim());
      kiln_tensor_t tensor;
      tensor.name = info.name.c_str(); // the artifact's own bytes
      tensor.dtype = info.dtype;
      tensor.rank = size_t(array.ndim());
      tensor.shape = shapes.back().data();
      tensor.data = const_cast<void *>(array.data());
      tensor.byte_size = size_t(array.nbytes());
      tensors.push_back(tensor);
    }

    // Outputs: numpy arrays the runtime writes into. An output with an
    // extent axis gets a flat buffer of its bound; the run packs its entries
    // at the start. Their memory is 64-byte aligned, so a cpu session
    // writes them in place instead of copying them out of its arena.
    std::vector<py::array> results;
    std::vector<kiln_tensor_t> buffers(outputs_.size());
    results.reserve(outputs_.size());
    for (size_t i = 0; i < outputs_.size(); ++i) {
      constexpr std::align_val_t alignment{64};
      size_t bytes = std::max<size_t>(size_t(program_->outputs[i].byteSize), 1);
      void *memory = ::operator new(bytes, alignment);
      py::capsule owner(memory, [](void *p) { ::operator delete(p, alignment); });
      results.push_back(
          py::array(outputs_[i].dtype, outputs_[i].allocShape, memory, owner));
      buffers[i] = kiln_tensor_t();
      buffers[i].data = results[i].mutable_data();
      buffers[i].byte_size = size_t(program_->outputs[i].byteSize);
    }

    std::vector<std::vector<int64_t>> runShapes(outputs_.size());
    kiln_status_t status;
    {
      py::gil_scoped_release nogil;
      // The runtime serializes runs of a session too; this lock also keeps
      // the run's extent shapes (which the session's next run overwrites)
      // until they are copied.
      std::lock_guard<std::mutex> lock(runMutex_);
      status = kiln_session_run(handle_.get(), tensors.data(), tensors.size(),
                                buffers.data(), buffers.size());
      if (!status)
        for (size_t i = 0; i < outputs_.size(); ++i)
          if (program_->outputs[i].extentAxis >= 0)
            runShapes[i].assign(buffers[i].shape,
                                buffers[i].shape + buffers[i].rank);
    }
    check(status);

    py::dict result;
    for (size_t i = 0; i < outputs_.size(); ++i) {
      if (program_->outputs[i].extentAxis < 0) {
        result[outputs_[i].key] = results[i];
        continue;
      }
      // A view of the entries the run wrote, in the run's shape.
      std::vector<py::ssize_t> shape(runShapes[i].begin(), runShapes[i].end());
      result[outputs_[i].key] =
          py::array(outputs_[i].dtype, shape, results[i].data(), results[i]);
    }
    return result;
  }

  py::list dispatches() {
    if (!dispatches_) {
      std::vector<Dispatch> list;
      for (size_t i = 0; i < kiln_session_dispatch_count(handle_.get()); ++i) {
        kiln_dispatch_info_t info;
        check(kiln_session_dispatch_info(handle_.get(), i, &info));
        Dispatch d;
        d.name = info.name ? info.name : "";
        d.symbol = info.symbol ? info.symbol : "";
        d.ops = info.ops ? info.ops : "";
        d.workgroupCount = info.workgroup_count;
        d.flops = info.flops;
        d.bytes = info.bytes;
        d.bindingCount = info.binding_count;
        list.push_back(std::move(d));
      }
      dispatches_ = std::make_unique<std::vector<Dispatch>>(std::move(list));
    }
    py::list result;
    for (const Dispatch &d : *dispatches_)
      result.append(py::cast(d));
    return result;
  }

  py::dict profile() {
    uint64_t runs = 0;
    std::vector<uint64_t> ns(kiln_session_dispatch_count(handle_.get()));
    check(kiln_session_profile(handle_.get(), &runs, ns.data(), ns.size()));
    py::list perDispatch;
    for (uint64_t v : ns)
      perDispatch.append(py::int_(v));
    return py::dict("runs"_a = runs, "dispatch_ns"_a = perDispatch);
  }

  void resetProfile() { kiln_session_reset_profile(handle_.get()); }

  std::string repr() const {
    return "kiln.Session(" + py::repr(artifact_).cast<std::string>() + ", " +
           py::repr(device_).cast<std::string>() +
           ", program=" + quoted(program_->name) + ")";
  }

private:
  struct OutputSlot {
    py::str key;
    py::dtype dtype;
    std::vector<py::ssize_t> allocShape;
  };

  std::string inputNames() const {
    std::string names;
    for (const TensorInfo &info : program_->inputs)
      names += (names.empty() ? "" : ", ") + info.name;
    return names;
  }

  /// The inputs as a dict: a dict as it is, another mapping copied.
  static py::dict asDict(py::handle inputs) {
    if (PyDict_Check(inputs.ptr()))
      return py::reinterpret_borrow<py::dict>(inputs);
    py::object mapping = py::module_::import("collections.abc").attr("Mapping");
    if (py::isinstance(inputs, mapping))
      return py::dict(py::reinterpret_borrow<py::object>(inputs));
    throw py::type_error("Session.run() takes a dict of input name -> numpy "
                         "array, got " +
                         typeName(inputs));
  }

  /// The array to pass for input `info`: `value` itself when it is a
  /// C-contiguous array of the input's dtype; a C-contiguous copy of an array
  /// of that dtype in another layout or byte order; other values (lists,
  /// scalars, objects with __array__) converted by numpy.asarray(value,
  /// dtype) first. An array of another dtype is an error: no silent casts.
  static py::array inputArray(const TensorInfo &info, const py::dtype &dtype,
                              py::handle value) {
    if (value.is_none())
      throw py::type_error("input " + quoted(info.name) +
                           " is None; expected an array of " +
                           describe(info.dtype, info.shape));
    py::array array;
    if (py::isinstance<py::array>(value)) {
      array = py::reinterpret_borrow<py::array>(value);
    } else {
      try {
        array = py::module_::import("numpy").attr("asarray")(value,
                                                             "dtype"_a = dtype);
      } catch (py::error_already_set &e) {
        if (!e.matches(PyExc_ValueError) && !e.matches(PyExc_TypeError) &&
            !e.matches(PyExc_OverflowError))
          throw;
        invalidArgument("input " + quoted(info.name) + ": cannot convert a " +
                        typeName(value) + " to " + kiln_dtype_name(info.dtype) +
                        " (" + py::str(e.value()).cast<std::string>() + ")");
      }
    }
    py::dtype given = array.dtype();
    bool converted = false;
    if (!given.is(dtype) && !given.equal(dtype)) {
      // The same type in the other byte order converts; others do not.
      if (!given.attr("newbyteorder")("=").equal(dtype))
        invalidArgument("input " + quoted(info.name) + ": dtype " +
                        py::str(given).cast<std::string>() +
                        " does not match the model's " +
                        describe(info.dtype, info.shape));
      converted = true;
    }
    if (converted || !(array.flags() & py::array::c_style))
      // numpy.array, not ascontiguousarray: that makes a 0-d array 1-d.
      return py::module_::import("numpy").attr("array")(
          array, "dtype"_a = dtype, "order"_a = "C");
    return array;
  }

  py::object artifact_, device_;
  kiln::Session handle_;
  const Program *program_ = nullptr; ///< in the artifact, which we keep
  std::unordered_map<std::string, size_t> inputIndex_;
  std::vector<py::dtype> inputDtypes_;
  std::vector<OutputSlot> outputs_;
  std::unique_ptr<std::vector<Dispatch>> dispatches_;
  std::mutex runMutex_;
};

} // namespace

//===----------------------------------------------------------------------===//
// The module
//===----------------------------------------------------------------------===//

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "The Kiln runtime's C API (kiln/runtime.h) for Python; use it "
            "through the kiln package.";

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const StatusError &error) {
      raiseStatusError(error);
    }
  });

  // The status codes by name, from the header's enumerators.
  static const std::pair<kiln_status_code_t, const char *> kCodes[] = {
      {KILN_STATUS_OK, "OK"},
      {KILN_STATUS_INVALID_ARGUMENT, "INVALID_ARGUMENT"},
      {KILN_STATUS_IO_ERROR, "IO_ERROR"},
      {KILN_STATUS_INVALID_ARTIFACT, "INVALID_ARTIFACT"},
      {KILN_STATUS_UNSUPPORTED, "UNSUPPORTED"},
      {KILN_STATUS_OUT_OF_MEMORY, "OUT_OF_MEMORY"},
      {KILN_STATUS_INTERNAL, "INTERNAL"},
      {KILN_STATUS_UNAVAILABLE, "UNAVAILABLE"},
      {KILN_STATUS_DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED"}};
  py::dict codes;
  for (const auto &[code, name] : kCodes)
    codes[name] = int(code);
  m.attr("STATUS_CODES") = codes;
  m.def(
      "status_code_description",
      [](int code) {
        return text(kiln_status_code_name(kiln_status_code_t(code)));
      },
      "code"_a,
      "The runtime's words for a status code (\"invalid argument\").");
  m.def("_set_error_classes", &setErrorClasses, "base"_a, "by_code"_a,
        "Sets the exception classes status errors are raised as: cls(message, "
        "code).");
  m.def(
      "version", [] { return text(kiln_version()); },
      "The runtime's version, \"MAJOR.MINOR.PATCH\".");
  m.def(
      "revision", [] { return text(kiln_revision()); },
      "The source revision the runtime was built from.");

  py::class_<TensorInfo>(m, "TensorInfo",
                         "An input or output of a program: name, dtype, shape.")
      .def_property_readonly(
          "name", [](const TensorInfo &t) { return text(t.name.c_str()); })
      .def_property_readonly(
          "dtype", [](const TensorInfo &t) { return numpyDtype(t.dtype); },
          "The numpy dtype (bfloat16: uint16, its raw bits).")
      .def_property_readonly(
          "dtype_name",
          [](const TensorInfo &t) { return text(kiln_dtype_name(t.dtype)); },
          "The Kiln dtype's name: \"float32\", \"bfloat16\", ...")
      .def_property_readonly(
          "shape", [](const TensorInfo &t) { return shapeTuple(t.shape); },
          "The shape (for an extent axis, its bound there).")
      .def_property_readonly("byte_size",
                             [](const TensorInfo &t) { return t.byteSize; })
      .def_property_readonly(
          "extent_axis",
          [](const TensorInfo &t) -> py::object {
            if (t.extentAxis < 0)
              return py::none();
            return py::int_(t.extentAxis);
          },
          "The axis whose size each run decides (NonZero, Unique, ...), or "
          "None.")
      .def("__repr__", &TensorInfo::repr);

  py::class_<Program>(m, "Program",
                      "A program of an artifact: \"main\", or one per batch "
                      "bucket (\"batch_4\").")
      .def_readonly("index", &Program::index)
      .def_property_readonly(
          "name", [](const Program &p) { return text(p.name.c_str()); })
      .def_readonly("batch_size", &Program::batchSize,
                    "Its batch bucket; 0 for a program without one.")
      .def_property_readonly(
          "inputs", [](const Program &p) { return infoList(p.inputs); })
      .def_property_readonly(
          "outputs", [](const Program &p) { return infoList(p.outputs); })
      .def_readonly("arena_size", &Program::arenaSize)
      .def_readonly("dispatch_count", &Program::dispatchCount)
      .def("__repr__", &Program::repr);

  py::class_<Dispatch>(m, "Dispatch",
                       "A dispatch (kernel launch) of a session's program.")
      .def_property_readonly(
          "name", [](const Dispatch &d) { return text(d.name.c_str()); })
      .def_property_readonly(
          "symbol", [](const Dispatch &d) { return text(d.symbol.c_str()); })
      .def_property_readonly(
          "ops", [](const Dispatch &d) { return text(d.ops.c_str()); },
          "The ONNX node names fused into it, comma-separated.")
      .def_readonly("workgroup_count", &Dispatch::workgroupCount)
      .def_readonly("flops", &Dispatch::flops)
      .def_readonly("bytes", &Dispatch::bytes)
      .def_readonly("binding_count", &Dispatch::bindingCount)
      .def("__repr__", [](const Dispatch &d) {
        return "Dispatch(name=" + quoted(d.name) + ", ops=" + quoted(d.ops) +
               ")";
      });

  py::class_<PyArtifact>(m, "Artifact",
                         "A compiled .kiln artifact, validated when opened.")
      .def(py::init(&PyArtifact::open), "path"_a,
           "Maps and validates the artifact at `path` (str, bytes or "
           "os.PathLike).")
      .def_static("from_bytes", &PyArtifact::fromBytes, "data"_a,
                  "name"_a = "<memory>",
                  "Opens an artifact from a bytes-like object (copied); "
                  "`name` is used in messages.")
      .def_property_readonly(
          "name",
          [](const PyArtifact &a) { return text(kiln_artifact_name(a.get())); },
          "The path or name it was opened with.")
      .def_property_readonly("producer",
                             [](const PyArtifact &a) {
                               return text(kiln_artifact_producer(a.get()));
                             })
      .def_property_readonly(
          "options",
          [](const PyArtifact &a) {
            return text(kiln_artifact_options(a.get()));
          },
          "The kiln-compile options it was compiled with.")
      .def_property_readonly(
          "model",
          [](const PyArtifact &a) {
            return text(kiln_artifact_model(a.get()));
          },
          "The model it was compiled from.")
      .def_property_readonly("targets", &PyArtifact::targets,
                             "The targets with a code object: \"cpu\", "
                             "\"gfx942\", \"emu:gfx942\", ...")
      .def_property_readonly("programs",
                             [](const PyArtifact &a) {
                               py::list result;
                               for (const Program &p : a.programs())
                                 result.append(py::cast(p));
                               return result;
                             })
      .def_property_readonly(
          "batch_sizes",
          [](const PyArtifact &a) {
            py::list result;
            for (const Program &p : a.programs())
              if (p.batchSize)
                result.append(p.batchSize);
            return result;
          },
          "The batch buckets (kiln-compile --batch-sizes); [] without.")
      .def_property_readonly(
          "inputs",
          [](const PyArtifact &a) { return infoList(a.programs()[0].inputs); },
          "The model's inputs (at the first program's shapes).")
      .def_property_readonly(
          "outputs",
          [](const PyArtifact &a) { return infoList(a.programs()[0].outputs); },
          "The model's outputs (at the first program's shapes).")
      .def_property_readonly("pinned_inputs", &PyArtifact::pinnedInputs,
                             "Graph inputs folded to constants at compile "
                             "time (--input-value): name -> value as written.")
      .def_property_readonly("constants_size",
                             [](const PyArtifact &a) {
                               return kiln_artifact_constants_size(a.get());
                             })
      .def("__repr__", &PyArtifact::repr);

  py::class_<PyDevice>(m, "Device",
                       "Where sessions run: \"cpu\", \"hip:N\" or \"emu:GFX\".")
      .def(py::init<py::handle, py::handle, py::handle>(), "spec"_a = "cpu",
           "threads"_a = 0, py::kw_only(), "cpus"_a = py::none(),
           "`threads`: workers of a cpu or emu device including the caller "
           "(0: one per available CPU, or per CPU of `cpus`); `cpus`: pin "
           "the workers to these CPUs (\"0-3,8\").")
      .def_property_readonly(
          "name",
          [](const PyDevice &d) { return text(kiln_device_name(d.get())); })
      .def_property_readonly(
          "target",
          [](const PyDevice &d) { return text(kiln_device_target(d.get())); },
          "The code object target it runs: \"cpu\", \"gfx942\", "
          "\"emu:gfx942\".")
      .def_property_readonly(
          "thread_count",
          [](const PyDevice &d) { return kiln_device_thread_count(d.get()); },
          "Threads of a cpu or emu device; 0 for hip.")
      .def("__repr__", &PyDevice::repr);

  py::class_<PySession>(m, "Session",
                        "An artifact's program loaded on a device, ready to "
                        "run.")
      .def(py::init<py::handle, py::handle, py::handle, py::handle, bool,
                    py::handle>(),
           "artifact"_a, "device"_a = "cpu", py::kw_only(),
           "program"_a = py::none(), "batch_size"_a = 0, "profile"_a = false,
           "run_timeout_ms"_a = 0,
           "`artifact`: a kiln.Artifact or a path; `device`: a kiln.Device or "
           "a spec; `program`: a name or index (default: the first, or the "
           "one of `batch_size`); `profile`: time every dispatch; "
           "`run_timeout_ms`: a run longer than this stops with "
           "kiln.Error code DEADLINE_EXCEEDED (0: no limit).")
      .def("run", &PySession::run, "inputs"_a,
           "Runs once: {input name: array} -> {output name: array}, in the "
           "program's output order.")
      .def_property_readonly("artifact", &PySession::artifact)
      .def_property_readonly("device", &PySession::device)
      .def_property_readonly(
          "program", [](const PySession &s) { return py::cast(s.program()); })
      .def_property_readonly(
          "inputs",
          [](const PySession &s) { return infoList(s.program().inputs); })
      .def_property_readonly(
          "outputs",
          [](const PySession &s) { return infoList(s.program().outputs); })
      .def_property_readonly("dispatches", &PySession::dispatches)
      .def("profile", &PySession::profile,
           "{\"runs\": runs, \"dispatch_ns\": [total ns per dispatch]} since "
           "creation or reset_profile (needs profile=True).")
      .def("reset_profile", &PySession::resetProfile)
      .def("__repr__", &PySession::repr);
}
