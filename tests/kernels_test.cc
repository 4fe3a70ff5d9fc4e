// Every fast kernel against the scalar reference vec_dot, on random blocks and
// activations, at every ISA level this CPU supports: odd row counts (the row
// tiles' tails), 1..17 columns (matrix-vector path and every column-tile
// tail), rows of one to several blocks (and, for the float types, lengths
// that are not a multiple of the 32-element block). Both sides read the same
// quantized integers, so they may differ only by float rounding within the
// bound of tests/testing/kernel_check.h.

#include "runtime/kernels/gemm.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "runtime/kernels/activation.h"
#include "runtime/kernels/cpu_features.h"
#include "runtime/kernels/vec_dot.h"
#include "tests/testing/kernel_check.h"

namespace strata {
namespace {

using testing::AllowedError;
using testing::DecodeActivationRow;
using testing::DequantizeWeightRow;
using testing::ErrorScale;

// The types the brief requires a fast kernel for, at AVX2 and at AVX-512.
constexpr GgmlType kRequiredFast[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16,  GgmlType::kQ8_0,
                                      GgmlType::kQ4_0, GgmlType::kQ4_K, GgmlType::kQ5_K,  GgmlType::kQ6_K,
                                      GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kIQ4_XS, GgmlType::kIQ3_S,
                                      GgmlType::kMXFP4, GgmlType::kQ2_0};

std::vector<IsaLevel> SimdLevelsHere() {
  std::vector<IsaLevel> levels;
  for (IsaLevel l : {IsaLevel::kAvx2, IsaLevel::kAvx512})
    if (CpuSupports(l)) levels.push_back(l);
  return levels;
}

TEST(GemmKernels, RequiredTypesHaveFastKernelsAtBothLevels) {
  for (GgmlType t : kRequiredFast) {
    EXPECT_TRUE(HasFastKernel(t, IsaLevel::kAvx2)) << TypeName(t);
    EXPECT_TRUE(HasFastKernel(t, IsaLevel::kAvx512)) << TypeName(t);
    EXPECT_FALSE(HasFastKernel(t, IsaLevel::kScalar)) << TypeName(t);
    const GemmKernel* k = FindGemmKernel(t, IsaLevel::kAvx512);
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->isa, IsaLevel::kAvx512);
  }
}

TEST(GemmKernels, EveryKernelReadsTheFormatOfItsTypesValues) {
  for (IsaLevel isa : {IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    for (const GgmlTypeInfo& info : AllGgmlTypes()) {
      const GemmKernel* k = FindGemmKernel(info.type, isa);
      if (k == nullptr) continue;
      ASSERT_TRUE(HasVecDot(info.type)) << info.name;
      const ActFormat ref = VecDotFormat(info.type);
      // Same values as llama.cpp's format: identical, or its F16/BF16 rounding stored as F32.
      const bool same = k->act == ref || (ref == ActFormat::kF16 && k->act == ActFormat::kF16AsF32) ||
                        (ref == ActFormat::kBF16 && k->act == ActFormat::kBf16AsF32);
      EXPECT_TRUE(same) << info.name << " reads " << ActFormatName(k->act);
    }
  }
}

struct Shape {
  int64_t rows, cols, k;
};

// Runs the kernel for `type` at `isa` on one random problem and compares every
// output with the reference; returns the worst |diff| / allowed.
double CheckKernel(GgmlType type, IsaLevel isa, const Shape& s, uint64_t seed) {
  const GemmKernel* kernel = FindGemmKernel(type, isa);
  if (kernel == nullptr) return 0.0;
  std::mt19937_64 rng(seed);
  const std::vector<uint8_t> w = testing::RandomMatrix(type, s.rows, s.k, rng);
  const uint64_t w_row = w.size() / static_cast<uint64_t>(s.rows);
  const std::vector<float> x = testing::RandomActivations(s.cols, s.k, rng);

  const ActFormat ref_format = VecDotFormat(type);
  const uint64_t a_row = ActRowBytes(kernel->act, s.k), r_row = ActRowBytes(ref_format, s.k);
  std::vector<uint8_t> act(a_row * static_cast<uint64_t>(s.cols)), ref_act(r_row * static_cast<uint64_t>(s.cols));
  for (int64_t c = 0; c < s.cols; ++c) {
    QuantizeActivationRow(kernel->act, isa, x.data() + c * s.k, act.data() + c * a_row, s.k);
    QuantizeActivationRowReference(ref_format, x.data() + c * s.k, ref_act.data() + c * r_row, s.k);
  }
  // Output with a guard column on each side of every value written.
  const int64_t ldy = s.rows + 2;
  std::vector<float> y(static_cast<size_t>(ldy * s.cols), -7.0f);
  GemmArgs g;
  g.type = type;
  g.w = w.data();
  g.w_row_bytes = w_row;
  g.rows = s.rows;
  g.act = act.data();
  g.act_row_bytes = a_row;
  g.cols = s.cols;
  g.k = s.k;
  g.y = y.data() + 1;
  g.ldy = ldy;
  kernel->fn(g);

  double worst = 0.0;
  for (int64_t r = 0; r < s.rows; ++r) {
    const std::vector<float> wd = DequantizeWeightRow(type, w.data() + r * w_row, s.k);
    for (int64_t c = 0; c < s.cols; ++c) {
      const float want = VecDotReference(type, w.data() + r * w_row, ref_act.data() + c * r_row, s.k);
      const float got = y[static_cast<size_t>(c * ldy + 1 + r)];
      const double allowed =
          AllowedError(type, s.k, ErrorScale(type, wd, DecodeActivationRow(ref_format, ref_act.data() + c * r_row, s.k)));
      const double diff = std::fabs(static_cast<double>(got) - static_cast<double>(want));
      EXPECT_LE(diff, allowed) << TypeName(type) << " " << IsaName(isa) << " rows=" << s.rows << " cols=" << s.cols
                               << " k=" << s.k << " r=" << r << " c=" << c << " want=" << want << " got=" << got;
      if (diff > allowed) return diff / allowed;
      worst = std::max(worst, diff / allowed);
    }
  }
  for (int64_t c = 0; c < s.cols; ++c) {  // nothing written outside the output
    EXPECT_EQ(y[static_cast<size_t>(c * ldy)], -7.0f);
    EXPECT_EQ(y[static_cast<size_t>(c * ldy + ldy - 1)], -7.0f);
  }
  return worst;
}

class KernelsAtIsa : public ::testing::TestWithParam<IsaLevel> {};

TEST_P(KernelsAtIsa, MatchReferenceOnEveryShape) {
  const IsaLevel isa = GetParam();
  if (!CpuSupports(isa)) GTEST_SKIP() << "this CPU cannot run " << IsaName(isa);
  for (const GgmlTypeInfo& info : AllGgmlTypes()) {
    if (FindGemmKernel(info.type, isa) == nullptr) continue;
    SCOPED_TRACE(std::string(info.name));
    const int64_t block = std::max<int64_t>(info.block_elems, 256);  // whole Q8_K blocks too
    std::vector<int64_t> ks = {block, 2 * block, 5 * block};
    if (info.block_elems == 1) ks.insert(ks.end(), {1, 7, 31, 33, 100});  // float types: any length
    // Small blocks: rows of one and of an odd number of blocks (the 512-bit
    // Q8_0 kernel pairs blocks and finishes an odd row with the 256-bit one).
    if (info.block_elems > 1 && info.block_elems < 256) ks.insert(ks.end(), {info.block_elems, 3 * info.block_elems});
    double worst = 0.0;
    uint64_t seed = 1;
    for (int64_t rows : {1, 2, 3, 4, 5, 7, 33}) {
      for (int64_t cols = 1; cols <= 17; ++cols) {
        const int64_t k = ks[static_cast<size_t>(rows + cols) % ks.size()];
        worst = std::max(worst, CheckKernel(info.type, isa, {rows, cols, k}, seed++));
        if (::testing::Test::HasFailure()) return;
      }
    }
    for (int64_t k : ks) worst = std::max(worst, CheckKernel(info.type, isa, {9, 5, k}, seed++));
    RecordProperty(std::string(info.name) + "_worst_ratio", std::to_string(worst));
  }
}

// The AVX-512 Q4_K, Q5_K and Q8_0 kernels switch to panels (x86_panel_kernels.h)
// from a few columns on: stripes of 8 and 4 rows, the rest by the tile kernel,
// rows walked in pieces of 2,048 elements whose outputs are accumulated. Shapes
// around every one of those edges.
TEST(GemmKernels, PanelsMatchReferenceAroundTheirEdges) {
  if (!CpuSupports(IsaLevel::kAvx512)) GTEST_SKIP() << "this CPU cannot run avx512";
  uint64_t seed = 1000;
  for (GgmlType type : {GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ8_0}) {
    SCOPED_TRACE(std::string(TypeName(type)));
    // 1, 8, 9, 17 K-quant blocks; Q8_0 (pieces of 64 blocks): 1, 64, 65, 129
    // and 75 blocks.
    const std::vector<int64_t> ks = type == GgmlType::kQ8_0 ? std::vector<int64_t>{32, 2048, 2080, 4128, 2400}
                                                             : std::vector<int64_t>{256, 2048, 2304, 4352};
    size_t i = 0;
    // Each row count meets 4 ks (4 columns); 5 columns: below the
    // panels' threshold; 13 and 37 rows: stripes of 8 and 4 and a tile row.
    for (int64_t rows : {4, 8, 13, 37}) {
      for (int64_t cols : {5, 8, 9, 67}) {
        CheckKernel(type, IsaLevel::kAvx512, {rows, cols, ks[i++ % ks.size()]}, seed++);
        if (::testing::Test::HasFailure()) return;
      }
    }
  }
}

// A column's result must not depend on how many other columns share its
// product: a prompt processed whole, in chunks, or token by token (and an
// expert meeting 3 tokens or 30) gives the same bits. Tile kernels, their
// column tails, the one-column path and the panels all sum a column in one
// order. (The tiered-experts test checks the same end to end, on the
// types of its models.)
TEST_P(KernelsAtIsa, AColumnsBitsDoNotDependOnTheColumnCount) {
  const IsaLevel isa = GetParam();
  if (!CpuSupports(isa)) GTEST_SKIP() << "this CPU cannot run " << IsaName(isa);
  uint64_t seed = 77;
  for (const GgmlTypeInfo& info : AllGgmlTypes()) {
    const GemmKernel* kernel = FindGemmKernel(info.type, isa);
    if (kernel == nullptr) continue;
    SCOPED_TRACE(std::string(info.name));
    // 9 blocks of 256 (the K-quant panels' pieces are 8 blocks, Q8_0's 64),
    // 13 rows (stripes of 8, 4 and a tile row); small blocks: also an odd
    // number of them (the 512-bit Q8_0 kernel takes pairs).
    std::vector<int64_t> ks = {9 * std::max<int64_t>(info.block_elems, 256)};
    if (info.block_elems > 1 && info.block_elems < 256) ks.push_back(9 * 256 + info.block_elems);
    for (const int64_t k : ks) {
      SCOPED_TRACE("k=" + std::to_string(k));
      const int64_t rows = 13, cols = 33;
      std::mt19937_64 rng(seed++);
      const std::vector<uint8_t> w = testing::RandomMatrix(info.type, rows, k, rng);
      const std::vector<float> x = testing::RandomActivations(cols, k, rng);
      const uint64_t a_row = ActRowBytes(kernel->act, k);
      std::vector<uint8_t> act(a_row * cols);
      for (int64_t c = 0; c < cols; ++c) QuantizeActivationRow(kernel->act, isa, x.data() + c * k, act.data() + c * a_row, k);
      auto run = [&](int64_t c0, int64_t n) {
        std::vector<float> y(static_cast<size_t>(rows * n));
        GemmArgs g{info.type, w.data(), w.size() / rows, rows, act.data() + c0 * a_row, a_row, n, k, y.data(), rows};
        kernel->fn(g);
        return y;
      };
      const std::vector<float> all = run(0, cols);
      auto same = [&] {  // the first difference only, then the next type
        for (int64_t n : {1, 2, 3, 5, 7, 8, 9, 16, 17}) {
          for (int64_t c0 = 0; c0 + n <= cols; c0 += n) {
            const std::vector<float> part = run(c0, n);
            for (int64_t c = 0; c < n; ++c) {
              for (int64_t r = 0; r < rows; ++r) {
                const float a = all[(c0 + c) * rows + r], b = part[c * rows + r];
                if (std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b)) continue;
                ADD_FAILURE() << IsaName(isa) << ": column " << c0 + c << " of " << cols << " gives " << a
                              << ", in a product of " << n << " columns " << b << " (row " << r << ")";
                return;
              }
            }
          }
        }
      };
      same();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Simd, KernelsAtIsa, ::testing::Values(IsaLevel::kAvx2, IsaLevel::kAvx512),
                         [](const auto& p) { return std::string(IsaName(p.param)); });

// The reference path the backend falls back to computes VecDotReference.
TEST(GemmReference, IsVecDotPerRowAndColumn) {
  for (GgmlType type : {GgmlType::kQ4_1, GgmlType::kIQ2_XXS, GgmlType::kTQ1_0}) {
    std::mt19937_64 rng(5);
    const int64_t k = 512, rows = 3, cols = 2;
    const std::vector<uint8_t> w = testing::RandomMatrix(type, rows, k, rng);
    const std::vector<float> x = testing::RandomActivations(cols, k, rng);
    const ActFormat f = VecDotFormat(type);
    const uint64_t a_row = ActRowBytes(f, k), w_row = w.size() / rows;
    std::vector<uint8_t> act(a_row * cols);
    for (int64_t c = 0; c < cols; ++c) QuantizeActivationRowReference(f, x.data() + c * k, act.data() + c * a_row, k);
    std::vector<float> y(rows * cols);
    GemmArgs g{type, w.data(), w_row, rows, act.data(), a_row, cols, k, y.data(), rows};
    GemmReference(g);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        EXPECT_EQ(y[c * rows + r], VecDotReference(type, w.data() + r * w_row, act.data() + c * a_row, k));
  }
}

TEST(GemmKernels, SimdLevelsOfThisMachine) {
  // Not a check: records what the run above covered.
  std::string levels;
  for (IsaLevel l : SimdLevelsHere()) levels += std::string(IsaName(l)) + " ";
  RecordProperty("simd_levels", levels);
  SUCCEED();
}

}  // namespace
}  // namespace strata
