#include "runtime/model/ops.h"
#include "runtime/arch/arch_spec.h"
#include "runtime/base/portable_math.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace strata::ops {

void RmsNormTo(const float* x, const float* w, int64_t n, float eps, float* out) {
  // As ggml: squares in float, summed in double; the scale in float.
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  if (w) {
    for (int64_t i = 0; i < n; ++i) out[i] = (x[i] * scale) * w[i];
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale;
  }
}

void RmsNorm(float* x, const float* w, int64_t n, float eps) { RmsNormTo(x, w, n, eps, x); }

void L2Norm(float* x, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float scale = 1.0f / std::max(std::sqrt(static_cast<float>(sum)), eps);
  for (int64_t i = 0; i < n; ++i) x[i] *= scale;
}

// ggml_rope_cache_init: theta_i = pos * theta_scale^i, built by repeated float
// multiplication, theta_scale = freq_base^(-2/n_rot).
void RopeAngles(int64_t n_rot, int64_t pos, float freq_base, float freq_scale, float* cs) {
  const int64_t half = n_rot / 2;
  const float theta_scale = PowF(freq_base, -2.0f / static_cast<float>(n_rot));
  float theta = static_cast<float>(pos);
  for (int64_t i = 0; i < half; ++i) {
    const float t = freq_scale * theta;
    cs[i] = CosF(t);
    cs[half + i] = SinF(t);
    theta *= theta_scale;
  }
}

RopeParams RopeParamsFor(const HParams& hp) {
  RopeParams rp;
  rp.freq_base = hp.rope_freq_base;
  rp.freq_scale = hp.rope_scaling == RopeScaling::kNone ? 1.0f : hp.rope_freq_scale;
  rp.mscale = 1.0f;
  if (hp.rope_scaling == RopeScaling::kYarn) {
    rp.ext_factor = 1.0f;
    const float factor = 1.0f / rp.freq_scale;
    // llama.cpp: get_mscale(factor) / (1 + 0.1 ln factor), so that with the
    // rotation's own (1 + 0.1 ln factor) the magnitude is get_mscale(factor).
    // With deepseek2's yarn_log_multiplier (mscale_all_dim), llama.cpp's
    // factor is get_mscale(mscale) / get_mscale(mscale_all_dim) with mscale
    // set to mscale_all_dim: 1.
    const float get_mscale = factor <= 1.0f || hp.rope_yarn_log_mul != 0.0f ? 1.0f : 0.1f * std::log(factor) + 1.0f;
    rp.mscale = get_mscale * (1.0f / (1.0f + 0.1f * std::log(factor)));
    // ggml_rope_yarn_corr_dims with beta_fast 32, beta_slow 1.
    const auto n_dims = static_cast<float>(hp.n_rot);
    const auto n_ctx_orig = static_cast<float>(hp.n_ctx_orig_yarn);
    auto corr_dim = [&](float n_rot) {
      return n_dims * std::log(n_ctx_orig / (n_rot * 2.0f * 3.14159265358979323846f)) /
             (2.0f * std::log(hp.rope_freq_base));
    };
    rp.corr_low = std::max(0.0f, std::floor(corr_dim(32.0f)));
    rp.corr_high = std::min(n_dims - 1.0f, std::ceil(corr_dim(1.0f)));
  }
  rp.mscale *= hp.rope_attn_factor;
  return rp;
}

float LatentAttentionScale(const HParams& hp) {
  const RopeParams rp = RopeParamsFor(hp);
  const float ln_inv_scale = std::log(1.0f / rp.freq_scale);
  const float log_mul = hp.rope_yarn_log_mul / 0.1f;
  const float mscale = rp.mscale * (1.0f + 0.1f * ln_inv_scale) * (1.0f + 0.1f * log_mul * ln_inv_scale);
  return mscale * mscale / std::sqrt(static_cast<float>(hp.head_dim_k_mla));
}

void MaskExpertGroups(const HParams& hp, float* sel) {
  const int64_t G = hp.n_expert_groups;
  if (G <= 1) return;
  const int64_t per = hp.n_expert / G;
  constexpr int64_t kMaxGroups = 32;  // CheckHParams
  float score[kMaxGroups];
  for (int64_t g = 0; g < G; ++g) {
    float a = -INFINITY, b = -INFINITY;  // the two best of the group
    for (int64_t e = g * per; e < (g + 1) * per; ++e) {
      if (sel[e] > a) b = a, a = sel[e];
      else if (sel[e] > b) b = sel[e];
    }
    score[g] = a + b;
  }
  int32_t keep[kMaxGroups];
  TopK(score, G, hp.n_expert_groups_used, keep);
  uint32_t kept = 0;
  for (uint32_t j = 0; j < hp.n_expert_groups_used; ++j) kept |= 1u << keep[j];
  for (int64_t g = 0; g < G; ++g)
    if (!(kept >> g & 1u))
      for (int64_t e = g * per; e < (g + 1) * per; ++e) sel[e] = -INFINITY;
}

void RopeAngles(int64_t n_rot, int64_t pos, const RopeParams& rp, float* cs) {
  if (rp.ext_factor == 0.0f && rp.mscale == 1.0f) {  // plain or linear: the form above, bit for bit
    RopeAngles(n_rot, pos, rp.freq_base, rp.freq_scale, cs);
    return;
  }
  const int64_t half = n_rot / 2;
  const float theta_scale = PowF(rp.freq_base, -2.0f / static_cast<float>(n_rot));
  float mscale = rp.mscale;
  if (rp.ext_factor != 0.0f) mscale *= 1.0f + 0.1f * std::log(1.0f / rp.freq_scale);
  float theta_extrap = static_cast<float>(pos);
  for (int64_t i = 0; i < half; ++i) {
    const float theta_interp = rp.freq_scale * theta_extrap;
    float theta = theta_interp;
    if (rp.ext_factor != 0.0f) {
      const float y = (static_cast<float>(i) - rp.corr_low) / std::max(0.001f, rp.corr_high - rp.corr_low);
      const float ramp_mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * rp.ext_factor;
      theta = theta_interp * (1.0f - ramp_mix) + theta_extrap * ramp_mix;
    }
    cs[i] = CosF(theta) * mscale;
    cs[half + i] = SinF(theta) * mscale;
    theta_extrap *= theta_scale;
  }
}

void RouterProbs(ExpertGating gating, float* x, int64_t n) {
  switch (gating) {
    case ExpertGating::kSoftmax: Softmax(x, n); break;
    case ExpertGating::kSigmoid:
      for (int64_t i = 0; i < n; ++i) x[i] = Sigmoid(x[i]);
      break;
    case ExpertGating::kSoftmaxWeight: break;
  }
}

void AddBias(float* y, const float* bias, int64_t n, int64_t width) {
  if (!bias) return;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < width; ++i) y[t * width + i] += bias[i];
}

void RopeNeox(float* x, int64_t n_rot, const float* cs) {
  const int64_t half = n_rot / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float c = cs[i], s = cs[half + i];
    const float x0 = x[i], x1 = x[i + half];
    x[i] = x0 * c - x1 * s;
    x[i + half] = x0 * s + x1 * c;
  }
}

void RopeNorm(float* x, int64_t n_rot, const float* cs) {
  const int64_t half = n_rot / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float c = cs[i], s = cs[half + i];
    const float x0 = x[2 * i], x1 = x[2 * i + 1];
    x[2 * i] = x0 * c - x1 * s;
    x[2 * i + 1] = x0 * s + x1 * c;
  }
}

void Softmax(float* x, int64_t n) {
  float mx = -INFINITY;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float e = ExpF(x[i] - mx);
    x[i] = e;
    sum += static_cast<double>(e);
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

float SiluF(float x) { return x / (1.0f + ExpF(-x)); }
float Sigmoid(float x) { return 1.0f / (1.0f + ExpF(-x)); }
float Softplus(float x) { return x > 20.0f ? x : Log1pF(ExpF(x)); }

void TopK(const float* x, int64_t n, int64_t k, int32_t* idx) {
  // Selection by repeated max keeps ties in index order and is cheap for the
  // small k (<= 16) MoE routing uses. It allocates nothing (the forward pass
  // runs from a preallocated workspace): an index is skipped when it is
  // already among the j chosen.
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = -1;
    for (int64_t i = 0; i < n; ++i) {
      if (best >= 0 && !(x[i] > x[best])) continue;
      bool taken = false;
      for (int64_t c = 0; c < j && !taken; ++c) taken = idx[c] == i;
      if (!taken) best = i;
    }
    idx[j] = static_cast<int32_t>(best);
  }
}

}  // namespace strata::ops
