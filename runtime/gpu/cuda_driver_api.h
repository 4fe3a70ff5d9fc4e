#pragma once
// The part of the CUDA driver API (cuda.h) that cuda_driver.cc loads, declared
// here so that the host build needs no CUDA toolkit. The driver API is a
// stable C ABI: these names, values and signatures are the toolkit's own (the
// versions noted are those cuGetProcAddress is asked for: cuda_driver.cc).
// Only what Strata calls is here; add an entry point by copying its
// declaration from cuda.h / cudaTypedefs.h (PFN_<name>_v<version>).
//
// Calling convention: CUDAAPI is __stdcall on 32-bit Windows only; on x86-64
// Windows and Linux there is one C calling convention, which these use.

#include <cstddef>
#include <cstdint>

namespace strata::gpu::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;  // CUdeviceptr_v2: 64-bit since CUDA 3.2

struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUgraph_st;
struct CUgraphExec_st;
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;
using CUgraph = CUgraph_st*;
using CUgraphExec = CUgraphExec_st*;

// CUresult values Strata tells apart (cuda.h, enum cudaError_enum).
enum : CUresult {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
  CUDA_ERROR_ECC_UNCORRECTABLE = 214,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_CONTAINED = 226,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
  CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
  CUDA_ERROR_LAUNCH_TIMEOUT = 702,
  CUDA_ERROR_ASSERT = 710,
  CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
  CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
  CUDA_ERROR_MISALIGNED_ADDRESS = 716,
  CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
  CUDA_ERROR_INVALID_PC = 718,
  CUDA_ERROR_LAUNCH_FAILED = 719,
  CUDA_ERROR_TENSOR_MEMORY_LEAK = 721,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
  CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
  CUDA_ERROR_MPS_CLIENT_TERMINATED = 810,
  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
  CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
  CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = 908,
  CUDA_ERROR_EXTERNAL_DEVICE = 911,
  CUDA_ERROR_UNKNOWN = 999,
};

// CUdevice_attribute values.
enum : int {
  CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};

// CUfunction_attribute, stream, event, host-allocation and capture flags.
enum : int { CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 };
enum : unsigned { CU_STREAM_NON_BLOCKING = 0x1 };
enum : unsigned { CU_EVENT_DEFAULT = 0x0 };
enum : unsigned { CU_EVENT_WAIT_DEFAULT = 0x0 };
enum : unsigned { CU_MEMHOSTALLOC_PORTABLE = 0x1 };
enum : int {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2
};

// cuGetProcAddress: search flags (CUdriverProcAddress_flags) and the
// symbol status the _v2 variant reports (CUdriverProcAddressQueryResult).
enum : uint64_t { CU_GET_PROC_ADDRESS_DEFAULT = 0, CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1 };
enum : int {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
};

// The two exported resolvers: cuGetProcAddress_v2 (drivers for CUDA 12.0 and
// later) and cuGetProcAddress (11.3 and later; in 12.x headers the old
// signature is still exported under this name).
using PFN_cuGetProcAddress_v12000 = CUresult (*)(const char* symbol, void** pfn, int cuda_version, uint64_t flags,
                                                 int* symbol_status);
using PFN_cuGetProcAddress_v11030 = CUresult (*)(const char* symbol, void** pfn, int cuda_version, uint64_t flags);

// Everything else, taken through the resolver.
using PFN_cuGetErrorName = CUresult (*)(CUresult error, const char** str);
using PFN_cuGetErrorString = CUresult (*)(CUresult error, const char** str);
using PFN_cuInit = CUresult (*)(unsigned flags);
using PFN_cuDriverGetVersion = CUresult (*)(int* version);
using PFN_cuDeviceGetCount = CUresult (*)(int* count);
using PFN_cuDeviceGet = CUresult (*)(CUdevice* device, int ordinal);
using PFN_cuDeviceGetName = CUresult (*)(char* name, int len, CUdevice device);
using PFN_cuDeviceGetAttribute = CUresult (*)(int* value, int attribute, CUdevice device);
using PFN_cuDeviceTotalMem = CUresult (*)(size_t* bytes, CUdevice device);  // _v2
using PFN_cuDevicePrimaryCtxRetain = CUresult (*)(CUcontext* ctx, CUdevice device);
using PFN_cuDevicePrimaryCtxRelease = CUresult (*)(CUdevice device);  // _v2
using PFN_cuCtxSetCurrent = CUresult (*)(CUcontext ctx);
using PFN_cuMemGetInfo = CUresult (*)(size_t* free_bytes, size_t* total_bytes);  // _v2
using PFN_cuModuleLoadData = CUresult (*)(CUmodule* module, const void* image);
using PFN_cuModuleUnload = CUresult (*)(CUmodule module);
using PFN_cuModuleGetFunction = CUresult (*)(CUfunction* function, CUmodule module, const char* name);
using PFN_cuFuncSetAttribute = CUresult (*)(CUfunction function, int attribute, int value);
using PFN_cuFuncGetParamInfo = CUresult (*)(CUfunction function, size_t index, size_t* offset, size_t* size);
using PFN_cuLaunchKernel = CUresult (*)(CUfunction f, unsigned grid_x, unsigned grid_y, unsigned grid_z,
                                        unsigned block_x, unsigned block_y, unsigned block_z, unsigned shared_bytes,
                                        CUstream stream, void** kernel_params, void** extra);
using PFN_cuMemAlloc = CUresult (*)(CUdeviceptr* ptr, size_t bytes);  // _v2
using PFN_cuMemFree = CUresult (*)(CUdeviceptr ptr);                  // _v2
using PFN_cuMemHostAlloc = CUresult (*)(void** ptr, size_t bytes, unsigned flags);
using PFN_cuMemFreeHost = CUresult (*)(void* ptr);
using PFN_cuMemcpyHtoDAsync = CUresult (*)(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream);  // _v2
using PFN_cuMemcpyDtoHAsync = CUresult (*)(void* dst, CUdeviceptr src, size_t bytes, CUstream stream);        // _v2
using PFN_cuMemcpyDtoDAsync = CUresult (*)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);  // _v2
using PFN_cuMemsetD8Async = CUresult (*)(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream);
using PFN_cuStreamCreate = CUresult (*)(CUstream* stream, unsigned flags);
using PFN_cuStreamDestroy = CUresult (*)(CUstream stream);  // _v2
using PFN_cuStreamSynchronize = CUresult (*)(CUstream stream);
using PFN_cuStreamWaitEvent = CUresult (*)(CUstream stream, CUevent event, unsigned flags);
using PFN_cuEventCreate = CUresult (*)(CUevent* event, unsigned flags);
using PFN_cuEventDestroy = CUresult (*)(CUevent event);  // _v2
using PFN_cuEventRecord = CUresult (*)(CUevent event, CUstream stream);
using PFN_cuEventSynchronize = CUresult (*)(CUevent event);
using PFN_cuEventElapsedTime = CUresult (*)(float* ms, CUevent start, CUevent end);
using PFN_cuStreamBeginCapture = CUresult (*)(CUstream stream, int mode);  // _v2
using PFN_cuStreamEndCapture = CUresult (*)(CUstream stream, CUgraph* graph);
using PFN_cuGraphInstantiateWithFlags = CUresult (*)(CUgraphExec* exec, CUgraph graph, unsigned long long flags);
using PFN_cuGraphLaunch = CUresult (*)(CUgraphExec exec, CUstream stream);
using PFN_cuGraphExecDestroy = CUresult (*)(CUgraphExec exec);
using PFN_cuGraphDestroy = CUresult (*)(CUgraph graph);

}  // namespace strata::gpu::cuda
