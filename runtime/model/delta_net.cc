// Gated delta-net (qwen35moe's linear-attention layers), reference/formats.md 3.6:
//
//   qkv  = W_qkv h                      [q: n_k*dk | k: n_k*dk | v: n_v*dv]
//   z    = W_gate h                     [n_v*dv]
//   beta = sigmoid(W_beta h)            [n_v]
//   g    = softplus(W_alpha h + dt_bias) * a        (a < 0, so decay = exp(g) < 1)
//   conv = silu(causal depthwise conv of qkv over the last d_conv inputs)
//   q, k = l2_norm per head; v-head j reads k-head j % n_k (the GGUF's tiled order)
//   per v-head, with S[i][j] (key i, value j), starting from the carried state:
//     S = exp(g) S;  d = beta (v - S^T k);  S += k d^T;  o = S^T q / sqrt(dk)
//   y = rms_norm(o) * ssm_norm * silu(z)  per head;  out = W_out y
//
// The recurrence runs token by token; the convolution window and S are
// carried in the SequenceState across calls, so any split of a prompt into
// chunks gives the same result as one call.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/model/forward.h"
#include "runtime/model/ops.h"

namespace strata {

Status GatedDeltaNet(const Model& model, MatMulBackend& backend, std::span<SequenceState* const> states, int32_t il,
                     int64_t n, const float* h, float* out) {
  using R = TensorRole;
  const HParams& hp = model.hp();
  const int64_t n_k = hp.ssm_n_group, n_v = hp.ssm_dt_rank, dk = hp.ssm_d_state, dv = hp.ssm_d_state;
  const int64_t key_dim = n_k * dk, value_dim = n_v * dv, conv_dim = 2 * key_dim + value_dim;
  const int64_t d_conv = hp.ssm_d_conv;

  std::vector<float> qkv(static_cast<size_t>(n * conv_dim)), z(static_cast<size_t>(n * value_dim)),
      beta(static_cast<size_t>(n * n_v)), alpha(static_cast<size_t>(n * n_v));
  backend.MatMul(Matrix(*model.Get(il, R::kAttnQkv)), h, n, qkv.data());
  backend.MatMul(Matrix(*model.Get(il, R::kAttnGate)), h, n, z.data());
  backend.MatMul(Matrix(*model.Get(il, R::kSsmBeta)), h, n, beta.data());
  backend.MatMul(Matrix(*model.Get(il, R::kSsmAlpha)), h, n, alpha.data());

  const float* conv_w = Model::F32(model.Get(il, R::kSsmConv1d));  // [conv_dim][d_conv], tap d_conv-1 = current
  const float* dt_bias = Model::F32(model.Get(il, R::kSsmDtBias));
  const float* a = Model::F32(model.Get(il, R::kSsmA));
  const float* norm_w = Model::F32(model.Get(il, R::kSsmNorm));

  std::vector<float> x(static_cast<size_t>(conv_dim)), y(static_cast<size_t>(n * value_dim));
  std::vector<float> kv(static_cast<size_t>(dv)), d(static_cast<size_t>(dv));
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(dk));
  for (int64_t t = 0; t < n; ++t) {
    float* conv_state = states[t]->conv[il].data();  // [d_conv-1][conv_dim], oldest first
    float* S = states[t]->ssm[il].data();            // [n_v][dk][dv]: S[h][i][j] at (h*dk + i)*dv + j
    const float* in = &qkv[t * conv_dim];
    // Causal depthwise convolution over [state..., current], then SiLU.
    for (int64_t c = 0; c < conv_dim; ++c) {
      const float* w = conv_w + c * d_conv;
      float s = 0.0f;
      for (int64_t k = 0; k < d_conv - 1; ++k) s += conv_state[k * conv_dim + c] * w[k];
      s += in[c] * w[d_conv - 1];
      x[c] = ops::SiluF(s);
    }
    // Slide the window.
    if (d_conv > 1) {
      std::memmove(conv_state, conv_state + conv_dim, static_cast<size_t>((d_conv - 2) * conv_dim) * sizeof(float));
      std::memcpy(conv_state + (d_conv - 2) * conv_dim, in, static_cast<size_t>(conv_dim) * sizeof(float));
    }
    float* q = x.data();
    float* k = x.data() + key_dim;
    const float* v = x.data() + 2 * key_dim;
    for (int64_t hh = 0; hh < n_k; ++hh) {
      ops::L2Norm(q + hh * dk, dk, hp.rms_eps);
      ops::L2Norm(k + hh * dk, dk, hp.rms_eps);
    }
    for (int64_t hv = 0; hv < n_v; ++hv) {
      const float* qh = q + (hv % n_k) * dk;
      const float* kh = k + (hv % n_k) * dk;
      const float* vh = v + hv * dv;
      const float b = ops::Sigmoid(beta[t * n_v + hv]);
      const float g = ops::Softplus(alpha[t * n_v + hv] + dt_bias[hv]) * a[hv];
      const float decay = std::exp(g);
      float* Sh = S + hv * dk * dv;
      for (int64_t i = 0; i < dk * dv; ++i) Sh[i] *= decay;
      std::fill(kv.begin(), kv.end(), 0.0f);
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j) kv[j] += Sh[i * dv + j] * kh[i];
      for (int64_t j = 0; j < dv; ++j) d[j] = b * (vh[j] - kv[j]);
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j) Sh[i * dv + j] += kh[i] * d[j];
      float* o = &y[t * value_dim + hv * dv];
      std::fill(o, o + dv, 0.0f);
      for (int64_t i = 0; i < dk; ++i) {
        const float qi = qh[i] * q_scale;
        for (int64_t j = 0; j < dv; ++j) o[j] += Sh[i * dv + j] * qi;
      }
      // Gated RMSNorm: rms_norm(o) * ssm_norm * silu(z).
      ops::RmsNorm(o, norm_w, dv, hp.rms_eps);
      const float* zh = &z[t * value_dim + hv * dv];
      for (int64_t j = 0; j < dv; ++j) o[j] *= ops::SiluF(zh[j]);
    }
  }
  backend.MatMul(Matrix(*model.Get(il, R::kSsmOut)), y.data(), n, out);
  return Status::Ok();
}

}  // namespace strata
