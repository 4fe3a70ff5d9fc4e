#include "runtime/arch/arch_spec.h"

#include <cmath>

#include "runtime/base/strings.h"

namespace strata {
namespace {

// --- dimension expressions -------------------------------------------------
#define DIM(name, text, expr) \
  constexpr DimExpr name { text, [](const HParams& h) -> uint64_t { return (expr); } }
using u64 = uint64_t;
DIM(kE, "n_embd", u64{h.n_embd});
DIM(kE2, "2*n_embd", 2 * u64{h.n_embd});
DIM(kV, "n_vocab", u64{h.n_vocab});
DIM(kFf, "n_ff", u64{h.n_ff});
DIM(kQ, "n_head*head_dim_k", u64{h.n_head} * h.head_dim_k);
DIM(kQGate, "2*n_head*head_dim_k", 2 * u64{h.n_head} * h.head_dim_k);
DIM(kKv, "n_head_kv*head_dim_k", u64{h.n_head_kv} * h.head_dim_k);
DIM(kVv, "n_head_kv*head_dim_v", u64{h.n_head_kv} * h.head_dim_v);
DIM(kOut, "n_head*head_dim_v", u64{h.n_head} * h.head_dim_v);
DIM(kHdK, "head_dim_k", u64{h.head_dim_k});
DIM(kHeads, "n_head", u64{h.n_head});
DIM(kNExp, "n_expert", u64{h.n_expert});
DIM(kFfExp, "n_ff_exp", u64{h.n_ff_exp});
DIM(kFfSh, "n_ff_shexp", u64{h.n_ff_shexp});
DIM(kSsmConvDim, "2*ssm_n_group*ssm_d_state+ssm_d_inner", 2 * u64{h.ssm_n_group} * h.ssm_d_state + h.ssm_d_inner);
DIM(kSsmKernel, "ssm_d_conv", u64{h.ssm_d_conv});
DIM(kSsmInner, "ssm_d_inner", u64{h.ssm_d_inner});
DIM(kSsmVHeads, "ssm_dt_rank", u64{h.ssm_dt_rank});
DIM(kSsmState, "ssm_d_state", u64{h.ssm_d_state});
DIM(kSsmQkvz, "2*ssm_n_group*ssm_d_state+2*ssm_d_inner", 2 * u64{h.ssm_n_group} * h.ssm_d_state + 2 * u64{h.ssm_d_inner});
DIM(kSsmBa, "2*ssm_dt_rank", 2 * u64{h.ssm_dt_rank});
DIM(kQMla, "n_head*head_dim_k_mla", u64{h.n_head} * h.head_dim_k_mla);
DIM(kOutMla, "n_head*head_dim_v_mla", u64{h.n_head} * h.head_dim_v_mla);
DIM(kQLora, "q_lora_rank", u64{h.q_lora_rank});
DIM(kKvLora, "kv_lora_rank", u64{h.kv_lora_rank});
DIM(kKvAMqa, "kv_lora_rank+n_rot", u64{h.kv_lora_rank} + h.n_rot);
DIM(kMlaNope, "head_dim_k_mla-n_rot", u64{h.MlaNope()});
DIM(kHdVMla, "head_dim_v_mla", u64{h.head_dim_v_mla});
#undef DIM
constexpr DimExpr kNone{"", [](const HParams&) -> uint64_t { return 1; }};

using R = TensorRole;
using L = LayerSet;
using T = TypeRule;

#define VEC(pat, role, layers, d0) {pat, role, layers, 1, {d0, kNone, kNone}, T::kF32Only, false, nullptr}
#define MAT(pat, role, layers, d0, d1) {pat, role, layers, 2, {d0, d1, kNone}, T::kAnyWeight, false, nullptr}
#define EXP(pat, role, layers, d0, d1) {pat, role, layers, 3, {d0, d1, kNExp}, T::kAnyWeight, false, nullptr}

constexpr const char* kTiedWhy =
    "absent: the output head is the token embedding (tied weights), as in llama.cpp";

constexpr TensorSpec kLlamaTensors[] = {
    MAT("token_embd.weight", R::kTokenEmbd, L::kGlobal, kE, kV),
    VEC("output_norm.weight", R::kOutputNorm, L::kGlobal, kE),
    {"output.weight", R::kOutput, L::kGlobal, 2, {kE, kV, kNone}, T::kAnyWeight, true, kTiedWhy},
    VEC("blk.{L}.attn_norm.weight", R::kAttnNorm, L::kAll, kE),
    MAT("blk.{L}.attn_q.weight", R::kAttnQ, L::kAll, kE, kQ),
    MAT("blk.{L}.attn_k.weight", R::kAttnK, L::kAll, kE, kKv),
    MAT("blk.{L}.attn_v.weight", R::kAttnV, L::kAll, kE, kVv),
    MAT("blk.{L}.attn_output.weight", R::kAttnOutput, L::kAll, kOut, kE),
    VEC("blk.{L}.ffn_norm.weight", R::kFfnNorm, L::kAll, kE),
    MAT("blk.{L}.ffn_gate.weight", R::kFfnGate, L::kAll, kE, kFf),
    MAT("blk.{L}.ffn_up.weight", R::kFfnUp, L::kAll, kE, kFf),
    MAT("blk.{L}.ffn_down.weight", R::kFfnDown, L::kAll, kFf, kE),
};

constexpr TensorSpec kQwen3MoeTensors[] = {
    MAT("token_embd.weight", R::kTokenEmbd, L::kGlobal, kE, kV),
    VEC("output_norm.weight", R::kOutputNorm, L::kGlobal, kE),
    {"output.weight", R::kOutput, L::kGlobal, 2, {kE, kV, kNone}, T::kAnyWeight, true, kTiedWhy},
    VEC("blk.{L}.attn_norm.weight", R::kAttnNorm, L::kAll, kE),
    MAT("blk.{L}.attn_q.weight", R::kAttnQ, L::kAll, kE, kQ),
    MAT("blk.{L}.attn_k.weight", R::kAttnK, L::kAll, kE, kKv),
    MAT("blk.{L}.attn_v.weight", R::kAttnV, L::kAll, kE, kVv),
    MAT("blk.{L}.attn_output.weight", R::kAttnOutput, L::kAll, kOut, kE),
    VEC("blk.{L}.attn_q_norm.weight", R::kAttnQNorm, L::kAll, kHdK),
    VEC("blk.{L}.attn_k_norm.weight", R::kAttnKNorm, L::kAll, kHdK),
    VEC("blk.{L}.ffn_norm.weight", R::kFfnNorm, L::kAll, kE),
    MAT("blk.{L}.ffn_gate_inp.weight", R::kFfnGateInp, L::kAll, kE, kNExp),
    EXP("blk.{L}.ffn_gate_exps.weight", R::kFfnGateExps, L::kAll, kE, kFfExp),
    EXP("blk.{L}.ffn_up_exps.weight", R::kFfnUpExps, L::kAll, kE, kFfExp),
    EXP("blk.{L}.ffn_down_exps.weight", R::kFfnDownExps, L::kAll, kFfExp, kE),
};

// Dense Qwen3: qwen3moe's attention (QK-norm, NEOX RoPE) with llama's SwiGLU FFN.
constexpr TensorSpec kQwen3Tensors[] = {
    MAT("token_embd.weight", R::kTokenEmbd, L::kGlobal, kE, kV),
    VEC("output_norm.weight", R::kOutputNorm, L::kGlobal, kE),
    {"output.weight", R::kOutput, L::kGlobal, 2, {kE, kV, kNone}, T::kAnyWeight, true, kTiedWhy},
    VEC("blk.{L}.attn_norm.weight", R::kAttnNorm, L::kAll, kE),
    MAT("blk.{L}.attn_q.weight", R::kAttnQ, L::kAll, kE, kQ),
    MAT("blk.{L}.attn_k.weight", R::kAttnK, L::kAll, kE, kKv),
    MAT("blk.{L}.attn_v.weight", R::kAttnV, L::kAll, kE, kVv),
    MAT("blk.{L}.attn_output.weight", R::kAttnOutput, L::kAll, kOut, kE),
    VEC("blk.{L}.attn_q_norm.weight", R::kAttnQNorm, L::kAll, kHdK),
    VEC("blk.{L}.attn_k_norm.weight", R::kAttnKNorm, L::kAll, kHdK),
    VEC("blk.{L}.ffn_norm.weight", R::kFfnNorm, L::kAll, kE),
    MAT("blk.{L}.ffn_gate.weight", R::kFfnGate, L::kAll, kE, kFf),
    MAT("blk.{L}.ffn_up.weight", R::kFfnUp, L::kAll, kE, kFf),
    MAT("blk.{L}.ffn_down.weight", R::kFfnDown, L::kAll, kFf, kE),
};

constexpr TensorSpec kQwen35MoeTensors[] = {
    MAT("token_embd.weight", R::kTokenEmbd, L::kGlobal, kE, kV),
    VEC("output_norm.weight", R::kOutputNorm, L::kGlobal, kE),
    {"output.weight", R::kOutput, L::kGlobal, 2, {kE, kV, kNone}, T::kAnyWeight, true, kTiedWhy},
    // Every layer (main and MTP): pre-mixer norm, pre-MoE norm, routed and shared experts.
    VEC("blk.{L}.attn_norm.weight", R::kAttnNorm, L::kAllWithNextn, kE),
    VEC("blk.{L}.post_attention_norm.weight", R::kPostAttnNorm, L::kAllWithNextn, kE),
    MAT("blk.{L}.ffn_gate_inp.weight", R::kFfnGateInp, L::kAllWithNextn, kE, kNExp),
    EXP("blk.{L}.ffn_gate_exps.weight", R::kFfnGateExps, L::kAllWithNextn, kE, kFfExp),
    EXP("blk.{L}.ffn_up_exps.weight", R::kFfnUpExps, L::kAllWithNextn, kE, kFfExp),
    EXP("blk.{L}.ffn_down_exps.weight", R::kFfnDownExps, L::kAllWithNextn, kFfExp, kE),
    VEC("blk.{L}.ffn_gate_inp_shexp.weight", R::kFfnGateInpShexp, L::kAllWithNextn, kE),
    MAT("blk.{L}.ffn_gate_shexp.weight", R::kFfnGateShexp, L::kAllWithNextn, kE, kFfSh),
    MAT("blk.{L}.ffn_up_shexp.weight", R::kFfnUpShexp, L::kAllWithNextn, kE, kFfSh),
    MAT("blk.{L}.ffn_down_shexp.weight", R::kFfnDownShexp, L::kAllWithNextn, kFfSh, kE),
    // Gated delta-net layers.
    MAT("blk.{L}.attn_qkv.weight", R::kAttnQkv, L::kRecurrent, kE, kSsmConvDim),
    MAT("blk.{L}.attn_gate.weight", R::kAttnGate, L::kRecurrent, kE, kSsmInner),
    {"blk.{L}.ssm_conv1d.weight", R::kSsmConv1d, L::kRecurrent, 2, {kSsmKernel, kSsmConvDim, kNone}, T::kF32Only,
     false, nullptr},
    VEC("blk.{L}.ssm_dt.bias", R::kSsmDtBias, L::kRecurrent, kSsmVHeads),
    VEC("blk.{L}.ssm_a", R::kSsmA, L::kRecurrent, kSsmVHeads),
    MAT("blk.{L}.ssm_beta.weight", R::kSsmBeta, L::kRecurrent, kE, kSsmVHeads),
    MAT("blk.{L}.ssm_alpha.weight", R::kSsmAlpha, L::kRecurrent, kE, kSsmVHeads),
    VEC("blk.{L}.ssm_norm.weight", R::kSsmNorm, L::kRecurrent, kSsmState),
    MAT("blk.{L}.ssm_out.weight", R::kSsmOut, L::kRecurrent, kSsmInner, kE),
    // Gated full-attention layers (and the MTP layers, which are attention blocks).
    MAT("blk.{L}.attn_q.weight", R::kAttnQ, L::kAttentionAndNextn, kE, kQGate),
    MAT("blk.{L}.attn_k.weight", R::kAttnK, L::kAttentionAndNextn, kE, kKv),
    MAT("blk.{L}.attn_v.weight", R::kAttnV, L::kAttentionAndNextn, kE, kVv),
    MAT("blk.{L}.attn_output.weight", R::kAttnOutput, L::kAttentionAndNextn, kOut, kE),
    VEC("blk.{L}.attn_q_norm.weight", R::kAttnQNorm, L::kAttentionAndNextn, kHdK),
    VEC("blk.{L}.attn_k_norm.weight", R::kAttnKNorm, L::kAttentionAndNextn, kHdK),
    // MTP (nextn) layers only: the MTP block (kNextnBlock), run by speculative decoding (--spec mtp).
    MAT("blk.{L}.nextn.eh_proj.weight", R::kNextnEhProj, L::kNextn, kE2, kE),
    VEC("blk.{L}.nextn.enorm.weight", R::kNextnEnorm, L::kNextn, kE),
    VEC("blk.{L}.nextn.hnorm.weight", R::kNextnHnorm, L::kNextn, kE),
    {"blk.{L}.nextn.embed_tokens.weight", R::kNextnEmbedTokens, L::kNextn, 2, {kE, kV, kNone}, T::kAnyWeight, true,
     "absent: the MTP layer uses the main token embedding"},
    {"blk.{L}.nextn.shared_head_head.weight", R::kNextnSharedHeadHead, L::kNextn, 2, {kE, kV, kNone},
     T::kAnyWeight, true, "absent: the MTP layer uses the main output head"},
    {"blk.{L}.nextn.shared_head_norm.weight", R::kNextnSharedHeadNorm, L::kNextn, 1, {kE, kNone, kNone},
     T::kF32Only, true, "absent: the MTP layer uses output_norm"},
};

// qwen3next's fused GGUF tensors (llama.cpp's qwen3next build_qkvz and its
// beta/alpha split). Per key-head group g of G = ssm_n_group, with r =
// ssm_dt_rank / G value heads per group: ssm_in's rows are [q: dk | k: dk |
// v: r*dv | z: r*dv], ssm_ba's [beta: r | alpha: r]. attn_qkv is
// [q of every group | k of every group | v of every group], attn_gate z's rows
// group by group; value head g*r + j keeps its place, so the pack's value
// heads are in the grouped order (HParams::ssm_grouped_heads).
uint64_t QkvzRow(const HParams& h, size_t part, uint64_t i) {
  const uint64_t dk = h.ssm_d_state, vr = h.ssm_d_inner / h.ssm_n_group;  // a group's v (and z) rows
  const uint64_t block = 2 * dk + 2 * vr, key_dim = uint64_t{h.ssm_n_group} * dk;
  if (part == 1) return (i / vr) * block + 2 * dk + vr + i % vr;  // z
  if (i < key_dim) return (i / dk) * block + i % dk;               // q
  if (i < 2 * key_dim) return ((i - key_dim) / dk) * block + dk + (i - key_dim) % dk;  // k
  i -= 2 * key_dim;
  return (i / vr) * block + 2 * dk + i % vr;  // v
}
uint64_t BetaAlphaRow(const HParams& h, size_t part, uint64_t i) {
  const uint64_t r = h.ssm_dt_rank / h.ssm_n_group;
  return (i / r) * 2 * r + part * r + i % r;
}
constexpr RowSplit kQwen3NextSplits[] = {
    {"blk.{L}.ssm_in.weight", L::kRecurrent, kSsmQkvz, {R::kAttnQkv, R::kAttnGate}, QkvzRow},
    {"blk.{L}.ssm_ba.weight", L::kRecurrent, kSsmBa, {R::kSsmBeta, R::kSsmAlpha}, BetaAlphaRow},
};

// GLM-4.5 / 4.6: attention with Q/K/V biases (and QK-norm in the largest),
// partial NEOX RoPE; leading dense layers, then routed experts with a
// sigmoid router, a per-expert selection bias and an ungated shared expert;
// the MTP (nextn) layers are whole layers plus the nextn tensors, kept.
constexpr const char* kBiasWhy = "absent: no bias (the product alone), as in llama.cpp";
constexpr TensorSpec kGlm4MoeTensors[] = {
    MAT("token_embd.weight", R::kTokenEmbd, L::kGlobal, kE, kV),
    VEC("output_norm.weight", R::kOutputNorm, L::kGlobal, kE),
    {"output.weight", R::kOutput, L::kGlobal, 2, {kE, kV, kNone}, T::kAnyWeight, true, kTiedWhy},
    VEC("blk.{L}.attn_norm.weight", R::kAttnNorm, L::kAllWithNextn, kE),
    MAT("blk.{L}.attn_q.weight", R::kAttnQ, L::kAllWithNextn, kE, kQ),
    MAT("blk.{L}.attn_k.weight", R::kAttnK, L::kAllWithNextn, kE, kKv),
    MAT("blk.{L}.attn_v.weight", R::kAttnV, L::kAllWithNextn, kE, kVv),
    {"blk.{L}.attn_q.bias", R::kAttnQBias, L::kAllWithNextn, 1, {kQ, kNone, kNone}, T::kF32Only, true, kBiasWhy},
    {"blk.{L}.attn_k.bias", R::kAttnKBias, L::kAllWithNextn, 1, {kKv, kNone, kNone}, T::kF32Only, true, kBiasWhy},
    {"blk.{L}.attn_v.bias", R::kAttnVBias, L::kAllWithNextn, 1, {kVv, kNone, kNone}, T::kF32Only, true, kBiasWhy},
    MAT("blk.{L}.attn_output.weight", R::kAttnOutput, L::kAllWithNextn, kOut, kE),
    {"blk.{L}.attn_q_norm.weight", R::kAttnQNorm, L::kAllWithNextn, 1, {kHdK, kNone, kNone}, T::kF32Only, true,
     "absent: no QK-norm (GLM-4.5-Air); GLM-4.5 has it"},
    {"blk.{L}.attn_k_norm.weight", R::kAttnKNorm, L::kAllWithNextn, 1, {kHdK, kNone, kNone}, T::kF32Only, true,
     "absent: no QK-norm (GLM-4.5-Air); GLM-4.5 has it"},
    VEC("blk.{L}.post_attention_norm.weight", R::kPostAttnNorm, L::kAllWithNextn, kE),
    // The leading dense layers.
    MAT("blk.{L}.ffn_gate.weight", R::kFfnGate, L::kDenseLead, kE, kFf),
    MAT("blk.{L}.ffn_up.weight", R::kFfnUp, L::kDenseLead, kE, kFf),
    MAT("blk.{L}.ffn_down.weight", R::kFfnDown, L::kDenseLead, kFf, kE),
    // The MoE layers (and the MTP layers).
    MAT("blk.{L}.ffn_gate_inp.weight", R::kFfnGateInp, L::kMoeWithNextn, kE, kNExp),
    VEC("blk.{L}.exp_probs_b.bias", R::kFfnExpProbsB, L::kMoeWithNextn, kNExp),
    EXP("blk.{L}.ffn_gate_exps.weight", R::kFfnGateExps, L::kMoeWithNextn, kE, kFfExp),
    EXP("blk.{L}.ffn_up_exps.weight", R::kFfnUpExps, L::kMoeWithNextn, kE, kFfExp),
    EXP("blk.{L}.ffn_down_exps.weight", R::kFfnDownExps, L::kMoeWithNextn, kFfExp, kE),
    MAT("blk.{L}.ffn_gate_shexp.weight", R::kFfnGateShexp, L::kMoeWithNextn, kE, kFfSh),
    MAT("blk.{L}.ffn_up_shexp.weight", R::kFfnUpShexp, L::kMoeWithNextn, kE, kFfSh),
    MAT("blk.{L}.ffn_down_shexp.weight", R::kFfnDownShexp, L::kMoeWithNextn, kFfSh, kE),
    // MTP (nextn) layers only: the MTP block (kNextnBlock), run by speculative decoding (--spec mtp).
    MAT("blk.{L}.nextn.eh_proj.weight", R::kNextnEhProj, L::kNextn, kE2, kE),
    VEC("blk.{L}.nextn.enorm.weight", R::kNextnEnorm, L::kNextn, kE),
    VEC("blk.{L}.nextn.hnorm.weight", R::kNextnHnorm, L::kNextn, kE),
    {"blk.{L}.nextn.embed_tokens.weight", R::kNextnEmbedTokens, L::kNextn, 2, {kE, kV, kNone}, T::kAnyWeight, true,
     "absent: the MTP layer uses the main token embedding"},
    {"blk.{L}.nextn.shared_head_head.weight", R::kNextnSharedHeadHead, L::kNextn, 2, {kE, kV, kNone},
     T::kAnyWeight, true, "absent: the MTP layer uses the main output head"},
    {"blk.{L}.nextn.shared_head_norm.weight", R::kNextnSharedHeadNorm, L::kNextn, 1, {kE, kNone, kNone},
     T::kF32Only, true, "absent: the MTP layer uses output_norm"},
};

// gpt-oss: attention with Q/K/V/O biases and a learned sink logit per head,
// a sliding window on alternate layers, YaRN; routed experts only, with a
// biased router, biased experts, the clamped SwiGLU and the softmax over the
// chosen experts' logits.
constexpr TensorSpec kGptOssTensors[] = {
    MAT("token_embd.weight", R::kTokenEmbd, L::kGlobal, kE, kV),
    VEC("output_norm.weight", R::kOutputNorm, L::kGlobal, kE),
    MAT("output.weight", R::kOutput, L::kGlobal, kE, kV),
    VEC("blk.{L}.attn_norm.weight", R::kAttnNorm, L::kAll, kE),
    MAT("blk.{L}.attn_q.weight", R::kAttnQ, L::kAll, kE, kQ),
    MAT("blk.{L}.attn_k.weight", R::kAttnK, L::kAll, kE, kKv),
    MAT("blk.{L}.attn_v.weight", R::kAttnV, L::kAll, kE, kVv),
    {"blk.{L}.attn_q.bias", R::kAttnQBias, L::kAll, 1, {kQ, kNone, kNone}, T::kF32Only, true, kBiasWhy},
    {"blk.{L}.attn_k.bias", R::kAttnKBias, L::kAll, 1, {kKv, kNone, kNone}, T::kF32Only, true, kBiasWhy},
    {"blk.{L}.attn_v.bias", R::kAttnVBias, L::kAll, 1, {kVv, kNone, kNone}, T::kF32Only, true, kBiasWhy},
    MAT("blk.{L}.attn_output.weight", R::kAttnOutput, L::kAll, kOut, kE),
    VEC("blk.{L}.attn_output.bias", R::kAttnOutputBias, L::kAll, kE),
    VEC("blk.{L}.attn_sinks.weight", R::kAttnSinks, L::kAll, kHeads),
    VEC("blk.{L}.post_attention_norm.weight", R::kPostAttnNorm, L::kAll, kE),
    MAT("blk.{L}.ffn_gate_inp.weight", R::kFfnGateInp, L::kAll, kE, kNExp),
    VEC("blk.{L}.ffn_gate_inp.bias", R::kFfnGateInpBias, L::kAll, kNExp),
    EXP("blk.{L}.ffn_gate_exps.weight", R::kFfnGateExps, L::kAll, kE, kFfExp),
    EXP("blk.{L}.ffn_up_exps.weight", R::kFfnUpExps, L::kAll, kE, kFfExp),
    EXP("blk.{L}.ffn_down_exps.weight", R::kFfnDownExps, L::kAll, kFfExp, kE),
    {"blk.{L}.ffn_gate_exps.bias", R::kFfnGateExpsBias, L::kAll, 2, {kFfExp, kNExp, kNone}, T::kF32Only, false, nullptr},
    {"blk.{L}.ffn_up_exps.bias", R::kFfnUpExpsBias, L::kAll, 2, {kFfExp, kNExp, kNone}, T::kF32Only, false, nullptr},
    {"blk.{L}.ffn_down_exps.bias", R::kFfnDownExpsBias, L::kAll, 2, {kE, kNExp, kNone}, T::kF32Only, false, nullptr},
};

// deepseek2: multi-head latent attention (a low-rank or full query, the
// latent and RoPE key part from attn_kv_a_mqa, per-head attn_k_b / attn_v_b
// in the split form llama.cpp's converter writes), leading dense layers, then
// routed experts (softmax or sigmoid router, an optional selection bias,
// expert groups) beside ungated shared experts.
constexpr TensorSpec kDeepseek2Tensors[] = {
    MAT("token_embd.weight", R::kTokenEmbd, L::kGlobal, kE, kV),
    VEC("output_norm.weight", R::kOutputNorm, L::kGlobal, kE),
    {"output.weight", R::kOutput, L::kGlobal, 2, {kE, kV, kNone}, T::kAnyWeight, true, kTiedWhy},
    VEC("blk.{L}.attn_norm.weight", R::kAttnNorm, L::kAllWithNextn, kE),
    MAT("blk.{L}.attn_q_a.weight", R::kAttnQA, L::kLowRankQ, kE, kQLora),
    VEC("blk.{L}.attn_q_a_norm.weight", R::kAttnQANorm, L::kLowRankQ, kQLora),
    MAT("blk.{L}.attn_q_b.weight", R::kAttnQB, L::kLowRankQ, kQLora, kQMla),
    MAT("blk.{L}.attn_q.weight", R::kAttnQ, L::kFullRankQ, kE, kQMla),
    MAT("blk.{L}.attn_kv_a_mqa.weight", R::kAttnKvAMqa, L::kAllWithNextn, kE, kKvAMqa),
    VEC("blk.{L}.attn_kv_a_norm.weight", R::kAttnKvANorm, L::kAllWithNextn, kKvLora),
    {"blk.{L}.attn_k_b.weight", R::kAttnKB, L::kAllWithNextn, 3, {kMlaNope, kKvLora, kHeads}, T::kAnyWeight, false, nullptr},
    {"blk.{L}.attn_v_b.weight", R::kAttnVB, L::kAllWithNextn, 3, {kKvLora, kHdVMla, kHeads}, T::kAnyWeight, false, nullptr},
    MAT("blk.{L}.attn_output.weight", R::kAttnOutput, L::kAllWithNextn, kOutMla, kE),
    VEC("blk.{L}.ffn_norm.weight", R::kFfnNorm, L::kAllWithNextn, kE),
    MAT("blk.{L}.ffn_gate.weight", R::kFfnGate, L::kDenseLead, kE, kFf),
    MAT("blk.{L}.ffn_up.weight", R::kFfnUp, L::kDenseLead, kE, kFf),
    MAT("blk.{L}.ffn_down.weight", R::kFfnDown, L::kDenseLead, kFf, kE),
    MAT("blk.{L}.ffn_gate_inp.weight", R::kFfnGateInp, L::kMoeWithNextn, kE, kNExp),
    {"blk.{L}.exp_probs_b.bias", R::kFfnExpProbsB, L::kMoeWithNextn, 1, {kNExp, kNone, kNone}, T::kF32Only, true,
     "absent: experts are chosen on the router's probabilities alone (DeepSeek V2)"},
    EXP("blk.{L}.ffn_gate_exps.weight", R::kFfnGateExps, L::kMoeWithNextn, kE, kFfExp),
    EXP("blk.{L}.ffn_up_exps.weight", R::kFfnUpExps, L::kMoeWithNextn, kE, kFfExp),
    EXP("blk.{L}.ffn_down_exps.weight", R::kFfnDownExps, L::kMoeWithNextn, kFfExp, kE),
    MAT("blk.{L}.ffn_gate_shexp.weight", R::kFfnGateShexp, L::kMoeWithNextn, kE, kFfSh),
    MAT("blk.{L}.ffn_up_shexp.weight", R::kFfnUpShexp, L::kMoeWithNextn, kE, kFfSh),
    MAT("blk.{L}.ffn_down_shexp.weight", R::kFfnDownShexp, L::kMoeWithNextn, kFfSh, kE),
    // The MTP (nextn) layer of DeepSeek V3's newer GGUFs: kept in the pack, not run.
    MAT("blk.{L}.nextn.eh_proj.weight", R::kNextnEhProj, L::kNextn, kE2, kE),
    VEC("blk.{L}.nextn.enorm.weight", R::kNextnEnorm, L::kNextn, kE),
    VEC("blk.{L}.nextn.hnorm.weight", R::kNextnHnorm, L::kNextn, kE),
    {"blk.{L}.nextn.embed_tokens.weight", R::kNextnEmbedTokens, L::kNextn, 2, {kE, kV, kNone}, T::kAnyWeight, true,
     "absent: the MTP layer uses the main token embedding"},
    {"blk.{L}.nextn.shared_head_head.weight", R::kNextnSharedHeadHead, L::kNextn, 2, {kE, kV, kNone},
     T::kAnyWeight, true, "absent: the MTP layer uses the main output head"},
    {"blk.{L}.nextn.shared_head_norm.weight", R::kNextnSharedHeadNorm, L::kNextn, 1, {kE, kNone, kNone},
     T::kF32Only, true, "absent: the MTP layer uses output_norm"},
};

#undef VEC
#undef MAT
#undef EXP

// --- hyperparameters ---------------------------------------------------------
using H = HParams;
using K = HpKind;
constexpr uint32_t H::*kNoU32 = nullptr;
constexpr float H::*kNoF32 = nullptr;
constexpr bool H::*kNoBool = nullptr;

#define REQ_U32(key, field) {key, K::kU32, true, 0, nullptr, nullptr, nullptr, &H::field, kNoF32, kNoBool}
#define REQ_F32(key, field) {key, K::kF32, true, 0, nullptr, nullptr, nullptr, kNoU32, &H::field, kNoBool}
#define OPT_U32(key, field, def, derive, text, why) \
  {key, K::kU32, false, def, derive, text, why, &H::field, kNoF32, kNoBool}
#define OPT_F32(key, field, def, text, why) {key, K::kF32, false, def, nullptr, text, why, kNoU32, &H::field, kNoBool}
#define OPT_BOOL(key, field, def, text, why) \
  {key, K::kBool, false, def, nullptr, text, why, kNoU32, kNoF32, &H::field}

// Derived defaults, computed from keys read earlier (llama.cpp's rules).
uint32_t FromHeadCount(const H& h) { return h.n_head; }
uint32_t EmbdPerHead(const H& h) { return h.n_head ? h.n_embd / h.n_head : 0; }
uint32_t FromKeyLength(const H& h) { return h.head_dim_k; }
uint32_t FromValueLength(const H& h) { return h.head_dim_v; }
uint32_t FromTokens(const H& h) { return h.n_vocab; }
uint32_t FfPerUsedExpert(const H& h) { return h.n_expert_used ? h.n_ff / h.n_expert_used : 0; }
uint32_t FromFf(const H& h) { return h.n_ff; }

constexpr const char* kWhyHeadCountKv =
    "a model without grouped-query attention has as many KV heads as query heads; the tensor shapes of "
    "attn_k/attn_v are checked against it";
constexpr const char* kWhyHeadDim =
    "llama.cpp's default (n_embd / n_head); the attn_q/attn_k/attn_v shapes are checked against it, so a wrong "
    "default cannot pass";
constexpr const char* kWhyRopeDims = "llama.cpp's default: rotate the whole head";
constexpr const char* kWhyFreqBase = "llama.cpp's default RoPE base (10000), the value of the original RoPE";
constexpr const char* kWhyVocab = "the number of tokens in tokenizer.ggml.tokens; token_embd's shape is checked against it";

constexpr HParamSpec kLlamaHParams[] = {
    REQ_U32("context_length", n_ctx_train),
    REQ_U32("embedding_length", n_embd),
    REQ_U32("block_count", n_layer_all),
    REQ_U32("feed_forward_length", n_ff),
    REQ_U32("attention.head_count", n_head),
    OPT_U32("attention.head_count_kv", n_head_kv, 0, FromHeadCount, "attention.head_count", kWhyHeadCountKv),
    OPT_U32("attention.key_length", head_dim_k, 0, EmbdPerHead, "embedding_length / head_count", kWhyHeadDim),
    OPT_U32("attention.value_length", head_dim_v, 0, EmbdPerHead, "embedding_length / head_count", kWhyHeadDim),
    OPT_U32("rope.dimension_count", n_rot, 0, FromKeyLength, "attention.key_length", kWhyRopeDims),
    OPT_F32("rope.freq_base", rope_freq_base, 10000.0, "10000", kWhyFreqBase),
    REQ_F32("attention.layer_norm_rms_epsilon", rms_eps),
    OPT_U32("vocab_size", n_vocab, 0, FromTokens, "the token count", kWhyVocab),
};

constexpr const char* kWhyExpFf =
    "llama.cpp's fallback (feed_forward_length / expert_used_count); the expert tensor shapes are checked against it";
constexpr const char* kWhyWScale = "0 means no scaling of the routing weights, llama.cpp's default";
constexpr const char* kWhyDenseFf = "unused by this architecture (its FFNs are experts)";

constexpr HParamSpec kQwen3MoeHParams[] = {
    REQ_U32("context_length", n_ctx_train),
    REQ_U32("embedding_length", n_embd),
    REQ_U32("block_count", n_layer_all),
    OPT_U32("feed_forward_length", n_ff, 0, nullptr, "0", kWhyDenseFf),
    REQ_U32("attention.head_count", n_head),
    OPT_U32("attention.head_count_kv", n_head_kv, 0, FromHeadCount, "attention.head_count", kWhyHeadCountKv),
    OPT_U32("attention.key_length", head_dim_k, 0, EmbdPerHead, "embedding_length / head_count", kWhyHeadDim),
    OPT_U32("attention.value_length", head_dim_v, 0, EmbdPerHead, "embedding_length / head_count", kWhyHeadDim),
    OPT_U32("rope.dimension_count", n_rot, 0, FromKeyLength, "attention.key_length", kWhyRopeDims),
    OPT_F32("rope.freq_base", rope_freq_base, 10000.0, "10000", kWhyFreqBase),
    REQ_F32("attention.layer_norm_rms_epsilon", rms_eps),
    REQ_U32("expert_count", n_expert),
    REQ_U32("expert_used_count", n_expert_used),
    OPT_U32("expert_feed_forward_length", n_ff_exp, 0, FfPerUsedExpert, "feed_forward_length / expert_used_count", kWhyExpFf),
    OPT_F32("expert_weights_scale", expert_weights_scale, 0.0, "0", kWhyWScale),
    OPT_U32("vocab_size", n_vocab, 0, FromTokens, "the token count", kWhyVocab),
};

// Dense Qwen3 reads llama's keys (its converter writes the same ones).
constexpr HParamSpec kQwen3HParams[] = {
    REQ_U32("context_length", n_ctx_train),
    REQ_U32("embedding_length", n_embd),
    REQ_U32("block_count", n_layer_all),
    REQ_U32("feed_forward_length", n_ff),
    REQ_U32("attention.head_count", n_head),
    OPT_U32("attention.head_count_kv", n_head_kv, 0, FromHeadCount, "attention.head_count", kWhyHeadCountKv),
    OPT_U32("attention.key_length", head_dim_k, 0, EmbdPerHead, "embedding_length / head_count", kWhyHeadDim),
    OPT_U32("attention.value_length", head_dim_v, 0, EmbdPerHead, "embedding_length / head_count", kWhyHeadDim),
    OPT_U32("rope.dimension_count", n_rot, 0, FromKeyLength, "attention.key_length", kWhyRopeDims),
    OPT_F32("rope.freq_base", rope_freq_base, 10000.0, "10000", kWhyFreqBase),
    REQ_F32("attention.layer_norm_rms_epsilon", rms_eps),
    OPT_U32("vocab_size", n_vocab, 0, FromTokens, "the token count", kWhyVocab),
};

constexpr const char* kWhyInterval =
    "llama.cpp's default (every 4th layer attends); which layers carry attention vs delta-net tensors is checked, "
    "so a wrong default cannot pass";
constexpr const char* kWhyNextn =
    "0 MTP layers; safe only when no blk.N.nextn.* tensor exists, which the packer checks (seeds/000)";
constexpr const char* kWhyShFf = "llama.cpp's fallback (feed_forward_length); the shared-expert shapes are checked";

constexpr HParamSpec kQwen35MoeHParams[] = {
    REQ_U32("context_length", n_ctx_train),
    REQ_U32("embedding_length", n_embd),
    REQ_U32("block_count", n_layer_all),
    OPT_U32("feed_forward_length", n_ff, 0, nullptr, "0", kWhyDenseFf),
    REQ_U32("attention.head_count", n_head),
    {"attention.head_count_kv", K::kU32OrPerLayer, false, 0, FromHeadCount, "attention.head_count", kWhyHeadCountKv,
     &H::n_head_kv, kNoF32, kNoBool},
    OPT_U32("attention.key_length", head_dim_k, 0, EmbdPerHead, "embedding_length / head_count", kWhyHeadDim),
    OPT_U32("attention.value_length", head_dim_v, 0, EmbdPerHead, "embedding_length / head_count", kWhyHeadDim),
    OPT_U32("rope.dimension_count", n_rot, 0, FromKeyLength, "attention.key_length", kWhyRopeDims),
    {"rope.dimension_sections", K::kI32Array4, true, 0, nullptr, nullptr, nullptr, kNoU32, kNoF32, kNoBool},
    OPT_F32("rope.freq_base", rope_freq_base, 10000.0, "10000", kWhyFreqBase),
    REQ_F32("attention.layer_norm_rms_epsilon", rms_eps),
    REQ_U32("expert_count", n_expert),
    REQ_U32("expert_used_count", n_expert_used),
    OPT_U32("expert_feed_forward_length", n_ff_exp, 0, FfPerUsedExpert, "feed_forward_length / expert_used_count", kWhyExpFf),
    OPT_U32("expert_shared_feed_forward_length", n_ff_shexp, 0, FromFf, "feed_forward_length", kWhyShFf),
    OPT_F32("expert_weights_scale", expert_weights_scale, 0.0, "0", kWhyWScale),
    REQ_U32("ssm.conv_kernel", ssm_d_conv),
    REQ_U32("ssm.state_size", ssm_d_state),
    REQ_U32("ssm.group_count", ssm_n_group),
    REQ_U32("ssm.time_step_rank", ssm_dt_rank),
    REQ_U32("ssm.inner_size", ssm_d_inner),
    OPT_U32("full_attention_interval", full_attn_interval, 4, nullptr, "4", kWhyInterval),
    OPT_U32("nextn_predict_layers", nextn_predict_layers, 0, nullptr, "0", kWhyNextn),
    OPT_U32("vocab_size", n_vocab, 0, FromTokens, "the token count", kWhyVocab),
};

// qwen3next (llama.cpp's load_arch_hparams for it): qwen35moe's keys, with
// NEOX RoPE over rope.dimension_count instead of M-RoPE sections.
constexpr const char* kWhyNextSections = "none: qwen3next rotates with plain NEOX RoPE (llama.cpp reads no sections)";
constexpr HParamSpec kQwen3NextHParams[] = {
    REQ_U32("context_length", n_ctx_train),
    REQ_U32("embedding_length", n_embd),
    REQ_U32("block_count", n_layer_all),
    OPT_U32("feed_forward_length", n_ff, 0, nullptr, "0", kWhyDenseFf),
    REQ_U32("attention.head_count", n_head),
    {"attention.head_count_kv", K::kU32OrPerLayer, false, 0, FromHeadCount, "attention.head_count", kWhyHeadCountKv,
     &H::n_head_kv, kNoF32, kNoBool},
    OPT_U32("attention.key_length", head_dim_k, 0, EmbdPerHead, "embedding_length / head_count", kWhyHeadDim),
    OPT_U32("attention.value_length", head_dim_v, 0, EmbdPerHead, "embedding_length / head_count", kWhyHeadDim),
    OPT_U32("rope.dimension_count", n_rot, 0, FromKeyLength, "attention.key_length", kWhyRopeDims),
    {"rope.dimension_sections", K::kI32Array4, false, 0, nullptr, "none", kWhyNextSections, kNoU32, kNoF32, kNoBool},
    OPT_F32("rope.freq_base", rope_freq_base, 10000.0, "10000", kWhyFreqBase),
    REQ_F32("attention.layer_norm_rms_epsilon", rms_eps),
    REQ_U32("expert_count", n_expert),
    REQ_U32("expert_used_count", n_expert_used),
    OPT_U32("expert_feed_forward_length", n_ff_exp, 0, FfPerUsedExpert, "feed_forward_length / expert_used_count", kWhyExpFf),
    OPT_U32("expert_shared_feed_forward_length", n_ff_shexp, 0, FromFf, "feed_forward_length", kWhyShFf),
    OPT_F32("expert_weights_scale", expert_weights_scale, 0.0, "0", kWhyWScale),
    REQ_U32("ssm.conv_kernel", ssm_d_conv),
    REQ_U32("ssm.state_size", ssm_d_state),
    REQ_U32("ssm.group_count", ssm_n_group),
    REQ_U32("ssm.time_step_rank", ssm_dt_rank),
    REQ_U32("ssm.inner_size", ssm_d_inner),
    OPT_U32("full_attention_interval", full_attn_interval, 4, nullptr, "4", kWhyInterval),
    OPT_U32("nextn_predict_layers", nextn_predict_layers, 0, nullptr, "0", kWhyNextn),
    OPT_U32("vocab_size", n_vocab, 0, FromTokens, "the token count", kWhyVocab),
};

// glm4moe (llama.cpp's load_arch_hparams for it): the dense layers' width,
// the experts', the shared experts' count; sigmoid routing unless the file
// says otherwise.
uint32_t SharedFfFromCount(const H& h) { return h.n_ff_exp * h.n_expert_shared; }
constexpr const char* kWhyDenseLead = "llama.cpp's default: no leading dense layer; which layers carry dense or "
                                      "expert tensors is checked, so a wrong default cannot pass";
constexpr const char* kWhyGating = "llama.cpp's rule for glm4moe: absent (or 0) means sigmoid";
constexpr const char* kWhyWNorm = "llama.cpp's default (weights not renormalized); GLM-4.5's files store true";
constexpr const char* kWhyShCount = "derived: expert_feed_forward_length * expert_shared_count, as llama.cpp sizes "
                                    "the shared expert; its tensor shapes are checked against it";
constexpr const char* kWhyGlmSections = "none: text-only RoPE; M-RoPE sections (a vision variant) are refused";
constexpr const char* kWhyGlmNextn =
    "0 MTP layers; safe only when no blk.N.nextn.* tensor exists, which the packer checks (seeds/000)";

constexpr HParamSpec kGlm4MoeHParams[] = {
    REQ_U32("context_length", n_ctx_train),
    REQ_U32("embedding_length", n_embd),
    REQ_U32("block_count", n_layer_all),
    REQ_U32("feed_forward_length", n_ff),
    REQ_U32("attention.head_count", n_head),
    OPT_U32("attention.head_count_kv", n_head_kv, 0, FromHeadCount, "attention.head_count", kWhyHeadCountKv),
    OPT_U32("attention.key_length", head_dim_k, 0, EmbdPerHead, "embedding_length / head_count", kWhyHeadDim),
    OPT_U32("attention.value_length", head_dim_v, 0, EmbdPerHead, "embedding_length / head_count", kWhyHeadDim),
    OPT_U32("rope.dimension_count", n_rot, 0, FromKeyLength, "attention.key_length", kWhyRopeDims),
    {"rope.dimension_sections", K::kI32Array4, false, 0, nullptr, "none", kWhyGlmSections, kNoU32, kNoF32, kNoBool},
    OPT_F32("rope.freq_base", rope_freq_base, 10000.0, "10000", kWhyFreqBase),
    REQ_F32("attention.layer_norm_rms_epsilon", rms_eps),
    REQ_U32("expert_count", n_expert),
    REQ_U32("expert_used_count", n_expert_used),
    REQ_U32("expert_feed_forward_length", n_ff_exp),
    REQ_U32("expert_shared_count", n_expert_shared),
    OPT_U32("expert_shared_feed_forward_length", n_ff_shexp, 0, SharedFfFromCount,
            "expert_feed_forward_length * expert_shared_count", kWhyShCount),
    OPT_U32("leading_dense_block_count", n_layer_dense_lead, 0, nullptr, "0", kWhyDenseLead),
    OPT_F32("expert_weights_scale", expert_weights_scale, 0.0, "0", kWhyWScale),
    OPT_BOOL("expert_weights_norm", expert_weights_norm, 0, "false", kWhyWNorm),
    {"expert_gating_func", K::kGating, false, 2, nullptr, "2 (sigmoid)", kWhyGating, kNoU32, kNoF32, kNoBool},
    OPT_U32("nextn_predict_layers", nextn_predict_layers, 0, nullptr, "0", kWhyGlmNextn),
    OPT_U32("vocab_size", n_vocab, 0, FromTokens, "the token count", kWhyVocab),
};

// gpt-oss (llama.cpp's load_arch_hparams for openai-moe).
constexpr const char* kWhySwaPattern = "llama.cpp's default for gpt-oss: every other layer slides (0, 2, 4, ...)";
constexpr const char* kWhyOssGating = "llama.cpp runs gpt-oss with the softmax over the chosen experts' logits (3)";
constexpr const char* kWhyOssNorm = "llama.cpp does not renormalize gpt-oss's weights (the softmax already sums to 1)";

constexpr HParamSpec kGptOssHParams[] = {
    REQ_U32("context_length", n_ctx_train),
    REQ_U32("embedding_length", n_embd),
    REQ_U32("block_count", n_layer_all),
    OPT_U32("feed_forward_length", n_ff, 0, nullptr, "0", kWhyDenseFf),
    REQ_U32("attention.head_count", n_head),
    OPT_U32("attention.head_count_kv", n_head_kv, 0, FromHeadCount, "attention.head_count", kWhyHeadCountKv),
    OPT_U32("attention.key_length", head_dim_k, 0, EmbdPerHead, "embedding_length / head_count", kWhyHeadDim),
    OPT_U32("attention.value_length", head_dim_v, 0, EmbdPerHead, "embedding_length / head_count", kWhyHeadDim),
    OPT_U32("rope.dimension_count", n_rot, 0, FromKeyLength, "attention.key_length", kWhyRopeDims),
    OPT_F32("rope.freq_base", rope_freq_base, 10000.0, "10000", kWhyFreqBase),
    REQ_F32("attention.layer_norm_rms_epsilon", rms_eps),
    REQ_U32("expert_count", n_expert),
    REQ_U32("expert_used_count", n_expert_used),
    REQ_U32("expert_feed_forward_length", n_ff_exp),
    OPT_F32("expert_weights_scale", expert_weights_scale, 0.0, "0", kWhyWScale),
    OPT_BOOL("expert_weights_norm", expert_weights_norm, 0, "false", kWhyOssNorm),
    {"expert_gating_func", K::kGating, false, 3, nullptr, "3 (softmax over the chosen)", kWhyOssGating, kNoU32, kNoF32,
     kNoBool},
    REQ_U32("attention.sliding_window", n_swa),
    OPT_U32("attention.sliding_window_pattern", swa_pattern, 2, nullptr, "2", kWhySwaPattern),
    OPT_U32("vocab_size", n_vocab, 0, FromTokens, "the token count", kWhyVocab),
};

// deepseek2 (llama.cpp's load_arch_hparams for it). A file without the
// latent form's keys (key_length_mla, value_length_mla) is of the older form
// (one attn_kv_b a layer), which the packer turns into the latent form
// (ArchSpec::fused_kv_b).
constexpr const char* kWhyQLora = "0: one attn_q (DeepSeek-V2-Lite); which of attn_q and attn_q_a/attn_q_b a layer "
                                  "carries is checked against it, so a wrong default cannot pass";
constexpr const char* kWhyDsGating = "llama.cpp's rule for deepseek2: absent (or 0) means softmax (DeepSeek V2, V2.5)";
constexpr const char* kWhyGroups = "no expert groups, llama.cpp's default: the top k of all experts";
constexpr const char* kWhyMlaK = "llama.cpp's rule (n_embd_head_k_mla falls back to key_length): a file without it "
                                 "is of the older form, one attn_kv_b a layer, which the packer turns into the latent "
                                 "form; the shapes are checked against it";
constexpr const char* kWhyMlaV = "as key_length_mla";
constexpr const char* kWhyYarnLogMul = "0: YaRN's attention scale from the factor alone, llama.cpp's default";
constexpr HParamSpec kDeepseek2HParams[] = {
    REQ_U32("context_length", n_ctx_train),
    REQ_U32("embedding_length", n_embd),
    REQ_U32("block_count", n_layer_all),
    REQ_U32("feed_forward_length", n_ff),
    REQ_U32("attention.head_count", n_head),
    OPT_U32("attention.head_count_kv", n_head_kv, 0, FromHeadCount, "attention.head_count", kWhyHeadCountKv),
    REQ_U32("attention.key_length", head_dim_k),
    REQ_U32("attention.value_length", head_dim_v),
    OPT_U32("attention.key_length_mla", head_dim_k_mla, 0, FromKeyLength, "attention.key_length", kWhyMlaK),
    OPT_U32("attention.value_length_mla", head_dim_v_mla, 0, FromValueLength, "attention.value_length", kWhyMlaV),
    OPT_U32("attention.q_lora_rank", q_lora_rank, 0, nullptr, "0", kWhyQLora),
    REQ_U32("attention.kv_lora_rank", kv_lora_rank),
    REQ_U32("rope.dimension_count", n_rot),
    OPT_F32("rope.freq_base", rope_freq_base, 10000.0, "10000", kWhyFreqBase),
    OPT_F32("rope.scaling.yarn_log_multiplier", rope_yarn_log_mul, 0.0, "0", kWhyYarnLogMul),
    REQ_F32("attention.layer_norm_rms_epsilon", rms_eps),
    REQ_U32("expert_count", n_expert),
    REQ_U32("expert_used_count", n_expert_used),
    REQ_U32("expert_feed_forward_length", n_ff_exp),
    REQ_U32("expert_shared_count", n_expert_shared),
    OPT_U32("expert_shared_feed_forward_length", n_ff_shexp, 0, SharedFfFromCount,
            "expert_feed_forward_length * expert_shared_count", kWhyShCount),
    OPT_U32("leading_dense_block_count", n_layer_dense_lead, 0, nullptr, "0", kWhyDenseLead),
    OPT_F32("expert_weights_scale", expert_weights_scale, 0.0, "0", kWhyWScale),
    OPT_BOOL("expert_weights_norm", expert_weights_norm, 0, "false", kWhyWNorm),
    {"expert_gating_func", K::kGating, false, 1, nullptr, "1 (softmax)", kWhyDsGating, kNoU32, kNoF32, kNoBool},
    OPT_U32("expert_group_count", n_expert_groups, 0, nullptr, "0", kWhyGroups),
    OPT_U32("expert_group_used_count", n_expert_groups_used, 0, nullptr, "0", kWhyGroups),
    OPT_U32("nextn_predict_layers", nextn_predict_layers, 0, nullptr, "0", kWhyGlmNextn),
    OPT_U32("vocab_size", n_vocab, 0, FromTokens, "the token count", kWhyVocab),
};

#undef REQ_U32
#undef REQ_F32
#undef OPT_U32
#undef OPT_F32
#undef OPT_BOOL

constexpr ArchSpec kSpecs[] = {
    {Arch::kLlama, "llama", RopeType::kNorm, kLlamaHParams, kLlamaTensors,
     {Mixer::kAttention, false, FfnKind::kDense, TensorRole::kFfnNorm}, 1.0f},
    {Arch::kQwen3Moe, "qwen3moe", RopeType::kNeox, kQwen3MoeHParams, kQwen3MoeTensors,
     {Mixer::kAttention, false, FfnKind::kMoe, TensorRole::kFfnNorm}, 1.0f},
    {Arch::kQwen35Moe, "qwen35moe", RopeType::kIMRope, kQwen35MoeHParams, kQwen35MoeTensors,
     {Mixer::kGatedAttention, true, FfnKind::kMoeSharedExpert, TensorRole::kPostAttnNorm}, 1.5f, 0.0f, 0.0f, false,
     {}, nullptr, &kNextnBlock},
    {Arch::kVocabOnly, "vocab-only", RopeType::kNorm, {}, {},
     {Mixer::kAttention, false, FfnKind::kDense, TensorRole::kFfnNorm}, 1.0f},
    {Arch::kQwen3, "qwen3", RopeType::kNeox, kQwen3HParams, kQwen3Tensors,
     {Mixer::kAttention, false, FfnKind::kDense, TensorRole::kFfnNorm}, 1.0f},
    {Arch::kGlm4Moe, "glm4moe", RopeType::kNeox, kGlm4MoeHParams, kGlm4MoeTensors,
     {Mixer::kAttention, false, FfnKind::kMoeSharedExpert, TensorRole::kPostAttnNorm}, 1.0f, 0.0f, 0.0f, false, {},
     nullptr, &kNextnBlock},
    // llama.cpp's constants for gpt-oss's clamped SwiGLU (LLM_FFN_SWIGLU_OAI_MOE).
    {Arch::kGptOss, "gpt-oss", RopeType::kNeox, kGptOssHParams, kGptOssTensors,
     {Mixer::kAttention, false, FfnKind::kMoe, TensorRole::kPostAttnNorm}, 1.0f, 1.702f, 7.0f},
    // qwen35moe's layers and tensors; value heads in the grouped order, and
    // the fused ssm_in / ssm_ba of its GGUFs split at pack time.
    {Arch::kQwen3Next, "qwen3next", RopeType::kNeox, kQwen3NextHParams, kQwen35MoeTensors,
     {Mixer::kGatedAttention, true, FfnKind::kMoeSharedExpert, TensorRole::kPostAttnNorm}, 1.5f, 0.0f, 0.0f, true,
     kQwen3NextSplits},
    {Arch::kDeepseek2, "deepseek2", RopeType::kNorm, kDeepseek2HParams, kDeepseek2Tensors,
     {Mixer::kLatentAttention, false, FfnKind::kMoeSharedExpert, TensorRole::kFfnNorm}, 1.0f, 0.0f, 0.0f, false, {},
     "blk.{L}.attn_kv_b.weight"},
};

bool InLayerSet(LayerSet s, const HParams& hp, uint32_t il) {
  bool main_layer = il < hp.n_layer;
  bool attention = main_layer && (hp.full_attn_interval == 0 || !hp.IsRecurrentLayer(il));
  switch (s) {
    case L::kGlobal: return false;
    case L::kAll: return main_layer;
    case L::kAttention: return attention;
    case L::kRecurrent: return main_layer && hp.IsRecurrentLayer(il);
    case L::kNextn: return !main_layer;
    case L::kAllWithNextn: return true;
    case L::kAttentionAndNextn: return attention || !main_layer;
    case L::kDenseLead: return main_layer && hp.IsDenseLeadLayer(il);
    case L::kMoeWithNextn: return !main_layer || !hp.IsDenseLeadLayer(il);
    case L::kLowRankQ: return hp.q_lora_rank > 0;  // main and MTP layers
    case L::kFullRankQ: return hp.q_lora_rank == 0;
  }
  return false;
}

}  // namespace

std::string_view ArchName(Arch a) {
  for (const auto& s : kSpecs)
    if (s.arch == a) return s.gguf_name;
  return "?";
}

std::optional<Arch> ArchFromName(std::string_view n) {
  for (const auto& s : kSpecs)
    if (s.gguf_name == n && s.arch != Arch::kVocabOnly) return s.arch;
  return std::nullopt;
}

std::string RunnableArchNames() {
  std::string out;
  for (const auto& s : kSpecs)
    if (s.arch != Arch::kVocabOnly) out += (out.empty() ? "" : ", ") + std::string(s.gguf_name);
  return out;
}

std::string_view RopeTypeName(RopeType r) {
  switch (r) {
    case RopeType::kNorm: return "normal";
    case RopeType::kNeox: return "neox";
    case RopeType::kIMRope: return "imrope";
  }
  return "?";
}

std::string_view RopeScalingName(RopeScaling s) {
  switch (s) {
    case RopeScaling::kNone: return "none";
    case RopeScaling::kLinear: return "linear";
    case RopeScaling::kYarn: return "yarn";
  }
  return "?";
}

std::string_view ExpertGatingName(ExpertGating g) {
  switch (g) {
    case ExpertGating::kSoftmax: return "softmax";
    case ExpertGating::kSigmoid: return "sigmoid";
    case ExpertGating::kSoftmaxWeight: return "softmax over the chosen";
  }
  return "?";
}

std::string_view TensorRoleName(TensorRole r) {
  static constexpr std::string_view kNames[] = {
      "token_embd", "output_norm", "output",
      "attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm", "attn_k_norm",
      "ffn_norm", "ffn_gate", "ffn_up", "ffn_down",
      "ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps",
      "ffn_gate_inp_shexp", "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp",
      "post_attention_norm", "attn_qkv", "attn_gate",
      "ssm_conv1d", "ssm_dt_bias", "ssm_a", "ssm_beta", "ssm_alpha", "ssm_norm", "ssm_out",
      "nextn_eh_proj", "nextn_enorm", "nextn_hnorm", "nextn_embed_tokens", "nextn_shared_head_head",
      "nextn_shared_head_norm", "attn_q_bias", "attn_k_bias", "attn_v_bias", "exp_probs_b",
      "attn_output_bias", "attn_sinks", "ffn_gate_inp_bias", "ffn_gate_exps_bias", "ffn_up_exps_bias",
      "ffn_down_exps_bias", "attn_q_a", "attn_q_a_norm", "attn_q_b", "attn_kv_a_mqa", "attn_kv_a_norm", "attn_k_b",
      "attn_v_b"};
  static_assert(std::size(kNames) == static_cast<size_t>(TensorRole::kCount));
  auto i = static_cast<size_t>(r);
  return i < std::size(kNames) ? kNames[i] : "?";
}

std::string_view MixerName(Mixer m) {
  switch (m) {
    case Mixer::kAttention: return "attention";
    case Mixer::kGatedAttention: return "gated attention";
    case Mixer::kGatedDeltaNet: return "gated delta-net";
    case Mixer::kLatentAttention: return "latent attention";
  }
  return "?";
}

std::string_view FfnKindName(FfnKind f) {
  switch (f) {
    case FfnKind::kDense: return "dense SwiGLU";
    case FfnKind::kMoe: return "MoE";
    case FfnKind::kMoeSharedExpert: return "MoE + shared expert";
  }
  return "?";
}

const ArchSpec& GetArchSpec(Arch arch) {
  for (const auto& s : kSpecs)
    if (s.arch == arch) return s;
  return kSpecs[0];
}

std::string TensorName(const char* pattern, int32_t layer) {
  std::string p(pattern);
  size_t at = p.find("{L}");
  if (at != std::string::npos) p.replace(at, 3, std::to_string(layer));
  return p;
}

std::vector<ExpectedTensor> ExpectedTensors(const ArchSpec& spec, const HParams& hp) {
  std::vector<ExpectedTensor> out;
  auto add = [&](const TensorSpec& ts, int32_t layer) {
    ExpectedTensor e;
    e.name = TensorName(ts.pattern, layer);
    e.spec = &ts;
    e.layer = layer;
    for (uint8_t d = 0; d < ts.rank; ++d) e.shape.push_back(ts.shape[d].eval(hp));
    out.push_back(std::move(e));
  };
  for (const auto& ts : spec.tensors)
    if (ts.layers == LayerSet::kGlobal) add(ts, -1);
  for (uint32_t il = 0; il < hp.n_layer_all; ++il)
    for (const auto& ts : spec.tensors)
      if (ts.layers != LayerSet::kGlobal && InLayerSet(ts.layers, hp, il)) add(ts, static_cast<int32_t>(il));
  return out;
}

bool TypeAllowed(TypeRule rule, GgmlType type) {
  switch (rule) {
    case TypeRule::kF32Only: return type == GgmlType::kF32;
    case TypeRule::kAnyWeight: {
      const GgmlTypeInfo* t = LookupGgmlType(static_cast<uint32_t>(type));
      return t && t->weight;
    }
  }
  return false;
}

std::string_view TypeRuleText(TypeRule rule) {
  switch (rule) {
    case TypeRule::kF32Only: return "F32";
    case TypeRule::kAnyWeight: return "a weight type (F32, F16, BF16 or a quantized type)";
  }
  return "?";
}

namespace {
// deepseek2's latent attention: the cache is one head of the latent and the
// RoPE part (attention.key_length), its values the latent
// (attention.value_length), as llama.cpp's converter writes them.
Status CheckLatentAttention(const std::string& a, const HParams& hp) {
  auto bad = [&](const char* what, uint64_t expected, const char* how, uint64_t found) {
    return DataLoss(StrFormat("%s hyperparameter %s: expected %llu (%s), found %llu", a.c_str(), what,
                              static_cast<unsigned long long>(expected), how, static_cast<unsigned long long>(found)));
  };
  if (hp.kv_lora_rank < 1 || hp.kv_lora_rank > kMaxHeadDim)
    return DataLoss(StrFormat("%s hyperparameter attention.kv_lora_rank: expected 1..%u, found %u", a.c_str(),
                              kMaxHeadDim, hp.kv_lora_rank));
  if (hp.n_head_kv != 1) return bad("attention.head_count_kv", 1, "latent attention caches one head", hp.n_head_kv);
  if (hp.head_dim_k != hp.kv_lora_rank + hp.n_rot)
    return bad("attention.key_length", uint64_t{hp.kv_lora_rank} + hp.n_rot, "kv_lora_rank + rope.dimension_count",
               hp.head_dim_k);
  if (hp.head_dim_v != hp.kv_lora_rank) return bad("attention.value_length", hp.kv_lora_rank, "kv_lora_rank", hp.head_dim_v);
  if (hp.head_dim_k_mla <= hp.n_rot || hp.head_dim_k_mla > kMaxHeadDim)
    return DataLoss(StrFormat("%s hyperparameter attention.key_length_mla: expected %u..%u (more than "
                              "rope.dimension_count), found %u", a.c_str(), hp.n_rot + 1, kMaxHeadDim, hp.head_dim_k_mla));
  if (hp.head_dim_v_mla < 1 || hp.head_dim_v_mla > kMaxHeadDim)
    return DataLoss(StrFormat("%s hyperparameter attention.value_length_mla: expected 1..%u, found %u", a.c_str(),
                              kMaxHeadDim, hp.head_dim_v_mla));
  if (hp.q_lora_rank > kMaxEmbd)
    return DataLoss(StrFormat("%s hyperparameter attention.q_lora_rank: expected 0..%u, found %u", a.c_str(), kMaxEmbd,
                              hp.q_lora_rank));
  if (hp.n_swa != 0)
    return DataLoss(StrFormat("%s hyperparameter attention.sliding_window: expected 0 (latent attention has no "
                              "window), found %u", a.c_str(), hp.n_swa));
  if (!std::isfinite(hp.rope_yarn_log_mul) || hp.rope_yarn_log_mul < 0.0f)
    return DataLoss(StrFormat("%s hyperparameter rope.scaling.yarn_log_multiplier: expected a finite number >= 0, "
                              "found %g", a.c_str(), static_cast<double>(hp.rope_yarn_log_mul)));
  return Status::Ok();
}
}  // namespace

Status CheckHParams(Arch arch, const HParams& hp) {
  std::string a(ArchName(arch));
  auto bad = [&](const char* what, const std::string& expected, uint64_t found) {
    return DataLoss(StrFormat("%s hyperparameter %s: expected %s, found %llu", a.c_str(), what, expected.c_str(),
                              static_cast<unsigned long long>(found)));
  };
  auto range = [&](const char* what, uint64_t v, uint64_t lo, uint64_t hi) -> Status {
    if (v < lo || v > hi) return bad(what, StrFormat("%llu..%llu", (unsigned long long)lo, (unsigned long long)hi), v);
    return Status::Ok();
  };
  if (arch == Arch::kVocabOnly) return range("n_vocab (token count)", hp.n_vocab, 1, kMaxVocab);
  STRATA_RETURN_IF_ERROR(range("n_vocab", hp.n_vocab, 1, kMaxVocab));
  STRATA_RETURN_IF_ERROR(range("context_length", hp.n_ctx_train, 1, 1u << 24));
  STRATA_RETURN_IF_ERROR(range("embedding_length", hp.n_embd, 1, kMaxEmbd));
  STRATA_RETURN_IF_ERROR(range("block_count", hp.n_layer_all, 1, kMaxLayers));
  STRATA_RETURN_IF_ERROR(range("block_count - nextn_predict_layers", hp.n_layer, 1, hp.n_layer_all));
  STRATA_RETURN_IF_ERROR(range("attention.head_count", hp.n_head, 1, kMaxHeads));
  STRATA_RETURN_IF_ERROR(range("attention.head_count_kv", hp.n_head_kv, 1, hp.n_head));
  if (hp.n_head % hp.n_head_kv != 0)
    return bad("attention.head_count_kv", StrFormat("a divisor of head_count %u", hp.n_head), hp.n_head_kv);
  STRATA_RETURN_IF_ERROR(range("attention.key_length", hp.head_dim_k, 2, kMaxHeadDim));
  STRATA_RETURN_IF_ERROR(range("attention.value_length", hp.head_dim_v, 1, kMaxHeadDim));
  STRATA_RETURN_IF_ERROR(range("rope.dimension_count", hp.n_rot, 2, hp.head_dim_k));
  if (hp.n_rot % 2 != 0) return bad("rope.dimension_count", "an even number", hp.n_rot);
  if (!(hp.rms_eps > 0.0f) || !std::isfinite(hp.rms_eps))
    return DataLoss(StrFormat("%s hyperparameter attention.layer_norm_rms_epsilon: expected a positive finite "
                              "number, found %g", a.c_str(), static_cast<double>(hp.rms_eps)));
  if (!(hp.rope_freq_base > 0.0f) || !std::isfinite(hp.rope_freq_base))
    return DataLoss(StrFormat("%s hyperparameter rope.freq_base: expected a positive finite number, found %g",
                              a.c_str(), static_cast<double>(hp.rope_freq_base)));
  if (!(hp.rope_freq_scale > 0.0f) || !std::isfinite(hp.rope_freq_scale))
    return DataLoss(StrFormat("%s hyperparameter rope_freq_scale: expected a positive finite number, found %g",
                              a.c_str(), static_cast<double>(hp.rope_freq_scale)));
  if (hp.rope_scaling != RopeScaling::kNone && hp.rope_scaling != RopeScaling::kLinear &&
      hp.rope_scaling != RopeScaling::kYarn)
    return bad("rope.scaling.type", "none, linear or yarn", static_cast<uint64_t>(hp.rope_scaling));
  if (hp.rope_scaling == RopeScaling::kYarn)
    STRATA_RETURN_IF_ERROR(range("rope.scaling.original_context_length", hp.n_ctx_orig_yarn, 1, 1u << 24));
  if (!(hp.rope_attn_factor > 0.0f) || !std::isfinite(hp.rope_attn_factor))
    return DataLoss(StrFormat("%s hyperparameter rope.scaling.attn_factor: expected a positive finite number, found %g",
                              a.c_str(), static_cast<double>(hp.rope_attn_factor)));
  if (hp.expert_gating != ExpertGating::kSoftmax && hp.expert_gating != ExpertGating::kSigmoid &&
      hp.expert_gating != ExpertGating::kSoftmaxWeight)
    return bad("expert_gating_func", "1 (softmax), 2 (sigmoid) or 3 (softmax over the chosen)",
               static_cast<uint64_t>(hp.expert_gating));
  if (hp.n_layer_dense_lead != 0)
    STRATA_RETURN_IF_ERROR(range("leading_dense_block_count", hp.n_layer_dense_lead, 0, hp.n_layer));
  if (hp.n_swa != 0) {
    STRATA_RETURN_IF_ERROR(range("attention.sliding_window", hp.n_swa, 1, 1u << 24));
    STRATA_RETURN_IF_ERROR(range("attention.sliding_window_pattern", hp.swa_pattern, 0, kMaxLayers));
  }
  if (!std::isfinite(hp.swiglu_alpha) || hp.swiglu_alpha < 0.0f || !std::isfinite(hp.swiglu_limit) ||
      hp.swiglu_limit < 0.0f)
    return DataLoss(a + " hyperparameters swiglu_alpha, swiglu_limit: expected finite numbers >= 0");
  if (!(hp.attn_scale >= 0.0f) || !std::isfinite(hp.attn_scale))
    return DataLoss(StrFormat("%s hyperparameter attn_scale: expected 0 (1/sqrt(head_dim)) or a positive finite "
                              "number, found %g", a.c_str(), static_cast<double>(hp.attn_scale)));
  const ArchSpec& spec = GetArchSpec(arch);
  if (!spec.has_experts() || hp.n_layer_dense_lead != 0) {
    STRATA_RETURN_IF_ERROR(range("feed_forward_length", hp.n_ff, 1, kMaxFf));
  }
  if (spec.has_experts()) {
    STRATA_RETURN_IF_ERROR(range("expert_count", hp.n_expert, 1, kMaxExperts));
    STRATA_RETURN_IF_ERROR(range("expert_used_count", hp.n_expert_used, 1, hp.n_expert));
    STRATA_RETURN_IF_ERROR(range("expert_feed_forward_length", hp.n_ff_exp, 1, kMaxFf));
    if (!std::isfinite(hp.expert_weights_scale) || hp.expert_weights_scale < 0.0f)
      return DataLoss(a + " hyperparameter expert_weights_scale: expected a finite number >= 0");
  }
  // What the layer structure uses (spec.layers), and nothing else.
  if (spec.has_shared_expert())
    STRATA_RETURN_IF_ERROR(range("expert_shared_feed_forward_length", hp.n_ff_shexp, 1, kMaxFf));
  if (hp.nextn_predict_layers != 0)
    STRATA_RETURN_IF_ERROR(range("nextn_predict_layers", hp.nextn_predict_layers, 0, hp.n_layer_all - 1));
  if (spec.rope_type != RopeType::kIMRope && hp.rope_sections[0] > 0 && hp.rope_sections[1] > 0)
    return DataLoss(StrFormat("%s hyperparameter rope.dimension_sections: expected none (text-only RoPE), found "
                              "[%d, %d, %d, %d]: M-RoPE over image positions, which Strata does not run",
                              a.c_str(), hp.rope_sections[0], hp.rope_sections[1], hp.rope_sections[2],
                              hp.rope_sections[3]));
  if (spec.rope_type == RopeType::kIMRope) {
    int64_t sec = 0;
    for (int32_t s : hp.rope_sections) {
      if (s < 0) return bad("rope.dimension_sections", "non-negative sections", static_cast<uint64_t>(s));
      sec += s;
    }
    if (sec == 0) return bad("rope.dimension_sections", "sections that sum to more than 0", 0);
  }
  if (spec.layers.recurrent) {
    STRATA_RETURN_IF_ERROR(range("full_attention_interval", hp.full_attn_interval, 1, kMaxLayers));
    STRATA_RETURN_IF_ERROR(range("ssm.conv_kernel", hp.ssm_d_conv, 1, 64));
    STRATA_RETURN_IF_ERROR(range("ssm.state_size", hp.ssm_d_state, 1, kMaxHeadDim));
    STRATA_RETURN_IF_ERROR(range("ssm.group_count", hp.ssm_n_group, 1, kMaxHeads));
    STRATA_RETURN_IF_ERROR(range("ssm.time_step_rank", hp.ssm_dt_rank, 1, kMaxHeads));
    if (hp.ssm_dt_rank % hp.ssm_n_group != 0)
      return bad("ssm.time_step_rank", StrFormat("a multiple of ssm.group_count %u", hp.ssm_n_group), hp.ssm_dt_rank);
    if (hp.ssm_grouped_heads != spec.ssm_grouped_heads)
      return bad("ssm_grouped_heads (the value heads' order)", spec.ssm_grouped_heads ? "1 (grouped)" : "0 (tiled)",
                 hp.ssm_grouped_heads);
    if (uint64_t{hp.ssm_d_inner} != uint64_t{hp.ssm_d_state} * hp.ssm_dt_rank)
      return bad("ssm.inner_size",
                 StrFormat("ssm.state_size * ssm.time_step_rank = %llu (key and value heads have the same width)",
                           static_cast<unsigned long long>(uint64_t{hp.ssm_d_state} * hp.ssm_dt_rank)),
                 hp.ssm_d_inner);
  }
  if (spec.layers.attention == Mixer::kLatentAttention) {
    STRATA_RETURN_IF_ERROR(CheckLatentAttention(a, hp));
  } else if (hp.kv_lora_rank != 0 || hp.q_lora_rank != 0 || hp.head_dim_k_mla != 0 || hp.head_dim_v_mla != 0) {
    return bad("kv_lora_rank, q_lora_rank, key_length_mla, value_length_mla", "0 (no latent attention)",
               hp.kv_lora_rank);
  }
  // Values only some architectures read (their keys in the spec): zero
  // elsewhere, so a pack cannot switch them on where llama.cpp would not.
  auto reads = [&spec](std::string_view key) {
    for (const HParamSpec& h : spec.hparams)
      if (key == h.key) return true;
    return false;
  };
  if (!reads("rope.scaling.yarn_log_multiplier") && hp.rope_yarn_log_mul != 0.0f)
    return DataLoss(StrFormat("%s hyperparameter rope.scaling.yarn_log_multiplier: expected 0 (%s does not read it), "
                              "found %g", a.c_str(), a.c_str(), static_cast<double>(hp.rope_yarn_log_mul)));
  if (!reads("expert_group_count") && (hp.n_expert_groups > 1 || hp.n_expert_groups_used != 0))
    return bad("expert_group_count", "0 or 1 (" + a + " has no expert groups)", hp.n_expert_groups);
  if (hp.n_expert_groups > 1) {
    STRATA_RETURN_IF_ERROR(range("expert_group_count", hp.n_expert_groups, 2, 32));
    if (hp.n_expert % hp.n_expert_groups != 0 || hp.n_expert / hp.n_expert_groups < 2)
      return bad("expert_group_count", StrFormat("a divisor of expert_count %u leaving at least 2 experts a group",
                                                 hp.n_expert), hp.n_expert_groups);
    STRATA_RETURN_IF_ERROR(range("expert_group_used_count", hp.n_expert_groups_used, 1, hp.n_expert_groups));
    const uint64_t kept = uint64_t{hp.n_expert_groups_used} * (hp.n_expert / hp.n_expert_groups);
    if (hp.n_expert_used > kept)
      return bad("expert_used_count", StrFormat("at most the %llu experts of the groups kept",
                                                static_cast<unsigned long long>(kept)), hp.n_expert_used);
  }
  return Status::Ok();
}

}  // namespace strata
