//===- ThreadPool.h - Workgroup thread pool for the cpu device --*- C++ -*-===//
//
// A fixed set of worker threads plus the calling thread run `parallelFor`
// jobs: the range [0, count) is cut into chunks that threads claim with an
// atomic counter. Between jobs workers spin briefly (dispatches of one run
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
#include <vector>

namespace kiln::rt {

class ThreadPool {
public:
  /// Runs items [begin, end) of a job.
  using ChunkFn = void (*)(void *context, uint64_t begin, uint64_t end);

  /// A pool of `threadCount` threads in total: the caller of parallelFor and
  /// `threadCount - 1` workers started here.
  static kiln_status_t create(unsigned threadCount,
                              std::unique_ptr<ThreadPool> &out);
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

private:
  ThreadPool() = default;
  static void *workerEntry(void *pool);
  void workerLoop();
  uint64_t waitForJob(uint64_t seen);
  void runChunks();

  std::vector<pthread_t> workers_;
  std::mutex submitMutex_; // one job at a time

  // Job publication. A worker joins a job only between entering (inside_++)
  // and leaving (inside_--) and only while open_ is set; the caller closes
  // the job and waits for inside_ to drop to zero before returning, so job
  // fields are never read after parallelFor returns.
  std::mutex sleepMutex_;
  std::condition_variable wake_;
  unsigned sleepers_ = 0;                // guarded by sleepMutex_
  std::atomic<uint64_t> jobSequence_{0}; // bumped (under sleepMutex_) per job
  std::atomic<bool> open_{false};
  std::atomic<unsigned> inside_{0};
  std::atomic<bool> stop_{false};

  // The current job; written only while no worker is inside.
  ChunkFn fn_ = nullptr;
  void *context_ = nullptr;
  uint64_t count_ = 0;
  uint64_t chunk_ = 1;
  alignas(64) std::atomic<uint64_t> next_{0};
};

} // namespace kiln::rt

#endif // KILN_RUNTIME_SRC_THREADPOOL_H
