#pragma once
// Weights in 32/64/128-element blocks against Q8_0 activations (half d, int8
// q[32]): Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4, NVFP4, Q2_0, Q1_0; and Q4_1, Q5_1
// against Q8_1 (the same plus s = d * sum q).
//
// Per 32-element block: the 32 weight codes become 32 bytes (signed values,
// or unsigned codes value + offset whose offset * sum(a) is subtracted), the
// integer dot with the activation bytes is formed four products per int32
// lane, and the block adds float(lane sums) * (weight scale * activation
// scale) into float lanes. The integer part is exact, as in ggml's
// vec_dot_*_q8_0; only the float summation order differs.
// Include only from *_avx2.cc / *_avx512.cc (see x86_simd.h).

#include "runtime/kernels/kernel_tables.h"
#include "runtime/kernels/x86_gemm_driver.h"
#include "runtime/quant/iq_grids.h"

namespace strata::kernels::STRATA_KERNEL_NS {
namespace {

struct Lut16 {
  int8_t v[16];
};
// A value table plus `offset`, so that every entry is a small unsigned byte.
constexpr Lut16 MakeLut(const std::array<int8_t, 16>& values, int offset) {
  Lut16 t{};
  for (int i = 0; i < 16; ++i) t.v[i] = static_cast<int8_t>(values[i] + offset);
  return t;
}
constexpr Lut16 kLutIq4nl = MakeLut(kValuesIq4nl, 0);
constexpr Lut16 kLutFp4 = MakeLut(kValuesFp4, 0);
constexpr Lut16 kLutFp4Plus12 = MakeLut(kValuesFp4, 12);  // 0..24

// Rows per prefill tile: the activation blocks' loads, scales and sums are
// shared by the rows of a tile; 32 registers (AVX-512 build) hold 4 rows x 4
// columns, 16 (AVX2) hold 2 x 4.
constexpr int kWideTileRows = STRATA_KERNEL_VNNI ? 4 : 2;

inline __m256i BroadcastLut(const Lut16& lut) { return _mm256_broadcastsi128_si256(LoadU128(lut.v)); }

// Activation block c of the tile: its 32 quants, its scale and, for weights
// stored as unsigned codes u = value + offset, offset * (sums of 4 quants)
// per lane, which AccumulateUnsigned subtracts. Built once per block and
// shared by all rows of the tile.
template <int C>
struct Q8_0Columns {
  __m256i q[C];
  __m256i offset_sums[C];
  float d[C];
  Q8_0Columns(const uint8_t* a, uint64_t as, int offset = 0) {
    STRATA_UNROLL for (int c = 0; c < C; ++c) {
      q[c] = LoadU256(a + c * as + 2);
      d[c] = LoadHalf(a + c * as);
      offset_sums[c] = offset != 0 ? DotU8S8(_mm256_setzero_si256(), Set1I8(offset), q[c]) : _mm256_setzero_si256();
    }
  }
};

// acc[c] += float(dot(w, a_c)) * (scale * a_c.d) for signed weight bytes w.
template <int C>
inline void AccumulateSigned(__m256i w, float scale, const Q8_0Columns<C>& a, __m256 (&acc)[C]) {
  const __m256i w_abs = _mm256_sign_epi8(w, w);
  STRATA_UNROLL for (int c = 0; c < C; ++c) {
    const __m256i dot = DotU8S8(_mm256_setzero_si256(), w_abs, _mm256_sign_epi8(a.q[c], w));
    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(scale * a.d[c]), acc[c]);
  }
}

// The same for weights given as unsigned codes u = w + offset (u <= 128; the
// columns were built with that offset): dot(u, a) - offset * sum(a).
template <int C>
inline void AccumulateUnsigned(__m256i u, float scale, const Q8_0Columns<C>& a, __m256 (&acc)[C]) {
  STRATA_UNROLL for (int c = 0; c < C; ++c) {
    const __m256i dot = _mm256_sub_epi32(DotU8S8(_mm256_setzero_si256(), u, a.q[c]), a.offset_sums[c]);
    acc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(scale * a.d[c]), acc[c]);
  }
}

struct Q8_0Kernel {
  static constexpr int kBlockElems = 32, kBlockBytes = 34, kActBlockBytes = 34;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 4, kTileRows = kWideTileRows, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m256 (&acc)[R][C]) {
    const Q8_0Columns<C> cols(a, as);
    STRATA_UNROLL for (int r = 0; r < R; ++r) {
      const uint8_t* x = w + r * ws;
      AccumulateSigned<C>(LoadU256(x + 2), LoadHalf(x), cols, acc[r]);
    }
  }
};

// Blocks of 16 bytes of 4-bit codes (low nibble: element j, high: j + 16):
// Q4_0 (value = code - 8), Q5_0 (code plus bit j of a 32-bit qh as bit 4,
// minus 16), MXFP4 (table value, +12 to make it unsigned), IQ4_NL (table
// value up to +-127: signed). kQh < 0: no fifth bit.
struct Q4_0Format {
  static constexpr int kBytes = 18, kQs = 2, kQh = -1, kOffset = 8;
  static constexpr const Lut16* kLut = nullptr;  // the code is the unsigned value
  static constexpr bool kHalfScale = true;  // Scale: the block's F16 d
  static float Scale(const uint8_t* x) { return LoadHalf(x); }
};
struct Q5_0Format {
  static constexpr int kBytes = 22, kQs = 6, kQh = 2, kOffset = 16;
  static constexpr const Lut16* kLut = nullptr;
  static constexpr bool kHalfScale = true;  // Scale: the block's F16 d
  static float Scale(const uint8_t* x) { return LoadHalf(x); }
};
struct Mxfp4Format {  // E8M0 scale byte, halved because the table holds doubled E2M1 values
  static constexpr int kBytes = 17, kQs = 1, kQh = -1, kOffset = 12;
  static constexpr const Lut16* kLut = &kLutFp4Plus12;
  static constexpr bool kHalfScale = false;  // Scale: a table of the E8M0 byte
  static float Scale(const uint8_t* x) { return kE8M0HalfToFloat.v[x[0]]; }
};
struct Iq4NlFormat {
  static constexpr int kBytes = 18, kQs = 2, kQh = -1, kOffset = 0;  // 0: signed values, sign trick
  static constexpr const Lut16* kLut = &kLutIq4nl;
  static constexpr bool kHalfScale = true;  // Scale: the block's F16 d
  static float Scale(const uint8_t* x) { return LoadHalf(x); }
};

template <class F>
struct NibbleKernel {
  static constexpr int kBlockElems = 32, kBlockBytes = F::kBytes, kActBlockBytes = 34;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 4, kTileRows = kWideTileRows, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m256 (&acc)[R][C]) {
    const Q8_0Columns<C> cols(a, as, F::kOffset);
    __m256i lut = _mm256_setzero_si256();
    if constexpr (F::kLut != nullptr) lut = BroadcastLut(*F::kLut);
    STRATA_UNROLL for (int r = 0; r < R; ++r) {
      const uint8_t* x = w + r * ws;
      const __m128i q = LoadU128(x + F::kQs);
      // Low nibbles (elements 0-15) in the low half, high nibbles (16-31) in the high half.
      __m256i codes = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), Set1I8(0x0F));
      if constexpr (F::kLut != nullptr) codes = _mm256_shuffle_epi8(lut, codes);
      if constexpr (F::kQh >= 0)
        codes = _mm256_or_si256(codes, _mm256_and_si256(BitsToByteMask(LoadU32(x + F::kQh)), Set1I8(0x10)));
      if constexpr (F::kOffset != 0) {
        AccumulateUnsigned<C>(codes, F::Scale(x), cols, acc[r]);
      } else {
        AccumulateSigned<C>(codes, F::Scale(x), cols, acc[r]);
      }
    }
  }
};

// NVFP4: 64 elements, four 16-element sub-blocks with UE4M3 scales, two Q8_0
// activation blocks. Sub-block s: qs[8s + j] low nibble is element 16s + j,
// high nibble 16s + j + 8.
struct Nvfp4Kernel {
  static constexpr int kBlockElems = 64, kBlockBytes = 36, kActBlockBytes = 68;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 4, kTileRows = kWideTileRows, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m256 (&acc)[R][C]) {
    const __m256i lut = BroadcastLut(kLutFp4);
    STRATA_UNROLL for (int half = 0; half < 2; ++half) {  // 32 elements: sub-blocks 2*half, 2*half + 1
      const Q8_0Columns<C> cols(a + 34 * half, as);
      STRATA_UNROLL for (int r = 0; r < R; ++r) {
        const uint8_t* x = w + r * ws;
        const __m128i q = LoadU128(x + 4 + 16 * half);
        const __m128i lo = _mm_and_si128(q, _mm_set1_epi8(0x0F));
        const __m128i hi = _mm_and_si128(_mm_srli_epi16(q, 4), _mm_set1_epi8(0x0F));
        // Element order: lo(bytes 0-7), hi(bytes 0-7) | lo(bytes 8-15), hi(bytes 8-15).
        const __m256i codes = _mm256_set_m128i(_mm_unpackhi_epi64(lo, hi), _mm_unpacklo_epi64(lo, hi));
        const __m256i wv = _mm256_shuffle_epi8(lut, codes);
        const __m256i w_abs = _mm256_sign_epi8(wv, wv);
        // Lanes 0-3 hold sub-block 2*half, lanes 4-7 sub-block 2*half + 1.
        const float s0 = kUe4m3ToFloat.v[x[2 * half]], s1 = kUe4m3ToFloat.v[x[2 * half + 1]];
        STRATA_UNROLL for (int c = 0; c < C; ++c) {
          const __m256i dot = DotU8S8(_mm256_setzero_si256(), w_abs, _mm256_sign_epi8(cols.q[c], wv));
          const __m256 scale = _mm256_set_m128(_mm_set1_ps(s1 * cols.d[c]), _mm_set1_ps(s0 * cols.d[c]));
          acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), scale, acc[r][c]);
        }
      }
    }
  }
};

// Q2_0: 64 elements of 2-bit codes q (value q - 1), element j at
// qs[j / 4] >> 2 * (j % 4); two Q8_0 activation blocks.
// Eight code bytes (32 elements) to 32 bytes q (0..3) in element order.
inline __m256i ExpandQ2_0(const uint8_t* p) {
  // Dword 0 (elements 0-15) to all four dwords of the low half, dword 1
  // (elements 16-31) to the high half; dword j of a half is then shifted
  // right by 2j, so its byte b holds field j of byte b: element 4b + j.
  const __m256i v = _mm256_permutevar8x32_epi32(_mm256_zextsi128_si256(LoadU64(p)),
                                                _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
  const __m256i fields = _mm256_and_si256(_mm256_srlv_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)), Set1I8(3));
  // Transpose the 4x4 bytes of each half: output byte 4b + j from byte 4j + b.
  const __m256i order =
      _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm256_shuffle_epi8(fields, order);
}

struct Q2_0Kernel {
  static constexpr int kBlockElems = 64, kBlockBytes = 18, kActBlockBytes = 68;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 4, kTileRows = kWideTileRows, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m256 (&acc)[R][C]) {
    STRATA_UNROLL for (int half = 0; half < 2; ++half) {
      const Q8_0Columns<C> cols(a + 34 * half, as, /*offset=*/1);  // value = q - 1
      STRATA_UNROLL for (int r = 0; r < R; ++r) {
        const uint8_t* x = w + r * ws;
        AccumulateUnsigned<C>(ExpandQ2_0(x + 2 + 8 * half), LoadHalf(x), cols, acc[r]);
      }
    }
  }
};

// Q1_0: 128 elements, +d where bit j of qs[j / 8] is set and -d where not;
// four Q8_0 activation blocks. Codes u = 2 * bit (0 or 2), value u - 1.
struct Q1_0Kernel {
  static constexpr int kBlockElems = 128, kBlockBytes = 18, kActBlockBytes = 4 * 34;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 4, kTileRows = kWideTileRows, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m256 (&acc)[R][C]) {
    STRATA_UNROLL for (int k = 0; k < 4; ++k) {
      const Q8_0Columns<C> cols(a + 34 * k, as, /*offset=*/1);
      STRATA_UNROLL for (int r = 0; r < R; ++r) {
        const uint8_t* x = w + r * ws;
        const __m256i u = _mm256_and_si256(BitsToByteMask(LoadU32(x + 2 + 4 * k)), Set1I8(2));
        AccumulateUnsigned<C>(u, LoadHalf(x), cols, acc[r]);
      }
    }
  }
};

// Q4_1 / Q5_1 against Q8_1 (half d, half s = d * sum q, int8 q[32]): value
// d * code + m, so the dot is d * da * dot(code, q) + m * s. The m * s term is
// spread over the 8 lanes (times 1/8, exact), which the row's final lane sum
// adds back.
template <bool kFifthBit>
struct Q4_1Kernel {
  static constexpr int kBlockElems = 32, kBlockBytes = kFifthBit ? 24 : 20, kActBlockBytes = 36;
  static constexpr int kQs = kFifthBit ? 8 : 4;
  static constexpr bool kHasTail = false;
  static constexpr int kMatVecRows = 4, kTileRows = kWideTileRows, kTileCols = 4;

  template <int R, int C>
  static void Block(const uint8_t* w, uint64_t ws, const uint8_t* a, uint64_t as, __m256 (&acc)[R][C]) {
    __m256i aq[C];
    float ad[C], as_[C];
    STRATA_UNROLL for (int c = 0; c < C; ++c) {
      aq[c] = LoadU256(a + c * as + 4);
      ad[c] = LoadHalf(a + c * as);
      as_[c] = LoadHalf(a + c * as + 2) * 0.125f;
    }
    STRATA_UNROLL for (int r = 0; r < R; ++r) {
      const uint8_t* x = w + r * ws;
      const __m128i q = LoadU128(x + kQs);
      __m256i codes = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), Set1I8(0x0F));
      if constexpr (kFifthBit)
        codes = _mm256_or_si256(codes, _mm256_and_si256(BitsToByteMask(LoadU32(x + 4)), Set1I8(0x10)));
      const float d = LoadHalf(x), m = LoadHalf(x + 2);
      STRATA_UNROLL for (int c = 0; c < C; ++c) {
        const __m256i dot = DotU8S8(_mm256_setzero_si256(), codes, aq[c]);
        acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(d * ad[c]), acc[r][c]);
        acc[r][c] = _mm256_add_ps(acc[r][c], _mm256_set1_ps(m * as_[c]));
      }
    }
  }
};

}  // namespace
}  // namespace strata::kernels::STRATA_KERNEL_NS
