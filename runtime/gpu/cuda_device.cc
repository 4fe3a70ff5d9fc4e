#include "runtime/gpu/cuda_device.h"

#include <atomic>
#include <concepts>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "runtime/gpu/cuda_driver.h"
#include "runtime/base/fault_injection.h"
#include "runtime/gpu/driver_checks.h"
#include "strata/gpu_images_config.h"

namespace strata::gpu {
namespace {

using namespace cuda;  // NOLINT: the driver API's own names

// Errors after which the context is unusable: every later call in the
// process returns the same error, and only a new process recovers (cuda.h's
// words for each: "To continue using CUDA, the process must be terminated and
// relaunched", or for CUDA_ERROR_ASSERT "the context cannot be used anymore").
bool PoisonsContext(CUresult r) {
  switch (r) {
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_MPS_CLIENT_TERMINATED:
    case CUDA_ERROR_EXTERNAL_DEVICE: return true;
    default: return false;
  }
}

// Handles: the driver's own, cast (device.h's handle structs are never
// defined: a Stream is a CUstream, an Event a CUevent, a Graph a CUgraphExec,
// a Kernel the address of its KernelEntry).
CUstream ToCu(Stream s) { return reinterpret_cast<CUstream>(s); }
CUevent ToCu(Event e) { return reinterpret_cast<CUevent>(e); }
CUgraphExec ToCu(Graph g) { return reinterpret_cast<CUgraphExec>(g); }

struct KernelEntry {
  std::string name;
  CUfunction function = nullptr;
  size_t param_bytes = 0;       // the argument struct's size, when the driver says (0: unknown)
  uint32_t dynamic_shared = 0;  // the most dynamic shared memory a launch may ask for
};

// Each open device gets a number; a thread remembers the last one it made
// current, so a call on the same thread as the last one skips cuCtxSetCurrent.
std::atomic<uint64_t> next_device_serial{1};
thread_local uint64_t current_device_serial = 0;

class CudaDevice final : public Device {
 public:
  CudaDevice(std::shared_ptr<const CudaDriver> driver, int ordinal, const ModuleImage& image)
      : driver_(std::move(driver)), d_(*driver_), image_(image) {
    info_.kind = DeviceKind::kCuda;
    info_.ordinal = ordinal;
  }
  ~CudaDevice() override;

  Status Open();
  const DeviceInfo& info() const override { return info_; }

  Status MemoryInfo(uint64_t* free_bytes, uint64_t* total_bytes) override;
  Result<DevicePtr> Allocate(uint64_t bytes, std::string_view what) override;
  void Free(DevicePtr p) override;
  Result<void*> AllocatePinned(uint64_t bytes, std::string_view what) override;
  void FreePinned(void* p) override;

  Status CopyToDevice(DevicePtr dst, const void* src, uint64_t bytes, Stream stream) override;
  Status CopyToHost(void* dst, DevicePtr src, uint64_t bytes, Stream stream) override;
  Status CopyOnDevice(DevicePtr dst, DevicePtr src, uint64_t bytes, Stream stream) override;
  Status Fill(DevicePtr dst, uint8_t value, uint64_t bytes, Stream stream) override;

  Result<Kernel> FindKernel(std::string_view name) override;
  Status SetMaxDynamicShared(Kernel kernel, uint32_t bytes) override;
  Status Launch(Kernel kernel, Dim3 grid, Dim3 block, uint32_t dynamic_shared, Stream stream, const void* args,
                size_t args_bytes) override;

  Result<Stream> CreateStream() override;
  void DestroyStream(Stream stream) override;
  Status Synchronize(Stream stream) override;
  Result<Event> CreateEvent() override;
  void DestroyEvent(Event event) override;
  Status Record(Event event, Stream stream) override;
  Status StreamWait(Stream stream, Event event) override;
  Status EventSynchronize(Event event) override;
  Result<float> ElapsedMs(Event start, Event end) override;

  Status BeginCapture(Stream stream) override;
  Result<Graph> EndCapture(Stream stream) override;
  Status LaunchGraph(Graph graph, Stream stream) override;
  void DestroyGraph(Graph graph) override;

  Status poisoned() const override { return poisoned_; }

 private:
  // "CUDA device 0 (NVIDIA H200)"
  std::string Where() const {
    return "CUDA device " + std::to_string(info_.ordinal) + (info_.name.empty() ? "" : " (" + info_.name + ")");
  }
  // OK, or the error that poisoned the context; makes the context current on
  // this thread. Every call starts here.
  Status Enter();
  // The Status for `r` from `call` ("cuMemAlloc(4096 bytes for 'weights')"),
  // OK for CUDA_SUCCESS. Records a poisoning error.
  Status Check(CUresult r, std::string_view call);
  // The same, with the call described only when it failed: copies and
  // launches build no string when they succeed.
  template <std::invocable Describe>
  Status Check(CUresult r, const Describe& describe) {
    return r == CUDA_SUCCESS ? Status::Ok() : Check(r, std::string_view(describe()));
  }
  CUstream StreamOf(Stream s) const { return s == nullptr ? default_stream_ : ToCu(s); }
  Status LoadModule();
  // The gpu-copy fault site (runtime/base/fault_injection.h), as the software
  // GPU has it: OK, or the failure `call` reports instead of running.
  Status CopyFault(const char* call, uint64_t bytes);

  const std::shared_ptr<const CudaDriver> driver_;
  const CudaDriver& d_;
  const ModuleImage image_;
  const uint64_t serial_ = next_device_serial.fetch_add(1);
  DeviceInfo info_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUmodule module_ = nullptr;
  // The device's default stream: one of its own, non-blocking, rather than
  // CUDA's legacy NULL stream, which cannot be captured into a graph and
  // synchronizes with every blocking stream of the context.
  CUstream default_stream_ = nullptr;
  std::map<std::string, KernelEntry, std::less<>> kernels_;
  Status poisoned_;
};

Status CudaDevice::Enter() {
  if (!poisoned_.ok()) return poisoned_;
  if (current_device_serial != serial_) {
    if (const CUresult r = d_.CtxSetCurrent(context_); r != CUDA_SUCCESS) return Check(r, "cuCtxSetCurrent");
    current_device_serial = serial_;
  }
  return Status::Ok();
}

Status CudaDevice::Check(CUresult r, std::string_view call) {
  if (r == CUDA_SUCCESS) return Status::Ok();
  std::string message = std::string(call) + " on " + Where() + ": " + d_.ErrorText(r);
  if (PoisonsContext(r)) {
    message += "; the CUDA context is unusable after this error (every later call fails with it): restart the process";
    if (poisoned_.ok()) poisoned_ = Internal(message);
    return poisoned_;
  }
  if (r == CUDA_ERROR_OUT_OF_MEMORY || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES) {
    return ResourceExhausted(std::move(message));
  }
  return Internal(std::move(message));
}

CudaDevice::~CudaDevice() {
  if (context_ == nullptr) return;
  // Best effort: after a poisoning error these fail too, and the context's
  // memory goes with its last release.
  if (d_.CtxSetCurrent(context_) == CUDA_SUCCESS) {
    current_device_serial = serial_;
    if (module_ != nullptr) (void)d_.ModuleUnload(module_);
    if (default_stream_ != nullptr) (void)d_.StreamDestroy(default_stream_);
  }
  (void)d_.DevicePrimaryCtxRelease(device_);
  current_device_serial = 0;
}

Status CudaDevice::Open() {
  const int ordinal = info_.ordinal;
  int count = 0;
  STRATA_RETURN_IF_ERROR(Check(d_.DeviceGetCount(&count), "cuDeviceGetCount"));
  if (count == 0) {
    return Unsupported("no CUDA device: the driver " + d_.library + " (CUDA " + d_.VersionNumber() +
                       ") sees none (check nvidia-smi and CUDA_VISIBLE_DEVICES), or run with --backend cpu");
  }
  if (ordinal < 0 || ordinal >= count) {
    return InvalidArgument("CUDA device " + std::to_string(ordinal) + " does not exist: the driver sees " +
                           std::to_string(count) + " (0 to " + std::to_string(count - 1) + ")");
  }
  STRATA_RETURN_IF_ERROR(Check(d_.DeviceGet(&device_, ordinal), "cuDeviceGet"));
  char name[256] = {};
  STRATA_RETURN_IF_ERROR(Check(d_.DeviceGetName(name, sizeof name - 1, device_), "cuDeviceGetName"));
  info_.name = name;

  const auto attribute = [&](int which, const char* what, int* value) {
    return Check(d_.DeviceGetAttribute(value, which, device_),
                 [&] { return std::string("cuDeviceGetAttribute(") + what + ")"; });
  };
  int major = 0, minor = 0, sms = 0, threads = 0, warp = 0, shared = 0, optin = 0;
  STRATA_RETURN_IF_ERROR(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability major", &major));
  STRATA_RETURN_IF_ERROR(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability minor", &minor));
  STRATA_RETURN_IF_ERROR(attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count", &sms));
  STRATA_RETURN_IF_ERROR(attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block", &threads));
  STRATA_RETURN_IF_ERROR(attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size", &warp));
  STRATA_RETURN_IF_ERROR(
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "shared memory per block", &shared));
  STRATA_RETURN_IF_ERROR(
      attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "shared memory per block opt-in", &optin));
  size_t total = 0;
  STRATA_RETURN_IF_ERROR(Check(d_.DeviceTotalMem(&total, device_), "cuDeviceTotalMem"));

  info_.arch = "sm_" + std::to_string(major * 10 + minor);
  info_.driver = "CUDA driver " + d_.VersionNumber();
  info_.compute_capability = major * 10 + minor;
  info_.warp_size = static_cast<uint32_t>(warp);
  info_.multiprocessors = static_cast<uint32_t>(sms);
  info_.max_threads_per_block = static_cast<uint32_t>(threads);
  info_.shared_per_block = static_cast<uint32_t>(shared);
  info_.shared_per_block_optin = static_cast<uint32_t>(optin > shared ? optin : shared);
  info_.total_memory = total;
  info_.graphs = true;
  info_.int8_mma = info_.compute_capability >= 80;
  info_.dp4a = info_.compute_capability >= 61;

  STRATA_RETURN_IF_ERROR(Check(d_.DevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain"));
  STRATA_RETURN_IF_ERROR(Enter());
  STRATA_RETURN_IF_ERROR(Check(d_.StreamCreate(&default_stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  return LoadModule();
}

Status CudaDevice::LoadModule() {
  const CUresult r = d_.ModuleLoadData(&module_, image_.data);
  if (r == CUDA_SUCCESS) return Status::Ok();
  module_ = nullptr;
  const std::string has = std::string("this build's CUDA image has ") + image_.targets + " (" + image_.compiler + ")";
  if (r == CUDA_ERROR_NO_BINARY_FOR_GPU) {
    return Unsupported("cuModuleLoadData on " + Where() + ": " + d_.ErrorText(r) + ": the device is " + info_.arch +
                       " (compute capability " + std::to_string(info_.compute_capability / 10) + "." +
                       std::to_string(info_.compute_capability % 10) + "), and " + has +
                       "; configure with -DSTRATA_CUDA_ARCHS=" + std::to_string(info_.compute_capability) +
                       " if that nvcc supports it, or run with --backend cpu");
  }
  if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_INVALID_IMAGE ||
      r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND) {
    return Unsupported("cuModuleLoadData on " + Where() + ": " + d_.ErrorText(r) + ": the driver (CUDA " +
                       d_.VersionNumber() + ") cannot load " + has +
                       "; a driver older than the compiler's CUDA version cannot; update "
                       "the NVIDIA driver, or run with --backend cpu");
  }
  return Check(r, "cuModuleLoadData (" + std::to_string(image_.size) + "-byte image: " + image_.targets + ")");
}

// --- memory --------------------------------------------------------------------

Status CudaDevice::MemoryInfo(uint64_t* free_bytes, uint64_t* total_bytes) {
  STRATA_RETURN_IF_ERROR(Enter());
  size_t f = 0, t = 0;
  STRATA_RETURN_IF_ERROR(Check(d_.MemGetInfo(&f, &t), "cuMemGetInfo"));
  *free_bytes = f;
  *total_bytes = t;
  return Status::Ok();
}

Result<DevicePtr> CudaDevice::Allocate(uint64_t bytes, std::string_view what) {
  STRATA_RETURN_IF_ERROR(Enter());
  if (bytes == 0) return InvalidArgument("Allocate(0 bytes) for '" + std::string(what) + "' on " + Where());
  if (ShouldInjectFault(FaultSite::kGpuAllocate)) {
    return ResourceExhausted("cuMemAlloc(" + ByteCount(bytes) + " for '" + std::string(what) + "') on " + Where() +
                             ": injected fault (gpu-allocate)");
  }
  CUdeviceptr p = 0;
  const CUresult r = d_.MemAlloc(&p, bytes);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    size_t f = 0, t = 0;
    const std::string state =
        d_.MemGetInfo(&f, &t) == CUDA_SUCCESS ? "; " + ByteCount(f) + " of " + ByteCount(t) + " free" : "";
    return ResourceExhausted("cuMemAlloc(" + ByteCount(bytes) + " for '" + std::string(what) + "') on " + Where() +
                             ": " + d_.ErrorText(r) + state + "; use a smaller context or fewer layers on the GPU");
  }
  STRATA_RETURN_IF_ERROR(
      Check(r, [&] { return "cuMemAlloc(" + ByteCount(bytes) + " for '" + std::string(what) + "')"; }));
  return static_cast<DevicePtr>(p);
}

void CudaDevice::Free(DevicePtr p) {
  if (p == 0 || !Enter().ok()) return;
  (void)Check(d_.MemFree(p), "cuMemFree");
}

Result<void*> CudaDevice::AllocatePinned(uint64_t bytes, std::string_view what) {
  STRATA_RETURN_IF_ERROR(Enter());
  if (bytes == 0) return InvalidArgument("AllocatePinned(0 bytes) for '" + std::string(what) + "' on " + Where());
  void* p = nullptr;
  // Portable: pinned for every context, so a buffer serves any device.
  STRATA_RETURN_IF_ERROR(Check(d_.MemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE), [&] {
    return "cuMemHostAlloc(" + ByteCount(bytes) + " for '" + std::string(what) + "')";
  }));
  return p;
}

void CudaDevice::FreePinned(void* p) {
  if (p == nullptr || !Enter().ok()) return;
  (void)Check(d_.MemFreeHost(p), "cuMemFreeHost");
}

// --- copies ----------------------------------------------------------------------

Status CudaDevice::CopyToDevice(DevicePtr dst, const void* src, uint64_t bytes, Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  if (bytes == 0) return Status::Ok();
  STRATA_RETURN_IF_ERROR(CopyFault("cuMemcpyHtoDAsync", bytes));
  return Check(d_.MemcpyHtoDAsync(dst, src, bytes, StreamOf(stream)),
               [&] { return "cuMemcpyHtoDAsync(" + ByteCount(bytes) + ")"; });
}

Status CudaDevice::CopyToHost(void* dst, DevicePtr src, uint64_t bytes, Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  if (bytes == 0) return Status::Ok();
  STRATA_RETURN_IF_ERROR(CopyFault("cuMemcpyDtoHAsync", bytes));
  return Check(d_.MemcpyDtoHAsync(dst, src, bytes, StreamOf(stream)),
               [&] { return "cuMemcpyDtoHAsync(" + ByteCount(bytes) + ")"; });
}

Status CudaDevice::CopyOnDevice(DevicePtr dst, DevicePtr src, uint64_t bytes, Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  if (bytes == 0) return Status::Ok();
  STRATA_RETURN_IF_ERROR(CopyFault("cuMemcpyDtoDAsync", bytes));
  return Check(d_.MemcpyDtoDAsync(dst, src, bytes, StreamOf(stream)),
               [&] { return "cuMemcpyDtoDAsync(" + ByteCount(bytes) + ")"; });
}

Status CudaDevice::Fill(DevicePtr dst, uint8_t value, uint64_t bytes, Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  if (bytes == 0) return Status::Ok();
  STRATA_RETURN_IF_ERROR(CopyFault("cuMemsetD8Async", bytes));
  return Check(d_.MemsetD8Async(dst, value, bytes, StreamOf(stream)),
               [&] { return "cuMemsetD8Async(" + ByteCount(bytes) + ")"; });
}

Status CudaDevice::CopyFault(const char* call, uint64_t bytes) {
  if (!ShouldInjectFault(FaultSite::kGpuCopy)) return Status::Ok();
  return Internal(std::string(call) + "(" + ByteCount(bytes) + ") on " + Where() + ": injected fault (gpu-copy)");
}

// --- kernels -----------------------------------------------------------------------

Result<Kernel> CudaDevice::FindKernel(std::string_view name) {
  STRATA_RETURN_IF_ERROR(Enter());
  if (auto it = kernels_.find(name); it != kernels_.end()) return reinterpret_cast<Kernel>(&it->second);
  KernelEntry entry;
  entry.name = std::string(name);
  const CUresult r = d_.ModuleGetFunction(&entry.function, module_, entry.name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) {
    return NotFound("kernel " + entry.name + " is not in this build's CUDA image (" + image_.targets + ", " +
                    image_.compiler +
                    "): runtime/gpu/kernels/all_kernels.cu must include the file "
                    "that defines it");
  }
  STRATA_RETURN_IF_ERROR(Check(r, [&] { return "cuModuleGetFunction(" + entry.name + ")"; }));
  entry.dynamic_shared = info_.shared_per_block;
  if (d_.FuncGetParamInfo != nullptr) {
    size_t offset = 0, size = 0;
    // Unknown when the driver does not say (then Launch cannot check).
    if (d_.FuncGetParamInfo(entry.function, 0, &offset, &size) == CUDA_SUCCESS) entry.param_bytes = size;
  }
  auto [it, inserted] = kernels_.emplace(entry.name, std::move(entry));
  return reinterpret_cast<Kernel>(&it->second);
}

Status CudaDevice::SetMaxDynamicShared(Kernel kernel, uint32_t bytes) {
  STRATA_RETURN_IF_ERROR(Enter());
  auto* k = reinterpret_cast<KernelEntry*>(kernel);
  if (bytes > info_.shared_per_block_optin) {
    return InvalidArgument("kernel " + k->name + ": " + std::to_string(bytes) +
                           " bytes of dynamic shared memory "
                           "asked; " +
                           Where() + " allows " + std::to_string(info_.shared_per_block_optin) + " per block");
  }
  STRATA_RETURN_IF_ERROR(
      Check(d_.FuncSetAttribute(k->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes)),
            [&] { return "cuFuncSetAttribute(" + k->name + ", max dynamic shared " + std::to_string(bytes) + ")"; }));
  k->dynamic_shared = bytes;
  return Status::Ok();
}

Status CudaDevice::Launch(Kernel kernel, Dim3 grid, Dim3 block, uint32_t dynamic_shared, Stream stream,
                          const void* args, size_t args_bytes) {
  STRATA_RETURN_IF_ERROR(Enter());
  const auto* k = reinterpret_cast<const KernelEntry*>(kernel);
  STRATA_RETURN_IF_ERROR(CheckLaunch(k->name, grid, block, dynamic_shared, args, args_bytes, k->param_bytes,
                                     info_.max_threads_per_block, k->dynamic_shared));
  // The gpu-launch and gpu-poison fault sites, on the paths the driver's own
  // errors take (gpu-poison as an illegal address: the device is poisoned).
  if (ShouldInjectFault(FaultSite::kGpuLaunch)) {
    return ResourceExhausted("cuLaunchKernel(" + k->name + ") on " + Where() + ": injected fault (gpu-launch)");
  }
  if (ShouldInjectFault(FaultSite::kGpuPoison)) {
    return Check(CUDA_ERROR_ILLEGAL_ADDRESS, [&] { return "cuLaunchKernel(" + k->name + ") [injected fault (gpu-poison)]"; });
  }
  // One parameter: the struct. The driver copies as many bytes from this
  // address as the kernel's parameter has.
  void* params[1] = {const_cast<void*>(args)};
  return Check(d_.LaunchKernel(k->function, grid.x, grid.y, grid.z, block.x, block.y, block.z, dynamic_shared,
                               StreamOf(stream), params, nullptr),
               [&] { return "cuLaunchKernel(" + k->name + ")"; });
}

// --- order and time -----------------------------------------------------------------

Result<Stream> CudaDevice::CreateStream() {
  STRATA_RETURN_IF_ERROR(Enter());
  CUstream s = nullptr;
  STRATA_RETURN_IF_ERROR(Check(d_.StreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  return reinterpret_cast<Stream>(s);
}

void CudaDevice::DestroyStream(Stream stream) {
  if (stream == nullptr || !Enter().ok()) return;
  (void)Check(d_.StreamDestroy(ToCu(stream)), "cuStreamDestroy");
}

Status CudaDevice::Synchronize(Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  return Check(d_.StreamSynchronize(StreamOf(stream)), "cuStreamSynchronize");
}

Result<Event> CudaDevice::CreateEvent() {
  STRATA_RETURN_IF_ERROR(Enter());
  CUevent e = nullptr;
  STRATA_RETURN_IF_ERROR(Check(d_.EventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate"));
  return reinterpret_cast<Event>(e);
}

void CudaDevice::DestroyEvent(Event event) {
  if (event == nullptr || !Enter().ok()) return;
  (void)Check(d_.EventDestroy(ToCu(event)), "cuEventDestroy");
}

Status CudaDevice::Record(Event event, Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  return Check(d_.EventRecord(ToCu(event), StreamOf(stream)), "cuEventRecord");
}

Status CudaDevice::StreamWait(Stream stream, Event event) {
  STRATA_RETURN_IF_ERROR(Enter());
  return Check(d_.StreamWaitEvent(StreamOf(stream), ToCu(event), CU_EVENT_WAIT_DEFAULT), "cuStreamWaitEvent");
}

Status CudaDevice::EventSynchronize(Event event) {
  STRATA_RETURN_IF_ERROR(Enter());
  return Check(d_.EventSynchronize(ToCu(event)), "cuEventSynchronize");
}

Result<float> CudaDevice::ElapsedMs(Event start, Event end) {
  STRATA_RETURN_IF_ERROR(Enter());
  float ms = 0;
  STRATA_RETURN_IF_ERROR(Check(d_.EventElapsedTime(&ms, ToCu(start), ToCu(end)), "cuEventElapsedTime"));
  return ms;
}

// --- graphs ---------------------------------------------------------------------------

// Thread-local capture: while this thread captures, a call on it that cannot
// be captured (an allocation, a synchronous copy: a bug in the caller) fails
// and invalidates the capture, so EndCapture reports it, rather than running
// outside the graph (relaxed mode). Unlike global mode, other threads' work
// on other devices (each device is driven by its own thread) is not affected.
Status CudaDevice::BeginCapture(Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  return Check(d_.StreamBeginCapture(StreamOf(stream), CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "cuStreamBeginCapture");
}

Result<Graph> CudaDevice::EndCapture(Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  CUgraph graph = nullptr;
  const CUresult r = d_.StreamEndCapture(StreamOf(stream), &graph);
  if (r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
    return FailedPrecondition("cuStreamEndCapture on " + Where() + ": " + d_.ErrorText(r) +
                              ": a call during the capture could not be captured (an allocation, a synchronization "
                              "or the legacy default stream): a bug in the captured sequence");
  }
  STRATA_RETURN_IF_ERROR(Check(r, "cuStreamEndCapture"));
  CUgraphExec exec = nullptr;
  const CUresult ri = d_.GraphInstantiateWithFlags(&exec, graph, 0);
  // The executable graph holds what it needs; the captured one can go now.
  (void)d_.GraphDestroy(graph);
  STRATA_RETURN_IF_ERROR(Check(ri, "cuGraphInstantiateWithFlags"));
  return reinterpret_cast<Graph>(exec);
}

Status CudaDevice::LaunchGraph(Graph graph, Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  return Check(d_.GraphLaunch(ToCu(graph), StreamOf(stream)), "cuGraphLaunch");
}

void CudaDevice::DestroyGraph(Graph graph) {
  if (graph == nullptr || !Enter().ok()) return;
  (void)Check(d_.GraphExecDestroy(ToCu(graph)), "cuGraphExecDestroy");
}

}  // namespace

Result<std::unique_ptr<Device>> OpenCudaDeviceWithImage(int ordinal, const ModuleImage& image) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const CudaDriver> driver, LoadCudaDriver());
  auto device = std::make_unique<CudaDevice>(std::move(driver), ordinal, image);
  STRATA_RETURN_IF_ERROR(device->Open());
  return std::unique_ptr<Device>(std::move(device));
}

Result<std::unique_ptr<Device>> OpenCudaDevice(int ordinal) {
  const ModuleImage* image = CudaModuleImage();
  if (image == nullptr) {
    return Unsupported(std::string("this build has no CUDA device code (configure said: \"") + STRATA_GPU_CUDA_NOTE +
                       "\"): rebuild with nvcc (the CUDA toolkit) installed, or run with --backend cpu");
  }
  return OpenCudaDeviceWithImage(ordinal, *image);
}

}  // namespace strata::gpu
