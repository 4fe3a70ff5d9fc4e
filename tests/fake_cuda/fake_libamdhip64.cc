// A fake HIP runtime for tests: the fake CUDA driver (fake_libcuda.cc,
// compiled into this file so that it shares its state and its checks) behind
// HIP's names, for runtime/gpu/hip_driver.cc (STRATA_HIP_DRIVER=path).
// HIP's module API mirrors the driver API call for call and, for every error
// Strata tells apart, number for number; what differs is here: the version's
// form, the attribute numbers, the error-name functions, hipSetDevice instead
// of contexts, hipDeviceProp_t, and the image (a clang offload bundle).
//
// Configuration and failure injection: fake_cuda_control.h, with the CUDA
// names (FAKE_CUDA_FAIL=cuMemAlloc:1 fails the first hipMalloc), and:
//   FAKE_HIP_VERSION=50221153   hipDriverGetVersion (HIP 5.2.21153)
//   FAKE_HIP_WARP=64            the warp (wavefront) size
//   FAKE_HIP_ARCH=gfx90a:sramecc+:xnack-   gcnArchName (hipGetDeviceProperties)

#define FAKE_GPU_HIP 1
#include "tests/fake_cuda/fake_libcuda.cc"
// Each entry point has HIP's exact type (hip_driver_api.h), as the loader
// calls it (UBSan checks a call's function type), and casts to the CUDA
// twin's handles: both are opaque pointers.
#include "runtime/gpu/hip_driver_api.h"

namespace hip = strata::gpu::hip;

namespace {

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

// HIP's attribute numbers (hip_driver_api.h) as the driver API's.
int CudaAttribute(int hip_attribute) {
  switch (hip_attribute) {
    case 23: return CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
    case 61: return CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR;
    case 56: return CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
    case 63: return CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
    case 74: return CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK;
    case 75: return CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN;
    case 87: return CU_DEVICE_ATTRIBUTE_WARP_SIZE;
    default: return -1;
  }
}

const char* HipErrorName(int e) {
  switch (e) {
    case 0: return "hipSuccess";
    case 1: return "hipErrorInvalidValue";
    case 2: return "hipErrorOutOfMemory";
    case 3: return "hipErrorNotInitialized";
    case 100: return "hipErrorNoDevice";
    case 101: return "hipErrorInvalidDevice";
    case 200: return "hipErrorInvalidImage";
    case 201: return "hipErrorInvalidContext";
    case 209: return "hipErrorNoBinaryForGpu";
    case 400: return "hipErrorInvalidHandle";
    case 500: return "hipErrorNotFound";
    case 700: return "hipErrorIllegalAddress";
    case 719: return "hipErrorLaunchFailure";
    case 900: return "hipErrorStreamCaptureUnsupported";
    case 901: return "hipErrorStreamCaptureInvalidated";
    default: return "hipErrorUnknown";  // what HIP says for a code it does not know
  }
}

}  // namespace

FAKE_EXPORT const char* hipGetErrorName(int e) { return HipErrorName(e); }
// HIP 5 gives many errors' names as their text too.
FAKE_EXPORT const char* hipGetErrorString(int e) {
  const char* text = nullptr;
  return cuGetErrorString(e, &text) == CUDA_SUCCESS ? text : HipErrorName(e);
}
FAKE_EXPORT int hipInit(unsigned flags) { return cuInit(flags); }
FAKE_EXPORT int hipDriverGetVersion(int* version) {
  *version = EnvInt("FAKE_HIP_VERSION", 50221153);
  return 0;
}
FAKE_EXPORT int hipGetDeviceCount(int* count) { return cuDeviceGetCount(count); }
// HIP's current device is per thread, like a current context.
FAKE_EXPORT int hipSetDevice(int ordinal) {
  std::lock_guard<std::recursive_mutex> lock(S().mutex);
  if (const CUresult e = Enter("cuCtxSetCurrent", Needs::kInit); e != CUDA_SUCCESS) return e;
  if (ordinal < 0 || ordinal >= S().settings.devices || ordinal >= kMaxDevices) return CUDA_ERROR_INVALID_DEVICE;
  current_context = &S().contexts[ordinal];
  return CUDA_SUCCESS;
}
FAKE_EXPORT int hipDeviceGet(int* device, int ordinal) { return cuDeviceGet(device, ordinal); }
FAKE_EXPORT int hipDeviceGetName(char* name, int len, int device) {
  const int e = cuDeviceGetName(name, len, device);
  if (e == CUDA_SUCCESS) std::snprintf(name, static_cast<size_t>(len), "Fake HIP GPU %d", device);
  return e;
}
FAKE_EXPORT int hipDeviceGetAttribute(int* value, int attribute, int ordinal) {
  if (attribute == 87) {  // the wavefront: 64 on gfx90a
    const int e = cuDeviceGetAttribute(value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, ordinal);
    if (e == CUDA_SUCCESS) *value = EnvInt("FAKE_HIP_WARP", 64);
    return e;
  }
  if (attribute == 75) return CUDA_ERROR_INVALID_VALUE;  // HIP 5 on AMD: no opt-in
  if (attribute == 74) {                                 // AMD's LDS: 64 KiB per block
    const int e = cuDeviceGetAttribute(value, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, ordinal);
    if (e == CUDA_SUCCESS) *value = 64 << 10;
    return e;
  }
  return cuDeviceGetAttribute(value, CudaAttribute(attribute), ordinal);
}
FAKE_EXPORT int hipDeviceTotalMem(size_t* bytes, int device) { return cuDeviceTotalMem(bytes, device); }
// HIP 5.2's hipDeviceProp_t: the name at byte 0, gcnArchName at byte 396.
FAKE_EXPORT int hipGetDeviceProperties(void* properties, int ordinal) {
  char name[256] = {};
  if (const int e = hipDeviceGetName(name, sizeof name, ordinal); e != CUDA_SUCCESS) return e;
  auto* p = static_cast<char*>(properties);
  std::memset(p, 0, 792);
  std::memcpy(p, name, sizeof name);
  const char* arch = std::getenv("FAKE_HIP_ARCH");
  std::snprintf(p + 396, 256, "%s", arch != nullptr ? arch : "gfx90a:sramecc+:xnack-");
  return CUDA_SUCCESS;
}
FAKE_EXPORT int hipMemGetInfo(size_t* free_bytes, size_t* total_bytes) { return cuMemGetInfo(free_bytes, total_bytes); }
FAKE_EXPORT int hipModuleLoadData(hip::hipModule_t* module, const void* image) {
  return cuModuleLoadData(reinterpret_cast<CUmodule*>(module), image);
}
FAKE_EXPORT int hipModuleUnload(hip::hipModule_t module) { return cuModuleUnload(reinterpret_cast<CUmodule>(module)); }
FAKE_EXPORT int hipModuleGetFunction(hip::hipFunction_t* function, hip::hipModule_t module, const char* name) {
  return cuModuleGetFunction(reinterpret_cast<CUfunction*>(function), reinterpret_cast<CUmodule>(module), name);
}
FAKE_EXPORT int hipModuleLaunchKernel(hip::hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                      unsigned by, unsigned bz, unsigned shared, hip::hipStream_t stream, void** params,
                                      void** extra) {
  return cuLaunchKernel(reinterpret_cast<CUfunction>(f), gx, gy, gz, bx, by, bz, shared,
                        reinterpret_cast<CUstream>(stream), params, extra);
}
FAKE_EXPORT int hipMalloc(void** ptr, size_t bytes) {
  CUdeviceptr p = 0;
  const CUresult e = cuMemAlloc(&p, bytes);
  *ptr = reinterpret_cast<void*>(p);
  return e;
}
FAKE_EXPORT int hipFree(void* ptr) { return cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)); }
FAKE_EXPORT int hipHostMalloc(void** ptr, size_t bytes, unsigned flags) { return cuMemHostAlloc(ptr, bytes, flags); }
FAKE_EXPORT int hipHostFree(void* ptr) { return cuMemFreeHost(ptr); }
FAKE_EXPORT int hipMemcpyHtoDAsync(void* dst, void* src, size_t bytes, hip::hipStream_t stream) {
  return cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src, bytes, reinterpret_cast<CUstream>(stream));
}
FAKE_EXPORT int hipMemcpyDtoHAsync(void* dst, void* src, size_t bytes, hip::hipStream_t stream) {
  return cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src), bytes, reinterpret_cast<CUstream>(stream));
}
FAKE_EXPORT int hipMemcpyDtoDAsync(void* dst, void* src, size_t bytes, hip::hipStream_t stream) {
  return cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), bytes,
                           reinterpret_cast<CUstream>(stream));
}
FAKE_EXPORT int hipMemsetD8Async(void* dst, unsigned char value, size_t count, hip::hipStream_t stream) {
  return cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(dst), value, count, reinterpret_cast<CUstream>(stream));
}
FAKE_EXPORT int hipStreamCreateWithFlags(hip::hipStream_t* stream, unsigned flags) {
  return cuStreamCreate(reinterpret_cast<CUstream*>(stream), flags);
}
FAKE_EXPORT int hipStreamDestroy(hip::hipStream_t stream) {
  return cuStreamDestroy(reinterpret_cast<CUstream>(stream));
}
FAKE_EXPORT int hipStreamSynchronize(hip::hipStream_t stream) {
  return cuStreamSynchronize(reinterpret_cast<CUstream>(stream));
}
FAKE_EXPORT int hipStreamWaitEvent(hip::hipStream_t stream, hip::hipEvent_t event, unsigned flags) {
  return cuStreamWaitEvent(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUevent>(event), flags);
}
FAKE_EXPORT int hipEventCreateWithFlags(hip::hipEvent_t* event, unsigned flags) {
  return cuEventCreate(reinterpret_cast<CUevent*>(event), flags);
}
FAKE_EXPORT int hipEventDestroy(hip::hipEvent_t event) { return cuEventDestroy(reinterpret_cast<CUevent>(event)); }
FAKE_EXPORT int hipEventRecord(hip::hipEvent_t event, hip::hipStream_t stream) {
  return cuEventRecord(reinterpret_cast<CUevent>(event), reinterpret_cast<CUstream>(stream));
}
FAKE_EXPORT int hipEventSynchronize(hip::hipEvent_t event) {
  return cuEventSynchronize(reinterpret_cast<CUevent>(event));
}
FAKE_EXPORT int hipEventElapsedTime(float* ms, hip::hipEvent_t start, hip::hipEvent_t end) {
  return cuEventElapsedTime(ms, reinterpret_cast<CUevent>(start), reinterpret_cast<CUevent>(end));
}
FAKE_EXPORT int hipStreamBeginCapture(hip::hipStream_t stream, int mode) {
  return cuStreamBeginCapture(reinterpret_cast<CUstream>(stream), mode);
}
FAKE_EXPORT int hipStreamEndCapture(hip::hipStream_t stream, hip::hipGraph_t* graph) {
  return cuStreamEndCapture(reinterpret_cast<CUstream>(stream), reinterpret_cast<CUgraph*>(graph));
}
FAKE_EXPORT int hipGraphInstantiateWithFlags(hip::hipGraphExec_t* exec, hip::hipGraph_t graph,
                                             unsigned long long flags) {
  return cuGraphInstantiateWithFlags(reinterpret_cast<CUgraphExec*>(exec), reinterpret_cast<CUgraph>(graph), flags);
}
FAKE_EXPORT int hipGraphLaunch(hip::hipGraphExec_t exec, hip::hipStream_t stream) {
  return cuGraphLaunch(reinterpret_cast<CUgraphExec>(exec), reinterpret_cast<CUstream>(stream));
}
FAKE_EXPORT int hipGraphExecDestroy(hip::hipGraphExec_t exec) {
  return cuGraphExecDestroy(reinterpret_cast<CUgraphExec>(exec));
}
FAKE_EXPORT int hipGraphDestroy(hip::hipGraph_t graph) { return cuGraphDestroy(reinterpret_cast<CUgraph>(graph)); }
