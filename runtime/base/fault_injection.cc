#include "runtime/base/fault_injection.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>

namespace strata {
namespace {
constexpr int kSites = static_cast<int>(FaultSite::kCount);
std::atomic<bool> g_any_armed{false};
// -1: disarmed; otherwise the number of calls to let pass before failing one.
std::atomic<int64_t> g_countdown[kSites] = {};
std::atomic<bool> g_armed[kSites] = {};
std::atomic<bool> g_from_env{false};  // report fired faults on stderr
std::atomic<int64_t> g_calls[kSites] = {};

const char* const kEnvNames[] = {"open", "map", "allocate", "write", "rename", "device-allocate", "device-upload",
                                 "serve-step", "serve-handler", "gpu-allocate", "gpu-launch", "gpu-poison",
                                 "gpu-copy"};
static_assert(std::size(kEnvNames) == static_cast<size_t>(kSites), "every FaultSite needs its STRATA_FAULT name");

// STRATA_FAULT=SITE:SKIP[,...], read once before main.
struct EnvFaults {
  EnvFaults() {
    const char* e = std::getenv("STRATA_FAULT");
    if (!e || !*e) return;
    std::string s = e;
    size_t at = 0;
    while (at <= s.size()) {
      size_t end = s.find(',', at);
      if (end == std::string::npos) end = s.size();
      std::string item = s.substr(at, end - at);
      size_t colon = item.find(':');
      std::string name = item.substr(0, colon);
      long skip = colon == std::string::npos ? 0 : std::strtol(item.c_str() + colon + 1, nullptr, 10);
      bool known = false;
      for (int i = 0; i < kSites; ++i)
        if (name == kEnvNames[i] && skip >= 0) {
          ArmFault(static_cast<FaultSite>(i), static_cast<uint32_t>(skip));
          known = true;
        }
      if (!known) std::fprintf(stderr, "strata: STRATA_FAULT: '%s' is not SITE:SKIP with a known site\n", item.c_str());
      at = end + 1;
    }
    g_from_env.store(true);
  }
};
const EnvFaults g_env_faults;

}  // namespace

const char* FaultSiteName(FaultSite site) {
  switch (site) {
    case FaultSite::kFileOpen: return "file open";
    case FaultSite::kFileMap: return "file map";
    case FaultSite::kAllocate: return "allocation";
    case FaultSite::kFileWrite: return "file write";
    case FaultSite::kFileRename: return "file rename";
    case FaultSite::kDeviceAllocate: return "device allocation";
    case FaultSite::kDeviceUpload: return "device upload";
    case FaultSite::kServeStep: return "server step";
    case FaultSite::kServeHandler: return "server handler";
    case FaultSite::kGpuAllocate: return "GPU allocation";
    case FaultSite::kGpuLaunch: return "GPU launch";
    case FaultSite::kGpuPoison: return "GPU launch (poisoning)";
    case FaultSite::kGpuCopy: return "GPU copy";
    case FaultSite::kCount: break;
  }
  return "?";
}

void ArmFault(FaultSite site, uint32_t skip) {
  int i = static_cast<int>(site);
  g_countdown[i].store(skip);
  g_calls[i].store(0);
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
  const int64_t call = g_calls[i].fetch_add(1);
  if (g_countdown[i].fetch_sub(1) == 0) {
    g_armed[i].store(false);
    if (g_from_env.load())
      std::fprintf(stderr, "strata: injected fault: %s, call %lld\n", FaultSiteName(site), static_cast<long long>(call));
    return true;
  }
  return false;
}

}  // namespace strata
