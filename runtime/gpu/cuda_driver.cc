#include "runtime/gpu/cuda_driver.h"

#include <memory>
#include <string_view>
#include <type_traits>

#include "runtime/gpu/shared_library.h"

namespace strata::gpu {
namespace {

using namespace cuda;  // NOLINT: the driver API's own names

#ifdef _WIN32
constexpr const char* kDefaultLibrary = "nvcuda.dll";
#else
constexpr const char* kDefaultLibrary = "libcuda.so.1";
#endif
constexpr const char* kWhatToDo = "install or update the NVIDIA driver, or run with --backend cpu";

std::string VersionString(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

// cuGetProcAddress as the driver exports it: _v2 (drivers for CUDA 12.0 and
// later) reports why a symbol is missing; the first one (11.3 to 11.8) does
// not. cuda.h's documentation of cuGetProcAddress_v2: a symbol not found, or
// not available at `version`, is CUDA_SUCCESS with a null pointer.
class ProcResolver {
 public:
  explicit ProcResolver(const SharedLibrary& library)
      : v2_(reinterpret_cast<PFN_cuGetProcAddress_v12000>(library.Symbol("cuGetProcAddress_v2"))),
        v1_(reinterpret_cast<PFN_cuGetProcAddress_v11030>(library.Symbol("cuGetProcAddress"))) {}
  bool usable() const { return v2_ != nullptr || v1_ != nullptr; }

  // The entry point `name` at CUDA API `version`, or nullptr with `why`.
  void* Resolve(const char* name, int version, std::string* why) const {
    void* fn = nullptr;
    CUresult r;
    int status = CU_GET_PROC_ADDRESS_SUCCESS;
    if (v2_ != nullptr) {
      r = v2_(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);
    } else {
      r = v1_(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    }
    if (r == CUDA_SUCCESS && fn != nullptr) return fn;
    if (r != CUDA_SUCCESS) {
      *why = "cuGetProcAddress returned CUresult " + std::to_string(r);
    } else if (status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) {
      *why = "the driver has it only for a newer API version than " + VersionString(version);
    } else {
      *why = "the driver does not have it";
    }
    return nullptr;
  }

 private:
  PFN_cuGetProcAddress_v12000 v2_;
  PFN_cuGetProcAddress_v11030 v1_;
};

// Resolves every entry point of the table. Errors name the first one missing.
Status ResolveAll(const ProcResolver& resolver, CudaDriver* d) {
  std::string why;
  const auto take = [&](auto& fn, const char* name) -> Status {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(resolver.Resolve(name, kCudaApiVersion, &why));
    if (fn != nullptr) return Status::Ok();
    return Unsupported("the CUDA driver " + d->library + " (CUDA " + VersionString(d->version) + ") has no " + name +
                       " for CUDA " + VersionString(kCudaApiVersion) + " (" + why + "); " + kWhatToDo);
  };
#define STRATA_TAKE(member, name) STRATA_RETURN_IF_ERROR(take(d->member, name))
  STRATA_TAKE(GetErrorName, "cuGetErrorName");
  STRATA_TAKE(GetErrorString, "cuGetErrorString");
  STRATA_TAKE(Init, "cuInit");
  STRATA_TAKE(DeviceGetCount, "cuDeviceGetCount");
  STRATA_TAKE(DeviceGet, "cuDeviceGet");
  STRATA_TAKE(DeviceGetName, "cuDeviceGetName");
  STRATA_TAKE(DeviceGetAttribute, "cuDeviceGetAttribute");
  STRATA_TAKE(DeviceTotalMem, "cuDeviceTotalMem");
  STRATA_TAKE(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  STRATA_TAKE(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease");
  STRATA_TAKE(CtxSetCurrent, "cuCtxSetCurrent");
  STRATA_TAKE(MemGetInfo, "cuMemGetInfo");
  STRATA_TAKE(ModuleLoadData, "cuModuleLoadData");
  STRATA_TAKE(ModuleUnload, "cuModuleUnload");
  STRATA_TAKE(ModuleGetFunction, "cuModuleGetFunction");
  STRATA_TAKE(FuncSetAttribute, "cuFuncSetAttribute");
  STRATA_TAKE(LaunchKernel, "cuLaunchKernel");
  STRATA_TAKE(MemAlloc, "cuMemAlloc");
  STRATA_TAKE(MemFree, "cuMemFree");
  STRATA_TAKE(MemHostAlloc, "cuMemHostAlloc");
  STRATA_TAKE(MemFreeHost, "cuMemFreeHost");
  STRATA_TAKE(MemcpyHtoDAsync, "cuMemcpyHtoDAsync");
  STRATA_TAKE(MemcpyDtoHAsync, "cuMemcpyDtoHAsync");
  STRATA_TAKE(MemcpyDtoDAsync, "cuMemcpyDtoDAsync");
  STRATA_TAKE(MemsetD8Async, "cuMemsetD8Async");
  STRATA_TAKE(StreamCreate, "cuStreamCreate");
  STRATA_TAKE(StreamDestroy, "cuStreamDestroy");
  STRATA_TAKE(StreamSynchronize, "cuStreamSynchronize");
  STRATA_TAKE(StreamWaitEvent, "cuStreamWaitEvent");
  STRATA_TAKE(EventCreate, "cuEventCreate");
  STRATA_TAKE(EventDestroy, "cuEventDestroy");
  STRATA_TAKE(EventRecord, "cuEventRecord");
  STRATA_TAKE(EventSynchronize, "cuEventSynchronize");
  STRATA_TAKE(EventElapsedTime, "cuEventElapsedTime");
  STRATA_TAKE(StreamBeginCapture, "cuStreamBeginCapture");
  STRATA_TAKE(StreamEndCapture, "cuStreamEndCapture");
  // Not cuGraphInstantiate: its signature changed in CUDA 12.0 (five
  // arguments before, the flags form after); this name has had one
  // signature since CUDA 11.4.
  STRATA_TAKE(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  STRATA_TAKE(GraphLaunch, "cuGraphLaunch");
  STRATA_TAKE(GraphExecDestroy, "cuGraphExecDestroy");
  STRATA_TAKE(GraphDestroy, "cuGraphDestroy");
#undef STRATA_TAKE
  constexpr int kParamInfoVersion = 12040;
  if (d->version >= kParamInfoVersion) {
    d->FuncGetParamInfo =
        reinterpret_cast<PFN_cuFuncGetParamInfo>(resolver.Resolve("cuFuncGetParamInfo", kParamInfoVersion, &why));
  }
  return Status::Ok();
}

// The driver's entry points in library `path`.
Result<std::shared_ptr<CudaDriver>> LoadTable(const std::string& path, bool from_env) {
  const std::string origin = from_env ? " (STRATA_CUDA_DRIVER)" : "";
  auto library = SharedLibrary::Open(path);
  if (!library.ok()) {
    return Unsupported("no CUDA driver: " + path + origin + " was not found (" + library.status().message() + "); " +
                       kWhatToDo);
  }
  const ProcResolver resolver(**library);
  if (!resolver.usable()) {
    return Unsupported("the CUDA driver " + path + origin +
                       " is too old: it has no cuGetProcAddress (drivers for CUDA 11.3 and later have it; this build "
                       "needs one for CUDA " +
                       VersionString(kCudaApiVersion) + " or later); " + kWhatToDo);
  }
  auto d = std::make_shared<CudaDriver>();
  d->library = path;
  std::string why;
  // cuDriverGetVersion exists since CUDA 2.2: ask at the oldest version any
  // driver with cuGetProcAddress answers to.
  d->DriverGetVersion = reinterpret_cast<PFN_cuDriverGetVersion>(resolver.Resolve("cuDriverGetVersion", 11030, &why));
  if (d->DriverGetVersion == nullptr) {
    return Unsupported("the CUDA driver " + path + origin + " has no cuDriverGetVersion (" + why + "); " + kWhatToDo);
  }
  if (const CUresult r = d->DriverGetVersion(&d->version); r != CUDA_SUCCESS) {
    return Unsupported("the CUDA driver " + path + origin + ": cuDriverGetVersion failed (CUresult " +
                       std::to_string(r) + "); " + kWhatToDo);
  }
  if (d->version < kCudaApiVersion) {
    return Unsupported("the CUDA driver " + path + origin + " is too old: it supports CUDA " +
                       VersionString(d->version) + ", and this build needs CUDA " + VersionString(kCudaApiVersion) +
                       " or later; " + kWhatToDo);
  }
  STRATA_RETURN_IF_ERROR(ResolveAll(resolver, d.get()));
  return d;
}

}  // namespace

std::string CudaDriver::ErrorText(CUresult r) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (GetErrorName == nullptr || GetErrorName(r, &name) != CUDA_SUCCESS || name == nullptr) {
    return "CUresult " + std::to_string(r) + " (a code this driver does not name)";
  }
  if (GetErrorString(r, &text) != CUDA_SUCCESS || text == nullptr) return name;
  return std::string(name) + ": " + text;
}

std::string CudaDriver::VersionNumber() const { return VersionString(version); }

Result<std::shared_ptr<const CudaDriver>> LoadCudaDriver() {
  const std::string path = DriverLibraryPath("STRATA_CUDA_DRIVER", kDefaultLibrary);
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<CudaDriver> d, LoadTable(path, path != kDefaultLibrary));
  // cuInit on every open: it is cheap once done, and its error (no device, a
  // driver/kernel-module mismatch) is the one to report.
  if (const CUresult r = d->Init(0); r != CUDA_SUCCESS) {
    std::string hint;
    if (r == CUDA_ERROR_NO_DEVICE) {
      hint = "no CUDA device is visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)";
    } else if (r == CUDA_ERROR_STUB_LIBRARY) {
      hint = d->library + " is the CUDA toolkit's stub library, not the driver (remove it from the library path)";
    } else if (r == CUDA_ERROR_SYSTEM_DRIVER_MISMATCH || r == CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE) {
      hint = "the driver library and the loaded kernel module differ (reboot after a driver update)";
    } else {
      hint = "the driver could not start";
    }
    return Unsupported("CUDA: cuInit failed in " + d->library + " (CUDA " + d->VersionNumber() +
                       "): " + d->ErrorText(r) + "; " + hint + "; or run with --backend cpu");
  }
  return std::shared_ptr<const CudaDriver>(std::move(d));
}

}  // namespace strata::gpu
