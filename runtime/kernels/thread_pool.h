#pragma once
// ThreadPool: a fixed set of worker threads for data-parallel loops.
//
// Decode runs hundreds of small matrix products per token, so a ParallelFor
// must cost microseconds, not a thread start: the workers live as long as the
// pool, spin briefly (with a pause instruction) after each job waiting for the
// next one, and then sleep on a condition variable. The calling thread takes
// part in every job.
//
// Work is split into chunks that threads claim one at a time from a shared
// counter, so a thread that the OS deschedules (the machine is shared) delays
// the job by at most the chunk it holds. A job is finished when every chunk is
// done; the caller does not wait for idle workers to wake up.
//
// Thread safety: one ParallelFor at a time per pool. A ParallelFor called while
// another is running (from another thread, or from inside a job) runs its loop
// on the calling thread instead of deadlocking. Functions passed in must not
// throw (Strata does not use exceptions).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace strata {

// A non-owning reference to a callable void(int64_t begin, int64_t end): the
// cheap alternative to std::function for a call that does not outlive the
// callable.
class RangeFn {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFn>>>
  RangeFn(F&& f)  // NOLINT: implicit by design, like std::function
      : obj_(const_cast<void*>(static_cast<const void*>(&f))),
        call_([](void* obj, int64_t begin, int64_t end) { (*static_cast<std::remove_reference_t<F>*>(obj))(begin, end); }) {}
  void operator()(int64_t begin, int64_t end) const { call_(obj_, begin, end); }

 private:
  void* obj_;
  void (*call_)(void*, int64_t, int64_t);
};

// Logical CPUs this process may run on (sched_getaffinity), at least 1.
int HardwareThreads();

class ThreadPool {
 public:
  // `threads` counts the caller: 1 means no worker threads. 0 or less means
  // HardwareThreads().
  explicit ThreadPool(int threads = 0);
  // Joins the workers. REQUIRES: no ParallelFor is running.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint ranges covering [0, n), using all
  // threads, and returns when all calls have returned. Ranges hold at least
  // `min_chunk` indices (except the last); there are at most ~4 per thread.
  void ParallelFor(int64_t n, RangeFn fn, int64_t min_chunk = 1);

  // Like ParallelFor with exactly one index per chunk: fn(i, i + 1) for every
  // i < tasks. For callers that size their own tasks (matrix tiles).
  void RunTasks(int64_t tasks, RangeFn fn);

  // Nanoseconds the calling thread has spent, after running its own chunks,
  // waiting for chunks other threads claimed (load imbalance plus wake-up
  // latency): the synchronization share of a run, read by --bench.
  uint64_t caller_wait_ns() const { return wait_ns_.load(std::memory_order_relaxed); }

 private:
  // The job being run. Written by the caller before it publishes the job
  // (release store of claim_), read by a worker only after it has claimed a
  // chunk of this job, which the caller waits for before changing anything.
  struct Job {
    const RangeFn* fn = nullptr;
    int64_t n = 0;
    int64_t chunk = 1;  // indices per chunk
  };

  void Run(int64_t n, int64_t chunk, RangeFn fn);
  void WorkerLoop(uint32_t seen);
  // Claims and runs chunks of job `tag` until none are left.
  void RunChunks(uint64_t tag);

  std::vector<std::thread> workers_;
  Job job_;
  // Chunk claim word: bits 40-63 job tag, 20-39 chunk count, 0-19 next chunk.
  std::atomic<uint64_t> claim_{0};
  std::atomic<uint64_t> wait_ns_{0};
  std::atomic<int64_t> chunks_done_{0};
  std::atomic<uint32_t> generation_{0};  // bumped to wake workers for a job
  std::atomic<bool> stop_{false};
  std::atomic<bool> busy_{false};        // a ParallelFor is running
  uint64_t next_tag_ = 0;

  std::mutex sleep_mu_;
  std::condition_variable sleep_cv_;
  std::atomic<int> sleepers_{0};
};

}  // namespace strata
