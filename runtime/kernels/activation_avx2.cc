// AVX2 activation converters. Compiled with the AVX2 flags; only called
// through QuantizeActivationRow after the ISA check. Each matches its scalar
// reference (quantize.h, activation.h) bit for bit on finite inputs; the
// comments say which scalar step each vector step reproduces.
//
// This file uses no inline functions from shared headers (they could be
// emitted here with AVX2 code and picked by the linker for baseline callers);
// F16 conversions use the F16C instructions, which round the same way as
// Fp32ToFp16 for every non-NaN input.

#include <immintrin.h>

#include <bit>
#include <cstdint>
#include <cstring>

#include "runtime/kernels/activation_simd.h"
#include "runtime/quant/blocks.h"

// Products and sums must round separately, as in the scalar references.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace strata::kernels {
namespace {

inline float HorizontalMax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline __m256i LoadU256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline void StoreU256(void* p, __m256i v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }

inline __m256 Abs(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// Through the vector form: clang's _cvtss_sh is a macro with a C compound
// literal, which -Wpedantic refuses in C++.
inline uint16_t ToHalf(float f) {
  return static_cast<uint16_t>(
      _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), 0));
}

// int32 lanes (a: elements 0-7, b: 8-15, c: 16-23, d: 24-31) to 32 bytes in
// element order, each the low byte of its lane (values must fit, or wrap as
// a C cast to int8 would: the lanes are masked to 0..255 first, so the
// unsigned packs never saturate).
inline __m256i LowBytesInOrder(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i m = _mm256_set1_epi32(0xFF);
  const __m256i ab = _mm256_packus_epi32(_mm256_and_si256(a, m), _mm256_and_si256(b, m));
  const __m256i cd = _mm256_packus_epi32(_mm256_and_si256(c, m), _mm256_and_si256(d, m));
  // packs work per 128-bit lane: bytes come out in dword order 0,4,1,5,2,6,3,7.
  return _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// One Q8_0 block by the x86 rule: d = amax / 127 (as F16), q = round-half-even(x * 127 / amax),
// saturated to int8 (what cvtps_epi32 + packs do). Returns sum of q for Q8_1.
inline int QuantizeQ8_0Block(const float* x, uint16_t* d_out, int8_t* q_out, float* d_float) {
  const __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
  const __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
  const __m256 m = _mm256_max_ps(_mm256_max_ps(Abs(v0), Abs(v1)), _mm256_max_ps(Abs(v2), Abs(v3)));
  const float amax = HorizontalMax(m);
  const float d = amax / 127.0f;
  *d_out = ToHalf(d);
  *d_float = d;
  const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, id), kRound));
  const __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, id), kRound));
  const __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, id), kRound));
  const __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, id), kRound));
  // Signed saturating packs: out-of-range and NaN (0x80000000) become -128/127,
  // as the scalar RoundEvenSaturateToInt8.
  const __m256i p = _mm256_permutevar8x32_epi32(
      _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3)),
      _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  StoreU256(q_out, p);
  // Sum of the stored int8 values: widen to int16 and add pairs.
  const __m256i lo = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(p));
  const __m256i hi = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(p, 1));
  const __m256i s32 = _mm256_madd_epi16(_mm256_add_epi16(lo, hi), _mm256_set1_epi16(1));
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
  return _mm_cvtsi128_si32(s);
}

}  // namespace

void QuantizeRowQ8_0Avx2(const float* x, void* dst, int64_t k) {
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < k / 32; ++i, x += 32, out += sizeof(BlockQ8_0)) {
    uint16_t d;
    float unused;
    int8_t q[32];
    QuantizeQ8_0Block(x, &d, q, &unused);
    std::memcpy(out, &d, 2);
    std::memcpy(out + 2, q, 32);
  }
}

void QuantizeRowQ8_1Avx2(const float* x, void* dst, int64_t k) {
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < k / 32; ++i, x += 32, out += sizeof(BlockQ8_1)) {
    uint16_t d;
    float d_float;
    int8_t q[32];
    const int sum = QuantizeQ8_0Block(x, &d, q, &d_float);
    const uint16_t s = ToHalf(d_float * static_cast<float>(sum));
    std::memcpy(out, &d, 2);
    std::memcpy(out + 2, &s, 2);
    std::memcpy(out + 4, q, 32);
  }
}

// Q8_K: max = the first element of largest |x|, with its sign; iscale = -127/max;
// q = min(127, nearest_int(iscale * x)) stored as int8 (wrapping, as ggml's C);
// bsums = sums of 16 stored quants; d = 1/iscale. An all-zero block is all zeros.
void QuantizeRowQ8_KAvx2(const float* x, void* dst, int64_t k) {
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < k / 256; ++i, x += 256, out += sizeof(BlockQ8_K)) {
    __m256 m = _mm256_setzero_ps();
    // max_ps(new, m) returns m when `new` is NaN: NaNs never win, as in the
    // scalar `if (ax > amax)`.
    for (int j = 0; j < 256; j += 8) m = _mm256_max_ps(Abs(_mm256_loadu_ps(x + j)), m);
    const float amax = HorizontalMax(m);
    if (amax == 0.0f) {
      std::memset(out, 0, sizeof(BlockQ8_K));
      continue;
    }
    // The first element whose |x| equals amax.
    float max = 0.0f;
    const __m256 target = _mm256_set1_ps(amax);
    for (int j = 0; j < 256; j += 8) {
      const int mask = _mm256_movemask_ps(_mm256_cmp_ps(Abs(_mm256_loadu_ps(x + j)), target, _CMP_EQ_OQ));
      if (mask != 0) {
        max = x[j + std::countr_zero(static_cast<unsigned>(mask))];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m256 vscale = _mm256_set1_ps(iscale);
    // nearest_int(v): add 1.5 * 2^23, keep the low 23 mantissa bits, subtract 2^22.
    const __m256 magic = _mm256_set1_ps(12582912.0f);
    const __m256i mant = _mm256_set1_epi32(0x007FFFFF);
    const __m256i bias = _mm256_set1_epi32(0x00400000);
    const __m256i max_q = _mm256_set1_epi32(127);
    int8_t q[256];
    for (int j = 0; j < 256; j += 32) {
      __m256i v[4];
      for (int t = 0; t < 4; ++t) {
        const __m256 s = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + j + 8 * t), vscale), magic);
        v[t] = _mm256_min_epi32(_mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(s), mant), bias), max_q);
      }
      StoreU256(q + j, LowBytesInOrder(v[0], v[1], v[2], v[3]));
    }
    int16_t bsums[16];
    for (int g = 0; g < 16; g += 2) {
      // Sums of the stored int8 values per 16: bias them to unsigned, sum
      // groups of 8 with SAD, remove the bias (8 * 128 per group of 8).
      const __m256i b = _mm256_xor_si256(LoadU256(q + 16 * g),
                                         _mm256_set1_epi8(static_cast<char>(0x80)));
      alignas(32) uint64_t s[4];
      StoreU256(s, _mm256_sad_epu8(b, _mm256_setzero_si256()));
      bsums[g] = static_cast<int16_t>(static_cast<int>(s[0] + s[1]) - 16 * 128);
      bsums[g + 1] = static_cast<int16_t>(static_cast<int>(s[2] + s[3]) - 16 * 128);
    }
    const float d = 1.0f / iscale;
    std::memcpy(out, &d, 4);
    std::memcpy(out + 4, q, 256);
    std::memcpy(out + 260, bsums, 32);
  }
}

void RoundRowToF16Avx2(const float* x, void* y, int64_t k) {
  auto* out = static_cast<uint8_t*>(y);
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  int64_t i = 0;
  for (; i + 8 <= k; i += 8)
    StoreU256(out + 4 * i, _mm256_castps_si256(_mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), kRound))));
  for (; i < k; ++i) {
    const float v = _cvtsh_ss(ToHalf(x[i]));
    std::memcpy(out + 4 * i, &v, 4);
  }
}

namespace {
// Fp32ToBf16 then back: round to nearest even on the top 16 bits; NaN made quiet (bit 22).
inline __m256i RoundBf16(__m256i x) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lsb));
  const __m256i top = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
  const __m256i is_nan =
      _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7FFFFFFF)), _mm256_set1_epi32(0x7F800000));
  const __m256i nan = _mm256_or_si256(_mm256_and_si256(x, top), _mm256_set1_epi32(0x00400000));
  return _mm256_blendv_epi8(_mm256_and_si256(rounded, top), nan, is_nan);
}
}  // namespace

void RoundRowToBf16Avx2(const float* x, void* y, int64_t k) {
  auto* out = static_cast<uint8_t*>(y);
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    const __m256i v = _mm256_castps_si256(_mm256_loadu_ps(x + i));
    StoreU256(out + 4 * i, RoundBf16(v));
  }
  for (; i < k; ++i) {
    uint32_t b;
    std::memcpy(&b, x + i, 4);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) {
      b = (b & 0xFFFF0000u) | 0x00400000u;
    } else {
      b = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
    }
    std::memcpy(out + 4 * i, &b, 4);
  }
}

}  // namespace strata::kernels
