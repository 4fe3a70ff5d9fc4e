// Activation converters: the SIMD versions write exactly the bytes of the
// scalar references (quantize.h, activation.h), on random rows and on edge
// cases (zero blocks, ties for the largest |x|, exact halves, tiny and huge
// magnitudes); the Q8_1 and AsF32 references match their definitions.
// SwiGLU's gate (swiglu.h): the SIMD versions within a few ulp of the
// reference, with the same bits for a value wherever it falls.

#include "runtime/kernels/activation.h"
#include "runtime/kernels/swiglu.h"

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

// SwiGLU's gate: the reference is silu(g) * u with exp in double; the SIMD
// versions (vector exp) stay within 8 ulp of it (relative 1e-6), over the
// range where silu bends, large magnitudes where it saturates (exp
// overflowing or vanishing), zeros and NaN, at every length 0 .. 70 (the
// padded tail), and give each value the same bits at any offset.
TEST(SwiGlu, SimdWithinUlpsOfTheReference) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> bend(-12.0f, 12.0f), wide(-120.0f, 120.0f), up(-3.0f, 3.0f);
  std::vector<float> g0, u0;
  for (int i = 0; i < 4000; ++i) {
    g0.push_back(i % 4 == 3 ? wide(rng) : bend(rng));
    u0.push_back(up(rng));
  }
  for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.0f, -88.0f, 88.4f, -88.4f, 89.0f, -89.0f, 104.0f, -104.0f,
                  1e30f, -1e30f, 3.4e38f, -3.4e38f}) {
    g0.push_back(x);
    u0.push_back(1.5f);
  }
  // Within 1e-6 relative (8 ulp) or 1e-30 absolute; an infinity exactly.
  auto close = [](auto got_value, auto want_value) {
    const double got = static_cast<double>(got_value), want = static_cast<double>(want_value);
    return std::isinf(want) ? got == want : std::fabs(got - want) <= 1e-6 * std::fabs(want) + 1e-30;
  };
  std::vector<float> want = g0;
  kernels::SwiGluRef(want.data(), u0.data(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {  // the reference is its definition
    const double x = static_cast<double>(g0[i]);
    double s = x / (1.0 + std::exp(-x)) * static_cast<double>(u0[i]);
    if (std::fabs(s) > 3.4028234663852886e38) s = s > 0 ? HUGE_VAL : -HUGE_VAL;  // past the float range
    EXPECT_TRUE(close(want[i], s)) << "reference " << want[i] << " at " << g0[i] << ", want " << s;
  }
  for (IsaLevel isa : {IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    if (!CpuSupports(isa)) continue;
    SCOPED_TRACE(IsaName(isa));
    const kernels::SwiGluFn fn = kernels::SwiGluFor(isa);
    ASSERT_NE(fn, &kernels::SwiGluRef);
    std::vector<float> got = g0;
    fn(got.data(), u0.data(), static_cast<int64_t>(got.size()));
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_TRUE(close(got[i], want[i])) << "x " << g0[i] << " u " << u0[i] << ": " << got[i] << ", want " << want[i];
    // SiLU alone (the gate without u) against its reference.
    ASSERT_NE(kernels::SiluFor(isa), &kernels::SiluRef);
    std::vector<float> silu_want = g0, silu_got = g0;
    kernels::SiluRef(silu_want.data(), static_cast<int64_t>(silu_want.size()));
    kernels::SiluFor(isa)(silu_got.data(), static_cast<int64_t>(silu_got.size()) - 3);  // a tail of 13 (AVX-512) / 5
    for (size_t i = 0; i + 3 < silu_got.size(); ++i)
      EXPECT_TRUE(close(silu_got[i], silu_want[i])) << "silu " << g0[i] << ": " << silu_got[i] << ", want " << silu_want[i];
    for (size_t i = silu_got.size() - 3; i < silu_got.size(); ++i) EXPECT_EQ(silu_got[i], g0[i]);  // past n: untouched
    // Every length and offset: the same bits as the whole run (the tail is
    // padded, not scalar), NaN stays NaN, and nothing past n is written.
    for (int64_t off : {0, 1, 5}) {
      for (int64_t n = 0; n <= 70; ++n) {
        std::vector<float> part(g0.begin() + off, g0.begin() + off + n + 4);
        part[static_cast<size_t>(n)] = std::nanf("");
        fn(part.data(), u0.data() + off, n + 1);
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(std::memcmp(&part[static_cast<size_t>(i)], &got[static_cast<size_t>(off + i)], sizeof(float)), 0)
              << "n " << n << " offset " << off << " value " << i;
        EXPECT_TRUE(std::isnan(part[static_cast<size_t>(n)])) << "n " << n;
        for (int64_t i = n + 1; i < n + 4; ++i) EXPECT_EQ(part[static_cast<size_t>(i)], g0[static_cast<size_t>(off + i)]);
      }
    }
  }
  std::vector<float> nan_in = {std::nanf("")}, one = {1.0f};
  kernels::SwiGluRef(nan_in.data(), one.data(), 1);
  EXPECT_TRUE(std::isnan(nan_in[0]));
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
