#pragma once
// An owning handle to backend memory, and the seam's transfer counts
// (backend.h). Apart so that SequenceState and Workspace can hold a handle.

#include <cstdint>

namespace strata {

class Backend;

// Bytes that crossed the seam, counted by the backend.
struct TransferCounts {
  uint64_t weight_bytes = 0;  // weights made resident in backend memory (Bind)
  uint64_t up_bytes = 0;      // host to backend during runs
  uint64_t up_calls = 0;
  uint64_t down_bytes = 0;    // backend to host during runs
  uint64_t down_calls = 0;
};

// An owning handle to memory a backend allocated: freed by that backend when
// the handle goes (the backend must outlive it). Move-only.
class BackendBuffer {
 public:
  BackendBuffer() = default;
  ~BackendBuffer() { Reset(); }
  BackendBuffer(BackendBuffer&& o) noexcept : owner_(o.owner_), id_(o.id_), bytes_(o.bytes_) { o.owner_ = nullptr; }
  BackendBuffer& operator=(BackendBuffer&& o) noexcept;
  BackendBuffer(const BackendBuffer&) = delete;
  BackendBuffer& operator=(const BackendBuffer&) = delete;

  bool valid() const { return owner_ != nullptr; }
  Backend* owner() const { return owner_; }
  uint32_t id() const { return id_; }
  uint64_t bytes() const { return bytes_; }
  void Reset();

 private:
  friend class Backend;
  BackendBuffer(Backend* owner, uint32_t id, uint64_t bytes) : owner_(owner), id_(id), bytes_(bytes) {}
  Backend* owner_ = nullptr;
  uint32_t id_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace strata
