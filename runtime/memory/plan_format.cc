#include "runtime/memory/plan_format.h"

#include "runtime/base/strings.h"

namespace strata {
namespace {

std::string Where(const PlanLine& l) {
  switch (l.place.kind) {
    case MemoryPlace::Kind::kHeap: return "RAM";
    case MemoryPlace::Kind::kMapped: return l.counts ? "mapped" : "mapped*";
    case MemoryPlace::Kind::kDevice: return StrFormat("device %d", l.place.device);
  }
  return "?";
}

}  // namespace

std::string FormatPlan(const MemoryPlan& plan) {
  std::string out = "memory plan: " + plan.model + "\n  " + plan.shape + "\n\n";
  out += StrFormat("  %-36s %-9s %12s  %s\n", "item", "where", "bytes", "how");
  for (const PlanLine& l : plan.lines)
    out += StrFormat("  %-36s %-9s %12s  %s\n", l.label.c_str(), Where(l).c_str(), HumanBytes(l.bytes).c_str(),
                     l.how.c_str());
  out += "  (mapped*: mapped, not expected to stay resident; not counted against the RAM budget)\n";
  for (const std::string& n : plan.notes) out += "  note: " + n + "\n";
  if (!plan.split.empty()) {
    out += "\n  the split of the routed experts between VRAM and RAM:\n";
    for (const std::string& l : plan.split) out += "    " + l + "\n";
  }
  out += "\n";
  const uint64_t dev_host = plan.DeviceInHostRam();
  out += StrFormat("  RAM      %s needed = heap %s + resident weights %s%s; budget %s (%s): %s\n",
                   HumanBytes(plan.RamNeeded()).c_str(), HumanBytes(plan.Heap()).c_str(),
                   HumanBytes(plan.MappedResident()).c_str(),
                   dev_host ? (" + device tier in host RAM " + HumanBytes(dev_host)).c_str() : "",
                   HumanBytes(plan.ram.bytes).c_str(), plan.ram.source.c_str(),
                   plan.RamFits() ? (plan.allow_paging && plan.RamNeeded() > plan.ram.bytes
                                         ? "fits with paging (weights are read from disk as needed)"
                                         : "fits")
                                  : "DOES NOT FIT");
  if (plan.ram.commit_limited)
    out += StrFormat("  commit   %s charged (heap%s; mapped weights are not); left %s (%s): %s\n",
                     HumanBytes(plan.CommitNeeded()).c_str(), dev_host ? " + device tier in host RAM" : "",
                     HumanBytes(plan.ram.commit).c_str(), plan.ram.commit_source.c_str(),
                     plan.CommitFits() ? "fits" : "DOES NOT FIT");
  for (const auto& [d, dev] : plan.devices) {
    const uint64_t need = plan.OnDevice(d);
    const std::string budget =
        dev.budget ? HumanBytes(dev.budget->bytes) + " (" + dev.budget->source + ")"
        : dev.host_ram ? "none given (host RAM budget applies)"
                       : "none given or reported (--vram-budget gives one)";
    out += StrFormat("  device %d (%s): %s needed; budget %s: %s\n", d, dev.name.c_str(), HumanBytes(need).c_str(),
                     budget.c_str(), !dev.budget || need <= dev.budget->bytes ? "fits" : "DOES NOT FIT");
  }
  out += StrFormat("  mapped   %s in all (%s expected resident)\n", HumanBytes(plan.Mapped()).c_str(),
                   HumanBytes(plan.MappedResident()).c_str());
  if (!plan.Fits()) {
    out += "\n  does not fit:\n";
    for (const std::string& p : plan.Problems()) out += "    " + p + "\n";
    out += "  any one of these fits:\n";
    for (const std::string& a : plan.advice) out += "    " + a + "\n";
  }
  return out;
}

std::string FormatRefusal(const MemoryPlan& plan) {
  std::string out = "refusing to start: the memory plan does not fit\n";
  for (const std::string& n : plan.notes) out += "  note: " + n + "\n";
  for (const std::string& p : plan.Problems()) out += "  " + p + "\n";
  out += "  any one of these fits:\n";
  for (const std::string& a : plan.advice) out += "    " + a + "\n";
  out += "  (strata-run PACK --plan [options] prints the whole plan)";
  return out;
}

std::string PlanSummary(const MemoryPlan& plan) {
  std::string s = StrFormat("memory: RAM %s of %s (heap %s, resident weights %s)", HumanBytes(plan.RamNeeded()).c_str(),
                            HumanBytes(plan.ram.bytes).c_str(), HumanBytes(plan.Heap()).c_str(),
                            HumanBytes(plan.MappedResident()).c_str());
  for (const auto& [d, dev] : plan.devices)
    if (const uint64_t on = plan.OnDevice(d)) s += StrFormat("; device %d %s", d, HumanBytes(on).c_str());
  return s;
}

}  // namespace strata
