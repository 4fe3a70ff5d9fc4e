#include "runtime/experts/tiered_executor.h"

#include <algorithm>
#include <chrono>

#include "runtime/base/strings.h"
#include "runtime/model/kernel_coverage.h"

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

namespace {
// Every routed expert matrix a tier may run has a kernel there: the host
// tier's CPU engine for every layer's experts, and the device tier's backend
// when it has slots (any expert may be uploaded). Checked once, at start,
// naming the tensor, so a run never fails at the first expert of a type.
Status CheckTierKernels(const Model& model, const CpuBackend& host, const TierDevice& device, const TierOptions& o) {
  const TensorRole roles[3] = {TensorRole::kFfnGateExps, TensorRole::kFfnUpExps, TensorRole::kFfnDownExps};
  for (uint32_t il = 0; il < model.hp().n_layer; ++il)
    for (TensorRole role : roles) {
      const TensorView* t = model.Get(static_cast<int32_t>(il), role);
      if (!t || !t->expert_count) continue;
      if (o.decode_copies && t->decode_copy >= 0) t = &model.tensors()[static_cast<size_t>(t->decode_copy)];
      auto refuse = [&](const std::string& who) {
        return Unsupported(StrFormat("tensor '%s' is %s, which %s has no kernel for; repack with --decode-copies q8_0 "
                                     "(strata-pack) to give it a Q8_0 copy%s",
                                     std::string(t->name).c_str(), std::string(TypeName(t->type)).c_str(), who.c_str(),
                                     o.decode_copies ? "" : ", and leave --decode-copies at its default"));
      };
      if (device.backend && o.slots > 0 && !device.backend->CanMultiply(t->type))
        return refuse("the device tier (" + device.name + ")");
      if (!host.CanMultiply(t->type) || CpuKernelSupport(t->type) == KernelSupport::kNone)
        return refuse("the host expert tier (" + host.name() + ")");
    }
  return Status::Ok();
}
}  // namespace

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
  const int32_t all = static_cast<int32_t>(std::min<uint64_t>(hp.RoutedExperts(), INT32_MAX));
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
  STRATA_RETURN_IF_ERROR(CheckTierKernels(model, host, device, o));
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
  ex->pending_.reserve(hp.n_expert);  // Assign admits at most every expert of a layer
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
  if (a.upload >= 0) return Upload(layer, expert, a.upload);
  return Status::Ok();
}

Status TieredExpertExecutor::Upload(int32_t layer, uint32_t expert, int32_t slot) {
  STRATA_ASSIGN_OR_RETURN(ExpertWeights w, HostExpertWeights(model_, layer, expert, options_.decode_copies));
  Status s = slots_->Upload(slot, w);
  if (!s.ok()) {
    cache_.Drop(slot);  // the slot holds nothing valid now; it is never run from
    return s.WithContext(StrFormat("uploading expert %u of layer %d to the device tier", expert, layer));
  }
  return Status::Ok();
}

// --- the split: the slots are the pass's own backend's memory ---------------------

ExpertSplit* TieredExpertExecutor::SplitOn(const Backend& backend) {
  return device_.backend == &backend ? this : nullptr;  // with no slots, every expert goes to the host
}

// A miss the cache admitted goes to the device now when uploading it costs
// less than the CPU's work on its rows: the upload at the measured link
// rate against the CPU's time, the larger of reading the expert once at host
// RAM's rate and its rows at the measured time per row. The device's own
// time on the expert is taken as small beside both (an assumption until a
// GPU measures it). A slot another expert of this layer reads is never
// overwritten before the layer runs.
bool TieredExpertExecutor::Offload(uint64_t bytes, int64_t rows, double link_bytes_per_s) const {
  if (link_bytes_per_s <= 0 || rows < 2) return false;
  const double upload = static_cast<double>(bytes) / link_bytes_per_s;
  const double host = std::max(static_cast<double>(bytes) / (options_.host_read_gbs * 1e9),
                               host_s_per_row_ * static_cast<double>(rows));
  return upload < host;
}

Status TieredExpertExecutor::Assign(int32_t layer, std::span<const uint32_t> experts, std::span<const int64_t> rows,
                                    std::span<int32_t> slots, double link_bytes_per_s) {
  const HParams& hp = model_.hp();
  if (experts.size() != rows.size() || experts.size() != slots.size())
    return Internal("ExpertSplit::Assign: experts, rows and slots of different lengths");
  // A layer that failed between Assign and EndLayer left admissions that
  // were never uploaded: those slots hold nothing the cache may run.
  for (const PendingUpload& u : pending_) cache_.Drop(u.slot);
  pending_.clear();
  Times& t = times();
  t.link_bytes_per_s = link_bytes_per_s;
  t.host_seconds_per_row = host_s_per_row_;
  t.host_read_gbs = options_.host_read_gbs;
  if (slots_) used_.assign(static_cast<size_t>(slots_->size()), 0);
  for (size_t i = 0; i < experts.size(); ++i) {
    const uint32_t e = experts[i];
    if (layer < 0 || static_cast<uint32_t>(layer) >= hp.n_layer || e >= hp.n_expert)
      return Internal(StrFormat("expert %u of layer %d is not in the model", e, layer));
    if (rows[i] > options_.max_rows)
      return Internal(StrFormat("an expert batch of %lld rows; the tiers were planned for %lld",
                                static_cast<long long>(rows[i]), static_cast<long long>(options_.max_rows)));
    const CacheAccess a = cache_.Access(ExpertKey{layer, e}, static_cast<uint64_t>(rows[i]));
    slots[i] = a.slot;
    if (a.slot >= 0) {
      if (!slots_->holds(a.slot)) return Internal(StrFormat("the cache ran slot %d, which holds nothing", a.slot));
      used_[static_cast<size_t>(a.slot)] = 1;
    }
    if (a.upload >= 0) pending_.push_back({layer, e, a.upload});
  }
  // Offloads: admitted misses, cheaper on the device, into slots nothing in
  // this layer reads (and the last admission of that slot in this layer).
  for (size_t i = 0; i < experts.size(); ++i) {
    if (slots[i] >= 0) continue;
    size_t k = pending_.size();
    for (size_t j = 0; j < pending_.size(); ++j)
      if (pending_[j].expert == experts[i]) k = j;
    if (k == pending_.size()) continue;
    const int32_t slot = pending_[k].slot;
    bool last = true;
    for (size_t j = k + 1; j < pending_.size(); ++j) last = last && pending_[j].slot != slot;
    if (!last || used_[static_cast<size_t>(slot)]) continue;
    STRATA_ASSIGN_OR_RETURN(ExpertWeights w, HostExpertWeights(model_, layer, experts[i], options_.decode_copies));
    if (!Offload(w.bytes(), rows[i], link_bytes_per_s)) continue;
    STRATA_RETURN_IF_ERROR(Upload(layer, experts[i], slot));
    used_[static_cast<size_t>(slot)] = 1;
    slots[i] = slot;
    // Uploaded now: this admission and any earlier one of the same slot (which
    // this one superseded) are done.
    std::erase_if(pending_, [slot](const PendingUpload& u) { return u.slot == slot; });
    ++t.offloaded;
    t.offload_rows += static_cast<uint64_t>(rows[i]);
    t.offload_bytes += w.bytes();
  }
  return Status::Ok();
}

Status TieredExpertExecutor::RunOnHost(int32_t layer, uint32_t expert, const float* x, int64_t m, float* y) {
  if (m > options_.max_rows)
    return Internal(StrFormat("an expert batch of %lld rows; the tiers were planned for %lld",
                              static_cast<long long>(m), static_cast<long long>(options_.max_rows)));
  const auto t0 = std::chrono::steady_clock::now();
  STRATA_RETURN_IF_ERROR(RunExpertOnBackend(model_, host_, layer, expert, x, m, y, options_.decode_copies,
                                            reinterpret_cast<float*>(host_scratch_.data())));
  if (m >= 4) {  // several rows: the time per row, the weights' read spread over them
    const double per_row = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                           static_cast<double>(m);
    host_s_per_row_ = host_s_per_row_ > 0 ? 0.8 * host_s_per_row_ + 0.2 * per_row : per_row;
  }
  return Status::Ok();
}

// In admission order: a slot admitted twice in one layer ends up holding the
// later expert, as the cache says.
Status TieredExpertExecutor::EndLayer() {
  Status first;
  for (const PendingUpload& u : pending_) {
    Status s = Upload(u.layer, u.expert, u.slot);
    if (first.ok() && !s.ok()) first = std::move(s);
  }
  pending_.clear();
  return first;
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
