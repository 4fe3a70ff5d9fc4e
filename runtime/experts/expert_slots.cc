#include "runtime/experts/expert_slots.h"

#include <algorithm>
#include <cinttypes>

#include "runtime/base/checked_alloc.h"
#include "runtime/base/fault_injection.h"
#include "runtime/base/strings.h"
#include "runtime/model/workspace.h"

namespace strata {

Result<ExpertWeights> HostExpertWeights(const Model& model, int32_t layer, uint32_t expert, bool decode_copies) {
  if (layer < 0 || static_cast<uint32_t>(layer) >= model.hp().n_layer)
    return Internal(StrFormat("layer %d is not a layer of the model", layer));
  const TensorRole roles[3] = {TensorRole::kFfnGateExps, TensorRole::kFfnUpExps, TensorRole::kFfnDownExps};
  WeightMatrix w[3];
  for (int i = 0; i < 3; ++i) {
    const TensorView* t = model.Get(layer, roles[i]);
    if (!t || expert >= t->expert_count)
      return Internal(StrFormat("expert %u of layer %d is not in the model", expert, layer));
    if (decode_copies && t->decode_copy >= 0) t = &model.tensors()[static_cast<size_t>(t->decode_copy)];
    w[i] = ExpertMatrix(*t, expert);
  }
  return ExpertWeights{w[0], w[1], w[2], ExpertExtrasOf(model, layer, expert)};
}

SlotLayout ExpertSlotLayout(const Model& model, bool decode_copies) {
  SlotLayout l;
  for (uint32_t il = 0; il < model.hp().n_layer; ++il) {
    auto w = HostExpertWeights(model, static_cast<int32_t>(il), 0, decode_copies);
    if (!w.ok()) continue;
    const WeightMatrix* m[3] = {&w->gate, &w->up, &w->down};
    for (int i = 0; i < 3; ++i)
      l.capacity[i] = std::max(l.capacity[i], m[i]->row_bytes * static_cast<uint64_t>(m[i]->rows));
  }
  uint64_t at = 0;
  for (int i = 0; i < 3; ++i) {
    l.offset[i] = at;
    at += (l.capacity[i] + kSlotPadding + 63) / 64 * 64;
  }
  l.bytes = at;
  return l;
}

uint64_t ExpertSlots::SlotBytes(int32_t slots, const SlotLayout& layout) {
  return static_cast<uint64_t>(std::max(slots, 0)) * layout.bytes;
}

namespace {

// The matrix engine's scratch for max_rows rows of the widest expert matrix,
// native or as its Q8_0 decode copy.
uint64_t EngineScratchBytes(const Backend& backend, const Model& model, int64_t max_rows) {
  uint64_t act = 0;
  for (uint32_t il = 0; il < model.hp().n_layer; ++il)
    for (TensorRole r : {TensorRole::kFfnGateExps, TensorRole::kFfnUpExps, TensorRole::kFfnDownExps})
      if (const TensorView* t = model.Get(static_cast<int32_t>(il), r)) {
        act = std::max(act, backend.ScratchBytes(t->type, static_cast<int64_t>(t->shape[0]), max_rows));
        if (t->decode_copy >= 0)
          act = std::max(act, backend.ScratchBytes(GgmlType::kQ8_0, static_cast<int64_t>(t->shape[0]), max_rows));
      }
  return act;
}

// SlotSwiGlu's scratch: the gate and up outputs, and what the backend stages.
uint64_t GateUpBytes(const Backend& backend, const Model& model, int64_t max_rows) {
  return backend.SlotScratchBytes(model.hp().n_ff_exp, model.hp().n_embd, max_rows);
}

}  // namespace

uint64_t ExpertSlots::ScratchBytes(const Backend& backend, const Model& model, int64_t max_rows) {
  return EngineScratchBytes(backend, model, max_rows) + TakeBytes<uint8_t>(GateUpBytes(backend, model, max_rows));
}

Result<ExpertSlots> ExpertSlots::Create(const TierDevice& device, const Model& model, int32_t slots,
                                        const SlotLayout& layout, int64_t max_rows) {
  if (!device.backend || slots < 0 || max_rows < 1)
    return Internal("expert slots without a device, with a negative slot count or for no rows");
  Backend& backend = *device.backend;
  ExpertSlots s(device, layout, max_rows);
  const uint64_t bytes = SlotBytes(slots, layout);
  const std::string what = StrFormat("%d expert slots on the device", slots);
  if (ShouldInjectFault(FaultSite::kDeviceAllocate)) return AllocationFailed(what, bytes, true);
  // Zeroed: the padding after every matrix starts zero.
  STRATA_ASSIGN_OR_RETURN(s.slots_, backend.Allocate(bytes, what));
  STRATA_RETURN_IF_ERROR(backend.ReserveScratch(EngineScratchBytes(backend, model, max_rows)));
  const uint64_t gate_up = GateUpBytes(backend, model, max_rows);
  if (ShouldInjectFault(FaultSite::kDeviceAllocate))
    return AllocationFailed("the device tier's SwiGLU scratch", gate_up, true);
  STRATA_ASSIGN_OR_RETURN(s.scratch_, backend.Allocate(gate_up, "the device tier's SwiGLU scratch"));
  s.held_.assign(static_cast<size_t>(slots), Held{});
  return s;
}

Status ExpertSlots::Upload(int32_t slot, const ExpertWeights& w) {
  if (slot < 0 || slot >= size())
    return Internal(StrFormat("upload to slot %d of a device with %d slots", slot, size()));
  Held& h = held_[static_cast<size_t>(slot)];
  h.full = false;  // until the copy is complete
  const WeightMatrix* src[3] = {&w.gate, &w.up, &w.down};
  for (int i = 0; i < 3; ++i) {
    const uint64_t n = src[i]->row_bytes * static_cast<uint64_t>(src[i]->rows);
    if (n > layout_.capacity[i])
      return Internal(StrFormat("an expert matrix of %" PRIu64 " bytes does not fit its slot's %" PRIu64, n,
                                layout_.capacity[i]));
    if (!backend_->CanMultiply(src[i]->type))
      return Unsupported(StrFormat("the device tier (%s) has no kernel for %s", name_.c_str(),
                                   std::string(TypeName(src[i]->type)).c_str()));
  }
  if (ShouldInjectFault(FaultSite::kDeviceUpload))
    return ResourceExhausted(StrFormat("cannot upload an expert (%s) into device slot %d: injected fault",
                                       HumanBytes(w.bytes()).c_str(), slot));
  // Each matrix, then kSlotPadding zeros after it: a smaller matrix than the
  // last one in this slot leaves the bytes past its rows zero, as in a pack.
  static constexpr uint8_t kZeros[kSlotPadding] = {};
  const uint64_t base = static_cast<uint64_t>(slot) * layout_.bytes;
  BufferMatrix* dst[3] = {&h.m.gate, &h.m.up, &h.m.down};
  for (int i = 0; i < 3; ++i) {
    const WeightMatrix& m = *src[i];
    const uint64_t n = m.row_bytes * static_cast<uint64_t>(m.rows);
    *dst[i] = BufferMatrix{m.type, base + layout_.offset[i], m.row_bytes, m.rows, m.cols};
    Status copied = backend_->Upload(slots_, dst[i]->offset, m.data, n);
    if (copied.ok()) copied = backend_->Upload(slots_, dst[i]->offset + n, kZeros, kSlotPadding);
    if (!copied.ok())
      return copied.WithContext(StrFormat("cannot upload an expert (%s) into device slot %d",
                                          HumanBytes(w.bytes()).c_str(), slot));
  }
  h.m.extras = w.extras;
  h.full = true;
  return Status::Ok();
}

Status ExpertSlots::Run(int32_t slot, const float* x, int64_t m, float* y) {
  if (slot < 0 || slot >= size() || !held_[static_cast<size_t>(slot)].full)
    return Internal(StrFormat("run from device slot %d, which holds no expert", slot));
  if (m > max_rows_)
    return Internal(StrFormat("%lld rows for a device tier planned for %lld", static_cast<long long>(m),
                              static_cast<long long>(max_rows_)));
  return backend_->SlotSwiGlu(slots_, held_[static_cast<size_t>(slot)].m, scratch_, x, m, y);
}

}  // namespace strata
