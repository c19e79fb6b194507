//===- Commands.h - A program's command list, run on any device -*- C++ -*-===//
//
// A program with control flow decided at run time (an ONNX If or Loop) is a
// list of commands (kiln_artifact.fbs: dispatches, copies, conditional
// jumps, loop counters) rather than dispatches in order. runCommands walks
// it with a program counter and asks a CommandTarget for what touches the
// device: dispatches, copies within its memory, and the scalars a jump
// reads or a counter writes. The cpu and emu devices (host memory) and the
// hip device (a stream) implement the target; the walk is the same.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SRC_COMMANDS_H
#define KILN_RUNTIME_SRC_COMMANDS_H

#include "kiln/runtime.h"
#include "kiln_artifact_generated.h"

#include <chrono>
#include <cstdint>
#include <string>

namespace kiln::rt {

/// What the commands of one program need from the device it runs on.
/// Bindings are the program's (arena or constants).
class CommandTarget {
public:
  virtual ~CommandTarget() = default;
  /// Runs dispatch `index` of the program.
  virtual kiln_status_t dispatch(uint32_t index) = 0;
  /// Copies `size` bytes from `srcOffset` bytes into `src` to `dstOffset`
  /// bytes into `dst`.
  virtual kiln_status_t copy(const kiln::artifact::Binding &src,
                             uint64_t srcOffset,
                             const kiln::artifact::Binding &dst,
                             uint64_t dstOffset, uint64_t size) = 0;
  /// Reads the first `size` bytes of `src` into `out` once everything
  /// before has run.
  virtual kiln_status_t read(const kiln::artifact::Binding &src, void *out,
                             size_t size) = 0;
  /// Writes `value` to `dst` (8 bytes), in order with what comes before
  /// and after. `slot` (one per command) is where the value may stay until
  /// the next read, for a device that copies asynchronously.
  virtual kiln_status_t writeInt64(const kiln::artifact::Binding &dst,
                                   int64_t value, size_t slot) = 0;
};

/// When a run must stop: `deadline` on the steady clock, if `enabled`.
struct RunDeadline {
  bool enabled = false;
  std::chrono::steady_clock::time_point deadline;
  uint64_t timeoutUs = 0; // for the message

  /// A deadline `timeoutUs` from now (none for 0).
  static RunDeadline after(uint64_t timeoutUs);
  /// KILN_STATUS_DEADLINE_EXCEEDED naming `where` and `what` (the command
  /// or dispatch about to run) once the deadline has passed, else null.
  kiln_status_t check(const std::string &where, const char *what,
                      size_t index, size_t count) const;
};

/// Runs the commands of `program` (validated) on `target`. `where` names
/// the program in errors ("model.kiln"). Before every dispatch, copy and
/// jump the run checks `deadline`.
kiln_status_t runCommands(const kiln::artifact::Program &program,
                          CommandTarget &target, const std::string &where,
                          const RunDeadline &deadline = {});

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_COMMANDS_H
