#include "runtime/kernels/thread_pool.h"

#include <algorithm>
#include <chrono>

#include "runtime/base/platform.h"
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace strata {
namespace {

constexpr int kTagShift = 40;
constexpr int kCountShift = 20;
constexpr uint64_t kFieldMask = (uint64_t{1} << 20) - 1;  // 20-bit count / index
constexpr int64_t kMaxChunks = static_cast<int64_t>(kFieldMask);
constexpr uint64_t kTagMask = (uint64_t{1} << 24) - 1;

// Spin iterations before a worker sleeps, and before a waiting caller yields.
// A pause is ~40-140 cycles, so ~4000 pauses is some tens of microseconds:
// longer than the gap between the matrix products of one decode step.
constexpr int kWorkerSpins = 4096;
constexpr int kCallerSpins = 256;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

thread_local bool t_in_job = false;  // this thread is running a chunk

}  // namespace

int HardwareThreads() { return CpuCount(); }

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = HardwareThreads();
  workers_.reserve(static_cast<size_t>(threads - 1));
  // Workers start from the generation at construction: a worker that the OS
  // starts only after jobs (or the destructor) bumped it still sees a change.
  const uint32_t start = generation_.load();
  // Worker i runs in the processor group PlaceThreadInProcessorGroup gives
  // (Windows with more than 64 logical processors; elsewhere nothing); the
  // caller, index 0, stays where it is.
  for (int i = 1; i < threads; ++i)
    workers_.emplace_back([this, start, i, threads] {
      PlaceThreadInProcessorGroup(i, threads);
      WorkerLoop(start);
    });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  generation_.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(sleep_mu_);
  }
  sleep_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::ParallelFor(int64_t n, RangeFn fn, int64_t min_chunk) {
  if (n <= 0) return;
  min_chunk = std::max<int64_t>(min_chunk, 1);
  const int64_t max_chunks = 4 * static_cast<int64_t>(threads());
  const int64_t chunk = std::max(min_chunk, (n + max_chunks - 1) / max_chunks);
  Run(n, chunk, fn);
}

void ThreadPool::RunTasks(int64_t tasks, RangeFn fn) {
  if (tasks <= 0) return;
  Run(tasks, 1, fn);
}

void ThreadPool::Run(int64_t n, int64_t chunk, RangeFn fn) {
  int64_t chunks = (n + chunk - 1) / chunk;
  if (chunks > kMaxChunks) {  // keep the count within the claim word
    chunk = (n + kMaxChunks - 1) / kMaxChunks;
    chunks = (n + chunk - 1) / chunk;
  }
  bool expected = false;
  if (workers_.empty() || chunks == 1 || t_in_job || !busy_.compare_exchange_strong(expected, true)) {
    fn(0, n);  // serial: one chunk, no workers, nested, or the pool is busy
    return;
  }

  job_ = Job{&fn, n, chunk};
  const uint64_t tag = (++next_tag_) & kTagMask;
  chunks_done_.store(0, std::memory_order_relaxed);
  // Publishes job_ to any thread that claims a chunk with this tag.
  claim_.store((tag << kTagShift) | (static_cast<uint64_t>(chunks) << kCountShift), std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  // A worker going to sleep registers in sleepers_ and then re-checks
  // generation_ (both seq_cst), so either it sees the new generation or we see
  // it registered and wake it.
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(sleep_mu_); }
    sleep_cv_.notify_all();
  }

  RunChunks(tag);
  // Wait for chunks other threads claimed.
  if (chunks_done_.load(std::memory_order_acquire) < chunks) {
    const auto wait_start = std::chrono::steady_clock::now();
    for (int spins = 0; chunks_done_.load(std::memory_order_acquire) < chunks; ++spins) {
      if (spins < kCallerSpins) {
        CpuRelax();
      } else {
        std::this_thread::yield();
      }
    }
    wait_ns_.fetch_add(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                 std::chrono::steady_clock::now() - wait_start)
                                                 .count()),
                       std::memory_order_relaxed);
  }
  busy_.store(false, std::memory_order_release);
}

void ThreadPool::RunChunks(uint64_t tag) {
  uint64_t cur = claim_.load(std::memory_order_acquire);
  while (true) {
    if ((cur >> kTagShift) != tag) return;  // a different job now
    const uint64_t next = cur & kFieldMask;
    const uint64_t count = (cur >> kCountShift) & kFieldMask;
    if (next >= count) return;  // all chunks claimed
    if (!claim_.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
    // Claimed chunk `next` of job `tag`: job_ is valid until we report it done.
    const int64_t begin = static_cast<int64_t>(next) * job_.chunk;
    const int64_t end = std::min(job_.n, begin + job_.chunk);
    t_in_job = true;
    (*job_.fn)(begin, end);
    t_in_job = false;
    chunks_done_.fetch_add(1, std::memory_order_release);
    cur = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::WorkerLoop(uint32_t seen) {
  while (true) {
    // Wait for a new generation: spin, then sleep.
    uint32_t gen = generation_.load(std::memory_order_acquire);
    for (int spins = 0; gen == seen && spins < kWorkerSpins; ++spins) {
      CpuRelax();
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(sleep_mu_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      while ((gen = generation_.load(std::memory_order_seq_cst)) == seen) sleep_cv_.wait(lock);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    seen = gen;
    if (stop_.load(std::memory_order_acquire)) return;
    RunChunks(claim_.load(std::memory_order_acquire) >> kTagShift);
  }
}

}  // namespace strata
