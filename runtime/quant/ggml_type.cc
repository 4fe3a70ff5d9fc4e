#include "runtime/quant/ggml_type.h"

#include <array>
#include <cctype>

#include "runtime/base/checked_math.h"
#include "runtime/base/strings.h"

namespace strata {
namespace {

constexpr auto kById = [] {
  std::array<int, kGgmlTypeIdLimit> idx{};
  for (auto& i : idx) i = -1;
  for (size_t i = 0; i < kGgmlTypeTable.size(); ++i)
    idx[static_cast<uint32_t>(kGgmlTypeTable[i].type)] = static_cast<int>(i);
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
  return &kGgmlTypeTable[kById[id]];
}

std::string DescribeTypeId(uint32_t id) {
  if (const GgmlTypeInfo* t = LookupGgmlType(id)) return std::string(t->name);
  if (const char* r = RemovedName(id)) return StrFormat("type %u (%s, removed from ggml)", id, r);
  return StrFormat("type %u (unknown)", id);
}

const GgmlTypeInfo* FindGgmlTypeByName(std::string_view name) {
  for (const auto& t : kGgmlTypeTable) {
    if (t.name.size() != name.size()) continue;
    bool eq = true;
    for (size_t i = 0; i < name.size() && eq; ++i)
      eq = std::toupper(static_cast<unsigned char>(name[i])) == t.name[i];
    if (eq) return &t;
  }
  return nullptr;
}

std::span<const GgmlTypeInfo> AllGgmlTypes() { return kGgmlTypeTable; }

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
