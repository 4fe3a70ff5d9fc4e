// Hand-built K-quant super-blocks (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K)
// dequantize to the values the format defines: sub-block scales and mins,
// their 6-bit packing, the high-bit planes. Expected values are computed from
// the layout description (docs/quant-types.md), in ggml's float order.

#include "runtime/quant/dequantize.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "runtime/quant/blocks.h"
#include "runtime/quant/fp_convert.h"
#include "tests/testing/block_test_util.h"

namespace strata {
namespace {

using T = GgmlType;
using testing::DeqBlock;
using testing::ExpectSame;
using testing::F;
using testing::H;

// The 2-bit quants of Q2_K / Q3_K: element e sits in qs[32*(e/128) + e%32] at
// bit 2*((e%128)/32); each 16 elements share scales[e/16].
int K2Bits(const uint8_t* qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

TEST(Dequantize, Q2_K) {
  BlockQ2_K b{};
  for (int k = 0; k < 16; ++k) b.scales[k] = static_cast<uint8_t>((k % 16) | (((k * 7) % 16) << 4));
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(i * 37 + 11);
  b.d = H(0.037f);
  b.dmin = H(0.011f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    const float dl = F(b.d) * static_cast<float>(b.scales[e / 16] & 0xF);  // low nibble: scale
    const float ml = F(b.dmin) * static_cast<float>(b.scales[e / 16] >> 4);  // high nibble: min
    want[e] = dl * static_cast<float>(K2Bits(b.qs, e)) - ml;
  }
  ExpectSame(want, DeqBlock(T::kQ2_K, b));
}

// Q3_K: 16 six-bit scales (biased by 32): low 4 bits in a nibble of bytes 0..7
// (scale k < 8: low nibble of byte k; k >= 8: high nibble of byte k-8), top 2
// bits at bit 2*(k/4) of byte 8 + k%4. The 3rd quant bit of element e is bit
// e/32 of hmask[e%32]; when it is clear the value is lowered by 4.
TEST(Dequantize, Q3_KScalesAndHmask) {
  int s[16];
  for (int k = 0; k < 16; ++k) s[k] = (k * 13 + 5) % 64;
  s[3] = 0;
  s[12] = 63;
  BlockQ3_K b{};
  for (int k = 0; k < 16; ++k) {
    if (k < 8) b.scales[k] = static_cast<uint8_t>(b.scales[k] | (s[k] & 0xF));
    else b.scales[k - 8] = static_cast<uint8_t>(b.scales[k - 8] | ((s[k] & 0xF) << 4));
    b.scales[8 + k % 4] = static_cast<uint8_t>(b.scales[8 + k % 4] | ((s[k] >> 4) << (2 * (k / 4))));
  }
  for (int i = 0; i < 32; ++i) b.hmask[i] = static_cast<uint8_t>(i * 53 + 17);
  for (int i = 0; i < 64; ++i) b.qs[i] = static_cast<uint8_t>(i * 29 + 3);
  b.d = H(0.0173f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    const bool high = (b.hmask[e % 32] >> (e / 32)) & 1;
    const int q = K2Bits(b.qs, e) - (high ? 0 : 4);
    const float dl = F(b.d) * static_cast<float>(s[e / 16] - 32);
    want[e] = dl * static_cast<float>(q);
  }
  ExpectSame(want, DeqBlock(T::kQ3_K, b));
}

// Q4_K / Q5_K: 8 six-bit scales sc[k] and mins mn[k], one per 32 elements.
// k < 4: sc[k] = low 6 bits of byte k, mn[k] = low 6 bits of byte k+4.
// k >= 4: low 4 bits in byte k+4 (scale low nibble, min high nibble), top 2
// bits in bits 6..7 of byte k-4 (scale) and byte k (min).
void PackScaleMinK4(const int sc[8], const int mn[8], uint8_t out[12]) {
  std::memset(out, 0, 12);
  for (int k = 0; k < 4; ++k) {
    out[k] = static_cast<uint8_t>(sc[k] | ((sc[k + 4] >> 4) << 6));
    out[k + 4] = static_cast<uint8_t>(mn[k] | ((mn[k + 4] >> 4) << 6));
    out[k + 8] = static_cast<uint8_t>((sc[k + 4] & 0xF) | ((mn[k + 4] & 0xF) << 4));
  }
}
constexpr int kSc[8] = {1, 63, 17, 33, 48, 5, 62, 40};
constexpr int kMn[8] = {0, 12, 63, 7, 50, 31, 2, 61};
// 4-bit quant of element e: 64-element chunks; the first 32 are the low
// nibbles of qs[32c .. 32c+31], the next 32 the high nibbles.
int K4Nibble(const uint8_t* qs, int e) {
  const uint8_t byte = qs[32 * (e / 64) + e % 32];
  return (e % 64) < 32 ? (byte & 0xF) : (byte >> 4);
}

TEST(Dequantize, Q4_KScalesBelowAndAboveFour) {
  BlockQ4_K b{};
  PackScaleMinK4(kSc, kMn, b.scales);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(i * 41 + 5);
  b.d = H(0.01f);
  b.dmin = H(0.003f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    const float d1 = F(b.d) * static_cast<float>(kSc[e / 32]);
    const float m1 = F(b.dmin) * static_cast<float>(kMn[e / 32]);
    want[e] = d1 * static_cast<float>(K4Nibble(b.qs, e)) - m1;
  }
  ExpectSame(want, DeqBlock(T::kQ4_K, b));
}

// Q5_K: as Q4_K plus a 5th bit: bit e/32 of qh[e%32] adds 16.
TEST(Dequantize, Q5_K) {
  BlockQ5_K b{};
  PackScaleMinK4(kSc, kMn, b.scales);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(i * 41 + 5);
  for (int i = 0; i < 32; ++i) b.qh[i] = static_cast<uint8_t>(i * 23 + 9);
  b.d = H(0.0071f);
  b.dmin = H(0.0029f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    const int q = K4Nibble(b.qs, e) + (((b.qh[e % 32] >> (e / 32)) & 1) ? 16 : 0);
    const float d1 = F(b.d) * static_cast<float>(kSc[e / 32]);
    const float m1 = F(b.dmin) * static_cast<float>(kMn[e / 32]);
    want[e] = d1 * static_cast<float>(q) - m1;
  }
  ExpectSame(want, DeqBlock(T::kQ5_K, b));
}

// Q6_K: per 128 elements (half h), 32-element group g (0..3), index l:
// low 4 bits: g=0 low nibble of ql[64h+l], g=1 low nibble of ql[64h+32+l],
// g=2 high nibble of ql[64h+l], g=3 high nibble of ql[64h+32+l];
// high 2 bits: bits 2g of qh[32h+l]; value (q - 32) * d * scales[e/16].
TEST(Dequantize, Q6_KLowHighSplit) {
  BlockQ6_K b{};
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>(i * 31 + 7);
  for (int i = 0; i < 64; ++i) b.qh[i] = static_cast<uint8_t>(i * 17 + 3);
  for (int k = 0; k < 16; ++k) b.scales[k] = static_cast<int8_t>(k * 19 - 128);
  b.scales[5] = 127;
  b.d = H(0.031f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, g = (e % 128) / 32, l = e % 32;
    const uint8_t lo_byte = b.ql[64 * h + 32 * (g % 2) + l];
    const int low = g < 2 ? (lo_byte & 0xF) : (lo_byte >> 4);
    const int high = (b.qh[32 * h + l] >> (2 * g)) & 3;
    const int q = (low | (high << 4)) - 32;
    want[e] = F(b.d) * static_cast<float>(b.scales[e / 16]) * static_cast<float>(q);
  }
  ExpectSame(want, DeqBlock(T::kQ6_K, b));
}

TEST(Dequantize, Q8_K) {
  BlockQ8_K b{};
  b.d = 0.375f;
  for (int j = 0; j < 256; ++j) b.qs[j] = static_cast<int8_t>(static_cast<uint8_t>(j * 7));
  std::vector<float> want(256);
  for (int j = 0; j < 256; ++j) want[j] = 0.375f * static_cast<float>(b.qs[j]);
  ExpectSame(want, DeqBlock(T::kQ8_K, b));
}

}  // namespace
}  // namespace strata
