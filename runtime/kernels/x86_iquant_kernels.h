#pragma once
// i-quants against Q8_K activations: IQ4_XS and IQ3_S.
//
// IQ4_XS: 8 sub-blocks of 32 with a 6-bit scale (ls - 32); 4-bit codes map
// through the IQ4_NL table to signed values; sub-block ib's byte j holds
// element j (low nibble) and j + 16 (high nibble).
// IQ3_S: 8 sub-blocks of 32 with an odd scale 2s + 1; each group of 4
// elements is one entry of the 512-entry grid (bytes 1..15), index = qs byte
// plus bit 8 from qh; one sign bit per element.
// Sums are formed as in x86_kquant_kernels.h: int16 scale multiply-add of
// u8 x s8 pair products, exact in int32.
// Include only from *_avx2.cc / *_avx512.cc (see x86_simd.h).

#include "runtime/kernels/kernel_tables.h"
#include "runtime/kernels/x86_kquant_kernels.h"
#include "runtime/quant/iq_grids.h"

namespace strata::kernels::STRATA_KERNEL_NS {
namespace {

struct Iq4Lut {
  int8_t v[16];
};
constexpr Iq4Lut MakeIq4Lut() {
  Iq4Lut t{};
  for (int i = 0; i < 16; ++i) t.v[i] = kValuesIq4nl[i];
  return t;
}
constexpr Iq4Lut kIq4Lut = MakeIq4Lut();

// The 8 nibbles of v (nibble i = bits 4i..4i+3) as 8 int16.
inline __m128i Nibbles8(uint32_t v) {
  const __m128i b = _mm_cvtsi32_si128(static_cast<int>(v));
  const __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0x0F));                   // nibbles 0, 2, 4, 6
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0F));  // nibbles 1, 3, 5, 7
  return _mm_cvtepu8_epi16(_mm_unpacklo_epi8(lo, hi));
}

// IQ4_XS: d (half), scales_h (u16), scales_l[4], qs[128].
struct Iq4XsKernel {
  static constexpr int kBlockElems = 256, kBlockBytes = 136, kActBlockBytes = 292;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 1, kTileRows = 2, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m256 (&acc)[R][C]) {
    const __m256i lut = _mm256_broadcastsi128_si256(LoadU128(kIq4Lut.v));
    STRATA_UNROLL for (int r = 0; r < R; ++r) {
      const uint8_t* x = w + r * ws;
      // Scale of sub-block ib: 4 bits from scales_l, 2 from scales_h, minus 32.
      const __m128i low4 = Nibbles8(LoadU32(x + 4));
      // Bits 2ib..2ib+1 of scales_h in lane ib: shift left by 14 - 2ib (a
      // multiply by a power of two), then right by 14.
      const __m128i high2 = _mm_srli_epi16(
          _mm_mullo_epi16(_mm_set1_epi16(static_cast<int16_t>(LoadU16(x + 2))),
                          _mm_setr_epi16(1 << 14, 1 << 12, 1 << 10, 1 << 8, 1 << 6, 1 << 4, 1 << 2, 1)),
          14);
      const __m256i scales = _mm256_broadcastsi128_si256(
          _mm_sub_epi16(_mm_or_si128(low4, _mm_slli_epi16(high2, 4)), _mm_set1_epi16(32)));
      __m256i sumi[C];
      STRATA_UNROLL for (int c = 0; c < C; ++c) sumi[c] = _mm256_setzero_si256();
      Unroll<4>([&](auto k_const) {  // sub-blocks 2k and 2k + 1 (32 bytes of codes)
        constexpr int k = decltype(k_const)::value;
        const __m256i q = LoadU256(x + 8 + 32 * k);
        const __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(q, Set1I8(0x0F)));
        const __m256i hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(q, 4), Set1I8(0x0F)));
        const __m256i w0 = _mm256_permute2x128_si256(lo, hi, 0x20);  // sub-block 2k: lo(0-15), hi(16-31)
        const __m256i w1 = _mm256_permute2x128_si256(lo, hi, 0x31);  // sub-block 2k + 1
        const __m256i w0_abs = _mm256_sign_epi8(w0, w0), w1_abs = _mm256_sign_epi8(w1, w1);
        const __m256i s0 = ScaleForChunk<2 * k>(scales), s1 = ScaleForChunk<2 * k + 1>(scales);
        STRATA_UNROLL for (int c = 0; c < C; ++c) {
          const uint8_t* qa = ActQ(a + c * as) + 64 * k;
          sumi[c] = MulAddI16(sumi[c], MulPairsU8S8(w0_abs, _mm256_sign_epi8(LoadU256(qa), w0)), s0);
          sumi[c] = MulAddI16(sumi[c], MulPairsU8S8(w1_abs, _mm256_sign_epi8(LoadU256(qa + 32), w1)), s1);
        }
      });
      const float d = LoadHalf(x);
      STRATA_UNROLL for (int c = 0; c < C; ++c)
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[c]), _mm256_set1_ps(d * ActD(a + c * as)), acc[r][c]);
    }
  }
};

// IQ3_S: d (half), qs[64], qh[8], signs[32], scales[4].
struct Iq3SKernel {
  static constexpr int kBlockElems = 256, kBlockBytes = 110, kActBlockBytes = 292;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 1, kTileRows = 2, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m256 (&acc)[R][C]) {
    const auto* grid = reinterpret_cast<const int*>(kIq3SGridData);
    STRATA_UNROLL for (int r = 0; r < R; ++r) {
      const uint8_t* x = w + r * ws;
      const uint8_t* qs = x + 2;
      const uint8_t* qh = x + 66;
      const uint8_t* signs = x + 74;
      // Scale of sub-block ib: 2 * (nibble ib of scales) + 1.
      const __m128i nibbles = Nibbles8(LoadU32(x + 106));
      const __m256i scales =
          _mm256_broadcastsi128_si256(_mm_add_epi16(_mm_slli_epi16(nibbles, 1), _mm_set1_epi16(1)));
      __m256i sumi[C];
      STRATA_UNROLL for (int c = 0; c < C; ++c) sumi[c] = _mm256_setzero_si256();
      Unroll<8>([&](auto ib_const) {
        constexpr int ib = decltype(ib_const)::value;
        // Grid index of group l (elements 4l..4l+3): qs[8ib + l] | bit l of qh[ib] << 8.
        const __m256i low = _mm256_cvtepu8_epi32(LoadU64(qs + 8 * ib));
        const __m256i high = _mm256_and_si256(_mm256_sllv_epi32(_mm256_set1_epi32(qh[ib]), _mm256_setr_epi32(8, 7, 6, 5, 4, 3, 2, 1)),
                                              _mm256_set1_epi32(0x100));
        const __m256i mag = _mm256_i32gather_epi32(grid, _mm256_or_si256(low, high), 4);  // 32 bytes 1..15
        // Sign byte k covers elements 8k..8k+7 (bit j: element 8k + j).
        const __m256i neg = BitsToByteMask(LoadU32(signs + 4 * ib));
        const __m256i wv = _mm256_sub_epi8(_mm256_xor_si256(mag, neg), neg);  // +-magnitude
        const __m256i s = ScaleForChunk<ib>(scales);
        STRATA_UNROLL for (int c = 0; c < C; ++c) {
          const __m256i qa = LoadU256(ActQ(a + c * as) + 32 * ib);
          sumi[c] = MulAddI16(sumi[c], MulPairsU8S8(mag, _mm256_sign_epi8(qa, wv)), s);
        }
      });
      const float d = LoadHalf(x);
      STRATA_UNROLL for (int c = 0; c < C; ++c)
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[c]), _mm256_set1_ps(d * ActD(a + c * as)), acc[r][c]);
    }
  }
};

}  // namespace
}  // namespace strata::kernels::STRATA_KERNEL_NS
