// ForwardBatch (continuous batching) computes, for each sequence, exactly
// what running that sequence alone computes, whatever the other sequences
// in the batch and however a prompt is split into chunks.

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/model/backend.h"
#include "runtime/model/backend_factory.h"
#include "runtime/model/forward.h"
#include "runtime/model/generator.h"
#include "runtime/pack/pack_reader.h"
#include "tests/gguf_writer/synthetic_model.h"
#include "tests/testing/synthetic_pack.h"
#include "tests/testing/pack_edit.h"
#include "tests/testing/run_command.h"
#include "tests/testing/test_data.h"
#include "tests/testing/test_matrix.h"

namespace strata {
namespace {

class ForwardBatchTest : public ::testing::TestWithParam<Arch> {
 protected:
  void SetUp() override {
    std::string dir = testing::ScratchDir("forward_batch");
    testing::SyntheticModelSpec s;
    s.arch = GetParam();
    s.hp = testing::TinyHParams(s.arch);
    s.seed = 5;
    auto b = testing::BuildSyntheticModel(s);
    ASSERT_TRUE(b.ok()) << b.status().message();
    ASSERT_TRUE(b->WriteFile(dir + "/m.gguf").ok());
    PackOptions o;
    o.probe = false;
    ASSERT_TRUE(testing::PackFile(dir + "/m.gguf", dir + "/m.strata", o).ok());
    auto p = Pack::Open(dir + "/m.strata");
    ASSERT_TRUE(p.ok());
    pack_ = std::move(*p);
    auto m = Model::Create(*pack_);
    ASSERT_TRUE(m.ok());
    model_ = std::make_unique<Model>(std::move(*m));
  }

  // Logits of every token of `ids`, run alone in chunks of `chunk` tokens.
  std::vector<float> Alone(const std::vector<int32_t>& ids, size_t chunk) {
    auto st = SequenceState::Create(backend_, model_->hp(), 64);
    EXPECT_TRUE(st.ok());
    std::vector<float> all, part;
    ForwardOptions fo;
    fo.all_logits = true;
    for (size_t i = 0; i < ids.size(); i += chunk) {
      size_t m = std::min(chunk, ids.size() - i);
      EXPECT_TRUE(Forward(*model_, backend_, *st, std::span(ids).subspan(i, m), fo, &part).ok());
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  }

  std::unique_ptr<Pack> pack_;
  std::unique_ptr<Model> model_;
  ReferenceBackend backend_;
};

TEST_P(ForwardBatchTest, SequencesInOneBatchEqualSequencesAlone) {
  const uint32_t V = model_->hp().n_vocab;
  std::vector<std::vector<int32_t>> seqs = {{1, 5, 9, 200, 3}, {7, 7, 7}, {300, 2, 40, 41, 42, 43, 44}};
  std::vector<std::vector<float>> expect;
  for (const auto& s : seqs) expect.push_back(Alone(s, s.size()));
  // Chunking a prompt does not change its logits (KV cache and recurrent state carry over).
  for (size_t c : {1, 2, 3}) EXPECT_EQ(Alone(seqs[2], c), expect[2]) << "chunk " << c;

  // All three at once: first their first two tokens, then the rest.
  std::vector<SequenceState> states;
  for (size_t i = 0; i < seqs.size(); ++i) {
    auto st = SequenceState::Create(backend_, model_->hp(), 64);
    ASSERT_TRUE(st.ok());
    states.push_back(std::move(*st));
  }
  std::vector<std::vector<float>> got(seqs.size());
  for (int step = 0; step < 2; ++step) {
    std::vector<SequenceBatch> batch;
    for (size_t i = 0; i < seqs.size(); ++i) {
      size_t from = step == 0 ? 0 : 2, to = step == 0 ? 2 : seqs[i].size();
      if (to > from) batch.push_back({&states[i], std::span(seqs[i]).subspan(from, to - from), true});
    }
    std::vector<float> logits;
    ForwardOptions fo;
    ASSERT_TRUE(ForwardBatch(*model_, backend_, batch, fo, &logits).ok());
    size_t off = 0;
    for (const SequenceBatch& sb : batch) {
      size_t i = static_cast<size_t>(&*sb.state - states.data());
      got[i].insert(got[i].end(), logits.begin() + static_cast<long>(off),
                    logits.begin() + static_cast<long>(off + sb.tokens.size() * V));
      off += sb.tokens.size() * V;
    }
    EXPECT_EQ(off, logits.size());
  }
  for (size_t i = 0; i < seqs.size(); ++i) EXPECT_EQ(got[i], expect[i]) << "sequence " << i;
}

TEST_P(ForwardBatchTest, BadBatchesAreRefusedWithoutChangingState) {
  auto a = SequenceState::Create(backend_, model_->hp(), 4);
  ASSERT_TRUE(a.ok());
  std::vector<int32_t> ok = {1, 2}, too_long = {1, 2, 3, 4, 5}, bad_id = {1, static_cast<int32_t>(model_->hp().n_vocab)};
  std::vector<float> logits;
  std::vector<SequenceBatch> twice = {{&*a, ok, false}, {&*a, ok, false}};
  EXPECT_EQ(ForwardBatch(*model_, backend_, twice, {}, &logits).code(), StatusCode::kInternal);
  EXPECT_EQ(Forward(*model_, backend_, *a, too_long, {}, &logits).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Forward(*model_, backend_, *a, bad_id, {}, &logits).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(a->n_past, 0);
}

INSTANTIATE_TEST_SUITE_P(Archs, ForwardBatchTest,
                         ::testing::Values(Arch::kLlama, Arch::kQwen3Moe, Arch::kQwen35Moe, Arch::kQwen3Next),
                         [](const auto& param_info) { return std::string(ArchName(param_info.param)); });

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// A backend that cannot multiply a matrix's type refuses the model at load,
// naming the tensor and the type (issue 10), instead of computing NaN.
TEST(MakeBackend, RefusesAMatrixItCannotMultiplyNamingIt) {
  auto opened = testing::MakeSyntheticPack(Arch::kLlama, testing::ScratchDir("backend_refuses_type"), "m");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  const std::unique_ptr<Pack>& pack = opened->pack;
  const std::unique_ptr<Model>& model = opened->model;
  for (const char* kind : {"cpu", "reference"})
    EXPECT_TRUE(MakeBackend(*model, {kind, 1, false}).ok()) << kind;
  // The same tensors with blk.1.ffn_down.weight recorded as I8, a type with
  // neither a kernel nor a dequantizer.
  std::vector<TensorView> views(pack->tensors().begin(), pack->tensors().end());
  for (TensorView& v : views)
    if (v.name == "blk.1.ffn_down.weight") v.type = GgmlType::kI8;
  auto edited = Model::FromTensors(Arch::kLlama, model->hp(), views, "edited");
  ASSERT_TRUE(edited.ok()) << edited.status().message();
  for (const char* kind : {"cpu", "reference"}) {
    auto be = MakeBackend(*edited, {kind, 1, false});
    ASSERT_FALSE(be.ok());
    EXPECT_EQ(be.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(be.status().message().find("tensor 'blk.1.ffn_down.weight' is I8"), std::string::npos)
        << be.status().message();
  }
}

// The backend table: every kind is made by its name, is its own CPU engine
// (all of this build's backends compute on the CPU), and plans the same
// when made for planning only; an unknown name is refused with the choices.
TEST(MakeBackend, EveryKindOfTheTableIsMadeByItsName) {
  auto opened = testing::MakeSyntheticPack(Arch::kQwen3Moe, testing::ScratchDir("backend_table"), "m");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  const Model& model = *opened->model;
  ASSERT_EQ(BackendKinds().front().name, "cpu");  // the default first
  for (const BackendKind& kind : BackendKinds()) {
    SCOPED_TRACE(std::string(kind.name));
    auto parsed = ParseBackendKind(kind.name);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, &kind);
    const bool on_device = kind.weights != Placement::kCpu;
    for (bool plan_only : {false, true}) {
      auto made = MakeBackend(model, {std::string(kind.name), 1, plan_only});
      // A device backend whose device this machine lacks is refused, saying
      // why (kUnsupported: exit 3); made for planning, it needs no device.
      if (!made.ok() && on_device && !plan_only && kind.name != "software-gpu") {
        EXPECT_EQ(made.status().code(), StatusCode::kUnsupported) << made.status().message();
        EXPECT_NE(made.status().message().find("--backend " + std::string(kind.name)), std::string::npos);
        continue;
      }
      ASSERT_TRUE(made.ok()) << made.status().message();
      EXPECT_EQ(made->backend->WeightPlacement(), kind.weights);
      if (on_device) {
        EXPECT_EQ(made->cpu, nullptr);
        EXPECT_EQ(made->backend->BufferPlace(), MemoryPlace::Device(0));
      } else {
        EXPECT_EQ(static_cast<Backend*>(made->cpu), made->backend.get());
        EXPECT_EQ(made->backend->BufferPlace(), MemoryPlace::Heap());
      }
    }
  }
  auto unknown = ParseBackendKind("gpu");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("expected cpu, reference, sim, cuda, hip or software-gpu"),
            std::string::npos)
      << unknown.status().message();
  EXPECT_FALSE(MakeBackend(model, {"gpu", 1, false}).ok());
}

// The chunked and the sequential delta rule compute the same thing (up to
// float summation order), across chunk boundaries and prompt splits.
TEST(DeltaNet, ChunkedFormulationEqualsSequential) {
  std::string dir = testing::ScratchDir("delta_net_modes");
  testing::SyntheticModelSpec s;
  s.arch = Arch::kQwen35Moe;
  s.hp = testing::TinyQwen35MoeHParams();
  s.seed = 11;
  auto b = testing::BuildSyntheticModel(s);
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE(b->WriteFile(dir + "/m.gguf").ok());
  PackOptions o;
  o.probe = false;
  ASSERT_TRUE(testing::PackFile(dir + "/m.gguf", dir + "/m.strata", o).ok());
  auto pack = Pack::Open(dir + "/m.strata");
  ASSERT_TRUE(pack.ok());
  auto model = Model::Create(**pack);
  ASSERT_TRUE(model.ok());
  ReferenceBackend be;
  std::vector<int32_t> ids;
  for (int i = 0; i < 150; ++i) ids.push_back((i * 37 + 11) % 512);
  auto run = [&](DeltaNetMode mode, size_t split) {
    auto st = SequenceState::Create(be, model->hp(), 200);
    std::vector<float> all, part;
    ForwardOptions fo;
    fo.all_logits = true;
    fo.delta_net = mode;
    for (size_t i = 0; i < ids.size(); i += split) {
      size_t m = std::min(split, ids.size() - i);
      EXPECT_TRUE(Forward(*model, be, *st, std::span(ids).subspan(i, m), fo, &part).ok());
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  };
  const std::vector<float> seq = run(DeltaNetMode::kSequential, ids.size());
  // Passes of one whole chunk (64), a chunk and a tail (70), several short
  // ones (17), all in one (150). The subset builds: 70 and 17 (both the
  // chunk and the tail code, and state carried between passes).
  for (size_t split : testing::MatrixCases<size_t>({150, 64, 70, 17}, [](size_t n) { return n == 70 || n == 17; })) {
    std::vector<float> chunked = run(DeltaNetMode::kChunked, split);
    ASSERT_EQ(chunked.size(), seq.size());
    float worst = 0;
    for (size_t i = 0; i < seq.size(); ++i) worst = std::max(worst, std::fabs(chunked[i] - seq[i]));
    EXPECT_LT(worst, 1e-4f) << "split " << split;
  }
  EXPECT_EQ(ForwardOptions{}.delta_net, DeltaNetMode::kSequential);  // the default
  EXPECT_EQ(ParseDeltaNetMode("chunked").value(), DeltaNetMode::kChunked);
  EXPECT_FALSE(ParseDeltaNetMode("auto").ok());
}

// Speculative decoding with a draft model (Generator, DraftModel): greedy
// tokens identical to plain greedy decoding, on the reference and the fast
// CPU path, with a draft that always agrees (the model itself: every draft
// accepted) and one that rarely does (another seed), at several draft
// lengths, over many prompts. Gated delta-net models (qwen35moe) go back to
// their recurrent state's copy after a rejection and run the kept tokens
// again.
class SpeculativeTest : public ::testing::TestWithParam<Arch> {};

TEST_P(SpeculativeTest, GreedyTokensAreThoseOfPlainDecoding) {
  const Arch arch = GetParam();
  const std::string dir = testing::ScratchDir("speculative");
  const std::string name(ArchName(arch));
  auto target = testing::MakeSyntheticPack(arch, dir, name + "-a", 5);
  auto other = testing::MakeSyntheticPack(arch, dir, name + "-b", 6);
  ASSERT_TRUE(target.ok() && other.ok());
  const Model& m = *target->model;
  const HParams& hp = m.hp();
  constexpr int kGen = 20;
  for (const char* kind : {"reference", "cpu"}) {
    // The reference path is the slow one: fewer prompts there.
    const bool ref = std::string(kind) == "reference";
    const int prompts = testing::kMatrixSubset ? (ref ? 2 : 5) : (ref ? 10 : 40);
    BackendOptions bo;
    bo.kind = kind;
    bo.threads = 2;
    auto tb = MakeBackend(m, bo), db = MakeBackend(m, bo), ob = MakeBackend(*other->model, bo);
    ASSERT_TRUE(tb.ok() && db.ok() && ob.ok());
    auto generate = [&](const std::vector<int32_t>& prompt, const Model* dm, Backend* dbe, int max_draft,
                        GenerateResult* out, int64_t* n_past = nullptr) {
      auto st = SequenceState::Create(*tb->backend, hp, 128, KvType::kF16, 8);
      EXPECT_TRUE(st.ok());
      std::optional<SequenceState> dst;
      DraftModel d;
      GenerateOptions go;
      go.n_predict = kGen;
      go.sampling.temperature = 0.0f;
      go.batch = 8;
      if (dm) {
        auto s2 = SequenceState::Create(*dbe, dm->hp(), 128, KvType::kF16, 8);
        EXPECT_TRUE(s2.ok());
        dst.emplace(std::move(*s2));
        d.model = dm;
        d.backend = dbe;
        d.state = &*dst;
        d.max_draft = max_draft;
        d.adaptive = false;  // every step drafts max_draft: each draft length is exercised
        go.draft = &d;
      }
      Generator g(m, *tb->backend, *st, nullptr);
      auto r = g.Generate(prompt, go);
      ASSERT_TRUE(r.ok()) << r.status().message();
      *out = std::move(*r);
      if (n_past) *n_past = st->n_past;
    };
    int64_t drafted_self = 0, accepted_self = 0, drafted_other = 0, accepted_other = 0;
    for (int p = 0; p < prompts; ++p) {
      std::vector<int32_t> prompt;
      for (int i = 0; i < 3 + p % 13; ++i) prompt.push_back(static_cast<int32_t>((p * 131 + i * 37 + 11) % hp.n_vocab));
      SCOPED_TRACE(std::string(kind) + ", prompt " + std::to_string(p));
      GenerateResult plain, self, cross;
      int64_t plain_past = 0, self_past = 0;
      generate(prompt, nullptr, nullptr, 0, &plain, &plain_past);
      ASSERT_EQ(plain.tokens.size(), static_cast<size_t>(kGen));
      const int max_draft = 1 + p % 5;
      generate(prompt, &m, db->backend.get(), max_draft, &self, &self_past);
      // The state ends where plain decoding leaves it (not for delta-net
      // models: docs/speculative.md).
      if (hp.ssm_d_state == 0) {
        EXPECT_EQ(self_past, plain_past);
      }
      generate(prompt, other->model.get(), ob->backend.get(), max_draft, &cross);
      EXPECT_EQ(self.tokens, plain.tokens) << "drafting for itself, " << max_draft << " a step";
      EXPECT_EQ(cross.tokens, plain.tokens) << "another model drafting, " << max_draft << " a step";
      EXPECT_TRUE(self.spec_off.empty()) << self.spec_off;
      // Gated delta-net models run a rejected step's kept tokens again.
      if (hp.ssm_d_state > 0) {
        EXPECT_EQ(cross.n_replayed > 0, cross.n_accepted < cross.n_drafted);
      }
      EXPECT_EQ(self.n_replayed, 0);
      EXPECT_GT(self.n_verify, 0);
      drafted_self += self.n_drafted;
      accepted_self += self.n_accepted;
      drafted_other += cross.n_drafted;
      accepted_other += cross.n_accepted;
    }
    // A pass's rows do not depend on how many tokens it holds: the model
    // drafting for itself has every draft accepted.
    EXPECT_EQ(accepted_self, drafted_self) << kind;
    EXPECT_GT(drafted_self, 0);
    EXPECT_LT(accepted_other, drafted_other) << kind << ": another seed's model should disagree sometimes";
    std::printf("%s %s: self %lld/%lld accepted, other seed %lld/%lld\n", name.c_str(), kind,
                static_cast<long long>(accepted_self), static_cast<long long>(drafted_self),
                static_cast<long long>(accepted_other), static_cast<long long>(drafted_other));
  }
}

// A draft whose vocabulary is not the target's is refused before anything runs.
TEST(Speculative, ADraftWithAnotherVocabularyIsRefused) {
  const std::string dir = testing::ScratchDir("speculative_vocab");
  auto target = testing::MakeSyntheticPack(Arch::kLlama, dir, "t", 5);
  auto small = testing::MakeSyntheticPack(Arch::kLlama, dir, "d", 5, [](testing::SyntheticModelSpec& s) {
    s.hp.n_vocab -= 8;
  });
  ASSERT_TRUE(target.ok());
  ASSERT_TRUE(small.ok()) << small.status().message();
  ReferenceBackend tb, db;
  auto st = SequenceState::Create(tb, target->model->hp(), 64);
  auto dst = SequenceState::Create(db, small->model->hp(), 64);
  ASSERT_TRUE(st.ok() && dst.ok());
  DraftModel d;
  d.model = small->model.get();
  d.backend = &db;
  d.state = &*dst;
  GenerateOptions go;
  go.n_predict = 4;
  go.sampling.temperature = 0.0f;
  go.draft = &d;
  Generator g(*target->model, tb, *st, nullptr);
  const std::vector<int32_t> prompt = {1, 2, 3};
  auto r = g.Generate(prompt, go);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("vocabulary"), std::string::npos) << r.status().message();
  d.model = target->model.get();
  d.max_draft = 17;
  auto r2 = g.Generate(prompt, go);
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.status().message().find("--spec-max 17"), std::string::npos) << r2.status().message();
}

// Speculative sampling: with temperature, a draft whose distribution q is
// near the model's p but not equal (the model itself at a lower
// temperature), so drafts are accepted and rejected (and replaced from the
// residual) often enough to matter, the first three tokens' joint frequencies
// over 3,000 seeds match the exact distribution plain sampling draws from
// (computed from the model's logits, top-k 3: 27 cells), by a chi-square
// test at significance 0.001. Plain sampling passes the same test (the check
// of the test itself). The seeds are fixed, so the outcome is too.
TEST(Speculative, SamplingFollowsTheModelsDistribution) {
  const std::string dir = testing::ScratchDir("speculative_sampling");
  auto target = testing::MakeSyntheticPack(Arch::kLlama, dir, "t", 5);
  ASSERT_TRUE(target.ok());
  const testing::OpenedModel* other = &*target;  // the model drafts for itself, at a lower temperature
  const Model& m = *target->model;
  const uint32_t V = m.hp().n_vocab;
  BackendOptions bo;
  bo.kind = "cpu";
  bo.threads = 1;
  auto tb = MakeBackend(m, bo), db = MakeBackend(*other->model, bo);
  ASSERT_TRUE(tb.ok() && db.ok());
  SamplingParams sp;
  sp.temperature = 1.5f;
  sp.top_k = 3;
  sp.top_p = 1.0f;
  sp.min_p = 0.0f;
  SamplingParams draft_sp = sp;
  draft_sp.temperature = 0.25f;
  const std::vector<int32_t> prompt = {5, 9, 200, 3};
  // The exact joint distribution of (t1, t2, t3).
  std::map<std::vector<int32_t>, double> exact;
  auto dist_after = [&](const std::vector<int32_t>& prefix, std::vector<int32_t> generated) {
    auto st = SequenceState::Create(*tb->backend, m.hp(), 64);
    EXPECT_TRUE(st.ok());
    std::vector<float> logits;
    std::vector<int32_t> ids = prompt;
    ids.insert(ids.end(), prefix.begin(), prefix.end());
    EXPECT_TRUE(Forward(m, *tb->backend, *st, ids, {}, &logits).ok());
    Sampler s(sp);
    Sampler::Weighted w;
    const double total = s.Distribution(std::span<const float>(logits.data() + logits.size() - V, V), generated,
                                        nullptr, &w);
    for (auto& e : w) e.second /= total;
    return w;
  };
  for (const auto& [a, pa] : dist_after({}, {}))
    for (const auto& [b, pb] : dist_after({a}, {a}))
      for (const auto& [c, pc] : dist_after({a, b}, {a, b})) exact[{a, b, c}] = pa * pb * pc;
  ASSERT_GE(exact.size(), 8u);

  const int kRuns = testing::kMatrixSubset ? 3000 : 12000;
  auto chi_square = [&](bool speculate, int* accepted_steps, int* rejected_steps) {
    std::map<std::vector<int32_t>, int> seen;
    *accepted_steps = *rejected_steps = 0;
    for (int seed = 0; seed < kRuns; ++seed) {
      auto st = SequenceState::Create(*tb->backend, m.hp(), 64);
      auto dst = SequenceState::Create(*db->backend, other->model->hp(), 64);
      EXPECT_TRUE(st.ok() && dst.ok());
      DraftModel d;
      d.model = other->model.get();
      d.backend = db->backend.get();
      d.state = &*dst;
      d.max_draft = 2;
      d.sampling = &draft_sp;
      d.adaptive = false;  // the same draws every run
      GenerateOptions go;
      go.n_predict = 4;  // t1 from the prompt, t2 and t3 from a step of two drafts
      go.sampling = sp;
      go.sampling.seed = static_cast<uint64_t>(seed) * 7919 + 1;
      if (speculate) go.draft = &d;
      Generator g(m, *tb->backend, *st, nullptr);
      auto r = g.Generate(prompt, go);
      EXPECT_TRUE(r.ok()) << r.status().message();
      if (!r.ok()) return 1e9;
      EXPECT_TRUE(r->spec_off.empty()) << r->spec_off;
      *rejected_steps += static_cast<int>(r->n_drafted - r->n_accepted);
      *accepted_steps += static_cast<int>(r->n_accepted);
      seen[std::vector<int32_t>(r->tokens.begin(), r->tokens.begin() + 3)]++;
    }
    double chi = 0;
    for (const auto& [cell, p] : exact) {
      const double e = p * kRuns, o = seen.count(cell) ? seen[cell] : 0;
      chi += (o - e) * (o - e) / e;
      seen.erase(cell);
    }
    EXPECT_TRUE(seen.empty()) << "a token sequence outside the distribution's support";
    return chi;
  };
  // The chi-square distribution's 0.999 quantile (Wilson-Hilferty).
  const double df = static_cast<double>(exact.size()) - 1, z = 3.0902;
  const double limit = df * std::pow(1 - 2 / (9 * df) + z * std::sqrt(2 / (9 * df)), 3);
  int accepted = 0, rejected = 0;
  const double plain = chi_square(false, &accepted, &rejected);
  const double spec = chi_square(true, &accepted, &rejected);
  std::printf("chi-square over %zu cells (limit %.1f at 0.001): plain %.1f, speculative %.1f (drafts: %d accepted, "
              "%d rejected)\n",
              exact.size(), limit, plain, spec, accepted, rejected);
  EXPECT_LT(plain, limit);
  EXPECT_LT(spec, limit);
  EXPECT_GT(rejected, kRuns / 10) << "the residual draw must be exercised";
  EXPECT_GT(accepted, kRuns / 10) << "acceptance must be exercised";
}

// Adaptive drafting: a draft that is almost never right (another seed's
// model) stops drafting after its first step and only probes now and then,
// whatever the measured times (no n can pay when nothing is accepted), then
// stops altogether; the tokens stay plain decoding's.
TEST(Speculative, AdaptiveDraftingStopsWhenDraftsAreRejected) {
  const std::string dir = testing::ScratchDir("speculative_adaptive");
  auto target = testing::MakeSyntheticPack(Arch::kLlama, dir, "t", 5);
  auto other = testing::MakeSyntheticPack(Arch::kLlama, dir, "o", 6);
  ASSERT_TRUE(target.ok() && other.ok());
  BackendOptions bo;
  bo.kind = "cpu";
  bo.threads = 1;
  auto tb = MakeBackend(*target->model, bo), db = MakeBackend(*other->model, bo);
  ASSERT_TRUE(tb.ok() && db.ok());
  auto run = [&](bool speculate) {
    auto st = SequenceState::Create(*tb->backend, target->model->hp(), 1024);
    auto dst = SequenceState::Create(*db->backend, other->model->hp(), 1024);
    EXPECT_TRUE(st.ok() && dst.ok());
    DraftModel d;
    d.model = other->model.get();
    d.backend = db->backend.get();
    d.state = &*dst;
    d.max_draft = 4;
    GenerateOptions go;
    go.n_predict = 700;
    go.sampling.temperature = 0.0f;
    if (speculate) go.draft = &d;
    Generator g(*target->model, *tb->backend, *st, nullptr);
    auto r = g.Generate(std::vector<int32_t>{5, 9, 200, 3}, go);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : GenerateResult{};
  };
  const GenerateResult plain = run(false), spec = run(true);
  EXPECT_EQ(spec.tokens, plain.tokens);
  std::printf("700 tokens: %lld drafted, %lld accepted, %lld steps without drafts, stopped after %lld\n",
              static_cast<long long>(spec.n_drafted), static_cast<long long>(spec.n_accepted),
              static_cast<long long>(spec.n_undrafted), static_cast<long long>(spec.spec_stopped_at));
  EXPECT_LE(spec.n_drafted, 10);
  EXPECT_GE(spec.n_undrafted, 450);
  // Probes after 16, 32, ..., 256 steps, all refused: it stops (it no longer
  // reads every token) after about 500 + 16 tokens.
  EXPECT_GT(spec.spec_stopped_at, 400);
  EXPECT_LT(spec.spec_stopped_at, 600);
}

// strata-run --spec draft: the same tokens as without it, the counts line,
// and each wrong use refused with the reason.
TEST(Speculative, StrataRunDraftsAndRefusesWhatItCannotDo) {
  const std::string dir = testing::ScratchDir("speculative_cli");
  auto target = testing::MakeSyntheticPack(Arch::kQwen3Moe, dir, "t", 5);
  auto other_vocab = testing::MakeSyntheticPack(Arch::kQwen3Moe, dir, "v", 5, [](testing::SyntheticModelSpec& s) {
    s.hp.n_vocab -= 8;
  });
  ASSERT_TRUE(target.ok() && other_vocab.ok());
  const std::string t = dir + "/t.strata";
  const std::vector<std::string> base = {t, "--tokens", "5,9,200,3", "-n", "24", "--temp", "0", "--ignore-eos",
                                         "--print-ids"};
  auto plain = testing::RunProgram("strata-run", base);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  std::vector<std::string> spec = base;
  for (const char* a : {"--spec", "draft", "--draft", t.c_str(), "--spec-max", "4", "--spec-fixed"}) spec.push_back(a);
  auto drafted = testing::RunProgram("strata-run", spec);
  ASSERT_EQ(drafted.exit_code, 0) << drafted.err;
  EXPECT_EQ(drafted.out, plain.out);
  EXPECT_NE(drafted.err.find("accepted (100.0%)"), std::string::npos) << drafted.err;

  struct Bad {
    std::vector<std::string> extra;
    std::string says;
  };
  const Bad bad[] = {
      {{"--spec", "mtp"}, "expected none or draft"},
      {{"--spec", "draft"}, "--draft PACK"},
      {{"--draft", t}, "add --spec draft"},
      {{"--spec", "draft", "--draft", t, "--spec-max", "0"}, "--spec-max 0: expected 1..16"},
      {{"--spec", "draft", "--draft", dir + "/v.strata"}, "a draft must share the model's tokenizer"},
      {{"--spec", "draft", "--draft", dir + "/missing.strata"}, "--draft " + dir + "/missing.strata"},
  };
  for (const Bad& b : bad) {
    std::vector<std::string> args = base;
    args.insert(args.end(), b.extra.begin(), b.extra.end());
    auto r = testing::RunProgram("strata-run", args);
    EXPECT_NE(r.exit_code, 0) << b.says;
    EXPECT_NE(r.err.find(b.says), std::string::npos) << r.err;
  }
  auto chat = testing::RunProgram("strata-run", {t, "--chat", "--spec", "draft", "--draft", t});
  EXPECT_NE(chat.exit_code, 0);
  EXPECT_NE(chat.err.find("do not speculate yet"), std::string::npos) << chat.err;
}

INSTANTIATE_TEST_SUITE_P(Archs, SpeculativeTest,
                         ::testing::ValuesIn(testing::MatrixCases(
                             std::vector<Arch>{Arch::kLlama, Arch::kQwen3Moe, Arch::kGptOss, Arch::kGlm4Moe,
                                               Arch::kDeepseek2, Arch::kQwen35Moe},
                             [](Arch a) { return a == Arch::kQwen3Moe || a == Arch::kGptOss || a == Arch::kQwen35Moe; })),
                         [](const auto& param_info) {
                           std::string n(ArchName(param_info.param));
                           for (char& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace strata
