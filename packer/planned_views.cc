#include "packer/planned_views.h"

#include <cstring>

#include "runtime/quant/fp_convert.h"

namespace strata {

std::unique_ptr<PlannedViews> ViewPlannedTensors(const gguf::GgufModel& model, const std::vector<PlannedTensor>& plan) {
  auto out = std::make_unique<PlannedViews>();
  out->widened.reserve(plan.size());
  out->gathered.reserve(plan.size());
  for (const PlannedTensor& p : plan) {
    TensorView v;
    v.name = p.name;
    v.role = p.role;
    v.layer = p.layer;
    v.type = p.type;
    v.rank = static_cast<uint32_t>(p.shape.size());
    for (size_t d = 0; d < p.shape.size(); ++d) v.shape[d] = p.shape[d];
    v.row_bytes = p.row_bytes;
    v.expert_count = p.expert_count;
    v.expert_stride = p.expert_stride;
    v.index = static_cast<uint32_t>(out->views.size());
    std::span<const uint8_t> src = model.TensorData(*p.source);
    if (p.transform == TensorTransform::kWidenToF32) {
      std::vector<float>& w = out->widened.emplace_back(src.size() / 2);
      for (size_t i = 0; i < w.size(); ++i) {
        uint16_t h;
        std::memcpy(&h, src.data() + 2 * i, 2);
        w[i] = p.source->type == GgmlType::kF16 ? Fp16ToFp32(h) : Bf16ToFp32(h);
      }
      v.data = {reinterpret_cast<const uint8_t*>(w.data()), w.size() * sizeof(float)};
    } else if (IsGathered(p.transform)) {
      const std::vector<uint8_t>& g = out->gathered.emplace_back(GatherRows(model, p));
      v.data = {g.data(), g.size()};
    } else {
      v.data = src;
    }
    out->views.push_back(v);
  }
  return out;
}

}  // namespace strata
