#include "runtime/gpu/hip_driver.h"

#include <memory>
#include <type_traits>
#include <vector>

#include "runtime/gpu/shared_library.h"

namespace strata::gpu {
namespace {

using namespace hip;  // NOLINT: HIP's own names

// Tried in order. The unversioned name is what a ROCm install (and Debian's
// libamdhip64-dev) links; the versioned ones are what a runtime-only install
// has. HIP 7 and later are not tried until checked against hip_driver_api.h.
std::vector<std::string> DefaultLibraries() {
#ifdef _WIN32
  return {"amdhip64_6.dll", "amdhip64.dll"};
#else
  return {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
#endif
}
constexpr const char* kWhatToDo = "install ROCm (or, on Windows, the AMD display driver), or run with --backend cpu";

std::string VersionString(int v) {
  return std::to_string(v / 10000000) + "." + std::to_string(v / 100000 % 100) + "." + std::to_string(v % 100000);
}

Status ResolveAll(const SharedLibrary& lib, HipDriver* d) {
  const auto take = [&](auto& fn, const char* name) -> Status {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(lib.Symbol(name));
    if (fn != nullptr) return Status::Ok();
    return Unsupported("HIP " + d->library + " (" + VersionString(d->version) + ") has no " + name + "; " + kWhatToDo);
  };
#define STRATA_TAKE(member, name) STRATA_RETURN_IF_ERROR(take(d->member, name))
  STRATA_TAKE(GetErrorName, "hipGetErrorName");
  STRATA_TAKE(GetErrorString, "hipGetErrorString");
  STRATA_TAKE(Init, "hipInit");
  STRATA_TAKE(GetDeviceCount, "hipGetDeviceCount");
  STRATA_TAKE(SetDevice, "hipSetDevice");
  STRATA_TAKE(DeviceGet, "hipDeviceGet");
  STRATA_TAKE(DeviceGetName, "hipDeviceGetName");
  STRATA_TAKE(DeviceGetAttribute, "hipDeviceGetAttribute");
  STRATA_TAKE(DeviceTotalMem, "hipDeviceTotalMem");
  STRATA_TAKE(MemGetInfo, "hipMemGetInfo");
  STRATA_TAKE(ModuleLoadData, "hipModuleLoadData");
  STRATA_TAKE(ModuleUnload, "hipModuleUnload");
  STRATA_TAKE(ModuleGetFunction, "hipModuleGetFunction");
  STRATA_TAKE(ModuleLaunchKernel, "hipModuleLaunchKernel");
  STRATA_TAKE(Malloc, "hipMalloc");
  STRATA_TAKE(Free, "hipFree");
  STRATA_TAKE(HostMalloc, "hipHostMalloc");
  STRATA_TAKE(HostFree, "hipHostFree");
  STRATA_TAKE(MemcpyHtoDAsync, "hipMemcpyHtoDAsync");
  STRATA_TAKE(MemcpyDtoHAsync, "hipMemcpyDtoHAsync");
  STRATA_TAKE(MemcpyDtoDAsync, "hipMemcpyDtoDAsync");
  STRATA_TAKE(MemsetD8Async, "hipMemsetD8Async");
  STRATA_TAKE(StreamCreateWithFlags, "hipStreamCreateWithFlags");
  STRATA_TAKE(StreamDestroy, "hipStreamDestroy");
  STRATA_TAKE(StreamSynchronize, "hipStreamSynchronize");
  STRATA_TAKE(StreamWaitEvent, "hipStreamWaitEvent");
  STRATA_TAKE(EventCreateWithFlags, "hipEventCreateWithFlags");
  STRATA_TAKE(EventDestroy, "hipEventDestroy");
  STRATA_TAKE(EventRecord, "hipEventRecord");
  STRATA_TAKE(EventSynchronize, "hipEventSynchronize");
  STRATA_TAKE(EventElapsedTime, "hipEventElapsedTime");
  // Stream capture and graphs: in HIP since 4.3 (5.2 has every call here).
  STRATA_TAKE(StreamBeginCapture, "hipStreamBeginCapture");
  STRATA_TAKE(StreamEndCapture, "hipStreamEndCapture");
  STRATA_TAKE(GraphInstantiateWithFlags, "hipGraphInstantiateWithFlags");
  STRATA_TAKE(GraphLaunch, "hipGraphLaunch");
  STRATA_TAKE(GraphExecDestroy, "hipGraphExecDestroy");
  STRATA_TAKE(GraphDestroy, "hipGraphDestroy");
#undef STRATA_TAKE
  // Optional: only the architecture name comes from it (hip_device.cc).
  // HIP 6 exports its layout as ...R0600 and keeps HIP 5's under the old name.
  d->GetDeviceProperties = reinterpret_cast<PFN_hipGetDeviceProperties>(lib.Symbol("hipGetDevicePropertiesR0600"));
  if (d->GetDeviceProperties == nullptr) {
    d->GetDeviceProperties = reinterpret_cast<PFN_hipGetDeviceProperties>(lib.Symbol("hipGetDeviceProperties"));
  }
  return Status::Ok();
}

// The entry points of library `lib`.
Result<std::shared_ptr<HipDriver>> LoadTable(const SharedLibrary& lib, const std::string& origin) {
  auto d = std::make_shared<HipDriver>();
  d->library = lib.path();
  d->DriverGetVersion = reinterpret_cast<PFN_hipDriverGetVersion>(lib.Symbol("hipDriverGetVersion"));
  if (d->DriverGetVersion == nullptr) {
    return Unsupported("HIP " + lib.path() + origin + " has no hipDriverGetVersion: not a HIP runtime; " + kWhatToDo);
  }
  if (const hipError_t e = d->DriverGetVersion(&d->version); e != hipSuccess) {
    return Unsupported("HIP " + lib.path() + origin + ": hipDriverGetVersion failed (hipError_t " + std::to_string(e) +
                       "); " + kWhatToDo);
  }
  if (d->version < kHipMinimumVersion) {
    return Unsupported("HIP " + lib.path() + origin + " is too old: it is HIP " + VersionString(d->version) +
                       ", and this build needs HIP " + VersionString(kHipMinimumVersion) + " or later; " + kWhatToDo);
  }
  STRATA_RETURN_IF_ERROR(ResolveAll(lib, d.get()));
  return d;
}

}  // namespace

std::string HipDriver::ErrorText(hipError_t e) const {
  const char* name = GetErrorName != nullptr ? GetErrorName(e) : nullptr;
  const char* text = GetErrorString != nullptr ? GetErrorString(e) : nullptr;
  std::string out = name != nullptr ? name : "hipError_t " + std::to_string(e);
  // HIP 5 often gives the name as the text too.
  if (text != nullptr && out != text) out += std::string(": ") + text;
  return out;
}

std::string HipDriver::VersionNumber() const { return VersionString(version); }

Result<std::shared_ptr<const HipDriver>> LoadHipDriver() {
  const std::string override_path = DriverLibraryPath("STRATA_HIP_DRIVER", "");
  const std::vector<std::string> candidates =
      override_path.empty() ? DefaultLibraries() : std::vector<std::string>{override_path};
  const std::string origin = override_path.empty() ? "" : " (STRATA_HIP_DRIVER)";
  std::string tried;
  const SharedLibrary* lib = nullptr;
  for (const std::string& path : candidates) {
    auto opened = SharedLibrary::Open(path);
    if (opened.ok()) {
      lib = *opened;
      break;
    }
    tried += (tried.empty() ? "" : "; ") + opened.status().message();
  }
  if (lib == nullptr) {
    std::string names;
    for (const std::string& path : candidates) names += (names.empty() ? "" : ", ") + path;
    return Unsupported("no HIP runtime: " + names + origin + " not found (" + tried + "); " + kWhatToDo);
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<HipDriver> d, LoadTable(*lib, origin));
  if (const hipError_t e = d->Init(0); e != hipSuccess) {
    const std::string hint = e == hipErrorNoDevice || e == hipErrorInvalidDevice
                                 ? "no AMD GPU is visible (check rocminfo, HIP_VISIBLE_DEVICES, and that this user "
                                   "may open /dev/kfd and /dev/dri: the render and video groups)"
                                 : "the HIP runtime could not start";
    return Unsupported("HIP: hipInit failed in " + d->library + " (HIP " + d->VersionNumber() +
                       "): " + d->ErrorText(e) + "; " + hint + "; or run with --backend cpu");
  }
  return std::shared_ptr<const HipDriver>(std::move(d));
}

}  // namespace strata::gpu
