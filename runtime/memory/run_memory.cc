#include "runtime/memory/run_memory.h"

#include <algorithm>
#include <set>

#include "runtime/base/platform.h"
#include "runtime/base/strings.h"
#include "runtime/experts/routing_trace.h"
#include "runtime/memory/plan_search.h"
#include "runtime/model/fast_backend.h"
#include "runtime/pack/pack_reader.h"

namespace strata {
namespace {

// --large-pages: the page size to plan with (0: none), and the start line
// that says what was decided and why.
Result<std::string> AskLargePages(const RunMemoryOptions& o, const Backend& backend, uint64_t* page_bytes) {
  *page_bytes = 0;
  if (o.large_pages == LargePagesMode::kOff) return std::string("large pages: off (--large-pages off)");
  if (backend.BufferPlace().kind != MemoryPlace::Kind::kHeap)
    return "large pages: none (the " + backend.name() + " backend's buffers are device memory)";
#ifdef _WIN32
  const bool ask = true;
#else
  const bool ask = o.large_pages == LargePagesMode::kOn;
#endif
  if (!ask)
    return std::string("large pages: the kernel's transparent huge page policy (--large-pages on asks for them)");
  const LargePages lp = QueryLargePages();
  if (lp.page_bytes) {
    *page_bytes = lp.page_bytes;
    return "large pages: " + HumanBytes(lp.page_bytes) + " for the KV cache and workspace";
  }
  if (o.large_pages == LargePagesMode::kOn) return FailedPrecondition("--large-pages on: " + lp.why);
  return "large pages: off (" + lp.why + ")";
}

// A device backend holding the routed experts among its weights: a GPU run
// of an MoE model, whose experts can be split between VRAM and host RAM.
bool SplitsExperts(const Model& model, const Backend& backend) {
  return model.hp().n_expert > 0 && backend.BufferPlace().kind == MemoryPlace::Kind::kDevice &&
         backend.RoutedExpertBytes(model) > 0;
}

// --expert-device: the device tier's device. `cpu` simulates one: a CPU
// backend of its own (host RAM, a FastBackend's kernels), shown as device 0.
// On a GPU backend the device tier is the GPU itself (SplitTierOnDevice).
Status ChooseTierDevice(const Model& model, const Backend& backend, const RunMemoryOptions& o, const RunShape& shape,
                        RunSetup* s) {
  if (o.expert_device == "none") return Status::Ok();
  if (o.expert_device != "cpu")
    return InvalidArgument("--expert-device '" + Printable(o.expert_device) +
                           "': expected none or cpu (a simulated device in host RAM; on a GPU backend, --backend "
                           "cuda|hip, the device tier is the GPU: --expert-slots N|auto)");
  if (model.hp().n_expert == 0)
    return InvalidArgument("--expert-device: the model has no routed experts (" + std::string(ArchName(model.arch())) +
                           ")");
  if (backend.BufferPlace().kind == MemoryPlace::Kind::kDevice)
    return InvalidArgument("--expert-device cpu simulates a device tier for a CPU run; on the " + backend.name() +
                           " backend the device tier is the GPU itself: leave --expert-device out (--expert-slots "
                           "N|auto sets its slots)");
  FastBackend::Options fo;
  fo.threads = shape.threads;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<FastBackend> device, FastBackend::Create(fo));
  s->inputs.tier = TierDevice{device.get(), "cpu (simulated device tier, " + device->name() + ")",
                              MemoryPlace::Device(0), /*host_ram=*/true};
  s->simulated_device = std::move(device);
  return Status::Ok();
}

// A GPU run of an MoE model: every routed expert on the device when the
// whole model fits its budget and --expert-slots is auto; else the split:
// the device tier's slots in VRAM (as many as fit, or --expert-slots N,
// filled from the expert profile) and the other experts on the host tier.
Status SplitTierOnDevice(const Model& model, Backend& backend, const RunMemoryOptions& o, RunSetup* s) {
  if (!SplitsExperts(model, backend)) {
    if (o.expert_slots >= 0 && backend.BufferPlace().kind == MemoryPlace::Kind::kDevice)
      return InvalidArgument(StrFormat("--expert-slots %d: the model has no routed experts to split",
                                       o.expert_slots));
    return Status::Ok();
  }
  if (o.expert_slots < 0) {
    STRATA_ASSIGN_OR_RETURN(MemoryPlan whole, PlanMemory(s->inputs));
    if (whole.DeviceFits()) return Status::Ok();
  }
  s->inputs.tier = TierDevice{&backend, backend.name(), backend.BufferPlace(), /*host_ram=*/false};
  s->split = true;
  return Status::Ok();
}

// The budgets of the devices the run keeps memory on: --vram-budget, else
// what the backend's device reports free, less the reserve. The simulated
// device has none unless given (the RAM budget governs it).
Status SetDeviceBudgets(const Backend& backend, const RunMemoryOptions& o, PlanInputs* in) {
  std::set<int> used;
  const MemoryPlace own = backend.BufferPlace();
  if (own.kind == MemoryPlace::Kind::kDevice) used.insert(own.device);
  if (in->tier.backend) used.insert(in->tier.place.device);
  for (const auto& [dev, bytes] : o.vram_budgets) {
    if (!used.count(dev))
      return InvalidArgument(StrFormat("--vram-budget %d=%s: this run uses no device %d (--backend cuda|hip "
                                       "runs on device 0; --expert-device cpu simulates device 0)",
                                       dev, HumanBytes(bytes).c_str(), dev));
    in->devices[dev] = Budget{bytes, "--vram-budget " + HumanBytes(bytes)};
  }
  if (own.kind == MemoryPlace::Kind::kDevice && !in->devices.count(own.device))
    if (const uint64_t free = backend.DeviceFreeBytes())
      in->devices[own.device] = Budget{free > o.reserve ? free - o.reserve : 0,
                                       "free " + HumanBytes(free) + " - reserve " + HumanBytes(o.reserve)};
  return Status::Ok();
}

// Which experts are hot: a routing trace the user names (it describes their
// own traffic), else the pack's profile (the packer's corpus); none without
// a device tier.
Status ReadHotness(const Pack& pack, const Model& model, const RunMemoryOptions& o, RunSetup* s) {
  if (!s->inputs.tier.backend) return Status::Ok();
  const HParams& hp = model.hp();
  if (!o.expert_profile.empty()) {
    STRATA_ASSIGN_OR_RETURN(RoutingTrace trace, ReadRoutingTrace(o.expert_profile));
    auto h = ExpertHotness::FromTrace(trace, 0, UINT64_MAX, &hp);
    if (!h.ok()) return h.status().WithContext("--expert-profile " + o.expert_profile);
    h->source = "routing trace " + o.expert_profile +
                StrFormat(" (%llu tokens)", static_cast<unsigned long long>(h->tokens));
    s->hotness = std::make_unique<const ExpertHotness>(std::move(*h));
  } else {
    auto from_pack = ExpertHotness::FromPack(pack, hp);
    if (from_pack.ok()) {
      s->hotness = std::make_unique<const ExpertHotness>(std::move(*from_pack));
    } else if (from_pack.status().code() != StatusCode::kNotFound) {
      return from_pack.status();
    }
  }
  s->inputs.hotness = s->hotness.get();
  return Status::Ok();
}

// --expert-slots and --expert-pinned: checked, and for auto as many slots as
// fit (every expert at most).
Status ChooseSlots(const Model& model, const RunMemoryOptions& o, PlanInputs* in) {
  const HParams& hp = model.hp();
  const bool device = in->tier.backend != nullptr;
  const int32_t all = device ? static_cast<int32_t>(std::min<uint64_t>(hp.RoutedExperts(), INT32_MAX))
                             : 0;
  int32_t slots = device ? (o.expert_slots >= 0 ? std::min(o.expert_slots, all) : -1) : 0;
  if (o.expert_pinned > 0 && device && !in->hotness)
    return InvalidArgument(StrFormat("--expert-pinned %d needs an expert profile: the pack has none; give "
                                     "--expert-profile TRACE (strata-run --routing-trace-out writes one)",
                                     o.expert_pinned));
  if (slots >= 0 && o.expert_pinned > slots)
    return InvalidArgument(StrFormat("--expert-pinned %d is more than --expert-slots %d", o.expert_pinned, slots));
  if (slots < 0) {
    // As many slots as fit, with the pinned count asked for.
    in->expert_pinned = o.expert_pinned >= 0 ? o.expert_pinned : 0;
    slots = std::max(LargestFittingExpertSlots(*in, all), 0);
    if (o.expert_pinned > slots) slots = o.expert_pinned;  // let the plan say it does not fit
  }
  in->expert_slots = slots;
  in->expert_pinned = o.expert_pinned >= 0 ? std::min(o.expert_pinned, slots)
                                           : DefaultPinnedSlots(slots, in->hotness != nullptr);
  return Status::Ok();
}

}  // namespace

Result<RunSetup> PlanRun(const Pack& pack, const Model& model, Backend& backend, const RunMemoryOptions& o,
                         const RunShape& shape) {
  const HParams& hp = model.hp();
  RunSetup s;
  PlanInputs& in = s.inputs;
  in.pack = &pack;
  in.model = &model;
  in.backend = &backend;
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
  STRATA_ASSIGN_OR_RETURN(s.large_pages, AskLargePages(o, backend, &in.large_page_bytes));
  STRATA_RETURN_IF_ERROR(ChooseTierDevice(model, backend, o, shape, &s));
  STRATA_RETURN_IF_ERROR(SetDeviceBudgets(backend, o, &in));
  STRATA_RETURN_IF_ERROR(SplitTierOnDevice(model, backend, o, &s));
  if (!in.tier.backend && (o.expert_pinned > 0 || o.expert_slots > 0))
    return InvalidArgument("--expert-slots/--expert-pinned need a device tier: give --expert-device cpu, or run on a "
                           "GPU backend (--backend cuda|hip)");
  STRATA_RETURN_IF_ERROR(ReadHotness(pack, model, o, &s));
  STRATA_RETURN_IF_ERROR(ChooseSlots(model, o, &in));

  STRATA_ASSIGN_OR_RETURN(s.plan, PlanMemory(in));
  if (!s.plan.Fits()) s.plan.advice = PlanAdvice(in);
  if (s.split) {
    STRATA_ASSIGN_OR_RETURN(s.forecast, ForecastSplit(in, o.split_rates));
    s.plan.split = s.forecast->Lines();
  }
  const int32_t all = static_cast<int32_t>(std::min<uint64_t>(hp.RoutedExperts(), INT32_MAX));
  if (in.tier.backend && o.expert_slots > all)
    s.plan.notes.push_back(StrFormat("--expert-slots %d is more than the model's %d routed experts (%u layers x %u): "
                                     "planned %d",
                                     o.expert_slots, all, hp.n_layer, hp.n_expert, all));
  if (in.tier.backend && o.expert_slots < 0)
    s.plan.notes.push_back(StrFormat("--expert-slots auto: %d of the model's %d routed experts fit", in.expert_slots,
                                     all));

  s.tier.slots = in.expert_slots;
  s.tier.pinned = in.expert_pinned;
  s.tier.policy = o.expert_policy;
  s.tier.half_life = o.expert_half_life;
  s.tier.decode_copies = o.decode_copies;
  s.tier.max_rows = PlanTokensPerPass(in);
  s.tier.host_read_gbs = o.split_rates.host_gbs;
  return s;
}

Result<LargePagesMode> ParseLargePagesMode(std::string_view s) {
  if (s == "auto") return LargePagesMode::kAuto;
  if (s == "on") return LargePagesMode::kOn;
  if (s == "off") return LargePagesMode::kOff;
  return InvalidArgument("--large-pages '" + Printable(s) + "': expected auto, on or off");
}

Result<RunMemory> AllocateRun(const Model& model, Backend& backend, CpuBackend* host_engine, RunSetup& setup) {
  const PlanInputs& in = setup.inputs;
  if (!setup.plan.Fits()) return Internal("AllocateRun on a plan that does not fit");
  RunMemory r;
  backend.SetLargePages(in.large_page_bytes);
  for (const PlanLine& l : setup.plan.lines) {
    switch (l.id) {
      case PlanItem::kKvCache: {  // each sequence's state: its KV cache and recurrent state in one buffer
        for (int32_t i = 0; i < in.parallel; ++i) {
          STRATA_ASSIGN_OR_RETURN(SequenceState st, SequenceState::Create(backend, model.hp(), in.n_ctx, in.kv_type,
                                                                              PlanTokensPerPass(in)));
          r.states.push_back(std::move(st));
        }
        break;
      }
      case PlanItem::kMtpCache: {
        for (int32_t i = 0; i < in.parallel; ++i) {
          STRATA_ASSIGN_OR_RETURN(SequenceState st, SequenceState::Create(backend, model.hp(), in.n_ctx, in.kv_type,
                                                                              PlanTokensPerPass(in), StateLayers::kMtp));
          r.mtp_states.push_back(std::move(st));
        }
        break;
      }
      case PlanItem::kForwardWorkspace: {
        STRATA_ASSIGN_OR_RETURN(r.workspace, backend.CreateWorkspace(l.bytes, "the forward-pass workspace"));
        break;
      }
      case PlanItem::kBackendScratch: STRATA_RETURN_IF_ERROR(backend.ReserveScratch(l.bytes)); break;
      case PlanItem::kExpertSlots: {  // the expert tiers: host scratch, slots and device scratch together
        if (!host_engine) return Internal("AllocateRun: a plan with expert tiers and no CPU engine for the host tier");
        STRATA_ASSIGN_OR_RETURN(r.experts, TieredExpertExecutor::Create(model, *host_engine, in.tier,
                                                                        setup.hotness.get(), setup.tier));
        break;
      }
      // Made elsewhere, or inside the lines above:
      case PlanItem::kWeightsDense:      // the pack's mapping
      case PlanItem::kExpertsHostTier:
      case PlanItem::kExpertsPinned:
      case PlanItem::kWeightsNotRead:
      case PlanItem::kPackOverhead:
      case PlanItem::kBackendWeights:    // by the backend at load (Bind)
      case PlanItem::kModuleImage:       // by the backend when it was made
      case PlanItem::kDriverContext:
      case PlanItem::kBackendOther:
      case PlanItem::kRecurrentState:    // in each state, at kKvCache
      case PlanItem::kRecurrentSnapshots:  // by the server's scheduler, one per slot
      case PlanItem::kLargePageRounding:   // by the OS, in the states and the workspace
      case PlanItem::kHostTierScratch:     // by the expert tiers, at kExpertSlots
      case PlanItem::kDeviceTierScratch:
      case PlanItem::kStaging:             // by the device tier's backend, for its uploads
      case PlanItem::kLogits:              // by the Generator or the scheduler, before their first pass
      case PlanItem::kSampler:
      case PlanItem::kRoutingTrace:        // by the recorder (RoutingTraceRecorder::Reserve)
      case PlanItem::kRuntimeMetadata:     // at load: the tensor table, the tokenizer
        break;
    }
  }
  return r;
}

}  // namespace strata
