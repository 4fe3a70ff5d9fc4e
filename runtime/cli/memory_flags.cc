#include "runtime/cli/memory_flags.h"

#include <cmath>

#include "runtime/base/strings.h"

namespace strata {

void AddMemoryFlags(CLI::App& app, MemoryFlags& f) {
  auto* g = app.add_option_group("memory", "the memory plan (docs/memory-plan.md)");
  g->add_flag("--plan", f.plan,
              "print the memory plan (every byte the run will take, against the budgets) and exit: 0 if it fits, "
              "1 if not");
  g->add_option("--ram-budget", f.ram_budget,
                "RAM the run may take, e.g. 24G (default: what the system reports available minus --reserve)");
  g->add_option("--vram-budget", f.vram_budget,
                "device memory per device: SIZE (device 0) or 0=SIZE,1=SIZE (default: what the device reports free "
                "minus --reserve)");
  g->add_option("--reserve", f.reserve, "left free when a budget is taken from what the system reports (default 512M)");
  // Shared with --serve (runtime/serve): keep one definition when both are present.
  g->add_option("--parallel", f.parallel, "sequences run together (server slots), each with its own KV cache (default 1; 4 with --serve)");
  g->add_option("--kv-type", f.kv_type, "KV cache type: f16 (default; as llama.cpp), q8_0 (half of f16; head dimensions multiple of 32), f32 (what the conformance references use)");
  g->add_flag("--allow-paging", f.allow_paging,
              "start even if the weights that are read every token do not fit the RAM budget (the OS pages them "
              "from disk: slow)");
  g->add_option("--large-pages", f.large_pages,
                "large pages for the KV cache and workspace: auto (Windows: when the account holds \"Lock pages in "
                "memory\"; Linux: the kernel's transparent huge page policy), on (ask for them; fail if they cannot "
                "be had), off");
  auto* e = app.add_option_group("experts", "tiered experts (docs/experts-runtime.md)");
  e->add_option("--expert-device", f.expert_device,
                "device tier for hot experts on a CPU run: none, or cpu (a simulated device in host RAM); on a GPU "
                "backend (--backend cuda|hip) the device tier is the GPU");
  e->add_option("--expert-slots", f.expert_slots, "expert slots on the device: a number, or auto (as many as fit; on a GPU: every expert on the "
                "device when the model fits, else as many slots as fit, the other experts on the CPU)");
  e->add_option("--expert-pinned", f.expert_pinned,
                "slots pinned with the profile's hottest experts, never evicted (default 0: the profile fills every "
                "slot at start and seeds the run-time policy; bench/results/expert-cache.md)");
  e->add_option("--expert-policy", f.expert_policy, "run-time slots: lfru (frequency-weighted LRU, default) or lru");
  e->add_option("--expert-half-life", f.expert_half_life, "lfru: accesses after which a use counts half (default: 64 tokens' worth)");
  e->add_option("--expert-profile", f.expert_profile,
                "a routing trace (--routing-trace-out) to rank experts by, instead of the pack's expert profile");
  e->add_option("--routing-trace-out", f.routing_trace_out,
                "write which experts every token chose at every layer (a routing trace) to this file");
  e->add_flag("--expert-stats", f.expert_stats, "print the tiers' hit and miss counts at the end");
  e->add_option("--split-rates", f.split_rates,
                "the VRAM/RAM split's forecast (--plan): read rates in GB/s of the device, host RAM and the link, "
                "DEVICE,HOST,LINK (default 500,60,25)");
}

Result<RunMemoryOptions> MemoryFlags::Resolve() const {
  RunMemoryOptions o;
  if (!ram_budget.empty()) {
    auto b = ParseByteSize(ram_budget);
    if (!b.ok()) return b.status().WithContext("--ram-budget");
    o.ram_budget = *b;
  }
  if (!vram_budget.empty()) {
    STRATA_ASSIGN_OR_RETURN(o.vram_budgets, ParseDeviceBudgets(vram_budget));
  }
  if (!reserve.empty()) {
    auto b = ParseByteSize(reserve);
    if (!b.ok()) return b.status().WithContext("--reserve");
    o.reserve = *b;
  }
  if (parallel != kParallelUnset && (parallel < 1 || parallel > 256))
    return InvalidArgument(StrFormat("--parallel %d: expected 1..256", parallel));
  o.parallel = parallel == kParallelUnset ? 1 : parallel;
  STRATA_ASSIGN_OR_RETURN(o.kv_type, ParseKvType(kv_type));
  o.allow_paging = allow_paging;
  STRATA_ASSIGN_OR_RETURN(o.large_pages, ParseLargePagesMode(large_pages));
  o.expert_device = expert_device;
  if (expert_slots == "auto") {
    o.expert_slots = -1;
  } else {
    char* end = nullptr;
    long v = std::strtol(expert_slots.c_str(), &end, 10);
    if (expert_slots.empty() || *end || v < 0 || v > (1 << 24))
      return InvalidArgument("--expert-slots '" + Printable(expert_slots) + "': expected auto or 0..16777216");
    o.expert_slots = static_cast<int32_t>(v);
  }
  if (expert_pinned < -1) return InvalidArgument("--expert-pinned: expected 0 or more");
  o.expert_pinned = expert_pinned;
  STRATA_ASSIGN_OR_RETURN(o.expert_policy, ParseCachePolicy(expert_policy));
  if (!std::isfinite(expert_half_life) || expert_half_life < 0)
    return InvalidArgument(StrFormat("--expert-half-life: expected a finite number, 0 (default) or more, found %g",
                                     expert_half_life));
  o.expert_half_life = expert_half_life;
  o.expert_profile = expert_profile;
  if (!split_rates.empty()) {
    STRATA_ASSIGN_OR_RETURN(o.split_rates, ParseSplitRates(split_rates));
  }
  return o;
}

}  // namespace strata
