#pragma once
// The two inner loops of attention over a KV cache, for one query head:
//
//   scores[j] = scale * dot(q, K + j * stride)          j < n   (Dk = d)
//   o[0..d)  += sum over j < n of p[j] * (V + j * stride)[0..d)  (Dv = d)
//
// K and V rows are `stride` floats apart (the cache holds every KV head of a
// position side by side). AttnKernelsFor(level) gives the scalar reference
// (plain loops, products and sums rounded separately, in index order: what
// --reference runs) or the AVX2 / AVX-512 versions (fused multiply-add,
// several partial sums), which equal the reference up to float summation
// order; tests/attention_kernels_test.cc holds them to that on random inputs,
// tail sizes included. The ISA-specific bodies are in attention_avx2.cc and
// attention_avx512.cc, called only after the CPU check that picked `level`.

#include <cstdint>

#include "runtime/kernels/cpu_features.h"

namespace strata::kernels {

using AttnScoresFn = void (*)(const float* q, const float* K, int64_t stride, int64_t n, int64_t d, float scale,
                              float* scores);
using AttnMixFn = void (*)(const float* p, const float* V, int64_t stride, int64_t n, int64_t d, float* o);

struct AttnKernels {
  AttnScoresFn scores;
  AttnMixFn mix;
  IsaLevel isa;
};

// The kernels of `level` (the reference for kScalar). The caller has checked
// that the CPU runs `level` (FastBackend resolves its level once).
const AttnKernels& AttnKernelsFor(IsaLevel level);

void AttnScoresRef(const float* q, const float* K, int64_t stride, int64_t n, int64_t d, float scale, float* scores);
void AttnMixRef(const float* p, const float* V, int64_t stride, int64_t n, int64_t d, float* o);

// attention_avx2.cc / attention_avx512.cc
void AttnScoresAvx2(const float* q, const float* K, int64_t stride, int64_t n, int64_t d, float scale, float* scores);
void AttnMixAvx2(const float* p, const float* V, int64_t stride, int64_t n, int64_t d, float* o);
void AttnScoresAvx512(const float* q, const float* K, int64_t stride, int64_t n, int64_t d, float scale,
                      float* scores);
void AttnMixAvx512(const float* p, const float* V, int64_t stride, int64_t n, int64_t d, float* o);

}  // namespace strata::kernels
