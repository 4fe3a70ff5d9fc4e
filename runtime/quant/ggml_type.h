#pragma once
// The ggml tensor types that GGUF files carry: exact ids, elements per block
// and bytes per block (reference/formats.md section 2.1, verified against
// ggml-common.h). This table is the one place a type's geometry is defined.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "runtime/base/status.h"

namespace strata {

enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  // 4, 5: Q4_2, Q4_3 (removed)
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  // 31-33: Q4_0_4_4, Q4_0_4_8, Q4_0_8_8 (removed; runtime repack in ggml)
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  // 36-38: IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8 (removed)
  kMXFP4 = 39,
  kNVFP4 = 40,
  kQ1_0 = 41,
  kQ2_0 = 42,
};

// One past the highest id ggml defines today (GGML_TYPE_COUNT).
inline constexpr uint32_t kGgmlTypeIdLimit = 43;

struct GgmlTypeInfo {
  GgmlType type;
  std::string_view name;     // as users see it: "Q4_K", "IQ2_XXS", "BF16"
  uint32_t block_elems;      // elements per block (1 for plain types)
  uint32_t block_bytes;      // bytes per block
  bool weight;               // a type model weights are stored in (not an
                             // integer/F64 type or an activation-only type)
};

// The type with this id, or nullptr if the id is unknown or was removed.
const GgmlTypeInfo* LookupGgmlType(uint32_t id);
inline const GgmlTypeInfo& TypeInfo(GgmlType t) { return *LookupGgmlType(static_cast<uint32_t>(t)); }
inline std::string_view TypeName(GgmlType t) { return TypeInfo(t).name; }
// "Q4_K", or "type 4 (Q4_2, removed from ggml)", or "type 99 (unknown)".
std::string DescribeTypeId(uint32_t id);
// Parses a type name case-insensitively ("q8_0", "Q4_K"). Returns nullptr if none.
const GgmlTypeInfo* FindGgmlTypeByName(std::string_view name);
// All known (not removed) types, in id order.
std::span<const GgmlTypeInfo> AllGgmlTypes();

// Bytes of one row of `row_elems` elements. Errors if row_elems is not a whole
// number of blocks or the size overflows.
Result<uint64_t> RowBytes(GgmlType type, uint64_t row_elems);
// Bytes of a tensor with ggml dims `ne` (ne[0] = row length). Overflow-checked;
// errors on a negative dim or a row that is not a whole number of blocks.
Result<uint64_t> TensorBytes(GgmlType type, std::span<const int64_t> ne);

}  // namespace strata
