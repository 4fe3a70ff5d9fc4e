#include "runtime/gpu/software/sgpu_memory.h"

#include <cstring>
#include <iterator>

#include "runtime/base/strings.h"

namespace strata::sgpu {
namespace {

uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::string Hex(uint64_t p) { return StrFormat("0x%llx", static_cast<unsigned long long>(p)); }

std::string Describe(uint64_t p, uint64_t bytes, const std::string& what) {
  return StrFormat("'%s' (%s at %s)", what.c_str(), HumanBytes(bytes).c_str(), Hex(p).c_str());
}

}  // namespace

Result<uint64_t> DeviceMemory::Allocate(uint64_t bytes, std::string_view what) {
  if (bytes == 0)
    return InvalidArgument(StrFormat("software GPU: allocation of 0 bytes for '%.*s'", static_cast<int>(what.size()),
                                     what.data()));
  if (bytes > capacity_ - used_)
    return ResourceExhausted(StrFormat(
        "software GPU: cannot allocate %s for '%.*s': %s of its %s are in use, %s free", HumanBytes(bytes).c_str(),
        static_cast<int>(what.size()), what.data(), HumanBytes(used_).c_str(), HumanBytes(capacity_).c_str(),
        HumanBytes(capacity_ - used_).c_str()));
  const uint64_t page = PageBytes();
  const uint64_t span = RoundUp(bytes, kAllocationAlignment);
  const uint64_t data_pages = RoundUp(span, page);
  Allocation a;
  STRATA_ASSIGN_OR_RETURN(a.mapping, GuardedMemory::Allocate(page + data_pages + page, what));
  STRATA_RETURN_IF_ERROR(a.mapping.SetAccess(GuardedMemory::Access::kNone, 0, page));
  STRATA_RETURN_IF_ERROR(a.mapping.SetAccess(GuardedMemory::Access::kNone, page + data_pages, page));
  uint8_t* const data = a.mapping.data() + page + data_pages - span;
  a.bytes = bytes;
  a.slack = span - bytes;
  a.what = std::string(what);
  std::memset(data, kNewMemoryByte, bytes);
  std::memset(data + bytes, kCanaryByte, a.slack);
  const uint64_t p = reinterpret_cast<uintptr_t>(data);
  live_.emplace(p, std::move(a));
  used_ += bytes;
  return p;
}

Status DeviceMemory::CheckCanary(uint64_t p, const Allocation& a) {
  const uint8_t* end = reinterpret_cast<const uint8_t*>(p) + a.bytes;
  for (uint64_t i = 0; i < a.slack; ++i)
    if (end[i] != kCanaryByte)
      return Internal(StrFormat("software GPU: a kernel wrote past the end of %s: byte %llu after the end is 0x%02x, "
                                "the canary 0x%02x was there",
                                Describe(p, a.bytes, a.what).c_str(), static_cast<unsigned long long>(i), end[i],
                                kCanaryByte));
  return Status::Ok();
}

Status DeviceMemory::Free(uint64_t p) {
  auto it = live_.find(p);
  if (it == live_.end()) return InvalidArgument("software GPU: Free of " + Hex(p) + ", which is not a live allocation");
  Status canary = CheckCanary(p, it->second);
  used_ -= it->second.bytes;
  live_.erase(it);
  return canary;
}

Status DeviceMemory::CheckRange(uint64_t p, uint64_t bytes, std::string_view call) const {
  if (bytes == 0) return Status::Ok();
  const std::string range = StrFormat("%.*s: device bytes [%s, +%llu)", static_cast<int>(call.size()), call.data(),
                                      Hex(p).c_str(), static_cast<unsigned long long>(bytes));
  auto it = live_.upper_bound(p);
  if (it == live_.begin()) {
    return InvalidArgument("software GPU: " + range + " are not in any live allocation" +
                           (it == live_.end() ? std::string(" (there is none)")
                                              : " (the next one is " + Describe(it->first, it->second.bytes,
                                                                                it->second.what) + ")"));
  }
  const auto& [start, a] = *std::prev(it);
  const uint64_t offset = p - start;
  if (offset < a.bytes && bytes <= a.bytes - offset) return Status::Ok();
  if (offset < a.bytes)
    return InvalidArgument(StrFormat("software GPU: %s run %llu bytes past the end of %s", range.c_str(),
                                     static_cast<unsigned long long>(bytes - (a.bytes - offset)),
                                     Describe(start, a.bytes, a.what).c_str()));
  return InvalidArgument(StrFormat("software GPU: %s are not in any live allocation (they start %llu bytes past the "
                                   "end of %s)",
                                   range.c_str(), static_cast<unsigned long long>(offset - a.bytes),
                                   Describe(start, a.bytes, a.what).c_str()));
}

Status DeviceMemory::CheckCanaries() const {
  for (const auto& [p, a] : live_) STRATA_RETURN_IF_ERROR(CheckCanary(p, a));
  return Status::Ok();
}

}  // namespace strata::sgpu
