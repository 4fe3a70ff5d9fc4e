#pragma once
// Checked allocations: every large buffer of a run is allocated here, so a
// failure (or an injected one, FaultSite::kAllocate) comes back as a Status
// that says what failed and how much was asked, never as a null pointer that
// a kernel later reads through (seeds/004) or an exception thrown on a pool
// thread (which would end the process).

#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/fault_injection.h"
#include "runtime/base/status.h"
#include "runtime/base/strings.h"

namespace strata {

inline constexpr uint64_t kBufferAlignment = 64;

// "cannot allocate the KV cache: 1073741824 bytes (1.00 GiB) asked" (+ ": injected fault").
Status AllocationFailed(std::string_view what, uint64_t bytes, bool injected = false);

// One 64-byte-aligned heap block, owned. Moves, never copies.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& o) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  // Errors: kResourceExhausted (AllocationFailed). Zero bytes gives an empty buffer.
  static Result<AlignedBuffer> Allocate(uint64_t bytes, std::string_view what, FaultSite site = FaultSite::kAllocate);

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

// v.resize(n) (or reserve, when `reserve_only`), reporting failure as a Status.
template <typename T>
Status CheckedResize(std::vector<T>& v, size_t n, std::string_view what, bool reserve_only = false) {
  const uint64_t bytes = static_cast<uint64_t>(n) * sizeof(T);
  if (n > v.capacity() && ShouldInjectFault(FaultSite::kAllocate)) return AllocationFailed(what, bytes, true);
  try {
    if (reserve_only) v.reserve(n);
    else v.resize(n);
  } catch (const std::bad_alloc&) {
    return AllocationFailed(what, bytes);
  } catch (const std::length_error&) {
    return AllocationFailed(what, bytes);
  }
  return Status::Ok();
}

}  // namespace strata
