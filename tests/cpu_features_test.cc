#include "runtime/kernels/cpu_features.h"
#include "runtime/base/platform.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace strata {
namespace {

CpuFeatures Avx2Only() {
  CpuFeatures f;
  f.avx2 = f.fma = f.f16c = f.bmi2 = f.os_saves_ymm = true;
  return f;
}
CpuFeatures Avx512() {
  CpuFeatures f = Avx2Only();
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512vnni = f.os_saves_zmm = true;
  return f;
}

TEST(CpuFeatures, LevelsNeedEveryFeatureAndOsSupport) {
  EXPECT_TRUE(CpuSupports(IsaLevel::kScalar, CpuFeatures{}));
  EXPECT_FALSE(CpuSupports(IsaLevel::kAvx2, CpuFeatures{}));
  EXPECT_TRUE(CpuSupports(IsaLevel::kAvx2, Avx2Only()));
  EXPECT_FALSE(CpuSupports(IsaLevel::kAvx512, Avx2Only()));
  EXPECT_TRUE(CpuSupports(IsaLevel::kAvx512, Avx512()));

  CpuFeatures no_os = Avx512();
  no_os.os_saves_zmm = false;  // the CPU has AVX-512 but the OS does not save ZMM state
  EXPECT_FALSE(CpuSupports(IsaLevel::kAvx512, no_os));
  EXPECT_TRUE(CpuSupports(IsaLevel::kAvx2, no_os));
  CpuFeatures no_vnni = Avx512();
  no_vnni.avx512vnni = false;  // Skylake-X
  EXPECT_EQ(BestIsa(no_vnni), IsaLevel::kAvx2);
  CpuFeatures no_fma = Avx2Only();
  no_fma.fma = false;
  EXPECT_EQ(BestIsa(no_fma), IsaLevel::kScalar);
  EXPECT_EQ(BestIsa(Avx512()), IsaLevel::kAvx512);
}

TEST(CpuFeatures, HostDetectionIsConsistent) {
  const CpuFeatures& f = HostCpuFeatures();
  // AVX-512 features imply the AVX2 set on every CPU that has them.
  if (f.avx512f) {
    EXPECT_TRUE(f.avx2 && f.fma);
  }
  if (f.os_saves_zmm) {
    EXPECT_TRUE(f.os_saves_ymm);
  }
  EXPECT_TRUE(CpuSupports(BestIsa()));
  const std::string d = DescribeCpuFeatures(f);
  EXPECT_FALSE(d.empty());
  RecordProperty("cpu", f.brand + ": " + d);
}

TEST(CpuFeatures, ParseNames) {
  EXPECT_EQ(*ParseIsaLevel("scalar"), IsaLevel::kScalar);
  EXPECT_EQ(*ParseIsaLevel("AVX2"), IsaLevel::kAvx2);
  EXPECT_EQ(*ParseIsaLevel("avx512"), IsaLevel::kAvx512);
  const Result<IsaLevel> bad = ParseIsaLevel("sse4");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("scalar, avx2 or avx512"), std::string::npos);
  for (IsaLevel l : kAllIsaLevels) EXPECT_EQ(*ParseIsaLevel(IsaName(l)), l);
}

TEST(CpuFeatures, ResolveIsaFromForcedLevelEnvironmentOrBest) {
  EXPECT_EQ(*ResolveIsa(std::nullopt, nullptr, Avx512()), IsaLevel::kAvx512);
  EXPECT_EQ(*ResolveIsa(std::nullopt, "", Avx2Only()), IsaLevel::kAvx2);
  EXPECT_EQ(*ResolveIsa(std::nullopt, "avx2", Avx512()), IsaLevel::kAvx2);
  EXPECT_EQ(*ResolveIsa(IsaLevel::kScalar, "avx512", Avx512()), IsaLevel::kScalar);  // forced wins

  // Asking for more than the CPU has is an error that says what is missing.
  const Result<IsaLevel> env_too_high = ResolveIsa(std::nullopt, "avx512", Avx2Only());
  ASSERT_FALSE(env_too_high.ok());
  EXPECT_EQ(env_too_high.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(env_too_high.status().message().find("STRATA_ISA=avx512"), std::string::npos);
  EXPECT_NE(env_too_high.status().message().find("AVX-512F"), std::string::npos);
  const Result<IsaLevel> forced_too_high = ResolveIsa(IsaLevel::kAvx2, nullptr, CpuFeatures{});
  ASSERT_FALSE(forced_too_high.ok());
  EXPECT_NE(forced_too_high.status().message().find("AVX2"), std::string::npos);
  const Result<IsaLevel> garbage = ResolveIsa(std::nullopt, "fast", Avx512());
  ASSERT_FALSE(garbage.ok());
  EXPECT_EQ(garbage.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(garbage.status().message().find("STRATA_ISA"), std::string::npos);
}

TEST(CpuFeatures, ForceIsaAndEnvironment) {
  ASSERT_TRUE(ForceIsa(IsaLevel::kScalar).ok());
  EXPECT_EQ(*SelectIsa(), IsaLevel::kScalar);
  ASSERT_TRUE(ForceIsa(std::nullopt).ok());
  ASSERT_TRUE(strata::SetEnvVar("STRATA_ISA", "scalar"));
  EXPECT_EQ(*SelectIsa(), IsaLevel::kScalar);
  ASSERT_TRUE(strata::SetEnvVar("STRATA_ISA", "bogus"));
  EXPECT_FALSE(SelectIsa().ok());
  ASSERT_TRUE(strata::SetEnvVar("STRATA_ISA", nullptr));
  EXPECT_EQ(*SelectIsa(), BestIsa());
  // Forcing a level above the host's best fails and changes nothing.
  if (BestIsa() != IsaLevel::kAvx512) {
    EXPECT_FALSE(ForceIsa(IsaLevel::kAvx512).ok());
    EXPECT_EQ(*SelectIsa(), BestIsa());
  }
}

}  // namespace
}  // namespace strata
