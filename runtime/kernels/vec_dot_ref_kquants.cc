// Reference dot products of the K-quants and ternary types against Q8_K
// activations (256-element super-blocks: float d, int8 q[256], int16
// bsums[16] = sums of 16 consecutive q).
//
// Layouts (docs/quant-types.md): the 2-bit planes of Q2_K/Q3_K and the 4-bit
// nibbles of Q4_K/Q5_K address element e of a super-block as byte
// 32*(e/128) + e%32 (Q2_K/Q3_K, shift 2*((e%128)/32)) or 32*(e/64) + e%32
// (Q4_K/Q5_K, low nibble for the first 32 of each 64).

#include <cstring>

#include "runtime/kernels/vec_dot_internal.h"
#include "runtime/quant/blocks.h"
#include "runtime/quant/fp_convert.h"

namespace strata::vecdot {

void UnpackQ4KScales(const uint8_t packed[12], uint8_t scales[8], uint8_t mins[8]) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      scales[j] = packed[j] & 63;
      mins[j] = packed[j + 4] & 63;
    } else {
      scales[j] = static_cast<uint8_t>((packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4));
      mins[j] = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
    }
  }
}

void UnpackQ3KScales(const uint8_t packed[12], int8_t scales[16]) {
  for (int k = 0; k < 16; ++k) {
    const int low = k < 8 ? (packed[k] & 0xF) : (packed[k - 8] >> 4);
    const int high = (packed[8 + k % 4] >> (2 * (k / 4))) & 3;
    scales[k] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

namespace {

// 2-bit plane of Q2_K/Q3_K: element e of the super-block.
inline int Plane2(const uint8_t* qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }
// 4-bit nibble of Q4_K/Q5_K: element e.
inline int Nibble4(const uint8_t* qs, int e) {
  const uint8_t b = qs[32 * (e / 64) + e % 32];
  return (e % 64) < 32 ? (b & 0xF) : (b >> 4);
}

}  // namespace

float Q2_K(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockQ2_K>(w, i);
    const auto y = LoadBlock<BlockQ8_K>(a, i);
    int scaled = 0;  // sum over 16-groups g of (scales[g] & 15) * sum(q * a)
    int mins = 0;    // sum over g of (scales[g] >> 4) * bsums[g]
    for (int g = 0; g < 16; ++g) {
      int isum = 0;
      for (int l = 0; l < 16; ++l) isum += Plane2(x.qs, 16 * g + l) * y.qs[16 * g + l];
      scaled += (x.scales[g] & 0xF) * isum;
      mins += (x.scales[g] >> 4) * y.bsums[g];
    }
    const float dall = y.d * Fp16ToFp32(x.d);
    const float dmin = y.d * Fp16ToFp32(x.dmin);
    sum += dall * static_cast<float>(scaled) - dmin * static_cast<float>(mins);
  }
  return sum;
}

float Q3_K(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockQ3_K>(w, i);
    const auto y = LoadBlock<BlockQ8_K>(a, i);
    int8_t scales[16];
    UnpackQ3KScales(x.scales, scales);
    int scaled = 0;
    for (int g = 0; g < 16; ++g) {
      int isum = 0;
      for (int l = 0; l < 16; ++l) {
        const int e = 16 * g + l;
        const int high = (x.hmask[e % 32] >> (e / 32)) & 1;
        isum += (Plane2(x.qs, e) - (high ? 0 : 4)) * y.qs[e];
      }
      scaled += scales[g] * isum;
    }
    sum += Fp16ToFp32(x.d) * y.d * static_cast<float>(scaled);
  }
  return sum;
}

namespace {
// Q4_K and Q5_K share everything but the 5th bit.
template <bool kFifthBit, typename Block>
float Q45K(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<Block>(w, i);
    const auto y = LoadBlock<BlockQ8_K>(a, i);
    uint8_t scales[8], mins[8];
    UnpackQ4KScales(x.scales, scales, mins);
    int scaled = 0;
    int min_sum = 0;
    for (int s = 0; s < 8; ++s) {
      int isum = 0;
      for (int l = 0; l < 32; ++l) {
        const int e = 32 * s + l;
        int q = Nibble4(x.qs, e);
        if constexpr (kFifthBit) q |= ((x.qh[l] >> s) & 1) << 4;
        isum += q * y.qs[e];
      }
      scaled += scales[s] * isum;
      min_sum += mins[s] * (y.bsums[2 * s] + y.bsums[2 * s + 1]);
    }
    const float d = Fp16ToFp32(x.d) * y.d;
    const float dmin = Fp16ToFp32(x.dmin) * y.d;
    sum += d * static_cast<float>(scaled) - dmin * static_cast<float>(min_sum);
  }
  return sum;
}
}  // namespace

float Q4_K(const uint8_t* w, const uint8_t* a, int64_t nb) { return Q45K<false, BlockQ4_K>(w, a, nb); }
float Q5_K(const uint8_t* w, const uint8_t* a, int64_t nb) { return Q45K<true, BlockQ5_K>(w, a, nb); }

float Q6_K(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockQ6_K>(w, i);
    const auto y = LoadBlock<BlockQ8_K>(a, i);
    int scaled = 0;
    for (int g = 0; g < 16; ++g) {
      int isum = 0;
      for (int l = 0; l < 16; ++l) {
        const int e = 16 * g + l;
        const int h = e / 128, grp = (e % 128) / 32, m = e % 32;
        const uint8_t low_byte = x.ql[64 * h + 32 * (grp % 2) + m];
        const int low = grp < 2 ? (low_byte & 0xF) : (low_byte >> 4);
        const int high = (x.qh[32 * h + m] >> (2 * grp)) & 3;
        isum += ((low | (high << 4)) - 32) * y.qs[e];
      }
      scaled += x.scales[g] * isum;
    }
    sum += Fp16ToFp32(x.d) * y.d * static_cast<float>(scaled);
  }
  return sum;
}

namespace {
// TQ1_0 digit n of a base-3 byte: ((uint8)(byte * 3^n) * 3) >> 8, in 0..2.
inline int Trit(uint8_t byte, int n) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto q = static_cast<uint8_t>(byte * kPow3[n]);
  return (q * 3) >> 8;
}
}  // namespace

float Tq1_0(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockTq1_0>(w, i);
    const auto y = LoadBlock<BlockQ8_K>(a, i);
    int isum = 0;
    int e = 0;
    for (int n = 0; n < 5; ++n)  // qs[0..31]: elements 32n + m
      for (int m = 0; m < 32; ++m) isum += (Trit(x.qs[m], n) - 1) * y.qs[e++];
    for (int n = 0; n < 5; ++n)  // qs[32..47]: elements 160 + 16n + m
      for (int m = 0; m < 16; ++m) isum += (Trit(x.qs[32 + m], n) - 1) * y.qs[e++];
    for (int n = 0; n < 4; ++n)  // qh[0..3]: elements 240 + 4n + j
      for (int j = 0; j < 4; ++j) isum += (Trit(x.qh[j], n) - 1) * y.qs[e++];
    sum += static_cast<float>(isum) * (Fp16ToFp32(x.d) * y.d);
  }
  return sum;
}

float Tq2_0(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockTq2_0>(w, i);
    const auto y = LoadBlock<BlockQ8_K>(a, i);
    int isum = 0;
    for (int e = 0; e < 256; ++e) {  // element 128h + 32l + m: bits 2l of qs[32h + m]
      const int h = e / 128, l = (e % 128) / 32, m = e % 32;
      isum += (((x.qs[32 * h + m] >> (2 * l)) & 3) - 1) * y.qs[e];
    }
    sum += static_cast<float>(isum) * (y.d * Fp16ToFp32(x.d));
  }
  return sum;
}

}  // namespace strata::vecdot
