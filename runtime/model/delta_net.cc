// Gated delta-net (qwen35moe's and qwen3next's linear-attention layers), reference/formats.md 3.6:
//
//   qkv  = W_qkv h                      [q: n_k*dk | k: n_k*dk | v: n_v*dv]
//   z    = W_gate h                     [n_v*dv]
//   beta = sigmoid(W_beta h)            [n_v]
//   g    = softplus(W_alpha h + dt_bias) * a        (a < 0, so decay = exp(g) < 1)
//   conv = silu(causal depthwise conv of qkv over the last d_conv inputs)
//   q, k = l2_norm per head; v-head j reads k-head HParams::SsmKeyHead(j): j % n_k
//          (qwen35moe's tiled order) or j / (n_v / n_k) (qwen3next's grouped order)
//   per v-head, with S[i][j] (key i, value j), starting from the carried state:
//     S = exp(g) S;  d = beta (v - S^T k);  S += k d^T;  o = S^T q / sqrt(dk)
//   y = rms_norm(o) * ssm_norm * silu(z)  per head;  out = W_out y
//
// The recurrence has two formulations, mathematically the same:
//  * sequential: the update above, token by token (what decode does);
//  * chunked: for a chunk of C tokens with cumulative log-decay G_t, the
//    deltas solve a unit lower-triangular system
//        d_t + sum_{s<t} beta_t e^{G_t-G_s} (k_t.k_s) d_s = beta_t (v_t - e^{G_t} S0^T k_t),
//    outputs are o_t = e^{G_t} S0^T q_t + sum_{s<=t} e^{G_t-G_s} (k_s.q_t) d_s, and the
//    state becomes S = e^{G_C} S0 + sum_s e^{G_C-G_s} k_s d_s^T: matrix products
//    instead of C rank-1 updates of S (what llama.cpp's prompt path does).
// Which one runs for a prompt is chosen by DeltaNetMode (docs/kernels.md has
// the measurements). The convolution window and S are carried in the
// SequenceState, so any split of a prompt gives the same result. This is the
// CPU backend's gated delta-net op (CpuBackend::GatedDeltaNet).

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/kernels/delta_rule.h"
#include "runtime/kernels/swiglu.h"
#include "runtime/model/backend.h"
#include "runtime/model/forward.h"
#include "runtime/model/ops.h"
#include "runtime/base/portable_math.h"

namespace strata {
namespace {


constexpr int64_t kChunk = 64;
// Scratch floats one head's recurrence uses (the chunked form's is the larger).
int64_t HeadScratchFloats(int64_t dv) {
  return std::max(kernels::DeltaRuleScratchFloats(dv), kChunk * (1 + dv + 2 * kChunk));
}

// Chunked delta rule for one head over tokens [0, n) of a run.
// q, k: n x dk (k-head rows, already normalized; q already scaled); v: n x dv;
// g (log-decays), beta: n; S: dk x dv; o: n x dv; scratch: HeadScratchFloats(dv).
// The sequential form is kernels::DeltaRuleFn (kernels/delta_rule.h).
void ChunkedHead(int64_t n, int64_t dk, int64_t dv, const float* const* q, const float* const* k,
                 const float* const* v, const float* g, const float* beta, float* S, float* const* o,
                 float* scratch) {
  float* G = scratch;
  float* D = G + kChunk;
  float* KK = D + kChunk * dv;
  float* QK = KK + kChunk * kChunk;
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t C = std::min(kChunk, n - c0);
    float acc = 0.0f;
    for (int64_t t = 0; t < C; ++t) G[t] = (acc += g[c0 + t]);
    // Dot products inside the chunk: KK[t][s] = k_t.k_s, QK[t][s] = q_t.k_s (s <= t).
    for (int64_t t = 0; t < C; ++t)
      for (int64_t s = 0; s <= t; ++s) {
        float kk = 0.0f, qk = 0.0f;
        for (int64_t i = 0; i < dk; ++i) {
          kk += k[c0 + t][i] * k[c0 + s][i];
          qk += q[c0 + t][i] * k[c0 + s][i];
        }
        KK[t * kChunk + s] = kk;
        QK[t * kChunk + s] = qk;
      }
    // Right-hand sides beta_t (v_t - e^{G_t} S0^T k_t), then forward substitution.
    for (int64_t t = 0; t < C; ++t) {
      float* dt = &D[t * dv];
      std::fill(dt, dt + dv, 0.0f);
      for (int64_t i = 0; i < dk; ++i) {
        const float ki = k[c0 + t][i];
        for (int64_t j = 0; j < dv; ++j) dt[j] += S[i * dv + j] * ki;
      }
      const float eg = ExpF(G[t]), b = beta[c0 + t];
      for (int64_t j = 0; j < dv; ++j) dt[j] = b * (v[c0 + t][j] - eg * dt[j]);
      for (int64_t s = 0; s < t; ++s) {
        const float a = b * ExpF(G[t] - G[s]) * KK[t * kChunk + s];
        const float* ds = &D[s * dv];
        for (int64_t j = 0; j < dv; ++j) dt[j] -= a * ds[j];
      }
    }
    // Outputs: e^{G_t} S0^T q_t + sum_{s<=t} e^{G_t-G_s} (q_t.k_s) d_s.
    for (int64_t t = 0; t < C; ++t) {
      float* ot = o[c0 + t];
      std::fill(ot, ot + dv, 0.0f);
      for (int64_t i = 0; i < dk; ++i) {
        const float qi = q[c0 + t][i];
        for (int64_t j = 0; j < dv; ++j) ot[j] += S[i * dv + j] * qi;
      }
      const float eg = ExpF(G[t]);
      for (int64_t j = 0; j < dv; ++j) ot[j] *= eg;
      for (int64_t s = 0; s <= t; ++s) {
        const float a = ExpF(G[t] - G[s]) * QK[t * kChunk + s];
        const float* ds = &D[s * dv];
        for (int64_t j = 0; j < dv; ++j) ot[j] += a * ds[j];
      }
    }
    // State: e^{G_C} S0 + sum_s e^{G_C-G_s} k_s d_s^T.
    const float eC = ExpF(G[C - 1]);
    for (int64_t i = 0; i < dk * dv; ++i) S[i] *= eC;
    for (int64_t s = 0; s < C; ++s) {
      const float w = ExpF(G[C - 1] - G[s]);
      const float* ds = &D[s * dv];
      for (int64_t i = 0; i < dk; ++i) {
        const float ki = w * k[c0 + s][i];
        for (int64_t j = 0; j < dv; ++j) S[i * dv + j] += ki * ds[j];
      }
    }
  }
}

}  // namespace

std::string_view DeltaNetModeName(DeltaNetMode m) { return m == DeltaNetMode::kChunked ? "chunked" : "sequential"; }

Result<DeltaNetMode> ParseDeltaNetMode(std::string_view name) {
  if (name == "sequential") return DeltaNetMode::kSequential;
  if (name == "chunked") return DeltaNetMode::kChunked;
  return InvalidArgument("--delta-net '" + std::string(name) + "': expected sequential or chunked");
}

uint64_t GatedDeltaNetBytes(const HParams& hp, const PassShape& shape) {
  const uint64_t n = static_cast<uint64_t>(shape.tokens), n_v = hp.ssm_dt_rank;
  const uint64_t key_dim = uint64_t{hp.ssm_n_group} * hp.ssm_d_state, value_dim = n_v * hp.ssm_d_state;
  const uint64_t conv_dim = 2 * key_dim + value_dim;
  const uint64_t tasks = static_cast<uint64_t>(ScratchTasks(hp.ssm_dt_rank, shape.threads));
  return 2 * TakeBytes<float>(n * conv_dim) + 2 * TakeBytes<float>(n * value_dim) + 2 * TakeBytes<float>(n * n_v) +
         3 * TakeBytes<const float*>(tasks * n) + TakeBytes<float*>(tasks * n) + TakeBytes<float>(tasks * 2 * n) +
         TakeBytes<float>(tasks * static_cast<uint64_t>(HeadScratchFloats(hp.ssm_d_state)));
}

Status GatedDeltaNet(const Model& model, CpuBackend& backend, Workspace& ws, DeltaNetMode mode,
                     std::span<SequenceState* const> states,
                     int32_t il, int64_t n, const float* h, float* out) {
  using R = TensorRole;
  const HParams& hp = model.hp();
  const int64_t n_k = hp.ssm_n_group, n_v = hp.ssm_dt_rank, dk = hp.ssm_d_state, dv = hp.ssm_d_state;
  const int64_t key_dim = n_k * dk, value_dim = n_v * dv, conv_dim = 2 * key_dim + value_dim;
  const int64_t d_conv = hp.ssm_d_conv;

  WorkspaceScope scope(ws);
  float* qkv = ws.Take<float>(n * conv_dim);
  float* z = ws.Take<float>(n * value_dim);
  float* beta = ws.Take<float>(n * n_v);
  float* alpha = ws.Take<float>(n * n_v);
  float* x = ws.Take<float>(n * conv_dim);
  float* y = ws.Take<float>(n * value_dim);
  // Per task (a range of value heads, one thread at a time): row pointers
  // and gates for up to n tokens, and the head recurrence's scratch.
  const int64_t tasks = ScratchTasks(n_v, backend.threads()), head_floats = HeadScratchFloats(dv);
  const float** qp_all = ws.Take<const float*>(tasks * n);
  const float** kp_all = ws.Take<const float*>(tasks * n);
  const float** vp_all = ws.Take<const float*>(tasks * n);
  float** op_all = ws.Take<float*>(tasks * n);
  float* gb_all = ws.Take<float>(tasks * 2 * n);
  float* head_all = ws.Take<float>(tasks * head_floats);
  if (!head_all) return ws.Exhausted("gated delta-net");
  backend.MatMul(Matrix(*backend.W(model, il, R::kAttnQkv)), h, n, qkv);
  backend.MatMul(Matrix(*backend.W(model, il, R::kAttnGate)), h, n, z);
  backend.MatMul(Matrix(*backend.W(model, il, R::kSsmBeta)), h, n, beta);
  backend.MatMul(Matrix(*backend.W(model, il, R::kSsmAlpha)), h, n, alpha);

  // [conv_dim][d_conv], tap d_conv-1 = current
  const float* conv_w = Model::F32(backend.W(model, il, R::kSsmConv1d));
  const float* dt_bias = Model::F32(backend.W(model, il, R::kSsmDtBias));
  const float* a = Model::F32(backend.W(model, il, R::kSsmA));
  const float* norm_w = Model::F32(backend.W(model, il, R::kSsmNorm));

  // 1. Per token: causal convolution, SiLU, L2-normalized q and k, the gates.
  //    Per sequence run (a sequence's tokens are contiguous), the tokens run
  //    on the pool: tap kk of the run's i-th token reads window row j = kk + i,
  //    the carried state's row j while j < d_conv - 1, else the input of the
  //    run's token j - (d_conv - 1); the state then slides by the run.
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(dk));
  const kernels::SiluFn silu = kernels::SiluFor(backend.float_isa());
  for (int64_t t0 = 0; t0 < n;) {
    int64_t t1 = t0 + 1;
    while (t1 < n && states[t1] == states[t0]) ++t1;
    float* conv_state = backend.StateConv(*states[t0], il);  // [d_conv-1][conv_dim], oldest first
    auto window = [&](int64_t j) {
      return j < d_conv - 1 ? conv_state + j * conv_dim : &qkv[(t0 + j - (d_conv - 1)) * conv_dim];
    };
    auto prepare = [&](int64_t i_begin, int64_t i_end) {
      for (int64_t i = i_begin; i < i_end; ++i) {
        const int64_t t = t0 + i;
        const float* in = &qkv[t * conv_dim];
        float* xt = &x[t * conv_dim];
        for (int64_t c = 0; c < conv_dim; ++c) xt[c] = 0.0f;
        for (int64_t kk = 0; kk < d_conv - 1; ++kk) {
          const float* row = window(kk + i);
          for (int64_t c = 0; c < conv_dim; ++c) xt[c] += row[c] * conv_w[c * d_conv + kk];
        }
        for (int64_t c = 0; c < conv_dim; ++c) xt[c] += in[c] * conv_w[c * d_conv + d_conv - 1];
        silu(xt, conv_dim);
        for (int64_t hh = 0; hh < n_k; ++hh) {
          ops::L2Norm(xt + hh * dk, dk, hp.rms_eps);
          ops::L2Norm(xt + key_dim + hh * dk, dk, hp.rms_eps);
          for (int64_t j = 0; j < dk; ++j) xt[hh * dk + j] *= q_scale;
        }
        for (int64_t hv = 0; hv < n_v; ++hv) {
          beta[t * n_v + hv] = ops::Sigmoid(beta[t * n_v + hv]);
          alpha[t * n_v + hv] = ops::Softplus(alpha[t * n_v + hv] + dt_bias[hv]) * a[hv];  // g
        }
      }
    };
    backend.ParallelFor(t1 - t0, [&prepare](int64_t ib, int64_t ie) { prepare(ib, ie); });  // one reference: no allocation
    // Slide the window by the run: row r becomes window row r + m (rows
    // written in increasing order read only rows not yet written).
    for (int64_t r = 0; r < d_conv - 1; ++r) {
      std::memcpy(conv_state + r * conv_dim, window(r + (t1 - t0)), static_cast<size_t>(conv_dim) * sizeof(float));
    }
    t0 = t1;
  }

  // 2. The recurrence, per sequence run (a sequence's tokens are contiguous)
  //    and per value head.
  const bool chunked = mode == DeltaNetMode::kChunked;
  const kernels::DeltaRuleFn rule = kernels::DeltaRuleFor(backend.float_isa());
  for (int64_t t0 = 0; t0 < n;) {
    int64_t t1 = t0 + 1;
    while (t1 < n && states[t1] == states[t0]) ++t1;
    const int64_t m = t1 - t0;
    float* S_all = backend.StateSsm(*states[t0], il);  // [n_v][dk][dv]
    auto tasks_body = [&](int64_t task_begin, int64_t task_end) {
      for (int64_t task = task_begin; task < task_end; ++task) {
        const float** qp = qp_all + task * n;
        const float** kp = kp_all + task * n;
        const float** vp = vp_all + task * n;
        float** op = op_all + task * n;
        float* g = gb_all + task * 2 * n;
        float* b = g + n;
        float* head = head_all + task * head_floats;
        for (int64_t hv = n_v * task / tasks; hv < n_v * (task + 1) / tasks; ++hv) {
          const int64_t hk = hp.SsmKeyHead(static_cast<uint32_t>(hv));
          for (int64_t i = 0; i < m; ++i) {
            const float* xt = &x[(t0 + i) * conv_dim];
            qp[i] = xt + hk * dk;
            kp[i] = xt + key_dim + hk * dk;
            vp[i] = xt + 2 * key_dim + hv * dv;
            op[i] = &y[(t0 + i) * value_dim + hv * dv];
            g[i] = chunked ? alpha[(t0 + i) * n_v + hv] : ExpF(alpha[(t0 + i) * n_v + hv]);  // the sequential form takes exp(g)
            b[i] = beta[(t0 + i) * n_v + hv];
          }
          float* S = S_all + hv * dk * dv;
          if (chunked) ChunkedHead(m, dk, dv, qp, kp, vp, g, b, S, op, head);
          else rule(m, dk, dv, qp, kp, vp, g, b, S, op, head);
        }
      }
    };
    // A lambda of one reference: std::function holds it without allocating.
    backend.ParallelFor(tasks, [&tasks_body](int64_t tb, int64_t te) { tasks_body(tb, te); });
    t0 = t1;
  }

  // 3. Gated RMSNorm per head: rms_norm(o) * ssm_norm * silu(z), written
  //    over z (silu(z) * o: the same product), then the output projection.
  const kernels::SwiGluFn gate = kernels::SwiGluFor(backend.float_isa());
  auto gate_rows = [&](int64_t t_begin, int64_t t_end) {
    for (int64_t t = t_begin; t < t_end; ++t)
      for (int64_t hv = 0; hv < n_v; ++hv) {
        float* o = &y[t * value_dim + hv * dv];
        ops::RmsNorm(o, norm_w, dv, hp.rms_eps);
        gate(&z[t * value_dim + hv * dv], o, dv);
      }
  };
  backend.ParallelFor(n, [&gate_rows](int64_t tb, int64_t te) { gate_rows(tb, te); });  // one reference: no allocation
  backend.MatMul(Matrix(*backend.W(model, il, R::kSsmOut)), z, n, out);
  return Status::Ok();
}

}  // namespace strata
