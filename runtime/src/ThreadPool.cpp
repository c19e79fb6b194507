//===- ThreadPool.cpp - Workgroup thread pool for the cpu device ----------===//

#include "ThreadPool.h"

#include "Status.h"

#include <chrono>
#include <cerrno>
#include <cstring>
#include <sched.h>
#include <thread>

using namespace kiln::rt;

static inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// How long an idle worker spins before it sleeps.
static constexpr std::chrono::microseconds kSpinTime{200};

unsigned ThreadPool::availableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0)
      return unsigned(n);
  }
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

std::string ThreadPool::formatCpuList(const cpu_set_t &set) {
  std::string text;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set))
      continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set))
      ++last;
    text += (text.empty() ? "" : ",") + std::to_string(cpu);
    if (last > cpu)
      text += "-" + std::to_string(last);
    cpu = last;
  }
  return text;
}

kiln_status_t ThreadPool::parseCpuList(const char *text, cpu_set_t &out) {
  CPU_ZERO(&out);
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
    return makeStatus(KILN_STATUS_INTERNAL,
                      strFormat("cannot read this process's CPUs: %s",
                                std::strerror(errno)));
  auto bad = [&](const std::string &why) {
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      strFormat("cpu list '%s': %s", text, why.c_str()));
  };
  // One number below CPU_SETSIZE at `p`, which moves past it.
  auto number = [&](const char *&p, int &value) {
    if (*p < '0' || *p > '9')
      return false;
    long v = 0;
    while (*p >= '0' && *p <= '9') {
      v = v * 10 + (*p++ - '0');
      if (v >= CPU_SETSIZE)
        return false;
    }
    value = int(v);
    return true;
  };
  const char *p = text;
  if (!*p)
    return bad("is empty");
  while (true) {
    int first = 0, last = 0;
    if (!number(p, first))
      return bad(strFormat("expected a CPU number below %d at offset %zu "
                           "(write CPUs as 0-3,8)",
                           CPU_SETSIZE, size_t(p - text)));
    last = first;
    if (*p == '-') {
      const char *end = ++p;
      if (!number(p, last) || last < first)
        return bad(strFormat("expected the end of a range (at least %d) at "
                             "offset %zu",
                             first, size_t(end - text)));
    }
    for (int cpu = first; cpu <= last; ++cpu) {
      if (!CPU_ISSET(cpu, &allowed))
        return bad(strFormat("CPU %d is not one this process may run on "
                             "(it may run on %s)",
                             cpu, formatCpuList(allowed).c_str()));
      CPU_SET(cpu, &out);
    }
    if (!*p)
      return nullptr;
    if (*p != ',')
      return bad(strFormat("unexpected '%c' at offset %zu", *p,
                           size_t(p - text)));
    ++p;
  }
}

void ThreadPool::pinCurrentThread() const {
  if (pinned_)
    pthread_setaffinity_np(pthread_self(), sizeof(affinity_), &affinity_);
}

kiln_status_t ThreadPool::create(unsigned threadCount,
                                 std::unique_ptr<ThreadPool> &out,
                                 const cpu_set_t *affinity) {
  if (threadCount == 0)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "thread count must be at least 1");
  std::unique_ptr<ThreadPool> pool(new ThreadPool());
  CPU_ZERO(&pool->affinity_);
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  if (affinity) {
    pool->pinned_ = true;
    pool->affinity_ = *affinity;
    pthread_attr_setaffinity_np(&attributes, sizeof(*affinity), affinity);
  }
  struct AttributesGuard {
    pthread_attr_t &a;
    ~AttributesGuard() { pthread_attr_destroy(&a); }
  } guard{attributes};
  pool->workers_.reserve(threadCount - 1);
  for (unsigned i = 1; i < threadCount; ++i) {
    pthread_t thread;
    int error = pthread_create(&thread, &attributes, &workerEntry, pool.get());
    if (error != 0)
      return makeStatus(KILN_STATUS_INTERNAL,
                        strFormat("cannot start worker thread %u of %u: %s",
                                  i, threadCount - 1, std::strerror(error)));
    pool->workers_.push_back(thread);
  }
  out = std::move(pool);
  return nullptr;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(sleepMutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (pthread_t thread : workers_)
    pthread_join(thread, nullptr);
}

void *ThreadPool::workerEntry(void *pool) {
  static_cast<ThreadPool *>(pool)->workerLoop();
  return nullptr;
}

uint64_t ThreadPool::waitForJob(uint64_t seen) {
  auto start = std::chrono::steady_clock::now();
  for (unsigned spin = 1;; ++spin) {
    uint64_t sequence = jobSequence_.load(std::memory_order_acquire);
    if (sequence != seen || stop_.load(std::memory_order_relaxed))
      return sequence;
    cpuRelax();
    if (spin % 64 == 0 && std::chrono::steady_clock::now() - start > kSpinTime)
      break;
  }
  std::unique_lock<std::mutex> lock(sleepMutex_);
  ++sleepers_;
  wake_.wait(lock, [&] {
    return jobSequence_.load(std::memory_order_relaxed) != seen ||
           stop_.load(std::memory_order_relaxed);
  });
  --sleepers_;
  return jobSequence_.load(std::memory_order_relaxed);
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    seen = waitForJob(seen);
    if (stop_.load())
      return;
    work(/*fromBack=*/true);
  }
}

namespace {
// state_ layout: generation << 40 | front << 20 | back: the items not yet
// claimed are [front, back).
constexpr unsigned kFieldBits = 20;
constexpr uint64_t kFieldMask = (uint64_t(1) << kFieldBits) - 1;
constexpr uint64_t kGenerationMask = (uint64_t(1) << 24) - 1;
// Items per job; larger ranges run as several jobs.
constexpr uint64_t kMaxJobItems = kFieldMask;

uint64_t packState(uint64_t generation, uint64_t front, uint64_t back) {
  return generation << (2 * kFieldBits) | front << kFieldBits | back;
}
} // namespace

void ThreadPool::work(bool fromBack) {
  const uint64_t threads = threadCount();
  for (;;) {
    uint64_t state = state_.load(std::memory_order_acquire);
    uint64_t back = state & kFieldMask;
    uint64_t front = (state >> kFieldBits) & kFieldMask;
    if (front >= back)
      return; // all claimed (or no job yet)
    // Several chunks per thread balance uneven workgroups; chunks of one
    // workgroup when there are few. The submitting thread claims from the
    // front and the workers from the back, so that with two threads each
    // keeps its half of the workgroups from one dispatch to the next (the
    // rows a layer wrote stay in the cache of the core that reads them in
    // the next layer), meeting wherever the work balances.
    uint64_t chunk = count_.load(std::memory_order_relaxed) / (threads * 4);
    chunk = chunk ? chunk : 1;
    chunk = back - front < chunk ? back - front : chunk;
    uint64_t begin = fromBack ? back - chunk : front;
    uint64_t end = begin + chunk;
    uint64_t claimed = fromBack ? packState(state >> (2 * kFieldBits), front, begin)
                                : packState(state >> (2 * kFieldBits), end, back);
    if (!state_.compare_exchange_weak(state, claimed,
                                      std::memory_order_acq_rel,
                                      std::memory_order_relaxed))
      continue;
    // Items [begin, end) are ours, so the job cannot finish before we
    // report them done: its fields are stable.
    uint64_t base = base_.load(std::memory_order_relaxed);
    fn_.load(std::memory_order_relaxed)(
        context_.load(std::memory_order_relaxed), base + begin, base + end);
    done_.fetch_add(end - begin, std::memory_order_release);
  }
}

void ThreadPool::runJob(uint64_t base, uint64_t count, ChunkFn fn,
                        void *context) {
  fn_.store(fn, std::memory_order_relaxed);
  context_.store(context, std::memory_order_relaxed);
  base_.store(base, std::memory_order_relaxed);
  count_.store(count, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  generation_ = (generation_ + 1) & kGenerationMask;
  state_.store(packState(generation_, 0, count), std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(sleepMutex_);
    jobSequence_.fetch_add(1, std::memory_order_release);
    if (sleepers_ != 0)
      wake_.notify_all();
  }
  work(/*fromBack=*/false);
  // Every item is claimed; wait for the threads still running theirs.
  for (unsigned spin = 1; done_.load(std::memory_order_acquire) != count;
       ++spin) {
    cpuRelax();
    if (spin % 1024 == 0)
      std::this_thread::yield();
  }
}

void ThreadPool::parallelFor(uint64_t count, ChunkFn fn, void *context) {
  if (count == 0)
    return;
  std::lock_guard<std::mutex> submit(submitMutex_);
  if (workers_.empty() || count == 1) {
    fn(context, 0, count);
    return;
  }
  for (uint64_t base = 0; base < count; base += kMaxJobItems)
    runJob(base, count - base < kMaxJobItems ? count - base : kMaxJobItems,
           fn, context);
}
