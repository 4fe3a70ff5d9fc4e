#pragma once
// The kernels of the module image, found by name once (at Bind) so that a
// launch is an array lookup and a missing kernel fails the load, naming it,
// not a pass.

#include <array>
#include <cstdint>
#include <string>

#include "runtime/base/status.h"
#include "runtime/gpu/device.h"
#include "runtime/quant/ggml_type.h"

namespace strata::gpu {

struct KernelTable {
  // Per weight type (by ggml id): the embedding gather and the products.
  static constexpr size_t kTypes = kGgmlTypeIdLimit;
  std::array<Kernel, kTypes> embed{}, mmv1{}, mmv8{}, mmq{};
  // The tiled int8 product on tensor cores (quantized types; the portable
  // twin's code where the image has no MMA: kernels/matmul_mma.cu).
  std::array<Kernel, kTypes> mmq_mma{};
  Kernel fill = nullptr, add = nullptr, add_bias = nullptr, add_bias_places = nullptr, swiglu = nullptr, shared_gate = nullptr, argmax = nullptr;
  Kernel rms_norm = nullptr, gated_norm = nullptr, quantize = nullptr, quantize_q8k = nullptr;
  Kernel attn_prep = nullptr, attention = nullptr, attn_combine = nullptr, mla_prep = nullptr, copy_rows = nullptr;
  Kernel moe_topk = nullptr, moe_count = nullptr, moe_offsets = nullptr, moe_place = nullptr, moe_combine = nullptr;
  Kernel delta_conv = nullptr, delta_conv_update = nullptr, delta_prep = nullptr, delta_rule = nullptr;

  // Finds every kernel. Errors: kNotFound naming the first one missing.
  static Result<KernelTable> Load(Device& device);
  // Whether the kernels (this build's source) cover weights of this type.
  static bool CoversType(GgmlType type);
};

}  // namespace strata::gpu
