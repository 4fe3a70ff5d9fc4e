#include "runtime/model/ops.h"
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
