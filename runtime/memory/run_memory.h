#pragma once
// From a run's memory and expert options to its plan, then to the
// allocations the plan counted: the glue strata-run (and the server) use, so
// every program plans the same way and allocates exactly what it planned.
//
//   PlanRun:      the inputs (budgets, large pages, the device tier's
//                 device, the expert hotness, the slot count: as many as
//                 fit for auto), then the MemoryPlan (PlanMemory) and, when
//                 it does not fit, the advice. Nothing large is allocated
//                 (the pack is mapped).
//   AllocateRun:  walks the plan's lines by identity and makes each on the
//                 backend that holds it: the sequences' states, the
//                 workspace, the backend's scratch, the expert tiers (slots
//                 filled); any failure comes back as a Status naming what
//                 and how much.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/experts/expert_cache.h"
#include "runtime/experts/expert_hotness.h"
#include "runtime/experts/expert_slots.h"
#include "runtime/experts/tiered_executor.h"
#include "runtime/memory/memory_plan.h"
#include "runtime/memory/split_forecast.h"
#include "runtime/model/sequence_state.h"
#include "runtime/model/workspace.h"

namespace strata {

// --large-pages: auto (Windows: on when the account holds the right to lock
// pages; Linux: off, the kernel's transparent huge page policy applies, so
// sanitizer builds keep their heap checks), on (required: the run refuses to
// start without them), off.
enum class LargePagesMode : uint8_t { kAuto, kOn, kOff };
Result<LargePagesMode> ParseLargePagesMode(std::string_view s);

// What the command line says about memory and experts (already parsed).
struct RunMemoryOptions {
  std::optional<uint64_t> ram_budget;    // --ram-budget; unset: available - reserve
  std::map<int, uint64_t> vram_budgets;  // --vram-budget, by device
  uint64_t reserve = kDefaultReserve;    // --reserve
  int32_t parallel = 1;                  // --parallel
  KvType kv_type = KvType::kF32;         // --kv-type
  bool allow_paging = false;             // --allow-paging
  LargePagesMode large_pages = LargePagesMode::kAuto;  // --large-pages
  std::string expert_device = "none";    // --expert-device none|cpu
  int32_t expert_slots = -1;             // --expert-slots; -1: as many as fit
  int32_t expert_pinned = -1;            // --expert-pinned; -1: DefaultPinnedSlots
  CachePolicy expert_policy = CachePolicy::kLfru;
  double expert_half_life = 0;           // LFRU half-life in accesses (0: default)
  bool decode_copies = true;             // the host tier reads decode copies when present
  std::string expert_profile;            // a routing trace to take the hotness from (the pack's profile wins)
  SplitRates split_rates;                // --split-rates: the forecast's bandwidth model
};

// What the run itself looks like.
struct RunShape {
  int64_t n_ctx = 0;
  int32_t batch = 512;
  int threads = 1;
  bool logits_all = false;
  uint64_t trace_tokens = 0;
  bool recurrent_snapshots = false;  // the server: one copy of each sequence's recurrent state (prefix reuse)
};

struct RunSetup {
  // --expert-device cpu: the device tier's CPU backend of its own (the
  // simulated device; inputs.tier names it). On the heap, like the hotness,
  // so inputs' pointers stay valid when the setup moves.
  std::unique_ptr<Backend> simulated_device;
  // The routed experts are split between the run's own device backend (the
  // device tier: inputs.tier names the backend itself) and the host tier;
  // the backend binds without them (Backend::BindWithoutRoutedExperts).
  bool split = false;
  std::optional<SplitForecast> forecast;  // with the split
  std::unique_ptr<const ExpertHotness> hotness;
  PlanInputs inputs;
  MemoryPlan plan;
  TierOptions tier;
  std::string large_pages;  // one line for the start of a run: "large pages: 2.00 MiB" or why not
};

// Errors: bad options (a budget for a device that does not exist, an unknown
// device, a profile that does not match the model), a profile that cannot be
// read. A plan that does not fit is returned with its advice, not an error:
// check plan.Fits(). pack, model and backend must outlive the result.
Result<RunSetup> PlanRun(const Pack& pack, const Model& model, Backend& backend,
                         const RunMemoryOptions& options, const RunShape& shape);

struct RunMemory {
  Workspace workspace;
  std::vector<SequenceState> states;  // inputs.parallel of them, n_ctx each
  std::vector<SequenceState> mtp_states;  // as many MTP states when the model's MTP block is enabled
  std::unique_ptr<TieredExpertExecutor> experts;  // null without a device tier
};

// REQUIRES: setup.plan.Fits(), planned for `backend`. `setup` must outlive
// the result (the executor uses its device and hotness). `host_engine` runs
// the host expert tier (the backend itself on a CPU run); it is needed, and
// must outlive the result, only when the plan has expert tiers. Sets the
// backend's large pages as planned.
Result<RunMemory> AllocateRun(const Model& model, Backend& backend, CpuBackend* host_engine, RunSetup& setup);

}  // namespace strata
