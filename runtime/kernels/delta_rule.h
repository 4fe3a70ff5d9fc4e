#pragma once
// The gated delta rule of one value head over n tokens, token by token (the
// sequential form of the gated delta-net, runtime/model/delta_net.cc):
//
//   S = decay_t S;   d = beta_t (v_t - S^T k_t);   S += k_t d^T;   o_t = S^T q_t
//
// S is dk x dv, row-major (key i, value j), carried from call to call. q and
// k are n row pointers to dk floats, v and o n row pointers to dv floats;
// decay_t = exp(g_t) and beta_t per token.
//
// DeltaRuleFor(level) gives the reference (the four loops above over S in
// that order, products and sums rounded separately: what --reference runs)
// or the AVX2 / AVX-512 versions, which visit S twice per token instead of
// four times (the decay with S^T k, the update with S^T q), a strip of value
// columns at a time, with fused multiply-adds: the same sums in the same
// order of keys, rounded once per multiply-add. tests/attention_kernels_test.cc
// holds them to the reference on random heads, tail sizes included.

#include <cstdint>

#include "runtime/kernels/cpu_features.h"

namespace strata::kernels {

using DeltaRuleFn = void (*)(int64_t n, int64_t dk, int64_t dv, const float* const* q, const float* const* k,
                             const float* const* v, const float* decay, const float* beta, float* S, float* const* o,
                             float* scratch);
// Floats of scratch a DeltaRuleFn takes (the reference's S^T k and d).
inline int64_t DeltaRuleScratchFloats(int64_t dv) { return 2 * dv; }

void DeltaRuleRef(int64_t n, int64_t dk, int64_t dv, const float* const* q, const float* const* k,
                  const float* const* v, const float* decay, const float* beta, float* S, float* const* o,
                  float* scratch);
// The version for `level` (the reference for kScalar). The caller has
// checked that the CPU runs `level`.
DeltaRuleFn DeltaRuleFor(IsaLevel level);

}  // namespace strata::kernels
