#include "runtime/experts/cpu_expert_device.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>

#include "runtime/base/strings.h"
#include "runtime/kernels/vec_dot.h"
#include "runtime/model/fast_backend.h"
#include "runtime/model/forward.h"

namespace strata {

Result<std::unique_ptr<CpuExpertDevice>> CpuExpertDevice::Create(const Options& options) {
  FastBackend::Options fo;
  fo.threads = options.threads;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<FastBackend> b, FastBackend::Create(fo));
  return std::unique_ptr<CpuExpertDevice>(new CpuExpertDevice(std::move(b), options.capacity));
}

std::string CpuExpertDevice::name() const { return "cpu (simulated device tier, " + backend_->name() + ")"; }

bool CpuExpertDevice::CanRun(GgmlType type) const { return HasVecDot(type); }

uint64_t CpuExpertDevice::SlotBytes(int32_t slots, const SlotLayout& layout) const {
  return static_cast<uint64_t>(std::max(slots, 0)) * layout.bytes;
}

uint64_t CpuExpertDevice::ScratchBytes(const Model& model, const SlotLayout&, int64_t max_rows) const {
  const HParams& hp = model.hp();
  uint64_t act = 0;
  for (uint32_t il = 0; il < hp.n_layer; ++il)
    for (TensorRole r : {TensorRole::kFfnGateExps, TensorRole::kFfnUpExps, TensorRole::kFfnDownExps})
      if (const TensorView* t = model.Get(static_cast<int32_t>(il), r)) {
        act = std::max(act, backend_->ScratchBytes(t->type, static_cast<int64_t>(t->shape[0]), max_rows));
        if (t->decode_copy >= 0)
          act = std::max(act, backend_->ScratchBytes(GgmlType::kQ8_0, static_cast<int64_t>(t->shape[0]), max_rows));
      }
  const uint64_t swiglu = 2 * static_cast<uint64_t>(max_rows) * hp.n_ff_exp * sizeof(float);
  return act + (swiglu + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

Status CpuExpertDevice::AllocateSlots(const Model& model, int32_t slots, const SlotLayout& layout, int64_t max_rows) {
  if (slots < 0 || max_rows < 1) return Internal("CpuExpertDevice: a negative slot count or no rows");
  const uint64_t bytes = SlotBytes(slots, layout);
  if (capacity_ && bytes + ScratchBytes(model, layout, max_rows) > capacity_)
    return ResourceExhausted(StrFormat("the expert tier's %d slots of %s and scratch do not fit the device's %s",
                                       slots, HumanBytes(layout.bytes).c_str(), HumanBytes(capacity_).c_str()));
  STRATA_ASSIGN_OR_RETURN(slots_, AlignedBuffer::Allocate(bytes, StrFormat("%d expert slots on the device", slots),
                                                         FaultSite::kDeviceAllocate));
  const uint64_t act = ScratchBytes(model, layout, max_rows) -
                       (2 * static_cast<uint64_t>(max_rows) * model.hp().n_ff_exp * sizeof(float) + 63) / 64 * 64;
  STRATA_RETURN_IF_ERROR(backend_->ReserveScratch(act));
  STRATA_ASSIGN_OR_RETURN(scratch_, AlignedBuffer::Allocate(2 * static_cast<uint64_t>(max_rows) *
                                                                model.hp().n_ff_exp * sizeof(float),
                                                            "the device tier's SwiGLU scratch",
                                                            FaultSite::kDeviceAllocate));
  layout_ = layout;
  n_slots_ = slots;
  max_rows_ = max_rows;
  held_.assign(static_cast<size_t>(slots), Held{});
  // Zero everything once: the padding after every matrix stays zero.
  if (bytes) std::memset(slots_.data(), 0, bytes);
  return Status::Ok();
}

Status CpuExpertDevice::Upload(int32_t slot, const ExpertWeights& w) {
  if (slot < 0 || slot >= n_slots_)
    return Internal(StrFormat("upload to slot %d of a device with %d slots", slot, n_slots_));
  Held& h = held_[static_cast<size_t>(slot)];
  h.full = false;  // until the copy is complete
  const WeightMatrix* src[3] = {&w.gate, &w.up, &w.down};
  for (int i = 0; i < 3; ++i) {
    const uint64_t n = src[i]->row_bytes * static_cast<uint64_t>(src[i]->rows);
    if (n > layout_.capacity[i])
      return Internal(StrFormat("an expert matrix of %" PRIu64 " bytes does not fit its slot's %" PRIu64, n,
                                layout_.capacity[i]));
    if (!CanRun(src[i]->type))
      return Unsupported(StrFormat("the device tier (%s) has no kernel for %s", name().c_str(),
                                   std::string(TypeName(src[i]->type)).c_str()));
  }
  if (ShouldInjectFault(FaultSite::kDeviceUpload))
    return ResourceExhausted(StrFormat("cannot upload an expert (%s) into device slot %d: injected fault",
                                       HumanBytes(w.bytes()).c_str(), slot));
  uint8_t* base = slots_.data() + static_cast<uint64_t>(slot) * layout_.bytes;
  for (int i = 0; i < 3; ++i) {
    const uint64_t n = src[i]->row_bytes * static_cast<uint64_t>(src[i]->rows);
    uint8_t* dst = base + layout_.offset[i];
    std::memcpy(dst, src[i]->data, n);
    // A smaller matrix than the last one in this slot: zero what it left, so
    // the bytes past the rows are zero as in a pack.
    std::memset(dst + n, 0, layout_.capacity[i] + kSlotPadding - n);
    h.m[i] = *src[i];
    h.m[i].data = dst;
  }
  h.full = true;
  return Status::Ok();
}

Status CpuExpertDevice::Run(int32_t slot, const float* x, int64_t m, float* y) {
  if (slot < 0 || slot >= n_slots_ || !held_[static_cast<size_t>(slot)].full)
    return Internal(StrFormat("run from device slot %d, which holds no expert", slot));
  if (m > max_rows_) return Internal(StrFormat("%lld rows for a device tier planned for %lld", static_cast<long long>(m),
                                               static_cast<long long>(max_rows_)));
  const Held& h = held_[static_cast<size_t>(slot)];
  return RunSwiGlu(*backend_, h.m[0], h.m[1], h.m[2], x, m, y, reinterpret_cast<float*>(scratch_.data()));
}

}  // namespace strata
