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

// The table itself, in id order. Public so that compile-time checks (block
// struct sizes in blocks.h) read the same numbers the runtime uses.
namespace ggml_type_detail {
using T = GgmlType;
inline constexpr GgmlTypeInfo kTable[] = {
    {T::kF32, "F32", 1, 4, true},
    {T::kF16, "F16", 1, 2, true},
    {T::kQ4_0, "Q4_0", 32, 18, true},
    {T::kQ4_1, "Q4_1", 32, 20, true},
    {T::kQ5_0, "Q5_0", 32, 22, true},
    {T::kQ5_1, "Q5_1", 32, 24, true},
    {T::kQ8_0, "Q8_0", 32, 34, true},
    {T::kQ8_1, "Q8_1", 32, 36, false},
    {T::kQ2_K, "Q2_K", 256, 84, true},
    {T::kQ3_K, "Q3_K", 256, 110, true},
    {T::kQ4_K, "Q4_K", 256, 144, true},
    {T::kQ5_K, "Q5_K", 256, 176, true},
    {T::kQ6_K, "Q6_K", 256, 210, true},
    {T::kQ8_K, "Q8_K", 256, 292, false},
    {T::kIQ2_XXS, "IQ2_XXS", 256, 66, true},
    {T::kIQ2_XS, "IQ2_XS", 256, 74, true},
    {T::kIQ3_XXS, "IQ3_XXS", 256, 98, true},
    {T::kIQ1_S, "IQ1_S", 256, 50, true},
    {T::kIQ4_NL, "IQ4_NL", 32, 18, true},
    {T::kIQ3_S, "IQ3_S", 256, 110, true},
    {T::kIQ2_S, "IQ2_S", 256, 82, true},
    {T::kIQ4_XS, "IQ4_XS", 256, 136, true},
    {T::kI8, "I8", 1, 1, false},
    {T::kI16, "I16", 1, 2, false},
    {T::kI32, "I32", 1, 4, false},
    {T::kI64, "I64", 1, 8, false},
    {T::kF64, "F64", 1, 8, false},
    {T::kIQ1_M, "IQ1_M", 256, 56, true},
    {T::kBF16, "BF16", 1, 2, true},
    {T::kTQ1_0, "TQ1_0", 256, 54, true},
    {T::kTQ2_0, "TQ2_0", 256, 66, true},
    {T::kMXFP4, "MXFP4", 32, 17, true},
    {T::kNVFP4, "NVFP4", 64, 36, true},
    {T::kQ1_0, "Q1_0", 128, 18, true},
    {T::kQ2_0, "Q2_0", 64, 18, true},
};
}  // namespace ggml_type_detail
inline constexpr std::span<const GgmlTypeInfo> kGgmlTypeTable = ggml_type_detail::kTable;

// Compile-time lookup of a known type (the enum holds only known types).
constexpr const GgmlTypeInfo& TypeInfoConstexpr(GgmlType t) {
  for (const GgmlTypeInfo& info : ggml_type_detail::kTable)
    if (info.type == t) return info;
  return ggml_type_detail::kTable[0];  // unreachable for enum values
}

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
