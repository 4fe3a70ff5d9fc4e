#include "runtime/experts/expert_device.h"

#include <algorithm>

#include "runtime/base/strings.h"

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
  return ExpertWeights{w[0], w[1], w[2]};
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

}  // namespace strata
