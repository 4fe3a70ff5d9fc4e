#pragma once
// gpu::Device: the small interface between the GPU backend (gpu_backend.h)
// and a device. Three implementations:
//   * the CUDA driver API (cuda_device.cc), loaded at run time from
//     libcuda.so.1 / nvcuda.dll: no nvcc, cudart or cuBLAS on the host side;
//   * HIP's module API (hip_device.cc), loaded from libamdhip64;
//   * the software GPU (software/): the same kernel source compiled as host
//     C++ and run on the CPU with CUDA's execution model. Test
//     infrastructure, never a serving path (docs/gpu.md).
//
// A device holds one module image (the kernels of this build, embedded:
// images.h) and finds kernels by name. Every kernel takes one argument: a
// plain struct of kernels/kernel_args.h, passed by value, so a launch is
// (kernel, grid, block, dynamic shared bytes, stream, the struct's bytes).
//
// Every call returns a Status naming the call and the driver's error (name
// and text). An error inside a kernel (an illegal address) poisons the
// context on real devices: every later call fails with the first error, and
// poisoned() says so, so a server stops taking work on that device.
//
// Threading: a device is used from one thread at a time (the backend's).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/base/status.h"

namespace strata::gpu {

enum class DeviceKind : uint8_t { kCuda = 0, kHip = 1, kSoftware = 2 };
std::string_view DeviceKindName(DeviceKind k);  // "cuda", "hip", "software-gpu"

// A device address. 0 is never a valid allocation.
using DevicePtr = uint64_t;

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
};

// Opaque handles; each implementation defines the structs. A null Stream is
// the device's default stream.
struct StreamImpl;
struct EventImpl;
struct GraphImpl;
struct KernelImpl;
using Stream = StreamImpl*;
using Event = EventImpl*;
using Graph = GraphImpl*;
using Kernel = KernelImpl*;

struct DeviceInfo {
  DeviceKind kind = DeviceKind::kSoftware;
  int ordinal = 0;
  std::string name;    // "NVIDIA H200", "software GPU (warp 32)"
  std::string arch;    // "sm_90", "gfx90a", "software"
  std::string driver;  // "CUDA driver 13.0", "HIP 5.2", "software"
  int compute_capability = 0;  // CUDA: major * 10 + minor (90 for sm_90); 0 elsewhere
  uint32_t warp_size = 32;
  uint32_t multiprocessors = 1;
  uint32_t max_threads_per_block = 1024;
  uint32_t shared_per_block = 48u << 10;        // dynamic + static, without opt-in
  uint32_t shared_per_block_optin = 48u << 10;  // with SetMaxDynamicShared
  uint64_t total_memory = 0;
  bool graphs = false;   // BeginCapture/EndCapture/LaunchGraph work
  bool int8_mma = false; // tensor-core int8 MMA (CUDA compute capability >= 8.0)
  bool dp4a = true;      // a 4-way int8 dot product instruction
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const DeviceInfo& info() const = 0;

  // --- memory -----------------------------------------------------------------
  // Free and total device memory now.
  virtual Status MemoryInfo(uint64_t* free_bytes, uint64_t* total_bytes) = 0;
  // `bytes` of device memory (contents undefined). Errors: kResourceExhausted
  // naming `what` and the size.
  virtual Result<DevicePtr> Allocate(uint64_t bytes, std::string_view what) = 0;
  virtual void Free(DevicePtr p) = 0;
  // Page-locked host memory, for copies that overlap with compute.
  virtual Result<void*> AllocatePinned(uint64_t bytes, std::string_view what) = 0;
  virtual void FreePinned(void* p) = 0;

  // --- copies (ordered on `stream` with its launches) ---------------------------
  // Host memory must stay valid and unchanged until the stream is synchronized.
  virtual Status CopyToDevice(DevicePtr dst, const void* src, uint64_t bytes, Stream stream) = 0;
  virtual Status CopyToHost(void* dst, DevicePtr src, uint64_t bytes, Stream stream) = 0;
  virtual Status CopyOnDevice(DevicePtr dst, DevicePtr src, uint64_t bytes, Stream stream) = 0;
  virtual Status Fill(DevicePtr dst, uint8_t value, uint64_t bytes, Stream stream) = 0;

  // --- kernels ------------------------------------------------------------------
  // A kernel of the module image. Errors: kNotFound naming it.
  virtual Result<Kernel> FindKernel(std::string_view name) = 0;
  // Allows a kernel dynamic shared memory above 48 KiB (up to
  // info().shared_per_block_optin).
  virtual Status SetMaxDynamicShared(Kernel kernel, uint32_t bytes) = 0;
  // Launches `kernel` with its one argument struct (`args`, `args_bytes`).
  virtual Status Launch(Kernel kernel, Dim3 grid, Dim3 block, uint32_t dynamic_shared, Stream stream,
                        const void* args, size_t args_bytes) = 0;

  // --- order and time -------------------------------------------------------------
  virtual Result<Stream> CreateStream() = 0;
  virtual void DestroyStream(Stream stream) = 0;
  // Waits until everything queued on `stream` has run.
  virtual Status Synchronize(Stream stream) = 0;
  virtual Result<Event> CreateEvent() = 0;
  virtual void DestroyEvent(Event event) = 0;
  virtual Status Record(Event event, Stream stream) = 0;
  // Later work on `stream` waits for `event`.
  virtual Status StreamWait(Stream stream, Event event) = 0;
  virtual Status EventSynchronize(Event event) = 0;
  // Milliseconds between two recorded, completed events.
  virtual Result<float> ElapsedMs(Event start, Event end) = 0;

  // --- graphs (info().graphs) -------------------------------------------------------
  // Launches and copies queued on `stream` between BeginCapture and
  // EndCapture are recorded, not run; LaunchGraph replays them.
  virtual Status BeginCapture(Stream stream) = 0;
  virtual Result<Graph> EndCapture(Stream stream) = 0;
  virtual Status LaunchGraph(Graph graph, Stream stream) = 0;
  virtual void DestroyGraph(Graph graph) = 0;

  // The first error that left the context unusable (OK while it is usable).
  virtual Status poisoned() const = 0;
};

// --- opening a device ---------------------------------------------------------

struct SoftwareGpuOptions {
  uint32_t warp_size = 32;               // 32, or 64 as a gfx90a wavefront (the kernels are compiled for both)
  uint64_t memory_bytes = 16ull << 30;   // the memory it reports and allows (taken from host RAM as used)
  int threads = 1;                       // host threads that run a launch's blocks
};
// The software GPU (software/sgpu_device.h): always available.
Result<std::unique_ptr<Device>> OpenSoftwareGpu(const SoftwareGpuOptions& options);

// CUDA device `ordinal` through the driver API, its module loaded from this
// build's CUDA image; HIP device `ordinal` likewise. Errors (kUnsupported,
// saying what a user can do): this build has no image for it (nvcc or hipcc
// was missing at configure time); no driver (the library is not found, or
// its version is too old); no device; a device this build's image has no
// code for.
Result<std::unique_ptr<Device>> OpenCudaDevice(int ordinal);
Result<std::unique_ptr<Device>> OpenHipDevice(int ordinal);

}  // namespace strata::gpu
