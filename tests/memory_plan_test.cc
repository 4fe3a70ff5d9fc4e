// The memory plan is what a run takes.
//
// Heap bytes are counted by replacing the global operator new/delete in this
// test binary (every C++ allocation of the runtime goes through them: vectors,
// strings, AlignedBuffer's aligned new). Mapped memory (the pack) is not heap
// and is checked against the pack's size.
//
//  * ForwardWorkspaceBytes is exact: a pass of a shape takes exactly that
//    much workspace, and a workspace one block smaller is refused up front.
//  * With the run's workspace, reserved backend scratch and a reserved logits
//    buffer, a forward pass (and the tiered executor) allocates nothing.
//  * Real generations (synthetic models of every architecture, conformance
//    fixtures, a real 151k-token vocabulary; with and without a device tier)
//    keep the heap's high-water mark within the plan's heap lines plus
//    kMargin, and the plan does not overstate it by more than 2x.
//  * strata-run --plan prints the table and exits 0 / 1; a run whose plan
//    does not fit refuses to start with the numbers and advice that works
//    (seeds/003: an expert cache sized for more device memory than exists).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <atomic>
#include <cstdlib>
#include <map>
#include <new>
#include <regex>

#include "runtime/base/platform.h"
#include "runtime/memory/plan_format.h"
#include "runtime/memory/plan_search.h"
#include "runtime/memory/run_memory.h"
#include "runtime/model/fast_backend.h"
#include "runtime/model/forward.h"
#include "runtime/model/generator.h"
#include "runtime/pack/pack_vocab.h"
#include "tests/testing/test_matrix.h"
#include "tests/testing/pack_edit.h"
#include "tests/testing/run_command.h"
#include "tests/testing/synthetic_pack.h"
#include "tests/testing/test_data.h"

// --- heap accounting for this binary -----------------------------------------
namespace {
std::atomic<int64_t> g_live{0}, g_peak{0}, g_count{0};

void Note(int64_t n) {
  const int64_t v = g_live.fetch_add(n) + n;
  int64_t p = g_peak.load();
  while (v > p && !g_peak.compare_exchange_weak(p, v)) {
  }
  if (n > 0) g_count.fetch_add(1);
}

void* Alloc(size_t n, size_t align, bool nothrow) {
  const size_t h = std::max<size_t>(align, 16);
  void* raw = nullptr;
#ifdef _WIN32
  raw = _aligned_malloc(n + h, std::max<size_t>(align, sizeof(void*)));
  if (raw == nullptr) {
#else
  if (posix_memalign(&raw, std::max<size_t>(align, sizeof(void*)), n + h) != 0) {
#endif
    if (nothrow) return nullptr;
    throw std::bad_alloc();
  }
  char* user = static_cast<char*>(raw) + h;
  reinterpret_cast<size_t*>(user)[-1] = n;
  reinterpret_cast<size_t*>(user)[-2] = h;
  Note(static_cast<int64_t>(n));
  return user;
}

void Free(void* p) noexcept {
  if (!p) return;
  char* user = static_cast<char*>(p);
  const size_t n = reinterpret_cast<size_t*>(user)[-1], h = reinterpret_cast<size_t*>(user)[-2];
  Note(-static_cast<int64_t>(n));
#ifdef _WIN32
  _aligned_free(user - h);
#else
  std::free(user - h);
#endif
}
}  // namespace

void* operator new(size_t n) { return Alloc(n, 16, false); }
void* operator new[](size_t n) { return Alloc(n, 16, false); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return Alloc(n, 16, true); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return Alloc(n, 16, true); }
void* operator new(size_t n, std::align_val_t a) { return Alloc(n, static_cast<size_t>(a), false); }
void* operator new[](size_t n, std::align_val_t a) { return Alloc(n, static_cast<size_t>(a), false); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return Alloc(n, static_cast<size_t>(a), true); }
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return Alloc(n, static_cast<size_t>(a), true); }
void operator delete(void* p) noexcept { Free(p); }
void operator delete[](void* p) noexcept { Free(p); }
void operator delete(void* p, size_t) noexcept { Free(p); }
void operator delete[](void* p, size_t) noexcept { Free(p); }
void operator delete(void* p, std::align_val_t) noexcept { Free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { Free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { Free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { Free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { Free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { Free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { Free(p); }

namespace strata {
namespace {

using ::testing::HasSubstr;

// What a run may take beyond the plan's heap lines: small things the plan does
// not itemize (the Generator's token list and text, the tokenizer's pieces
// while it encodes, gtest's bookkeeping between the baseline and the peak).
constexpr int64_t kMargin = 64 << 10;

testing::OpenedModel Synthetic(Arch arch, const std::string& dir) {
  auto m = testing::MakeSyntheticPack(arch, dir, std::string(ArchName(arch)), 3);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return std::move(*m);
}

class Workspaces : public ::testing::TestWithParam<Arch> {};

TEST_P(Workspaces, ForwardWorkspaceBytesIsExactAndASmallerOneIsRefused) {
  const std::string dir = testing::ScratchDir("workspace");
  testing::OpenedModel m = Synthetic(GetParam(), dir);
  const Model& model = *m.model;
  ReferenceBackend ref;
  FastBackend::Options fo;
  fo.threads = 2;
  auto fast = FastBackend::Create(fo);
  ASSERT_TRUE(fast.ok());
  for (CpuBackend* be : {static_cast<CpuBackend*>(&ref), static_cast<CpuBackend*>(fast->get())}) {
    struct Step {
      int64_t past, n;
    };
    for (Step s : {Step{0, 1}, Step{0, 7}, Step{7, 5}, Step{0, 20}, Step{20, 1}}) {
      auto st = SequenceState::Create(*be, model.hp(), 64);
      ASSERT_TRUE(st.ok());
      std::vector<int32_t> ids(static_cast<size_t>(s.past + s.n));
      for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(3 + 17 * i % 400);
      std::vector<float> logits;
      if (s.past) {
        ASSERT_TRUE(Forward(model, *be, *st, std::span(ids).first(s.past), {}, &logits).ok());
      }
      const uint64_t need = ForwardWorkspaceBytes(model, {s.n, s.past + s.n, be->threads()});
      auto small = be->CreateWorkspace(need - 64, "test");
      ASSERT_TRUE(small.ok());
      ForwardOptions o;
      o.workspace = &*small;
      Status refused = Forward(model, *be, *st, std::span(ids).subspan(s.past), o, &logits);
      EXPECT_EQ(refused.code(), StatusCode::kInternal) << be->name();
      EXPECT_EQ(st->n_past, s.past);
      EXPECT_EQ(small->high_water(), 0u);  // refused before it took anything
      auto ws = be->CreateWorkspace(need, "test");
      ASSERT_TRUE(ws.ok());
      o.workspace = &*ws;
      ASSERT_TRUE(Forward(model, *be, *st, std::span(ids).subspan(s.past), o, &logits).ok());
      EXPECT_EQ(ws->high_water(), need) << be->name() << " past " << s.past << " n " << s.n;
    }
  }
}

TEST_P(Workspaces, APassAllocatesNothingWithTheRunsWorkspace) {
  const std::string dir = testing::ScratchDir("no_alloc");
  testing::OpenedModel m = Synthetic(GetParam(), dir);
  const Model& model = *m.model;
  FastBackend::Options fo;
  fo.threads = 2;
  auto fast = FastBackend::Create(fo);
  ASSERT_TRUE(fast.ok());
  RunMemoryOptions mo;
  mo.ram_budget = 1ull << 30;
  if (model.hp().n_expert) {
    mo.expert_device = "cpu";
    mo.expert_slots = 5;
  }
  RunShape shape{64, 8, (*fast)->threads(), false, 0};
  auto setup = PlanRun(*m.pack, model, **fast, mo, shape);
  ASSERT_TRUE(setup.ok()) << setup.status().message();
  ASSERT_TRUE(setup->plan.Fits());
  auto mem = AllocateRun(model, **fast, fast->get(), *setup);
  ASSERT_TRUE(mem.ok()) << mem.status().message();
  std::vector<float> logits;
  logits.reserve(model.hp().n_vocab);
  ForwardOptions o;
  o.workspace = &mem->workspace;
  o.experts = mem->experts.get();
  std::vector<int32_t> prompt = {1, 5, 9, 200, 3, 44, 45, 46};
  const int64_t before = g_count.load();
  ASSERT_TRUE(Forward(model, **fast, mem->states[0], prompt, o, &logits).ok());
  for (int i = 0; i < 10; ++i) {
    int32_t id = 7 + i;
    ASSERT_TRUE(Forward(model, **fast, mem->states[0], std::span(&id, 1), o, &logits).ok());
  }
  EXPECT_EQ(g_count.load() - before, 0) << "heap allocations during forward passes";
}

// The MoE op's batches (every selected expert's rows converted at once) within
// the plan's backend scratch, for expert types whose activations differ: F32
// experts (rows gathered, not converted), gate and up in two formats (Q4_K:
// Q8_K; Q8_0: Q8_0), gate and up of one type (one conversion). A pass that
// needs more than was planned would allocate.
TEST(Workspaces, TheMoeBatchesRunWithinThePlannedScratch) {
  const std::map<TensorRole, GgmlType> mixes[] = {
      {{TensorRole::kFfnGateExps, GgmlType::kF32}, {TensorRole::kFfnUpExps, GgmlType::kF32},
       {TensorRole::kFfnDownExps, GgmlType::kF32}},
      {{TensorRole::kFfnGateExps, GgmlType::kQ4_K}, {TensorRole::kFfnUpExps, GgmlType::kQ8_0},
       {TensorRole::kFfnDownExps, GgmlType::kQ6_K}},
      {{TensorRole::kFfnGateExps, GgmlType::kQ5_K}, {TensorRole::kFfnUpExps, GgmlType::kQ5_K}},
  };
  int which = 0;
  for (const auto& mix : mixes) {
    SCOPED_TRACE("mix " + std::to_string(which));
    const std::string dir = testing::ScratchDir("moe_batches_" + std::to_string(which++));
    auto m = testing::MakeSyntheticPack(Arch::kQwen3Moe, dir, "m", 3,
                                        [&](testing::SyntheticModelSpec& s) { s.type_by_role = mix; });
    ASSERT_TRUE(m.ok()) << m.status().message();
    const Model& model = *m->model;
    FastBackend::Options fo;
    fo.threads = 2;
    auto fast = FastBackend::Create(fo);
    ASSERT_TRUE(fast.ok());
    RunMemoryOptions mo;
    mo.ram_budget = 1ull << 30;
    RunShape shape{64, 64, (*fast)->threads(), false, 0};
    auto setup = PlanRun(*m->pack, model, **fast, mo, shape);
    ASSERT_TRUE(setup.ok()) << setup.status().message();
    auto mem = AllocateRun(model, **fast, fast->get(), *setup);
    ASSERT_TRUE(mem.ok()) << mem.status().message();
    std::vector<float> logits;
    logits.reserve(model.hp().n_vocab);
    ForwardOptions o;
    o.workspace = &mem->workspace;
    std::vector<int32_t> prompt(64);
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(1 + 7 * i % 250);
    const int64_t before = g_count.load();
    ASSERT_TRUE(Forward(model, **fast, mem->states[0], prompt, o, &logits).ok());
    EXPECT_EQ(g_count.load() - before, 0) << "heap allocations during a 64-token pass";
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, Workspaces,
                         ::testing::Values(Arch::kLlama, Arch::kQwen3Moe, Arch::kQwen35Moe, Arch::kGlm4Moe,
                                           Arch::kGptOss, Arch::kDeepseek2),
                         [](const auto& p) {
                           std::string n(ArchName(p.param));
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

// A generation the way strata-run does it, from a baseline taken before the
// pack is opened; returns (peak heap above the baseline, the plan's heap).
struct Measured {
  int64_t peak = 0;
  uint64_t planned = 0;
  uint64_t meta_line = 0;
  int64_t open = 0;  // heap after opening the pack and loading the tokenizer
};

Measured Generate(const std::string& pack_path, const RunMemoryOptions& mo, int32_t batch, bool logits_all,
                  int n_prompt, int n_gen, float temperature) {
  Measured r;
  const int64_t base = g_live.load();
  g_peak.store(base);
  {
    auto pack = Pack::Open(pack_path);
    EXPECT_TRUE(pack.ok());
    auto model = Model::Create(**pack);
    EXPECT_TRUE(model.ok());
    FastBackend::Options fo;
    fo.threads = 2;
    auto be = FastBackend::Create(fo);
    auto vocab = VocabFromManifest(*(*pack)->manifest().tokenizer(), pack_path);
    EXPECT_TRUE(vocab.ok());
    auto tok = tokenizer::Tokenizer::Create(*vocab);
    EXPECT_TRUE(tok.ok());
    r.open = g_live.load() - base;
    RunShape shape{std::min<int64_t>(model->hp().n_ctx_train, 256), batch, (*be)->threads(), logits_all, 0};
    auto setup = PlanRun(**pack, *model, **be, mo, shape);
    EXPECT_TRUE(setup.ok()) << setup.status().message();
    EXPECT_TRUE(setup->plan.Fits());
    r.planned = setup->plan.Heap() + setup->plan.DeviceInHostRam();
    if (const PlanLine* meta = setup->plan.Find(PlanItem::kRuntimeMetadata)) r.meta_line = meta->bytes;
    auto mem = AllocateRun(*model, **be, be->get(), *setup);
    EXPECT_TRUE(mem.ok()) << mem.status().message();
    std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
    for (int i = 0; i < n_prompt; ++i) prompt[static_cast<size_t>(i)] = static_cast<int32_t>((7 * i + 3) % 500 + 10);
    Generator g(*model, **be, mem->states[0], &*tok);
    GenerateOptions go;
    go.workspace = &mem->workspace;
    go.experts = mem->experts.get();
    go.n_predict = n_gen;
    go.ignore_eog = true;
    go.sampling.temperature = temperature;
    go.batch = batch;
    go.prompt_logits = logits_all;
    auto res = g.Generate(prompt, go);
    EXPECT_TRUE(res.ok()) << res.status().message();
  }
  r.peak = g_peak.load() - base;
  return r;
}

void ExpectWithinPlan(const Measured& m, const std::string& what) {
  std::printf("  %-52s heap peak %9lld B (pack + tokenizer %8lld), planned %9llu B (metadata line %llu)\n",
              what.c_str(), static_cast<long long>(m.peak), static_cast<long long>(m.open),
              static_cast<unsigned long long>(m.planned), static_cast<unsigned long long>(m.meta_line));
  EXPECT_LE(m.peak, static_cast<int64_t>(m.planned) + kMargin) << what;
  EXPECT_GE(2 * m.peak, static_cast<int64_t>(m.planned)) << what << ": the plan overstates the heap by more than 2x";
  EXPECT_LE(m.open, static_cast<int64_t>(m.meta_line)) << what << ": the metadata estimate is too small";
}

TEST(HighWater, GenerationsStayWithinThePlan) {
  const std::string dir = testing::ScratchDir("high_water");
  RunMemoryOptions plain;
  plain.ram_budget = 8ull << 30;
  RunMemoryOptions tier = plain;
  tier.expert_device = "cpu";
  tier.expert_slots = 6;
  for (Arch arch : {Arch::kLlama, Arch::kQwen3Moe, Arch::kQwen35Moe}) {
    testing::OpenedModel m = Synthetic(arch, dir);
    const std::string name(ArchName(arch));
    m.model.reset();
    m.pack.reset();
    ExpectWithinPlan(Generate(m.path, plain, 16, false, 40, 24, 0.8f), name + " synthetic");
    ExpectWithinPlan(Generate(m.path, plain, 512, true, 40, 24, 0.0f), name + " synthetic, logits of every row");
    if (arch != Arch::kLlama) ExpectWithinPlan(Generate(m.path, tier, 16, false, 40, 24, 0.8f), name + " synthetic, device tier");
  }
  // A real vocabulary (Qwen2's 151k tokens) makes the tokenizer the largest metadata.
  {
    const std::string vocab = testing::SharedFile("tokenizer/ggml-vocab-qwen2.gguf");
    STRATA_REQUIRE_SHARED_FILE(vocab);
    auto m = testing::MakeSyntheticPack(Arch::kQwen3Moe, dir, "qwen2vocab", 4,
                                        [&](testing::SyntheticModelSpec& s) { s.tokenizer_gguf = vocab; });
    ASSERT_TRUE(m.ok()) << m.status().message();
    const std::string path = m->path;
    m->model.reset();
    m->pack.reset();
    ExpectWithinPlan(Generate(path, plain, 16, false, 40, 24, 0.8f), "qwen3moe, Qwen2 vocabulary (151k tokens)");
  }
  // The subset builds: the qwen35moe fixture (the synthetic models above
  // cover the other architectures there).
  for (const char* name : testing::MatrixCases<const char*>({"qwen3moe-q4_k_m", "qwen35moe-q4_k_m", "stories260k-f32"},
                                                            [](const char* n) { return std::string(n) == "qwen35moe-q4_k_m"; })) {
    const std::string gguf = testing::SharedFile(std::string("conformance/") + name + ".gguf");
    STRATA_REQUIRE_SHARED_FILE(gguf);
    const std::string pack = dir + "/" + name + ".strata";
    ASSERT_TRUE(testing::PackFile(gguf, pack).ok());
    ExpectWithinPlan(Generate(pack, plain, 16, false, 24, 32, 0.8f), std::string(name));
    if (std::string(name) != "stories260k-f32")
      ExpectWithinPlan(Generate(pack, tier, 16, false, 24, 32, 0.8f), std::string(name) + ", device tier");
  }
}

// --- the commit account and large pages --------------------------------------

struct PlanFixture {
  testing::OpenedModel m;
  std::unique_ptr<FastBackend> be;
};

PlanFixture PlanFor(Arch arch, const std::string& name) {
  PlanFixture f{Synthetic(arch, testing::ScratchDir(name)), nullptr};
  FastBackend::Options fo;
  fo.threads = 1;
  auto be = FastBackend::Create(fo);
  EXPECT_TRUE(be.ok());
  f.be = std::move(*be);
  return f;
}

TEST(Commit, PrivateBuffersMustFitTheCommitLimitMappedWeightsDoNot) {
  // Windows charges private memory (heap, the device tier in host RAM)
  // against RAM plus the page file; the pack's mapping is file-backed and is
  // not charged. A plan that fits both does not fail at allocation.
  PlanFixture f = PlanFor(Arch::kQwen3Moe, "commit");
  RunMemoryOptions mo;
  mo.ram_budget = 8ull << 30;
  RunShape shape{256, 16, 1, false, 0};
  auto setup = PlanRun(*f.m.pack, *f.m.model, *f.be, mo, shape);
  ASSERT_TRUE(setup.ok()) << setup.status().message();
  MemoryPlan plan = setup->plan;
  const uint64_t charged = plan.CommitNeeded();
  ASSERT_GT(plan.MappedResident(), 0u);
  EXPECT_EQ(charged, plan.Heap());
  const uint64_t eight = 8ull << 30;
  plan.ram = RamBudgetFrom(&eight, 0, 0, /*commit_limited=*/true, charged);  // exactly enough: mapped is free
  EXPECT_TRUE(plan.Fits()) << FormatPlan(plan);
  EXPECT_THAT(FormatPlan(plan), HasSubstr("commit"));
  plan.ram = RamBudgetFrom(&eight, 0, 0, true, charged - 1);
  EXPECT_FALSE(plan.Fits());
  ASSERT_EQ(plan.Problems().size(), 1u);
  EXPECT_THAT(plan.Problems()[0], HasSubstr("commit"));
  EXPECT_THAT(plan.Problems()[0], HasSubstr("page file"));
  EXPECT_THAT(FormatPlan(plan), HasSubstr("DOES NOT FIT"));
  // Without the account (Linux's overcommit) the same plan fits.
  plan.ram = RamBudgetFrom(&eight, 0, 0, false, 0);
  EXPECT_TRUE(plan.Fits());
  // The reserve comes off the commit account too, and the source says so.
  const Budget b = RamBudgetFrom(nullptr, 600, 5000, true, 1000);
  EXPECT_EQ(b.bytes, 4400u);
  EXPECT_EQ(b.commit, 400u);
  EXPECT_THAT(b.commit_source, HasSubstr("reserve"));
  EXPECT_EQ(RamBudgetFrom(nullptr, 600, 5000, true, 100).commit, 0u);

  // Planned from scratch with a commit account half the heap: refused, and
  // the advice it gives (a smaller context, ...) makes it fit.
  PlanInputs in = setup->inputs;
  in.ram = RamBudgetFrom(&eight, 0, 0, true, charged / 2);
  auto small = PlanMemory(in);
  ASSERT_TRUE(small.ok());
  EXPECT_FALSE(small->Fits());
  const std::vector<std::string> advised = PlanAdvice(in);
  ASSERT_FALSE(advised.empty());
  std::smatch c;
  const std::string advice = advised[0];
  if (std::regex_search(advice, c, std::regex("^-c ([0-9]+)"))) {
    in.n_ctx = std::stoll(c[1].str());
    auto fixed = PlanMemory(in);
    ASSERT_TRUE(fixed.ok());
    EXPECT_TRUE(fixed->Fits()) << advice << "\n" << FormatPlan(*fixed);
  }
}

// An MTP layer (glm4moe's tiny preset has one) is in the pack but not run:
// the plan puts its bytes in "weights: not read", outside what must stay
// resident, and every mapped byte of the file is on exactly one line.
TEST(MtpLayers, ArePackedButNotPlannedAsRead) {
  PlanFixture f = PlanFor(Arch::kGlm4Moe, "mtp_plan");
  const HParams& hp = f.m.model->hp();
  ASSERT_EQ(hp.n_layer_all, hp.n_layer + 1);
  uint64_t mtp = 0, all = 0;
  for (const TensorView& t : f.m.model->tensors()) {
    all += t.data.size();
    if (t.layer >= static_cast<int32_t>(hp.n_layer)) mtp += t.data.size();
  }
  ASSERT_GT(mtp, 0u);
  RunMemoryOptions mo;
  RunShape shape{256, 16, 1, false, 0};
  auto setup = PlanRun(*f.m.pack, *f.m.model, *f.be, mo, shape);
  ASSERT_TRUE(setup.ok()) << setup.status().message();
  uint64_t not_read = 0, weights = 0;
  for (const PlanLine& l : setup->plan.lines) {
    if (l.id == PlanItem::kWeightsNotRead) {
      not_read += l.bytes;
      EXPECT_FALSE(l.counts);
      EXPECT_THAT(l.how, HasSubstr("1 MTP layer"));
    }
    if (l.id == PlanItem::kWeightsDense || l.id == PlanItem::kExpertsHostTier || l.id == PlanItem::kWeightsNotRead)
      weights += l.bytes;
  }
  EXPECT_EQ(not_read, mtp);
  EXPECT_EQ(weights, all);
  EXPECT_EQ(setup->plan.MappedResident(), all - mtp) << FormatPlan(setup->plan);
}

TEST(LargePages, ThePlanCountsTheRoundingAndTheBackendUsesThePages) {
  PlanFixture f = PlanFor(Arch::kQwen35Moe, "large_pages");
  RunMemoryOptions mo;
  mo.ram_budget = 8ull << 30;
  RunShape shape{4096, 64, 1, false, 0};
  auto setup = PlanRun(*f.m.pack, *f.m.model, *f.be, mo, shape);
  ASSERT_TRUE(setup.ok()) << setup.status().message();
  PlanInputs in = setup->inputs;
  const uint64_t lp = 2ull << 20;
  in.large_page_bytes = lp;
  auto with = PlanMemory(in);
  ASSERT_TRUE(with.ok());
  const PlanLine* rounding_line = with->Find(PlanItem::kLargePageRounding);
  ASSERT_NE(rounding_line, nullptr) << FormatPlan(*with);
  EXPECT_EQ(rounding_line->label, "large-page rounding");
  const uint64_t rounding = rounding_line->bytes;
  const uint64_t workspace = with->Find(PlanItem::kForwardWorkspace)->bytes;
  auto pad = [&](uint64_t b) { return b >= lp ? (b + lp - 1) / lp * lp - b : 0; };
  const uint64_t state = SequenceState::BytesFor(f.m.model->hp(), 4096);
  EXPECT_EQ(rounding, pad(state) + pad(workspace));
  EXPECT_EQ(with->Heap(), setup->plan.Heap() + rounding);
  EXPECT_THAT(with->shape, HasSubstr("large pages"));

  // The backend: buffers of a page or more go on large pages when the OS
  // gives them (Linux: transparent huge pages; Windows: the privilege),
  // smaller ones and refusals on ordinary pages; all are zeroed and freed.
  const LargePages sys = QueryLargePages();
  if (sys.page_bytes == 0) GTEST_SKIP() << sys.why;
  f.be->SetLargePages(sys.page_bytes);
  {
    auto big = f.be->Allocate(sys.page_bytes + 100, "big");
    auto tiny = f.be->Allocate(100, "tiny");
    ASSERT_TRUE(big.ok() && tiny.ok());
    const CpuBackend::LargePageCounts c = f.be->large_pages();
    EXPECT_EQ(c.buffers + c.refused, 1u);  // only the big one asked
    if (c.buffers) {
      EXPECT_EQ(c.bytes, 2 * sys.page_bytes);
    }
    std::vector<uint8_t> back(static_cast<size_t>(sys.page_bytes + 100), 1);
    ASSERT_TRUE(f.be->Download(*big, 0, back.data(), back.size()).ok());
    EXPECT_EQ(std::count(back.begin(), back.end(), 0), static_cast<long>(back.size()));
  }
  EXPECT_EQ(f.be->large_pages().buffers, 0u);
  EXPECT_EQ(f.be->large_pages().bytes, 0u);
}

// --kv-type: the plan's KV line is what the states of that type take (F16 half
// of F32, Q8_0 34 bytes per 32 values), the states allocated from the plan
// are of that type, run without allocating, and CopySequence carries their

// Latent attention (deepseek2): the plan's KV line is one row of latent +
// RoPE part per position and layer, no V cache (counted here from the
// hyperparameters, not from SequenceState), for every KV type, and the states
// allocated from it run a pass.
TEST(KvTypes, TheLatentCacheHoldsOneRowOfLatentAndRopePartAPosition) {
  PlanFixture f = PlanFor(Arch::kDeepseek2, "kv_latent");
  const HParams& hp = f.m.model->hp();
  ASSERT_TRUE(hp.IsLatentAttention());
  for (KvType t : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
    SCOPED_TRACE(std::string(KvTypeName(t)));
    RunMemoryOptions mo;
    mo.ram_budget = 1ull << 30;
    mo.kv_type = t;
    mo.parallel = 2;
    RunShape shape{128, 8, 1, false, 0};
    auto setup = PlanRun(*f.m.pack, *f.m.model, *f.be, mo, shape);
    ASSERT_TRUE(setup.ok()) << setup.status().message();
    const PlanLine* kv = setup->plan.Find(PlanItem::kKvCache);
    ASSERT_NE(kv, nullptr);
    const uint64_t row = static_cast<uint64_t>(KvHeadBytes(t, hp.kv_lora_rank + hp.n_rot));
    EXPECT_EQ(kv->bytes, 2ull * 128 * hp.n_layer * row) << FormatPlan(setup->plan);
    EXPECT_THAT(kv->how, HasSubstr("no V cache")) << kv->how;
    auto mem = AllocateRun(*f.m.model, *f.be, f.be.get(), *setup);
    ASSERT_TRUE(mem.ok()) << mem.status().message();
    std::vector<float> logits;
    logits.reserve(hp.n_vocab);
    ForwardOptions o;
    o.workspace = &mem->workspace;
    const std::vector<int32_t> prompt = {1, 13, 20, 27, 34, 41, 48, 55};
    ASSERT_TRUE(Forward(*f.m.model, *f.be, mem->states[0], prompt, o, &logits).ok());
  }
}

// rows; a model whose head rows Q8_0 cannot block is refused with the reason.
TEST(KvTypes, ThePlanSizesTheCacheByTypeAndTheStatesFollow) {
  PlanFixture f = PlanFor(Arch::kQwen3Moe, "kv_types");
  const HParams& hp = f.m.model->hp();
  ASSERT_EQ(hp.head_dim_k % 32, 0u);
  std::map<KvType, uint64_t> kv_bytes;
  std::map<KvType, std::vector<float>> logits_by_type;
  for (KvType t : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
    SCOPED_TRACE(std::string(KvTypeName(t)));
    RunMemoryOptions mo;
    mo.ram_budget = 1ull << 30;
    mo.kv_type = t;
    mo.parallel = 2;
    RunShape shape{256, 8, 1, false, 0};
    auto setup = PlanRun(*f.m.pack, *f.m.model, *f.be, mo, shape);
    ASSERT_TRUE(setup.ok()) << setup.status().message();
    const PlanLine* kv = setup->plan.Find(PlanItem::kKvCache);
    ASSERT_NE(kv, nullptr);
    EXPECT_EQ(kv->label, "KV cache (" + std::string(KvTypeName(t)) + ")");
    kv_bytes[t] = kv->bytes;
    EXPECT_EQ(kv_bytes[t], 2 * (SequenceState::BytesFor(hp, 256, t) - SequenceState::RecurrentBytesFor(hp)))
        << FormatPlan(setup->plan);
    EXPECT_THAT(setup->plan.shape, HasSubstr("KV cache " + std::string(KvTypeName(t))));
    auto mem = AllocateRun(*f.m.model, *f.be, f.be.get(), *setup);
    ASSERT_TRUE(mem.ok()) << mem.status().message();
    ASSERT_EQ(mem->states.size(), 2u);
    EXPECT_EQ(mem->states[0].kv_type, t);
    std::vector<float>& logits = logits_by_type[t];
    logits.reserve(hp.n_vocab);
    ForwardOptions o;
    o.workspace = &mem->workspace;
    const std::vector<int32_t> prompt = {1, 5, 9, 200, 3, 44, 45, 46};
    const int64_t before = g_count.load();
    ASSERT_TRUE(Forward(*f.m.model, *f.be, mem->states[0], prompt, o, &logits).ok());
    int32_t id = 7;
    ASSERT_TRUE(Forward(*f.m.model, *f.be, mem->states[0], std::span(&id, 1), o, &logits).ok());
    EXPECT_EQ(g_count.load() - before, 0) << "heap allocations during forward passes";
    // The copy continues exactly as the original would.
    ASSERT_TRUE(CopySequence(mem->states[0], mem->states[1]).ok());
    std::vector<float> a, b;
    a.reserve(hp.n_vocab);
    b.reserve(hp.n_vocab);
    id = 11;
    ASSERT_TRUE(Forward(*f.m.model, *f.be, mem->states[0], std::span(&id, 1), o, &a).ok());
    ASSERT_TRUE(Forward(*f.m.model, *f.be, mem->states[1], std::span(&id, 1), o, &b).ok());
    EXPECT_EQ(a, b);
    logits = a;
  }
  EXPECT_EQ(kv_bytes[KvType::kF16] * 2, kv_bytes[KvType::kF32]);
  EXPECT_EQ(kv_bytes[KvType::kQ8_0] * 128, kv_bytes[KvType::kF32] * 34);
  // Each type computes (not a copy of another's result), close to F32.
  EXPECT_NE(logits_by_type[KvType::kF16], logits_by_type[KvType::kF32]);
  EXPECT_NE(logits_by_type[KvType::kQ8_0], logits_by_type[KvType::kF16]);
  // Rows Q8_0 cannot block: refused by the plan and by CreateState, saying why.
  HParams odd = hp;
  odd.head_dim_v = 80;
  const Status s = SequenceState::CheckKvType(odd, KvType::kQ8_0);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("80 (V): expected multiples of 32"));
  EXPECT_TRUE(SequenceState::CheckKvType(odd, KvType::kF16).ok());
  EXPECT_FALSE(f.be->CreateState(odd, 16, KvType::kQ8_0).ok());
  EXPECT_EQ(*ParseKvType("Q8_0"), KvType::kQ8_0);
  EXPECT_EQ(*ParseKvType("f16"), KvType::kF16);
  EXPECT_FALSE(ParseKvType("q4_0").ok());
}

// --- strata-run: the plan printed, refused, and advice that works --------------

class PlanCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::ScratchDir("plan_cli"));
    const std::string gguf = testing::SharedFile("conformance/qwen3moe-q4_k_m.gguf");
    if (!FileExists(gguf)) return;
    pack_ = new std::string(*dir_ + "/q.strata");
    ASSERT_TRUE(testing::PackFile(gguf, *pack_).ok());
  }
  void SetUp() override { STRATA_REQUIRE_SHARED_FILE(testing::SharedFile("conformance/qwen3moe-q4_k_m.gguf")); }
  static testing::CommandResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), *pack_);
    args.insert(args.end(), {"-t", "2"});
    return testing::RunProgram("strata-run", args);
  }
  static inline std::string* dir_ = nullptr;
  static inline std::string* pack_ = nullptr;
};

TEST_F(PlanCli, PlanPrintsEveryLineAndExitsZeroWhenItFits) {
  auto r = Run({"--plan", "--ram-budget", "1G"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"weights: dense", "weights: experts, host tier", "KV cache (F16)", "forward workspace",
                           "backend scratch", "logits", "sampler", "runtime metadata", "fits"})
    EXPECT_THAT(r.out, HasSubstr(line)) << line;
  auto t = Run({"--plan", "--ram-budget", "1G", "--expert-device", "cpu", "--expert-slots", "6"});
  EXPECT_EQ(t.exit_code, 0) << t.err;
  for (const char* line : {"expert slots", "device tier scratch", "staging buffers", "host expert tier scratch"})
    EXPECT_THAT(t.out, HasSubstr(line)) << line;
}

TEST_F(PlanCli, APlanThatDoesNotFitIsRefusedWithAdviceThatWorks) {
  auto p = Run({"--plan", "--ram-budget", "6M", "-c", "256"});
  EXPECT_EQ(p.exit_code, 1);
  EXPECT_THAT(p.out, HasSubstr("DOES NOT FIT"));
  // A run refuses to start, says why and what to change, and generates nothing.
  auto r = Run({"--ram-budget", "6M", "-c", "256", "--tokens", "1,2,3", "-n", "4", "--print-ids"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("refusing to start"));
  std::smatch c;
  ASSERT_TRUE(std::regex_search(r.err, c, std::regex("-c ([0-9]+) \\(a smaller context\\)"))) << r.err;
  auto ok = Run({"--ram-budget", "6M", "-c", c[1].str(), "--tokens", "1,2,3", "-n", "4", "--print-ids"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  // Weights that must stay resident but do not fit: --allow-paging is the way out.
  auto w = Run({"--plan", "--ram-budget", "3M", "-c", "8"});
  EXPECT_EQ(w.exit_code, 1);
  EXPECT_THAT(w.out, HasSubstr("--allow-paging"));
}

TEST_F(PlanCli, AnExpertCacheLargerThanTheDeviceIsRefusedNotStartedThenFailed) {
  // seeds/003: 5364 slots asked of a device with room for a few.
  auto r = Run({"--expert-device", "cpu", "--vram-budget", "0=1M", "--expert-slots", "5364", "--tokens", "1,2,3", "-n",
                "4", "--print-ids"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("device 0"));
  EXPECT_THAT(r.err, HasSubstr("refusing to start"));
  std::smatch m;
  EXPECT_THAT(r.err, HasSubstr("--expert-slots 5364 is more than the model's 24 routed experts"));
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("--expert-slots ([0-9]+) \\(a smaller"))) << r.err;
  const int slots = std::stoi(m[1].str());
  EXPECT_GT(slots, 0);
  EXPECT_LT(slots, 24);
  auto ok = Run({"--expert-device", "cpu", "--vram-budget", "0=1M", "--expert-slots", m[1].str(), "--tokens", "1,2,3",
                 "-n", "4", "--print-ids", "--expert-stats"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.err, HasSubstr("on the device tier"));
  // auto: as many slots as fit.
  auto a = Run({"--plan", "--expert-device", "cpu", "--vram-budget", "1M"});
  EXPECT_EQ(a.exit_code, 0) << a.out;
  EXPECT_THAT(a.out, HasSubstr(m[1].str() + " slots"));
}

TEST_F(PlanCli, LargePagesOnGiveTheSameTokens) {
  const std::vector<std::string> gen = {"--tokens", "1,2,3", "-n", "6", "--temp", "0", "--ignore-eos", "--print-ids",
                                        "-c", "256"};
  auto args = [&](const char* mode) {
    std::vector<std::string> a = gen;
    a.insert(a.end(), {"--large-pages", mode});
    return a;
  };
  auto off = Run(args("off"));
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_THAT(off.err, HasSubstr("large pages: off (--large-pages off)"));
  auto on = Run(args("on"));
  const LargePages lp = QueryLargePages();
  if (lp.page_bytes == 0) {
    EXPECT_NE(on.exit_code, 0);
    EXPECT_THAT(on.err, HasSubstr("--large-pages on: " + lp.why));
    GTEST_SKIP() << lp.why;
  }
  ASSERT_EQ(on.exit_code, 0) << on.err;
  EXPECT_EQ(on.out, off.out);
  EXPECT_TRUE(std::regex_search(on.err, std::regex("large pages: [0-9]+ buffers?"))) << on.err;
  auto plan = Run({"--plan", "-c", "256", "--large-pages", "on"});
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_THAT(plan.out, HasSubstr("large pages"));
  EXPECT_EQ(Run({"--plan", "--large-pages", "maybe"}).exit_code, 2);
}

TEST_F(PlanCli, BenchMeasuresPrefillAndDecodeAtADepth) {
  auto r = Run({"--bench", "-p", "8", "-n", "4", "--bench-depth", "16", "--bench-reps", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("at depth 16"));
  // Where decode time went: the layer ops of this qwen3moe, and the wait.
  // (std::regex: gtest's own regular expressions on Windows have no [...].)
  EXPECT_TRUE(std::regex_search(r.err, std::regex("decode time per token [0-9.]+ ms: .*attention .*MoE .*output norm "
                                                  "and head .*waiting for the other threads")))
      << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"depth\": 16,"));
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("\"prefill_tps_median\": ([0-9.]+)"))) << r.out;
  EXPECT_GT(std::stod(m[1].str()), 0.0);
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("\"decode_tps_median\": ([0-9.]+)"))) << r.out;
  EXPECT_GT(std::stod(m[1].str()), 0.0);
  // Past the training context (256): refused before anything runs.
  auto big = Run({"--bench", "-p", "8", "-n", "4", "--bench-depth", "300"});
  EXPECT_EQ(big.exit_code, 2) << big.err;
  EXPECT_THAT(big.err, HasSubstr("training context"));
  EXPECT_EQ(Run({"--bench", "--bench-depth", "-1"}).exit_code, 2);
}

TEST_F(PlanCli, BadMemoryOptionsAreUsageErrors) {
  EXPECT_EQ(Run({"--plan", "--ram-budget", "lots"}).exit_code, 2);
  EXPECT_EQ(Run({"--plan", "--vram-budget", "1=4G"}).exit_code, 2);  // no device 1
  EXPECT_EQ(Run({"--plan", "--kv-type", "q4_0"}).exit_code, 2);      // no such cache type
  EXPECT_EQ(Run({"--plan", "--expert-slots", "4"}).exit_code, 2);    // no device tier
  EXPECT_EQ(Run({"--plan", "--expert-device", "cpu", "--expert-pinned", "2"}).exit_code, 0);  // the pack's profile
  // Pinning needs a profile: a pack without one, and no --expert-profile.
  const std::string bare = *dir_ + "/no-profile.strata";
  ASSERT_TRUE(testing::RewriteManifest(*pack_, bare, [](fb::ManifestT& m) { m.expert_profile.reset(); }).ok());
  auto np = testing::RunProgram("strata-run", {bare, "--plan", "--expert-device", "cpu", "--expert-pinned", "2"});
  EXPECT_EQ(np.exit_code, 2) << np.err;
  EXPECT_EQ(Run({"--plan", "--expert-device", "gpu"}).exit_code, 2);
}

TEST_F(PlanCli, ATieredRunGivesTheUntieredLogitsAndWritesATrace) {
  const std::string plain = *dir_ + "/plain.f32", tiered = *dir_ + "/tiered.f32", trace = *dir_ + "/r.trace";
  const std::vector<std::string> common = {"--tokens", "1,13,20,27,34,41,48,55,62,69,76,83", "-n", "16", "--temp",
                                           "0", "--ignore-eos", "--print-ids"};
  auto args = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  auto p = Run(args({"--logits-out", plain, "--routing-trace-out", trace}));
  ASSERT_EQ(p.exit_code, 0) << p.err;
  auto t = Run(args({"--logits-out", tiered, "--expert-device", "cpu", "--expert-slots", "7", "--expert-profile", trace,
                     "--expert-pinned", "3", "--expert-stats"}));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(p.out, t.out);
  EXPECT_EQ(testing::ReadBytes(plain), testing::ReadBytes(tiered));
  EXPECT_THAT(t.err, HasSubstr("3 pinned (3 filled from routing trace"));
}

}  // namespace
}  // namespace strata
