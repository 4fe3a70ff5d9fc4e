// The software GPU's atomics (sgpu.h; the half conversions are inline there).

#include <atomic>

#include "runtime/gpu/software/sgpu.h"

namespace strata::sgpu {

// Relaxed, as a GPU's atomicAdd: blocks on several host threads may add to
// the same word, and nothing else is ordered by it.
float AtomicAdd(float* p, float v) { return std::atomic_ref<float>(*p).fetch_add(v, std::memory_order_relaxed); }
int AtomicAdd(int* p, int v) { return std::atomic_ref<int>(*p).fetch_add(v, std::memory_order_relaxed); }
uint32_t AtomicAdd(uint32_t* p, uint32_t v) {
  return std::atomic_ref<uint32_t>(*p).fetch_add(v, std::memory_order_relaxed);
}

}  // namespace strata::sgpu
