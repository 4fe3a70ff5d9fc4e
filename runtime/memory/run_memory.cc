#include "runtime/memory/run_memory.h"

#include <algorithm>

#include "runtime/base/platform.h"
#include "runtime/base/strings.h"
#include "runtime/experts/cpu_expert_device.h"
#include "runtime/experts/routing_trace.h"
#include "runtime/model/forward.h"
#include "runtime/pack/pack_reader.h"

namespace strata {

Result<RunSetup> PlanRun(const Pack& pack, const Model& model, const CpuBackend& backend,
                         const RunMemoryOptions& o, const RunShape& shape) {
  const HParams& hp = model.hp();
  RunSetup s;
  PlanInputs& in = s.inputs;
  in.n_ctx = shape.n_ctx;
  in.parallel = o.parallel;
  in.batch = shape.batch;
  in.threads = shape.threads;
  in.kv_type = o.kv_type;
  in.logits_all = shape.logits_all;
  in.trace_tokens = shape.trace_tokens;
  in.recurrent_snapshots = shape.recurrent_snapshots;
  in.allow_paging = o.allow_paging;
  in.decode_copies = o.decode_copies;
  in.ram = RamBudget(o.ram_budget ? &*o.ram_budget : nullptr, o.reserve);
  if (o.large_pages != LargePagesMode::kOff) {
#ifdef _WIN32
    const bool ask = true;
#else
    const bool ask = o.large_pages == LargePagesMode::kOn;
#endif
    if (ask) {
      const LargePages lp = QueryLargePages();
      if (lp.page_bytes) {
        in.large_page_bytes = lp.page_bytes;
        s.large_pages = "large pages: " + HumanBytes(lp.page_bytes) + " for the KV cache and workspace";
      } else if (o.large_pages == LargePagesMode::kOn) {
        return FailedPrecondition("--large-pages on: " + lp.why);
      } else {
        s.large_pages = "large pages: off (" + lp.why + ")";
      }
    } else {
      s.large_pages = "large pages: the kernel's transparent huge page policy (--large-pages on asks for them)";
    }
  } else {
    s.large_pages = "large pages: off (--large-pages off)";
  }

  // The device tier's device. Without a GPU backend in this build, the only
  // device is the simulated one (host RAM, a FastBackend of its own).
  if (o.expert_device == "cpu") {
    if (hp.n_expert == 0)
      return InvalidArgument("--expert-device: the model has no routed experts (" +
                             std::string(ArchName(model.arch())) + ")");
    CpuExpertDevice::Options co;
    co.threads = shape.threads;
    if (auto it = o.vram_budgets.find(0); it != o.vram_budgets.end()) co.capacity = it->second;
    STRATA_ASSIGN_OR_RETURN(s.device, CpuExpertDevice::Create(co));
  } else if (o.expert_device != "none") {
    return InvalidArgument("--expert-device '" + Printable(o.expert_device) +
                           "': expected none or cpu (this build has no GPU backend)");
  }
  for (const auto& [dev, bytes] : o.vram_budgets) {
    if (dev != 0 || !s.device)
      return InvalidArgument(StrFormat("--vram-budget %d=%s: there is no device %d (this build has no GPU backend; "
                                       "--expert-device cpu simulates device 0)",
                                       dev, HumanBytes(bytes).c_str(), dev));
    in.devices[dev] = Budget{bytes, "--vram-budget " + HumanBytes(bytes)};
  }
  in.device = s.device.get();
  in.device_index = 0;
  // A device with memory of its own and no --vram-budget: what it reports
  // free, minus the reserve (a GPU backend reports cudaMemGetInfo's free).
  if (s.device && s.device->memory() == DeviceMemory::kDeviceRam && !in.devices.count(0) &&
      s.device->capacity_bytes() > 0) {
    const uint64_t free = s.device->capacity_bytes();
    in.devices[0] = Budget{free > o.reserve ? free - o.reserve : 0,
                           "free " + HumanBytes(free) + " - reserve " + HumanBytes(o.reserve)};
  }

  // Which experts are hot: a routing trace the user names (it describes their
  // own traffic), else the pack's profile (the packer's corpus).
  if (s.device) {
    if (!o.expert_profile.empty()) {
      STRATA_ASSIGN_OR_RETURN(RoutingTrace trace, ReadRoutingTrace(o.expert_profile));
      auto h = ExpertHotness::FromTrace(trace, 0, UINT64_MAX, &hp);
      if (!h.ok()) return h.status().WithContext("--expert-profile " + o.expert_profile);
      h->source = "routing trace " + o.expert_profile + StrFormat(" (%llu tokens)", static_cast<unsigned long long>(h->tokens));
      s.hotness = std::move(*h);
    } else {
      auto from_pack = ExpertHotness::FromPack(pack, hp);
      if (from_pack.ok()) {
        s.hotness = std::move(*from_pack);
      } else if (from_pack.status().code() != StatusCode::kNotFound) {
        return from_pack.status();
      }
    }
  }
  in.hotness = s.hotness ? &*s.hotness : nullptr;

  const int32_t all = s.device ? static_cast<int32_t>(std::min<uint64_t>(uint64_t{hp.n_layer} * hp.n_expert, INT32_MAX))
                               : 0;
  int32_t slots = s.device ? (o.expert_slots >= 0 ? std::min(o.expert_slots, all) : -1) : 0;
  auto pinned_for = [&](int32_t n) {
    return o.expert_pinned >= 0 ? std::min(o.expert_pinned, n) : DefaultPinnedSlots(n, s.hotness.has_value());
  };
  if (o.expert_pinned > 0 && s.device && !s.hotness)
    return InvalidArgument(StrFormat("--expert-pinned %d needs an expert profile: the pack has none; give "
                                     "--expert-profile TRACE (strata-run --routing-trace-out writes one)",
                                     o.expert_pinned));
  if (slots >= 0 && o.expert_pinned > slots)
    return InvalidArgument(StrFormat("--expert-pinned %d is more than --expert-slots %d", o.expert_pinned, slots));
  if (slots < 0) {
    // As many slots as fit: every expert at most; the pinned share as the default split.
    in.expert_pinned = o.expert_pinned >= 0 ? o.expert_pinned : 0;
    int32_t fit = LargestFittingExpertSlots(pack, model, backend, in, all);
    slots = std::max(fit, 0);
    if (o.expert_pinned > slots) slots = o.expert_pinned;  // let the plan say it does not fit
  }
  in.expert_slots = slots;
  in.expert_pinned = pinned_for(slots);
  STRATA_ASSIGN_OR_RETURN(s.plan, PlanMemory(pack, model, backend, in));
  if (s.device && o.expert_slots > all)
    s.plan.notes.push_back(StrFormat("--expert-slots %d is more than the model's %d routed experts (%u layers x %u): "
                                     "planned %d",
                                     o.expert_slots, all, hp.n_layer, hp.n_expert, all));
  if (s.device && o.expert_slots < 0)
    s.plan.notes.push_back(StrFormat("--expert-slots auto: %d of the model's %d routed experts fit", slots, all));

  s.tier.slots = slots;
  s.tier.pinned = in.expert_pinned;
  s.tier.policy = o.expert_policy;
  s.tier.half_life = o.expert_half_life;
  s.tier.decode_copies = o.decode_copies;
  s.tier.max_rows = PlanTokensPerPass(in);
  return s;
}

Result<LargePagesMode> ParseLargePagesMode(std::string_view s) {
  if (s == "auto") return LargePagesMode::kAuto;
  if (s == "on") return LargePagesMode::kOn;
  if (s == "off") return LargePagesMode::kOff;
  return InvalidArgument("--large-pages '" + Printable(s) + "': expected auto, on or off");
}

Result<RunMemory> AllocateRun(const Model& model, CpuBackend& backend, RunSetup& setup) {
  const PlanInputs& in = setup.inputs;
  if (!setup.plan.Fits()) return Internal("AllocateRun on a plan that does not fit");
  RunMemory r;
  backend.SetLargePages(in.large_page_bytes);
  uint64_t workspace = 0, scratch = 0;
  for (const PlanLine& l : setup.plan.lines) {
    if (l.item == "forward workspace") workspace = l.bytes;
    if (l.item == "backend scratch") scratch = l.bytes;
  }
  STRATA_ASSIGN_OR_RETURN(r.workspace, backend.CreateWorkspace(workspace, "the forward-pass workspace"));
  STRATA_RETURN_IF_ERROR(backend.ReserveScratch(scratch));
  for (int32_t i = 0; i < in.parallel; ++i) {
    auto st = SequenceState::Create(backend, model.hp(), in.n_ctx, in.kv_type);
    if (!st.ok()) return st.status();
    r.states.push_back(std::move(*st));
  }
  if (setup.device) {
    STRATA_ASSIGN_OR_RETURN(r.experts, TieredExpertExecutor::Create(model, backend, setup.device.get(),
                                                                    setup.hotness ? &*setup.hotness : nullptr,
                                                                    setup.tier));
  }
  return r;
}

}  // namespace strata
