// Reference dequantizers for the grid-based i-quants (IQ1/IQ2/IQ3) and IQ4_XS.
// A group of 8 (or 4) elements is one grid entry (iq_grids.h) times a block
// scale, with per-element signs from a 7-bit pattern (kKsignsIq2xs) or a sign
// byte. See dequantize_internal.h for the float-order contract.

#include <bit>
#include <cstring>

#include "runtime/quant/blocks.h"
#include "runtime/quant/dequantize_internal.h"
#include "runtime/quant/fp_convert.h"
#include "runtime/quant/iq_grids.h"

namespace strata::dequant {
namespace {

// Byte j of a grid entry (element j of the group).
inline float GridByte(uint64_t entry, int j) { return static_cast<float>(static_cast<int>((entry >> (8 * j)) & 0xFFu)); }
// iq1s grid bytes are int8 (-1, 0, +1).
inline float GridInt8(uint64_t entry, int j) {
  return static_cast<float>(static_cast<int8_t>(static_cast<uint8_t>(entry >> (8 * j))));
}
// v negated if sign bit j is set. ggml writes `v * (neg ? -1.f : 1.f)`, which
// is the same value for every non-NaN v; flipping the sign bit directly keeps
// the loop free of branches on random sign bits.
inline float ApplySign(float v, uint8_t signs, int j) {
  const uint32_t flip = static_cast<uint32_t>((signs >> j) & 1u) << 31;
  return std::bit_cast<float>(std::bit_cast<uint32_t>(v) ^ flip);
}

inline uint32_t LoadU32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Writes 8 elements: db * grid byte j * sign j.
inline void Group8(float db, uint64_t entry, uint8_t signs, float* y) {
  for (int j = 0; j < 8; ++j) y[j] = ApplySign(db * GridByte(entry, j), signs, j);
}

}  // namespace

void Iq2_xxs(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockIq2_xxs>(src, i);
    const float d = Fp16ToFp32(b.d);
    const auto* qs = reinterpret_cast<const uint8_t*>(b.qs);
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* g = qs + 8 * ib;       // 4 grid indices
      const uint32_t aux = LoadU32(g + 4);  // 4x7 sign bits, 4-bit scale on top
      const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.25f;
      for (int l = 0; l < 4; ++l, dst += 8)
        Group8(db, kIq2XxsGrid[g[l]], kKsignsIq2xs[(aux >> (7 * l)) & 127], dst);
    }
  }
}

void Iq2_xs(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockIq2_xs>(src, i);
    const float d = Fp16ToFp32(b.d);
    for (int ib = 0; ib < 8; ++ib) {
      float db[2];
      db[0] = d * (0.5f + static_cast<float>(b.scales[ib] & 0xF)) * 0.25f;
      db[1] = d * (0.5f + static_cast<float>(b.scales[ib] >> 4)) * 0.25f;
      for (int l = 0; l < 4; ++l, dst += 8) {
        const uint16_t q = b.qs[4 * ib + l];  // 9-bit grid index, 7 sign bits
        Group8(db[l / 2], kIq2XsGrid[q & 511], kKsignsIq2xs[q >> 9], dst);
      }
    }
  }
}

void Iq2_s(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockIq2_s>(src, i);
    const float d = Fp16ToFp32(b.d);
    const uint8_t* qs = b.qs;
    const uint8_t* signs = b.qs + 32;
    for (int ib = 0; ib < 8; ++ib, qs += 4, signs += 4) {
      float db[2];
      db[0] = d * (0.5f + static_cast<float>(b.scales[ib] & 0xF)) * 0.25f;
      db[1] = d * (0.5f + static_cast<float>(b.scales[ib] >> 4)) * 0.25f;
      for (int l = 0; l < 4; ++l, dst += 8) {
        const int index = qs[l] | ((b.qh[ib] << (8 - 2 * l)) & 0x300);
        Group8(db[l / 2], kIq2SGrid[index], signs[l], dst);
      }
    }
  }
}

void Iq3_xxs(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockIq3_xxs>(src, i);
    const float d = Fp16ToFp32(b.d);
    const uint8_t* qs = b.qs;
    const uint8_t* scales_and_signs = b.qs + 64;
    for (int ib = 0; ib < 8; ++ib, qs += 8) {
      const uint32_t aux = LoadU32(scales_and_signs + 4 * ib);
      const float db = d * (0.5f + static_cast<float>(aux >> 28)) * 0.5f;
      for (int l = 0; l < 4; ++l, dst += 8) {
        const uint8_t signs = kKsignsIq2xs[(aux >> (7 * l)) & 127];
        const uint32_t g1 = kIq3XxsGrid[qs[2 * l]];
        const uint32_t g2 = kIq3XxsGrid[qs[2 * l + 1]];
        for (int j = 0; j < 4; ++j) {
          dst[j] = ApplySign(db * GridByte(g1, j), signs, j);
          dst[j + 4] = ApplySign(db * GridByte(g2, j), signs, j + 4);
        }
      }
    }
  }
}

void Iq3_s(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockIq3_s>(src, i);
    const float d = Fp16ToFp32(b.d);
    const uint8_t* qs = b.qs;
    const uint8_t* signs = b.signs;
    for (int ib = 0; ib < 8; ++ib, qs += 8, signs += 4) {
      const uint8_t sc = b.scales[ib / 2];
      const float db = d * static_cast<float>(1 + 2 * ((ib % 2 == 0) ? (sc & 0xF) : (sc >> 4)));
      const uint8_t qh = b.qh[ib];  // bit 2l / 2l+1: bit 8 of the two grid indices of group l
      for (int l = 0; l < 4; ++l, dst += 8) {
        const uint32_t g1 = kIq3SGrid[qs[2 * l] | ((qh << (8 - 2 * l)) & 256)];
        const uint32_t g2 = kIq3SGrid[qs[2 * l + 1] | ((qh << (7 - 2 * l)) & 256)];
        for (int j = 0; j < 4; ++j) {
          dst[j] = ApplySign(db * GridByte(g1, j), signs[l], j);
          dst[j + 4] = ApplySign(db * GridByte(g2, j), signs[l], j + 4);
        }
      }
    }
  }
}

void Iq1_s(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockIq1_s>(src, i);
    const float d = Fp16ToFp32(b.d);
    for (int ib = 0; ib < 8; ++ib) {
      const uint16_t qh = b.qh[ib];
      const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
      const float delta = (qh & 0x8000) ? -kIq1Delta : kIq1Delta;
      for (int l = 0; l < 4; ++l, dst += 8) {
        const uint64_t g = kIq1SGrid[b.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
        for (int j = 0; j < 8; ++j) dst[j] = dl * (GridInt8(g, j) + delta);
      }
    }
  }
}

void Iq1_m(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockIq1_m>(src, i);
    uint16_t sc[4];  // four little-endian u16: 3-bit scales, plus a nibble of the block scale on top
    std::memcpy(sc, b.scales, 8);
    const uint16_t d_bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
                                                  ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
    const float d = Fp16ToFp32(d_bits);
    const uint8_t* qs = b.qs;
    const uint8_t* qh = b.qh;
    for (int ib = 0; ib < 8; ++ib, qs += 4, qh += 2) {
      const int shift = 6 * (ib % 2);
      const float dl1 = d * static_cast<float>(2 * ((sc[ib / 2] >> shift) & 7) + 1);
      const float dl2 = d * static_cast<float>(2 * ((sc[ib / 2] >> (shift + 3)) & 7) + 1);
      const int idx[4] = {qs[0] | ((qh[0] << 8) & 0x700), qs[1] | ((qh[0] << 4) & 0x700),
                          qs[2] | ((qh[1] << 8) & 0x700), qs[3] | ((qh[1] << 4) & 0x700)};
      const float delta[4] = {(qh[0] & 0x08) ? -kIq1Delta : kIq1Delta, (qh[0] & 0x80) ? -kIq1Delta : kIq1Delta,
                              (qh[1] & 0x08) ? -kIq1Delta : kIq1Delta, (qh[1] & 0x80) ? -kIq1Delta : kIq1Delta};
      for (int l = 0; l < 4; ++l, dst += 8) {
        const float dl = l < 2 ? dl1 : dl2;
        const uint64_t g = kIq1SGrid[idx[l]];
        for (int j = 0; j < 8; ++j) dst[j] = dl * (GridInt8(g, j) + delta[l]);
      }
    }
  }
}

void Iq4_xs(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockIq4_xs>(src, i);
    const float d = Fp16ToFp32(b.d);
    const uint8_t* qs = b.qs;
    for (int ib = 0; ib < 8; ++ib, qs += 16, dst += 32) {
      const int ls = ((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((b.scales_h >> (2 * ib)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 16; ++j) {
        dst[j] = dl * static_cast<float>(kValuesIq4nl[qs[j] & 0xF]);
        dst[j + 16] = dl * static_cast<float>(kValuesIq4nl[qs[j] >> 4]);
      }
    }
  }
}

}  // namespace strata::dequant
