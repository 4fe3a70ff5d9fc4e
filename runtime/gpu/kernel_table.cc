#include "runtime/gpu/kernel_table.h"

#include <string_view>

#include "runtime/gpu/kernels/weight_types.h"

namespace strata::gpu {
namespace {

// The kernels' type ids are ggml's.
#define STRATA_CHECK_TYPE_ID(id, NAME, elems, bytes)                                             \
  static_assert(static_cast<int>(GgmlType::k##NAME) == id, "weight_types.h: " #NAME " id");     \
  static_assert(TypeInfoConstexpr(GgmlType::k##NAME).block_elems == elems, #NAME " block");    \
  static_assert(TypeInfoConstexpr(GgmlType::k##NAME).block_bytes == bytes, #NAME " bytes");
STRATA_GPU_QUANT_TYPES(STRATA_CHECK_TYPE_ID)
STRATA_GPU_FLOAT_TYPES(STRATA_CHECK_TYPE_ID)
#undef STRATA_CHECK_TYPE_ID

Status Find(Device& d, std::string_view name, Kernel* out) {
  auto k = d.FindKernel(name);
  if (!k.ok())
    return k.status().WithContext("the " + d.info().name + " module image has no kernel '" + std::string(name) +
                                  "' (a build whose device code and host code differ)");
  *out = *k;
  return Status::Ok();
}

}  // namespace

bool KernelTable::CoversType(GgmlType type) {
  switch (static_cast<int>(type)) {
#define STRATA_TYPE_CASE(id, NAME, elems, bytes) case id:
    STRATA_GPU_QUANT_TYPES(STRATA_TYPE_CASE)
    STRATA_GPU_FLOAT_TYPES(STRATA_TYPE_CASE)
#undef STRATA_TYPE_CASE
    return true;
    default: return false;
  }
}

Result<KernelTable> KernelTable::Load(Device& d) {
  KernelTable t;
#define STRATA_FIND_TYPE(id, NAME, elems, bytes)                    \
  STRATA_RETURN_IF_ERROR(Find(d, "strata_embed_" #NAME, &t.embed[id])); \
  STRATA_RETURN_IF_ERROR(Find(d, "strata_mmv1_" #NAME, &t.mmv1[id]));   \
  STRATA_RETURN_IF_ERROR(Find(d, "strata_mmv8_" #NAME, &t.mmv8[id]));   \
  STRATA_RETURN_IF_ERROR(Find(d, "strata_mmq_" #NAME, &t.mmq[id]));
  STRATA_GPU_QUANT_TYPES(STRATA_FIND_TYPE)
  STRATA_GPU_FLOAT_TYPES(STRATA_FIND_TYPE)
#undef STRATA_FIND_TYPE
#define STRATA_FIND_MMA(id, NAME, elems, bytes) STRATA_RETURN_IF_ERROR(Find(d, "strata_mmq_mma_" #NAME, &t.mmq_mma[id]));
  STRATA_GPU_QUANT_TYPES(STRATA_FIND_MMA)
#undef STRATA_FIND_MMA
  const std::pair<const char*, Kernel*> named[] = {
      {"strata_fill_f32", &t.fill},
      {"strata_add", &t.add},
      {"strata_add_bias", &t.add_bias},
      {"strata_add_bias_places", &t.add_bias_places},
      {"strata_swiglu", &t.swiglu},
      {"strata_shared_gate", &t.shared_gate},
      {"strata_argmax", &t.argmax},
      {"strata_rms_norm", &t.rms_norm},
      {"strata_gated_norm", &t.gated_norm},
      {"strata_quantize_q8", &t.quantize},
      {"strata_quantize_q8k", &t.quantize_q8k},
      {"strata_attn_prep", &t.attn_prep},
      {"strata_mla_prep", &t.mla_prep},
      {"strata_copy_rows", &t.copy_rows},
      {"strata_attention", &t.attention},
      {"strata_attn_combine", &t.attn_combine},
      {"strata_moe_topk", &t.moe_topk},
      {"strata_moe_count", &t.moe_count},
      {"strata_moe_offsets", &t.moe_offsets},
      {"strata_moe_place", &t.moe_place},
      {"strata_moe_combine", &t.moe_combine},
      {"strata_delta_conv", &t.delta_conv},
      {"strata_delta_conv_update", &t.delta_conv_update},
      {"strata_delta_prep", &t.delta_prep},
      {"strata_delta_rule", &t.delta_rule},
  };
  for (const auto& [name, slot] : named) STRATA_RETURN_IF_ERROR(Find(d, name, slot));
  return t;
}

}  // namespace strata::gpu
