#pragma once
// K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) against Q8_K activations (float d,
// int8 q[256], int16 bsums[16] = sums of 16 consecutive q).
//
// Per super-block of 256, every kernel forms
//   sum over sub-blocks j of scale_j * (integer dot of sub-block j)
// in int32 lanes, with the scales applied by an int16 multiply-add
// (pmaddwd / vpdpwssd) right after the u8 x s8 pair products (pmaddubsw), and
// then adds float(lanes) * (d_weight * d_activation) into the float lanes.
// Weight codes enter unsigned (0..63); a constant offset of the format (Q3_K
// -4, Q6_K -32) or the per-sub-block minimum (Q2_K, Q4_K, Q5_K) is applied
// through the activation bsums, as ggml does. All integer sums are exact.
//
// Element addressing (docs/quant-types.md): Q2_K/Q3_K 2-bit planes hold
// element 128h + 32g + l at bits 2g of qs[32h + l]; Q4_K/Q5_K hold element
// 64j + l in the low nibble and 64j + 32 + l in the high nibble of
// qs[32j + l]; Q6_K as described at Q6KKernel.
// Include only from *_avx2.cc / *_avx512.cc (see x86_simd.h).

#include "runtime/kernels/x86_gemm_driver.h"

namespace strata::kernels::STRATA_KERNEL_NS {
namespace {

// Q8_K activation column c of the tile: d at 0, quants at 4, bsums at 260.
inline float ActD(const uint8_t* a) { return LoadFloat(a); }
inline const uint8_t* ActQ(const uint8_t* a) { return a + 4; }
inline __m256i ActBsums(const uint8_t* a) { return LoadU256(a + 260); }

// Adds sumi * (dw * da) - mins * (dmin * da) into acc.
inline __m256 FinishBlock(__m256 acc, __m256i sumi, float dw_da, __m256i mins, float dmin_da) {
  acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_set1_ps(dw_da), acc);
  return _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), _mm256_set1_ps(dmin_da), acc);
}

// The 8 six-bit scales and 8 six-bit mins of Q4_K/Q5_K (12 packed bytes):
// k < 4 in the low 6 bits of bytes k (scale) and k + 4 (min); k >= 4 in the
// nibbles of byte k + 4 plus the top 2 bits of bytes k - 4 (scale) and k (min).
// Returns them as 8 uint8 in a 64-bit integer each.
inline void UnpackScalesMinsQ4K(const uint8_t* p, uint64_t* scales, uint64_t* mins) {
  const uint32_t b0 = LoadU32(p), b4 = LoadU32(p + 4), b8 = LoadU32(p + 8);
  const uint32_t s_lo = b0 & 0x3F3F3F3Fu;
  const uint32_t s_hi = (b8 & 0x0F0F0F0Fu) | (((b0 >> 6) & 0x03030303u) << 4);
  const uint32_t m_lo = b4 & 0x3F3F3F3Fu;
  const uint32_t m_hi = ((b8 >> 4) & 0x0F0F0F0Fu) | (((b4 >> 6) & 0x03030303u) << 4);
  *scales = (static_cast<uint64_t>(s_hi) << 32) | s_lo;
  *mins = (static_cast<uint64_t>(m_hi) << 32) | m_lo;
}

// Q4_K (kFifthBit = false) and Q5_K (true). Block layout: d, dmin (halves),
// 12 bytes of scales/mins, [Q5_K: qh[32]], qs[128].
template <bool kFifthBit>
struct Q45KKernel {
  static constexpr int kBlockElems = 256, kBlockBytes = kFifthBit ? 176 : 144, kActBlockBytes = 292;
  static constexpr int kQs = kFifthBit ? 48 : 16;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 2, kTileRows = 2, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m256 (&acc)[R][C]) {
    float ad[C];
    __m128i asum[C];  // 8 int16: activation sums of each 32-element sub-block
    STRATA_UNROLL for (int c = 0; c < C; ++c) {
      const uint8_t* ac = a + c * as;
      ad[c] = ActD(ac);
      const __m256i bs = ActBsums(ac);
      asum[c] = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
    }
    STRATA_UNROLL for (int r = 0; r < R; ++r) {
      const uint8_t* x = w + r * ws;
      uint64_t packed_scales, packed_mins;
      UnpackScalesMinsQ4K(x + 4, &packed_scales, &packed_mins);
      const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(packed_scales))));
      const __m128i mins = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(packed_mins)));
      __m256i high_bits = _mm256_setzero_si256();
      if constexpr (kFifthBit) high_bits = LoadU256(x + 16);
      __m256i sumi[C];
      STRATA_UNROLL for (int c = 0; c < C; ++c) sumi[c] = _mm256_setzero_si256();
      Unroll<4>([&](auto j_const) {  // 64 elements: sub-blocks 2j (low nibbles) and 2j + 1 (high)
        constexpr int j = decltype(j_const)::value;
        const __m256i q = LoadU256(x + kQs + 32 * j);
        __m256i lo = _mm256_and_si256(q, Set1I8(0x0F));
        __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), Set1I8(0x0F));
        if constexpr (kFifthBit) {  // bit 2j (2j + 1) of qh[l] is bit 4 of element 64j + l (+ 32)
          lo = _mm256_or_si256(lo, MoveBit<2 * j, 4>(high_bits));
          hi = _mm256_or_si256(hi, MoveBit<2 * j + 1, 4>(high_bits));
        }
        const __m256i s_lo = ScaleForChunk<2 * j>(scales), s_hi = ScaleForChunk<2 * j + 1>(scales);
        STRATA_UNROLL for (int c = 0; c < C; ++c) {
          const uint8_t* qa = ActQ(a + c * as) + 64 * j;
          sumi[c] = MulAddI16(sumi[c], MulPairsU8S8(lo, LoadU256(qa)), s_lo);
          sumi[c] = MulAddI16(sumi[c], MulPairsU8S8(hi, LoadU256(qa + 32)), s_hi);
        }
      });
      const float d = LoadHalf(x), dmin = LoadHalf(x + 2);
      STRATA_UNROLL for (int c = 0; c < C; ++c) {
        const __m256i m = _mm256_zextsi128_si256(_mm_madd_epi16(mins, asum[c]));  // 4 lanes of min * sum
        acc[r][c] = FinishBlock(acc[r][c], sumi[c], d * ad[c], m, dmin * ad[c]);
      }
    }
  }
};
using Q4KKernel = Q45KKernel<false>;
using Q5KKernel = Q45KKernel<true>;

// Q6_K: ql[128], qh[64], int8 scales[16], half d. Per half h (128 elements)
// and group g (32): the low 4 bits of element 128h + 32g + l are nibble
// (g >= 2) of ql[64h + 32(g % 2) + l], the top 2 bits are bits 2g of
// qh[32h + l]; value (code - 32) * d * scales[(128h + 32g + l) / 16].
struct Q6KKernel {
  static constexpr int kBlockElems = 256, kBlockBytes = 210, kActBlockBytes = 292;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 2, kTileRows = 2, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m256 (&acc)[R][C]) {
    STRATA_UNROLL for (int r = 0; r < R; ++r) {
      const uint8_t* x = w + r * ws;
      const auto* scale_bytes = reinterpret_cast<const int8_t*>(x + 192);
      __m256i sumi[C];
      STRATA_UNROLL for (int c = 0; c < C; ++c) sumi[c] = _mm256_setzero_si256();
      Unroll<2>([&](auto h_const) {
        constexpr int h = decltype(h_const)::value;
        const __m256i scales = BroadcastScalesI8(scale_bytes + 8 * h);
        const __m256i l0 = LoadU256(x + 64 * h), l1 = LoadU256(x + 64 * h + 32);
        const __m256i qh = LoadU256(x + 128 + 32 * h);
        const __m256i low4 = Set1I8(0x0F), top2 = Set1I8(0x30);
        const __m256i codes[4] = {
            _mm256_or_si256(_mm256_and_si256(l0, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), top2)),
            _mm256_or_si256(_mm256_and_si256(l1, low4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), top2)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), low4), _mm256_and_si256(qh, top2)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), low4),
                            _mm256_and_si256(_mm256_srli_epi16(qh, 2), top2)),
        };
        Unroll<4>([&](auto g_const) {
          constexpr int g = decltype(g_const)::value;
          const __m256i s = ScalePairForChunk<2 * g>(scales);
          STRATA_UNROLL for (int c = 0; c < C; ++c) {
            const __m256i qa = LoadU256(ActQ(a + c * as) + 128 * h + 32 * g);
            sumi[c] = MulAddI16(sumi[c], MulPairsU8S8(codes[g], qa), s);
          }
        });
      });
      // The -32 offset: subtract 32 * sum_k scales[k] * bsums[k].
      const __m256i scales16 = _mm256_cvtepi8_epi16(LoadU128(x + 192));
      const float d = LoadHalf(x + 208);
      STRATA_UNROLL for (int c = 0; c < C; ++c) {
        const uint8_t* ac = a + c * as;
        const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(scales16, ActBsums(ac)), 5);
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(sumi[c], offset)),
                                    _mm256_set1_ps(d * ActD(ac)), acc[r][c]);
      }
    }
  }
};

// The 16 six-bit Q3_K scales minus 32, as 16 int8 in a register: the low 4
// bits are the low nibble of byte k (k < 8) or the high nibble of byte k - 8;
// the top 2 bits are bits 2(k / 4) of byte 8 + k % 4. (Built in registers:
// a detour through a stack array costs a store-forwarding stall per block.)
inline __m128i UnpackScalesQ3K(const uint8_t* p) {
  const uint32_t b0 = LoadU32(p), b4 = LoadU32(p + 4), b8 = LoadU32(p + 8);
  const __m128i v = _mm_setr_epi32(
      static_cast<int>((b0 & 0x0F0F0F0Fu) | ((b8 & 0x03030303u) << 4)),
      static_cast<int>((b4 & 0x0F0F0F0Fu) | (((b8 >> 2) & 0x03030303u) << 4)),
      static_cast<int>(((b0 >> 4) & 0x0F0F0F0Fu) | (((b8 >> 4) & 0x03030303u) << 4)),
      static_cast<int>(((b4 >> 4) & 0x0F0F0F0Fu) | (((b8 >> 6) & 0x03030303u) << 4)));
  return _mm_sub_epi8(v, _mm_set1_epi8(32));
}

// Q2_K (kHighBit = false: scales[16] (low nibble scale, high nibble min),
// qs[64], d, dmin) and Q3_K (true: hmask[32], qs[64], scales[12], d). Both
// have 2-bit planes; Q3_K adds a third bit from hmask (value = code - 4 when
// the bit is clear: code + 4 * bit - 4).
template <bool kHighBit>
struct Q23KKernel {
  static constexpr int kBlockElems = 256, kBlockBytes = kHighBit ? 110 : 84, kActBlockBytes = 292;
  static constexpr int kQs = kHighBit ? 32 : 16;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 2, kTileRows = 2, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m256 (&acc)[R][C]) {
    STRATA_UNROLL for (int r = 0; r < R; ++r) {
      const uint8_t* x = w + r * ws;
      // 16 int8 scales, one per 16 elements.
      __m128i scales;
      __m256i high_bits = _mm256_setzero_si256();
      if constexpr (kHighBit) {
        scales = UnpackScalesQ3K(x + 96);
        high_bits = LoadU256(x);
      } else {
        scales = _mm_and_si128(LoadU128(x), _mm_set1_epi8(0x0F));
      }
      __m256i sumi[C];
      STRATA_UNROLL for (int c = 0; c < C; ++c) sumi[c] = _mm256_setzero_si256();
      Unroll<2>([&](auto h_const) {
        constexpr int h = decltype(h_const)::value;
        // Scales 8h .. 8h + 7 as int16, in both halves.
        const __m256i sc = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(h == 0 ? scales : _mm_srli_si128(scales, 8)));
        const __m256i q2 = LoadU256(x + kQs + 32 * h);
        Unroll<4>([&](auto g_const) {
          constexpr int g = decltype(g_const)::value;
          __m256i code = _mm256_and_si256(_mm256_srli_epi16(q2, 2 * g), Set1I8(3));
          if constexpr (kHighBit) code = _mm256_or_si256(code, MoveBit<4 * h + g, 2>(high_bits));
          const __m256i s = ScalePairForChunk<2 * g>(sc);
          STRATA_UNROLL for (int c = 0; c < C; ++c) {
            const __m256i qa = LoadU256(ActQ(a + c * as) + 128 * h + 32 * g);
            sumi[c] = MulAddI16(sumi[c], MulPairsU8S8(code, qa), s);
          }
        });
      });
      if constexpr (kHighBit) {
        // Offset -4: subtract 4 * sum_k scale_k * bsums_k.
        const __m256i scales16 = _mm256_cvtepi8_epi16(scales);
        const float d = LoadHalf(x + 108);
        STRATA_UNROLL for (int c = 0; c < C; ++c) {
          const uint8_t* ac = a + c * as;
          const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(scales16, ActBsums(ac)), 2);
          acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(sumi[c], offset)),
                                      _mm256_set1_ps(d * ActD(ac)), acc[r][c]);
        }
      } else {
        // Minimum per 16: high nibbles of the scale bytes, times bsums.
        const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_srli_epi16(_mm_and_si128(LoadU128(x), _mm_set1_epi8(static_cast<char>(0xF0))), 4));
        const float d = LoadHalf(x + 80), dmin = LoadHalf(x + 82);
        STRATA_UNROLL for (int c = 0; c < C; ++c) {
          const uint8_t* ac = a + c * as;
          const __m256i m = _mm256_madd_epi16(mins16, ActBsums(ac));
          acc[r][c] = FinishBlock(acc[r][c], sumi[c], d * ActD(ac), m, dmin * ActD(ac));
        }
      }
    }
  }
};
using Q2KKernel = Q23KKernel<false>;
using Q3KKernel = Q23KKernel<true>;

// TQ2_0: qs[64], half d; element 128h + 32l + m is (qs[32h + m] >> 2l) & 3,
// value code - 1, so the dot is dot(code, q) - sum(q) (the bsums).
struct Tq2_0Kernel {
  static constexpr int kBlockElems = 256, kBlockBytes = 66, kActBlockBytes = 292;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 2, kTileRows = 2, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m256 (&acc)[R][C]) {
    __m256i asum[C];  // lanes summing to sum(q): pairs of bsums
    STRATA_UNROLL for (int c = 0; c < C; ++c) asum[c] = _mm256_madd_epi16(ActBsums(a + c * as), _mm256_set1_epi16(1));
    STRATA_UNROLL for (int r = 0; r < R; ++r) {
      const uint8_t* x = w + r * ws;
      __m256i sumi[C];
      STRATA_UNROLL for (int c = 0; c < C; ++c) sumi[c] = _mm256_sub_epi32(_mm256_setzero_si256(), asum[c]);
      Unroll<2>([&](auto h_const) {
        constexpr int h = decltype(h_const)::value;
        const __m256i q2 = LoadU256(x + 32 * h);
        Unroll<4>([&](auto l_const) {
          constexpr int l = decltype(l_const)::value;
          const __m256i code = _mm256_and_si256(_mm256_srli_epi16(q2, 2 * l), Set1I8(3));
          STRATA_UNROLL for (int c = 0; c < C; ++c)
            sumi[c] = DotU8S8(sumi[c], code, LoadU256(ActQ(a + c * as) + 128 * h + 32 * l));
        });
      });
      const float d = LoadHalf(x + 64);
      STRATA_UNROLL for (int c = 0; c < C; ++c)
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[c]), _mm256_set1_ps(d * ActD(a + c * as)), acc[r][c]);
    }
  }
};

}  // namespace
}  // namespace strata::kernels::STRATA_KERNEL_NS
