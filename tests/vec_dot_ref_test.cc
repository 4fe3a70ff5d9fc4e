// The scalar reference vec_dot of every weight type equals the dot product of
// the reference-dequantized weights with the activations decoded back to
// floats, within the rounding bound of tests/testing/kernel_check.h. This is
// what makes it a reference: its integer sums and scale factors describe the
// same numbers the dequantizer does.

#include "runtime/kernels/vec_dot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/kernels/activation.h"
#include "runtime/quant/dequantize.h"
#include "runtime/quant/fp_convert.h"
#include "tests/testing/kernel_check.h"

namespace strata {
namespace {

using testing::AllowedError;
using testing::DecodeActivationRow;
using testing::DequantizeWeightRow;
using testing::ErrorScale;
using testing::ExactDot;

TEST(VecDotReference, CoversExactlyTheWeightTypesWithADequantizer) {
  int n = 0;
  for (const GgmlTypeInfo& info : AllGgmlTypes()) {
    EXPECT_EQ(HasVecDot(info.type), info.weight && HasDequantizer(info.type)) << info.name;
    n += HasVecDot(info.type) ? 1 : 0;
  }
  EXPECT_EQ(n, 28);
  EXPECT_FALSE(HasVecDot(GgmlType::kQ8_K));
  EXPECT_FALSE(HasVecDot(GgmlType::kQ8_1));
}

TEST(VecDotReference, ActivationFormatsAreLlamaCppVecDotTypes) {
  EXPECT_EQ(VecDotFormat(GgmlType::kF32), ActFormat::kF32);
  EXPECT_EQ(VecDotFormat(GgmlType::kF16), ActFormat::kF16);
  EXPECT_EQ(VecDotFormat(GgmlType::kBF16), ActFormat::kBF16);
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kIQ4_NL, GgmlType::kMXFP4,
                     GgmlType::kNVFP4, GgmlType::kQ1_0, GgmlType::kQ2_0})
    EXPECT_EQ(VecDotFormat(t), ActFormat::kQ8_0) << TypeName(t);
  EXPECT_EQ(VecDotFormat(GgmlType::kQ4_1), ActFormat::kQ8_1);
  EXPECT_EQ(VecDotFormat(GgmlType::kQ5_1), ActFormat::kQ8_1);
  for (GgmlType t : {GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
                     GgmlType::kIQ2_XXS, GgmlType::kIQ2_XS, GgmlType::kIQ2_S, GgmlType::kIQ3_XXS, GgmlType::kIQ3_S,
                     GgmlType::kIQ1_S, GgmlType::kIQ1_M, GgmlType::kIQ4_XS, GgmlType::kTQ1_0, GgmlType::kTQ2_0})
    EXPECT_EQ(VecDotFormat(t), ActFormat::kQ8_K) << TypeName(t);
}

// Q4_1/Q5_1 against Q8_1: ggml's dot multiplies each weight block's min m by
// the activation block's s = F16(d * sum q), computed from the unrounded d,
// where the decoded activations would give sum(F16(d) * q). The difference,
// sum over blocks of m * (s - sum of decoded activations), is part of what
// llama.cpp computes, so the expected value includes it.
double Q8_1SumCorrection(GgmlType type, const uint8_t* w, const uint8_t* act, const std::vector<float>& ad) {
  if (VecDotFormat(type) != ActFormat::kQ8_1) return 0.0;
  const uint32_t w_block = TypeInfo(type).block_bytes;
  double correction = 0.0;
  for (size_t b = 0; b < ad.size() / 32; ++b) {
    uint16_t m, s;
    std::memcpy(&m, w + b * w_block + 2, 2);   // Q4_1/Q5_1: half d, half m, ...
    std::memcpy(&s, act + b * 36 + 2, 2);      // Q8_1: half d, half s, ...
    double sum = 0.0;
    for (size_t i = 32 * b; i < 32 * b + 32; ++i) sum += static_cast<double>(ad[i]);
    correction += static_cast<double>(Fp16ToFp32(m)) * (static_cast<double>(Fp16ToFp32(s)) - sum);
  }
  return correction;
}

// For every type, several row lengths and seeds: |vec_dot - exact| within the
// bound, and the worst ratio is reported so a loose bound would be noticed.
TEST(VecDotReference, MatchesDequantizedDotForEveryType) {
  for (const GgmlTypeInfo& info : AllGgmlTypes()) {
    if (!HasVecDot(info.type)) continue;
    SCOPED_TRACE(std::string(info.name));
    const ActFormat format = VecDotFormat(info.type);
    const int64_t unit = std::max<int64_t>(info.block_elems, 256);  // whole activation blocks too
    double worst = 0.0;
    for (int64_t blocks : {1, 2, 7}) {
      const int64_t k = unit * blocks;
      for (uint64_t seed = 1; seed <= 4; ++seed) {
        std::mt19937_64 rng(seed * 1000 + blocks);
        const std::vector<uint8_t> w = testing::RandomMatrix(info.type, 1, k, rng);
        const std::vector<float> x = testing::RandomActivations(1, k, rng);
        std::vector<uint8_t> act(ActRowBytes(format, k));
        QuantizeActivationRowReference(format, x.data(), act.data(), k);
        const std::vector<float> wd = DequantizeWeightRow(info.type, w.data(), k);
        const std::vector<float> ad = DecodeActivationRow(format, act.data(), k);
        const double exact = ExactDot(wd, ad) + Q8_1SumCorrection(info.type, w.data(), act.data(), ad);
        const double got = static_cast<double>(VecDotReference(info.type, w.data(), act.data(), k));
        const double allowed = AllowedError(info.type, k, ErrorScale(info.type, wd, ad));
        ASSERT_LE(std::fabs(got - exact), allowed) << "k=" << k << " seed=" << seed << " exact=" << exact;
        worst = std::max(worst, std::fabs(got - exact) / allowed);
      }
    }
    RecordProperty(std::string(info.name) + "_worst_ratio", std::to_string(worst));
    EXPECT_LT(worst, 0.5);
  }
}

// Hand-checkable case: Q8_0 weights of all 1 (d = 1) against activations that
// quantize exactly give the plain integer sum.
TEST(VecDotReference, Q8_0IntegerSumIsExact) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = static_cast<float>((i % 2 ? -1 : 1) * (i % 127));
  x[0] = 127.0f;
  x[32] = -127.0f;  // amax 127 in both blocks: d = 1, q = x
  std::vector<uint8_t> act(ActRowBytes(ActFormat::kQ8_0, 64));
  QuantizeActivationRowReference(ActFormat::kQ8_0, x.data(), act.data(), 64);
  std::vector<uint8_t> w(2 * 34, 1);
  for (int b = 0; b < 2; ++b) {
    w[34 * b] = 0x00;
    w[34 * b + 1] = 0x3C;  // half 1.0
  }
  double want = 0.0;
  for (float v : x) want += static_cast<double>(v);
  EXPECT_EQ(VecDotReference(GgmlType::kQ8_0, w.data(), act.data(), 64), static_cast<float>(want));
}

}  // namespace
}  // namespace strata
