#pragma once
// The loop structure shared by every x86 kernel: tiles of R weight rows x C
// activation columns, each tile walking the blocks of its rows once.
//
// A kernel type K describes one weight type:
//   kBlockElems, kBlockBytes, kActBlockBytes   block geometry (weight, activation)
//   kMatVecRows            R for one activation column (decode)
//   kTileRows, kTileCols   R x C for several columns (prefill)
//   AccZero() (optional)   a zero accumulator vector, __m256 unless given
//   Block<R, C>(w, w_stride, a, a_stride, acc)
//       adds block b of R rows (row r at w + r * w_stride) times block b of C
//       columns (column c at a + c * a_stride) into the float lanes of
//       acc[r][c]. This is where a kernel unpacks each weight block once and
//       uses it for all C columns.
//   kHasTail, Tail<R, C>(w, ws, a, as, k0, k, out)   (float types only)
//       adds elements [k0, k) that do not fill a block.
//   kPieceBlocks (optional)
//       the row is summed in pieces of this many blocks: each piece's
//       accumulators from zero, their lanes summed at its end and added to
//       the row's result. Kernels that must give the bits of a panel kernel
//       (x86_panel_kernels.h), which walks rows in such pieces, set it.
// The driver sums each accumulator's lanes (HorizontalSum) at the end of the
// row (of each piece).
// Include only from *_avx2.cc / *_avx512.cc (see x86_simd.h).

#include "runtime/kernels/gemm.h"
#include "runtime/kernels/x86_simd.h"

namespace strata::kernels::STRATA_KERNEL_NS {
namespace {

// Bytes of weights in flight per tile (split over its rows): about 4 KiB
// measured best on the development machine (1-2 KiB and 8 KiB were slower).
constexpr int64_t kPrefetchTileBytes = 4096;
// How far ahead of the tile's stream a matrix-vector product prefetches:
// 8 KiB measured best of 2-16 KiB; prefetching within each row instead, as
// tiles of several columns do, reached 21-27 GB/s of the 42-44 two threads
// can read (bench/results/kernels.md).
constexpr int64_t kMatVecPrefetchBytes = 8192;

// A zero accumulator of kernel K: K::AccZero() (an __m512 for the 512-bit
// kernels) or, by default, an __m256. (Found by overload, not by a type
// trait: GCC drops the vector attributes of a type used as a template argument.)
template <class K>
inline auto AccZeroOf(int) -> decltype(K::AccZero()) {
  return K::AccZero();
}
template <class K>
inline __m256 AccZeroOf(long) {
  return _mm256_setzero_ps();
}

// One column (decode): each weight byte is read once, so the rows are a
// stream. A tile's R rows lie one after the other, so at block b the prefetch
// front moves through memory R blocks per block, kMatVecPrefetchBytes ahead
// of w (the tile's first row): across the end of the tile into the next one,
// which is where short rows (a 2048-wide Q6_K row is 1,680 bytes) need it.
template <class K, int R>
inline void MatVecPrefetch(const uint8_t* w, int64_t b) {
  const uint8_t* pf = w + kMatVecPrefetchBytes + b * (R * K::kBlockBytes);
  STRATA_UNROLL for (int off = 0; off < R * K::kBlockBytes; off += 64)
    _mm_prefetch(reinterpret_cast<const char*>(pf + off), _MM_HINT_T0);
}

template <class K, int R, int C>
inline void Tile(const GemmArgs& g, int64_t r0, int64_t c0) {
  decltype(AccZeroOf<K>(0)) acc[R][C];
  STRATA_UNROLL for (int r = 0; r < R; ++r) {
    STRATA_UNROLL for (int c = 0; c < C; ++c) acc[r][c] = AccZeroOf<K>(0);
  }
  const uint8_t* w = g.w + static_cast<uint64_t>(r0) * g.w_row_bytes;
  const uint8_t* a = g.act + static_cast<uint64_t>(c0) * g.act_row_bytes;
  const int64_t nb = g.k / K::kBlockElems;
  // Blocks [.., piece_end) are the current piece; the row's result so far in
  // out once a piece is done (the whole row is one piece unless K says).
  float out[R][C];
  int64_t piece_end = nb;
  bool first_piece = true;
  if constexpr (requires { K::kPieceBlocks; }) piece_end = std::min<int64_t>(nb, K::kPieceBlocks);
  for (int64_t b = 0; b < nb; ++b) {
    // Software prefetch: a matrix is often a single MoE expert of well under
    // a megabyte, too short for the hardware prefetcher to ramp up on its
    // own. (Prefetches never fault, so running past the end of the rows is
    // harmless.)
    if constexpr (C == 1) {
      MatVecPrefetch<K, R>(w, b);
    } else {
      STRATA_UNROLL for (int r = 0; r < R; ++r) {
        STRATA_UNROLL for (int off = 0; off < K::kBlockBytes; off += 64)
          _mm_prefetch(reinterpret_cast<const char*>(w + r * g.w_row_bytes + b * K::kBlockBytes + kPrefetchTileBytes / R + off),
                       _MM_HINT_T0);
      }
    }
    K::template Block<R, C>(w + b * K::kBlockBytes, g.w_row_bytes, a + b * K::kActBlockBytes, g.act_row_bytes, acc);
    if constexpr (requires { K::kPieceBlocks; }) {
      if (b + 1 == piece_end && piece_end < nb) {
        STRATA_UNROLL for (int r = 0; r < R; ++r) {
          STRATA_UNROLL for (int c = 0; c < C; ++c) {
            const float sum = HorizontalSum(acc[r][c]);
            out[r][c] = first_piece ? sum : out[r][c] + sum;
            acc[r][c] = AccZeroOf<K>(0);
          }
        }
        first_piece = false;
        piece_end = std::min<int64_t>(nb, piece_end + K::kPieceBlocks);
      }
    }
  }
  STRATA_UNROLL for (int r = 0; r < R; ++r) {
    STRATA_UNROLL for (int c = 0; c < C; ++c) {
      const float sum = HorizontalSum(acc[r][c]);
      out[r][c] = first_piece ? sum : out[r][c] + sum;
    }
  }
  if constexpr (K::kHasTail) {
    if (nb * K::kBlockElems < g.k) K::template Tail<R, C>(w, g.w_row_bytes, a, g.act_row_bytes, nb * K::kBlockElems, g.k, out);
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) g.y[(c0 + c) * g.ldy + r0 + r] = out[r][c];
}

// One activation column, K::kGroupRows rows whose accumulators share vectors
// (decode). A kernel that provides it computes, lane by lane, the same float
// operations in the same order as Block<kGroupRows, 1>, so a row's bits are
// those of Tile<K, R, 1>; what it saves is the per-row work between blocks
// (folds, conversions, scale products), done for all the rows at once.
//   kGroupRows
//   GroupZero()                                a zero accumulator
//   GroupBlock(w, w_stride, a, acc)            block b of the rows times block b of the column
//   GroupSums(acc, float (&sums)[kGroupRows])  each row's lanes summed as HorizontalSum would
// The stream prefetch and the pieces are those of Tile<K, R, 1>.
template <class K>
inline void GroupTile(const GemmArgs& g, int64_t r0) {
  constexpr int R = K::kGroupRows;
  static_assert(!K::kHasTail, "a grouped kernel covers whole blocks");
  auto acc = K::GroupZero();
  const uint8_t* w = g.w + static_cast<uint64_t>(r0) * g.w_row_bytes;
  const int64_t nb = g.k / K::kBlockElems;
  float out[R], sums[R];
  int64_t piece_end = nb;
  bool first_piece = true;
  if constexpr (requires { K::kPieceBlocks; }) piece_end = std::min<int64_t>(nb, K::kPieceBlocks);
  auto add_piece = [&] {
    K::GroupSums(acc, sums);
    STRATA_UNROLL for (int r = 0; r < R; ++r) out[r] = first_piece ? sums[r] : out[r] + sums[r];
    first_piece = false;
  };
  for (int64_t b = 0; b < nb; ++b) {
    MatVecPrefetch<K, R>(w, b);
    K::GroupBlock(w + b * K::kBlockBytes, g.w_row_bytes, g.act + b * K::kActBlockBytes, acc);
    if (b + 1 == piece_end && piece_end < nb) {
      add_piece();
      acc = K::GroupZero();
      if constexpr (requires { K::kPieceBlocks; }) piece_end = std::min<int64_t>(nb, piece_end + K::kPieceBlocks);
    }
  }
  add_piece();
  for (int r = 0; r < R; ++r) g.y[r0 + r] = out[r];
}

// The last `rem` (< kC) columns of rows [r0, r0 + R): one tile of exactly rem columns.
template <class K, int R, int kC>
inline void ColumnTail(const GemmArgs& g, int64_t r0, int64_t c0, int64_t rem) {
  if constexpr (kC > 0) {
    if (rem == kC) {
      Tile<K, R, kC>(g, r0, c0);
    } else {
      ColumnTail<K, R, kC - 1>(g, r0, c0, rem);
    }
  }
}

template <class K, int R>
inline void AllColumns(const GemmArgs& g, int64_t r0) {
  constexpr int kC = K::kTileCols;
  int64_t c = 0;
  for (; c + kC <= g.cols; c += kC) Tile<K, R, kC>(g, r0, c);
  ColumnTail<K, R, kC - 1>(g, r0, c, g.cols - c);
}

// The GemmFn of kernel type K.
template <class K>
void Gemm(const GemmArgs& g) {
  if (g.cols == 1) {
    // The rows' first kMatVecPrefetchBytes, which the tiles' stream prefetch
    // (that far ahead of each block) never covers: a task of a batch (a
    // chunk of one expert's rows) would start on demand misses.
    const uint64_t head = std::min<uint64_t>(kMatVecPrefetchBytes, static_cast<uint64_t>(g.rows) * g.w_row_bytes);
    for (uint64_t off = 0; off < head; off += 64) _mm_prefetch(reinterpret_cast<const char*>(g.w + off), _MM_HINT_T0);
    constexpr int kR = K::kMatVecRows;
    int64_t r = 0;
    if constexpr (requires { K::kGroupRows; }) {
      for (; r + K::kGroupRows <= g.rows; r += K::kGroupRows) GroupTile<K>(g, r);
    }
    for (; r + kR <= g.rows; r += kR) Tile<K, kR, 1>(g, r, 0);
    for (; r < g.rows; ++r) Tile<K, 1, 1>(g, r, 0);
    return;
  }
  constexpr int kR = K::kTileRows;
  int64_t r = 0;
  for (; r + kR <= g.rows; r += kR) AllColumns<K, kR>(g, r);
  for (; r < g.rows; ++r) AllColumns<K, 1>(g, r);
}

}  // namespace
}  // namespace strata::kernels::STRATA_KERNEL_NS
