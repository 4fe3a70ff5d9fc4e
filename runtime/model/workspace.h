#pragma once
// Workspace: the forward pass's scratch memory, taken from one allocation
// made by the backend before a run starts (Backend::CreateWorkspace): the
// backend's ops take from it, the forward pass only hands it over. Given a workspace, a pass allocates nothing: a
// run that started cannot fail later for want of memory (seeds/003), and no
// pool thread can meet a failed allocation (it could only throw, and that
// ends the process).
//
// A PassShape bounds a pass. Backend::WorkspaceBytes(model, shape) (the CPU's: ForwardWorkspaceBytes, forward.h)
// is what a pass of that shape takes at most, computed next to the code that
// takes the memory; a pass that would take more than its workspace holds is
// refused with kInternal before it changes any state.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include "runtime/base/checked_alloc.h"
#include "runtime/base/status.h"
#include "runtime/model/backend_buffer.h"

namespace strata {

struct PassShape {
  int64_t tokens = 1;    // tokens in one pass, all sequences together
  int64_t max_keys = 1;  // keys one attention row may see: the context (largest position + 1)
  int threads = 1;       // the backend's threads (per-thread scratch)
};

// Parallel loops that need scratch per worker split their work into this many
// tasks, each with its own slab: min(jobs, 4 * threads), at least 1.
int64_t ScratchTasks(int64_t jobs, int threads);

// Bytes a Take of n elements of T uses: rounded up to the alignment, so a sum
// of TakeBytes over a sequence of Takes is exactly what they use.
template <typename T>
constexpr uint64_t TakeBytes(uint64_t n) {
  return (n * sizeof(T) + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

class Workspace {
 public:
  Workspace() = default;
  // Over `bytes` of backend memory at host address `base` (CpuBackend::CreateWorkspace).
  Workspace(BackendBuffer buf, uint8_t* base, uint64_t bytes) : buf_(std::move(buf)), base_(base), size_(bytes) {}
  // The backend whose memory this is (null for an empty workspace).
  Backend* backend() const { return buf_.owner(); }

  // n elements of T, 64-byte aligned, uninitialized; nullptr when they do
  // not fit. A failed Take makes every later one fail too, until a Release,
  // so a caller may check only the last of a series.
  template <typename T>
  T* Take(uint64_t n) {
    const uint64_t need = TakeBytes<T>(n);
    if (failed_ask_ || need > size_ - used_) {
      if (!failed_ask_) failed_ask_ = need;
      return nullptr;
    }
    T* p = reinterpret_cast<T*>(base_ + used_);
    used_ += need;
    if (used_ > high_water_) high_water_ = used_;
    return p;
  }
  // Takes made after mark() are released by Release(mark).
  uint64_t mark() const { return used_; }
  void Release(uint64_t mark) {
    used_ = mark;
    failed_ask_ = 0;
  }

  uint64_t capacity() const { return size_; }
  const uint8_t* base() const { return base_; }  // where its memory starts (a device address on a GPU)
  uint64_t high_water() const { return high_water_; }
  // kInternal: the last failed Take, with the sizes.
  Status Exhausted(std::string_view where) const;

 private:
  BackendBuffer buf_;
  uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  uint64_t used_ = 0;
  uint64_t high_water_ = 0;
  uint64_t failed_ask_ = 0;  // nonzero after a failed Take: the bytes it asked
};

// Releases a workspace's takes at the end of a scope.
class WorkspaceScope {
 public:
  explicit WorkspaceScope(Workspace& ws) : ws_(ws), mark_(ws.mark()) {}
  ~WorkspaceScope() { ws_.Release(mark_); }
  WorkspaceScope(const WorkspaceScope&) = delete;
  WorkspaceScope& operator=(const WorkspaceScope&) = delete;

 private:
  Workspace& ws_;
  uint64_t mark_;
};

}  // namespace strata
