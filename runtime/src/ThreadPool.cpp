//===- ThreadPool.cpp - Workgroup thread pool for the cpu device ----------===//

#include "ThreadPool.h"

#include "Status.h"

#include <chrono>
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

kiln_status_t ThreadPool::create(unsigned threadCount,
                                 std::unique_ptr<ThreadPool> &out) {
  if (threadCount == 0)
    return makeStatus(KILN_STATUS_INVALID_ARGUMENT,
                      "thread count must be at least 1");
  std::unique_ptr<ThreadPool> pool(new ThreadPool());
  pool->workers_.reserve(threadCount - 1);
  for (unsigned i = 1; i < threadCount; ++i) {
    pthread_t thread;
    int error = pthread_create(&thread, nullptr, &workerEntry, pool.get());
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
