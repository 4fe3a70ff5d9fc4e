#pragma once
// The software GPU as a gpu::Device (device.h; OpenSoftwareGpu opens it):
// this build's kernels, compiled as host C++ once per warp size
// (sgpu_kernels_32.cc, sgpu_kernels_64.cc), run on the CPU with CUDA's
// execution model (block_scheduler.h) on host memory laid out to catch
// overruns (sgpu_memory.h). Test infrastructure: CI has no GPU, so every GPU
// kernel runs there on this. Never a serving path.
//
// Everything runs synchronously in stream order: a copy, fill or launch is
// done when its call returns, so streams only keep order, and events hold
// the steady_clock time at which they were recorded.
//
// What it checks, beyond the execution model:
//   * copies and fills touch only device bytes inside one live allocation,
//     and host pointers are not null (kInvalidArgument: no crash);
//   * a launch's argument struct has the registered size of the kernel's,
//     its grid and block are within CUDA's limits, its dynamic shared memory
//     within the kernel's (SetMaxDynamicShared) (kInvalidArgument);
//   * the canary after every allocation, at Free and at Synchronize: an
//     overwrite poisons the device, as an illegal address does a real one
//     (kInternal, naming the allocation and the last kernel launched). A
//     Free of an address that is no live allocation poisons it too (Free
//     has no other way to say so).
// A launch the execution model refuses fails with kInternal and leaves the
// device usable.
//
// Graphs: between BeginCapture and EndCapture, launches (their argument
// bytes copied), copies, fills and event records on the capturing stream
// are checked and recorded, not run; host pointers are kept and read at
// replay, as CUDA graphs do. LaunchGraph replays them in order, checking
// each again (an allocation freed since capture is an error, not a crash).
//
// Fault sites (runtime/base/fault_injection.h):
//   gpu-allocate  Allocate fails with kResourceExhausted;
//   gpu-launch    a launch (direct or replayed) fails with kResourceExhausted,
//                 "too many resources requested for launch"; the device
//                 stays usable;
//   gpu-poison    a launch fails as an illegal memory access would
//                 (kInternal): the device is poisoned, every later call
//                 returns that error and poisoned() does;
//   gpu-copy      a copy or fill fails with kInternal; the device stays
//                 usable.

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/base/checked_alloc.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/software/block_scheduler.h"
#include "runtime/gpu/software/sgpu_memory.h"

namespace strata::gpu {

// The handles' structs. device.h's StreamImpl, EventImpl, GraphImpl and
// KernelImpl stay undefined here: the CUDA and HIP devices, linked into the
// same program, define theirs, and two definitions of one class would break
// the one-definition rule. The handles are these, cast.
namespace sgpu_handles {
struct SgpuKernel {
  const sgpu::RegisteredKernel* registered = nullptr;
  uint32_t max_dynamic_shared = sgpu::kSharedPerBlock;
  bool opted_in = false;  // SetMaxDynamicShared: the block may use kSharedPerBlockOptIn
};
struct SgpuEvent {
  bool recorded = false;
  std::chrono::steady_clock::time_point at;
};
// One step of a stream's work, as run directly or recorded into a graph.
struct GraphOp {
  enum class Kind : uint8_t { kLaunch, kCopyToDevice, kCopyToHost, kCopyOnDevice, kFill, kRecord };
  Kind kind = Kind::kLaunch;
  const SgpuKernel* kernel = nullptr;  // kLaunch
  Dim3 grid, block;
  uint32_t dynamic_shared = 0;
  std::vector<uint8_t> args;           // kLaunch: the argument struct's bytes
  DevicePtr dst = 0, src = 0;          // the device side of copies and fills
  void* host_dst = nullptr;            // kCopyToHost
  const void* host_src = nullptr;      // kCopyToDevice: read when the op runs
  uint64_t bytes = 0;
  uint8_t value = 0;                   // kFill
  SgpuEvent* event = nullptr;          // kRecord
};
struct SgpuGraph {
  std::vector<GraphOp> ops;
};
struct SgpuStream {
  std::unique_ptr<SgpuGraph> capture;  // capturing while set
};
}  // namespace sgpu_handles

class SoftwareGpu final : public Device {
 public:
  explicit SoftwareGpu(const SoftwareGpuOptions& options);
  ~SoftwareGpu() override;

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

  Status poisoned() const override { return poison_; }

 private:
  using SgpuKernel = sgpu_handles::SgpuKernel;
  using SgpuStream = sgpu_handles::SgpuStream;
  using SgpuEvent = sgpu_handles::SgpuEvent;
  using SgpuGraph = sgpu_handles::SgpuGraph;
  using GraphOp = sgpu_handles::GraphOp;

  Result<SgpuStream*> StreamOf(Stream s, const char* call);
  Result<SgpuEvent*> EventOf(Event e, const char* call);
  Result<SgpuKernel*> KernelOf(Kernel k, const char* call);
  // The work itself, for a direct call and for a graph's replay.
  Status Run(const GraphOp& op);
  Status RunLaunch(const SgpuKernel& k, Dim3 grid, Dim3 block, uint32_t dynamic_shared, const void* args);
  // A copy's or fill's checks, at the call and at each replay.
  Status CheckOp(const GraphOp& op) const;
  // Queues `op` on `stream`: recorded when it captures, else run.
  Status Submit(Stream stream, GraphOp op, const char* call);
  // Makes `why` the device's poison (the first one stays).
  Status Poison(Status why);

  DeviceInfo info_;
  sgpu::DeviceMemory memory_;
  sgpu::BlockScheduler scheduler_;
  std::map<const void*, AlignedBuffer> pinned_;
  std::map<std::string, std::unique_ptr<SgpuKernel>, std::less<>> kernels_;
  SgpuStream default_stream_;
  std::map<const void*, std::unique_ptr<SgpuStream>> streams_;
  std::map<const void*, std::unique_ptr<SgpuEvent>> events_;
  std::map<const void*, std::unique_ptr<SgpuGraph>> graphs_;
  std::vector<std::max_align_t> args_;  // a launch's argument struct, aligned for the kernel
  std::string last_kernel_;             // for the canary's report
  Status poison_;
};

}  // namespace strata::gpu
