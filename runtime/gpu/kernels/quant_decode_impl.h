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
// each run of a sub-block's bytes as 32-bit words (LoadWords: blocks sit at
// any byte offset; on CUDA N + 1 aligned loads and funnel shifts for N words,
// where Load32 makes four byte loads per word) and turn each word into four
// int8 values with word-wide bit operations (no per-element branches or
// loads); the i-quant grid points are expanded from ggml's 16-bit index tables
// with the same kind of byte arithmetic, and 16-entry value tables (IQ4_NL,
// FP4) are byte permutes of constants. Measured in the compilers' output for
// one sub-block (sm_90 PTX; gfx90a): Q4_K 14 loads (was 39 byte loads with
// Load32), 161 PTX / 81 AMD instructions; IQ2_XXS 9 loads, 276 / 198.

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
//     result is byte (s >> 4n) & 7 of the 8 bytes x, y (x the low four): bit 3
//     of each selector nibble and bits 16..31 are ignored (libdevice's
//     __nv_byte_perm);
//   Lookup16ByBytes (AMD's v_perm_b32(a, b, s)): lane n is byte (s >> 8n) &
//     0xFF of the 8 bytes b, a (b the low four); selectors 8 and up mean
//     other things, so this form keeps them in 0..7.

// Per 16 bits of w: look the 4 nibbles up in both table halves by their low
// 3 bits, pick by bit 3 (lanes in nibble order: low, high, low, high); then
// sort the lanes of both halves into the low nibbles (0x6420) and the high
// ones (0x7531).
template <typename P>
STRATA_DEV void Lookup16ByNibbles(uint32_t w, uint32_t t0, uint32_t t1, uint32_t t2, uint32_t t3, uint32_t& lo,
                                  uint32_t& hi) {
  const uint32_t pick = 0x32103210u | ((w & 0x88888888u) >> 1);  // n, or n + 4 (the high half) for bit 3
  const uint32_t a = P::Perm(P::Perm(t0, t1, w), P::Perm(t2, t3, w), pick);
  const uint32_t b = P::Perm(P::Perm(t0, t1, w >> 16), P::Perm(t2, t3, w >> 16), pick >> 16);
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

// ----------------------------------------------------------------------------
// Loads: a decoder reads each run of a block's bytes it needs as words.
// ----------------------------------------------------------------------------

// N little-endian words from p[0 .. 4N), at any alignment, with N + 1 aligned
// 32-bit loads (the last only when p is misaligned) and a funnel shift per
// word, where Load32 makes four byte loads per word. P::Load(a) reads the
// aligned word at address a. An aligned load reads the whole 4-byte word
// around a wanted byte: never off the pages those bytes are on (nor, in
// shared memory, past a buffer whose size is a multiple of 4), but it does
// read bytes outside p[0 .. 4N), which host sanitizers flag; so only the CUDA
// device reads this way (the test runs it on a padded buffer).
template <typename P, int N>
STRATA_DEV void LoadWordsAligned(const uint8_t* p, uint32_t (&w)[N]) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  const uintptr_t base = at & ~static_cast<uintptr_t>(3);
  const uint32_t shift = static_cast<uint32_t>(at - base) * 8u;
  uint32_t lo = P::Load(base);
  for (int k = 0; k < N; ++k) {
    const uint32_t hi = k + 1 < N || shift != 0 ? P::Load(base + 4u * static_cast<uintptr_t>(k + 1)) : 0u;
    w[k] = static_cast<uint32_t>((static_cast<uint64_t>(hi) << 32 | lo) >> shift);
    lo = hi;
  }
}

#if defined(STRATA_GPU_CUDA) && defined(__CUDA_ARCH__)
struct DeviceWords {
  STRATA_DEV static uint32_t Load(uintptr_t a) { return *reinterpret_cast<const uint32_t*>(a); }
};
#endif

// N words from p[0 .. 4N), any alignment. CUDA: LoadWordsAligned. HIP: plain
// unaligned 32-bit loads (AMD GPUs load unaligned dwords; LLVM already merges
// Load32's bytes into them). Host: Load32, which compilers turn into one load.
template <int N>
STRATA_DEV void LoadWords(const uint8_t* p, uint32_t (&w)[N]) {
#if defined(STRATA_GPU_CUDA) && defined(__CUDA_ARCH__)
  LoadWordsAligned<DeviceWords>(p, w);
#elif defined(STRATA_GPU_HIP) && defined(__HIP_DEVICE_COMPILE__)
  for (int k = 0; k < N; ++k) __builtin_memcpy(&w[k], p + 4 * k, 4);
#else
  for (int k = 0; k < N; ++k) w[k] = Load32(p + 4 * k);
#endif
}

// One word (LoadWords<1>).
STRATA_DEV uint32_t LoadWord(const uint8_t* p) {
  uint32_t w[1];
  LoadWords(p, w);
  return w[0];
}

// Byte i of a word (i may vary; the word index must not, or the words leave
// registers).
STRATA_DEV uint32_t ByteOf(uint32_t w, int i) { return (w >> (8 * i)) & 0xFFu; }

// ----------------------------------------------------------------------------
// Scales
// ----------------------------------------------------------------------------

STRATA_DEV float HalfAt(const uint8_t* p) { return HalfToFloat(Load16(p)); }
// The low and high halves of a word as F16.
STRATA_DEV float LowHalf(uint32_t w) { return HalfToFloat(static_cast<uint16_t>(w)); }
STRATA_DEV float HighHalf(uint32_t w) { return HalfToFloat(static_cast<uint16_t>(w >> 16)); }

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
// bytes as words sc[0..2] (the reference's ScaleMinK4, without a branch on s):
// bytes s % 4 of each word are the low 6 bits (s < 4) or the top 2 bits and a
// nibble (s >= 4).
STRATA_DEV void ScaleMinK4(const uint32_t (&sc)[3], int s, uint32_t& scale, uint32_t& min) {
  const uint32_t a = ByteOf(sc[0], s & 3), b = ByteOf(sc[1], s & 3), c = ByteOf(sc[2], s & 3);
  const bool high = s >= 4;
  scale = high ? (c & 0xFu) | ((a >> 6) << 4) : a & 63u;
  min = high ? (c >> 4) | ((b >> 6) << 4) : b & 63u;
}

// Q3_K: the 6-bit scale of group g (0..15), before the -32 bias, from the 12
// packed bytes as words: a nibble of bytes 0..7 (low for g < 8) and 2 bits of
// bytes 8..11.
STRATA_DEV int ScaleQ3K(const uint32_t (&sc)[3], int g) {
  const uint32_t low = (ByteOf((g & 4) ? sc[1] : sc[0], g & 3) >> (4 * (g >> 3))) & 0xFu;
  const uint32_t high = (ByteOf(sc[2], g & 3) >> (2 * (g >> 2))) & 3u;
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

namespace decode {

// Lanes minus kBias (SubBytes), or as they are.
template <uint32_t kBias>
STRATA_DEV uint32_t Unbias(uint32_t x) {
  if constexpr (kBias == 0) {
    return x;
  } else {
    return SubBytes(x, kBias);
  }
}

// Q4_0-style nibbles in 4 words: low nibbles are elements 0..15, high 16..31.
template <uint32_t kBias>
STRATA_DEV void SplitNibbles(const uint32_t* w, Sub32& out) {
  for (int k = 0; k < 4; ++k) {
    out.q[k] = static_cast<int32_t>(Unbias<kBias>(w[k] & 0x0F0F0F0Fu));
    out.q[k + 4] = static_cast<int32_t>(Unbias<kBias>((w[k] >> 4) & 0x0F0F0F0Fu));
  }
}

}  // namespace decode

template <>
STRATA_DEV void DecodeSub32<wt::kQ4_0>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ4_0;
  const uint8_t* b = decode::BlockOf<B>(row, j, 1);
  uint32_t w[4];
  decode::LoadWords(b + offsetof(B, qs), w);
  decode::SplitNibbles<0x08080808u>(w, out);
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d, d);
}

template <>
STRATA_DEV void DecodeSub32<wt::kQ4_1>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ4_1;
  static_assert(offsetof(B, m) == 2 && offsetof(B, qs) == 4 && sizeof(B) == 20);
  const uint8_t* b = decode::BlockOf<B>(row, j, 1);
  uint32_t w[5];  // d, m; qs
  decode::LoadWords(b, w);
  decode::SplitNibbles<0>(w + 1, out);
  out.scale[0] = out.scale[1] = decode::LowHalf(w[0]);
  out.offset[0] = out.offset[1] = decode::HighHalf(w[0]);
}

namespace decode {

// Q5_0 / Q5_1: bit i of the little-endian u32 qh is bit 4 of element i.
template <uint32_t kBias>
STRATA_DEV void SplitNibbles5(const uint32_t* w, Sub32& out) {  // w: qh, then qs
  const uint32_t qh = w[0];
  for (int k = 0; k < 4; ++k) {
    const uint32_t lo = (w[1 + k] & 0x0F0F0F0Fu) | SpreadBits4(qh >> (4 * k)) << 4;
    const uint32_t hi = ((w[1 + k] >> 4) & 0x0F0F0F0Fu) | SpreadBits4(qh >> (16 + 4 * k)) << 4;
    out.q[k] = static_cast<int32_t>(Unbias<kBias>(lo));
    out.q[k + 4] = static_cast<int32_t>(Unbias<kBias>(hi));
  }
}

}  // namespace decode

template <>
STRATA_DEV void DecodeSub32<wt::kQ5_0>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ5_0;
  static_assert(offsetof(B, qs) == offsetof(B, qh) + 4);
  const uint8_t* b = decode::BlockOf<B>(row, j, 1);
  uint32_t w[5];
  decode::LoadWords(b + offsetof(B, qh), w);
  decode::SplitNibbles5<0x10101010u>(w, out);
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d, d);
}

template <>
STRATA_DEV void DecodeSub32<wt::kQ5_1>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ5_1;
  static_assert(offsetof(B, m) == 2 && offsetof(B, qh) == 4 && offsetof(B, qs) == 8 && sizeof(B) == 24);
  const uint8_t* b = decode::BlockOf<B>(row, j, 1);
  uint32_t w[6];  // d, m; qh; qs
  decode::LoadWords(b, w);
  decode::SplitNibbles5<0>(w + 1, out);
  out.scale[0] = out.scale[1] = decode::LowHalf(w[0]);
  out.offset[0] = out.offset[1] = decode::HighHalf(w[0]);
}

template <>
STRATA_DEV void DecodeSub32<wt::kQ8_0>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ8_0;
  const uint8_t* b = decode::BlockOf<B>(row, j, 1);
  uint32_t w[8];
  decode::LoadWords(b + offsetof(B, qs), w);
  for (int k = 0; k < 8; ++k) out.q[k] = static_cast<int32_t>(w[k]);
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d, d);
}

namespace decode {

// Q4_0-style nibbles through a 16-entry value table.
template <const auto& kTable>
STRATA_DEV void TableNibbles(const uint32_t* w, Sub32& out) {
  for (int k = 0; k < 4; ++k) {
    uint32_t lo, hi;
    decode::Lookup16<kTable>(w[k], lo, hi);
    out.q[k] = static_cast<int32_t>(lo);
    out.q[k + 4] = static_cast<int32_t>(hi);
  }
}

}  // namespace decode

template <>
STRATA_DEV void DecodeSub32<wt::kIQ4_NL>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockIq4_nl;
  const uint8_t* b = decode::BlockOf<B>(row, j, 1);
  uint32_t w[4];
  decode::LoadWords(b + offsetof(B, qs), w);
  decode::TableNibbles<::strata::kValuesIq4nl>(w, out);
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d, d);
}

template <>
STRATA_DEV void DecodeSub32<wt::kMXFP4>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockMxfp4;
  const uint8_t* b = decode::BlockOf<B>(row, j, 1);
  uint32_t w[4];
  decode::LoadWords(b + offsetof(B, qs), w);
  decode::TableNibbles<::strata::kValuesFp4>(w, out);
  const float d = decode::E8M0HalfToFloat(b[offsetof(B, e)]);
  decode::SetScales(out, d, d);
}

// NVFP4 (64 elements): 16-element groups t = 2s, 2s + 1, each with a UE4M3
// scale d[t]; byte qs[8t + i] holds element 16t + i (low nibble) and 16t + i + 8.
template <>
STRATA_DEV void DecodeSub32<wt::kNVFP4>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockNvfp4;
  const uint8_t* b = decode::BlockOf<B>(row, j, 2);
  const int s = decode::SubIndex(j, 2);
  uint32_t w[4];  // groups 2s, 2s + 1: 8 bytes each
  decode::LoadWords(b + offsetof(B, qs) + 16 * s, w);
  for (int h = 0; h < 2; ++h) {
    uint32_t lo, hi;
    decode::Lookup16<::strata::kValuesFp4>(w[2 * h], lo, hi);
    out.q[4 * h] = static_cast<int32_t>(lo);
    out.q[4 * h + 2] = static_cast<int32_t>(hi);
    decode::Lookup16<::strata::kValuesFp4>(w[2 * h + 1], lo, hi);
    out.q[4 * h + 1] = static_cast<int32_t>(lo);
    out.q[4 * h + 3] = static_cast<int32_t>(hi);
  }
  const uint32_t scales = Load16(b + offsetof(B, d) + 2 * s);
  decode::SetScales(out, decode::Ue4m3ToFloat(scales & 0xFFu), decode::Ue4m3ToFloat(scales >> 8));
}

// Q1_0 (128 elements): bit i of qs is element i, +1 if set, -1 if clear.
template <>
STRATA_DEV void DecodeSub32<wt::kQ1_0>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ1_0;
  const uint8_t* b = decode::BlockOf<B>(row, j, 4);
  const uint32_t bits = decode::LoadWord(b + offsetof(B, qs) + 4 * decode::SubIndex(j, 4));
  for (int k = 0; k < 8; ++k)  // 2 bit - 1
    out.q[k] = static_cast<int32_t>(decode::SubBytes(decode::SpreadBits4(bits >> (4 * k)) << 1, 0x01010101u));
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d, d);
}

// Q2_0 (64 elements): byte qs[i / 4] holds elements i .. i + 3, 2 bits each; q - 1.
template <>
STRATA_DEV void DecodeSub32<wt::kQ2_0>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ2_0;
  const uint8_t* b = decode::BlockOf<B>(row, j, 2);
  uint32_t w[2];
  decode::LoadWords(b + offsetof(B, qs) + 8 * decode::SubIndex(j, 2), w);
  for (int k = 0; k < 8; ++k)
    out.q[k] = static_cast<int32_t>(decode::SubBytes(decode::Spread2(decode::ByteOf(w[k / 4], k % 4)), 0x01010101u));
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d, d);
}

// --- K-quants (256-element super-blocks; sub-block s = j % 8).

// Q2_K: element 32s + i is 2 bits at qs[32 (s / 4) + i] >> 2 (s % 4); group g
// of 16 has scales[2s + g] (low nibble scale, high nibble min).
template <>
STRATA_DEV void DecodeSub32<wt::kQ2_K>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ2_K;
  static_assert(offsetof(B, dmin) == offsetof(B, d) + 2);
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  uint32_t w[8];
  decode::LoadWords(b + offsetof(B, qs) + 32 * (s >> 2), w);
  const int shift = 2 * (s & 3);
  for (int k = 0; k < 8; ++k) out.q[k] = static_cast<int32_t>((w[k] >> shift) & 0x03030303u);
  const uint32_t d = decode::LoadWord(b + offsetof(B, d));  // d, dmin
  const uint32_t sc = Load16(b + offsetof(B, scales) + 2 * s);
  for (int g = 0; g < 2; ++g) {
    const uint32_t scale_min = (sc >> (8 * g)) & 0xFFu;
    out.scale[g] = decode::LowHalf(d) * static_cast<float>(scale_min & 0xFu);
    out.offset[g] = -(decode::HighHalf(d) * static_cast<float>(scale_min >> 4));
  }
}

// Q3_K: as Q2_K's 2 low bits, and bit s of hmask[i] clear means -4.
template <>
STRATA_DEV void DecodeSub32<wt::kQ3_K>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ3_K;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  uint32_t low[8], high[8], sc[3];
  decode::LoadWords(b + offsetof(B, qs) + 32 * (s >> 2), low);
  decode::LoadWords(b + offsetof(B, hmask), high);
  decode::LoadWords(b + offsetof(B, scales), sc);
  const int shift = 2 * (s & 3);
  for (int k = 0; k < 8; ++k) {
    const uint32_t q = ((low[k] >> shift) & 0x03030303u) | (((high[k] >> s) & 0x01010101u) << 2);
    out.q[k] = static_cast<int32_t>(decode::SubBytes(q, 0x04040404u));
  }
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d * static_cast<float>(decode::ScaleQ3K(sc, 2 * s) - 32),
                    d * static_cast<float>(decode::ScaleQ3K(sc, 2 * s + 1) - 32));
}

namespace decode {

// Q4_K / Q5_K: d, dmin and the 12 scale bytes are the block's first 16 bytes;
// one 6-bit scale and min per 32.
template <typename B>
STRATA_DEV void ScalesK4(const uint8_t* b, int s, Sub32& out) {
  static_assert(offsetof(B, d) == 0 && offsetof(B, dmin) == 2 && offsetof(B, scales) == 4);
  uint32_t w[4];  // d, dmin; scales
  decode::LoadWords(b, w);
  uint32_t sc, m;
  decode::ScaleMinK4({w[1], w[2], w[3]}, s, sc, m);
  out.scale[0] = out.scale[1] = decode::LowHalf(w[0]) * static_cast<float>(sc);
  out.offset[0] = out.offset[1] = -(decode::HighHalf(w[0]) * static_cast<float>(m));
}

}  // namespace decode

// Q4_K: sub-block s is the low (s even) or high nibbles of qs[32 (s / 2) ..].
template <>
STRATA_DEV void DecodeSub32<wt::kQ4_K>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ4_K;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  uint32_t w[8];
  decode::LoadWords(b + offsetof(B, qs) + 32 * (s >> 1), w);
  const int shift = 4 * (s & 1);
  for (int k = 0; k < 8; ++k) out.q[k] = static_cast<int32_t>((w[k] >> shift) & 0x0F0F0F0Fu);
  decode::ScalesK4<B>(b, s, out);
}

// Q5_K: Q4_K plus bit s of qh[i] as bit 4.
template <>
STRATA_DEV void DecodeSub32<wt::kQ5_K>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockQ5_K;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  uint32_t low[8], high[8];
  decode::LoadWords(b + offsetof(B, qs) + 32 * (s >> 1), low);
  decode::LoadWords(b + offsetof(B, qh), high);
  const int shift = 4 * (s & 1);
  for (int k = 0; k < 8; ++k)
    out.q[k] = static_cast<int32_t>(((low[k] >> shift) & 0x0F0F0F0Fu) | (((high[k] >> s) & 0x01010101u) << 4));
  decode::ScalesK4<B>(b, s, out);
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
  uint32_t low[8], high[8];
  decode::LoadWords(b + offsetof(B, ql) + 64 * (s >> 2) + 32 * (r & 1), low);
  decode::LoadWords(b + offsetof(B, qh) + 32 * (s >> 2), high);
  const int low_shift = 4 * (r >> 1), high_shift = 2 * r;
  for (int k = 0; k < 8; ++k) {
    const uint32_t q = ((low[k] >> low_shift) & 0x0F0F0F0Fu) | (((high[k] >> high_shift) & 0x03030303u) << 4);
    out.q[k] = static_cast<int32_t>(decode::SubBytes(q, 0x20202020u));
  }
  const float d = decode::HalfAt(b + offsetof(B, d));
  const uint32_t sc = Load16(b + offsetof(B, scales) + 2 * s);
  decode::SetScales(out, d * static_cast<float>(static_cast<int8_t>(sc & 0xFFu)),
                    d * static_cast<float>(static_cast<int8_t>(sc >> 8)));
}

// --- Ternary.

// TQ1_0: base-3 digits (TritsMinusOne). Digit n of qs[0..31] is sub-block n
// (n < 5); digits 0..4 of qs[32..47] are elements 160 + 16n ..; digit n of
// qh[0..3] is elements 240 + 4n ... So each 16 elements are 4 words: qs[16h ..]
// with digit s (s < 5), qs[32 ..] with digit 2 (s - 5) + h, or (s = 7, h = 1)
// the qh word with digits 0..3.
template <>
STRATA_DEV void DecodeSub32<wt::kTQ1_0>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockTq1_0;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  for (int h = 0; h < 2; ++h) {
    uint32_t w[4];
    const bool in_qh = s == 7 && h == 1;
    if (in_qh) {
      w[0] = w[1] = w[2] = w[3] = decode::LoadWord(b + offsetof(B, qh));
    } else {
      decode::LoadWords(b + offsetof(B, qs) + (s < 5 ? 16 * h : 32), w);
    }
    const uint32_t n = s < 5 ? static_cast<uint32_t>(s) : static_cast<uint32_t>(2 * (s - 5) + h);
    for (uint32_t k = 0; k < 4; ++k)
      out.q[4 * h + static_cast<int>(k)] = static_cast<int32_t>(decode::TritsMinusOne(w[k], in_qh ? k : n));
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
  uint32_t w[8];
  decode::LoadWords(b + offsetof(B, qs) + 32 * (s >> 2), w);
  const int shift = 2 * (s & 3);
  for (int k = 0; k < 8; ++k)
    out.q[k] = static_cast<int32_t>(decode::SubBytes((w[k] >> shift) & 0x03030303u, 0x01010101u));
  const float d = decode::HalfAt(b + offsetof(B, d));
  decode::SetScales(out, d, d);
}

// --- i-quants. A group of 8 elements is one grid point (iq_grid_index.h: an
// index entry's fields expanded to levels, byte-wise) with 8 sign bits.

namespace decode {

// The 8 elements of an IQ2 grid point with signs (bit i negates element i).
STRATA_DEV void Iq2Group(uint32_t index, uint32_t signs, int32_t* q) {
  q[0] = static_cast<int32_t>(decode::ApplySigns(decode::Iq2Levels(decode::Spread2(index & 0xFFu)), signs));
  q[1] = static_cast<int32_t>(decode::ApplySigns(decode::Iq2Levels(decode::Spread2(index >> 8)), signs >> 4));
}

}  // namespace decode

// IQ2_XXS: per 32, 4 grid-index bytes and a u32 of 4 x 7 sign bits
// (KsignsIq2xs) with a 4-bit scale on top.
template <>
STRATA_DEV void DecodeSub32<wt::kIQ2_XXS>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockIq2_xxs;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  uint32_t w[2];  // indices, signs and scale
  decode::LoadWords(b + offsetof(B, qs) + 8 * decode::SubIndex(j, 8), w);
  for (int l = 0; l < 4; ++l)
    decode::Iq2Group(kIq2XxsIndex[decode::ByteOf(w[0], l)], KsignsIq2xs((w[1] >> (7 * l)) & 127u), out.q + 2 * l);
  const float scale = decode::HalfStepScale(decode::HalfAt(b + offsetof(B, d)), w[1] >> 28, 0.25f);
  decode::SetScales(out, scale, scale);
}

// IQ2_XS: per 8, a u16 of a 9-bit grid index and 7 sign bits; a 4-bit scale
// per 16 (scales[s] low nibble, then high).
template <>
STRATA_DEV void DecodeSub32<wt::kIQ2_XS>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockIq2_xs;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  uint32_t w[2];  // four u16
  decode::LoadWords(b + offsetof(B, qs) + 8 * s, w);
  for (int l = 0; l < 4; ++l) {
    const uint32_t v = (w[l / 2] >> (16 * (l % 2))) & 0xFFFFu;
    decode::Iq2Group(kIq2XsIndex[v & 511u], KsignsIq2xs(v >> 9), out.q + 2 * l);
  }
  const float d = decode::HalfAt(b + offsetof(B, d));
  const uint32_t sc = b[offsetof(B, scales) + s];
  decode::SetScales(out, decode::HalfStepScale(d, sc & 0xFu, 0.25f), decode::HalfStepScale(d, sc >> 4, 0.25f));
}

// IQ2_S: 10-bit grid indices (low bytes in qs[0..31], bits 8..9 in qh[s]), a
// full sign byte per 8 (qs[32..63]), a 4-bit scale per 16.
template <>
STRATA_DEV void DecodeSub32<wt::kIQ2_S>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockIq2_s;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  const uint32_t indices = decode::LoadWord(b + offsetof(B, qs) + 4 * s);
  const uint32_t signs = decode::LoadWord(b + offsetof(B, qs) + 32 + 4 * s);
  const uint32_t qh = b[offsetof(B, qh) + s];
  for (int l = 0; l < 4; ++l)
    decode::Iq2Group(kIq2SIndex[decode::ByteOf(indices, l) | ((qh << (8 - 2 * l)) & 0x300u)], decode::ByteOf(signs, l),
             out.q + 2 * l);
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
  uint32_t indices[2];
  decode::LoadWords(b + offsetof(B, qs) + 8 * s, indices);
  const uint32_t aux = decode::LoadWord(b + offsetof(B, qs) + 64 + 4 * s);
  for (int l = 0; l < 4; ++l) {
    const uint32_t signs = KsignsIq2xs((aux >> (7 * l)) & 127u);
    const uint32_t pair = indices[l / 2] >> (16 * (l % 2));
    out.q[2 * l] = static_cast<int32_t>(
        decode::ApplySigns(decode::Iq3XxsLevels(decode::Spread3(kIq3XxsIndex[pair & 0xFFu])), signs));
    out.q[2 * l + 1] = static_cast<int32_t>(
        decode::ApplySigns(decode::Iq3XxsLevels(decode::Spread3(kIq3XxsIndex[(pair >> 8) & 0xFFu])), signs >> 4));
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
  uint32_t indices[2];
  decode::LoadWords(b + offsetof(B, qs) + 8 * s, indices);
  const uint32_t signs = decode::LoadWord(b + offsetof(B, signs) + 4 * s);
  const uint32_t qh = b[offsetof(B, qh) + s];
  for (int l = 0; l < 4; ++l) {
    const uint32_t pair = indices[l / 2] >> (16 * (l % 2));
    const uint32_t i0 = (pair & 0xFFu) | ((qh << (8 - 2 * l)) & 256u);
    const uint32_t i1 = ((pair >> 8) & 0xFFu) | ((qh << (7 - 2 * l)) & 256u);
    const uint32_t sign = decode::ByteOf(signs, l);
    out.q[2 * l] = static_cast<int32_t>(decode::ApplySigns(decode::Iq3SLevels(decode::Spread3(kIq3SIndex[i0])), sign));
    out.q[2 * l + 1] =
        static_cast<int32_t>(decode::ApplySigns(decode::Iq3SLevels(decode::Spread3(kIq3SIndex[i1])), sign >> 4));
  }
  const uint32_t sc = (static_cast<uint32_t>(b[offsetof(B, scales) + s / 2]) >> (4 * (s & 1))) & 0xFu;
  const float scale = decode::HalfAt(b + offsetof(B, d)) * static_cast<float>(1 + 2 * sc);
  decode::SetScales(out, scale, scale);
}

namespace decode {

// The 8 elements of an IQ1 grid point, 8 * level + delta (k: Iq1Values).
STRATA_DEV void Iq1Group(uint32_t index, uint32_t k, int32_t* q) {
  q[0] = static_cast<int32_t>(decode::Iq1Values(decode::Spread2(index & 0xFFu), k));
  q[1] = static_cast<int32_t>(decode::Iq1Values(decode::Spread2(index >> 8), k));
}

}  // namespace decode

// IQ1_S: 11-bit grid indices (low bytes in qs, 3 bits each in the u16 qh[s]),
// a 3-bit scale and the delta's sign on top of qh[s]. Scaled by 8: q = 8 grid +- 1.
template <>
STRATA_DEV void DecodeSub32<wt::kIQ1_S>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockIq1_s;
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  const uint32_t indices = decode::LoadWord(b + offsetof(B, qs) + 4 * s);
  const uint32_t qh = Load16(b + offsetof(B, qh) + 2 * s);
  const uint32_t k = 0x79797979u - (qh >> 15) * 0x02020202u;  // delta -1/8 when bit 15 is set
  for (int l = 0; l < 4; ++l)
    decode::Iq1Group(kIq1SIndex[decode::ByteOf(indices, l) | (((qh >> (3 * l)) & 7u) << 8)], k, out.q + 2 * l);
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
  const uint32_t indices = decode::LoadWord(b + offsetof(B, qs) + 4 * s);
  const uint32_t qh = Load16(b + offsetof(B, qh) + 2 * s);
  for (int l = 0; l < 4; ++l) {
    const uint32_t nibble = qh >> (4 * l);
    const uint32_t k = 0x79797979u - ((nibble >> 3) & 1u) * 0x02020202u;
    decode::Iq1Group(kIq1SIndex[decode::ByteOf(indices, l) | ((nibble & 7u) << 8)], k, out.q + 2 * l);
  }
  uint32_t sc[2];  // four u16
  decode::LoadWords(b + offsetof(B, scales), sc);
  const float d = HalfToFloat(static_cast<uint16_t>((sc[0] >> 12 & 0x000Fu) | (sc[0] >> 24 & 0x00F0u) |
                                                    (sc[1] >> 4 & 0x0F00u) | (sc[1] >> 16 & 0xF000u)));
  const uint32_t mine = (s < 4 ? sc[0] : sc[1]) >> (16 * ((s >> 1) & 1) + 6 * (s & 1));
  const float dl0 = d * static_cast<float>(2 * (mine & 7u) + 1);
  const float dl1 = d * static_cast<float>(2 * ((mine >> 3) & 7u) + 1);
  decode::SetScales(out, dl0 * 0.125f, dl1 * 0.125f);
}

// IQ4_XS: IQ4_NL's values with a 6-bit scale (minus 32) per 32; d, scales_h
// and scales_l are the block's first 8 bytes.
template <>
STRATA_DEV void DecodeSub32<wt::kIQ4_XS>(const uint8_t* row, int64_t j, Sub32& out) {
  using B = ::strata::BlockIq4_xs;
  static_assert(offsetof(B, d) == 0 && offsetof(B, scales_h) == 2 && offsetof(B, scales_l) == 4);
  const uint8_t* b = decode::BlockOf<B>(row, j, 8);
  const int s = decode::SubIndex(j, 8);
  uint32_t w[4], head[2];  // head: d, scales_h; scales_l
  decode::LoadWords(b + offsetof(B, qs) + 16 * s, w);
  decode::TableNibbles<::strata::kValuesIq4nl>(w, out);
  decode::LoadWords(b, head);
  const uint32_t low = (head[1] >> (4 * s)) & 0xFu;  // scales_l[s / 2] >> 4 (s % 2)
  const uint32_t high = (head[0] >> (16 + 2 * s)) & 3u;
  const float scale = decode::LowHalf(head[0]) * static_cast<float>(static_cast<int>(low | (high << 4)) - 32);
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
