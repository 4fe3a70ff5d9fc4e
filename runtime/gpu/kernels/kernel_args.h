#pragma once
// The argument of every kernel: one plain struct per kernel family, passed
// by value (Device::Launch copies its bytes). Shared by the kernels
// (runtime/gpu/kernels/*.cu) and the host code that launches them
// (runtime/gpu/gpu_ops.cc), so both see one layout. Device addresses are
// typed pointers: the host writes DevicePtr values into them and never
// dereferences them.
//
// Per-pass data that changes between decode steps (positions, the tokens'
// sequences, the KV cache addresses of each sequence) lives in device memory
// (the pass tables, uploaded once per pass), never in these structs, so a
// decode step's launches are the same from step to step and can be replayed
// as one graph.

#include <cstdint>

namespace strata::gpu {

// Activations quantized for the int8 products: 32 values of one row as int8
// with a scale d (x ~ d * q), and d times the sum of each half's q (for the
// weights' per-16 offsets). 48 bytes, 16-byte aligned.
struct alignas(16) XBlock {
  int32_t q[8];
  float d;
  float ds[2];
  float pad;
};
static_assert(sizeof(XBlock) == 48);

// The pass tables (BeginPass uploads them; a pass has n tokens from n_seq
// sequences, each sequence's tokens contiguous).
struct PassTables {
  const int32_t* ids;        // [n] token ids
  const int32_t* pos;        // [n] position of each token in its sequence
  const int32_t* seq;        // [n] the token's sequence, 0..n_seq-1
  const int32_t* run_start;  // [n] the first token (of the pass) of its sequence
  const int32_t* seq_first;  // [n_seq] a sequence's first token in the pass
  const int32_t* seq_len;    // [n_seq] its tokens in the pass
  const int32_t* rows;       // [n_rows] the tokens whose logits are asked for
  // [n_seq] a sequence's sliding-window ring (SequenceState::swa_ring): on
  // the layers that slide, position p is stored at rows p % R and p % R + R,
  // and key j of a window whose lowest position is lo at row j - (lo - lo % R).
  // 0: row p.
  const int32_t* swa_ring;
  // Per layer, per sequence: the state's parts (device addresses), at
  // [layer * n_seq + s]. Null where a layer has no such part.
  uint8_t* const* k_cache;
  uint8_t* const* v_cache;
  float* const* conv_state;
  float* const* ssm_state;
};

// y[i] = value for i < n.
struct FillArgs {
  float* y;
  int64_t n;
  float value;
};

// x[t] = the embedding row of token ids[t], dequantized.
struct EmbedArgs {
  const uint8_t* table;
  uint64_t row_bytes;
  const int32_t* ids;
  float* x;
  int32_t n;
  int32_t cols;
};

// y[r] = RMSNorm(x[rows ? rows[r] : r]) * w for r < n (w may be null).
struct RmsNormArgs {
  const float* x;
  const float* w;
  float* y;
  const int32_t* rows;
  int32_t n;
  int32_t cols;
  float eps;
};

// x[i] += y[i].
struct AddArgs {
  float* x;
  const float* y;
  int64_t n;
};

// y[i] += bias[i % width] for i < n (n rows of width values).
struct AddBiasArgs {
  float* y;
  const float* bias;
  int64_t n;
  int32_t width;
};

// How activations are quantized for a weight type: as llama.cpp's CPU
// backend converts them (its vec_dot type, docs/quant-types.md), so the int8
// values are the ones its integer sums see.
//   kActQ8_0  32 values: d = max|x| / 127, q = round-half-even(x * 127 / max|x|),
//             d rounded to F16 for the products (Q8_0's x86 rule);
//   kActQ8_1  the same d and q, and the sum term F16(d * sum q) (Q8_1's);
//   kActQ8_K  256 values: m = the value of largest |x|, q = min(127,
//             round-half-even(-127 / m * x)), d = -m / 127 (Q8_K's), written
//             to each of the block's 8 XBlocks with the sums of each 16.
enum ActQuant : int32_t { kActQ8_0 = 0, kActQ8_1 = 1, kActQ8_K = 2 };

// q[r] = the XBlocks of row (rows ? rows[r] : r) of x, for r < n.
struct QuantizeArgs {
  const float* x;
  XBlock* q;
  const int32_t* rows;
  int32_t n;
  int32_t cols;
  int32_t mode;  // ActQuant: kActQ8_0 or kActQ8_1 (strata_quantize_q8); kActQ8_K (strata_quantize_q8k)
};

// A weight matrix (or a tensor of experts: expert e's rows start at
// w + e * expert_stride) times activation columns.
//
// Plain (groups == null): y[c * y_stride + r] = dot(row r, column c) for
// c < n, r < rows; column c of x at c (x_stride per column).
// Grouped (MoE, group_expert != null): output column c (of n) uses the
// expert group_expert[c] and activation column group_xcol[c] (group_xcol
// null: column c). The tiled products
// cover those columns in tiles of one expert each: tile t (< *n_tiles)
// covers columns tile_col0[t] .. + tile_ncols[t] of expert tile_expert[t].
struct MatMulArgs {
  const uint8_t* w;
  uint64_t row_bytes;
  uint64_t expert_stride;
  int32_t rows;
  int32_t cols;
  const void* x;         // XBlock* (quantized types) or float* (float types)
  int64_t x_stride;      // per column: XBlocks or floats
  float* y;
  int64_t y_stride;      // per column
  int32_t n;             // columns
  const int32_t* group_expert;  // [n] or null
  const int32_t* group_xcol;    // [n] or null
  const int32_t* tile_expert;   // tiled grouped products
  const int32_t* tile_col0;
  const int32_t* tile_ncols;
  const int32_t* n_tiles;
};

// g[i] = silu(g[i]) * u[i].
// g = silu(g) * u; with alpha set, gpt-oss's clamped form:
// g = min(g, limit) * sigmoid(alpha * min(g, limit)) * (clamp(u, -limit, limit) + 1).
struct SwiGluArgs {
  float* g;
  const float* u;
  int64_t n;
  float alpha = 0.0f, limit = 0.0f;
};

// y[p][i] += bias[place_expert[p]][i] for n = places x width values (the
// experts' biases, gpt-oss).
struct AddBiasPlacesArgs {
  float* y;
  const float* bias;  // [n_expert][width]
  const int32_t* place_expert;
  int64_t n;
  int32_t width;
};

// Attention's per-token preparation: QK RMSNorm, RoPE, and the append of the
// token's K and V rows to its sequence's cache as kv_type.
struct AttnPrepArgs {
  float* q;                 // [n][q_width]: head h at h * q_head_stride (in place)
  const float* k;           // [n][Hkv * Dk]
  const float* v;           // [n][Hkv * Dv]
  const float* q_norm;      // [Dk] or null
  const float* k_norm;
  PassTables tables;
  int32_t layer;
  int32_t n_seq;
  int32_t n;
  int32_t H, Hkv, Dk, Dv;
  int32_t q_width, q_head_stride;
  int32_t n_rot;
  int32_t rope_neox;        // 1: NeoX pairs (i, i + n_rot/2); 0: (2i, 2i + 1)
  int32_t kv_type;          // KvType: 0 F32, 1 F16, 2 Q8_0
  int32_t swa;              // 1: the layer slides (its cache may be a ring: PassTables::swa_ring)
  int64_t k_row_bytes;      // one position's row of every KV head
  int64_t v_row_bytes;
  int64_t k_head_bytes;
  int64_t v_head_bytes;
  float freq_base, freq_scale, eps;
  // RoPE scaling (ops::RopeParams): YaRN's blend and the magnitude of cos and sin.
  float ext_factor, mscale, corr_low, corr_high;
  // Latent attention (strata_mla_prep): q is [n][H][mla_dq] (nope, then RoPE
  // part), k is [n][Dk] (latent, then RoPE part; k_norm the latent's norm);
  // each head's RoPE part goes to qcat[t][h][mla_l..], its nope part to
  // head_in[h][t][0..mla_nope).
  float* qcat;
  float* head_in;
  int32_t mla_l, mla_nope, mla_dq;
};

// Rows copied between two layouts: row (i, j) of width floats, i < n_i, j <
// n_j, from src + i * src_i + j * src_j to dst + i * dst_i + j * dst_j.
struct CopyRowsArgs {
  const float* src;
  float* dst;
  int64_t src_i, src_j, dst_i, dst_j;
  int32_t n_i, n_j, width;
};

// Grouped-query attention over the cache, tiled over keys with an online
// softmax. Block (tile, kv head, split): query rows = the tile's tokens x the
// group's heads; keys of the split's range (causal: up to each token's
// position). splits == 1 writes out (times sigmoid(gate) when gated);
// otherwise each split writes a partial (max, sum, o) that AttnCombine merges.
struct AttnArgs {
  const float* q;
  PassTables tables;
  int32_t layer;
  int32_t n_seq;
  const int32_t* tile_t0;   // [n_tiles] first token of a tile (tokens of one sequence)
  const int32_t* tile_nt;   // [n_tiles] its tokens
  int32_t q_width, q_head_stride;
  int32_t H, Hkv, Dk, Dv;
  int32_t kv_type;
  int64_t k_row_bytes, v_row_bytes, k_head_bytes, v_head_bytes;
  int32_t rows_per_block;   // tile tokens x group heads, at most this
  int32_t keys_per_tile;    // keys staged in shared memory at once (<= 32)
  int32_t splits;
  int32_t split_keys;       // keys per split (splits > 1)
  int32_t gated;
  float scale;
  float* out;               // [n][H * Dv]
  float* partial;           // [n * H][splits][Dv + 2]
  const float* sinks;       // [H] a sink logit per head (gpt-oss), or null
  int32_t n_swa;            // a sliding window: a token sees its last n_swa positions; 0: all
  int32_t v_in_k;           // values: the first Dv of each cached key row (latent attention; no V cache)
};

struct AttnCombineArgs {
  const float* partial;
  const float* q;           // for the gate
  int32_t q_width, q_head_stride, Dk;
  int32_t n, H, Dv, splits, gated;
  float* out;
  const float* sinks;       // [H] or null
};

// Router: per token, softmax over the experts' logits, the top k, their
// weights (renormalized when norm, times scale when scale is not 0 or 1),
// and the chosen experts' probabilities (for a routing observer).
struct TopKArgs {
  const float* logits;  // [n][n_expert]
  int32_t* sel;         // [n][k]
  float* wts;           // [n][k]
  float* probs;         // [n][k]
  const float* bias;     // [n_expert] selection bias (exp_probs_b), or null
  int32_t n, n_expert, k;
  int32_t gating;        // ExpertGating: 1 softmax, 2 sigmoid, 3 softmax over the chosen
  int32_t norm;
  float scale;
  int32_t groups, groups_used;  // expert groups (ops::MaskExpertGroups); groups <= 1: none
};

// The selected (token, k) entries grouped by expert (MoeCount, MoeOffsets,
// MoePlace, in that order): entry i = t * k + j goes to place where[i];
// place p holds expert place_expert[p] for token place_token[p].
struct MoeRouteArgs {
  const int32_t* sel;
  int32_t n_entries;   // n * k
  int32_t k;
  int32_t n_expert;
  int32_t* counts;     // [n_expert], zeroed before MoeCount
  int32_t* first;      // [n_expert + 1]
  int32_t* fill;       // [n_expert], zeroed by MoeOffsets
  int32_t* where;      // [n_entries]
  int32_t* place_expert;
  int32_t* place_token;
  int32_t tile_cols;   // columns per tile of the tiled products
  int32_t max_tiles;
  int32_t* tile_expert;
  int32_t* tile_col0;
  int32_t* tile_ncols;
  int32_t* n_tiles;
};

// out[t] = sum_j wts[t * k + j] * results[where[t * k + j]], j in routing order.
struct MoeCombineArgs {
  const float* results;
  const int32_t* where;  // null: entry order
  const float* wts;
  float* out;
  int32_t n, k, cols;
};

// out[t] += sigmoid(dot(gate_w, h[t])) * sh[t]; gate_w null: out[t] += sh[t].
struct SharedGateArgs {
  const float* h;
  const float* gate_w;
  const float* sh;
  float* out;
  int32_t n, cols;
};

// Gated delta-net, the causal convolution with SiLU: x[t] from the token's
// window (the carried state's rows, then earlier tokens of its run).
struct ConvArgs {
  const float* qkv;       // [n][channels]
  float* x;               // [n][channels]
  const float* conv_w;    // [channels][d_conv]
  PassTables tables;
  int32_t layer;
  int32_t n_seq;
  int32_t n, channels, d_conv;
};

// The carried window after the pass: each sequence's last d_conv - 1 inputs.
struct ConvUpdateArgs {
  const float* qkv;
  PassTables tables;
  int32_t layer;
  int32_t n_seq;
  int32_t channels, d_conv;
};

// L2-normalized q and k per key head (q scaled), beta = sigmoid(beta),
// alpha = softplus(alpha + dt_bias) * a (the log-decay).
struct DeltaPrepArgs {
  float* x;          // [n][channels]: q | k | v
  float* beta;       // [n][n_v]
  float* alpha;      // [n][n_v]
  const float* dt_bias;
  const float* a;
  int32_t n, channels, n_k, n_v, dk;
  float eps, q_scale;
};

// The delta rule over each sequence's tokens, per value head: sequential
// (token by token) or chunked. Block (sequence, value head), a thread per
// value column.
struct DeltaRuleArgs {
  const float* x;      // [n][channels]
  const float* beta;   // [n][n_v]
  const float* alpha;  // [n][n_v] log-decays
  float* y;            // [n][n_v * dv]
  PassTables tables;
  int32_t layer;
  int32_t n_seq;
  int32_t channels, key_dim, n_k, n_v, dk, dv;
  int32_t chunked;
  int32_t grouped_heads;  // value head hv reads key head hv / (n_v / n_k) (else hv % n_k): HParams::SsmKeyHead
  float* scratch;      // chunked: [n_seq * n_v][chunk][dv]
};

// z[t][h] = RMSNorm(y[t][h]) * norm_w * silu(z[t][h]) per value head.
struct GatedNormArgs {
  const float* y;
  float* z;
  const float* norm_w;
  int32_t n, n_v, dv;
  float eps;
};

// out[r] = argmax of logits row r (the first of equal maxima; 0 when the
// row starts with NaN), as the CPU's Sampler::Argmax.
struct ArgmaxArgs {
  const float* logits;
  int32_t* out;
  int32_t rows, cols;
};

}  // namespace strata::gpu
