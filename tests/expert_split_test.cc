// The VRAM/RAM split of the routed experts (docs/experts-split.md) on the
// software GPU: the GPU backend bound without the routed experts, the device
// tier's slots in its memory, the host tier on a CPU engine of its own.
//  * None, half and all of the experts in slots give the logits of the whole
//    model on the device (all: bit for bit; otherwise within the distance of
//    the CPU's kernels, which run the host's experts).
//  * The seeds as tests: a type a side has no kernel for is refused at start
//    naming the tensor, and runs from its Q8_0 decode copy (seeds/000); an
//    NVFP4 model split across both sides gives the all-CPU run's results
//    within the fast path's tolerance (seeds/003); the device tier cannot
//    grow past its plan: nothing is allocated on the device while it runs,
//    and a slot count past the budget is refused before anything is
//    allocated, with the count that fits (seeds/003); the split under a RAM
//    budget that just fits, its device memory behind guard pages (seeds/004).
//  * Faults at every new site: slot memory, slot uploads at the end of a
//    layer, the split's copies; each fails its pass with a clear error, the
//    device goes on, and the next pass gives the clean logits' results.
//  * strata-run --plan on a machine without the GPU prints the split, its
//    expected hit rate, the link's bytes and a predicted rate.
// The IQ3_S fixture and the 0/50/100% conformance runs are in
// conformance_test (ExpertSplitBetweenVramAndRam...).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "packer/packer.h"
#include "runtime/base/fault_injection.h"
#include "runtime/experts/tiered_executor.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/gpu_backend.h"
#include "runtime/memory/memory_plan.h"
#include "runtime/model/fast_backend.h"
#include "runtime/model/forward.h"
#include "runtime/model/kernel_coverage.h"
#include "tests/gguf_writer/synthetic_model.h"
#include "tests/testing/gpu_test_device.h"
#include "tests/testing/pack_edit.h"
#include "tests/testing/run_command.h"
#include "tests/testing/server_process.h"
#include "tests/testing/synthetic_pack.h"
#include "tests/testing/test_data.h"

namespace strata {
namespace {

using ::testing::HasSubstr;
using R = TensorRole;
using testing::NormalizedError;

std::unique_ptr<GpuBackend> SoftwareGpu() {
  gpu::SoftwareGpuOptions o;
  o.threads = 2;
  auto d = gpu::OpenSoftwareGpu(o);
  EXPECT_TRUE(d.ok()) << d.status().message();
  auto b = GpuBackend::Create(std::move(*d));
  EXPECT_TRUE(b.ok()) << b.status().message();
  return std::move(*b);
}

uint64_t FreeBytes(GpuBackend& b) {
  uint64_t free = 0, total = 0;
  EXPECT_TRUE(b.device().MemoryInfo(&free, &total).ok());
  return free;
}

// The split of one model: the GPU bound without its routed experts, a CPU
// engine for the host tier, and the tiers with `slots` slots, filled from
// the pack's profile.
struct Split {
  std::unique_ptr<GpuBackend> gpu;
  std::unique_ptr<FastBackend> host;
  std::unique_ptr<ExpertHotness> hotness;
  std::unique_ptr<TieredExpertExecutor> experts;
};
Result<Split> MakeSplit(const Pack& pack, const Model& m, int32_t slots) {
  Split s;
  s.gpu = SoftwareGpu();
  STRATA_RETURN_IF_ERROR(s.gpu->BindWithoutRoutedExperts(m));
  FastBackend::Options fo;
  fo.threads = 2;
  STRATA_ASSIGN_OR_RETURN(s.host, FastBackend::Create(fo));
  STRATA_RETURN_IF_ERROR(s.host->Bind(m));
  auto hot = ExpertHotness::FromPack(pack, m.hp());
  if (hot.ok()) s.hotness = std::make_unique<ExpertHotness>(std::move(*hot));
  TierOptions o;
  o.slots = slots;
  o.max_rows = 16;
  STRATA_ASSIGN_OR_RETURN(s.experts,
                          TieredExpertExecutor::Create(m, *s.host, TierDevice{s.gpu.get(), s.gpu->name(),
                                                                               s.gpu->BufferPlace(), false},
                                                       s.hotness.get(), o));
  return s;
}

// testing::PromptAndThreeSteps through `experts` (and `ws`, when given).
Result<std::vector<float>> RunPasses(const Model& m, Backend& be, SequenceState& st, ExpertExecutor* experts,
                                     Workspace* ws = nullptr) {
  ForwardOptions fo;
  fo.experts = experts;
  fo.workspace = ws;
  return testing::PromptAndThreeSteps(m, be, st, fo);
}

Result<std::vector<float>> RunSplit(const Model& m, Split& s) {
  STRATA_ASSIGN_OR_RETURN(SequenceState st, SequenceState::Create(*s.gpu, m.hp(), 64));
  return RunPasses(m, *s.gpu, st, s.experts.get());
}

const testing::OpenedModel& Tiny(Arch arch) {
  static std::map<Arch, testing::OpenedModel>* made = new std::map<Arch, testing::OpenedModel>();
  static const std::string dir = testing::ScratchDir("expert_split");  // once: ScratchDir empties it
  auto it = made->find(arch);
  if (it == made->end()) {
    auto o = testing::MakeSyntheticPack(arch, dir, std::string(ArchName(arch)), 5);
    EXPECT_TRUE(o.ok()) << o.status().message();
    it = made->emplace(arch, std::move(*o)).first;
  }
  return it->second;
}

std::vector<float> WholeOnDevice(const Model& m) {
  auto gpu = SoftwareGpu();
  EXPECT_TRUE(gpu->Bind(m).ok());
  auto st = SequenceState::Create(*gpu, m.hp(), 64);
  EXPECT_TRUE(st.ok());
  auto logits = RunPasses(m, *gpu, *st, nullptr);
  EXPECT_TRUE(logits.ok()) << logits.status().message();
  return *logits;
}

TEST(ExpertSplit, NoneHalfAndAllExpertsInSlotsGiveTheWholeModelsLogits) {
  const bool full = testing::TestMatrix() == testing::GpuTestMatrix::kFull;
  for (Arch arch : {Arch::kQwen3Moe, Arch::kQwen35Moe}) {
    if (!full && arch != Arch::kQwen3Moe) continue;
    SCOPED_TRACE(std::string(ArchName(arch)));
    const testing::OpenedModel& t = Tiny(arch);
    const Model& m = *t.model;
    const std::vector<float> whole = WholeOnDevice(m);
    const int32_t all = static_cast<int32_t>(m.hp().n_layer * m.hp().n_expert);
    for (int32_t slots : {0, 3, all / 2, all}) {
      SCOPED_TRACE("slots " + std::to_string(slots) + " of " + std::to_string(all));
      auto s = MakeSplit(*t.pack, m, slots);
      ASSERT_TRUE(s.ok()) << s.status().message();
      EXPECT_EQ(s->gpu->transfers().weight_bytes, s->gpu->ResidentWeightBytes(m) - s->gpu->RoutedExpertBytes(m));
      auto logits = RunSplit(m, *s);
      ASSERT_TRUE(logits.ok()) << logits.status().message();
      const CacheStats& cs = s->experts->stats();
      if (slots == all) {
        // Every expert in a slot: the same kernels on the same rows, summed
        // in the same order.
        EXPECT_EQ(*logits, whole);
        EXPECT_EQ(cs.misses, 0u);
      } else {
        // The host's experts run the CPU's kernels (the same activation
        // quantization, another summation order).
        EXPECT_LE(NormalizedError(*logits, whole), 0.02);
        EXPECT_GT(cs.misses, 0u);
      }
      if (slots > 0) {
        EXPECT_GT(cs.hits, 0u);
      }
      // Every MoE layer of the 4 passes went through the split, its
      // experts to the side the slots say.
      const ExpertSplit::Times& times = s->experts->SplitOn(*s->gpu)->times();
      EXPECT_EQ(times.layers, 4u * m.hp().n_layer);
      EXPECT_EQ(times.device_experts > 0, slots > 0);
      EXPECT_EQ(times.host_experts > 0, slots < all);
    }
  }
}

// Nothing is allocated on the device while the split runs: its slots are
// fixed at start (seeds/003's cache grew past the card).
TEST(ExpertSplit, TheDeviceTierNeverGrowsWhileItRuns) {
  const testing::OpenedModel& t = Tiny(Arch::kQwen3Moe);
  const Model& m = *t.model;
  auto s = MakeSplit(*t.pack, m, 5);
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto st = SequenceState::Create(*s->gpu, m.hp(), 64);
  ASSERT_TRUE(st.ok());
  auto ws = s->gpu->CreateWorkspace(s->gpu->WorkspaceBytes(m, PassShape{16, 64, 2}), "the test's workspace");
  ASSERT_TRUE(ws.ok()) << ws.status().message();
  const uint64_t before = FreeBytes(*s->gpu);
  for (int rep = 0; rep < 3; ++rep) {
    auto logits = RunPasses(m, *s->gpu, *st, s->experts.get(), &*ws);
    ASSERT_TRUE(logits.ok()) << logits.status().message();
    EXPECT_EQ(FreeBytes(*s->gpu), before) << "rep " << rep;
  }
  EXPECT_EQ(s->experts->cache().config().slots, 5);
  EXPECT_GT(s->experts->stats().uploads, 0u);  // the slots changed hands, in place
  // The host buffers of the split's MoE layers stay within what the plan
  // counts for passes of the prompt's 9 tokens.
  EXPECT_GT(s->gpu->HostMoeBytes(), 0u);
  EXPECT_LE(s->gpu->HostMoeBytes(), SplitHostBufferBytes(m.hp(), 9));
}

// A tiny qwen35moe whose routed experts are `type` (testing::ExpertTypePack).
std::string ExpertTypePack(const std::string& dir, const std::string& name, GgmlType type, DecodeCopyType copies) {
  auto pack = testing::ExpertTypePack(dir, name, Arch::kQwen35Moe, type, copies);
  EXPECT_TRUE(pack.ok()) << pack.status().message();
  return pack.ok() ? *pack : std::string();
}

// seeds/000: a type one side has no kernel for is refused when the tiers
// are made, naming the tensor and the way out; its Q8_0 decode copies run.
TEST(ExpertSplit, AnExpertTypeWithoutADeviceKernelIsRefusedAtStartAndRunsFromItsDecodeCopy) {
  const std::string dir = testing::ScratchDir("expert_split_q2_0");
  auto plain = testing::OpenPack(ExpertTypePack(dir, "q2_0", GgmlType::kQ2_0, DecodeCopyType::kNone));
  auto copied = testing::OpenPack(ExpertTypePack(dir, "q2_0_copies", GgmlType::kQ2_0, DecodeCopyType::kQ8_0));
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  ASSERT_TRUE(copied.ok()) << copied.status().message();
  auto ok_run = MakeSplit(*copied->pack, *copied->model, 4);  // before the hook: the logits to compare with
  ASSERT_TRUE(ok_run.ok()) << ok_run.status().message();
  auto want = RunSplit(*copied->model, *ok_run);
  ASSERT_TRUE(want.ok()) << want.status().message();
  ScopedKernelLessTypesForTesting no_q2_0({GgmlType::kQ2_0});
  // Placed on the device (slots) or on the host (no slots): refused by that side.
  for (int32_t slots : {4, 0}) {
    auto refused = MakeSplit(*plain->pack, *plain->model, slots);
    ASSERT_FALSE(refused.ok()) << "slots " << slots;
    EXPECT_EQ(refused.status().code(), StatusCode::kUnsupported);
    EXPECT_THAT(refused.status().message(), HasSubstr("ffn_gate_exps"));
    EXPECT_THAT(refused.status().message(), HasSubstr("is Q2_0"));
    EXPECT_THAT(refused.status().message(), HasSubstr(slots ? "the device tier" : "the host expert tier"));
    EXPECT_THAT(refused.status().message(), HasSubstr("--decode-copies q8_0"));
  }
  auto runs = MakeSplit(*copied->pack, *copied->model, 4);
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  auto logits = RunSplit(*copied->model, *runs);
  ASSERT_TRUE(logits.ok()) << logits.status().message();
  EXPECT_EQ(*logits, *want);
}

// Prefill: a miss the cache admits is uploaded before its layer runs, and
// runs on the device, when the upload at the link's rate costs less than the
// CPU's time on its rows; never when the link is slow. Either way the
// logits stay the whole model's (within the CPU kernels' distance).
TEST(ExpertSplit, APrefillMissGoesToTheDeviceWhenItsUploadCostsLessThanTheCpu) {
  const testing::OpenedModel& t = Tiny(Arch::kQwen3Moe);
  const Model& m = *t.model;
  const std::vector<float> whole = WholeOnDevice(m);
  for (double link : {1e15, 1.0}) {
    SCOPED_TRACE("link " + std::to_string(link) + " B/s");
    auto s = MakeSplit(*t.pack, m, 4);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_GT(s->gpu->link_bytes_per_s(), 0) << "Bind measured no link rate";
    s->gpu->SetLinkRateForTesting(link);
    auto logits = RunSplit(m, *s);
    ASSERT_TRUE(logits.ok()) << logits.status().message();
    EXPECT_LE(NormalizedError(*logits, whole), 0.02);
    const ExpertSplit::Times& times = s->experts->SplitOn(*s->gpu)->times();
    if (link > 1) {
      EXPECT_GT(times.offloaded, 0u);
      EXPECT_GE(times.offload_rows, 2 * times.offloaded);  // only batches of several rows
      EXPECT_GT(times.offload_bytes, 0u);
    } else {
      EXPECT_EQ(times.offloaded, 0u);
    }
  }
}

// Faults at the split's new sites. Each fails its pass with an error that
// says what, the device stays healthy, no device memory is left behind,
// and the same split then runs to the clean run's logits within the CPU
// kernels' distance (a failed upload drops its slot, so later experts may
// run on the other side).
TEST(ExpertSplit, FaultsAtSlotMemoryUploadsAndCopiesFailOnePassCleanly) {
  const testing::OpenedModel& t = Tiny(Arch::kQwen3Moe);
  const Model& m = *t.model;
  const std::vector<float> whole = WholeOnDevice(m);
  const testing::GpuTestMatrix matrix = testing::TestMatrix();
  const uint32_t step = matrix == testing::GpuTestMatrix::kFull ? 1 : matrix == testing::GpuTestMatrix::kTails ? 8 : 12;
  // The slots' memory when the tiers are made.
  {
    auto gpu = SoftwareGpu();
    ASSERT_TRUE(gpu->BindWithoutRoutedExperts(m).ok());
    const uint64_t before = FreeBytes(*gpu);
    auto host = FastBackend::Create({});
    ASSERT_TRUE(host.ok());
    TierOptions o;
    o.slots = 4;
    ArmFault(FaultSite::kGpuAllocate, 0);
    auto ex = TieredExpertExecutor::Create(m, **host, TierDevice{gpu.get(), gpu->name(), gpu->BufferPlace(), false},
                                           nullptr, o);
    DisarmAllFaults();
    ASSERT_FALSE(ex.ok());
    EXPECT_EQ(ex.status().code(), StatusCode::kResourceExhausted) << ex.status().message();
    EXPECT_THAT(ex.status().message(), HasSubstr("injected fault (gpu-allocate)"));
    EXPECT_EQ(FreeBytes(*gpu), before);
  }
  for (FaultSite site : {FaultSite::kDeviceUpload, FaultSite::kGpuCopy}) {
    uint32_t fired = 0;
    for (uint32_t skip = 0;; skip += step) {
      ASSERT_LT(skip, 3000u) << "the run never finished without the fault";
      SCOPED_TRACE(std::string(FaultSiteName(site)) + " fails at call " + std::to_string(skip));
      auto s = MakeSplit(*t.pack, m, 3);
      ASSERT_TRUE(s.ok()) << s.status().message();
      auto st = SequenceState::Create(*s->gpu, m.hp(), 64);
      ASSERT_TRUE(st.ok());
      const uint64_t before = FreeBytes(*s->gpu);
      ArmFault(site, skip);
      auto logits = RunPasses(m, *s->gpu, *st, s->experts.get());
      DisarmAllFaults();
      if (logits.ok()) break;
      ++fired;
      EXPECT_THAT(logits.status().message(), HasSubstr("injected fault"));
      EXPECT_TRUE(s->gpu->Health().ok());
      EXPECT_EQ(FreeBytes(*s->gpu), before) << "the failed pass left device memory behind";
      auto again = RunPasses(m, *s->gpu, *st, s->experts.get());
      ASSERT_TRUE(again.ok()) << again.status().message();
      EXPECT_LE(NormalizedError(*again, whole), 0.02);
      if (skip > 60) skip += 4 * step;  // later points spread out: a run has hundreds of copies
    }
    EXPECT_GE(fired, matrix == testing::GpuTestMatrix::kFull ? 2u : 1u) << FaultSiteName(site);
  }
}

// --- strata-run --------------------------------------------------------------

struct CliRun {
  testing::CommandResult r;
  std::vector<float> logits;
};
CliRun Logits(const std::string& pack, const std::string& out, std::vector<std::string> extra) {
  std::vector<std::string> args = {pack, "--tokens", "1,13,20,27,5,9,41,3,8", "-n", "4", "--temp", "0",
                                   "--ignore-eos", "--logits-out", out, "-t", "2", "-c", "64", "-b", "16"};
  args.insert(args.end(), extra.begin(), extra.end());
  CliRun c;
  c.r = testing::RunProgram("strata-run", args);
  if (c.r.exit_code == 0) c.logits = testing::ReadF32(out);
  return c;
}

// seeds/003: an NVFP4 model split across both sides gives the all-CPU
// run's results within the fast path's tolerance; a slot count past the
// VRAM budget is refused before anything is allocated, with the count that
// fits, which then runs.
TEST(ExpertSplitCli, AnNvfp4ModelSplitAcrossBothSidesAndASlotCountPastTheBudgetIsRefused) {
  if (testing::TestMatrix() == testing::GpuTestMatrix::kSmoke)
    GTEST_SKIP() << "the Linux builds run it; the Windows build runs the split's smoke subset (its server, its faults)";
  const std::string dir = testing::ScratchDir("expert_split_nvfp4");
  const std::string pack = ExpertTypePack(dir, "nvfp4", GgmlType::kNVFP4,
                                          CpuKernelSupport(GgmlType::kNVFP4) == KernelSupport::kNone
                                              ? DecodeCopyType::kQ8_0
                                              : DecodeCopyType::kNone);
  CliRun cpu = Logits(pack, dir + "/cpu.f32", {"--backend", "cpu"});
  ASSERT_EQ(cpu.r.exit_code, 0) << cpu.r.err;
  CliRun split = Logits(pack, dir + "/split.f32", {"--backend", "software-gpu", "--expert-slots", "5", "--expert-stats"});
  ASSERT_EQ(split.r.exit_code, 0) << split.r.err;
  EXPECT_THAT(split.r.err, HasSubstr("device tier: 5 slots on software-gpu"));
  EXPECT_THAT(split.r.err, HasSubstr("on the device tier"));
  EXPECT_LE(NormalizedError(split.logits, cpu.logits), 0.05);
  // Thousands of slots on a device with room for a few: refused by the plan.
  CliRun big = Logits(pack, dir + "/big.f32", {"--backend", "software-gpu", "--vram-budget", "4M", "--expert-slots",
                                               "5364"});
  EXPECT_EQ(big.r.exit_code, 1) << big.r.err;
  EXPECT_THAT(big.r.err, HasSubstr("refusing to start"));
  EXPECT_THAT(big.r.err, ::testing::Not(HasSubstr("weights on software-gpu")));  // refused before the upload
  std::smatch sm;
  ASSERT_TRUE(std::regex_search(big.r.err, sm, std::regex("--expert-slots ([0-9]+) \\(a smaller"))) << big.r.err;
  CliRun fits = Logits(pack, dir + "/fits.f32", {"--backend", "software-gpu", "--vram-budget", "4M", "--expert-slots",
                                                 sm[1].str()});
  EXPECT_EQ(fits.r.exit_code, 0) << fits.r.err;
  EXPECT_LE(NormalizedError(fits.logits, cpu.logits), 0.05);
}

// seeds/004: the split on a RAM budget that just fits its plan: the host
// tier reads the pack's blobs (whose ends the CPU kernels respect,
// Seeds.Report004...), the device's memory sits between guard pages (a read
// past a slot faults), and the run conforms to the whole model's.
TEST(ExpertSplitCli, TheSplitUnderMemoryPressureReadsNothingPastABuffer) {
  if (testing::TestMatrix() == testing::GpuTestMatrix::kSmoke)
    GTEST_SKIP() << "the Linux builds run it; the Windows build runs the split's smoke subset (its server, its faults)";
  const std::string dir = testing::ScratchDir("expert_split_pressure");
  const std::string pack = ExpertTypePack(dir, "q4_k", GgmlType::kQ4_K, DecodeCopyType::kNone);
  CliRun whole = Logits(pack, dir + "/whole.f32", {"--backend", "software-gpu"});
  ASSERT_EQ(whole.r.exit_code, 0) << whole.r.err;
  auto plan = testing::RunProgram("strata-run", {pack, "--backend", "software-gpu", "--vram-budget", "4M", "--plan", "-c",
                                                 "64", "-b", "16"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err << plan.out;
  std::smatch sm;
  const std::string text = plan.out + plan.err;
  ASSERT_TRUE(std::regex_search(text, sm, std::regex("RAM +([0-9.]+) (KiB|MiB) needed"))) << text;
  const double need = std::stod(sm[1].str()) * (sm[2].str() == "MiB" ? 1024 : 1);
  const std::string budget = std::to_string(static_cast<long long>(need) + 64) + "K";
  CliRun tight = Logits(pack, dir + "/tight.f32", {"--backend", "software-gpu", "--vram-budget", "4M", "--ram-budget",
                                                   budget, "--expert-stats"});
  ASSERT_EQ(tight.r.exit_code, 0) << tight.r.err;
  EXPECT_THAT(tight.r.err, HasSubstr("on the host"));
  EXPECT_LE(NormalizedError(tight.logits, whole.logits), 0.02);
}

// The server on the split: two slots batched into one pass (two sequences'
// rows in one MoE layer), answers request after request, streamed and not,
// and stops cleanly.
TEST(ExpertSplitCli, TheServerServesThroughTheSplit) {
  const std::string dir = testing::ScratchDir("expert_split_serve");
  const std::string pack = ExpertTypePack(dir, "q4_k", GgmlType::kQ4_K, DecodeCopyType::kNone);
  testing::ServerProcess server;
  std::string error;
  ASSERT_TRUE(server.Start({pack, "--serve", "--parallel", "2", "--backend", "software-gpu", "--vram-budget", "5M",
                            "-c", "64", "-b", "16", "-t", "2"},
                           {}, &error))
      << error;
  ASSERT_TRUE(server.WaitReady(120000)) << server.Log();
  EXPECT_THAT(server.Log(), HasSubstr("slots on software-gpu"));
  for (int i = 0; i < 4; ++i) {
    const bool stream = i % 2 == 1;
    const std::string body = std::string(R"({"prompt":"request )") + std::to_string(i) +
                             R"(","max_tokens":6,"temperature":0.7,"seed":)" + std::to_string(i) +
                             (stream ? R"(,"stream":true})" : "}");
    const std::string reply = testing::RawPostJson(server.port(), "/v1/completions", body, 60000);
    ASSERT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
    EXPECT_THAT(reply, HasSubstr(stream ? "data: [DONE]" : "\"finish_reason\""));
  }
  server.Terminate();
  EXPECT_EQ(server.WaitExit(30000), 0) << server.Log();
}

// Offline planning: on a machine without the GPU, the plan of a split for
// the device it names, with its forecast; a budget that cannot hold even the
// dense part is refused with what to change.
TEST(ExpertSplitCli, ThePlanPrintsTheSplitItsHitRateLinkBytesAndAPredictedRate) {
  if (testing::TestMatrix() == testing::GpuTestMatrix::kSmoke)
    GTEST_SKIP() << "the Linux builds run it; the Windows build runs the split's smoke subset (its server, its faults)";
  const testing::OpenedModel& t = Tiny(Arch::kQwen3Moe);
  const std::string backend = PlacementBuilt(Placement::kCuda) ? "cuda" : "software-gpu";
  // The budget: 2 MiB less than the whole run takes on the device (the
  // tiny model's experts are 4.8 MiB), so some experts stay in RAM. Taken
  // from the plan without a budget, as the device part grows with the GPU
  // image (the CUDA plan also counts the driver's context, 512 MiB).
  auto whole = testing::RunProgram("strata-run", {t.path, "--plan", "--backend", backend});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  std::smatch need;
  const std::string whole_text = whole.out + whole.err;
  ASSERT_TRUE(std::regex_search(whole_text, need, std::regex("device 0 \\(.*\\): ([0-9.]+) MiB needed")))
      << whole_text;
  const std::string vram = std::to_string(static_cast<long long>((std::stod(need[1].str()) - 2.0) * 1024)) + "K";
  auto plan = testing::RunProgram("strata-run", {t.path, "--plan", "--backend", backend, "--vram-budget", vram,
                                                 "--split-rates", "400,50,20"});
  ASSERT_EQ(plan.exit_code, 0) << plan.err << plan.out;
  const std::string text = plan.out + plan.err;
  EXPECT_THAT(text, HasSubstr("the split of the routed experts between VRAM and RAM"));
  EXPECT_THAT(text, HasSubstr("expected hit rate"));
  EXPECT_THAT(text, HasSubstr("device experts per layer at start:"));
  EXPECT_THAT(text, HasSubstr("per decoded token: device reads"));
  EXPECT_THAT(text, HasSubstr("PREDICTION, not measured: device 400 GB/s, host RAM 50 GB/s, link 20 GB/s"));
  EXPECT_THAT(text, HasSubstr("weights: experts, host tier"));
  // The split's slot count in the plan equals the forecast's.
  std::smatch a, b;
  ASSERT_TRUE(std::regex_search(text, a, std::regex("expert slots +device 0 .* ([0-9]+) slots \\("))) << text;
  ASSERT_TRUE(std::regex_search(text, b, std::regex("experts: ([0-9]+) of ([0-9]+) in VRAM"))) << text;
  EXPECT_EQ(a[1].str(), b[1].str());
  // Without a budget the whole model fits: no split.
  EXPECT_THAT(whole_text, ::testing::Not(HasSubstr("the split of the routed experts")));
  // Too small for even the dense weights, the cache and the workspace.
  auto tiny = testing::RunProgram("strata-run", {t.path, "--plan", "--backend", backend, "--vram-budget", "1M"});
  EXPECT_EQ(tiny.exit_code, 1) << tiny.err;
  EXPECT_THAT(tiny.out + tiny.err, HasSubstr("DOES NOT FIT"));
  EXPECT_THAT(tiny.out + tiny.err, HasSubstr("any one of these fits"));
  auto bad = testing::RunProgram("strata-run", {t.path, "--plan", "--backend", backend, "--split-rates", "400,x,20"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_THAT(bad.err, HasSubstr("--split-rates '400,x,20': expected three rates in GB/s"));
  // --expert-device cpu keeps its meaning for CPU runs only.
  auto cpu_tier = testing::RunProgram("strata-run", {t.path, "--plan", "--backend", backend, "--expert-device", "cpu"});
  EXPECT_NE(cpu_tier.exit_code, 0);
  EXPECT_THAT(cpu_tier.err, HasSubstr("the device tier is the GPU itself"));
}

}  // namespace
}  // namespace strata
