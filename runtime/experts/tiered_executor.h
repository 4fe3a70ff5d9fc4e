#pragma once
// TieredExpertExecutor: runs routed experts from two tiers (the
// ExpertExecutor of the forward pass, forward.h):
//  * the device tier: a fixed number of expert slots in the memory of the
//    backend that holds the tier (ExpertSlots, expert_slots.h), filled at
//    start with the hottest experts of the profile (pinned), plus a run-time
//    region (ExpertCache: LRU or LFRU) for experts that turn hot during the
//    session;
//  * the host tier: everything else, on a CPU engine (the CPU expert pool,
//    all its threads: the run's own backend on a CPU run), reading the
//    pack's native blobs or its Q8_0 decode copies.
// A miss runs on the host; if the cache admits the expert, it is uploaded
// into the slot the cache chose, for the tokens that follow.
//
// Every buffer (slots, device scratch, host scratch) is allocated in Create,
// sized by the memory plan; RunExpert allocates nothing.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/base/checked_alloc.h"
#include "runtime/experts/expert_cache.h"
#include "runtime/experts/expert_hotness.h"
#include "runtime/experts/expert_slots.h"
#include "runtime/model/forward.h"

namespace strata {

struct TierOptions {
  int32_t slots = 0;       // device slots (0: host tier only)
  int32_t pinned = -1;     // of which pinned from the hotness; -1: DefaultPinnedSlots
  CachePolicy policy = CachePolicy::kLfru;
  double half_life = 0;    // LFRU half-life in accesses; 0: the default
  bool per_layer = false;  // split the run-time slots evenly between layers
  bool decode_copies = true;  // the host tier reads Q8_0 decode copies when the pack has them
  bool warm = true;        // fill the run-time region from the hotness too (after the pinned experts)
  int64_t max_rows = 1;    // most tokens one RunExpert gets (tokens per pass)
  // The VRAM/RAM split's offload decision: host RAM's read rate (GB/s), the
  // floor of the CPU's time on an expert before it has been measured.
  double host_read_gbs = 60;
};

// How many of `slots` are pinned when TierOptions::pinned is -1.
int32_t DefaultPinnedSlots(int32_t slots, bool have_hotness);

class TieredExpertExecutor : public ExpertExecutor, private ExpertSplit {
 public:
  // Allocates the host scratch and the device's slots, pins and uploads the
  // hottest experts ("tier fill"). `host` runs the host tier. device.backend
  // and `hotness` may be null (no device: every expert on the host; no
  // hotness: no pinned slots). `host`, device.backend and `hotness` must
  // outlive the executor. Errors: allocation or upload failures, with what
  // and how much; pinned > slots; a device without kernels for the types.
  static Result<std::unique_ptr<TieredExpertExecutor>> Create(const Model& model, CpuBackend& host,
                                                               const TierDevice& device, const ExpertHotness* hotness,
                                                               const TierOptions& options);

  Status RunExpert(int32_t layer, uint32_t expert, const float* x, int64_t m, float* y) override;
  // When the slots are `backend`'s own memory (the VRAM/RAM split on a GPU).
  ExpertSplit* SplitOn(const Backend& backend) override;

  const CacheStats& stats() const { return cache_.stats(); }
  const ExpertCache& cache() const { return cache_; }
  // Host scratch bytes for these options (the memory plan's line).
  static uint64_t HostScratchBytes(const HParams& hp, int64_t max_rows);
  // "device tier: 24 slots on cpu (...): 16 pinned from <source>, 8 lru; host tier: fast (...), native blobs"
  std::string Describe() const;
  // One line of hit and miss counts for the end of a run.
  std::string StatsLine() const;

 private:
  TieredExpertExecutor(const Model& model, CpuBackend& host, const TierDevice& device,
                       const ExpertCacheConfig& config, const TierOptions& options)
      : model_(model), host_(host), device_(device), cache_(model.hp().n_layer, model.hp().n_expert, config),
        options_(options) {}
  Status Fill(const ExpertHotness* hotness);
  Status Upload(int32_t layer, uint32_t expert, int32_t slot);

  // ExpertSplit.
  Status Assign(int32_t layer, std::span<const uint32_t> experts, std::span<const int64_t> rows,
                std::span<int32_t> slots, double link_bytes_per_s) override;
  // Whether a miss of `rows` rows whose weights are `bytes` runs sooner on
  // the device after an upload than on the CPU (ExpertSplit::Assign).
  bool Offload(uint64_t bytes, int64_t rows, double link_bytes_per_s) const;
  Status RunOnHost(int32_t layer, uint32_t expert, const float* x, int64_t m, float* y) override;
  Status EndLayer() override;
  // Called only for slots Assign gave out (so only with slots).
  const BackendBuffer& SlotBuffer() const override { return slots_->buffer(); }
  uint64_t SlotBytes() const override { return slots_->slot_bytes(); }
  const SwiGluMatrices& SlotMatrices(int32_t slot) const override { return slots_->matrices(slot); }
  struct PendingUpload {
    int32_t layer;
    uint32_t expert;
    int32_t slot;
  };

  const Model& model_;
  CpuBackend& host_;
  TierDevice device_;
  std::optional<ExpertSlots> slots_;  // with a device and slots
  ExpertCache cache_;
  TierOptions options_;
  AlignedBuffer host_scratch_;
  std::string hotness_source_;
  int32_t pinned_filled_ = 0, warm_filled_ = 0;
  std::vector<PendingUpload> pending_;  // admitted by Assign, uploaded at EndLayer (reserved at Create)
  std::vector<uint8_t> used_;           // slots a layer's products read (Assign), one flag per slot
  // The CPU's time per expert row, measured by RunOnHost on batches of
  // several rows (a moving average; 0 until measured).
  double host_s_per_row_ = 0;
};

}  // namespace strata
