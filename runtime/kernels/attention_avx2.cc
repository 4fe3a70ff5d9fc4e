// AVX2 + FMA attention inner loops (attention.h), and the float kernels that
// share their traits and exp: SwiGLU's gate and SiLU (swiglu.h), the delta
// rule (delta_rule.h). Compiled with the AVX2 flags; called only through
// AttnKernelsFor / SwiGluFor / SiluFor / DeltaRuleFor(kAvx2 or above). Its SIMD helpers
// come from x86_simd.h, which puts them in this file's own ISA namespace, so
// no AVX2 copy can reach a baseline caller through the linker.

#define STRATA_KERNEL_NS avx2
#include "runtime/kernels/x86_simd.h"

namespace strata::kernels {

void AttnScoresAvx2(const float* q, const float* K, int64_t stride, int64_t n, int64_t d, float scale, float* scores);
void AttnMixAvx2(const float* p, const float* V, int64_t stride, int64_t n, int64_t d, float* o);

namespace {

using avx2::HorizontalSum;

// dot(q, k) over d values: two partial sums of 8 lanes, then a scalar tail.
inline float Dot(const float* q, const float* k, int64_t d) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= d; i += 16) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), _mm256_loadu_ps(k + i + 8), a1);
  }
  if (i + 8 <= d) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(k + i), a0);
    i += 8;
  }
  float s = HorizontalSum(_mm256_add_ps(a0, a1));
  for (; i < d; ++i) s += q[i] * k[i];
  return s;
}

}  // namespace

void AttnScoresAvx2(const float* q, const float* K, int64_t stride, int64_t n, int64_t d, float scale, float* scores) {
  int64_t j = 0;
  // Four keys at a time: q is loaded once for four independent chains.
  if (d >= 8) {
    const int64_t d8 = d & ~int64_t{7};
    for (; j + 4 <= n; j += 4) {
      const float* k0 = K + j * stride;
      const float* k1 = k0 + stride;
      const float* k2 = k1 + stride;
      const float* k3 = k2 + stride;
      __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
      for (int64_t i = 0; i < d8; i += 8) {
        const __m256 qv = _mm256_loadu_ps(q + i);
        a0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k0 + i), a0);
        a1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k1 + i), a1);
        a2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k2 + i), a2);
        a3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k3 + i), a3);
      }
      // Four separate reductions: measured faster here than a vhaddps tree.
      float s[4] = {HorizontalSum(a0), HorizontalSum(a1), HorizontalSum(a2), HorizontalSum(a3)};
      for (int64_t i = d8; i < d; ++i) {
        s[0] += q[i] * k0[i];
        s[1] += q[i] * k1[i];
        s[2] += q[i] * k2[i];
        s[3] += q[i] * k3[i];
      }
      for (int r = 0; r < 4; ++r) scores[j + r] = s[r] * scale;
    }
  }
  for (; j < n; ++j) scores[j] = Dot(q, K + j * stride, d) * scale;
}

void AttnMixAvx2(const float* p, const float* V, int64_t stride, int64_t n, int64_t d, float* o) {
  int64_t i = 0;
  // 64 output values in eight registers across every key, then 8 at a time.
  for (; i + 64 <= d; i += 64) {
    __m256 acc[8];
    for (int c = 0; c < 8; ++c) acc[c] = _mm256_loadu_ps(o + i + 8 * c);
    for (int64_t j = 0; j < n; ++j) {
      const __m256 pj = _mm256_set1_ps(p[j]);
      const float* vj = V + j * stride + i;
      for (int c = 0; c < 8; ++c) acc[c] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vj + 8 * c), acc[c]);
    }
    for (int c = 0; c < 8; ++c) _mm256_storeu_ps(o + i + 8 * c, acc[c]);
  }
  for (; i + 8 <= d; i += 8) {
    __m256 acc = _mm256_loadu_ps(o + i);
    for (int64_t j = 0; j < n; ++j) acc = _mm256_fmadd_ps(_mm256_set1_ps(p[j]), _mm256_loadu_ps(V + j * stride + i), acc);
    _mm256_storeu_ps(o + i, acc);
  }
  for (; i < d; ++i) {
    float acc = o[i];
    for (int64_t j = 0; j < n; ++j) acc += p[j] * V[j * stride + i];
    o[i] = acc;
  }
}

}  // namespace strata::kernels

// --- the blocked kernel (attention_block.h) ----------------------------------
#include "runtime/kernels/attention_block.h"
#include "runtime/kernels/delta_rule_simd.h"

namespace strata::kernels {
namespace {

struct Avx2Traits {
  using T = __m256;
  static constexpr int kLanes = 8;
  static T Zero() { return _mm256_setzero_ps(); }
  static T Load(const float* p) { return _mm256_loadu_ps(p); }
  // F16 -> F32 (F16C), int8 -> F32, one F16 scale.
  static T LoadHalf(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static T LoadI8(const uint8_t* p) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)))); }
  static float HalfToFloat(uint16_t h) { return _cvtsh_ss(h); }
  static void Store(float* p, T v) { _mm256_storeu_ps(p, v); }
  static T Set1(float x) { return _mm256_set1_ps(x); }
  static T Add(T a, T b) { return _mm256_add_ps(a, b); }
  static T Sub(T a, T b) { return _mm256_sub_ps(a, b); }
  static T Mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static T Div(T a, T b) { return _mm256_div_ps(a, b); }
  // x < lim ? a : b, lane by lane (false for NaN).
  static T SelectLess(T x, T lim, T a, T b) { return _mm256_blendv_ps(b, a, _mm256_cmp_ps(x, lim, _CMP_LT_OQ)); }
  static T Fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static T Min(T a, T b) { return _mm256_min_ps(a, b); }
  static T Max(T a, T b) { return _mm256_max_ps(a, b); }
  static T Floor(T a) { return _mm256_floor_ps(a); }
  static T Pow2(T n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23));
  }
  static float ReduceMax(T v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
  }
  static float ReduceAdd(T v) { return avx2::HorizontalSum(v); }
  static float First(T v) { return _mm256_cvtss_f32(v); }
  static void Sum4(T a0, T a1, T a2, T a3, float* out) {
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
  }
};

}  // namespace

// 2 rows x 4 keys of scores per tile, 2 rows x 32 dimensions of output (8
// accumulators each, of 16 registers).
void AttnBlockAvx2(const AttnBlockArgs& a) { AttnBlockForType<Avx2Traits, 2, 4, 4>(a); }

// SwiGLU's gate and SiLU (swiglu.h), with this file's exp.
void SwiGluAvx2(float* g, const float* u, int64_t n);
void SiluAvx2(float* x, int64_t n);
void SwiGluAvx2(float* g, const float* u, int64_t n) { SiluRowV<Avx2Traits, true>(g, u, n); }
void SiluAvx2(float* x, int64_t n) { SiluRowV<Avx2Traits, false>(x, nullptr, n); }

// The delta rule (delta_rule.h) with this file's traits.
void DeltaRuleAvx2(int64_t n, int64_t dk, int64_t dv, const float* const* q, const float* const* k,
                   const float* const* v, const float* decay, const float* beta, float* S, float* const* o,
                   float* scratch);
void DeltaRuleAvx2(int64_t n, int64_t dk, int64_t dv, const float* const* q, const float* const* k,
                   const float* const* v, const float* decay, const float* beta, float* S, float* const* o,
                   float* /*scratch*/) {
  DeltaRuleV<Avx2Traits>(n, dk, dv, q, k, v, decay, beta, S, o);
}

}  // namespace strata::kernels
