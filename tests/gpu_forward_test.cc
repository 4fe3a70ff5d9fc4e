// Whole forward passes of the GPU backend on the software GPU against the CPU
// reference backend: every architecture, prompts and decode steps, batches
// of sequences, every KV type, a delta-net prompt in both forms.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "runtime/gpu/device.h"
#include "runtime/gpu/gpu_backend.h"
#include "runtime/model/backend_factory.h"
#include "runtime/model/forward.h"
#include "tests/testing/gpu_test_device.h"
#include "tests/testing/synthetic_pack.h"
#include "tests/testing/test_data.h"

namespace strata {
namespace {

std::unique_ptr<GpuBackend> SoftwareGpuBackend(const Model& m, uint32_t warp = 32) {
  gpu::SoftwareGpuOptions o;
  o.warp_size = warp;
  o.threads = 2;
  auto d = gpu::OpenSoftwareGpu(o);
  EXPECT_TRUE(d.ok()) << d.status().message();
  auto b = GpuBackend::Create(std::move(*d));
  EXPECT_TRUE(b.ok()) << b.status().message();
  Status s = (*b)->Bind(m);
  EXPECT_TRUE(s.ok()) << s.message();
  return std::move(*b);
}

using testing::NormalizedError;

// A prompt (every row's logits), then decode steps.
std::vector<float> PromptThenDecode(const Model& m, Backend& be, KvType kv, DeltaNetMode mode, int steps) {
  auto st = SequenceState::Create(be, m.hp(), 300, kv);
  EXPECT_TRUE(st.ok()) << st.status().message();
  std::vector<float> all, logits;
  ForwardOptions fo;
  fo.all_logits = true;
  fo.delta_net = mode;
  std::vector<int32_t> prompt;
  for (int i = 0; i < 37; ++i) prompt.push_back((i * 37 + 11) % static_cast<int32_t>(m.hp().n_vocab));
  Status s = Forward(m, be, *st, prompt, fo, &logits);
  EXPECT_TRUE(s.ok()) << s.message();
  all = logits;
  fo.all_logits = false;
  for (int i = 0; i < steps; ++i) {
    const int32_t next = static_cast<int32_t>((i * 101 + 7) % m.hp().n_vocab);
    s = Forward(m, be, *st, std::span(&next, 1), fo, &logits);
    EXPECT_TRUE(s.ok()) << s.message();
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

struct Case {
  Arch arch;
  GgmlType type;
};

class GpuForwardTest : public ::testing::TestWithParam<Case> {};

TEST_P(GpuForwardTest, MatchesTheReferenceBackend) {
  const Case c = GetParam();
  if (testing::TestMatrix() == testing::GpuTestMatrix::kSmoke && !(c.arch == Arch::kQwen35Moe && c.type == GgmlType::kQ4_K))
    GTEST_SKIP() << "smoke subset (Windows build): qwen35moe Q4_K only; the Linux builds run every case";
  auto opened = testing::MakeSyntheticPack(c.arch, testing::ScratchDir("gpu_forward"),
                                           std::string(ArchName(c.arch)) + "-" + std::string(TypeName(c.type)), 5,
                                           [&](testing::SyntheticModelSpec& s) { s.matrix_type = c.type; });
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  const Model& m = *opened->model;
  BackendOptions ro;
  ro.kind = "reference";
  auto ref_made = MakeBackend(m, ro);
  ASSERT_TRUE(ref_made.ok());
  std::unique_ptr<Backend>& ref = ref_made->backend;
  std::unique_ptr<GpuBackend> gpu = SoftwareGpuBackend(m);
  BackendOptions fo;
  fo.kind = "cpu";
  fo.threads = 2;
  auto fast_made = MakeBackend(m, fo);
  ASSERT_TRUE(fast_made.ok());
  std::unique_ptr<Backend>& fast = fast_made->backend;
  // Float weights: float arithmetic in another order. Quantized weights: the
  // GPU multiplies int8 activations, the fast CPU path Q8_0/Q8_K ones, and a
  // tiny random model flips routes on that; the GPU must stay within the
  // fast path's own distance from the reference (the conformance suite holds
  // the real models to stated bounds).
  const bool float_weights = c.type == GgmlType::kF32 || c.type == GgmlType::kF16;
  // Every KV type in the optimized build; the default (F16) elsewhere
  // (gpu_ops_test runs every KV type op by op in every build).
  const bool full = testing::TestMatrix() == testing::GpuTestMatrix::kFull;
  for (KvType kv : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
    if (!SequenceState::CheckKvType(m.hp(), kv).ok()) continue;  // head dimensions not whole Q8_0 blocks
    if (!full && kv != KvType::kF16) continue;
    SCOPED_TRACE(std::string("kv ") + std::string(KvTypeName(kv)));
    const std::vector<float> want = PromptThenDecode(m, *ref, kv, DeltaNetMode::kSequential, 3);
    const double fast_err = NormalizedError(PromptThenDecode(m, *fast, kv, DeltaNetMode::kSequential, 3), want);
    const double gpu_err = NormalizedError(PromptThenDecode(m, *gpu, kv, DeltaNetMode::kSequential, 3), want);
    std::printf("%s %s, KV %s: normalized error vs reference: gpu %.3g, fast %.3g\n", std::string(ArchName(c.arch)).c_str(),
                std::string(TypeName(c.type)).c_str(), std::string(KvTypeName(kv)).c_str(), gpu_err, fast_err);
    EXPECT_LE(gpu_err, float_weights ? (kv == KvType::kF32 ? 1e-4 : 2e-3) : std::max(0.05, 1.5 * fast_err));
  }
  if (m.hp().ssm_d_state > 0) {
    const std::vector<float> want = PromptThenDecode(m, *ref, KvType::kF32, DeltaNetMode::kChunked, 2);
    const double fast_err = NormalizedError(PromptThenDecode(m, *fast, KvType::kF32, DeltaNetMode::kChunked, 2), want);
    const double gpu_err = NormalizedError(PromptThenDecode(m, *gpu, KvType::kF32, DeltaNetMode::kChunked, 2), want);
    EXPECT_LE(gpu_err, float_weights ? 1e-4 : std::max(0.05, 1.5 * fast_err)) << "chunked delta-net";
  }
}

// The MTP block (--spec mtp) on the GPU backend: its passes' logits and own
// hidden states against the reference backend's, from the same hidden states
// (the model's own, from a main pass of each backend), and the main pass's
// hidden states themselves.
TEST(GpuMtp, TheBlockMatchesTheReferenceBackend) {
  for (Arch arch : {Arch::kGlm4Moe, Arch::kQwen35Moe}) {
    SCOPED_TRACE(std::string(ArchName(arch)));
    auto opened = testing::MakeSyntheticPack(arch, testing::ScratchDir("gpu_mtp"), std::string(ArchName(arch)), 5,
                                             [](testing::SyntheticModelSpec& s) {
                                               s.matrix_type = GgmlType::kF32;
                                               if (s.hp.nextn_predict_layers == 0) {
                                                 s.hp.nextn_predict_layers = 1;
                                                 s.hp.n_layer_all = s.hp.n_layer + 1;
                                               }
                                             });
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    Model& m = *opened->model;
    ASSERT_TRUE(m.EnableMtp().ok());
    BackendOptions ro;
    ro.kind = "reference";
    auto ref_made = MakeBackend(m, ro);
    ASSERT_TRUE(ref_made.ok());
    std::unique_ptr<GpuBackend> gpu = SoftwareGpuBackend(m);
    const uint32_t E = m.hp().n_embd;
    std::vector<int32_t> tokens;
    for (int i = 0; i < 9; ++i) tokens.push_back((i * 41 + 3) % static_cast<int32_t>(m.hp().n_vocab));
    auto run = [&](Backend& be, std::vector<float>* hidden, std::vector<float>* own) {
      auto st = SequenceState::Create(be, m.hp(), 64, KvType::kF32);
      auto mst = SequenceState::Create(be, m.hp(), 64, KvType::kF32, 0, StateLayers::kMtp);
      EXPECT_TRUE(st.ok() && mst.ok());
      std::vector<float> logits, out;
      ForwardOptions fo;
      fo.hidden = hidden;
      EXPECT_TRUE(Forward(m, be, *st, tokens, fo, &logits).ok());
      std::vector<float> h_prev(tokens.size() * E, 0.0f);
      std::copy(hidden->begin(), hidden->end() - E, h_prev.begin() + E);
      ForwardOptions mo;
      mo.all_logits = true;
      mo.hidden = own;
      // The prompt in one pass, then a decode step (one token).
      Status s = ForwardMtp(m, be, *mst, std::span<const int32_t>(tokens).first(tokens.size() - 1),
                            std::span<const float>(h_prev).first((tokens.size() - 1) * E), mo, &logits);
      EXPECT_TRUE(s.ok()) << s.message();
      out = logits;
      std::vector<float> own_all = *own;
      s = ForwardMtp(m, be, *mst, std::span<const int32_t>(tokens).last(1), std::span<const float>(h_prev).last(E), mo,
                     &logits);
      EXPECT_TRUE(s.ok()) << s.message();
      out.insert(out.end(), logits.begin(), logits.end());
      own_all.insert(own_all.end(), own->begin(), own->end());
      *own = own_all;
      return out;
    };
    std::vector<float> ref_hidden, ref_own, gpu_hidden, gpu_own;
    const std::vector<float> want = run(*ref_made->backend, &ref_hidden, &ref_own);
    const std::vector<float> got = run(*gpu, &gpu_hidden, &gpu_own);
    const double logit_err = NormalizedError(got, want);
    const double hidden_err = NormalizedError(gpu_hidden, ref_hidden);
    const double own_err = NormalizedError(gpu_own, ref_own);
    std::printf("%s MTP on the software GPU: normalized error vs reference: logits %.3g, hidden %.3g, own hidden %.3g\n",
                std::string(ArchName(arch)).c_str(), logit_err, hidden_err, own_err);
    EXPECT_LE(logit_err, 1e-4);
    EXPECT_LE(hidden_err, 1e-4);
    EXPECT_LE(own_err, 1e-4);
  }
}

// Decode graphs: a decode step's shape seen twice is captured, then
// replayed; the same kernels in the same order give the same bits as
// launching them one by one. Attention's decode splits change at 256 keys,
// which makes a new graph; greedy (argmax) and full-logits steps are two
// shapes. Both architectures and both modes in the optimized build; one of
// each elsewhere (a 250-token prompt is slow on a sanitized software GPU).
TEST(GpuDecodeGraphs, ReplaysGiveTheBitsOfDirectLaunches) {
  const bool full = testing::TestMatrix() == testing::GpuTestMatrix::kFull;
  for (Arch arch : {Arch::kQwen3Moe, Arch::kQwen35Moe}) {
    if (!full && arch != Arch::kQwen35Moe) continue;
    SCOPED_TRACE(std::string(ArchName(arch)));
    auto opened = testing::MakeSyntheticPack(arch, testing::ScratchDir("gpu_graphs"), std::string(ArchName(arch)), 5);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    const Model& m = *opened->model;
    std::unique_ptr<GpuBackend> graphs = SoftwareGpuBackend(m);
    std::unique_ptr<GpuBackend> direct = SoftwareGpuBackend(m);
    direct->SetGraphs(false);
    // Both through a planned workspace (the run's), as strata-run does.
    auto run = [&](GpuBackend& be, bool greedy) {
      auto st = SequenceState::Create(be, m.hp(), 300, KvType::kF16);
      EXPECT_TRUE(st.ok()) << st.status().message();
      auto ws = be.CreateWorkspace(be.WorkspaceBytes(m, PassShape{250, 300, 1}), "test workspace");
      EXPECT_TRUE(ws.ok()) << ws.status().message();
      std::vector<float> all, logits;
      std::vector<int32_t> ids;
      ForwardOptions fo;
      fo.workspace = &*ws;
      if (greedy) fo.argmax = &ids;
      std::vector<int32_t> prompt;
      for (int i = 0; i < 250; ++i) prompt.push_back((i * 37 + 11) % static_cast<int32_t>(m.hp().n_vocab));
      Status s = Forward(m, be, *st, prompt, fo, &logits);
      EXPECT_TRUE(s.ok()) << s.message();
      int32_t next = 1;
      for (int i = 0; i < 12; ++i) {  // positions 250-261: past 256 keys at the 7th step
        s = Forward(m, be, *st, std::span(&next, 1), fo, &logits);
        EXPECT_TRUE(s.ok()) << s.message();
        if (greedy) {
          all.push_back(static_cast<float>(ids.at(0)));
          next = ids.at(0);
        } else {
          all.insert(all.end(), logits.begin(), logits.end());
          next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        }
      }
      return all;
    };
    for (bool greedy : {false, true}) {
      if (!full && !greedy) continue;
      SCOPED_TRACE(greedy ? "greedy" : "logits");
      const GpuBackend::GraphCounts before = graphs->graph_counts();
      EXPECT_EQ(run(*graphs, greedy), run(*direct, greedy));
      const GpuBackend::GraphCounts after = graphs->graph_counts();
      // Steps 1-6 (splits 1): captured at the 2nd, replayed 4 times; steps
      // 7-12 (splits 2): captured at the 8th, replayed 4 times.
      EXPECT_EQ(after.captures - before.captures, 2u);
      EXPECT_EQ(after.replays - before.replays, 8u);
    }
    EXPECT_EQ(direct->graph_counts().captures, 0u);
    EXPECT_EQ(direct->graph_counts().replays, 0u);
  }
}

// A model beyond the kernels' limits is refused when the backend is made,
// before binding, with the reason: so --backend auto, which makes backends
// without binding them, falls back to the CPU (DeepSeek V3's 512-value
// latent is wider than the attention kernel's value rows, 8 a lane).
TEST(GpuShapes, AModelBeyondTheKernelsIsRefusedWhenTheBackendIsMade) {
  auto opened = testing::MakeSyntheticPack(Arch::kDeepseek2, testing::ScratchDir("gpu_shapes"), "wide-latent", 5,
                                           [](testing::SyntheticModelSpec& s) {
                                             s.hp.kv_lora_rank = 512;
                                             s.hp.head_dim_k = 512 + s.hp.n_rot;
                                             s.hp.head_dim_v = 512;
                                           });
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  BackendOptions o;
  o.kind = "software-gpu";
  o.defer_bind = true;
  auto made = MakeBackend(*opened->model, o);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("value heads of 512 dimensions"), std::string::npos)
      << made.status().message();
  o.kind = "cpu";
  EXPECT_TRUE(MakeBackend(*opened->model, o).ok());
}

// Sliding windows (gpt-oss: a window of 16 on alternate layers in the tiny
// preset): a state made for passes of at most 5 tokens keeps those layers in
// a ring of 64 rows, each position stored twice (sequence_state.h), instead
// of the whole context. On every backend (the reference, the fast CPU path,
// the software GPU) a ring gives the bits of the full cache: prompt chunks
// and decode steps past several wraps, a rewind the ring still holds, a
// copy of the state. A pass larger than the ring allows, and a rewind past
// what it holds, are refused and change nothing.
TEST(SlidingWindowRing, GivesTheFullCachesBitsOnEveryBackend) {
  auto opened = testing::MakeSyntheticPack(Arch::kGptOss, testing::ScratchDir("swa_ring"), "gpt-oss-f32", 5,
                                           [](testing::SyntheticModelSpec& s) { s.matrix_type = GgmlType::kF32; });
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  const Model& m = *opened->model;
  const HParams& hp = m.hp();
  ASSERT_EQ(hp.n_swa, 16u);
  constexpr int64_t kCtx = 256, kPass = 5;
  ASSERT_EQ(SequenceState::SwaRingRows(hp, kCtx, kPass), 64);
  ASSERT_EQ(SequenceState::SwaRingRows(hp, 128, kPass), 0) << "2 x 64 rows are not fewer than 128 positions";
  ASSERT_EQ(SequenceState::SwaRingRows(hp, kCtx, 0), 0) << "passes of any size: no ring";
  // Two of the four layers slide: their K and V take 128 rows, not 256.
  const uint64_t row = hp.n_head_kv * (KvHeadBytes(KvType::kF16, hp.head_dim_k) + KvHeadBytes(KvType::kF16, hp.head_dim_v));
  EXPECT_EQ(SequenceState::BytesFor(hp, kCtx, KvType::kF16, 0) - SequenceState::BytesFor(hp, kCtx, KvType::kF16, kPass),
            2 * (kCtx - 128) * row);

  BackendOptions ro;
  ro.kind = "reference";
  auto ref = MakeBackend(m, ro);
  ASSERT_TRUE(ref.ok());
  BackendOptions fo;
  fo.kind = "cpu";
  fo.threads = 2;
  auto fast = MakeBackend(m, fo);
  ASSERT_TRUE(fast.ok());
  std::unique_ptr<GpuBackend> gpu = SoftwareGpuBackend(m);
  const bool full = testing::TestMatrix() == testing::GpuTestMatrix::kFull;
  const int positions = full ? 150 : 72;  // past the ring's 64 rows: one wrap at least
  auto token = [&](int i) { return static_cast<int32_t>((i * 37 + 11) % static_cast<int32_t>(hp.n_vocab)); };
  struct Named {
    const char* name;
    Backend* be;
  };
  for (const Named& b : {Named{"reference", ref->backend.get()}, Named{"cpu", fast->backend.get()},
                         Named{"software gpu", gpu.get()}}) {
    for (KvType kv : {KvType::kF16, KvType::kQ8_0}) {
      if (!full && kv != KvType::kF16) continue;
      SCOPED_TRACE(std::string(b.name) + ", kv " + std::string(KvTypeName(kv)));
      const auto t0 = std::chrono::steady_clock::now();
      auto whole = SequenceState::Create(*b.be, hp, kCtx, kv);
      auto ring = SequenceState::Create(*b.be, hp, kCtx, kv, kPass);
      ASSERT_TRUE(whole.ok() && ring.ok());
      ASSERT_EQ(whole->swa_ring, 0);
      ASSERT_EQ(ring->swa_ring, 64);
      ForwardOptions o;
      o.all_logits = true;
      // Runs tokens [from, to) on `st` in passes of up to kPass tokens (the
      // first 40 positions; single tokens after): every row's logits.
      auto run = [&](SequenceState& st, int from, int to) {
        std::vector<float> all, logits;
        for (int i = from; i < to;) {
          const int n = i < 40 ? std::min<int>(kPass, to - i) : 1;
          std::vector<int32_t> ids;
          for (int j = 0; j < n; ++j) ids.push_back(token(i + j));
          Status s = Forward(m, *b.be, st, ids, o, &logits);
          EXPECT_TRUE(s.ok()) << s.message();
          if (!s.ok()) return all;
          all.insert(all.end(), logits.begin(), logits.end());
          i += n;
        }
        return all;
      };
      const std::vector<float> want = run(*whole, 0, positions);
      ASSERT_EQ(want.size(), static_cast<size_t>(positions) * hp.n_vocab);
      EXPECT_TRUE(run(*ring, 0, positions) == want) << "prompt and decode through the ring";

      // A pass larger than the ring leaves beside the window: refused.
      const int64_t max_pass = ring->MaxPassTokens(hp);
      EXPECT_EQ(max_pass, 64 - 15);
      std::vector<int32_t> big(static_cast<size_t>(max_pass + 1), token(3));
      std::vector<float> logits;
      const Status refused = Forward(m, *b.be, *ring, big, o, &logits);
      EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.message();
      EXPECT_NE(refused.message().find("sliding-window cache"), std::string::npos) << refused.message();
      EXPECT_EQ(ring->n_past, positions);

      // A rewind past what the ring holds (it holds the last 64 positions;
      // a token 60 back sees 15 more before it): refused, nothing changed.
      EXPECT_FALSE(ring->TruncateKv(positions - 60));
      EXPECT_EQ(ring->n_past, positions);
      // A rewind it holds, then the same tokens again: the full cache's bits.
      const int back = positions - 20;
      ASSERT_TRUE(ring->TruncateKv(back));
      ASSERT_TRUE(whole->TruncateKv(back));
      const std::vector<float> again = run(*whole, back, positions);
      EXPECT_TRUE(run(*ring, back, positions) == again) << "after a rewind";

      // A copy of the ring state continues as the state does.
      auto copy = SequenceState::Create(*b.be, hp, kCtx, kv, kPass);
      ASSERT_TRUE(copy.ok());
      ASSERT_TRUE(CopySequence(*ring, *copy).ok());
      const std::vector<float> next = run(*whole, positions, positions + 3);
      EXPECT_TRUE(run(*copy, positions, positions + 3) == next) << "a copy";
      EXPECT_TRUE(run(*ring, positions, positions + 3) == next) << "the original";
      std::printf("%s, KV %s: %.1f s\n", b.name, std::string(KvTypeName(kv)).c_str(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, GpuForwardTest,
                         ::testing::Values(Case{Arch::kQwen3Moe, GgmlType::kF32}, Case{Arch::kQwen3Moe, GgmlType::kQ4_K},
                                           Case{Arch::kQwen3, GgmlType::kQ8_0}, Case{Arch::kQwen35Moe, GgmlType::kF32},
                                           Case{Arch::kQwen35Moe, GgmlType::kQ4_K}, Case{Arch::kLlama, GgmlType::kF32},
                                           Case{Arch::kDeepseek2, GgmlType::kQ8_0}),
                         [](const ::testing::TestParamInfo<Case>& p) {
                           return std::string(ArchName(p.param.arch)) + "_" + std::string(TypeName(p.param.type));
                         });

}  // namespace
}  // namespace strata
