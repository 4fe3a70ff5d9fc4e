#pragma once
// PlanLine: one line of a run's memory plan (docs/memory-plan.md): what it
// is (PlanItem), where it lives (MemoryPlace) and how many bytes.
//
// The plan itself is runtime/memory's; the line is here, beside the
// backend, because a backend answers where its memory is
// (Backend::BufferPlace) and adds lines of its own (Backend::AddPlanLines: a
// device's module image, its driver context), and runtime/model does not
// depend on runtime/memory.

#include <cstdint>
#include <string>

namespace strata {

// What a line is. The allocator (AllocateRun) finds lines by it, never by
// their printed label.
enum class PlanItem : uint8_t {
  // --- the mapped pack
  kWeightsDense,       // non-expert tensors, read every token
  kExpertsHostTier,    // routed experts the host tier reads
  kExpertsPinned,      // routed experts pinned on a device (read once, to fill it)
  kWeightsNotRead,     // blobs nobody reads (native blobs a decode copy stands in for, or unused copies)
  kPackOverhead,       // header, manifest, padding
  // --- the backend's memory (where Backend::BufferPlace says)
  kBackendWeights,     // the backend's own copy of the weights (ResidentWeightBytes)
  kKvCache,
  kRecurrentState,
  kRecurrentSnapshots,  // the server's copy of each slot's recurrent state (prefix reuse)
  kMtpCache,           // the MTP block's own KV cache, one per sequence (--spec mtp)
  kForwardWorkspace,
  kLargePageRounding,  // the states and workspace rounded up to whole large pages
  kBackendScratch,     // the matrix engine's scratch (Backend::ScratchBytes)
  // --- the host
  kLogits,
  kSampler,            // the sampler's candidates and the generated tokens
  // --- the expert tiers (docs/experts-runtime.md)
  kHostTierScratch,
  kExpertSlots,        // on the device tier's device
  kDeviceTierScratch,  // on the device tier's device
  kStaging,            // host buffers uploads to the device pass through
  kRoutingTrace,
  kRuntimeMetadata,
  // --- a backend's own lines (Backend::AddPlanLines)
  kModuleImage,        // a device's kernels, loaded
  kDriverContext,      // what the driver takes for the context on the device
  kBackendOther,       // anything else a backend keeps
};

// Where a line's bytes live. kHeap: private host memory (counted against the
// RAM budget and, where the OS keeps one, the commit account). kMapped: the
// pack's file mapping (file-backed; resident or not as PlanLine::counts
// says). kDevice: memory of device `device` (counted against its budget;
// also against RAM where that device's memory is host RAM, as for the
// simulated expert device: MemoryPlan::devices says).
struct MemoryPlace {
  enum class Kind : uint8_t { kHeap, kMapped, kDevice };
  Kind kind = Kind::kHeap;
  int device = 0;  // kDevice only

  static constexpr MemoryPlace Heap() { return {Kind::kHeap, 0}; }
  static constexpr MemoryPlace Mapped() { return {Kind::kMapped, 0}; }
  static constexpr MemoryPlace Device(int d) { return {Kind::kDevice, d}; }
  bool operator==(const MemoryPlace&) const = default;
};

struct PlanLine {
  PlanItem id = PlanItem::kBackendOther;
  MemoryPlace place;
  std::string label;   // what --plan prints: "KV cache (F16)"
  uint64_t bytes = 0;
  bool counts = true;  // kMapped: expected resident (counts against the RAM budget)
  std::string how;     // how the number was computed
};

}  // namespace strata
