#pragma once
// Panel kernels for products of several activation columns (prefill, MoE
// experts with many tokens) at the AVX-512 level: Q4_K, Q5_K and Q8_0, and
// through Q8_0's panels the types that decode to its blocks (Q4_0, Q5_0,
// IQ4_NL, MXFP4).
//
// The tile kernels (x86_zmm_kernels.h) unpack a weight block once per tile of
// 2 rows x 4 columns (Q8_0: 4 x 4), multiply code bytes pairwise (vpmaddubsw)
// and apply each 32-element sub-block's scale (vpdpwssd): two 512-bit integer
// operations per 64 products, and the unpacking again for every 4 columns.
// Here a stripe of rows is first rearranged, once per call, into a panel in
// L1/L2, and every column then costs 1.5 integer operations per 64 products:
//
//   codes   for 4 rows ("a quad") and 16 consecutive elements, one 64-byte
//           vector: bytes 16r .. 16r + 15 are row r's codes (Q4_K 0-15, Q5_K
//           0-31). Its int32 lane 4r + j holds elements 4j .. 4j + 3 of row
//           r, so vpdpbusd against the column's 16 activation bytes
//           broadcast to the four 128-bit lanes gives each lane a 4-product
//           partial sum of its row; two of them cover a sub-block.
//   scales  per sub-block, each lane's row's scale in the low int16 of the
//           lane and 0 in the high one.
//
// A sub-block's partial sums (8 products per lane) fit in int16: |sum| <=
// 8 * 31 * 128 < 32768. So vpdpwssd against the scales vector multiplies each
// lane's sum by its row's scale exactly (the high halves meet the zero) and
// adds it to the block sum: integer sums identical to the tile kernels' and
// the reference's, summed in a different order of lanes. The mins go through
// the activation block sums, as in the tile kernels. Lane 4r + j of every
// vector belongs to row r, so a row's result is the sum of one 128-bit lane.
//
// Q8_0 (32-element blocks, one scale per block) uses the same code vectors
// with the signed weights as they are; the column's bytes become unsigned
// (a + 128, one xor per column and block) and the panel carries, per lane,
// -128 times the sum of the lane's 8 weights as the starting value of the
// block's two vpdpbusd: the block's integer sum exactly, then one convert
// and one multiply-add by d_w * d_a. 5 operations per 128 products and quad
// against the tile kernel's 5 per 64.
//
// Q6_K stays on its tile kernel: with 16-element sub-blocks a panel needs one
// scale operation per vpdpbusd, two operations per 64 products as the tile
// kernel, and measured no faster (bench/results/kernels.md).
//
// Panels are built per stripe of 8 (or 4) rows and a piece of 2,048 elements
// of the row (rows are walked in pieces of that length, the outputs
// accumulated), in a stack buffer: no allocation.
//
// One order at every column count: below kPanelMinCols columns (decode, small
// experts) the tile kernels run, and they sum in the panels' order (their 16
// integer lanes folded into the panels' 4 per row, the same float lanes and
// pieces; Q8_0: even and odd blocks apart, the odd last block of a row by the
// 256-bit kernel here too), so a column's result does not depend on how many
// columns share its product (kernels_test AColumnsBitsDoNotDependOnTheColumnCount).
// Include only from *_avx512.cc, after x86_zmm_kernels.h.

#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VNNI__)
#error "x86_panel_kernels.h needs the AVX-512 flags"
#endif

#include "runtime/kernels/x86_gemm_driver.h"
#include "runtime/kernels/x86_zmm_kernels.h"

namespace strata::kernels::STRATA_KERNEL_NS {
namespace {

// Columns from which a product runs on panels (below, the tile kernels):
// at 8 columns both measured the same, at 32 the panels 1.4-1.5x faster.
constexpr int64_t kPanelMinCols = 8;
constexpr int kPanelTileCols = 4;

// One quad (4 rows) x one 256-element weight block.
struct alignas(64) QuadBlock {
  uint8_t codes[16][64];  // 16 elements per vector, see above
  int32_t scales[8][16];  // per sub-block: the row's scale as the low int16 of each of its lanes
  int32_t mins[16];        // lane 4r + j: row r's (m[2j], m[2j + 1]) as int16, against sub-block sums 2j, 2j + 1
  float d[16];             // the row's d in each of its lanes
  float dmin[16];          // the row's dmin in each of its lanes
};

// Two rows' 32 bytes in one vector: rows r and r + 1 of x.
// (The masked forms of the lane moves, here and below: the unmasked ones
// take an undefined source that GCC 12 reports as -Wuninitialized.)
inline __m512i RowPair(const uint8_t* const (&x)[4], int r, int offset) {
  const __m512i lo = _mm512_maskz_loadu_epi64(0x0F, x[r] + offset);  // masked: reads 32 bytes
  return _mm512_mask_broadcast_i64x4(lo, 0xF0, LoadU256(x[r + 1] + offset));
}
// Code vectors `chunk` and `chunk + 1` from 32 code bytes per row, rows 0|1
// in v01 and 2|3 in v23: whole 64-byte stores (stores of 16-byte pieces that
// the kernel then read as 64 bytes cost as much as the products).
inline void PutCodes(QuadBlock& qb, int chunk, __m512i v01, __m512i v23) {
  _mm512_storeu_si512(qb.codes[chunk], _mm512_mask_shuffle_i64x2(v01, 0xFF, v01, v23, _MM_SHUFFLE(2, 0, 2, 0)));
  _mm512_storeu_si512(qb.codes[chunk + 1], _mm512_mask_shuffle_i64x2(v01, 0xFF, v01, v23, _MM_SHUFFLE(3, 1, 3, 1)));
}
inline void PutVector(int32_t* lanes, __m512i v) { _mm512_storeu_si512(lanes, v); }
// Lanes 4r .. 4r + 3 set to v[r].
inline void PutRowFloats(float* lanes, const float (&v)[4]) {
  _mm512_storeu_ps(lanes, _mm512_setr_ps(v[0], v[0], v[0], v[0], v[1], v[1], v[1], v[1], v[2], v[2], v[2], v[2], v[3],
                                         v[3], v[3], v[3]));
}
// Byte shuffle within 128-bit lanes (lane r holds row r's bytes): each dword
// of the result takes the bytes the 4-byte pattern names (0x80: zero).
inline __m512i Pick(__m512i rows, uint32_t pattern) {
  return _mm512_shuffle_epi8(rows, _mm512_set1_epi32(static_cast<int32_t>(pattern)));
}

// Q4_K / Q5_K: value = d * sc[s] * q - dmin * m[s], 32-element sub-blocks.
template <int Q, int C>
void KQuantPanelTile(const QuadBlock* panel, int64_t nb, const uint8_t* a, uint64_t as, float* y, int64_t ldy,
                     bool accumulate);

template <bool kFifthBit>
struct Q45KPanel {
  using Block = QuadBlock;
  static constexpr int kBlockBytes = kFifthBit ? 176 : 144;
  static constexpr int64_t kElems = 256, kActBlockBytes = 292;
  // Weight blocks of a row per panel: 8 (2,048 elements) keeps a panel of 8
  // rows at 27 KiB (16 x 1,728 bytes).
  static constexpr int64_t kPieceBlocks = 8;
  static_assert(kPieceBlocks == Q45KKernelZmm<kFifthBit>::kPieceBlocks, "the tile kernel sums in the panels' pieces");
  static int64_t PanelBlocks(int64_t nb_total) { return nb_total; }
  static void Finish(const GemmArgs&, int64_t, int64_t) {}
  template <int Q, int C>
  static void Tile(const QuadBlock* panel, int64_t nb, const uint8_t* a, uint64_t as, float* y, int64_t ldy,
                   bool accumulate) {
    KQuantPanelTile<Q, C>(panel, nb, a, as, y, ldy, accumulate);
  }
  // Block b of the 4 rows at x[0..3].
  static void Build(const uint8_t* const (&x)[4], QuadBlock& qb) {
    constexpr int kQs = kFifthBit ? 48 : 16;
    uint64_t scales[4], mins[4];
    float d[4], dmin[4];
    for (int r = 0; r < 4; ++r) {
      UnpackScalesMinsQ4K(x[r] + 4, &scales[r], &mins[r]);
      d[r] = LoadHalf(x[r]);
      dmin[r] = LoadHalf(x[r] + 2);
    }
    // 128-bit lane r: row r's 8 scales, then its 8 mins.
    alignas(64) uint64_t lanes[8];
    for (int r = 0; r < 4; ++r) lanes[2 * r] = scales[r], lanes[2 * r + 1] = mins[r];
    const __m512i v = _mm512_loadu_si512(lanes);
    Unroll<8>([&](auto s_const) {
      constexpr uint32_t s = decltype(s_const)::value;
      PutVector(qb.scales[s], Pick(v, 0x80808000u | s));
    });
    PutVector(qb.mins, _mm512_shuffle_epi8(v, _mm512_set_epi32(0x800F800E, 0x800D800C, 0x800B800A, 0x80098008,
                                                                0x800F800E, 0x800D800C, 0x800B800A, 0x80098008,
                                                                0x800F800E, 0x800D800C, 0x800B800A, 0x80098008,
                                                                0x800F800E, 0x800D800C, 0x800B800A, 0x80098008)));
    PutRowFloats(qb.d, d);
    PutRowFloats(qb.dmin, dmin);
    const __m512i low4 = Set1I8x64(0x0F), bit4 = Set1I8x64(0x10);
    __m512i qh[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    if constexpr (kFifthBit) qh[0] = RowPair(x, 0, 16), qh[1] = RowPair(x, 2, 16);
    Unroll<4>([&](auto j_const) {  // elements 64j .. 64j + 63: sub-blocks 2j (low nibbles) and 2j + 1
      constexpr int j = decltype(j_const)::value;
      __m512i lo[2], hi[2];
      for (int p = 0; p < 2; ++p) {
        const __m512i q = RowPair(x, 2 * p, kQs + 32 * j);
        lo[p] = _mm512_and_si512(q, low4);
        hi[p] = _mm512_and_si512(_mm512_srli_epi16(q, 4), low4);
        if constexpr (kFifthBit) {  // bit 2j (2j + 1) of each qh byte, moved to bit 4
          lo[p] = _mm512_or_si512(lo[p], _mm512_and_si512(_mm512_slli_epi16(_mm512_srli_epi16(qh[p], 2 * j), 4), bit4));
          hi[p] = _mm512_or_si512(hi[p], _mm512_and_si512(_mm512_slli_epi16(_mm512_srli_epi16(qh[p], 2 * j + 1), 4), bit4));
        }
      }
      PutCodes(qb, 4 * j, lo[0], lo[1]);
      PutCodes(qb, 4 * j + 2, hi[0], hi[1]);
    });
  }
};

inline __m512i Broadcast128(const uint8_t* p) { return _mm512_broadcast_i32x4(LoadU128(p)); }
// Unaligned loads throughout: MinGW-w64 GCC does not realign the stack for
// over-aligned locals in every case.
inline __m512i LoadLanes(const int32_t* p) { return _mm512_loadu_si512(p); }

// Row r of a quad is 128-bit lane r of its accumulators: sum its 4 floats
// into y (column c at y + c * ldy) in HorizontalSum's order, the tile
// kernels', adding (accumulate) or writing. (Through memory: GCC 12's
// in-register float permutes warn -Wuninitialized in its headers.)
template <int Q, int C>
inline void PutQuadRows(const __m512 (&acc)[Q][C], float* y, int64_t ldy, bool accumulate) {
  STRATA_UNROLL for (int q = 0; q < Q; ++q) {
    STRATA_UNROLL for (int c = 0; c < C; ++c) {
      float lanes[16];
      _mm512_storeu_ps(lanes, acc[q][c]);
      float* out = y + c * ldy + 4 * q;
      for (int r = 0; r < 4; ++r) {
        const float v = (lanes[4 * r] + lanes[4 * r + 2]) + (lanes[4 * r + 1] + lanes[4 * r + 3]);
        out[r] = accumulate ? out[r] + v : v;
      }
    }
  }
}

// Columns [c0, c0 + C) against quads [0, Q) of a panel of nb blocks (the same
// for Q4_K and Q5_K: only building a panel depends on the type)
// (panel[q * nb + b]); activation block b of column c at a + c * as + b * 292.
// Adds (accumulate) or writes the results to y rows r0 .. r0 + 4Q - 1.
template <int Q, int C>
void KQuantPanelTile(const QuadBlock* panel, int64_t nb, const uint8_t* a, uint64_t as, float* y, int64_t ldy, bool accumulate) {
  __m512 acc[Q][C];
  STRATA_UNROLL for (int q = 0; q < Q; ++q) {
    STRATA_UNROLL for (int c = 0; c < C; ++c) acc[q][c] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* ab = a + b * 292;
    __m512i blk[Q][C];
    STRATA_UNROLL for (int q = 0; q < Q; ++q) {
      STRATA_UNROLL for (int c = 0; c < C; ++c) blk[q][c] = _mm512_setzero_si512();
    }
    for (int s = 0; s < 8; ++s) {
      __m512i codes[Q][2];
      STRATA_UNROLL for (int q = 0; q < Q; ++q) {
        codes[q][0] = _mm512_loadu_si512(panel[q * nb + b].codes[2 * s]);
        codes[q][1] = _mm512_loadu_si512(panel[q * nb + b].codes[2 * s + 1]);
      }
      STRATA_UNROLL for (int c = 0; c < C; ++c) {
        const uint8_t* qa = ActQ(ab + c * as) + 32 * s;
        const __m512i a0 = Broadcast128(qa), a1 = Broadcast128(qa + 16);
        STRATA_UNROLL for (int q = 0; q < Q; ++q) {
          const __m512i t = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), codes[q][0], a0), codes[q][1], a1);
          blk[q][c] = _mm512_dpwssd_epi32(blk[q][c], t, LoadLanes(panel[q * nb + b].scales[s]));
        }
      }
    }
    STRATA_UNROLL for (int c = 0; c < C; ++c) {
      const uint8_t* ac = ab + c * as;
      const __m512 da = _mm512_set1_ps(ActD(ac));
      const __m256i bs = ActBsums(ac);  // 16 int16: sums of 16 elements
      // Sums of the 32-element sub-blocks, in every 128-bit lane.
      const __m512i sums32 =
          _mm512_broadcast_i32x4(_mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1)));
      STRATA_UNROLL for (int q = 0; q < Q; ++q) {
        const QuadBlock& qb = panel[q * nb + b];
        const __m512i mins = _mm512_dpwssd_epi32(_mm512_setzero_si512(), LoadLanes(qb.mins), sums32);
        acc[q][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(blk[q][c]), _mm512_mul_ps(_mm512_loadu_ps(qb.d), da), acc[q][c]);
        acc[q][c] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(mins), _mm512_mul_ps(_mm512_loadu_ps(qb.dmin), da), acc[q][c]);
      }
    }
  }
  PutQuadRows<Q, C>(acc, y, ldy, accumulate);
}

// Q8_0: value = d * q, 32-element blocks; one quad x one block.
struct alignas(64) Q8Quad {
  uint8_t codes[2][64];  // elements 0-15 and 16-31, as QuadBlock's codes (signed bytes)
  int32_t start[16];     // lane 4r + j: -128 * (the sum of row r's 8 weights that lane meets)
  float d[16];           // the row's d in each of its lanes
};

// Also the types that decode to such blocks (V: Q8_0Values, NibbleValues<F>
// of x86_zmm_kernels.h): Build decodes each row's block to its 32 signed
// values once, and the tile is Q8_0's.
template <class V>
struct Int8BlockPanel {
  using Block = Q8Quad;
  using TileKernel = Int8BlockKernelZmm<V>;
  static constexpr int kBlockBytes = V::kBytes;
  static constexpr int64_t kElems = 32, kActBlockBytes = 34;
  // 64 blocks (2,048 elements): a panel of 8 rows is 24 KiB (128 x 192 bytes).
  static constexpr int64_t kPieceBlocks = 64;
  static_assert(kPieceBlocks == 2 * TileKernel::kPieceBlocks, "the tile kernel sums in the panels' pieces");

  static void Build(const uint8_t* const (&x)[4], Q8Quad& qb) {
    const __m512i v01 = V::SignedPair(x[0], x[1]), v23 = V::SignedPair(x[2], x[3]);
    const __m512i c0 = _mm512_shuffle_i64x2(v01, v23, _MM_SHUFFLE(2, 0, 2, 0));
    const __m512i c1 = _mm512_shuffle_i64x2(v01, v23, _MM_SHUFFLE(3, 1, 3, 1));
    _mm512_storeu_si512(qb.codes[0], c0);
    _mm512_storeu_si512(qb.codes[1], c1);
    const __m512i m128 = Set1I8x64(0x80);  // 128 as the unsigned operand
    const __m512i sum128 = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), m128, c0), m128, c1);
    PutVector(qb.start, _mm512_sub_epi32(_mm512_setzero_si512(), sum128));
    const float d[4] = {V::Scale(x[0]), V::Scale(x[1]), V::Scale(x[2]), V::Scale(x[3])};
    PutRowFloats(qb.d, d);
  }

  // As KQuantPanelTile; activation block b of column c at a + c * as + b * 34.
  // Even and odd blocks accumulate apart and meet at the end, as in the tile
  // kernel (Q8_0KernelZmm: a vector holds a pair of blocks), so that both
  // give the same bits; nb is even.
  template <int Q, int C>
  static void Tile(const Q8Quad* panel, int64_t nb, const uint8_t* a, uint64_t as, float* y, int64_t ldy,
                   bool accumulate) {
    __m512 acc[2][Q][C];
    STRATA_UNROLL for (int h = 0; h < 2; ++h) {
      STRATA_UNROLL for (int q = 0; q < Q; ++q) {
        STRATA_UNROLL for (int c = 0; c < C; ++c) acc[h][q][c] = _mm512_setzero_ps();
      }
    }
    const __m512i flip = Set1I8x64(0x80);
    for (int64_t b2 = 0; b2 < nb; b2 += 2) {
      STRATA_UNROLL for (int h = 0; h < 2; ++h) {
        const int64_t b = b2 + h;
        __m512i codes[Q][2], start[Q];
        __m512 wd[Q];
        STRATA_UNROLL for (int q = 0; q < Q; ++q) {
          const Q8Quad& qb = panel[q * nb + b];
          codes[q][0] = _mm512_loadu_si512(qb.codes[0]);
          codes[q][1] = _mm512_loadu_si512(qb.codes[1]);
          start[q] = LoadLanes(qb.start);
          wd[q] = _mm512_loadu_ps(qb.d);
        }
        STRATA_UNROLL for (int c = 0; c < C; ++c) {
          const uint8_t* ac = a + c * as + b * 34;
          const __m512i a0 = _mm512_xor_si512(Broadcast128(ac + 2), flip);  // a + 128
          const __m512i a1 = _mm512_xor_si512(Broadcast128(ac + 18), flip);
          const __m512 da = _mm512_set1_ps(LoadHalf(ac));
          STRATA_UNROLL for (int q = 0; q < Q; ++q) {
            const __m512i t = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(start[q], a0, codes[q][0]), a1, codes[q][1]);
            acc[h][q][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_mul_ps(wd[q], da), acc[h][q][c]);
          }
        }
      }
    }
    __m512 sum[Q][C];
    STRATA_UNROLL for (int q = 0; q < Q; ++q) {
      STRATA_UNROLL for (int c = 0; c < C; ++c) sum[q][c] = _mm512_add_ps(acc[0][q][c], acc[1][q][c]);
    }
    PutQuadRows<Q, C>(sum, y, ldy, accumulate);
  }

  // The tile kernel takes blocks in pairs and an odd last block by its
  // 256-bit tail, added to the row's sum: so here.
  static int64_t PanelBlocks(int64_t nb_total) { return nb_total & ~int64_t{1}; }
  static void Finish(const GemmArgs& g, int64_t r0, int64_t rows) {
    const int64_t k0 = PanelBlocks(g.k / 32) * 32;
    if (k0 == g.k) return;
    for (int64_t c = 0; c < g.cols; ++c) {
      for (int64_t r = r0; r < r0 + rows; ++r) {
        float out[1][1] = {{g.y[c * g.ldy + r]}};
        TileKernel::template Tail<1, 1>(g.w + static_cast<uint64_t>(r) * g.w_row_bytes, g.w_row_bytes,
                                        g.act + static_cast<uint64_t>(c) * g.act_row_bytes, g.act_row_bytes, k0,
                                        g.k, out);
        g.y[c * g.ldy + r] = out[0][0];
      }
    }
  }
};

using Q8_0Panel = Int8BlockPanel<Q8_0Values>;

template <class P, int Q, int C>
inline void PanelColumnTail(const typename P::Block* panel, int64_t nb, const uint8_t* a, uint64_t as, float* y,
                            int64_t ldy, bool accumulate, int64_t rem) {
  if constexpr (C > 0) {
    if (rem == C) {
      P::template Tile<Q, C>(panel, nb, a, as, y, ldy, accumulate);
    } else {
      PanelColumnTail<P, Q, C - 1>(panel, nb, a, as, y, ldy, accumulate, rem);
    }
  }
}

// Rows [r0, r0 + 4Q) x all columns, through panels.
template <class P, int Q>
void PanelStripe(const GemmArgs& g, int64_t r0) {
  constexpr int64_t kPiece = P::kPieceBlocks;
  typename P::Block panel[Q * kPiece];
  const int64_t nb_total = P::PanelBlocks(g.k / P::kElems);
  for (int64_t b0 = 0; b0 < nb_total; b0 += kPiece) {
    const int64_t nb = std::min<int64_t>(kPiece, nb_total - b0);
    for (int q = 0; q < Q; ++q) {
      const uint8_t* rows[4];
      for (int r = 0; r < 4; ++r) rows[r] = g.w + static_cast<uint64_t>(r0 + 4 * q + r) * g.w_row_bytes + b0 * P::kBlockBytes;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* const x[4] = {rows[0] + b * P::kBlockBytes, rows[1] + b * P::kBlockBytes,
                                     rows[2] + b * P::kBlockBytes, rows[3] + b * P::kBlockBytes};
        P::Build(x, panel[q * nb + b]);
      }
    }
    // The weights of the next panel (the next piece of these rows, or the
    // next stripe's first), into L2 while this one's columns run: building
    // reads 4 rows in step, which the hardware prefetcher does not follow.
    {
      int64_t next_r0 = r0, next_b0 = b0 + kPiece;
      if (next_b0 >= nb_total) next_r0 = r0 + 4 * Q, next_b0 = 0;
      const int64_t next_rows = std::min<int64_t>(8, g.rows - next_r0);
      const int64_t next_bytes = std::min<int64_t>(kPiece, nb_total - next_b0) * P::kBlockBytes;
      for (int64_t r = 0; r < next_rows; ++r) {
        const uint8_t* p = g.w + static_cast<uint64_t>(next_r0 + r) * g.w_row_bytes + next_b0 * P::kBlockBytes;
        for (int64_t off = 0; off < next_bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T1);
      }
    }
    const uint8_t* a = g.act + b0 * P::kActBlockBytes;
    int64_t c = 0;
    for (; c + kPanelTileCols <= g.cols; c += kPanelTileCols)
      P::template Tile<Q, kPanelTileCols>(panel, nb, a + c * g.act_row_bytes, g.act_row_bytes, g.y + c * g.ldy + r0,
                                          g.ldy, b0 > 0);
    PanelColumnTail<P, Q, kPanelTileCols - 1>(panel, nb, a + c * g.act_row_bytes, g.act_row_bytes,
                                              g.y + c * g.ldy + r0, g.ldy, b0 > 0, g.cols - c);
  }
  P::Finish(g, r0, 4 * Q);
}

// The GemmFn: panels for stripes of 8 and 4 rows once there are
// kPanelMinCols columns, the tile kernel K for the rest.
template <class P, class K>
void PanelGemm(const GemmArgs& g) {
  if (g.cols < kPanelMinCols || g.rows < 4 || P::PanelBlocks(g.k / P::kElems) == 0) {
    Gemm<K>(g);
    return;
  }
  int64_t r = 0;
  for (; r + 8 <= g.rows; r += 8) PanelStripe<P, 2>(g, r);
  for (; r + 4 <= g.rows; r += 4) PanelStripe<P, 1>(g, r);
  if (r < g.rows) {
    GemmArgs rest = g;
    rest.w = g.w + static_cast<uint64_t>(r) * g.w_row_bytes;
    rest.rows = g.rows - r;
    rest.y = g.y + r;
    Gemm<K>(rest);
  }
}

}  // namespace
}  // namespace strata::kernels::STRATA_KERNEL_NS
