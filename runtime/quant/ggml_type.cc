#include "runtime/quant/ggml_type.h"

#include <array>
#include <cctype>

#include "runtime/base/checked_math.h"
#include "runtime/base/strings.h"

namespace strata {
namespace {

using T = GgmlType;
constexpr GgmlTypeInfo kTypes[] = {
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

constexpr auto kById = [] {
  std::array<int, kGgmlTypeIdLimit> idx{};
  for (auto& i : idx) i = -1;
  for (int i = 0; i < static_cast<int>(std::size(kTypes)); ++i) idx[static_cast<uint32_t>(kTypes[i].type)] = i;
  return idx;
}();

const char* RemovedName(uint32_t id) {
  switch (id) {
    case 4: return "Q4_2";
    case 5: return "Q4_3";
    case 31: return "Q4_0_4_4";
    case 32: return "Q4_0_4_8";
    case 33: return "Q4_0_8_8";
    case 36: return "IQ4_NL_4_4";
    case 37: return "IQ4_NL_4_8";
    case 38: return "IQ4_NL_8_8";
    default: return nullptr;
  }
}

}  // namespace

const GgmlTypeInfo* LookupGgmlType(uint32_t id) {
  if (id >= kGgmlTypeIdLimit || kById[id] < 0) return nullptr;
  return &kTypes[kById[id]];
}

std::string DescribeTypeId(uint32_t id) {
  if (const GgmlTypeInfo* t = LookupGgmlType(id)) return std::string(t->name);
  if (const char* r = RemovedName(id)) return StrFormat("type %u (%s, removed from ggml)", id, r);
  return StrFormat("type %u (unknown)", id);
}

const GgmlTypeInfo* FindGgmlTypeByName(std::string_view name) {
  for (const auto& t : kTypes) {
    if (t.name.size() != name.size()) continue;
    bool eq = true;
    for (size_t i = 0; i < name.size() && eq; ++i)
      eq = std::toupper(static_cast<unsigned char>(name[i])) == t.name[i];
    if (eq) return &t;
  }
  return nullptr;
}

std::span<const GgmlTypeInfo> AllGgmlTypes() { return kTypes; }

Result<uint64_t> RowBytes(GgmlType type, uint64_t row_elems) {
  const GgmlTypeInfo& t = TypeInfo(type);
  if (row_elems % t.block_elems != 0)
    return InvalidArgument(StrFormat("a %s row of %llu elements is not a whole number of %u-element blocks",
                                     std::string(t.name).c_str(), static_cast<unsigned long long>(row_elems),
                                     t.block_elems));
  uint64_t bytes;
  if (!CheckedMul<uint64_t>(row_elems / t.block_elems, t.block_bytes, &bytes))
    return InvalidArgument(StrFormat("a %s row of %llu elements overflows 64 bits", std::string(t.name).c_str(),
                                     static_cast<unsigned long long>(row_elems)));
  return bytes;
}

Result<uint64_t> TensorBytes(GgmlType type, std::span<const int64_t> ne) {
  if (ne.empty()) return RowBytes(type, 1);
  for (int64_t d : ne)
    if (d < 0) return InvalidArgument(StrFormat("negative dimension %lld", static_cast<long long>(d)));
  STRATA_ASSIGN_OR_RETURN(uint64_t bytes, RowBytes(type, static_cast<uint64_t>(ne[0])));
  for (size_t i = 1; i < ne.size(); ++i) {
    if (!CheckedMul<uint64_t>(bytes, static_cast<uint64_t>(ne[i]), &bytes))
      return InvalidArgument("tensor byte size overflows 64 bits");
  }
  return bytes;
}

}  // namespace strata
