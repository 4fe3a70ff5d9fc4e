#pragma once
// Grid i-quants against Q8_K activations: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
// IQ1_S, IQ1_M.
//
// Each group of 8 (IQ2) or 4 (IQ3_XXS) elements is one grid entry whose bytes
// are the magnitudes (iq_grids.h), gathered 8 or 4 entries per 32 elements
// (vpgatherqq / vpgatherdd); signs come as 7-bit patterns made into bytes
// with an even-parity 8th bit (kKsignsIq2xs) or as sign bytes (IQ2_S), and
// become a byte mask. Scales are odd integers 2s + 1 per 32 (IQ2_XXS,
// IQ3_XXS) or per 16 elements; ggml's constant factor (0.125 for IQ2, 0.25
// for IQ3_XXS) is applied with the block scales at the end, as in its
// vec_dot. Integer sums are exact, as everywhere.
// Include only from *_avx2.cc / *_avx512.cc (see x86_simd.h).

#include "runtime/kernels/kernel_tables.h"
#include "runtime/kernels/x86_kquant_kernels.h"

namespace strata::kernels::STRATA_KERNEL_NS {
namespace {

// sumi[c] += scale-weighted dot of 32 weights (magnitudes `mag` <= 62, negated
// where `neg` is 0xFF) with the 32 activation quants at `offset` of column c.
template <int C>
inline void AccumulateGrid(__m256i mag, __m256i neg, __m256i scale, const uint8_t* a, uint64_t as, int offset,
                           __m256i (&sumi)[C]) {
  const __m256i w = _mm256_sub_epi8(_mm256_xor_si256(mag, neg), neg);
  STRATA_UNROLL for (int c = 0; c < C; ++c) {
    const __m256i qa = LoadU256(ActQ(a + c * as) + offset);
    sumi[c] = MulAddI16(sumi[c], MulPairsU8S8(mag, _mm256_sign_epi8(qa, w)), scale);
  }
}

// Four 7-bit sign patterns (bits 7l..7l+6 of `aux`) as four sign bytes.
inline uint32_t SignBytes4(uint32_t aux) {
  const uint8_t* ks = kKsignsIq2xsData;
  return static_cast<uint32_t>(ks[aux & 127]) | static_cast<uint32_t>(ks[(aux >> 7) & 127]) << 8 |
         static_cast<uint32_t>(ks[(aux >> 14) & 127]) << 16 | static_cast<uint32_t>(ks[(aux >> 21) & 127]) << 24;
}

// Scale a for elements 0-15 (int16 lanes 0-7), b for 16-31 (lanes 8-15).
inline __m256i ScalePer16(int a, int b) {
  return _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(b)), _mm_set1_epi16(static_cast<int16_t>(a)));
}

inline __m256 FinishGrid(__m256 acc, __m256i sumi, float d) {
  return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(d), acc);
}

// The four kinds differ only in how a 32-element sub-block's magnitudes,
// signs and scale are found: Grid32(x, ib, &mag, &neg, &scale).
template <class F>
struct GridKernel {
  static constexpr int kBlockElems = 256, kBlockBytes = F::kBytes, kActBlockBytes = 292;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 1, kTileRows = 2, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m256 (&acc)[R][C]) {
    STRATA_UNROLL for (int r = 0; r < R; ++r) {
      const uint8_t* x = w + r * ws;
      __m256i sumi[C];
      STRATA_UNROLL for (int c = 0; c < C; ++c) sumi[c] = _mm256_setzero_si256();
      for (int ib = 0; ib < 8; ++ib) {
        __m256i mag, neg, scale;
        F::Grid32(x, ib, &mag, &neg, &scale);
        AccumulateGrid<C>(mag, neg, scale, a, as, 32 * ib, sumi);
      }
      const float d = LoadHalf(x) * F::kFactor;
      STRATA_UNROLL for (int c = 0; c < C; ++c) acc[r][c] = FinishGrid(acc[r][c], sumi[c], d * ActD(a + c * as));
    }
  }
};

// IQ2_XXS: d, then per 32: 4 grid indices (bytes) and a u32 of 4 x 7 sign
// bits with the 4-bit scale on top.
struct Iq2XxsFormat {
  static constexpr int kBytes = 66;
  static constexpr float kFactor = 0.125f;
  static void Grid32(const uint8_t* x, int ib, __m256i* mag, __m256i* neg, __m256i* scale) {
    const uint8_t* g = x + 2 + 8 * ib;
    const uint32_t aux = LoadU32(g + 4);
    *mag = _mm256_i32gather_epi64(reinterpret_cast<const long long*>(kIq2XxsGridData),
                                  _mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(LoadU32(g)))), 8);
    *neg = BitsToByteMask(SignBytes4(aux));
    *scale = _mm256_set1_epi16(static_cast<int16_t>(2 * (aux >> 28) + 1));
  }
};

// IQ2_XS: d, 32 u16 (9-bit grid index, 7 sign bits), then 8 bytes of two
// 4-bit scales (elements 0-15, 16-31 of each 32).
struct Iq2XsFormat {
  static constexpr int kBytes = 74;
  static constexpr float kFactor = 0.125f;
  static void Grid32(const uint8_t* x, int ib, __m256i* mag, __m256i* neg, __m256i* scale) {
    uint64_t q;
    std::memcpy(&q, x + 2 + 8 * ib, 8);
    const __m128i idx = _mm_and_si128(_mm_cvtepu16_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(q))), _mm_set1_epi32(511));
    *mag = _mm256_i32gather_epi64(reinterpret_cast<const long long*>(kIq2XsGridData), idx, 8);
    const uint8_t* ks = kKsignsIq2xsData;
    const uint32_t signs = static_cast<uint32_t>(ks[(q >> 9) & 127]) | static_cast<uint32_t>(ks[(q >> 25) & 127]) << 8 |
                           static_cast<uint32_t>(ks[(q >> 41) & 127]) << 16 |
                           static_cast<uint32_t>(ks[(q >> 57) & 127]) << 24;
    *neg = BitsToByteMask(signs);
    const int sc = x[66 + ib];
    *scale = ScalePer16(2 * (sc & 0xF) + 1, 2 * (sc >> 4) + 1);
  }
};

// IQ2_S: d, 32 index low bytes, 32 sign bytes, 8 bytes qh (index bits 8-9,
// 2 per group), 8 bytes of scales (as IQ2_XS).
struct Iq2SFormat {
  static constexpr int kBytes = 82;
  static constexpr float kFactor = 0.125f;
  static void Grid32(const uint8_t* x, int ib, __m256i* mag, __m256i* neg, __m256i* scale) {
    const __m128i low = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(LoadU32(x + 2 + 4 * ib))));
    // Bits 2l..2l+1 of qh[ib] become index bits 8-9 of group l.
    const __m128i high = _mm_and_si128(_mm_sllv_epi32(_mm_set1_epi32(x[66 + ib]), _mm_setr_epi32(8, 6, 4, 2)),
                                       _mm_set1_epi32(0x300));
    *mag = _mm256_i32gather_epi64(reinterpret_cast<const long long*>(kIq2SGridData), _mm_or_si128(low, high), 8);
    *neg = BitsToByteMask(LoadU32(x + 34 + 4 * ib));
    const int sc = x[74 + ib];
    *scale = ScalePer16(2 * (sc & 0xF) + 1, 2 * (sc >> 4) + 1);
  }
};

// IQ3_XXS: d, 64 grid indices (4 elements each), then per 32 a u32 of
// 4 x 7 sign bits (8 elements each) with the 4-bit scale on top.
struct Iq3XxsFormat {
  static constexpr int kBytes = 98;
  static constexpr float kFactor = 0.25f;
  static void Grid32(const uint8_t* x, int ib, __m256i* mag, __m256i* neg, __m256i* scale) {
    const uint32_t aux = LoadU32(x + 66 + 4 * ib);
    *mag = _mm256_i32gather_epi32(reinterpret_cast<const int*>(kIq3XxsGridData),
                                  _mm256_cvtepu8_epi32(LoadU64(x + 2 + 8 * ib)), 4);
    *neg = BitsToByteMask(SignBytes4(aux));
    *scale = _mm256_set1_epi16(static_cast<int16_t>(2 * (aux >> 28) + 1));
  }
};

// IQ1_S / IQ1_M: grid entries of int8 -1, 0, +1 plus a delta of +-1/8 per
// 32 (IQ1_S) or per 8 elements (IQ1_M). Times 8 the weights are integers,
// v = 8 * grid + delta in -9..9; entered as u = v + 9 (0..18), the 9 * sum(a)
// taken from the bsums with the per-16 scales. The 1/8 joins the block
// scale: d * da / 8 * sum(scale * dot(v, a)), which is ggml's
// d * da * (sumi + 0.125 * sumi1).
//
// Build u for 32 elements from 4 grid indices and 4 delta signs (bit 3 of
// each of the 4 bytes of `delta_bits` set: delta -1).
inline __m256i Iq1Codes(__m128i indices, uint32_t delta_bits) {
  const __m256i grid = _mm256_i32gather_epi64(reinterpret_cast<const long long*>(kIq1SGridData), indices, 8);
  const __m256i eight_grid = _mm256_sign_epi8(Set1I8(8), grid);  // 8 * grid (grid 0 gives 0)
  // Delta byte l (+1 or -1) spread over the 8 bytes of group l.
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(delta_bits)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i minus = _mm256_cmpeq_epi8(_mm256_and_si256(spread, Set1I8(8)), Set1I8(8));
  const __m256i delta = _mm256_or_si256(minus, Set1I8(1));  // -1 where set, else +1
  return _mm256_add_epi8(_mm256_add_epi8(eight_grid, delta), Set1I8(9));
}

// Shared structure: per 32-element sub-block the codes and 16 int16 scales
// (per 16 elements); after the block, subtract 9 * sum_k scale_k * bsums_k.
template <class F>
struct Iq1Kernel {
  static constexpr int kBlockElems = 256, kBlockBytes = F::kBytes, kActBlockBytes = 292;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 1, kTileRows = 2, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m256 (&acc)[R][C]) {
    STRATA_UNROLL for (int r = 0; r < R; ++r) {
      const uint8_t* x = w + r * ws;
      __m256i sumi[C];
      STRATA_UNROLL for (int c = 0; c < C; ++c) sumi[c] = _mm256_setzero_si256();
      alignas(32) int16_t scales[16];  // per 16 elements, for the offset below
      for (int ib = 0; ib < 8; ++ib) {
        int ls1, ls2;
        const __m256i u = F::Codes32(x, ib, &ls1, &ls2);
        scales[2 * ib] = static_cast<int16_t>(ls1);
        scales[2 * ib + 1] = static_cast<int16_t>(ls2);
        const __m256i s = ScalePer16(ls1, ls2);
        STRATA_UNROLL for (int c = 0; c < C; ++c)
          sumi[c] = MulAddI16(sumi[c], MulPairsU8S8(u, LoadU256(ActQ(a + c * as) + 32 * ib)), s);
      }
      const __m256i scales16 = _mm256_load_si256(reinterpret_cast<const __m256i*>(scales));
      const float d = F::Scale(x) * 0.125f;
      STRATA_UNROLL for (int c = 0; c < C; ++c) {
        const uint8_t* ac = a + c * as;
        const __m256i offset = _mm256_mullo_epi32(_mm256_madd_epi16(scales16, ActBsums(ac)), _mm256_set1_epi32(9));
        acc[r][c] = FinishGrid(acc[r][c], _mm256_sub_epi32(sumi[c], offset), d * ActD(ac));
      }
    }
  }
};

// IQ1_S: d, qs[32] (index low bytes), qh u16[8]: per 32 elements 4 x 3 index
// bits, a 3-bit scale (2s + 1) at bit 12 and the delta sign at bit 15.
struct Iq1SFormat {
  static constexpr int kBytes = 50;
  static float Scale(const uint8_t* x) { return LoadHalf(x); }
  static __m256i Codes32(const uint8_t* x, int ib, int* ls1, int* ls2) {
    const uint32_t qh = LoadU16(x + 34 + 2 * ib);
    const __m128i low = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(LoadU32(x + 2 + 4 * ib))));
    const __m128i high = _mm_slli_epi32(
        _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(static_cast<int>(qh)), _mm_setr_epi32(0, 3, 6, 9)),
                      _mm_set1_epi32(7)),
        8);
    *ls1 = *ls2 = static_cast<int>(2 * ((qh >> 12) & 7) + 1);
    const uint32_t delta_bits = (qh & 0x8000) ? 0x08080808u : 0u;
    return Iq1Codes(_mm_or_si128(low, high), delta_bits);
  }
};

// IQ1_M: qs[32], qh[16] (per 8 elements: 3 index bits and the delta sign at
// bit 3), scales[8] as four u16 holding 3-bit scales (per 16 elements) and, in
// their top nibbles, the block's half scale.
struct Iq1MFormat {
  static constexpr int kBytes = 56;
  static float Scale(const uint8_t* x) {
    const uint64_t sc = LoadU32(x + 48) | static_cast<uint64_t>(LoadU32(x + 52)) << 32;
    const auto bits = static_cast<uint16_t>(((sc >> 12) & 0x000F) | ((sc >> 24) & 0x00F0) | ((sc >> 36) & 0x0F00) |
                                            ((sc >> 48) & 0xF000));
    return _cvtsh_ss(bits);
  }
  static __m256i Codes32(const uint8_t* x, int ib, int* ls1, int* ls2) {
    const uint32_t h = LoadU16(x + 32 + 2 * ib);  // qh[2ib], qh[2ib + 1]
    const __m128i low = _mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(LoadU32(x + 4 * ib))));
    // Group l's nibble of h: index bits 0-2 and the delta sign at bit 3.
    const __m128i nibbles =
        _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32(static_cast<int>(h)), _mm_setr_epi32(0, 4, 8, 12)), _mm_set1_epi32(15));
    const __m128i high = _mm_slli_epi32(_mm_and_si128(nibbles, _mm_set1_epi32(7)), 8);
    // Nibble l (its bit 3: the delta sign) to byte l.
    const uint32_t delta_bits = (h & 0x8u) | ((h >> 4) & 0x8u) << 8 | ((h >> 8) & 0x8u) << 16 | ((h >> 12) & 0x8u) << 24;
    const uint32_t sc = LoadU16(x + 48 + 2 * (ib / 2));
    const int shift = 6 * (ib % 2);
    *ls1 = static_cast<int>(2 * ((sc >> shift) & 7) + 1);
    *ls2 = static_cast<int>(2 * ((sc >> (shift + 3)) & 7) + 1);
    return Iq1Codes(_mm_or_si128(low, high), delta_bits);
  }
};

}  // namespace
}  // namespace strata::kernels::STRATA_KERNEL_NS
