// ForwardBatch (continuous batching) computes, for each sequence, exactly
// what running that sequence alone computes, whatever the other sequences
// in the batch and however a prompt is split into chunks.

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
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

// --spec mtp: the model's own MTP block drafts (arch_spec.h, MtpBlock). A
// tiny preset with an MTP layer (qwen35moe's has none: one more layer).
Result<testing::OpenedModel> MtpPack(Arch arch, const std::string& dir, const std::string& name, uint64_t seed,
                                     const std::function<void(testing::GgufBuilder&)>& edit = {}) {
  return testing::MakeSyntheticPack(
      arch, dir, name, seed,
      [](testing::SyntheticModelSpec& s) {
        if (s.hp.nextn_predict_layers == 0) {
          s.hp.nextn_predict_layers = 1;
          s.hp.n_layer_all = s.hp.n_layer + 1;
        }
      },
      edit);
}

// The model's MTP block drafting up to max_draft tokens a step (every step:
// not adaptive), on `b`, with the MTP state `mst`.
DraftModel MtpDraft(const Model& m, Backend& b, SequenceState& mst, int max_draft) {
  DraftModel d;
  d.model = &m;
  d.backend = &b;
  d.state = &mst;
  d.mtp = true;
  d.max_draft = max_draft;
  d.adaptive = false;
  return d;
}

// What an MTP state holds after a speculative run must be what the block
// computes reading the same tokens with the model's hidden states of the
// positions before them (teacher-forced, in one pass): its K and V rows,
// bit for bit (a pass's rows do not depend on its size on the CPU backends).
// This is what catches a token read with the wrong hidden state, or a
// position read with the block's own hidden state left in the cache.
void ExpectMtpCacheIsTeacherForced(const Model& m, Backend& b, const SequenceState& mst,
                                   const std::vector<int32_t>& tokens) {
  const HParams& hp = m.hp();
  const int64_t q = mst.n_past;
  ASSERT_GT(q, 0);
  ASSERT_LE(q, static_cast<int64_t>(tokens.size()));
  auto st = SequenceState::Create(b, hp, mst.n_ctx, mst.kv_type);
  auto fresh = SequenceState::Create(b, hp, mst.n_ctx, mst.kv_type, 0, StateLayers::kMtp);
  ASSERT_TRUE(st.ok() && fresh.ok());
  std::vector<float> logits, hidden;
  ForwardOptions fo;
  fo.hidden = &hidden;
  const std::span<const int32_t> read(tokens.data(), static_cast<size_t>(q));
  ASSERT_TRUE(Forward(m, b, *st, read, fo, &logits).ok());
  std::vector<float> h_prev(static_cast<size_t>(q) * hp.n_embd, 0.0f);
  std::copy(hidden.begin(), hidden.end() - hp.n_embd, h_prev.begin() + hp.n_embd);
  ASSERT_TRUE(ForwardMtp(m, b, *fresh, read, h_prev, ForwardOptions{}, &logits).ok());
  const SequenceState::Layer& a = mst.layers[hp.n_layer];
  const SequenceState::Layer& c = fresh->layers[hp.n_layer];
  for (auto part : {&SequenceState::Layer::k, &SequenceState::Layer::v}) {
    const uint64_t bytes = (a.*part).bytes / static_cast<uint64_t>(mst.n_ctx) * static_cast<uint64_t>(q);
    std::vector<uint8_t> x(bytes), y(bytes);
    ASSERT_TRUE(b.Download(mst.storage, (a.*part).offset, x.data(), bytes).ok());
    ASSERT_TRUE(b.Download(fresh->storage, (c.*part).offset, y.data(), bytes).ok());
    EXPECT_TRUE(x == y) << "the MTP cache's " << (part == &SequenceState::Layer::k ? "K" : "V") << " rows of "
                        << q << " positions differ from reading the tokens with the model's hidden states";
  }
}

// Greedy tokens with the MTP block drafting are those of plain decoding, on
// every CPU backend, for every draft length; the block reads every token
// once with the model's hidden states (its state ends where the model's
// does for attention models).
class MtpSpeculativeTest : public ::testing::TestWithParam<Arch> {};

TEST_P(MtpSpeculativeTest, GreedyTokensAreThoseOfPlainDecoding) {
  const Arch arch = GetParam();
  const std::string dir = testing::ScratchDir("speculative_mtp");
  auto pack = MtpPack(arch, dir, std::string(ArchName(arch)), 7);
  ASSERT_TRUE(pack.ok()) << pack.status().message();
  Model& m = *pack->model;
  ASSERT_TRUE(m.EnableMtp().ok());
  const HParams& hp = m.hp();
  constexpr int kGen = 20;
  for (const char* kind : {"reference", "cpu", "sim"}) {
    // The reference path is the slow one; sim runs the fast path's ops behind the seam.
    const bool ref = std::string(kind) == "reference", sim = std::string(kind) == "sim";
    const int prompts = testing::kMatrixSubset ? (ref || sim ? 2 : 4) : (ref ? 6 : sim ? 12 : 30);
    BackendOptions bo;
    bo.kind = kind;
    bo.threads = 2;
    auto be = MakeBackend(m, bo);
    ASSERT_TRUE(be.ok()) << be.status().message();
    Backend& b = *be->backend;
    int64_t drafted = 0, accepted = 0;
    for (int p = 0; p < prompts; ++p) {
      std::vector<int32_t> prompt;
      for (int i = 0; i < 2 + p % 11; ++i) prompt.push_back(static_cast<int32_t>((p * 97 + i * 53 + 7) % hp.n_vocab));
      SCOPED_TRACE(std::string(kind) + ", prompt " + std::to_string(p));
      auto run = [&](int max_draft, GenerateResult* out) {
        auto st = SequenceState::Create(b, hp, 128, KvType::kF16, 8);
        auto mst = SequenceState::Create(b, hp, 128, KvType::kF16, 8, StateLayers::kMtp);
        std::vector<int32_t> all = prompt;
        ASSERT_TRUE(st.ok() && mst.ok());
        const DraftModel d = MtpDraft(m, b, *mst, max_draft);
        GenerateOptions go;
        go.n_predict = kGen;
        go.sampling.temperature = 0.0f;
        go.batch = 5;  // prompts of several passes: the block reads across their seams
        go.draft = max_draft ? &d : nullptr;
        Generator g(m, b, *st, nullptr);
        auto r = g.Generate(prompt, go);
        ASSERT_TRUE(r.ok()) << r.status().message();
        if (max_draft && hp.ssm_d_state == 0) {
          EXPECT_EQ(st->n_past, static_cast<int64_t>(prompt.size()) + r->n_decoded);
        }
        if (max_draft && std::string(kind) == "cpu") {
          all.insert(all.end(), r->tokens.begin(), r->tokens.end());
          ExpectMtpCacheIsTeacherForced(m, b, *mst, all);
        }
        *out = std::move(*r);
      };
      GenerateResult plain, spec;
      run(0, &plain);
      const int max_draft = 1 + p % 4;
      run(max_draft, &spec);
      EXPECT_EQ(spec.tokens, plain.tokens) << max_draft << " drafts a step";
      EXPECT_TRUE(spec.spec_off.empty()) << spec.spec_off;
      EXPECT_GT(spec.n_verify, 0);
      drafted += spec.n_drafted;
      accepted += spec.n_accepted;
    }
    EXPECT_GT(drafted, 0);
    std::printf("%s %s: MTP %lld/%lld accepted\n", std::string(ArchName(arch)).c_str(), kind,
                static_cast<long long>(accepted), static_cast<long long>(drafted));
  }
}

// Random weights reject nearly every draft. Here one dimension d decides
// the model's next token: token 0's embedding is -1 there and token 1's +1
// (the rest small), its output norm reads d alone, and its head maps a
// positive value to token 0 and a negative one to token 1, so after a token
// or two it alternates 0, 1, 0, 1. The block's head norm is zero, so it
// always drafts token 0: drafts after a 1 are accepted, after a 0 rejected,
// and steps keep 0 to n of n. The tokens must still be plain decoding's,
// with the kept drafts read again by the block with the model's hidden states.
TEST_P(MtpSpeculativeTest, AcceptedAndRejectedDraftsGivePlainDecodingsTokens) {
  const Arch arch = GetParam();
  const std::string dir = testing::ScratchDir("speculative_mtp_accept");
  auto pack = MtpPack(
      arch, dir, std::string(ArchName(arch)), 11,
      [arch](testing::GgufBuilder& b) {
        // The preset's shape; its MTP layer is blk.{n_layer} (qwen35moe's is the one the tweak adds).
        const HParams h = testing::TinyHParams(arch);
        const int64_t E = h.n_embd, V = h.n_vocab, d = 5;
        uint32_t x = 12345;
        auto small = [&x] {
          x = x * 1664525u + 1013904223u;
          return (static_cast<float>(x >> 8) / 16777216.0f - 0.5f) * 0.04f;
        };
        std::vector<float> emb(static_cast<size_t>(E * V)), head(static_cast<size_t>(E * V));
        for (float& v : emb) v = small();
        for (float& v : head) v = small();
        emb[static_cast<size_t>(0 * E + d)] = -1.0f;
        emb[static_cast<size_t>(1 * E + d)] = 1.0f;
        head[static_cast<size_t>(0 * E + d)] = 1.0f;
        head[static_cast<size_t>(1 * E + d)] = -1.0f;
        std::vector<float> norm(static_cast<size_t>(E), 0.0f);
        norm[static_cast<size_t>(d)] = 1.0f;
        b.RemoveTensor("token_embd.weight").TensorF32("token_embd.weight", {E, V}, emb);
        b.RemoveTensor("output.weight").TensorF32("output.weight", {E, V}, head);
        b.RemoveTensor("output_norm.weight").TensorF32("output_norm.weight", {E}, norm);
        const std::string mtp_norm = "blk." + std::to_string(h.n_layer) + ".nextn.shared_head_norm.weight";
        b.RemoveTensor(mtp_norm).TensorF32(mtp_norm, {E}, std::vector<float>(static_cast<size_t>(E), 0.0f));
      });
  ASSERT_TRUE(pack.ok()) << pack.status().message();
  Model& m = *pack->model;
  ASSERT_TRUE(m.EnableMtp().ok());
  const HParams& hp = m.hp();
  BackendOptions bo;
  bo.kind = "cpu";
  bo.threads = 2;
  auto be = MakeBackend(m, bo);
  ASSERT_TRUE(be.ok()) << be.status().message();
  Backend& b = *be->backend;
  int64_t drafted = 0, accepted = 0;
  const int prompts = testing::kMatrixSubset ? 4 : 16;
  for (int p = 0; p < prompts; ++p) {
    std::vector<int32_t> prompt;
    for (int i = 0; i < 3 + p % 7; ++i) prompt.push_back(static_cast<int32_t>((p * 131 + i * 29 + 5) % hp.n_vocab));
    SCOPED_TRACE("prompt " + std::to_string(p));
    auto run = [&](int max_draft) {
      auto st = SequenceState::Create(b, hp, 128, KvType::kF32, 8);
      auto mst = SequenceState::Create(b, hp, 128, KvType::kF32, 8, StateLayers::kMtp);
      EXPECT_TRUE(st.ok() && mst.ok());
      const DraftModel d = MtpDraft(m, b, *mst, max_draft);
      GenerateOptions go;
      go.n_predict = 24;
      go.sampling.temperature = 0.0f;
      go.batch = 4;
      go.draft = max_draft ? &d : nullptr;
      Generator g(m, b, *st, nullptr);
      auto r = g.Generate(prompt, go);
      EXPECT_TRUE(r.ok()) << r.status().message();
      if (!r.ok()) return GenerateResult{};
      if (max_draft) {
        std::vector<int32_t> all = prompt;
        all.insert(all.end(), r->tokens.begin(), r->tokens.end());
        ExpectMtpCacheIsTeacherForced(m, b, *mst, all);
      }
      return *r;
    };
    const GenerateResult plain = run(0);
    const GenerateResult spec = run(1 + p % 3);
    EXPECT_EQ(spec.tokens, plain.tokens);
    drafted += spec.n_drafted;
    accepted += spec.n_accepted;
  }
  std::printf("%s: MTP drafting token 0: %lld/%lld accepted\n", std::string(ArchName(arch)).c_str(),
              static_cast<long long>(accepted), static_cast<long long>(drafted));
  EXPECT_GT(accepted, 0) << "some drafts must be accepted";
  EXPECT_LT(accepted, drafted) << "some drafts must be rejected";
}

INSTANTIATE_TEST_SUITE_P(Archs, MtpSpeculativeTest, ::testing::Values(Arch::kGlm4Moe, Arch::kQwen35Moe),
                         [](const auto& param_info) { return std::string(ArchName(param_info.param)); });

// The MTP block's passes: its logits follow the hidden states it reads and
// the tokens, do not depend on how a prompt is cut into passes, and agree
// between the reference and the fast path; a model without a block, or a
// state that is not an MTP state, is refused.
TEST(Mtp, ThePassReadsTheHiddenStatesAndIsTheSameInAnyCut) {
  const std::string dir = testing::ScratchDir("mtp_pass");
  auto pack = MtpPack(Arch::kGlm4Moe, dir, "g", 3);
  ASSERT_TRUE(pack.ok()) << pack.status().message();
  Model& m = *pack->model;
  const HParams& hp = m.hp();
  const std::vector<int32_t> tokens = {3, 77, 140, 9, 300, 41, 5};
  const size_t n = tokens.size(), E = hp.n_embd;
  {
    BackendOptions bo;
    bo.kind = "reference";
    auto be = MakeBackend(m, bo);
    ASSERT_TRUE(be.ok());
    auto st = SequenceState::Create(*be->backend, hp, 32, KvType::kF32, 0, StateLayers::kMtp);
    ASSERT_TRUE(st.ok());
    std::vector<float> logits, h(n * E, 0.1f);
    ForwardOptions fo;
    auto r = ForwardMtp(m, *be->backend, *st, tokens, h, fo, &logits);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.message().find("not enabled"), std::string::npos) << r.message();
  }
  ASSERT_TRUE(m.EnableMtp().ok());
  // The model's hidden states for the tokens, from a main pass.
  std::map<std::string, std::vector<float>> whole;
  for (const char* kind : {"reference", "cpu"}) {
    BackendOptions bo;
    bo.kind = kind;
    bo.threads = 2;
    auto be = MakeBackend(m, bo);
    ASSERT_TRUE(be.ok());
    Backend& b = *be->backend;
    auto main = SequenceState::Create(b, hp, 32, KvType::kF32);
    ASSERT_TRUE(main.ok());
    std::vector<float> logits, hidden;
    ForwardOptions fo;
    fo.hidden = &hidden;
    ASSERT_TRUE(Forward(m, b, *main, tokens, fo, &logits).ok());
    ASSERT_EQ(hidden.size(), n * E);
    // Token j reads the hidden state of j - 1 (zeros before the first).
    std::vector<float> h_prev(n * E, 0.0f);
    std::copy(hidden.begin(), hidden.end() - static_cast<long>(E), h_prev.begin() + static_cast<long>(E));
    auto mtp_logits = [&](size_t cut, const std::vector<float>& hp_rows, std::vector<float>* own) {
      auto st = SequenceState::Create(b, hp, 32, KvType::kF32, 0, StateLayers::kMtp);
      EXPECT_TRUE(st.ok());
      std::vector<float> out, rows;
      ForwardOptions mo;
      mo.all_logits = true;
      for (size_t i = 0; i < n; i += cut) {
        const size_t k = std::min(cut, n - i);
        mo.hidden = own ? &rows : nullptr;
        Status s = ForwardMtp(m, b, *st, std::span<const int32_t>(tokens).subspan(i, k),
                              std::span<const float>(hp_rows).subspan(i * E, k * E), mo, &logits);
        EXPECT_TRUE(s.ok()) << s.message();
        out.insert(out.end(), logits.begin(), logits.end());
        if (own) own->insert(own->end(), rows.begin(), rows.end());
      }
      EXPECT_EQ(st->n_past, static_cast<int64_t>(n));
      return out;
    };
    std::vector<float> own;
    const std::vector<float> a = mtp_logits(n, h_prev, &own);
    ASSERT_EQ(a.size(), n * hp.n_vocab);
    EXPECT_EQ(own.size(), n * E);
    for (size_t cut : {1u, 3u}) EXPECT_EQ(mtp_logits(cut, h_prev, nullptr), a) << kind << ", passes of " << cut;
    std::vector<float> other = h_prev;
    for (float& v : other) v = -v + 0.5f;
    const std::vector<float> c = mtp_logits(n, other, nullptr);
    double diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, static_cast<double>(std::fabs(a[i] - c[i])));
    EXPECT_GT(diff, 1e-3) << kind << ": the logits must depend on the hidden states read";
    whole[kind] = a;
    // A main state is not an MTP state, and the other way round.
    std::vector<float> lg;
    Status s = ForwardMtp(m, b, *main, tokens, h_prev, ForwardOptions{}, &lg);
    EXPECT_FALSE(s.ok());
    auto mst = SequenceState::Create(b, hp, 32, KvType::kF32, 0, StateLayers::kMtp);
    ASSERT_TRUE(mst.ok());
    EXPECT_FALSE(Forward(m, b, *mst, tokens, ForwardOptions{}, &lg).ok());
  }
  double worst = 0;
  for (size_t i = 0; i < whole["reference"].size(); ++i)
    worst = std::max(worst, static_cast<double>(std::fabs(whole["reference"][i] - whole["cpu"][i])));
  EXPECT_LT(worst, 0.05) << "the fast path's MTP logits against the reference's";
  // A model without an MTP block says why.
  auto plain = testing::MakeSyntheticPack(Arch::kQwen3Moe, dir, "q", 3);
  ASSERT_TRUE(plain.ok());
  Status e = plain->model->EnableMtp();
  EXPECT_FALSE(e.ok());
  EXPECT_NE(e.message().find("qwen3moe has no MTP block"), std::string::npos) << e.message();
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
  // --spec mtp: a pack with an MTP block gives plain decoding's tokens, and
  // its plan counts the block's cache.
  auto glm = MtpPack(Arch::kGlm4Moe, dir, "g", 5);
  ASSERT_TRUE(glm.ok());
  std::vector<std::string> gbase = base;
  gbase[0] = dir + "/g.strata";
  auto gplain = testing::RunProgram("strata-run", gbase);
  ASSERT_EQ(gplain.exit_code, 0) << gplain.err;
  std::vector<std::string> gmtp = gbase;
  for (const char* a : {"--spec", "mtp", "--spec-max", "3", "--spec-fixed"}) gmtp.push_back(a);
  auto mtp = testing::RunProgram("strata-run", gmtp);
  ASSERT_EQ(mtp.exit_code, 0) << mtp.err;
  EXPECT_EQ(mtp.out, gplain.out);
  EXPECT_NE(mtp.err.find("strata-run: speculation: "), std::string::npos) << mtp.err;
  // The writer's --mtp: a qwen35moe fixture with a block, packed, drafting.
  auto w = testing::RunProgram("strata-make-gguf", {"--arch", "qwen35moe", "--preset", "tiny", "--mtp", "1", "--seed",
                                                    "9", "-o", dir + "/q.gguf"});
  ASSERT_EQ(w.exit_code, 0) << w.err;
  auto pk = testing::RunProgram("strata-pack", {dir + "/q.gguf", "-o", dir + "/q.strata"});
  ASSERT_EQ(pk.exit_code, 0) << pk.err;
  std::vector<std::string> qbase = base;
  qbase[0] = dir + "/q.strata";
  auto qplain = testing::RunProgram("strata-run", qbase);
  ASSERT_EQ(qplain.exit_code, 0) << qplain.err;
  std::vector<std::string> qmtp = qbase;
  // Passes of 2 tokens (-b 2): a step drafts 1 whatever --spec-max says, so
  // its verification pass stays within the planned passes.
  for (const char* a : {"--spec", "mtp", "--spec-max", "4", "--spec-fixed", "-b", "2"}) qmtp.push_back(a);
  auto qrun = testing::RunProgram("strata-run", qmtp);
  ASSERT_EQ(qrun.exit_code, 0) << qrun.err;
  EXPECT_EQ(qrun.out, qplain.out);
  auto wbad = testing::RunProgram("strata-make-gguf", {"--arch", "qwen3moe", "--mtp", "1", "-o", dir + "/x.gguf"});
  EXPECT_NE(wbad.exit_code, 0);
  EXPECT_NE(wbad.err.find("qwen3moe has no MTP block"), std::string::npos) << wbad.err;
  // --bench speculates too, and says how much.
  auto bench = testing::RunProgram("strata-run", {dir + "/g.strata", "--bench", "-p", "8", "-n", "12",
                                                  "--bench-reps", "1", "--spec", "mtp", "--spec-fixed"});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  EXPECT_NE(bench.out.find("\"spec\": \"mtp\""), std::string::npos) << bench.out;
  EXPECT_NE(bench.err.find("speculation (the MTP block)"), std::string::npos) << bench.err;
  // A draft model in --bench gets the bench's context, whatever -c says.
  auto dbench = testing::RunProgram("strata-run", {t, "--bench", "-p", "8", "-n", "8", "--bench-reps", "1",
                                                   "--bench-depth", "40", "-c", "16", "--spec", "draft", "--draft", t});
  ASSERT_EQ(dbench.exit_code, 0) << dbench.err;
  EXPECT_NE(dbench.out.find("\"spec\": \"draft\""), std::string::npos) << dbench.out;
  auto plan = testing::RunProgram("strata-run", {dir + "/g.strata", "--plan", "--spec", "mtp", "-p", "x"});
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("MTP block's KV cache"), std::string::npos) << plan.out;

  struct Bad {
    std::vector<std::string> extra;
    std::string says;
  };
  const Bad bad[] = {
      {{"--spec", "mtp"}, "--spec mtp: "},
      {{"--spec", "eagle"}, "expected none, draft or mtp"},
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
