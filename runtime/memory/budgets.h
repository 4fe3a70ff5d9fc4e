#pragma once
// Memory budgets: how much RAM and device memory a run may take. Given on
// the command line (--ram-budget, --vram-budget), or what the system reports
// free minus --reserve.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "runtime/base/status.h"

namespace strata {

// "512M", "12G", "1.5GiB", "64k", "1000000" (binary units; a bare number is bytes).
Result<uint64_t> ParseByteSize(std::string_view s);
// "12G" (device 0) or "0=12G,1=8G".
Result<std::map<int, uint64_t>> ParseDeviceBudgets(std::string_view s);

struct Budget {
  Budget() = default;
  Budget(uint64_t b, std::string s) : bytes(b), source(std::move(s)) {}
  uint64_t bytes = 0;
  std::string source;  // "--ram-budget 8.00 GiB", "available 21.3 GiB - reserve 512.00 MiB"
  // RAM only: where the OS charges private memory against a commit limit
  // (Windows; Linux with vm.overcommit_memory=2), what is left of it minus
  // the reserve. Private buffers must fit it as well as `bytes`; mapped
  // weights are not charged (platform.h AvailableCommitMemory).
  bool commit_limited = false;
  uint64_t commit = 0;
  std::string commit_source;
};

inline constexpr uint64_t kDefaultReserve = 512ull << 20;

// The RAM budget: `given` when set, else the memory available now minus
// `reserve`; with the commit account, where the OS keeps one, in both cases.
Budget RamBudget(const uint64_t* given, uint64_t reserve);
// The same from given figures (tests; RamBudget passes the system's).
Budget RamBudgetFrom(const uint64_t* given, uint64_t reserve, uint64_t available, bool commit_limited,
                     uint64_t commit_available);

}  // namespace strata
