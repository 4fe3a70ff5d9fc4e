// FastBackend::MatMul against ReferenceBackend::MatMul for every weight type,
// at every ISA level this CPU supports, with 1-3 threads and 1..70 columns
// (one and two column blocks).
//
// The two backends compute different things on purpose: the reference
// multiplies dequantized weights with the F32 activations, the fast backend
// with activations converted the way llama.cpp converts them (Q8_0, Q8_K,
// F16...). So the bound is
//   sum_i |w_i| * |a_i - x_i|          (what activation quantization changes)
// + the kernel rounding bound of tests/testing/kernel_check.h
// + k * eps * sum_i |w_i * x_i|        (the reference's sequential float sum)
// computed per output from the actual activations, and the kernel side is
// already pinned to the scalar vec_dot by kernels_test.

#include "runtime/model/fast_backend.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/kernels/vec_dot.h"
#include "tests/testing/kernel_check.h"
#include "runtime/base/platform.h"

namespace strata {
namespace {

WeightMatrix Matrix(GgmlType type, const std::vector<uint8_t>& bytes, int64_t rows, int64_t cols) {
  WeightMatrix w;
  w.type = type;
  w.data = bytes.data();
  w.row_bytes = bytes.size() / static_cast<uint64_t>(rows);
  w.rows = rows;
  w.cols = cols;
  return w;
}

// Compares both backends on one product; returns the worst |diff| / bound.
double Compare(FastBackend& fast, GgmlType type, int64_t rows, int64_t k, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::vector<uint8_t> bytes = testing::RandomMatrix(type, rows, k, rng);
  const std::vector<float> x = testing::RandomActivations(n, k, rng);
  const WeightMatrix w = Matrix(type, bytes, rows, k);
  std::vector<float> y_fast(static_cast<size_t>(n * rows)), y_ref(static_cast<size_t>(n * rows));
  fast.MatMul(w, x.data(), n, y_fast.data());
  ReferenceBackend ref;
  ref.MatMul(w, x.data(), n, y_ref.data());

  // The values the fast path multiplied: the format's rounding of x.
  const ActFormat format = VecDotFormat(type);
  const uint64_t a_row = ActRowBytes(format, k);
  std::vector<uint8_t> act(a_row);
  double worst = 0.0;
  for (int64_t t = 0; t < n; ++t) {
    QuantizeActivationRowReference(format, x.data() + t * k, act.data(), k);
    const std::vector<float> a = testing::DecodeActivationRow(format, act.data(), k);
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<float> wd = testing::DequantizeWeightRow(type, bytes.data() + r * w.row_bytes, k);
      double quant = 0.0, plain = 0.0;
      for (int64_t i = 0; i < k; ++i) {
        const double wi = std::fabs(static_cast<double>(wd[i]));
        quant += wi * std::fabs(static_cast<double>(a[i]) - static_cast<double>(x[t * k + i]));
        plain += wi * std::fabs(static_cast<double>(x[t * k + i]));
      }
      const double bound = quant + testing::AllowedError(type, k, testing::ErrorScale(type, wd, a)) +
                           static_cast<double>(k) * std::ldexp(1.0, -23) * plain;
      const size_t at = static_cast<size_t>(t * rows + r);
      const double diff = std::fabs(static_cast<double>(y_fast[at]) - static_cast<double>(y_ref[at]));
      EXPECT_LE(diff, bound) << TypeName(type) << " " << IsaName(fast.isa()) << " threads=" << fast.threads()
                             << " rows=" << rows << " k=" << k << " n=" << n << " t=" << t << " r=" << r
                             << " fast=" << y_fast[at] << " ref=" << y_ref[at];
      if (diff > bound) return diff / bound;
      worst = std::max(worst, diff / bound);
    }
  }
  return worst;
}

std::vector<IsaLevel> LevelsHere() {
  std::vector<IsaLevel> levels;
  for (IsaLevel l : kAllIsaLevels)
    if (CpuSupports(l)) levels.push_back(l);
  return levels;
}

std::unique_ptr<FastBackend> Make(IsaLevel isa, int threads) {
  Result<std::unique_ptr<FastBackend>> b = FastBackend::Create({threads, isa});
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return b.ok() ? std::move(b.value()) : nullptr;
}

TEST(FastBackend, MatchesReferenceBackendForEveryType) {
  for (IsaLevel isa : LevelsHere()) {
    for (int threads : {1, 2}) {
      auto fast = Make(isa, threads);
      ASSERT_NE(fast, nullptr);
      for (const GgmlTypeInfo& info : AllGgmlTypes()) {
        if (!HasVecDot(info.type)) continue;
        SCOPED_TRACE(std::string(info.name));
        double worst = 0.0;
        uint64_t seed = 100;
        for (int64_t n : {1, 3, 8}) worst = std::max(worst, Compare(*fast, info.type, 37, 512, n, seed++));
        ASSERT_FALSE(HasFailure());
        RecordProperty(std::string(info.name) + "_" + std::string(IsaName(isa)) + "_worst", std::to_string(worst));
      }
    }
  }
}

// Products big enough to be split over threads in row chunks, with more than
// one column block (n > 64), for the types of the benchmark models.
TEST(FastBackend, ParallelChunksAndColumnBlocks) {
  for (IsaLevel isa : LevelsHere()) {
    for (int threads : {2, 3}) {
      auto fast = Make(isa, threads);
      ASSERT_NE(fast, nullptr);
      for (GgmlType type : {GgmlType::kQ4_K, GgmlType::kQ8_0, GgmlType::kF16, GgmlType::kQ6_K}) {
        Compare(*fast, type, 515, 1024, 1, 7);
        Compare(*fast, type, 131, 512, 70, 8);
        ASSERT_FALSE(HasFailure()) << TypeName(type) << " " << IsaName(isa);
      }
    }
  }
}

// MatMulBatch (the MoE op's gate/up and down batches) against MatMul on each
// job in turn, bit for bit: jobs of several types and widths, row lists (with
// a token listed twice and out of order), an up sharing its gate's
// activations, F32 weights read in place, empty jobs, more than one column
// block, and products small and large enough to be split over threads.
TEST(FastBackend, BatchEqualsOneProductAtATimeBitForBit) {
  struct Spec {
    GgmlType type;
    int64_t rows, k, n;
    bool listed;  // rows from the shared list (else x's own rows 0..n-1)
  };
  const Spec specs[] = {
      {GgmlType::kQ4_K, 96, 512, 5, true},  {GgmlType::kQ4_K, 96, 512, 5, true},  // gate, up: shared rows
      {GgmlType::kQ6_K, 40, 256, 3, false}, {GgmlType::kQ8_0, 515, 1024, 70, false},
      {GgmlType::kF32, 33, 64, 4, true},    {GgmlType::kQ4_K, 8, 256, 0, true},
      {GgmlType::kQ5_K, 200, 768, 9, true}, {GgmlType::kF16, 12, 96, 1, false},
  };
  std::mt19937_64 rng(42);
  std::vector<std::vector<uint8_t>> weights;
  std::vector<std::vector<float>> xs;
  const std::vector<int64_t> list = {3, 0, 7, 7, 1, 5, 2, 6, 4};  // rows of an 8-row x
  for (const Spec& sp : specs) {
    weights.push_back(testing::RandomMatrix(sp.type, sp.rows, sp.k, rng));
    xs.push_back(testing::RandomActivations(sp.listed ? 8 : std::max<int64_t>(sp.n, 1), sp.k, rng));
  }
  xs[1] = xs[0];  // up reads gate's x
  for (IsaLevel isa : LevelsHere()) {
    for (int threads : {1, 2, 3}) {
      // Two backends: the batch must not find what it needs left in the
      // activation buffer by the one-at-a-time products.
      auto fast = Make(isa, threads), one = Make(isa, threads);
      ASSERT_NE(fast, nullptr);
      ASSERT_NE(one, nullptr);
      std::vector<CpuBackend::MatMulJob> jobs;
      std::vector<std::vector<float>> got(std::size(specs)), want(std::size(specs));
      for (size_t i = 0; i < std::size(specs); ++i) {
        const Spec& sp = specs[i];
        const WeightMatrix w = Matrix(sp.type, weights[i], sp.rows, sp.k);
        got[i].assign(static_cast<size_t>(std::max<int64_t>(sp.n, 1) * sp.rows), -1.0f);
        want[i] = got[i];
        const float* x = i == 1 ? xs[0].data() : xs[i].data();
        jobs.push_back({w, x, sp.listed ? list.data() : nullptr, sp.n, got[i].data()});
        // One at a time: the listed rows gathered first.
        std::vector<float> gathered;
        const float* xin = x;
        if (sp.listed) {
          for (int64_t t = 0; t < sp.n; ++t)
            gathered.insert(gathered.end(), x + list[static_cast<size_t>(t)] * sp.k,
                            x + (list[static_cast<size_t>(t)] + 1) * sp.k);
          xin = gathered.data();
        }
        one->MatMul(w, xin, sp.n, want[i].data());
      }
      fast->MatMulBatch(jobs);
      for (size_t i = 0; i < std::size(specs); ++i) {
        SCOPED_TRACE(std::string(TypeName(specs[i].type)) + " job " + std::to_string(i) + " " +
                     std::string(IsaName(isa)) + " threads " + std::to_string(threads));
        ASSERT_EQ(0, std::memcmp(got[i].data(), want[i].data(), got[i].size() * sizeof(float)));
      }
    }
  }
  // More jobs than one run of the backend takes (slices of 64): 131 jobs, a
  // lone one first so that gate/up pairs sharing activations straddle the
  // slices' edges.
  {
    auto fast = Make(LevelsHere().back(), 2), one = Make(LevelsHere().back(), 2);
    ASSERT_NE(fast, nullptr);
    ASSERT_NE(one, nullptr);
    const std::vector<uint8_t> small = testing::RandomMatrix(GgmlType::kQ4_K, 16, 256, rng);
    const std::vector<float> x = testing::RandomActivations(8, 256, rng);
    const WeightMatrix w = Matrix(GgmlType::kQ4_K, small, 16, 256);
    std::vector<CpuBackend::MatMulJob> jobs;
    std::vector<std::vector<float>> got(131, std::vector<float>(9 * 16)), want = got;
    for (size_t i = 0; i < got.size(); ++i) {
      const int64_t n = 1 + static_cast<int64_t>((i + 1) / 2 % 9);  // pairs (2i-1, 2i) share n and rows
      jobs.push_back({w, x.data(), list.data(), n, got[i].data()});
      std::vector<float> gathered;
      for (int64_t t = 0; t < n; ++t)
        gathered.insert(gathered.end(), x.begin() + list[static_cast<size_t>(t)] * 256,
                        x.begin() + (list[static_cast<size_t>(t)] + 1) * 256);
      one->MatMul(w, gathered.data(), n, want[i].data());
    }
    fast->MatMulBatch(jobs);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(0, std::memcmp(got[i].data(), want[i].data(), got[i].size() * sizeof(float))) << "job " << i;
  }
  // The plain engine's batch (gathers, then MatMul) equals its MatMul too.
  ReferenceBackend ref;
  std::vector<float> got(static_cast<size_t>(5 * 96)), want(got.size());
  const WeightMatrix w = Matrix(GgmlType::kQ4_K, weights[0], 96, 512);
  const CpuBackend::MatMulJob job{w, xs[0].data(), list.data(), 5, got.data()};
  ref.MatMulBatch({&job, 1});
  std::vector<float> gathered;
  for (int64_t t = 0; t < 5; ++t)
    gathered.insert(gathered.end(), xs[0].begin() + list[static_cast<size_t>(t)] * 512,
                    xs[0].begin() + (list[static_cast<size_t>(t)] + 1) * 512);
  ref.MatMul(w, gathered.data(), 5, want.data());
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
}

TEST(FastBackend, ReportsKernelsAndSlowTypes) {
  for (IsaLevel isa : LevelsHere()) {
    auto fast = Make(isa, 1);
    ASSERT_NE(fast, nullptr);
    const FastBackend::KernelChoice q4k = fast->Choice(GgmlType::kQ4_K);
    EXPECT_TRUE(q4k.supported);
    EXPECT_EQ(q4k.fast, isa != IsaLevel::kScalar);
    EXPECT_EQ(q4k.act, ActFormat::kQ8_K);
    if (isa != IsaLevel::kScalar) {
      EXPECT_EQ(q4k.isa, isa);
    }
    const FastBackend::KernelChoice i8 = fast->Choice(GgmlType::kI8);
    EXPECT_FALSE(i8.supported);

    const GgmlType pack_types[] = {GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kF32, GgmlType::kTQ1_0,
                                   GgmlType::kTQ1_0};
    const std::vector<GgmlType> slow = fast->SlowTypes(pack_types);
    if (isa == IsaLevel::kScalar) {
      EXPECT_EQ(slow.size(), 4u);
    } else {
      ASSERT_EQ(slow.size(), 1u);  // no TQ1_0 kernel; listed once
      EXPECT_EQ(slow[0], GgmlType::kTQ1_0);
    }
    const std::string text = fast->Describe(pack_types);
    EXPECT_NE(text.find("TQ1_0"), std::string::npos);
    EXPECT_NE(text.find("SLOW"), std::string::npos);
    EXPECT_EQ(fast->Report().size(), 28u);
    EXPECT_NE(fast->name().find(std::string(IsaName(isa))), std::string::npos);
  }
}

TEST(FastBackend, ParallelForCoversTheRange) {
  auto fast = Make(BestIsa(), 2);
  ASSERT_NE(fast, nullptr);
  std::vector<int> seen(1000, 0);
  fast->ParallelFor(1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)]++;
  });
  for (int v : seen) ASSERT_EQ(v, 1);
}

// MakeBackend refuses models with such a matrix (backend_factory); a direct
// call on a type without a kernel is a bug and stops the process with the
// type's name rather than returning numbers.
TEST(FastBackendDeathTest, UnsupportedWeightTypeStopsInsteadOfReturningNumbers) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto fast = Make(BestIsa(), 1);
  ASSERT_NE(fast, nullptr);
  const std::vector<uint8_t> bytes(64, 0);
  const WeightMatrix w = Matrix(GgmlType::kI8, bytes, 2, 32);
  const std::vector<float> x(32, 1.0f);
  std::vector<float> y(2, 0.0f);
  EXPECT_DEATH(fast->MatMul(w, x.data(), 1, y.data()), "type I8, which has no kernel");
}

TEST(FastBackend, CreateHonoursTheEnvironment) {
  ASSERT_TRUE(strata::SetEnvVar("STRATA_ISA", "scalar"));
  Result<std::unique_ptr<FastBackend>> b = FastBackend::Create({});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)->isa(), IsaLevel::kScalar);
  ASSERT_TRUE(strata::SetEnvVar("STRATA_ISA", "neon"));
  EXPECT_FALSE(FastBackend::Create({}).ok());
  ASSERT_TRUE(strata::SetEnvVar("STRATA_ISA", nullptr));
}

}  // namespace
}  // namespace strata
