// The embedding gather and the norms: RMSNorm of rows (the layers' norms,
// the output norm of the rows asked for) and the gated delta-net's gated
// RMSNorm per head.

#include "runtime/gpu/kernels/kernel_args.h"
#include "runtime/gpu/kernels/portable.h"
#include "runtime/gpu/kernels/quant_decode.h"

STRATA_GPU_BEGIN

// Grid (n, ceil(cols / 32 / blockDim)): a thread decodes one 32-element
// sub-block of the token's row (a quantized row is whole 32s; a float row
// may end inside one).
template <int kType>
STRATA_DEV void Embed(const EmbedArgs& a) {
  const int64_t t = blockIdx.x;
  const int64_t j = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (j * 32 >= a.cols) return;
  const uint8_t* row = a.table + static_cast<uint64_t>(a.ids[t]) * a.row_bytes;
  float* x = a.x + t * a.cols;
  if constexpr (IsQuantized(kType)) {
    DecodeFloat32<kType>(row, j, x + j * 32);
  } else {
    for (int64_t i = j * 32; i < j * 32 + 32 && i < a.cols; ++i) x[i] = LoadFloat<kType>(row, i);
  }
}

#define STRATA_EMBED_KERNEL(id, NAME, elems, bytes) \
  STRATA_KERNEL(strata_embed_##NAME, EmbedArgs) { Embed<id>(a); }
STRATA_GPU_QUANT_TYPES(STRATA_EMBED_KERNEL)
STRATA_GPU_FLOAT_TYPES(STRATA_EMBED_KERNEL)
#undef STRATA_EMBED_KERNEL

// The sum of v over the block's threads, in every thread. `scratch`: one
// float per warp of the block (shared).
STRATA_DEV float BlockSum(float v, float* scratch) {
  v = WarpSum(v);
  __syncthreads();  // scratch may still be read from a previous call
  if (LaneId() == 0) scratch[WarpId()] = v;
  __syncthreads();
  float s = 0.0f;
  for (uint32_t w = 0; w < blockDim.x / kWarpSize; ++w) s += scratch[w];
  return s;
}

// Block r: y[r] = RMSNorm(x[row]) * w. The squares are summed in float per
// thread, then across the block (the CPU sums them in double: the test's
// tolerance covers the difference).
STRATA_KERNEL(strata_rms_norm, RmsNormArgs) {
  STRATA_SHARED(float, scratch, 1024 / 32);
  const int64_t r = blockIdx.x;
  const int64_t src = a.rows ? a.rows[r] : r;
  const float* x = a.x + src * a.cols;
  float* y = a.y + r * a.cols;
  float s = 0.0f;
  for (int32_t i = static_cast<int32_t>(threadIdx.x); i < a.cols; i += static_cast<int32_t>(blockDim.x))
    s += x[i] * x[i];
  s = BlockSum(s, scratch);
  const float scale = 1.0f / DevSqrt(s / static_cast<float>(a.cols) + a.eps);
  for (int32_t i = static_cast<int32_t>(threadIdx.x); i < a.cols; i += static_cast<int32_t>(blockDim.x))
    y[i] = a.w ? (x[i] * scale) * a.w[i] : x[i] * scale;
}

// Block t, warp per value head (heads strided over the warps):
// z = RMSNorm(y) * norm_w * silu(z).
STRATA_KERNEL(strata_gated_norm, GatedNormArgs) {
  const int64_t t = blockIdx.x;
  const int32_t warps = static_cast<int32_t>(blockDim.x / kWarpSize);
  for (int32_t h = static_cast<int32_t>(WarpId()); h < a.n_v; h += warps) {
    const float* y = a.y + (t * a.n_v + h) * a.dv;
    float* z = a.z + (t * a.n_v + h) * a.dv;
    float s = 0.0f;
    for (int32_t i = static_cast<int32_t>(LaneId()); i < a.dv; i += static_cast<int32_t>(kWarpSize)) s += y[i] * y[i];
    s = WarpSum(s);
    const float scale = 1.0f / DevSqrt(s / static_cast<float>(a.dv) + a.eps);
    for (int32_t i = static_cast<int32_t>(LaneId()); i < a.dv; i += static_cast<int32_t>(kWarpSize))
      z[i] = DevSilu(z[i]) * ((y[i] * scale) * a.norm_w[i]);
  }
}

STRATA_GPU_END
