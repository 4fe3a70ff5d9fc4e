#include "runtime/kernels/gemm.h"

#include "runtime/kernels/vec_dot.h"

namespace strata {
namespace {

const GemmKernel* FindIn(const GemmKernelTable& table, GgmlType type) {
  for (int i = 0; i < table.count; ++i)
    if (table.entries[i].type == type) return &table.entries[i];
  return nullptr;
}

const GemmKernel* FindIn(const GemmKernelTable* const* tables, int n, GgmlType type) {
  for (int i = 0; i < n; ++i)
    if (const GemmKernel* k = FindIn(*tables[i], type)) return k;
  return nullptr;
}

}  // namespace

const GemmKernel* FindGemmKernel(GgmlType type, IsaLevel isa) {
  static const GemmKernelTable* const kAvx512[] = {&kernels::kFloatGemmAvx512, &kernels::kLegacyGemmAvx512,
                                                   &kernels::kKQuantGemmAvx512, &kernels::kIQuantGemmAvx512};
  static const GemmKernelTable* const kAvx2[] = {&kernels::kFloatGemmAvx2, &kernels::kLegacyGemmAvx2,
                                                 &kernels::kKQuantGemmAvx2, &kernels::kIQuantGemmAvx2};
  if (isa >= IsaLevel::kAvx512)
    if (const GemmKernel* k = FindIn(kAvx512, 4, type)) return k;
  if (isa >= IsaLevel::kAvx2)
    if (const GemmKernel* k = FindIn(kAvx2, 4, type)) return k;
  return nullptr;
}

void GemmReference(const GemmArgs& g) {
  for (int64_t c = 0; c < g.cols; ++c) {
    const uint8_t* act = g.act + static_cast<uint64_t>(c) * g.act_row_bytes;
    for (int64_t r = 0; r < g.rows; ++r)
      g.y[c * g.ldy + r] = VecDotReference(g.type, g.w + static_cast<uint64_t>(r) * g.w_row_bytes, act, g.k);
  }
}

}  // namespace strata
