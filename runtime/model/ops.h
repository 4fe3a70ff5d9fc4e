#pragma once
// The float operations of the forward pass that are not matrix products:
// norms, RoPE, softmax, activations. Each computes what the corresponding
// ggml-cpu op computes in F32 (reference/formats.md 3.4-3.6), including the
// details that move results by more than rounding noise: RMSNorm sums squares
// in double, RoPE angles are built by repeated multiplication as ggml's rope
// cache does, the MoE weight renormalization clamps its divisor.

#include <cstdint>
#include <span>

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
void RopeNeox(float* x, int64_t n_rot, const float* cs);
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
