// Every op of the GPU backend against the CPU backend's, one op at a time, as
// llama.cpp's test-backend-ops compares each op of a backend with the CPU's:
// the same random inputs given to both backends (Backend::WriteAct), the op
// run on each, its output read back (ReadAct) and compared with the
// reference backend (dequantized weights, float activations) and with the
// fast CPU backend, as a normalized error (max |gpu - cpu| over rms(cpu)).
//
// The matrix (docs/gpu.md, "Tests"): the ops of every architecture (the
// embedding gather, RMSNorm, the residual add, attention plain and gated
// with every KV type and several GQA ratios, the gated delta-net in both
// forms, the dense FFN, the routed experts, the shared expert, the output
// head as logits and as greedy argmax); every weight type through
// attention, the experts and the head; passes of 1 to 33 tokens after an
// empty, a short and a long cache (decode splits the context past 256 keys);
// two sequences in one pass. It runs whole in the optimized build, one tail
// shape per op under the sanitizers, a smoke subset under Wine
// (tests/testing/gpu_test_device.h); on a real GPU with STRATA_TEST_DEVICE.
//
// Stated tolerances (normalized error; against the reference backend /
// against the fast CPU backend):
//   embedding, add: exact (0 / 0); RMSNorm: 1e-5 / 1e-5 (the CPU sums squares
//   in double);
//   ops over float weights: 1e-4 / 1e-3 for F32, 0.02 for F16, 0.05 for BF16
//   (the GPU multiplies float activations; the fast path rounds them to its
//   weights' type, as ggml does: 11 and 8 bits of mantissa);
//   ops over quantized weights: 0.25 / 0.03. The GPU quantizes activations
//   as the fast path does (Q8_0, Q8_1 or Q8_K blocks by weight type, the
//   same rounding), so against the fast path only the order of float sums
//   differs: measured up to 0.01 over the matrix. Against the reference
//   (float activations) one product's normalized error is about 0.02, an op
//   chains two or three (q, k, v into a softmax; gate and up into down);
//   gpu_matmul_test checks the kernels' own arithmetic to 1e-5. A wrong
//   index, scale or offset moves an op by 1 or more.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/gpu/kernels/weight_types.h"
#include "runtime/model/backend_factory.h"
#include "runtime/model/forward.h"
#include "runtime/model/sampler.h"
#include "tests/testing/gpu_test_device.h"
#include "tests/testing/synthetic_pack.h"
#include "tests/testing/test_data.h"
#include "tests/testing/test_matrix.h"

namespace strata {
namespace {

using R = TensorRole;

double NormalizedError(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size() || want.empty()) return std::numeric_limits<double>::infinity();
  double ss = 0, mx = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::infinity();
    ss += static_cast<double>(want[i]) * static_cast<double>(want[i]);
    mx = std::max(mx, std::abs(static_cast<double>(got[i]) - static_cast<double>(want[i])));
  }
  const double rms = std::sqrt(ss / static_cast<double>(want.size()));
  return rms > 0 ? mx / rms : mx;
}

std::vector<float> Random(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// An op on a backend, given the pass's inputs: writes them (WriteAct),
// calls the op, reads its output.
struct Op {
  std::string name;
  std::vector<Act> inputs;  // written from the pass's random rows, in order
  Act output;
  std::function<Status(Backend&)> call;
};

struct Pass {
  std::vector<std::vector<int32_t>> tokens;  // per sequence
};

// Runs `op` on `be` over `passes` (each a batch of the same sequences), from
// fresh states of `ctx` positions, and returns the output of the last pass.
std::vector<float> RunOp(const Model& m, Backend& be, const Op& op, const std::vector<Pass>& passes, KvType kv,
                         int64_t ctx, DeltaNetMode mode, uint64_t seed) {
  const HParams& hp = m.hp();
  const size_t n_seq = passes[0].tokens.size();
  std::vector<SequenceState> states;
  for (size_t s = 0; s < n_seq; ++s) {
    auto st = SequenceState::Create(be, hp, ctx, kv);
    EXPECT_TRUE(st.ok()) << st.status().message();
    if (!st.ok()) return {};
    states.push_back(std::move(*st));
  }
  int64_t most = 1;
  for (const Pass& p : passes) {
    int64_t n = 0;
    for (const auto& t : p.tokens) n += static_cast<int64_t>(t.size());
    most = std::max(most, n);
  }
  auto ws = be.CreateWorkspace(be.WorkspaceBytes(m, PassShape{most, ctx, be.threads()}), "test workspace");
  EXPECT_TRUE(ws.ok());
  if (!ws.ok()) return {};
  ForwardOptions fo;
  fo.delta_net = mode;
  std::vector<float> out;
  for (size_t pi = 0; pi < passes.size(); ++pi) {
    std::vector<SequenceBatch> batch;
    PassDesc d;
    int64_t n = 0;
    for (size_t s = 0; s < n_seq; ++s) {
      const auto& t = passes[pi].tokens[s];
      batch.push_back(SequenceBatch{&states[s], t, false});
      n += static_cast<int64_t>(t.size());
      d.max_keys = std::max(d.max_keys, states[s].n_past + static_cast<int64_t>(t.size()));
    }
    d.model = &m;
    d.batch = batch;
    d.options = &fo;
    d.workspace = &*ws;
    d.n = n;
    d.n_rows = static_cast<int64_t>(n_seq);
    Status st = be.BeginPass(d);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok()) return {};
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      const std::vector<float> x = Random(static_cast<size_t>(n * hp.n_embd), seed + 100 * pi + i);
      st = be.WriteAct(op.inputs[i], x.data());
      EXPECT_TRUE(st.ok()) << st.message();
    }
    st = op.call(be);
    EXPECT_TRUE(st.ok()) << op.name << ": " << st.message();
    out.assign(static_cast<size_t>(n * hp.n_embd), NAN);
    if (st.ok()) {
      st = be.ReadAct(op.output, out.data());
      EXPECT_TRUE(st.ok()) << st.message();
    }
    be.EndPass();
    for (size_t s = 0; s < n_seq; ++s) states[s].n_past += static_cast<int64_t>(passes[pi].tokens[s].size());
  }
  return out;
}

struct Backends {
  testing::OpenedModel opened;
  std::unique_ptr<Backend> ref, fast;
  std::unique_ptr<GpuBackend> gpu;
};

Backends Make(Arch arch, GgmlType type, const std::string& name,
              const std::function<void(testing::SyntheticModelSpec&)>& tweak = {}) {
  Backends b;
  auto opened = testing::MakeSyntheticPack(arch, testing::ScratchDir("gpu_ops"), name, 11,
                                           [&](testing::SyntheticModelSpec& s) {
                                             s.matrix_type = type;
                                             if (tweak) tweak(s);
                                           });
  EXPECT_TRUE(opened.ok()) << opened.status().message();
  if (!opened.ok()) return b;
  b.opened = std::move(*opened);
  const Model& m = *b.opened.model;
  BackendOptions o;
  o.kind = "reference";
  auto ref = MakeBackend(m, o);
  EXPECT_TRUE(ref.ok()) << ref.status().message();
  o.kind = "cpu";
  o.threads = 2;
  auto fast = MakeBackend(m, o);
  EXPECT_TRUE(fast.ok()) << fast.status().message();
  auto gpu = testing::MakeTestGpuBackend(m);
  EXPECT_TRUE(gpu.ok()) << gpu.status().message();
  if (ref.ok()) b.ref = std::move(ref->backend);
  if (fast.ok()) b.fast = std::move(fast->backend);
  if (gpu.ok()) b.gpu = std::move(*gpu);
  return b;
}

bool FloatWeights(GgmlType t) { return t == GgmlType::kF32 || t == GgmlType::kF16 || t == GgmlType::kBF16; }

// The passes of a shape: `prefix` tokens first (a cache to read), then `n`.
std::vector<Pass> Shape(int64_t prefix, int64_t n, int n_seq, uint32_t n_vocab) {
  std::vector<Pass> passes;
  auto tokens = [&](int64_t count, int64_t salt) {
    std::vector<int32_t> t;
    for (int64_t i = 0; i < count; ++i) t.push_back(static_cast<int32_t>((i * 31 + salt * 7 + 3) % n_vocab));
    return t;
  };
  if (prefix > 0) {
    Pass p;
    for (int s = 0; s < n_seq; ++s) p.tokens.push_back(tokens(prefix + s, s));
    passes.push_back(p);
  }
  Pass p;
  for (int s = 0; s < n_seq; ++s) p.tokens.push_back(tokens(n, 100 + s));
  passes.push_back(p);
  return passes;
}

struct Check {
  double tol_ref;   // against the reference backend
  double tol_fast;  // against the fast CPU backend
};

// Runs op on the three backends and checks the GPU's output.
void Compare(Backends& b, const Op& op, const std::vector<Pass>& passes, KvType kv, int64_t ctx, DeltaNetMode mode,
             Check tol, const std::string& what) {
  SCOPED_TRACE(what + " / " + op.name);
  ASSERT_TRUE(b.ref && b.fast && b.gpu);
  const Model& m = *b.opened.model;
  const std::vector<float> want = RunOp(m, *b.ref, op, passes, kv, ctx, mode, 17);
  const std::vector<float> fast = RunOp(m, *b.fast, op, passes, kv, ctx, mode, 17);
  const std::vector<float> got = RunOp(m, *b.gpu, op, passes, kv, ctx, mode, 17);
  const double e_ref = NormalizedError(got, want), e_fast = NormalizedError(got, fast);
  EXPECT_LE(e_ref, tol.tol_ref) << "against the reference backend";
  EXPECT_LE(e_fast, tol.tol_fast) << "against the fast CPU backend";
}

Check ProductTolerance(GgmlType t) {
  switch (t) {
    case GgmlType::kF32: return {1e-4, 1e-3};
    case GgmlType::kF16: return {1e-4, 0.02};
    case GgmlType::kBF16: return {1e-4, 0.05};
    default: return {0.25, 0.03};
  }
}

Op AttentionOp(const Model& m, int32_t il) {
  const Mixer mixer = GetArchSpec(m.arch()).Layer(m.hp(), static_cast<uint32_t>(il)).mixer;
  return Op{std::string(MixerName(mixer)) + " layer " + std::to_string(il), {Act::kH}, Act::kY,
            [il, mixer](Backend& be) { return be.Attention(il, mixer, Act::kH, Act::kY); }};
}

int32_t FirstLayer(const Model& m, bool recurrent) {
  for (uint32_t il = 0; il < m.hp().n_layer; ++il)
    if (m.hp().IsRecurrentLayer(il) == recurrent) return static_cast<int32_t>(il);
  return -1;
}

// The shapes of the matrix: (prefix, n, sequences).
struct ShapeCase {
  int64_t prefix, n;
  int n_seq;
};
std::vector<ShapeCase> Shapes() {
  switch (testing::TestMatrix()) {
    case testing::GpuTestMatrix::kFull:
      return {{0, 1, 1}, {0, 5, 1}, {40, 33, 1}, {300, 1, 1}, {300, 3, 1}, {12, 7, 2}};
    case testing::GpuTestMatrix::kTails: return {{40, 33, 1}, {300, 3, 1}};
    case testing::GpuTestMatrix::kSmoke: return {{12, 5, 1}};
  }
  return {};
}
std::string Name(const ShapeCase& s) {
  return "prefix " + std::to_string(s.prefix) + ", " + std::to_string(s.n) + " tokens x " + std::to_string(s.n_seq) +
         " seq";
}

// --- per architecture: every op ----------------------------------------------------

struct ArchCase {
  Arch arch;
  GgmlType type;
  int32_t kv_heads;  // 0: the preset's
  int gating = 0;    // ExpertGating; 0: the preset's
  bool yarn = false; // YaRN RoPE scaling (factor 4, original context 64)
  bool lite = false; // deepseek2: DeepSeek-V2-Lite's form (one attn_q, softmax router, no groups)
};

class GpuOpsArchTest : public ::testing::TestWithParam<ArchCase> {};

TEST_P(GpuOpsArchTest, EveryOpMatchesTheCpuBackend) {
  const ArchCase c = GetParam();
  Backends b = Make(c.arch, c.type, std::string(ArchName(c.arch)) + "-" + std::string(TypeName(c.type)) + "-kv" +
                                        std::to_string(c.kv_heads) + "-g" + std::to_string(c.gating) +
                                        (c.yarn ? "-yarn" : "") + (c.lite ? "-lite" : ""),
                    [&](testing::SyntheticModelSpec& s) {
                      if (c.lite) s.hp = testing::TinyDeepseek2LiteHParams();
                      if (c.kv_heads) s.hp.n_head_kv = static_cast<uint32_t>(c.kv_heads);
                      if (c.gating) s.hp.expert_gating = static_cast<ExpertGating>(c.gating);
                      if (c.yarn) {
                        ASSERT_TRUE(testing::ParseRopeScaling("yarn:4:64", &s.hp).ok());
                      }
                    });
  ASSERT_TRUE(b.gpu);
  const Model& m = *b.opened.model;
  const HParams& hp = m.hp();
  const Check products = ProductTolerance(c.type);
  const int64_t ctx = 400;
  std::vector<Op> stateless = {
      {"embedding", {}, Act::kX, [](Backend&) { return Status::Ok(); }},
      {"RMSNorm", {Act::kX}, Act::kH,
       [&m](Backend& be) { return be.RmsNorm(Act::kX, m.Get(0, R::kAttnNorm), Act::kH); }},
      {"add", {Act::kX, Act::kY}, Act::kX, [](Backend& be) { return be.Add(Act::kX, Act::kY); }},
  };
  const std::vector<Pass> one = Shape(0, 5, 1, hp.n_vocab);
  Compare(b, stateless[0], one, KvType::kF32, ctx, DeltaNetMode::kSequential, Check{0, 0}, "5 tokens");
  Compare(b, stateless[1], one, KvType::kF32, ctx, DeltaNetMode::kSequential, Check{1e-5, 1e-5}, "5 tokens");
  Compare(b, stateless[2], one, KvType::kF32, ctx, DeltaNetMode::kSequential, Check{0, 0}, "5 tokens");

  const ArchSpec& spec = GetArchSpec(m.arch());
  const int32_t attn = FirstLayer(m, false), delta = FirstLayer(m, true);
  for (const ShapeCase& sc : Shapes()) {
    const std::vector<Pass> passes = Shape(sc.prefix, sc.n, sc.n_seq, hp.n_vocab);
    if (attn >= 0)
      for (KvType kv : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
        if (!SequenceState::CheckKvType(hp, kv).ok()) continue;
        Compare(b, AttentionOp(m, attn), passes, kv, ctx, DeltaNetMode::kSequential, products,
                Name(sc) + ", KV " + std::string(KvTypeName(kv)));
      }
    if (delta >= 0)
      for (DeltaNetMode mode : {DeltaNetMode::kSequential, DeltaNetMode::kChunked})
        Compare(b,
                Op{"gated delta-net", {Act::kH}, Act::kY,
                   [delta](Backend& be) { return be.GatedDeltaNet(delta, Act::kH, Act::kY); }},
                passes, KvType::kF32, ctx, mode, products,
                Name(sc) + ", " + std::string(DeltaNetModeName(mode)));
    // The FFN of the first layer of each kind (glm4moe: layer 0 dense, 1 MoE).
    int32_t dense = -1, moe = -1;
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
      int32_t& first = spec.Layer(hp, il).ffn == FfnKind::kDense ? dense : moe;
      if (first < 0) first = static_cast<int32_t>(il);
    }
    if (dense >= 0)
      Compare(b,
              Op{"dense FFN", {Act::kH}, Act::kY, [dense](Backend& be) { return be.DenseFfn(dense, Act::kH, Act::kY); }},
              passes, KvType::kF32, ctx, DeltaNetMode::kSequential, products, Name(sc));
    if (moe >= 0)
      Compare(b, Op{"MoE", {Act::kH}, Act::kY, [moe](Backend& be) { return be.MoeFfn(moe, Act::kH, Act::kY); }},
              passes, KvType::kF32, ctx, DeltaNetMode::kSequential, products, Name(sc));
    if (moe >= 0 && spec.Layer(hp, static_cast<uint32_t>(moe)).ffn == FfnKind::kMoeSharedExpert)
      Compare(b,
              Op{"shared expert", {Act::kH, Act::kY}, Act::kY,
                 [moe](Backend& be) { return be.SharedExpert(moe, Act::kH, Act::kY); }},
              passes, KvType::kF32, ctx, DeltaNetMode::kSequential, products, Name(sc));
  }
}

// Under the sanitizers: every architecture (qwen3next through qwen35moe's
// kernels) and every KV-head shape (grouped, one head, as many as Q) once,
// on a quantized type; the F32 twins and the
// other weight types are the optimized build's (GpuOpsTypeTest runs every
// type's kernels under the sanitizers).
std::vector<ArchCase> GpuOpsArchCases() {
  return testing::MatrixCases<ArchCase>(
      {ArchCase{Arch::kQwen3Moe, GgmlType::kF32, 0}, ArchCase{Arch::kQwen3Moe, GgmlType::kQ4_K, 0},
       ArchCase{Arch::kQwen3Moe, GgmlType::kQ8_0, 8}, ArchCase{Arch::kQwen3Moe, GgmlType::kF16, 1},
       ArchCase{Arch::kQwen3, GgmlType::kQ6_K, 0}, ArchCase{Arch::kQwen35Moe, GgmlType::kF32, 0},
       ArchCase{Arch::kQwen35Moe, GgmlType::kQ5_K, 0}, ArchCase{Arch::kLlama, GgmlType::kF32, 0},
       ArchCase{Arch::kLlama, GgmlType::kF16, 8},
       // glm4moe: Q/K/V biases, sigmoid routing with the selection bias,
       // the ungated shared expert, a dense layer 0; then YaRN and the
       // softmax over the chosen experts (gating 3) on the same layers.
       ArchCase{Arch::kGlm4Moe, GgmlType::kQ8_0, 0}, ArchCase{Arch::kGlm4Moe, GgmlType::kQ4_K, 0, 3, true},
       // gpt-oss: sinks, a sliding window (layer 0), Q/K/V/O biases, the
       // router's and the experts' biases, the clamped SwiGLU, YaRN.
       ArchCase{Arch::kGptOss, GgmlType::kMXFP4, 0}, ArchCase{Arch::kGptOss, GgmlType::kF32, 0},
       // qwen3next: qwen35moe's layers with NEOX RoPE and the value heads in
       // the grouped order (2 per key head here, so the order matters).
       ArchCase{Arch::kQwen3Next, GgmlType::kQ8_0, 0},
       // deepseek2: latent attention (the low-rank query, the cached latent
       // read as keys and values, the per-head attn_k_b / attn_v_b), expert
       // groups with the sigmoid router's bias, two shared experts; then
       // V2-Lite's form (one attn_q, the softmax router) with YaRN.
       ArchCase{Arch::kDeepseek2, GgmlType::kQ8_0, 0},
       ArchCase{Arch::kDeepseek2, GgmlType::kQ4_K, 0, 0, true, true}},
      [](const ArchCase& c) {
        if (c.type == GgmlType::kF32) return false;
        if (c.arch == Arch::kQwen3Moe) return c.type == GgmlType::kQ8_0 || c.type == GgmlType::kF16;
        if (c.arch == Arch::kGlm4Moe) return c.gating == 3;
        // qwen3next differs from qwen35moe (kept) in one index of the
        // delta-net kernel and RoPE's type: the optimized build runs it.
        if (c.arch == Arch::kQwen3Next) return false;
        if (c.arch == Arch::kDeepseek2) return !c.lite;
        return true;
      });
}

INSTANTIATE_TEST_SUITE_P(
    Archs, GpuOpsArchTest, ::testing::ValuesIn(GpuOpsArchCases()),
    [](const ::testing::TestParamInfo<ArchCase>& p) {
      std::string n = std::string(ArchName(p.param.arch)) + "_" + std::string(TypeName(p.param.type)) + "_kv" +
                      std::to_string(p.param.kv_heads) +
                      (p.param.gating ? "_gating" + std::to_string(p.param.gating) : "") + (p.param.yarn ? "_yarn" : "") +
                      (p.param.lite ? "_lite" : "");
      for (char& c : n)
        if (c == '-') c = '_';  // gpt-oss
      return n;
    });

// --- per weight type: the ops that multiply weights ------------------------------

class GpuOpsTypeTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(GpuOpsTypeTest, AttentionExpertsAndHeadMatchTheCpuBackend) {
  const GgmlType t = GetParam();
  Backends b = Make(Arch::kQwen3Moe, t, "qwen3moe-types-" + std::string(TypeName(t)));
  ASSERT_TRUE(b.gpu);
  const Model& m = *b.opened.model;
  const Check products = ProductTolerance(t);
  std::vector<ShapeCase> shapes = {{12, 7, 1}};
  if (testing::TestMatrix() == testing::GpuTestMatrix::kFull) shapes.push_back({300, 1, 1});
  for (const ShapeCase& s : shapes) {
    const std::vector<Pass> passes = Shape(s.prefix, s.n, s.n_seq, m.hp().n_vocab);
    Compare(b, AttentionOp(m, 0), passes, KvType::kF16, 400, DeltaNetMode::kSequential, products, Name(s));
    Compare(b, Op{"MoE", {Act::kH}, Act::kY, [](Backend& be) { return be.MoeFfn(1, Act::kH, Act::kY); }}, passes,
            KvType::kF16, 400, DeltaNetMode::kSequential, products, Name(s));
  }
}

// The output head: every row's logits, and the greedy argmax on the device
// equal to the argmax of those logits.
TEST_P(GpuOpsTypeTest, LogitsAndArgmax) {
  const GgmlType t = GetParam();
  Backends b = Make(Arch::kQwen3Moe, t, "qwen3moe-types-" + std::string(TypeName(t)));
  ASSERT_TRUE(b.gpu);
  const Model& m = *b.opened.model;
  const HParams& hp = m.hp();
  const std::vector<int32_t> prompt = {1, 5, 9, 14, 3, 8, 200, 77, 31};
  ForwardOptions fo;
  fo.all_logits = true;
  std::vector<float> want, got;
  auto st_ref = SequenceState::Create(*b.ref, hp, 32);
  auto st_gpu = SequenceState::Create(*b.gpu, hp, 32);
  ASSERT_TRUE(st_ref.ok() && st_gpu.ok());
  ASSERT_TRUE(Forward(m, *b.ref, *st_ref, prompt, fo, &want).ok());
  ASSERT_TRUE(Forward(m, *b.gpu, *st_gpu, prompt, fo, &got).ok());
  EXPECT_LE(NormalizedError(got, want), FloatWeights(t) ? 1e-4 : 0.1);
  // Greedy: the ids alone, from the device, for every row asked.
  std::vector<int32_t> ids;
  fo.argmax = &ids;
  ASSERT_TRUE(st_gpu->Clear().ok());
  std::vector<float> unused;
  ASSERT_TRUE(Forward(m, *b.gpu, *st_gpu, prompt, fo, &unused).ok());
  ASSERT_EQ(ids.size(), prompt.size());
  for (size_t r = 0; r < prompt.size(); ++r)
    EXPECT_EQ(ids[r], Sampler::Argmax({got.data() + r * hp.n_vocab, hp.n_vocab})) << "row " << r;
}

std::vector<GgmlType> EveryType() {
  std::vector<GgmlType> v;
#define STRATA_TYPE(id, NAME, elems, bytes) v.push_back(static_cast<GgmlType>(id));
  STRATA_GPU_FLOAT_TYPES(STRATA_TYPE)
  STRATA_GPU_QUANT_TYPES(STRATA_TYPE)
#undef STRATA_TYPE
  if (testing::TestMatrix() != testing::GpuTestMatrix::kFull) v = {GgmlType::kF16, GgmlType::kQ4_K};
  return v;
}

INSTANTIATE_TEST_SUITE_P(Types, GpuOpsTypeTest, ::testing::ValuesIn(EveryType()),
                         [](const ::testing::TestParamInfo<GgmlType>& p) { return std::string(TypeName(p.param)); });

}  // namespace
}  // namespace strata
