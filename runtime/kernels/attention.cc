#include "runtime/kernels/attention.h"

#include <algorithm>
#include <cstring>
#include <cmath>
#include <limits>

#include "runtime/quant/fp_convert.h"

namespace strata::kernels {

void AttnScoresRef(const float* q, const float* K, int64_t stride, int64_t n, int64_t d, float scale, float* scores) {
  for (int64_t j = 0; j < n; ++j) {
    const float* kj = K + j * stride;
    float s = 0.0f;
    for (int64_t i = 0; i < d; ++i) s += q[i] * kj[i];
    scores[j] = s * scale;
  }
}

void AttnMixRef(const float* p, const float* V, int64_t stride, int64_t n, int64_t d, float* o) {
  for (int64_t j = 0; j < n; ++j) {
    const float* vj = V + j * stride;
    const float pj = p[j];
    for (int64_t i = 0; i < d; ++i) o[i] += pj * vj[i];
  }
}

float KvValueRef(const void* row, KvType t, int64_t i) {
  const auto* b = static_cast<const uint8_t*>(row);
  switch (t) {
    case KvType::kF16: {
      uint16_t h;
      std::memcpy(&h, b + 2 * i, 2);
      return Fp16ToFp32(h);
    }
    case KvType::kQ8_0: {
      const uint8_t* blk = b + i / kKvQ8Block * kKvQ8BlockBytes;
      uint16_t h;
      std::memcpy(&h, blk, 2);
      return Fp16ToFp32(h) * static_cast<float>(static_cast<int8_t>(blk[2 + i % kKvQ8Block]));
    }
    case KvType::kF32: break;
  }
  float f;
  std::memcpy(&f, b + 4 * i, 4);
  return f;
}

void AttnScoresRefKv(const float* q, const void* K, int64_t stride, KvType t, int64_t n, int64_t d, float scale,
                     float* scores) {
  if (t == KvType::kF32)  // the same loop, without decoding value by value
    return AttnScoresRef(q, static_cast<const float*>(K), stride / 4, n, d, scale, scores);
  for (int64_t j = 0; j < n; ++j) {
    const void* kj = static_cast<const uint8_t*>(K) + j * stride;
    float s = 0.0f;
    for (int64_t i = 0; i < d; ++i) s += q[i] * KvValueRef(kj, t, i);
    scores[j] = s * scale;
  }
}

void AttnMixRefKv(const float* p, const void* V, int64_t stride, KvType t, int64_t n, int64_t d, float* o) {
  if (t == KvType::kF32) return AttnMixRef(p, static_cast<const float*>(V), stride / 4, n, d, o);
  for (int64_t j = 0; j < n; ++j) {
    const void* vj = static_cast<const uint8_t*>(V) + j * stride;
    const float pj = p[j];
    for (int64_t i = 0; i < d; ++i) o[i] += pj * KvValueRef(vj, t, i);
  }
}

void SoftmaxWithSink(float* p, int64_t n, const float* sink) {
  float mx = sink ? *sink : -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) mx = std::max(mx, p[j]);
  double sum = sink ? std::exp(static_cast<double>(*sink - mx)) : 0.0;
  for (int64_t j = 0; j < n; ++j) {
    p[j] = static_cast<float>(std::exp(static_cast<double>(p[j] - mx)));
    sum += static_cast<double>(p[j]);
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t j = 0; j < n; ++j) p[j] *= inv;
}

void AttnBlockRef(const AttnBlockArgs& a) {
  for (int64_t r = 0; r < a.rows; ++r) {
    float* o = a.o[r];
    std::fill(o, o + a.dv, 0.0f);
    const int64_t first = a.first_key ? std::max<int64_t>(a.first_key[r], 0) : 0;
    const int64_t n = a.n_keys[r] - first;
    if (n <= 0) continue;
    float* p = a.scratch;
    const auto* K = static_cast<const uint8_t*>(a.K) + first * a.k_stride;
    const auto* V = static_cast<const uint8_t*>(a.V) + first * a.v_stride;
    AttnScoresRefKv(a.q[r], K, a.k_stride, a.kv, n, a.dk, a.scale, p);
    SoftmaxWithSink(p, n, a.sink ? &a.sink[r] : nullptr);
    AttnMixRefKv(p, V, a.v_stride, a.kv, n, a.dv, o);
  }
}

const AttnKernels& AttnKernelsFor(IsaLevel level) {
  static const AttnKernels kRef{AttnScoresRef, AttnMixRef, IsaLevel::kScalar, AttnBlockRef};
  static const AttnKernels kAvx2{AttnScoresAvx2, AttnMixAvx2, IsaLevel::kAvx2, AttnBlockAvx2};
  static const AttnKernels kAvx512{AttnScoresAvx512, AttnMixAvx512, IsaLevel::kAvx512, AttnBlockAvx512};
  return *PickForIsa(level, &kRef, &kAvx2, &kAvx512);
}

}  // namespace strata::kernels
