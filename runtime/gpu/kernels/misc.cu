// Element-wise and small kernels between the products: fills, the residual
// add, SwiGLU's gate, the shared expert's gate, the greedy argmax.

#include "runtime/gpu/kernels/kernel_args.h"
#include "runtime/gpu/kernels/portable.h"

STRATA_GPU_BEGIN

STRATA_DEV int64_t GlobalIndex() { return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; }

STRATA_KERNEL(strata_fill_f32, FillArgs) {
  const int64_t i = GlobalIndex();
  if (i < a.n) a.y[i] = a.value;
}

STRATA_KERNEL(strata_add, AddArgs) {
  const int64_t i = GlobalIndex();
  if (i < a.n) a.x[i] += a.y[i];
}

STRATA_KERNEL(strata_add_bias, AddBiasArgs) {
  const int64_t i = GlobalIndex();
  if (i < a.n) a.y[i] += a.bias[i % a.width];
}

STRATA_KERNEL(strata_copy_rows, CopyRowsArgs) {
  const int64_t idx = GlobalIndex();
  const int64_t rows = static_cast<int64_t>(a.n_i) * a.n_j;
  if (idx >= rows * a.width) return;
  const int64_t r = idx / a.width, c = idx % a.width, i = r / a.n_j, j = r % a.n_j;
  a.dst[i * a.dst_i + j * a.dst_j + c] = a.src[i * a.src_i + j * a.src_j + c];
}

STRATA_KERNEL(strata_swiglu, SwiGluArgs) {
  const int64_t i = GlobalIndex();
  if (i >= a.n) return;
  if (a.alpha == 0.0f) {
    a.g[i] = DevSilu(a.g[i]) * a.u[i];
    return;
  }
  const float x = DevFmin(a.g[i], a.limit);
  const float y = DevFmin(DevFmax(a.u[i], -a.limit), a.limit);
  a.g[i] = x / (1.0f + DevExp(a.alpha * -x)) * (y + 1.0f);
}

STRATA_KERNEL(strata_add_bias_places, AddBiasPlacesArgs) {
  const int64_t i = GlobalIndex();
  if (i >= a.n) return;
  const int64_t p = i / a.width, c = i % a.width;
  a.y[i] += a.bias[static_cast<int64_t>(a.place_expert[p]) * a.width + c];
}

// Block t: out[t] += sigmoid(dot(gate_w, h[t])) * sh[t]; without gate_w, out[t] += sh[t].
STRATA_KERNEL(strata_shared_gate, SharedGateArgs) {
  STRATA_SHARED(float, partial, 1024 / 32);
  const int64_t t = blockIdx.x;
  const float* h = a.h + t * a.cols;
  float s = 0.0f;
  if (a.gate_w)
    for (int32_t d = static_cast<int32_t>(threadIdx.x); d < a.cols; d += static_cast<int32_t>(blockDim.x))
      s += a.gate_w[d] * h[d];
  s = WarpSum(s);
  if (LaneId() == 0) partial[WarpId()] = s;
  __syncthreads();
  float g = 0.0f;
  for (uint32_t w = 0; w < blockDim.x / kWarpSize; ++w) g += partial[w];
  g = a.gate_w ? DevSigmoid(g) : 1.0f;  // no gate vector: the shared expert added as it is (glm4moe)
  const float* sh = a.sh + t * a.cols;
  float* out = a.out + t * a.cols;
  for (int32_t d = static_cast<int32_t>(threadIdx.x); d < a.cols; d += static_cast<int32_t>(blockDim.x))
    out[d] += a.gate_w ? sh[d] * g : sh[d];
}

// Block r: the first index of the row's largest value (NaN never wins a
// comparison); 0 when the row starts with NaN or holds no number above -inf.
STRATA_KERNEL(strata_argmax, ArgmaxArgs) {
  STRATA_SHARED(float, best_v, 1024 / 32);
  STRATA_SHARED(int32_t, best_i, 1024 / 32);
  const float* row = a.logits + static_cast<int64_t>(blockIdx.x) * a.cols;
  float v = 0.0f;
  int32_t idx = a.cols;  // none yet
  for (int32_t i = static_cast<int32_t>(threadIdx.x); i < a.cols; i += static_cast<int32_t>(blockDim.x)) {
    const float x = row[i];
    if (idx == a.cols ? x > -INFINITY : x > v) v = x, idx = i;
  }
  // Reduce (value, index): larger value wins, then the smaller index.
  for (uint32_t m = kWarpSize / 2; m > 0; m >>= 1) {
    const float ov = WarpShflXor(v, static_cast<int>(m));
    const int32_t oi = WarpShflXor(idx, static_cast<int>(m));
    const bool take = oi != a.cols && (idx == a.cols || ov > v || (ov == v && oi < idx));
    if (take) v = ov, idx = oi;
  }
  if (LaneId() == 0) best_v[WarpId()] = v, best_i[WarpId()] = idx;
  __syncthreads();
  if (threadIdx.x == 0) {
    float bv = 0.0f;
    int32_t bi = a.cols;
    for (uint32_t w = 0; w < blockDim.x / kWarpSize; ++w) {
      const int32_t oi = best_i[w];
      if (oi != a.cols && (bi == a.cols || best_v[w] > bv || (best_v[w] == bv && oi < bi))) bv = best_v[w], bi = oi;
    }
    a.out[blockIdx.x] = (bi == a.cols || DevIsNan(row[0])) ? 0 : bi;
  }
}

STRATA_GPU_END
