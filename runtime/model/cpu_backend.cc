// The CPU backend's ops (backend.h): the float code of the forward pass on
// host memory, matrix products through the backend's matrix engine
// (FastBackend or ReferenceBackend). The gated delta-net op is delta_net.cc;
// buffers, transfers and the device tier's op are cpu_backend_memory.cc.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <vector>

#include "runtime/base/checked_alloc.h"
#include "runtime/base/fault_injection.h"
#include "runtime/base/platform.h"
#include "runtime/base/strings.h"
#include "runtime/kernels/swiglu.h"
#include "runtime/model/backend.h"
#include "runtime/model/forward.h"
#include "runtime/model/ops.h"
#include "runtime/model/sampler.h"
#include "runtime/quant/dequantize.h"
#include "runtime/quant/quantize.h"

namespace strata {

using R = TensorRole;

// delta_net.cc: token t uses the recurrent state of states[t].
Status GatedDeltaNet(const Model& model, CpuBackend& backend, Workspace& ws, DeltaNetMode mode,
                     std::span<SequenceState* const> states, int32_t il, int64_t n, const float* h, float* out);
uint64_t GatedDeltaNetBytes(const HParams& hp, const PassShape& shape);

// --- the matrix engine's defaults ---------------------------------------------

void CpuBackend::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn) { fn(0, n); }

void CpuBackend::MatMulBatch(std::span<const MatMulJob> jobs) {
  std::vector<float> gathered;  // the plain path: a job with a row list is gathered first
  for (const MatMulJob& j : jobs) {
    if (j.n <= 0) continue;
    const float* x = j.x;
    if (j.rows) {
      const auto cols = static_cast<size_t>(j.w.cols);
      gathered.resize(static_cast<size_t>(j.n) * cols);
      for (int64_t t = 0; t < j.n; ++t)
        std::memcpy(&gathered[static_cast<size_t>(t) * cols], j.x + j.rows[t] * j.w.cols, cols * sizeof(float));
      x = gathered.data();
    }
    MatMul(j.w, x, j.n, j.y);
  }
}

uint64_t CpuBackend::WorkspaceBytes(const Model& model, const PassShape& shape) const {
  return ForwardWorkspaceBytes(model, shape);
}

// --- the pass ---------------------------------------------------------------

struct CpuBackend::PassState {
  const Model* m = nullptr;
  const HParams* hp = nullptr;
  std::span<const SequenceBatch> batch;
  const ForwardOptions* opt = nullptr;
  Workspace* ws = nullptr;
  uint64_t ws_mark = 0;
  int64_t n = 0, max_keys = 1, n_rows = 0;
  int32_t* seq = nullptr;           // n: the sequence of token t
  int64_t* pos = nullptr;           // n: its position
  SequenceState** states = nullptr; // n: its state
  int64_t* rows = nullptr;          // n_rows: the tokens whose logits were asked for
  int32_t* ids = nullptr;           // n: the token ids (uploaded)
  float* act[3] = {nullptr, nullptr, nullptr};  // kX, kH, kY: n x n_embd
  BackendBuffer* ws_buf = nullptr;

  SequenceState& St(int64_t t) const { return *states[t]; }
};

// The pass state is made with the backend: a pass allocates nothing.
CpuBackend::CpuBackend() : pass_(std::make_unique<PassState>()) {}
CpuBackend::~CpuBackend() = default;

float* CpuBackend::ActPtr(Act a) const { return pass_->act[static_cast<size_t>(a)]; }

Status CpuBackend::BeginPass(const PassDesc& d) {
  if (!d.workspace || d.workspace->backend() != this) return Internal("BeginPass: a workspace of another backend");
  if (in_pass_.exchange(true))
    return Internal("BeginPass: a pass is already running on this backend (one pass at a time)");
  Status st = StartPass(d);
  if (!st.ok()) EndPass();
  return st;
}

Status CpuBackend::StartPass(const PassDesc& d) {
  PassState& p = *pass_;
  p = PassState{};
  p.m = d.model;
  p.hp = &d.model->hp();
  p.batch = d.batch;
  p.opt = d.options;
  p.ws = d.workspace;
  p.ws_mark = d.workspace->mark();
  p.n = d.n;
  p.max_keys = d.max_keys;
  p.n_rows = d.n_rows;
  const int64_t n = d.n, E = p.hp->n_embd;
  OpScope scope(*this);
  Workspace& ws = *p.ws;
  p.seq = ws.Take<int32_t>(n);
  p.pos = ws.Take<int64_t>(n);
  p.states = ws.Take<SequenceState*>(n);
  p.rows = ws.Take<int64_t>(n);
  p.ids = ws.Take<int32_t>(n);
  for (float*& a : p.act) a = ws.Take<float>(n * E);
  if (!p.act[2]) return ws.Exhausted("forward pass");
  {
    int64_t t = 0, r = 0;
    for (size_t s = 0; s < d.batch.size(); ++s) {
      const SequenceBatch& sb = d.batch[s];
      const int64_t m = static_cast<int64_t>(sb.tokens.size());
      for (int64_t i = 0; i < m; ++i, ++t) {
        p.seq[t] = static_cast<int32_t>(s);
        p.pos[t] = sb.state->n_past + i;
        p.states[t] = sb.state;
        if (sb.all_logits || i == m - 1) p.rows[r++] = t;
      }
      // The token ids cross the seam (counted as an upload).
      std::memcpy(p.ids + (t - m), sb.tokens.data(), static_cast<size_t>(m) * sizeof(int32_t));
      transfers_.up_bytes += static_cast<uint64_t>(m) * sizeof(int32_t);
      ++transfers_.up_calls;
    }
    if (r != d.n_rows) return Internal("BeginPass: the logits rows do not match the batch");
  }
  // Token embeddings (a row lookup dequantizes exactly, as ggml_get_rows).
  const TensorView& emb = *W(d.embedding ? d.embedding : d.model->Get(R::kTokenEmbd));
  float* x = p.act[0];
  for (int64_t t = 0; t < n; ++t) DequantizeRowUnchecked(emb.type, emb.Row(static_cast<uint64_t>(p.ids[t])), &x[t * E], E);
  return Status::Ok();
}

void CpuBackend::EndPass() {
  if (pass_->ws) pass_->ws->Release(pass_->ws_mark);
  *pass_ = PassState{};
  in_pass_.store(false);
}

Status CpuBackend::RmsNorm(Act src, const TensorView* weight, Act dst) {
  OpScope scope(*this);
  const PassState& p = *pass_;
  const int64_t E = p.hp->n_embd;
  const float* w = Model::F32(W(weight));
  const float* x = ActPtr(src);
  float* h = ActPtr(dst);
  const float eps = p.hp->rms_eps;
  auto rows = [x, w, h, E, eps](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) ops::RmsNormTo(&x[t * E], w, E, eps, &h[t * E]);
  };
  ParallelFor(p.n, [&rows](int64_t b, int64_t e) { rows(b, e); });  // one reference: no allocation
  return Status::Ok();
}

Status CpuBackend::Add(Act dst, Act src) {
  OpScope scope(*this);
  float* x = ActPtr(dst);
  const float* y = ActPtr(src);
  const size_t xn = static_cast<size_t>(pass_->n * pass_->hp->n_embd);
  for (size_t i = 0; i < xn; ++i) x[i] += y[i];
  return Status::Ok();
}

// --- attention ---------------------------------------------------------------
// Plain (Mixer::kAttention) and gated (Mixer::kGatedAttention: attn_q holds
// [q | gate] per head, output multiplied by sigmoid(gate)) multi-head
// attention with GQA, optional per-head QK RMSNorm, RoPE on the first n_rot
// dims, and the KV cache.
namespace {

// The blocked kernel (kernels::AttnBlockFn) takes query rows in blocks of
// about kAttnRows: consecutive tokens of one sequence x a GQA group.
constexpr int64_t kAttnRows = 32;
int64_t AttnGroup(const HParams& hp) { return std::max<int64_t>(1, hp.n_head / std::max<uint32_t>(hp.n_head_kv, 1)); }
int64_t AttnTokensPerBlock(const HParams& hp) { return std::max<int64_t>(1, kAttnRows / AttnGroup(hp)); }
// Query rows of one job at most: a block of tokens x the group.
int64_t AttnRowsPerJob(const HParams& hp) { return AttnTokensPerBlock(hp) * AttnGroup(hp); }
// Floats of scratch per task: a scores row of max_keys (the row-by-row loops)
// or the blocked kernel's scratch, its row pointers and key counts, whichever
// is larger: both paths take the same, so the workspace is one size.
int64_t AttnTaskFloats(const HParams& hp, int64_t max_keys) {
  const int64_t rows = AttnRowsPerJob(hp);
  const int64_t blocked = kernels::AttnBlockScratchFloats(rows, hp.head_dim_k, hp.head_dim_v) +
                          rows * static_cast<int64_t>((2 * sizeof(float*) + 2 * sizeof(int64_t) + sizeof(float)) /
                                                      sizeof(float) + 1);
  return (std::max(max_keys, blocked) + 15) / 16 * 16;  // each task's scratch on a cache line
}

// CpuBackend::LatentAttention's takes, in its order.
uint64_t LatentAttentionBytes(const HParams& hp, const PassShape& s) {
  const uint64_t n = static_cast<uint64_t>(s.tokens), H = hp.n_head, Dk = hp.head_dim_k, Dv = hp.head_dim_v;
  const uint64_t L = hp.kv_lora_rank, nope = hp.MlaNope(), Vm = hp.head_dim_v_mla;
  return TakeBytes<float>(n * H * hp.head_dim_k_mla) + (hp.q_lora_rank ? TakeBytes<float>(n * hp.q_lora_rank) : 0) +
         TakeBytes<float>(n * Dk) + TakeBytes<float>(n * H * Dk) + TakeBytes<float>(H * n * std::max(nope, L)) +
         TakeBytes<float>(H * n * std::max(L, Vm)) + TakeBytes<float>(n * H * Dv) + TakeBytes<float>(n * H * Vm) +
         TakeBytes<float>(n * hp.n_rot) + TakeBytes<CpuBackend::MatMulJob>(H) + TakeBytes<int64_t>(n + 1) +
         TakeBytes<float>(static_cast<uint64_t>(ScratchTasks(s.tokens * hp.n_head, s.threads)) *
                          static_cast<uint64_t>(AttnTaskFloats(hp, s.max_keys)));
}

uint64_t AttentionBytes(const HParams& hp, Mixer mixer, const PassShape& s) {
  if (mixer == Mixer::kLatentAttention) return LatentAttentionBytes(hp, s);
  const uint64_t n = static_cast<uint64_t>(s.tokens), H = hp.n_head, Hkv = hp.n_head_kv;
  const uint64_t q_width = (mixer == Mixer::kGatedAttention ? 2 : 1) * H * hp.head_dim_k;
  return TakeBytes<float>(n * q_width) + TakeBytes<float>(n * Hkv * hp.head_dim_k) +
         TakeBytes<float>(n * Hkv * hp.head_dim_v) + TakeBytes<float>(n * H * hp.head_dim_v) +
         TakeBytes<float>(n * hp.n_rot) + TakeBytes<int64_t>(n + 1) +
         TakeBytes<float>(static_cast<uint64_t>(ScratchTasks(s.tokens * H, s.threads)) *
                          static_cast<uint64_t>(AttnTaskFloats(hp, s.max_keys)));
}

uint64_t SwiGluBytes(uint64_t rows, uint64_t ff) { return 2 * TakeBytes<float>(rows * ff); }

uint64_t MoeBytes(const HParams& hp, uint64_t n, bool selection_bias) {
  const uint64_t NE = hp.n_expert, K = hp.n_expert_used, E = hp.n_embd;
  const uint64_t routing = TakeBytes<float>(n * NE) + TakeBytes<int32_t>(n * K) + TakeBytes<float>(n * K) +
                           TakeBytes<float>(K) + TakeBytes<int64_t>(NE + 1) + TakeBytes<int64_t>(NE) +
                           2 * TakeBytes<int64_t>(n * K) + TakeBytes<float>(n * K * E) +
                           (selection_bias || hp.n_expert_groups > 1 ? TakeBytes<float>(n * NE) : 0);
  // The executor's path: one expert's rows at a time. The batched path: the
  // token of each entry, gate and up of every entry, the jobs.
  const uint64_t executor = TakeBytes<float>(n * E);
  const uint64_t batched = TakeBytes<int64_t>(n * K) + 2 * TakeBytes<float>(n * K * hp.n_ff_exp) +
                           TakeBytes<CpuBackend::MatMulJob>(2 * NE);
  return routing + std::max(executor, batched);
}

uint64_t SharedExpertBytes(const HParams& hp, uint64_t n) {
  return TakeBytes<float>(n * hp.n_embd) + SwiGluBytes(n, hp.n_ff_shexp);
}

// Stores n floats (one position's row of every KV head) as `t` at dst. F16:
// round-to-nearest-even; Q8_0: ggml-cpu's x86 rule (quantize.h), which is
// how llama.cpp on x86 writes a Q8_0 cache; blocks never straddle heads
// (Q8_0 needs head dimensions that are multiples of 32).
void StoreKvRow(KvType t, const float* src, int64_t n, uint8_t* dst) {
  switch (t) {
    case KvType::kF16: Fp32RowToFp16Unchecked(src, dst, n); return;
    case KvType::kQ8_0: QuantizeRowQ8_0Unchecked(Q8_0Rule::kGgmlX86Simd, src, dst, n); return;
    case KvType::kF32: break;
  }
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

// SwiGLU's gate over nf values, g = silu(g) * u, on the pool from 64 Ki
// values (a value's bits do not depend on the split: kernels/swiglu.h).
void SwiGluGate(CpuBackend& be, float* g, const float* u, int64_t nf) {
  const kernels::SwiGluFn gate = kernels::SwiGluFor(be.float_isa());
  auto rows = [gate, g, u](int64_t b, int64_t e) { gate(g + b, u + b, e - b); };
  if (nf >= 64 * 1024) {
    be.ParallelFor(nf, [&rows](int64_t b, int64_t e) { rows(b, e); });  // one reference: no allocation
  } else {
    rows(0, nf);
  }
}

// The experts' activation over n rows of ff values: SwiGLU's gate, or with
// alpha set the clamped SwiGLU (gpt-oss), as ggml's swiglu_oai computes it.
void ExpertGate(CpuBackend& be, float* g, const float* u, int64_t nf, float alpha, float limit) {
  if (alpha == 0.0f) return SwiGluGate(be, g, u, nf);
  auto rows = [g, u, alpha, limit](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const float x = std::min(g[i], limit);
      const float y = std::clamp(u[i], -limit, limit);
      g[i] = x / (1.0f + std::exp(alpha * -x)) * (y + 1.0f);
    }
  };
  if (nf >= 64 * 1024) be.ParallelFor(nf, [&rows](int64_t b, int64_t e) { rows(b, e); });
  else rows(0, nf);
}

// SwiGLU: down(silu(gate x) * up x) for the rows of x. `scratch`: 2 * rows *
// gate.rows floats, or null to take them from the workspace.
Status SwiGlu(CpuBackend& be, Workspace& ws, const WeightMatrix& gate, const WeightMatrix& up,
              const WeightMatrix& down, const float* x, int64_t rows, float* out, float* scratch = nullptr) {
  WorkspaceScope scope(ws);
  float* g = scratch ? scratch : ws.Take<float>(rows * gate.rows);
  float* u = scratch ? scratch + rows * gate.rows : ws.Take<float>(rows * up.rows);
  if (!u) return ws.Exhausted("SwiGLU");
  be.MatMul(gate, x, rows, g);
  be.MatMul(up, x, rows, u);
  SwiGluGate(be, g, u, rows * gate.rows);
  be.MatMul(down, g, rows, out);
  return Status::Ok();
}

}  // namespace

Status CpuBackend::Attention(int32_t il, Mixer mixer, Act in, Act out_act) {
  OpScope scope_op(*this);
  if (mixer == Mixer::kLatentAttention) return LatentAttention(il, in, out_act);
  const PassState& p = *pass_;
  const HParams& hp = *p.hp;
  const Model& m = *p.m;
  Workspace& ws = *p.ws;
  const float* h = ActPtr(in);
  float* out = ActPtr(out_act);
  const int64_t n = p.n, H = hp.n_head, Hkv = hp.n_head_kv, Dk = hp.head_dim_k, Dv = hp.head_dim_v;
  const bool gated = mixer == Mixer::kGatedAttention;
  const int64_t q_width = (gated ? 2 : 1) * H * Dk;
  WorkspaceScope scope(ws);
  float* qfull = ws.Take<float>(n * q_width);
  float* k = ws.Take<float>(n * Hkv * Dk);
  float* v = ws.Take<float>(n * Hkv * Dv);
  float* attn = ws.Take<float>(n * H * Dv);
  float* angles = ws.Take<float>(n * hp.n_rot);  // each token's RoPE angles (ops::RopeAngles)
  const int64_t jobs = n * H, tasks = ScratchTasks(jobs, threads());
  const int64_t task_floats = AttnTaskFloats(hp, p.max_keys);
  int64_t* block_start = ws.Take<int64_t>(n + 1);
  float* scores_all = ws.Take<float>(tasks * task_floats);
  if (!scores_all) return ws.Exhausted("attention");
  MatMul(Matrix(*W(m, il, R::kAttnQ)), h, n, qfull);
  MatMul(Matrix(*W(m, il, R::kAttnK)), h, n, k);
  MatMul(Matrix(*W(m, il, R::kAttnV)), h, n, v);
  // Q/K/V biases (glm4moe), before the norms.
  ops::AddBias(qfull, Model::F32(W(m, il, R::kAttnQBias)), n, q_width);
  ops::AddBias(k, Model::F32(W(m, il, R::kAttnKBias)), n, Hkv * Dk);
  ops::AddBias(v, Model::F32(W(m, il, R::kAttnVBias)), n, Hkv * Dv);

  const float* q_norm = Model::F32(W(m, il, R::kAttnQNorm));
  const float* k_norm = Model::F32(W(m, il, R::kAttnKNorm));
  const ops::RopeParams rope = ops::RopeParamsFor(hp);
  auto rotate = [&](float* x, const float* cs) {
    if (hp.rope_type == RopeType::kNorm) ops::RopeNorm(x, hp.n_rot, cs);
    else ops::RopeNeox(x, hp.n_rot, cs);  // NEOX and text-only IMRoPE
  };
  // q[t][h] and gate[t][h] views into qfull.
  auto q_at = [&](int64_t t, int64_t hh) { return qfull + t * q_width + hh * (gated ? 2 * Dk : Dk); };
  // Per token: QK norms, RoPE (the angles once for all its heads), and the
  // append to its sequence's cache, stored as its KV type. Tokens write
  // disjoint rows, so they run on the pool.
  auto prepare = [&](int64_t t_begin, int64_t t_end) {
    for (int64_t t = t_begin; t < t_end; ++t) {
      float* cs = angles + t * hp.n_rot;
      ops::RopeAngles(hp.n_rot, p.pos[t], rope, cs);
      for (int64_t hh = 0; hh < H; ++hh) {
        float* q = q_at(t, hh);
        if (q_norm) ops::RmsNorm(q, q_norm, Dk, hp.rms_eps);
        rotate(q, cs);
      }
      for (int64_t hh = 0; hh < Hkv; ++hh) {
        float* kk = k + (t * Hkv + hh) * Dk;
        if (k_norm) ops::RmsNorm(kk, k_norm, Dk, hp.rms_eps);
        rotate(kk, cs);
      }
      SequenceState& st = p.St(t);
      const int64_t k_row = Hkv * KvHeadBytes(st.kv_type, Dk), v_row = Hkv * KvHeadBytes(st.kv_type, Dv);
      // A sliding window's ring stores each position twice (sequence_state.h).
      const bool ring = st.layers[static_cast<size_t>(il)].ring;
      const int64_t row = ring ? st.RingRow(p.pos[t]) : p.pos[t];
      for (int copy = 0; copy < (ring ? 2 : 1); ++copy) {
        const int64_t at = row + copy * st.swa_ring;
        StoreKvRow(st.kv_type, &k[t * Hkv * Dk], Hkv * Dk, StateK(st, il) + at * k_row);
        StoreKvRow(st.kv_type, &v[t * Hkv * Dv], Hkv * Dv, StateV(st, il) + at * v_row);
      }
    }
  };
  ParallelFor(n, [&prepare](int64_t b, int64_t e) { prepare(b, e); });  // one reference: no allocation
  CachedAttention c;
  c.q = qfull;
  c.q_width = q_width;
  c.q_head_stride = gated ? 2 * Dk : Dk;
  c.gated = gated;
  c.scale = hp.attn_scale != 0.0f ? hp.attn_scale : 1.0f / std::sqrt(static_cast<float>(Dk));
  c.attn = attn;
  c.scores_all = scores_all;
  c.tasks = tasks;
  c.task_floats = task_floats;
  c.block_start = block_start;
  AttendCached(il, c);
  MatMul(Matrix(*W(m, il, R::kAttnOutput)), attn, n, out);
  ops::AddBias(out, Model::F32(W(m, il, R::kAttnOutputBias)), n, hp.n_embd);  // gpt-oss
  return Status::Ok();
}

// Attention over the cached keys of each token's sequence, as the token's
// position allows (causal, the sliding window, the sinks): c.attn[t][h] =
// softmax(scale q . K) V for every token t and query head h, on the pool.
void CpuBackend::AttendCached(int32_t il, const CachedAttention& c) {
  const PassState& p = *pass_;
  const HParams& hp = *p.hp;
  const int64_t n = p.n, H = hp.n_head, Hkv = hp.n_head_kv, Dk = hp.head_dim_k, Dv = hp.head_dim_v;
  const int64_t jobs = n * H;
  const int64_t group = H / Hkv;
  const kernels::AttnKernels& ak = attention();
  // gpt-oss: a sink logit per head, and a sliding window on some layers
  // (a token sees its last n_swa positions).
  const float* sinks = Model::F32(W(*p.m, il, R::kAttnSinks));
  const bool swa = hp.IsSwaLayer(static_cast<uint32_t>(il));
  auto first_key = [&](int64_t pos) { return swa ? std::max<int64_t>(0, pos - hp.n_swa + 1) : int64_t{0}; };
  auto apply_gate = [&](const float* q, float* o) {
    const float* gate = q + Dk;
    for (int64_t d = 0; d < Dv; ++d) o[d] *= ops::Sigmoid(gate[d]);
  };
  if (ak.isa == IsaLevel::kScalar) {
    // The reference: row by row, one scores row per task (tasks run on one
    // thread at a time).
    auto tasks_body = [&](int64_t task_begin, int64_t task_end) {
      for (int64_t task = task_begin; task < task_end; ++task) {
        float* scores = c.scores_all + task * c.task_floats;
        for (int64_t job = jobs * task / c.tasks; job < jobs * (task + 1) / c.tasks; ++job) {
          const int64_t t = job / H, hh = job % H, kvh = hh / group;
          const int64_t k0 = first_key(p.pos[t]);
          const int64_t n_keys = p.pos[t] + 1 - k0;  // causal, within the window
          const SequenceState& st = p.St(t);
          const int64_t row0 = k0 - (st.layers[static_cast<size_t>(il)].ring ? st.SwaKeyOffset(k0) : 0);
          const KvType kt = st.kv_type;
          const int64_t kh = KvHeadBytes(kt, Dk), vh = c.v_in_k ? kh : KvHeadBytes(kt, Dv);
          const float* q = c.q_at(t, hh);
          kernels::AttnScoresRefKv(q, StateK(st, il) + row0 * Hkv * kh + kvh * kh, Hkv * kh, kt, n_keys, Dk, c.scale,
                                   scores);
          if (sinks) kernels::SoftmaxWithSink(scores, n_keys, &sinks[hh]);
          else ops::Softmax(scores, n_keys);
          float* o = c.attn + (t * H + hh) * Dv;
          std::fill(o, o + Dv, 0.0f);
          kernels::AttnMixRefKv(scores, (c.v_in_k ? StateK(st, il) : StateV(st, il)) + row0 * Hkv * vh + kvh * vh, Hkv * vh, kt, n_keys, Dv, o);
          if (c.gated) apply_gate(q, o);
        }
      }
    };
    // A lambda of one reference: std::function holds it without allocating.
    ParallelFor(c.tasks, [&tasks_body](int64_t b, int64_t e) { tasks_body(b, e); });
  } else {
    // Blocked: consecutive tokens of one sequence (up to AttnTokensPerBlock)
    // x the query heads of one KV head form a job, so each K and V block is
    // read once for all of them (kernels::AttnBlockFn). Task i takes jobs i,
    // i + tasks, ...: the causal blocks' growing lengths spread evenly.
    const int64_t per_block = AttnTokensPerBlock(hp);
    int64_t n_blocks = 0;
    for (int64_t t = 0; t < n;) {
      c.block_start[n_blocks++] = t;
      const SequenceState* st = p.states[t];
      int64_t e = t + 1;
      while (e < n && e - t < per_block && p.states[e] == st) ++e;
      t = e;
    }
    c.block_start[n_blocks] = n;
    const int64_t block_jobs = n_blocks * Hkv;
    const int64_t rows_max = AttnRowsPerJob(hp);
    auto tasks_body = [&](int64_t task_begin, int64_t task_end) {
      for (int64_t task = task_begin; task < task_end; ++task) {
        // The task's scratch (AttnTaskFloats): the kernel's, then the row
        // pointers and key counts (8 bytes, 2 floats each).
        float* kernel_scratch = c.scores_all + task * c.task_floats;
        float* tables = kernel_scratch + kernels::AttnBlockScratchFloats(rows_max, Dk, Dv);
        auto* q_rows = reinterpret_cast<const float**>(tables);
        auto* o_rows = reinterpret_cast<float**>(tables + 2 * rows_max);
        auto* n_keys = reinterpret_cast<int64_t*>(tables + 4 * rows_max);
        auto* k_first = reinterpret_cast<int64_t*>(tables + 6 * rows_max);
        float* row_sink = tables + 8 * rows_max;
        for (int64_t job = task; job < block_jobs; job += c.tasks) {
          const int64_t b = job / Hkv, kvh = job % Hkv;
          const SequenceState& st = p.St(c.block_start[b]);
          // A ring: key j at row j - off, for the keys the block's rows see
          // (the block's tokens are consecutive positions, the first sees
          // the lowest key; off is a multiple of the key block).
          const int64_t off =
              st.layers[static_cast<size_t>(il)].ring ? st.SwaKeyOffset(first_key(p.pos[c.block_start[b]])) : 0;
          int64_t rows = 0;
          for (int64_t t = c.block_start[b]; t < c.block_start[b + 1]; ++t)
            for (int64_t g = 0; g < group; ++g, ++rows) {
              const int64_t hh = kvh * group + g;
              q_rows[rows] = c.q_at(t, hh);
              o_rows[rows] = c.attn + (t * H + hh) * Dv;
              n_keys[rows] = p.pos[t] + 1 - off;  // causal
              k_first[rows] = first_key(p.pos[t]) - off;
              row_sink[rows] = sinks ? sinks[hh] : 0.0f;
            }
          const int64_t kh = KvHeadBytes(st.kv_type, Dk), vh = c.v_in_k ? kh : KvHeadBytes(st.kv_type, Dv);
          kernels::AttnBlockArgs a;
          a.q = q_rows;
          a.n_keys = n_keys;
          a.o = o_rows;
          a.rows = rows;
          a.K = StateK(st, il) + kvh * kh;
          a.k_stride = Hkv * kh;
          a.V = (c.v_in_k ? StateK(st, il) : StateV(st, il)) + kvh * vh;
          a.v_stride = Hkv * vh;
          a.kv = st.kv_type;
          a.dk = Dk;
          a.dv = Dv;
          a.scale = c.scale;
          a.scratch = kernel_scratch;
          a.first_key = swa ? k_first : nullptr;
          a.sink = sinks ? row_sink : nullptr;
          ak.block(a);
          if (c.gated)
            for (int64_t r = 0; r < rows; ++r) apply_gate(q_rows[r], o_rows[r]);
        }
      }
    };
    ParallelFor(c.tasks, [&tasks_body](int64_t b, int64_t e) { tasks_body(b, e); });
  }
}

// deepseek2's multi-head latent attention, absorbed (Mixer::kLatentAttention,
// arch_spec.h): the queries and the cached rows, each head's nope part
// through attn_k_b into the latent, multi-query attention over the rows
// (values: their latent part), each head's output through attn_v_b, then
// attn_output. The per-head products run as one batch of every head.
Status CpuBackend::LatentAttention(int32_t il, Act in, Act out_act) {
  const PassState& p = *pass_;
  const HParams& hp = *p.hp;
  const Model& m = *p.m;
  Workspace& ws = *p.ws;
  const float* h = ActPtr(in);
  float* out = ActPtr(out_act);
  // Dk: a cached row (latent, then the RoPE part); Dq: a query head before
  // absorption (nope, then the RoPE part).
  const int64_t n = p.n, H = hp.n_head, Dk = hp.head_dim_k, Dv = hp.head_dim_v, rot = hp.n_rot;
  const int64_t L = hp.kv_lora_rank, Dq = hp.head_dim_k_mla, nope = hp.MlaNope(), Vm = hp.head_dim_v_mla;
  WorkspaceScope scope(ws);
  float* q = ws.Take<float>(n * H * Dq);
  float* qa = hp.q_lora_rank ? ws.Take<float>(n * hp.q_lora_rank) : nullptr;
  float* kv = ws.Take<float>(n * Dk);
  float* qcat = ws.Take<float>(n * H * Dk);
  float* head_in = ws.Take<float>(H * n * std::max(nope, L));  // the per-head products' rows, head by head
  float* head_out = ws.Take<float>(H * n * std::max(L, Vm));
  float* attn = ws.Take<float>(n * H * Dv);
  float* vout = ws.Take<float>(n * H * Vm);
  float* angles = ws.Take<float>(n * rot);
  MatMulJob* jobs = ws.Take<MatMulJob>(H);
  const int64_t tasks = ScratchTasks(n * H, threads());
  const int64_t task_floats = AttnTaskFloats(hp, p.max_keys);
  int64_t* block_start = ws.Take<int64_t>(n + 1);
  float* scores_all = ws.Take<float>(tasks * task_floats);
  if (!scores_all) return ws.Exhausted("latent attention");
  if (qa) {
    MatMul(Matrix(*W(m, il, R::kAttnQA)), h, n, qa);
    const float* qa_norm = Model::F32(W(m, il, R::kAttnQANorm));
    for (int64_t t = 0; t < n; ++t) ops::RmsNorm(qa + t * hp.q_lora_rank, qa_norm, hp.q_lora_rank, hp.rms_eps);
    MatMul(Matrix(*W(m, il, R::kAttnQB)), qa, n, q);
  } else {
    MatMul(Matrix(*W(m, il, R::kAttnQ)), h, n, q);
  }
  MatMul(Matrix(*W(m, il, R::kAttnKvAMqa)), h, n, kv);
  const float* kv_norm = Model::F32(W(m, il, R::kAttnKvANorm));
  const ops::RopeParams rope = ops::RopeParamsFor(hp);
  auto rotate = [&](float* x, const float* cs) {
    if (hp.rope_type == RopeType::kNorm) ops::RopeNorm(x, rot, cs);
    else ops::RopeNeox(x, rot, cs);
  };
  // Per token: the latent's norm, RoPE of the key part and every query
  // head's, the row appended to the cache; the queries' RoPE parts into
  // qcat, their nope parts gathered head by head for attn_k_b.
  auto prepare = [&](int64_t t_begin, int64_t t_end) {
    for (int64_t t = t_begin; t < t_end; ++t) {
      float* cs = angles + t * rot;
      ops::RopeAngles(rot, p.pos[t], rope, cs);
      float* row = kv + t * Dk;
      ops::RmsNorm(row, kv_norm, L, hp.rms_eps);
      rotate(row + L, cs);
      for (int64_t hh = 0; hh < H; ++hh) {
        float* qh = q + (t * H + hh) * Dq;
        rotate(qh + nope, cs);
        std::copy(qh + nope, qh + Dq, qcat + (t * H + hh) * Dk + L);
        std::copy(qh, qh + nope, head_in + (hh * n + t) * nope);
      }
      SequenceState& st = p.St(t);
      StoreKvRow(st.kv_type, row, Dk, StateK(st, il) + p.pos[t] * KvHeadBytes(st.kv_type, Dk));
    }
  };
  ParallelFor(n, [&prepare](int64_t b, int64_t e) { prepare(b, e); });  // one reference: no allocation
  // Each head's product by its own matrix of `w` (one MatMulBatch of every
  // head: head_in[h] is the head's n rows of in_w), each token's out_w
  // results then scattered to dst + (t * H + h) * dst_stride. (Each body is
  // a named lambda behind a lambda of one reference, which std::function
  // holds without allocating: a pass allocates nothing.)
  auto per_head = [&](const TensorView& w, int64_t in_w, int64_t out_w, float* dst, int64_t dst_stride) {
    for (int64_t hh = 0; hh < H; ++hh)
      jobs[hh] = {ExpertMatrix(w, static_cast<uint32_t>(hh)), head_in + hh * n * in_w, nullptr, n,
                  head_out + hh * n * out_w};
    MatMulBatch({jobs, static_cast<size_t>(H)});
    auto scatter = [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t)
        for (int64_t hh = 0; hh < H; ++hh)
          std::copy_n(head_out + (hh * n + t) * out_w, out_w, dst + (t * H + hh) * dst_stride);
    };
    ParallelFor(n, [&scatter](int64_t b, int64_t e) { scatter(b, e); });
  };
  // Each head's absorbed query: attn_k_b's head (L rows of nope) times its
  // nope part, into the head's first L floats of qcat.
  per_head(*W(m, il, R::kAttnKB), nope, L, qcat, Dk);
  CachedAttention c;
  c.q = qcat;
  c.q_width = H * Dk;
  c.q_head_stride = Dk;
  c.v_in_k = true;
  c.scale = ops::LatentAttentionScale(hp);
  c.attn = attn;
  c.scores_all = scores_all;
  c.tasks = tasks;
  c.task_floats = task_floats;
  c.block_start = block_start;
  AttendCached(il, c);
  // Each head's output (L latent values) through its attn_v_b (Vm rows of L).
  auto by_head = [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t)
      for (int64_t hh = 0; hh < H; ++hh) std::copy_n(attn + (t * H + hh) * Dv, L, head_in + (hh * n + t) * L);
  };
  ParallelFor(n, [&by_head](int64_t b, int64_t e) { by_head(b, e); });
  per_head(*W(m, il, R::kAttnVB), L, Vm, vout, Vm);
  MatMul(Matrix(*W(m, il, R::kAttnOutput)), vout, n, out);
  return Status::Ok();
}

Status CpuBackend::GatedDeltaNet(int32_t il, Act in, Act out) {
  OpScope scope(*this);
  const PassState& p = *pass_;
  return strata::GatedDeltaNet(*p.m, *this, *p.ws, p.opt->delta_net, {p.states, static_cast<size_t>(p.n)}, il, p.n,
                               ActPtr(in), ActPtr(out));
}

// --- feed-forward ------------------------------------------------------------

Status CpuBackend::DenseFfn(int32_t il, Act in, Act out) {
  OpScope scope(*this);
  const PassState& p = *pass_;
  const Model& m = *p.m;
  return SwiGlu(*this, *p.ws, Matrix(*W(m, il, R::kFfnGate)), Matrix(*W(m, il, R::kFfnUp)),
                Matrix(*W(m, il, R::kFfnDown)), ActPtr(in), p.n, ActPtr(out));
}

// Routed experts: softmax over the router logits, top-k, renormalized
// weights, each expert's SwiGLU on the tokens routed to it (a batch per
// expert), summed in routing order as llama.cpp does. On the backend's own
// weights the selected experts run as two batches (MatMulBatch): the gate and
// up products of all of them, SiLU, then all their downs; the expert executor
// (tiered experts) takes one expert at a time.
Status CpuBackend::MoeFfn(int32_t il, Act in, Act out_act) {
  OpScope scope_op(*this);
  const PassState& p = *pass_;
  const HParams& hp = *p.hp;
  Workspace& ws = *p.ws;
  const float* h = ActPtr(in);
  float* out = ActPtr(out_act);
  const int64_t n = p.n, E = hp.n_embd, NE = hp.n_expert, K = hp.n_expert_used, F = hp.n_ff_exp;
  WorkspaceScope scope(ws);
  float* probs = ws.Take<float>(n * NE);
  int32_t* sel = ws.Take<int32_t>(n * K);
  float* wts = ws.Take<float>(n * K);
  float* chosen = ws.Take<float>(K);
  int64_t* first = ws.Take<int64_t>(NE + 1);  // expert e's entries: list[first[e] .. first[e+1])
  int64_t* fill = ws.Take<int64_t>(NE);
  int64_t* list = ws.Take<int64_t>(n * K);    // entries t*K + k, grouped by expert, in order
  int64_t* where = ws.Take<int64_t>(n * K);   // entry t*K + k's place in list
  float* results = ws.Take<float>(n * K * E);  // by place in list
  if (!results) return ws.Exhausted("MoE routing");
  MatMul(Matrix(*W(*p.m, il, R::kFfnGateInp)), h, n, probs);
  ops::AddBias(probs, Model::F32(W(*p.m, il, R::kFfnGateInpBias)), n, NE);  // gpt-oss's router bias
  // Each token's routing on the pool (tokens are independent), then the
  // observer, in token order.
  const float* bias = Model::F32(W(*p.m, il, R::kFfnExpProbsB));  // the selection bias, or null
  // The selection scores, where they differ from the probabilities: plus
  // the bias, and without the groups not kept (ops::MaskExpertGroups).
  const bool selection = bias || hp.n_expert_groups > 1;
  float* biased = selection ? ws.Take<float>(n * NE) : nullptr;
  if (selection && !biased) return ws.Exhausted("MoE routing");
  auto route = [&](int64_t t_begin, int64_t t_end) {
    for (int64_t t = t_begin; t < t_end; ++t) {
      float* pr = probs + t * NE;
      ops::RouterProbs(hp.expert_gating, pr, NE);
      int32_t* s = sel + t * K;
      if (selection) {  // chosen on probs + bias in the kept groups, weighted by the probs
        float* b = biased + t * NE;
        for (int64_t e = 0; e < NE; ++e) b[e] = bias ? pr[e] + bias[e] : pr[e];
        ops::MaskExpertGroups(hp, b);
        ops::TopK(b, NE, K, s);
      } else {
        ops::TopK(pr, NE, K, s);
      }
      float* w = wts + t * K;
      for (int64_t k = 0; k < K; ++k) w[k] = pr[s[k]];
      if (hp.expert_gating == ExpertGating::kSoftmaxWeight) {
        ops::Softmax(w, K);
        for (int64_t k = 0; k < K; ++k) pr[s[k]] = w[k];  // what the observer reads: the chosen's probabilities
      }
      float sum = 0.0f;
      for (int64_t k = 0; k < K; ++k) sum += w[k];
      if (hp.expert_weights_norm) {
        const float denom = std::max(sum, 6.103515625e-5f);
        for (int64_t k = 0; k < K; ++k) w[k] /= denom;
      }
      if (hp.expert_weights_scale != 0.0f && hp.expert_weights_scale != 1.0f)
        for (int64_t k = 0; k < K; ++k) w[k] *= hp.expert_weights_scale;
    }
  };
  ParallelFor(n, [&route](int64_t b, int64_t e) { route(b, e); });  // one reference: no allocation
  if (p.opt->observer) {
    for (int64_t t = 0; t < n; ++t) {
      // The routing crosses the seam to the host observer.
      const float* pr = probs + t * NE;
      const int32_t* s = sel + t * K;
      for (int64_t k = 0; k < K; ++k) chosen[k] = pr[s[k]];
      transfers_.down_bytes += static_cast<uint64_t>(K) * (sizeof(int32_t) + sizeof(float));
      ++transfers_.down_calls;
      p.opt->observer->OnRouted(il, {s, static_cast<size_t>(K)}, {chosen, static_cast<size_t>(K)});
    }
  }
  // Tokens per expert (a counting sort that keeps the order of t*K + k).
  std::fill(first, first + NE + 1, int64_t{0});
  for (int64_t i = 0; i < n * K; ++i) ++first[sel[i] + 1];
  for (int64_t e = 0; e < NE; ++e) first[e + 1] += first[e];
  std::copy(first, first + NE, fill);
  for (int64_t i = 0; i < n * K; ++i) list[fill[sel[i]]++] = i;
  for (int64_t i = 0; i < n * K; ++i) where[list[i]] = i;
  if (p.opt->experts) {
    float* xe = ws.Take<float>(n * E);  // an expert is chosen at most once per token: m <= n
    if (!xe) return ws.Exhausted("MoE routing");
    for (int64_t e = 0; e < NE; ++e) {
      const int64_t* entries = list + first[e];
      const int64_t m = first[e + 1] - first[e];
      if (m == 0) continue;
      for (int64_t i = 0; i < m; ++i) std::memcpy(&xe[i * E], h + (entries[i] / K) * E, E * sizeof(float));
      // The expert's rows go to the executor and its output comes back.
      const uint64_t bytes = static_cast<uint64_t>(m * E) * sizeof(float);
      transfers_.down_bytes += bytes;
      ++transfers_.down_calls;
      STRATA_RETURN_IF_ERROR(p.opt->experts->RunExpert(il, static_cast<uint32_t>(e), xe, m, results + first[e] * E));
      transfers_.up_bytes += bytes;
      ++transfers_.up_calls;
    }
  } else {
    int64_t* token = ws.Take<int64_t>(n * K);  // the token of list[i]
    float* g = ws.Take<float>(n * K * F);      // gate, then silu(gate) * up, by place in list
    float* u = ws.Take<float>(n * K * F);
    MatMulJob* jobs = ws.Take<MatMulJob>(2 * NE);
    if (!jobs) return ws.Exhausted("MoE routing");
    for (int64_t i = 0; i < n * K; ++i) token[i] = list[i] / K;
    const TensorView& gate = *W(*p.m, il, R::kFfnGateExps);
    const TensorView& up = *W(*p.m, il, R::kFfnUpExps);
    const TensorView& down = *W(*p.m, il, R::kFfnDownExps);
    int64_t count = 0;
    for (int64_t e = 0; e < NE; ++e) {
      const int64_t m = first[e + 1] - first[e];
      if (m == 0) continue;
      const auto ue = static_cast<uint32_t>(e);
      new (&jobs[count++]) MatMulJob{ExpertMatrix(gate, ue), h, token + first[e], m, g + first[e] * F};
      new (&jobs[count++]) MatMulJob{ExpertMatrix(up, ue), h, token + first[e], m, u + first[e] * F};
    }
    MatMulBatch({jobs, static_cast<size_t>(count)});
    // gpt-oss: each entry's expert's gate and up biases, the clamped SwiGLU.
    const float* gate_b = Model::F32(W(*p.m, il, R::kFfnGateExpsBias));
    const float* up_b = Model::F32(W(*p.m, il, R::kFfnUpExpsBias));
    for (int64_t e = 0; e < NE && (gate_b || up_b); ++e)
      for (int64_t i = first[e]; i < first[e + 1]; ++i) {
        ops::AddBias(g + i * F, gate_b ? gate_b + e * F : nullptr, 1, F);
        ops::AddBias(u + i * F, up_b ? up_b + e * F : nullptr, 1, F);
      }
    ExpertGate(*this, g, u, n * K * F, hp.swiglu_alpha, hp.swiglu_limit);
    count = 0;
    for (int64_t e = 0; e < NE; ++e) {
      const int64_t m = first[e + 1] - first[e];
      if (m == 0) continue;
      new (&jobs[count++])
          MatMulJob{ExpertMatrix(down, static_cast<uint32_t>(e)), g + first[e] * F, nullptr, m, results + first[e] * E};
    }
    MatMulBatch({jobs, static_cast<size_t>(count)});
    if (const float* down_b = Model::F32(W(*p.m, il, R::kFfnDownExpsBias)))
      for (int64_t e = 0; e < NE; ++e)
        for (int64_t i = first[e]; i < first[e + 1]; ++i) ops::AddBias(results + i * E, down_b + e * E, 1, E);
  }
  auto combine = [&](int64_t t_begin, int64_t t_end) {
    for (int64_t t = t_begin; t < t_end; ++t) {
      float* o = out + t * E;
      for (int64_t k = 0; k < K; ++k) {
        const float w = wts[t * K + k];
        const float* r = &results[where[t * K + k] * E];
        if (k == 0) for (int64_t d = 0; d < E; ++d) o[d] = r[d] * w;
        else for (int64_t d = 0; d < E; ++d) o[d] += r[d] * w;
      }
    }
  };
  ParallelFor(n, [&combine](int64_t b, int64_t e) { combine(b, e); });  // one reference: no allocation
  return Status::Ok();
}

// The shared expert (FfnKind::kMoeSharedExpert), gated per token by
// sigmoid(ffn_gate_inp_shexp . x), added to the routed experts' output.
Status CpuBackend::SharedExpert(int32_t il, Act in, Act out_act) {
  OpScope scope_op(*this);
  const PassState& p = *pass_;
  const Model& m = *p.m;
  Workspace& ws = *p.ws;
  const float* h = ActPtr(in);
  float* out = ActPtr(out_act);
  const int64_t n = p.n, E = p.hp->n_embd;
  WorkspaceScope scope(ws);
  float* sh = ws.Take<float>(n * E);
  if (!sh) return ws.Exhausted("shared expert");
  STRATA_RETURN_IF_ERROR(SwiGlu(*this, ws, Matrix(*W(m, il, R::kFfnGateShexp)), Matrix(*W(m, il, R::kFfnUpShexp)),
                                Matrix(*W(m, il, R::kFfnDownShexp)), h, n, sh));
  const float* gw = Model::F32(W(m, il, R::kFfnGateInpShexp));  // null: ungated (glm4moe)
  for (int64_t t = 0; t < n; ++t) {
    if (!gw) {
      for (int64_t d = 0; d < E; ++d) out[t * E + d] += sh[t * E + d];
      continue;
    }
    float g = 0.0f;
    for (int64_t d = 0; d < E; ++d) g += gw[d] * h[t * E + d];
    g = ops::Sigmoid(g);
    for (int64_t d = 0; d < E; ++d) out[t * E + d] += sh[t * E + d] * g;
  }
  return Status::Ok();
}

Status CpuBackend::ConcatProject(const TensorView& w, Act a, Act b, Act out) {
  OpScope scope(*this);
  const PassState& p = *pass_;
  const int64_t n = p.n, E = p.hp->n_embd;
  const WeightMatrix m = Matrix(*W(&w));
  if (m.cols != 2 * E || m.rows != E)
    return Internal(StrFormat("ConcatProject: a %lld x %lld matrix for rows of 2 x %lld", static_cast<long long>(m.rows),
                              static_cast<long long>(m.cols), static_cast<long long>(E)));
  WorkspaceScope ws_scope(*p.ws);
  float* cat = p.ws->Take<float>(n * 2 * E);
  if (!cat) return p.ws->Exhausted("the MTP block's input");
  const float* x = ActPtr(a);
  const float* y = ActPtr(b);
  for (int64_t t = 0; t < n; ++t) {
    std::memcpy(&cat[t * 2 * E], &x[t * E], static_cast<size_t>(E) * sizeof(float));
    std::memcpy(&cat[t * 2 * E + E], &y[t * E], static_cast<size_t>(E) * sizeof(float));
  }
  MatMul(m, cat, n, ActPtr(out));
  return Status::Ok();
}

Status CpuBackend::Logits(const TensorView* norm, const TensorView& head, float* logits, int32_t* argmax) {
  OpScope scope(*this);
  const PassState& p = *pass_;
  const int64_t E = p.hp->n_embd;
  const WeightMatrix w = Matrix(*W(&head));
  const float* x = ActPtr(Act::kX);
  float* h = ActPtr(Act::kH);
  const float* nw = Model::F32(W(norm));
  for (int64_t r = 0; r < p.n_rows; ++r) ops::RmsNormTo(&x[p.rows[r] * E], nw, E, p.hp->rms_eps, &h[r * E]);
  // The logits rows cross the seam: the product writes them to the host
  // buffer directly (a device backend downloads them), counted as a download.
  MatMul(w, h, p.n_rows, logits);
  transfers_.down_bytes += static_cast<uint64_t>(p.n_rows * w.rows) * sizeof(float);
  ++transfers_.down_calls;
  if (argmax)
    for (int64_t r = 0; r < p.n_rows; ++r)
      argmax[r] = Sampler::Argmax({logits + r * w.rows, static_cast<size_t>(w.rows)});
  return Status::Ok();
}

Status CpuBackend::ReadAct(Act a, float* host) {
  OpScope scope(*this);
  const uint64_t bytes = static_cast<uint64_t>(pass_->n * pass_->hp->n_embd) * sizeof(float);
  std::memcpy(host, ActPtr(a), static_cast<size_t>(bytes));
  transfers_.down_bytes += bytes;
  ++transfers_.down_calls;
  return Status::Ok();
}

Status CpuBackend::WriteAct(Act a, const float* host) {
  OpScope scope(*this);
  const uint64_t bytes = static_cast<uint64_t>(pass_->n * pass_->hp->n_embd) * sizeof(float);
  std::memcpy(ActPtr(a), host, static_cast<size_t>(bytes));
  transfers_.up_bytes += bytes;
  ++transfers_.up_calls;
  return Status::Ok();
}

// --- for the tiered expert pool ------------------------------------------------

Status RunExpertOnBackend(const Model& model, CpuBackend& backend, int32_t il, uint32_t e, const float* x,
                          int64_t m, float* y, bool use_decode_copies, float* scratch) {
  const TensorView* t[3] = {model.Get(il, R::kFfnGateExps), model.Get(il, R::kFfnUpExps),
                            model.Get(il, R::kFfnDownExps)};
  WeightMatrix w[3];
  for (int i = 0; i < 3; ++i) {
    if (!t[i] || e >= t[i]->expert_count)
      return Internal(StrFormat("expert %u of layer %d is not in the model", e, il));
    const TensorView* src = t[i];
    if (use_decode_copies && t[i]->decode_copy >= 0)
      src = &model.tensors()[static_cast<size_t>(t[i]->decode_copy)];
    w[i] = ExpertMatrix(*src, e);
  }
  const ExpertExtras extras = ExpertExtrasOf(model, il, e);
  return RunSwiGlu(backend, w[0], w[1], w[2], x, m, y, scratch, &extras);
}

Status RunSwiGlu(CpuBackend& backend, const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down,
                 const float* x, int64_t m, float* y, float* scratch, const ExpertExtras* extras) {
  std::vector<float> own;
  if (!scratch) {
    STRATA_RETURN_IF_ERROR(CheckedResize(own, static_cast<size_t>(2 * m * gate.rows), "expert scratch"));
    scratch = own.data();
  }
  float* g = scratch;
  float* u = scratch + m * gate.rows;
  backend.MatMul(gate, x, m, g);
  backend.MatMul(up, x, m, u);
  if (extras && extras->any()) {
    ops::AddBias(g, extras->GateBias(), m, gate.rows);
    ops::AddBias(u, extras->UpBias(), m, up.rows);
    ExpertGate(backend, g, u, m * gate.rows, extras->alpha, extras->limit);
    backend.MatMul(down, g, m, y);
    ops::AddBias(y, extras->DownBias(), m, down.rows);
    return Status::Ok();
  }
  SwiGluGate(backend, g, u, m * gate.rows);
  backend.MatMul(down, g, m, y);
  return Status::Ok();
}

// --- workspace bound -----------------------------------------------------------

uint64_t ForwardWorkspaceBytes(const Model& model, const PassShape& shape) {
  const HParams& hp = model.hp();
  const ArchSpec& spec = GetArchSpec(model.arch());
  const uint64_t n = static_cast<uint64_t>(std::max<int64_t>(shape.tokens, 1));
  PassShape s = shape;
  s.tokens = static_cast<int64_t>(n);
  s.max_keys = std::max<int64_t>(shape.max_keys, 1);
  // Whole pass (BeginPass): seq, pos, states, rows, ids, x, h, y. Then the
  // largest layer stage (each stage releases what it took before the next
  // one starts).
  const uint64_t top = TakeBytes<int32_t>(n) + TakeBytes<int64_t>(n) + TakeBytes<SequenceState*>(n) +
                       TakeBytes<int64_t>(n) + TakeBytes<int32_t>(n) + 3 * TakeBytes<float>(n * hp.n_embd);
  // An MTP pass (once enabled): its input's concatenated rows, then its layer.
  uint64_t stage = model.mtp_enabled() ? TakeBytes<float>(n * 2 * hp.n_embd) : 0;
  for (uint32_t il = 0; il < model.run_layers(); ++il) {
    const LayerPlan layer = spec.Layer(hp, il);
    stage = std::max(stage, layer.mixer == Mixer::kGatedDeltaNet ? GatedDeltaNetBytes(hp, s)
                                                                 : AttentionBytes(hp, layer.mixer, s));
    switch (layer.ffn) {
      case FfnKind::kDense: stage = std::max(stage, SwiGluBytes(n, hp.n_ff)); break;
      case FfnKind::kMoeSharedExpert: stage = std::max(stage, SharedExpertBytes(hp, n)); [[fallthrough]];
      case FfnKind::kMoe:
        stage = std::max(stage, MoeBytes(hp, n, model.Get(static_cast<int32_t>(il), TensorRole::kFfnExpProbsB)));
        break;
    }
  }
  return top + stage;
}

}  // namespace strata
