// Faults of the GPU backend, on the software GPU's fault sites
// (runtime/base/fault_injection.h): every device allocation of Bind, of a
// sequence state and of a pass in turn; launches and copies at points
// spread over a prompt and its decode steps; a launch that poisons the
// context. Each gives a clear error and leaks nothing (the device's free
// memory comes back to what a run without the fault leaves); after a fault
// that leaves the device usable the same backend runs the same pass to the
// same logits; after a poisoning fault Health() says so and every pass
// fails with the first error. The server's side: serve_http_test
// (AGpuFaultEndsOneRequestAndAPoisonedDeviceStopsTheServer).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/base/fault_injection.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/gpu_backend.h"
#include "runtime/model/forward.h"
#include "tests/testing/gpu_test_device.h"
#include "tests/testing/synthetic_pack.h"
#include "tests/testing/test_data.h"

namespace strata {
namespace {

using ::testing::HasSubstr;

const Model& TinyMoe() {
  static auto* opened = [] {
    auto o = testing::MakeSyntheticPack(Arch::kQwen3Moe, testing::ScratchDir("gpu_faults"), "faults", 5);
    EXPECT_TRUE(o.ok()) << o.status().message();
    return new testing::OpenedModel(std::move(*o));
  }();
  return *opened->model;
}

std::unique_ptr<GpuBackend> Unbound() {
  gpu::SoftwareGpuOptions o;
  o.threads = 2;
  auto d = gpu::OpenSoftwareGpu(o);
  EXPECT_TRUE(d.ok()) << d.status().message();
  auto b = GpuBackend::Create(std::move(*d));
  EXPECT_TRUE(b.ok()) << b.status().message();
  return std::move(*b);
}

std::unique_ptr<GpuBackend> Bound(const Model& m) {
  auto b = Unbound();
  Status s = b->Bind(m);
  EXPECT_TRUE(s.ok()) << s.message();
  return b;
}

uint64_t FreeBytes(GpuBackend& b) {
  uint64_t free = 0, total = 0;
  EXPECT_TRUE(b.device().MemoryInfo(&free, &total).ok());
  return free;
}

// testing::PromptAndThreeSteps on a fresh state: the logits, or the first error.
Result<std::vector<float>> RunPasses(const Model& m, Backend& be) {
  STRATA_ASSIGN_OR_RETURN(SequenceState st, SequenceState::Create(be, m.hp(), 64));
  return testing::PromptAndThreeSteps(m, be, st);
}

// What a run without faults gives: its logits, and the device's free memory
// after it (its state freed; the backend keeps its pass blocks).
struct Clean {
  std::vector<float> logits;
  uint64_t free_after = 0;
};
const Clean& CleanRun() {
  static const Clean* clean = [] {
    auto be = Bound(TinyMoe());
    auto logits = RunPasses(TinyMoe(), *be);
    EXPECT_TRUE(logits.ok()) << logits.status().message();
    auto* c = new Clean{logits.ok() ? *logits : std::vector<float>{}, FreeBytes(*be)};
    return c;
  }();
  return *clean;
}

// Which fault points run: every one in the optimized build, every 4th under
// the sanitizers, every 64th under Wine (tests/testing/gpu_test_device.h).
uint32_t Stride() {
  switch (testing::TestMatrix()) {
    case testing::GpuTestMatrix::kFull: return 1;
    case testing::GpuTestMatrix::kTails: return 4;
    case testing::GpuTestMatrix::kSmoke: return 64;
  }
  return 1;
}
// At least this many points fired, of `full` in the optimized build.
uint32_t AtLeast(uint32_t full) { return std::max<uint32_t>(1, full / Stride()); }

TEST(GpuFaults, EachAllocationOfBindFailsCleanlyAndFreesWhatItTook) {
  const Model& m = TinyMoe();
  const Clean& clean = CleanRun();
  uint32_t fired = 0;
  for (uint32_t skip = 0;; skip += Stride()) {
    ASSERT_LT(skip, 2000u) << "Bind never finished without the fault";
    SCOPED_TRACE("gpu-allocate fails at call " + std::to_string(skip));
    auto be = Unbound();
    const uint64_t before = FreeBytes(*be);
    ArmFault(FaultSite::kGpuAllocate, skip);
    Status s = be->Bind(m);
    DisarmAllFaults();
    if (s.ok()) break;
    ++fired;
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.message();
    EXPECT_THAT(s.message(), HasSubstr("cannot place tensor '"));
    EXPECT_THAT(s.message(), HasSubstr("injected fault (gpu-allocate)"));
    EXPECT_EQ(FreeBytes(*be), before) << "a failed Bind kept device memory";
    EXPECT_TRUE(be->Health().ok());
    if (skip % 8 != 0) continue;
    // The same backend binds and runs afterwards, to the clean run's logits.
    ASSERT_TRUE(be->Bind(m).ok());
    auto logits = RunPasses(m, *be);
    ASSERT_TRUE(logits.ok()) << logits.status().message();
    EXPECT_EQ(*logits, clean.logits);
    EXPECT_EQ(FreeBytes(*be), clean.free_after);
  }
  EXPECT_GE(fired, AtLeast(20));  // one per tensor of the model
}

TEST(GpuFaults, EachAllocationOfAStateAndAPassFailsCleanly) {
  const Model& m = TinyMoe();
  const Clean& clean = CleanRun();
  uint32_t fired = 0;
  for (uint32_t skip = 0;; skip += Stride()) {
    ASSERT_LT(skip, 2000u) << "the run never finished without the fault";
    SCOPED_TRACE("gpu-allocate fails at call " + std::to_string(skip) + " after Bind");
    auto be = Bound(m);
    ArmFault(FaultSite::kGpuAllocate, skip);
    auto logits = RunPasses(m, *be);
    DisarmAllFaults();
    if (logits.ok()) {
      EXPECT_EQ(*logits, clean.logits);
      break;
    }
    ++fired;
    EXPECT_EQ(logits.status().code(), StatusCode::kResourceExhausted) << logits.status().message();
    EXPECT_THAT(logits.status().message(), HasSubstr("injected fault (gpu-allocate)"));
    EXPECT_TRUE(be->Health().ok());
    auto again = RunPasses(m, *be);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(*again, clean.logits);
    EXPECT_EQ(FreeBytes(*be), clean.free_after) << "the failed run left device memory behind";
  }
  EXPECT_GE(fired, AtLeast(2));  // the KV cache and the workspace, at least
}

// Launches and copies fail at points spread over the run (every one would
// take minutes on the software GPU: a run has thousands of launches).
TEST(GpuFaults, ALaunchOrCopyFailsOnePassAndTheDeviceGoesOn) {
  const Model& m = TinyMoe();
  const Clean& clean = CleanRun();
  for (FaultSite site : {FaultSite::kGpuLaunch, FaultSite::kGpuCopy}) {
    uint32_t fired = 0;
    // A run has a few hundred launches and a few dozen copies.
    // Outside the optimized build the points spread faster (a run is slow there).
    const bool full = Stride() == 1;
    for (uint32_t skip = 0;; skip = site == FaultSite::kGpuLaunch ? (full ? skip * 2 + 4 : skip * 4 + 5)
                                                                  : (full ? skip + 2 : skip * 3 + 2)) {
      ASSERT_LT(skip, 1u << 20) << "the run never finished without the fault";
      SCOPED_TRACE(std::string(FaultSiteName(site)) + " fails at call " + std::to_string(skip));
      auto be = Bound(m);
      ArmFault(site, skip);
      auto logits = RunPasses(m, *be);
      DisarmAllFaults();
      if (logits.ok()) {
        EXPECT_EQ(*logits, clean.logits);
        break;
      }
      ++fired;
      EXPECT_THAT(logits.status().message(),
                  HasSubstr(site == FaultSite::kGpuLaunch ? "injected fault (gpu-launch)" : "injected fault (gpu-copy)"));
      EXPECT_TRUE(be->Health().ok()) << be->Health().message();
      auto again = RunPasses(m, *be);
      ASSERT_TRUE(again.ok()) << again.status().message();
      EXPECT_EQ(*again, clean.logits);
      EXPECT_EQ(FreeBytes(*be), clean.free_after);
    }
    EXPECT_GE(fired, full ? 5u : 2u) << FaultSiteName(site);
  }
}

// Decode steps through a planned workspace are captured and replayed as
// graphs (GpuBackend's decode graphs): a launch that fails inside a capture
// or a replay fails that step only; the backend goes on, to the same logits.
TEST(GpuFaults, ALaunchFailingInACapturedOrReplayedDecodeStepFailsThatStepOnly) {
  const Model& m = TinyMoe();
  auto decode = [&](GpuBackend& be) -> Result<std::vector<float>> {
    STRATA_ASSIGN_OR_RETURN(SequenceState st, SequenceState::Create(be, m.hp(), 64));
    STRATA_ASSIGN_OR_RETURN(Workspace ws, be.CreateWorkspace(be.WorkspaceBytes(m, PassShape{8, 64, 1}), "workspace"));
    ForwardOptions fo;
    fo.workspace = &ws;
    std::vector<float> all, logits;
    const std::vector<int32_t> prompt = {3, 5, 7, 9};
    STRATA_RETURN_IF_ERROR(Forward(m, be, st, prompt, fo, &logits));
    for (int i = 0; i < 6; ++i) {
      const int32_t t = static_cast<int32_t>((i * 7 + 1) % m.hp().n_vocab);
      STRATA_RETURN_IF_ERROR(Forward(m, be, st, std::span(&t, 1), fo, &logits));
      all.insert(all.end(), logits.begin(), logits.end());
    }
    return all;
  };
  auto clean_be = Bound(m);
  auto clean = decode(*clean_be);
  ASSERT_TRUE(clean.ok()) << clean.status().message();
  ASSERT_EQ(clean_be->graph_counts().captures, 1u);  // the 2nd decode step
  ASSERT_EQ(clean_be->graph_counts().replays, 4u);
  uint32_t fired = 0;
  for (uint32_t skip = 0;; skip = Stride() == 1 ? skip * 2 + 6 : skip * 4 + 7) {
    ASSERT_LT(skip, 1u << 20) << "the run never finished without the fault";
    SCOPED_TRACE("gpu-launch fails at call " + std::to_string(skip));
    auto be = Bound(m);
    ArmFault(FaultSite::kGpuLaunch, skip);
    auto got = decode(*be);
    DisarmAllFaults();
    if (got.ok()) {
      EXPECT_EQ(*got, *clean);
      break;
    }
    ++fired;
    EXPECT_THAT(got.status().message(), HasSubstr("injected fault (gpu-launch)"));
    auto again = decode(*be);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(*again, *clean);
  }
  EXPECT_GE(fired, Stride() == 1 ? 4u : 2u);
}

TEST(GpuFaults, APoisonedContextFailsEveryLaterPassAndSaysSo) {
  const Model& m = TinyMoe();
  for (uint32_t skip : {0u, 40u, 150u}) {
    SCOPED_TRACE("gpu-poison at launch " + std::to_string(skip));
    auto be = Bound(m);
    ASSERT_TRUE(be->Health().ok());
    ArmFault(FaultSite::kGpuPoison, skip);
    auto logits = RunPasses(m, *be);
    DisarmAllFaults();
    ASSERT_FALSE(logits.ok());
    EXPECT_EQ(logits.status().code(), StatusCode::kInternal);
    EXPECT_THAT(logits.status().message(), HasSubstr("an illegal memory access was encountered"));
    EXPECT_FALSE(be->Health().ok());
    EXPECT_THAT(logits.status().message(), HasSubstr(be->Health().message()));
    // Every later pass fails with the first error; nothing crashes, and the
    // backend and its states are destroyed cleanly (ASan checks the rest).
    auto again = RunPasses(m, *be);
    ASSERT_FALSE(again.ok());
    EXPECT_THAT(again.status().message(), HasSubstr("an illegal memory access was encountered"));
  }
}

}  // namespace
}  // namespace strata
