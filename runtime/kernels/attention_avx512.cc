// AVX-512 attention inner loops (attention.h), and the float kernels that
// share their traits and exp: SwiGLU's gate and SiLU (swiglu.h), the delta
// rule (delta_rule.h). Compiled with the AVX-512 flags; called only through
// AttnKernelsFor / SwiGluFor / SiluFor / DeltaRuleFor(kAvx512). It needs nothing but
// intrinsics (no shared inline helpers that could be linked into baseline
// code). Tails use masked loads, so every d runs in vector registers.

#include <immintrin.h>

#include <cstdint>

namespace strata::kernels {

void AttnScoresAvx512(const float* q, const float* K, int64_t stride, int64_t n, int64_t d, float scale,
                      float* scores);
void AttnMixAvx512(const float* p, const float* V, int64_t stride, int64_t n, int64_t d, float* o);

namespace {

inline __mmask16 TailMask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
}

// The four horizontal sums of a0..a3, as lanes 0..3: halves added to 256
// bits, then pairwise adds (cheaper than four full reductions).
inline __m128 HorizontalSum4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
  auto half = [](__m512 a) {
    return _mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
  };
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(half(a0), half(a1)), _mm256_hadd_ps(half(a2), half(a3)));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

}  // namespace

void AttnScoresAvx512(const float* q, const float* K, int64_t stride, int64_t n, int64_t d, float scale,
                      float* scores) {
  const int64_t d16 = d & ~int64_t{15};
  const __mmask16 tail = TailMask(d - d16);
  int64_t j = 0;
  // Four keys at a time: q is loaded once for four independent chains.
  for (; j + 4 <= n; j += 4) {
    const float* k0 = K + j * stride;
    const float* k1 = k0 + stride;
    const float* k2 = k1 + stride;
    const float* k3 = k2 + stride;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    for (int64_t i = 0; i < d16; i += 16) {
      const __m512 qv = _mm512_loadu_ps(q + i);
      a0 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k0 + i), a0);
      a1 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k1 + i), a1);
      a2 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k2 + i), a2);
      a3 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(k3 + i), a3);
    }
    if (tail) {
      const __m512 qv = _mm512_maskz_loadu_ps(tail, q + d16);
      a0 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(tail, k0 + d16), a0);
      a1 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(tail, k1 + d16), a1);
      a2 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(tail, k2 + d16), a2);
      a3 = _mm512_fmadd_ps(qv, _mm512_maskz_loadu_ps(tail, k3 + d16), a3);
    }
    _mm_storeu_ps(scores + j, _mm_mul_ps(HorizontalSum4(a0, a1, a2, a3), _mm_set1_ps(scale)));
  }
  for (; j < n; ++j) {
    const float* kj = K + j * stride;
    __m512 a = _mm512_setzero_ps();
    for (int64_t i = 0; i < d16; i += 16) a = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), _mm512_loadu_ps(kj + i), a);
    if (tail) a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tail, q + d16), _mm512_maskz_loadu_ps(tail, kj + d16), a);
    scores[j] = _mm512_reduce_add_ps(a) * scale;
  }
}

void AttnMixAvx512(const float* p, const float* V, int64_t stride, int64_t n, int64_t d, float* o) {
  int64_t i = 0;
  // 128 output values in eight registers across every key, then 16 at a time
  // (the last masked).
  for (; i + 128 <= d; i += 128) {
    __m512 acc[8];
    for (int c = 0; c < 8; ++c) acc[c] = _mm512_loadu_ps(o + i + 16 * c);
    for (int64_t j = 0; j < n; ++j) {
      const __m512 pj = _mm512_set1_ps(p[j]);
      const float* vj = V + j * stride + i;
      for (int c = 0; c < 8; ++c) acc[c] = _mm512_fmadd_ps(pj, _mm512_loadu_ps(vj + 16 * c), acc[c]);
    }
    for (int c = 0; c < 8; ++c) _mm512_storeu_ps(o + i + 16 * c, acc[c]);
  }
  for (; i < d; i += 16) {
    const __mmask16 m = TailMask(d - i);
    __m512 acc = _mm512_maskz_loadu_ps(m, o + i);
    for (int64_t j = 0; j < n; ++j)
      acc = _mm512_fmadd_ps(_mm512_set1_ps(p[j]), _mm512_maskz_loadu_ps(m, V + j * stride + i), acc);
    _mm512_mask_storeu_ps(o + i, m, acc);
  }
}

}  // namespace strata::kernels

// --- the blocked kernel (attention_block.h) ----------------------------------
#include "runtime/kernels/attention_block.h"
#include "runtime/kernels/delta_rule_simd.h"

// GCC 12 reports the _mm256_undefined_pd() inside _mm512_extractf64x4_pd as
// uninitialized once HorizontalSum4 is inlined into the template: a false
// positive of its own header (the value is never read).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace strata::kernels {
namespace {

struct Avx512Traits {
  using T = __m512;
  static constexpr int kLanes = 16;
  static T Zero() { return _mm512_setzero_ps(); }
  static T Load(const float* p) { return _mm512_loadu_ps(p); }
  // F16 -> F32 (F16C), int8 -> F32, one F16 scale.
  static T LoadHalf(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static T LoadI8(const uint8_t* p) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))); }
  static float HalfToFloat(uint16_t h) { return _cvtsh_ss(h); }
  static void Store(float* p, T v) { _mm512_storeu_ps(p, v); }
  static T Set1(float x) { return _mm512_set1_ps(x); }
  static T Add(T a, T b) { return _mm512_add_ps(a, b); }
  static T Sub(T a, T b) { return _mm512_sub_ps(a, b); }
  static T Mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static T Div(T a, T b) { return _mm512_div_ps(a, b); }
  // x < lim ? a : b, lane by lane (false for NaN).
  static T SelectLess(T x, T lim, T a, T b) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lim, _CMP_LT_OQ), b, a); }
  static T Fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static T Min(T a, T b) { return _mm512_min_ps(a, b); }
  static T Max(T a, T b) { return _mm512_max_ps(a, b); }
  static T Floor(T a) { return _mm512_mask_roundscale_ps(a, 0xFFFF, a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  // 2^n for integral n in [-127, 128): the exponent field.
  static T Pow2(T n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
  }
  static float ReduceMax(T v) { return _mm512_reduce_max_ps(v); }
  static float ReduceAdd(T v) { return _mm512_reduce_add_ps(v); }
  static float First(T v) { return _mm512_cvtss_f32(v); }
  static void Sum4(T a0, T a1, T a2, T a3, float* out) { _mm_storeu_ps(out, HorizontalSum4(a0, a1, a2, a3)); }
};

}  // namespace

// 4 rows x 4 keys of scores (16 accumulators), 4 rows x 64 dimensions of output.
void AttnBlockAvx512(const AttnBlockArgs& a) { AttnBlockForType<Avx512Traits, 4, 4, 4>(a); }

// SwiGLU's gate and SiLU (swiglu.h), with this file's exp.
void SwiGluAvx512(float* g, const float* u, int64_t n);
void SiluAvx512(float* x, int64_t n);
void SwiGluAvx512(float* g, const float* u, int64_t n) { SiluRowV<Avx512Traits, true>(g, u, n); }
void SiluAvx512(float* x, int64_t n) { SiluRowV<Avx512Traits, false>(x, nullptr, n); }

// The delta rule (delta_rule.h) with this file's traits.
void DeltaRuleAvx512(int64_t n, int64_t dk, int64_t dv, const float* const* q, const float* const* k,
                     const float* const* v, const float* decay, const float* beta, float* S, float* const* o,
                     float* scratch);
void DeltaRuleAvx512(int64_t n, int64_t dk, int64_t dv, const float* const* q, const float* const* k,
                     const float* const* v, const float* decay, const float* beta, float* S, float* const* o,
                     float* /*scratch*/) {
  DeltaRuleV<Avx512Traits>(n, dk, dv, q, k, v, decay, beta, S, o);
}

}  // namespace strata::kernels
