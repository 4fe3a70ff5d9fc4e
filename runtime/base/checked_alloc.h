#pragma once
// Checked allocations: every large buffer of a run is allocated here, so a
// failure (or an injected one, FaultSite::kAllocate) comes back as a Status
// that says what failed and how much was asked, never as a null pointer that
// a kernel later reads through (seeds/004) or an exception thrown on a pool
// thread (which would end the process).

#include <cstddef>
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

// A std::vector allocator whose blocks start on a 64-byte boundary (a cache
// line; one zmm load). glibc's malloc gives 16: rows read with 512-bit loads
// (the KV cache in the attention kernels) would then split every load across
// two lines: an AVX-512 head measured 1.7x slower (bench/results/kernels.md).
template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <typename U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kBufferAlignment)));
  }
  void deallocate(T* p, size_t) noexcept { ::operator delete(p, std::align_val_t(kBufferAlignment)); }
  template <typename U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept {
    return true;
  }
};
template <typename T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

// v.resize(n) (or reserve, when `reserve_only`), reporting failure as a Status.
template <typename T, typename A>
Status CheckedResize(std::vector<T, A>& v, size_t n, std::string_view what, bool reserve_only = false) {
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
