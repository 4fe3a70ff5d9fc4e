// The tiled int8 product on tensor cores: the same product as matmul.cu's
// MatMulQ (the same shared-memory tiles, the same per-16 scales and offsets),
// with each 16-wide group's integer dot products done by
// mma.sync.m16n8k16.s8 (CUDA compute capability 8.0 and later).
//
// The instruction has no host form and no HIP form: there, and on CUDA
// devices before 8.0, the kernel's body is MatMulQ itself (its portable
// twin), so every image has the kernel and the software GPU runs the twin.
// The backend launches it only where DeviceInfo::int8_mma is set, and the
// device check (scripts/device-check.sh) compares it with strata_mmq_* on a
// real GPU.
//
// Fragments of m16n8k16 with s8 inputs (PTX ISA, "Matrix Fragments for
// mma.m16n8k16"), lane = 4 * g + q: A (16 x 16, row-major) a0 = row g, a1 =
// row g + 8, each the four bytes of k 4q..4q+3; B (16 x 8, column-major) b0 =
// column g, bytes of k 4q..4q+3; C (16 x 8, s32) c0, c1 = row g, columns 2q,
// 2q + 1; c2, c3 = row g + 8, the same columns.

#include "runtime/gpu/kernels/matmul.cu"

STRATA_GPU_BEGIN

#if defined(STRATA_GPU_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define STRATA_HAS_INT8_MMA 1
#endif

#if defined(STRATA_HAS_INT8_MMA)
STRATA_DEV void MmaS8(int32_t a0, int32_t a1, int32_t b0, int32_t (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"
      : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
      : "r"(a0), "r"(a1), "r"(b0), "r"(0), "r"(0), "r"(0), "r"(0));
}

// 8 warps over the 64 x 64 tile: warp w covers rows 16 (w % 4) .. + 16 and
// columns 32 (w / 4) .. + 32 (four 8-column MMA tiles).
template <int kType>
STRATA_DEV void MatMulQMma(const MatMulArgs& a) {
  STRATA_SHARED(int32_t, wq, kTileRows * kTileSubs * 8);
  STRATA_SHARED(float, ws, kTileRows * kTileSubs * 2);
  STRATA_SHARED(float, wo, kTileRows * kTileSubs * 2);
  STRATA_SHARED(int32_t, xq, kTileCols * kTileSubs * 8);
  STRATA_SHARED(float, xd, kTileCols * kTileSubs);
  STRATA_SHARED(float, xds, kTileCols * kTileSubs * 2);
  Columns cols;
  if (!TileColumns(a, cols)) return;
  const int32_t r0 = static_cast<int32_t>(blockIdx.x) * kTileRows;
  const int32_t tid = static_cast<int32_t>(threadIdx.x);
  const int32_t warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
  const int32_t wr = 16 * (warp % 4), wc = 32 * (warp / 4);
  const int32_t nb = a.cols / 32;
  const XBlock* x = static_cast<const XBlock*>(a.x);
  float acc[4][4];  // [n tile][c register]
  for (auto& t : acc)
    for (float& v : t) v = 0.0f;
  for (int32_t k0 = 0; k0 < nb; k0 += kTileSubs) {
    {  // the staging of MatMulQ
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
      if (rr < cols.count && j < nb) {
        const XBlock& xb = x[cols.XCol(rr) * a.x_stride + j];
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
    for (int32_t ss = 0; ss < kTileSubs; ++ss)
      for (int32_t h = 0; h < 2; ++h) {  // the two 16-wide groups of a sub-block
        const int32_t ra = (wr + g) * kTileSubs + ss, rb = (wr + g + 8) * kTileSubs + ss;
        const int32_t a0 = wq[ra * 8 + 4 * h + q], a1 = wq[rb * 8 + 4 * h + q];
        const float sa = ws[ra * 2 + h], sb = ws[rb * 2 + h], oa = wo[ra * 2 + h], ob = wo[rb * 2 + h];
        for (int32_t nt = 0; nt < 4; ++nt) {
          const int32_t cb = (wc + 8 * nt + g) * kTileSubs + ss;
          int32_t c[4];
          MmaS8(a0, a1, xq[cb * 8 + 4 * h + q], c);
          for (int32_t i = 0; i < 4; ++i) {
            const int32_t col = (wc + 8 * nt + 2 * q + (i & 1)) * kTileSubs + ss;
            const float s = i < 2 ? sa : sb, o = i < 2 ? oa : ob;
            acc[nt][i] += s * xd[col] * static_cast<float>(c[i]) + o * xds[col * 2 + h];
          }
        }
      }
    __syncthreads();
  }
  for (int32_t nt = 0; nt < 4; ++nt)
    for (int32_t i = 0; i < 4; ++i) {
      const int32_t r = r0 + wr + g + (i < 2 ? 0 : 8);
      const int32_t c = wc + 8 * nt + 2 * q + (i & 1);
      if (r < a.rows && c < cols.count) a.y[static_cast<int64_t>(cols.YCol(c)) * a.y_stride + r] = acc[nt][i];
    }
}
#else
// No int8 tensor cores here: the portable twin.
template <int kType>
STRATA_DEV void MatMulQMma(const MatMulArgs& a) {
  MatMulQ<kType>(a);
}
#endif

#define STRATA_MATMUL_MMA_KERNELS(id, NAME, elems, bytes) \
  STRATA_KERNEL_BOUNDED(strata_mmq_mma_##NAME, MatMulArgs, kTileThreads) { MatMulQMma<id>(a); }
STRATA_GPU_QUANT_TYPES(STRATA_MATMUL_MMA_KERNELS)
#undef STRATA_MATMUL_MMA_KERNELS

STRATA_GPU_END
