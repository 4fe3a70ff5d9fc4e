// The CPU backend's memory (backend.h): buffers in host memory (on large
// pages when asked), transfers, the states' parts, and running an expert
// from a buffer (SlotSwiGlu, the device tier's op). The ops of a pass are
// cpu_backend.cc and delta_net.cc.

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

#include "runtime/base/checked_alloc.h"
#include "runtime/base/fault_injection.h"
#include "runtime/base/platform.h"
#include "runtime/base/strings.h"
#include "runtime/kernels/vec_dot.h"
#include "runtime/model/backend.h"

namespace strata {

// --- buffers ----------------------------------------------------------------

BackendBuffer& BackendBuffer::operator=(BackendBuffer&& o) noexcept {
  if (this != &o) {
    Reset();
    owner_ = o.owner_;
    id_ = o.id_;
    bytes_ = o.bytes_;
    o.owner_ = nullptr;
  }
  return *this;
}

void BackendBuffer::Reset() {
  if (owner_) owner_->Free(id_);
  owner_ = nullptr;
}

Result<SequenceState> Backend::CreateState(const HParams& hp, int64_t n_ctx, KvType kv, int64_t pass_tokens,
                                           StateLayers which) {
  STRATA_RETURN_IF_ERROR(SequenceState::CheckKvType(hp, kv));
  SequenceState st;
  st.n_ctx = n_ctx;
  st.kv_type = kv;
  st.swa_ring = which == StateLayers::kMtp ? 0 : SequenceState::SwaRingRows(hp, n_ctx, pass_tokens);
  st.swa_window = st.swa_ring ? hp.n_swa : 0;
  uint64_t bytes = 0;
  st.layers = SequenceState::Layout(hp, n_ctx, kv, &bytes, pass_tokens, which);
  auto buf = Allocate(bytes, StrFormat("the sequence state (%lld positions)", static_cast<long long>(n_ctx)));
  if (!buf.ok())
    return ResourceExhausted(StrFormat("cannot allocate the sequence state: %s for %lld positions (%s)",
                                       HumanBytes(bytes).c_str(), static_cast<long long>(n_ctx),
                                       buf.status().message().c_str()));
  st.storage = std::move(*buf);
  return st;
}


Result<uint8_t*> CpuBackend::AllocateHost(uint64_t bytes, std::string_view what) {
  if (bytes > static_cast<uint64_t>(SIZE_MAX) - kBufferAlignment) return AllocationFailed(what, bytes);
  if (large_page_bytes_ && bytes >= large_page_bytes_) {
    if (void* lp = AllocateLargePages(bytes, large_page_bytes_)) {  // zeroed by the OS
      large_blocks_.emplace_back(static_cast<uint8_t*>(lp), large_page_bytes_);
      ++large_counts_.buffers;
      large_counts_.bytes += LargePageSpan(bytes, large_page_bytes_);
      return static_cast<uint8_t*>(lp);
    }
    ++large_counts_.refused;
  }
  void* p = ::operator new(static_cast<size_t>(bytes), std::align_val_t(kBufferAlignment), std::nothrow);
  if (!p) return AllocationFailed(what, bytes);
  std::memset(p, 0, static_cast<size_t>(bytes));
  return static_cast<uint8_t*>(p);
}

void CpuBackend::FreeHost(uint8_t* p, uint64_t bytes) {
  auto it = std::find_if(large_blocks_.begin(), large_blocks_.end(), [p](const auto& b) { return b.first == p; });
  if (it == large_blocks_.end()) {
    ::operator delete(p, std::align_val_t(kBufferAlignment));
    return;
  }
  const uint64_t page = it->second;
  large_blocks_.erase(it);
  FreeLargePages(p, bytes, page);
  --large_counts_.buffers;
  large_counts_.bytes -= LargePageSpan(bytes, page);
}

Result<BackendBuffer> CpuBackend::Allocate(uint64_t bytes, std::string_view what) {
  // Zero bytes still get a block (of one alignment unit), so every handle names memory.
  const uint64_t size = std::max<uint64_t>(bytes, kBufferAlignment);
  if (ShouldInjectFault(FaultSite::kAllocate)) return AllocationFailed(what, bytes, true);
  STRATA_ASSIGN_OR_RETURN(uint8_t* p, AllocateHost(size, what));
  uint32_t id;
  if (!free_ids_.empty()) {
    id = free_ids_.back();
    free_ids_.pop_back();
  } else {
    id = static_cast<uint32_t>(blocks_.size());
    blocks_.emplace_back();
  }
  blocks_[id] = Block{p, size};
  return MakeHandle(id, bytes);
}

void CpuBackend::Free(uint32_t id) {
  if (id >= blocks_.size() || !blocks_[id].data) return;
  FreeHost(blocks_[id].data, blocks_[id].bytes);
  blocks_[id] = Block{};
  free_ids_.push_back(id);
}

uint8_t* CpuBackend::HostData(const BackendBuffer& b) const {
  return b.owner() == this && b.id() < blocks_.size() ? blocks_[b.id()].data : nullptr;
}

Status CpuBackend::CheckRange(const BackendBuffer& b, uint64_t offset, uint64_t bytes, std::string_view what) const {
  if (b.owner() != this || !HostData(b))
    return Internal(StrFormat("%.*s: a buffer of another backend", static_cast<int>(what.size()), what.data()));
  if (offset > b.bytes() || bytes > b.bytes() - offset)
    return Internal(StrFormat("%.*s: bytes %llu..%llu outside a buffer of %llu", static_cast<int>(what.size()),
                              what.data(), static_cast<unsigned long long>(offset),
                              static_cast<unsigned long long>(offset + bytes),
                              static_cast<unsigned long long>(b.bytes())));
  return Status::Ok();
}

Status CpuBackend::Upload(const BackendBuffer& dst, uint64_t offset, const void* src, uint64_t bytes) {
  STRATA_RETURN_IF_ERROR(CheckRange(dst, offset, bytes, "upload"));
  OpScope scope(*this);
  if (bytes) std::memcpy(HostData(dst) + offset, src, static_cast<size_t>(bytes));
  transfers_.up_bytes += bytes;
  ++transfers_.up_calls;
  return Status::Ok();
}

Status CpuBackend::Download(const BackendBuffer& src, uint64_t offset, void* dst, uint64_t bytes) {
  STRATA_RETURN_IF_ERROR(CheckRange(src, offset, bytes, "download"));
  OpScope scope(*this);
  if (bytes) std::memcpy(dst, HostData(src) + offset, static_cast<size_t>(bytes));
  transfers_.down_bytes += bytes;
  ++transfers_.down_calls;
  return Status::Ok();
}

Status CpuBackend::Bind(const Model& model) {
  // Host weights: the CPU reads the pack's mapping as it is.
  bound_begin_ = model.tensors().data();
  bound_count_ = model.tensors().size();
  resident_.clear();
  return Status::Ok();
}

void CpuBackend::SetResidentTensors(const Model& model, std::vector<TensorView> resident) {
  bound_begin_ = model.tensors().data();
  bound_count_ = model.tensors().size();
  resident_ = std::move(resident);
}

const TensorView* CpuBackend::W(const TensorView* t) const {
  if (!t || resident_.empty() || t < bound_begin_ || t >= bound_begin_ + bound_count_) return t;
  return &resident_[static_cast<size_t>(t - bound_begin_)];
}

Result<Workspace> CpuBackend::CreateWorkspace(uint64_t bytes, std::string_view what) {
  STRATA_ASSIGN_OR_RETURN(BackendBuffer buf, Allocate(bytes, what));
  uint8_t* base = HostData(buf);
  return Workspace(std::move(buf), base, bytes);
}

namespace {
uint8_t* PartPtr(uint8_t* base, const SequenceState::Part& p) { return p.bytes ? base + p.offset : nullptr; }
}  // namespace

uint8_t* CpuBackend::StateK(const SequenceState& s, int32_t il) const {
  return PartPtr(HostData(s.storage), s.layers[static_cast<size_t>(il)].k);
}
uint8_t* CpuBackend::StateV(const SequenceState& s, int32_t il) const {
  return PartPtr(HostData(s.storage), s.layers[static_cast<size_t>(il)].v);
}
float* CpuBackend::StateConv(const SequenceState& s, int32_t il) const {
  return reinterpret_cast<float*>(PartPtr(HostData(s.storage), s.layers[static_cast<size_t>(il)].conv));
}
float* CpuBackend::StateSsm(const SequenceState& s, int32_t il) const {
  return reinterpret_cast<float*>(PartPtr(HostData(s.storage), s.layers[static_cast<size_t>(il)].ssm));
}

Status CpuBackend::ClearRecurrent(SequenceState& s) {
  if (!HostData(s.storage)) return Internal("ClearRecurrent: a state of another backend");
  OpScope scope(*this);
  for (size_t il = 0; il < s.layers.size(); ++il) {
    const int32_t l = static_cast<int32_t>(il);
    if (float* c = StateConv(s, l)) std::fill(c, c + s.layers[il].conv.floats(), 0.0f);
    if (float* m = StateSsm(s, l)) std::fill(m, m + s.layers[il].ssm.floats(), 0.0f);
  }
  return Status::Ok();
}

Status CpuBackend::CopyRecurrent(const SequenceState& from, SequenceState& to) {
  if (!HostData(from.storage) || !HostData(to.storage)) return Internal("CopyRecurrent: a state of another backend");
  if (from.layers.size() != to.layers.size()) return Internal("CopyRecurrent: states of different models");
  OpScope scope(*this);
  for (size_t il = 0; il < to.layers.size(); ++il) {
    const int32_t l = static_cast<int32_t>(il);
    if (from.layers[il].conv.floats() != to.layers[il].conv.floats() ||
        from.layers[il].ssm.floats() != to.layers[il].ssm.floats())
      return Internal("CopyRecurrent: states of different models");
    if (float* c = StateConv(to, l)) std::copy_n(StateConv(from, l), to.layers[il].conv.floats(), c);
    if (float* m = StateSsm(to, l)) std::copy_n(StateSsm(from, l), to.layers[il].ssm.floats(), m);
  }
  return Status::Ok();
}

bool CpuBackend::CanMultiply(GgmlType type) const { return HasVecDot(type); }

// --- the device tier's op ----------------------------------------------------------

Status CpuBackend::SlotSwiGlu(const BackendBuffer& weights, const SwiGluMatrices& w, const BackendBuffer& scratch,
                              const float* x, int64_t m, float* y) {
  const BufferMatrix* in[3] = {&w.gate, &w.up, &w.down};
  WeightMatrix host[3];
  for (int i = 0; i < 3; ++i) {
    const BufferMatrix& b = *in[i];
    if (!CanMultiply(b.type))
      return Unsupported(StrFormat("the %s backend has no kernel for %s", name().c_str(),
                                   std::string(TypeName(b.type)).c_str()));
    const uint64_t bytes = b.row_bytes * static_cast<uint64_t>(b.rows);
    STRATA_RETURN_IF_ERROR(CheckRange(weights, b.offset, bytes + kMatrixPadding, "an expert matrix in a buffer"));
    host[i] = WeightMatrix{b.type, HostData(weights) + b.offset, b.row_bytes, b.rows, b.cols, nullptr, -1};
  }
  const uint64_t gate_up = 2 * static_cast<uint64_t>(std::max<int64_t>(m, 0)) * static_cast<uint64_t>(w.gate.rows);
  STRATA_RETURN_IF_ERROR(CheckRange(scratch, 0, gate_up * sizeof(float), "the SwiGLU scratch"));
  OpScope scope(*this);
  // The rows cross the seam: in to the backend, the expert's output back out.
  transfers_.up_bytes += static_cast<uint64_t>(m * w.gate.cols) * sizeof(float);
  ++transfers_.up_calls;
  STRATA_RETURN_IF_ERROR(
      RunSwiGlu(*this, host[0], host[1], host[2], x, m, y, reinterpret_cast<float*>(HostData(scratch)), &w.extras));
  transfers_.down_bytes += static_cast<uint64_t>(m * w.down.rows) * sizeof(float);
  ++transfers_.down_calls;
  return Status::Ok();
}

}  // namespace strata
