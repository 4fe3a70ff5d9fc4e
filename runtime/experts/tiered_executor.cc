#include "runtime/experts/tiered_executor.h"

#include <algorithm>

#include "runtime/base/strings.h"

namespace strata {

int32_t DefaultPinnedSlots(int32_t /*slots*/, bool /*have_hotness*/) {
  // Measured (bench/results/expert-cache.md): an LFRU region over all slots,
  // filled and seeded from the profile, is within about a point of pinning
  // the profile's hottest where routing has static skew, and 30 to 50 points
  // better where routing moves with the text; pinning part of the slots
  // never beat it by more than a point. So nothing is pinned by default; the
  // profile's hottest experts fill the slots at start and keep them while
  // they stay hot.
  return 0;
}

uint64_t TieredExpertExecutor::HostScratchBytes(const HParams& hp, int64_t max_rows) {
  return TakeBytes<float>(2 * static_cast<uint64_t>(std::max<int64_t>(max_rows, 1)) * hp.n_ff_exp);
}

Result<std::unique_ptr<TieredExpertExecutor>> TieredExpertExecutor::Create(const Model& model, CpuBackend& host,
                                                                           const TierDevice& device,
                                                                           const ExpertHotness* hotness,
                                                                           const TierOptions& options) {
  const HParams& hp = model.hp();
  if (hp.n_expert == 0) return Internal("a tiered expert executor for a model without routed experts");
  TierOptions o = options;
  if (!device.backend) o.slots = 0;
  if (o.slots < 0) return InvalidArgument(StrFormat("--expert-slots %d: expected 0 or more", o.slots));
  const int32_t all = static_cast<int32_t>(std::min<uint64_t>(uint64_t{hp.n_layer} * hp.n_expert, INT32_MAX));
  o.slots = std::min(o.slots, all);
  if (o.pinned < 0) o.pinned = DefaultPinnedSlots(o.slots, hotness != nullptr);
  if (o.pinned > o.slots)
    return InvalidArgument(StrFormat("--expert-pinned %d is more than the %d device slots", o.pinned, o.slots));
  if (o.pinned > 0 && !hotness)
    return InvalidArgument(StrFormat("%d pinned expert slots need an expert profile (the pack has none; give "
                                     "--expert-profile TRACE, or --expert-pinned 0)",
                                     o.pinned));
  if (hotness && (hotness->n_layer != hp.n_layer || hotness->n_expert != hp.n_expert))
    return InvalidArgument(StrFormat("the expert hotness (%s) has %u layers x %u experts; the model has %u x %u",
                                     hotness->source.c_str(), hotness->n_layer, hotness->n_expert, hp.n_layer,
                                     hp.n_expert));
  ExpertCacheConfig cc;
  cc.slots = o.slots;
  cc.pinned = o.pinned;
  cc.policy = o.policy;
  cc.half_life = o.half_life;
  cc.k = hp.n_expert_used;
  cc.per_layer = o.per_layer;
  std::unique_ptr<TieredExpertExecutor> ex(new TieredExpertExecutor(model, host, device, cc, o));
  STRATA_ASSIGN_OR_RETURN(ex->host_scratch_,
                          AlignedBuffer::Allocate(HostScratchBytes(hp, o.max_rows), "the host expert tier's scratch"));
  if (o.slots > 0) {
    const SlotLayout layout = ExpertSlotLayout(model, o.decode_copies);
    STRATA_ASSIGN_OR_RETURN(ExpertSlots slots, ExpertSlots::Create(device, model, o.slots, layout, o.max_rows));
    ex->slots_.emplace(std::move(slots));
  }
  STRATA_RETURN_IF_ERROR(ex->Fill(hotness));
  return ex;
}

Status TieredExpertExecutor::Fill(const ExpertHotness* hotness) {
  if (!hotness || options_.slots == 0) return Status::Ok();
  hotness_source_ = hotness->source;
  // The hottest experts over all layers: pinned first, then (warm start) the
  // run-time region, so the first tokens already hit.
  for (const auto& [key, slot] : FillFromHotness(cache_, *hotness, options_.warm)) {
    STRATA_ASSIGN_OR_RETURN(ExpertWeights w, HostExpertWeights(model_, key.layer, key.expert, options_.decode_copies));
    Status s = slots_->Upload(slot, w);
    if (!s.ok()) {
      cache_.Drop(slot);
      return s.WithContext(StrFormat("filling the device tier (expert %u of layer %d)", key.expert, key.layer));
    }
    (slot < options_.pinned ? pinned_filled_ : warm_filled_)++;
  }
  return Status::Ok();
}

Status TieredExpertExecutor::RunExpert(int32_t layer, uint32_t expert, const float* x, int64_t m, float* y) {
  const HParams& hp = model_.hp();
  if (layer < 0 || static_cast<uint32_t>(layer) >= hp.n_layer || expert >= hp.n_expert)
    return Internal(StrFormat("expert %u of layer %d is not in the model", expert, layer));
  if (m > options_.max_rows)
    return Internal(StrFormat("an expert batch of %lld rows; the tiers were planned for %lld",
                              static_cast<long long>(m), static_cast<long long>(options_.max_rows)));
  const ExpertKey key{layer, expert};
  const CacheAccess a = cache_.Access(key, static_cast<uint64_t>(m));
  if (a.slot >= 0) return slots_->Run(a.slot, x, m, y);
  STRATA_RETURN_IF_ERROR(RunExpertOnBackend(model_, host_, layer, expert, x, m, y, options_.decode_copies,
                                            reinterpret_cast<float*>(host_scratch_.data())));
  if (a.upload >= 0) {
    STRATA_ASSIGN_OR_RETURN(ExpertWeights w, HostExpertWeights(model_, layer, expert, options_.decode_copies));
    Status s = slots_->Upload(a.upload, w);
    if (!s.ok()) {
      cache_.Drop(a.upload);  // the slot holds nothing valid now; it is never run from
      return s.WithContext(StrFormat("uploading expert %u of layer %d to the device tier", expert, layer));
    }
  }
  return Status::Ok();
}

std::string TieredExpertExecutor::Describe() const {
  const ExpertCacheConfig& c = cache_.config();
  std::string host = StrFormat("host tier: %s, reading %s", host_.name().c_str(),
                               options_.decode_copies ? "decode copies where the pack has them, else native blobs"
                                                      : "native blobs");
  if (!slots_) return "device tier: none; " + host;
  std::string pins = c.pinned ? StrFormat("%d pinned (%d filled from %s)", c.pinned, pinned_filled_,
                                          hotness_source_.c_str())
                              : std::string("none pinned");
  return StrFormat("device tier: %d slots on %s: %s, %d %s (%d warm); %s", c.slots, device_.name.c_str(),
                   pins.c_str(), c.slots - c.pinned, std::string(CachePolicyName(c.policy)).c_str(), warm_filled_,
                   host.c_str());
}

std::string TieredExpertExecutor::StatsLine() const {
  const CacheStats& s = cache_.stats();
  return StrFormat("experts: %llu routed uses, %.1f%% on the device tier (%llu pinned, %llu run-time), %llu on the "
                   "host; %llu uploads, %llu evictions",
                   static_cast<unsigned long long>(s.hits + s.misses), 100.0 * s.HitRate(),
                   static_cast<unsigned long long>(s.pinned_hits),
                   static_cast<unsigned long long>(s.hits - s.pinned_hits),
                   static_cast<unsigned long long>(s.misses), static_cast<unsigned long long>(s.uploads),
                   static_cast<unsigned long long>(s.evictions));
}

}  // namespace strata
