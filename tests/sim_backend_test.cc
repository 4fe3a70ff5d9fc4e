// The execution seam (runtime/model/backend.h), proved with the sim backend:
//  * every architecture gives the same bits on sim as on the engine it wraps
//    (fast and reference), for prompts, decode steps and batches of sequences;
//  * a decode step moves one token id in and one logits row out, and nothing
//    else, once the weights are resident; a prompt moves its ids and the rows
//    asked for;
//  * backend memory touched from outside an op faults;
//  * a state or workspace of another backend, and a second pass at once, are
//    refused.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/memory/run_memory.h"
#include "runtime/model/backend_factory.h"
#include "runtime/model/fast_backend.h"
#include "runtime/model/forward.h"
#include "runtime/model/sim_backend.h"
#include "tests/testing/synthetic_pack.h"
#include "tests/testing/test_data.h"

namespace strata {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<CpuBackend> Engine(bool reference) {
  if (reference) return std::make_unique<ReferenceBackend>();
  FastBackend::Options o;
  o.threads = 2;
  auto b = FastBackend::Create(o);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return std::move(*b);
}

// A prompt with every row's logits, then greedy decode steps; all rows.
std::vector<float> PromptThenDecode(const Model& m, Backend& be, const std::vector<int32_t>& prompt, int steps) {
  auto st = SequenceState::Create(be, m.hp(), 64);
  EXPECT_TRUE(st.ok());
  std::vector<float> all, logits;
  ForwardOptions fo;
  fo.all_logits = true;
  EXPECT_TRUE(Forward(m, be, *st, prompt, fo, &logits).ok());
  all = logits;
  fo.all_logits = false;
  const size_t V = m.hp().n_vocab;
  for (int s = 0; s < steps; ++s) {
    const float* last = logits.data() + logits.size() - V;
    const int32_t next = static_cast<int32_t>(std::max_element(last, last + V) - last);
    EXPECT_TRUE(Forward(m, be, *st, std::span(&next, 1), fo, &logits).ok());
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

// Two sequences in one batch, then one decode step each, batched.
std::vector<float> RunBatch(const Model& m, Backend& be) {
  auto a = SequenceState::Create(be, m.hp(), 32);
  auto b = SequenceState::Create(be, m.hp(), 32);
  EXPECT_TRUE(a.ok() && b.ok());
  const std::vector<int32_t> pa = {1, 5, 9, 14}, pb = {3, 8}, da = {20}, db = {21};
  std::vector<float> all, logits;
  std::vector<SequenceBatch> batch = {{&*a, pa, true}, {&*b, pb, false}};
  EXPECT_TRUE(ForwardBatch(m, be, batch, {}, &logits).ok());
  all = logits;
  batch = {{&*a, da, false}, {&*b, db, false}};
  EXPECT_TRUE(ForwardBatch(m, be, batch, {}, &logits).ok());
  all.insert(all.end(), logits.begin(), logits.end());
  return all;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class SimBackendTest : public ::testing::TestWithParam<Arch> {
 protected:
  void SetUp() override {
    auto m = testing::MakeSyntheticPack(GetParam(), testing::ScratchDir("sim_backend"),
                                        std::string(ArchName(GetParam())), 17);
    ASSERT_TRUE(m.ok()) << m.status().message();
    m_ = std::move(*m);
  }
  testing::OpenedModel m_;
};

TEST_P(SimBackendTest, GivesItsEnginesBitsOnPromptsDecodeStepsAndBatches) {
  const Model& model = *m_.model;
  const std::vector<int32_t> prompt = {1, 13, 20, 27, 34, 41, 48, 55, 62};
  for (bool reference : {false, true}) {
    SCOPED_TRACE(reference ? "reference engine" : "fast engine");
    std::unique_ptr<CpuBackend> cpu = Engine(reference);
    ASSERT_TRUE(cpu->Bind(model).ok());
    auto sim = MakeSimBackend(model, Engine(reference));
    ASSERT_TRUE(sim.ok()) << sim.status().message();
    const std::vector<float> want = PromptThenDecode(model, *cpu, prompt, 5);
    ASSERT_FALSE(want.empty());
    EXPECT_TRUE(SameBits(PromptThenDecode(model, **sim, prompt, 5), want));
    EXPECT_TRUE(SameBits(RunBatch(model, **sim), RunBatch(model, *cpu)));
  }
}

TEST_P(SimBackendTest, ADecodeStepMovesATokenIdInAndALogitsRowOut) {
  const Model& model = *m_.model;
  auto sim = MakeSimBackend(model, Engine(false));
  ASSERT_TRUE(sim.ok());
  Backend& be = **sim;
  uint64_t weights = 0;
  for (const TensorView& t : model.tensors()) weights += t.data.size();
  EXPECT_GE(be.transfers().weight_bytes, weights);  // resident, each tensor 64-byte aligned
  EXPECT_LT(be.transfers().weight_bytes, weights + 64 * model.tensors().size());

  auto st = SequenceState::Create(be, model.hp(), 64);
  ASSERT_TRUE(st.ok());
  const uint64_t V = model.hp().n_vocab;
  std::vector<float> logits;
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7};
  TransferCounts before = be.transfers();
  ASSERT_TRUE(Forward(model, be, *st, prompt, {}, &logits).ok());
  TransferCounts after = be.transfers();
  // A prompt: its ids in, the last row out.
  EXPECT_EQ(after.up_bytes - before.up_bytes, prompt.size() * sizeof(int32_t));
  EXPECT_EQ(after.down_bytes - before.down_bytes, V * sizeof(float));
  for (int step = 0; step < 4; ++step) {
    before = be.transfers();
    const int32_t id = 9 + step;
    ASSERT_TRUE(Forward(model, be, *st, std::span(&id, 1), {}, &logits).ok());
    after = be.transfers();
    EXPECT_EQ(after.up_bytes - before.up_bytes, sizeof(int32_t)) << "step " << step;
    EXPECT_EQ(after.up_calls - before.up_calls, 1u);
    EXPECT_EQ(after.down_bytes - before.down_bytes, V * sizeof(float)) << "step " << step;
    EXPECT_EQ(after.down_calls - before.down_calls, 1u);
    EXPECT_EQ(after.weight_bytes, before.weight_bytes);  // nothing made resident again
  }
  // All rows asked for: every row comes out.
  auto st2 = SequenceState::Create(be, model.hp(), 64);
  ASSERT_TRUE(st2.ok());
  ForwardOptions all;
  all.all_logits = true;
  before = be.transfers();
  ASSERT_TRUE(Forward(model, be, *st2, prompt, all, &logits).ok());
  EXPECT_EQ(be.transfers().down_bytes - before.down_bytes, prompt.size() * V * sizeof(float));
}

TEST_P(SimBackendTest, RecurrentStateCopiesAndClearsBehindTheSeam) {
  // The scheduler's prefix snapshot: copy a state's recurrent part, run on,
  // restore it, and the next token's logits are those of the snapshot point.
  const Model& model = *m_.model;
  auto sim = MakeSimBackend(model, Engine(false));
  ASSERT_TRUE(sim.ok());
  Backend& be = **sim;
  auto st = SequenceState::Create(be, model.hp(), 64);
  auto snap = SequenceState::Create(be, model.hp(), 0);
  ASSERT_TRUE(st.ok() && snap.ok());
  std::vector<float> a, b;
  const std::vector<int32_t> p = {4, 8, 15, 16}, next = {23};
  ASSERT_TRUE(Forward(model, be, *st, p, {}, &a).ok());
  ASSERT_TRUE(be.CopyRecurrent(*st, *snap).ok());
  ASSERT_TRUE(Forward(model, be, *st, next, {}, &a).ok());
  ASSERT_TRUE(Forward(model, be, *st, next, {}, &b).ok());  // moved on
  ASSERT_TRUE(be.CopyRecurrent(*snap, *st).ok());
  ASSERT_TRUE(st->TruncateKv(4));
  ASSERT_TRUE(Forward(model, be, *st, next, {}, &b).ok());
  EXPECT_TRUE(SameBits(a, b));
  // Clear: as a fresh state.
  ASSERT_TRUE(st->Clear().ok());
  ASSERT_TRUE(Forward(model, be, *st, p, {}, &a).ok());
  auto fresh = SequenceState::Create(be, model.hp(), 64);
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE(Forward(model, be, *fresh, p, {}, &b).ok());
  EXPECT_TRUE(SameBits(a, b));
}

INSTANTIATE_TEST_SUITE_P(Archs, SimBackendTest,
                         ::testing::Values(Arch::kLlama, Arch::kQwen3, Arch::kQwen3Moe, Arch::kQwen35Moe),
                         [](const auto& p) { return std::string(ArchName(p.param)); });

TEST(SimBackendDeathTest, BackendMemoryTouchedOutsideAnOpFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto m = testing::MakeSyntheticPack(Arch::kQwen35Moe, testing::ScratchDir("sim_death"), "m", 3);
  ASSERT_TRUE(m.ok());
  auto sim = MakeSimBackend(*m->model, Engine(true));
  ASSERT_TRUE(sim.ok());
  CpuBackend& be = **sim;
  auto st = SequenceState::Create(be, m->model->hp(), 16);
  ASSERT_TRUE(st.ok());
  volatile float* kv = be.StateConv(*st, 0);  // layer 0 of qwen35moe is recurrent
  ASSERT_NE(kv, nullptr);
  EXPECT_DEATH({ kv[0] = 1.0f; }, "");
  auto ws = be.CreateWorkspace(4096, "test");
  ASSERT_TRUE(ws.ok());
  EXPECT_DEATH({ *ws->Take<volatile float>(4) = 2.0f; }, "");
  // The weights: the resident copy, not the pack's mapping.
  const TensorView* w = be.W(m->model->Get(TensorRole::kTokenEmbd));
  ASSERT_NE(w->data.data(), m->model->Get(TensorRole::kTokenEmbd)->data.data());
  EXPECT_DEATH({ (void)*reinterpret_cast<const volatile uint8_t*>(w->data.data()); }, "");
  // Through the seam it works: a transfer in and out.
  auto buf = be.Allocate(16, "test");
  ASSERT_TRUE(buf.ok());
  const int32_t in[4] = {1, 2, 3, 4};
  int32_t out[4] = {};
  ASSERT_TRUE(be.Upload(*buf, 0, in, sizeof(in)).ok());
  ASSERT_TRUE(be.Download(*buf, 0, out, sizeof(out)).ok());
  EXPECT_EQ(std::memcmp(in, out, sizeof(in)), 0);
  EXPECT_EQ(be.Upload(*buf, 8, in, sizeof(in)).code(), StatusCode::kInternal);  // past its end
}

TEST(Backend, RefusesAStateOrWorkspaceOfAnotherBackendAndAnUnboundModel) {
  auto m = testing::MakeSyntheticPack(Arch::kLlama, testing::ScratchDir("sim_foreign"), "m", 3);
  ASSERT_TRUE(m.ok());
  const Model& model = *m->model;
  ReferenceBackend a, b;
  auto st = SequenceState::Create(a, model.hp(), 16);
  ASSERT_TRUE(st.ok());
  std::vector<float> logits;
  const std::vector<int32_t> ids = {1, 2};
  Status s = Forward(model, b, *st, ids, {}, &logits);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("another backend"));
  auto ws = a.CreateWorkspace(ForwardWorkspaceBytes(model, {2, 2, 1}), "test");
  ASSERT_TRUE(ws.ok());
  auto st_b = SequenceState::Create(b, model.hp(), 16);
  ASSERT_TRUE(st_b.ok());
  ForwardOptions fo;
  fo.workspace = &*ws;
  s = Forward(model, b, *st_b, ids, fo, &logits);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("another backend"));
  EXPECT_EQ(st_b->n_past, 0);
  // The sim backend runs only the model it holds.
  SimBackend sim(std::make_unique<ReferenceBackend>());
  auto st_s = SequenceState::Create(sim, model.hp(), 16);
  ASSERT_TRUE(st_s.ok());
  s = Forward(model, sim, *st_s, ids, {}, &logits);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("Bind"));
}

TEST(SimBackend, ThePlanCountsItsCopyOfTheWeightsAndARunFitsIt) {
  auto m = testing::MakeSyntheticPack(Arch::kQwen3Moe, testing::ScratchDir("sim_plan"), "m", 3);
  ASSERT_TRUE(m.ok());
  const Model& model = *m->model;
  auto sim = MakeSimBackend(model, Engine(false));
  ASSERT_TRUE(sim.ok());
  std::unique_ptr<CpuBackend> cpu = Engine(false);
  RunMemoryOptions mo;
  mo.ram_budget = 1ull << 30;
  RunShape shape{64, 8, 2, false, 0};
  auto with_copy = PlanRun(*m->pack, model, **sim, mo, shape);
  auto without = PlanRun(*m->pack, model, *cpu, mo, shape);
  ASSERT_TRUE(with_copy.ok() && without.ok());
  auto copy_line = [](const MemoryPlan& p) { return p.Find(PlanItem::kBackendWeights); };
  ASSERT_NE(copy_line(with_copy->plan), nullptr);
  EXPECT_EQ(copy_line(with_copy->plan)->bytes, (*sim)->transfers().weight_bytes);
  EXPECT_EQ(copy_line(without->plan), nullptr);
  EXPECT_EQ(with_copy->plan.Heap(), without->plan.Heap() + (*sim)->transfers().weight_bytes);
  // The planned workspace and states are the sim's: a planned run works.
  auto mem = AllocateRun(model, **sim, sim->get(), *with_copy);
  ASSERT_TRUE(mem.ok()) << mem.status().message();
  ASSERT_EQ(mem->states.size(), 1u);
  EXPECT_EQ(mem->states[0].backend(), sim->get());
  ForwardOptions fo;
  fo.workspace = &mem->workspace;
  std::vector<float> logits;
  const std::vector<int32_t> ids = {1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_TRUE(Forward(model, **sim, mem->states[0], ids, fo, &logits).ok());
  EXPECT_EQ(mem->workspace.mark(), 0u);
}

TEST(Backend, RunsOnePassAtATime) {
  auto m = testing::MakeSyntheticPack(Arch::kLlama, testing::ScratchDir("sim_one_pass"), "m", 3);
  ASSERT_TRUE(m.ok());
  const Model& model = *m->model;
  ReferenceBackend be;
  auto st = SequenceState::Create(be, model.hp(), 16);
  auto ws = be.CreateWorkspace(ForwardWorkspaceBytes(model, {2, 2, 1}), "test");
  ASSERT_TRUE(st.ok() && ws.ok());
  const std::vector<int32_t> ids = {1, 2};
  ForwardOptions fo;
  SequenceBatch sb{&*st, ids, false};
  PassDesc d;
  d.model = &model;
  d.batch = {&sb, 1};
  d.options = &fo;
  d.workspace = &*ws;
  d.n = 2;
  d.max_keys = 2;
  d.n_rows = 1;
  ASSERT_TRUE(be.BeginPass(d).ok());
  Status second = be.BeginPass(d);
  EXPECT_EQ(second.code(), StatusCode::kInternal);
  EXPECT_THAT(second.message(), HasSubstr("one pass at a time"));
  be.EndPass();
  EXPECT_TRUE(be.BeginPass(d).ok());
  be.EndPass();
  EXPECT_EQ(ws->mark(), 0u);  // EndPass gave the workspace back
}

}  // namespace
}  // namespace strata
