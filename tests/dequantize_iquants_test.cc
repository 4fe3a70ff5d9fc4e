// Hand-built i-quant super-blocks (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
// IQ1_S, IQ1_M, IQ4_XS) dequantize to the values the format defines: grid
// indices and their high bits, sign fields and their parity bit, block and
// sub-block scales, the IQ1 delta. Grid entries come from iq_grids.h (checked
// against ggml-common.h by iq_grids_test); everything else is computed here.

#include "runtime/quant/dequantize.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <vector>

#include "runtime/quant/blocks.h"
#include "runtime/quant/fp_convert.h"
#include "runtime/quant/iq_grids.h"
#include "tests/testing/block_test_util.h"

namespace strata {
namespace {

using T = GgmlType;
using testing::DeqBlock;
using testing::ExpectSame;
using testing::F;
using testing::H;
using testing::kIq4Levels;

// 8-bit sign pattern of a 7-bit i-quant sign field: the 8th sign makes the
// number of negated elements even.
uint8_t Signs8(uint8_t s7) { return static_cast<uint8_t>(s7 | ((std::popcount(static_cast<unsigned>(s7)) & 1) << 7)); }
float SignOf(uint8_t signs, int j) { return ((signs >> j) & 1) ? -1.0f : 1.0f; }
float GridU8(uint64_t entry, int j) { return static_cast<float>((entry >> (8 * j)) & 0xFF); }

// IQ2_XXS: per 32 elements, 8 bytes: 4 grid indices, then a u32 holding four
// 7-bit sign fields (bits 7l..7l+6) and a 4-bit scale s (bits 28..31);
// db = d * (0.5 + s) * 0.25; element 32ib + 8l + j = db * grid[idx_l] byte j * sign j.
TEST(Dequantize, Iq2_xxsSignsAndScales) {
  BlockIq2_xxs b{};
  b.d = H(0.0625f);
  uint8_t raw[64];
  uint8_t idx[8][4], s7[8][4];
  int sc[8];
  for (int ib = 0; ib < 8; ++ib) {
    uint32_t aux = 0;
    sc[ib] = (ib * 5 + 3) & 15;
    for (int l = 0; l < 4; ++l) {
      idx[ib][l] = static_cast<uint8_t>(ib * 31 + l * 67 + 5);
      s7[ib][l] = static_cast<uint8_t>((ib * 13 + l * 29 + 1) & 127);
      raw[8 * ib + l] = idx[ib][l];
      aux |= static_cast<uint32_t>(s7[ib][l]) << (7 * l);
    }
    aux |= static_cast<uint32_t>(sc[ib]) << 28;
    std::memcpy(raw + 8 * ib + 4, &aux, 4);
  }
  std::memcpy(b.qs, raw, 64);
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib) {
    const float db = F(b.d) * (0.5f + static_cast<float>(sc[ib])) * 0.25f;
    for (int l = 0; l < 4; ++l)
      for (int j = 0; j < 8; ++j)
        want[32 * ib + 8 * l + j] = db * GridU8(kIq2XxsGrid[idx[ib][l]], j) * SignOf(Signs8(s7[ib][l]), j);
  }
  ExpectSame(want, DeqBlock(T::kIQ2_XXS, b));
}

// IQ2_XS: u16 per 8 elements = 9-bit grid index | 7 sign bits << 9; scales[ib]
// low nibble for the first 16 elements of the 32, high nibble for the rest.
TEST(Dequantize, Iq2_xs) {
  BlockIq2_xs b{};
  b.d = H(0.05f);
  for (int ib = 0; ib < 8; ++ib) {
    b.scales[ib] = static_cast<uint8_t>(((ib * 3) & 15) | (((15 - ib * 2) & 15) << 4));
    for (int l = 0; l < 4; ++l) {
      const int idx = (ib * 97 + l * 131 + 3) & 511;
      const int s7 = (ib * 11 + l * 41 + 2) & 127;
      b.qs[4 * ib + l] = static_cast<uint16_t>(idx | (s7 << 9));
    }
  }
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib)
    for (int l = 0; l < 4; ++l) {
      const int nib = l < 2 ? (b.scales[ib] & 15) : (b.scales[ib] >> 4);
      const float db = F(b.d) * (0.5f + static_cast<float>(nib)) * 0.25f;
      const uint16_t q = b.qs[4 * ib + l];
      for (int j = 0; j < 8; ++j)
        want[32 * ib + 8 * l + j] =
            db * GridU8(kIq2XsGrid[q & 511], j) * SignOf(Signs8(static_cast<uint8_t>(q >> 9)), j);
    }
  ExpectSame(want, DeqBlock(T::kIQ2_XS, b));
}

// IQ2_S: grid index = qs[4ib+l] | bits 2l..2l+1 of qh[ib] << 8; full sign
// byte qs[32 + 4ib + l].
TEST(Dequantize, Iq2_s) {
  BlockIq2_s b{};
  b.d = H(0.04f);
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<uint8_t>(i * 71 + 13);
  for (int i = 0; i < 32; ++i) b.qs[32 + i] = static_cast<uint8_t>(i * 59 + 200);
  for (int ib = 0; ib < 8; ++ib) {
    b.qh[ib] = static_cast<uint8_t>(ib * 45 + 27);
    b.scales[ib] = static_cast<uint8_t>((ib * 7 + 1) & 0xFF);
  }
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib)
    for (int l = 0; l < 4; ++l) {
      const int nib = l < 2 ? (b.scales[ib] & 15) : (b.scales[ib] >> 4);
      const float db = F(b.d) * (0.5f + static_cast<float>(nib)) * 0.25f;
      const int idx = b.qs[4 * ib + l] | (((b.qh[ib] >> (2 * l)) & 3) << 8);
      for (int j = 0; j < 8; ++j)
        want[32 * ib + 8 * l + j] = db * GridU8(kIq2SGrid[idx], j) * SignOf(b.qs[32 + 4 * ib + l], j);
    }
  ExpectSame(want, DeqBlock(T::kIQ2_S, b));
}

// IQ3_XXS: qs[0..63] are grid indices (8 per 32 elements, 4 elements each);
// qs[64 + 4ib] is a u32 of four 7-bit sign fields and a 4-bit scale on top;
// db = d * (0.5 + s) * 0.5.
TEST(Dequantize, Iq3_xxs) {
  BlockIq3_xxs b{};
  b.d = H(0.03f);
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(i * 83 + 1);
  uint32_t aux[8];
  for (int ib = 0; ib < 8; ++ib) {
    aux[ib] = 0;
    for (int l = 0; l < 4; ++l) aux[ib] |= static_cast<uint32_t>((ib * 19 + l * 37 + 5) & 127) << (7 * l);
    aux[ib] |= static_cast<uint32_t>((ib * 9 + 2) & 15) << 28;
    std::memcpy(b.qs + 64 + 4 * ib, &aux[ib], 4);
  }
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib) {
    const float db = F(b.d) * (0.5f + static_cast<float>(aux[ib] >> 28)) * 0.5f;
    for (int l = 0; l < 4; ++l) {
      const uint8_t signs = Signs8(static_cast<uint8_t>((aux[ib] >> (7 * l)) & 127));
      for (int j = 0; j < 8; ++j) {
        const uint32_t entry = kIq3XxsGrid[b.qs[8 * ib + 2 * l + j / 4]];
        want[32 * ib + 8 * l + j] = db * GridU8(entry, j % 4) * SignOf(signs, j);
      }
    }
  }
  ExpectSame(want, DeqBlock(T::kIQ3_XXS, b));
}

// IQ3_S: grid index k of 32-element block ib = qs[8ib+k] | bit k of qh[ib]
// << 8 (4 elements each); sign byte signs[4ib + l] covers elements 8l..8l+7;
// scale nibble ib%2 of scales[ib/2], db = d * (1 + 2 * nibble).
TEST(Dequantize, Iq3_s) {
  BlockIq3_s b{};
  b.d = H(0.02f);
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(i * 47 + 9);
  for (int i = 0; i < 8; ++i) b.qh[i] = static_cast<uint8_t>(i * 89 + 77);
  for (int i = 0; i < 32; ++i) b.signs[i] = static_cast<uint8_t>(i * 13 + 101);
  for (int i = 0; i < 4; ++i) b.scales[i] = static_cast<uint8_t>(i * 67 + 15);
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib) {
    const int nib = (ib % 2 == 0) ? (b.scales[ib / 2] & 15) : (b.scales[ib / 2] >> 4);
    const float db = F(b.d) * static_cast<float>(1 + 2 * nib);
    for (int l = 0; l < 4; ++l)
      for (int j = 0; j < 8; ++j) {
        const int k = 2 * l + j / 4;
        const int idx = b.qs[8 * ib + k] | (((b.qh[ib] >> k) & 1) << 8);
        want[32 * ib + 8 * l + j] = db * GridU8(kIq3SGrid[idx], j % 4) * SignOf(b.signs[4 * ib + l], j);
      }
  }
  ExpectSame(want, DeqBlock(T::kIQ3_S, b));
}

// IQ1_S: qh[ib] (u16) = 3 index bits per group at 3l, a 3-bit scale s at bit
// 12, and the delta sign at bit 15; value d * (2s + 1) * (grid + delta),
// delta = -0.125 if bit 15 is set, else +0.125.
TEST(Dequantize, Iq1_sDeltaSign) {
  BlockIq1_s b{};
  b.d = H(0.1f);
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<uint8_t>(i * 101 + 3);
  for (int ib = 0; ib < 8; ++ib) {
    uint16_t qh = 0;
    for (int l = 0; l < 4; ++l) qh = static_cast<uint16_t>(qh | (((ib + 3 * l) & 7) << (3 * l)));
    qh = static_cast<uint16_t>(qh | ((ib % 8) << 12) | ((ib % 2) << 15));
    b.qh[ib] = qh;
  }
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib) {
    const int s = (b.qh[ib] >> 12) & 7;
    const float dl = F(b.d) * static_cast<float>(2 * s + 1);
    const float delta = (b.qh[ib] >> 15) ? -0.125f : 0.125f;
    for (int l = 0; l < 4; ++l) {
      const int idx = b.qs[4 * ib + l] | (((b.qh[ib] >> (3 * l)) & 7) << 8);
      for (int j = 0; j < 8; ++j) {
        const auto g = static_cast<int8_t>(static_cast<uint8_t>(kIq1SGrid[idx] >> (8 * j)));
        want[32 * ib + 8 * l + j] = dl * (static_cast<float>(g) + delta);
      }
    }
  }
  ExpectSame(want, DeqBlock(T::kIQ1_S, b));
}

// IQ1_M: no separate d. The scales bytes are four little-endian u16 words; the
// top nibble of word w is bits 4w..4w+3 of the block's F16 scale. Word ib/2
// holds, at bit 6*(ib%2), two 3-bit scales: s1 (groups 0-1) and s2 (groups
// 2-3). qh[2ib + l/2], nibble l%2: 3 index bits and the delta sign (bit 3).
TEST(Dequantize, Iq1_mPackedScale) {
  BlockIq1_m b{};
  const uint16_t d = H(0.046875f);
  int s1[8], s2[8];
  uint16_t words[4] = {0, 0, 0, 0};
  for (int ib = 0; ib < 8; ++ib) {
    s1[ib] = (ib * 3 + 1) & 7;
    s2[ib] = (ib * 5 + 6) & 7;
    words[ib / 2] = static_cast<uint16_t>(words[ib / 2] | ((s1[ib] | (s2[ib] << 3)) << (6 * (ib % 2))));
  }
  for (int w = 0; w < 4; ++w) words[w] = static_cast<uint16_t>(words[w] | (((d >> (4 * w)) & 0xF) << 12));
  std::memcpy(b.scales, words, 8);
  for (int i = 0; i < 32; ++i) b.qs[i] = static_cast<uint8_t>(i * 37 + 250);
  for (int i = 0; i < 16; ++i) b.qh[i] = static_cast<uint8_t>(i * 73 + 41);
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib)
    for (int l = 0; l < 4; ++l) {
      const int nibble = (b.qh[2 * ib + l / 2] >> (4 * (l % 2))) & 0xF;
      const int idx = b.qs[4 * ib + l] | ((nibble & 7) << 8);
      const float delta = (nibble & 8) ? -0.125f : 0.125f;
      const float dl = F(d) * static_cast<float>(2 * (l < 2 ? s1[ib] : s2[ib]) + 1);
      for (int j = 0; j < 8; ++j) {
        const auto g = static_cast<int8_t>(static_cast<uint8_t>(kIq1SGrid[idx] >> (8 * j)));
        want[32 * ib + 8 * l + j] = dl * (static_cast<float>(g) + delta);
      }
    }
  ExpectSame(want, DeqBlock(T::kIQ1_M, b));
}

// IQ4_XS: 6-bit scale ls of 32-element block ib: low 4 bits are nibble ib%2 of
// scales_l[ib/2], high 2 bits are bits 2ib of scales_h; dl = d * (ls - 32);
// nibbles as IQ4_NL within each 32.
TEST(Dequantize, Iq4_xs) {
  const int ls[8] = {0, 63, 32, 1, 47, 16, 33, 31};
  BlockIq4_xs b{};
  b.d = H(0.02f);
  for (int ib = 0; ib < 8; ++ib) {
    b.scales_l[ib / 2] = static_cast<uint8_t>(b.scales_l[ib / 2] | ((ls[ib] & 0xF) << (4 * (ib % 2))));
    b.scales_h = static_cast<uint16_t>(b.scales_h | ((ls[ib] >> 4) << (2 * ib)));
  }
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(i * 43 + 21);
  std::vector<float> want(256);
  for (int ib = 0; ib < 8; ++ib) {
    const float dl = F(b.d) * static_cast<float>(ls[ib] - 32);
    for (int j = 0; j < 16; ++j) {
      want[32 * ib + j] = dl * static_cast<float>(kIq4Levels[b.qs[16 * ib + j] & 0xF]);
      want[32 * ib + 16 + j] = dl * static_cast<float>(kIq4Levels[b.qs[16 * ib + j] >> 4]);
    }
  }
  ExpectSame(want, DeqBlock(T::kIQ4_XS, b));
}

}  // namespace
}  // namespace strata
