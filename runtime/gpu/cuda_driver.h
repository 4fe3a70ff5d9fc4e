#pragma once
// The CUDA driver, loaded at run time: libcuda.so.1 (Linux) or nvcuda.dll
// (Windows, from System32), or the library STRATA_CUDA_DRIVER names (tests'
// fake driver). Its entry points are taken through cuGetProcAddress at one
// CUDA API version (kCudaApiVersion), so which versioned symbol (_v2, _v3)
// serves a name is the driver's business, not this file's.

#include <memory>
#include <string>

#include "runtime/base/status.h"
#include "runtime/gpu/cuda_driver_api.h"

namespace strata::gpu {

// The API version the entry points are asked for: CUDA 12.0. Drivers older
// than that are refused (an image compiled by nvcc 12 or 13 needs a newer
// driver anyway).
inline constexpr int kCudaApiVersion = 12000;

struct CudaDriver {
  std::string library;  // what was loaded: "libcuda.so.1", or the override's path
  int version = 0;      // cuDriverGetVersion: 13000 for CUDA 13.0

  cuda::PFN_cuGetErrorName GetErrorName = nullptr;
  cuda::PFN_cuGetErrorString GetErrorString = nullptr;
  cuda::PFN_cuInit Init = nullptr;
  cuda::PFN_cuDriverGetVersion DriverGetVersion = nullptr;
  cuda::PFN_cuDeviceGetCount DeviceGetCount = nullptr;
  cuda::PFN_cuDeviceGet DeviceGet = nullptr;
  cuda::PFN_cuDeviceGetName DeviceGetName = nullptr;
  cuda::PFN_cuDeviceGetAttribute DeviceGetAttribute = nullptr;
  cuda::PFN_cuDeviceTotalMem DeviceTotalMem = nullptr;
  cuda::PFN_cuDevicePrimaryCtxRetain DevicePrimaryCtxRetain = nullptr;
  cuda::PFN_cuDevicePrimaryCtxRelease DevicePrimaryCtxRelease = nullptr;
  cuda::PFN_cuCtxSetCurrent CtxSetCurrent = nullptr;
  cuda::PFN_cuMemGetInfo MemGetInfo = nullptr;
  cuda::PFN_cuModuleLoadData ModuleLoadData = nullptr;
  cuda::PFN_cuModuleUnload ModuleUnload = nullptr;
  cuda::PFN_cuModuleGetFunction ModuleGetFunction = nullptr;
  cuda::PFN_cuFuncSetAttribute FuncSetAttribute = nullptr;
  cuda::PFN_cuLaunchKernel LaunchKernel = nullptr;
  cuda::PFN_cuMemAlloc MemAlloc = nullptr;
  cuda::PFN_cuMemFree MemFree = nullptr;
  cuda::PFN_cuMemHostAlloc MemHostAlloc = nullptr;
  cuda::PFN_cuMemFreeHost MemFreeHost = nullptr;
  cuda::PFN_cuMemcpyHtoDAsync MemcpyHtoDAsync = nullptr;
  cuda::PFN_cuMemcpyDtoHAsync MemcpyDtoHAsync = nullptr;
  cuda::PFN_cuMemcpyDtoDAsync MemcpyDtoDAsync = nullptr;
  cuda::PFN_cuMemsetD8Async MemsetD8Async = nullptr;
  cuda::PFN_cuStreamCreate StreamCreate = nullptr;
  cuda::PFN_cuStreamDestroy StreamDestroy = nullptr;
  cuda::PFN_cuStreamSynchronize StreamSynchronize = nullptr;
  cuda::PFN_cuStreamWaitEvent StreamWaitEvent = nullptr;
  cuda::PFN_cuEventCreate EventCreate = nullptr;
  cuda::PFN_cuEventDestroy EventDestroy = nullptr;
  cuda::PFN_cuEventRecord EventRecord = nullptr;
  cuda::PFN_cuEventSynchronize EventSynchronize = nullptr;
  cuda::PFN_cuEventElapsedTime EventElapsedTime = nullptr;
  cuda::PFN_cuStreamBeginCapture StreamBeginCapture = nullptr;
  cuda::PFN_cuStreamEndCapture StreamEndCapture = nullptr;
  cuda::PFN_cuGraphInstantiateWithFlags GraphInstantiateWithFlags = nullptr;
  cuda::PFN_cuGraphLaunch GraphLaunch = nullptr;
  cuda::PFN_cuGraphExecDestroy GraphExecDestroy = nullptr;
  cuda::PFN_cuGraphDestroy GraphDestroy = nullptr;
  // Optional (drivers for CUDA 12.4 and later): the size of a kernel's
  // parameter, which lets Launch check the argument struct's size.
  cuda::PFN_cuFuncGetParamInfo FuncGetParamInfo = nullptr;

  // "CUDA_ERROR_OUT_OF_MEMORY: out of memory" (the driver's name and text).
  std::string ErrorText(cuda::CUresult r) const;
  // "13.0"
  std::string VersionNumber() const;
};

// Loads the driver (the library stays loaded), resolves its entry points
// (each time: cheap, and a test's fake driver may change between opens) and
// calls cuInit(0). Errors, kUnsupported with what to do: the library is not there;
// it is not a usable driver (no cuGetProcAddress, older than CUDA 12.0, an
// entry point missing, the toolkit's stub library); cuInit fails (no device,
// a driver/kernel-module mismatch).
Result<std::shared_ptr<const CudaDriver>> LoadCudaDriver();

}  // namespace strata::gpu
