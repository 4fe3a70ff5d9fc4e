#include "runtime/base/fault_injection.h"

#include <atomic>

namespace strata {
namespace {
constexpr int kSites = static_cast<int>(FaultSite::kCount);
std::atomic<bool> g_any_armed{false};
// -1: disarmed; otherwise the number of calls to let pass before failing one.
std::atomic<int64_t> g_countdown[kSites] = {};
std::atomic<bool> g_armed[kSites] = {};
}  // namespace

const char* FaultSiteName(FaultSite site) {
  switch (site) {
    case FaultSite::kFileOpen: return "file open";
    case FaultSite::kFileMap: return "file map";
    case FaultSite::kAllocate: return "allocation";
    case FaultSite::kFileWrite: return "file write";
    case FaultSite::kFileRename: return "file rename";
    case FaultSite::kCount: break;
  }
  return "?";
}

void ArmFault(FaultSite site, uint32_t skip) {
  int i = static_cast<int>(site);
  g_countdown[i].store(skip);
  g_armed[i].store(true);
  g_any_armed.store(true);
}

void DisarmAllFaults() {
  for (int i = 0; i < kSites; ++i) g_armed[i].store(false);
  g_any_armed.store(false);
}

bool ShouldInjectFault(FaultSite site) {
  if (!g_any_armed.load(std::memory_order_relaxed)) return false;
  int i = static_cast<int>(site);
  if (!g_armed[i].load()) return false;
  if (g_countdown[i].fetch_sub(1) == 0) {
    g_armed[i].store(false);
    return true;
  }
  return false;
}

}  // namespace strata
