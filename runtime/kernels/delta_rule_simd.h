#pragma once
// The SIMD delta rule (delta_rule.h), written once over the float traits of
// attention_avx2.cc / attention_avx512.cc and instantiated there. In an
// anonymous namespace, calling no std:: function: each ISA file gets its own
// copy (attention_block.h says why).
//
// Per token, value columns are taken in strips of up to kStrip vectors; for
// a strip, S is visited twice: (1) S *= decay and kv += S k, (2) with d =
// beta (v - kv), S += k d and o += S q. Each strip's columns depend only on
// themselves, so this is the reference's arithmetic in the reference's order
// of keys. Columns past the last whole vector run the same two visits one at
// a time.

#include <cstdint>

namespace strata::kernels {
namespace {

template <class V, int N>
inline void DeltaRuleStrip(int64_t dk, int64_t dv, int64_t j0, const float* qt, const float* kt, const float* vt,
                           float dec_s, float beta_s, float* S, float* ot) {
  using T = typename V::T;
  constexpr int L = V::kLanes;
  const T dec = V::Set1(dec_s);
  T kv[N], d[N], ov[N];
  for (int u = 0; u < N; ++u) kv[u] = V::Zero(), ov[u] = V::Zero();
  for (int64_t i = 0; i < dk; ++i) {
    const T ki = V::Set1(kt[i]);
    float* row = S + i * dv + j0;
    for (int u = 0; u < N; ++u) {
      const T s = V::Mul(V::Load(row + u * L), dec);
      V::Store(row + u * L, s);
      kv[u] = V::Fma(s, ki, kv[u]);
    }
  }
  const T b = V::Set1(beta_s);
  for (int u = 0; u < N; ++u) d[u] = V::Mul(b, V::Sub(V::Load(vt + j0 + u * L), kv[u]));
  for (int64_t i = 0; i < dk; ++i) {
    const T ki = V::Set1(kt[i]), qi = V::Set1(qt[i]);
    float* row = S + i * dv + j0;
    for (int u = 0; u < N; ++u) {
      const T s = V::Fma(ki, d[u], V::Load(row + u * L));
      V::Store(row + u * L, s);
      ov[u] = V::Fma(s, qi, ov[u]);
    }
  }
  for (int u = 0; u < N; ++u) V::Store(ot + j0 + u * L, ov[u]);
}

template <class V>
void DeltaRuleV(int64_t n, int64_t dk, int64_t dv, const float* const* q, const float* const* k,
                const float* const* v, const float* decay, const float* beta, float* S, float* const* o) {
  constexpr int L = V::kLanes;
  constexpr int kStrip = 4;
  for (int64_t t = 0; t < n; ++t) {
    const float* qt = q[t];
    const float* kt = k[t];
    const float* vt = v[t];
    float* ot = o[t];
    int64_t j0 = 0;
    for (; j0 + kStrip * L <= dv; j0 += kStrip * L)
      DeltaRuleStrip<V, kStrip>(dk, dv, j0, qt, kt, vt, decay[t], beta[t], S, ot);
    for (; j0 + L <= dv; j0 += L) DeltaRuleStrip<V, 1>(dk, dv, j0, qt, kt, vt, decay[t], beta[t], S, ot);
    for (; j0 < dv; ++j0) {  // the last columns, one at a time
      float kv = 0.0f;
      for (int64_t i = 0; i < dk; ++i) {
        float& s = S[i * dv + j0];
        s *= decay[t];
        kv += s * kt[i];
      }
      const float d = beta[t] * (vt[j0] - kv);
      float ov = 0.0f;
      for (int64_t i = 0; i < dk; ++i) {
        float& s = S[i * dv + j0];
        s += kt[i] * d;
        ov += s * qt[i];
      }
      ot[j0] = ov;
    }
  }
}

}  // namespace
}  // namespace strata::kernels
