// The GPU backend's memory, weights, pass tables and the small ops; the
// layers' ops are gpu_layers.cc, the workspace bound gpu_workspace.cc.

#include "runtime/gpu/gpu_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <set>

#include "runtime/base/strings.h"
#include "runtime/gpu/gpu_pass.h"
#include "runtime/gpu/gpu_workspace.h"
#include "runtime/gpu/images.h"
#include "runtime/gpu/kernels/kernel_args.h"
#include "runtime/model/kernel_coverage.h"

namespace strata {

using gpu::DevicePtr;
using R = TensorRole;

GpuBackend::GpuBackend(std::unique_ptr<gpu::Device> device, gpu::DeviceKind kind)
    : device_(std::move(device)), kind_(kind), pass_(std::make_unique<PassState>()) {
  if (device_) ordinal_ = device_->info().ordinal;
  const char* graphs = std::getenv("STRATA_GPU_GRAPHS");
  graphs_on_ = !(graphs && std::string_view(graphs) == "0");
}

GpuBackend::~GpuBackend() {
  if (device_) {
    DropGraph();
    for (const Block& b : blocks_)
      if (b.ptr) device_->Free(b.ptr);
    for (DevicePtr p : weights_)
      if (p) device_->Free(p);
    if (pass_->staging) device_->FreePinned(pass_->staging);
    if (slot_uploads_.stream) {
      (void)device_->Synchronize(slot_uploads_.stream);
      device_->DestroyStream(slot_uploads_.stream);
    }
    if (slot_uploads_.layer_done) device_->DestroyEvent(slot_uploads_.layer_done);
    if (slot_uploads_.uploaded) device_->DestroyEvent(slot_uploads_.uploaded);
    if (stream_) device_->DestroyStream(stream_);
  }
}

Result<std::unique_ptr<GpuBackend>> GpuBackend::Create(std::unique_ptr<gpu::Device> device) {
  if (!device) return Internal("GpuBackend::Create without a device");
  const gpu::DeviceKind kind = device->info().kind;
  std::unique_ptr<GpuBackend> b(new GpuBackend(std::move(device), kind));
  STRATA_ASSIGN_OR_RETURN(b->kernels_, gpu::KernelTable::Load(*b->device_));
  STRATA_ASSIGN_OR_RETURN(b->stream_, b->device_->CreateStream());
  return b;
}

std::unique_ptr<GpuBackend> GpuBackend::ForPlanning(gpu::DeviceKind kind) {
  return std::unique_ptr<GpuBackend>(new GpuBackend(nullptr, kind));
}

Status GpuBackend::NeedDevice() const {
  if (device_) return Status::Ok();
  return Internal(StrFormat("the %s backend was made for planning only: it has no device", name().c_str()));
}

std::string GpuBackend::name() const {
  if (!device_) return std::string(gpu::DeviceKindName(kind_)) + " (planning only: no device opened)";
  const gpu::DeviceInfo& i = device_->info();
  if (i.kind == gpu::DeviceKind::kSoftware) return StrFormat("software-gpu (warp %u)", i.warp_size);
  return StrFormat("%s (%s, %s)", std::string(gpu::DeviceKindName(i.kind)).c_str(), i.name.c_str(), i.arch.c_str());
}

std::vector<std::string> GpuBackend::Notes() const {
  std::vector<std::string> notes;
  if (kind_ == gpu::DeviceKind::kSoftware)
    notes.push_back("the software GPU runs the GPU kernels on the CPU, one fiber per GPU thread: a test device, "
                    "many times slower than the CPU backend");
  return notes;
}

Placement GpuBackend::WeightPlacement() const {
  return kind_ == gpu::DeviceKind::kHip ? Placement::kHip : Placement::kCuda;
}

Status GpuBackend::Health() const { return device_ ? device_->poisoned() : Status::Ok(); }

// 5 timed copies of min(512 MiB, a quarter of the free memory) after one
// untimed, between two buffers; events around each.
Result<double> GpuBackend::DeviceCopyGBs() {
  STRATA_RETURN_IF_ERROR(NeedDevice());
  uint64_t free = 0, total = 0;
  STRATA_RETURN_IF_ERROR(device_->MemoryInfo(&free, &total));
  const uint64_t limit = device_->info().kind == gpu::DeviceKind::kSoftware ? (64ull << 20) : (512ull << 20);
  const uint64_t bytes = std::min<uint64_t>(limit, free / 4) & ~uint64_t{255};
  if (bytes < (1u << 20)) return 0.0;
  STRATA_ASSIGN_OR_RETURN(DevicePtr a, device_->Allocate(bytes, "copy bandwidth (source)"));
  auto b = device_->Allocate(bytes, "copy bandwidth (destination)");
  if (!b.ok()) {
    device_->Free(a);
    return b.status();
  }
  auto start = device_->CreateEvent();
  auto end = device_->CreateEvent();
  std::vector<double> gbs;
  Status s = start.ok() ? end.status() : start.status();
  if (s.ok()) s = device_->Fill(a, 1, bytes, stream_);
  if (s.ok()) s = device_->CopyOnDevice(*b, a, bytes, stream_);  // untimed: first touch
  for (int rep = 0; rep < 5 && s.ok(); ++rep) {
    s = device_->Record(*start, stream_);
    if (s.ok()) s = device_->CopyOnDevice(*b, a, bytes, stream_);
    if (s.ok()) s = device_->Record(*end, stream_);
    if (s.ok()) s = device_->EventSynchronize(*end);
    if (!s.ok()) break;
    auto ms = device_->ElapsedMs(*start, *end);
    if (!ms.ok()) {
      s = ms.status();
      break;
    }
    if (*ms > 0) gbs.push_back(2.0 * static_cast<double>(bytes) / (static_cast<double>(*ms) * 1e6));
  }
  if (start.ok()) device_->DestroyEvent(*start);
  if (end.ok()) device_->DestroyEvent(*end);
  device_->Free(*b);
  device_->Free(a);
  STRATA_RETURN_IF_ERROR(Check(s));
  if (gbs.empty()) return 0.0;
  std::sort(gbs.begin(), gbs.end());
  return gbs[gbs.size() / 2];
}

Status GpuBackend::Check(Status s) const {
  if (!s.ok()) return s;
  return device_->poisoned();
}

// --- the memory plan ------------------------------------------------------------

bool GpuBackend::CanMultiply(GgmlType type) const { return GpuKernelSupport(type) == KernelSupport::kFast; }

uint64_t GpuBackend::DeviceFreeBytes() const {
  uint64_t free = 0, total = 0;
  if (!device_ || !device_->MemoryInfo(&free, &total).ok()) return 0;
  return free;
}

uint64_t GpuBackend::DriverContextBytes(gpu::DeviceKind kind) {
  // A CUDA context on a current driver, with lazy module loading (the
  // default since CUDA 12.2), takes a few hundred MiB of device memory
  // (measured 300-500 MiB by nvidia-smi across Turing to Hopper cards); HIP's
  // less. Planned as a round upper figure; the software GPU takes none.
  switch (kind) {
    case gpu::DeviceKind::kCuda: return 512ull << 20;
    case gpu::DeviceKind::kHip: return 256ull << 20;
    case gpu::DeviceKind::kSoftware: return 0;
  }
  return 0;
}

void GpuBackend::AddPlanLines(const Model& model, const PassShape& largest, std::vector<PlanLine>* lines) const {
  const gpu::ModuleImage* image = kind_ == gpu::DeviceKind::kCuda ? gpu::CudaModuleImage()
                                  : kind_ == gpu::DeviceKind::kHip ? gpu::HipModuleImage()
                                                                   : nullptr;
  if (kind_ != gpu::DeviceKind::kSoftware)
    lines->push_back(PlanLine{PlanItem::kModuleImage, BufferPlace(), "GPU kernels (module image)",
                              image ? image->size : 0, true,
                              image ? StrFormat("the embedded image (%s), loaded whole: an upper bound", image->targets)
                                    : std::string("this build has no image for this kind of device")});
  lines->push_back(PlanLine{PlanItem::kDriverContext, BufferPlace(), "driver context (estimate)",
                            DriverContextBytes(kind_), true,
                            kind_ == gpu::DeviceKind::kSoftware
                                ? std::string("the software GPU has no driver context")
                                : std::string("what the driver keeps on the device for a context, a stated figure "
                                              "(docs/gpu.md)")});
  const uint64_t tables = gpu::PassTablesBytes(std::max<int64_t>(largest.tokens, 1),
                                               std::max<int64_t>(largest.tokens, 1), model.hp().n_layer + 1);
  lines->push_back(PlanLine{PlanItem::kBackendOther, MemoryPlace::Heap(), "pass tables (pinned)", tables, true,
                            "token ids, positions and cache addresses, staged for the upload at each pass"});
}

uint64_t GpuBackend::StagingBytes(uint64_t /*largest_upload*/) const { return 0; }

// --- buffers ------------------------------------------------------------------

Result<BackendBuffer> GpuBackend::Allocate(uint64_t bytes, std::string_view what) {
  STRATA_RETURN_IF_ERROR(NeedDevice());
  const uint64_t size = std::max<uint64_t>(bytes, kBufferAlignment);
  STRATA_ASSIGN_OR_RETURN(DevicePtr p, device_->Allocate(size, what));
  uint32_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<uint32_t>(blocks_.size());
    blocks_.emplace_back();
  }
  blocks_[id] = Block{p, size};
  // Backend memory starts zeroed (backend.h).
  if (Status s = device_->Fill(p, 0, size, stream_); !s.ok()) {
    Free(id);
    return s;
  }
  return MakeHandle(id, bytes);
}

void GpuBackend::Free(uint32_t id) {
  if (id >= blocks_.size() || !blocks_[id].ptr) return;
  if (slot_uploads_.stream) (void)device_->Synchronize(slot_uploads_.stream);  // no copy into freed memory
  device_->Free(blocks_[id].ptr);
  blocks_[id] = Block{};
  free_ids_.push_back(id);
}

DevicePtr GpuBackend::Address(const BackendBuffer& b) const {
  return b.owner() == this && b.id() < blocks_.size() ? blocks_[b.id()].ptr : 0;
}

namespace {
Status CheckRange(DevicePtr base, const BackendBuffer& b, uint64_t offset, uint64_t bytes, const char* what) {
  if (!base) return Internal(StrFormat("%s: a buffer of another backend", what));
  if (offset > b.bytes() || bytes > b.bytes() - offset)
    return Internal(StrFormat("%s: bytes %llu..%llu outside a buffer of %llu", what,
                              static_cast<unsigned long long>(offset), static_cast<unsigned long long>(offset + bytes),
                              static_cast<unsigned long long>(b.bytes())));
  return Status::Ok();
}
}  // namespace

Status GpuBackend::Upload(const BackendBuffer& dst, uint64_t offset, const void* src, uint64_t bytes) {
  const DevicePtr base = Address(dst);
  STRATA_RETURN_IF_ERROR(CheckRange(base, dst, offset, bytes, "upload"));
  if (bytes && slot_uploads_.open) {
    // A slot upload of the split's EndLayer: from the mapped pack (or a
    // static run of zeros), which outlives the copy; not waited for here.
    STRATA_RETURN_IF_ERROR(device_->CopyToDevice(base + offset, src, bytes, slot_uploads_.stream));
    slot_uploads_.pending = true;
  } else if (bytes) {
    STRATA_RETURN_IF_ERROR(WaitSlotUploads());  // after any slot upload still in flight
    STRATA_RETURN_IF_ERROR(device_->CopyToDevice(base + offset, src, bytes, stream_));
    STRATA_RETURN_IF_ERROR(device_->Synchronize(stream_));  // `src` may go when this returns
  }
  transfers_.up_bytes += bytes;
  ++transfers_.up_calls;
  return Status::Ok();
}

Status GpuBackend::OpenSlotUploads() {
  SlotUploads& u = slot_uploads_;
  if (!u.stream) {
    STRATA_ASSIGN_OR_RETURN(u.stream, device_->CreateStream());
    STRATA_ASSIGN_OR_RETURN(u.layer_done, device_->CreateEvent());
    STRATA_ASSIGN_OR_RETURN(u.uploaded, device_->CreateEvent());
  }
  // The uploads wait for the layer's products (which may read a slot the
  // cache just gave to another expert).
  STRATA_RETURN_IF_ERROR(device_->Record(u.layer_done, stream_));
  STRATA_RETURN_IF_ERROR(device_->StreamWait(u.stream, u.layer_done));
  u.open = true;
  return Status::Ok();
}

Status GpuBackend::CloseSlotUploads() {
  SlotUploads& u = slot_uploads_;
  u.open = false;
  if (!u.pending) return Status::Ok();
  return device_->Record(u.uploaded, u.stream);
}

Status GpuBackend::WaitSlotUploads() {
  SlotUploads& u = slot_uploads_;
  if (!u.pending) return Status::Ok();
  STRATA_RETURN_IF_ERROR(device_->StreamWait(stream_, u.uploaded));
  u.pending = false;
  return Status::Ok();
}

Status GpuBackend::Download(const BackendBuffer& src, uint64_t offset, void* dst, uint64_t bytes) {
  const DevicePtr base = Address(src);
  STRATA_RETURN_IF_ERROR(CheckRange(base, src, offset, bytes, "download"));
  if (bytes) {
    STRATA_RETURN_IF_ERROR(device_->CopyToHost(dst, base + offset, bytes, stream_));
    STRATA_RETURN_IF_ERROR(device_->Synchronize(stream_));
  }
  transfers_.down_bytes += bytes;
  ++transfers_.down_calls;
  return Status::Ok();
}

// --- weights --------------------------------------------------------------------

namespace {
// Every tensor the forward pass reads, once (the views Model::Get gives: the
// bytes that run, decode copies included where the model reads them).
std::vector<const TensorView*> ReadTensors(const Model& model) {
  std::set<const TensorView*> seen;
  std::vector<const TensorView*> out;
  auto add = [&](const TensorView* t) {
    if (t && seen.insert(t).second) out.push_back(t);
  };
  for (size_t r = 0; r < static_cast<size_t>(R::kCount); ++r) {
    add(model.Get(static_cast<R>(r)));
    for (uint32_t il = 0; il < model.run_layers(); ++il) add(model.Get(static_cast<int32_t>(il), static_cast<R>(r)));
  }
  return out;
}
}  // namespace

uint64_t GpuBackend::ResidentWeightBytes(const Model& model) const {
  uint64_t bytes = 0;
  for (const TensorView* t : ReadTensors(model)) bytes += t->data.size();
  return bytes;
}

uint64_t GpuBackend::RoutedExpertBytes(const Model& model) const {
  uint64_t bytes = 0;
  for (const TensorView* t : ReadTensors(model))
    if (IsRoutedExpert(*t)) bytes += t->data.size();
  return bytes;
}

void GpuBackend::ReleaseWeights() {
  for (DevicePtr p : weights_)
    if (p) device_->Free(p);
  weights_.clear();
  routed_on_host_ = false;
  bound_begin_ = nullptr;
  bound_count_ = 0;
}

// All or nothing: a failure (a tensor the kernels cannot read, an allocation
// or a copy that fails) frees what was uploaded so far.
Status GpuBackend::Bind(const Model& model) {
  STRATA_RETURN_IF_ERROR(NeedDevice());
  DropGraph();
  last_key_.reset();
  ReleaseWeights();
  Status s = BindWeights(model, /*routed_experts=*/true);
  if (!s.ok()) ReleaseWeights();
  return s;
}

Status GpuBackend::BindWithoutRoutedExperts(const Model& model) {
  STRATA_RETURN_IF_ERROR(NeedDevice());
  DropGraph();
  last_key_.reset();
  ReleaseWeights();
  Status s = BindWeights(model, /*routed_experts=*/false);
  if (!s.ok()) ReleaseWeights();
  return s;
}

Result<gpu::AttnBlocking> GpuBackend::KernelShapes(const HParams& hp) const {
  STRATA_RETURN_IF_ERROR(NeedDevice());
  gpu::AttnBlocking attn;
  if (hp.n_head > 0) {
    const int64_t group = std::max<int64_t>(1, hp.n_head / std::max<uint32_t>(hp.n_head_kv, 1));
    STRATA_ASSIGN_OR_RETURN(attn, gpu::AttnBlocking::For(group, hp.head_dim_k, hp.head_dim_v,
                                                         device_->info().warp_size, 48u << 10));
  }
  if (hp.IsRecurrentLayer(0) || hp.full_attn_interval > 1) {
    if (hp.ssm_d_state > 256 || hp.ssm_d_state > device_->info().max_threads_per_block)
      return Unsupported(StrFormat("delta-net heads of %u dimensions: the GPU kernel takes at most 256", hp.ssm_d_state));
  }
  if (hp.n_expert > 0 && (hp.n_expert > 16 * device_->info().warp_size || hp.n_expert_used > 16))
    return Unsupported(StrFormat("%u experts with %u used per token: the GPU router takes at most %u experts and 16 "
                                 "used",
                                 hp.n_expert, hp.n_expert_used, 16 * device_->info().warp_size));
  return attn;
}

Status GpuBackend::BindWeights(const Model& model, bool routed_experts) {
  const uint64_t bytes0 = transfers_.weight_bytes;
  weights_.assign(model.tensors().size(), 0);
  routed_on_host_ = !routed_experts && model.hp().n_expert > 0;
  bound_begin_ = model.tensors().data();
  bound_count_ = model.tensors().size();
  const HParams& hp = model.hp();
  PassState& ps = *pass_;
  ps.bound_embd = hp.n_embd;
  ps.bound_layers = hp.n_layer + 1;  // the pass tables' rows: the layers and an MTP layer
  ps.bound_group = std::max<int64_t>(1, hp.n_head / std::max<uint32_t>(hp.n_head_kv, 1));
  STRATA_ASSIGN_OR_RETURN(ps.attn, KernelShapes(hp));
  const std::vector<const TensorView*> tensors = ReadTensors(model);
  for (const TensorView* t : tensors) {
    if (!routed_experts && IsRoutedExpert(*t)) continue;  // the expert tiers hold them
    if (t->rank >= 2 && GpuKernelSupport(t->type) != KernelSupport::kFast)
      return Unsupported(StrFormat("tensor '%s' is %s, which the GPU kernels cannot read; repack with "
                                   "--decode-copies q8_0 (strata-pack) to give it a Q8_0 copy",
                                   std::string(t->name).c_str(), std::string(TypeName(t->type)).c_str()));
    const auto index = static_cast<size_t>(t - bound_begin_);
    if (t < bound_begin_ || index >= bound_count_) return Internal("Bind: a tensor outside the model's table");
    auto p = device_->Allocate(t->data.size(), t->name);
    if (!p.ok())
      return ResourceExhausted(StrFormat("cannot place tensor '%s' (%s) on %s: %s", std::string(t->name).c_str(),
                                         HumanBytes(t->data.size()).c_str(), name().c_str(),
                                         p.status().message().c_str()));
    weights_[index] = *p;
  }
  // The copies after the allocations, so that their time is the link's
  // rate, measured (256 KiB at least) for the split's offload decision.
  const auto t0 = std::chrono::steady_clock::now();
  for (const TensorView* t : tensors) {
    const DevicePtr p = weights_[static_cast<size_t>(t - bound_begin_)];
    if (!p) continue;
    STRATA_RETURN_IF_ERROR(device_->CopyToDevice(p, t->data.data(), t->data.size(), stream_));
    transfers_.weight_bytes += t->data.size();
  }
  STRATA_RETURN_IF_ERROR(Check(device_->Synchronize(stream_)));
  const uint64_t bytes = transfers_.weight_bytes - bytes0;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  link_bytes_per_s_ = bytes >= (256u << 10) && seconds > 0 ? static_cast<double>(bytes) / seconds : 0;
  return Status::Ok();
}

Result<gpu::DeviceMatrix> GpuBackend::Weight(const TensorView* t) const {
  if (!t) return Internal("a weight the layer needs is missing");
  const auto index = static_cast<size_t>(t - bound_begin_);
  if (t < bound_begin_ || index >= bound_count_ || !weights_[index])
    return Internal(StrFormat("tensor '%s' is not on the device (Bind another model?)", std::string(t->name).c_str()));
  gpu::DeviceMatrix m;
  m.type = t->type;
  m.data = weights_[index];
  m.row_bytes = t->row_bytes;
  m.cols = static_cast<int64_t>(t->shape[0]);
  m.rows = static_cast<int64_t>(t->expert_count ? t->shape[1] : t->rows());
  m.expert_stride = t->expert_stride;
  return m;
}

Result<DevicePtr> GpuBackend::WeightVector(const TensorView* t) const {
  if (!t) return DevicePtr{0};
  STRATA_ASSIGN_OR_RETURN(gpu::DeviceMatrix m, Weight(t));
  return m.data;
}

// --- run state -------------------------------------------------------------------

uint64_t GpuBackend::WorkspaceBytes(const Model& model, const PassShape& shape) const {
  return gpu::GpuWorkspaceBytes(model, shape);
}

Result<Workspace> GpuBackend::CreateWorkspace(uint64_t bytes, std::string_view what) {
  STRATA_ASSIGN_OR_RETURN(BackendBuffer buf, Allocate(bytes, what));
  const DevicePtr base = Address(buf);
  // The pass tables are built on the host in pinned memory: room for the
  // most tokens this workspace can hold (three activations of n_embd floats each).
  const uint64_t embd = pass_->bound_embd ? pass_->bound_embd : 1;
  const int64_t max_tokens = static_cast<int64_t>(bytes / (3 * embd * sizeof(float))) + 1;
  STRATA_RETURN_IF_ERROR(gpu::ReserveStaging(*device_, *pass_, max_tokens, pass_->bound_layers));
  return Workspace(std::move(buf), reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(base)), bytes);
}

Status GpuBackend::ClearRecurrent(SequenceState& s) {
  const DevicePtr base = Address(s.storage);
  if (!base) return Internal("ClearRecurrent: a state of another backend");
  for (const SequenceState::Layer& l : s.layers) {
    if (l.conv.bytes) STRATA_RETURN_IF_ERROR(device_->Fill(base + l.conv.offset, 0, l.conv.bytes, stream_));
    if (l.ssm.bytes) STRATA_RETURN_IF_ERROR(device_->Fill(base + l.ssm.offset, 0, l.ssm.bytes, stream_));
  }
  return Check(device_->Synchronize(stream_));
}

Status GpuBackend::CopyRecurrent(const SequenceState& from, SequenceState& to) {
  const DevicePtr src = Address(from.storage), dst = Address(to.storage);
  if (!src || !dst) return Internal("CopyRecurrent: a state of another backend");
  if (from.layers.size() != to.layers.size()) return Internal("CopyRecurrent: states of different models");
  for (size_t il = 0; il < to.layers.size(); ++il) {
    const SequenceState::Layer &f = from.layers[il], &t = to.layers[il];
    if (f.conv.bytes != t.conv.bytes || f.ssm.bytes != t.ssm.bytes)
      return Internal("CopyRecurrent: states of different models");
    if (t.conv.bytes) STRATA_RETURN_IF_ERROR(device_->CopyOnDevice(dst + t.conv.offset, src + f.conv.offset, t.conv.bytes, stream_));
    if (t.ssm.bytes) STRATA_RETURN_IF_ERROR(device_->CopyOnDevice(dst + t.ssm.offset, src + f.ssm.offset, t.ssm.bytes, stream_));
  }
  return Check(device_->Synchronize(stream_));
}

// --- the pass ----------------------------------------------------------------------

DevicePtr GpuBackend::ActAddr(strata::Act a) const { return pass_->act[static_cast<size_t>(a)]; }

Status GpuBackend::BeginPass(const PassDesc& d) {
  STRATA_RETURN_IF_ERROR(NeedDevice());
  if (!d.workspace || d.workspace->backend() != this) return Internal("BeginPass: a workspace of another backend");
  if (in_pass_) return Internal("BeginPass: a pass is already running on this backend (one pass at a time)");
  in_pass_ = true;
  PassState& p = *pass_;
  p.Reset();
  p.m = d.model;
  p.hp = &d.model->hp();
  p.batch = d.batch;
  p.opt = d.options;
  p.ws = d.workspace;
  p.ws_mark = d.workspace->mark();
  p.n = d.n;
  p.n_rows = d.n_rows;
  p.max_keys = d.max_keys;
  for (const SequenceBatch& sb : d.batch)
    if (Address(sb.state->storage) == 0) {
      EndPass();
      return Internal("BeginPass: a sequence state of another backend");
    }
  Status st = gpu::UploadPassTables(*device_, stream_, p, [this](const SequenceState& s) { return Address(s.storage); },
                                    transfers_);
  const int64_t E = p.hp->n_embd;
  if (st.ok()) {
    for (DevicePtr& a : p.act) a = gpu::Take(*p.ws, static_cast<uint64_t>(p.n * E) * sizeof(float));
    if (!p.act[2]) st = p.ws->Exhausted("forward pass");
  }
  // A decode shape seen in the pass before is captured; a captured one replays
  // (the embedding and every op below are in the graph).
  graph_mode_ = GraphMode::kOff;
  std::optional<GraphKey> key = GraphKeyOf(d);
  if (st.ok() && key) {
    if (graph_ && *key == graph_key_) {
      graph_mode_ = GraphMode::kReplay;
    } else if (last_key_ && *last_key_ == *key && device_->BeginCapture(stream_).ok()) {
      graph_mode_ = GraphMode::kCapture;
    }
  }
  last_key_ = std::move(key);
  if (st.ok() && graph_mode_ == GraphMode::kReplay) {
    st = device_->LaunchGraph(graph_, stream_);
    ++graph_counts_.replays;
  } else if (st.ok()) {
    // Token embeddings.
    const TensorView* emb = d.embedding ? d.embedding : d.model->Get(R::kTokenEmbd);
    auto w = Weight(emb);
    st = w.status();
    if (st.ok()) {
      gpu::EmbedArgs a{};
      a.table = reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(w->data));
      a.row_bytes = w->row_bytes;
      a.ids = p.tables.ids;
      a.x = reinterpret_cast<float*>(static_cast<uintptr_t>(p.act[0]));
      a.n = static_cast<int32_t>(p.n);
      a.cols = static_cast<int32_t>(E);
      const uint32_t threads = 64;
      const uint32_t subs = static_cast<uint32_t>((E + 31) / 32);
      st = L()(kernels_.embed[static_cast<size_t>(w->type)],
               gpu::Dim3{static_cast<uint32_t>(p.n), (subs + threads - 1) / threads, 1}, gpu::Dim3{threads, 1, 1}, 0, a);
    }
  }
  st = Check(st);
  if (!st.ok()) EndPass();
  return st;
}

Status GpuBackend::ReadAct(strata::Act a, float* host) {
  const uint64_t bytes = static_cast<uint64_t>(pass_->n * pass_->hp->n_embd) * sizeof(float);
  STRATA_RETURN_IF_ERROR(device_->CopyToHost(host, ActAddr(a), bytes, stream_));
  STRATA_RETURN_IF_ERROR(Check(device_->Synchronize(stream_)));
  transfers_.down_bytes += bytes;
  ++transfers_.down_calls;
  return Status::Ok();
}

Status GpuBackend::WriteAct(strata::Act a, const float* host) {
  const uint64_t bytes = static_cast<uint64_t>(pass_->n * pass_->hp->n_embd) * sizeof(float);
  STRATA_RETURN_IF_ERROR(device_->CopyToDevice(ActAddr(a), host, bytes, stream_));
  STRATA_RETURN_IF_ERROR(Check(device_->Synchronize(stream_)));  // `host` may go when this returns
  transfers_.up_bytes += bytes;
  ++transfers_.up_calls;
  return Status::Ok();
}

std::optional<GpuBackend::GraphKey> GpuBackend::GraphKeyOf(const PassDesc& d) const {
  if (!graphs_on_ || !d.whole || !device_->info().graphs || !d.options) return std::nullopt;
  if (d.options->observer || d.options->experts) return std::nullopt;  // host work inside the pass
  if (d.mtp || d.options->hidden) return std::nullopt;  // host rows in (h_prev) or out mid-pass
  if (d.n != static_cast<int64_t>(d.batch.size())) return std::nullopt;  // decode only: a token a sequence
  GraphKey k;
  // The workspace's memory, not the object: a pass's own workspace is a new
  // object each time, and another memory at the same address holds the same layout.
  k.workspace = reinterpret_cast<uintptr_t>(d.workspace->base());
  k.capacity = d.workspace->capacity();
  k.mark = d.workspace->mark();
  k.model = d.model;
  k.n = d.n;
  k.n_rows = d.n_rows;
  k.splits = d.model->hp().n_head > 0 ? gpu::AttentionShape::For(d.model->hp(), Mixer::kAttention, d.n, d.max_keys).splits
                                      : 0;
  k.argmax = d.options->argmax != nullptr;
  k.delta_net = static_cast<int32_t>(d.options->delta_net);
  for (const SequenceBatch& sb : d.batch) {
    k.states.push_back(static_cast<uintptr_t>(Address(sb.state->storage)));
    k.states.push_back(static_cast<uintptr_t>(sb.state->kv_type));
  }
  return k;
}

void GpuBackend::DropGraph() {
  if (graph_) device_->DestroyGraph(graph_);
  graph_ = nullptr;
}

void GpuBackend::EndPass() {
  if (graph_mode_ == GraphMode::kCapture) {  // the pass failed before Logits ended the capture
    auto g = device_->EndCapture(stream_);
    if (g.ok()) device_->DestroyGraph(*g);
    last_key_.reset();
  }
  graph_mode_ = GraphMode::kOff;
  if (pass_->ws) pass_->ws->Release(pass_->ws_mark);
  pass_->Reset();
  in_pass_ = false;
}

Status GpuBackend::RmsNorm(strata::Act src, const TensorView* weight, strata::Act dst) {
  if (graph_mode_ == GraphMode::kReplay) return Status::Ok();  // in the graph BeginPass launched
  const PassState& p = *pass_;
  STRATA_ASSIGN_OR_RETURN(DevicePtr w, WeightVector(weight));
  gpu::RmsNormArgs a{};
  a.x = gpu::AsPtr<const float>(ActAddr(src));
  a.w = gpu::AsPtr<const float>(w);
  a.y = gpu::AsPtr<float>(ActAddr(dst));
  a.n = static_cast<int32_t>(p.n);
  a.cols = static_cast<int32_t>(p.hp->n_embd);
  a.eps = p.hp->rms_eps;
  return Check(L()(kernels_.rms_norm, gpu::Dim3{static_cast<uint32_t>(p.n), 1, 1}, gpu::Dim3{256, 1, 1}, 0, a));
}

Status GpuBackend::Add(strata::Act dst, strata::Act src) {
  if (graph_mode_ == GraphMode::kReplay) return Status::Ok();
  const PassState& p = *pass_;
  gpu::AddArgs a{};
  a.x = gpu::AsPtr<float>(ActAddr(dst));
  a.y = gpu::AsPtr<const float>(ActAddr(src));
  a.n = p.n * p.hp->n_embd;
  return Check(L()(kernels_.add, gpu::Dim3{gpu::GridFor(a.n, 256), 1, 1}, gpu::Dim3{256, 1, 1}, 0, a));
}

Status GpuBackend::Logits(const TensorView* norm, const TensorView& head, float* logits, int32_t* argmax) {
  PassState& p = *pass_;
  const int64_t E = p.hp->n_embd;
  WorkspaceScope scope(*p.ws);
  STRATA_ASSIGN_OR_RETURN(DevicePtr nw, WeightVector(norm));
  STRATA_ASSIGN_OR_RETURN(gpu::DeviceMatrix w, Weight(&head));
  const DevicePtr out = gpu::Take(*p.ws, static_cast<uint64_t>(p.n_rows * w.rows) * sizeof(float));
  const DevicePtr xq = gpu::Take(*p.ws, gpu::QuantizedBytes(p.n_rows, E));
  const DevicePtr ids = gpu::Take(*p.ws, static_cast<uint64_t>(p.n_rows) * sizeof(int32_t));
  if (!ids) return p.ws->Exhausted("output head");
  if (graph_mode_ != GraphMode::kReplay) {
    // The rows asked for, normed into kH's first rows.
    gpu::RmsNormArgs a{};
    a.x = gpu::AsPtr<const float>(ActAddr(strata::Act::kX));
    a.w = gpu::AsPtr<const float>(nw);
    a.y = gpu::AsPtr<float>(ActAddr(strata::Act::kH));
    a.rows = p.tables.rows;
    a.n = static_cast<int32_t>(p.n_rows);
    a.cols = static_cast<int32_t>(E);
    a.eps = p.hp->rms_eps;
    STRATA_RETURN_IF_ERROR(
        L()(kernels_.rms_norm, gpu::Dim3{static_cast<uint32_t>(p.n_rows), 1, 1}, gpu::Dim3{256, 1, 1}, 0, a));
    STRATA_RETURN_IF_ERROR(gpu::MatMul(L(), w, ActAddr(strata::Act::kH), p.n_rows, out, xq));
    if (argmax) {
      // Greedy sampling: each row's argmax on the device; 4 bytes a row cross.
      gpu::ArgmaxArgs am{};
      am.logits = gpu::AsPtr<const float>(out);
      am.out = gpu::AsPtr<int32_t>(ids);
      am.rows = static_cast<int32_t>(p.n_rows);
      am.cols = static_cast<int32_t>(w.rows);
      STRATA_RETURN_IF_ERROR(
          L()(kernels_.argmax, gpu::Dim3{static_cast<uint32_t>(p.n_rows), 1, 1}, gpu::Dim3{256, 1, 1}, 0, am));
    }
  }
  if (graph_mode_ == GraphMode::kCapture) {
    // The pass is recorded: keep it, and run it now.
    graph_mode_ = GraphMode::kOff;
    STRATA_ASSIGN_OR_RETURN(gpu::Graph g, device_->EndCapture(stream_));
    DropGraph();
    graph_ = g;
    graph_key_ = *last_key_;
    ++graph_counts_.captures;
    STRATA_RETURN_IF_ERROR(Check(device_->LaunchGraph(graph_, stream_)));
  }
  if (argmax) {
    const uint64_t id_bytes = static_cast<uint64_t>(p.n_rows) * sizeof(int32_t);
    STRATA_RETURN_IF_ERROR(device_->CopyToHost(argmax, ids, id_bytes, stream_));
    STRATA_RETURN_IF_ERROR(Check(device_->Synchronize(stream_)));
    transfers_.down_bytes += id_bytes;
    ++transfers_.down_calls;
    return Status::Ok();
  }
  const uint64_t bytes = static_cast<uint64_t>(p.n_rows * w.rows) * sizeof(float);
  STRATA_RETURN_IF_ERROR(device_->CopyToHost(logits, out, bytes, stream_));
  STRATA_RETURN_IF_ERROR(Check(device_->Synchronize(stream_)));
  transfers_.down_bytes += bytes;
  ++transfers_.down_calls;
  return Status::Ok();
}

}  // namespace strata
