// The software GPU's atomics and half-precision conversions (sgpu.h).

#include <atomic>

#include "runtime/gpu/software/sgpu.h"
#include "runtime/quant/fp_convert.h"

namespace strata::sgpu {

// Relaxed, as a GPU's atomicAdd: blocks on several host threads may add to
// the same word, and nothing else is ordered by it.
float AtomicAdd(float* p, float v) { return std::atomic_ref<float>(*p).fetch_add(v, std::memory_order_relaxed); }
int AtomicAdd(int* p, int v) { return std::atomic_ref<int>(*p).fetch_add(v, std::memory_order_relaxed); }
uint32_t AtomicAdd(uint32_t* p, uint32_t v) {
  return std::atomic_ref<uint32_t>(*p).fetch_add(v, std::memory_order_relaxed);
}

float HalfToFloat(uint16_t h) { return Fp16ToFp32(h); }
// Round to nearest even, as __float2half_rn.
uint16_t FloatToHalf(float f) { return Fp32ToFp16(f); }

}  // namespace strata::sgpu
