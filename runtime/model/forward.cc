#include "runtime/model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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
  const HParams& hp;
  MatMulBackend& be;
  std::span<const SequenceBatch> batch;
  const ForwardOptions& opt;
  int64_t n;
  std::vector<int32_t> seq;
  std::vector<int64_t> pos;

  SequenceState& St(int64_t t) const { return *batch[static_cast<size_t>(seq[t])].state; }

  const TensorView* W(int32_t il, R role) const { return m.Get(il, role); }
  const float* F(int32_t il, R role) const { return Model::F32(m.Get(il, role)); }
  void Mul(const TensorView& w, const float* x, float* y) const { be.MatMul(Matrix(w), x, n, y); }
};

// --- attention ---------------------------------------------------------------
// Standard (llama, qwen3moe) and gated (qwen35moe: attn_q holds [q | gate] per
// head, output multiplied by sigmoid(gate)) multi-head attention with GQA,
// optional per-head QK RMSNorm, RoPE on the first n_rot dims, and the KV cache.
void Attention(const Pass& p, int32_t il, const float* h, float* out) {
  const HParams& hp = p.hp;
  const int64_t n = p.n, H = hp.n_head, Hkv = hp.n_head_kv, Dk = hp.head_dim_k, Dv = hp.head_dim_v;
  const bool gated = p.m.arch() == Arch::kQwen35Moe;
  const int64_t q_width = (gated ? 2 : 1) * H * Dk;
  std::vector<float> qfull(static_cast<size_t>(n * q_width)), k(static_cast<size_t>(n * Hkv * Dk)),
      v(static_cast<size_t>(n * Hkv * Dv));
  p.Mul(*p.W(il, R::kAttnQ), h, qfull.data());
  p.Mul(*p.W(il, R::kAttnK), h, k.data());
  p.Mul(*p.W(il, R::kAttnV), h, v.data());

  const float* q_norm = p.F(il, R::kAttnQNorm);
  const float* k_norm = p.F(il, R::kAttnKNorm);
  auto rope = [&](float* x, int64_t pos) {
    if (hp.rope_type == RopeType::kNorm) ops::RopeNorm(x, hp.n_rot, pos, hp.rope_freq_base, hp.rope_freq_scale);
    else ops::RopeNeox(x, hp.n_rot, pos, hp.rope_freq_base, hp.rope_freq_scale);  // NEOX and text-only IMRoPE
  };
  // q[t][h] and gate[t][h] views into qfull.
  auto q_at = [&](int64_t t, int64_t hh) { return qfull.data() + t * q_width + hh * (gated ? 2 * Dk : Dk); };
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t hh = 0; hh < H; ++hh) {
      float* q = q_at(t, hh);
      if (q_norm) ops::RmsNorm(q, q_norm, Dk, hp.rms_eps);
      rope(q, p.pos[t]);
    }
    for (int64_t hh = 0; hh < Hkv; ++hh) {
      float* kk = k.data() + (t * Hkv + hh) * Dk;
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
  int64_t max_keys = 0;
  for (int64_t t = 0; t < n; ++t) max_keys = std::max(max_keys, p.pos[t] + 1);

  const float scale = hp.attn_scale != 0.0f ? hp.attn_scale : 1.0f / std::sqrt(static_cast<float>(Dk));
  const int64_t group = H / Hkv;
  std::vector<float> attn(static_cast<size_t>(n * H * Dv));
  p.be.ParallelFor(n * H, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<size_t>(max_keys));
    for (int64_t job = begin; job < end; ++job) {
      const int64_t t = job / H, hh = job % H, kvh = hh / group;
      const int64_t n_keys = p.pos[t] + 1;  // causal
      const float* K = p.St(t).k[il].data();
      const float* V = p.St(t).v[il].data();
      const float* q = q_at(t, hh);
      for (int64_t j = 0; j < n_keys; ++j) {
        const float* kj = K + (j * Hkv + kvh) * Dk;
        float s = 0.0f;
        for (int64_t d = 0; d < Dk; ++d) s += q[d] * kj[d];
        scores[j] = s * scale;
      }
      ops::Softmax(scores.data(), n_keys);
      float* o = attn.data() + (t * H + hh) * Dv;
      std::fill(o, o + Dv, 0.0f);
      for (int64_t j = 0; j < n_keys; ++j) {
        const float* vj = V + (j * Hkv + kvh) * Dv;
        const float pj = scores[j];
        for (int64_t d = 0; d < Dv; ++d) o[d] += pj * vj[d];
      }
      if (gated) {
        const float* gate = q + Dk;
        for (int64_t d = 0; d < Dv; ++d) o[d] *= ops::Sigmoid(gate[d]);
      }
    }
  });
  p.Mul(*p.W(il, R::kAttnOutput), attn.data(), out);
}

// --- feed-forward ------------------------------------------------------------
// SwiGLU: down(silu(gate x) * up x) for the rows of x.
void SwiGlu(const Pass& p, const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down, const float* x,
            int64_t rows, float* out) {
  std::vector<float> g(static_cast<size_t>(rows * gate.rows)), u(static_cast<size_t>(rows * up.rows));
  p.be.MatMul(gate, x, rows, g.data());
  p.be.MatMul(up, x, rows, u.data());
  for (size_t i = 0; i < g.size(); ++i) g[i] = ops::SiluF(g[i]) * u[i];
  p.be.MatMul(down, g.data(), rows, out);
}

void DenseFfn(const Pass& p, int32_t il, const float* h, float* out) {
  SwiGlu(p, Matrix(*p.W(il, R::kFfnGate)), Matrix(*p.W(il, R::kFfnUp)), Matrix(*p.W(il, R::kFfnDown)), h, p.n, out);
}

// Routed experts: softmax over the router logits, top-k, renormalized
// weights, each expert's SwiGLU on the tokens routed to it (a batch per
// expert), summed in routing order as llama.cpp does.
Status MoeFfn(const Pass& p, int32_t il, const float* h, float* out) {
  const HParams& hp = p.hp;
  const int64_t n = p.n, E = hp.n_embd, NE = hp.n_expert, K = hp.n_expert_used;
  std::vector<float> probs(static_cast<size_t>(n * NE));
  p.Mul(*p.W(il, R::kFfnGateInp), h, probs.data());
  std::vector<int32_t> sel(static_cast<size_t>(n * K));
  std::vector<float> wts(static_cast<size_t>(n * K));
  for (int64_t t = 0; t < n; ++t) {
    float* pr = probs.data() + t * NE;
    ops::Softmax(pr, NE);
    int32_t* s = sel.data() + t * K;
    ops::TopK(pr, NE, K, s);
    float* w = wts.data() + t * K;
    float sum = 0.0f;
    for (int64_t k = 0; k < K; ++k) sum += (w[k] = pr[s[k]]);
    if (hp.expert_weights_norm) {
      const float denom = std::max(sum, 6.103515625e-5f);
      for (int64_t k = 0; k < K; ++k) w[k] /= denom;
    }
    if (hp.expert_weights_scale != 0.0f && hp.expert_weights_scale != 1.0f)
      for (int64_t k = 0; k < K; ++k) w[k] *= hp.expert_weights_scale;
    if (p.opt.observer) {
      std::vector<float> chosen(static_cast<size_t>(K));
      for (int64_t k = 0; k < K; ++k) chosen[k] = pr[s[k]];
      p.opt.observer->OnRouted(il, {s, static_cast<size_t>(K)}, chosen);
    }
  }
  // Tokens per expert.
  std::vector<std::vector<int64_t>> slots(static_cast<size_t>(NE));  // entries t*K + k
  for (int64_t i = 0; i < n * K; ++i) slots[sel[i]].push_back(i);
  std::vector<float> results(static_cast<size_t>(n * K * E));
  const TensorView& gate = *p.W(il, R::kFfnGateExps);
  const TensorView& up = *p.W(il, R::kFfnUpExps);
  const TensorView& down = *p.W(il, R::kFfnDownExps);
  std::vector<float> xe, ye;
  for (int64_t e = 0; e < NE; ++e) {
    const auto& list = slots[e];
    if (list.empty()) continue;
    const int64_t m = static_cast<int64_t>(list.size());
    xe.resize(static_cast<size_t>(m * E));
    ye.resize(static_cast<size_t>(m * E));
    for (int64_t i = 0; i < m; ++i) std::memcpy(&xe[i * E], h + (list[i] / K) * E, E * sizeof(float));
    if (p.opt.experts) {
      STRATA_RETURN_IF_ERROR(p.opt.experts->RunExpert(il, static_cast<uint32_t>(e), xe.data(), m, ye.data()));
    } else {
      SwiGlu(p, ExpertMatrix(gate, static_cast<uint32_t>(e)), ExpertMatrix(up, static_cast<uint32_t>(e)),
             ExpertMatrix(down, static_cast<uint32_t>(e)), xe.data(), m, ye.data());
    }
    for (int64_t i = 0; i < m; ++i) std::memcpy(&results[list[i] * E], &ye[i * E], E * sizeof(float));
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

// qwen35moe's shared expert, gated per token by sigmoid(ffn_gate_inp_shexp . x),
// added to the routed experts' output.
void SharedExpert(const Pass& p, int32_t il, const float* h, float* out) {
  const int64_t n = p.n, E = p.hp.n_embd;
  std::vector<float> sh(static_cast<size_t>(n * E));
  SwiGlu(p, Matrix(*p.W(il, R::kFfnGateShexp)), Matrix(*p.W(il, R::kFfnUpShexp)), Matrix(*p.W(il, R::kFfnDownShexp)),
         h, n, sh.data());
  const float* gw = p.F(il, R::kFfnGateInpShexp);
  for (int64_t t = 0; t < n; ++t) {
    float g = 0.0f;
    for (int64_t d = 0; d < E; ++d) g += gw[d] * h[t * E + d];
    g = ops::Sigmoid(g);
    for (int64_t d = 0; d < E; ++d) out[t * E + d] += sh[t * E + d] * g;
  }
}

}  // namespace

Status RunExpertOnBackend(const Model& model, MatMulBackend& backend, int32_t il, uint32_t e, const float* x,
                          int64_t m, float* y, bool use_decode_copies) {
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
  std::vector<float> g(static_cast<size_t>(m * w[0].rows)), u(static_cast<size_t>(m * w[1].rows));
  backend.MatMul(w[0], x, m, g.data());
  backend.MatMul(w[1], x, m, u.data());
  for (size_t i = 0; i < g.size(); ++i) g[i] = ops::SiluF(g[i]) * u[i];
  backend.MatMul(w[2], g.data(), m, y);
  return Status::Ok();
}

// delta_net.cc: token t uses the recurrent state of states[t].
Status GatedDeltaNet(const Model& model, MatMulBackend& backend, std::span<SequenceState* const> states, int32_t il,
                     int64_t n, const float* h, float* out);

Status Forward(const Model& model, MatMulBackend& backend, SequenceState& state, std::span<const int32_t> tokens,
               const ForwardOptions& options, std::vector<float>* logits) {
  SequenceBatch b{&state, tokens, options.all_logits};
  return ForwardBatch(model, backend, {&b, 1}, options, logits);
}

Status ForwardBatch(const Model& model, MatMulBackend& backend, std::span<const SequenceBatch> batch,
                    const ForwardOptions& options, std::vector<float>* logits) {
  const HParams& hp = model.hp();
  Pass p{model, hp, backend, batch, options, 0, {}, {}};
  for (size_t s = 0; s < batch.size(); ++s) {
    const SequenceBatch& sb = batch[s];
    const int64_t n = static_cast<int64_t>(sb.tokens.size());
    if (!sb.state) return Internal("ForwardBatch: a sequence without a state");
    for (size_t o = 0; o < s; ++o)
      if (batch[o].state == sb.state) return Internal("ForwardBatch: the same state twice in one batch");
    if (n == 0) return InvalidArgument("no tokens to run");
    if (sb.state->n_past + n > sb.state->n_ctx)
      return InvalidArgument(StrFormat("%lld tokens at position %lld do not fit the context of %lld positions",
                                       static_cast<long long>(n), static_cast<long long>(sb.state->n_past),
                                       static_cast<long long>(sb.state->n_ctx)));
    for (int64_t t = 0; t < n; ++t) {
      if (sb.tokens[t] < 0 || static_cast<uint32_t>(sb.tokens[t]) >= hp.n_vocab)
        return InvalidArgument(StrFormat("token id %d at index %lld is out of range (the vocabulary has %u tokens)",
                                         sb.tokens[t], static_cast<long long>(t), hp.n_vocab));
      p.seq.push_back(static_cast<int32_t>(s));
      p.pos.push_back(sb.state->n_past + t);
    }
  }
  const int64_t n = p.n = static_cast<int64_t>(p.seq.size());
  if (n == 0) return InvalidArgument("no tokens to run");
  const int64_t E = hp.n_embd;
  std::vector<SequenceState*> states(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) states[t] = &p.St(t);

  // Token embeddings (a row lookup dequantizes exactly, as ggml_get_rows).
  std::vector<float> x(static_cast<size_t>(n * E)), h(static_cast<size_t>(n * E)), y(static_cast<size_t>(n * E));
  const TensorView& emb = *model.Get(R::kTokenEmbd);
  {
    int64_t t = 0;
    for (const SequenceBatch& sb : batch)
      for (int32_t id : sb.tokens) DequantizeRowUnchecked(emb.type, emb.Row(id), &x[t++ * E], E);
  }

  for (uint32_t il_u = 0; il_u < hp.n_layer; ++il_u) {
    const int32_t il = static_cast<int32_t>(il_u);
    // Mixer: attention or gated delta-net.
    for (int64_t t = 0; t < n; ++t) ops::RmsNormTo(&x[t * E], p.F(il, R::kAttnNorm), E, hp.rms_eps, &h[t * E]);
    if (hp.IsRecurrentLayer(il_u)) {
      STRATA_RETURN_IF_ERROR(GatedDeltaNet(model, backend, states, il, n, h.data(), y.data()));
    } else {
      Attention(p, il, h.data(), y.data());
    }
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    // Feed-forward.
    const float* ffn_norm = model.arch() == Arch::kQwen35Moe ? p.F(il, R::kPostAttnNorm) : p.F(il, R::kFfnNorm);
    for (int64_t t = 0; t < n; ++t) ops::RmsNormTo(&x[t * E], ffn_norm, E, hp.rms_eps, &h[t * E]);
    if (model.arch() == Arch::kLlama) {
      DenseFfn(p, il, h.data(), y.data());
    } else {
      STRATA_RETURN_IF_ERROR(MoeFfn(p, il, h.data(), y.data()));
      if (model.arch() == Arch::kQwen35Moe) SharedExpert(p, il, h.data(), y.data());
    }
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
  }

  // Output head on the rows asked for.
  std::vector<int64_t> rows;
  {
    int64_t t = 0;
    for (const SequenceBatch& sb : batch) {
      const int64_t m = static_cast<int64_t>(sb.tokens.size());
      for (int64_t i = (sb.all_logits ? 0 : m - 1); i < m; ++i) rows.push_back(t + i);
      t += m;
    }
  }
  for (size_t r = 0; r < rows.size(); ++r)
    ops::RmsNormTo(&x[rows[r] * E], Model::F32(model.Get(R::kOutputNorm)), E, hp.rms_eps, &h[r * E]);
  logits->resize(rows.size() * hp.n_vocab);
  backend.MatMul(Matrix(model.OutputHead()), h.data(), static_cast<int64_t>(rows.size()), logits->data());
  for (const SequenceBatch& sb : batch) sb.state->n_past += static_cast<int64_t>(sb.tokens.size());
  return Status::Ok();
}

}  // namespace strata
