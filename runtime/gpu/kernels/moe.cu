// Routed experts: the router's softmax and top-k, the entries grouped by
// expert, and the weighted sum of the experts' outputs. The experts'
// products are the grouped matrix products of matmul.cu.

#include "runtime/gpu/kernels/kernel_args.h"
#include "runtime/gpu/kernels/portable.h"

STRATA_GPU_BEGIN

// Experts one lane holds at most: n_expert <= kMaxExpertsPerLane * warp size
// (512 at 32 lanes; the host checks).
inline constexpr int kMaxExpertsPerLane = 16;

// One warp per token (block = several warps). As the CPU's routing
// (cpu_backend.cc): the router's probabilities (softmax over all experts,
// each logit's sigmoid, or the logits themselves), the k largest of them plus
// the selection bias when there is one (ties: the lower index), their
// unbiased probabilities as weights (a softmax over the k for gating 3),
// renormalized with the divisor clamped at 2^-14, then scaled.
STRATA_KERNEL(strata_moe_topk, TopKArgs) {
  const int32_t t = static_cast<int32_t>(blockIdx.x * (blockDim.x / kWarpSize) + WarpId());
  if (t >= a.n) return;  // whole warps leave together
  const int32_t lane = static_cast<int32_t>(LaneId());
  const int32_t W = static_cast<int32_t>(kWarpSize);
  const float* logits = a.logits + static_cast<int64_t>(t) * a.n_expert;
  float p[kMaxExpertsPerLane];
  if (a.gating == 1) {
    float mx = -INFINITY;
    for (int i = 0; i < kMaxExpertsPerLane; ++i) {
      const int32_t e = lane + W * i;
      p[i] = e < a.n_expert ? logits[e] : -INFINITY;
      mx = DevFmax(mx, p[i]);
    }
    mx = WarpMax(mx);
    float sum = 0.0f;
    for (int i = 0; i < kMaxExpertsPerLane; ++i) {
      const int32_t e = lane + W * i;
      p[i] = e < a.n_expert ? DevExp(p[i] - mx) : 0.0f;
      sum += p[i];
    }
    const float inv = 1.0f / WarpSum(sum);
    for (int i = 0; i < kMaxExpertsPerLane; ++i) p[i] *= inv;
  } else {
    for (int i = 0; i < kMaxExpertsPerLane; ++i) {
      const int32_t e = lane + W * i;
      p[i] = e < a.n_expert ? (a.gating == 2 ? DevSigmoid(logits[e]) : logits[e]) : 0.0f;
    }
  }
  // Expert groups (ops::MaskExpertGroups): the groups_used groups whose two
  // best selection scores sum highest (ties: the lower group) stay eligible.
  const int32_t per_group = a.groups > 1 ? a.n_expert / a.groups : a.n_expert;
  uint32_t kept_groups = 0xffffffffu;
  if (a.groups > 1) {
    float score[32];  // groups <= 32 (CheckHParams)
    for (int32_t g = 0; g < a.groups; ++g) {
      float b1 = -INFINITY, b2 = -INFINITY;
      for (int i = 0; i < kMaxExpertsPerLane; ++i) {
        const int32_t e = lane + W * i;
        if (e >= a.n_expert || e / per_group != g) continue;
        const float v = a.bias ? p[i] + a.bias[e] : p[i];
        if (v > b1) b2 = b1, b1 = v;
        else if (v > b2) b2 = v;
      }
      for (uint32_t m = kWarpSize / 2; m > 0; m >>= 1) {  // the two best of the warp's
        const float o1 = WarpShflXor(b1, static_cast<int>(m)), o2 = WarpShflXor(b2, static_cast<int>(m));
        const float top = DevFmax(b1, o1);
        b2 = DevFmax(DevFmin(b1, o1), DevFmax(b2, o2));
        b1 = top;
      }
      score[g] = b1 + b2;
    }
    kept_groups = 0;
    for (int32_t j = 0; j < a.groups_used; ++j) {
      int32_t best = -1;
      for (int32_t g = 0; g < a.groups; ++g)
        if (!(kept_groups >> g & 1u) && (best < 0 || score[g] > score[best])) best = g;
      kept_groups |= 1u << best;
    }
  }
  uint32_t taken = 0;
  float chosen[16];  // k <= 16 (the host checks)
  int32_t chosen_e[16];
  for (int32_t j = 0; j < a.k; ++j) {
    float bv = -INFINITY, bp = 0.0f;
    int32_t be = a.n_expert;
    for (int i = 0; i < kMaxExpertsPerLane; ++i) {
      const int32_t e = lane + W * i;
      if (e >= a.n_expert || (taken >> i & 1u) || !(kept_groups >> (e / per_group) & 1u)) continue;
      const float v = a.bias ? p[i] + a.bias[e] : p[i];
      if (v > bv || be == a.n_expert) bv = v, bp = p[i], be = e;
    }
    for (uint32_t m = kWarpSize / 2; m > 0; m >>= 1) {
      const float ov = WarpShflXor(bv, static_cast<int>(m));
      const float op = WarpShflXor(bp, static_cast<int>(m));
      const int32_t oe = WarpShflXor(be, static_cast<int>(m));
      if (oe != a.n_expert && (be == a.n_expert || ov > bv || (ov == bv && oe < be))) bv = ov, bp = op, be = oe;
    }
    if (be % W == lane) taken |= 1u << (be / W);
    chosen[j] = bp;
    chosen_e[j] = be;
  }
  if (lane == 0) {
    float w[16];
    for (int32_t j = 0; j < a.k; ++j) w[j] = chosen[j];
    if (a.gating == 3) {
      float mx = -INFINITY, sum = 0.0f;
      for (int32_t j = 0; j < a.k; ++j) mx = DevFmax(mx, w[j]);
      for (int32_t j = 0; j < a.k; ++j) sum += (w[j] = DevExp(w[j] - mx));
      for (int32_t j = 0; j < a.k; ++j) w[j] /= sum;
    }
    float wsum = 0.0f;
    for (int32_t j = 0; j < a.k; ++j) wsum += w[j];
    const float denom = a.norm ? DevFmax(wsum, 6.103515625e-5f) : 1.0f;
    const bool scaled = a.scale != 0.0f && a.scale != 1.0f;
    for (int32_t j = 0; j < a.k; ++j) {
      const int64_t o = static_cast<int64_t>(t) * a.k + j;
      a.sel[o] = chosen_e[j];
      a.probs[o] = a.gating == 3 ? w[j] : chosen[j];  // the observer's: the chosen's probabilities
      float v = a.norm ? w[j] / denom : w[j];
      if (scaled) v *= a.scale;
      a.wts[o] = v;
    }
  }
}

STRATA_KERNEL(strata_moe_count, MoeRouteArgs) {
  const int32_t i = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < a.n_entries) AtomicAdd(&a.counts[a.sel[i]], 1);
}

// One block: each expert's first place, the tiles of the tiled products
// (tile_cols columns of one expert each), and the fill counters zeroed.
STRATA_KERNEL(strata_moe_offsets, MoeRouteArgs) {
  STRATA_SHARED(int32_t, tile_first, 1025);
  if (threadIdx.x == 0) {
    int32_t at = 0, tiles = 0;
    for (int32_t e = 0; e < a.n_expert; ++e) {
      a.first[e] = at;
      tile_first[e] = tiles;
      at += a.counts[e];
      tiles += (a.counts[e] + a.tile_cols - 1) / a.tile_cols;
    }
    a.first[a.n_expert] = at;
    tile_first[a.n_expert] = tiles;
    *a.n_tiles = tiles < a.max_tiles ? tiles : a.max_tiles;
  }
  __syncthreads();
  for (int32_t e = static_cast<int32_t>(threadIdx.x); e < a.n_expert; e += static_cast<int32_t>(blockDim.x)) {
    a.fill[e] = 0;
    int32_t tile = tile_first[e];
    for (int32_t c = 0; c < a.counts[e] && tile < a.max_tiles; c += a.tile_cols, ++tile) {
      a.tile_expert[tile] = e;
      a.tile_col0[tile] = a.first[e] + c;
      a.tile_ncols[tile] = a.counts[e] - c < a.tile_cols ? a.counts[e] - c : a.tile_cols;
    }
  }
}

// Entry i's place within its expert's run (the order inside a run depends on
// the atomics; each place's result does not).
STRATA_KERNEL(strata_moe_place, MoeRouteArgs) {
  const int32_t i = static_cast<int32_t>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= a.n_entries) return;
  const int32_t e = a.sel[i];
  const int32_t p = a.first[e] + AtomicAdd(&a.fill[e], 1);
  a.where[i] = p;
  a.place_expert[p] = e;
  a.place_token[p] = i / a.k;
}

// Block t: the token's weighted sum, in routing order.
STRATA_KERNEL(strata_moe_combine, MoeCombineArgs) {
  const int64_t t = blockIdx.x;
  float* out = a.out + t * a.cols;
  for (int32_t d = static_cast<int32_t>(threadIdx.x); d < a.cols; d += static_cast<int32_t>(blockDim.x)) {
    float acc = 0.0f;
    for (int32_t j = 0; j < a.k; ++j) {
      const int64_t i = t * a.k + j;
      const int64_t p = a.where ? a.where[i] : i;
      const float r = a.results[p * a.cols + d] * a.wts[i];
      acc = j == 0 ? r : acc + r;
    }
    out[d] = acc;
  }
}

STRATA_GPU_END
