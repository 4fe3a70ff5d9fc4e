// Allocation, mapping, file and device failures are clean errors: every
// site (FaultSite) is made to fail at every call it gets during a real
// strata-run run (load, planning, tier fill, generation, writing the logits
// and the routing trace), and each time the program must stop with a
// non-zero exit and a message that says what failed (and how much, for
// memory), never a crash or a sanitizer report. Run under
// -DSTRATA_SANITIZE=address,undefined too: a read through a stale or short
// buffer would be reported there (seeds/004).
//
// In-process: a device upload that fails in the middle of a generation
// leaves no slot that claims to hold the expert: the same executor, run
// again, computes exactly the untiered result.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <regex>

#include "runtime/base/fault_injection.h"
#include "runtime/experts/tiered_executor.h"
#include "runtime/memory/run_memory.h"
#include "runtime/model/fast_backend.h"
#include "runtime/model/forward.h"
#include "tests/testing/pack_edit.h"
#include "tests/testing/run_command.h"
#include "tests/testing/synthetic_pack.h"
#include "tests/testing/test_data.h"
#include "runtime/base/platform.h"

namespace strata {
namespace {

using ::testing::HasSubstr;

struct Site {
  const char* env;   // STRATA_FAULT name
  const char* what;  // text the error must contain
  bool sized;        // the message must say how much was asked
};

const Site kSites[] = {
    {"open", "", false},         {"map", "cannot map", true},
    {"allocate", "cannot allocate", true},  {"write", "", false},
    {"rename", "", false},                  {"device-allocate", "cannot allocate", true},
    {"device-upload", "cannot upload", true},
};

class FaultSweep : public ::testing::TestWithParam<std::string> {};

TEST_P(FaultSweep, EveryCallAtEverySiteFailsCleanly) {
  const std::string fixture = GetParam();
  const std::string gguf = testing::SharedFile("conformance/" + fixture + ".gguf");
  STRATA_REQUIRE_SHARED_FILE(gguf);
  const std::string dir = testing::ScratchDir("fault_sweep_" + fixture);
  const std::string pack = dir + "/p.strata";
  ASSERT_TRUE(testing::PackFile(gguf, pack).ok());
  // A profile for pinning, from a clean run.
  const std::string profile = dir + "/profile.trace";
  const std::vector<std::string> base = {pack, "--tokens", "1,13,20,27,34,41,48,55,62,69", "-n", "6", "--temp", "0",
                                         "--ignore-eos", "--print-ids", "-t", "2", "-b", "4"};
  {
    auto args = base;
    args.insert(args.end(), {"--routing-trace-out", profile});
    auto r = testing::RunProgram("strata-run", args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto args = base;
  args.insert(args.end(), {"--expert-device", "cpu", "--expert-slots", "6", "--expert-pinned", "2", "--expert-profile",
                           profile, "--expert-policy", "lru", "--logits-out", dir + "/out/logits.f32",
                           "--routing-trace-out", dir + "/out/trace.txt"});
  std::filesystem::create_directories(dir + "/out");
  auto clean = testing::RunProgram("strata-run", args);
  ASSERT_EQ(clean.exit_code, 0) << clean.err;
  ASSERT_THAT(clean.err, ::testing::Not(HasSubstr("injected")));
  const std::regex size_re("[0-9.]+ (B|KiB|MiB|GiB)");
  for (const Site& site : kSites) {
    int fired = 0;
    for (int skip = 0; skip < 400; ++skip) {
      std::filesystem::remove_all(dir + "/out");
      std::filesystem::create_directories(dir + "/out");
      ASSERT_TRUE(strata::SetEnvVar("STRATA_FAULT", (std::string(site.env) + ":" + std::to_string(skip)).c_str()));
      auto r = testing::RunProgram("strata-run", args);
      ASSERT_TRUE(strata::SetEnvVar("STRATA_FAULT", nullptr));
      const std::string where = std::string(site.env) + " call " + std::to_string(skip);
      EXPECT_THAT(r.err, ::testing::Not(HasSubstr("Sanitizer"))) << where << "\n" << r.err;
      EXPECT_THAT(r.err, ::testing::Not(HasSubstr("runtime error"))) << where << "\n" << r.err;
      if (r.err.find("strata: injected fault") == std::string::npos) {
        EXPECT_EQ(r.exit_code, 0) << where << "\n" << r.err;
        break;  // the site gets no more calls
      }
      ++fired;
      EXPECT_TRUE(r.exit_code > 0 && r.exit_code < 64) << where << ": exit " << r.exit_code << "\n" << r.err;
      EXPECT_THAT(r.err, HasSubstr("strata-run: error: ")) << where << "\n" << r.err;
      EXPECT_TRUE(std::regex_search(r.err, std::regex("strata-run: error: .*injected fault"))) << where << "\n" << r.err;
      EXPECT_THAT(r.err, HasSubstr(site.what)) << where << "\n" << r.err;
      if (site.sized) {
        EXPECT_TRUE(std::regex_search(r.err, size_re)) << where << ": no size in\n" << r.err;
      }
      // No half-written output keeps a final name or a temporary one.
      for (const auto& e : std::filesystem::directory_iterator(dir + "/out"))
        EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << where << ": " << e.path();
    }
    EXPECT_GT(fired, 0) << site.env << ": the run never reached this site";
    std::printf("  %-16s %d calls in a run, each failed cleanly\n", site.env, fired);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FaultSweep, ::testing::Values("qwen3moe-q4_k_m", "qwen35moe-q4_k_m"),
                         [](const auto& p) {
                           std::string s = p.param;
                           for (char& c : s) if (c == '-') c = '_';
                           return s;
                         });

TEST(FaultsInProcess, AFailedUploadLeavesNoStaleSlot) {
  const std::string dir = testing::ScratchDir("fault_upload");
  auto m = testing::MakeSyntheticPack(Arch::kQwen3Moe, dir, "m", 21);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const Model& model = *m->model;
  FastBackend::Options fo;
  fo.threads = 2;
  auto host = FastBackend::Create(fo);
  ASSERT_TRUE(host.ok());
  const std::vector<int32_t> ids = {1, 13, 20, 27, 34, 41, 48, 55, 62, 69, 76, 83, 90, 97};
  auto run = [&](ExpertExecutor* ex, std::vector<float>* all) -> Status {
    auto st = SequenceState::Create(**host, model.hp(), 32);
    if (!st.ok()) return st.status();
    std::vector<float> logits;
    ForwardOptions o;
    o.experts = ex;
    for (int32_t id : ids) {  // token by token: one access per routed expert
      STRATA_RETURN_IF_ERROR(Forward(model, **host, *st, std::span(&id, 1), o, &logits));
      all->insert(all->end(), logits.begin(), logits.end());
    }
    return Status::Ok();
  };
  std::vector<float> expect;
  ASSERT_TRUE(run(nullptr, &expect).ok());
  int failures = 0;
  for (uint32_t skip = 0; skip < 200; ++skip) {
    auto dev = FastBackend::Create({});  // the simulated device
    ASSERT_TRUE(dev.ok());
    TierOptions t;
    t.slots = 4;
    t.policy = CachePolicy::kLru;
    const TierDevice device{dev->get(), "simulated", MemoryPlace::Device(0), true};
    auto ex = TieredExpertExecutor::Create(model, **host, device, nullptr, t);
    ASSERT_TRUE(ex.ok());
    ArmFault(FaultSite::kDeviceUpload, skip);
    std::vector<float> got;
    Status s = run(ex->get(), &got);
    DisarmAllFaults();
    if (s.ok()) break;  // fewer uploads than skip + 1
    ++failures;
    EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
    EXPECT_THAT(s.message(), HasSubstr("uploading expert"));
    // The same executor, after the failure: every result equals the untiered one.
    got.clear();
    ASSERT_TRUE(run(ex->get(), &got).ok()) << "skip " << skip;
    ASSERT_EQ(got.size(), expect.size());
    EXPECT_EQ(std::memcmp(got.data(), expect.data(), got.size() * sizeof(float)), 0) << "skip " << skip;
  }
  EXPECT_GT(failures, 3);
}

TEST(FaultsInProcess, EveryAllocationOfARunsSetupFailsCleanly) {
  const std::string dir = testing::ScratchDir("fault_setup");
  auto m = testing::MakeSyntheticPack(Arch::kQwen35Moe, dir, "m", 22);
  ASSERT_TRUE(m.ok()) << m.status().message();
  FastBackend::Options fo;
  fo.threads = 2;
  auto host = FastBackend::Create(fo);
  ASSERT_TRUE(host.ok());
  RunMemoryOptions mo;
  mo.ram_budget = 1ull << 30;
  mo.expert_device = "cpu";
  mo.expert_slots = 5;
  const RunShape shape{64, 16, (*host)->threads(), false, 0};
  for (FaultSite site : {FaultSite::kAllocate, FaultSite::kDeviceAllocate, FaultSite::kDeviceUpload}) {
    int fired = 0;
    for (uint32_t skip = 0; skip < 50; ++skip) {
      auto setup = PlanRun(*m->pack, *m->model, **host, mo, shape);
      ASSERT_TRUE(setup.ok());
      ArmFault(site, skip);
      auto mem = AllocateRun(*m->model, **host, host->get(), *setup);
      DisarmAllFaults();
      if (mem.ok()) break;
      ++fired;
      EXPECT_EQ(mem.status().code(), StatusCode::kResourceExhausted) << FaultSiteName(site) << " " << skip;
      EXPECT_THAT(mem.status().message(), HasSubstr("injected fault"));
    }
    if (site != FaultSite::kDeviceUpload) {  // no profile: no fill uploads
      EXPECT_GT(fired, 0) << FaultSiteName(site);
    }
  }
  // The forward pass without a workspace allocates its own, checked.
  std::vector<float> logits;
  auto st = SequenceState::Create(**host, m->model->hp(), 16);
  ASSERT_TRUE(st.ok());
  ArmFault(FaultSite::kAllocate, 0);
  std::vector<int32_t> ids = {1, 2, 3};
  Status s = Forward(*m->model, **host, *st, ids, {}, &logits);
  DisarmAllFaults();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("workspace"));
  EXPECT_EQ(st->n_past, 0);
}

}  // namespace
}  // namespace strata
