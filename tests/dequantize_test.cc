// Hand-built blocks dequantize to the values the format defines: plain float
// types and the 32/64/128-element blocks (Q4_0..Q8_0, Q1_0, Q2_0, MXFP4,
// NVFP4, IQ4_NL, TQ1_0, TQ2_0), plus the row-size checks of DequantizeRow.
//
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
#include "tests/testing/block_test_util.h"

namespace strata {
namespace {

using T = GgmlType;
using testing::Bytes;
using testing::Deq;
using testing::DeqBlock;
using testing::ExpectSame;
using testing::F;
using testing::H;
using testing::kIq4Levels;

// E2M1 (FP4) values by code, as the OCP MX spec defines them.
constexpr float kE2M1[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f,
                             -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

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
    want[j] = 0.5f * static_cast<float>(kIq4Levels[j]);
    want[j + 16] = 0.5f * static_cast<float>(kIq4Levels[15 - j]);
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
