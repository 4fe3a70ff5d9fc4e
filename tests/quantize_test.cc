#include "runtime/quant/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "runtime/quant/blocks.h"
#include "runtime/quant/dequantize.h"
#include "runtime/quant/fp_convert.h"

namespace strata {
namespace {

using T = GgmlType;

std::vector<uint8_t> QuantizeQ8_0(Q8_0Rule rule, const std::vector<float>& x) {
  std::vector<uint8_t> out(x.size() / 32 * sizeof(BlockQ8_0));
  const Status s = QuantizeRowQ8_0(rule, x, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

std::vector<uint8_t> QuantizeQ8_K(const std::vector<float>& x) {
  std::vector<uint8_t> out(x.size() / 256 * sizeof(BlockQ8_K));
  const Status s = QuantizeRow(T::kQ8_K, x, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

TEST(NearestInt, RoundsHalvesToEven) {
  EXPECT_EQ(NearestInt(2.5f), 2);
  EXPECT_EQ(NearestInt(3.5f), 4);
  EXPECT_EQ(NearestInt(-2.5f), -2);
  EXPECT_EQ(NearestInt(-3.5f), -4);
  EXPECT_EQ(NearestInt(0.49999997f), 0);
  EXPECT_EQ(NearestInt(-0.5f), 0);
  EXPECT_EQ(NearestInt(126.6f), 127);
  EXPECT_EQ(NearestInt(1000000.5f), 1000000);
  EXPECT_EQ(NearestInt(-4194303.0f), -4194303);
}

// Hand-picked Q8_0 row: an all-zero block, a block whose largest |x| is
// negative (-127, so d = 1 exactly and q = round(x)), and a block with
// amax 63.5 (d = 0.5, q = round(2x)). Halves show the two rounding rules.
TEST(QuantizeQ8_0, ExactBytesOnHandPickedRow) {
  std::vector<float> x(96, 0.0f);
  float* b1 = x.data() + 32;
  b1[0] = -127.0f;
  b1[1] = 2.5f;
  b1[2] = -2.5f;
  b1[3] = 0.49f;
  b1[4] = 1.5f;
  b1[5] = -0.5f;
  b1[6] = 126.6f;
  b1[7] = 3.5f;
  float* b2 = x.data() + 64;
  b2[0] = 63.5f;
  b2[1] = 1.25f;  // 2x = 2.5
  b2[2] = -0.75f; // 2x = -1.5
  b2[3] = 10.0f;

  for (Q8_0Rule rule : {Q8_0Rule::kGgmlReference, Q8_0Rule::kGgmlX86Simd}) {
    const bool ref = rule == Q8_0Rule::kGgmlReference;
    SCOPED_TRACE(ref ? "reference rule" : "x86 rule");
    const std::vector<uint8_t> bytes = QuantizeQ8_0(rule, x);
    const auto z = LoadBlock<BlockQ8_0>(bytes.data(), 0);
    EXPECT_EQ(z.d, 0x0000);
    for (int8_t q : z.qs) EXPECT_EQ(q, 0);

    const auto q1 = LoadBlock<BlockQ8_0>(bytes.data(), 1);
    EXPECT_EQ(q1.d, 0x3C00);  // 127 / 127 = 1.0
    const int8_t want1[8] = {-127, static_cast<int8_t>(ref ? 3 : 2), static_cast<int8_t>(ref ? -3 : -2), 0,
                             2, static_cast<int8_t>(ref ? -1 : 0), 127, 4};
    for (int j = 0; j < 8; ++j) EXPECT_EQ(q1.qs[j], want1[j]) << j;
    for (int j = 8; j < 32; ++j) EXPECT_EQ(q1.qs[j], 0) << j;

    const auto q2 = LoadBlock<BlockQ8_0>(bytes.data(), 2);
    EXPECT_EQ(q2.d, 0x3800);  // 63.5 / 127 = 0.5
    const int8_t want2[4] = {127, static_cast<int8_t>(ref ? 3 : 2), -2, 20};
    for (int j = 0; j < 4; ++j) EXPECT_EQ(q2.qs[j], want2[j]) << j;
  }
}

// Round trip on random data: every value comes back within half a step, where
// the step is the F16-rounded d (plus the F16 rounding of d times |q|).
TEST(QuantizeQ8_0, RoundTripErrorBound) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(32 * 200);
  for (size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * (1.0f + static_cast<float>(i / 32));
  for (Q8_0Rule rule : {Q8_0Rule::kGgmlReference, Q8_0Rule::kGgmlX86Simd}) {
    const std::vector<uint8_t> bytes = QuantizeQ8_0(rule, x);
    std::vector<float> y(x.size());
    ASSERT_TRUE(DequantizeRow(T::kQ8_0, bytes, y).ok());
    for (size_t ib = 0; ib < x.size() / 32; ++ib) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * ib + j]));
      const float bound = amax / 127.0f * 0.5f + amax * std::ldexp(1.0f, -11) + 1e-6f;
      for (int j = 0; j < 32; ++j) ASSERT_LE(std::fabs(y[32 * ib + j] - x[32 * ib + j]), bound) << ib << " " << j;
    }
  }
}

// The two rules agree except in rare last-bit cases.
TEST(QuantizeQ8_0, RulesDifferOnlyByOneStep) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<float> x(32 * 500);
  for (float& v : x) v = u(rng);
  const std::vector<uint8_t> a = QuantizeQ8_0(Q8_0Rule::kGgmlReference, x);
  const std::vector<uint8_t> b = QuantizeQ8_0(Q8_0Rule::kGgmlX86Simd, x);
  for (size_t i = 0; i < x.size() / 32; ++i) {
    const auto ba = LoadBlock<BlockQ8_0>(a.data(), static_cast<int64_t>(i));
    const auto bb = LoadBlock<BlockQ8_0>(b.data(), static_cast<int64_t>(i));
    EXPECT_EQ(ba.d, bb.d);
    for (int j = 0; j < 32; ++j) EXPECT_LE(std::abs(ba.qs[j] - bb.qs[j]), 1);
  }
}

// Q8_K: max is the signed element of largest |x|; iscale = -127/max, so a
// positive max gives a negative d. Halves round to even (nearest_int).
TEST(QuantizeQ8_K, ExactBytesOnHandPickedRow) {
  std::vector<float> x(768, 0.0f);
  // Block 0: all zero.
  // Block 1: max = -254 (negative): iscale = 0.5, d = 2, q = nearest_int(x / 2).
  float* b1 = x.data() + 256;
  b1[0] = -254.0f;
  b1[1] = 5.0f;    // 2.5 -> 2
  b1[2] = 7.0f;    // 3.5 -> 4
  b1[3] = -5.0f;   // -2.5 -> -2
  b1[17] = 100.0f;  // 50
  // Block 2: max = +127 (positive): iscale = -1, d = -1, q = -x.
  float* b2 = x.data() + 512;
  b2[3] = 127.0f;
  b2[4] = 2.5f;    // -2.5 -> -2
  b2[5] = -3.5f;   // 3.5 -> 4
  b2[200] = -126.5f;  // 126.5 -> 126

  const std::vector<uint8_t> bytes = QuantizeQ8_K(x);
  const auto z = LoadBlock<BlockQ8_K>(bytes.data(), 0);
  EXPECT_EQ(z.d, 0.0f);
  for (int8_t q : z.qs) EXPECT_EQ(q, 0);
  for (int16_t s : z.bsums) EXPECT_EQ(s, 0);

  const auto q1 = LoadBlock<BlockQ8_K>(bytes.data(), 1);
  EXPECT_EQ(q1.d, 2.0f);
  EXPECT_EQ(q1.qs[0], -127);
  EXPECT_EQ(q1.qs[1], 2);
  EXPECT_EQ(q1.qs[2], 4);
  EXPECT_EQ(q1.qs[3], -2);
  EXPECT_EQ(q1.qs[17], 50);
  EXPECT_EQ(q1.bsums[0], -127 + 2 + 4 - 2);
  EXPECT_EQ(q1.bsums[1], 50);
  for (int k = 2; k < 16; ++k) EXPECT_EQ(q1.bsums[k], 0);

  const auto q2 = LoadBlock<BlockQ8_K>(bytes.data(), 2);
  EXPECT_EQ(q2.d, -1.0f);
  EXPECT_EQ(q2.qs[3], -127);
  EXPECT_EQ(q2.qs[4], -2);
  EXPECT_EQ(q2.qs[5], 4);
  EXPECT_EQ(q2.qs[200], 126);
  EXPECT_EQ(q2.bsums[0], -127 - 2 + 4);
  EXPECT_EQ(q2.bsums[12], 126);
}

TEST(QuantizeQ8_K, RoundTripAndBsums) {
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(256 * 64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = normal(rng) * std::ldexp(1.0f, static_cast<int>(i / 256) % 20 - 10);
  const std::vector<uint8_t> bytes = QuantizeQ8_K(x);
  std::vector<float> y(x.size());
  ASSERT_TRUE(DequantizeRow(T::kQ8_K, bytes, y).ok());
  for (int64_t ib = 0; ib < static_cast<int64_t>(x.size() / 256); ++ib) {
    const auto b = LoadBlock<BlockQ8_K>(bytes.data(), ib);
    const float step = std::fabs(b.d);
    for (int j = 0; j < 256; ++j) {
      const size_t i = static_cast<size_t>(256 * ib + j);
      ASSERT_LE(std::fabs(y[i] - x[i]), step * 0.5f * (1.0f + 1e-5f)) << ib << " " << j;
    }
    for (int k = 0; k < 16; ++k) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += b.qs[16 * k + l];
      EXPECT_EQ(b.bsums[k], sum);
    }
  }
}

TEST(QuantizeRow, FloatConvertersAndCopy) {
  const std::vector<float> x = {1.0f, -2.5f, 65520.0f, 1e-8f, 3.14159f};
  std::vector<uint8_t> h(10), bf(10), f(20);
  ASSERT_TRUE(QuantizeRow(T::kF16, x, h).ok());
  ASSERT_TRUE(QuantizeRow(T::kBF16, x, bf).ok());
  ASSERT_TRUE(QuantizeRow(T::kF32, x, f).ok());
  for (size_t i = 0; i < x.size(); ++i) {
    uint16_t hv, bv;
    float fv;
    std::memcpy(&hv, h.data() + 2 * i, 2);
    std::memcpy(&bv, bf.data() + 2 * i, 2);
    std::memcpy(&fv, f.data() + 4 * i, 4);
    EXPECT_EQ(hv, Fp32ToFp16(x[i]));
    EXPECT_EQ(bv, Fp32ToBf16(x[i]));
    EXPECT_EQ(fv, x[i]);
  }
}

TEST(QuantizeRow, SizeAndTypeErrors) {
  std::vector<float> x(40);
  std::vector<uint8_t> out(34 * 2);
  Status s = QuantizeRow(T::kQ8_0, x, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not a whole number of 32-element blocks"), std::string::npos) << s.message();
  x.resize(64);
  out.resize(67);
  s = QuantizeRow(T::kQ8_0, x, out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("takes 68 bytes, found 67"), std::string::npos) << s.message();
  x.resize(256);
  out.resize(292);
  EXPECT_TRUE(QuantizeRow(T::kQ8_K, x, out).ok());
  EXPECT_EQ(QuantizeRow(T::kQ4_K, x, out).code(), StatusCode::kUnsupported);
}

// Defined output where ggml's C would convert inf/NaN to int8 (undefined).
TEST(QuantizeQ8_0, DegenerateInputsGiveDefinedBytes) {
  std::vector<float> x(32, 0.0f);
  x[0] = 1e-37f;  // amax / 127 is subnormal and 1 / d overflows to inf
  x[1] = 0.0f;    // 0 * inf = NaN
  for (Q8_0Rule rule : {Q8_0Rule::kGgmlReference, Q8_0Rule::kGgmlX86Simd}) {
    const std::vector<uint8_t> bytes = QuantizeQ8_0(rule, x);
    EXPECT_EQ(LoadBlock<BlockQ8_0>(bytes.data(), 0).d, 0x0000);
  }
  x[2] = std::nanf("");
  std::vector<uint8_t> out(34);
  EXPECT_TRUE(QuantizeRowQ8_0(Q8_0Rule::kGgmlReference, x, out).ok());
  std::vector<float> k(256, 0.0f);
  k[0] = std::numeric_limits<float>::infinity();
  std::vector<uint8_t> outk(292);
  EXPECT_TRUE(QuantizeRow(T::kQ8_K, k, outk).ok());
}

}  // namespace
}  // namespace strata
