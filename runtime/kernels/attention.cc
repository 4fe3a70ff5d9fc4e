#include "runtime/kernels/attention.h"

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

const AttnKernels& AttnKernelsFor(IsaLevel level) {
  static const AttnKernels kRef{AttnScoresRef, AttnMixRef, IsaLevel::kScalar};
  static const AttnKernels kAvx2{AttnScoresAvx2, AttnMixAvx2, IsaLevel::kAvx2};
  static const AttnKernels kAvx512{AttnScoresAvx512, AttnMixAvx512, IsaLevel::kAvx512};
  switch (level) {
    case IsaLevel::kAvx512: return kAvx512;
    case IsaLevel::kAvx2: return kAvx2;
    case IsaLevel::kScalar: break;
  }
  return kRef;
}

}  // namespace strata::kernels
