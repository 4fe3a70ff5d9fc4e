#include "runtime/gpu/hip_device.h"

#include <atomic>
#include <concepts>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/base/fault_injection.h"
#include "runtime/gpu/driver_checks.h"
#include "runtime/gpu/hip_driver.h"
#include "strata/gpu_images_config.h"

namespace strata::gpu {

namespace {

using namespace hip;  // NOLINT: HIP's own names

// Errors after which the device is unusable. On AMD GPUs a memory fault in a
// kernel usually ends the process in the ROCm runtime's queue-error handler
// before HIP can return it; when HIP does return one of these, the state is
// treated as CUDA's sticky errors are.
bool PoisonsDevice(hipError_t e) {
  switch (e) {
    case hipErrorECCNotCorrectable:
    case hipErrorIllegalAddress:
    case hipErrorLaunchTimeOut:
    case hipErrorAssert:
    case hipErrorLaunchFailure: return true;
    default: return false;
  }
}

hipStream_t ToHip(Stream s) { return reinterpret_cast<hipStream_t>(s); }
hipEvent_t ToHip(Event e) { return reinterpret_cast<hipEvent_t>(e); }
hipGraphExec_t ToHip(Graph g) { return reinterpret_cast<hipGraphExec_t>(g); }
void* ToHip(DevicePtr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

struct KernelEntry {
  std::string name;
  hipFunction_t function = nullptr;
  uint32_t dynamic_shared = 0;  // the most dynamic shared memory a launch may ask for
};

// As in cuda_device.cc: the device this thread last made current.
std::atomic<uint64_t> next_device_serial{1};
thread_local uint64_t current_device_serial = 0;

class HipDevice final : public Device {
 public:
  HipDevice(std::shared_ptr<const HipDriver> driver, int ordinal, const ModuleImage& image)
      : driver_(std::move(driver)), d_(*driver_), image_(image) {
    info_.kind = DeviceKind::kHip;
    info_.ordinal = ordinal;
  }
  ~HipDevice() override;

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
  std::string Where() const {
    return "HIP device " + std::to_string(info_.ordinal) + (info_.name.empty() ? "" : " (" + info_.name + ")");
  }
  // OK, or the error that made the device unusable; makes the device current
  // on this thread (hipSetDevice). Every call starts here.
  Status Enter();
  Status Check(hipError_t e, std::string_view call);
  // The same, with the call described only when it failed (as cuda_device.cc).
  template <std::invocable Describe>
  Status Check(hipError_t e, const Describe& describe) {
    return e == hipSuccess ? Status::Ok() : Check(e, std::string_view(describe()));
  }
  hipStream_t StreamOf(Stream s) const { return s == nullptr ? default_stream_ : ToHip(s); }
  std::string ArchName();
  Status LoadModule();
  // The gpu-copy fault site (runtime/base/fault_injection.h), as the software
  // GPU has it: OK, or the failure `call` reports instead of running.
  Status CopyFault(const char* call, uint64_t bytes);

  const std::shared_ptr<const HipDriver> driver_;
  const HipDriver& d_;
  const ModuleImage image_;
  const uint64_t serial_ = next_device_serial.fetch_add(1);
  DeviceInfo info_;
  bool entered_ = false;
  hipModule_t module_ = nullptr;
  // Its own non-blocking stream, for the reasons cuda_device.cc gives.
  hipStream_t default_stream_ = nullptr;
  std::map<std::string, KernelEntry, std::less<>> kernels_;
  Status poisoned_;
};

Status HipDevice::Enter() {
  if (!poisoned_.ok()) return poisoned_;
  if (current_device_serial != serial_) {
    if (const hipError_t e = d_.SetDevice(info_.ordinal); e != hipSuccess) return Check(e, "hipSetDevice");
    current_device_serial = serial_;
    entered_ = true;
  }
  return Status::Ok();
}

Status HipDevice::Check(hipError_t e, std::string_view call) {
  if (e == hipSuccess) return Status::Ok();
  std::string message = std::string(call) + " on " + Where() + ": " + d_.ErrorText(e);
  if (PoisonsDevice(e)) {
    message += "; the HIP device is unusable after this error (every later call fails with it): restart the process";
    if (poisoned_.ok()) poisoned_ = Internal(message);
    return poisoned_;
  }
  if (e == hipErrorOutOfMemory || e == hipErrorLaunchOutOfResources) return ResourceExhausted(std::move(message));
  return Internal(std::move(message));
}

HipDevice::~HipDevice() {
  if (!entered_) return;
  if (d_.SetDevice(info_.ordinal) == hipSuccess) {
    if (module_ != nullptr) (void)d_.ModuleUnload(module_);
    if (default_stream_ != nullptr) (void)d_.StreamDestroy(default_stream_);
  }
  current_device_serial = 0;
}

std::string HipDevice::ArchName() {
  if (d_.GetDeviceProperties == nullptr) return "";
  // Larger than any hipDeviceProp_t (HIP 5.2: 792 bytes; HIP 6: about 1.5 KiB),
  // zeroed, 8-byte aligned.
  std::vector<uint64_t> buffer(4096, 0);
  if (d_.GetDeviceProperties(buffer.data(), info_.ordinal) != hipSuccess) return "";
  return FindGcnArchName(reinterpret_cast<const uint8_t*>(buffer.data()), buffer.size() * sizeof(uint64_t));
}

Status HipDevice::Open() {
  const int ordinal = info_.ordinal;
  int count = 0;
  STRATA_RETURN_IF_ERROR(Check(d_.GetDeviceCount(&count), "hipGetDeviceCount"));
  if (count == 0) {
    return Unsupported("no HIP device: HIP " + d_.library + " (" + d_.VersionNumber() +
                       ") sees none (check rocminfo and HIP_VISIBLE_DEVICES), or run with --backend cpu");
  }
  if (ordinal < 0 || ordinal >= count) {
    return InvalidArgument("HIP device " + std::to_string(ordinal) + " does not exist: HIP sees " +
                           std::to_string(count) + " (0 to " + std::to_string(count - 1) + ")");
  }
  hipDevice_t device = 0;
  STRATA_RETURN_IF_ERROR(Check(d_.DeviceGet(&device, ordinal), "hipDeviceGet"));
  char name[256] = {};
  STRATA_RETURN_IF_ERROR(Check(d_.DeviceGetName(name, sizeof name - 1, device), "hipDeviceGetName"));
  info_.name = name;

  const auto attribute = [&](int which, const char* what, int* value) {
    return Check(d_.DeviceGetAttribute(value, which, ordinal),
                 [&] { return std::string("hipDeviceGetAttribute(") + what + ")"; });
  };
  int sms = 0, threads = 0, warp = 0, shared = 0, optin = 0;
  STRATA_RETURN_IF_ERROR(attribute(hipDeviceAttributeMultiprocessorCount, "multiprocessor count", &sms));
  STRATA_RETURN_IF_ERROR(attribute(hipDeviceAttributeMaxThreadsPerBlock, "max threads per block", &threads));
  STRATA_RETURN_IF_ERROR(attribute(hipDeviceAttributeWarpSize, "warp size", &warp));
  STRATA_RETURN_IF_ERROR(attribute(hipDeviceAttributeMaxSharedMemoryPerBlock, "shared memory per block", &shared));
  // HIP 5 may not know the CUDA-only opt-in attribute: then there is none.
  if (d_.DeviceGetAttribute(&optin, hipDeviceAttributeSharedMemPerBlockOptin, ordinal) != hipSuccess) optin = 0;
  size_t total = 0;
  STRATA_RETURN_IF_ERROR(Check(d_.DeviceTotalMem(&total, device), "hipDeviceTotalMem"));

  info_.arch = ArchName();
  if (info_.arch.empty()) info_.arch = "amdgcn";  // the runtime did not say which gfx
  info_.driver = "HIP " + d_.VersionNumber();
  info_.compute_capability = 0;
  info_.warp_size = static_cast<uint32_t>(warp);
  info_.multiprocessors = static_cast<uint32_t>(sms);
  info_.max_threads_per_block = static_cast<uint32_t>(threads);
  info_.shared_per_block = static_cast<uint32_t>(shared);
  info_.shared_per_block_optin = static_cast<uint32_t>(optin > shared ? optin : shared);
  info_.total_memory = total;
  info_.graphs = true;
  info_.int8_mma = false;
  // The 4-way int8 dot product (LLVM's dot1-insts: v_dot4_i32_i8): the GCN
  // data-center chips. portable.h's Dp4a uses it on gfx90a.
  info_.dp4a =
      info_.arch == "gfx906" || info_.arch == "gfx908" || info_.arch == "gfx90a" || info_.arch.rfind("gfx94", 0) == 0;

  STRATA_RETURN_IF_ERROR(Enter());
  STRATA_RETURN_IF_ERROR(
      Check(d_.StreamCreateWithFlags(&default_stream_, hipStreamNonBlocking), "hipStreamCreateWithFlags"));
  return LoadModule();
}

Status HipDevice::LoadModule() {
  const hipError_t e = d_.ModuleLoadData(&module_, image_.data);
  if (e == hipSuccess) return Status::Ok();
  module_ = nullptr;
  const std::string has = std::string("this build's HIP image has ") + image_.targets + " (" + image_.compiler + ")";
  if (e == hipErrorNoBinaryForGpu || e == hipErrorInvalidImage || e == hipErrorInvalidKernelFile ||
      e == hipErrorSharedObjectInitFailed) {
    return Unsupported("hipModuleLoadData on " + Where() + ": " + d_.ErrorText(e) + ": the device is " + info_.arch +
                       ", and " + has + "; configure with -DSTRATA_HIP_ARCHS=" + info_.arch +
                       " if that hipcc supports it, or run with --backend cpu");
  }
  return Check(e, "hipModuleLoadData (" + std::to_string(image_.size) + "-byte image: " + image_.targets + ")");
}

// --- memory --------------------------------------------------------------------

Status HipDevice::MemoryInfo(uint64_t* free_bytes, uint64_t* total_bytes) {
  STRATA_RETURN_IF_ERROR(Enter());
  size_t f = 0, t = 0;
  STRATA_RETURN_IF_ERROR(Check(d_.MemGetInfo(&f, &t), "hipMemGetInfo"));
  *free_bytes = f;
  *total_bytes = t;
  return Status::Ok();
}

Result<DevicePtr> HipDevice::Allocate(uint64_t bytes, std::string_view what) {
  STRATA_RETURN_IF_ERROR(Enter());
  if (bytes == 0) return InvalidArgument("Allocate(0 bytes) for '" + std::string(what) + "' on " + Where());
  if (ShouldInjectFault(FaultSite::kGpuAllocate)) {
    return ResourceExhausted("hipMalloc(" + ByteCount(bytes) + " for '" + std::string(what) + "') on " + Where() +
                             ": injected fault (gpu-allocate)");
  }
  void* p = nullptr;
  const hipError_t e = d_.Malloc(&p, bytes);
  if (e == hipErrorOutOfMemory) {
    size_t f = 0, t = 0;
    const std::string state =
        d_.MemGetInfo(&f, &t) == hipSuccess ? "; " + ByteCount(f) + " of " + ByteCount(t) + " free" : "";
    return ResourceExhausted("hipMalloc(" + ByteCount(bytes) + " for '" + std::string(what) + "') on " + Where() +
                             ": " + d_.ErrorText(e) + state + "; use a smaller context or fewer layers on the GPU");
  }
  STRATA_RETURN_IF_ERROR(
      Check(e, [&] { return "hipMalloc(" + ByteCount(bytes) + " for '" + std::string(what) + "')"; }));
  return static_cast<DevicePtr>(reinterpret_cast<uintptr_t>(p));
}

void HipDevice::Free(DevicePtr p) {
  if (p == 0 || !Enter().ok()) return;
  (void)Check(d_.Free(ToHip(p)), "hipFree");
}

Result<void*> HipDevice::AllocatePinned(uint64_t bytes, std::string_view what) {
  STRATA_RETURN_IF_ERROR(Enter());
  if (bytes == 0) return InvalidArgument("AllocatePinned(0 bytes) for '" + std::string(what) + "' on " + Where());
  void* p = nullptr;
  STRATA_RETURN_IF_ERROR(Check(d_.HostMalloc(&p, bytes, hipHostMallocDefault), [&] {
    return "hipHostMalloc(" + ByteCount(bytes) + " for '" + std::string(what) + "')";
  }));
  return p;
}

void HipDevice::FreePinned(void* p) {
  if (p == nullptr || !Enter().ok()) return;
  (void)Check(d_.HostFree(p), "hipHostFree");
}

// --- copies ----------------------------------------------------------------------

Status HipDevice::CopyToDevice(DevicePtr dst, const void* src, uint64_t bytes, Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  if (bytes == 0) return Status::Ok();
  STRATA_RETURN_IF_ERROR(CopyFault("hipMemcpyHtoDAsync", bytes));
  // HIP's declaration takes `void*`; it only reads the source.
  return Check(d_.MemcpyHtoDAsync(ToHip(dst), const_cast<void*>(src), bytes, StreamOf(stream)),
               [&] { return "hipMemcpyHtoDAsync(" + ByteCount(bytes) + ")"; });
}

Status HipDevice::CopyToHost(void* dst, DevicePtr src, uint64_t bytes, Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  if (bytes == 0) return Status::Ok();
  STRATA_RETURN_IF_ERROR(CopyFault("hipMemcpyDtoHAsync", bytes));
  return Check(d_.MemcpyDtoHAsync(dst, ToHip(src), bytes, StreamOf(stream)),
               [&] { return "hipMemcpyDtoHAsync(" + ByteCount(bytes) + ")"; });
}

Status HipDevice::CopyOnDevice(DevicePtr dst, DevicePtr src, uint64_t bytes, Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  if (bytes == 0) return Status::Ok();
  STRATA_RETURN_IF_ERROR(CopyFault("hipMemcpyDtoDAsync", bytes));
  return Check(d_.MemcpyDtoDAsync(ToHip(dst), ToHip(src), bytes, StreamOf(stream)),
               [&] { return "hipMemcpyDtoDAsync(" + ByteCount(bytes) + ")"; });
}

Status HipDevice::Fill(DevicePtr dst, uint8_t value, uint64_t bytes, Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  if (bytes == 0) return Status::Ok();
  STRATA_RETURN_IF_ERROR(CopyFault("hipMemsetD8Async", bytes));
  return Check(d_.MemsetD8Async(ToHip(dst), value, bytes, StreamOf(stream)),
               [&] { return "hipMemsetD8Async(" + ByteCount(bytes) + ")"; });
}

Status HipDevice::CopyFault(const char* call, uint64_t bytes) {
  if (!ShouldInjectFault(FaultSite::kGpuCopy)) return Status::Ok();
  return Internal(std::string(call) + "(" + ByteCount(bytes) + ") on " + Where() + ": injected fault (gpu-copy)");
}

// --- kernels -----------------------------------------------------------------------

Result<Kernel> HipDevice::FindKernel(std::string_view name) {
  STRATA_RETURN_IF_ERROR(Enter());
  if (auto it = kernels_.find(name); it != kernels_.end()) return reinterpret_cast<Kernel>(&it->second);
  KernelEntry entry;
  entry.name = std::string(name);
  const hipError_t e = d_.ModuleGetFunction(&entry.function, module_, entry.name.c_str());
  if (e == hipErrorNotFound) {
    return NotFound("kernel " + entry.name + " is not in this build's HIP image (" + image_.targets + ", " +
                    image_.compiler + "): runtime/gpu/kernels/all_kernels.cu must include the file that defines it");
  }
  STRATA_RETURN_IF_ERROR(Check(e, [&] { return "hipModuleGetFunction(" + entry.name + ")"; }));
  entry.dynamic_shared = info_.shared_per_block;
  auto [it, inserted] = kernels_.emplace(entry.name, std::move(entry));
  return reinterpret_cast<Kernel>(&it->second);
}

// AMD GPUs have no opt-in: a block may use all of its LDS (64 KiB) as it is.
// The limit is checked and kept for Launch's check; the driver is not called.
Status HipDevice::SetMaxDynamicShared(Kernel kernel, uint32_t bytes) {
  STRATA_RETURN_IF_ERROR(Enter());
  auto* k = reinterpret_cast<KernelEntry*>(kernel);
  if (bytes > info_.shared_per_block_optin) {
    return InvalidArgument("kernel " + k->name + ": " + std::to_string(bytes) +
                           " bytes of dynamic shared memory "
                           "asked; " +
                           Where() + " allows " + std::to_string(info_.shared_per_block_optin) + " per block");
  }
  k->dynamic_shared = bytes > info_.shared_per_block ? bytes : info_.shared_per_block;
  return Status::Ok();
}

Status HipDevice::Launch(Kernel kernel, Dim3 grid, Dim3 block, uint32_t dynamic_shared, Stream stream, const void* args,
                         size_t args_bytes) {
  STRATA_RETURN_IF_ERROR(Enter());
  const auto* k = reinterpret_cast<const KernelEntry*>(kernel);
  STRATA_RETURN_IF_ERROR(CheckLaunch(k->name, grid, block, dynamic_shared, args, args_bytes, 0,
                                     info_.max_threads_per_block, k->dynamic_shared));
  // The gpu-launch and gpu-poison fault sites, on the paths the driver's own
  // errors take (gpu-poison as an illegal address: the device is poisoned).
  if (ShouldInjectFault(FaultSite::kGpuLaunch)) {
    return ResourceExhausted("hipModuleLaunchKernel(" + k->name + ") on " + Where() + ": injected fault (gpu-launch)");
  }
  if (ShouldInjectFault(FaultSite::kGpuPoison)) {
    return Check(hipErrorIllegalAddress, [&] { return "hipModuleLaunchKernel(" + k->name + ") [injected fault (gpu-poison)]"; });
  }
  void* params[1] = {const_cast<void*>(args)};
  return Check(d_.ModuleLaunchKernel(k->function, grid.x, grid.y, grid.z, block.x, block.y, block.z, dynamic_shared,
                                     StreamOf(stream), params, nullptr),
               [&] { return "hipModuleLaunchKernel(" + k->name + ")"; });
}

// --- order and time -----------------------------------------------------------------

Result<Stream> HipDevice::CreateStream() {
  STRATA_RETURN_IF_ERROR(Enter());
  hipStream_t s = nullptr;
  STRATA_RETURN_IF_ERROR(Check(d_.StreamCreateWithFlags(&s, hipStreamNonBlocking), "hipStreamCreateWithFlags"));
  return reinterpret_cast<Stream>(s);
}

void HipDevice::DestroyStream(Stream stream) {
  if (stream == nullptr || !Enter().ok()) return;
  (void)Check(d_.StreamDestroy(ToHip(stream)), "hipStreamDestroy");
}

Status HipDevice::Synchronize(Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  return Check(d_.StreamSynchronize(StreamOf(stream)), "hipStreamSynchronize");
}

Result<Event> HipDevice::CreateEvent() {
  STRATA_RETURN_IF_ERROR(Enter());
  hipEvent_t e = nullptr;
  STRATA_RETURN_IF_ERROR(Check(d_.EventCreateWithFlags(&e, hipEventDefault), "hipEventCreateWithFlags"));
  return reinterpret_cast<Event>(e);
}

void HipDevice::DestroyEvent(Event event) {
  if (event == nullptr || !Enter().ok()) return;
  (void)Check(d_.EventDestroy(ToHip(event)), "hipEventDestroy");
}

Status HipDevice::Record(Event event, Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  return Check(d_.EventRecord(ToHip(event), StreamOf(stream)), "hipEventRecord");
}

Status HipDevice::StreamWait(Stream stream, Event event) {
  STRATA_RETURN_IF_ERROR(Enter());
  return Check(d_.StreamWaitEvent(StreamOf(stream), ToHip(event), 0), "hipStreamWaitEvent");
}

Status HipDevice::EventSynchronize(Event event) {
  STRATA_RETURN_IF_ERROR(Enter());
  return Check(d_.EventSynchronize(ToHip(event)), "hipEventSynchronize");
}

Result<float> HipDevice::ElapsedMs(Event start, Event end) {
  STRATA_RETURN_IF_ERROR(Enter());
  float ms = 0;
  STRATA_RETURN_IF_ERROR(Check(d_.EventElapsedTime(&ms, ToHip(start), ToHip(end)), "hipEventElapsedTime"));
  return ms;
}

// --- graphs ---------------------------------------------------------------------------

// Thread-local capture mode, for the reasons cuda_device.cc gives.
Status HipDevice::BeginCapture(Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  return Check(d_.StreamBeginCapture(StreamOf(stream), hipStreamCaptureModeThreadLocal), "hipStreamBeginCapture");
}

Result<Graph> HipDevice::EndCapture(Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  hipGraph_t graph = nullptr;
  const hipError_t e = d_.StreamEndCapture(StreamOf(stream), &graph);
  if (e == hipErrorStreamCaptureInvalidated) {
    return FailedPrecondition("hipStreamEndCapture on " + Where() + ": " + d_.ErrorText(e) +
                              ": a call during the capture could not be captured (an allocation, a synchronization "
                              "or the null stream): a bug in the captured sequence");
  }
  STRATA_RETURN_IF_ERROR(Check(e, "hipStreamEndCapture"));
  hipGraphExec_t exec = nullptr;
  const hipError_t ei = d_.GraphInstantiateWithFlags(&exec, graph, 0);
  (void)d_.GraphDestroy(graph);
  STRATA_RETURN_IF_ERROR(Check(ei, "hipGraphInstantiateWithFlags"));
  return reinterpret_cast<Graph>(exec);
}

Status HipDevice::LaunchGraph(Graph graph, Stream stream) {
  STRATA_RETURN_IF_ERROR(Enter());
  return Check(d_.GraphLaunch(ToHip(graph), StreamOf(stream)), "hipGraphLaunch");
}

void HipDevice::DestroyGraph(Graph graph) {
  if (graph == nullptr || !Enter().ok()) return;
  (void)Check(d_.GraphExecDestroy(ToHip(graph)), "hipGraphExecDestroy");
}

}  // namespace

// hipDeviceProp_t's layout differs between HIP 5 and 6; both begin with the
// 256-byte marketing name and hold gcnArchName, a 256-byte string such as
// "gfx90a:sramecc+:xnack-", further on. Rather than trust an offset, this
// takes the first field after the name that starts with "gfx" and a digit
// and is a whole, terminated string of target-id characters.
std::string FindGcnArchName(const uint8_t* properties, size_t size) {
  constexpr size_t kNameBytes = 256;
  const auto is_id_char = [](uint8_t c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == ':' || c == '+' || c == '-';
  };
  for (size_t i = kNameBytes; i + 4 < size; ++i) {
    if (properties[i - 1] != 0 || std::memcmp(properties + i, "gfx", 3) != 0) continue;
    if (properties[i + 3] < '0' || properties[i + 3] > '9') continue;
    size_t end = i;
    while (end < size && is_id_char(properties[end])) ++end;
    if (end == size || properties[end] != 0) continue;
    const std::string id(reinterpret_cast<const char*>(properties + i), end - i);
    return id.substr(0, id.find(':'));
  }
  return "";
}

Result<std::unique_ptr<Device>> OpenHipDeviceWithImage(int ordinal, const ModuleImage& image) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const HipDriver> driver, LoadHipDriver());
  auto device = std::make_unique<HipDevice>(std::move(driver), ordinal, image);
  STRATA_RETURN_IF_ERROR(device->Open());
  return std::unique_ptr<Device>(std::move(device));
}

Result<std::unique_ptr<Device>> OpenHipDevice(int ordinal) {
  const ModuleImage* image = HipModuleImage();
  if (image == nullptr) {
    return Unsupported(std::string("this build has no HIP device code (configure said: \"") + STRATA_GPU_HIP_NOTE +
                       "\"): rebuild with hipcc installed (Debian: apt-get install hipcc rocm-device-libs), or run "
                       "with --backend cpu");
  }
  return OpenHipDeviceWithImage(ordinal, *image);
}

}  // namespace strata::gpu
