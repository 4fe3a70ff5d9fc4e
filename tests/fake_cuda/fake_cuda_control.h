#pragma once
// What a test reads back from the fake CUDA driver (fake_libcuda.cc): the
// fake's own exports, beside the driver API. A test opens the same library
// the loader did (STRATA_CUDA_DRIVER; runtime/gpu/shared_library.h) and
// finds these by name.
//
// The fake is configured by environment variables, read at each cuInit (the
// loader calls cuInit at every OpenCudaDevice), which also resets its call
// counters and any sticky error:
//   FAKE_CUDA_DEVICES=N        devices (1)
//   FAKE_CUDA_CC=90            compute capability (90)
//   FAKE_CUDA_VERSION=13000    cuDriverGetVersion (13000; the legacy build: 11080)
//   FAKE_CUDA_MEMORY=BYTES     device memory (64 MiB); cuMemAlloc past it fails
//   FAKE_CUDA_KERNELS=a,b      the module's kernels (unset: any name is one)
//   FAKE_CUDA_PARAMS=a:24,b:8  kernels' parameter sizes (cuFuncGetParamInfo;
//                              unlisted kernels: the driver does not say)
//   FAKE_CUDA_HIDE=cuX,cuY     entry points cuGetProcAddress does not give
//   FAKE_CUDA_FAIL=call:n[:kind],...   the n-th call (from 1) of `call` fails:
//       kind oom (default for cuMemAlloc*), illegal (CUDA_ERROR_ILLEGAL_ADDRESS),
//       launch (CUDA_ERROR_LAUNCH_FAILED), nobinary, ptx (unsupported PTX
//       version), nodevice, invalidated (stream capture), invalid (the
//       default), or a number. Errors that poison a real context poison the
//       fake's: every later call returns the same error.

#include <cstddef>
#include <cstdint>

extern "C" {

struct FakeCudaLaunch {
  char kernel[64];
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  void* stream;
  int from_graph;           // 1: replayed by cuGraphLaunch
  size_t args_bytes;        // the parameter size the fake knew (FAKE_CUDA_PARAMS); 0 if none
  unsigned char args[256];  // the first args_bytes bytes of the argument struct
};

// Launches run (or replayed) since the last cuInit.
int fake_cuda_launch_count(void);
// Copies launch `index` into *out; 0 if there is no such launch.
int fake_cuda_get_launch(int index, FakeCudaLaunch* out);
// Device and pinned-host allocations alive now.
int fake_cuda_live_allocations(void);
int fake_cuda_live_host_allocations(void);
// Retains of device 0's primary context not yet released.
int fake_cuda_primary_context_retains(void);
// The mode of the last cuStreamBeginCapture (-1: none since cuInit).
int fake_cuda_last_capture_mode(void);
// The stream flags of the last cuStreamCreate (-1: none since cuInit).
int fake_cuda_last_stream_flags(void);
// The CUDA version cuGetProcAddress was last asked for `name` at (-1: never;
// kept across cuInit).
int fake_cuda_proc_version(const char* name);
// Calls of `name` since the last cuInit.
int fake_cuda_calls(const char* name);
// The size of the image cuModuleLoadData was last given, from its fatbin
// header (0: none loaded).
size_t fake_cuda_loaded_image_size(void);
// The last cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) value (-1: none).
int fake_cuda_last_max_dynamic_shared(void);

}  // extern "C"
