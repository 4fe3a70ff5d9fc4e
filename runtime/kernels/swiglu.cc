#include "runtime/kernels/swiglu.h"

#include "runtime/base/portable_math.h"

namespace strata::kernels {

void SwiGluAvx2(float* g, const float* u, int64_t n);
void SwiGluAvx512(float* g, const float* u, int64_t n);
void SiluAvx2(float* x, int64_t n);
void SiluAvx512(float* x, int64_t n);

void SwiGluRef(float* g, const float* u, int64_t n) {
  for (int64_t i = 0; i < n; ++i) g[i] = g[i] / (1.0f + ExpF(-g[i])) * u[i];
}

void SiluRef(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] / (1.0f + ExpF(-x[i]));
}

SiluFn SiluFor(IsaLevel level) { return PickForIsa<SiluFn>(level, SiluRef, SiluAvx2, SiluAvx512); }

SwiGluFn SwiGluFor(IsaLevel level) { return PickForIsa<SwiGluFn>(level, SwiGluRef, SwiGluAvx2, SwiGluAvx512); }

}  // namespace strata::kernels
