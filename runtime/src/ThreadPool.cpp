//===- ThreadPool.cpp - Workgroup thread pool for the cpu device ----------===//

#include "runtime/src/ThreadPool.h"

#include "runtime/src/Status.h"

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
    uint64_t sequence = waitForJob(seen);
    if (stop_.load())
      return;
    inside_.fetch_add(1); // seq_cst: pairs with the caller's close below
    if (open_.load())
      runChunks();
    inside_.fetch_sub(1);
    seen = sequence;
  }
}

void ThreadPool::runChunks() {
  const uint64_t count = count_, chunk = chunk_;
  for (;;) {
    uint64_t begin = next_.fetch_add(chunk, std::memory_order_relaxed);
    if (begin >= count)
      return;
    uint64_t end = count - begin < chunk ? count : begin + chunk;
    fn_(context_, begin, end);
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
  // Several chunks per thread balance uneven workgroups; chunks of one
  // workgroup when there are few.
  uint64_t chunk = count / (uint64_t(threadCount()) * 4);
  fn_ = fn;
  context_ = context;
  count_ = count;
  chunk_ = chunk ? chunk : 1;
  next_.store(0, std::memory_order_relaxed);
  open_.store(true); // seq_cst, also releases the job fields
  {
    std::lock_guard<std::mutex> lock(sleepMutex_);
    jobSequence_.fetch_add(1, std::memory_order_release);
    if (sleepers_ != 0)
      wake_.notify_all();
  }
  runChunks();
  // Every chunk is claimed; close the job and wait for the threads still
  // finishing theirs. A worker that enters after the close sees open_ unset.
  open_.store(false);
  for (unsigned spin = 1; inside_.load() != 0; ++spin) {
    cpuRelax();
    if (spin % 1024 == 0)
      std::this_thread::yield();
  }
}
