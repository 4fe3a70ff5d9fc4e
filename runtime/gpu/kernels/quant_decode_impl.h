#pragma once
// The weight decoders that quant_decode.h declares, one per type: device code
// (kernels/portable.h) for CUDA, HIP and the software GPU.
//
// Layouts: every field offset and block size below is offsetof / sizeof of the
// type's struct in runtime/quant/blocks.h, the one description of each block;
// the value formulas are the reference dequantizers' (runtime/quant/
// dequantize*.cc, docs/quant-types.md), which tests/gpu_quant_decode_test.cc
// checks these against.
//
// Exactness: for every type, scale[h] * q[i] (+ offset[h]) in float gives the
// reference's value bit for bit, fused multiply-add or not. Every reference
// value is a product of small integers and one half (or power of two, or
// UE4M3) scale, which float holds exactly (at most 24 significant bits: e.g.
// Q6_K: 11-bit half x 8-bit scale x 6-bit quant), plus for the types with a
// minimum one subtraction of an exact product, rounded once. The decoders
// compute the same exact products (scale is itself an exact product, and
// scale * q is exact), so the one rounding, where there is one, is the same.
// IQ1_S / IQ1_M: the reference's dl * (grid +- 1/8) is dl/8 * (8 grid +- 1),
// both exact. Subnormal floats must not be flushed (MXFP4 scales with e < 2
// are subnormal; nvcc and hipcc keep them by default: no -ftz / fast math).
//
// Speed: the decoders run in the inner loop of the matrix kernels. They read
// a sub-block's bits four bytes at a time (Load32: blocks sit at any byte
// offset) and turn them into four int8 values with word-wide bit operations
// (no per-element branches or loads); the i-quant grid points are expanded
// from ggml's 16-bit index tables with the same kind of byte arithmetic, and
// 16-entry value tables (IQ4_NL, FP4) are byte permutes on constants.

#include <cstddef>
#include <cstdint>

#include "runtime/gpu/kernels/portable.h"
#include "runtime/gpu/kernels/quant_decode.h"
#include "runtime/gpu/kernels/weight_types.h"
#include "runtime/quant/blocks.h"    // the block structs: offsetof / sizeof only
#include "runtime/quant/iq_grids.h"  // kValuesIq4nl, kValuesFp4: packed into constants at compile time

STRATA_GPU_BEGIN

// The i-quant index tables (kIq2XxsIndex ...), their level values and
// KsignsIq2xs, in device memory: the one copy, shared with the CPU's grids.
#define STRATA_IQ_INDEX_TABLE STRATA_DEVICE_TABLE
#define STRATA_IQ_INDEX_FUNCTION STRATA_DEV constexpr
#include "runtime/quant/iq_grid_index.h"

namespace decode {

// ----------------------------------------------------------------------------
// Bytes in a word. "Byte-wise" below means the four bytes of a uint32 as
// independent lanes; every helper states the lane ranges under which no carry
// or borrow crosses a lane.
// ----------------------------------------------------------------------------

// Byte-wise x - c as int8 lanes. REQUIRES: lanes of x in [0, 127], of c in
// [0, 128]. (x + 128 - c stays in [0, 255]; flipping bit 7 subtracts the 128.)
STRATA_DEV constexpr uint32_t SubBytes(uint32_t x, uint32_t c) {
  return (x + (0x80808080u - c)) ^ 0x80808080u;
}

// Bits 0..3 of b, one per byte lane (bit i -> bit 0 of lane i). The multiply
// puts bit i at 8i (shift 7i); no two shifted bits meet, so nothing carries.
STRATA_DEV constexpr uint32_t SpreadBits4(uint32_t b) { return ((b & 0xFu) * 0x00204081u) & 0x01010101u; }

// The four 2-bit fields of byte b (field i at bits 2i), one per lane.
STRATA_DEV constexpr uint32_t Spread2(uint32_t b) {
  const uint32_t t = (b | (b << 12)) & 0x000F000Fu;  // fields 0, 1 at bits 0..3; 2, 3 at 16..19
  return (t | (t << 6)) & 0x03030303u;
}

// The four 3-bit fields of a 12-bit x (field i at bits 3i), one per lane.
STRATA_DEV constexpr uint32_t Spread3(uint32_t x) {
  const uint32_t t = (x | (x << 10)) & 0x003F003Fu;  // fields 0, 1 at bits 0..5; 2, 3 at 16..21
  return (t | (t << 5)) & 0x07070707u;
}

// Negates lane i of g where bit i of s is set (bits 0..3 of s). REQUIRES: lanes
// of g in [1, 127] (grid values are never 0, so ~g + 1 never carries out).
STRATA_DEV constexpr uint32_t ApplySigns(uint32_t g, uint32_t s) {
  const uint32_t ones = SpreadBits4(s);
  // Lanes of 0xFF where negated: 0x80 - 1 = 0x7F, 0x80 - 0 = 0x80, then bit 7
  // flipped (ones * 255 would be a full-width multiply, a quarter rate on AMD).
  const uint32_t mask = (0x80808080u - ones) ^ 0x80808080u;
  return (g ^ mask) + ones;
}

// Level values of grid fields, byte-wise (iq_grid_index.h's level tables).
// IQ2: 0, 1, 2 -> 8, 25, 43 = 8 + 17 l + (l >> 1).
STRATA_DEV constexpr uint32_t Iq2Levels(uint32_t f) { return 0x08080808u + (f << 4) + f + ((f >> 1) & 0x01010101u); }
// IQ3_XXS: l -> 4 + 8 l, and 62 (not 60) for l = 7: l + 1 = 8 sets bit 3.
STRATA_DEV constexpr uint32_t Iq3XxsLevels(uint32_t f) {
  return 0x04040404u + (f << 3) + (((f + 0x01010101u) >> 2) & 0x02020202u);
}
// IQ3_S: l -> 2 l + 1.
STRATA_DEV constexpr uint32_t Iq3SLevels(uint32_t f) { return (f << 1) | 0x01010101u; }
// IQ1_S / IQ1_M: 8 * (level) + delta for 2-bit fields f (level = f - 1, -1..1)
// and delta = +1 (k = 0x79) or -1 (k = 0x77): 8 f - 8 +- 1 + 128 = 8 f + k
// stays in [0x77, 0x89], then bit 7 flips the 128 back out.
STRATA_DEV constexpr uint32_t Iq1Values(uint32_t f, uint32_t k) { return ((f << 3) + k) ^ 0x80808080u; }

// Map kMap (0: Iq2Levels, 1: Iq3XxsLevels, 2: Iq3SLevels) against a level
// table: lane 1 set to each level index, the others 0, gives the table's value
// in lane 1 and level 0's in the others (nothing carries between lanes).
template <int kMap, int kN>
constexpr bool LevelsMatch(const uint8_t (&table)[kN]) {
  for (int l = 0; l < kN; ++l) {
    const uint32_t f = static_cast<uint32_t>(l) << 8;
    const uint32_t got = kMap == 0 ? Iq2Levels(f) : kMap == 1 ? Iq3XxsLevels(f) : Iq3SLevels(f);
    if (got != table[0] * 0x01010001u + (static_cast<uint32_t>(table[l]) << 8)) return false;
  }
  return true;
}

// Iq1Values against kIq1Levels, for both deltas, in lane 1.
constexpr bool Iq1ValuesMatch() {
  for (int l = 0; l < 3; ++l)
    for (int delta = -1; delta <= 1; delta += 2) {
      const uint32_t got = Iq1Values(static_cast<uint32_t>(l) << 8, delta > 0 ? 0x79797979u : 0x77777777u);
      if (static_cast<int8_t>(got >> 8) != 8 * kIq1Levels[l] + delta) return false;
    }
  return true;
}

// ----------------------------------------------------------------------------
// 16-entry int8 tables (kvalues_iq4nl, kvalues_fp4) as byte permutes.
// ----------------------------------------------------------------------------

// Bytes 4k..4k+3 of a 16-entry table as a little-endian word.
template <typename Table>
constexpr uint32_t TableWord(const Table& t, int k) {
  return static_cast<uint32_t>(static_cast<uint8_t>(t[4 * k])) |
         static_cast<uint32_t>(static_cast<uint8_t>(t[4 * k + 1])) << 8 |
         static_cast<uint32_t>(static_cast<uint8_t>(t[4 * k + 2])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(t[4 * k + 3])) << 24;
}

// Lookup16 on the GPUs: byte permutes of the table's four words. Each form is
// written over a permute primitive P::Perm so that the test runs it on the host
// with an emulation of the instruction:
//   Lookup16ByNibbles (CUDA's __byte_perm(x, y, s), PRMT): lane n of the
//     result is byte (s >> 4n) & 7 of the 8 bytes x, y (x the low four);
//   Lookup16ByBytes (AMD's v_perm_b32(a, b, s)): lane n is byte (s >> 8n) &
//     0xFF of the 8 bytes b, a (b the low four); selectors 0..7 only.
// Neither form ever sets a selector's bit 3 (both instructions give it other
// meanings).

// Per 16 bits of w: look the 4 nibbles up in both table halves by their low
// 3 bits, pick by bit 3 (lanes in nibble order: low, high, low, high); then
// sort the lanes of both halves into the low nibbles (0x6420) and the high
// ones (0x7531).
template <typename P>
STRATA_DEV void Lookup16ByNibbles(uint32_t w, uint32_t t0, uint32_t t1, uint32_t t2, uint32_t t3, uint32_t& lo,
                                  uint32_t& hi) {
  const uint32_t idx = w & 0x77777777u;
  const uint32_t pick = 0x32103210u | ((w & 0x88888888u) >> 1);
  const uint32_t a = P::Perm(P::Perm(t0, t1, idx), P::Perm(t2, t3, idx), pick & 0xFFFFu);
  const uint32_t b = P::Perm(P::Perm(t0, t1, idx >> 16), P::Perm(t2, t3, idx >> 16), pick >> 16);
  lo = P::Perm(a, b, 0x6420u);
  hi = P::Perm(a, b, 0x7531u);
}

// A lane per index already: look up in both halves, pick by bit 3.
template <typename P>
STRATA_DEV void Lookup16ByBytes(uint32_t w, uint32_t t0, uint32_t t1, uint32_t t2, uint32_t t3, uint32_t& lo,
                                uint32_t& hi) {
  const uint32_t l = w & 0x0F0F0F0Fu, h = (w >> 4) & 0x0F0F0F0Fu;
  lo = P::Perm(P::Perm(t3, t2, l & 0x07070707u), P::Perm(t1, t0, l & 0x07070707u),
               0x03020100u | ((l & 0x08080808u) >> 1));
  hi = P::Perm(P::Perm(t3, t2, h & 0x07070707u), P::Perm(t1, t0, h & 0x07070707u),
               0x03020100u | ((h & 0x08080808u) >> 1));
}

#if defined(STRATA_GPU_CUDA) && defined(__CUDA_ARCH__)
struct DevicePerm {
  STRATA_DEV static uint32_t Perm(uint32_t x, uint32_t y, uint32_t s) { return __byte_perm(x, y, s); }
};
#elif defined(STRATA_GPU_HIP) && defined(__HIP_DEVICE_COMPILE__)
struct DevicePerm {
  STRATA_DEV static uint32_t Perm(uint32_t a, uint32_t b, uint32_t s) { return __builtin_amdgcn_perm(a, b, s); }
};
#endif

// The 8 nibbles of w looked up in kTable (16 int8): lane i of lo is
// kTable[nibble 2i] (the low nibble of byte i), of hi kTable[nibble 2i + 1].
template <const auto& kTable>
STRATA_DEV void Lookup16(uint32_t w, uint32_t& lo, uint32_t& hi) {
  constexpr uint32_t t0 = TableWord(kTable, 0), t1 = TableWord(kTable, 1), t2 = TableWord(kTable, 2),
                     t3 = TableWord(kTable, 3);
#if defined(STRATA_GPU_CUDA) && defined(__CUDA_ARCH__)
  Lookup16ByNibbles<DevicePerm>(w, t0, t1, t2, t3, lo, hi);
#elif defined(STRATA_GPU_HIP) && defined(__HIP_DEVICE_COMPILE__)
  Lookup16ByBytes<DevicePerm>(w, t0, t1, t2, t3, lo, hi);
#else
  const uint32_t t[4] = {t0, t1, t2, t3};
  lo = hi = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t nl = (w >> (8 * i)) & 0xFu, nh = (w >> (8 * i + 4)) & 0xFu;
    lo |= ((t[nl / 4] >> (8 * (nl % 4))) & 0xFFu) << (8 * i);
    hi |= ((t[nh / 4] >> (8 * (nh % 4))) & 0xFFu) << (8 * i);
  }
#endif
}

// Q4_0-style nibbles through a value table: bytes qs[0..15] hold element i
// (low nibble) and i + 16 (high nibble).
template <const auto& kTable>
STRATA_DEV void TableNibbles32(const uint8_t* qs, Sub32& out) {
  for (int k = 0; k < 4; ++k) {
    uint32_t lo, hi;
    Lookup16<kTable>(Load32(qs + 4 * k), lo, hi);
    out.q[k] = static_cast<int32_t>(lo);
    out.q[k + 4] = static_cast<int32_t>(hi);
  }
}

// ----------------------------------------------------------------------------
// Scales
// ----------------------------------------------------------------------------

STRATA_DEV float HalfAt(const uint8_t* p) { return HalfToFloat(Load16(p)); }

// As fp_convert.h's E8M0ToFp32Half: 2^(e - 128); e = 0, 1 give subnormals.
STRATA_DEV float E8M0HalfToFloat(uint32_t e) { return BitsToFloat(e < 2 ? 0x00200000u << e : (e - 1) << 23); }

// As fp_convert.h's Ue4m3ToFp32 (UE4M3 times 0.5): bit 7 ignored, 0x7F (NaN)
// and 0 give 0, exponent 0 is man * 2^-9 (halved: 2^-10), exponent e >= 1 is
// (1 + man / 8) * 2^(e - 7) (halved: biased float exponent e + 119). The
// subnormal case goes through an integer conversion, not a subnormal float.
STRATA_DEV float Ue4m3ToFloat(uint32_t x) {
  const uint32_t e = (x >> 3) & 0xFu, man = x & 7u;
  const float v = e == 0 ? static_cast<float>(man) * 0x1p-10f : BitsToFloat(((e + 119u) << 23) | (man << 20));
  return x == 0x7Fu ? 0.0f : v;
}

STRATA_DEV void SetScales(Sub32& out, float s0, float s1) {
  out.scale[0] = s0;
  out.scale[1] = s1;
  out.offset[0] = out.offset[1] = 0.0f;
}

// The block that holds sub-block j, and j's index in it.
template <typename Block>
STRATA_DEV const uint8_t* BlockOf(const uint8_t* row, int64_t j, int subs_per_block) {
  return row + static_cast<uint64_t>(j) / static_cast<uint64_t>(subs_per_block) * sizeof(Block);
}
STRATA_DEV int SubIndex(int64_t j, int subs_per_block) {
  return static_cast<int>(static_cast<uint64_t>(j) % static_cast<uint64_t>(subs_per_block));
}

// Q4_K / Q5_K: 6-bit scale and min of sub-block s (0..7) from the 12 packed
// bytes (the reference's ScaleMinK4, without a branch on s).
STRATA_DEV void ScaleMinK4(const uint8_t* sc, int s, uint32_t& scale, uint32_t& min) {
  const uint32_t a = sc[s & 3], b = sc[(s & 3) + 4], c = sc[(s & 3) + 8];
  const bool high = s >= 4;
  scale = high ? (c & 0xFu) | ((a >> 6) << 4) : a & 63u;
  min = high ? (c >> 4) | ((b >> 6) << 4) : b & 63u;
}

// Q3_K: the 6-bit scale of group g (0..15), before the -32 bias: a nibble of
// bytes 0..7 (low for g < 8) and 2 bits of bytes 8..11.
STRATA_DEV int ScaleQ3K(const uint8_t* sc, int g) {
  const uint32_t low = (static_cast<uint32_t>(sc[g & 7]) >> (4 * (g >> 3))) & 0xFu;
  const uint32_t high = (static_cast<uint32_t>(sc[8 + (g & 3)]) >> (2 * (g >> 2))) & 3u;
  return static_cast<int>(low | (high << 4));
}

// IQ2_XXS / IQ2_XS / IQ3_XXS scales: d * (0.5 + s) * c, as the reference.
STRATA_DEV float HalfStepScale(float d, uint32_t s, float c) { return d * (0.5f + static_cast<float>(s)) * c; }

// Base-3 digit n of each byte of w, minus 1 (TQ1_0): ((u8)(byte * 3^n) * 3) >> 8,
// in two 16-bit lanes at a time (byte * 81 and 255 * 3 fit 16 bits).
STRATA_DEV uint32_t TritsMinusOne(uint32_t w, uint32_t n) {
  const uint32_t p = static_cast<uint32_t>((0x51'1B'09'03'01ull >> (8 * n)) & 0xFFu);  // 3^n
  const uint32_t even = ((((w & 0x00FF00FFu) * p) & 0x00FF00FFu) * 3u >> 8) & 0x00030003u;
  const uint32_t odd = (((((w >> 8) & 0x00FF00FFu) * p) & 0x00FF00FFu) * 3u >> 8) & 0x00030003u;
  return SubBytes(even | (odd << 8), 0x01010101u);
}

}  // namespace decode

// The byte-wise level maps give iq_grid_index.h's levels (the test checks every grid point).
static_assert(decode::LevelsMatch<0>(kIq2Levels));
static_assert(decode::LevelsMatch<1>(kIq3XxsLevels));
static_assert(decode::LevelsMatch<2>(kIq3SLevels));
static_assert(decode::Iq1ValuesMatch());

// Each type: the block (blocks.h), which sub-block, then its 8 words and scales.
// A primary template that no type reaches: DecodeSub32 of a type without a
// decoder fails to compile.
template <int kType>
STRATA_DEV void DecodeSub32(const uint8_t*, int64_t, Sub32&) {
  static_assert(kType < 0, "no decoder for this weight type (STRATA_GPU_QUANT_TYPES)");
}

// --- 32-element blocks: element i < 16 in the low nibble of qs[i], i + 16 in
// the high one.
template <>
STRATA_DEV void DecodeSub32<wt::kQ4_0>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ4_0;
  const uint8_t* b = decode::BlockOf<B>(row, j, 1);
  for (int k = 0; k < 4; ++k) {
    const uint32_t w = Load32(b + offsetof(B, qs) + 4 * k);
    out.q[k] = static_cast<int32_t>(decode::SubBytes(w & 0x0F0F0F0Fu, 0x08080808u));
    out.q[k + 4] = static_cast<int32_t>(decode::SubBytes((w >> 4) & 0x0F0F0F0Fu, 0x08080808u));
  }
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d, d);
}

template <>
STRATA_DEV void DecodeSub32<wt::kQ4_1>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ4_1;
  const uint8_t* b = decode::BlockOf<B>(row, j, 1);
  for (int k = 0; k < 4; ++k) {
    const uint32_t w = Load32(b + offsetof(B, qs) + 4 * k);
    out.q[k] = static_cast<int32_t>(w & 0x0F0F0F0Fu);
    out.q[k + 4] = static_cast<int32_t>((w >> 4) & 0x0F0F0F0Fu);
  }
  out.scale[0] = out.scale[1] = decode::HalfAt(b + offsetof(B, d));
  out.offset[0] = out.offset[1] = decode::HalfAt(b + offsetof(B, m));
}

// Q5_0 / Q5_1: bit i of the little-endian u32 qh is bit 4 of element i.
template <>
STRATA_DEV void DecodeSub32<wt::kQ5_0>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ5_0;
  const uint8_t* b = decode::BlockOf<B>(row, j, 1);
  const uint32_t qh = Load32(b + offsetof(B, qh));
  for (int k = 0; k < 4; ++k) {
    const uint32_t w = Load32(b + offsetof(B, qs) + 4 * k);
    const uint32_t lo = (w & 0x0F0F0F0Fu) | decode::SpreadBits4(qh >> (4 * k)) << 4;
    const uint32_t hi = ((w >> 4) & 0x0F0F0F0Fu) | decode::SpreadBits4(qh >> (16 + 4 * k)) << 4;
    out.q[k] = static_cast<int32_t>(decode::SubBytes(lo, 0x10101010u));
    out.q[k + 4] = static_cast<int32_t>(decode::SubBytes(hi, 0x10101010u));
  }
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d, d);
}

template <>
STRATA_DEV void DecodeSub32<wt::kQ5_1>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ5_1;
  const uint8_t* b = decode::BlockOf<B>(row, j, 1);
  const uint32_t qh = Load32(b + offsetof(B, qh));
  for (int k = 0; k < 4; ++k) {
    const uint32_t w = Load32(b + offsetof(B, qs) + 4 * k);
    out.q[k] = static_cast<int32_t>((w & 0x0F0F0F0Fu) | decode::SpreadBits4(qh >> (4 * k)) << 4);
    out.q[k + 4] = static_cast<int32_t>(((w >> 4) & 0x0F0F0F0Fu) | decode::SpreadBits4(qh >> (16 + 4 * k)) << 4);
  }
  out.scale[0] = out.scale[1] = decode::HalfAt(b + offsetof(B, d));
  out.offset[0] = out.offset[1] = decode::HalfAt(b + offsetof(B, m));
}

template <>
STRATA_DEV void DecodeSub32<wt::kQ8_0>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ8_0;
  const uint8_t* b = decode::BlockOf<B>(row, j, 1);
  for (int k = 0; k < 8; ++k) out.q[k] = static_cast<int32_t>(Load32(b + offsetof(B, qs) + 4 * k));
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d, d);
}

template <>
STRATA_DEV void DecodeSub32<wt::kIQ4_NL>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockIq4_nl;
  const uint8_t* b = decode::BlockOf<B>(row, j, 1);
  decode::TableNibbles32<::strata::kValuesIq4nl>(b + offsetof(B, qs), out);
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d, d);
}

template <>
STRATA_DEV void DecodeSub32<wt::kMXFP4>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockMxfp4;
  const uint8_t* b = decode::BlockOf<B>(row, j, 1);
  decode::TableNibbles32<::strata::kValuesFp4>(b + offsetof(B, qs), out);
  const float d = decode::E8M0HalfToFloat(b[offsetof(B, e)]);
  decode::SetScales(out, d, d);
}

// NVFP4: 16-element groups t = 2s, 2s + 1, each with a UE4M3 scale; byte
// qs[8t + i] holds element 16t + i (low nibble) and 16t + i + 8 (high).
template <>
STRATA_DEV void DecodeSub32<wt::kNVFP4>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockNvfp4;
  const uint8_t* b = decode::BlockOf<B>(row, j, 2);
  const int t0 = 2 * decode::SubIndex(j, 2);
  float scale[2];
  for (int h = 0; h < 2; ++h) {
    const uint8_t* qs = b + offsetof(B, qs) + 8 * (t0 + h);
    uint32_t lo, hi;
    decode::Lookup16<::strata::kValuesFp4>(Load32(qs), lo, hi);
    out.q[4 * h] = static_cast<int32_t>(lo);
    out.q[4 * h + 2] = static_cast<int32_t>(hi);
    decode::Lookup16<::strata::kValuesFp4>(Load32(qs + 4), lo, hi);
    out.q[4 * h + 1] = static_cast<int32_t>(lo);
    out.q[4 * h + 3] = static_cast<int32_t>(hi);
    scale[h] = decode::Ue4m3ToFloat(b[offsetof(B, d) + t0 + h]);
  }
  decode::SetScales(out, scale[0], scale[1]);
}

// Q1_0 (128 elements): bit i of qs is element i, +1 if set, -1 if clear.
template <>
STRATA_DEV void DecodeSub32<wt::kQ1_0>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ1_0;
  const uint8_t* b = decode::BlockOf<B>(row, j, 4);
  const uint32_t bits = Load32(b + offsetof(B, qs) + 4 * decode::SubIndex(j, 4));
  for (int k = 0; k < 8; ++k)
    out.q[k] = static_cast<int32_t>(decode::SubBytes(decode::SpreadBits4(bits >> (4 * k)) << 1, 0x01010101u));  // 2b - 1
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d, d);
}

// Q2_0 (64 elements): byte qs[i / 4] holds elements i .. i + 3, 2 bits each; q - 1.
template <>
STRATA_DEV void DecodeSub32<wt::kQ2_0>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ2_0;
  const uint8_t* b = decode::BlockOf<B>(row, j, 2);
  const uint8_t* qs = b + offsetof(B, qs) + 8 * decode::SubIndex(j, 2);
  for (int k = 0; k < 8; ++k) out.q[k] = static_cast<int32_t>(decode::SubBytes(decode::Spread2(qs[k]), 0x01010101u));
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d, d);
}

// --- K-quants (256-element super-blocks; sub-block s = j % 8).

// Q2_K: element 32s + i is 2 bits at qs[32 (s / 4) + i] >> 2 (s % 4); group g
// of 16 has scales[2s + g] (low nibble scale, high nibble min).
template <>
STRATA_DEV void DecodeSub32<wt::kQ2_K>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ2_K;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  const uint8_t* qs = b + offsetof(B, qs) + 32 * (s >> 2);
  const int shift = 2 * (s & 3);
  for (int k = 0; k < 8; ++k) out.q[k] = static_cast<int32_t>((Load32(qs + 4 * k) >> shift) & 0x03030303u);
  const float d = decode::HalfAt(b + offsetof(B, d)), dmin = decode::HalfAt(b + offsetof(B, dmin));
  for (int g = 0; g < 2; ++g) {
    const uint32_t sc = b[offsetof(B, scales) + 2 * s + g];
    out.scale[g] = d * static_cast<float>(sc & 0xFu);
    out.offset[g] = -(dmin * static_cast<float>(sc >> 4));
  }
}

// Q3_K: as Q2_K's 2 low bits, and bit s of hmask[i] clear means -4.
template <>
STRATA_DEV void DecodeSub32<wt::kQ3_K>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ3_K;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  const uint8_t* qs = b + offsetof(B, qs) + 32 * (s >> 2);
  const int shift = 2 * (s & 3);
  for (int k = 0; k < 8; ++k) {
    const uint32_t low = (Load32(qs + 4 * k) >> shift) & 0x03030303u;
    const uint32_t high = (Load32(b + offsetof(B, hmask) + 4 * k) >> s) & 0x01010101u;
    out.q[k] = static_cast<int32_t>(decode::SubBytes(low | (high << 2), 0x04040404u));
  }
  const float d = decode::HalfAt(b + offsetof(B, d));
  const uint8_t* sc = b + offsetof(B, scales);
  decode::SetScales(out, d * static_cast<float>(decode::ScaleQ3K(sc, 2 * s) - 32),
                    d * static_cast<float>(decode::ScaleQ3K(sc, 2 * s + 1) - 32));
}

// Q4_K: sub-block s is the low (s even) or high nibbles of qs[32 (s / 2) ..];
// one 6-bit scale and min per 32.
template <>
STRATA_DEV void DecodeSub32<wt::kQ4_K>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ4_K;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  const uint8_t* qs = b + offsetof(B, qs) + 32 * (s >> 1);
  const int shift = 4 * (s & 1);
  for (int k = 0; k < 8; ++k) out.q[k] = static_cast<int32_t>((Load32(qs + 4 * k) >> shift) & 0x0F0F0F0Fu);
  uint32_t sc, m;
  decode::ScaleMinK4(b + offsetof(B, scales), s, sc, m);
  out.scale[0] = out.scale[1] = decode::HalfAt(b + offsetof(B, d)) * static_cast<float>(sc);
  out.offset[0] = out.offset[1] = -(decode::HalfAt(b + offsetof(B, dmin)) * static_cast<float>(m));
}

// Q5_K: Q4_K plus bit s of qh[i] as bit 4.
template <>
STRATA_DEV void DecodeSub32<wt::kQ5_K>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ5_K;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  const uint8_t* qs = b + offsetof(B, qs) + 32 * (s >> 1);
  const int shift = 4 * (s & 1);
  for (int k = 0; k < 8; ++k) {
    const uint32_t low = (Load32(qs + 4 * k) >> shift) & 0x0F0F0F0Fu;
    const uint32_t high = (Load32(b + offsetof(B, qh) + 4 * k) >> s) & 0x01010101u;
    out.q[k] = static_cast<int32_t>(low | (high << 4));
  }
  uint32_t sc, m;
  decode::ScaleMinK4(b + offsetof(B, scales), s, sc, m);
  out.scale[0] = out.scale[1] = decode::HalfAt(b + offsetof(B, d)) * static_cast<float>(sc);
  out.offset[0] = out.offset[1] = -(decode::HalfAt(b + offsetof(B, dmin)) * static_cast<float>(m));
}

// Q6_K: in half h = s / 4, sub-block r = s % 4 takes the low (r < 2) or high
// nibbles of ql[64 h + 32 (r % 2) ..], bits 2r of qh[32 h ..] as bits 4..5,
// minus 32; group g of 16 has the int8 scales[2s + g].
template <>
STRATA_DEV void DecodeSub32<wt::kQ6_K>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ6_K;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  const int r = s & 3;
  const uint8_t* ql = b + offsetof(B, ql) + 64 * (s >> 2) + 32 * (r & 1);
  const uint8_t* qh = b + offsetof(B, qh) + 32 * (s >> 2);
  const int ql_shift = 4 * (r >> 1), qh_shift = 2 * r;
  for (int k = 0; k < 8; ++k) {
    const uint32_t low = (Load32(ql + 4 * k) >> ql_shift) & 0x0F0F0F0Fu;
    const uint32_t high = (Load32(qh + 4 * k) >> qh_shift) & 0x03030303u;
    out.q[k] = static_cast<int32_t>(decode::SubBytes(low | (high << 4), 0x20202020u));
  }
  const float d = decode::HalfAt(b + offsetof(B, d));
  const uint8_t* sc = b + offsetof(B, scales) + 2 * s;
  decode::SetScales(out, d * static_cast<float>(static_cast<int8_t>(sc[0])),
                    d * static_cast<float>(static_cast<int8_t>(sc[1])));
}

// --- Ternary.

// TQ1_0: base-3 digits (TritsMinusOne). Digit n of qs[0..31] is sub-block n
// (n < 5); digits 0..4 of qs[32..47] are elements 160 + 16n ..; digit n of
// qh[0..3] is elements 240 + 4n ... So each 16 elements are 4 words at src +
// stride k with digit n0 + dn k.
template <>
STRATA_DEV void DecodeSub32<wt::kTQ1_0>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockTq1_0;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  for (int h = 0; h < 2; ++h) {
    const bool in_qh = s == 7 && h == 1;
    const uint8_t* src = s < 5 ? b + offsetof(B, qs) + 16 * h : in_qh ? b + offsetof(B, qh) : b + offsetof(B, qs) + 32;
    const uint32_t stride = in_qh ? 0 : 4, dn = in_qh ? 1 : 0;
    const uint32_t n0 = s < 5 ? static_cast<uint32_t>(s) : in_qh ? 0 : static_cast<uint32_t>(2 * (s - 5) + h);
    for (uint32_t k = 0; k < 4; ++k)
      out.q[4 * h + static_cast<int>(k)] = static_cast<int32_t>(decode::TritsMinusOne(Load32(src + stride * k), n0 + dn * k));
  }
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d, d);
}

// TQ2_0: element 128 h + 32 r + i is bits 2r of qs[32 h + i], minus 1.
template <>
STRATA_DEV void DecodeSub32<wt::kTQ2_0>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockTq2_0;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  const uint8_t* qs = b + offsetof(B, qs) + 32 * (s >> 2);
  const int shift = 2 * (s & 3);
  for (int k = 0; k < 8; ++k)
    out.q[k] = static_cast<int32_t>(decode::SubBytes((Load32(qs + 4 * k) >> shift) & 0x03030303u, 0x01010101u));
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d, d);
}

// --- i-quants. A group of 8 elements is one grid point (iq_grid_index.h: an
// index entry's fields expanded to levels, byte-wise) with 8 sign bits.

// IQ2_XXS: per 32, 4 grid-index bytes and a u32 of 4 x 7 sign bits (KsignsIq2xs)
// and a 4-bit scale on top.
template <>
STRATA_DEV void DecodeSub32<wt::kIQ2_XXS>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockIq2_xxs;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const uint8_t* q = b + offsetof(B, qs) + 8 * decode::SubIndex(j, 8);
  const uint32_t aux = Load32(q + 4);
  for (int l = 0; l < 4; ++l) {
    const uint32_t index = kIq2XxsIndex[q[l]];
    const uint32_t signs = KsignsIq2xs((aux >> (7 * l)) & 127u);
    out.q[2 * l] = static_cast<int32_t>(decode::ApplySigns(decode::Iq2Levels(decode::Spread2(index & 0xFFu)), signs));
    out.q[2 * l + 1] = static_cast<int32_t>(decode::ApplySigns(decode::Iq2Levels(decode::Spread2(index >> 8)), signs >> 4));
  }
  const float scale = decode::HalfStepScale(decode::HalfAt(b + offsetof(B, d)), aux >> 28, 0.25f);
  decode::SetScales(out, scale, scale);
}

// IQ2_XS: per 8, a u16 of a 9-bit grid index and 7 sign bits; a 4-bit scale
// per 16 (scales[s] low nibble, then high).
template <>
STRATA_DEV void DecodeSub32<wt::kIQ2_XS>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockIq2_xs;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  const uint8_t* q = b + offsetof(B, qs) + 8 * s;
  for (int l = 0; l < 4; ++l) {
    const uint32_t v = Load16(q + 2 * l);
    const uint32_t index = kIq2XsIndex[v & 511u];
    const uint32_t signs = KsignsIq2xs(v >> 9);
    out.q[2 * l] = static_cast<int32_t>(decode::ApplySigns(decode::Iq2Levels(decode::Spread2(index & 0xFFu)), signs));
    out.q[2 * l + 1] = static_cast<int32_t>(decode::ApplySigns(decode::Iq2Levels(decode::Spread2(index >> 8)), signs >> 4));
  }
  const float d = decode::HalfAt(b + offsetof(B, d));
  const uint32_t sc = b[offsetof(B, scales) + s];
  decode::SetScales(out, decode::HalfStepScale(d, sc & 0xFu, 0.25f), decode::HalfStepScale(d, sc >> 4, 0.25f));
}

// IQ2_S: 10-bit grid indices (low bytes in qs[0..31], bits 8..9 in qh), a
// full sign byte per 8 (qs[32..63]), a 4-bit scale per 16.
template <>
STRATA_DEV void DecodeSub32<wt::kIQ2_S>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockIq2_s;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  const uint8_t* q = b + offsetof(B, qs) + 4 * s;
  const uint32_t qh = b[offsetof(B, qh) + s];
  for (int l = 0; l < 4; ++l) {
    const uint32_t index = kIq2SIndex[q[l] | ((qh << (8 - 2 * l)) & 0x300u)];
    const uint32_t signs = q[32 + l];
    out.q[2 * l] = static_cast<int32_t>(decode::ApplySigns(decode::Iq2Levels(decode::Spread2(index & 0xFFu)), signs));
    out.q[2 * l + 1] = static_cast<int32_t>(decode::ApplySigns(decode::Iq2Levels(decode::Spread2(index >> 8)), signs >> 4));
  }
  const float d = decode::HalfAt(b + offsetof(B, d));
  const uint32_t sc = b[offsetof(B, scales) + s];
  decode::SetScales(out, decode::HalfStepScale(d, sc & 0xFu, 0.25f), decode::HalfStepScale(d, sc >> 4, 0.25f));
}

// IQ3_XXS: per 32, 8 grid-index bytes (4 elements each: qs[0..63]) and a u32
// of 4 x 7 sign bits and a 4-bit scale (qs[64..95]).
template <>
STRATA_DEV void DecodeSub32<wt::kIQ3_XXS>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockIq3_xxs;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  const uint8_t* q = b + offsetof(B, qs) + 8 * s;
  const uint32_t aux = Load32(b + offsetof(B, qs) + 64 + 4 * s);
  for (int l = 0; l < 4; ++l) {
    const uint32_t signs = KsignsIq2xs((aux >> (7 * l)) & 127u);
    out.q[2 * l] = static_cast<int32_t>(
        decode::ApplySigns(decode::Iq3XxsLevels(decode::Spread3(kIq3XxsIndex[q[2 * l]])), signs));
    out.q[2 * l + 1] = static_cast<int32_t>(
        decode::ApplySigns(decode::Iq3XxsLevels(decode::Spread3(kIq3XxsIndex[q[2 * l + 1]])), signs >> 4));
  }
  const float scale = decode::HalfStepScale(decode::HalfAt(b + offsetof(B, d)), aux >> 28, 0.5f);
  decode::SetScales(out, scale, scale);
}

// IQ3_S: 9-bit grid indices (bit 8 of index 2l + e in bit 2l + e of qh[s]), a
// sign byte per 8, scale d * (1 + 2 * nibble).
template <>
STRATA_DEV void DecodeSub32<wt::kIQ3_S>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockIq3_s;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  const uint8_t* q = b + offsetof(B, qs) + 8 * s;
  const uint32_t qh = b[offsetof(B, qh) + s];
  const uint8_t* signs = b + offsetof(B, signs) + 4 * s;
  for (int l = 0; l < 4; ++l) {
    const uint32_t i0 = q[2 * l] | ((qh << (8 - 2 * l)) & 256u), i1 = q[2 * l + 1] | ((qh << (7 - 2 * l)) & 256u);
    out.q[2 * l] = static_cast<int32_t>(decode::ApplySigns(decode::Iq3SLevels(decode::Spread3(kIq3SIndex[i0])), signs[l]));
    out.q[2 * l + 1] =
        static_cast<int32_t>(decode::ApplySigns(decode::Iq3SLevels(decode::Spread3(kIq3SIndex[i1])), static_cast<uint32_t>(signs[l]) >> 4));
  }
  const uint32_t sc = (static_cast<uint32_t>(b[offsetof(B, scales) + s / 2]) >> (4 * (s & 1))) & 0xFu;
  const float scale = decode::HalfAt(b + offsetof(B, d)) * static_cast<float>(1 + 2 * sc);
  decode::SetScales(out, scale, scale);
}

// IQ1_S: 11-bit grid indices (low bytes in qs, 3 bits each in the u16 qh[s]),
// 3-bit scale and the delta's sign on top of qh[s]. Scaled by 8: q = 8 grid +- 1.
template <>
STRATA_DEV void DecodeSub32<wt::kIQ1_S>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockIq1_s;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  const uint8_t* q = b + offsetof(B, qs) + 4 * s;
  const uint32_t qh = Load16(b + offsetof(B, qh) + 2 * s);
  const uint32_t k = 0x79797979u - (qh >> 15) * 0x02020202u;  // delta -1/8 when bit 15 is set
  for (int l = 0; l < 4; ++l) {
    const uint32_t index = kIq1SIndex[q[l] | (((qh >> (3 * l)) & 7u) << 8)];
    out.q[2 * l] = static_cast<int32_t>(decode::Iq1Values(decode::Spread2(index & 0xFFu), k));
    out.q[2 * l + 1] = static_cast<int32_t>(decode::Iq1Values(decode::Spread2(index >> 8), k));
  }
  const float dl = decode::HalfAt(b + offsetof(B, d)) * static_cast<float>(2 * ((qh >> 12) & 7u) + 1);
  decode::SetScales(out, dl * 0.125f, dl * 0.125f);
}

// IQ1_M: as IQ1_S with 3 index bits and the delta's sign per 8 (a nibble of
// qh), a 3-bit scale per 16, and the half scale d in the top nibbles of the
// four u16 scales.
template <>
STRATA_DEV void DecodeSub32<wt::kIQ1_M>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockIq1_m;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  const uint8_t* q = b + offsetof(B, qs) + 4 * s;
  const uint8_t* qh = b + offsetof(B, qh) + 2 * s;
  for (int l = 0; l < 4; ++l) {
    const uint32_t nibble = static_cast<uint32_t>(qh[l >> 1]) >> (4 * (l & 1));
    const uint32_t index = kIq1SIndex[q[l] | ((nibble & 7u) << 8)];
    const uint32_t k = 0x79797979u - ((nibble >> 3) & 1u) * 0x02020202u;
    out.q[2 * l] = static_cast<int32_t>(decode::Iq1Values(decode::Spread2(index & 0xFFu), k));
    out.q[2 * l + 1] = static_cast<int32_t>(decode::Iq1Values(decode::Spread2(index >> 8), k));
  }
  const uint8_t* sc = b + offsetof(B, scales);
  const uint32_t s0 = Load16(sc), s1 = Load16(sc + 2), s2 = Load16(sc + 4), s3 = Load16(sc + 6);
  const float d = HalfToFloat(static_cast<uint16_t>((s0 >> 12) | ((s1 >> 8) & 0x00F0u) | ((s2 >> 4) & 0x0F00u) |
                                                    (s3 & 0xF000u)));
  const uint32_t mine = Load16(sc + 2 * (s >> 1)) >> (6 * (s & 1));
  const float dl0 = d * static_cast<float>(2 * (mine & 7u) + 1), dl1 = d * static_cast<float>(2 * ((mine >> 3) & 7u) + 1);
  decode::SetScales(out, dl0 * 0.125f, dl1 * 0.125f);
}

// IQ4_XS: IQ4_NL's values with a 6-bit scale (minus 32) per 32.
template <>
STRATA_DEV void DecodeSub32<wt::kIQ4_XS>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockIq4_xs;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  decode::TableNibbles32<::strata::kValuesIq4nl>(b + offsetof(B, qs) + 16 * s, out);
  const uint32_t low = (static_cast<uint32_t>(b[offsetof(B, scales_l) + s / 2]) >> (4 * (s & 1))) & 0xFu;
  const uint32_t high = (static_cast<uint32_t>(Load16(b + offsetof(B, scales_h))) >> (2 * s)) & 3u;
  const float scale = decode::HalfAt(b + offsetof(B, d)) * static_cast<float>(static_cast<int>(low | (high << 4)) - 32);
  decode::SetScales(out, scale, scale);
}

// --- Floats and the float form of every type.

template <int kType>
STRATA_DEV float LoadFloat(const uint8_t* row, int64_t i) {
  if constexpr (kType == wt::kF32) {
    return BitsToFloat(Load32(row + 4 * i));
  } else if constexpr (kType == wt::kF16) {
    return HalfToFloat(Load16(row + 2 * i));
  } else {
    static_assert(kType == wt::kBF16, "LoadFloat reads F32, F16 and BF16 rows");
    return Bf16ToFloat(Load16(row + 2 * i));
  }
}

template <int kType>
STRATA_DEV void DecodeFloat32(const uint8_t* row, int64_t j, float* out) {
  if constexpr (IsQuantized(kType)) {
    Sub32 sub;
    DecodeSub32<kType>(row, j, sub);
    for (int i = 0; i < 32; ++i) {
      const float q = static_cast<float>(static_cast<int8_t>(static_cast<uint32_t>(sub.q[i / 4]) >> (8 * (i % 4))));
      // Without an offset no add: it would turn the reference's -0 into +0.
      out[i] = HasOffset(kType) ? sub.scale[i / 16] * q + sub.offset[i / 16] : sub.scale[i / 16] * q;
    }
  } else {
    for (int i = 0; i < 32; ++i) out[i] = LoadFloat<kType>(row, 32 * j + i);
  }
}

STRATA_GPU_END
