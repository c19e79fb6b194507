//===- ThreadPool.h - Workgroup thread pool for the cpu device --*- C++ -*-===//
//
// A fixed set of worker threads plus the calling thread run `parallelFor`
// jobs: the range [0, count) is cut into chunks that threads claim with a
// compare-and-swap on one atomic word, the caller from the front and the
// workers from the back. Between jobs workers spin briefly (dispatches of one run
// follow each other within microseconds) and then sleep on a condition
// variable, so an idle pool costs nothing.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_SRC_THREADPOOL_H
#define KILN_RUNTIME_SRC_THREADPOOL_H

#include "kiln/runtime.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <string>
#include <vector>

namespace kiln::rt {

class ThreadPool {
public:
  /// Runs items [begin, end) of a job.
  using ChunkFn = void (*)(void *context, uint64_t begin, uint64_t end);

  /// A pool of `threadCount` threads in total: the caller of parallelFor and
  /// `threadCount - 1` workers started here.
  /// With `affinity`, every worker is pinned to those CPUs.
  static kiln_status_t create(unsigned threadCount,
                              std::unique_ptr<ThreadPool> &out,
                              const cpu_set_t *affinity = nullptr);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  unsigned threadCount() const { return unsigned(workers_.size()) + 1; }

  /// Calls `fn` on chunks covering [0, count) exactly once, on the calling
  /// thread and the workers, and returns when all chunks are done. Jobs from
  /// several threads are serialized.
  void parallelFor(uint64_t count, ChunkFn fn, void *context);

  /// The number of threads this process may run on (at least 1).
  static unsigned availableCpus();

  /// Parses a CPU list in Linux's cpuset format ("0-3,8") into `out`;
  /// every CPU must be one this process may run on.
  static kiln_status_t parseCpuList(const char *text, cpu_set_t &out);
  /// "0-3,8".
  static std::string formatCpuList(const cpu_set_t &set);

  /// Pins the calling thread to the pool's CPUs, when it was created with
  /// an affinity (for the threads that drive this pool's jobs).
  void pinCurrentThread() const;

private:
  ThreadPool() = default;
  static void *workerEntry(void *pool);
  void workerLoop();
  uint64_t waitForJob(uint64_t seen);
  void runJob(uint64_t base, uint64_t count, ChunkFn fn, void *context);
  void work(bool fromBack);

  std::vector<pthread_t> workers_;
  bool pinned_ = false;
  cpu_set_t affinity_;
  std::mutex submitMutex_; // one job at a time

  // Waking workers: jobSequence_ changes (under sleepMutex_) with every job.
  std::mutex sleepMutex_;
  std::condition_variable wake_;
  unsigned sleepers_ = 0; // guarded by sleepMutex_
  std::atomic<uint64_t> jobSequence_{0};
  std::atomic<bool> stop_{false};

  // The current job. Threads claim chunks by a compare-and-swap on state_,
  // one word holding the job's generation (24 bits) and the unclaimed items
  // [front, back) (20 bits each), so every claim decision comes
  // from one consistent snapshot and a finished job (front == back) can
  // never be claimed from again. A successful claim proves the job is still
  // running, so the fields read after it belong to that job (count_, read
  // before a claim to size the chunk, may be the next job's: then the
  // compare-and-swap fails, as the generation differs). The caller
  // waits for done_ to reach the count, never for threads that have not
  // claimed anything (a preempted idle worker costs nothing).
  alignas(64) std::atomic<uint64_t> state_{0};
  alignas(64) std::atomic<uint64_t> done_{0};
  std::atomic<ChunkFn> fn_{nullptr};
  std::atomic<void *> context_{nullptr};
  std::atomic<uint64_t> base_{0};
  std::atomic<uint64_t> count_{0};
  uint64_t generation_ = 0; // written by the submitting thread only
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_THREADPOOL_H
