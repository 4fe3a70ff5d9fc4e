#include "runtime/gpu/gpu_workspace.h"

#include <algorithm>

#include "runtime/gpu/gpu_matmul.h"
#include "runtime/gpu/gpu_pass.h"

namespace strata::gpu {
namespace {

uint64_t Fl(int64_t n) { return TakeBytes<float>(static_cast<uint64_t>(n)); }
uint64_t In(int64_t n) { return TakeBytes<int32_t>(static_cast<uint64_t>(n)); }
uint64_t Q(int64_t n, int64_t cols) { return TakeBytes<uint8_t>(QuantizedBytes(n, cols)); }

// GpuBackend::SwiGlu: gate and up outputs, x quantized once; then the down
// product quantizes the gate's output.
uint64_t SwiGluBytes(int64_t n, int64_t in, int64_t ff) { return 2 * Fl(n * ff) + Q(n, in) + Q(n, ff); }

// GpuBackend::LatentAttention's takes, then its output product's activations.
uint64_t LatentAttentionBytes(const HParams& hp, int64_t n, int64_t max_keys) {
  const AttentionShape s = AttentionShape::For(hp, Mixer::kLatentAttention, n, max_keys);
  const int64_t H = hp.n_head, Dk = hp.head_dim_k, Dv = hp.head_dim_v, L = hp.kv_lora_rank, nope = hp.MlaNope(),
                Vm = hp.head_dim_v_mla, Dq = hp.head_dim_k_mla;
  return Fl(n * H * Dq) + (hp.q_lora_rank ? Fl(n * hp.q_lora_rank) : 0) + Fl(n * Dk) + Fl(n * H * Dk) +
         Fl(H * n * std::max(nope, L)) + Fl(H * n * std::max(L, Vm)) + Fl(n * H * Dv) + Fl(n * H * Vm) +
         (s.splits > 1 ? Fl(n * H * s.splits * (Dv + 2)) : 0) + Q(n, hp.n_embd) +
         Q(H * n, std::max({nope, L, static_cast<int64_t>(hp.q_lora_rank)})) + Q(n, H * Vm);
}

uint64_t AttentionBytes(const HParams& hp, Mixer mixer, int64_t n, int64_t max_keys) {
  if (mixer == Mixer::kLatentAttention) return LatentAttentionBytes(hp, n, max_keys);
  const AttentionShape s = AttentionShape::For(hp, mixer, n, max_keys);
  const int64_t H = hp.n_head, Hkv = hp.n_head_kv, Dk = hp.head_dim_k, Dv = hp.head_dim_v;
  return Fl(n * s.q_width) + Fl(n * Hkv * Dk) + Fl(n * Hkv * Dv) + Fl(n * H * Dv) +
         (s.splits > 1 ? Fl(n * H * s.splits * (Dv + 2)) : 0) + Q(n, hp.n_embd) + Q(n, H * Dv);
}

uint64_t DeltaNetBytes(const HParams& hp, int64_t n) {
  const DeltaNetShape s = DeltaNetShape::For(hp);
  // The chunked form's scratch is counted whichever form runs (the pass's
  // shape does not say).
  return 2 * Fl(n * s.channels) + 2 * Fl(n * s.value_dim) + 2 * Fl(n * s.n_v) +
         Fl(n * s.n_v * DeltaNetShape::kChunk * s.dv) + std::max(Q(n, hp.n_embd), Q(n, s.value_dim));
}

uint64_t MoeBytes(const HParams& hp, int64_t n) {
  const int64_t NE = hp.n_expert, K = hp.n_expert_used, E = hp.n_embd, nK = n * K;
  const MoeShape s = MoeShape::For(hp, n);
  const uint64_t routing = Fl(n * NE) + In(nK) + 2 * Fl(nK);
  const uint64_t router = Q(n, E);
  const uint64_t host = Fl(nK * E);
  // (+ In(nK): the split's table holds each place's expert id too, for the experts' biases.)
  const uint64_t device = In(NE) + In(NE + 1) + In(NE) + 3 * In(nK) + In(3 * s.max_tiles + 1) + 2 * Fl(nK * s.ff) +
                          Fl(nK * E) + Q(n, E) + Q(nK, s.ff) + In(nK);
  return routing + std::max({router, host, device});
}

}  // namespace

AttentionShape AttentionShape::For(const HParams& hp, Mixer mixer, int64_t n, int64_t max_keys) {
  AttentionShape s;
  const bool gated = mixer == Mixer::kGatedAttention;
  s.q_width = (gated ? 2 : 1) * static_cast<int64_t>(hp.n_head) * hp.head_dim_k;
  s.q_head_stride = (gated ? 2 : 1) * static_cast<int64_t>(hp.head_dim_k);
  if (n <= kMatVecMaxColumns && max_keys > AttnBlocking::kSplitKeys)
    s.splits = (max_keys + AttnBlocking::kSplitKeys - 1) / AttnBlocking::kSplitKeys;
  return s;
}

DeltaNetShape DeltaNetShape::For(const HParams& hp) {
  DeltaNetShape s;
  s.n_k = hp.ssm_n_group;
  s.grouped_heads = hp.ssm_grouped_heads;
  s.n_v = hp.ssm_dt_rank;
  s.dk = s.dv = hp.ssm_d_state;
  s.key_dim = s.n_k * s.dk;
  s.value_dim = s.n_v * s.dv;
  s.channels = 2 * s.key_dim + s.value_dim;
  s.d_conv = hp.ssm_d_conv;
  return s;
}

MoeShape MoeShape::For(const HParams& hp, int64_t n) {
  MoeShape s;
  s.ff = hp.n_ff_exp;
  s.per_place = n <= kMatVecMaxColumns;
  const int64_t entries = n * hp.n_expert_used;
  s.max_tiles = static_cast<int32_t>((entries + kTileColumns - 1) / kTileColumns + hp.n_expert);
  return s;
}

uint64_t GpuWorkspaceBytes(const Model& model, const PassShape& shape) {
  const HParams& hp = model.hp();
  const ArchSpec& spec = GetArchSpec(model.arch());
  auto need = [&](int64_t n) {
    const uint64_t top = TakeBytes<uint8_t>(PassTablesBytes(n, n, hp.n_layer + 1)) + 3 * Fl(n * hp.n_embd);
    uint64_t stage = Fl(n * hp.n_vocab) + Q(n, hp.n_embd) + In(n);  // the output head, its argmax ids
    // An MTP pass (once enabled): its input's concatenated rows and their product.
    if (model.mtp_enabled()) stage = std::max(stage, Fl(n * 2 * hp.n_embd) + Q(n, 2 * hp.n_embd));
    for (uint32_t il = 0; il < model.run_layers(); ++il) {
      const LayerPlan layer = spec.Layer(hp, il);
      stage = std::max(stage, layer.mixer == Mixer::kGatedDeltaNet ? DeltaNetBytes(hp, n)
                                                                   : AttentionBytes(hp, layer.mixer, n, shape.max_keys));
      switch (layer.ffn) {
        case FfnKind::kDense: stage = std::max(stage, SwiGluBytes(n, hp.n_embd, hp.n_ff)); break;
        case FfnKind::kMoeSharedExpert:
          stage = std::max(stage, Fl(n * hp.n_embd) + SwiGluBytes(n, hp.n_embd, hp.n_ff_shexp));
          [[fallthrough]];
        case FfnKind::kMoe: stage = std::max(stage, MoeBytes(hp, n)); break;
      }
    }
    return top + stage;
  };
  // A pass of fewer tokens can take more in one place (decode splits the
  // context): the bound covers both ends.
  const int64_t n = std::max<int64_t>(shape.tokens, 1);
  return std::max(need(n), need(std::min<int64_t>(n, kMatVecMaxColumns)));
}

}  // namespace strata::gpu
