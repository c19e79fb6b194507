//===- Commands.cpp - A program's command list, run on any device ---------===//

#include "Commands.h"

#include "Status.h"

#include <algorithm>
#include <vector>

using namespace kiln::rt;
namespace fb = kiln::artifact;

namespace {
/// "300 ms", "1500 us".
std::string formatMicroseconds(uint64_t us) {
  if (us % 1000 == 0)
    return strFormat("%llu ms", (unsigned long long)(us / 1000));
  return strFormat("%llu us", (unsigned long long)us);
}
} // namespace

RunDeadline kiln::rt::RunDeadline::after(uint64_t timeoutUs) {
  RunDeadline d;
  if (timeoutUs == 0)
    return d;
  d.enabled = true;
  d.timeoutUs = timeoutUs;
  d.deadline = std::chrono::steady_clock::now() +
               std::chrono::microseconds(
                   std::min<uint64_t>(timeoutUs, uint64_t(1) << 50));
  return d;
}

kiln_status_t kiln::rt::RunDeadline::check(const std::string &where, const char *what,
                                 size_t index, size_t count) const {
  if (!enabled || std::chrono::steady_clock::now() < deadline)
    return nullptr;
  return makeStatus(
      KILN_STATUS_DEADLINE_EXCEEDED,
      strFormat("%s: the run passed its time limit of %s and was stopped "
                "before %s %zu of %zu",
                where.c_str(), formatMicroseconds(timeoutUs).c_str(), what,
                index, count));
}

kiln_status_t kiln::rt::runCommands(const fb::Program &program,
                                    CommandTarget &target,
                                    const std::string &where,
                                    const RunDeadline &deadline) {
  auto *commands = program.commands();
  if (!commands)
    return nullptr;
  std::vector<int64_t> counters(program.counters(), 0);
  size_t count = commands->size();
  for (size_t pc = 0; pc < count;) {
    const fb::Command &c = *commands->Get(flatbuffers::uoffset_t(pc));
    size_t next = pc + 1;
    // Every loop iteration passes a jump, so a program that runs on (a Loop
    // whose trip count the data sets) meets a check however few dispatches
    // it has.
    switch (c.op()) {
    case fb::CommandOp::Dispatch:
    case fb::CommandOp::Copy:
    case fb::CommandOp::JumpIfFalse:
    case fb::CommandOp::Jump:
    case fb::CommandOp::JumpIfCounterAtLeast:
      KILN_RETURN_IF_ERROR(deadline.check(where, "command", pc, count));
      break;
    default:
      break;
    }
    switch (c.op()) {
    case fb::CommandOp::Dispatch:
      KILN_RETURN_IF_ERROR(target.dispatch(c.index()));
      break;
    case fb::CommandOp::Copy:
      if (c.src().size() != 0)
        KILN_RETURN_IF_ERROR(
            target.copy(c.src(), 0, c.dst(), 0, c.src().size()));
      break;
    case fb::CommandOp::CopyToRow:
    case fb::CommandOp::CopyFromRow: {
      // The validator checked that the stacked side holds whole rows; the
      // row is the loop's iteration, which must be one of them.
      bool to = c.op() == fb::CommandOp::CopyToRow;
      uint64_t rowBytes = to ? c.src().size() : c.dst().size();
      uint64_t rows = (to ? c.dst().size() : c.src().size()) / rowBytes;
      int64_t i = counters[c.counter()];
      if (i < 0 || uint64_t(i) >= rows)
        return makeStatus(
            KILN_STATUS_INTERNAL,
            strFormat("%s: command %zu: loop iteration %lld has no row in a "
                      "scan %s of %llu rows",
                      where.c_str(), pc, (long long)i, to ? "output" : "input",
                      (unsigned long long)rows));
      uint64_t offset = uint64_t(i) * rowBytes;
      KILN_RETURN_IF_ERROR(target.copy(c.src(), to ? 0 : offset, c.dst(),
                                       to ? offset : 0, rowBytes));
      break;
    }
    case fb::CommandOp::JumpIfFalse: {
      unsigned char cond = 0;
      KILN_RETURN_IF_ERROR(target.read(c.src(), &cond, 1));
      if (!cond)
        next = c.index();
      break;
    }
    case fb::CommandOp::Jump:
      next = c.index();
      break;
    case fb::CommandOp::CounterReset:
      counters[c.counter()] = 0;
      break;
    case fb::CommandOp::CounterStore:
      KILN_RETURN_IF_ERROR(
          target.writeInt64(c.dst(), counters[c.counter()], pc));
      break;
    case fb::CommandOp::CounterIncrement:
      ++counters[c.counter()];
      break;
    case fb::CommandOp::JumpIfCounterAtLeast: {
      int64_t limit = 0;
      KILN_RETURN_IF_ERROR(target.read(c.src(), &limit, sizeof(limit)));
      if (counters[c.counter()] >= limit)
        next = c.index();
      break;
    }
    }
    pc = next;
  }
  return nullptr;
}
