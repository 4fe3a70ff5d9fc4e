#include "runtime/quant/fp_convert.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace strata {
namespace {

uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }
float FromBits(uint32_t b) { return std::bit_cast<float>(b); }

TEST(Fp16, KnownValues) {
  EXPECT_EQ(Fp16ToFp32(0x3C00), 1.0f);
  EXPECT_EQ(Fp16ToFp32(0xC000), -2.0f);
  EXPECT_EQ(Fp16ToFp32(0x3555), 0.333251953125f);
  EXPECT_EQ(Fp16ToFp32(0x7BFF), 65504.0f);
  EXPECT_EQ(Fp16ToFp32(0x0400), std::ldexp(1.0f, -14));          // smallest normal
  EXPECT_EQ(Fp16ToFp32(0x0001), std::ldexp(1.0f, -24));          // smallest subnormal
  EXPECT_EQ(Fp16ToFp32(0x03FF), 1023.0f * std::ldexp(1.0f, -24));  // largest subnormal
  EXPECT_EQ(Fp16ToFp32(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_EQ(Bits(Fp16ToFp32(0x0000)), 0u);
  EXPECT_EQ(Bits(Fp16ToFp32(0x8000)), 0x80000000u);  // -0 keeps its sign
  EXPECT_EQ(Fp16ToFp32(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(Fp16ToFp32(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(Fp16ToFp32(0x7E00)));
  EXPECT_EQ(Bits(Fp16ToFp32(0x7E01)), 0x7FC02000u);  // payload moves to the top mantissa bits
}

// Every half that is not NaN survives F16 -> F32 -> F16, and the F32 value is
// exactly man * 2^(exp) as the format defines it.
TEST(Fp16, AllValuesRoundTripExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto h16 = static_cast<uint16_t>(h);
    const float f = Fp16ToFp32(h16);
    const uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF;
    const float sign = (h & 0x8000) ? -1.0f : 1.0f;
    if (exp == 0x1F) {
      if (man == 0) {
        EXPECT_TRUE(std::isinf(f)) << h;
      } else {
        EXPECT_TRUE(std::isnan(f)) << h;
        EXPECT_EQ(Fp32ToFp16(f), (h & 0x8000) | 0x7E00) << h;
      }
      continue;
    }
    const float expect = exp == 0 ? sign * std::ldexp(static_cast<float>(man), -24)
                                  : sign * std::ldexp(static_cast<float>(man + 1024), static_cast<int>(exp) - 25);
    ASSERT_EQ(Bits(f), Bits(expect)) << "half 0x" << std::hex << h;
    ASSERT_EQ(Fp32ToFp16(f), h16) << "half 0x" << std::hex << h;
  }
}

TEST(Fp16, RoundsToNearestEven) {
  const float ulp1 = std::ldexp(1.0f, -10);  // spacing of halves in [1, 2)
  EXPECT_EQ(Fp32ToFp16(1.0f + ulp1 / 2), 0x3C00);      // tie -> even (1.0)
  EXPECT_EQ(Fp32ToFp16(1.0f + 3 * ulp1 / 2), 0x3C02);  // tie -> even (1 + 2 ulp)
  EXPECT_EQ(Fp32ToFp16(std::nextafter(1.0f + ulp1 / 2, 2.0f)), 0x3C01);
  EXPECT_EQ(Fp32ToFp16(std::nextafter(1.0f + ulp1 / 2, 0.0f)), 0x3C00);
  EXPECT_EQ(Fp32ToFp16(-1.0f - ulp1 / 2), 0xBC00);
  // Overflow: 65504 is the largest half; 65520 is the tie with 2^16 and rounds to inf.
  EXPECT_EQ(Fp32ToFp16(65504.0f), 0x7BFF);
  EXPECT_EQ(Fp32ToFp16(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(Fp32ToFp16(65520.0f), 0x7C00);
  EXPECT_EQ(Fp32ToFp16(-1e10f), 0xFC00);
  EXPECT_EQ(Fp32ToFp16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(Fp32ToFp16(std::numeric_limits<float>::max()), 0x7C00);
  // Subnormals, in units of 2^-24.
  const float u = std::ldexp(1.0f, -24);
  EXPECT_EQ(Fp32ToFp16(u), 0x0001);
  EXPECT_EQ(Fp32ToFp16(u / 2), 0x0000);                            // tie -> even (0)
  EXPECT_EQ(Fp32ToFp16(std::nextafter(u / 2, 1.0f)), 0x0001);
  EXPECT_EQ(Fp32ToFp16(-u / 2), 0x8000);
  EXPECT_EQ(Fp32ToFp16(1.5f * u), 0x0002);                         // tie -> even (2)
  EXPECT_EQ(Fp32ToFp16(2.5f * u), 0x0002);                         // tie -> even (2)
  EXPECT_EQ(Fp32ToFp16(1023.5f * u), 0x0400);                      // tie -> carries into the smallest normal
  EXPECT_EQ(Fp32ToFp16(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(Fp32ToFp16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(Fp32ToFp16(-0.0f), 0x8000);
}

#if defined(__FLT16_MAX__)
// The compiler's _Float16 conversion is an independent IEEE implementation:
// compare on a stride through all 2^32 float bit patterns.
TEST(Fp16, MatchesCompilerFloat16OnAllFloatClasses) {
  uint64_t checked = 0;
  for (uint64_t b = 0; b < (1ull << 32); b += 4093) {
    const float f = FromBits(static_cast<uint32_t>(b));
    if (std::isnan(f)) continue;
    const _Float16 h = static_cast<_Float16>(f);
    ASSERT_EQ(Fp32ToFp16(f), std::bit_cast<uint16_t>(h)) << "float bits 0x" << std::hex << b;
    ++checked;
  }
  EXPECT_GT(checked, 1000000u);
}
#endif

TEST(Bf16, KnownValuesAndRounding) {
  EXPECT_EQ(Bf16ToFp32(0x3F80), 1.0f);
  EXPECT_EQ(Bf16ToFp32(0xC040), -3.0f);
  EXPECT_EQ(Fp32ToBf16(1.0f), 0x3F80);
  EXPECT_EQ(Fp32ToBf16(FromBits(0x3F808000)), 0x3F80);  // tie, 0x3F80 even: stays
  EXPECT_EQ(Fp32ToBf16(FromBits(0x3F818000)), 0x3F82);  // tie, 0x3F81 odd: up
  EXPECT_EQ(Fp32ToBf16(FromBits(0x3F808001)), 0x3F81);
  EXPECT_EQ(Fp32ToBf16(FromBits(0x3F807FFF)), 0x3F80);
  EXPECT_EQ(Fp32ToBf16(FromBits(0x00012345)), 0x0001);  // subnormals are kept, not flushed
  EXPECT_EQ(Fp32ToBf16(FromBits(0x7FA00000)), 0x7FE0);  // signalling NaN made quiet
  EXPECT_EQ(Fp32ToBf16(FromBits(0xFF800001)), 0xFFC0);
  EXPECT_EQ(Fp32ToBf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(Fp32ToBf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds up to inf, as ggml
}

TEST(Bf16, AllValuesRoundTrip) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto b16 = static_cast<uint16_t>(b);
    const float f = Bf16ToFp32(b16);
    ASSERT_EQ(Bits(f), b << 16);
    if (!std::isnan(f)) {
      ASSERT_EQ(Fp32ToBf16(f), b16) << b;
    }
  }
}

TEST(E8M0, PowersOfTwoAndExtremes) {
  EXPECT_EQ(E8M0ToFp32(127), 1.0f);
  EXPECT_EQ(E8M0ToFp32(128), 2.0f);
  EXPECT_EQ(E8M0ToFp32(1), std::ldexp(1.0f, -126));
  EXPECT_EQ(E8M0ToFp32(0), std::ldexp(1.0f, -127));  // subnormal
  EXPECT_EQ(E8M0ToFp32(254), std::ldexp(1.0f, 127));
  EXPECT_EQ(E8M0ToFp32(255), std::numeric_limits<float>::infinity());  // ggml: no NaN decoding
  EXPECT_EQ(E8M0ToFp32Half(128), 1.0f);
  EXPECT_EQ(E8M0ToFp32Half(0), std::ldexp(1.0f, -128));
  EXPECT_EQ(E8M0ToFp32Half(1), std::ldexp(1.0f, -127));
  EXPECT_EQ(E8M0ToFp32Half(255), std::ldexp(1.0f, 127));
  for (int e = 0; e < 255; ++e)
    EXPECT_EQ(E8M0ToFp32Half(static_cast<uint8_t>(e)), std::ldexp(1.0f, e - 128)) << e;
}

// UE4M3 from its definition: exponent bits 6..3 with bias 7, mantissa bits
// 2..0, subnormal at exponent 0; the result is halved; 0x7F is zeroed.
TEST(Ue4m3, AllCodesMatchDefinition) {
  for (int x = 0; x < 256; ++x) {
    const int exp = (x >> 3) & 0xF, man = x & 7;
    double raw = exp == 0 ? man * std::ldexp(1.0, -9) : (1.0 + man / 8.0) * std::ldexp(1.0, exp - 7);
    if (x == 0x7F) raw = 0.0;  // the E4M3 NaN code; 0xFF is not special
    EXPECT_EQ(Ue4m3ToFp32(static_cast<uint8_t>(x)), static_cast<float>(raw * 0.5)) << x;
  }
  EXPECT_EQ(Ue4m3ToFp32(0x00), 0.0f);
  EXPECT_EQ(Ue4m3ToFp32(0x7F), 0.0f);
  EXPECT_EQ(Ue4m3ToFp32(0x38), 0.5f);            // 1.0, halved
  EXPECT_EQ(Ue4m3ToFp32(0x7E), 224.0f);          // 448 (largest finite E4M3), halved
  EXPECT_EQ(Ue4m3ToFp32(0x01), std::ldexp(1.0f, -10));
  EXPECT_EQ(Ue4m3ToFp32(0xFF), 240.0f);          // bit 7 ignored; 0xFF is not the NaN code
  EXPECT_EQ(Ue4m3ToFp32(0xB8), 0.5f);
}

}  // namespace
}  // namespace strata
