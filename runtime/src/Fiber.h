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
// Sanitizers see the switch: under AddressSanitizer every switch is wrapped
// in __sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber (ASan
// then knows which stack runs, so its stack checks and fake stacks stay
// right), and a fresh fiber's stack is unpoisoned; under ThreadSanitizer each
// FiberStack owns a TSan fiber (__tsan_create_fiber, __tsan_destroy_fiber)
// and every switch calls __tsan_switch_to_fiber. Builds without sanitizers
// compile none of it: Fiber is the saved stack pointer alone.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SRC_FIBER_H
#define KILN_RUNTIME_SRC_FIBER_H

#include <cstddef>
#include <string>

namespace kiln::rt {

// KILN_FIBER_ASAN / KILN_FIBER_TSAN: 1 when built with that sanitizer (GCC
// defines __SANITIZE_*__, clang answers __has_feature).
#if defined(__SANITIZE_ADDRESS__)
#define KILN_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_FIBER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define KILN_FIBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KILN_FIBER_TSAN 1
#endif
#endif
#ifndef KILN_FIBER_ASAN
#define KILN_FIBER_ASAN 0
#endif
#ifndef KILN_FIBER_TSAN
#define KILN_FIBER_TSAN 0
#endif

#if defined(__x86_64__) && defined(__ELF__)
constexpr bool kFibersSupported = true;
#else
constexpr bool kFibersSupported = false;
#endif

/// A suspended execution context: the stack pointer its registers were saved
/// under (nullptr while it runs or before fiberInit).
struct Fiber {
  void *sp = nullptr;
#if KILN_FIBER_ASAN || KILN_FIBER_TSAN
  // The entry and argument of a fresh fiber: it starts in a function that
  // tells the sanitizers first.
  void (*entry)(void *) = nullptr;
  void *arg = nullptr;
#endif
#if KILN_FIBER_ASAN
  // The stack this fiber runs on, for __sanitizer_start_switch_fiber. A
  // thread's own context (the emu scheduler) learns its stack from the
  // first switch back to it.
  const void *stackBottom = nullptr;
  size_t stackSize = 0;
  // ASan's fake stack of the suspended context.
  void *fakeStack = nullptr;
#endif
#if KILN_FIBER_TSAN
  void *tsanFiber = nullptr;
#endif
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
  /// The lowest usable address (just above the guard page).
  void *bottom() const { return static_cast<char *>(base_) + guardSize_; }
  size_t usableSize() const {
    return mappedSize_ ? mappedSize_ - guardSize_ : 0;
  }

#if KILN_FIBER_TSAN
  /// The TSan fiber of the contexts that run on this stack.
  void *tsanFiber() const { return tsanFiber_; }
#endif

private:
  void *base_ = nullptr; // the guard page
  size_t mappedSize_ = 0;
  size_t guardSize_ = 0;
#if KILN_FIBER_TSAN
  void *tsanFiber_ = nullptr;
#endif
};

using FiberEntry = void (*)(void *arg);

/// Prepares `fiber` so that the next switch to it runs `entry(arg)` on
/// `stack` (whatever ran there before is abandoned). The fiber starts with
/// the caller's MXCSR and x87 control word.
void fiberInit(Fiber &fiber, const FiberStack &stack, FiberEntry entry,
               void *arg);

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
