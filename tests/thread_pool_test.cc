#include "runtime/kernels/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace strata {
namespace {

// Every index in [0, n) is visited exactly once, for many n and chunk sizes.
TEST(ThreadPool, CoversEveryIndexOnce) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.threads(), 3);
  for (int64_t n : {0, 1, 2, 3, 7, 12, 13, 100, 1000, 4097}) {
    for (int64_t min_chunk : {1, 5, 64}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      pool.ParallelFor(
          n,
          [&](int64_t begin, int64_t end) {
            EXPECT_LT(begin, end);
            for (int64_t i = begin; i < end; ++i) seen[static_cast<size_t>(i)].fetch_add(1);
          },
          min_chunk);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[static_cast<size_t>(i)].load(), 1) << "n=" << n << " i=" << i;
    }
  }
}

// Decode issues hundreds of small jobs per token: many tiny ParallelFors in a
// row must all complete, with results visible to the caller afterwards.
TEST(ThreadPool, ManySmallJobs) {
  ThreadPool pool(4);
  std::vector<int64_t> out(64);
  int64_t total = 0;
  for (int job = 0; job < 20000; ++job) {
    pool.RunTasks(static_cast<int64_t>(out.size()), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) out[static_cast<size_t>(i)] = i * job;  // plain writes, disjoint
    });
    for (int64_t v : out) total += v;
  }
  int64_t want = 0;
  for (int job = 0; job < 20000; ++job) want += job * (63 * 64 / 2);
  EXPECT_EQ(total, want);
}

// Workers fall asleep after a pause and wake up for the next job.
TEST(ThreadPool, WakesAfterSleeping) {
  ThreadPool pool(3);
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::atomic<int64_t> sum{0};
    pool.ParallelFor(1000, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) sum += i;
    });
    EXPECT_EQ(sum.load(), 999 * 1000 / 2);
  }
}

// Several threads take part (when the machine has more than one CPU).
TEST(ThreadPool, UsesMoreThanOneThread) {
  if (HardwareThreads() < 2) GTEST_SKIP() << "one CPU";
  ThreadPool pool(2);
  std::atomic<int> distinct{0};
  for (int attempt = 0; attempt < 200 && distinct.load() < 2; ++attempt) {
    std::vector<std::thread::id> ids(8);
    pool.RunTasks(8, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        ids[static_cast<size_t>(i)] = std::this_thread::get_id();
        // Busy for 200 us: sleep_for may return at once where the timer is
        // coarse (MinGW's sleep_for under 1 ms), and then one thread could
        // take every task before another wakes.
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
        while (std::chrono::steady_clock::now() < until) {
        }
      }
    });
    int n = 1;
    for (size_t i = 1; i < ids.size(); ++i) n += ids[i] != ids[0] ? 1 : 0;
    if (n > 1) distinct = 2;
  }
  EXPECT_EQ(distinct.load(), 2);
}

// A ParallelFor inside a job runs inline instead of deadlocking.
// The caller's wait for chunks other threads run is counted (--bench's
// "waiting for the other threads"): two chunks meet at a barrier, so each
// runs on its own thread, and the worker's then takes 30 ms longer.
TEST(ThreadPool, CountsTheCallersWaitForOtherThreads) {
  ThreadPool pool(2);
  const std::thread::id caller = std::this_thread::get_id();
  const uint64_t before = pool.caller_wait_ns();
  std::atomic<int> arrived{0};
  bool met = true;
  pool.RunTasks(2, [&](int64_t, int64_t) {
    arrived.fetch_add(1);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (arrived.load() < 2)
      if (std::chrono::steady_clock::now() > give_up) {
        met = false;  // one thread ran both (the worker never woke)
        break;
      }
    if (std::this_thread::get_id() != caller) std::this_thread::sleep_for(std::chrono::milliseconds(30));
  });
  ASSERT_TRUE(met);
  EXPECT_GE(pool.caller_wait_ns() - before, 20'000'000u);  // most of the worker's extra 30 ms
  // A pool of one thread never waits.
  ThreadPool one(1);
  one.RunTasks(4, [](int64_t, int64_t) {});
  EXPECT_EQ(one.caller_wait_ns(), 0u);
}

TEST(ThreadPool, NestedCallsRunInline) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  pool.RunTasks(4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      pool.ParallelFor(10, [&](int64_t b2, int64_t e2) {
        for (int64_t j = b2; j < e2; ++j) sum += j;
      });
  });
  EXPECT_EQ(sum.load(), 4 * 45);
}

// Two threads calling one pool at once: one of them runs inline; both finish.
TEST(ThreadPool, ConcurrentCallersBothComplete) {
  ThreadPool pool(2);
  std::atomic<int64_t> a{0}, b{0};
  std::thread other([&] {
    for (int i = 0; i < 2000; ++i) pool.ParallelFor(16, [&](int64_t s, int64_t e) { a += e - s; });
  });
  for (int i = 0; i < 2000; ++i) pool.ParallelFor(16, [&](int64_t s, int64_t e) { b += e - s; });
  other.join();
  EXPECT_EQ(a.load(), 2000 * 16);
  EXPECT_EQ(b.load(), 2000 * 16);
}

TEST(ThreadPool, SingleThreadRunsInline) {
  ThreadPool pool(1);
  EXPECT_EQ(pool.threads(), 1);
  const std::thread::id me = std::this_thread::get_id();
  pool.ParallelFor(100, [&](int64_t, int64_t) { EXPECT_EQ(std::this_thread::get_id(), me); });
}

// Destruction while idle (spinning, sleeping, never used) joins cleanly.
TEST(ThreadPool, DestroyWhileIdle) {
  { ThreadPool never_used(4); }
  {
    ThreadPool just_used(4);
    just_used.ParallelFor(100, [](int64_t, int64_t) {});
  }
  {
    ThreadPool asleep(4);
    asleep.ParallelFor(100, [](int64_t, int64_t) {});
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  SUCCEED();
}

TEST(ThreadPool, DefaultSizeIsTheMachine) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.threads(), HardwareThreads());
  EXPECT_GE(HardwareThreads(), 1);
}

}  // namespace
}  // namespace strata
