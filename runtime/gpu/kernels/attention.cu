// Attention: the per-token preparation (QK RMSNorm, RoPE, the KV-cache
// append) and grouped-query attention over the cache (tiled over keys,
// online softmax; split over the context for decode, then combined), with
// gated attention's sigmoid gate on the output.

#include "runtime/gpu/kernels/kernel_args.h"
#include "runtime/gpu/kernels/portable.h"

STRATA_GPU_BEGIN

inline constexpr int kKvF32 = 0, kKvF16 = 1, kKvQ8_0 = 2;

// Element i of a head's row stored as kv_type at `row`.
STRATA_DEV float LoadKv(const uint8_t* row, int32_t kv_type, int32_t i) {
  if (kv_type == kKvF32) return reinterpret_cast<const float*>(row)[i];
  if (kv_type == kKvF16) return HalfToFloat(Load16(row + 2 * i));
  const uint8_t* block = row + (i / 32) * 34;
  return HalfToFloat(Load16(block)) * static_cast<float>(static_cast<int8_t>(block[2 + i % 32]));
}

// A warp stores a head's row of d values (from x, in memory the warp wrote
// before a WarpSync) as kv_type at `dst`. Q8_0: 32 lanes per block of 32
// (two blocks per step at 64 lanes), d = max|x| / 127, q = round(x / d), as
// the CPU's Q8_0 cache rule.
STRATA_DEV void StoreKvRow(const float* x, int32_t d, int32_t kv_type, uint8_t* dst) {
  const int32_t lane = static_cast<int32_t>(LaneId());
  const int32_t W = static_cast<int32_t>(kWarpSize);
  if (kv_type == kKvF32) {
    for (int32_t i = lane; i < d; i += W) reinterpret_cast<float*>(dst)[i] = x[i];
    return;
  }
  if (kv_type == kKvF16) {
    for (int32_t i = lane; i < d; i += W) {
      const uint16_t h = FloatToHalf(x[i]);
      dst[2 * i] = static_cast<uint8_t>(h);
      dst[2 * i + 1] = static_cast<uint8_t>(h >> 8);
    }
    return;
  }
  for (int32_t base = 0; base < d; base += W) {  // d % 32 == 0 (CheckKvType)
    const int32_t i = base + lane;
    const bool live = i < d;
    const float v = live ? x[i] : 0.0f;
    float amax = DevAbs(v);
    amax = WarpFmax(amax, 16);
    const float scale = amax / 127.0f;
    const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
    if (!live) continue;
    uint8_t* block = dst + (i / 32) * 34;
    block[2 + i % 32] = static_cast<uint8_t>(static_cast<int8_t>(DevRoundToInt(v * inv)));
    if (i % 32 == 0) {
      const uint16_t h = FloatToHalf(scale);
      block[0] = static_cast<uint8_t>(h);
      block[1] = static_cast<uint8_t>(h >> 8);
    }
  }
}

// A warp normalizes (RMSNorm times w, when w is set) and rotates (RoPE) one
// head vector x of d values in place, for position pos.
STRATA_DEV void NormRope(float* x, int32_t d, const float* w, const AttnPrepArgs& a, int32_t pos) {
  const int32_t lane = static_cast<int32_t>(LaneId());
  const int32_t W = static_cast<int32_t>(kWarpSize);
  if (w) {
    float s = 0.0f;
    for (int32_t i = lane; i < d; i += W) s += x[i] * x[i];
    s = WarpSum(s);
    const float scale = 1.0f / DevSqrt(s / static_cast<float>(d) + a.eps);
    for (int32_t i = lane; i < d; i += W) x[i] = (x[i] * scale) * w[i];
    WarpSync();
  }
  // theta_i = pos * base^(-2i / n_rot), built by repeated multiplication as
  // the CPU (and ggml's rope cache) builds it.
  // With YaRN (ext_factor != 0) pair i blends the scaled and unscaled
  // angles by its ramp, and cos and sin carry the magnitude correction.
  const int32_t half = a.n_rot / 2;
  const float theta_scale = DevPow(a.freq_base, -2.0f / static_cast<float>(a.n_rot));
  float mscale = a.mscale;
  if (a.ext_factor != 0.0f) mscale *= 1.0f + 0.1f * DevLog(1.0f / a.freq_scale);
  for (int32_t i = lane; i < half; i += W) {
    float theta_extrap = static_cast<float>(pos);
    for (int32_t k = 0; k < i; ++k) theta_extrap *= theta_scale;
    float theta = a.freq_scale * theta_extrap;
    if (a.ext_factor != 0.0f) {
      const float y = (static_cast<float>(i) - a.corr_low) / DevFmax(0.001f, a.corr_high - a.corr_low);
      const float ramp_mix = (1.0f - DevFmin(1.0f, DevFmax(0.0f, y))) * a.ext_factor;
      theta = theta * (1.0f - ramp_mix) + theta_extrap * ramp_mix;
    }
    const float c = DevCos(theta) * mscale, s = DevSin(theta) * mscale;
    const int32_t i0 = a.rope_neox ? i : 2 * i, i1 = a.rope_neox ? i + half : 2 * i + 1;
    const float x0 = x[i0], x1 = x[i1];
    x[i0] = x0 * c - x1 * s;
    x[i1] = x0 * s + x1 * c;
  }
  WarpSync();
}

// A sliding window's ring (PassTables::swa_ring): token t's row for its
// position, the first or the second copy; one copy at row pos elsewhere.
STRATA_DEV int32_t KvCopies(const AttnPrepArgs& a, int32_t t) {
  return a.swa && a.tables.swa_ring[a.tables.seq[t]] > 0 ? 2 : 1;
}
STRATA_DEV int64_t KvRow(const AttnPrepArgs& a, int32_t t, int32_t pos, int copy) {
  const int32_t ring = a.swa ? a.tables.swa_ring[a.tables.seq[t]] : 0;
  return ring > 0 ? static_cast<int64_t>(pos % ring) + static_cast<int64_t>(copy) * ring : pos;
}

// Grid (n, ceil((H + 2 Hkv) / warps)): a warp per (token, item); items are
// the query heads, then the key heads, then the value heads.
STRATA_KERNEL(strata_attn_prep, AttnPrepArgs) {
  const int32_t t = static_cast<int32_t>(blockIdx.x);
  const int32_t item = static_cast<int32_t>(blockIdx.y * (blockDim.x / kWarpSize) + WarpId());
  if (item >= a.H + 2 * a.Hkv) return;
  const int32_t pos = a.tables.pos[t];
  const int64_t slot = static_cast<int64_t>(a.layer) * a.n_seq + a.tables.seq[t];
  if (item < a.H) {
    NormRope(a.q + static_cast<int64_t>(t) * a.q_width + static_cast<int64_t>(item) * a.q_head_stride, a.Dk, a.q_norm,
             a, pos);
  } else if (item < a.H + a.Hkv) {
    const int32_t h = item - a.H;
    // The pass's k rows are scratch: normalized and rotated in place, then stored.
    float* k = const_cast<float*>(a.k) + (static_cast<int64_t>(t) * a.Hkv + h) * a.Dk;
    NormRope(k, a.Dk, a.k_norm, a, pos);
    for (int copy = 0; copy < KvCopies(a, t); ++copy)
      StoreKvRow(k, a.Dk, a.kv_type, a.tables.k_cache[slot] + KvRow(a, t, pos, copy) * a.k_row_bytes + h * a.k_head_bytes);
  } else {
    const int32_t h = item - a.H - a.Hkv;
    const float* v = a.v + (static_cast<int64_t>(t) * a.Hkv + h) * a.Dv;
    for (int copy = 0; copy < KvCopies(a, t); ++copy)
      StoreKvRow(v, a.Dv, a.kv_type, a.tables.v_cache[slot] + KvRow(a, t, pos, copy) * a.v_row_bytes + h * a.v_head_bytes);
  }
}

// Latent attention's preparation. Grid (n, ceil((H + 1) / warps)): a warp per
// (token, item); items are the query heads (RoPE of the head's RoPE part,
// copied into qcat, its nope part gathered head by head into head_in), then
// the cached row (the latent's RMSNorm, RoPE of the key part, the append).
STRATA_KERNEL(strata_mla_prep, AttnPrepArgs) {
  const int32_t t = static_cast<int32_t>(blockIdx.x);
  const int32_t item = static_cast<int32_t>(blockIdx.y * (blockDim.x / kWarpSize) + WarpId());
  if (item > a.H) return;
  const int32_t lane = static_cast<int32_t>(LaneId());
  const int32_t W = static_cast<int32_t>(kWarpSize);
  const int32_t pos = a.tables.pos[t];
  if (item < a.H) {
    float* q = a.q + (static_cast<int64_t>(t) * a.H + item) * a.mla_dq;
    NormRope(q + a.mla_nope, a.n_rot, nullptr, a, pos);
    float* qc = a.qcat + (static_cast<int64_t>(t) * a.H + item) * a.Dk + a.mla_l;
    for (int32_t i = lane; i < a.n_rot; i += W) qc[i] = q[a.mla_nope + i];
    float* hi = a.head_in + (static_cast<int64_t>(item) * a.n + t) * a.mla_nope;
    for (int32_t i = lane; i < a.mla_nope; i += W) hi[i] = q[i];
    return;
  }
  float* row = const_cast<float*>(a.k) + static_cast<int64_t>(t) * a.Dk;
  float s = 0.0f;
  for (int32_t i = lane; i < a.mla_l; i += W) s += row[i] * row[i];
  s = WarpSum(s);
  const float scale = 1.0f / DevSqrt(s / static_cast<float>(a.mla_l) + a.eps);
  for (int32_t i = lane; i < a.mla_l; i += W) row[i] = (row[i] * scale) * a.k_norm[i];
  WarpSync();
  NormRope(row + a.mla_l, a.n_rot, nullptr, a, pos);
  const int64_t slot = static_cast<int64_t>(a.layer) * a.n_seq + a.tables.seq[t];
  StoreKvRow(row, a.Dk, a.kv_type, a.tables.k_cache[slot] + pos * a.k_row_bytes);
}

inline constexpr int kAttnWarps = 4;         // a block is 4 warps
inline constexpr int kMaxRowsPerWarp = 8;    // rows_per_block <= 32
inline constexpr int kMaxDvPerLane = 8;      // Dv <= 8 * warp size

// Grid (tiles, Hkv, splits), 4 warps. Dynamic shared memory (floats):
// Q rows_per_block x Dk, K keys_per_tile x (Dk + 1), V keys_per_tile x Dv,
// P rows_per_block x keys_per_tile.
STRATA_KERNEL(strata_attention, AttnArgs) {
  STRATA_DYNAMIC_SHARED(float, smem);
  const int32_t tile = static_cast<int32_t>(blockIdx.x);
  const int32_t kvh = static_cast<int32_t>(blockIdx.y);
  const int32_t split = static_cast<int32_t>(blockIdx.z);
  const int32_t G = a.H / a.Hkv;
  const int32_t t0 = a.tile_t0[tile], nt = a.tile_nt[tile];
  const int32_t R = nt * G;  // <= rows_per_block
  const int32_t KT = a.keys_per_tile;
  const int32_t lane = static_cast<int32_t>(LaneId()), warp = static_cast<int32_t>(WarpId());
  const int32_t W = static_cast<int32_t>(kWarpSize);
  float* Q = smem;
  float* K = Q + a.rows_per_block * a.Dk;
  float* V = K + KT * (a.Dk + 1);
  float* P = V + KT * a.Dv;
  const int64_t slot = static_cast<int64_t>(a.layer) * a.n_seq + a.tables.seq[t0];
  const uint8_t* kc = a.tables.k_cache[slot] + kvh * a.k_head_bytes;
  const uint8_t* vc = (a.v_in_k ? a.tables.k_cache[slot] : a.tables.v_cache[slot]) + kvh * a.v_head_bytes;
  // Row r = token t0 + r / G, head kvh * G + r % G.
  for (int32_t e = static_cast<int32_t>(threadIdx.x); e < R * a.Dk; e += static_cast<int32_t>(blockDim.x)) {
    const int32_t r = e / a.Dk, i = e % a.Dk;
    Q[e] = a.q[static_cast<int64_t>(t0 + r / G) * a.q_width + static_cast<int64_t>(kvh * G + r % G) * a.q_head_stride + i];
  }
  const int32_t last_pos = a.tables.pos[t0 + nt - 1];
  int32_t k_begin = 0, k_end = last_pos + 1;
  if (a.splits > 1) {
    k_begin = split * a.split_keys;
    k_end = k_end < k_begin + a.split_keys ? k_end : k_begin + a.split_keys;
  }
  // A sliding window: the key tiles start at the tile of the lowest key the
  // first token sees (tiles before it are all masked; the tiles stay on the
  // grid of KT from 0, so the sums' order does not change). A ring reads key
  // j at row j - off (PassTables::swa_ring; off is a multiple of the ring,
  // a multiple of 64, so of KT).
  int64_t off = 0;
  if (a.n_swa > 0) {
    const int32_t p0 = a.tables.pos[t0];
    const int32_t lo = (p0 >= a.n_swa ? p0 - a.n_swa + 1 : 0) / KT * KT;
    if (k_begin < lo) k_begin = lo;
    const int32_t ring = a.tables.swa_ring[a.tables.seq[t0]];
    if (ring > 0) off = lo - lo % ring;
  }
  float m[kMaxRowsPerWarp], l[kMaxRowsPerWarp], o[kMaxRowsPerWarp][kMaxDvPerLane];
  for (int rw = 0; rw < kMaxRowsPerWarp; ++rw) {
    m[rw] = -INFINITY;
    l[rw] = 0.0f;
    for (float& v : o[rw]) v = 0.0f;
  }
  for (int32_t kt0 = k_begin; kt0 < k_end; kt0 += KT) {
    const int32_t nk = k_end - kt0 < KT ? k_end - kt0 : KT;
    __syncthreads();  // the previous tile's K, V and P are no longer read
    for (int32_t e = static_cast<int32_t>(threadIdx.x); e < nk * a.Dk; e += static_cast<int32_t>(blockDim.x)) {
      const int32_t j = e / a.Dk, i = e % a.Dk;
      K[j * (a.Dk + 1) + i] = LoadKv(kc + (kt0 + j - off) * a.k_row_bytes, a.kv_type, i);
    }
    for (int32_t e = static_cast<int32_t>(threadIdx.x); e < nk * a.Dv; e += static_cast<int32_t>(blockDim.x)) {
      const int32_t j = e / a.Dv, i = e % a.Dv;
      V[j * a.Dv + i] = LoadKv(vc + (kt0 + j - off) * a.v_row_bytes, a.kv_type, i);
    }
    __syncthreads();
    for (int rw = 0; rw < kMaxRowsPerWarp; ++rw) {
      const int32_t r = warp + kAttnWarps * rw;
      if (r >= R) break;  // the same for every lane of the warp
      const int32_t pos = a.tables.pos[t0 + r / G];
      const int32_t n_keys = pos + 1;                                          // causal
      const int32_t first = a.n_swa > 0 && pos >= a.n_swa ? pos - a.n_swa + 1 : 0;  // the window
      float s = -INFINITY;
      if (lane < nk && kt0 + lane < n_keys && kt0 + lane >= first) {
        float dot = 0.0f;
        for (int32_t i = 0; i < a.Dk; ++i) dot += Q[r * a.Dk + i] * K[lane * (a.Dk + 1) + i];
        s = dot * a.scale;
      }
      const float m_new = DevFmax(m[rw], WarpMax(s));
      if (m_new == -INFINITY) continue;  // no key of this row yet (the whole warp agrees)
      const float alpha = DevExp(m[rw] - m_new);
      const float p = s == -INFINITY ? 0.0f : DevExp(s - m_new);
      l[rw] = l[rw] * alpha + WarpSum(p);
      m[rw] = m_new;
      if (lane < KT) P[r * KT + lane] = p;
      WarpSync();
      for (int c = 0; c < kMaxDvPerLane; ++c) {
        const int32_t d = lane + W * c;
        if (d >= a.Dv) break;
        float acc = o[rw][c] * alpha;
        for (int32_t j = 0; j < nk; ++j) acc += P[r * KT + j] * V[j * a.Dv + d];
        o[rw][c] = acc;
      }
      WarpSync();  // P's row is rewritten by the next tile only after the block barrier, but keep lanes together
    }
  }
  for (int rw = 0; rw < kMaxRowsPerWarp; ++rw) {
    const int32_t r = warp + kAttnWarps * rw;
    if (r >= R) break;
    const int32_t t = t0 + r / G, h = kvh * G + r % G;
    if (a.splits == 1) {
      const float* gate = a.q + static_cast<int64_t>(t) * a.q_width + static_cast<int64_t>(h) * a.q_head_stride + a.Dk;
      // A sink: one more logit in the softmax that weighs no value.
      float corr = 1.0f;
      if (a.sinks) {
        const float sk = a.sinks[h], mf = DevFmax(m[rw], sk);
        corr = m[rw] == -INFINITY ? 0.0f : DevExp(m[rw] - mf);
        l[rw] = l[rw] * corr + DevExp(sk - mf);
      }
      const float inv = l[rw] > 0.0f ? corr / l[rw] : 0.0f;
      for (int c = 0; c < kMaxDvPerLane; ++c) {
        const int32_t d = lane + W * c;
        if (d >= a.Dv) break;
        float v = o[rw][c] * inv;
        if (a.gated) v *= DevSigmoid(gate[d]);
        a.out[(static_cast<int64_t>(t) * a.H + h) * a.Dv + d] = v;
      }
    } else {
      float* part = a.partial + ((static_cast<int64_t>(t) * a.H + h) * a.splits + split) * (a.Dv + 2);
      if (lane == 0) part[0] = m[rw], part[1] = l[rw];
      for (int c = 0; c < kMaxDvPerLane; ++c) {
        const int32_t d = lane + W * c;
        if (d >= a.Dv) break;
        part[2 + d] = o[rw][c];
      }
    }
  }
}

// Block (t * H + h): the splits' partial softmax sums merged.
STRATA_KERNEL(strata_attn_combine, AttnCombineArgs) {
  const int64_t row = blockIdx.x;
  const int64_t t = row / a.H, h = row % a.H;
  const float* part = a.partial + row * a.splits * (a.Dv + 2);
  float mx = a.sinks ? a.sinks[h] : -INFINITY;
  for (int32_t s = 0; s < a.splits; ++s) mx = DevFmax(mx, part[s * (a.Dv + 2)]);
  float L = a.sinks ? DevExp(a.sinks[h] - mx) : 0.0f;  // a sink: one more logit, no value
  for (int32_t s = 0; s < a.splits; ++s)
    if (part[s * (a.Dv + 2) + 1] > 0.0f) L += part[s * (a.Dv + 2) + 1] * DevExp(part[s * (a.Dv + 2)] - mx);
  const float inv = L > 0.0f ? 1.0f / L : 0.0f;
  const float* gate = a.q + t * a.q_width + h * a.q_head_stride + a.Dk;
  for (int32_t d = static_cast<int32_t>(threadIdx.x); d < a.Dv; d += static_cast<int32_t>(blockDim.x)) {
    float acc = 0.0f;
    for (int32_t s = 0; s < a.splits; ++s) {
      const float* p = part + s * (a.Dv + 2);
      if (p[1] > 0.0f) acc += p[2 + d] * DevExp(p[0] - mx);
    }
    float v = acc * inv;
    if (a.gated) v *= DevSigmoid(gate[d]);
    a.out[row * a.Dv + d] = v;
  }
}

STRATA_GPU_END
