// The GPU backend's layer ops: attention, the gated delta-net, the dense and
// routed FFNs, the shared expert. Each takes its scratch from the pass's
// workspace in the order gpu_workspace.cc counts it.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "runtime/base/strings.h"
#include "runtime/gpu/gpu_backend.h"
#include "runtime/model/ops.h"
#include "runtime/gpu/gpu_pass.h"
#include "runtime/gpu/gpu_workspace.h"
#include "runtime/gpu/kernels/kernel_args.h"

namespace strata {

using gpu::AsPtr;
using gpu::DevicePtr;
using gpu::Dim3;
using gpu::GridFor;
using gpu::Take;
using R = TensorRole;

namespace {
uint64_t F(int64_t n) { return static_cast<uint64_t>(n) * sizeof(float); }
uint64_t I(int64_t n) { return static_cast<uint64_t>(n) * sizeof(int32_t); }
}  // namespace

Status GpuBackend::Product(const TensorView* w, DevicePtr x, int64_t n, DevicePtr y) {
  STRATA_ASSIGN_OR_RETURN(gpu::DeviceMatrix m, Weight(w));
  WorkspaceScope scope(*pass_->ws);
  DevicePtr xq = 0;
  if (gpu::QuantizesActivations(m.type)) {
    xq = Take(*pass_->ws, gpu::QuantizedBytes(n, m.cols));
    if (!xq) return pass_->ws->Exhausted("a product's activations");
  }
  return gpu::MatMul(L(), m, x, n, y, xq);
}

Status GpuBackend::SwiGlu(const TensorView* gate, const TensorView* up, const TensorView* down, DevicePtr x, int64_t n,
                          DevicePtr out) {
  Workspace& ws = *pass_->ws;
  WorkspaceScope scope(ws);
  STRATA_ASSIGN_OR_RETURN(gpu::DeviceMatrix g, Weight(gate));
  STRATA_ASSIGN_OR_RETURN(gpu::DeviceMatrix u, Weight(up));
  const DevicePtr gv = Take(ws, F(n * g.rows));
  const DevicePtr uv = Take(ws, F(n * u.rows));
  const DevicePtr xq = Take(ws, gpu::QuantizedBytes(n, g.cols));
  if (!xq) return ws.Exhausted("SwiGLU");
  // One quantization of x serves gate and up (both read it whole).
  gpu::PreparedInput in(L(), x, n, g.cols, xq);
  STRATA_ASSIGN_OR_RETURN(DevicePtr xg, in.For(g));
  STRATA_RETURN_IF_ERROR(gpu::MatMulPrepared(L(), g, xg, n, gv));
  STRATA_ASSIGN_OR_RETURN(DevicePtr xu, in.For(u));
  STRATA_RETURN_IF_ERROR(gpu::MatMulPrepared(L(), u, xu, n, uv));
  gpu::SwiGluArgs a{AsPtr<float>(gv), AsPtr<const float>(uv), n * g.rows};
  STRATA_RETURN_IF_ERROR(L()(kernels_.swiglu, Dim3{GridFor(a.n, 256), 1, 1}, Dim3{256, 1, 1}, 0, a));
  return Product(down, gv, n, out);
}

// y[t][i] += bias[i] for n rows of `width` (nothing without a bias tensor).
Status GpuBackend::AddBias(const TensorView* bias, DevicePtr y, int64_t n, int64_t width) {
  if (!bias) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(DevicePtr b, WeightVector(bias));
  gpu::AddBiasArgs a{AsPtr<float>(y), AsPtr<const float>(b), n * width, static_cast<int32_t>(width)};
  return L()(kernels_.add_bias, Dim3{GridFor(a.n, 256), 1, 1}, Dim3{256, 1, 1}, 0, a);
}

// y[p][i] += bias[expert of place p][i] for n_places rows of `width` (the
// experts' biases; nothing without the tensor).
Status GpuBackend::AddBiasPlaces(const TensorView* bias, DevicePtr y, DevicePtr place_expert, int64_t n_places,
                                 int64_t width) {
  if (!bias || n_places == 0) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(DevicePtr b, WeightVector(bias));
  gpu::AddBiasPlacesArgs a{AsPtr<float>(y), AsPtr<const float>(b), AsPtr<const int32_t>(place_expert),
                           n_places * width, static_cast<int32_t>(width)};
  return L()(kernels_.add_bias_places, Dim3{GridFor(a.n, 256), 1, 1}, Dim3{256, 1, 1}, 0, a);
}

// --- attention ----------------------------------------------------------------

Status GpuBackend::Attention(int32_t il, Mixer mixer, strata::Act in, strata::Act out) {
  if (graph_mode_ == GraphMode::kReplay) return Status::Ok();  // in the graph BeginPass launched
  if (mixer == Mixer::kLatentAttention) return LatentAttention(il, in, out);
  PassState& p = *pass_;
  const HParams& hp = *p.hp;
  const Model& m = *p.m;
  Workspace& ws = *p.ws;
  const int64_t n = p.n, H = hp.n_head, Hkv = hp.n_head_kv, Dk = hp.head_dim_k, Dv = hp.head_dim_v;
  const bool gated = mixer == Mixer::kGatedAttention;
  const gpu::AttentionShape shape = gpu::AttentionShape::For(hp, mixer, n, p.max_keys);
  WorkspaceScope scope(ws);
  const DevicePtr q = Take(ws, F(n * shape.q_width));
  const DevicePtr k = Take(ws, F(n * Hkv * Dk));
  const DevicePtr v = Take(ws, F(n * Hkv * Dv));
  const DevicePtr attn = Take(ws, F(n * H * Dv));
  const DevicePtr partial = shape.splits > 1 ? Take(ws, F(n * H * shape.splits * (Dv + 2))) : 1;
  const DevicePtr xq = Take(ws, gpu::QuantizedBytes(n, hp.n_embd));
  if (!xq || !partial) return ws.Exhausted("attention");
  STRATA_ASSIGN_OR_RETURN(gpu::DeviceMatrix wq, Weight(m.Get(il, R::kAttnQ)));
  STRATA_ASSIGN_OR_RETURN(gpu::DeviceMatrix wk, Weight(m.Get(il, R::kAttnK)));
  STRATA_ASSIGN_OR_RETURN(gpu::DeviceMatrix wv, Weight(m.Get(il, R::kAttnV)));
  gpu::PreparedInput h(L(), ActAddr(in), n, hp.n_embd, xq);
  for (auto [w, y] : {std::pair{&wq, q}, {&wk, k}, {&wv, v}}) {
    STRATA_ASSIGN_OR_RETURN(DevicePtr x, h.For(*w));
    STRATA_RETURN_IF_ERROR(gpu::MatMulPrepared(L(), *w, x, n, y));
  }
  // Q/K/V biases (glm4moe), before the norms.
  STRATA_RETURN_IF_ERROR(AddBias(m.Get(il, R::kAttnQBias), q, n, shape.q_width));
  STRATA_RETURN_IF_ERROR(AddBias(m.Get(il, R::kAttnKBias), k, n, Hkv * Dk));
  STRATA_RETURN_IF_ERROR(AddBias(m.Get(il, R::kAttnVBias), v, n, Hkv * Dv));

  const SequenceState& st0 = *p.batch[0].state;
  const KvType kv = st0.kv_type;
  const int64_t kh = KvHeadBytes(kv, Dk), vh = KvHeadBytes(kv, Dv);
  const uint32_t warps_block = 4 * L().warp();
  {
    gpu::AttnPrepArgs a{};
    a.q = AsPtr<float>(q);
    a.k = AsPtr<const float>(k);
    a.v = AsPtr<const float>(v);
    STRATA_ASSIGN_OR_RETURN(DevicePtr qn, WeightVector(m.Get(il, R::kAttnQNorm)));
    STRATA_ASSIGN_OR_RETURN(DevicePtr kn, WeightVector(m.Get(il, R::kAttnKNorm)));
    a.q_norm = AsPtr<const float>(qn);
    a.k_norm = AsPtr<const float>(kn);
    a.tables = p.tables;
    a.layer = il;
    a.n_seq = p.n_seq;
    a.n = static_cast<int32_t>(n);
    a.H = static_cast<int32_t>(H), a.Hkv = static_cast<int32_t>(Hkv), a.Dk = static_cast<int32_t>(Dk),
    a.Dv = static_cast<int32_t>(Dv);
    a.q_width = static_cast<int32_t>(shape.q_width);
    a.q_head_stride = static_cast<int32_t>(shape.q_head_stride);
    a.n_rot = static_cast<int32_t>(hp.n_rot);
    a.rope_neox = hp.rope_type == RopeType::kNorm ? 0 : 1;  // NEOX and text-only IMRoPE
    a.kv_type = static_cast<int32_t>(kv);
    a.swa = hp.IsSwaLayer(static_cast<uint32_t>(il)) ? 1 : 0;
    a.k_row_bytes = Hkv * kh, a.v_row_bytes = Hkv * vh, a.k_head_bytes = kh, a.v_head_bytes = vh;
    const ops::RopeParams rope = ops::RopeParamsFor(hp);
    a.freq_base = rope.freq_base, a.freq_scale = rope.freq_scale, a.eps = hp.rms_eps;
    a.ext_factor = rope.ext_factor, a.mscale = rope.mscale, a.corr_low = rope.corr_low, a.corr_high = rope.corr_high;
    const uint32_t items = static_cast<uint32_t>(H + 2 * Hkv);
    STRATA_RETURN_IF_ERROR(L()(kernels_.attn_prep, Dim3{static_cast<uint32_t>(n), GridFor(items, 4), 1},
                               Dim3{warps_block, 1, 1}, 0, a));
  }
  {
    gpu::AttnArgs a{};
    a.H = static_cast<int32_t>(H), a.Hkv = static_cast<int32_t>(Hkv), a.Dk = static_cast<int32_t>(Dk),
    a.Dv = static_cast<int32_t>(Dv);
    a.kv_type = static_cast<int32_t>(kv);
    a.k_row_bytes = Hkv * kh, a.v_row_bytes = Hkv * vh, a.k_head_bytes = kh, a.v_head_bytes = vh;
    a.gated = gated ? 1 : 0;
    a.scale = hp.attn_scale != 0.0f ? hp.attn_scale : 1.0f / std::sqrt(static_cast<float>(Dk));
    STRATA_ASSIGN_OR_RETURN(DevicePtr sinks, WeightVector(m.Get(il, R::kAttnSinks)));  // gpt-oss
    a.sinks = AsPtr<const float>(sinks);
    a.n_swa = hp.IsSwaLayer(static_cast<uint32_t>(il)) ? static_cast<int32_t>(hp.n_swa) : 0;
    STRATA_RETURN_IF_ERROR(LaunchAttention(a, shape, il, q, Hkv, attn, partial));
  }
  STRATA_RETURN_IF_ERROR(Product(m.Get(il, R::kAttnOutput), attn, n, ActAddr(out)));
  return Check(AddBias(m.Get(il, R::kAttnOutputBias), ActAddr(out), n, hp.n_embd));  // gpt-oss
}

Status GpuBackend::LaunchAttention(gpu::AttnArgs& a, const gpu::AttentionShape& shape, int32_t il, DevicePtr q,
                                   int64_t n_kv_heads, DevicePtr attn, DevicePtr partial) {
  const PassState& p = *pass_;
  a.q = AsPtr<const float>(q);
  a.tables = p.tables;
  a.layer = il;
  a.n_seq = p.n_seq;
  a.tile_t0 = p.tile_t0;
  a.tile_nt = p.tile_nt;
  a.q_width = static_cast<int32_t>(shape.q_width);
  a.q_head_stride = static_cast<int32_t>(shape.q_head_stride);
  a.rows_per_block = p.attn.rows;
  a.keys_per_tile = p.attn.keys;
  a.splits = static_cast<int32_t>(shape.splits);
  a.split_keys = gpu::AttnBlocking::kSplitKeys;
  a.out = AsPtr<float>(attn);
  a.partial = AsPtr<float>(partial);
  STRATA_RETURN_IF_ERROR(L()(kernels_.attention,
                             Dim3{static_cast<uint32_t>(p.n_tiles), static_cast<uint32_t>(n_kv_heads),
                                  static_cast<uint32_t>(shape.splits)},
                             Dim3{4 * L().warp(), 1, 1}, p.attn.shared_bytes, a));
  if (shape.splits <= 1) return Status::Ok();
  gpu::AttnCombineArgs c{};
  c.partial = AsPtr<const float>(partial);
  c.q = a.q;
  c.q_width = a.q_width, c.q_head_stride = a.q_head_stride, c.Dk = a.Dk;
  c.n = static_cast<int32_t>(p.n), c.H = a.H, c.Dv = a.Dv, c.splits = a.splits, c.gated = a.gated;
  c.out = a.out;
  c.sinks = a.sinks;
  return L()(kernels_.attn_combine, Dim3{static_cast<uint32_t>(p.n * a.H), 1, 1}, Dim3{128, 1, 1}, 0, c);
}

Status GpuBackend::RowNorm(DevicePtr x, const TensorView* weight, int64_t n, int64_t cols) {
  STRATA_ASSIGN_OR_RETURN(DevicePtr w, WeightVector(weight));
  gpu::RmsNormArgs a{};
  a.x = AsPtr<const float>(x);
  a.w = AsPtr<const float>(w);
  a.y = AsPtr<float>(x);  // each value is read before it is written, by the same thread
  a.n = static_cast<int32_t>(n);
  a.cols = static_cast<int32_t>(cols);
  a.eps = pass_->hp->rms_eps;
  return L()(kernels_.rms_norm, Dim3{static_cast<uint32_t>(n), 1, 1}, Dim3{256, 1, 1}, 0, a);
}

// Copies n_i x n_j rows of `width` floats between two layouts (CopyRowsArgs).
Status GpuBackend::CopyRows(DevicePtr src, int64_t src_i, int64_t src_j, DevicePtr dst, int64_t dst_i, int64_t dst_j,
                            int64_t n_i, int64_t n_j, int64_t width) {
  gpu::CopyRowsArgs a{AsPtr<const float>(src), AsPtr<float>(dst), src_i, src_j, dst_i, dst_j, static_cast<int32_t>(n_i),
                      static_cast<int32_t>(n_j), static_cast<int32_t>(width)};
  return L()(kernels_.copy_rows, Dim3{GridFor(n_i * n_j * width, 256), 1, 1}, Dim3{256, 1, 1}, 0, a);
}

// The MTP block's input product, as CpuBackend::ConcatProject: both rows
// side by side in scratch, then one product.
Status GpuBackend::ConcatProject(const TensorView& w, strata::Act a, strata::Act b, strata::Act out) {
  if (graph_mode_ == GraphMode::kReplay) return Status::Ok();  // (an MTP pass is never recorded: GraphKeyOf)
  const int64_t n = pass_->n, E = pass_->hp->n_embd;
  STRATA_ASSIGN_OR_RETURN(gpu::DeviceMatrix m, Weight(&w));
  if (m.cols != 2 * E || m.rows != E)
    return Internal(StrFormat("ConcatProject: a %lld x %lld matrix for rows of 2 x %lld", static_cast<long long>(m.rows),
                              static_cast<long long>(m.cols), static_cast<long long>(E)));
  WorkspaceScope scope(*pass_->ws);
  const DevicePtr cat = Take(*pass_->ws, F(n * 2 * E));
  if (!cat) return pass_->ws->Exhausted("the MTP block's input");
  // Row t of a at cat[t][0..E), of b at cat[t][E..2E): n_i = n rows, n_j = 1.
  STRATA_RETURN_IF_ERROR(Check(CopyRows(ActAddr(a), E, 0, cat, 2 * E, 0, n, 1, E)));
  STRATA_RETURN_IF_ERROR(Check(CopyRows(ActAddr(b), E, 0, cat + F(E), 2 * E, 0, n, 1, E)));
  return Check(Product(&w, cat, n, ActAddr(out)));
}

// deepseek2's multi-head latent attention, as CpuBackend::LatentAttention: the
// queries (low-rank or one attn_q), the cached rows (strata_mla_prep), each
// head's nope part through its attn_k_b, attention over the rows with the
// values read from them, each head's output through its attn_v_b, attn_output.
Status GpuBackend::LatentAttention(int32_t il, strata::Act in, strata::Act out) {
  PassState& p = *pass_;
  const HParams& hp = *p.hp;
  const Model& m = *p.m;
  Workspace& ws = *p.ws;
  const int64_t n = p.n, H = hp.n_head, Dk = hp.head_dim_k, Dv = hp.head_dim_v;
  const int64_t Lr = hp.kv_lora_rank, Dq = hp.head_dim_k_mla, nope = hp.MlaNope(), Vm = hp.head_dim_v_mla;
  const gpu::AttentionShape shape = gpu::AttentionShape::For(hp, Mixer::kLatentAttention, n, p.max_keys);
  WorkspaceScope scope(ws);
  const DevicePtr q = Take(ws, F(n * H * Dq));
  const DevicePtr qa = hp.q_lora_rank ? Take(ws, F(n * hp.q_lora_rank)) : 1;
  const DevicePtr kv = Take(ws, F(n * Dk));
  const DevicePtr qcat = Take(ws, F(n * H * Dk));
  const DevicePtr head_in = Take(ws, F(H * n * std::max(nope, Lr)));
  const DevicePtr head_out = Take(ws, F(H * n * std::max(Lr, Vm)));
  const DevicePtr attn = Take(ws, F(n * H * Dv));
  const DevicePtr vout = Take(ws, F(n * H * Vm));
  const DevicePtr partial = shape.splits > 1 ? Take(ws, F(n * H * shape.splits * (Dv + 2))) : 1;
  const DevicePtr xq = Take(ws, gpu::QuantizedBytes(n, hp.n_embd));
  const DevicePtr hq = Take(ws, gpu::QuantizedBytes(H * n, std::max({nope, Lr, static_cast<int64_t>(hp.q_lora_rank)})));
  if (!xq || !hq || !partial || !qa) return ws.Exhausted("latent attention");
  gpu::PreparedInput h(L(), ActAddr(in), n, hp.n_embd, xq);
  auto product = [&](gpu::PreparedInput& x, const TensorView* t, DevicePtr y) -> Status {
    STRATA_ASSIGN_OR_RETURN(gpu::DeviceMatrix w, Weight(t));
    STRATA_ASSIGN_OR_RETURN(DevicePtr xp, x.For(w));
    return gpu::MatMulPrepared(L(), w, xp, n, y);
  };
  if (hp.q_lora_rank) {
    STRATA_RETURN_IF_ERROR(product(h, m.Get(il, R::kAttnQA), qa));
    STRATA_RETURN_IF_ERROR(RowNorm(qa, m.Get(il, R::kAttnQANorm), n, hp.q_lora_rank));
    gpu::PreparedInput qx(L(), qa, n, hp.q_lora_rank, hq);
    STRATA_RETURN_IF_ERROR(product(qx, m.Get(il, R::kAttnQB), q));
  } else {
    STRATA_RETURN_IF_ERROR(product(h, m.Get(il, R::kAttnQ), q));
  }
  STRATA_RETURN_IF_ERROR(product(h, m.Get(il, R::kAttnKvAMqa), kv));

  const SequenceState& st0 = *p.batch[0].state;
  const KvType kvt = st0.kv_type;
  const int64_t kh = KvHeadBytes(kvt, Dk);
  const uint32_t warps_block = 4 * L().warp();
  const ops::RopeParams rope = ops::RopeParamsFor(hp);
  {
    gpu::AttnPrepArgs a{};
    a.q = AsPtr<float>(q);
    a.k = AsPtr<const float>(kv);
    STRATA_ASSIGN_OR_RETURN(DevicePtr kn, WeightVector(m.Get(il, R::kAttnKvANorm)));
    a.k_norm = AsPtr<const float>(kn);
    a.tables = p.tables;
    a.layer = il;
    a.n_seq = p.n_seq;
    a.n = static_cast<int32_t>(n);
    a.H = static_cast<int32_t>(H), a.Hkv = 1, a.Dk = static_cast<int32_t>(Dk), a.Dv = static_cast<int32_t>(Dv);
    a.n_rot = static_cast<int32_t>(hp.n_rot);
    a.rope_neox = hp.rope_type == RopeType::kNorm ? 0 : 1;
    a.kv_type = static_cast<int32_t>(kvt);
    a.k_row_bytes = kh, a.k_head_bytes = kh;
    a.freq_base = rope.freq_base, a.freq_scale = rope.freq_scale, a.eps = hp.rms_eps;
    a.ext_factor = rope.ext_factor, a.mscale = rope.mscale, a.corr_low = rope.corr_low, a.corr_high = rope.corr_high;
    a.qcat = AsPtr<float>(qcat);
    a.head_in = AsPtr<float>(head_in);
    a.mla_l = static_cast<int32_t>(Lr), a.mla_nope = static_cast<int32_t>(nope), a.mla_dq = static_cast<int32_t>(Dq);
    STRATA_RETURN_IF_ERROR(L()(kernels_.mla_prep, Dim3{static_cast<uint32_t>(n), GridFor(H + 1, 4), 1},
                               Dim3{warps_block, 1, 1}, 0, a));
  }
  // Per head: attn_k_b's head (Lr rows of nope) times the head's nope parts.
  STRATA_ASSIGN_OR_RETURN(gpu::DeviceMatrix k_b, Weight(m.Get(il, R::kAttnKB)));
  STRATA_ASSIGN_OR_RETURN(gpu::DeviceMatrix v_b, Weight(m.Get(il, R::kAttnVB)));
  auto per_head = [&](gpu::DeviceMatrix w, int64_t in_w, int64_t out_w) -> Status {
    for (int64_t hh = 0; hh < H; ++hh) {
      gpu::DeviceMatrix wh = w;
      wh.data = w.data + static_cast<uint64_t>(hh) * w.expert_stride;
      STRATA_RETURN_IF_ERROR(gpu::MatMul(L(), wh, head_in + static_cast<uint64_t>(F(hh * n * in_w)), n,
                                         head_out + static_cast<uint64_t>(F(hh * n * out_w)), hq));
    }
    return Status::Ok();
  };
  STRATA_RETURN_IF_ERROR(per_head(k_b, nope, Lr));
  // head_out[h][t] -> qcat[t][h][0..Lr)
  STRATA_RETURN_IF_ERROR(CopyRows(head_out, Lr, n * Lr, qcat, H * Dk, Dk, n, H, Lr));
  {
    gpu::AttnArgs a{};
    a.H = static_cast<int32_t>(H), a.Hkv = 1, a.Dk = static_cast<int32_t>(Dk), a.Dv = static_cast<int32_t>(Dv);
    a.kv_type = static_cast<int32_t>(kvt);
    a.k_row_bytes = kh, a.v_row_bytes = kh, a.k_head_bytes = kh, a.v_head_bytes = kh;
    a.v_in_k = 1;  // the values are the rows' latent
    a.scale = ops::LatentAttentionScale(hp);
    STRATA_RETURN_IF_ERROR(LaunchAttention(a, shape, il, qcat, 1, attn, partial));
  }
  // attn[t][h][0..Lr) -> head_in[h][t]; per head attn_v_b (Vm rows of Lr); head_out[h][t] -> vout[t][h]
  STRATA_RETURN_IF_ERROR(CopyRows(attn, Dv, H * Dv, head_in, n * Lr, Lr, H, n, Lr));
  STRATA_RETURN_IF_ERROR(per_head(v_b, Lr, Vm));
  STRATA_RETURN_IF_ERROR(CopyRows(head_out, Vm, n * Vm, vout, H * Vm, Vm, n, H, Vm));
  return Check(Product(m.Get(il, R::kAttnOutput), vout, n, ActAddr(out)));
}

// --- gated delta-net ---------------------------------------------------------------

Status GpuBackend::GatedDeltaNet(int32_t il, strata::Act in, strata::Act out) {
  if (graph_mode_ == GraphMode::kReplay) return Status::Ok();  // in the graph BeginPass launched
  PassState& p = *pass_;
  const HParams& hp = *p.hp;
  const Model& m = *p.m;
  Workspace& ws = *p.ws;
  const gpu::DeltaNetShape sh = gpu::DeltaNetShape::For(hp);
  const int64_t n = p.n;
  const bool chunked = p.opt->delta_net == DeltaNetMode::kChunked;
  WorkspaceScope scope(ws);
  const DevicePtr qkv = Take(ws, F(n * sh.channels));
  const DevicePtr z = Take(ws, F(n * sh.value_dim));
  const DevicePtr beta = Take(ws, F(n * sh.n_v));
  const DevicePtr alpha = Take(ws, F(n * sh.n_v));
  const DevicePtr x = Take(ws, F(n * sh.channels));
  const DevicePtr y = Take(ws, F(n * sh.value_dim));
  const DevicePtr scratch = chunked ? Take(ws, F(p.n_seq * sh.n_v * gpu::DeltaNetShape::kChunk * sh.dv)) : 1;
  if (!scratch || !y) return ws.Exhausted("gated delta-net");
  const DevicePtr h = ActAddr(in);
  STRATA_RETURN_IF_ERROR(Product(m.Get(il, R::kAttnQkv), h, n, qkv));
  STRATA_RETURN_IF_ERROR(Product(m.Get(il, R::kAttnGate), h, n, z));
  STRATA_RETURN_IF_ERROR(Product(m.Get(il, R::kSsmBeta), h, n, beta));
  STRATA_RETURN_IF_ERROR(Product(m.Get(il, R::kSsmAlpha), h, n, alpha));
  STRATA_ASSIGN_OR_RETURN(DevicePtr conv_w, WeightVector(m.Get(il, R::kSsmConv1d)));
  STRATA_ASSIGN_OR_RETURN(DevicePtr dt_bias, WeightVector(m.Get(il, R::kSsmDtBias)));
  STRATA_ASSIGN_OR_RETURN(DevicePtr a_log, WeightVector(m.Get(il, R::kSsmA)));
  STRATA_ASSIGN_OR_RETURN(DevicePtr norm_w, WeightVector(m.Get(il, R::kSsmNorm)));
  const uint32_t ch_blocks = GridFor(sh.channels, 128);
  {
    gpu::ConvArgs a{};
    a.qkv = AsPtr<const float>(qkv);
    a.x = AsPtr<float>(x);
    a.conv_w = AsPtr<const float>(conv_w);
    a.tables = p.tables;
    a.layer = il;
    a.n_seq = p.n_seq;
    a.n = static_cast<int32_t>(n), a.channels = static_cast<int32_t>(sh.channels), a.d_conv = static_cast<int32_t>(sh.d_conv);
    STRATA_RETURN_IF_ERROR(L()(kernels_.delta_conv, Dim3{static_cast<uint32_t>(n), ch_blocks, 1}, Dim3{128, 1, 1}, 0, a));
  }
  {
    gpu::DeltaPrepArgs a{};
    a.x = AsPtr<float>(x);
    a.beta = AsPtr<float>(beta);
    a.alpha = AsPtr<float>(alpha);
    a.dt_bias = AsPtr<const float>(dt_bias);
    a.a = AsPtr<const float>(a_log);
    a.n = static_cast<int32_t>(n), a.channels = static_cast<int32_t>(sh.channels), a.n_k = static_cast<int32_t>(sh.n_k),
    a.n_v = static_cast<int32_t>(sh.n_v), a.dk = static_cast<int32_t>(sh.dk);
    a.eps = hp.rms_eps;
    a.q_scale = 1.0f / std::sqrt(static_cast<float>(sh.dk));
    STRATA_RETURN_IF_ERROR(L()(kernels_.delta_prep, Dim3{static_cast<uint32_t>(n), GridFor(2 * sh.n_k + 1, 4), 1},
                               Dim3{4 * L().warp(), 1, 1}, 0, a));
  }
  {
    gpu::ConvUpdateArgs a{};
    a.qkv = AsPtr<const float>(qkv);
    a.tables = p.tables;
    a.layer = il;
    a.n_seq = p.n_seq;
    a.channels = static_cast<int32_t>(sh.channels), a.d_conv = static_cast<int32_t>(sh.d_conv);
    STRATA_RETURN_IF_ERROR(
        L()(kernels_.delta_conv_update, Dim3{static_cast<uint32_t>(p.n_seq), ch_blocks, 1}, Dim3{128, 1, 1}, 0, a));
  }
  {
    gpu::DeltaRuleArgs a{};
    a.x = AsPtr<const float>(x);
    a.beta = AsPtr<const float>(beta);
    a.alpha = AsPtr<const float>(alpha);
    a.y = AsPtr<float>(y);
    a.tables = p.tables;
    a.layer = il;
    a.n_seq = p.n_seq;
    a.channels = static_cast<int32_t>(sh.channels), a.key_dim = static_cast<int32_t>(sh.key_dim),
    a.n_k = static_cast<int32_t>(sh.n_k), a.n_v = static_cast<int32_t>(sh.n_v), a.dk = static_cast<int32_t>(sh.dk),
    a.dv = static_cast<int32_t>(sh.dv);
    a.chunked = chunked ? 1 : 0;
    a.grouped_heads = sh.grouped_heads ? 1 : 0;
    a.scratch = AsPtr<float>(scratch);
    const uint32_t threads = static_cast<uint32_t>((sh.dv + L().warp() - 1) / L().warp() * L().warp());
    STRATA_RETURN_IF_ERROR(L()(kernels_.delta_rule,
                               Dim3{static_cast<uint32_t>(p.n_seq), static_cast<uint32_t>(sh.n_v), 1},
                               Dim3{threads, 1, 1}, 0, a));
  }
  {
    gpu::GatedNormArgs a{};
    a.y = AsPtr<const float>(y);
    a.z = AsPtr<float>(z);
    a.norm_w = AsPtr<const float>(norm_w);
    a.n = static_cast<int32_t>(n), a.n_v = static_cast<int32_t>(sh.n_v), a.dv = static_cast<int32_t>(sh.dv);
    a.eps = hp.rms_eps;
    STRATA_RETURN_IF_ERROR(
        L()(kernels_.gated_norm, Dim3{static_cast<uint32_t>(n), 1, 1}, Dim3{4 * L().warp(), 1, 1}, 0, a));
  }
  return Check(Product(m.Get(il, R::kSsmOut), z, n, ActAddr(out)));
}

// --- feed-forward ----------------------------------------------------------------------

Status GpuBackend::DenseFfn(int32_t il, strata::Act in, strata::Act out) {
  if (graph_mode_ == GraphMode::kReplay) return Status::Ok();  // in the graph BeginPass launched
  const Model& m = *pass_->m;
  return Check(SwiGlu(m.Get(il, R::kFfnGate), m.Get(il, R::kFfnUp), m.Get(il, R::kFfnDown), ActAddr(in), pass_->n,
                      ActAddr(out)));
}

Status GpuBackend::SharedExpert(int32_t il, strata::Act in, strata::Act out) {
  if (graph_mode_ == GraphMode::kReplay) return Status::Ok();  // in the graph BeginPass launched
  PassState& p = *pass_;
  const Model& m = *p.m;
  Workspace& ws = *p.ws;
  const int64_t n = p.n, E = p.hp->n_embd;
  WorkspaceScope scope(ws);
  const DevicePtr sh = Take(ws, F(n * E));
  if (!sh) return ws.Exhausted("shared expert");
  STRATA_RETURN_IF_ERROR(SwiGlu(m.Get(il, R::kFfnGateShexp), m.Get(il, R::kFfnUpShexp), m.Get(il, R::kFfnDownShexp),
                                ActAddr(in), n, sh));
  STRATA_ASSIGN_OR_RETURN(DevicePtr gw, WeightVector(m.Get(il, R::kFfnGateInpShexp)));  // 0: ungated
  gpu::SharedGateArgs a{};
  a.h = AsPtr<const float>(ActAddr(in));
  a.gate_w = AsPtr<const float>(gw);
  a.sh = AsPtr<const float>(sh);
  a.out = AsPtr<float>(ActAddr(out));
  a.n = static_cast<int32_t>(n), a.cols = static_cast<int32_t>(E);
  return Check(L()(kernels_.shared_gate, Dim3{static_cast<uint32_t>(n), 1, 1}, Dim3{256, 1, 1}, 0, a));
}

// Routed experts: the router's product, softmax and top-k on the device;
// then the entries grouped by expert, every selected expert's gate and up in
// one launch each, SiLU, every down in one launch, and the weighted sum. With
// an expert executor (the tiered pool) the experts run on the host instead.
Status GpuBackend::MoeFfn(int32_t il, strata::Act in, strata::Act out) {
  if (graph_mode_ == GraphMode::kReplay) return Status::Ok();  // in the graph BeginPass launched
  PassState& p = *pass_;
  const HParams& hp = *p.hp;
  const Model& m = *p.m;
  Workspace& ws = *p.ws;
  const int64_t n = p.n, NE = hp.n_expert, K = hp.n_expert_used, E = hp.n_embd, nK = n * K;
  WorkspaceScope scope(ws);
  const DevicePtr logits = Take(ws, F(n * NE));
  const DevicePtr sel = Take(ws, I(nK));
  const DevicePtr wts = Take(ws, F(nK));
  const DevicePtr probs = Take(ws, F(nK));
  if (!probs) return ws.Exhausted("MoE routing");
  const DevicePtr h = ActAddr(in);
  STRATA_RETURN_IF_ERROR(Product(m.Get(il, R::kFfnGateInp), h, n, logits));
  STRATA_RETURN_IF_ERROR(AddBias(m.Get(il, R::kFfnGateInpBias), logits, n, NE));  // gpt-oss's router bias
  {
    gpu::TopKArgs a{};
    a.logits = AsPtr<const float>(logits);
    a.sel = AsPtr<int32_t>(sel);
    a.wts = AsPtr<float>(wts);
    a.probs = AsPtr<float>(probs);
    STRATA_ASSIGN_OR_RETURN(DevicePtr bias, WeightVector(m.Get(il, R::kFfnExpProbsB)));
    a.bias = AsPtr<const float>(bias);
    a.n = static_cast<int32_t>(n), a.n_expert = static_cast<int32_t>(NE), a.k = static_cast<int32_t>(K);
    a.gating = static_cast<int32_t>(hp.expert_gating);
    a.norm = hp.expert_weights_norm ? 1 : 0;
    a.scale = hp.expert_weights_scale;
    a.groups = static_cast<int32_t>(hp.n_expert_groups), a.groups_used = static_cast<int32_t>(hp.n_expert_groups_used);
    STRATA_RETURN_IF_ERROR(
        L()(kernels_.moe_topk, Dim3{GridFor(n, 4), 1, 1}, Dim3{4 * L().warp(), 1, 1}, 0, a));
  }
  if (p.opt->observer) {
    // The routing crosses to the host observer, token by token.
    std::vector<int32_t> s(static_cast<size_t>(nK));
    std::vector<float> pr(static_cast<size_t>(nK));
    STRATA_RETURN_IF_ERROR(device_->CopyToHost(s.data(), sel, I(nK), stream_));
    STRATA_RETURN_IF_ERROR(device_->CopyToHost(pr.data(), probs, F(nK), stream_));
    STRATA_RETURN_IF_ERROR(Check(device_->Synchronize(stream_)));
    transfers_.down_bytes += I(nK) + F(nK);
    ++transfers_.down_calls;
    for (int64_t t = 0; t < n; ++t)
      p.opt->observer->OnRouted(il, {s.data() + t * K, static_cast<size_t>(K)}, {pr.data() + t * K, static_cast<size_t>(K)});
  }
  if (p.opt->experts) {
    if (ExpertSplit* split = p.opt->experts->SplitOn(*this)) return Check(MoeSplit(il, *split, h, sel, wts, ActAddr(out)));
    return Check(MoeOnHost(il, h, sel, wts, ActAddr(out)));
  }
  if (routed_on_host_)
    return FailedPrecondition("the routed experts were left in host RAM (the VRAM/RAM split) and this pass has no "
                              "expert tiers to run them");

  const gpu::MoeShape shape = gpu::MoeShape::For(hp, n);
  const DevicePtr counts = Take(ws, I(NE));
  const DevicePtr first = Take(ws, I(NE + 1));
  const DevicePtr fill = Take(ws, I(NE));
  const DevicePtr where = Take(ws, I(nK));
  const DevicePtr place_expert = Take(ws, I(nK));
  const DevicePtr place_token = Take(ws, I(nK));
  const DevicePtr tiles = Take(ws, I(3 * shape.max_tiles + 1));
  const DevicePtr g = Take(ws, F(nK * shape.ff));
  const DevicePtr u = Take(ws, F(nK * shape.ff));
  const DevicePtr results = Take(ws, F(nK * E));
  const DevicePtr xq_h = Take(ws, gpu::QuantizedBytes(n, E));
  const DevicePtr xq_g = Take(ws, gpu::QuantizedBytes(nK, shape.ff));
  if (!xq_g) return ws.Exhausted("MoE experts");
  {
    STRATA_RETURN_IF_ERROR(device_->Fill(counts, 0, I(NE), stream_));
    gpu::MoeRouteArgs a{};
    a.sel = AsPtr<const int32_t>(sel);
    a.n_entries = static_cast<int32_t>(nK), a.k = static_cast<int32_t>(K), a.n_expert = static_cast<int32_t>(NE);
    a.counts = AsPtr<int32_t>(counts);
    a.first = AsPtr<int32_t>(first);
    a.fill = AsPtr<int32_t>(fill);
    a.where = AsPtr<int32_t>(where);
    a.place_expert = AsPtr<int32_t>(place_expert);
    a.place_token = AsPtr<int32_t>(place_token);
    a.tile_cols = static_cast<int32_t>(gpu::kTileColumns);
    a.max_tiles = shape.max_tiles;
    a.tile_expert = AsPtr<int32_t>(tiles);
    a.tile_col0 = AsPtr<int32_t>(tiles + I(shape.max_tiles));
    a.tile_ncols = AsPtr<int32_t>(tiles + I(2 * shape.max_tiles));
    a.n_tiles = AsPtr<int32_t>(tiles + I(3 * shape.max_tiles));
    const uint32_t blocks = GridFor(nK, 256);
    STRATA_RETURN_IF_ERROR(L()(kernels_.moe_count, Dim3{blocks, 1, 1}, Dim3{256, 1, 1}, 0, a));
    STRATA_RETURN_IF_ERROR(L()(kernels_.moe_offsets, Dim3{1, 1, 1}, Dim3{256, 1, 1}, 0, a));
    STRATA_RETURN_IF_ERROR(L()(kernels_.moe_place, Dim3{blocks, 1, 1}, Dim3{256, 1, 1}, 0, a));
  }
  STRATA_ASSIGN_OR_RETURN(gpu::DeviceMatrix wg, Weight(m.Get(il, R::kFfnGateExps)));
  STRATA_ASSIGN_OR_RETURN(gpu::DeviceMatrix wu, Weight(m.Get(il, R::kFfnUpExps)));
  STRATA_ASSIGN_OR_RETURN(gpu::DeviceMatrix wd, Weight(m.Get(il, R::kFfnDownExps)));
  gpu::ExpertPlaces places;
  places.n_places = nK;
  places.place_expert = place_expert;
  places.per_place = shape.per_place;
  places.tile_expert = tiles;
  places.tile_col0 = tiles + I(shape.max_tiles);
  places.tile_ncols = tiles + I(2 * shape.max_tiles);
  places.n_tiles = tiles + I(3 * shape.max_tiles);
  places.max_tiles = shape.max_tiles;
  // Gate and up: column p is token place_token[p] through expert place_expert[p].
  places.place_xcol = place_token;
  auto stride = [](const gpu::DeviceMatrix& w) { return gpu::QuantizesActivations(w.type) ? w.cols / 32 : w.cols; };
  gpu::PreparedInput hin(L(), h, n, E, xq_h);
  STRATA_ASSIGN_OR_RETURN(DevicePtr xg, hin.For(wg));
  STRATA_RETURN_IF_ERROR(gpu::ExpertMatMulPrepared(L(), wg, xg, stride(wg), places, g));
  STRATA_ASSIGN_OR_RETURN(DevicePtr xu, hin.For(wu));
  STRATA_RETURN_IF_ERROR(gpu::ExpertMatMulPrepared(L(), wu, xu, stride(wu), places, u));
  // gpt-oss: the experts' gate and up biases, the clamped SwiGLU, the down bias.
  STRATA_RETURN_IF_ERROR(AddBiasPlaces(m.Get(il, R::kFfnGateExpsBias), g, place_expert, nK, shape.ff));
  STRATA_RETURN_IF_ERROR(AddBiasPlaces(m.Get(il, R::kFfnUpExpsBias), u, place_expert, nK, shape.ff));
  gpu::SwiGluArgs sw{AsPtr<float>(g), AsPtr<const float>(u), nK * shape.ff, hp.swiglu_alpha, hp.swiglu_limit};
  STRATA_RETURN_IF_ERROR(L()(kernels_.swiglu, Dim3{GridFor(sw.n, 256), 1, 1}, Dim3{256, 1, 1}, 0, sw));
  // Down: column p is place p's own row of g.
  places.place_xcol = 0;
  gpu::PreparedInput gin(L(), g, nK, shape.ff, xq_g);
  STRATA_ASSIGN_OR_RETURN(DevicePtr xd, gin.For(wd));
  STRATA_RETURN_IF_ERROR(gpu::ExpertMatMulPrepared(L(), wd, xd, stride(wd), places, results));
  STRATA_RETURN_IF_ERROR(AddBiasPlaces(m.Get(il, R::kFfnDownExpsBias), results, place_expert, nK, E));
  gpu::MoeCombineArgs c{};
  c.results = AsPtr<const float>(results);
  c.where = AsPtr<const int32_t>(where);
  c.wts = AsPtr<const float>(wts);
  c.out = AsPtr<float>(ActAddr(out));
  c.n = static_cast<int32_t>(n), c.k = static_cast<int32_t>(K), c.cols = static_cast<int32_t>(E);
  return Check(L()(kernels_.moe_combine, Dim3{static_cast<uint32_t>(n), 1, 1}, Dim3{256, 1, 1}, 0, c));
}

uint64_t GpuBackend::HostMoeBytes() const {
  const HostMoe& b = host_moe_;
  return 4 * (b.x.capacity() + b.y.capacity() + b.xe.capacity()) +
         4 * (b.sel.capacity() + b.count.capacity() + b.first.capacity() + b.fill.capacity() + b.slot_of.capacity() +
              b.table.capacity() + b.experts.capacity() + b.slots.capacity()) +
         8 * b.rows.capacity();
}

// The tiered expert pool's path when its device tier is not this backend
// (an executor of its own): the tokens' rows and their routing come to the
// host, each selected expert runs there (ExpertExecutor), and the results go
// back to be summed on the device.
Status GpuBackend::MoeOnHost(int32_t il, DevicePtr h, DevicePtr sel, DevicePtr wts, DevicePtr out) {
  PassState& p = *pass_;
  const HParams& hp = *p.hp;
  const int64_t n = p.n, K = hp.n_expert_used, E = hp.n_embd, NE = hp.n_expert;
  HostMoe& b = host_moe_;
  b.x.resize(static_cast<size_t>(n * E));
  b.y.resize(static_cast<size_t>(n * K * E));
  b.xe.resize(static_cast<size_t>(2 * n * E));
  b.sel.resize(static_cast<size_t>(n * K));
  float* const xe = b.xe.data();
  float* const ye = xe + n * E;
  STRATA_RETURN_IF_ERROR(device_->CopyToHost(b.x.data(), h, F(n * E), stream_));
  STRATA_RETURN_IF_ERROR(device_->CopyToHost(b.sel.data(), sel, I(n * K), stream_));
  STRATA_RETURN_IF_ERROR(Check(device_->Synchronize(stream_)));
  transfers_.down_bytes += F(n * E) + I(n * K);
  ++transfers_.down_calls;
  for (int64_t e = 0; e < NE; ++e) {
    int64_t mrows = 0;
    for (int64_t i = 0; i < n * K; ++i)
      if (b.sel[static_cast<size_t>(i)] == e) {
        std::memcpy(xe + mrows * E, &b.x[static_cast<size_t>((i / K) * E)], F(E));
        ++mrows;
      }
    if (mrows == 0) continue;
    STRATA_RETURN_IF_ERROR(p.opt->experts->RunExpert(il, static_cast<uint32_t>(e), xe, mrows, ye));
    int64_t r = 0;
    for (int64_t i = 0; i < n * K; ++i)
      if (b.sel[static_cast<size_t>(i)] == e) std::memcpy(&b.y[static_cast<size_t>(i * E)], ye + r++ * E, F(E));
  }
  WorkspaceScope scope(*p.ws);
  const DevicePtr res = Take(*p.ws, F(n * K * E));
  if (!res) return p.ws->Exhausted("MoE experts");
  STRATA_RETURN_IF_ERROR(device_->CopyToDevice(res, b.y.data(), F(n * K * E), stream_));
  transfers_.up_bytes += F(n * K * E);
  ++transfers_.up_calls;
  gpu::MoeCombineArgs c{};
  c.results = AsPtr<const float>(res);
  c.where = nullptr;  // entry order
  c.wts = AsPtr<const float>(wts);
  c.out = AsPtr<float>(out);
  c.n = static_cast<int32_t>(n), c.k = static_cast<int32_t>(K), c.cols = static_cast<int32_t>(E);
  STRATA_RETURN_IF_ERROR(L()(kernels_.moe_combine, Dim3{static_cast<uint32_t>(n), 1, 1}, Dim3{256, 1, 1}, 0, c));
  return device_->Synchronize(stream_);  // the next layer's rows go into the same host buffers
}

// The VRAM/RAM split (docs/experts-split.md). The routing and the tokens'
// rows come down; the split says which of the layer's experts run from the
// device tier's slots; the host lays out the places (device experts first,
// in expert order, then the host's) and the tiles, and uploads them; the
// device runs its experts from the slot buffer in the same grouped launches
// as MoeFfn, while the host tier runs the others; the host's results go up
// into the places after the device's, and one combine sums both. The
// experts the cache admitted are uploaded at EndLayer, after the layer's
// products on the same stream.
Status GpuBackend::MoeSplit(int32_t il, ExpertSplit& split, DevicePtr h, DevicePtr sel, DevicePtr wts, DevicePtr out) {
  using Clock = std::chrono::steady_clock;
  auto since = [](Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  PassState& p = *pass_;
  const HParams& hp = *p.hp;
  const Model& model = *p.m;
  const int64_t n = p.n, K = hp.n_expert_used, E = hp.n_embd, NE = hp.n_expert, nK = n * K;
  ExpertSplit::Times& times = split.times();
  HostMoe& b = host_moe_;
  {
    // Each buffer at most what this pass needs (exactly, not a vector's
    // doubling): the plan counts them (SplitHostBufferBytes).
    const auto un = static_cast<size_t>(n), uE = static_cast<size_t>(E), unK = static_cast<size_t>(nK),
               uNE = static_cast<size_t>(NE);
    const size_t tiles = static_cast<size_t>(gpu::MoeShape::For(hp, n).max_tiles);
    b.x.reserve(un * uE);
    b.xe.reserve(un * uE);
    b.y.reserve(unK * uE);
    b.sel.reserve(unK);
    b.table.reserve(4 * unK + 3 * tiles + 1);  // with the places' expert ids (the experts' biases)
    for (auto* v : {&b.count, &b.first, &b.fill, &b.slot_of, &b.slots}) v->reserve(uNE);
    b.experts.reserve(uNE);
    b.rows.reserve(uNE);
  }
  b.x.resize(static_cast<size_t>(n * E));
  b.sel.resize(static_cast<size_t>(nK));
  const Clock::time_point t0 = Clock::now();
  STRATA_RETURN_IF_ERROR(device_->CopyToHost(b.sel.data(), sel, I(nK), stream_));
  STRATA_RETURN_IF_ERROR(device_->CopyToHost(b.x.data(), h, F(n * E), stream_));
  STRATA_RETURN_IF_ERROR(Check(device_->Synchronize(stream_)));
  times.route_wait += since(t0);
  transfers_.down_bytes += I(nK) + F(n * E);
  ++transfers_.down_calls;
  times.down_bytes += I(nK) + F(n * E);
  ++times.layers;

  // The layer's distinct experts, in expert order, and where each runs.
  b.count.assign(static_cast<size_t>(NE), 0);
  for (int32_t e : b.sel) {
    if (e < 0 || e >= NE) return Internal(StrFormat("the router chose expert %d of %lld", e, static_cast<long long>(NE)));
    ++b.count[static_cast<size_t>(e)];
  }
  b.experts.clear();
  b.rows.clear();
  for (int64_t e = 0; e < NE; ++e)
    if (b.count[static_cast<size_t>(e)]) {
      b.experts.push_back(static_cast<uint32_t>(e));
      b.rows.push_back(b.count[static_cast<size_t>(e)]);
    }
  b.slots.assign(b.experts.size(), -1);
  // The slots as the last layer's uploads leave them, before anything reads
  // or writes one (Assign's offloads upload now, on the compute stream).
  STRATA_RETURN_IF_ERROR(WaitSlotUploads());
  STRATA_RETURN_IF_ERROR(split.Assign(il, b.experts, b.rows, b.slots, link_bytes_per_s_));
  b.slot_of.assign(static_cast<size_t>(NE), -1);
  for (size_t j = 0; j < b.experts.size(); ++j) b.slot_of[b.experts[j]] = b.slots[j];

  // Places: the device's experts first, then the host's.
  const gpu::MoeShape shape = gpu::MoeShape::For(hp, n);
  const int64_t T = shape.max_tiles;
  b.first.assign(static_cast<size_t>(NE), 0);
  b.fill.assign(static_cast<size_t>(NE), 0);
  int64_t at = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (uint32_t e : b.experts)
      if ((b.slot_of[e] >= 0) == (pass == 0)) {
        b.first[e] = static_cast<int32_t>(at);
        at += b.count[e];
      }
  int64_t n_dev = 0;
  for (uint32_t e : b.experts) n_dev += b.slot_of[e] >= 0 ? b.count[e] : 0;
  // One table: where[nK], place_expert[nK], place_token[nK], the tiles, and
  // with the experts' biases (gpt-oss) each place's expert id (place_expert
  // holds slot ids).
  const TensorView* biases[3] = {model.Get(il, R::kFfnGateExpsBias), model.Get(il, R::kFfnUpExpsBias),
                                 model.Get(il, R::kFfnDownExpsBias)};
  const bool biased = biases[0] || biases[1] || biases[2];
  const int64_t table_ints = 3 * nK + 3 * T + 1 + (biased ? nK : 0);
  b.table.assign(static_cast<size_t>(table_ints), 0);
  int32_t* where = b.table.data();
  int32_t* place_expert = where + nK;
  int32_t* place_token = place_expert + nK;
  int32_t* tile_expert = place_token + nK;
  int32_t* tile_col0 = tile_expert + T;
  int32_t* tile_ncols = tile_col0 + T;
  int32_t& n_tiles = tile_ncols[T];
  for (int64_t i = 0; i < nK; ++i) {
    const int32_t e = b.sel[static_cast<size_t>(i)];
    const int32_t pl = b.first[static_cast<size_t>(e)] + b.fill[static_cast<size_t>(e)]++;
    where[i] = pl;
    place_expert[pl] = b.slot_of[static_cast<size_t>(e)];
    place_token[pl] = static_cast<int32_t>(i / K);
    if (biased) b.table[static_cast<size_t>(3 * nK + 3 * T + 1 + pl)] = e;
  }
  for (uint32_t e : b.experts) {
    if (b.slot_of[e] < 0) continue;
    for (int32_t c = 0; c < b.count[e]; c += static_cast<int32_t>(gpu::kTileColumns)) {
      if (n_tiles >= T) return Internal("MoeSplit: more expert tiles than the shape allows");
      tile_expert[n_tiles] = b.slot_of[e];
      tile_col0[n_tiles] = b.first[e] + c;
      tile_ncols[n_tiles] = std::min<int32_t>(b.count[e] - c, static_cast<int32_t>(gpu::kTileColumns));
      ++n_tiles;
    }
  }

  WorkspaceScope scope(*p.ws);
  const DevicePtr table = Take(*p.ws, I(table_ints));
  const DevicePtr g = Take(*p.ws, F(nK * shape.ff));
  const DevicePtr u = Take(*p.ws, F(nK * shape.ff));
  const DevicePtr results = Take(*p.ws, F(nK * E));
  const DevicePtr xq_h = Take(*p.ws, gpu::QuantizedBytes(n, E));
  const DevicePtr xq_g = Take(*p.ws, gpu::QuantizedBytes(nK, shape.ff));
  if (!xq_g) return p.ws->Exhausted("MoE experts (split)");
  STRATA_RETURN_IF_ERROR(device_->CopyToDevice(table, b.table.data(), I(table_ints), stream_));
  transfers_.up_bytes += I(table_ints);
  ++transfers_.up_calls;
  const DevicePtr d_where = table, d_place_expert = table + I(nK), d_place_token = table + I(2 * nK),
                  d_tiles = table + I(3 * nK), d_place_eid = table + I(3 * nK + 3 * T + 1);

  // The device's experts: launched, not waited for.
  if (n_dev > 0) {
    const DevicePtr base = Address(split.SlotBuffer());
    if (!base) return Internal("MoeSplit: the slot buffer is not this backend's");
    const uint64_t stride = split.SlotBytes();
    int32_t any = -1;
    for (uint32_t e : b.experts) any = std::max(any, b.slot_of[e]);
    const SwiGluMatrices& sm = split.SlotMatrices(any);
    const BufferMatrix* in[3] = {&sm.gate, &sm.up, &sm.down};
    gpu::DeviceMatrix w[3];
    for (int k = 0; k < 3; ++k) {
      const BufferMatrix& m = *in[k];
      const uint64_t at_slot = static_cast<uint64_t>(any) * stride;
      if (m.offset < at_slot || !CanMultiply(m.type)) return Internal("MoeSplit: a slot's matrices are not usable");
      w[k] = gpu::DeviceMatrix{m.type, base + (m.offset - at_slot), m.row_bytes, m.rows, m.cols, stride};
    }
    // Every slot this layer runs holds one of its experts: the same types and shapes.
    for (uint32_t e : b.experts) {
      if (b.slot_of[e] < 0) continue;
      const SwiGluMatrices& o = split.SlotMatrices(b.slot_of[e]);
      if (o.gate.type != sm.gate.type || o.up.type != sm.up.type || o.down.type != sm.down.type ||
          o.gate.rows != sm.gate.rows || o.down.rows != sm.down.rows || o.gate.cols != sm.gate.cols)
        return Internal(StrFormat("MoeSplit: slots %d and %d of layer %d hold matrices of different shapes",
                                  b.slot_of[e], any, il));
    }
    gpu::ExpertPlaces places;
    places.n_places = n_dev;
    places.place_expert = d_place_expert;
    places.per_place = shape.per_place;
    places.tile_expert = d_tiles;
    places.tile_col0 = d_tiles + I(T);
    places.tile_ncols = d_tiles + I(2 * T);
    places.n_tiles = d_tiles + I(3 * T);
    places.max_tiles = shape.max_tiles;
    places.place_xcol = d_place_token;
    auto xstride = [](const gpu::DeviceMatrix& m) { return gpu::QuantizesActivations(m.type) ? m.cols / 32 : m.cols; };
    gpu::PreparedInput hin(L(), h, n, E, xq_h);
    STRATA_ASSIGN_OR_RETURN(DevicePtr xg, hin.For(w[0]));
    STRATA_RETURN_IF_ERROR(gpu::ExpertMatMulPrepared(L(), w[0], xg, xstride(w[0]), places, g));
    STRATA_ASSIGN_OR_RETURN(DevicePtr xu, hin.For(w[1]));
    STRATA_RETURN_IF_ERROR(gpu::ExpertMatMulPrepared(L(), w[1], xu, xstride(w[1]), places, u));
    STRATA_RETURN_IF_ERROR(AddBiasPlaces(biases[0], g, d_place_eid, n_dev, shape.ff));
    STRATA_RETURN_IF_ERROR(AddBiasPlaces(biases[1], u, d_place_eid, n_dev, shape.ff));
    gpu::SwiGluArgs sw{AsPtr<float>(g), AsPtr<const float>(u), n_dev * shape.ff, hp.swiglu_alpha, hp.swiglu_limit};
    STRATA_RETURN_IF_ERROR(L()(kernels_.swiglu, Dim3{GridFor(sw.n, 256), 1, 1}, Dim3{256, 1, 1}, 0, sw));
    places.place_xcol = 0;
    gpu::PreparedInput gin(L(), g, n_dev, shape.ff, xq_g);
    STRATA_ASSIGN_OR_RETURN(DevicePtr xd, gin.For(w[2]));
    STRATA_RETURN_IF_ERROR(gpu::ExpertMatMulPrepared(L(), w[2], xd, xstride(w[2]), places, results));
    STRATA_RETURN_IF_ERROR(AddBiasPlaces(biases[2], results, d_place_eid, n_dev, E));
  }

  // The host's experts, meanwhile: each one's rows gathered in place order,
  // its results written where its places are.
  const Clock::time_point th = Clock::now();
  const int64_t n_host = nK - n_dev;
  b.y.resize(static_cast<size_t>(n_host * E));
  b.xe.resize(static_cast<size_t>(n * E));
  for (uint32_t e : b.experts) {
    if (b.slot_of[e] >= 0) {
      ++times.device_experts;
      continue;
    }
    ++times.host_experts;
    const int64_t p0 = b.first[e], m = b.count[e];
    for (int64_t r = 0; r < m; ++r)
      std::memcpy(&b.xe[static_cast<size_t>(r * E)], &b.x[static_cast<size_t>(place_token[p0 + r] * E)], F(E));
    STRATA_RETURN_IF_ERROR(split.RunOnHost(il, e, b.xe.data(), m, &b.y[static_cast<size_t>((p0 - n_dev) * E)]));
  }
  times.host += since(th);
  if (p.opt->op_times && n_dev > 0) {  // timed (--bench): how long the device's experts outlast the host's
    const Clock::time_point tw = Clock::now();
    STRATA_RETURN_IF_ERROR(Check(device_->Synchronize(stream_)));
    times.device_wait += since(tw);
  }
  if (n_host > 0) {
    STRATA_RETURN_IF_ERROR(device_->CopyToDevice(results + F(n_dev * E), b.y.data(), F(n_host * E), stream_));
    transfers_.up_bytes += F(n_host * E);
    ++transfers_.up_calls;
    times.up_bytes += F(n_host * E);
  }
  gpu::MoeCombineArgs c{};
  c.results = AsPtr<const float>(results);
  c.where = AsPtr<const int32_t>(d_where);
  c.wts = AsPtr<const float>(wts);
  c.out = AsPtr<float>(out);
  c.n = static_cast<int32_t>(n), c.k = static_cast<int32_t>(K), c.cols = static_cast<int32_t>(E);
  STRATA_RETURN_IF_ERROR(L()(kernels_.moe_combine, Dim3{static_cast<uint32_t>(n), 1, 1}, Dim3{256, 1, 1}, 0, c));
  // The admissions' uploads, on their own stream after this layer's work.
  STRATA_RETURN_IF_ERROR(OpenSlotUploads());
  Status ended = split.EndLayer();
  Status closed = CloseSlotUploads();
  return !ended.ok() ? ended : closed;
}

}  // namespace strata

namespace strata {
namespace {
uint64_t Aligned(uint64_t b) { return (b + 255) / 256 * 256; }
}  // namespace

// --- the device tier's op -----------------------------------------------------------

uint64_t GpuBackend::SlotScratchBytes(int64_t ff, int64_t embd, int64_t m) const {
  return 2 * Aligned(F(m * ff)) + 2 * Aligned(F(m * embd)) +
         Aligned(std::max(gpu::QuantizedBytes(m, embd), gpu::QuantizedBytes(m, ff)));
}

// The scratch holds, in order: the gate and up outputs, the rows in, the
// rows out, and the int8 form of whichever rows a product reads.
Status GpuBackend::SlotSwiGlu(const BackendBuffer& weights, const SwiGluMatrices& w, const BackendBuffer& scratch,
                              const float* x, int64_t m, float* y) {
  STRATA_RETURN_IF_ERROR(NeedDevice());
  const DevicePtr wb = Address(weights), sb = Address(scratch);
  if (!wb || !sb) return Internal("SlotSwiGlu: a buffer of another backend");
  const BufferMatrix* in[3] = {&w.gate, &w.up, &w.down};
  gpu::DeviceMatrix dm[3];
  for (int i = 0; i < 3; ++i) {
    const BufferMatrix& b = *in[i];
    if (!CanMultiply(b.type))
      return Unsupported(StrFormat("the %s backend has no kernel for %s", name().c_str(), std::string(TypeName(b.type)).c_str()));
    const uint64_t bytes = b.row_bytes * static_cast<uint64_t>(b.rows);
    if (b.offset > weights.bytes() || bytes > weights.bytes() - b.offset)
      return Internal("SlotSwiGlu: an expert matrix outside its buffer");
    dm[i] = gpu::DeviceMatrix{b.type, wb + b.offset, b.row_bytes, b.rows, b.cols, 0};
  }
  const int64_t ff = w.gate.rows, embd = w.gate.cols;
  if (SlotScratchBytes(ff, embd, m) > scratch.bytes()) return Internal("SlotSwiGlu: the scratch is too small for the rows");
  const DevicePtr g = sb, u = g + Aligned(F(m * ff)), xd = u + Aligned(F(m * ff)), yd = xd + Aligned(F(m * embd)),
                  xq = yd + Aligned(F(m * embd));
  STRATA_RETURN_IF_ERROR(device_->CopyToDevice(xd, x, F(m * embd), stream_));
  transfers_.up_bytes += F(m * embd);
  ++transfers_.up_calls;
  gpu::PreparedInput rows(L(), xd, m, embd, xq);
  for (int i = 0; i < 2; ++i) {
    STRATA_ASSIGN_OR_RETURN(DevicePtr xi, rows.For(dm[i]));
    STRATA_RETURN_IF_ERROR(gpu::MatMulPrepared(L(), dm[i], xi, m, i == 0 ? g : u));
  }
  // gpt-oss: the expert's biases (columns of the bound model's bias tensors) and clamped SwiGLU.
  const ExpertExtras& ex = w.extras;
  auto column = [&](const TensorView* t) -> Result<DevicePtr> {
    if (!t) return DevicePtr{0};
    STRATA_ASSIGN_OR_RETURN(DevicePtr base, WeightVector(t));
    return base + F(static_cast<int64_t>(ex.expert) * static_cast<int64_t>(t->shape[0]));
  };
  STRATA_ASSIGN_OR_RETURN(DevicePtr gate_b, column(ex.gate_b));
  STRATA_ASSIGN_OR_RETURN(DevicePtr up_b, column(ex.up_b));
  STRATA_ASSIGN_OR_RETURN(DevicePtr down_b, column(ex.down_b));
  for (auto [bias, out, width] : {std::tuple{gate_b, g, ff}, {up_b, u, ff}}) {
    if (!bias) continue;
    gpu::AddBiasArgs ba{AsPtr<float>(out), AsPtr<const float>(bias), m * width, static_cast<int32_t>(width)};
    STRATA_RETURN_IF_ERROR(L()(kernels_.add_bias, Dim3{GridFor(ba.n, 256), 1, 1}, Dim3{256, 1, 1}, 0, ba));
  }
  gpu::SwiGluArgs sw{AsPtr<float>(g), AsPtr<const float>(u), m * ff, ex.alpha, ex.limit};
  STRATA_RETURN_IF_ERROR(L()(kernels_.swiglu, Dim3{GridFor(sw.n, 256), 1, 1}, Dim3{256, 1, 1}, 0, sw));
  STRATA_RETURN_IF_ERROR(gpu::MatMul(L(), dm[2], g, m, yd, xq));
  if (down_b) {
    gpu::AddBiasArgs ba{AsPtr<float>(yd), AsPtr<const float>(down_b), m * w.down.rows,
                        static_cast<int32_t>(w.down.rows)};
    STRATA_RETURN_IF_ERROR(L()(kernels_.add_bias, Dim3{GridFor(ba.n, 256), 1, 1}, Dim3{256, 1, 1}, 0, ba));
  }
  STRATA_RETURN_IF_ERROR(device_->CopyToHost(y, yd, F(m * w.down.rows), stream_));
  STRATA_RETURN_IF_ERROR(Check(device_->Synchronize(stream_)));
  transfers_.down_bytes += F(m * w.down.rows);
  ++transfers_.down_calls;
  return Status::Ok();
}

}  // namespace strata
