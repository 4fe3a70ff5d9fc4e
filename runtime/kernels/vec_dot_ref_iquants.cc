// Reference dot products of the i-quants against Q8_K activations.
//
// The grid types store groups of 8 (or 4) elements as one grid entry
// (iq_grids.h) whose byte j is the magnitude of element j, per-element signs,
// and an odd integer scale per 16 or 32 elements. ggml folds the constant
// factor of the dequantized scale into one multiply at the end (IQ2: 0.125,
// IQ3_XXS: 0.25), so the integer sums below are exact.

#include <cstring>

#include "runtime/kernels/vec_dot_internal.h"
#include "runtime/quant/blocks.h"
#include "runtime/quant/fp_convert.h"
#include "runtime/quant/iq_grids.h"

namespace strata::vecdot {
namespace {

inline uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// sum over j < n of grid byte j * a[j], negated where bit j of `signs` is set.
template <int n, typename Entry>
inline int SignedGridDot(Entry entry, uint8_t signs, const int8_t* a) {
  int sum = 0;
  for (int j = 0; j < n; ++j) {
    const int v = static_cast<int>((entry >> (8 * j)) & 0xFF) * a[j];
    sum += ((signs >> j) & 1) ? -v : v;
  }
  return sum;
}

}  // namespace

float Iq2_xxs(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockIq2_xxs>(w, i);
    const auto y = LoadBlock<BlockQ8_K>(a, i);
    const auto* qs = reinterpret_cast<const uint8_t*>(x.qs);
    int bsum = 0;
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* g = qs + 8 * ib;       // 4 grid indices
      const uint32_t aux = LoadU32(g + 4);  // 4 x 7 sign bits, scale in the top 4 bits
      int isum = 0;
      for (int l = 0; l < 4; ++l)
        isum += SignedGridDot<8>(kIq2XxsGrid[g[l]], kKsignsIq2xs[(aux >> (7 * l)) & 127], y.qs + 32 * ib + 8 * l);
      bsum += isum * static_cast<int>(2 * (aux >> 28) + 1);
    }
    sum += Fp16ToFp32(x.d) * y.d * static_cast<float>(bsum);
  }
  return 0.125f * sum;
}

float Iq2_xs(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockIq2_xs>(w, i);
    const auto y = LoadBlock<BlockQ8_K>(a, i);
    int bsum = 0;
    for (int ib = 0; ib < 8; ++ib) {
      for (int half = 0; half < 2; ++half) {  // 16 elements per 4-bit scale
        int isum = 0;
        for (int l = 2 * half; l < 2 * half + 2; ++l) {
          const uint16_t q = x.qs[4 * ib + l];
          isum += SignedGridDot<8>(kIq2XsGrid[q & 511], kKsignsIq2xs[q >> 9], y.qs + 32 * ib + 8 * l);
        }
        bsum += isum * (2 * ((x.scales[ib] >> (4 * half)) & 0xF) + 1);
      }
    }
    sum += Fp16ToFp32(x.d) * y.d * static_cast<float>(bsum);
  }
  return 0.125f * sum;
}

float Iq2_s(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockIq2_s>(w, i);
    const auto y = LoadBlock<BlockQ8_K>(a, i);
    const uint8_t* signs = x.qs + 32;
    int bsum = 0;
    for (int ib = 0; ib < 8; ++ib) {
      for (int half = 0; half < 2; ++half) {
        int isum = 0;
        for (int l = 2 * half; l < 2 * half + 2; ++l) {
          const int index = x.qs[4 * ib + l] | ((x.qh[ib] << (8 - 2 * l)) & 0x300);
          isum += SignedGridDot<8>(kIq2SGrid[index], signs[4 * ib + l], y.qs + 32 * ib + 8 * l);
        }
        bsum += isum * (2 * ((x.scales[ib] >> (4 * half)) & 0xF) + 1);
      }
    }
    sum += Fp16ToFp32(x.d) * y.d * static_cast<float>(bsum);
  }
  return 0.125f * sum;
}

float Iq3_xxs(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockIq3_xxs>(w, i);
    const auto y = LoadBlock<BlockQ8_K>(a, i);
    int bsum = 0;
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* g = x.qs + 8 * ib;              // 8 grid indices of 4 elements
      const uint32_t aux = LoadU32(x.qs + 64 + 4 * ib);  // 4 x 7 sign bits, scale on top
      int isum = 0;
      for (int l = 0; l < 4; ++l) {
        const uint8_t signs = kKsignsIq2xs[(aux >> (7 * l)) & 127];
        const int8_t* ya = y.qs + 32 * ib + 8 * l;
        isum += SignedGridDot<4>(kIq3XxsGrid[g[2 * l]], signs, ya);
        isum += SignedGridDot<4>(kIq3XxsGrid[g[2 * l + 1]], static_cast<uint8_t>(signs >> 4), ya + 4);
      }
      bsum += isum * static_cast<int>(2 * (aux >> 28) + 1);
    }
    sum += Fp16ToFp32(x.d) * y.d * static_cast<float>(bsum);
  }
  return 0.25f * sum;
}

float Iq3_s(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockIq3_s>(w, i);
    const auto y = LoadBlock<BlockQ8_K>(a, i);
    int bsum = 0;
    for (int ib = 0; ib < 8; ++ib) {
      int isum = 0;
      for (int l = 0; l < 8; ++l) {  // group of 4: grid index with bit 8 from qh
        const int index = x.qs[8 * ib + l] | (((x.qh[ib] >> l) & 1) << 8);
        const auto signs = static_cast<uint8_t>(x.signs[4 * ib + l / 2] >> (4 * (l % 2)));
        isum += SignedGridDot<4>(kIq3SGrid[index], signs, y.qs + 32 * ib + 4 * l);
      }
      bsum += isum * (2 * ((x.scales[ib / 2] >> (4 * (ib % 2))) & 0xF) + 1);
    }
    sum += Fp16ToFp32(x.d) * y.d * static_cast<float>(bsum);
  }
  return sum;
}

float Iq1_s(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockIq1_s>(w, i);
    const auto y = LoadBlock<BlockQ8_K>(a, i);
    int grid_sum = 0, delta_sum = 0;
    for (int ib = 0; ib < 8; ++ib) {
      const uint16_t qh = x.qh[ib];
      const int ls = 2 * ((qh >> 12) & 7) + 1;
      const int delta = (qh & 0x8000) ? -1 : 1;
      int lsum = 0;
      for (int l = 0; l < 4; ++l) {
        const uint64_t g = kIq1SGrid[x.qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
        for (int j = 0; j < 8; ++j)
          lsum += static_cast<int8_t>(static_cast<uint8_t>(g >> (8 * j))) * y.qs[32 * ib + 8 * l + j];
      }
      grid_sum += ls * lsum;
      delta_sum += ls * delta * (y.bsums[2 * ib] + y.bsums[2 * ib + 1]);
    }
    sum += Fp16ToFp32(x.d) * y.d * (static_cast<float>(grid_sum) + kIq1Delta * static_cast<float>(delta_sum));
  }
  return sum;
}

float Iq1_m(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockIq1_m>(w, i);
    const auto y = LoadBlock<BlockQ8_K>(a, i);
    uint16_t sc[4];
    std::memcpy(sc, x.scales, 8);
    const auto d_bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                              (sc[3] & 0xF000));
    int grid_sum = 0, delta_sum = 0;
    for (int ib = 0; ib < 8; ++ib) {
      const uint8_t* qs = x.qs + 4 * ib;
      const uint8_t* qh = x.qh + 2 * ib;
      const int ls[2] = {2 * ((sc[ib / 2] >> (6 * (ib % 2))) & 7) + 1, 2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 7) + 1};
      for (int l = 0; l < 4; ++l) {  // groups of 8; the scale changes every 16
        const uint8_t h = qh[l / 2] >> (4 * (l % 2));  // 3 index bits, then the delta sign
        const uint64_t g = kIq1SGrid[qs[l] | ((h & 7) << 8)];
        const int8_t* ya = y.qs + 32 * ib + 8 * l;
        int lsum = 0, asum = 0;
        for (int j = 0; j < 8; ++j) {
          lsum += static_cast<int8_t>(static_cast<uint8_t>(g >> (8 * j))) * ya[j];
          asum += ya[j];
        }
        grid_sum += ls[l / 2] * lsum;
        delta_sum += ls[l / 2] * ((h & 8) ? -asum : asum);
      }
    }
    sum += Fp16ToFp32(d_bits) * y.d * (static_cast<float>(grid_sum) + kIq1Delta * static_cast<float>(delta_sum));
  }
  return sum;
}

float Iq4_xs(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockIq4_xs>(w, i);
    const auto y = LoadBlock<BlockQ8_K>(a, i);
    const float d = Fp16ToFp32(x.d) * y.d;
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = ((x.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((x.scales_h >> (2 * ib)) & 3) << 4);
      const int8_t* ya = y.qs + 32 * ib;
      int isum = 0;
      for (int j = 0; j < 16; ++j)
        isum += kValuesIq4nl[x.qs[16 * ib + j] & 0xF] * ya[j] + kValuesIq4nl[x.qs[16 * ib + j] >> 4] * ya[j + 16];
      sum += d * static_cast<float>(ls - 32) * static_cast<float>(isum);
    }
  }
  return sum;
}

}  // namespace strata::vecdot
