// runtime/gpu/cuda_driver_api.h and hip_driver_api.h declare the driver
// APIs by hand, so that the host build needs neither toolkit. Where the
// toolkits' own headers are on the build machine (CUDA's cuda.h, Debian's
// HIP headers), this compares every value we declared with theirs: a wrong
// number fails to compile. (Built only when the headers are found:
// tests/fake_cuda/CMakeLists.txt says which.)

#include <gtest/gtest.h>

#include "runtime/gpu/cuda_driver_api.h"
#include "runtime/gpu/hip_driver_api.h"

// The headers define these as macros: our values are taken before they are
// included.
constexpr long long kOurHostAllocPortable = strata::gpu::cuda::CU_MEMHOSTALLOC_PORTABLE;
constexpr long long kOurHipStreamNonBlocking = strata::gpu::hip::hipStreamNonBlocking;
constexpr long long kOurHipEventDefault = strata::gpu::hip::hipEventDefault;
constexpr long long kOurHipHostMallocDefault = strata::gpu::hip::hipHostMallocDefault;

#if defined(STRATA_HAVE_CUDA_H)
#include <cuda.h>
#endif
#if defined(STRATA_HAVE_HIP_H)
#include <hip/hip_runtime_api.h>
#endif

namespace {

#if defined(STRATA_HAVE_CUDA_H)
namespace ours = strata::gpu::cuda;
#define SAME(name) static_assert(static_cast<long long>(ours::name) == static_cast<long long>(::name), #name)
SAME(CUDA_SUCCESS);
SAME(CUDA_ERROR_INVALID_VALUE);
SAME(CUDA_ERROR_OUT_OF_MEMORY);
SAME(CUDA_ERROR_NOT_INITIALIZED);
SAME(CUDA_ERROR_DEINITIALIZED);
SAME(CUDA_ERROR_STUB_LIBRARY);
SAME(CUDA_ERROR_DEVICE_UNAVAILABLE);
SAME(CUDA_ERROR_NO_DEVICE);
SAME(CUDA_ERROR_INVALID_DEVICE);
SAME(CUDA_ERROR_INVALID_IMAGE);
SAME(CUDA_ERROR_INVALID_CONTEXT);
SAME(CUDA_ERROR_NO_BINARY_FOR_GPU);
SAME(CUDA_ERROR_ECC_UNCORRECTABLE);
SAME(CUDA_ERROR_INVALID_PTX);
SAME(CUDA_ERROR_JIT_COMPILER_NOT_FOUND);
SAME(CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
SAME(CUDA_ERROR_CONTAINED);
SAME(CUDA_ERROR_INVALID_HANDLE);
SAME(CUDA_ERROR_NOT_FOUND);
SAME(CUDA_ERROR_NOT_READY);
SAME(CUDA_ERROR_ILLEGAL_ADDRESS);
SAME(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
SAME(CUDA_ERROR_LAUNCH_TIMEOUT);
SAME(CUDA_ERROR_ASSERT);
SAME(CUDA_ERROR_HARDWARE_STACK_ERROR);
SAME(CUDA_ERROR_ILLEGAL_INSTRUCTION);
SAME(CUDA_ERROR_MISALIGNED_ADDRESS);
SAME(CUDA_ERROR_INVALID_ADDRESS_SPACE);
SAME(CUDA_ERROR_INVALID_PC);
SAME(CUDA_ERROR_LAUNCH_FAILED);
SAME(CUDA_ERROR_TENSOR_MEMORY_LEAK);
SAME(CUDA_ERROR_NOT_SUPPORTED);
SAME(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
SAME(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE);
SAME(CUDA_ERROR_MPS_CLIENT_TERMINATED);
SAME(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
SAME(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
SAME(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
SAME(CUDA_ERROR_EXTERNAL_DEVICE);
SAME(CUDA_ERROR_UNKNOWN);
SAME(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
SAME(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
SAME(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
SAME(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
SAME(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
SAME(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
SAME(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
SAME(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
SAME(CU_STREAM_NON_BLOCKING);
SAME(CU_EVENT_DEFAULT);
SAME(CU_EVENT_WAIT_DEFAULT);
static_assert(kOurHostAllocPortable == CU_MEMHOSTALLOC_PORTABLE);
SAME(CU_STREAM_CAPTURE_MODE_GLOBAL);
SAME(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
SAME(CU_STREAM_CAPTURE_MODE_RELAXED);
SAME(CU_GET_PROC_ADDRESS_DEFAULT);
SAME(CU_GET_PROC_ADDRESS_LEGACY_STREAM);
SAME(CU_GET_PROC_ADDRESS_SUCCESS);
SAME(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
SAME(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
#undef SAME
// The types: an enum is passed as an int; handles and device pointers are
// the same size.
static_assert(sizeof(CUresult) == sizeof(ours::CUresult));
static_assert(sizeof(CUdevice) == sizeof(ours::CUdevice));
static_assert(sizeof(CUdeviceptr) == sizeof(ours::CUdeviceptr));
static_assert(sizeof(CUstreamCaptureMode) == sizeof(int));
static_assert(sizeof(CUdevice_attribute) == sizeof(int));
static_assert(sizeof(CUdriverProcAddressQueryResult) == sizeof(int));
#endif

#if defined(STRATA_HAVE_HIP_H)
namespace hip_ours = strata::gpu::hip;
#define SAME(name) static_assert(static_cast<long long>(hip_ours::name) == static_cast<long long>(::name), #name)
SAME(hipSuccess);
SAME(hipErrorInvalidValue);
SAME(hipErrorOutOfMemory);
SAME(hipErrorNotInitialized);
SAME(hipErrorInsufficientDriver);
SAME(hipErrorNoDevice);
SAME(hipErrorInvalidDevice);
SAME(hipErrorInvalidImage);
SAME(hipErrorNoBinaryForGpu);
SAME(hipErrorECCNotCorrectable);
SAME(hipErrorInvalidKernelFile);
SAME(hipErrorSharedObjectInitFailed);
SAME(hipErrorNotFound);
SAME(hipErrorIllegalAddress);
SAME(hipErrorLaunchOutOfResources);
SAME(hipErrorLaunchTimeOut);
SAME(hipErrorAssert);
SAME(hipErrorLaunchFailure);
SAME(hipErrorNotSupported);
SAME(hipErrorStreamCaptureInvalidated);
SAME(hipDeviceAttributeComputeCapabilityMajor);
SAME(hipDeviceAttributeMaxThreadsPerBlock);
SAME(hipDeviceAttributeComputeCapabilityMinor);
SAME(hipDeviceAttributeMultiprocessorCount);
SAME(hipDeviceAttributeMaxSharedMemoryPerBlock);
SAME(hipDeviceAttributeSharedMemPerBlockOptin);
SAME(hipDeviceAttributeTotalGlobalMem);
SAME(hipDeviceAttributeWarpSize);
static_assert(kOurHipStreamNonBlocking == hipStreamNonBlocking);
static_assert(kOurHipEventDefault == hipEventDefault);
static_assert(kOurHipHostMallocDefault == hipHostMallocDefault);
SAME(hipStreamCaptureModeGlobal);
SAME(hipStreamCaptureModeThreadLocal);
SAME(hipStreamCaptureModeRelaxed);
#undef SAME
static_assert(sizeof(hipError_t) == sizeof(hip_ours::hipError_t));
static_assert(sizeof(hipDevice_t) == sizeof(hip_ours::hipDevice_t));
static_assert(sizeof(hipDeviceptr_t) == sizeof(hip_ours::hipDeviceptr_t));
#endif

// The checks are the static_asserts above; this says which headers they saw.
TEST(GpuApiDeclarations, ComparedWithTheToolkitsHeaders) {
  int compared = 0;
#if defined(STRATA_HAVE_CUDA_H)
  ++compared;
  std::printf("compared with cuda.h of CUDA %d\n", CUDA_VERSION);
#endif
#if defined(STRATA_HAVE_HIP_H)
  ++compared;
  std::printf("compared with hip_runtime_api.h of HIP %d.%d\n", HIP_VERSION_MAJOR, HIP_VERSION_MINOR);
#endif
  EXPECT_GT(compared, 0) << "built without either header: tests/fake_cuda/CMakeLists.txt should not have built it";
}

}  // namespace
