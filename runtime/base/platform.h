#pragma once
// Small platform queries (the platform layer: no OS calls elsewhere).

#include <cstdint>
#include <string_view>

#include "runtime/base/status.h"

namespace strata {

// True if file descriptor `fd` (1 = stdout, 2 = stderr) is a terminal.
bool IsTerminal(int fd);
// Physical memory of the machine and memory available now, in bytes (0 if unknown).
uint64_t TotalMemoryBytes();
uint64_t AvailableMemoryBytes();
// Logical CPUs this process may use.
int CpuCount();

// Anonymous pages whose access the owner switches off and on (the sim
// backend's memory: a touch while it is off faults). Zeroed when made,
// readable and writable. Move-only; unmapped when it goes.
class GuardedMemory {
 public:
  enum class Access { kNone, kRead, kReadWrite };
  GuardedMemory() = default;
  ~GuardedMemory();
  GuardedMemory(GuardedMemory&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr; o.size_ = 0; }
  GuardedMemory& operator=(GuardedMemory&& o) noexcept;
  GuardedMemory(const GuardedMemory&) = delete;
  GuardedMemory& operator=(const GuardedMemory&) = delete;

  // At least `bytes` (rounded up to whole pages; at least one page).
  // Errors: kResourceExhausted naming `what`.
  static Result<GuardedMemory> Allocate(uint64_t bytes, std::string_view what);
  // Errors: kInternal with the OS's reason.
  Status SetAccess(Access access);
  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace strata
