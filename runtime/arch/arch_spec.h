#pragma once
// Architectures as data. One ArchSpec per supported architecture lists every
// hyperparameter (GGUF key, type, required or default and why the default is
// safe) and every tensor (name pattern, shape as a function of the
// hyperparameters, allowed types, role, which layers have it). The packer
// checks GGUFs against it, the validator checks packs against it, and the
// runtime finds its tensors through it: one source of truth.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/quant/ggml_type.h"

namespace strata {

enum class Arch : uint8_t {
  kLlama = 0,
  kQwen3Moe = 1,
  kQwen35Moe = 2,
  kVocabOnly = 3,  // a tokenizer and no weights (llama.cpp's vocab-only GGUFs)
  kQwen3 = 4,      // dense Qwen3, added through the spec alone (docs/architectures.md)
  kGlm4Moe = 5,    // GLM-4.5 / 4.6 (glm4moe)
  kGptOss = 6,     // gpt-oss-20b / 120b (gpt-oss)
  kQwen3Next = 7,  // Qwen3-Next-80B-A3B (qwen3next): qwen35moe's layers, its own head order and tensor forms
  kDeepseek2 = 8,  // DeepSeek-V2/V2-Lite/V3, Moonlight, Kimi K2 (deepseek2): multi-head latent attention
};
std::string_view ArchName(Arch a);  // "llama", "qwen3moe", "qwen35moe", "vocab-only", ...
std::optional<Arch> ArchFromName(std::string_view gguf_name);
// The architectures with weights Strata runs, comma-separated: "llama, qwen3moe, ...".
std::string RunnableArchNames();

enum class RopeType : uint8_t { kNorm = 0, kNeox = 1, kIMRope = 2 };
std::string_view RopeTypeName(RopeType r);

// RoPE scaling as GGUF's rope.scaling.type names it: none, linear (positions
// times rope_freq_scale) or YaRN (linear below the corrected dimensions,
// unscaled above them, blended between, with a magnitude correction).
enum class RopeScaling : uint8_t { kNone = 0, kLinear = 1, kYarn = 2 };
std::string_view RopeScalingName(RopeScaling s);  // "none", "linear", "yarn"

// How the router's logits become the experts' weights: kSoftmax a softmax
// over all experts, then the top k of it; kSigmoid each logit's sigmoid (the
// top k chosen on sigmoid + the per-expert selection bias exp_probs_b when
// the layer has one, the weights unbiased); kSoftmaxWeight the top k logits,
// then a softmax over those k. GGUF's expert_gating_func: 1, 2, 3.
enum class ExpertGating : uint8_t { kSoftmax = 1, kSigmoid = 2, kSoftmaxWeight = 3 };
std::string_view ExpertGatingName(ExpertGating g);  // "softmax", "sigmoid", "softmax over the chosen"

// Normalized, typed hyperparameters: what a pack stores and the runtime uses.
// No stringly-typed lookups happen after packing.
struct HParams {
  uint32_t n_vocab = 0;
  uint32_t n_ctx_train = 0;
  uint32_t n_embd = 0;
  uint32_t n_layer_all = 0;  // block_count (includes MTP/nextn layers)
  uint32_t n_layer = 0;      // layers of the main forward pass = n_layer_all - nextn_predict_layers
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim_k = 0;  // attention.key_length
  uint32_t head_dim_v = 0;  // attention.value_length
  uint32_t n_ff = 0;        // dense FFN width (llama)
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint32_t n_ff_exp = 0;
  uint32_t n_ff_shexp = 0;
  uint32_t n_rot = 0;  // rope.dimension_count
  RopeType rope_type = RopeType::kNorm;
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;        // 1 / rope.scaling.factor (or rope.scale_linear)
  RopeScaling rope_scaling = RopeScaling::kNone;
  uint32_t n_ctx_orig_yarn = 0;        // rope.scaling.original_context_length (YaRN's corrections)
  float rope_attn_factor = 1.0f;       // rope.scaling.attn_factor: multiplies cos and sin
  std::array<int32_t, 4> rope_sections = {0, 0, 0, 0};
  float rms_eps = 1e-5f;
  float attn_scale = 0.0f;  // 0: 1/sqrt(head_dim_k)
  bool expert_weights_norm = false;
  float expert_weights_scale = 0.0f;  // 0 or 1: no scaling
  ExpertGating expert_gating = ExpertGating::kSoftmax;
  uint32_t n_layer_dense_lead = 0;    // leading_dense_block_count: layers 0..n-1 run a dense FFN (glm4moe)
  uint32_t n_expert_shared = 0;       // expert_shared_count (glm4moe: n_ff_shexp = n_ff_exp * it)
  // Sliding-window attention (gpt-oss): layer il attends to its last n_swa
  // positions when IsSwaLayer(il).
  uint32_t n_swa = 0;                 // attention.sliding_window; 0: none
  uint32_t swa_pattern = 0;           // attention.sliding_window_pattern: il % p < p - 1 slides; 0: every layer
  // The experts' clamped SwiGLU (gpt-oss): out = min(g, limit) * sigmoid(alpha
  // min(g, limit)) * (clamp(u, -limit, limit) + 1). 0: plain SwiGLU.
  float swiglu_alpha = 0.0f;
  float swiglu_limit = 0.0f;
  // Gated delta-net (qwen35moe).
  uint32_t ssm_d_conv = 0;
  uint32_t ssm_d_state = 0;  // head dim of k and v
  uint32_t ssm_n_group = 0;  // key heads
  uint32_t ssm_dt_rank = 0;  // value heads
  uint32_t ssm_d_inner = 0;  // value heads * head dim
  // Which key head value head j reads: false j % ssm_n_group (qwen35moe's
  // tiled order), true j / (ssm_dt_rank / ssm_n_group) (qwen3next's grouped
  // order, llama.cpp's repeat-interleave).
  bool ssm_grouped_heads = false;
  uint32_t full_attn_interval = 0;
  uint32_t nextn_predict_layers = 0;
  bool tied_output = false;  // no output.weight: the token embedding is the output head
  // Multi-head latent attention (deepseek2). The KV cache holds one head of
  // head_dim_k = kv_lora_rank + n_rot values per position (the normed latent,
  // then the roped key part); the values are its first head_dim_v =
  // kv_lora_rank (no V cache). A query head is head_dim_k_mla wide (its
  // nope part, then n_rot roped) before attn_k_b absorbs the nope part into
  // the latent; attn_v_b takes a head's latent output to head_dim_v_mla.
  uint32_t q_lora_rank = 0;     // attention.q_lora_rank: attn_q_a/attn_q_b of this width; 0: one attn_q
  uint32_t kv_lora_rank = 0;    // attention.kv_lora_rank; 0: not latent attention
  uint32_t head_dim_k_mla = 0;  // attention.key_length_mla
  uint32_t head_dim_v_mla = 0;  // attention.value_length_mla
  // Expert groups (DeepSeek V3): the router keeps the n_expert_groups_used
  // groups whose two best selection scores sum highest, then the top k of
  // their experts. 0 or 1 group: no limit.
  uint32_t n_expert_groups = 0;       // expert_group_count
  uint32_t n_expert_groups_used = 0;  // expert_group_used_count
  // rope.scaling.yarn_log_multiplier as GGUF stores it: 0.1 x YaRN's
  // mscale_all_dim (llama.cpp divides it by 0.1 on load). 0: none.
  float rope_yarn_log_mul = 0.0f;

  // The key head that value head hv of a gated delta-net layer reads.
  uint32_t SsmKeyHead(uint32_t hv) const {
    return ssm_grouped_heads ? hv / (ssm_dt_rank / ssm_n_group) : hv % ssm_n_group;
  }
  // qwen35moe: layer il runs gated delta-net (true) or gated full attention.
  bool IsRecurrentLayer(uint32_t il) const {
    return full_attn_interval != 0 && il < n_layer && (il + 1) % full_attn_interval != 0;
  }
  // gpt-oss: layer il attends through a sliding window (llama.cpp's pattern rule).
  bool IsSwaLayer(uint32_t il) const {
    return n_swa != 0 && il < n_layer && (swa_pattern == 0 || il % swa_pattern < swa_pattern - 1);
  }
  bool IsLatentAttention() const { return kv_lora_rank != 0; }
  // The width of a query head's part that attn_k_b absorbs (deepseek2).
  uint32_t MlaNope() const { return head_dim_k_mla > n_rot ? head_dim_k_mla - n_rot : 0; }
  // glm4moe: layer il is one of the leading dense layers.
  bool IsDenseLeadLayer(uint32_t il) const { return il < n_layer_dense_lead; }
  // The routed experts of the main layers: (n_layer - leading dense layers) x n_expert.
  uint64_t RoutedExperts() const {
    return uint64_t{n_layer - (n_layer_dense_lead < n_layer ? n_layer_dense_lead : n_layer)} * n_expert;
  }
};

// What a tensor is for, in the runtime's words.
enum class TensorRole : uint16_t {
  kTokenEmbd = 0, kOutputNorm, kOutput,
  kAttnNorm, kAttnQ, kAttnK, kAttnV, kAttnOutput, kAttnQNorm, kAttnKNorm,
  kFfnNorm, kFfnGate, kFfnUp, kFfnDown,
  kFfnGateInp, kFfnGateExps, kFfnUpExps, kFfnDownExps,
  kFfnGateInpShexp, kFfnGateShexp, kFfnUpShexp, kFfnDownShexp,
  kPostAttnNorm, kAttnQkv, kAttnGate,
  kSsmConv1d, kSsmDtBias, kSsmA, kSsmBeta, kSsmAlpha, kSsmNorm, kSsmOut,
  kNextnEhProj, kNextnEnorm, kNextnHnorm, kNextnEmbedTokens, kNextnSharedHeadHead, kNextnSharedHeadNorm,
  kAttnQBias, kAttnKBias, kAttnVBias, kFfnExpProbsB,
  kAttnOutputBias, kAttnSinks, kFfnGateInpBias, kFfnGateExpsBias, kFfnUpExpsBias, kFfnDownExpsBias,
  kAttnQA, kAttnQANorm, kAttnQB, kAttnKvAMqa, kAttnKvANorm, kAttnKB, kAttnVB,
  kCount
};
std::string_view TensorRoleName(TensorRole r);

// Which layers carry a tensor.
enum class LayerSet : uint8_t {
  kGlobal,         // not per layer
  kAll,            // every main layer
  kAttention,      // main layers running full attention (all layers for llama/qwen3moe)
  kRecurrent,      // main layers running gated delta-net (qwen35moe)
  kNextn,          // the MTP/nextn layers (index >= n_layer)
  kAllWithNextn,   // every main layer and every nextn layer
  kAttentionAndNextn,
  kDenseLead,      // the leading dense layers (il < n_layer_dense_lead)
  kMoeWithNextn,   // every other main layer, and every nextn layer (glm4moe's MoE layers)
  kLowRankQ,       // every main and MTP layer, when q_lora_rank > 0 (deepseek2's attn_q_a / attn_q_b)
  kFullRankQ,      // every main and MTP layer, when q_lora_rank == 0 (deepseek2's attn_q)
};

// Which types a tensor may be stored in.
enum class TypeRule : uint8_t {
  kF32Only,     // 1-D vectors and small state tensors the graph consumes as F32
  kAnyWeight,   // any weight type with a reference dequantizer
};

// One dimension of a shape, as a function of the hyperparameters.
struct DimExpr {
  const char* text;  // for messages: "n_embd", "n_head*head_dim_k"
  uint64_t (*eval)(const HParams&);
};

struct TensorSpec {
  const char* pattern;  // "blk.{L}.attn_q.weight" ({L} = layer index) or a global name
  TensorRole role;
  LayerSet layers;
  uint8_t rank;                      // logical rank
  std::array<DimExpr, 3> shape;      // ggml order: shape[0] is the row length
  TypeRule types;
  bool optional;
  const char* why_optional;          // when optional: what happens if absent
};

// kGating: expert_gating_func (a u32: 1 softmax, 2 sigmoid, 3 softmax over the
// chosen; 0 means the default) into HParams::expert_gating.
enum class HpKind : uint8_t { kU32, kF32, kBool, kI32Array4, kU32OrPerLayer, kGating };

struct HParamSpec {
  const char* key;  // without the "<arch>." prefix, e.g. "embedding_length"; "@" prefix: a full key
  HpKind kind;
  bool required;
  double default_value;                 // for optional keys without `derive`
  uint32_t (*derive)(const HParams&);   // optional: the default computed from keys read before it
  const char* default_text;             // the default as users read it: "attention.head_count", "10000"
  const char* why_default_safe;
  // Where the value goes.
  uint32_t HParams::*u32_field;
  float HParams::*f32_field;
  bool HParams::*bool_field;
};

// The layer structure, as data: the forward pass, the probe and the memory
// plan are written once against it, with no branch on the architecture.
//
// Mixers: kAttention is multi-head attention with grouped-query KV heads;
// kGatedAttention also carries a gate per head in attn_q ([q | gate] per
// head) and multiplies the output by sigmoid(gate); kGatedDeltaNet is the
// gated delta rule over a recurrent state (runtime/model/delta_net.cc).
// QK-norm (attn_q_norm, attn_k_norm) and Q/K/V biases (attn_{q,k,v}.bias,
// added to the products before the norm) apply wherever the tensors exist.
// kLatentAttention is deepseek2's multi-head latent attention, absorbed: a
// query (attn_q, or attn_q_a -> attn_q_a_norm -> attn_q_b) split per head
// into a nope part and a roped part; attn_kv_a_mqa's latent (normed by
// attn_kv_a_norm) and one roped key part per token, cached together; each
// head's nope part taken into the latent by attn_k_b, so attention is
// multi-query over the cached rows (keys: latent + RoPE part; values: the
// latent); each head's output through attn_v_b, then attn_output.
enum class Mixer : uint8_t { kAttention, kGatedAttention, kGatedDeltaNet, kLatentAttention };
// FFNs: kDense a SwiGLU FFN; kMoe routed experts (softmax router, top-k,
// renormalized weights when HParams::expert_weights_norm, SwiGLU experts);
// kMoeSharedExpert kMoe plus a shared SwiGLU expert, gated per token by
// sigmoid(ffn_gate_inp_shexp . x) where the layer has that tensor (qwen35moe)
// and added ungated where it has not (glm4moe). Routing follows
// HParams::expert_gating; a layer's exp_probs_b biases only the choice.
enum class FfnKind : uint8_t { kDense, kMoe, kMoeSharedExpert };
std::string_view MixerName(Mixer m);      // "attention", "gated attention", "gated delta-net"
std::string_view FfnKindName(FfnKind f);  // "dense SwiGLU", "MoE", "MoE + shared expert"

struct LayerStructure {
  Mixer attention;       // the mixer of the layers that run attention
  bool recurrent;        // layers between every full_attn_interval-th run kGatedDeltaNet
  FfnKind ffn;           // of every layer but the leading dense ones (HParams::n_layer_dense_lead: kDense)
  TensorRole ffn_norm;   // the norm before the FFN: kFfnNorm, or kPostAttnNorm (qwen35moe's name for it)
};

// What one layer runs.
struct LayerPlan {
  Mixer mixer;
  FfnKind ffn;
  TensorRole ffn_norm;
};

// The multi-token-prediction (MTP, "nextn") block some architectures ship
// (docs/speculative.md): layer n_layer, a layer of the kind spec.Layer gives
// it (full attention and the architecture's FFN: HParams' layer rules treat
// an index >= n_layer as neither recurrent, sliding nor dense-lead), entered
// through its own input and left through its own head:
//   e = RMSNorm(embed[token]) * enorm      (embed: its own, else token_embd)
//   h = RMSNorm(h_prev) * hnorm
//   x = eh_proj . [e; h]                    (eh_proj: 2 n_embd -> n_embd)
//   x = the layer(x)
//   g = RMSNorm(x) * head_norm              (its own, else output_norm)
//   logits = head . g                       (its own, else the output head)
// h_prev is the model's hidden state at the position before the token,
// after its output norm, and the block's own g when it drafts on from its
// own draft (llama.cpp's graph_mtp, PR #22673, #24025, #26534). The roles
// are data: a block whose required tensors are missing is no block.
struct MtpBlock {
  TensorRole embed = TensorRole::kNextnEmbedTokens;     // optional
  TensorRole enorm = TensorRole::kNextnEnorm;
  TensorRole hnorm = TensorRole::kNextnHnorm;
  TensorRole eh_proj = TensorRole::kNextnEhProj;
  TensorRole head_norm = TensorRole::kNextnSharedHeadNorm;  // optional
  TensorRole head = TensorRole::kNextnSharedHeadHead;       // optional
};
inline constexpr MtpBlock kNextnBlock{};

// A GGUF tensor that holds two of the spec's tensors with their rows
// interleaved (qwen3next's ssm_in: per key-head group [q k v | z]; its
// ssm_ba: per group [beta | alpha]). The packer stores the spec's
// tensors: row i of part p is the source's row `row(hp, p, i)`. A GGUF
// carries the source or the parts, never both.
struct RowSplit {
  const char* pattern;              // "blk.{L}.ssm_in.weight"
  LayerSet layers;
  DimExpr rows;                     // the source's shape[1]; shape[0] is the parts' row length
  std::array<TensorRole, 2> parts;  // tensors of the same spec, rank 2, with the source's row length
  uint64_t (*row)(const HParams&, size_t part, uint64_t i);
};

struct ArchSpec {
  Arch arch;
  std::string_view gguf_name;
  RopeType rope_type;
  std::span<const HParamSpec> hparams;
  std::span<const TensorSpec> tensors;
  LayerStructure layers;
  // How far the fast path's logits may be from the reference path's in the
  // packer's probe record (runtime/model/probe.cc) for quantized weights: a
  // recurrence carries a routing flip forward, so it needs more room.
  float probe_tolerance;
  // Constants of the architecture that GGUF does not carry (llama.cpp
  // hard-codes them): the experts' clamped SwiGLU (HParams::swiglu_*).
  float swiglu_alpha = 0.0f;
  float swiglu_limit = 0.0f;
  // HParams::ssm_grouped_heads of the architecture (GGUF does not say it).
  bool ssm_grouped_heads = false;
  // GGUF tensors the packer splits into the spec's tensors.
  std::span<const RowSplit> row_splits = {};
  // deepseek2's older GGUF form (llama.cpp's converter before it split the KV
  // up-projection): one attn_kv_b per layer, [kv_lora_rank, n_head * (nope +
  // head_dim_v_mla)], each head's nope rows then its value rows, and no
  // attention.key_length_mla (attention.key_length and value_length are the
  // heads' nope + RoPE and value widths, head_count_kv the query heads). The
  // packer makes the spec's attn_k_b from each head's nope rows, transposed
  // (kv_lora_rank rows of nope values, F32, the source's values exactly), and
  // attn_v_b from its value rows as they are; the keys are rewritten to the
  // latent form. The pattern of that tensor, or null.
  const char* fused_kv_b = nullptr;
  // The MTP block the architecture's nextn layers are (null: its nextn
  // layers, if any, are kept in the pack and never run).
  const MtpBlock* mtp = nullptr;

  bool has_experts() const { return layers.ffn != FfnKind::kDense; }
  bool has_shared_expert() const { return layers.ffn == FfnKind::kMoeSharedExpert; }
  // Layer il of a model with these hyperparameters.
  LayerPlan Layer(const HParams& hp, uint32_t il) const {
    const bool delta = layers.recurrent && hp.IsRecurrentLayer(il);
    return {delta ? Mixer::kGatedDeltaNet : layers.attention, hp.IsDenseLeadLayer(il) ? FfnKind::kDense : layers.ffn,
            layers.ffn_norm};
  }
};

const ArchSpec& GetArchSpec(Arch arch);

// A concrete tensor the spec expects for given hyperparameters.
struct ExpectedTensor {
  std::string name;
  const TensorSpec* spec;
  int32_t layer;  // -1 for global tensors
  std::vector<uint64_t> shape;
};
// Every tensor the architecture may carry for these hyperparameters,
// required and optional, in a stable order (globals, then by layer).
std::vector<ExpectedTensor> ExpectedTensors(const ArchSpec& spec, const HParams& hp);
// Expands "blk.{L}.x" for a layer.
std::string TensorName(const char* pattern, int32_t layer);
// Checks the hyperparameters are consistent and within the limits Strata
// supports (layer and expert counts, head dims, divisibility). Messages name
// the key, what was expected and what was found.
Status CheckHParams(Arch arch, const HParams& hp);
// Whether a type is allowed by a rule.
bool TypeAllowed(TypeRule rule, GgmlType type);
std::string_view TypeRuleText(TypeRule rule);

// Hard limits (llama.cpp's LLAMA_MAX_LAYERS / LLAMA_MAX_EXPERTS and our own).
inline constexpr uint32_t kMaxLayers = 512;
inline constexpr uint32_t kMaxExperts = 512;
inline constexpr uint32_t kMaxEmbd = 1u << 16;
inline constexpr uint32_t kMaxVocab = 1u << 22;
inline constexpr uint32_t kMaxHeadDim = 1024;
inline constexpr uint32_t kMaxHeads = 1024;
inline constexpr uint32_t kMaxFf = 1u << 18;

}  // namespace strata
