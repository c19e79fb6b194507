//===- ThreadPoolTest.cpp - The cpu device's workgroup pool ---------------===//

#include "ThreadPool.h"

#include <atomic>
#include <gtest/gtest.h>
#include <memory>
#include <set>
#include <thread>
#include <vector>

using namespace kiln::rt;

namespace {

std::unique_ptr<ThreadPool> makePool(unsigned threads) {
  std::unique_ptr<ThreadPool> pool;
  kiln_status_t status = ThreadPool::create(threads, pool);
  EXPECT_EQ(status, nullptr) << kiln_status_message(status);
  kiln_status_free(status);
  return pool;
}

struct Marks {
  std::vector<std::atomic<int>> counts;
  std::atomic<uint64_t> calls{0};
  explicit Marks(uint64_t n) : counts(n) {}
};

void mark(void *context, uint64_t begin, uint64_t end) {
  auto *marks = static_cast<Marks *>(context);
  EXPECT_LT(begin, end);
  EXPECT_LE(end, marks->counts.size());
  for (uint64_t i = begin; i < end; ++i)
    marks->counts[i].fetch_add(1, std::memory_order_relaxed);
  marks->calls.fetch_add(1);
}

} // namespace

TEST(ThreadPool, EveryItemExactlyOnce) {
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    std::unique_ptr<ThreadPool> pool = makePool(threads);
    ASSERT_TRUE(pool);
    EXPECT_EQ(pool->threadCount(), threads);
    for (uint64_t count : {0ull, 1ull, 2ull, 3ull, 7ull, 64ull, 1000ull,
                           100003ull}) {
      Marks marks(count);
      pool->parallelFor(count, mark, &marks);
      for (uint64_t i = 0; i < count; ++i)
        ASSERT_EQ(marks.counts[i].load(), 1)
            << "threads " << threads << " count " << count << " item " << i;
    }
  }
}

TEST(ThreadPool, UsesSeveralThreads) {
  std::unique_ptr<ThreadPool> pool = makePool(4);
  struct Seen {
    std::mutex mutex;
    std::set<std::thread::id> ids;
  } seen;
  // Slow items give the workers time to join.
  for (int attempt = 0; attempt < 20 && seen.ids.size() < 2; ++attempt)
    pool->parallelFor(
        64,
        [](void *context, uint64_t, uint64_t) {
          auto *s = static_cast<Seen *>(context);
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          std::lock_guard<std::mutex> lock(s->mutex);
          s->ids.insert(std::this_thread::get_id());
        },
        &seen);
  EXPECT_GE(seen.ids.size(), 2u);
}

TEST(ThreadPool, ManyJobsInARow) {
  std::unique_ptr<ThreadPool> pool = makePool(3);
  std::atomic<uint64_t> sum{0};
  for (uint64_t job = 0; job < 20000; ++job) {
    uint64_t count = job % 17;
    pool->parallelFor(
        count,
        [](void *context, uint64_t begin, uint64_t end) {
          static_cast<std::atomic<uint64_t> *>(context)->fetch_add(end - begin);
        },
        &sum);
    ASSERT_EQ(sum.exchange(0), count) << "job " << job;
  }
}

TEST(ThreadPool, GrowingJobsBackToBack) {
  // A small job followed by a larger one: a worker that still holds the
  // small job's state must not claim items of the larger one (this once
  // ran items twice and hung the caller).
  std::unique_ptr<ThreadPool> pool = makePool(3);
  Marks small(3), large(50);
  for (int job = 0; job < 50000; ++job) {
    Marks &marks = job % 2 ? large : small;
    for (auto &c : marks.counts)
      c.store(0, std::memory_order_relaxed);
    pool->parallelFor(marks.counts.size(), mark, &marks);
    for (auto &c : marks.counts)
      ASSERT_EQ(c.load(), 1) << "job " << job;
  }
}

TEST(ThreadPool, RangesLargerThanOneJob) {
  std::unique_ptr<ThreadPool> pool = makePool(2);
  const uint64_t count = (uint64_t(1) << 21) + 12345; // three jobs inside
  Marks marks(count);
  pool->parallelFor(count, mark, &marks);
  for (uint64_t i = 0; i < count; ++i)
    ASSERT_EQ(marks.counts[i].load(), 1) << i;
}

TEST(ThreadPool, JobsFromSeveralThreadsAreSerialized) {
  std::unique_ptr<ThreadPool> pool = makePool(4);
  std::atomic<int> failures{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < 4; ++t)
    submitters.emplace_back([&] {
      for (int job = 0; job < 500; ++job) {
        Marks marks(97);
        pool->parallelFor(97, mark, &marks);
        for (auto &c : marks.counts)
          if (c.load() != 1)
            ++failures;
      }
    });
  for (std::thread &t : submitters)
    t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadPool, IdleWorkersSleepAndWakeUp) {
  std::unique_ptr<ThreadPool> pool = makePool(3);
  for (int round = 0; round < 3; ++round) {
    // Longer than the spin time: workers are asleep on the next job.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    Marks marks(1000);
    pool->parallelFor(1000, mark, &marks);
    for (auto &c : marks.counts)
      ASSERT_EQ(c.load(), 1);
  }
}

TEST(ThreadPool, CreateAndDestroyQuickly) {
  for (int i = 0; i < 50; ++i) {
    std::unique_ptr<ThreadPool> pool = makePool(1 + i % 5);
    if (i % 2) {
      Marks marks(10);
      pool->parallelFor(10, mark, &marks);
    }
  }
}

TEST(ThreadPool, ZeroThreadsIsAnError) {
  std::unique_ptr<ThreadPool> pool;
  kiln_status_t status = ThreadPool::create(0, pool);
  EXPECT_STREQ(kiln_status_message(status), "thread count must be at least 1");
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INVALID_ARGUMENT);
  kiln_status_free(status);
  EXPECT_FALSE(pool);
}

TEST(ThreadPool, CpuLists) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int first = 0;
  while (!CPU_ISSET(first, &allowed))
    ++first;
  cpu_set_t set;
  std::string one = std::to_string(first);
  kiln_status_t status = ThreadPool::parseCpuList(one.c_str(), set);
  ASSERT_EQ(status, nullptr) << kiln_status_message(status);
  EXPECT_EQ(CPU_COUNT(&set), 1);
  EXPECT_TRUE(CPU_ISSET(first, &set));
  EXPECT_EQ(ThreadPool::formatCpuList(set), one);

  CPU_ZERO(&set);
  for (int cpu : {0, 1, 2, 3, 8, 10, 11})
    CPU_SET(cpu, &set);
  EXPECT_EQ(ThreadPool::formatCpuList(set), "0-3,8,10-11");

  for (const char *bad : {"", ",", "1-", "-1", "3-1", "a", "0,,1", "1024", "0 1", "1023"}) {
    kiln_status_t s = ThreadPool::parseCpuList(bad, set);
    EXPECT_EQ(kiln_status_code(s), KILN_STATUS_INVALID_ARGUMENT) << "'" << bad << "'";
    if (s) {
      EXPECT_EQ(std::string(kiln_status_message(s)).rfind(std::string("cpu list '") + bad + "'", 0), 0u)
          << kiln_status_message(s);
    }
    kiln_status_free(s);
  }
}

TEST(ThreadPool, PinnedWorkersRunOnTheirCpus) {
  cpu_set_t allowed;
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  int last = CPU_SETSIZE - 1;
  while (!CPU_ISSET(last, &allowed))
    --last;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(last, &one);
  std::unique_ptr<ThreadPool> pool;
  ASSERT_EQ(ThreadPool::create(3, pool, &one), nullptr);
  // Every worker's affinity is the one CPU; the caller's is untouched.
  struct Seen {
    std::thread::id caller;
    std::atomic<int> workerChunks{0}, wrongAffinity{0};
  } seen;
  seen.caller = std::this_thread::get_id();
  // Slow items give the workers time to join.
  for (int attempt = 0; attempt < 20 && seen.workerChunks == 0; ++attempt)
    pool->parallelFor(
        64,
        [](void *context, uint64_t, uint64_t) {
          auto *s = static_cast<Seen *>(context);
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          if (std::this_thread::get_id() == s->caller)
            return;
          ++s->workerChunks;
          cpu_set_t mine;
          pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine);
          if (CPU_COUNT(&mine) != 1 || !CPU_ISSET(sched_getcpu(), &mine))
            ++s->wrongAffinity;
        },
        &seen);
  EXPECT_GT(seen.workerChunks, 0);
  EXPECT_EQ(seen.wrongAffinity, 0);
  cpu_set_t callerSet;
  pthread_getaffinity_np(pthread_self(), sizeof(callerSet), &callerSet);
  EXPECT_EQ(CPU_COUNT(&callerSet), CPU_COUNT(&allowed));
  // And pinCurrentThread gives a thread the pool's CPUs.
  std::thread([&] {
    pool->pinCurrentThread();
    cpu_set_t mine;
    pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine);
    EXPECT_TRUE(CPU_EQUAL(&mine, &one));
  }).join();
}
