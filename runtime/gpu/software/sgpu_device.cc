#include "runtime/gpu/software/sgpu_device.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "runtime/base/fault_injection.h"
#include "runtime/base/strings.h"
#include "runtime/gpu/software/kernel_registry.h"

namespace strata::sgpu {
// Defined by sgpu_kernels_32.cc and sgpu_kernels_64.cc; read below so that
// the linker takes those files (and their kernels' registrations) from the
// static library.
extern const int kKernelsForWarp32;
extern const int kKernelsForWarp64;
}  // namespace strata::sgpu

namespace strata::gpu {
namespace {

using sgpu_handles::GraphOp;
using Kind = GraphOp::Kind;

unsigned long long Ull(uint64_t v) { return static_cast<unsigned long long>(v); }
sgpu::Dim ToDim(Dim3 d) { return {d.x, d.y, d.z}; }

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kLaunch: return "Launch";
    case Kind::kCopyToDevice: return "CopyToDevice";
    case Kind::kCopyToHost: return "CopyToHost";
    case Kind::kCopyOnDevice: return "CopyOnDevice";
    case Kind::kFill: return "Fill";
    case Kind::kRecord: return "Record";
  }
  return "?";
}

template <typename T, typename Handle>
Result<T*> FindHandle(const std::map<const void*, std::unique_ptr<T>>& owned, Handle h, const char* call,
                      const char* what) {
  auto it = owned.find(static_cast<const void*>(h));
  if (h == nullptr || it == owned.end())
    return InvalidArgument(StrFormat("software GPU: %s: %s %p is not one of this device's (destroyed, or another "
                                     "device's)",
                                     call, what, static_cast<const void*>(h)));
  return it->second.get();
}

}  // namespace

SoftwareGpu::SoftwareGpu(const SoftwareGpuOptions& o)
    : memory_(o.memory_bytes), scheduler_(o.warp_size, o.threads) {
  info_.kind = DeviceKind::kSoftware;
  info_.name = StrFormat("software GPU (warp %u)", o.warp_size);
  info_.arch = "software";
  info_.driver = "software";
  info_.warp_size = o.warp_size;
  info_.multiprocessors = static_cast<uint32_t>(o.threads);
  info_.max_threads_per_block = sgpu::kMaxThreadsPerBlock;
  info_.shared_per_block = sgpu::kSharedPerBlock;
  info_.shared_per_block_optin = sgpu::kSharedPerBlockOptIn;
  info_.total_memory = o.memory_bytes;
  info_.graphs = true;
  info_.int8_mma = false;
  info_.dp4a = true;
}

SoftwareGpu::~SoftwareGpu() = default;

Status SoftwareGpu::Poison(Status why) {
  if (poison_.ok()) poison_ = std::move(why);
  return poison_;
}

// --- memory -------------------------------------------------------------------

Status SoftwareGpu::MemoryInfo(uint64_t* free_bytes, uint64_t* total_bytes) {
  STRATA_RETURN_IF_ERROR(poison_);
  if (free_bytes) *free_bytes = memory_.capacity() - memory_.used();
  if (total_bytes) *total_bytes = memory_.capacity();
  return Status::Ok();
}

Result<DevicePtr> SoftwareGpu::Allocate(uint64_t bytes, std::string_view what) {
  STRATA_RETURN_IF_ERROR(poison_);
  if (ShouldInjectFault(FaultSite::kGpuAllocate))
    return ResourceExhausted(StrFormat("software GPU: cannot allocate %s for '%.*s': injected fault (gpu-allocate)",
                                       HumanBytes(bytes).c_str(), static_cast<int>(what.size()), what.data()));
  return memory_.Allocate(bytes, what);
}

void SoftwareGpu::Free(DevicePtr p) {
  if (p == 0) return;
  Status s = memory_.Free(p);
  if (!s.ok()) {
    (void)Poison(Status(s.code(), s.message() + (s.code() == StatusCode::kInternal
                                                     ? "; found at its Free, after kernel '" + last_kernel_ + "'"
                                                     : std::string())));
  }
}

Result<void*> SoftwareGpu::AllocatePinned(uint64_t bytes, std::string_view what) {
  STRATA_RETURN_IF_ERROR(poison_);
  if (bytes == 0)
    return InvalidArgument(StrFormat("software GPU: pinned allocation of 0 bytes for '%.*s'",
                                     static_cast<int>(what.size()), what.data()));
  STRATA_ASSIGN_OR_RETURN(AlignedBuffer b, AlignedBuffer::Allocate(bytes, what));
  void* p = b.data();
  pinned_.emplace(p, std::move(b));
  return p;
}

void SoftwareGpu::FreePinned(void* p) {
  if (!p) return;
  if (pinned_.erase(p) == 0)
    (void)Poison(InvalidArgument(StrFormat("software GPU: FreePinned of %p, which is not live pinned memory", p)));
}

// --- copies -------------------------------------------------------------------

Status SoftwareGpu::CheckOp(const GraphOp& op) const {
  const char* call = KindName(op.kind);
  if ((op.kind == Kind::kCopyToDevice && !op.host_src && op.bytes) ||
      (op.kind == Kind::kCopyToHost && !op.host_dst && op.bytes))
    return InvalidArgument(StrFormat("software GPU: %s of %llu bytes with a null host pointer", call, Ull(op.bytes)));
  if (op.kind == Kind::kCopyToDevice || op.kind == Kind::kCopyOnDevice || op.kind == Kind::kFill)
    STRATA_RETURN_IF_ERROR(memory_.CheckRange(op.dst, op.bytes, call));
  if (op.kind == Kind::kCopyToHost || op.kind == Kind::kCopyOnDevice)
    STRATA_RETURN_IF_ERROR(memory_.CheckRange(op.src, op.bytes, call));
  return Status::Ok();
}

Status SoftwareGpu::Run(const GraphOp& op) {
  if (op.kind == Kind::kLaunch) return RunLaunch(*op.kernel, op.grid, op.block, op.dynamic_shared, op.args.data());
  if (op.kind == Kind::kRecord) {
    op.event->recorded = true;
    op.event->at = std::chrono::steady_clock::now();
    return Status::Ok();
  }
  STRATA_RETURN_IF_ERROR(CheckOp(op));
  if (ShouldInjectFault(FaultSite::kGpuCopy))
    return Internal(StrFormat("software GPU: %s of %llu bytes failed: injected fault (gpu-copy)", KindName(op.kind),
                              Ull(op.bytes)));
  if (op.bytes == 0) return Status::Ok();
  void* const dst = reinterpret_cast<void*>(static_cast<uintptr_t>(op.dst));
  const void* const src = reinterpret_cast<const void*>(static_cast<uintptr_t>(op.src));
  switch (op.kind) {
    case Kind::kCopyToDevice: std::memcpy(dst, op.host_src, op.bytes); break;
    case Kind::kCopyToHost: std::memcpy(op.host_dst, src, op.bytes); break;
    case Kind::kCopyOnDevice: std::memmove(dst, src, op.bytes); break;
    case Kind::kFill: std::memset(dst, op.value, op.bytes); break;
    case Kind::kLaunch:
    case Kind::kRecord: break;
  }
  return Status::Ok();
}

Status SoftwareGpu::Submit(Stream stream, GraphOp op, const char* call) {
  STRATA_RETURN_IF_ERROR(poison_);
  STRATA_ASSIGN_OR_RETURN(SgpuStream * s, StreamOf(stream, call));
  if (!s->capture) return Run(op);
  if (op.kind != Kind::kRecord) STRATA_RETURN_IF_ERROR(CheckOp(op));
  s->capture->ops.push_back(std::move(op));
  return Status::Ok();
}

Status SoftwareGpu::CopyToDevice(DevicePtr dst, const void* src, uint64_t bytes, Stream stream) {
  GraphOp op;
  op.kind = Kind::kCopyToDevice;
  op.dst = dst;
  op.host_src = src;
  op.bytes = bytes;
  return Submit(stream, std::move(op), "CopyToDevice");
}

Status SoftwareGpu::CopyToHost(void* dst, DevicePtr src, uint64_t bytes, Stream stream) {
  GraphOp op;
  op.kind = Kind::kCopyToHost;
  op.host_dst = dst;
  op.src = src;
  op.bytes = bytes;
  return Submit(stream, std::move(op), "CopyToHost");
}

Status SoftwareGpu::CopyOnDevice(DevicePtr dst, DevicePtr src, uint64_t bytes, Stream stream) {
  GraphOp op;
  op.kind = Kind::kCopyOnDevice;
  op.dst = dst;
  op.src = src;
  op.bytes = bytes;
  return Submit(stream, std::move(op), "CopyOnDevice");
}

Status SoftwareGpu::Fill(DevicePtr dst, uint8_t value, uint64_t bytes, Stream stream) {
  GraphOp op;
  op.kind = Kind::kFill;
  op.dst = dst;
  op.value = value;
  op.bytes = bytes;
  return Submit(stream, std::move(op), "Fill");
}

// --- kernels ------------------------------------------------------------------

Result<Kernel> SoftwareGpu::FindKernel(std::string_view name) {
  STRATA_RETURN_IF_ERROR(poison_);
  auto it = kernels_.find(name);
  if (it == kernels_.end()) {
    const sgpu::RegisteredKernel* r = sgpu::FindRegisteredKernel(name, info_.warp_size);
    if (!r) {
      const std::vector<std::string> names = sgpu::RegisteredKernelNames(info_.warp_size);
      std::string some;
      for (size_t i = 0; i < names.size() && i < 12; ++i) some += (i ? ", " : "") + names[i];
      if (names.size() > 12) some += ", ...";
      return NotFound(StrFormat("software GPU: no kernel '%.*s' for warp size %u (%zu kernels are: %s)",
                                static_cast<int>(name.size()), name.data(), info_.warp_size, names.size(),
                                some.c_str()));
    }
    if (r->registrations > 1)
      return Internal(StrFormat("software GPU: kernel '%s' (warp size %u) is defined %d times: kernel names must be "
                                "unique across the kernel sources",
                                r->name.c_str(), info_.warp_size, r->registrations));
    auto k = std::make_unique<SgpuKernel>();
    k->registered = r;
    it = kernels_.emplace(std::string(name), std::move(k)).first;
  }
  return reinterpret_cast<Kernel>(it->second.get());
}

Result<sgpu_handles::SgpuKernel*> SoftwareGpu::KernelOf(Kernel kernel, const char* call) {
  auto* k = reinterpret_cast<SgpuKernel*>(kernel);
  for (const auto& [name, owned] : kernels_)
    if (owned.get() == k) return k;
  return InvalidArgument(StrFormat("software GPU: %s: kernel handle %p did not come from this device's FindKernel",
                                   call, static_cast<const void*>(kernel)));
}

Status SoftwareGpu::SetMaxDynamicShared(Kernel kernel, uint32_t bytes) {
  STRATA_RETURN_IF_ERROR(poison_);
  STRATA_ASSIGN_OR_RETURN(SgpuKernel * k, KernelOf(kernel, "SetMaxDynamicShared"));
  if (bytes > sgpu::kSharedPerBlockOptIn)
    return InvalidArgument(StrFormat("software GPU: SetMaxDynamicShared of '%s' to %u bytes: at most %u",
                                     k->registered->name.c_str(), bytes, sgpu::kSharedPerBlockOptIn));
  k->max_dynamic_shared = bytes;
  k->opted_in = true;
  return Status::Ok();
}

Status SoftwareGpu::Launch(Kernel kernel, Dim3 grid, Dim3 block, uint32_t dynamic_shared, Stream stream,
                           const void* args, size_t args_bytes) {
  STRATA_RETURN_IF_ERROR(poison_);
  STRATA_ASSIGN_OR_RETURN(SgpuKernel * k, KernelOf(kernel, "Launch"));
  STRATA_ASSIGN_OR_RETURN(SgpuStream * s, StreamOf(stream, "Launch"));
  const sgpu::RegisteredKernel& r = *k->registered;
  if (args_bytes != r.args_bytes || !args)
    return InvalidArgument(StrFormat("software GPU: Launch of '%s': the argument struct is %zu bytes%s, the kernel "
                                     "takes %zu",
                                     r.name.c_str(), args_bytes, args ? "" : " at a null pointer", r.args_bytes));
  if (dynamic_shared > k->max_dynamic_shared)
    return InvalidArgument(StrFormat("software GPU: Launch of '%s': %u bytes of dynamic shared memory, the kernel "
                                     "may use %u%s",
                                     r.name.c_str(), dynamic_shared, k->max_dynamic_shared,
                                     k->opted_in ? " (its SetMaxDynamicShared)" : " (SetMaxDynamicShared raises it)"));
  sgpu::LaunchSpec spec;
  spec.kernel = &r;
  spec.grid = ToDim(grid);
  spec.block = ToDim(block);
  spec.dynamic_shared = dynamic_shared;
  spec.shared_limit = k->opted_in ? sgpu::kSharedPerBlockOptIn : sgpu::kSharedPerBlock;
  spec.args = args;
  STRATA_RETURN_IF_ERROR(sgpu::CheckLaunchShape(spec));
  if (!s->capture) return RunLaunch(*k, grid, block, dynamic_shared, args);
  GraphOp op;
  op.kind = Kind::kLaunch;
  op.kernel = k;
  op.grid = grid;
  op.block = block;
  op.dynamic_shared = dynamic_shared;
  const auto* bytes = static_cast<const uint8_t*>(args);
  op.args.assign(bytes, bytes + args_bytes);
  s->capture->ops.push_back(std::move(op));
  return Status::Ok();
}

Status SoftwareGpu::RunLaunch(const SgpuKernel& k, Dim3 grid, Dim3 block, uint32_t dynamic_shared, const void* args) {
  const sgpu::RegisteredKernel& r = *k.registered;
  if (ShouldInjectFault(FaultSite::kGpuLaunch))
    return ResourceExhausted(StrFormat("software GPU: Launch of '%s' (grid (%u,%u,%u), block (%u,%u,%u)): too many "
                                       "resources requested for launch: injected fault (gpu-launch)",
                                       r.name.c_str(), grid.x, grid.y, grid.z, block.x, block.y, block.z));
  if (ShouldInjectFault(FaultSite::kGpuPoison))
    return Poison(Internal(StrFormat("software GPU: Launch of '%s': an illegal memory access was encountered: "
                                     "injected fault (gpu-poison); the device is unusable from here on",
                                     r.name.c_str())));
  // The kernel reads its argument struct in place: give it the alignment of any type.
  args_.resize((r.args_bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
  std::memcpy(args_.data(), args, r.args_bytes);
  last_kernel_ = r.name;
  sgpu::LaunchSpec spec;
  spec.kernel = &r;
  spec.grid = ToDim(grid);
  spec.block = ToDim(block);
  spec.dynamic_shared = dynamic_shared;
  spec.shared_limit = k.opted_in ? sgpu::kSharedPerBlockOptIn : sgpu::kSharedPerBlock;
  spec.args = args_.data();
  return scheduler_.Run(spec);
}

// --- order and time -------------------------------------------------------------

Result<sgpu_handles::SgpuStream*> SoftwareGpu::StreamOf(Stream s, const char* call) {
  if (s == nullptr) return &default_stream_;
  return FindHandle(streams_, s, call, "stream");
}

Result<sgpu_handles::SgpuEvent*> SoftwareGpu::EventOf(Event e, const char* call) {
  return FindHandle(events_, e, call, "event");
}

Result<Stream> SoftwareGpu::CreateStream() {
  STRATA_RETURN_IF_ERROR(poison_);
  auto s = std::make_unique<SgpuStream>();
  auto* handle = reinterpret_cast<Stream>(s.get());
  streams_.emplace(s.get(), std::move(s));
  return handle;
}

void SoftwareGpu::DestroyStream(Stream stream) { streams_.erase(stream); }

Status SoftwareGpu::Synchronize(Stream stream) {
  STRATA_RETURN_IF_ERROR(poison_);
  STRATA_ASSIGN_OR_RETURN(SgpuStream * s, StreamOf(stream, "Synchronize"));
  if (s->capture)
    return FailedPrecondition("software GPU: Synchronize of a stream that is capturing a graph (EndCapture first)");
  Status canaries = memory_.CheckCanaries();
  if (!canaries.ok())
    return Poison(Status(canaries.code(),
                         canaries.message() + "; found at Synchronize, after kernel '" + last_kernel_ + "'"));
  return Status::Ok();
}

Result<Event> SoftwareGpu::CreateEvent() {
  STRATA_RETURN_IF_ERROR(poison_);
  auto e = std::make_unique<SgpuEvent>();
  auto* handle = reinterpret_cast<Event>(e.get());
  events_.emplace(e.get(), std::move(e));
  return handle;
}

void SoftwareGpu::DestroyEvent(Event event) {
  // A graph that records it would write through a dangling pointer: drop those records.
  auto* e = reinterpret_cast<SgpuEvent*>(event);
  auto drop = [e](SgpuGraph& g) {
    std::erase_if(g.ops, [e](const GraphOp& op) { return op.kind == Kind::kRecord && op.event == e; });
  };
  for (auto& [h, g] : graphs_) drop(*g);
  for (auto& [h, s] : streams_)
    if (s->capture) drop(*s->capture);
  if (default_stream_.capture) drop(*default_stream_.capture);
  events_.erase(event);
}

Status SoftwareGpu::Record(Event event, Stream stream) {
  STRATA_RETURN_IF_ERROR(poison_);
  STRATA_ASSIGN_OR_RETURN(SgpuEvent * e, EventOf(event, "Record"));
  GraphOp op;
  op.kind = Kind::kRecord;
  op.event = e;
  return Submit(stream, std::move(op), "Record");
}

Status SoftwareGpu::StreamWait(Stream stream, Event event) {
  STRATA_RETURN_IF_ERROR(poison_);
  STRATA_RETURN_IF_ERROR(StreamOf(stream, "StreamWait").status());
  return EventOf(event, "StreamWait").status();  // everything before it has run already
}

Status SoftwareGpu::EventSynchronize(Event event) {
  STRATA_RETURN_IF_ERROR(poison_);
  return EventOf(event, "EventSynchronize").status();
}

Result<float> SoftwareGpu::ElapsedMs(Event start, Event end) {
  STRATA_RETURN_IF_ERROR(poison_);
  STRATA_ASSIGN_OR_RETURN(SgpuEvent * a, EventOf(start, "ElapsedMs"));
  STRATA_ASSIGN_OR_RETURN(SgpuEvent * b, EventOf(end, "ElapsedMs"));
  if (!a->recorded || !b->recorded)
    return FailedPrecondition(StrFormat("software GPU: ElapsedMs: the %s event was never recorded",
                                        !a->recorded ? "start" : "end"));
  return std::chrono::duration<float, std::milli>(b->at - a->at).count();
}

// --- graphs ---------------------------------------------------------------------

Status SoftwareGpu::BeginCapture(Stream stream) {
  STRATA_RETURN_IF_ERROR(poison_);
  STRATA_ASSIGN_OR_RETURN(SgpuStream * s, StreamOf(stream, "BeginCapture"));
  if (s->capture) return FailedPrecondition("software GPU: BeginCapture of a stream that is capturing already");
  s->capture = std::make_unique<SgpuGraph>();
  return Status::Ok();
}

Result<Graph> SoftwareGpu::EndCapture(Stream stream) {
  STRATA_RETURN_IF_ERROR(poison_);
  STRATA_ASSIGN_OR_RETURN(SgpuStream * s, StreamOf(stream, "EndCapture"));
  if (!s->capture) return FailedPrecondition("software GPU: EndCapture of a stream that is not capturing");
  std::unique_ptr<SgpuGraph> g = std::move(s->capture);
  auto* handle = reinterpret_cast<Graph>(g.get());
  graphs_.emplace(g.get(), std::move(g));
  return handle;
}

Status SoftwareGpu::LaunchGraph(Graph graph, Stream stream) {
  STRATA_RETURN_IF_ERROR(poison_);
  STRATA_ASSIGN_OR_RETURN(SgpuGraph * g, FindHandle(graphs_, graph, "LaunchGraph", "graph"));
  STRATA_ASSIGN_OR_RETURN(SgpuStream * s, StreamOf(stream, "LaunchGraph"));
  if (s->capture)
    return Unsupported("software GPU: LaunchGraph on a capturing stream (graphs within graphs) is not supported");
  for (size_t i = 0; i < g->ops.size(); ++i) {
    Status st = Run(g->ops[i]);
    if (!st.ok())
      return !poison_.ok() ? poison_
                           : st.WithContext(StrFormat("LaunchGraph: step %zu of %zu (%s)", i + 1, g->ops.size(),
                                                      KindName(g->ops[i].kind)));
  }
  return Status::Ok();
}

void SoftwareGpu::DestroyGraph(Graph graph) { graphs_.erase(graph); }

// --- opening --------------------------------------------------------------------

Result<std::unique_ptr<Device>> OpenSoftwareGpu(const SoftwareGpuOptions& options) {
  if (sgpu::kKernelsForWarp32 != 32 || sgpu::kKernelsForWarp64 != 64)
    return Internal("software GPU: the kernels of this build are not linked in");
  if (options.warp_size != 32 && options.warp_size != 64)
    return InvalidArgument(StrFormat("software GPU: warp size %u: expected 32 or 64", options.warp_size));
  if (options.threads < 1 || options.threads > 1024)
    return InvalidArgument(StrFormat("software GPU: %d host threads: expected 1 to 1024", options.threads));
  if (options.memory_bytes == 0) return InvalidArgument("software GPU: memory_bytes is 0");
  return std::unique_ptr<Device>(std::make_unique<SoftwareGpu>(options));
}

}  // namespace strata::gpu
