#pragma once
// 512-bit kernels for the AVX-512 level: Q4_K, Q5_K, Q6_K and Q8_0, the types
// of the Q4_K_M and Q8_0 models, and the 32-element types that decode to
// int8 values (Q4_0, Q5_0, IQ4_NL, MXFP4: Q5_0 is the down projections of
// GLM-4.5's Q4_K_M files, MXFP4 gpt-oss's experts), whose products are
// compute-bound once a weight block is reused for several columns.
//
// Same arithmetic as the 256-bit kernels (x86_kquant_kernels.h,
// x86_legacy_kernels.h), with 64 elements per vector: the integer sums are
// identical, only the lanes they are summed in differ. On the development
// machine a zmm vpdpbusd retires 64 products at ~1.7x the rate of two ymm
// ones, and each 64 elements need half the loads, shifts and shuffles.
// Include only from *_avx512.cc, after the 256-bit kernel headers.

#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VNNI__)
#error "x86_zmm_kernels.h needs the AVX-512 flags"
#endif

#include "runtime/kernels/x86_kquant_kernels.h"
#include "runtime/kernels/x86_legacy_kernels.h"

namespace strata::kernels::STRATA_KERNEL_NS {
namespace {

inline __m512i Set1I8x64(int v) { return _mm512_set1_epi8(static_cast<char>(v)); }
// The upper 16 of 32 int16 lanes (the upper 256 bits).
constexpr __mmask32 kUpperWords = 0xFFFF0000u;

// Int16 lanes 0-15 set to int16 `kLo` of `scales`, lanes 16-31 to `kHi`.
template <int kLo, int kHi>
inline __m512i ScalePair512(__m512i scales) {
  return _mm512_permutexvar_epi16(
      _mm512_set_epi16(kHi, kHi, kHi, kHi, kHi, kHi, kHi, kHi, kHi, kHi, kHi, kHi, kHi, kHi, kHi, kHi, kLo, kLo, kLo,
                       kLo, kLo, kLo, kLo, kLo, kLo, kLo, kLo, kLo, kLo, kLo, kLo, kLo),
      scales);
}
// Int16 lanes 8q .. 8q + 7 set to int16 `kFirst + q` of `scales` (q = 0..3).
template <int kFirst>
inline __m512i ScaleQuad512(__m512i scales) {
  constexpr short a = kFirst, b = kFirst + 1, c = kFirst + 2, d = kFirst + 3;
  return _mm512_permutexvar_epi16(_mm512_set_epi16(d, d, d, d, d, d, d, d, c, c, c, c, c, c, c, c, b, b, b, b, b, b,
                                                   b, b, a, a, a, a, a, a, a, a),
                                  scales);
}

// Bit kBit of every byte moved to bit kTo, others cleared (see MoveBit).
template <int kBit, int kTo>
inline __m512i MoveBit512(__m512i v) {
  __m512i s;
  if constexpr (kBit > kTo) {
    s = _mm512_srli_epi16(v, kBit - kTo);
  } else if constexpr (kBit < kTo) {
    s = _mm512_slli_epi16(v, kTo - kBit);
  } else {
    s = v;
  }
  return _mm512_and_si512(s, Set1I8x64(1 << kTo));
}

// Q4_K / Q5_K, 64 elements per vector: the 32 code bytes of sub-blocks 2j
// and 2j + 1 broadcast to both halves; the low half keeps the low nibbles
// (sub-block 2j), the high half the high nibbles (2j + 1).
//
// Summed in the order of the panel kernels (x86_panel_kernels.h), which take
// these types' products from 8 columns on, so that a column's bits do not
// depend on how many columns its product has (a prompt in chunks or whole, an
// expert meeting 3 tokens or 30): per block, each row's 16 integer lanes are
// folded into the panel's 4 (lane j: elements 16i + 4j .. 16i + 4j + 3 of
// every 16; integer sums, exact in any order), converted and accumulated in
// 4 float lanes, the row walked in pieces of the panel's 8 blocks. Folding
// costs 4 operations per row and block.
template <bool kFifthBit>
struct Q45KKernelZmm {
  static __m128 AccZero() { return _mm_setzero_ps(); }
  static constexpr int64_t kPieceBlocks = 8;
  static constexpr int kBlockElems = 256, kBlockBytes = kFifthBit ? 176 : 144, kActBlockBytes = 292;
  static constexpr int kQs = kFifthBit ? 48 : 16;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 2, kTileRows = 2, kTileCols = 4;

  // Row x's integer sums against C columns: sumi[c] holds, in lane L, the
  // products of elements 4L .. 4L + 3 of every 64 times their sub-block's
  // scale; *packed_mins the row's 8 six-bit mins.
  template <int C>
  static void RowSums(const uint8_t* x, const uint8_t* a, uint64_t as, __m512i (&sumi)[C], uint64_t* packed_mins) {
    uint64_t packed_scales;
    UnpackScalesMinsQ4K(x + 4, &packed_scales, packed_mins);
    const __m512i scales =
        _mm512_zextsi128_si512(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(packed_scales))));
    // Q5_K: qh in both halves, the high half shifted right by one so that
    // bit 2j of every byte is the fifth bit for either half (the bit the
    // 16-bit shift carries into bit 7 is never used).
    __m512i high_bits = _mm512_setzero_si512();
    if constexpr (kFifthBit) {
      const __m512i hb = _mm512_broadcast_i64x4(LoadU256(x + 16));
      high_bits = _mm512_mask_srli_epi16(hb, kUpperWords, hb, 1);
    }
    STRATA_UNROLL for (int c = 0; c < C; ++c) sumi[c] = _mm512_setzero_si512();
    Unroll<4>([&](auto j_const) {
      constexpr int j = decltype(j_const)::value;
      const __m512i q = _mm512_broadcast_i64x4(LoadU256(x + kQs + 32 * j));
      __m512i codes = _mm512_and_si512(_mm512_mask_srli_epi16(q, kUpperWords, q, 4), Set1I8x64(0x0F));
      if constexpr (kFifthBit) codes = _mm512_or_si512(codes, MoveBit512<2 * j, 4>(high_bits));
      const __m512i s = ScalePair512<2 * j, 2 * j + 1>(scales);
      STRATA_UNROLL for (int c = 0; c < C; ++c) {
        const __m512i qa = _mm512_loadu_si512(ActQ(a + c * as) + 64 * j);
        sumi[c] = _mm512_dpwssd_epi32(sumi[c], _mm512_maddubs_epi16(codes, qa), s);
      }
    });
  }

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m128 (&acc)[R][C]) {
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
      __m512i sumi[C];
      uint64_t packed_mins;
      RowSums<C>(x, a, as, sumi, &packed_mins);
      const __m128i mins = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(packed_mins)));
      const float d = LoadHalf(x), dmin = LoadHalf(x + 2);
      STRATA_UNROLL for (int c = 0; c < C; ++c) {
        const __m128 m = _mm_cvtepi32_ps(_mm_madd_epi16(mins, asum[c]));  // 4 lanes of min * sum
        // Lane L holds elements 4L .. 4L + 3 (mod 32) of a sub-block: lanes
        // L, L + 4, L + 8, L + 12 are the panel's lane L.
        const __m256i half = _mm256_add_epi32(_mm512_castsi512_si256(sumi[c]), _mm512_extracti64x4_epi64(sumi[c], 1));
        const __m128i quad = _mm_add_epi32(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
        acc[r][c] = _mm_fmadd_ps(_mm_cvtepi32_ps(quad), _mm_set1_ps(d * ad[c]), acc[r][c]);
        acc[r][c] = _mm_fnmadd_ps(m, _mm_set1_ps(dmin * ad[c]), acc[r][c]);
      }
    }
  }

  // Decode (GroupTile): four rows, one column. Block<4, 1>'s float operations
  // lane for lane, with row r's 4 lanes in lanes 4r .. 4r + 3 of one vector:
  // one fold, conversion and multiply-add pair for the four rows instead of
  // one per row, and their d, dmin and mins gathered into vectors.
  static constexpr int kGroupRows = 4;
  static __m512 GroupZero() { return _mm512_setzero_ps(); }
  static void GroupBlock(const uint8_t* w, uint64_t ws, const uint8_t* a, __m512& acc) {
    const __m256i bs = ActBsums(a);
    const __m512i asum =
        _mm512_broadcast_i32x4(_mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1)));
    __m512i sumi[4][1];
    uint64_t mins[4];
    int dmins[4];  // d and dmin (halves) of each row
    STRATA_UNROLL for (int r = 0; r < 4; ++r) {
      RowSums<1>(w + r * ws, a, 0, sumi[r], &mins[r]);
      dmins[r] = static_cast<int>(LoadU32(w + r * ws));
    }
    // Each row's 128-bit quarters summed (Block's fold; integers, exact in any
    // order): rows 0|1 and 2|3 first add their halves, then quarter pairs.
    const __m512i s01 = _mm512_add_epi32(_mm512_shuffle_i64x2(sumi[0][0], sumi[1][0], 0x44),
                                         _mm512_shuffle_i64x2(sumi[0][0], sumi[1][0], 0xEE));
    const __m512i s23 = _mm512_add_epi32(_mm512_shuffle_i64x2(sumi[2][0], sumi[3][0], 0x44),
                                         _mm512_shuffle_i64x2(sumi[2][0], sumi[3][0], 0xEE));
    const __m512i quads = _mm512_add_epi32(_mm512_shuffle_i64x2(s01, s23, 0x88), _mm512_shuffle_i64x2(s01, s23, 0xDD));
    // Row r's 8 mins in 128-bit lane r, times the column's sub-block sums.
    const __m512i mins16 = _mm512_cvtepu8_epi16(_mm256_set_epi64x(static_cast<int64_t>(mins[3]), static_cast<int64_t>(mins[2]),
                                                                  static_cast<int64_t>(mins[1]), static_cast<int64_t>(mins[0])));
    const __m512 m = _mm512_cvtepi32_ps(_mm512_madd_epi16(mins16, asum));
    // d0, dmin0, d1, dmin1, ... times the column's d (Block's d * ad), each
    // spread over its row's 4 lanes.
    const __m256 scaled = _mm256_mul_ps(_mm256_cvtph_ps(_mm_setr_epi32(dmins[0], dmins[1], dmins[2], dmins[3])),
                                        _mm256_set1_ps(ActD(a)));
    const __m512 s = _mm512_zextps256_ps512(scaled);
    const __m512 d = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6), s);
    const __m512 dmin = _mm512_permutexvar_ps(_mm512_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3, 5, 5, 5, 5, 7, 7, 7, 7), s);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(quads), d, acc);
    acc = _mm512_fnmadd_ps(m, dmin, acc);
  }
  // (maskz extracts, as HorizontalSum(__m512): GCC 12 warns that the plain
  // cast/extract read an "uninitialized" pass-through operand.)
  static void GroupSums(__m512 acc, float (&sums)[4]) {
    sums[0] = HorizontalSum(_mm512_maskz_extractf32x4_ps(0xF, acc, 0));
    sums[1] = HorizontalSum(_mm512_maskz_extractf32x4_ps(0xF, acc, 1));
    sums[2] = HorizontalSum(_mm512_maskz_extractf32x4_ps(0xF, acc, 2));
    sums[3] = HorizontalSum(_mm512_maskz_extractf32x4_ps(0xF, acc, 3));
  }
};

// Q6_K, 64 elements per vector: groups 0 and 1 (then 2 and 3) of a 128-element
// half, whose low 4 bits are the low (high) nibbles of the 64 ql bytes of
// the half and whose top 2 bits sit at different shifts of the same qh bytes.
struct Q6KKernelZmm {
  static __m512 AccZero() { return _mm512_setzero_ps(); }
  static constexpr int kBlockElems = 256, kBlockBytes = 210, kActBlockBytes = 292;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 2, kTileRows = 2, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m512 (&acc)[R][C]) {
    STRATA_UNROLL for (int r = 0; r < R; ++r) {
      const uint8_t* x = w + r * ws;
      const __m256i scales16 = _mm256_cvtepi8_epi16(LoadU128(x + 192));
      const __m512i scales = _mm512_zextsi256_si512(scales16);
      __m512i sumi[C];
      STRATA_UNROLL for (int c = 0; c < C; ++c) sumi[c] = _mm512_setzero_si512();
      Unroll<2>([&](auto h_const) {
        constexpr int h = decltype(h_const)::value;
        const __m512i low = _mm512_loadu_si512(x + 64 * h);                      // ql of groups 0|1
        const __m512i qh = _mm512_broadcast_i64x4(LoadU256(x + 128 + 32 * h));  // qh in both halves
        const __m512i low4 = Set1I8x64(0x0F), top2 = Set1I8x64(0x30);
        // Groups 0|1: top bits are qh bits 0-1 | 2-3, moved to bits 4-5.
        const __m512i g01 = _mm512_or_si512(
            _mm512_and_si512(low, low4),
            _mm512_and_si512(_mm512_mask_slli_epi16(_mm512_slli_epi16(qh, 4), kUpperWords, qh, 2), top2));
        // Groups 2|3: high nibbles; top bits are qh bits 4-5 | 6-7.
        const __m512i g23 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(low, 4), low4),
                                            _mm512_and_si512(_mm512_mask_srli_epi16(qh, kUpperWords, qh, 2), top2));
        const __m512i s01 = ScaleQuad512<8 * h>(scales), s23 = ScaleQuad512<8 * h + 4>(scales);
        STRATA_UNROLL for (int c = 0; c < C; ++c) {
          const uint8_t* qa = ActQ(a + c * as) + 128 * h;
          sumi[c] = _mm512_dpwssd_epi32(sumi[c], _mm512_maddubs_epi16(g01, _mm512_loadu_si512(qa)), s01);
          sumi[c] = _mm512_dpwssd_epi32(sumi[c], _mm512_maddubs_epi16(g23, _mm512_loadu_si512(qa + 64)), s23);
        }
      });
      // The -32 offset: subtract 32 * sum_k scales[k] * bsums[k].
      const float d = LoadHalf(x + 208);
      STRATA_UNROLL for (int c = 0; c < C; ++c) {
        const uint8_t* ac = a + c * as;
        const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(scales16, ActBsums(ac)), 5);
        acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(sumi[c], _mm512_zextsi256_si512(offset))),
                                    _mm512_set1_ps(d * ActD(ac)), acc[r][c]);
      }
    }
  }
};

// The F16 scales at p0 and p1 as a float vector: lanes 0-7 the first, 8-15 the second.
inline __m512 HalfPairAt(const uint8_t* p0, const uint8_t* p1) {
  const __m128i h = _mm_insert_epi16(_mm_cvtsi32_si128(LoadU16(p0)), LoadU16(p1), 1);
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                               _mm512_zextps128_ps512(_mm_cvtph_ps(h)));
}

// Two consecutive halves (blocks at p and p + 34) as a float vector: lanes
// 0-7 the first, 8-15 the second.
inline __m512 HalfPair(const uint8_t* p) { return HalfPairAt(p, p + 34); }
// The 32 quants of the Q8_0 blocks at p0 and p1, of those at p and p + 34.
inline __m512i QuantPairAt(const uint8_t* p0, const uint8_t* p1) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(LoadU256(p0 + 2)), LoadU256(p1 + 2), 1);
}
inline __m512i QuantPair(const uint8_t* p) { return QuantPairAt(p, p + 34); }

// Weight blocks of 32 elements whose values are small signed integers times
// one float scale per block: Q8_0 as stored, and Q4_0, Q5_0, IQ4_NL and
// MXFP4 from their 4-bit codes (the NibbleKernel formats). They share the
// 512-bit kernel below and the panels of x86_panel_kernels.h. A V gives, for
// two blocks at x0 and x1 (consecutive blocks of a row in the kernel, one
// block of two rows in a panel), their 64 values + 128 as unsigned bytes
// (UnsignedPair: vpdpbusd's unsigned operand), the same as signed bytes
// (SignedPair) and their scales, lanes 0-7 and 8-15 (ScalePair).
struct Q8_0Values {
  static constexpr int kBytes = 34;
  static constexpr bool kHalfScale = true;
  using Kernel256 = Q8_0Kernel;  // a row's odd last block
  static __m512i SignedPair(const uint8_t* x0, const uint8_t* x1) { return QuantPairAt(x0, x1); }
  static __m512i UnsignedPair(const uint8_t* x0, const uint8_t* x1) {
    return _mm512_xor_si512(SignedPair(x0, x1), Set1I8x64(0x80));
  }
  static float Scale(const uint8_t* x) { return LoadHalf(x); }
};

// 16 code bytes per block (low nibble: element j, high: j + 16), decoded two
// blocks per vector: 128-bit lanes A, A >> 4, B, B >> 4 masked to nibbles
// (a permute and a masked shift), Q5_0's fifth bits added under a byte mask
// made of the two 32-bit qh words, then the table (values + 128) or the
// code's offset moved to 128.
template <class F>
struct NibbleValues {
  static constexpr int kBytes = F::kBytes;
  static constexpr bool kHalfScale = F::kHalfScale;
  using Kernel256 = NibbleKernel<F>;
  static __m512i UnsignedPair(const uint8_t* x0, const uint8_t* x1) {
    const __m512i ab = _mm512_zextsi256_si512(_mm256_set_m128i(LoadU128(x1 + F::kQs), LoadU128(x0 + F::kQs)));
    const __m512i aabb = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3), ab);
    __m512i codes = _mm512_and_si512(_mm512_mask_srli_epi16(aabb, 0xFF00FF00u, aabb, 4), Set1I8x64(0x0F));
    if constexpr (F::kQh >= 0) {
      const __mmask64 fifth = _cvtu64_mask64(LoadU32(x0 + F::kQh) | (uint64_t{LoadU32(x1 + F::kQh)} << 32));
      codes = _mm512_mask_add_epi8(codes, fifth, codes, Set1I8x64(0x10));
    }
    if constexpr (F::kLut != nullptr) {
      return _mm512_shuffle_epi8(_mm512_broadcast_i32x4(LoadU128(kUnsignedLut.v)), codes);
    } else {
      return _mm512_add_epi8(codes, Set1I8x64(128 - F::kOffset));
    }
  }
  static __m512i SignedPair(const uint8_t* x0, const uint8_t* x1) {
    return _mm512_xor_si512(UnsignedPair(x0, x1), Set1I8x64(0x80));
  }
  static float Scale(const uint8_t* x) { return F::Scale(x); }

 private:
  // The table's values + 128 (F::kLut holds value + F::kOffset).
  static constexpr Lut16 MakeUnsignedLut() {
    Lut16 t{};
    if constexpr (F::kLut != nullptr)
      for (int i = 0; i < 16; ++i) t.v[i] = static_cast<int8_t>(F::kLut->v[i] - F::kOffset + 128);
    return t;
  }
  static constexpr Lut16 kUnsignedLut = MakeUnsignedLut();
};
// The scales of the blocks at x0 and x1: lanes 0-7 and 8-15.
template <class V>
inline __m512 ScalePair(const uint8_t* x0, const uint8_t* x1) {
  if constexpr (V::kHalfScale) {
    return HalfPairAt(x0, x1);
  } else {
    return _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(V::Scale(x0)), _mm512_set1_ps(V::Scale(x1)));
  }
}

// Such blocks (V: Q8_0Values, NibbleValues<F>), two (64 elements) per
// vector. The signed weights enter as unsigned w + 128 (vpdpbusd is u8 x
// s8), and 128 * sum(a) is subtracted; both scales come as per-half
// vectors, so a block pair costs one multiply of scale vectors. A row of an
// odd number of blocks ends with the 256-bit kernel.
//
// Summed in the order of the panels (x86_panel_kernels.h, from 8 columns
// on), so that a column's bits do not depend on the product's column count:
// per block, lanes L and L + 4 (elements 4L .. 4L + 3 and 16 + 4L ..) are
// added (integers, exact) into the panel's 4 lanes, converted and
// accumulated in lanes 0-3 (even blocks) and 8-11 (odd blocks), the other
// lanes kept at zero; the row walked in the panels' pieces of 2,048 elements.
template <class V>
struct Int8BlockKernelZmm {
  static __m512 AccZero() { return _mm512_setzero_ps(); }
  static constexpr int64_t kPieceBlocks = 32;  // pairs
  static constexpr int kBlockElems = 64, kBlockBytes = 2 * V::kBytes, kActBlockBytes = 68;
  static constexpr bool kHasTail = true;
  static constexpr int kMatVecRows = 4, kTileRows = 4, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m512 (&acc)[R][C]) {
    __m512i aq[C], offset[C];
    __m512 ad[C];
    STRATA_UNROLL for (int c = 0; c < C; ++c) {
      aq[c] = QuantPair(a + c * as);
      ad[c] = HalfPair(a + c * as);
      offset[c] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), Set1I8x64(0x80), aq[c]);  // 128 * sums
    }
    STRATA_UNROLL for (int r = 0; r < R; ++r) {
      const uint8_t* x = w + r * ws;
      const __m512i u = V::UnsignedPair(x, x + V::kBytes);  // w + 128
      const __m512 wd = ScalePair<V>(x, x + V::kBytes);
      STRATA_UNROLL for (int c = 0; c < C; ++c) {
        const __m512i dot = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), u, aq[c]), offset[c]);
        const __m512i folded = _mm512_add_epi32(dot, _mm512_shuffle_i32x4(dot, dot, _MM_SHUFFLE(2, 3, 0, 1)));
        acc[r][c] = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(folded), _mm512_mul_ps(wd, ad[c]), acc[r][c], 0x0F0F);
      }
    }
  }

  template <int R, int C>
  static void Tail(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, int64_t k0, int64_t k,
                   float (&out)[R][C]) {
    for (int64_t e = k0; e < k; e += 32) {
      __m256 tail[R][C];
      STRATA_UNROLL for (int r = 0; r < R; ++r) {
        STRATA_UNROLL for (int c = 0; c < C; ++c) tail[r][c] = _mm256_setzero_ps();
      }
      V::Kernel256::template Block<R, C>(w + e / 32 * V::kBytes, ws, a + e / 32 * 34, as, tail);
      STRATA_UNROLL for (int r = 0; r < R; ++r) {
        STRATA_UNROLL for (int c = 0; c < C; ++c) out[r][c] += HorizontalSum(tail[r][c]);
      }
    }
  }
};
using Q8_0KernelZmm = Int8BlockKernelZmm<Q8_0Values>;

}  // namespace
}  // namespace strata::kernels::STRATA_KERNEL_NS
