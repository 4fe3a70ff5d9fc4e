#pragma once
// F32, F16 and BF16 weights times F32 activations (for F16/BF16 weights the
// activations hold their F16/BF16 rounding: ActFormat::kF16AsF32 /
// kBf16AsF32). A product of two F16 (or BF16) values is exact in F32, so
// multiplying in F32 gives the products llama.cpp's F16/BF16 dot computes;
// only the summation order differs. Blocks are 32 elements; a row whose
// length is not a multiple of 32 finishes with a scalar tail.
// Include only from *_avx2.cc / *_avx512.cc (see x86_simd.h).

#include "runtime/kernels/x86_gemm_driver.h"

namespace strata::kernels::STRATA_KERNEL_NS {
namespace {

// How 8 weights load as F32, and one weight as a scalar.
struct LoadF32 {
  static constexpr int kBytes = 4;
  static __m256 Load8(const uint8_t* p) { return LoadPs(p); }
  static float Load1(const uint8_t* p) { return LoadFloat(p); }
};
struct LoadF16 {
  static constexpr int kBytes = 2;
  static __m256 Load8(const uint8_t* p) { return _mm256_cvtph_ps(LoadU128(p)); }
  static float Load1(const uint8_t* p) { return LoadHalf(p); }
};
struct LoadBF16 {  // BF16 is the top half of an F32: widen and shift left by 16
  static constexpr int kBytes = 2;
  static __m256 Load8(const uint8_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(LoadU128(p)), 16));
  }
  static float Load1(const uint8_t* p) {
    const uint32_t bits = static_cast<uint32_t>(LoadU16(p)) << 16;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
};

template <class L>
struct FloatKernel {
  static constexpr int kBlockElems = 32;
  static constexpr int kBlockBytes = 32 * L::kBytes;
  static constexpr int kActBlockBytes = 32 * 4;
  static constexpr bool kHasTail = true;
  static constexpr int kMatVecRows = 4;
  static constexpr int kTileRows = STRATA_KERNEL_VNNI ? 4 : 2;
  static constexpr int kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m256 (&acc)[R][C]) {
    STRATA_UNROLL for (int r = 0; r < R; ++r) {
      const uint8_t* wr = w + r * ws;
      const __m256 w0 = L::Load8(wr), w1 = L::Load8(wr + 8 * L::kBytes);
      const __m256 w2 = L::Load8(wr + 16 * L::kBytes), w3 = L::Load8(wr + 24 * L::kBytes);
      STRATA_UNROLL for (int c = 0; c < C; ++c) {
        const uint8_t* ac = a + c * as;
        // Two independent chains per block keep the accumulator's own chain
        // to one add per 32 elements.
        __m256 p0 = _mm256_mul_ps(w0, LoadPs(ac));
        __m256 p1 = _mm256_mul_ps(w1, LoadPs(ac + 32));
        p0 = _mm256_fmadd_ps(w2, LoadPs(ac + 64), p0);
        p1 = _mm256_fmadd_ps(w3, LoadPs(ac + 96), p1);
        acc[r][c] = _mm256_add_ps(acc[r][c], _mm256_add_ps(p0, p1));
      }
    }
  }

  template <int R, int C>
  static void Tail(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, int64_t k0, int64_t k,
                   float (&out)[R][C]) {
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c)
        for (int64_t i = k0; i < k; ++i)
          out[r][c] += L::Load1(w + r * ws + i * L::kBytes) * LoadFloat(a + c * as + 4 * i);
  }
};

}  // namespace
}  // namespace strata::kernels::STRATA_KERNEL_NS
