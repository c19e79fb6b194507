//===- OnnxLibrary.cpp - exception-safe wrappers around libonnx -----------===//
//
// Compiled with -fexceptions: libonnx throws, and nothing it throws may
// escape into the exception-free rest of Kiln.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/OnnxLibrary.h"

#include "onnx/checker.h"
#include "onnx/defs/parser.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>

#include <sys/wait.h>
#include <unistd.h>

using namespace kiln::onnx_import;

std::string kiln::onnx_import::parseModelBytes(llvm::StringRef bytes,
                                               onnx::ModelProto &model) {
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const uint8_t *>(bytes.data()),
      static_cast<int>(std::min<size_t>(bytes.size(), INT_MAX)));
  stream.SetTotalBytesLimit(INT_MAX);
  if (bytes.size() > INT_MAX || !model.ParseFromCodedStream(&stream) ||
      !stream.ConsumedEntireMessage())
    return "not a valid ONNX model: the protobuf data is truncated or "
           "corrupted (or larger than 2 GiB; store large weights as "
           "external data)";
  if (!model.has_graph())
    return "not a valid ONNX model: it has no graph";
  return "";
}

std::string kiln::onnx_import::parseModelText(llvm::StringRef text,
                                              onnx::ModelProto &model) {
  try {
    std::string copy = text.str();
    onnx::Status status = onnx::OnnxParser::Parse(model, copy.c_str());
    if (!status.IsOK())
      return "cannot parse ONNX text: " + status.ErrorMessage();
  } catch (const std::exception &e) {
    return std::string("cannot parse ONNX text: ") + e.what();
  }
  return "";
}

std::string kiln::onnx_import::checkModelWithLibOnnx(const onnx::ModelProto &model) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    std::string message = e.what();
    // libonnx appends a context block; the first line is the diagnosis.
    return message.substr(0, message.find('\n'));
  }
  return "";
}

std::string kiln::onnx_import::checkNodeInputs(const onnx::NodeProto &node, int64_t opset) {
  try {
    const onnx::OpSchema *schema = onnx::OpSchemaRegistry::Schema(
        node.op_type(), static_cast<int>(std::min<int64_t>(opset, kLibOnnxMaxOpset)),
        node.domain());
    if (!schema)
      return "";
    const auto &formals = schema->inputs();
    int count = node.input_size();
    if (count < schema->min_input())
      return "needs at least " + std::to_string(schema->min_input()) + " inputs, has " +
             std::to_string(count);
    if (opset <= kLibOnnxMaxOpset && count > schema->max_input())
      return "takes at most " + std::to_string(schema->max_input()) + " inputs, has " +
             std::to_string(count);
    for (int i = 0; i < count && !formals.empty(); ++i) {
      size_t formalIndex = std::min<size_t>(i, formals.size() - 1);
      const auto &formal = formals[formalIndex];
      bool variadicTail = static_cast<size_t>(i) >= formals.size() - 1 &&
                          formal.GetOption() == onnx::OpSchema::Variadic;
      bool required = static_cast<size_t>(i) < formals.size()
                          ? formal.GetOption() == onnx::OpSchema::Single || variadicTail
                          : variadicTail;
      if (node.input(i).empty() && required)
        return "input " + std::to_string(i) + " ('" + formal.GetName() +
               "') is required but not given";
    }
    return "";
  } catch (...) {
    return "";
  }
}

/// The conversion itself, in the process that runs it: "" and the
/// converted model, or the converter's message.
static std::string convertInProcess(onnx::ModelProto &model, int64_t target) {
  // The converter's adapters (the broadcasting of Add, Gemm, ...) read the
  // shapes of their inputs: infer them first. Inference is best-effort; a
  // model it cannot type is still handed to the converter.
  try {
    onnx::shape_inference::InferShapes(model);
  } catch (...) {
  }
  try {
    onnx::ModelProto converted =
        onnx::version_conversion::ConvertVersion(model, static_cast<int>(target));
    model = std::move(converted);
    return "";
  } catch (const std::exception &e) {
    std::string what = e.what();
    // libonnx prefixes its messages with "[ONNXRuntimeError]"-like tags and
    // may span lines: keep the first line.
    what = what.substr(0, what.find('\n'));
    return what.empty() ? "the version converter failed" : what;
  } catch (...) {
    return "the version converter failed";
  }
}

/// Writes all of `bytes` to `fd`; false on error.
static bool writeAll(int fd, const char *bytes, size_t size) {
  while (size) {
    ssize_t n = ::write(fd, bytes, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    bytes += n;
    size -= size_t(n);
  }
  return true;
}

std::string kiln::onnx_import::convertOpset(onnx::ModelProto &model, int64_t target) {
  // libonnx's converter dereferences what a malformed model leaves out (a
  // node's missing input, a shape it assumes), so it runs in a child
  // process: a crash there is this model's error, not the compiler's. The
  // child sends back 'M' and the converted model, or 'E' and the message.
  int pipeFds[2];
  if (::pipe(pipeFds) != 0)
    return convertInProcess(model, target);
  std::fflush(nullptr);
  pid_t child = ::fork();
  if (child < 0) {
    ::close(pipeFds[0]);
    ::close(pipeFds[1]);
    return convertInProcess(model, target);
  }
  if (child == 0) {
    ::close(pipeFds[0]);
    // A crash ends the child quietly (no stack dump from LLVM's or a
    // sanitizer's handler): the parent reports it.
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
      std::signal(sig, SIG_DFL);
    std::string message = convertInProcess(model, target);
    std::string reply;
    if (message.empty() && model.SerializeToString(&reply))
      reply.insert(0, 1, 'M');
    else
      reply = "E" + (message.empty() ? std::string("the converted model is too large") : message);
    ::_exit(writeAll(pipeFds[1], reply.data(), reply.size()) ? 0 : 1);
  }
  ::close(pipeFds[1]);
  std::string reply;
  char buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(pipeFds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    reply.append(buffer, size_t(n));
  }
  ::close(pipeFds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    return "the version converter crashed on it (" +
           std::string(strsignal(WTERMSIG(status))) + "): the model is malformed";
  if (reply.empty() || (reply[0] != 'M' && reply[0] != 'E'))
    return "the version converter failed";
  if (reply[0] == 'E')
    return reply.substr(1);
  onnx::ModelProto converted;
  if (parseModelBytes(llvm::StringRef(reply).drop_front(), converted) != "")
    return "the version converter gave a model that does not parse";
  model = std::move(converted);
  return "";
}
