#pragma once
// The part of HIP's runtime and module API (hip_runtime_api.h) that
// hip_driver.cc loads, declared here so that the host build needs no HIP
// headers. Values and signatures checked against HIP 5.2 (Debian 12's
// libamdhip64-dev) and HIP 6 (ROCm/HIP): the same in both for everything
// below. HIP exports its entry points unversioned, by their plain names.
//
// Not here, on purpose: hipDeviceProp_t. Its layout differs between HIP 5
// and 6 (HIP 6 exports the new one as hipGetDevicePropertiesR0600), so
// hip_device.cc reads the one field it wants without a declared layout.

#include <cstddef>
#include <cstdint>

namespace strata::gpu::hip {

using hipError_t = int;
using hipDevice_t = int;
using hipDeviceptr_t = void*;

struct ihipModule_t;
struct ihipModuleSymbol_t;
struct ihipStream_t;
struct ihipEvent_t;
struct ihipGraph;
struct hipGraphExec;
using hipModule_t = ihipModule_t*;
using hipFunction_t = ihipModuleSymbol_t*;
using hipStream_t = ihipStream_t*;
using hipEvent_t = ihipEvent_t*;
using hipGraph_t = ihipGraph*;
using hipGraphExec_t = hipGraphExec*;

// hipError_t values Strata tells apart.
enum : hipError_t {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorNotInitialized = 3,
  hipErrorInsufficientDriver = 35,
  hipErrorNoDevice = 100,
  hipErrorInvalidDevice = 101,
  hipErrorInvalidImage = 200,
  hipErrorNoBinaryForGpu = 209,
  hipErrorECCNotCorrectable = 214,
  hipErrorInvalidKernelFile = 218,
  hipErrorSharedObjectInitFailed = 303,
  hipErrorNotFound = 500,
  hipErrorIllegalAddress = 700,
  hipErrorLaunchOutOfResources = 701,
  hipErrorLaunchTimeOut = 702,
  hipErrorAssert = 710,
  hipErrorLaunchFailure = 719,
  hipErrorNotSupported = 801,
  hipErrorStreamCaptureInvalidated = 901,
};

// hipDeviceAttribute_t values (the same numbering since HIP 5.0; HIP 4 had
// another, which is why hip_driver.cc refuses HIP older than 5.0).
enum : int {
  hipDeviceAttributeComputeCapabilityMajor = 23,
  hipDeviceAttributeMaxThreadsPerBlock = 56,
  hipDeviceAttributeComputeCapabilityMinor = 61,
  hipDeviceAttributeMultiprocessorCount = 63,
  hipDeviceAttributeMaxSharedMemoryPerBlock = 74,
  hipDeviceAttributeSharedMemPerBlockOptin = 75,
  hipDeviceAttributeTotalGlobalMem = 84,
  hipDeviceAttributeWarpSize = 87,
};

enum : unsigned { hipStreamNonBlocking = 0x1, hipEventDefault = 0x0, hipHostMallocDefault = 0x0 };
enum : int { hipStreamCaptureModeGlobal = 0, hipStreamCaptureModeThreadLocal = 1, hipStreamCaptureModeRelaxed = 2 };

using PFN_hipGetErrorName = const char* (*)(hipError_t error);
using PFN_hipGetErrorString = const char* (*)(hipError_t error);
using PFN_hipInit = hipError_t (*)(unsigned flags);
using PFN_hipDriverGetVersion = hipError_t (*)(int* version);
using PFN_hipGetDeviceCount = hipError_t (*)(int* count);
using PFN_hipSetDevice = hipError_t (*)(int ordinal);
using PFN_hipDeviceGet = hipError_t (*)(hipDevice_t* device, int ordinal);
using PFN_hipDeviceGetName = hipError_t (*)(char* name, int len, hipDevice_t device);
using PFN_hipDeviceGetAttribute = hipError_t (*)(int* value, int attribute, int ordinal);
using PFN_hipDeviceTotalMem = hipError_t (*)(size_t* bytes, hipDevice_t device);
// Writes a hipDeviceProp_t (a version-dependent layout: see above).
using PFN_hipGetDeviceProperties = hipError_t (*)(void* properties, int ordinal);
using PFN_hipMemGetInfo = hipError_t (*)(size_t* free_bytes, size_t* total_bytes);
using PFN_hipModuleLoadData = hipError_t (*)(hipModule_t* module, const void* image);
using PFN_hipModuleUnload = hipError_t (*)(hipModule_t module);
using PFN_hipModuleGetFunction = hipError_t (*)(hipFunction_t* function, hipModule_t module, const char* name);
using PFN_hipModuleLaunchKernel = hipError_t (*)(hipFunction_t f, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                                 unsigned block_x, unsigned block_y, unsigned block_z,
                                                 unsigned shared_bytes, hipStream_t stream, void** kernel_params,
                                                 void** extra);
using PFN_hipMalloc = hipError_t (*)(void** ptr, size_t bytes);
using PFN_hipFree = hipError_t (*)(void* ptr);
using PFN_hipHostMalloc = hipError_t (*)(void** ptr, size_t bytes, unsigned flags);
using PFN_hipHostFree = hipError_t (*)(void* ptr);
// HIP declares the source `void*`; it only reads it.
using PFN_hipMemcpyHtoDAsync = hipError_t (*)(hipDeviceptr_t dst, void* src, size_t bytes, hipStream_t stream);
using PFN_hipMemcpyDtoHAsync = hipError_t (*)(void* dst, hipDeviceptr_t src, size_t bytes, hipStream_t stream);
using PFN_hipMemcpyDtoDAsync = hipError_t (*)(hipDeviceptr_t dst, hipDeviceptr_t src, size_t bytes, hipStream_t stream);
using PFN_hipMemsetD8Async = hipError_t (*)(hipDeviceptr_t dst, unsigned char value, size_t count, hipStream_t stream);
using PFN_hipStreamCreateWithFlags = hipError_t (*)(hipStream_t* stream, unsigned flags);
using PFN_hipStreamDestroy = hipError_t (*)(hipStream_t stream);
using PFN_hipStreamSynchronize = hipError_t (*)(hipStream_t stream);
using PFN_hipStreamWaitEvent = hipError_t (*)(hipStream_t stream, hipEvent_t event, unsigned flags);
using PFN_hipEventCreateWithFlags = hipError_t (*)(hipEvent_t* event, unsigned flags);
using PFN_hipEventDestroy = hipError_t (*)(hipEvent_t event);
using PFN_hipEventRecord = hipError_t (*)(hipEvent_t event, hipStream_t stream);
using PFN_hipEventSynchronize = hipError_t (*)(hipEvent_t event);
using PFN_hipEventElapsedTime = hipError_t (*)(float* ms, hipEvent_t start, hipEvent_t end);
using PFN_hipStreamBeginCapture = hipError_t (*)(hipStream_t stream, int mode);
using PFN_hipStreamEndCapture = hipError_t (*)(hipStream_t stream, hipGraph_t* graph);
using PFN_hipGraphInstantiateWithFlags = hipError_t (*)(hipGraphExec_t* exec, hipGraph_t graph,
                                                        unsigned long long flags);
using PFN_hipGraphLaunch = hipError_t (*)(hipGraphExec_t exec, hipStream_t stream);
using PFN_hipGraphExecDestroy = hipError_t (*)(hipGraphExec_t exec);
using PFN_hipGraphDestroy = hipError_t (*)(hipGraph_t graph);

}  // namespace strata::gpu::hip
