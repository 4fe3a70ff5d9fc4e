#pragma once
// HIP, loaded at run time: libamdhip64.so (or .so.6, .so.5) on Linux,
// amdhip64_6.dll or amdhip64.dll from System32 on Windows (AMD's display
// driver installs it there), or the library STRATA_HIP_DRIVER names.
// HIP exports its entry points by their plain names (no cuGetProcAddress).

#include <memory>
#include <string>

#include "runtime/base/status.h"
#include "runtime/gpu/hip_driver_api.h"

namespace strata::gpu {

// The oldest HIP whose ABI hip_driver_api.h matches (HIP 4 numbered the
// device attributes differently).
inline constexpr int kHipMinimumVersion = 50000000;  // hipDriverGetVersion's form: 5.0.0

struct HipDriver {
  std::string library;  // what was loaded
  int version = 0;      // hipDriverGetVersion: 50221153 for 5.2.21153

  hip::PFN_hipGetErrorName GetErrorName = nullptr;
  hip::PFN_hipGetErrorString GetErrorString = nullptr;
  hip::PFN_hipInit Init = nullptr;
  hip::PFN_hipDriverGetVersion DriverGetVersion = nullptr;
  hip::PFN_hipGetDeviceCount GetDeviceCount = nullptr;
  hip::PFN_hipSetDevice SetDevice = nullptr;
  hip::PFN_hipDeviceGet DeviceGet = nullptr;
  hip::PFN_hipDeviceGetName DeviceGetName = nullptr;
  hip::PFN_hipDeviceGetAttribute DeviceGetAttribute = nullptr;
  hip::PFN_hipDeviceTotalMem DeviceTotalMem = nullptr;
  hip::PFN_hipGetDeviceProperties GetDeviceProperties = nullptr;
  hip::PFN_hipMemGetInfo MemGetInfo = nullptr;
  hip::PFN_hipModuleLoadData ModuleLoadData = nullptr;
  hip::PFN_hipModuleUnload ModuleUnload = nullptr;
  hip::PFN_hipModuleGetFunction ModuleGetFunction = nullptr;
  hip::PFN_hipModuleLaunchKernel ModuleLaunchKernel = nullptr;
  hip::PFN_hipMalloc Malloc = nullptr;
  hip::PFN_hipFree Free = nullptr;
  hip::PFN_hipHostMalloc HostMalloc = nullptr;
  hip::PFN_hipHostFree HostFree = nullptr;
  hip::PFN_hipMemcpyHtoDAsync MemcpyHtoDAsync = nullptr;
  hip::PFN_hipMemcpyDtoHAsync MemcpyDtoHAsync = nullptr;
  hip::PFN_hipMemcpyDtoDAsync MemcpyDtoDAsync = nullptr;
  hip::PFN_hipMemsetD8Async MemsetD8Async = nullptr;
  hip::PFN_hipStreamCreateWithFlags StreamCreateWithFlags = nullptr;
  hip::PFN_hipStreamDestroy StreamDestroy = nullptr;
  hip::PFN_hipStreamSynchronize StreamSynchronize = nullptr;
  hip::PFN_hipStreamWaitEvent StreamWaitEvent = nullptr;
  hip::PFN_hipEventCreateWithFlags EventCreateWithFlags = nullptr;
  hip::PFN_hipEventDestroy EventDestroy = nullptr;
  hip::PFN_hipEventRecord EventRecord = nullptr;
  hip::PFN_hipEventSynchronize EventSynchronize = nullptr;
  hip::PFN_hipEventElapsedTime EventElapsedTime = nullptr;
  hip::PFN_hipStreamBeginCapture StreamBeginCapture = nullptr;
  hip::PFN_hipStreamEndCapture StreamEndCapture = nullptr;
  hip::PFN_hipGraphInstantiateWithFlags GraphInstantiateWithFlags = nullptr;
  hip::PFN_hipGraphLaunch GraphLaunch = nullptr;
  hip::PFN_hipGraphExecDestroy GraphExecDestroy = nullptr;
  hip::PFN_hipGraphDestroy GraphDestroy = nullptr;

  // "hipErrorOutOfMemory: out of memory"
  std::string ErrorText(hip::hipError_t e) const;
  // "5.2.21153"
  std::string VersionNumber() const;
};

// Loads HIP (the library stays loaded), resolves its entry points and calls
// hipInit(0).
// Errors, kUnsupported with what to do: no library; too old (before 5.0) or
// an entry point missing; hipInit fails (no AMD GPU, no /dev/kfd access).
Result<std::shared_ptr<const HipDriver>> LoadHipDriver();

}  // namespace strata::gpu
