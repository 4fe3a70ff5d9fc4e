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
#include "runtime/kernels/kv_type.h"

namespace strata::kernels {

using AttnScoresFn = void (*)(const float* q, const float* K, int64_t stride, int64_t n, int64_t d, float scale,
                              float* scores);
using AttnMixFn = void (*)(const float* p, const float* V, int64_t stride, int64_t n, int64_t d, float* o);

// Attention for a block of query rows that share one KV head (consecutive
// tokens of one sequence x the query heads of a GQA group):
//   o_r = softmax(scale * q_r . K[j], j < n_keys[r]) . V[0 .. n_keys[r])
// Row r sees its first n_keys[r] keys (causal: a later token sees more), from
// first_key[r] on when first_key is set (a sliding window); a row with no
// keys gets zeros. With `sink` set, row r's softmax has one more logit,
// sink[r], which weighs no value (gpt-oss's attention sinks): the max
// includes it and the sum includes exp(sink - max).
//   o_r = sum_j exp(s_j - m) V_j / (exp(sink_r - m) + sum_j exp(s_j - m)) K and V rows are k_stride / v_stride BYTES
// apart and stored as `kv` (kv_type.h: F32, F16 or Q8_0; Q8_0 needs dk and
// dv multiples of 32); every kernel reads each type, converting values to
// F32 as it loads them (a Q8_0 value is d * q, exact in float). Written to
// o[r][0 .. dv).
inline constexpr int64_t kAttnKeyBlock = 64;  // keys per block of the fast kernels
struct AttnBlockArgs {
  const float* const* q = nullptr;  // rows pointers to dk floats
  const int64_t* n_keys = nullptr;  // rows
  float* const* o = nullptr;        // rows pointers to dv floats
  int64_t rows = 0;
  const void* K = nullptr;
  int64_t k_stride = 0;  // bytes
  const void* V = nullptr;
  int64_t v_stride = 0;  // bytes
  KvType kv = KvType::kF32;
  int64_t dk = 0, dv = 0;
  float scale = 1.0f;
  float* scratch = nullptr;  // AttnBlockScratchFloats(rows, dk, dv) floats (the reference: max(n_keys))
  const int64_t* first_key = nullptr;  // rows, or null: every row from key 0
  const float* sink = nullptr;         // rows, or null: no sink
};
using AttnBlockFn = void (*)(const AttnBlockArgs& a);
// Floats of scratch AttnBlockFn needs: a scores row of kAttnKeyBlock per
// row, each row's running maximum and sum, and a key and a value block as
// F32 (an F16 or Q8_0 block is converted there once when 4 or more tiles
// of rows read it: attention_block.h).
inline int64_t AttnBlockScratchFloats(int64_t rows, int64_t dk, int64_t dv) {
  return rows * kAttnKeyBlock + 2 * rows + kAttnKeyBlock * (dk + dv);
}

struct AttnKernels {
  AttnScoresFn scores;
  AttnMixFn mix;
  IsaLevel isa;
  // The blocked kernel (flash-style: online softmax over key blocks, each
  // K and V block read once for all rows). The reference is row by row with
  // the two loops above and ops::Softmax's order; the AVX2 and AVX-512 ones
  // equal it up to float summation order and their exp (~1 ulp);
  // tests/attention_kernels_test.cc holds them to that.
  AttnBlockFn block;
};

// The kernels of `level` (the reference for kScalar). The caller has checked
// that the CPU runs `level` (FastBackend resolves its level once).
const AttnKernels& AttnKernelsFor(IsaLevel level);

void AttnScoresRef(const float* q, const float* K, int64_t stride, int64_t n, int64_t d, float scale, float* scores);
void AttnMixRef(const float* p, const float* V, int64_t stride, int64_t n, int64_t d, float* o);
// The same two loops over rows stored as `t`, `stride` bytes apart (what
// --reference runs for every KV type; for F32 they are the two above).
void AttnScoresRefKv(const float* q, const void* K, int64_t stride, KvType t, int64_t n, int64_t d, float scale,
                     float* scores);
void AttnMixRefKv(const float* p, const void* V, int64_t stride, KvType t, int64_t n, int64_t d, float* o);
// Value i of a row stored as `t` (F32, exactly as the kernels convert it).
float KvValueRef(const void* row, KvType t, int64_t i);
// Row by row: AttnScoresRefKv, a softmax (max subtracted, exp in double, the
// sum in double; the sink in both), AttnMixRefKv. Scratch: at least
// max(n_keys) floats.
// The softmax of the reference, with an optional sink logit (null: none):
// p[j] = exp(p[j] - m) / (sum + exp(sink - m)), m = max(p, sink).
void SoftmaxWithSink(float* p, int64_t n, const float* sink);
void AttnBlockRef(const AttnBlockArgs& a);

// attention_avx2.cc / attention_avx512.cc
void AttnScoresAvx2(const float* q, const float* K, int64_t stride, int64_t n, int64_t d, float scale, float* scores);
void AttnMixAvx2(const float* p, const float* V, int64_t stride, int64_t n, int64_t d, float* o);
void AttnScoresAvx512(const float* q, const float* K, int64_t stride, int64_t n, int64_t d, float scale,
                      float* scores);
void AttnMixAvx512(const float* p, const float* V, int64_t stride, int64_t n, int64_t d, float* o);
void AttnBlockAvx2(const AttnBlockArgs& a);
void AttnBlockAvx512(const AttnBlockArgs& a);

}  // namespace strata::kernels
