//===- Status.h - Internal helpers for kiln_status_t ------------*- C++ -*-===//
//
// Building error statuses with printf-style messages, and the return-on-error
// macro used throughout the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SRC_STATUS_H
#define KILN_RUNTIME_SRC_STATUS_H

#include "kiln/runtime.h"

#include <string>

namespace kiln::rt {

/// A new error status (never NULL: an allocation failure yields a static
/// out-of-memory status, which kiln_status_free ignores).
kiln_status_t makeStatus(kiln_status_code_t code, const std::string &message);

/// printf into a std::string.
std::string strFormat(const char *format, ...)
    __attribute__((format(printf, 1, 2)));

/// "[4, 8]" (or "[]" for a scalar).
std::string shapeString(const int64_t *shape, size_t rank);

} // namespace kiln::rt

#define KILN_RETURN_IF_ERROR(expr)                                             \
  do {                                                                         \
    kiln_status_t kilnStatus_ = (expr);                                        \
    if (kilnStatus_)                                                           \
      return kilnStatus_;                                                      \
  } while (false)

#endif // KILN_RUNTIME_SRC_STATUS_H
