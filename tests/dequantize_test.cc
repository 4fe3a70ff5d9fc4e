// Hand-built blocks of every type dequantize to the values the format defines.
// Each test fills the fields of one block with chosen values and computes the
// expected floats here, from the layout description (reference/formats.md
// section 2, docs/quant-types.md), not by calling Strata's dequantizer. Where
// ggml's float evaluation order matters (values that are not exact), the
// expected value uses the same order: scale products first, then the quant.

#include "runtime/quant/dequantize.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/quant/blocks.h"
#include "runtime/quant/fp_convert.h"
#include "runtime/quant/iq_grids.h"

namespace strata {
namespace {

using T = GgmlType;

uint16_t H(float f) { return Fp32ToFp16(f); }
float F(uint16_t h) { return Fp16ToFp32(h); }

template <typename Block>
std::vector<uint8_t> Bytes(const Block& b) {
  std::vector<uint8_t> v(sizeof(Block));
  std::memcpy(v.data(), &b, sizeof(Block));
  return v;
}

std::vector<float> Deq(GgmlType type, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> out(n, -12345.0f);
  const Status s = DequantizeRow(type, bytes, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}
template <typename Block>
std::vector<float> DeqBlock(GgmlType type, const Block& b) {
  return Deq(type, Bytes(b), TypeInfo(type).block_elems);
}

void ExpectSame(const std::vector<float>& want, const std::vector<float>& got) {
  ASSERT_EQ(want.size(), got.size());
  int failures = 0;
  for (size_t i = 0; i < want.size() && failures < 8; ++i) {
    if (!(want[i] == got[i]) && !(std::isnan(want[i]) && std::isnan(got[i]))) {
      ADD_FAILURE() << "element " << i << ": want " << want[i] << " got " << got[i];
      ++failures;
    }
  }
}

// E2M1 (FP4) values by code, as the OCP MX spec defines them.
constexpr float kE2M1[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
                             -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
// IQ4_NL levels (ggml-common.h kvalues_iq4nl).
constexpr int kIq4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// 8-bit sign pattern of a 7-bit i-quant sign field: the 8th sign makes the
// number of negated elements even.
uint8_t Signs8(uint8_t s7) { return static_cast<uint8_t>(s7 | ((std::popcount(static_cast<unsigned>(s7)) & 1) << 7)); }
float SignOf(uint8_t signs, int j) { return ((signs >> j) & 1) ? -1.0f : 1.0f; }
float GridU8(uint64_t entry, int j) { return static_cast<float>((entry >> (8 * j)) & 0xFF); }

TEST(Dequantize, FloatTypes) {
  const float f32[3] = {1.5f, -2.25f, std::ldexp(1.0f, -130)};
  std::vector<uint8_t> b(sizeof(f32));
  std::memcpy(b.data(), f32, sizeof(f32));
  ExpectSame({1.5f, -2.25f, std::ldexp(1.0f, -130)}, Deq(T::kF32, b, 3));

  const uint16_t f16[3] = {0x3C00, 0xC100, 0x0001};
  b.assign(6, 0);
  std::memcpy(b.data(), f16, 6);
  ExpectSame({1.0f, -2.5f, std::ldexp(1.0f, -24)}, Deq(T::kF16, b, 3));

  const uint16_t bf16[3] = {0x3F80, 0xC040, 0x0001};
  std::memcpy(b.data(), bf16, 6);
  ExpectSame({1.0f, -3.0f, std::bit_cast<float>(0x00010000u)}, Deq(T::kBF16, b, 3));
}

TEST(Dequantize, Q4_0) {
  BlockQ4_0 b{};
  b.d = H(0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  std::vector<float> want(32);
  for (int j = 0; j < 16; ++j) {
    want[j] = static_cast<float>(j - 8) * 0.5f;             // low nibble: element j
    want[j + 16] = static_cast<float>((15 - j) - 8) * 0.5f;  // high nibble: element j+16
  }
  ExpectSame(want, DeqBlock(T::kQ4_0, b));
}

TEST(Dequantize, Q4_1) {
  BlockQ4_1 b{};
  b.d = H(0.1f);  // not exact: checks the order q*d, then + m
  b.m = H(-0.3f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((j ^ 5) << 4));
  std::vector<float> want(32);
  for (int j = 0; j < 16; ++j) {
    want[j] = static_cast<float>(j) * F(b.d) + F(b.m);
    want[j + 16] = static_cast<float>(j ^ 5) * F(b.d) + F(b.m);
  }
  ExpectSame(want, DeqBlock(T::kQ4_1, b));
}

// Q5: the 5th bit of element e is bit e of qh (a little-endian u32).
TEST(Dequantize, Q5_0AndQ5_1) {
  const uint32_t qh = 0xA5A5F00Fu;
  BlockQ5_0 b0{};
  BlockQ5_1 b1{};
  b0.d = H(0.5f);
  b1.d = H(0.125f);
  b1.m = H(0.5f);
  std::memcpy(b0.qh, &qh, 4);
  std::memcpy(b1.qh, &qh, 4);
  for (int j = 0; j < 16; ++j) {
    b0.qs[j] = b1.qs[j] = static_cast<uint8_t>(((j * 7) & 0xF) | (((j * 3) & 0xF) << 4));
  }
  std::vector<float> want0(32), want1(32);
  for (int e = 0; e < 32; ++e) {
    const int nib = e < 16 ? (b0.qs[e] & 0xF) : (b0.qs[e - 16] >> 4);
    const int q = nib | static_cast<int>(((qh >> e) & 1u) << 4);
    want0[e] = static_cast<float>(q - 16) * 0.5f;
    want1[e] = static_cast<float>(q) * 0.125f + 0.5f;
  }
  ExpectSame(want0, DeqBlock(T::kQ5_0, b0));
  ExpectSame(want1, DeqBlock(T::kQ5_1, b1));
}

TEST(Dequantize, Q8_0) {
  BlockQ8_0 b{};
  b.d = H(0.25f);
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j * 8 - 128);
  std::vector<float> want(32);
  for (int j = 0; j < 32; ++j) want[j] = static_cast<float>(j * 8 - 128) * 0.25f;
  ExpectSame(want, DeqBlock(T::kQ8_0, b));
}

TEST(Dequantize, Q1_0SignBits) {
  BlockQ1_0 b{};
  b.d = H(1.5f);
  for (int k = 0; k < 16; ++k) b.qs[k] = static_cast<uint8_t>(0xB1 ^ (k * 37));
  std::vector<float> want(128);
  for (int j = 0; j < 128; ++j) want[j] = ((b.qs[j / 8] >> (j % 8)) & 1) ? 1.5f : -1.5f;
  ExpectSame(want, DeqBlock(T::kQ1_0, b));
}

TEST(Dequantize, Q2_0) {
  BlockQ2_0 b{};
  b.d = H(2.0f);
  for (int k = 0; k < 16; ++k) b.qs[k] = static_cast<uint8_t>(k * 29 + 7);
  std::vector<float> want(64);
  for (int j = 0; j < 64; ++j) {
    const int q = (b.qs[j / 4] >> (2 * (j % 4))) & 3;  // codes 0..3 mean -1, 0, +1, +2
    want[j] = static_cast<float>(q - 1) * 2.0f;
  }
  ExpectSame(want, DeqBlock(T::kQ2_0, b));
}

TEST(Dequantize, Mxfp4IncludingE8M0Extremes) {
  BlockMxfp4 b{};
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  // value = E2M1(code) * 2^(e - 127)
  for (int e : {130, 127, 1, 0, 254, 255}) {
    b.e = static_cast<uint8_t>(e);
    std::vector<float> want(32);
    for (int j = 0; j < 16; ++j) {
      want[j] = static_cast<float>(std::ldexp(static_cast<double>(kE2M1[j]), e - 127));
      want[j + 16] = static_cast<float>(std::ldexp(static_cast<double>(kE2M1[15 - j]), e - 127));
    }
    SCOPED_TRACE(e);
    ExpectSame(want, DeqBlock(T::kMXFP4, b));
  }
  // e = 255: 1.0 * 2^128 overflows to inf; e = 0: 0.5 * 2^-127 is the subnormal 2^-128.
  b.e = 255;
  EXPECT_TRUE(std::isinf(DeqBlock(T::kMXFP4, b)[2]));
  b.e = 0;
  EXPECT_EQ(DeqBlock(T::kMXFP4, b)[1], std::ldexp(1.0f, -128));
}

// NVFP4: four 16-element sub-blocks, each with its own UE4M3 scale; within a
// sub-block, byte j holds element j (low nibble) and j+8 (high nibble).
TEST(Dequantize, Nvfp4SubBlocks) {
  BlockNvfp4 b{};
  const uint8_t codes[4] = {0x38, 0x3D, 0x01, 0x7F};
  const float raw[4] = {1.0f, 1.625f, std::ldexp(1.0f, -9), 0.0f};  // UE4M3 values; 0x7F (NaN code) reads as 0
  std::memcpy(b.d, codes, 4);
  for (int s = 0; s < 4; ++s)
    for (int j = 0; j < 8; ++j) b.qs[8 * s + j] = static_cast<uint8_t>(((j + s) & 0xF) | ((15 - j) << 4));
  std::vector<float> want(64);
  for (int s = 0; s < 4; ++s)
    for (int j = 0; j < 8; ++j) {
      want[16 * s + j] = kE2M1[(j + s) & 0xF] * raw[s];
      want[16 * s + j + 8] = kE2M1[15 - j] * raw[s];
    }
  ExpectSame(want, DeqBlock(T::kNVFP4, b));
  b.d[0] = 0xFF;  // exponent 15, mantissa 7: 480 (bit 7 ignored)
  EXPECT_EQ(DeqBlock(T::kNVFP4, b)[7], 6.0f * 480.0f);
}

TEST(Dequantize, Iq4_nl) {
  BlockIq4_nl b{};
  b.d = H(0.5f);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  std::vector<float> want(32);
  for (int j = 0; j < 16; ++j) {
    want[j] = 0.5f * static_cast<float>(kIq4[j]);
    want[j + 16] = 0.5f * static_cast<float>(kIq4[15 - j]);
  }
  ExpectSame(want, DeqBlock(T::kIQ4_NL, b));
}

// TQ1_0 packs base-3 digits (trit + 1) as a fixed-point fraction:
// byte = ceil(v * 256 / 243), v = the digits read most significant first.
// qs[m] (m < 32) holds elements m, 32+m, ..., 128+m; qs[32+m] (m < 16) holds
// 160+m, 176+m, ..., 224+m; qh[j] holds 240+j, 244+j, 248+j, 252+j (4 digits,
// shifted up one digit).
TEST(Dequantize, Tq1_0BaseThree) {
  int t[256];
  for (int e = 0; e < 256; ++e) t[e] = ((e * 7 + e / 3) % 3) - 1;
  BlockTq1_0 b{};
  auto encode = [](int v) { return static_cast<uint8_t>((v * 256 + 242) / 243); };
  for (int m = 0; m < 32; ++m) {
    int v = 0;
    for (int n = 0; n < 5; ++n) v = v * 3 + t[32 * n + m] + 1;
    b.qs[m] = encode(v);
  }
  for (int m = 0; m < 16; ++m) {
    int v = 0;
    for (int n = 0; n < 5; ++n) v = v * 3 + t[160 + 16 * n + m] + 1;
    b.qs[32 + m] = encode(v);
  }
  for (int j = 0; j < 4; ++j) {
    int v = 0;
    for (int n = 0; n < 4; ++n) v = v * 3 + t[240 + 4 * n + j] + 1;
    b.qh[j] = encode(v * 3);
  }
  b.d = H(0.75f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) want[e] = static_cast<float>(t[e]) * 0.75f;
  ExpectSame(want, DeqBlock(T::kTQ1_0, b));
}

// TQ2_0: element 128h + 32l + m is bits 2l of qs[32h + m]; value (q - 1) * d.
TEST(Dequantize, Tq2_0) {
  BlockTq2_0 b{};
  for (int k = 0; k < 64; ++k) b.qs[k] = static_cast<uint8_t>(k * 53 + 19);
  b.d = H(1.25f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    const int q = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
    want[e] = static_cast<float>(q - 1) * 1.25f;
  }
  ExpectSame(want, DeqBlock(T::kTQ2_0, b));
}

// The 2-bit quants of Q2_K / Q3_K: element e sits in qs[32*(e/128) + e%32] at
// bit 2*((e%128)/32); each 16 elements share scales[e/16].
int K2Bits(const uint8_t* qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

TEST(Dequantize, Q2_K) {
  BlockQ2_K b{};
  for (int k = 0; k < 16; ++k) b.scales[k] = static_cast<uint8_t>((k % 16) | (((k * 7) % 16) << 4));
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(i * 37 + 11);
  b.d = H(0.037f);
  b.dmin = H(0.011f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    const float dl = F(b.d) * static_cast<float>(b.scales[e / 16] & 0xF);  // low nibble: scale
    const float ml = F(b.dmin) * static_cast<float>(b.scales[e / 16] >> 4);  // high nibble: min
    want[e] = dl * static_cast<float>(K2Bits(b.qs, e)) - ml;
  }
  ExpectSame(want, DeqBlock(T::kQ2_K, b));
}

// Q3_K: 16 six-bit scales (biased by 32): low 4 bits in a nibble of bytes 0..7
// (scale k < 8: low nibble of byte k; k >= 8: high nibble of byte k-8), top 2
// bits at bit 2*(k/4) of byte 8 + k%4. The 3rd quant bit of element e is bit
// e/32 of hmask[e%32]; when it is clear the value is lowered by 4.
TEST(Dequantize, Q3_KScalesAndHmask) {
  int s[16];
  for (int k = 0; k < 16; ++k) s[k] = (k * 13 + 5) % 64;
  s[3] = 0;
  s[12] = 63;
  BlockQ3_K b{};
  for (int k = 0; k < 16; ++k) {
    if (k < 8) b.scales[k] = static_cast<uint8_t>(b.scales[k] | (s[k] & 0xF));
    else b.scales[k - 8] = static_cast<uint8_t>(b.scales[k - 8] | ((s[k] & 0xF) << 4));
    b.scales[8 + k % 4] = static_cast<uint8_t>(b.scales[8 + k % 4] | ((s[k] >> 4) << (2 * (k / 4))));
  }
  for (int i = 0; i < 32; ++i) b.hmask[i] = static_cast<uint8_t>(i * 53 + 17);
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(i * 29 + 3);
  b.d = H(0.0173f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    const bool high = (b.hmask[e % 32] >> (e / 32)) & 1;
    const int q = K2Bits(b.qs, e) - (high ? 0 : 4);
    const float dl = F(b.d) * static_cast<float>(s[e / 16] - 32);
    want[e] = dl * static_cast<float>(q);
  }
  ExpectSame(want, DeqBlock(T::kQ3_K, b));
}

// Q4_K / Q5_K: 8 six-bit scales sc[k] and mins mn[k], one per 32 elements.
// k < 4: sc[k] = low 6 bits of byte k, mn[k] = low 6 bits of byte k+4.
// k >= 4: low 4 bits in byte k+4 (scale low nibble, min high nibble), top 2
// bits in bits 6..7 of byte k-4 (scale) and byte k (min).
void PackScaleMinK4(const int sc[8], const int mn[8], uint8_t out[12]) {
  std::memset(out, 0, 12);
  for (int k = 0; k < 4; ++k) {
    out[k] = static_cast<uint8_t>(sc[k] | ((sc[k + 4] >> 4) << 6));
    out[k + 4] = static_cast<uint8_t>(mn[k] | ((mn[k + 4] >> 4) << 6));
    out[k + 8] = static_cast<uint8_t>((sc[k + 4] & 0xF) | ((mn[k + 4] & 0xF) << 4));
  }
}
constexpr int kSc[8] = {1, 63, 17, 33, 48, 5, 62, 40};
constexpr int kMn[8] = {0, 12, 63, 7, 50, 31, 2, 61};
// 4-bit quant of element e: 64-element chunks; the first 32 are the low
// nibbles of qs[32c .. 32c+31], the next 32 the high nibbles.
int K4Nibble(const uint8_t* qs, int e) {
  const uint8_t byte = qs[32 * (e / 64) + e % 32];
  return (e % 64) < 32 ? (byte & 0xF) : (byte >> 4);
}

TEST(Dequantize, Q4_KScalesBelowAndAboveFour) {
  BlockQ4_K b{};
  PackScaleMinK4(kSc, kMn, b.scales);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(i * 41 + 5);
  b.d = H(0.01f);
  b.dmin = H(0.003f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    const float d1 = F(b.d) * static_cast<float>(kSc[e / 32]);
    const float m1 = F(b.dmin) * static_cast<float>(kMn[e / 32]);
    want[e] = d1 * static_cast<float>(K4Nibble(b.qs, e)) - m1;
  }
  ExpectSame(want, DeqBlock(T::kQ4_K, b));
}

// Q5_K: as Q4_K plus a 5th bit: bit e/32 of qh[e%32] adds 16.
TEST(Dequantize, Q5_K) {
  BlockQ5_K b{};
  PackScaleMinK4(kSc, kMn, b.scales);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(i * 41 + 5);
  for (int i = 0; i < 32; ++i) b.qh[i] = static_cast<uint8_t>(i * 23 + 9);
  b.d = H(0.0071f);
  b.dmin = H(0.0029f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    const int q = K4Nibble(b.qs, e) + (((b.qh[e % 32] >> (e / 32)) & 1) ? 16 : 0);
    const float d1 = F(b.d) * static_cast<float>(kSc[e / 32]);
    const float m1 = F(b.dmin) * static_cast<float>(kMn[e / 32]);
    want[e] = d1 * static_cast<float>(q) - m1;
  }
  ExpectSame(want, DeqBlock(T::kQ5_K, b));
}

// Q6_K: per 128 elements (half h), 32-element group g (0..3), index l:
// low 4 bits: g=0 low nibble of ql[64h+l], g=1 low nibble of ql[64h+32+l],
// g=2 high nibble of ql[64h+l], g=3 high nibble of ql[64h+32+l];
// high 2 bits: bits 2g of qh[32h+l]; value (q - 32) * d * scales[e/16].
TEST(Dequantize, Q6_KLowHighSplit) {
  BlockQ6_K b{};
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>(i * 31 + 7);
  for (int i = 0; i < 64; ++i) b.qh[i] = static_cast<uint8_t>(i * 17 + 3);
  for (int k = 0; k < 16; ++k) b.scales[k] = static_cast<int8_t>(k * 19 - 128);
  b.scales[5] = 127;
  b.d = H(0.031f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, g = (e % 128) / 32, l = e % 32;
    const uint8_t lo_byte = b.ql[64 * h + 32 * (g % 2) + l];
    const int low = g < 2 ? (lo_byte & 0xF) : (lo_byte >> 4);
    const int high = (b.qh[32 * h + l] >> (2 * g)) & 3;
    const int q = (low | (high << 4)) - 32;
    want[e] = F(b.d) * static_cast<float>(b.scales[e / 16]) * static_cast<float>(q);
  }
  ExpectSame(want, DeqBlock(T::kQ6_K, b));
}

TEST(Dequantize, Q8_K) {
  BlockQ8_K b{};
  b.d = 0.375f;
  for (int j = 0; j < 256; ++j) b.qs[j] = static_cast<int8_t>(static_cast<uint8_t>(j * 7));
  std::vector<float> want(256);
  for (int j = 0; j < 256; ++j) want[j] = 0.375f * static_cast<float>(b.qs[j]);
  ExpectSame(want, DeqBlock(T::kQ8_K, b));
}

// IQ2_XXS: per 32 elements, 8 bytes: 4 grid indices, then a u32 holding four
// 7-bit sign fields (bits 7l..7l+6) and a 4-bit scale s (bits 28..31);
// db = d * (0.5 + s) * 0.25; element 32ib + 8l + j = db * grid[idx_l] byte j * sign j.
TEST(Dequantize, Iq2_xxsSignsAndScales) {
  BlockIq2_xxs b{};
  b.d = H(0.0625f);
  uint8_t raw[64];
  uint8_t idx[8][4], s7[8][4];
  int sc[8];
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t aux = 0;
    sc[ib] = (ib * 5 + 3) & 15;
    for (int l = 0; l < 4; ++l) {
      idx[ib][l] = static_cast<uint8_t>(ib * 31 + l * 67 + 5);
      s7[ib][l] = static_cast<uint8_t>((ib * 13 + l * 29 + 1) & 127);
      raw[8 * ib + l] = idx[ib][l];
      aux |= static_cast<uint32_t>(s7[ib][l]) << (7 * l);
    }
    aux |= static_cast<uint32_t>(sc[ib]) << 28;
    std::memcpy(raw + 8 * ib + 4, &aux, 4);
  }
  std::memcpy(b.qs, raw, 64);
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib) {
    const float db = F(b.d) * (0.5f + static_cast<float>(sc[ib])) * 0.25f;
    for (int l = 0; l < 4; ++l)
      for (int j = 0; j < 8; ++j)
        want[32 * ib + 8 * l + j] = db * GridU8(kIq2XxsGrid[idx[ib][l]], j) * SignOf(Signs8(s7[ib][l]), j);
  }
  ExpectSame(want, DeqBlock(T::kIQ2_XXS, b));
}

// IQ2_XS: u16 per 8 elements = 9-bit grid index | 7 sign bits << 9; scales[ib]
// low nibble for the first 16 elements of the 32, high nibble for the rest.
TEST(Dequantize, Iq2_xs) {
  BlockIq2_xs b{};
  b.d = H(0.05f);
  for (int ib = 0; ib < 8; ++ib) {
    b.scales[ib] = static_cast<uint8_t>(((ib * 3) & 15) | (((15 - ib * 2) & 15) << 4));
    for (int l = 0; l < 4; ++l) {
      const int idx = (ib * 97 + l * 131 + 3) & 511;
      const int s7 = (ib * 11 + l * 41 + 2) & 127;
      b.qs[4 * ib + l] = static_cast<uint16_t>(idx | (s7 << 9));
    }
  }
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib)
    for (int l = 0; l < 4; ++l) {
      const int nib = l < 2 ? (b.scales[ib] & 15) : (b.scales[ib] >> 4);
      const float db = F(b.d) * (0.5f + static_cast<float>(nib)) * 0.25f;
      const uint16_t q = b.qs[4 * ib + l];
      for (int j = 0; j < 8; ++j)
        want[32 * ib + 8 * l + j] =
            db * GridU8(kIq2XsGrid[q & 511], j) * SignOf(Signs8(static_cast<uint8_t>(q >> 9)), j);
    }
  ExpectSame(want, DeqBlock(T::kIQ2_XS, b));
}

// IQ2_S: grid index = qs[4ib+l] | bits 2l..2l+1 of qh[ib] << 8; full sign
// byte qs[32 + 4ib + l].
TEST(Dequantize, Iq2_s) {
  BlockIq2_s b{};
  b.d = H(0.04f);
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<uint8_t>(i * 71 + 13);
  for (int i = 0; i < 32; ++i) b.qs[32 + i] = static_cast<uint8_t>(i * 59 + 200);
  for (int ib = 0; ib < 8; ++ib) {
    b.qh[ib] = static_cast<uint8_t>(ib * 45 + 27);
    b.scales[ib] = static_cast<uint8_t>((ib * 7 + 1) & 0xFF);
  }
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib)
    for (int l = 0; l < 4; ++l) {
      const int nib = l < 2 ? (b.scales[ib] & 15) : (b.scales[ib] >> 4);
      const float db = F(b.d) * (0.5f + static_cast<float>(nib)) * 0.25f;
      const int idx = b.qs[4 * ib + l] | (((b.qh[ib] >> (2 * l)) & 3) << 8);
      for (int j = 0; j < 8; ++j)
        want[32 * ib + 8 * l + j] = db * GridU8(kIq2SGrid[idx], j) * SignOf(b.qs[32 + 4 * ib + l], j);
    }
  ExpectSame(want, DeqBlock(T::kIQ2_S, b));
}

// IQ3_XXS: qs[0..63] are grid indices (8 per 32 elements, 4 elements each);
// qs[64 + 4ib] is a u32 of four 7-bit sign fields and a 4-bit scale on top;
// db = d * (0.5 + s) * 0.5.
TEST(Dequantize, Iq3_xxs) {
  BlockIq3_xxs b{};
  b.d = H(0.03f);
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(i * 83 + 1);
  uint32_t aux[8];
  for (int ib = 0; ib < 8; ++ib) {
    aux[ib] = 0;
    for (int l = 0; l < 4; ++l) aux[ib] |= static_cast<uint32_t>((ib * 19 + l * 37 + 5) & 127) << (7 * l);
    aux[ib] |= static_cast<uint32_t>((ib * 9 + 2) & 15) << 28;
    std::memcpy(b.qs + 64 + 4 * ib, &aux[ib], 4);
  }
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib) {
    const float db = F(b.d) * (0.5f + static_cast<float>(aux[ib] >> 28)) * 0.5f;
    for (int l = 0; l < 4; ++l) {
      const uint8_t signs = Signs8(static_cast<uint8_t>((aux[ib] >> (7 * l)) & 127));
      for (int j = 0; j < 8; ++j) {
        const uint32_t entry = kIq3XxsGrid[b.qs[8 * ib + 2 * l + j / 4]];
        want[32 * ib + 8 * l + j] = db * GridU8(entry, j % 4) * SignOf(signs, j);
      }
    }
  }
  ExpectSame(want, DeqBlock(T::kIQ3_XXS, b));
}

// IQ3_S: grid index k of 32-element block ib = qs[8ib+k] | bit k of qh[ib]
// << 8 (4 elements each); sign byte signs[4ib + l] covers elements 8l..8l+7;
// scale nibble ib%2 of scales[ib/2], db = d * (1 + 2 * nibble).
TEST(Dequantize, Iq3_s) {
  BlockIq3_s b{};
  b.d = H(0.02f);
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(i * 47 + 9);
  for (int i = 0; i < 8; ++i) b.qh[i] = static_cast<uint8_t>(i * 89 + 77);
  for (int i = 0; i < 32; ++i) b.signs[i] = static_cast<uint8_t>(i * 13 + 101);
  for (int i = 0; i < 4; ++i) b.scales[i] = static_cast<uint8_t>(i * 67 + 15);
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib) {
    const int nib = (ib % 2 == 0) ? (b.scales[ib / 2] & 15) : (b.scales[ib / 2] >> 4);
    const float db = F(b.d) * static_cast<float>(1 + 2 * nib);
    for (int l = 0; l < 4; ++l)
      for (int j = 0; j < 8; ++j) {
        const int k = 2 * l + j / 4;
        const int idx = b.qs[8 * ib + k] | (((b.qh[ib] >> k) & 1) << 8);
        want[32 * ib + 8 * l + j] = db * GridU8(kIq3SGrid[idx], j % 4) * SignOf(b.signs[4 * ib + l], j);
      }
  }
  ExpectSame(want, DeqBlock(T::kIQ3_S, b));
}

// IQ1_S: qh[ib] (u16) = 3 index bits per group at 3l, a 3-bit scale s at bit
// 12, and the delta sign at bit 15; value d * (2s + 1) * (grid + delta),
// delta = -0.125 if bit 15 is set, else +0.125.
TEST(Dequantize, Iq1_sDeltaSign) {
  BlockIq1_s b{};
  b.d = H(0.1f);
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<uint8_t>(i * 101 + 3);
  for (int ib = 0; ib < 8; ++ib) {
    uint16_t qh = 0;
    for (int l = 0; l < 4; ++l) qh = static_cast<uint16_t>(qh | (((ib + 3 * l) & 7) << (3 * l)));
    qh = static_cast<uint16_t>(qh | ((ib % 8) << 12) | ((ib % 2) << 15));
    b.qh[ib] = qh;
  }
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib) {
    const int s = (b.qh[ib] >> 12) & 7;
    const float dl = F(b.d) * static_cast<float>(2 * s + 1);
    const float delta = (b.qh[ib] >> 15) ? -0.125f : 0.125f;
    for (int l = 0; l < 4; ++l) {
      const int idx = b.qs[4 * ib + l] | (((b.qh[ib] >> (3 * l)) & 7) << 8);
      for (int j = 0; j < 8; ++j) {
        const auto g = static_cast<int8_t>(static_cast<uint8_t>(kIq1SGrid[idx] >> (8 * j)));
        want[32 * ib + 8 * l + j] = dl * (static_cast<float>(g) + delta);
      }
    }
  }
  ExpectSame(want, DeqBlock(T::kIQ1_S, b));
}

// IQ1_M: no separate d. The scales bytes are four little-endian u16 words; the
// top nibble of word w is bits 4w..4w+3 of the block's F16 scale. Word ib/2
// holds, at bit 6*(ib%2), two 3-bit scales: s1 (groups 0-1) and s2 (groups
// 2-3). qh[2ib + l/2], nibble l%2: 3 index bits and the delta sign (bit 3).
TEST(Dequantize, Iq1_mPackedScale) {
  BlockIq1_m b{};
  const uint16_t d = H(0.046875f);
  int s1[8], s2[8];
  uint16_t words[4] = {0, 0, 0, 0};
  for (int ib = 0; ib < 8; ++ib) {
    s1[ib] = (ib * 3 + 1) & 7;
    s2[ib] = (ib * 5 + 6) & 7;
    words[ib / 2] = static_cast<uint16_t>(words[ib / 2] | ((s1[ib] | (s2[ib] << 3)) << (6 * (ib % 2))));
  }
  for (int w = 0; w < 4; ++w) words[w] = static_cast<uint16_t>(words[w] | (((d >> (4 * w)) & 0xF) << 12));
  std::memcpy(b.scales, words, 8);
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<uint8_t>(i * 37 + 250);
  for (int i = 0; i < 16; ++i) b.qh[i] = static_cast<uint8_t>(i * 73 + 41);
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib)
    for (int l = 0; l < 4; ++l) {
      const int nibble = (b.qh[2 * ib + l / 2] >> (4 * (l % 2))) & 0xF;
      const int idx = b.qs[4 * ib + l] | ((nibble & 7) << 8);
      const float delta = (nibble & 8) ? -0.125f : 0.125f;
      const float dl = F(d) * static_cast<float>(2 * (l < 2 ? s1[ib] : s2[ib]) + 1);
      for (int j = 0; j < 8; ++j) {
        const auto g = static_cast<int8_t>(static_cast<uint8_t>(kIq1SGrid[idx] >> (8 * j)));
        want[32 * ib + 8 * l + j] = dl * (static_cast<float>(g) + delta);
      }
    }
  ExpectSame(want, DeqBlock(T::kIQ1_M, b));
}

// IQ4_XS: 6-bit scale ls of 32-element block ib: low 4 bits are nibble ib%2 of
// scales_l[ib/2], high 2 bits are bits 2ib of scales_h; dl = d * (ls - 32);
// nibbles as IQ4_NL within each 32.
TEST(Dequantize, Iq4_xs) {
  const int ls[8] = {0, 63, 32, 1, 47, 16, 33, 31};
  BlockIq4_xs b{};
  b.d = H(0.02f);
  for (int ib = 0; ib < 8; ++ib) {
    b.scales_l[ib / 2] = static_cast<uint8_t>(b.scales_l[ib / 2] | ((ls[ib] & 0xF) << (4 * (ib % 2))));
    b.scales_h = static_cast<uint16_t>(b.scales_h | ((ls[ib] >> 4) << (2 * ib)));
  }
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(i * 43 + 21);
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib) {
    const float dl = F(b.d) * static_cast<float>(ls[ib] - 32);
    for (int j = 0; j < 16; ++j) {
      want[32 * ib + j] = dl * static_cast<float>(kIq4[b.qs[16 * ib + j] & 0xF]);
      want[32 * ib + 16 + j] = dl * static_cast<float>(kIq4[b.qs[16 * ib + j] >> 4]);
    }
  }
  ExpectSame(want, DeqBlock(T::kIQ4_XS, b));
}

TEST(Dequantize, MultiBlockRowAtAnyAlignment) {
  BlockQ4_0 a{}, c{};
  a.d = H(1.0f);
  c.d = H(-2.0f);
  for (int j = 0; j < 16; ++j) {
    a.qs[j] = static_cast<uint8_t>(j * 17);
    c.qs[j] = static_cast<uint8_t>(255 - j * 3);
  }
  std::vector<uint8_t> row = Bytes(a);
  const std::vector<uint8_t> second = Bytes(c);
  row.insert(row.end(), second.begin(), second.end());
  const std::vector<float> want = Deq(T::kQ4_0, row, 64);
  ExpectSame(DeqBlock(T::kQ4_0, c), std::vector<float>(want.begin() + 32, want.end()));
  // The same bytes one byte off an aligned address.
  std::vector<uint8_t> shifted(row.size() + 1);
  std::memcpy(shifted.data() + 1, row.data(), row.size());
  std::vector<float> out(64);
  ASSERT_TRUE(DequantizeRow(T::kQ4_0, std::span<const uint8_t>(shifted).subspan(1), out).ok());
  ExpectSame(want, out);
}

TEST(Dequantize, RowLengthErrors) {
  std::vector<uint8_t> src(144);
  std::vector<float> dst(100);
  Status s = DequantizeRow(T::kQ4_K, src, dst);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not a whole number of 256-element blocks"), std::string::npos) << s.message();

  dst.resize(256);
  src.resize(143);
  s = DequantizeRow(T::kQ4_K, src, dst);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Q4_K row of 256 elements takes 144 bytes, found 143"), std::string::npos)
      << s.message();

  src.resize(145);
  EXPECT_EQ(DequantizeRow(T::kQ4_K, src, dst).code(), StatusCode::kInvalidArgument);

  // Nothing is written on error.
  dst.assign(32, 7.0f);
  src.assign(17, 0);
  EXPECT_FALSE(DequantizeRow(T::kQ4_0, src, dst).ok());
  for (float v : dst) EXPECT_EQ(v, 7.0f);

  // An empty row is fine.
  EXPECT_TRUE(DequantizeRow(T::kQ4_K, {}, {}).ok());
}

TEST(Dequantize, TypesWithoutDequantizer) {
  std::vector<uint8_t> src(36);
  std::vector<float> dst(32);
  const Status s = DequantizeRow(T::kQ8_1, src, dst);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_NE(s.message().find("Q8_1"), std::string::npos) << s.message();
  for (GgmlType t : {T::kQ8_1, T::kI8, T::kI16, T::kI32, T::kI64, T::kF64}) {
    EXPECT_FALSE(HasDequantizer(t)) << TypeName(t);
    EXPECT_EQ(DequantizeRow(t, {}, {}).code(), StatusCode::kUnsupported) << TypeName(t);
  }
  EXPECT_EQ(DequantizeRow(static_cast<GgmlType>(4), {}, {}).code(), StatusCode::kInvalidArgument);
  int with = 0;
  for (const GgmlTypeInfo& info : AllGgmlTypes()) with += HasDequantizer(info.type) ? 1 : 0;
  EXPECT_EQ(with, 29);  // every weight type, plus Q8_K
}

}  // namespace
}  // namespace strata
