#pragma once
// One struct per ggml block type, fields in exactly the order and widths of
// ggml-common.h (reference/formats.md section 2.1). Every layout is free of
// padding, so a struct is byte-for-byte the block as stored in a GGUF file;
// the static_asserts below tie each size to the type table (ggml_type.h).
//
// Reading blocks: bytes from a file or a mapping carry no alignment guarantee
// (a Q8_K block wants 4-byte alignment, most others 2), so never cast a byte
// pointer to one of these types. Copy the block out with LoadBlock() instead;
// compilers turn the memcpy into plain loads.
//
// "half" fields hold IEEE binary16 bits (fp_convert.h: Fp16ToFp32).

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "runtime/quant/ggml_type.h"

namespace strata {

inline constexpr int kQK_K = 256;        // elements of a K-quant / i-quant super-block
inline constexpr int kKScaleSize = 12;   // bytes of packed 6-bit scales in Q4_K / Q5_K

// --- 32-element "legacy" blocks. Byte qs[j] holds element j (low nibble) and
// element j+16 (high nibble).
struct BlockQ4_0 {
  uint16_t d;       // half: scale
  uint8_t qs[16];   // 4-bit quants, value (q - 8) * d
};
struct BlockQ4_1 {
  uint16_t d;       // half: scale
  uint16_t m;       // half: min
  uint8_t qs[16];   // value q * d + m
};
struct BlockQ5_0 {
  uint16_t d;       // half
  uint8_t qh[4];    // 5th bit of each quant (little-endian u32, bit j = element j)
  uint8_t qs[16];   // low 4 bits; value (q - 16) * d
};
struct BlockQ5_1 {
  uint16_t d;       // half
  uint16_t m;       // half
  uint8_t qh[4];
  uint8_t qs[16];   // value q * d + m
};
struct BlockQ8_0 {
  uint16_t d;       // half
  int8_t qs[32];    // value qs * d
};
struct BlockQ8_1 {  // activation-only (vec_dot type of Q4_1 / Q5_1)
  uint16_t d;       // half
  uint16_t s;       // half: d * sum(qs)
  int8_t qs[32];
};

// --- Microscaling FP4 (E2M1 values, doubled, in kvalues_fp4).
struct BlockMxfp4 {
  uint8_t e;        // E8M0 scale; value kvalues_fp4[q] * 2^(e-128)
  uint8_t qs[16];   // low nibble element j, high nibble element j+16
};
struct BlockNvfp4 {
  uint8_t d[4];     // UE4M3 scale per 16-element sub-block
  uint8_t qs[32];   // sub-block s: qs[8s+j] low nibble element 16s+j, high nibble 16s+j+8
};

// --- Low-bit "_0" blocks (newest ggml types).
struct BlockQ1_0 {
  uint16_t d;       // half
  uint8_t qs[16];   // bit j of qs[j/8]: +d if set, -d if clear (128 elements)
};
struct BlockQ2_0 {
  uint16_t d;       // half
  uint8_t qs[16];   // 2 bits per element at qs[j/4] >> 2*(j%4); value (q - 1) * d (64 elements)
};

// --- Ternary (BitNet b1.58 / TriLM).
struct BlockTq1_0 {
  uint8_t qs[48];   // 5 base-3 digits per byte (elements 0..239)
  uint8_t qh[4];    // 4 base-3 digits per byte (elements 240..255)
  uint16_t d;       // half
};
struct BlockTq2_0 {
  uint8_t qs[64];   // 2 bits per element; value (q - 1) * d
  uint16_t d;       // half
};

// --- K-quants: 256-element super-blocks.
struct BlockQ2_K {
  uint8_t scales[16];  // per 16 elements: low nibble scale, high nibble min
  uint8_t qs[64];      // 2-bit quants
  uint16_t d;          // half: super-block scale for scales
  uint16_t dmin;       // half: super-block scale for mins
};
struct BlockQ3_K {
  uint8_t hmask[32];   // high bit of each quant
  uint8_t qs[64];      // low 2 bits
  uint8_t scales[12];  // 16 six-bit scales, biased by 32
  uint16_t d;          // half
};
struct BlockQ4_K {
  uint16_t d;          // half
  uint16_t dmin;       // half
  uint8_t scales[kKScaleSize];  // 8 six-bit scales and 8 six-bit mins
  uint8_t qs[128];     // 4-bit quants
};
struct BlockQ5_K {
  uint16_t d;          // half
  uint16_t dmin;       // half
  uint8_t scales[kKScaleSize];
  uint8_t qh[32];      // 5th bit
  uint8_t qs[128];     // low 4 bits
};
struct BlockQ6_K {
  uint8_t ql[128];     // low 4 bits
  uint8_t qh[64];      // high 2 bits
  int8_t scales[16];   // 8-bit scale per 16 elements
  uint16_t d;          // half
};
struct BlockQ8_K {     // activation-only (vec_dot type of K-quants and most i-quants)
  float d;             // f32 (not half)
  int8_t qs[256];
  int16_t bsums[16];   // sum of each 16 quants
};

// --- i-quants (grids in iq_grids.h).
struct BlockIq2_xxs {
  uint16_t d;          // half
  uint16_t qs[32];     // per 32 elements: 4 grid bytes, then a u32 of 4x7 sign bits + 4-bit scale
};
struct BlockIq2_xs {
  uint16_t d;          // half
  uint16_t qs[32];     // 9-bit grid index + 7 sign bits
  uint8_t scales[8];   // two 4-bit scales per 32 elements
};
struct BlockIq2_s {
  uint16_t d;          // half
  uint8_t qs[64];      // 32 grid index low bytes, then 32 sign bytes
  uint8_t qh[8];       // grid index bits 8..9
  uint8_t scales[8];
};
struct BlockIq3_xxs {
  uint16_t d;          // half
  uint8_t qs[96];      // 64 grid indices, then 8 u32 of 4x7 sign bits + 4-bit scale
};
struct BlockIq3_s {
  uint16_t d;          // half
  uint8_t qs[64];      // grid index low bytes
  uint8_t qh[8];       // grid index bit 8
  uint8_t signs[32];
  uint8_t scales[4];   // 4-bit scales
};
struct BlockIq1_s {
  uint16_t d;          // half
  uint8_t qs[32];      // grid index low bytes
  uint16_t qh[8];      // per 32 elements: 4x3 index bits, 3-bit scale, delta sign
};
struct BlockIq1_m {
  uint8_t qs[32];      // grid index low bytes
  uint8_t qh[16];      // per 8 elements: 3 index bits + delta sign
  uint8_t scales[8];   // 3-bit scales; the block's half scale sits in the top nibble of each u16
};
struct BlockIq4_nl {
  uint16_t d;          // half
  uint8_t qs[16];      // value d * kvalues_iq4nl[q]
};
struct BlockIq4_xs {
  uint16_t d;          // half
  uint16_t scales_h;   // high 2 bits of the eight 6-bit scales
  uint8_t scales_l[4]; // low 4 bits
  uint8_t qs[128];
};

// Ties each struct to the type table: same size as the table's block_bytes and
// trivially copyable (so LoadBlock is well defined).
template <typename Block, GgmlType kType>
constexpr bool MatchesTable() {
  return sizeof(Block) == TypeInfoConstexpr(kType).block_bytes && std::is_trivially_copyable_v<Block>;
}
static_assert(MatchesTable<BlockQ4_0, GgmlType::kQ4_0>());
static_assert(MatchesTable<BlockQ4_1, GgmlType::kQ4_1>());
static_assert(MatchesTable<BlockQ5_0, GgmlType::kQ5_0>());
static_assert(MatchesTable<BlockQ5_1, GgmlType::kQ5_1>());
static_assert(MatchesTable<BlockQ8_0, GgmlType::kQ8_0>());
static_assert(MatchesTable<BlockQ8_1, GgmlType::kQ8_1>());
static_assert(MatchesTable<BlockMxfp4, GgmlType::kMXFP4>());
static_assert(MatchesTable<BlockNvfp4, GgmlType::kNVFP4>());
static_assert(MatchesTable<BlockQ1_0, GgmlType::kQ1_0>());
static_assert(MatchesTable<BlockQ2_0, GgmlType::kQ2_0>());
static_assert(MatchesTable<BlockTq1_0, GgmlType::kTQ1_0>());
static_assert(MatchesTable<BlockTq2_0, GgmlType::kTQ2_0>());
static_assert(MatchesTable<BlockQ2_K, GgmlType::kQ2_K>());
static_assert(MatchesTable<BlockQ3_K, GgmlType::kQ3_K>());
static_assert(MatchesTable<BlockQ4_K, GgmlType::kQ4_K>());
static_assert(MatchesTable<BlockQ5_K, GgmlType::kQ5_K>());
static_assert(MatchesTable<BlockQ6_K, GgmlType::kQ6_K>());
static_assert(MatchesTable<BlockQ8_K, GgmlType::kQ8_K>());
static_assert(MatchesTable<BlockIq2_xxs, GgmlType::kIQ2_XXS>());
static_assert(MatchesTable<BlockIq2_xs, GgmlType::kIQ2_XS>());
static_assert(MatchesTable<BlockIq2_s, GgmlType::kIQ2_S>());
static_assert(MatchesTable<BlockIq3_xxs, GgmlType::kIQ3_XXS>());
static_assert(MatchesTable<BlockIq3_s, GgmlType::kIQ3_S>());
static_assert(MatchesTable<BlockIq1_s, GgmlType::kIQ1_S>());
static_assert(MatchesTable<BlockIq1_m, GgmlType::kIQ1_M>());
static_assert(MatchesTable<BlockIq4_nl, GgmlType::kIQ4_NL>());
static_assert(MatchesTable<BlockIq4_xs, GgmlType::kIQ4_XS>());

// Copies block `i` out of a row that starts at `row` (any alignment).
// REQUIRES: the row holds at least i+1 blocks.
template <typename Block>
inline Block LoadBlock(const void* row, int64_t i) {
  Block b;
  std::memcpy(&b, static_cast<const uint8_t*>(row) + static_cast<size_t>(i) * sizeof(Block), sizeof(Block));
  return b;
}
// Writes block `i` of a row that starts at `row` (any alignment).
template <typename Block>
inline void StoreBlock(void* row, int64_t i, const Block& b) {
  std::memcpy(static_cast<uint8_t*>(row) + static_cast<size_t>(i) * sizeof(Block), &b, sizeof(Block));
}

}  // namespace strata
