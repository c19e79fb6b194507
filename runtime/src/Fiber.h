//===- Fiber.h - Cooperative fibers with a hand-written switch --*- C++ -*-===//
//
// The emu device runs every lane of a workgroup as a fiber: a stack and a
// saved stack pointer. `fiberSwitch` saves the callee-saved registers of the
// System V x86-64 ABI (rbx, rbp, r12-r15), MXCSR and the x87 control word on
// the current stack, stores the stack pointer, loads the other one and
// restores the same set from there; nothing else (no signal mask, unlike
// swapcontext), so a switch costs a few nanoseconds. A fresh fiber starts in
// a trampoline that calls `entry(arg)`; the entry must never return (it
// switches away for the last time instead).
//
// Stacks are mmap'ed with MAP_NORESERVE, with a PROT_NONE guard page at the
// bottom so an overflow faults instead of corrupting the neighbour stack.
//
// Only x86-64 ELF hosts have the switch (kFibersSupported); elsewhere the
// functions exist but must not be called, and the emu device reports
// KILN_STATUS_UNSUPPORTED.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SRC_FIBER_H
#define KILN_RUNTIME_SRC_FIBER_H

#include <cstddef>
#include <string>

namespace kiln::rt {

#if defined(__x86_64__) && defined(__ELF__)
constexpr bool kFibersSupported = true;
#else
constexpr bool kFibersSupported = false;
#endif

/// A suspended execution context: the stack pointer its registers were saved
/// under (nullptr while it runs or before fiberInit).
struct Fiber {
  void *sp = nullptr;
};

/// An mmap'ed stack with a guard page below it. Movable, not copyable.
class FiberStack {
public:
  FiberStack() = default;
  ~FiberStack() { release(); }
  FiberStack(FiberStack &&other) noexcept {
    *this = static_cast<FiberStack &&>(other);
  }
  FiberStack &operator=(FiberStack &&other) noexcept;
  FiberStack(const FiberStack &) = delete;
  FiberStack &operator=(const FiberStack &) = delete;

  /// Maps `size` usable bytes (rounded up to pages) plus the guard page;
  /// false with `error` set if the mapping fails.
  bool allocate(size_t size, std::string &error);
  void release();

  /// The highest address of the stack (16-byte aligned); stacks grow down.
  void *top() const { return static_cast<char *>(base_) + mappedSize_; }
  size_t usableSize() const {
    return mappedSize_ ? mappedSize_ - guardSize_ : 0;
  }

private:
  void *base_ = nullptr; // the guard page
  size_t mappedSize_ = 0;
  size_t guardSize_ = 0;
};

using FiberEntry = void (*)(void *arg);

/// Prepares `fiber` so that the next switch to it runs `entry(arg)` on the
/// stack that ends at `stackTop`. The fiber starts with the caller's MXCSR
/// and x87 control word.
void fiberInit(Fiber &fiber, void *stackTop, FiberEntry entry, void *arg);

/// Saves the running context into `from` and resumes `to`; returns when
/// something switches back to `from`.
void fiberSwitch(Fiber &from, Fiber &to);

/// Calls `fn(a, b)` with the stack pointer 64-byte aligned at the call. The
/// System V ABI promises 16 bytes; code compiled for wide vectors that keeps
/// 32- or 64-byte aligned spill slots without realigning its frame needs
/// more, and must not crash on the emu device for it.
void callAligned(void (*fn)(void *, void *), void *a, void *b);

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_FIBER_H
