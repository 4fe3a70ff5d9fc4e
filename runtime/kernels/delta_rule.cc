#include "runtime/kernels/delta_rule.h"

#include <algorithm>

namespace strata::kernels {

void DeltaRuleAvx2(int64_t n, int64_t dk, int64_t dv, const float* const* q, const float* const* k,
                   const float* const* v, const float* decay, const float* beta, float* S, float* const* o,
                   float* scratch);
void DeltaRuleAvx512(int64_t n, int64_t dk, int64_t dv, const float* const* q, const float* const* k,
                     const float* const* v, const float* decay, const float* beta, float* S, float* const* o,
                     float* scratch);

void DeltaRuleRef(int64_t n, int64_t dk, int64_t dv, const float* const* q, const float* const* k,
                  const float* const* v, const float* decay, const float* beta, float* S, float* const* o,
                  float* scratch) {
  float* kv = scratch;
  float* d = scratch + dv;
  for (int64_t t = 0; t < n; ++t) {
    const float dec = decay[t];
    for (int64_t i = 0; i < dk * dv; ++i) S[i] *= dec;
    std::fill(kv, kv + dv, 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
      const float ki = k[t][i];
      for (int64_t j = 0; j < dv; ++j) kv[j] += S[i * dv + j] * ki;
    }
    for (int64_t j = 0; j < dv; ++j) d[j] = beta[t] * (v[t][j] - kv[j]);
    for (int64_t i = 0; i < dk; ++i) {
      const float ki = k[t][i];
      for (int64_t j = 0; j < dv; ++j) S[i * dv + j] += ki * d[j];
    }
    float* ot = o[t];
    std::fill(ot, ot + dv, 0.0f);
    for (int64_t i = 0; i < dk; ++i) {
      const float qi = q[t][i];
      for (int64_t j = 0; j < dv; ++j) ot[j] += S[i * dv + j] * qi;
    }
  }
}

DeltaRuleFn DeltaRuleFor(IsaLevel level) {
  return PickForIsa<DeltaRuleFn>(level, DeltaRuleRef, DeltaRuleAvx2, DeltaRuleAvx512);
}

}  // namespace strata::kernels
