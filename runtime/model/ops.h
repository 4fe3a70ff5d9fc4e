#pragma once
// The float operations of the forward pass that are not matrix products:
// norms, RoPE, softmax, activations. Each computes what the corresponding
// ggml-cpu op computes in F32 (reference/formats.md 3.4-3.6), including the
// details that move results by more than rounding noise: RMSNorm sums squares
// in double, RoPE angles are built by repeated multiplication as ggml's rope
// cache does, the MoE weight renormalization clamps its divisor.

#include <cstdint>
#include <span>

namespace strata {
struct HParams;
enum class ExpertGating : uint8_t;
}

namespace strata::ops {

// x[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]   (w may be null: no scale)
void RmsNorm(float* x, const float* w, int64_t n, float eps);
// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]
void RmsNormTo(const float* x, const float* w, int64_t n, float eps, float* out);
// x / max(||x||_2, eps)
void L2Norm(float* x, int64_t n, float eps);

// Rotary embedding. RopeAngles computes the n_rot / 2 angles of position
// `pos` once for every head of a token: cs[i] = cos(theta_i) and
// cs[n_rot / 2 + i] = sin(theta_i), theta_i = freq_scale * pos *
// freq_base^(-2i / n_rot) built by repeated float multiplication as ggml's
// rope cache builds it (n_rot floats at cs). RopeNeox and RopeNorm rotate one
// head vector's first n_rot dims by them: NEOX pairs (i, i + n_rot/2), NORM
// pairs (2i, 2i+1).
void RopeAngles(int64_t n_rot, int64_t pos, float freq_base, float freq_scale, float* cs);

// RoPE with scaling, as ggml's rope_yarn: theta_interp = freq_scale *
// theta_extrap; with ext_factor != 0 (YaRN) the angle of pair i blends
// theta_interp and theta_extrap by ramp(i) * ext_factor, ramp 1 below
// corr_low, 0 above corr_high, linear between, and cos and sin are scaled by
// mscale * (1 + 0.1 ln(1 / freq_scale)); without, by mscale alone.
struct RopeParams {
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;
  float ext_factor = 0.0f;  // 1 for YaRN, 0 otherwise
  float mscale = 1.0f;      // llama.cpp's yarn_attn_factor (times rope.scaling.attn_factor)
  float corr_low = 0.0f, corr_high = 0.0f;  // YaRN's correction dims
};
// What a model's hyperparameters ask for (llama.cpp's context setup: YaRN's
// ext_factor 1, beta_fast 32, beta_slow 1, its attention factor cancelled
// against the magnitude correction the rotation applies).
RopeParams RopeParamsFor(const HParams& hp);
// deepseek2's attention scale (llama.cpp's kq_scale for it): mscale^2 /
// sqrt(head_dim_k_mla), mscale = the rotation's attention factor times
// (1 + 0.1 ln(1 / freq_scale)) times (1 + 0.1 log_mul ln(1 / freq_scale)),
// log_mul = rope.scaling.yarn_log_multiplier / 0.1.
float LatentAttentionScale(const HParams& hp);
// Group-limited selection (HParams::n_expert_groups > 1): the selection
// scores `sel` (n_expert values) of the groups outside the
// n_expert_groups_used whose two best scores sum highest (ties: the lower
// group) become -infinity, so that TopK chooses inside the kept groups.
void MaskExpertGroups(const HParams& hp, float* sel);
void RopeAngles(int64_t n_rot, int64_t pos, const RopeParams& rp, float* cs);
void RopeNeox(float* x, int64_t n_rot, const float* cs);
// The router's probabilities in place, as HParams::expert_gating says:
// softmax over all, each logit's sigmoid, or the logits as they are (the
// softmax comes after the top k: kSoftmaxWeight).
void RouterProbs(ExpertGating gating, float* logits, int64_t n);
// y[t * width + i] += bias[i] for t < n (nothing when bias is null).
void AddBias(float* y, const float* bias, int64_t n, int64_t width);
void RopeNorm(float* x, int64_t n_rot, const float* cs);

// In place softmax over n values.
void Softmax(float* x, int64_t n);
float SiluF(float x);
float Sigmoid(float x);
float Softplus(float x);

// Top-k of n values: indices of the k largest (ties: lower index first), in
// descending order of value.
void TopK(const float* x, int64_t n, int64_t k, int32_t* idx);

}  // namespace strata::ops
