//===- Fiber.cpp - Cooperative fibers with a hand-written switch ----------===//
//
// The switch and the start trampoline are top-level assembly (AT&T syntax,
// System V x86-64). The saved frame, from the saved stack pointer up:
//
//   sp + 0   MXCSR (4 bytes), x87 control word (2 bytes), padding
//   sp + 8   r15
//   sp + 16  r14
//   sp + 24  r13
//   sp + 32  r12
//   sp + 40  rbx
//   sp + 48  rbp
//   sp + 56  return address
//
// fiberInit builds the same frame by hand on a fresh stack, with the return
// address pointing at the trampoline, r12 = entry and r13 = arg. Under a
// sanitizer r12 is sanitizedStart and r13 the Fiber, whose entry and arg
// sanitizedStart calls once the sanitizer knows the switch is complete.
//
// The switch leaves through `pop` + `jmp` rather than `ret`: a `ret` to the
// other fiber never matches the return stack buffer's prediction, and that
// misprediction alone cost more than the rest of the switch (about 15 ns
// against 5 ns per switch, measured on the development machine).
//
//===----------------------------------------------------------------------===//

#include "Fiber.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

#if KILN_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if KILN_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

using namespace kiln::rt;

#if defined(__x86_64__) && defined(__ELF__)

extern "C" {
/// Saves the context into *from, switches to the stack `to`.
void kiln_rt_fiber_switch(void **from, void *to);
/// Where a fresh fiber starts: calls r12(r13).
void kiln_rt_fiber_start();
/// fn(a, b) with the stack 64-byte aligned at the call.
void kiln_rt_call_aligned(void (*fn)(void *, void *), void *a, void *b);
}

asm(R"(
  .pushsection .text
  .p2align 4
  .globl kiln_rt_fiber_switch
  .hidden kiln_rt_fiber_switch
  .type kiln_rt_fiber_switch, @function
kiln_rt_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  popq %rcx
  jmpq *%rcx
  .size kiln_rt_fiber_switch, .-kiln_rt_fiber_switch

  .p2align 4
  .globl kiln_rt_fiber_start
  .hidden kiln_rt_fiber_start
  .type kiln_rt_fiber_start, @function
kiln_rt_fiber_start:
  movq %r13, %rdi
  callq *%r12
  ud2
  .size kiln_rt_fiber_start, .-kiln_rt_fiber_start

  .p2align 4
  .globl kiln_rt_call_aligned
  .hidden kiln_rt_call_aligned
  .type kiln_rt_call_aligned, @function
kiln_rt_call_aligned:
  pushq %rbp
  movq %rsp, %rbp
  andq $-64, %rsp
  movq %rdi, %rax
  movq %rsi, %rdi
  movq %rdx, %rsi
  callq *%rax
  movq %rbp, %rsp
  popq %rbp
  ret
  .size kiln_rt_call_aligned, .-kiln_rt_call_aligned
  .popsection
)");

#if KILN_FIBER_ASAN
namespace {
/// The context that is switching away on this thread: the one resumed next
/// finishes the switch and records the stack ASan reports for it.
thread_local Fiber *tlsSwitchingFrom = nullptr;

/// The ASan half of a switch, after it: `fakeStack` is what the resumed
/// context saved when it left (nullptr for a fresh fiber).
void finishSwitch(void *fakeStack) {
  const void *bottom = nullptr;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(fakeStack, &bottom, &size);
  if (Fiber *from = tlsSwitchingFrom) {
    from->stackBottom = bottom;
    from->stackSize = size;
  }
}
} // namespace
#endif

#if KILN_FIBER_ASAN || KILN_FIBER_TSAN
/// The entry of a fresh fiber under a sanitizer.
static void sanitizedStart(void *arg) {
  Fiber &fiber = *static_cast<Fiber *>(arg);
#if KILN_FIBER_ASAN
  finishSwitch(nullptr);
#endif
  fiber.entry(fiber.arg);
}
#endif

void kiln::rt::fiberInit(Fiber &fiber, const FiberStack &stack,
                         FiberEntry entry, void *arg) {
  void *stackTop = stack.top();
#if KILN_FIBER_ASAN || KILN_FIBER_TSAN
  fiber.entry = entry;
  fiber.arg = arg;
  entry = sanitizedStart;
  arg = &fiber;
#endif
#if KILN_FIBER_ASAN
  // A context abandoned on this stack (an aborted workgroup) leaves its
  // frames' redzones poisoned.
  ASAN_UNPOISON_MEMORY_REGION(stack.bottom(), stack.usableSize());
  fiber.stackBottom = stack.bottom();
  fiber.stackSize = stack.usableSize();
  fiber.fakeStack = nullptr;
#endif
#if KILN_FIBER_TSAN
  fiber.tsanFiber = stack.tsanFiber();
#endif
  uint32_t mxcsr = 0;
  uint16_t fpuControl = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpuControl));

  // After the trampoline's `ret` the stack pointer is top - 16, 16-byte
  // aligned as the call into `entry` requires; top - 8 is a null word where
  // a debugger's backtrace ends.
  auto top = reinterpret_cast<uintptr_t>(stackTop) & ~uintptr_t(15);
  auto *slots = reinterpret_cast<uint64_t *>(top) - 10;
  std::memset(slots, 0, 10 * sizeof(uint64_t));
  slots[0] = uint64_t(mxcsr) | uint64_t(fpuControl) << 32;
  slots[1] = 0;                                                 // r15
  slots[2] = 0;                                                 // r14
  slots[3] = reinterpret_cast<uintptr_t>(arg);                  // r13
  slots[4] = reinterpret_cast<uintptr_t>(entry);                // r12
  slots[5] = 0;                                                 // rbx
  slots[6] = 0;                                                 // rbp
  slots[7] = reinterpret_cast<uintptr_t>(&kiln_rt_fiber_start); // ret
  // slots[8], slots[9]: top - 16 and top - 8, left zero.
  fiber.sp = slots;
}

void kiln::rt::fiberSwitch(Fiber &from, Fiber &to) {
  void *target = to.sp;
  to.sp = nullptr;
#if KILN_FIBER_TSAN
  // The thread's own context gets the thread's TSan fiber.
  from.tsanFiber = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(to.tsanFiber, 0);
#endif
#if KILN_FIBER_ASAN
  tlsSwitchingFrom = &from;
  __sanitizer_start_switch_fiber(&from.fakeStack, to.stackBottom,
                                 to.stackSize);
#endif
  kiln_rt_fiber_switch(&from.sp, target);
#if KILN_FIBER_ASAN
  finishSwitch(from.fakeStack);
#endif
}

void kiln::rt::callAligned(void (*fn)(void *, void *), void *a, void *b) {
  kiln_rt_call_aligned(fn, a, b);
}

#else // no fibers on this host

void kiln::rt::fiberInit(Fiber &, const FiberStack &, FiberEntry, void *) {
  std::abort();
}
void kiln::rt::fiberSwitch(Fiber &, Fiber &) { std::abort(); }
void kiln::rt::callAligned(void (*fn)(void *, void *), void *a, void *b) {
  fn(a, b);
}

#endif

FiberStack &FiberStack::operator=(FiberStack &&other) noexcept {
  if (this != &other) {
    release();
    base_ = other.base_;
    mappedSize_ = other.mappedSize_;
    guardSize_ = other.guardSize_;
    other.base_ = nullptr;
    other.mappedSize_ = other.guardSize_ = 0;
#if KILN_FIBER_TSAN
    tsanFiber_ = other.tsanFiber_;
    other.tsanFiber_ = nullptr;
#endif
  }
  return *this;
}

bool FiberStack::allocate(size_t size, std::string &error) {
  release();
  long page = sysconf(_SC_PAGESIZE);
  size_t pageSize = page > 0 ? size_t(page) : 4096;
  size_t usable = (size + pageSize - 1) / pageSize * pageSize;
  size_t total = usable + pageSize;
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
#ifdef MAP_STACK
  flags |= MAP_STACK;
#endif
  void *mapping = mmap(nullptr, total, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (mapping == MAP_FAILED) {
    error = "cannot map a fiber stack of " + std::to_string(total) +
            " bytes: " + std::strerror(errno);
    return false;
  }
  if (mprotect(mapping, pageSize, PROT_NONE) != 0) {
    error = std::string("cannot protect a fiber stack's guard page: ") +
            std::strerror(errno);
    munmap(mapping, total);
    return false;
  }
  base_ = mapping;
  mappedSize_ = total;
  guardSize_ = pageSize;
#if KILN_FIBER_TSAN
  tsanFiber_ = __tsan_create_fiber(0);
#endif
  return true;
}

void FiberStack::release() {
#if KILN_FIBER_TSAN
  if (tsanFiber_)
    __tsan_destroy_fiber(tsanFiber_);
  tsanFiber_ = nullptr;
#endif
  if (base_)
    munmap(base_, mappedSize_);
  base_ = nullptr;
  mappedSize_ = guardSize_ = 0;
}
