#include "runtime/model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/base/checked_alloc.h"
#include "runtime/base/strings.h"
#include "runtime/model/ops.h"
#include "runtime/quant/dequantize.h"

namespace strata {
namespace {

using R = TensorRole;

// One forward call: n tokens of one or more sequences. Token t belongs to
// sequence seq[t] and sits at position pos[t]; a sequence's tokens are
// contiguous and in order.
struct Pass {
  const Model& m;
  const ArchSpec& spec;
  const HParams& hp;
  MatMulBackend& be;
  std::span<const SequenceBatch> batch;
  const ForwardOptions& opt;
  Workspace& ws;
  int64_t n;
  int32_t* seq;   // n entries
  int64_t* pos;   // n entries
  int64_t max_keys;

  SequenceState& St(int64_t t) const { return *batch[static_cast<size_t>(seq[t])].state; }

  const TensorView* W(int32_t il, R role) const { return m.Get(il, role); }
  const float* F(int32_t il, R role) const { return Model::F32(m.Get(il, role)); }
  void Mul(const TensorView& w, const float* x, float* y) const { be.MatMul(Matrix(w), x, n, y); }
};

// --- attention ---------------------------------------------------------------
// Plain (Mixer::kAttention) and gated (Mixer::kGatedAttention: attn_q holds
// [q | gate] per head, output multiplied by sigmoid(gate)) multi-head
// attention with GQA, optional per-head QK RMSNorm, RoPE on the first n_rot
// dims, and the KV cache.
uint64_t AttentionBytes(const HParams& hp, Mixer mixer, const PassShape& s) {
  const uint64_t n = static_cast<uint64_t>(s.tokens), H = hp.n_head, Hkv = hp.n_head_kv;
  const uint64_t q_width = (mixer == Mixer::kGatedAttention ? 2 : 1) * H * hp.head_dim_k;
  return TakeBytes<float>(n * q_width) + TakeBytes<float>(n * Hkv * hp.head_dim_k) +
         TakeBytes<float>(n * Hkv * hp.head_dim_v) + TakeBytes<float>(n * H * hp.head_dim_v) +
         TakeBytes<float>(static_cast<uint64_t>(ScratchTasks(s.tokens * H, s.threads)) *
                          static_cast<uint64_t>(s.max_keys));
}

Status Attention(const Pass& p, int32_t il, Mixer mixer, const float* h, float* out) {
  const HParams& hp = p.hp;
  const int64_t n = p.n, H = hp.n_head, Hkv = hp.n_head_kv, Dk = hp.head_dim_k, Dv = hp.head_dim_v;
  const bool gated = mixer == Mixer::kGatedAttention;
  const int64_t q_width = (gated ? 2 : 1) * H * Dk;
  WorkspaceScope scope(p.ws);
  float* qfull = p.ws.Take<float>(n * q_width);
  float* k = p.ws.Take<float>(n * Hkv * Dk);
  float* v = p.ws.Take<float>(n * Hkv * Dv);
  float* attn = p.ws.Take<float>(n * H * Dv);
  const int64_t jobs = n * H, tasks = ScratchTasks(jobs, p.be.threads());
  const int64_t max_keys = p.max_keys;
  float* scores_all = p.ws.Take<float>(tasks * max_keys);
  if (!scores_all) return p.ws.Exhausted("attention");
  p.Mul(*p.W(il, R::kAttnQ), h, qfull);
  p.Mul(*p.W(il, R::kAttnK), h, k);
  p.Mul(*p.W(il, R::kAttnV), h, v);

  const float* q_norm = p.F(il, R::kAttnQNorm);
  const float* k_norm = p.F(il, R::kAttnKNorm);
  auto rope = [&](float* x, int64_t pos) {
    if (hp.rope_type == RopeType::kNorm) ops::RopeNorm(x, hp.n_rot, pos, hp.rope_freq_base, hp.rope_freq_scale);
    else ops::RopeNeox(x, hp.n_rot, pos, hp.rope_freq_base, hp.rope_freq_scale);  // NEOX and text-only IMRoPE
  };
  // q[t][h] and gate[t][h] views into qfull.
  auto q_at = [&](int64_t t, int64_t hh) { return qfull + t * q_width + hh * (gated ? 2 * Dk : Dk); };
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t hh = 0; hh < H; ++hh) {
      float* q = q_at(t, hh);
      if (q_norm) ops::RmsNorm(q, q_norm, Dk, hp.rms_eps);
      rope(q, p.pos[t]);
    }
    for (int64_t hh = 0; hh < Hkv; ++hh) {
      float* kk = k + (t * Hkv + hh) * Dk;
      if (k_norm) ops::RmsNorm(kk, k_norm, Dk, hp.rms_eps);
      rope(kk, p.pos[t]);
    }
  }
  // Append to each sequence's cache.
  for (int64_t t = 0; t < n; ++t) {
    SequenceState& st = p.St(t);
    std::memcpy(st.k[il].data() + p.pos[t] * Hkv * Dk, &k[t * Hkv * Dk], Hkv * Dk * sizeof(float));
    std::memcpy(st.v[il].data() + p.pos[t] * Hkv * Dv, &v[t * Hkv * Dv], Hkv * Dv * sizeof(float));
  }
  const float scale = hp.attn_scale != 0.0f ? hp.attn_scale : 1.0f / std::sqrt(static_cast<float>(Dk));
  const int64_t group = H / Hkv;
  const kernels::AttnKernels& ak = p.be.attention();
  // One scores row per task (tasks run on one thread at a time).
  auto tasks_body = [&](int64_t task_begin, int64_t task_end) {
    for (int64_t task = task_begin; task < task_end; ++task) {
      float* scores = scores_all + task * max_keys;
      for (int64_t job = jobs * task / tasks; job < jobs * (task + 1) / tasks; ++job) {
        const int64_t t = job / H, hh = job % H, kvh = hh / group;
        const int64_t n_keys = p.pos[t] + 1;  // causal
        const float* K = p.St(t).k[il].data();
        const float* V = p.St(t).v[il].data();
        const float* q = q_at(t, hh);
        ak.scores(q, K + kvh * Dk, Hkv * Dk, n_keys, Dk, scale, scores);
        ops::Softmax(scores, n_keys);
        float* o = attn + (t * H + hh) * Dv;
        std::fill(o, o + Dv, 0.0f);
        ak.mix(scores, V + kvh * Dv, Hkv * Dv, n_keys, Dv, o);
        if (gated) {
          const float* gate = q + Dk;
          for (int64_t d = 0; d < Dv; ++d) o[d] *= ops::Sigmoid(gate[d]);
        }
      }
    }
  };
  // A lambda of one reference: std::function holds it without allocating.
  p.be.ParallelFor(tasks, [&tasks_body](int64_t b, int64_t e) { tasks_body(b, e); });
  p.Mul(*p.W(il, R::kAttnOutput), attn, out);
  return Status::Ok();
}

// --- feed-forward ------------------------------------------------------------
// SwiGLU: down(silu(gate x) * up x) for the rows of x.
uint64_t SwiGluBytes(uint64_t rows, uint64_t ff) { return 2 * TakeBytes<float>(rows * ff); }

// `scratch`: 2 * rows * gate.rows floats, or null to take them from the workspace.
Status SwiGlu(const Pass& p, const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down,
              const float* x, int64_t rows, float* out, float* scratch = nullptr) {
  WorkspaceScope scope(p.ws);
  float* g = scratch ? scratch : p.ws.Take<float>(rows * gate.rows);
  float* u = scratch ? scratch + rows * gate.rows : p.ws.Take<float>(rows * up.rows);
  if (!u) return p.ws.Exhausted("SwiGLU");
  p.be.MatMul(gate, x, rows, g);
  p.be.MatMul(up, x, rows, u);
  for (int64_t i = 0; i < rows * gate.rows; ++i) g[i] = ops::SiluF(g[i]) * u[i];
  p.be.MatMul(down, g, rows, out);
  return Status::Ok();
}

Status DenseFfn(const Pass& p, int32_t il, const float* h, float* out) {
  return SwiGlu(p, Matrix(*p.W(il, R::kFfnGate)), Matrix(*p.W(il, R::kFfnUp)), Matrix(*p.W(il, R::kFfnDown)), h,
                p.n, out);
}

uint64_t MoeBytes(const HParams& hp, uint64_t n) {
  const uint64_t NE = hp.n_expert, K = hp.n_expert_used, E = hp.n_embd;
  return TakeBytes<float>(n * NE) + TakeBytes<int32_t>(n * K) + TakeBytes<float>(n * K) + TakeBytes<float>(K) +
         TakeBytes<int64_t>(NE + 1) + TakeBytes<int64_t>(NE) + TakeBytes<int64_t>(n * K) +
         TakeBytes<float>(n * K * E) + 2 * TakeBytes<float>(n * E) + TakeBytes<float>(2 * n * hp.n_ff_exp);
}

// Routed experts: softmax over the router logits, top-k, renormalized
// weights, each expert's SwiGLU on the tokens routed to it (a batch per
// expert), summed in routing order as llama.cpp does.
Status MoeFfn(const Pass& p, int32_t il, const float* h, float* out) {
  const HParams& hp = p.hp;
  const int64_t n = p.n, E = hp.n_embd, NE = hp.n_expert, K = hp.n_expert_used;
  WorkspaceScope scope(p.ws);
  float* probs = p.ws.Take<float>(n * NE);
  int32_t* sel = p.ws.Take<int32_t>(n * K);
  float* wts = p.ws.Take<float>(n * K);
  float* chosen = p.ws.Take<float>(K);
  int64_t* first = p.ws.Take<int64_t>(NE + 1);  // expert e's entries: list[first[e] .. first[e+1])
  int64_t* fill = p.ws.Take<int64_t>(NE);
  int64_t* list = p.ws.Take<int64_t>(n * K);    // entries t*K + k, grouped by expert, in order
  float* results = p.ws.Take<float>(n * K * E);
  float* xe = p.ws.Take<float>(n * E);  // an expert is chosen at most once per token: m <= n
  float* ye = p.ws.Take<float>(n * E);
  float* gu = p.ws.Take<float>(2 * n * hp.n_ff_exp);  // an expert's SwiGLU for up to n rows
  if (!gu) return p.ws.Exhausted("MoE routing");
  p.Mul(*p.W(il, R::kFfnGateInp), h, probs);
  for (int64_t t = 0; t < n; ++t) {
    float* pr = probs + t * NE;
    ops::Softmax(pr, NE);
    int32_t* s = sel + t * K;
    ops::TopK(pr, NE, K, s);
    float* w = wts + t * K;
    float sum = 0.0f;
    for (int64_t k = 0; k < K; ++k) sum += (w[k] = pr[s[k]]);
    if (hp.expert_weights_norm) {
      const float denom = std::max(sum, 6.103515625e-5f);
      for (int64_t k = 0; k < K; ++k) w[k] /= denom;
    }
    if (hp.expert_weights_scale != 0.0f && hp.expert_weights_scale != 1.0f)
      for (int64_t k = 0; k < K; ++k) w[k] *= hp.expert_weights_scale;
    if (p.opt.observer) {
      for (int64_t k = 0; k < K; ++k) chosen[k] = pr[s[k]];
      p.opt.observer->OnRouted(il, {s, static_cast<size_t>(K)}, {chosen, static_cast<size_t>(K)});
    }
  }
  // Tokens per expert (a counting sort that keeps the order of t*K + k).
  std::fill(first, first + NE + 1, int64_t{0});
  for (int64_t i = 0; i < n * K; ++i) ++first[sel[i] + 1];
  for (int64_t e = 0; e < NE; ++e) first[e + 1] += first[e];
  std::copy(first, first + NE, fill);
  for (int64_t i = 0; i < n * K; ++i) list[fill[sel[i]]++] = i;
  const TensorView& gate = *p.W(il, R::kFfnGateExps);
  const TensorView& up = *p.W(il, R::kFfnUpExps);
  const TensorView& down = *p.W(il, R::kFfnDownExps);
  for (int64_t e = 0; e < NE; ++e) {
    const int64_t* entries = list + first[e];
    const int64_t m = first[e + 1] - first[e];
    if (m == 0) continue;
    for (int64_t i = 0; i < m; ++i) std::memcpy(&xe[i * E], h + (entries[i] / K) * E, E * sizeof(float));
    if (p.opt.experts) {
      STRATA_RETURN_IF_ERROR(p.opt.experts->RunExpert(il, static_cast<uint32_t>(e), xe, m, ye));
    } else {
      STRATA_RETURN_IF_ERROR(SwiGlu(p, ExpertMatrix(gate, static_cast<uint32_t>(e)),
                                    ExpertMatrix(up, static_cast<uint32_t>(e)),
                                    ExpertMatrix(down, static_cast<uint32_t>(e)), xe, m, ye, gu));
    }
    for (int64_t i = 0; i < m; ++i) std::memcpy(&results[entries[i] * E], &ye[i * E], E * sizeof(float));
  }
  for (int64_t t = 0; t < n; ++t) {
    float* o = out + t * E;
    for (int64_t k = 0; k < K; ++k) {
      const float w = wts[t * K + k];
      const float* r = &results[(t * K + k) * E];
      if (k == 0) for (int64_t d = 0; d < E; ++d) o[d] = r[d] * w;
      else for (int64_t d = 0; d < E; ++d) o[d] += r[d] * w;
    }
  }
  return Status::Ok();
}

uint64_t SharedExpertBytes(const HParams& hp, uint64_t n) {
  return TakeBytes<float>(n * hp.n_embd) + SwiGluBytes(n, hp.n_ff_shexp);
}

// The shared expert (FfnKind::kMoeSharedExpert), gated per token by sigmoid(ffn_gate_inp_shexp . x),
// added to the routed experts' output.
Status SharedExpert(const Pass& p, int32_t il, const float* h, float* out) {
  const int64_t n = p.n, E = p.hp.n_embd;
  WorkspaceScope scope(p.ws);
  float* sh = p.ws.Take<float>(n * E);
  if (!sh) return p.ws.Exhausted("shared expert");
  STRATA_RETURN_IF_ERROR(SwiGlu(p, Matrix(*p.W(il, R::kFfnGateShexp)), Matrix(*p.W(il, R::kFfnUpShexp)),
                                Matrix(*p.W(il, R::kFfnDownShexp)), h, n, sh));
  const float* gw = p.F(il, R::kFfnGateInpShexp);
  for (int64_t t = 0; t < n; ++t) {
    float g = 0.0f;
    for (int64_t d = 0; d < E; ++d) g += gw[d] * h[t * E + d];
    g = ops::Sigmoid(g);
    for (int64_t d = 0; d < E; ++d) out[t * E + d] += sh[t * E + d] * g;
  }
  return Status::Ok();
}

}  // namespace

Status RunExpertOnBackend(const Model& model, MatMulBackend& backend, int32_t il, uint32_t e, const float* x,
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
  return RunSwiGlu(backend, w[0], w[1], w[2], x, m, y, scratch);
}

Status RunSwiGlu(MatMulBackend& backend, const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down,
                 const float* x, int64_t m, float* y, float* scratch) {
  std::vector<float> own;
  if (!scratch) {
    STRATA_RETURN_IF_ERROR(CheckedResize(own, static_cast<size_t>(2 * m * gate.rows), "expert scratch"));
    scratch = own.data();
  }
  float* g = scratch;
  float* u = scratch + m * gate.rows;
  backend.MatMul(gate, x, m, g);
  backend.MatMul(up, x, m, u);
  for (int64_t i = 0; i < m * gate.rows; ++i) g[i] = ops::SiluF(g[i]) * u[i];
  backend.MatMul(down, g, m, y);
  return Status::Ok();
}

// delta_net.cc: token t uses the recurrent state of states[t].
Status GatedDeltaNet(const Model& model, MatMulBackend& backend, Workspace& ws, DeltaNetMode mode,
                     std::span<SequenceState* const> states,
                     int32_t il, int64_t n, const float* h, float* out);
uint64_t GatedDeltaNetBytes(const HParams& hp, const PassShape& shape);

uint64_t ForwardWorkspaceBytes(const Model& model, const PassShape& shape) {
  const HParams& hp = model.hp();
  const ArchSpec& spec = GetArchSpec(model.arch());
  const uint64_t n = static_cast<uint64_t>(std::max<int64_t>(shape.tokens, 1));
  PassShape s = shape;
  s.tokens = static_cast<int64_t>(n);
  s.max_keys = std::max<int64_t>(shape.max_keys, 1);
  // Whole pass: seq, pos, states, rows, x, h, y. Then the largest layer stage
  // (each stage releases what it took before the next one starts).
  const uint64_t top = TakeBytes<int32_t>(n) + TakeBytes<int64_t>(n) + TakeBytes<SequenceState*>(n) +
                       TakeBytes<int64_t>(n) + 3 * TakeBytes<float>(n * hp.n_embd);
  uint64_t stage = 0;
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    const LayerPlan layer = spec.Layer(hp, il);
    stage = std::max(stage, layer.mixer == Mixer::kGatedDeltaNet ? GatedDeltaNetBytes(hp, s)
                                                                 : AttentionBytes(hp, layer.mixer, s));
    switch (layer.ffn) {
      case FfnKind::kDense: stage = std::max(stage, SwiGluBytes(n, hp.n_ff)); break;
      case FfnKind::kMoeSharedExpert: stage = std::max(stage, SharedExpertBytes(hp, n)); [[fallthrough]];
      case FfnKind::kMoe: stage = std::max(stage, MoeBytes(hp, n)); break;
    }
  }
  return top + stage;
}

Status Forward(const Model& model, MatMulBackend& backend, SequenceState& state, std::span<const int32_t> tokens,
               const ForwardOptions& options, std::vector<float>* logits) {
  SequenceBatch b{&state, tokens, options.all_logits};
  return ForwardBatch(model, backend, {&b, 1}, options, logits);
}

namespace {

Status RunPass(Pass& p, std::span<const SequenceBatch> batch, std::vector<float>* logits) {
  const Model& model = p.m;
  const HParams& hp = p.hp;
  MatMulBackend& backend = p.be;
  const int64_t n = p.n, E = hp.n_embd;
  SequenceState** states = p.ws.Take<SequenceState*>(n);
  int64_t* rows = p.ws.Take<int64_t>(n);
  float* x = p.ws.Take<float>(n * E);
  float* h = p.ws.Take<float>(n * E);
  float* y = p.ws.Take<float>(n * E);
  if (!y) return p.ws.Exhausted("forward pass");
  for (int64_t t = 0; t < n; ++t) states[t] = &p.St(t);

  // The output rows asked for; the logits buffer is sized before any state changes.
  int64_t n_rows = 0;
  {
    int64_t t = 0;
    for (const SequenceBatch& sb : batch) {
      const int64_t m = static_cast<int64_t>(sb.tokens.size());
      for (int64_t i = (sb.all_logits ? 0 : m - 1); i < m; ++i) rows[n_rows++] = t + i;
      t += m;
    }
  }
  STRATA_RETURN_IF_ERROR(CheckedResize(*logits, static_cast<size_t>(n_rows) * hp.n_vocab, "the logits buffer"));

  // Token embeddings (a row lookup dequantizes exactly, as ggml_get_rows).
  const TensorView& emb = *model.Get(R::kTokenEmbd);
  {
    int64_t t = 0;
    for (const SequenceBatch& sb : batch)
      for (int32_t id : sb.tokens) DequantizeRowUnchecked(emb.type, emb.Row(id), &x[t++ * E], E);
  }

  const size_t xn = static_cast<size_t>(n * E);
  for (uint32_t il_u = 0; il_u < hp.n_layer; ++il_u) {
    const int32_t il = static_cast<int32_t>(il_u);
    const LayerPlan layer = p.spec.Layer(hp, il_u);
    // Mixer.
    for (int64_t t = 0; t < n; ++t) ops::RmsNormTo(&x[t * E], p.F(il, R::kAttnNorm), E, hp.rms_eps, &h[t * E]);
    if (layer.mixer == Mixer::kGatedDeltaNet) {
      STRATA_RETURN_IF_ERROR(GatedDeltaNet(model, backend, p.ws, p.opt.delta_net, {states, static_cast<size_t>(n)}, il, n, h, y));
    } else {
      STRATA_RETURN_IF_ERROR(Attention(p, il, layer.mixer, h, y));
    }
    for (size_t i = 0; i < xn; ++i) x[i] += y[i];
    // Feed-forward.
    for (int64_t t = 0; t < n; ++t) ops::RmsNormTo(&x[t * E], p.F(il, layer.ffn_norm), E, hp.rms_eps, &h[t * E]);
    if (layer.ffn == FfnKind::kDense) {
      STRATA_RETURN_IF_ERROR(DenseFfn(p, il, h, y));
    } else {
      STRATA_RETURN_IF_ERROR(MoeFfn(p, il, h, y));
      if (layer.ffn == FfnKind::kMoeSharedExpert) STRATA_RETURN_IF_ERROR(SharedExpert(p, il, h, y));
    }
    for (size_t i = 0; i < xn; ++i) x[i] += y[i];
  }

  // Output head on the rows asked for.
  for (int64_t r = 0; r < n_rows; ++r)
    ops::RmsNormTo(&x[rows[r] * E], Model::F32(model.Get(R::kOutputNorm)), E, hp.rms_eps, &h[r * E]);
  backend.MatMul(Matrix(model.OutputHead()), h, n_rows, logits->data());
  for (const SequenceBatch& sb : batch) sb.state->n_past += static_cast<int64_t>(sb.tokens.size());
  return Status::Ok();
}

}  // namespace

Status ForwardBatch(const Model& model, MatMulBackend& backend, std::span<const SequenceBatch> batch,
                    const ForwardOptions& options, std::vector<float>* logits) {
  const HParams& hp = model.hp();
  int64_t n = 0, max_keys = 1;
  for (size_t s = 0; s < batch.size(); ++s) {
    const SequenceBatch& sb = batch[s];
    const int64_t m = static_cast<int64_t>(sb.tokens.size());
    if (!sb.state) return Internal("ForwardBatch: a sequence without a state");
    for (size_t o = 0; o < s; ++o)
      if (batch[o].state == sb.state) return Internal("ForwardBatch: the same state twice in one batch");
    if (m == 0) return InvalidArgument("no tokens to run");
    if (sb.state->n_past + m > sb.state->n_ctx)
      return InvalidArgument(StrFormat("%lld tokens at position %lld do not fit the context of %lld positions",
                                       static_cast<long long>(m), static_cast<long long>(sb.state->n_past),
                                       static_cast<long long>(sb.state->n_ctx)));
    for (int64_t t = 0; t < m; ++t)
      if (sb.tokens[t] < 0 || static_cast<uint32_t>(sb.tokens[t]) >= hp.n_vocab)
        return InvalidArgument(StrFormat("token id %d at index %lld is out of range (the vocabulary has %u tokens)",
                                         sb.tokens[t], static_cast<long long>(t), hp.n_vocab));
    n += m;
    max_keys = std::max(max_keys, sb.state->n_past + m);
  }
  if (n == 0) return InvalidArgument("no tokens to run");

  // Scratch: the caller's workspace, or one for this pass alone.
  const PassShape shape{n, max_keys, backend.threads()};
  const uint64_t need = ForwardWorkspaceBytes(model, shape);
  Workspace own;
  Workspace* ws = options.workspace;
  if (!ws) {
    STRATA_ASSIGN_OR_RETURN(own, Workspace::Create(need));
    ws = &own;
  } else if (need > ws->capacity() - ws->mark()) {
    return Internal(StrFormat("a forward pass of %lld tokens with %lld keys needs %s of workspace; the run planned %s",
                              static_cast<long long>(n), static_cast<long long>(max_keys), HumanBytes(need).c_str(),
                              HumanBytes(ws->capacity() - ws->mark()).c_str()));
  }
  WorkspaceScope scope(*ws);
  Pass p{model, GetArchSpec(model.arch()), hp, backend, batch, options, *ws, n, ws->Take<int32_t>(n),
         ws->Take<int64_t>(n), max_keys};
  if (!p.pos) return ws->Exhausted("forward pass");
  {
    int64_t t = 0;
    for (size_t s = 0; s < batch.size(); ++s)
      for (int64_t i = 0; i < static_cast<int64_t>(batch[s].tokens.size()); ++i, ++t) {
        p.seq[t] = static_cast<int32_t>(s);
        p.pos[t] = batch[s].state->n_past + i;
      }
  }
  try {
    return RunPass(p, batch, logits);
  } catch (const std::bad_alloc&) {
    // Only an allocation outside the workspace gets here: a backend that
    // allocates on its own (the reference backend's row buffer, a FastBackend
    // whose scratch was not reserved) or an observer.
    return ResourceExhausted(StrFormat("out of memory in a forward pass of %lld tokens (an allocation outside the "
                                       "planned workspace)",
                                       static_cast<long long>(n)));
  }
}

}  // namespace strata
