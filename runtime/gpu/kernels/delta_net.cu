// Gated delta-net (qwen35moe's linear-attention layers), the CPU's
// delta_net.cc on the device: the causal convolution with SiLU and its
// carried window, the L2-normalized q and k with the gates, the delta rule
// (token by token, or chunked for prompts), and the gated RMSNorm (norm.cu).
// The projections are matrix products (matmul.cu).

#include "runtime/gpu/kernels/kernel_args.h"
#include "runtime/gpu/kernels/portable.h"

STRATA_GPU_BEGIN

// Row j of token i's convolution window: the carried state's row j while
// j < d_conv - 1, else the input of the run's token j - (d_conv - 1).
STRATA_DEV const float* ConvWindowRow(const float* state, const float* qkv, int32_t run_first, int32_t j,
                                     int32_t d_conv, int32_t channels) {
  return j < d_conv - 1 ? state + static_cast<int64_t>(j) * channels
                        : qkv + static_cast<int64_t>(run_first + j - (d_conv - 1)) * channels;
}

// Grid (n, ceil(channels / blockDim)), a thread per channel.
STRATA_KERNEL(strata_delta_conv, ConvArgs) {
  const int32_t t = static_cast<int32_t>(blockIdx.x);
  const int32_t c = static_cast<int32_t>(blockIdx.y * blockDim.x + threadIdx.x);
  if (c >= a.channels) return;
  const int32_t first = a.tables.run_start[t], i = t - first;
  const float* state = a.tables.conv_state[static_cast<int64_t>(a.layer) * a.n_seq + a.tables.seq[t]];
  const float* w = a.conv_w + static_cast<int64_t>(c) * a.d_conv;
  float acc = 0.0f;
  for (int32_t kk = 0; kk < a.d_conv - 1; ++kk)
    acc += ConvWindowRow(state, a.qkv, first, kk + i, a.d_conv, a.channels)[c] * w[kk];
  acc += a.qkv[static_cast<int64_t>(t) * a.channels + c] * w[a.d_conv - 1];
  a.x[static_cast<int64_t>(t) * a.channels + c] = DevSilu(acc);
}

// Grid (n_seq, ceil(channels / blockDim)): slides each sequence's window by
// its tokens (row r becomes window row r + m: rows written in increasing
// order read only rows not yet written).
STRATA_KERNEL(strata_delta_conv_update, ConvUpdateArgs) {
  const int32_t s = static_cast<int32_t>(blockIdx.x);
  const int32_t c = static_cast<int32_t>(blockIdx.y * blockDim.x + threadIdx.x);
  if (c >= a.channels) return;
  float* state = a.tables.conv_state[static_cast<int64_t>(a.layer) * a.n_seq + s];
  const int32_t first = a.tables.seq_first[s], m = a.tables.seq_len[s];
  for (int32_t r = 0; r < a.d_conv - 1; ++r)
    state[static_cast<int64_t>(r) * a.channels + c] = ConvWindowRow(state, a.qkv, first, r + m, a.d_conv, a.channels)[c];
}

// Grid (n, ceil((2 n_k + 1) / warps)): a warp per q head, per k head, and one
// for the token's gates.
STRATA_KERNEL(strata_delta_prep, DeltaPrepArgs) {
  const int64_t t = blockIdx.x;
  const int32_t item = static_cast<int32_t>(blockIdx.y * (blockDim.x / kWarpSize) + WarpId());
  const int32_t lane = static_cast<int32_t>(LaneId()), W = static_cast<int32_t>(kWarpSize);
  if (item < 2 * a.n_k) {
    float* v = a.x + t * a.channels + static_cast<int64_t>(item) * a.dk;  // q heads, then k heads
    float s = 0.0f;
    for (int32_t i = lane; i < a.dk; i += W) s += v[i] * v[i];
    s = WarpSum(s);
    const float scale = 1.0f / DevFmax(DevSqrt(s), a.eps);
    const bool is_q = item < a.n_k;
    for (int32_t i = lane; i < a.dk; i += W) {
      const float x = v[i] * scale;
      v[i] = is_q ? x * a.q_scale : x;
    }
  } else if (item == 2 * a.n_k) {
    for (int32_t h = lane; h < a.n_v; h += W) {
      const int64_t o = t * a.n_v + h;
      a.beta[o] = DevSigmoid(a.beta[o]);
      a.alpha[o] = DevSoftplus(a.alpha[o] + a.dt_bias[h]) * a.a[h];
    }
  }
}

inline constexpr int32_t kDeltaChunk = 64;

// Grid (n_seq, n_v), a thread per value column j (blockDim >= dv). Shared:
// the token's q and k (sequential), or the chunk's gates and dot products
// (chunked).
STRATA_KERNEL(strata_delta_rule, DeltaRuleArgs) {
  STRATA_SHARED(float, qs, 256);
  STRATA_SHARED(float, ks, 256);
  STRATA_SHARED(float, G, kDeltaChunk);
  STRATA_SHARED(float, KK, kDeltaChunk * kDeltaChunk);
  STRATA_SHARED(float, QK, kDeltaChunk * kDeltaChunk);
  const int32_t s = static_cast<int32_t>(blockIdx.x), hv = static_cast<int32_t>(blockIdx.y);
  const int32_t j = static_cast<int32_t>(threadIdx.x);
  const bool col = j < a.dv;
  const int32_t t0 = a.tables.seq_first[s], m = a.tables.seq_len[s];
  float* S = a.tables.ssm_state[static_cast<int64_t>(a.layer) * a.n_seq + s] + static_cast<int64_t>(hv) * a.dk * a.dv;
  // HParams::SsmKeyHead: qwen3next's grouped order or qwen35moe's tiled one.
  const int32_t hk = a.grouped_heads ? hv / (a.n_v / a.n_k) : hv % a.n_k;
  auto q_of = [&](int32_t t) { return a.x + static_cast<int64_t>(t) * a.channels + static_cast<int64_t>(hk) * a.dk; };
  auto k_of = [&](int32_t t) { return q_of(t) + a.key_dim; };
  auto v_at = [&](int32_t t) {
    return a.x[static_cast<int64_t>(t) * a.channels + 2 * a.key_dim + static_cast<int64_t>(hv) * a.dv + j];
  };
  float* y = a.y + static_cast<int64_t>(hv) * a.dv + j;
  const int64_t y_stride = static_cast<int64_t>(a.n_v) * a.dv;
  if (!a.chunked) {
    for (int32_t t = t0; t < t0 + m; ++t) {
      __syncthreads();  // the previous token's q and k are read
      for (int32_t i = j; i < a.dk; i += static_cast<int32_t>(blockDim.x)) qs[i] = q_of(t)[i], ks[i] = k_of(t)[i];
      __syncthreads();
      if (!col) continue;
      const float decay = DevExp(a.alpha[static_cast<int64_t>(t) * a.n_v + hv]);
      const float b = a.beta[static_cast<int64_t>(t) * a.n_v + hv];
      // As the CPU's DeltaRuleRef, per column: S = decay S; kv = S^T k;
      // d = b (v - kv); S += k d^T; o = S^T q.
      float kv = 0.0f;
      for (int32_t i = 0; i < a.dk; ++i) {
        const float v = S[static_cast<int64_t>(i) * a.dv + j] * decay;
        S[static_cast<int64_t>(i) * a.dv + j] = v;
        kv += v * ks[i];
      }
      const float d = b * (v_at(t) - kv);
      float o = 0.0f;
      for (int32_t i = 0; i < a.dk; ++i) {
        const float v = S[static_cast<int64_t>(i) * a.dv + j] + ks[i] * d;
        S[static_cast<int64_t>(i) * a.dv + j] = v;
        o += v * qs[i];
      }
      y[static_cast<int64_t>(t) * y_stride] = o;
    }
    return;
  }
  // Chunked (delta_net.cc's ChunkedHead): per chunk of C tokens with
  // cumulative log-decays G, the deltas D solve a unit lower-triangular
  // system; outputs and the state follow from D. D's column j is the
  // thread's, in the scratch.
  float* D = a.scratch + (static_cast<int64_t>(s) * a.n_v + hv) * kDeltaChunk * a.dv + j;
  for (int32_t c0 = t0; c0 < t0 + m; c0 += kDeltaChunk) {
    const int32_t C = t0 + m - c0 < kDeltaChunk ? t0 + m - c0 : kDeltaChunk;
    __syncthreads();
    if (j == 0) {
      float acc = 0.0f;
      for (int32_t t = 0; t < C; ++t) G[t] = (acc += a.alpha[static_cast<int64_t>(c0 + t) * a.n_v + hv]);
    }
    for (int32_t e = j; e < C * C; e += static_cast<int32_t>(blockDim.x)) {
      const int32_t t = e / C, u = e % C;
      if (u > t) continue;
      const float* kt = k_of(c0 + t);
      const float* qt = q_of(c0 + t);
      const float* ku = k_of(c0 + u);
      float kk = 0.0f, qk = 0.0f;
      for (int32_t i = 0; i < a.dk; ++i) kk += kt[i] * ku[i], qk += qt[i] * ku[i];
      KK[t * kDeltaChunk + u] = kk;
      QK[t * kDeltaChunk + u] = qk;
    }
    __syncthreads();
    if (!col) continue;
    for (int32_t t = 0; t < C; ++t) {
      const float* kt = k_of(c0 + t);
      float dt = 0.0f;
      for (int32_t i = 0; i < a.dk; ++i) dt += S[static_cast<int64_t>(i) * a.dv + j] * kt[i];
      const float b = a.beta[static_cast<int64_t>(c0 + t) * a.n_v + hv];
      dt = b * (v_at(c0 + t) - DevExp(G[t]) * dt);
      for (int32_t u = 0; u < t; ++u) dt -= b * DevExp(G[t] - G[u]) * KK[t * kDeltaChunk + u] * D[static_cast<int64_t>(u) * a.dv];
      D[static_cast<int64_t>(t) * a.dv] = dt;
    }
    for (int32_t t = 0; t < C; ++t) {
      const float* qt = q_of(c0 + t);
      float o = 0.0f;
      for (int32_t i = 0; i < a.dk; ++i) o += S[static_cast<int64_t>(i) * a.dv + j] * qt[i];
      o *= DevExp(G[t]);
      for (int32_t u = 0; u <= t; ++u) o += DevExp(G[t] - G[u]) * QK[t * kDeltaChunk + u] * D[static_cast<int64_t>(u) * a.dv];
      y[static_cast<int64_t>(c0 + t) * y_stride] = o;
    }
    const float eC = DevExp(G[C - 1]);
    for (int32_t i = 0; i < a.dk; ++i) {
      float v = S[static_cast<int64_t>(i) * a.dv + j] * eC;
      for (int32_t u = 0; u < C; ++u) v += DevExp(G[C - 1] - G[u]) * k_of(c0 + u)[i] * D[static_cast<int64_t>(u) * a.dv];
      S[static_cast<int64_t>(i) * a.dv + j] = v;
    }
  }
}

STRATA_GPU_END
