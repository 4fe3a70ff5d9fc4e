#include "runtime/gpu/software/block_scheduler.h"

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

#include "runtime/base/checked_alloc.h"
#include "runtime/base/strings.h"
#include "runtime/gpu/software/fiber.h"

#if defined(__SANITIZE_ADDRESS__)
#define STRATA_SGPU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_SGPU_ASAN 1
#endif
#endif
#ifdef STRATA_SGPU_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace strata::sgpu {
namespace {

enum class Wait : uint8_t {
  kRunnable,  // runs in the next round
  kBarrier,   // at __syncthreads
  kWarp,      // at a warp operation
  kExited,    // returned from the kernel
  kFailed,    // found a refusal (shared memory); never resumed
};

struct GpuThread {
  std::unique_ptr<Fiber> fiber;
  BlockWorker* worker = nullptr;
  Dim idx;
  uint32_t linear = 0;
  Wait wait = Wait::kRunnable;
  // At a barrier or warp operation: where, and the operation's operands.
  SourcePlace site;
  WarpOp op = WarpOp::kSync;
  uint64_t value = 0;
  int arg = 0;
  uint64_t result = 0;
  uint32_t shared_index = 0;  // how many STRATA_SHARED it has declared in this block
  // Its kernel returned and its fiber waits in ThreadMain to run the same
  // thread of the launch's next block, without a fresh Start.
  bool parked = false;
};

// The k-th STRATA_SHARED of the block, as the first thread to reach it made it.
struct SharedDecl {
  size_t offset = 0;
  size_t bytes = 0;
  SourcePlace site;
  uint32_t thread = 0;
};

constexpr size_t kSharedAlign = 16;
size_t AlignUp(size_t v, size_t a) { return (v + a - 1) / a * a; }

// "attention.cu:120": the file's name without its folders, which are the
// build machine's.
std::string PlaceText(const SourcePlace& s) {
  std::string_view f = s.file;
  const size_t slash = f.find_last_of("/\\");
  if (slash != std::string_view::npos) f.remove_prefix(slash + 1);
  return StrFormat("%.*s:%u", static_cast<int>(f.size()), f.data(), s.line);
}

bool SamePlace(const SourcePlace& a, const SourcePlace& b) {
  return a.line == b.line && a.column == b.column && (a.file == b.file || std::strcmp(a.file, b.file) == 0);
}

const char* OpName(WarpOp op) {
  switch (op) {
    case WarpOp::kShflXor: return "WarpShflXor";
    case WarpOp::kShfl: return "WarpShfl";
    case WarpOp::kBallot: return "WarpBallot";
    case WarpOp::kSync: return "WarpSync";
    case WarpOp::kSumF32: return "WarpSum(float)";
    case WarpOp::kSumI32: return "WarpSum(int)";
    case WarpOp::kMaxF32: return "WarpMax";
    case WarpOp::kFmaxF32: return "WarpFmax";
    case WarpOp::kOrU32: return "WarpOr";
    case WarpOp::kArgMaxF32: return "WarpArgMax";
  }
  return "?";
}

bool IsReduction(WarpOp op) { return op >= WarpOp::kSumF32; }

// One step of a butterfly reduction (sgpu.h): lane value v, the value o it
// read from its partner. The loop's operations exactly.
template <WarpOp kOp>
uint64_t Combine(uint64_t v, uint64_t o) {
  const float vf = BitCast<float>(static_cast<uint32_t>(v));
  const float of = BitCast<float>(static_cast<uint32_t>(o));
  if constexpr (kOp == WarpOp::kSumF32) return BitCast<uint32_t>(vf + of);
  if constexpr (kOp == WarpOp::kSumI32) return static_cast<uint32_t>(v + o);
  if constexpr (kOp == WarpOp::kMaxF32) return of > vf ? o : v;
  if constexpr (kOp == WarpOp::kFmaxF32) return BitCast<uint32_t>(std::fmax(vf, of));
  if constexpr (kOp == WarpOp::kOrU32) return static_cast<uint32_t>(v | o);
  if constexpr (kOp == WarpOp::kArgMaxF32) {
    const auto vi = static_cast<int32_t>(static_cast<uint32_t>(v >> 32));
    const auto oi = static_cast<int32_t>(static_cast<uint32_t>(o >> 32));
    return of > vf || (of == vf && oi < vi) ? o : v;
  }
}

// The loop of xor shuffles over values v[0, lanes), stage by stage, from
// lane mask `from`. A lane that does not exist reads what a shuffle gives
// (kArgMaxF32: both of its shuffles).
template <WarpOp kOp>
void Butterfly(uint64_t* v, uint32_t lanes, int from, uint32_t warp_size) {
  const uint64_t missing = kOp == WarpOp::kArgMaxF32 ? ~uint64_t{0} : kMissingLaneValue;
  uint64_t next[64];
  for (int m = from; m > 0; m >>= 1) {
    const uint32_t bits = static_cast<uint32_t>(m) & (warp_size - 1);  // as a shuffle wraps it
    for (uint32_t i = 0; i < lanes; ++i) next[i] = Combine<kOp>(v[i], (i ^ bits) < lanes ? v[i ^ bits] : missing);
    std::memcpy(v, next, lanes * sizeof(uint64_t));
  }
}

std::string DimText(const Dim& d) { return StrFormat("(%u,%u,%u)", d.x, d.y, d.z); }

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "software GPU: %s\n", what);
  std::abort();
}

}  // namespace

// One host thread's share of a launch: its fibers (kept across blocks and
// launches), the block it runs and that block's shared memory.
class BlockWorker {
 public:
  explicit BlockWorker(uint32_t warp_size) : warp_size_(warp_size) {}

  // Runs blocks taken from `next` until there are none or `stop` is set.
  Status RunBlocks(const LaunchSpec& launch, std::atomic<uint64_t>& next, uint64_t blocks,
                   const std::atomic<bool>& stop);

  // --- for the kernel-facing functions below: the calling fiber's state ---
  GpuThread& current() { return *current_; }
  bool in_kernel() const { return current_ != nullptr; }
  const LaunchSpec& launch() const { return *launch_; }
  const Dim& block_idx() const { return block_idx_; }
  uint8_t* dynamic_shared() { return shared_.data(); }
  void* DeclareShared(size_t bytes, const SourcePlace& where);
  // The calling fiber waits (its state already set): control goes straight
  // to the next runnable thread of the round, or to the host at its end.
  void Yield();
  // Ends the calling fiber's part in the launch with `why`: the launch fails.
  [[noreturn]] void Fail(Status&& why);

 private:
  Status RunBlock(uint64_t linear_block, const std::atomic<bool>& stop);
  // The next thread of the round that can run, or nullptr at its end.
  GpuThread* NextRunnable();
  // Fibers and coordinates for the launch's n threads a block.
  Status PrepareThreads(uint32_t n);
  // After a round: completes warp operations, or opens the barrier, or
  // refuses. *done when every thread has exited.
  Status Resolve(uint32_t n, bool* done);
  void CompleteWarpOp(uint32_t lo, uint32_t hi);
  std::string Header() const;
  // "threads 17-255 reached __syncthreads at k.cc:120 while threads 0-16 exited"
  std::string DescribeThreads(uint32_t lo, uint32_t hi) const;

  static void ThreadMain(void* self);

  const uint32_t warp_size_;
  std::vector<GpuThread> threads_;
  AlignedBuffer shared_;
  std::vector<SharedDecl> decls_;
  size_t static_begin_ = 0;  // static shared memory follows the dynamic
  size_t static_end_ = 0;
  const LaunchSpec* launch_ = nullptr;
  Dim block_idx_;
  GpuThread* current_ = nullptr;
  Status failure_;
  // The round in progress: threads [0, round_n_) in ascending or descending
  // order, the next to look at being the round_pos_-th of them.
  uint32_t round_n_ = 0;
  uint32_t round_pos_ = 0;
  bool ascending_ = true;
};

namespace {
// The worker of the host thread running the calling fiber.
thread_local BlockWorker* t_worker = nullptr;

BlockWorker& InKernel(const char* what) {
  if (!t_worker || !t_worker->in_kernel()) {
    std::fprintf(stderr, "software GPU: %s used outside a kernel\n", what);
    std::abort();
  }
  return *t_worker;
}
}  // namespace

void BlockWorker::ThreadMain(void* self) {
  GpuThread* t = static_cast<GpuThread*>(self);
  BlockWorker* w = t->worker;
  for (;;) {
    const LaunchSpec& l = *w->launch_;
    l.kernel->entry(l.args);
    t->wait = Wait::kExited;
    t->parked = true;
    w->Yield();
    // Resumed by RunBlock for the next block (it cleared `parked`), or by
    // RunBlocks at the launch's end to finish.
    if (t->parked) return;
  }
}

Status BlockWorker::PrepareThreads(uint32_t n) {
  if (threads_.size() < n) threads_.resize(n);
  const Dim& block = launch_->block;
  for (uint32_t i = 0; i < n; ++i) {
    GpuThread& t = threads_[i];
    if (!t.fiber) {
      auto f = Fiber::Create();
      if (!f.ok()) return f.status().WithContext("software GPU: fibers for a block of " + std::to_string(n));
      t.fiber = std::move(*f);
    }
    t.worker = this;
    t.idx = {i % block.x, i / block.x % block.y, i / (block.x * block.y)};
    t.linear = i;
  }
  if (shared_.size() == 0) {
    STRATA_ASSIGN_OR_RETURN(shared_,
                            AlignedBuffer::Allocate(kSharedPerBlockOptIn + kSharedAlign, "software GPU shared memory"));
  }
  return Status::Ok();
}

Status BlockWorker::RunBlocks(const LaunchSpec& launch, std::atomic<uint64_t>& next, uint64_t blocks,
                              const std::atomic<bool>& stop) {
  FiberHostThread host;
  STRATA_RETURN_IF_ERROR(host.ok());
  launch_ = &launch;
  t_worker = this;
  // The same threads for every block of the launch.
  Status status = PrepareThreads(launch.block.x * launch.block.y * launch.block.z);
  while (status.ok() && !stop.load(std::memory_order_relaxed)) {
    const uint64_t b = next.fetch_add(1, std::memory_order_relaxed);
    if (b >= blocks) break;
    status = RunBlock(b, stop);
  }
  // Parked fibers finish (the next launch may run on another host thread,
  // and a fiber must resume on the one it left: fiber.h). Abandoned fibers
  // (a refusal) stay suspended: Start rewinds them next time.
  for (GpuThread& t : threads_) {
    if (!t.parked) continue;
    current_ = &t;
    round_pos_ = round_n_;  // nothing to hand on to
    t.fiber->Resume();
    t.parked = false;
  }
  t_worker = nullptr;
  launch_ = nullptr;
  current_ = nullptr;
  return status;
}

Status BlockWorker::RunBlock(uint64_t b, const std::atomic<bool>& stop) {
  const LaunchSpec& l = *launch_;
  const uint32_t n = l.block.x * l.block.y * l.block.z;
  block_idx_ = {static_cast<uint32_t>(b % l.grid.x), static_cast<uint32_t>(b / l.grid.x % l.grid.y),
                static_cast<uint32_t>(b / (static_cast<uint64_t>(l.grid.x) * l.grid.y))};
  for (uint32_t i = 0; i < n; ++i) {
    GpuThread& t = threads_[i];
    t.wait = Wait::kRunnable;
    t.shared_index = 0;
    if (t.parked) {
      t.parked = false;  // it runs this block's thread when resumed
    } else {
      STRATA_RETURN_IF_ERROR(t.fiber->Start(&ThreadMain, &t));
    }
  }
  // Dynamic shared memory first, static after it as threads declare it; all
  // of it 0xff until written (a NaN as float), so a read before any write shows.
  decls_.clear();
  static_begin_ = static_end_ = AlignUp(l.dynamic_shared, kSharedAlign);
#ifdef STRATA_SGPU_ASAN
  __asan_poison_memory_region(shared_.data(), shared_.size());
  __asan_unpoison_memory_region(shared_.data(), l.dynamic_shared);
#endif
  std::memset(shared_.data(), 0xff, l.dynamic_shared);
  failure_ = Status::Ok();

  round_n_ = n;
  for (uint64_t round = 0;; ++round) {
    ascending_ = (round + b) % 2 == 0;
    round_pos_ = 0;
    // A Resume returns when a thread exits, fails, or ends the round (each
    // waiting thread hands on to the next: Yield).
    while (GpuThread* t = NextRunnable()) {
      current_ = t;
      t->fiber->Resume();
      current_ = nullptr;
      if (!failure_.ok()) return std::exchange(failure_, Status::Ok());  // the worker keeps no message
    }
    // Another host thread's block failed: the launch is over.
    if (stop.load(std::memory_order_relaxed)) return Status::Ok();
    bool done = false;
    STRATA_RETURN_IF_ERROR(Resolve(n, &done));
    if (done) return Status::Ok();
  }
}

GpuThread* BlockWorker::NextRunnable() {
  while (round_pos_ < round_n_) {
    const uint32_t k = round_pos_++;
    GpuThread& t = threads_[ascending_ ? k : round_n_ - 1 - k];
    if (t.wait == Wait::kRunnable) return &t;
  }
  return nullptr;
}

void BlockWorker::Yield() {
  GpuThread& me = *current_;
  if (GpuThread* next = NextRunnable()) {
    current_ = next;
    me.fiber->SwitchTo(*next->fiber);
  } else {
    me.fiber->Suspend();
  }
  // Resumed: whoever ran this fiber made it current again.
}

Status BlockWorker::Resolve(uint32_t n, bool* done) {
  bool progressed = false;
  for (uint32_t lo = 0; lo < n; lo += warp_size_) {
    const uint32_t hi = std::min(n, lo + warp_size_);
    const GpuThread* first = nullptr;
    for (uint32_t i = lo; i < hi && !first; ++i)
      if (threads_[i].wait == Wait::kWarp) first = &threads_[i];
    if (!first) continue;
    for (uint32_t i = lo; i < hi; ++i) {
      const GpuThread& t = threads_[i];
      if (t.wait != Wait::kWarp || t.op != first->op || !SamePlace(t.site, first->site) ||
          (IsReduction(t.op) && t.arg != first->arg))
        return Internal(StrFormat("%s warp %u: a warp operation needs every lane of the warp: ", Header().c_str(),
                                  lo / warp_size_) +
                        DescribeThreads(lo, hi));
    }
    CompleteWarpOp(lo, hi);
    progressed = true;
  }
  if (progressed) return Status::Ok();

  const GpuThread* first = nullptr;
  for (uint32_t i = 0; i < n && !first; ++i)
    if (threads_[i].wait == Wait::kBarrier) first = &threads_[i];
  if (!first) {  // no thread waits and none runs: all exited
    *done = true;
    return Status::Ok();
  }
  for (uint32_t i = 0; i < n; ++i) {
    const GpuThread& t = threads_[i];
    if (t.wait != Wait::kBarrier || !SamePlace(t.site, first->site))
      return Internal(Header() + ": __syncthreads must be reached by every thread of the block, at the same place: " +
                      DescribeThreads(0, n));
  }
  for (uint32_t i = 0; i < n; ++i) threads_[i].wait = Wait::kRunnable;
  return Status::Ok();
}

void BlockWorker::CompleteWarpOp(uint32_t lo, uint32_t hi) {
  const uint32_t lanes = hi - lo;
  const WarpOp op = threads_[lo].op;
  if (IsReduction(op)) {
    uint64_t v[64];
    for (uint32_t i = 0; i < lanes; ++i) v[i] = threads_[lo + i].value;
    const int from = threads_[lo].arg;
    switch (op) {
      case WarpOp::kSumF32: Butterfly<WarpOp::kSumF32>(v, lanes, from, warp_size_); break;
      case WarpOp::kSumI32: Butterfly<WarpOp::kSumI32>(v, lanes, from, warp_size_); break;
      case WarpOp::kMaxF32: Butterfly<WarpOp::kMaxF32>(v, lanes, from, warp_size_); break;
      case WarpOp::kFmaxF32: Butterfly<WarpOp::kFmaxF32>(v, lanes, from, warp_size_); break;
      case WarpOp::kOrU32: Butterfly<WarpOp::kOrU32>(v, lanes, from, warp_size_); break;
      default: Butterfly<WarpOp::kArgMaxF32>(v, lanes, from, warp_size_); break;
    }
    for (uint32_t i = 0; i < lanes; ++i) {
      threads_[lo + i].result = v[i];
      threads_[lo + i].wait = Wait::kRunnable;
    }
    return;
  }
  uint64_t ballot = 0;
  if (op == WarpOp::kBallot)
    for (uint32_t i = 0; i < lanes; ++i)
      if (threads_[lo + i].value != 0) ballot |= uint64_t{1} << i;
  for (uint32_t i = 0; i < lanes; ++i) {
    GpuThread& t = threads_[lo + i];
    // Source lanes wrap within the warp, as CUDA's shfl uses the low bits
    // of the lane number only.
    const uint32_t lane_bits = static_cast<uint32_t>(t.arg) & (warp_size_ - 1);
    uint32_t src = 0;
    switch (op) {
      case WarpOp::kShflXor: src = i ^ lane_bits; break;
      case WarpOp::kShfl: src = lane_bits; break;
      default: break;  // kBallot, kSync (the reductions returned above)
    }
    if (op == WarpOp::kBallot) t.result = ballot;
    else if (op == WarpOp::kShflXor || op == WarpOp::kShfl)
      t.result = src < lanes ? threads_[lo + src].value : kMissingLaneValue;
    t.wait = Wait::kRunnable;
  }
}

std::string BlockWorker::Header() const {
  return StrFormat("software GPU: kernel '%s' block %s", launch_->kernel->name.c_str(), DimText(block_idx_).c_str());
}

std::string BlockWorker::DescribeThreads(uint32_t lo, uint32_t hi) const {
  // Groups of threads in the same state at the same place, in the order of
  // their first thread; those waiting somewhere first, those that exited last.
  auto what = [](const GpuThread& t) -> std::string {
    switch (t.wait) {
      case Wait::kBarrier: return "reached __syncthreads at " + PlaceText(t.site);
      case Wait::kWarp: return std::string("reached ") + OpName(t.op) + " at " + PlaceText(t.site);
      case Wait::kExited: return "exited";
      case Wait::kRunnable:
      case Wait::kFailed: break;
    }
    return "still ran";
  };
  std::vector<std::string> keys;
  std::vector<std::vector<uint32_t>> members;
  for (uint32_t i = lo; i < hi; ++i) {
    const std::string k = what(threads_[i]);
    auto it = std::find(keys.begin(), keys.end(), k);
    if (it == keys.end()) {
      keys.push_back(k);
      members.emplace_back();
      it = keys.end() - 1;
    }
    members[static_cast<size_t>(it - keys.begin())].push_back(i);
  }
  std::vector<size_t> order(keys.size());
  for (size_t g = 0; g < order.size(); ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return (keys[a] == "exited") < (keys[b] == "exited");
  });
  std::string out;
  for (size_t j = 0; j < order.size(); ++j) {
    const std::vector<uint32_t>& m = members[order[j]];
    out += j == 0 ? "" : j == 1 ? " while " : ", ";
    out += m.size() == 1 ? "thread " : "threads ";
    int ranges = 0;
    for (size_t a = 0; a < m.size(); ++ranges) {
      if (ranges == 16) {  // enough to see the pattern
        out += StrFormat(",... (%zu threads)", m.size());
        break;
      }
      size_t z = a;
      while (z + 1 < m.size() && m[z + 1] == m[z] + 1) ++z;
      if (a > 0) out += ",";
      out += z == a ? std::to_string(m[a]) : std::to_string(m[a]) + "-" + std::to_string(m[z]);
      a = z + 1;
    }
    out += " " + keys[order[j]];
  }
  return out;
}

void* BlockWorker::DeclareShared(size_t bytes, const SourcePlace& where) {
  GpuThread& t = *current_;
  const uint32_t k = t.shared_index++;
  if (k < decls_.size()) {
    const SharedDecl& d = decls_[k];
    if (d.bytes == bytes && SamePlace(d.site, where)) return shared_.data() + d.offset;
    // The message is made in a statement of its own: temporaries of the
    // statement that calls Fail would never be destroyed (it does not return).
    Status why = Internal(StrFormat("%s: shared memory declared differently by two threads: thread %u declares its "
                                    "shared array #%u as %zu bytes at %s, thread %u declared it as %zu bytes at %s "
                                    "(every thread declares the same arrays in the same order)",
                                    Header().c_str(), t.linear, k, bytes, PlaceText(where).c_str(), d.thread,
                                    d.bytes, PlaceText(d.site).c_str()));
    Fail(std::move(why));
  }
  const LaunchSpec& l = *launch_;
  const size_t offset = AlignUp(static_end_, kSharedAlign);
  const size_t static_bytes = offset - static_begin_ + bytes;
  if (bytes > l.shared_limit || static_bytes > l.shared_limit - l.dynamic_shared) {
    Status why = Internal(StrFormat(
        "%s: too much shared memory: thread %u declares %zu bytes at %s, making %zu bytes of static and %u of "
        "dynamic shared memory, over the %u bytes a block may use%s",
        Header().c_str(), t.linear, bytes, PlaceText(where).c_str(), static_bytes, l.dynamic_shared, l.shared_limit,
        l.shared_limit < kSharedPerBlockOptIn
            ? StrFormat(" (a kernel given SetMaxDynamicShared may use up to %u)", kSharedPerBlockOptIn).c_str()
            : ""));
    Fail(std::move(why));
  }
  decls_.push_back({offset, bytes, where, t.linear});
  static_end_ = offset + bytes;
  uint8_t* p = shared_.data() + offset;
#ifdef STRATA_SGPU_ASAN
  __asan_unpoison_memory_region(p, bytes);
#endif
  std::memset(p, 0xff, bytes);
  return p;
}

void BlockWorker::Fail(Status&& why) {
  // Nothing that owns memory may stay on this fiber's stack: it is never
  // resumed, so no destructor of it runs. `why` is left empty by the move.
  failure_ = std::move(why);
  GpuThread& t = *current_;
  t.wait = Wait::kFailed;
  t.fiber->Suspend();
  Die("a failed GPU thread was resumed");
}

// --- the kernel-facing functions of sgpu.h ----------------------------------

const Dim& CurrentThreadIdx() { return InKernel("threadIdx").current().idx; }
const Dim& CurrentBlockIdx() { return InKernel("blockIdx").block_idx(); }
const Dim& CurrentBlockDim() { return InKernel("blockDim").launch().block; }
const Dim& CurrentGridDim() { return InKernel("gridDim").launch().grid; }

void SyncThreads(SourcePlace where) {
  BlockWorker& w = InKernel("__syncthreads");
  GpuThread& t = w.current();
  t.wait = Wait::kBarrier;
  t.site = where;
  w.Yield();
}

void* SharedBytes(size_t bytes, SourcePlace where) {
  return InKernel("STRATA_SHARED").DeclareShared(bytes, where);
}

void* DynamicSharedBytes() { return InKernel("STRATA_DYNAMIC_SHARED").dynamic_shared(); }

uint64_t WarpExchange(WarpOp op, uint64_t value, int arg, SourcePlace where) {
  BlockWorker& w = InKernel(OpName(op));
  GpuThread& t = w.current();
  t.wait = Wait::kWarp;
  t.op = op;
  t.value = value;
  t.arg = arg;
  t.site = where;
  w.Yield();
  return t.result;
}

// --- the scheduler ------------------------------------------------------------

Status CheckLaunchShape(const LaunchSpec& l) {
  const char* name = l.kernel ? l.kernel->name.c_str() : "?";
  const uint64_t threads = static_cast<uint64_t>(l.block.x) * l.block.y * l.block.z;
  auto bad = [&](const std::string& what) {
    return InvalidArgument(StrFormat("software GPU: launch of '%s' with grid %s, block %s: %s", name,
                                     DimText(l.grid).c_str(), DimText(l.block).c_str(), what.c_str()));
  };
  if (!l.kernel || !l.args) return bad("no kernel or no arguments");
  if (l.grid.x == 0 || l.grid.y == 0 || l.grid.z == 0 || l.block.x == 0 || l.block.y == 0 || l.block.z == 0)
    return bad("every dimension must be at least 1");
  if (threads > kMaxThreadsPerBlock)
    return bad(StrFormat("%llu threads in a block, at most %u allowed", static_cast<unsigned long long>(threads),
                         kMaxThreadsPerBlock));
  if (l.block.x > kMaxBlockDimXY || l.block.y > kMaxBlockDimXY || l.block.z > kMaxBlockDimZ)
    return bad(StrFormat("a block is at most (%u,%u,%u)", kMaxBlockDimXY, kMaxBlockDimXY, kMaxBlockDimZ));
  if (l.grid.x > kMaxGridDimX || l.grid.y > kMaxGridDimYZ || l.grid.z > kMaxGridDimYZ)
    return bad(StrFormat("a grid is at most (%u,%u,%u)", kMaxGridDimX, kMaxGridDimYZ, kMaxGridDimYZ));
  if (l.shared_limit > kSharedPerBlockOptIn || l.dynamic_shared > l.shared_limit)
    return bad(StrFormat("%u bytes of dynamic shared memory, at most %u allowed for this kernel%s", l.dynamic_shared,
                         std::min(l.shared_limit, kSharedPerBlockOptIn),
                         l.shared_limit < kSharedPerBlockOptIn ? " (SetMaxDynamicShared raises it)" : ""));
  return Status::Ok();
}

BlockScheduler::BlockScheduler(uint32_t warp_size, int host_threads) : warp_size_(warp_size) {
  for (int i = 0; i < std::max(1, host_threads); ++i) workers_.push_back(std::make_unique<BlockWorker>(warp_size));
}

BlockScheduler::~BlockScheduler() = default;

Status BlockScheduler::Run(const LaunchSpec& launch) {
  const uint64_t blocks = static_cast<uint64_t>(launch.grid.x) * launch.grid.y * launch.grid.z;
  std::atomic<uint64_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  Status first_error;
  auto work = [&](BlockWorker* w) {
    Status s = w->RunBlocks(launch, next, blocks, stop);
    if (s.ok()) return;
    std::lock_guard<std::mutex> lock(mu);
    if (first_error.ok()) first_error = std::move(s);
    stop.store(true);
  };
  // The calling thread is worker 0; the others get a host thread each for
  // this launch (if the OS refuses one, fewer run).
  const size_t helpers = static_cast<size_t>(std::min<uint64_t>(workers_.size(), blocks)) - 1;
  std::vector<std::thread> threads;
  for (size_t i = 1; i <= helpers; ++i) {
    try {
      threads.emplace_back(work, workers_[i].get());
    } catch (const std::system_error&) {
      break;
    }
  }
  work(workers_[0].get());
  for (std::thread& t : threads) t.join();
  return first_error;
}

}  // namespace strata::sgpu
