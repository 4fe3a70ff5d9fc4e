#pragma once
// Overflow-checked integer arithmetic. Every size or offset derived from input
// bytes goes through these; a false return means the input is hostile or corrupt.

#include <cstdint>
#include <limits>

#include "runtime/base/compiler.h"

namespace strata {

template <typename T>
[[nodiscard]] inline bool CheckedAdd(T a, T b, T* out) {
  return !compiler::AddOverflows(a, b, out);
}
template <typename T>
[[nodiscard]] inline bool CheckedMul(T a, T b, T* out) {
  return !compiler::MulOverflows(a, b, out);
}
// Rounds x up to a multiple of `align` (a power of two). False on overflow.
[[nodiscard]] inline bool CheckedAlignUp(uint64_t x, uint64_t align, uint64_t* out) {
  uint64_t t;
  if (!CheckedAdd<uint64_t>(x, align - 1, &t)) return false;
  *out = t & ~(align - 1);
  return true;
}
inline constexpr bool IsPowerOfTwo(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }
// True if [off, off+len) lies inside [0, size).
inline bool RangeInside(uint64_t off, uint64_t len, uint64_t size) {
  return off <= size && len <= size - off;
}

}  // namespace strata
