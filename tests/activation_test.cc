// Activation converters: the SIMD versions write exactly the bytes of the
// scalar references (quantize.h, activation.h), on random rows and on edge
// cases (zero blocks, ties for the largest |x|, exact halves, tiny and huge
// magnitudes); the Q8_1 and AsF32 references match their definitions.

#include "runtime/kernels/activation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/quant/blocks.h"
#include "runtime/quant/fp_convert.h"
#include "runtime/quant/quantize.h"
#include "tests/testing/kernel_check.h"

namespace strata {
namespace {

constexpr ActFormat kFormats[] = {ActFormat::kF32,  ActFormat::kF16,  ActFormat::kBF16, ActFormat::kF16AsF32,
                                  ActFormat::kBf16AsF32, ActFormat::kQ8_0, ActFormat::kQ8_1, ActFormat::kQ8_K};

// Rows of 512 floats that exercise the rounding and max-search rules.
std::vector<std::vector<float>> EdgeRows() {
  std::vector<std::vector<float>> rows;
  rows.emplace_back(512, 0.0f);                         // all zero: d = 0
  std::vector<float> r(512);
  for (int i = 0; i < 512; ++i) r[i] = static_cast<float>(i % 7) - 3.0f;  // ties for max |x| (+3 and -3)
  rows.push_back(r);
  for (int i = 0; i < 512; ++i) r[i] = (i % 2 ? 0.5f : -0.5f) * static_cast<float>(i % 255);  // halves
  rows.push_back(r);
  for (int i = 0; i < 512; ++i) r[i] = std::ldexp(static_cast<float>(i % 13) - 6.0f, -120);  // tiny
  rows.push_back(r);
  for (int i = 0; i < 512; ++i) r[i] = std::ldexp(static_cast<float>(i % 11) - 5.0f, 100);  // huge
  rows.push_back(r);
  for (int i = 0; i < 512; ++i) r[i] = i == 300 ? -1e-40f : 0.0f;  // one subnormal
  rows.push_back(r);
  for (int i = 0; i < 512; ++i) r[i] = i == 37 ? 65520.0f : static_cast<float>(i);  // F16 overflow boundary
  rows.push_back(r);
  std::vector<float> grid(512);
  for (int i = 0; i < 512; ++i) grid[i] = static_cast<float>(i - 256) / 2.0f;  // x * 127/amax hits halves
  rows.push_back(grid);
  return rows;
}

TEST(ActivationRows, SimdBytesEqualReferenceBytes) {
  std::mt19937_64 rng(7);
  std::vector<std::vector<float>> rows = EdgeRows();
  for (int t = 0; t < 20; ++t) rows.push_back(testing::RandomActivations(1, 512, rng));
  for (IsaLevel isa : {IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    if (!CpuSupports(isa)) continue;
    for (ActFormat f : kFormats) {
      for (size_t i = 0; i < rows.size(); ++i) {
        for (int64_t k : {256, 512}) {
          const uint64_t bytes = ActRowBytes(f, k);
          std::vector<uint8_t> want(bytes + 8, 0xA5), got(bytes + 8, 0xA5);
          QuantizeActivationRowReference(f, rows[i].data(), want.data(), k);
          QuantizeActivationRow(f, isa, rows[i].data(), got.data(), k);
          size_t first = 0;
          while (first < want.size() && want[first] == got[first]) ++first;
          EXPECT_EQ(first, want.size()) << ActFormatName(f) << " " << IsaName(isa) << " row " << i << " k " << k
                                        << ": first differing byte " << first;
        }
      }
    }
  }
}

// Float formats accept any length; the SIMD code has a scalar tail.
TEST(ActivationRows, FloatFormatsAnyLength) {
  std::mt19937_64 rng(3);
  const std::vector<float> x = testing::RandomActivations(1, 45, rng);
  for (ActFormat f : {ActFormat::kF16AsF32, ActFormat::kBf16AsF32}) {
    for (int64_t k : {1, 7, 8, 9, 45}) {
      std::vector<uint8_t> want(ActRowBytes(f, k)), got(ActRowBytes(f, k));
      QuantizeActivationRowReference(f, x.data(), want.data(), k);
      QuantizeActivationRow(f, BestIsa(), x.data(), got.data(), k);
      EXPECT_EQ(want, got) << ActFormatName(f) << " k=" << k;
    }
  }
}

TEST(ActivationRows, AsF32FormatsHoldTheRoundedValues) {
  const float x[4] = {1.0f + std::ldexp(1.0f, -12), 3.14159265f, -1e-6f, 70000.0f};
  float f16[4], bf16[4];
  QuantizeActivationRowReference(ActFormat::kF16AsF32, x, f16, 4);
  QuantizeActivationRowReference(ActFormat::kBf16AsF32, x, bf16, 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(f16[i], Fp16ToFp32(Fp32ToFp16(x[i])));
    EXPECT_EQ(bf16[i], Bf16ToFp32(Fp32ToBf16(x[i])));
  }
  EXPECT_TRUE(std::isinf(f16[3]));
}

TEST(ActivationRows, Q8_1IsQ8_0PlusScaledSum) {
  std::mt19937_64 rng(11);
  const std::vector<float> x = testing::RandomActivations(1, 64, rng);
  std::vector<uint8_t> q81(ActRowBytes(ActFormat::kQ8_1, 64)), q80(ActRowBytes(ActFormat::kQ8_0, 64));
  QuantizeRowQ8_1X86(x.data(), q81.data(), 64);
  QuantizeRowQ8_0Unchecked(Q8_0Rule::kGgmlX86Simd, x.data(), q80.data(), 64);
  for (int b = 0; b < 2; ++b) {
    const auto one = LoadBlock<BlockQ8_1>(q81.data(), b);
    const auto zero = LoadBlock<BlockQ8_0>(q80.data(), b);
    EXPECT_EQ(one.d, zero.d);
    EXPECT_EQ(0, std::memcmp(one.qs, zero.qs, 32));
    int sum = 0;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
      sum += one.qs[j];
      amax = std::max(amax, std::fabs(x[32 * b + j]));
    }
    EXPECT_EQ(one.s, Fp32ToFp16(amax / 127.0f * static_cast<float>(sum)));
  }
}

TEST(ActivationRows, SizesAndNames) {
  EXPECT_EQ(ActRowBytes(ActFormat::kQ8_0, 64), 68u);
  EXPECT_EQ(ActRowBytes(ActFormat::kQ8_1, 64), 72u);
  EXPECT_EQ(ActRowBytes(ActFormat::kQ8_K, 512), 584u);
  EXPECT_EQ(ActRowBytes(ActFormat::kF16, 5), 10u);
  EXPECT_EQ(ActRowBytes(ActFormat::kF16AsF32, 5), 20u);
  for (ActFormat f : kFormats) EXPECT_FALSE(ActFormatName(f).empty());
}

}  // namespace
}  // namespace strata
