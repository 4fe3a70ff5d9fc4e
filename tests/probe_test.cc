// The probe record catches a kernel that computes the wrong thing: replayed
// on every ISA level this machine has, it passes; replayed on a backend that
// is subtly wrong (a scale off by 2%, a dropped block, a wrong row), it fails
// and says by how much.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/kernels/cpu_features.h"
#include "runtime/model/fast_backend.h"
#include "runtime/model/probe.h"
#include "runtime/pack/pack_reader.h"
#include "runtime/pack/pack_vocab.h"
#include "tests/testing/pack_edit.h"
#include "tests/testing/test_data.h"
#include "validate/validator.h"

namespace strata {
namespace {

using ::testing::HasSubstr;

// A backend that is wrong in one controlled way.
class BrokenBackend : public CpuBackend {
 public:
  enum class Fault { kScale, kSkipLastBlock, kWrongRow };
  BrokenBackend(CpuBackend& inner, Fault f) : inner_(inner), fault_(f) {}
  void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) override {
    if (fault_ == Fault::kSkipLastBlock && w.cols > static_cast<int64_t>(TypeInfo(w.type).block_elems)) {
      // As if a kernel forgot the tail block of each row.
      const int64_t k = w.cols - static_cast<int64_t>(TypeInfo(w.type).block_elems);
      std::vector<float> xs(x, x + n * w.cols);
      for (int64_t t = 0; t < n; ++t) std::fill(xs.begin() + t * w.cols + k, xs.begin() + (t + 1) * w.cols, 0.0f);
      inner_.MatMul(w, xs.data(), n, y);
      return;
    }
    inner_.MatMul(w, x, n, y);
    if (fault_ == Fault::kScale)
      for (int64_t i = 0; i < n * w.rows; ++i) y[i] *= 1.02f;
    if (fault_ == Fault::kWrongRow && w.rows > 1)
      for (int64_t t = 0; t < n; ++t) std::swap(y[t * w.rows], y[t * w.rows + 1]);
  }
  std::string name() const override { return "broken"; }

 private:
  CpuBackend& inner_;
  Fault fault_;
};

class Probe : public ::testing::TestWithParam<std::string> {};

TEST_P(Probe, ReplayPassesOnEveryIsaAndFailsOnAWrongKernel) {
  const std::string name = GetParam();
  STRATA_REQUIRE_SHARED_FILE(testing::SharedFile("conformance/" + name + ".gguf"));
  std::string dir = testing::ScratchDir("probe_" + name);
  auto r = testing::PackFile(testing::SharedFile("conformance/" + name + ".gguf"), dir + "/p.strata");
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto pack = Pack::Open(dir + "/p.strata");
  ASSERT_TRUE(pack.ok());
  ASSERT_NE((*pack)->manifest().probe(), nullptr);
  ProbeData probe = ProbeFromManifest(*(*pack)->manifest().probe());
  EXPECT_GE(probe.prompt_ids.size(), 4u);
  EXPECT_EQ(probe.greedy_ids.size(), 8u);
  auto model = Model::Create(**pack);
  ASSERT_TRUE(model.ok());

  ReferenceBackend ref;
  auto same = ReplayProbe(*model, ref, probe);
  ASSERT_TRUE(same.ok());
  EXPECT_LT(same->max_abs_diff, 1e-4f) << "the reference replays itself";

  for (IsaLevel isa : {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512}) {
    if (!CpuSupports(isa)) continue;
    FastBackend::Options o;
    o.isa = isa;
    o.threads = 2;
    auto fast = FastBackend::Create(o);
    ASSERT_TRUE(fast.ok());
    auto rep = ReplayProbe(*model, **fast, probe);
    ASSERT_TRUE(rep.ok());
    EXPECT_TRUE(rep->ok) << IsaName(isa) << ": " << rep->detail;

    for (auto fault : {BrokenBackend::Fault::kScale, BrokenBackend::Fault::kSkipLastBlock,
                       BrokenBackend::Fault::kWrongRow}) {
      BrokenBackend broken(**fast, fault);
      auto bad = ReplayProbe(*model, broken, probe);
      ASSERT_TRUE(bad.ok());
      EXPECT_FALSE(bad->ok) << IsaName(isa) << " fault " << static_cast<int>(fault) << ": " << bad->detail;
      EXPECT_TRUE(bad->kernel_mean_diff > probe.kernel_mean_tolerance ||
                  bad->kernel_max_diff > probe.kernel_max_tolerance)
          << bad->detail;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Probe,
                         ::testing::Values("qwen3moe-q4_k_m", "qwen3moe-q2_0", "qwen35moe-q8_0", "stories260k-q8_0"),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace strata
