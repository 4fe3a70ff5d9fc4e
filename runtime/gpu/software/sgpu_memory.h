#pragma once
// The software GPU's device memory: host memory, laid out so that a kernel
// that reads or writes past an allocation is caught.
//
// Each allocation is a mapping of its own: an inaccessible guard page, the
// data pages, an inaccessible guard page. The allocation starts at the
// 256-byte aligned address closest to the trailing guard page, so a kernel
// reading past its end faults (SIGSEGV; under ASan a report) once it passes
// the slack of fewer than 256 bytes, and that slack holds a canary that
// CheckCanaries and Free compare: a write there is reported as "a kernel
// wrote past the end of ...". New allocations hold 0xcd bytes (undefined
// contents, made visible). A DevicePtr is the allocation's host address.
//
// The cost: three pages and three kernel mappings per allocation (Linux
// allows about 65000 mappings per process: some 20000 allocations).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "runtime/base/platform.h"
#include "runtime/base/status.h"

namespace strata::sgpu {

inline constexpr uint64_t kAllocationAlignment = 256;
inline constexpr uint8_t kNewMemoryByte = 0xcd;
inline constexpr uint8_t kCanaryByte = 0x5a;

class DeviceMemory {
 public:
  // `capacity`: the bytes the device reports and lets be allocated.
  explicit DeviceMemory(uint64_t capacity) : capacity_(capacity) {}

  // Errors: kInvalidArgument for 0 bytes; kResourceExhausted beyond the
  // capacity (saying what was asked, used and held) or when the OS refuses.
  Result<uint64_t> Allocate(uint64_t bytes, std::string_view what);
  // Frees a live allocation. Errors: kInvalidArgument when `p` is not the
  // start of one; kInternal when its canary was overwritten (it is freed
  // anyway).
  Status Free(uint64_t p);
  // [p, p + bytes) lies inside one live allocation (0 bytes: always).
  // Errors: kInvalidArgument naming `call`, the range and the allocation
  // nearest it.
  Status CheckRange(uint64_t p, uint64_t bytes, std::string_view call) const;
  // Every live allocation's canary is intact. Errors: kInternal, the first
  // overwritten one.
  Status CheckCanaries() const;

  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  size_t count() const { return live_.size(); }

 private:
  struct Allocation {
    GuardedMemory mapping;
    uint64_t bytes = 0;
    uint64_t slack = 0;  // canary bytes after the end, up to the guard page
    std::string what;
  };
  static Status CheckCanary(uint64_t p, const Allocation& a);

  uint64_t capacity_;
  uint64_t used_ = 0;
  std::map<uint64_t, Allocation> live_;  // by start address
};

}  // namespace strata::sgpu
