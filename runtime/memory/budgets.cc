#include "runtime/memory/budgets.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

#include "runtime/base/platform.h"
#include "runtime/base/strings.h"

namespace strata {

Result<uint64_t> ParseByteSize(std::string_view s) {
  std::string t(s);
  const std::string what = "'" + Printable(s) + "': expected a size such as 512M, 12G or 1.5GiB";
  if (t.empty()) return InvalidArgument(what);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || !(v >= 0) || std::isinf(v)) return InvalidArgument(what);
  std::string unit(end);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();  // "GB", "GIB" -> "G", "GI"
  if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();
  double scale = 1;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "K") scale = 1024.0;
  else if (unit == "M") scale = 1024.0 * 1024;
  else if (unit == "G") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  else return InvalidArgument(what);
  const double bytes = v * scale;
  if (bytes >= 1.8e19) return InvalidArgument(what + " (too large)");
  return static_cast<uint64_t>(bytes);
}

Result<std::map<int, uint64_t>> ParseDeviceBudgets(std::string_view s) {
  std::map<int, uint64_t> out;
  std::string t(s);
  size_t at = 0;
  while (at <= t.size()) {
    size_t end = t.find(',', at);
    if (end == std::string::npos) end = t.size();
    std::string item = t.substr(at, end - at);
    size_t eq = item.find('=');
    int device = 0;
    std::string size = item;
    if (eq != std::string::npos) {
      char* e = nullptr;
      long d = std::strtol(item.c_str(), &e, 10);
      if (e != item.c_str() + eq || d < 0 || d > 63)
        return InvalidArgument("--vram-budget '" + Printable(item) + "': expected SIZE or DEVICE=SIZE (DEVICE 0..63)");
      device = static_cast<int>(d);
      size = item.substr(eq + 1);
    }
    auto bytes = ParseByteSize(size);
    if (!bytes.ok()) return bytes.status().WithContext("--vram-budget");
    if (!out.emplace(device, *bytes).second)
      return InvalidArgument(StrFormat("--vram-budget: device %d given twice", device));
    at = end + 1;
  }
  return out;
}

Budget RamBudgetFrom(const uint64_t* given, uint64_t reserve, uint64_t available, bool commit_limited,
                     uint64_t commit_available) {
  Budget b;
  if (given) {
    b = {*given, "--ram-budget " + HumanBytes(*given)};
  } else if (available == 0) {
    b = {0, "the system did not report its available memory; give --ram-budget"};
  } else {
    b = {available > reserve ? available - reserve : 0,
         "available " + HumanBytes(available) + " - reserve " + HumanBytes(reserve)};
  }
  if (commit_limited) {
    b.commit_limited = true;
    b.commit = commit_available > reserve ? commit_available - reserve : 0;
    b.commit_source = "commit limit left " + HumanBytes(commit_available) + " - reserve " + HumanBytes(reserve);
  }
  return b;
}

Budget RamBudget(const uint64_t* given, uint64_t reserve) {
  const CommitMemory c = AvailableCommitMemory();
  return RamBudgetFrom(given, reserve, given ? 0 : AvailableMemoryBytes(), c.limited, c.available);
}

}  // namespace strata
