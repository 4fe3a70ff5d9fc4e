#pragma once
// How a KV cache stores its rows (--kv-type). Each position holds, for every
// KV head, a row of head_dim values:
//   F32:  4 bytes a value (what the conformance references use);
//   F16:  IEEE binary16, round-to-nearest-even (llama.cpp's default cache);
//   Q8_0: blocks of 32 values, an F16 scale d = max|x| / 127 and 32 int8
//         q = round(x / d) (ggml's block_q8_0 and its reference rounding):
//         34 bytes per 32 values. Needs head_dim % 32 == 0.
// A head's row starts at head * KvHeadBytes(type, head_dim) within its
// position's row; the attention kernels (attention.h) read every type.

#include <cstdint>
#include <string_view>

namespace strata {

enum class KvType : uint8_t { kF32 = 0, kF16 = 1, kQ8_0 = 2 };

inline constexpr int64_t kKvQ8Block = 32;       // values per Q8_0 block
inline constexpr int64_t kKvQ8BlockBytes = 34;  // F16 scale + 32 int8

constexpr std::string_view KvTypeName(KvType t) {
  switch (t) {
    case KvType::kF16: return "F16";
    case KvType::kQ8_0: return "Q8_0";
    case KvType::kF32: break;
  }
  return "F32";
}

// Whether rows of `d` values can be stored as `t`.
constexpr bool KvTypeFits(KvType t, int64_t d) { return t != KvType::kQ8_0 || d % kKvQ8Block == 0; }

// Bytes of one head's row of `d` values (KvTypeFits(t, d)).
constexpr int64_t KvHeadBytes(KvType t, int64_t d) {
  switch (t) {
    case KvType::kF16: return 2 * d;
    case KvType::kQ8_0: return d / kKvQ8Block * kKvQ8BlockBytes;
    case KvType::kF32: break;
  }
  return 4 * d;
}

}  // namespace strata
