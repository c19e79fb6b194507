//===- Status.cpp - kiln_status_t and dtype helpers -----------------------===//
//
// Error statuses are heap blocks holding the code and the message; NULL is
// success. A static block stands in when even that allocation fails.
//
//===----------------------------------------------------------------------===//

#include "Status.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

struct kiln_status_s {
  kiln_status_code_t code;
  char message[1]; // NUL-terminated, allocated to fit
};

namespace {
// Returned when allocating a status fails; never freed.
kiln_status_s outOfMemoryStatus = {KILN_STATUS_OUT_OF_MEMORY, {0}};
} // namespace

kiln_status_t kiln::rt::makeStatus(kiln_status_code_t code,
                                   const std::string &message) {
  void *memory = std::malloc(sizeof(kiln_status_s) + message.size());
  if (!memory)
    return &outOfMemoryStatus;
  auto *status = static_cast<kiln_status_s *>(memory);
  status->code = code;
  std::memcpy(status->message, message.c_str(), message.size() + 1);
  return status;
}

std::string kiln::rt::strFormat(const char *format, ...) {
  va_list args;
  va_start(args, format);
  char small[256];
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(small, sizeof(small), format, copy);
  va_end(copy);
  std::string result;
  if (n < 0) {
    result = format;
  } else if (size_t(n) < sizeof(small)) {
    result.assign(small, size_t(n));
  } else {
    result.resize(size_t(n) + 1);
    std::vsnprintf(&result[0], result.size(), format, args);
    result.resize(size_t(n));
  }
  va_end(args);
  return result;
}

std::string kiln::rt::shapeString(const int64_t *shape, size_t rank) {
  std::string s = "[";
  for (size_t i = 0; i < rank; ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

extern "C" {

kiln_status_code_t kiln_status_code(kiln_status_t status) {
  return status ? status->code : KILN_STATUS_OK;
}

const char *kiln_status_message(kiln_status_t status) {
  if (!status)
    return "";
  if (status == &outOfMemoryStatus)
    return "out of memory";
  return status->message;
}

void kiln_status_free(kiln_status_t status) {
  if (status && status != &outOfMemoryStatus)
    std::free(status);
}

const char *kiln_status_code_name(kiln_status_code_t code) {
  switch (code) {
  case KILN_STATUS_OK:
    return "ok";
  case KILN_STATUS_INVALID_ARGUMENT:
    return "invalid argument";
  case KILN_STATUS_IO_ERROR:
    return "i/o error";
  case KILN_STATUS_INVALID_ARTIFACT:
    return "invalid artifact";
  case KILN_STATUS_UNSUPPORTED:
    return "unsupported";
  case KILN_STATUS_OUT_OF_MEMORY:
    return "out of memory";
  case KILN_STATUS_INTERNAL:
    return "internal error";
  case KILN_STATUS_UNAVAILABLE:
    return "unavailable";
  case KILN_STATUS_DEADLINE_EXCEEDED:
    return "deadline exceeded";
  }
  return "unknown status";
}

size_t kiln_dtype_size(kiln_dtype_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_F64:
  case KILN_DTYPE_I64:
  case KILN_DTYPE_U64:
    return 8;
  case KILN_DTYPE_F32:
  case KILN_DTYPE_I32:
  case KILN_DTYPE_U32:
    return 4;
  case KILN_DTYPE_F16:
  case KILN_DTYPE_BF16:
  case KILN_DTYPE_I16:
  case KILN_DTYPE_U16:
    return 2;
  case KILN_DTYPE_I8:
  case KILN_DTYPE_U8:
  case KILN_DTYPE_BOOL:
    return 1;
  }
  return 0;
}

const char *kiln_dtype_name(kiln_dtype_t dtype) {
  switch (dtype) {
  case KILN_DTYPE_F32:
    return "float32";
  case KILN_DTYPE_F16:
    return "float16";
  case KILN_DTYPE_BF16:
    return "bfloat16";
  case KILN_DTYPE_F64:
    return "float64";
  case KILN_DTYPE_I8:
    return "int8";
  case KILN_DTYPE_I16:
    return "int16";
  case KILN_DTYPE_I32:
    return "int32";
  case KILN_DTYPE_I64:
    return "int64";
  case KILN_DTYPE_U8:
    return "uint8";
  case KILN_DTYPE_BOOL:
    return "bool";
  case KILN_DTYPE_U16:
    return "uint16";
  case KILN_DTYPE_U32:
    return "uint32";
  case KILN_DTYPE_U64:
    return "uint64";
  }
  return "unknown";
}

} // extern "C"
