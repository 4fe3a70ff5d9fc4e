// AVX2 + FMA attention inner loops (attention.h). Compiled with the AVX2
// flags; called only through AttnKernelsFor(kAvx2 or above). Its SIMD helpers
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
