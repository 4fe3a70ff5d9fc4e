#pragma once
// Exact scalar conversions between F32 and the small float formats that ggml
// blocks store: IEEE binary16 (F16), bfloat16 (BF16), E8M0 (MXFP4 scales) and
// UE4M3 (NVFP4 scales). Each function gives the same bits as the ggml helper
// named in its comment (ggml-impl.h), for every input; the tests check this
// exhaustively where the input space allows.
//
// All are constexpr and branch on integer bit patterns only, so they do not
// depend on the FPU rounding mode or on flush-to-zero settings.

#include <bit>
#include <cstdint>

namespace strata {

static_assert(std::endian::native == std::endian::little,
              "ggml blocks are little-endian; Strata reads them in place");

// F16 -> F32, exact for every input (as GGML_FP16_TO_FP32). Subnormal halves
// become normal floats; inf stays inf; NaN stays NaN with its payload shifted
// into the top mantissa bits (as the hardware conversion does).
constexpr float Fp16ToFp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t man = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + (127 - 15)) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {
    // Subnormal half: value = man * 2^-24. Shift the leading 1 up to bit 10.
    uint32_t shift = 0;
    while ((man & 0x400u) == 0) {
      man <<= 1;
      ++shift;
    }
    bits = sign | ((127 - 15 + 1 - shift) << 23) | ((man & 0x3FFu) << 13);
  }
  return std::bit_cast<float>(bits);
}

// F32 -> F16 with round-to-nearest-even (as GGML_FP32_TO_FP16: the F16C
// instruction with rounding mode 0, or ggml's portable bit version, which agree
// on every non-NaN input). Overflow gives +-inf; values below half the smallest
// subnormal give +-0. NaN gives 0x7E00 with the input's sign (ggml's portable
// version; F16C would keep payload bits instead).
constexpr uint16_t Fp32ToFp16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return sign | 0x7E00u;  // NaN
  // 65520 = 65504 + half an ulp: the tie rounds to the even neighbour, 2^16 = inf.
  if (ax >= 0x477FF000u) return sign | 0x7C00u;
  if (ax >= 0x38800000u) {  // >= 2^-14: normal half
    const uint32_t exp = (ax >> 23) - (127 - 15);
    const uint32_t man = ax & 0x7FFFFFu;
    uint32_t h = (exp << 10) | (man >> 13);
    const uint32_t rest = man & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // carry may bump the exponent
    return static_cast<uint16_t>(sign | h);
  }
  // Subnormal half (or zero): units of 2^-24. ax has biased exponent e < 113, and
  // value / 2^-24 = mant24 * 2^(e - 126), so shift right by 126 - e (>= 14).
  const uint32_t e = ax >> 23;
  if (e < 102) return sign;  // < 2^-25: below half the smallest subnormal
  const uint32_t mant24 = (ax & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126 - e;  // 14..24
  uint32_t q = mant24 >> shift;
  const uint32_t rest = mant24 & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (q & 1u))) ++q;  // q may reach 0x400: the smallest normal
  return static_cast<uint16_t>(sign | q);
}

// BF16 -> F32: the bf16 bits are the top half of the float (GGML_BF16_TO_FP32).
constexpr float Bf16ToFp32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// F32 -> BF16 as ggml_compute_fp32_to_bf16: round-to-nearest-even on the top 16
// bits, subnormals kept (not flushed), NaN made quiet by setting bit 6.
constexpr uint16_t Fp32ToBf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 64u);
  return static_cast<uint16_t>((x + (0x7FFFu + ((x >> 16) & 1u))) >> 16);
}

// E8M0 (an 8-bit power-of-two exponent, bias 127) -> F32 as ggml_e8m0_to_fp32:
// 2^(e-127). e = 0 gives the subnormal 2^-127; e = 255 gives +inf (ggml does
// not decode the OCP NaN encoding).
constexpr float E8M0ToFp32(uint8_t e) {
  const uint32_t bits = e == 0 ? 0x00400000u : static_cast<uint32_t>(e) << 23;
  return std::bit_cast<float>(bits);
}

// Half of E8M0ToFp32, as ggml_e8m0_to_fp32_half: 2^(e-128). MXFP4 uses this
// because its value table kvalues_fp4 holds E2M1 values doubled. e = 0 and 1
// give the subnormals 2^-128 and 2^-127; e = 255 gives 2^127.
constexpr float E8M0ToFp32Half(uint8_t e) {
  const uint32_t bits = e < 2 ? (0x00200000u << e) : static_cast<uint32_t>(e - 1) << 23;
  return std::bit_cast<float>(bits);
}

// UE4M3 (unsigned, 4 exponent bits with bias 7, 3 mantissa bits) -> F32, times
// 0.5, as ggml_ue4m3_to_fp32 (NVFP4 scales; the 0.5 matches the doubled
// kvalues_fp4). Bit 7 is ignored. 0x00 and 0x7F (the E4M3 NaN code) give 0;
// 0xFF is not special-cased by ggml and decodes as exponent 15, mantissa 7.
// Exponent 0 is subnormal: man * 2^-9. Every result is exact.
constexpr float Ue4m3ToFp32(uint8_t x) {
  if (x == 0 || x == 0x7F) return 0.0f;
  const uint32_t exp = (x >> 3) & 0xFu;
  const uint32_t man = x & 0x7u;
  float raw;
  if (exp == 0) {
    raw = static_cast<float>(man) * (1.0f / 512.0f);
  } else {
    raw = std::bit_cast<float>(((exp - 7 + 127) << 23) | (man << 20));  // (1 + man/8) * 2^(exp-7)
  }
  return raw * 0.5f;
}

}  // namespace strata
