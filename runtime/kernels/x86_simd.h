#pragma once
// SIMD building blocks shared by the x86 kernel files. Include ONLY from
// *_avx2.cc / *_avx512.cc files, which define STRATA_KERNEL_NS first (avx2 or
// avx512): everything here then lives in an anonymous namespace inside
// strata::kernels::STRATA_KERNEL_NS, so each ISA file gets its own copy
// compiled with its own flags, and no copy can be merged with another ISA's.
//
// Rules for code in these headers:
//  - no namespace-scope objects with dynamic initialisation (a vector
//    constant built at startup would execute AVX instructions before any
//    CPU check); constants are built inside functions;
//  - no calls to inline functions of shared non-kernel headers (see
//    kernel_tables.h); F16 scales convert with F16C, which gives the same
//    value as Fp16ToFp32 for every input;
//  - loads are unaligned (loadu) from byte pointers, never through casted
//    struct pointers.
//
// Vectors are 256 bits in every kernel. The AVX-512 build runs the same code
// with 32 vector registers and the AVX-512 VNNI instructions (vpdpbusd,
// vpdpwssd on ymm) in place of multiply-add pairs.

#ifndef STRATA_KERNEL_NS
#error "define STRATA_KERNEL_NS (avx2 or avx512) before including x86_simd.h"
#endif

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "runtime/base/compiler.h"  // STRATA_UNROLL

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
#define STRATA_KERNEL_VNNI 1
#else
#define STRATA_KERNEL_VNNI 0
#endif

namespace strata::kernels::STRATA_KERNEL_NS {
namespace {

inline __m256i LoadU256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i LoadU128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
inline __m128i LoadU64(const void* p) { return _mm_loadl_epi64(static_cast<const __m128i*>(p)); }
inline __m256 LoadPs(const void* p) { return _mm256_loadu_ps(static_cast<const float*>(p)); }

inline float LoadFloat(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
// An IEEE half at p as float (F16C; exact).
inline float LoadHalf(const uint8_t* p) { return _cvtsh_ss(LoadU16(p)); }

// (v0 + v2) + (v1 + v3): the order the panel kernels (x86_panel_kernels.h)
// sum a row's four lanes in, too.
inline float HorizontalSum(__m128 v) {
  const __m128 s = _mm_add_ps(v, _mm_movehl_ps(v, v));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
inline float HorizontalSum(__m256 v) {
  return HorizontalSum(_mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1)));
}

#if defined(__AVX512F__)
// (maskz extracts: GCC 12 warns that the plain cast/extract read an
// "uninitialized" pass-through operand.)
inline float HorizontalSum(__m512 v) {
  return HorizontalSum(
      _mm256_add_ps(_mm512_maskz_extractf32x8_ps(0xFF, v, 0), _mm512_maskz_extractf32x8_ps(0xFF, v, 1)));
}
#endif

// acc + sums of 4 adjacent u8 * s8 products, per int32 lane.
// REQUIRES: every u <= 128 (the AVX2 path multiplies pairs into int16 first,
// which is exact only then: 2 * 128 * 127 < 2^15).
inline __m256i DotU8S8(__m256i acc, __m256i u, __m256i s) {
#if STRATA_KERNEL_VNNI
  return _mm256_dpbusd_epi32(acc, u, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}

// acc + sums of 4 adjacent s8 * s8 products: |w| times a with w's sign.
inline __m256i DotS8S8(__m256i acc, __m256i w, __m256i a) {
  return DotU8S8(acc, _mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w));
}

// Pairs of u8 * s8 products as int16 (exact for u <= 128, see DotU8S8).
inline __m256i MulPairsU8S8(__m256i u, __m256i s) { return _mm256_maddubs_epi16(u, s); }

// acc + sums of 2 adjacent int16 * int16 products, per int32 lane.
inline __m256i MulAddI16(__m256i acc, __m256i a, __m256i b) {
#if STRATA_KERNEL_VNNI
  return _mm256_dpwssd_epi32(acc, a, b);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

inline __m256i Set1I8(int v) { return _mm256_set1_epi8(static_cast<char>(v)); }

// Bit `kBit` (0-7) of every byte of v, moved to bit `kTo` (0-7) of the byte;
// other bits cleared. The 16-bit shift can carry bits into the neighbouring
// byte, but only into positions the final mask clears.
template <int kBit, int kTo>
inline __m256i MoveBit(__m256i v) {
  __m256i s;
  if constexpr (kBit > kTo) {
    s = _mm256_srli_epi16(v, kBit - kTo);
  } else if constexpr (kBit < kTo) {
    s = _mm256_slli_epi16(v, kTo - kBit);
  } else {
    s = v;
  }
  return _mm256_and_si256(s, Set1I8(1 << kTo));
}

// 16 int16 scale lanes for one 32-element chunk of a per-16-scaled block:
// lanes 0-7 (products of elements 0-15 after maddubs) get scale `kFirst` of
// the 8 int16 in both halves of `scales`, lanes 8-15 get scale kFirst + 1.
// REQUIRES: `scales` holds the same 8 int16 in both 128-bit halves.
template <int kFirst>
inline __m256i ScalePairForChunk(__m256i scales) {
  constexpr char lo0 = 2 * kFirst, lo1 = 2 * kFirst + 1, hi0 = 2 * kFirst + 2, hi1 = 2 * kFirst + 3;
  const __m256i shuffle = _mm256_setr_epi8(lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1, lo0, lo1, lo0,
                                           lo1, hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1, hi0, hi1,
                                           hi0, hi1);
  return _mm256_shuffle_epi8(scales, shuffle);
}

// All 16 int16 lanes set to scale `kIndex` of the 8 int16 in `scales` (same
// 8 in both halves).
template <int kIndex>
inline __m256i ScaleForChunk(__m256i scales) {
  constexpr char b0 = 2 * kIndex, b1 = 2 * kIndex + 1;
  const __m256i shuffle = _mm256_setr_epi8(b0, b1, b0, b1, b0, b1, b0, b1, b0, b1, b0, b1, b0, b1, b0, b1, b0, b1, b0,
                                           b1, b0, b1, b0, b1, b0, b1, b0, b1, b0, b1, b0, b1);
  return _mm256_shuffle_epi8(scales, shuffle);
}

// Byte j (0..31) = 0xFF if bit j of the 32-bit word is set, else 0.
inline __m256i BitsToByteMask(uint32_t bits) {
  // Byte k of the word to bytes 8k..8k+7, then test bit j in byte 8k + j.
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
}

// 8 bytes of scales as int16, copied to both 128-bit halves.
inline __m256i BroadcastScalesU8(const uint8_t* p) {
  return _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(LoadU64(p)));
}
inline __m256i BroadcastScalesI8(const int8_t* p) {
  return _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(LoadU64(p)));
}

// Calls f(std::integral_constant<int, i>) for i = 0 .. n-1, unrolled, so a
// loop body can use i as a template argument or an immediate.
template <int... kI, typename F>
inline void UnrollImpl(F&& f, std::integer_sequence<int, kI...>) {
  (f(std::integral_constant<int, kI>{}), ...);
}
template <int kN, typename F>
inline void Unroll(F&& f) {
  UnrollImpl(f, std::make_integer_sequence<int, kN>{});
}

}  // namespace
}  // namespace strata::kernels::STRATA_KERNEL_NS
