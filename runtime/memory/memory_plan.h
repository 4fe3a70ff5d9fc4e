#pragma once
// MemoryPlan: every byte a run will take, computed before anything large is
// allocated, from the pack, the hyperparameters, the backends and the
// budgets. strata-run prints it (--plan) and refuses to start when it does
// not fit, with the numbers and what to change (seeds/003: an expert cache
// sized for more VRAM than exists, then an out-of-memory failure after start).
//
// The plan is data: lines (model/plan_line.h), each with an identity
// (PlanItem), a place and its bytes. PlanMemory is one pure function from
// the inputs to the lines; the slot search and the advice (plan_search.h)
// are small functions over it; AllocateRun (run_memory.h) walks the lines by
// identity and allocates each where it is placed, so a run that fits its
// plan does not allocate more later. docs/memory-plan.md says how each line
// is computed. Where a line lives:
//   mapped:  the pack's weights. Dense weights and the experts the host tier
//            reads are expected resident (read every token) and count
//            against the RAM budget; experts pinned on a device, blobs
//            nobody reads, and the manifest are mapped but not expected
//            resident.
//   the backend's place (Backend::BufferPlace: host RAM for the CPU
//            backends, its device for a device backend): its copy of the
//            weights, KV cache, recurrent state, the forward workspace, its
//            scratch, and the lines it adds itself (AddPlanLines).
//   heap:    the logits buffer, the sampler, the host expert tier's scratch,
//            staging buffers, a routing trace, runtime metadata.
//   the device tier's device: expert slots and the tier's scratch (the
//            simulated CPU device's memory is host RAM, so its lines count
//            against the RAM budget too).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/experts/expert_hotness.h"
#include "runtime/experts/expert_slots.h"
#include "runtime/memory/budgets.h"
#include "runtime/model/backend.h"
#include "runtime/model/model.h"
#include "runtime/model/plan_line.h"

namespace strata {

class Pack;

// "f32", "f16", "q8_0" (any case): kernels/kv_type.h.
Result<KvType> ParseKvType(std::string_view s);

struct PlanInputs {
  // What the plan reads (each must outlive the call): the pack's sizes, the
  // model, and the run's backend, which says where its buffers live and how
  // large its workspace, scratch and copy of the weights are.
  const Pack* pack = nullptr;
  const Model* model = nullptr;
  const Backend* backend = nullptr;

  int64_t n_ctx = 0;        // positions per sequence
  int32_t parallel = 1;     // sequences (server slots), each with its own KV cache and state
  int32_t batch = 512;      // most tokens one forward pass runs, all sequences together
  int threads = 1;          // the backend's threads
  KvType kv_type = KvType::kF32;
  bool logits_all = false;  // a logits row for every token of a pass (--logits-out), not one per sequence
  uint64_t trace_tokens = 0;  // tokens a routing trace records (0: no trace)
  bool recurrent_snapshots = false;  // one more copy of each sequence's recurrent state (the server's prefix reuse)

  Budget ram;
  std::map<int, Budget> devices;  // budgets of the devices the run uses (given, or what they report free)
  bool allow_paging = false;      // resident weights may exceed the RAM budget (the OS pages them)

  // Expert tiers (tier.backend null: none).
  TierDevice tier;
  int32_t expert_slots = 0;
  int32_t expert_pinned = 0;
  const ExpertHotness* hotness = nullptr;  // which experts get pinned (their host pages need not stay resident)
  bool decode_copies = true;               // the host tier reads Q8_0 decode copies where the pack has them
  uint64_t large_page_bytes = 0;  // heap buffers of the backend of a large page or more are rounded to it (0: off)
};

// A device some lines are placed on.
struct PlanDevice {
  std::string name;             // the backend's: "cpu (simulated device tier, fast (avx512, 2 threads))"
  bool host_ram = false;        // its memory is host RAM (the simulated device): counted against RAM too
  std::optional<Budget> budget;  // unset: none given or reported (only RAM limits it, where it is host RAM)
};

struct MemoryPlan {
  std::string model;    // "qwen3moe, 48 layers, 128 experts (top-8)"
  std::string shape;    // "context 4096 x 1 sequence, passes of up to 512 tokens, 16 threads, KV cache F32"
  uint64_t large_page_bytes = 0;
  std::vector<PlanLine> lines;
  Budget ram;
  std::map<int, PlanDevice> devices;  // every device a line is placed on
  bool allow_paging = false;

  // The line of this identity (null: the plan has none).
  const PlanLine* Find(PlanItem id) const;
  uint64_t Heap() const;          // heap lines
  uint64_t MappedResident() const;
  uint64_t Mapped() const;        // all mapped lines
  uint64_t OnDevice(int device) const;
  uint64_t Device() const;        // lines on any device
  uint64_t DeviceInHostRam() const;  // lines on devices whose memory is host RAM
  uint64_t RamNeeded() const;     // heap + resident mappings + devices in host RAM
  // Private bytes the OS charges against its commit limit: heap + devices in
  // host RAM. Mapped weights are file-backed and not charged.
  uint64_t CommitNeeded() const;
  bool CommitFits() const { return !ram.commit_limited || CommitNeeded() <= ram.commit; }
  bool RamFits() const;
  bool DeviceFits() const;        // every device within its budget
  bool Fits() const { return RamFits() && DeviceFits(); }
  // Why it does not fit, one line per budget exceeded (empty when it fits).
  std::vector<std::string> Problems() const;
  std::vector<std::string> advice;  // what to change (PlanAdvice), when it does not fit
  std::vector<std::string> notes;   // how the inputs were read (e.g. a slot count capped at the expert count)
  std::vector<std::string> split;   // the VRAM/RAM split's forecast (SplitForecast::Lines), when the experts are split
};

// The plan for these inputs: every line, placed; advice and notes empty.
// Pure: reads the pack's sizes, the model and what the backends say, and
// allocates nothing. Errors only for inputs that make no sense (n_ctx < 1,
// more pinned than slots); a plan that does not fit is a plan, not an error.
Result<MemoryPlan> PlanMemory(const PlanInputs& in);

// Tokens per forward pass the plan assumes: min(batch, parallel * n_ctx).
int64_t PlanTokensPerPass(const PlanInputs& in);

// The host buffers the GPU backend's split MoE layer (GpuBackend::MoeSplit)
// grows to for passes of up to `tokens` tokens: the rows and routing that
// come down, the host experts' rows and results, the place table, and
// per-expert counts. Counted in the plan's host tier scratch line.
uint64_t SplitHostBufferBytes(const HParams& hp, int64_t tokens);

}  // namespace strata
