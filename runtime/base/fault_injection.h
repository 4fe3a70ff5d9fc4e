#pragma once
// Fault injection for tests: every allocation, mapping and file write in Strata
// asks ShouldInjectFault(site) first, so a test can make the N-th call at a
// site fail and check that the failure surfaces as a clean Status, never a
// crash or a read through a stale pointer (seeds/004).
//
// In-process tests call ArmFault. A test that runs a program sets
// STRATA_FAULT=SITE:SKIP[,SITE:SKIP...] (SITE: open, map, allocate, write,
// rename, device-allocate, device-upload, serve-step, serve-handler, gpu-allocate, gpu-launch,
// gpu-poison, gpu-copy); the program then fails that call
// and says so on stderr ("strata: injected fault: allocation, call N"), so
// the test knows the fault fired.

#include <cstdint>

namespace strata {

enum class FaultSite : uint8_t {
  kFileOpen = 0,
  kFileMap,
  kAllocate,
  kFileWrite,
  kFileRename,
  kDeviceAllocate,  // expert-slot memory of a device tier (runtime/experts)
  kDeviceUpload,    // copying an expert's weights into a device slot
  kServeStep,       // a scheduler step of the server throws (runtime/serve)
  kServeHandler,    // an HTTP handler of the server throws
  kGpuAllocate,     // gpu::Device::Allocate fails (kResourceExhausted)
  kGpuLaunch,       // a GPU launch fails, the device stays usable
  kGpuPoison,       // a GPU launch fails as an illegal address would: the device is poisoned
  kGpuCopy,         // a GPU copy or fill fails, the device stays usable
  kCount,
};

const char* FaultSiteName(FaultSite site);

// Makes the call to ShouldInjectFault(site) that comes `skip` calls from now
// return true (once). skip = 0 fails the next call.
void ArmFault(FaultSite site, uint32_t skip);
void DisarmAllFaults();
// True when an armed fault fires. Cheap (one relaxed atomic load) when nothing is armed.
bool ShouldInjectFault(FaultSite site);

}  // namespace strata
