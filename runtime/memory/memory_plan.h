#pragma once
// MemoryPlan: every byte a run will take, computed before anything large is
// allocated, from the pack, the hyperparameters and the budgets. strata-run
// prints it (--plan) and refuses to start when it does not fit, with the
// numbers and what to change (seeds/003: an expert cache sized for more VRAM
// than exists, then an out-of-memory failure after start).
//
// Lines (docs/memory-plan.md says how each is computed):
//   mapped:  the pack's weights. Dense weights and the experts the host tier
//            reads are expected resident (read every token) and count
//            against the RAM budget; experts pinned on a device, blobs
//            nobody reads, and the manifest are mapped but not expected
//            resident.
//   heap:    KV cache, recurrent state, the forward workspace, the backend's
//            scratch, the logits buffer, the host expert tier's scratch,
//            staging buffers, a routing trace, runtime metadata.
//   device:  expert slots and the device tier's scratch, on the device that
//            holds them (a CpuExpertDevice's memory is host RAM, so its lines
//            count against the RAM budget too).
// The allocations themselves are made from these numbers (run_memory.h), so
// a run that fits its plan does not allocate more later.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/experts/expert_device.h"
#include "runtime/experts/expert_hotness.h"
#include "runtime/memory/budgets.h"
#include "runtime/model/backend.h"
#include "runtime/model/model.h"

namespace strata {

// "f32", "f16", "q8_0" (any case): kernels/kv_type.h.
Result<KvType> ParseKvType(std::string_view s);

struct PlanInputs {
  int64_t n_ctx = 0;        // positions per sequence
  int32_t parallel = 1;     // sequences (server slots), each with its own KV cache and state
  int32_t batch = 512;      // most tokens one forward pass runs, all sequences together
  int threads = 1;          // the backend's threads
  KvType kv_type = KvType::kF32;
  bool logits_all = false;  // a logits row for every token of a pass (--logits-out), not one per sequence
  uint64_t trace_tokens = 0;  // tokens a routing trace records (0: no trace)
  bool recurrent_snapshots = false;  // one more copy of each sequence's recurrent state (the server's prefix reuse)

  Budget ram;
  std::map<int, Budget> devices;  // budgets of devices that exist
  bool allow_paging = false;      // resident weights may exceed the RAM budget (the OS pages them)

  // Expert tiers (no device: none).
  const ExpertDevice* device = nullptr;
  int device_index = 0;
  int32_t expert_slots = 0;
  int32_t expert_pinned = 0;
  const ExpertHotness* hotness = nullptr;  // which experts get pinned (their host pages need not stay resident)
  bool decode_copies = true;               // the host tier reads Q8_0 decode copies where the pack has them
  uint64_t large_page_bytes = 0;  // the backend's buffers of a large page or more are rounded to it (0: off)
};

enum class PlanPool : uint8_t { kMapped, kHeap, kDevice };

struct PlanLine {
  std::string item;
  PlanPool pool = PlanPool::kHeap;
  uint64_t bytes = 0;
  bool counts = true;  // mapped: expected resident (counts against the RAM budget)
  std::string how;     // how the number was computed
};

struct MemoryPlan {
  std::string model;    // "qwen3moe, 48 layers, 128 experts (top-8)"
  std::string shape;    // "context 4096 x 1 sequence, passes of up to 512 tokens, 16 threads, KV cache F32"
  uint64_t large_page_bytes = 0;
  std::vector<PlanLine> lines;
  Budget ram;
  std::map<int, Budget> devices;
  int device_index = 0;
  std::string device_name;
  bool device_in_host_ram = false;
  bool allow_paging = false;

  uint64_t Heap() const;          // heap lines
  uint64_t MappedResident() const;
  uint64_t Mapped() const;        // all mapped lines
  uint64_t Device() const;        // device lines
  uint64_t RamNeeded() const;     // heap + resident mappings (+ device lines in host RAM)
  // Private bytes the OS charges against its commit limit: heap (+ device
  // lines in host RAM). Mapped weights are file-backed and not charged.
  uint64_t CommitNeeded() const;
  bool CommitFits() const { return !ram.commit_limited || CommitNeeded() <= ram.commit; }
  bool RamFits() const;
  bool DeviceFits() const;
  bool Fits() const { return RamFits() && DeviceFits(); }
  // Why it does not fit, one line per budget exceeded (empty when it fits).
  std::vector<std::string> Problems() const;
  std::vector<std::string> advice;  // what to change, filled by PlanMemory when it does not fit
  std::vector<std::string> notes;   // how the inputs were read (e.g. a slot count capped at the expert count)
};

// Computes the plan. Errors only for inputs that make no sense (n_ctx < 1,
// more pinned than slots); a plan that does not fit is a plan, not an error.
Result<MemoryPlan> PlanMemory(const Pack& pack, const Model& model, const CpuBackend& backend,
                              const PlanInputs& in);

// The largest expert slot count in [0, limit] whose plan fits (-1: not even 0 fits).
int32_t LargestFittingExpertSlots(const Pack& pack, const Model& model, const CpuBackend& backend,
                                  const PlanInputs& in, int32_t limit);

// The table strata-run --plan prints.
std::string FormatPlan(const MemoryPlan& plan);
// "refusing to start: ..." with the numbers and the advice.
std::string FormatRefusal(const MemoryPlan& plan);
// One line for the start of a run: "memory: RAM 1.2 GiB of 20.0 GiB, device 0 0.8 GiB of 12 GiB".
std::string PlanSummary(const MemoryPlan& plan);

// Tokens per forward pass the plan assumes: min(batch, parallel * n_ctx).
int64_t PlanTokensPerPass(const PlanInputs& in);

}  // namespace strata
