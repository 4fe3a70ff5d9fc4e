#pragma once  // matmul_mma.cu includes it too
// Matrix products for every weight type: y = W x for activation columns x.
//
// Quantized weights multiply int8 activations (XBlock: 32 values, a scale,
// the halves' scaled sums), quantized once per product by strata_quantize_q8:
// each 32-element sub-block of a weight row decodes to int8 with an affine
// map per 16 (quant_decode.h), and its product with an XBlock is two 16-wide
// int8 dot products (dp4a) plus the offsets' terms:
//
//   sum_i w_i x_i ~ d_x * (s_0 * (q . qx)_0 + s_1 * (q . qx)_1) + o_0 * ds_0 + o_1 * ds_1
//
// Float weights (F32, F16, BF16) multiply float activations.
//
// Two shapes:
//   mmv (matrix-vector, decode: up to 8 columns): a warp per weight row,
//       lanes over the row's sub-blocks, then a warp sum;
//   mmq / mm (tiled, prefill): a block computes 64 rows x 64 columns from
//       shared-memory tiles of decoded weights and activations. This is the
//       portable form (dp4a on CUDA cores); matmul_mma.cu has the
//       tensor-core form of the same product for the architectures with it.
// Both have a grouped form for the MoE experts (kernel_args.h MatMulArgs).

#include "runtime/gpu/kernels/kernel_args.h"
#include "runtime/gpu/kernels/portable.h"
#include "runtime/gpu/kernels/quant_decode.h"

STRATA_GPU_BEGIN

// --- activations --------------------------------------------------------------

// Lanes 4w..4w+3 of a group of 32 pack their int8 q into word w (every lane
// of the group gets the word of its four).
STRATA_DEV uint32_t PackWord(int q, int32_t l) {
  return WarpOr((static_cast<uint32_t>(q) & 0xffu) << (8 * (l % 4)), 2);
}

// Grid (n, ceil(cols / 32 / (blockDim / 32))): 32 threads per 32-value block
// (a group of 32 lanes: the whole warp at 32 lanes, half of it at 64).
// Modes kActQ8_0 and kActQ8_1 (kernel_args.h).
STRATA_KERNEL(strata_quantize_q8, QuantizeArgs) {
  const int64_t r = blockIdx.x;
  const int64_t src = a.rows ? a.rows[r] : r;
  const int32_t nb = a.cols / 32;
  const int32_t b = static_cast<int32_t>(blockIdx.y * (blockDim.x / 32) + threadIdx.x / 32);
  const int32_t l = static_cast<int32_t>(threadIdx.x % 32);
  const bool live = b < nb;  // every lane takes part in the shuffles
  const float v = live ? a.x[src * a.cols + b * 32 + l] : 0.0f;
  float amax = DevAbs(v);
  amax = WarpFmax(amax, 16);
  const float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  int q = DevRoundToInt(v * id);
  q = q > 127 ? 127 : q < -128 ? -128 : q;
  const uint32_t word = PackWord(q, l);
  // Each half's sum (kActQ8_0), or the whole block's (kActQ8_1).
  const int half = WarpSum(q, 8);
  const int whole = half + WarpShflXor(half, 16);
  if (!live) return;
  XBlock& o = a.q[r * nb + b];
  if (l % 4 == 0) o.q[l / 4] = static_cast<int32_t>(word);
  const float dh = HalfToFloat(FloatToHalf(d));  // the F16 d the products read
  if (a.mode == kActQ8_1) {
    if (l == 0) o.d = dh, o.ds[0] = HalfToFloat(FloatToHalf(d * static_cast<float>(whole))), o.ds[1] = 0.0f, o.pad = 0.0f;
  } else {
    if (l == 0) o.d = dh, o.ds[0] = dh * static_cast<float>(half), o.pad = 0.0f;
    if (l == 16) o.ds[1] = dh * static_cast<float>(half);
  }
}

// Mode kActQ8_K. Grid (n, cols / 256), 256 threads: one 256-value block,
// thread i its value i.
STRATA_KERNEL(strata_quantize_q8k, QuantizeArgs) {
  STRATA_SHARED(float, wmax, 256 / 32);
  STRATA_SHARED(int32_t, widx, 256 / 32);
  const int64_t r = blockIdx.x;
  const int64_t src = a.rows ? a.rows[r] : r;
  const int32_t blk = static_cast<int32_t>(blockIdx.y);
  const int32_t i = static_cast<int32_t>(threadIdx.x);
  const float v = a.x[src * a.cols + blk * 256 + i];
  // The value of largest |x|, the first of equals (Q8_K's rule), over 256
  // values: per group of 32 lanes, then across the 8 groups.
  float av = DevAbs(v);
  int32_t at = i;
  WarpArgMax(av, at, 16);
  if (i % 32 == 0) wmax[i / 32] = av, widx[i / 32] = at;
  __syncthreads();
  float best = wmax[0];
  int32_t best_at = widx[0];
  for (int g = 1; g < 8; ++g)
    if (wmax[g] > best) best = wmax[g], best_at = widx[g];
  const float mx = a.x[src * a.cols + blk * 256 + best_at];
  const float iscale = best != 0.0f ? -127.0f / mx : 0.0f;
  int q = best != 0.0f ? DevRoundToInt(iscale * v) : 0;
  q = q < 127 ? q : 127;
  const int32_t l = i % 32;
  const uint32_t word = PackWord(q, l);
  const int half = WarpSum(q, 8);
  const float d = best != 0.0f ? 1.0f / iscale : 0.0f;
  XBlock& o = a.q[r * (a.cols / 32) + blk * 8 + i / 32];
  if (l % 4 == 0) o.q[l / 4] = static_cast<int32_t>(word);
  if (l == 0) o.d = d, o.ds[0] = d * static_cast<float>(half), o.pad = 0.0f;
  if (l == 16) o.ds[1] = d * static_cast<float>(half);
}

// --- shared pieces ---------------------------------------------------------------

// The product of one decoded sub-block with one activation block.
STRATA_DEV float SubDot(const int32_t* wq, const float* ws, const float* wo, const int32_t* xq, float xd,
                        const float* xds) {
  int s0 = 0, s1 = 0;
  for (int i = 0; i < 4; ++i) s0 = Dp4a(wq[i], xq[i], s0);
  for (int i = 4; i < 8; ++i) s1 = Dp4a(wq[i], xq[i], s1);
  return xd * (ws[0] * static_cast<float>(s0) + ws[1] * static_cast<float>(s1)) + wo[0] * xds[0] + wo[1] * xds[1];
}

// Which columns a block (or warp) computes, and where each comes from.
struct Columns {
  const uint8_t* w;  // the weight matrix (the expert's, when grouped)
  int32_t first;     // output column of local column 0
  int32_t count;
  bool grouped;
  const int32_t* xcol;  // activation column of each output column (null: the same column)
  STRATA_DEV int32_t XCol(int32_t c) const { return xcol ? xcol[first + c] : first + c; }
  STRATA_DEV int32_t YCol(int32_t c) const { return first + c; }
};

// --- matrix-vector --------------------------------------------------------------

// Grid (ceil(rows / warps), groups): warp w of block b computes row
// b * warps + w for kCols columns: plain, group g is columns g * kCols ..;
// grouped (kCols == 1), group g is output column g with its expert.
template <int kType, int kCols>
STRATA_DEV void MatVec(const MatMulArgs& a) {
  const int32_t warps = static_cast<int32_t>(blockDim.x / kWarpSize);
  const int32_t r = static_cast<int32_t>(blockIdx.x) * warps + static_cast<int32_t>(WarpId());
  if (r >= a.rows) return;  // the whole warp
  const int32_t g = static_cast<int32_t>(blockIdx.y);
  Columns cols;
  cols.grouped = a.group_expert != nullptr;
  cols.xcol = cols.grouped ? a.group_xcol : nullptr;
  cols.w = a.w + (cols.grouped ? static_cast<uint64_t>(a.group_expert[g]) * a.expert_stride : 0);
  cols.first = cols.grouped ? g : g * kCols;
  cols.count = cols.grouped ? 1 : (a.n - cols.first < kCols ? a.n - cols.first : kCols);
  const uint8_t* row = cols.w + static_cast<uint64_t>(r) * a.row_bytes;
  const int32_t lane = static_cast<int32_t>(LaneId());
  float acc[kCols];
  for (int c = 0; c < kCols; ++c) acc[c] = 0.0f;
  if constexpr (IsQuantized(kType)) {
    const int32_t nb = a.cols / 32;
    const XBlock* x = static_cast<const XBlock*>(a.x);
    for (int32_t j = lane; j < nb; j += static_cast<int32_t>(kWarpSize)) {
      Sub32 s;
      DecodeSub32<kType>(row, j, s);
      for (int c = 0; c < kCols; ++c) {
        if (c >= cols.count) break;
        const XBlock& xb = x[cols.XCol(c) * a.x_stride + j];
        acc[c] += SubDot(s.q, s.scale, s.offset, xb.q, xb.d, xb.ds);
      }
    }
  } else {
    const float* x = static_cast<const float*>(a.x);
    for (int32_t i = lane; i < a.cols; i += static_cast<int32_t>(kWarpSize)) {
      const float w = LoadFloat<kType>(row, i);
      for (int c = 0; c < kCols; ++c) {
        if (c >= cols.count) break;
        acc[c] += w * x[cols.XCol(c) * a.x_stride + i];
      }
    }
  }
  for (int c = 0; c < kCols; ++c) {
    const float s = WarpSum(acc[c]);
    if (lane == 0 && c < cols.count) a.y[static_cast<int64_t>(cols.YCol(c)) * a.y_stride + r] = s;
  }
}

// --- tiled ------------------------------------------------------------------------

inline constexpr int kTileRows = 64;
inline constexpr int kTileCols = 64;
inline constexpr int kTileSubs = 4;   // sub-blocks of 32 per step along the row
inline constexpr int kTileThreads = 256;

// The block's columns: plain, tile blockIdx.y of 64; grouped, tile
// blockIdx.y of the expert tiles (false past the last).
STRATA_DEV bool TileColumns(const MatMulArgs& a, Columns& cols) {
  const int32_t t = static_cast<int32_t>(blockIdx.y);
  cols.grouped = a.tile_expert != nullptr;
  cols.xcol = cols.grouped ? a.group_xcol : nullptr;
  if (cols.grouped) {
    if (t >= *a.n_tiles) return false;
    cols.w = a.w + static_cast<uint64_t>(a.tile_expert[t]) * a.expert_stride;
    cols.first = a.tile_col0[t];
    cols.count = a.tile_ncols[t];
  } else {
    cols.w = a.w;
    cols.first = t * kTileCols;
    cols.count = a.n - cols.first < kTileCols ? a.n - cols.first : kTileCols;
  }
  return true;
}

// Grid (ceil(rows / 64), column tiles), 256 threads: thread (ty, tx) = (tid /
// 16, tid % 16) computes rows ty + 16 i and columns tx + 16 j (i, j < 4).
template <int kType>
STRATA_DEV void MatMulQ(const MatMulArgs& a) {
  STRATA_SHARED(int32_t, wq, kTileRows * kTileSubs * 8);
  STRATA_SHARED(float, ws, kTileRows * kTileSubs * 2);
  STRATA_SHARED(float, wo, kTileRows * kTileSubs * 2);
  STRATA_SHARED(int32_t, xq, kTileCols * kTileSubs * 8);
  STRATA_SHARED(float, xd, kTileCols * kTileSubs);
  STRATA_SHARED(float, xds, kTileCols * kTileSubs * 2);
  Columns cols;
  if (!TileColumns(a, cols)) return;  // the whole block
  const int32_t r0 = static_cast<int32_t>(blockIdx.x) * kTileRows;
  const int32_t tid = static_cast<int32_t>(threadIdx.x);
  const int32_t ty = tid / 16, tx = tid % 16;
  const int32_t nb = a.cols / 32;
  const XBlock* x = static_cast<const XBlock*>(a.x);
  float acc[4][4];
  for (auto& row : acc)
    for (float& v : row) v = 0.0f;
  for (int32_t k0 = 0; k0 < nb; k0 += kTileSubs) {
    {  // stage: thread tid decodes row tid / 4's sub-block k0 + tid % 4, and copies one activation block
      const int32_t rr = tid / kTileSubs, ss = tid % kTileSubs, j = k0 + ss;
      const int32_t at = rr * kTileSubs + ss;
      Sub32 s;
      if (r0 + rr < a.rows && j < nb) {
        DecodeSub32<kType>(cols.w + static_cast<uint64_t>(r0 + rr) * a.row_bytes, j, s);
      } else {
        for (int32_t& v : s.q) v = 0;
        s.scale[0] = s.scale[1] = s.offset[0] = s.offset[1] = 0.0f;
      }
      for (int i = 0; i < 8; ++i) wq[at * 8 + i] = s.q[i];
      ws[at * 2] = s.scale[0], ws[at * 2 + 1] = s.scale[1];
      wo[at * 2] = s.offset[0], wo[at * 2 + 1] = s.offset[1];
      const int32_t cc = rr;
      if (cc < cols.count && j < nb) {
        const XBlock& xb = x[cols.XCol(cc) * a.x_stride + j];
        for (int i = 0; i < 8; ++i) xq[at * 8 + i] = xb.q[i];
        xd[at] = xb.d;
        xds[at * 2] = xb.ds[0], xds[at * 2 + 1] = xb.ds[1];
      } else {
        for (int i = 0; i < 8; ++i) xq[at * 8 + i] = 0;
        xd[at] = 0.0f;
        xds[at * 2] = xds[at * 2 + 1] = 0.0f;
      }
    }
    __syncthreads();
    for (int32_t ss = 0; ss < kTileSubs; ++ss) {
      for (int i = 0; i < 4; ++i) {
        const int32_t wat = (ty + 16 * i) * kTileSubs + ss;
        for (int jj = 0; jj < 4; ++jj) {
          const int32_t xat = (tx + 16 * jj) * kTileSubs + ss;
          acc[i][jj] += SubDot(&wq[wat * 8], &ws[wat * 2], &wo[wat * 2], &xq[xat * 8], xd[xat], &xds[xat * 2]);
        }
      }
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int32_t r = r0 + ty + 16 * i;
    if (r >= a.rows) continue;
    for (int jj = 0; jj < 4; ++jj) {
      const int32_t c = tx + 16 * jj;
      if (c < cols.count) a.y[static_cast<int64_t>(cols.YCol(c)) * a.y_stride + r] = acc[i][jj];
    }
  }
}

// Float weights, float activations: 64 x 64 tiles, 32 elements per step.
template <int kType>
STRATA_DEV void MatMulF(const MatMulArgs& a) {
  constexpr int kStep = 32;
  STRATA_SHARED(float, wt, kTileRows * (kStep + 1));
  STRATA_SHARED(float, xt, kTileCols * (kStep + 1));
  Columns cols;
  if (!TileColumns(a, cols)) return;
  const int32_t r0 = static_cast<int32_t>(blockIdx.x) * kTileRows;
  const int32_t tid = static_cast<int32_t>(threadIdx.x);
  const int32_t ty = tid / 16, tx = tid % 16;
  const float* x = static_cast<const float*>(a.x);
  float acc[4][4];
  for (auto& row : acc)
    for (float& v : row) v = 0.0f;
  for (int32_t k0 = 0; k0 < a.cols; k0 += kStep) {
    for (int32_t e = tid; e < kTileRows * kStep; e += kTileThreads) {
      const int32_t rr = e / kStep, kk = e % kStep;
      const int32_t r = r0 + rr, k = k0 + kk;
      wt[rr * (kStep + 1) + kk] =
          r < a.rows && k < a.cols ? LoadFloat<kType>(cols.w + static_cast<uint64_t>(r) * a.row_bytes, k) : 0.0f;
      xt[rr * (kStep + 1) + kk] = rr < cols.count && k < a.cols ? x[cols.XCol(rr) * a.x_stride + k] : 0.0f;
    }
    __syncthreads();
    for (int32_t kk = 0; kk < kStep; ++kk)
      for (int i = 0; i < 4; ++i) {
        const float w = wt[(ty + 16 * i) * (kStep + 1) + kk];
        for (int jj = 0; jj < 4; ++jj) acc[i][jj] += w * xt[(tx + 16 * jj) * (kStep + 1) + kk];
      }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i) {
    const int32_t r = r0 + ty + 16 * i;
    if (r >= a.rows) continue;
    for (int jj = 0; jj < 4; ++jj) {
      const int32_t c = tx + 16 * jj;
      if (c < cols.count) a.y[static_cast<int64_t>(cols.YCol(c)) * a.y_stride + r] = acc[i][jj];
    }
  }
}

#define STRATA_MATMUL_Q_KERNELS(id, NAME, elems, bytes)                         \
  STRATA_KERNEL(strata_mmv1_##NAME, MatMulArgs) { MatVec<id, 1>(a); }           \
  STRATA_KERNEL(strata_mmv8_##NAME, MatMulArgs) { MatVec<id, 8>(a); }           \
  STRATA_KERNEL_BOUNDED(strata_mmq_##NAME, MatMulArgs, kTileThreads) { MatMulQ<id>(a); }
#define STRATA_MATMUL_F_KERNELS(id, NAME, elems, bytes)                         \
  STRATA_KERNEL(strata_mmv1_##NAME, MatMulArgs) { MatVec<id, 1>(a); }           \
  STRATA_KERNEL(strata_mmv8_##NAME, MatMulArgs) { MatVec<id, 8>(a); }           \
  STRATA_KERNEL_BOUNDED(strata_mmq_##NAME, MatMulArgs, kTileThreads) { MatMulF<id>(a); }
STRATA_GPU_QUANT_TYPES(STRATA_MATMUL_Q_KERNELS)
STRATA_GPU_FLOAT_TYPES(STRATA_MATMUL_F_KERNELS)
#undef STRATA_MATMUL_Q_KERNELS
#undef STRATA_MATMUL_F_KERNELS

STRATA_GPU_END
