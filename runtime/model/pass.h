#pragma once
// What a forward pass is asked to do, as the forward pass and a backend both
// see it: the sequences and their tokens, the options, and the observers and
// executors a pass may call. Host-side launch parameters only; the memory a
// pass works in belongs to the backend (backend.h).

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"

namespace strata {

class Backend;
class BackendBuffer;
class Model;
class Workspace;
struct TensorView;
struct SwiGluMatrices;
struct SequenceState;

// Routing observed during a forward pass (for expert profiles and traces).
class RoutingObserver {
 public:
  virtual ~RoutingObserver() = default;
  // One token at one layer chose `experts` with router probabilities `probs`
  // (softmax over all experts, before renormalization).
  virtual void OnRouted(int32_t layer, std::span<const int32_t> experts, std::span<const float> probs) = 0;
};

// Who computes a routed expert's SwiGLU. The default (no executor) runs it
// on the forward pass's backend, reading the expert's native weights. A
// tiered expert pool (runtime/experts/) plugs in here to run hot experts
// from a device tier and the rest on the host, from native blobs or Q8_0
// decode copies. x and y are host memory: the backend hands an expert's rows
// over and takes its output back (TransferCounts counts both).
class ExpertSplit;
class ExpertExecutor {
 public:
  virtual ~ExpertExecutor() = default;
  // y[m x n_embd] = down_e(silu(gate_e x) * up_e x) for the m rows of x.
  virtual Status RunExpert(int32_t layer, uint32_t expert, const float* x, int64_t m, float* y) = 0;
  // The split of experts between `backend` and the host, when the device
  // tier's slots are that backend's own memory (a GPU run whose experts do
  // not all fit its VRAM); null otherwise, and the backend calls RunExpert.
  virtual ExpertSplit* SplitOn(const Backend& /*backend*/) { return nullptr; }
};

// The VRAM/RAM split as the backend that runs the pass and holds the device
// tier sees it (docs/experts-split.md). For each MoE layer of a pass it
// downloads the routing, asks Assign which experts run from slots, runs
// those itself (one grouped launch over the slot buffer) while the host
// tier runs the others (RunOnHost), sums both, and calls EndLayer, which
// uploads the experts the cache admitted, ordered after the layer's
// products (so a slot evicted in this layer is not overwritten under them).
class ExpertSplit {
 public:
  // Where the split's MoE layers spent their time (seconds, summed over
  // layers): waiting for the routing to come down (the device's work before
  // it included), the host tier's experts, and, when the pass is timed
  // (ForwardOptions::op_times, --bench), the wait for the device's experts
  // after the host's were done.
  struct Times {
    uint64_t layers = 0, device_experts = 0, host_experts = 0;
    double route_wait = 0, host = 0, device_wait = 0;
    uint64_t down_bytes = 0, up_bytes = 0;  // rows and routing down, host results up (not slot uploads)
    // Misses moved to the device (uploaded into their slot before the layer
    // ran, because the upload cost less than the CPU's work on their rows).
    uint64_t offloaded = 0, offload_rows = 0, offload_bytes = 0;
    double link_bytes_per_s = 0;        // the rate the decisions used (measured at start)
    double host_seconds_per_row = 0;    // the CPU's measured time per expert row (0: not measured yet)
    double host_read_gbs = 0;           // host RAM's read rate the decisions assumed (the plan's)
  };
  virtual ~ExpertSplit() = default;
  Times& times() { return times_; }
  // For each of a layer's distinct experts, rows[i] tokens each: the slot
  // it runs from in this layer, or -1 (the host tier runs it).
  // link_bytes_per_s (0: unknown) is the backend's measured upload rate: a
  // miss the cache admits whose upload costs less than the CPU's work on
  // its rows is uploaded now and runs on the device (prefill).
  virtual Status Assign(int32_t layer, std::span<const uint32_t> experts, std::span<const int64_t> rows,
                        std::span<int32_t> slots, double link_bytes_per_s) = 0;
  // An expert Assign gave to the host: y[m x n_embd] for the m rows of x.
  virtual Status RunOnHost(int32_t layer, uint32_t expert, const float* x, int64_t m, float* y) = 0;
  virtual Status EndLayer() = 0;
  // The slots: one buffer of the backend, slot s at s * SlotBytes(); the
  // matrices slot s holds (offsets within the buffer).
  virtual const BackendBuffer& SlotBuffer() const = 0;
  virtual uint64_t SlotBytes() const = 0;
  virtual const SwiGluMatrices& SlotMatrices(int32_t slot) const = 0;

 private:
  Times times_;
};

// How gated delta-net layers run a prompt's recurrence (decode steps are
// always sequential). The default is the token-by-token form: measured side
// by side with the chunked form on 512-token prompts of the Qwen3.6-35B-A3B
// shape, it prefilled 18-19% faster on this project's machines
// (bench/results/cpu-runtime.md) and stays closer to llama.cpp (0.03 against
// 0.44, docs/conformance.md). The chunked form is kept, tested equal, and
// selectable per run: ForwardOptions::delta_net (strata-run --delta-net).
enum class DeltaNetMode { kSequential = 0, kChunked = 1 };
std::string_view DeltaNetModeName(DeltaNetMode m);  // "sequential", "chunked"
Result<DeltaNetMode> ParseDeltaNetMode(std::string_view name);

// Where a forward pass's time goes, by the layer ops of forward.cc (each op's
// matrix products included), accumulated over passes when
// ForwardOptions::op_times is set (--bench).
struct OpTimes {
  enum Kind : int { kNormAdd, kAttention, kDeltaNet, kDenseFfn, kMoe, kSharedExpert, kOutput, kCount };
  static const char* Name(int kind);
  double seconds[kCount] = {};
  double Total() const {
    double t = 0;
    for (double s : seconds) t += s;
    return t;
  }
};

struct ForwardOptions {
  bool all_logits = false;               // logits for every token, not only the last
  RoutingObserver* observer = nullptr;
  ExpertExecutor* experts = nullptr;     // null: experts run on the backend
  // Scratch for the pass, made once for the run by the backend that runs it
  // (memory plan). Null: the pass has the backend make a workspace of
  // ForwardWorkspaceBytes for itself.
  Workspace* workspace = nullptr;
  DeltaNetMode delta_net = DeltaNetMode::kSequential;  // how gated delta-net layers run a prompt
  OpTimes* op_times = nullptr;  // set: each layer op is timed into it
  // Set (greedy sampling): each logits row's argmax is written here, one id
  // per row, computed where the logits are (a device backend downloads the
  // ids, not the rows); the logits rows themselves may then be left unwritten.
  std::vector<int32_t>* argmax = nullptr;
  // Set: the pass's hidden states, every token's (n x n_embd floats, token
  // order), after the output norm: what an MTP block reads as h_prev
  // (ForwardMtp; of an MTP pass, its own after its head norm).
  std::vector<float>* hidden = nullptr;
  // False: no logits at all (ForwardMtp's passes that only fill the block's
  // cache: the prompt, tokens read between drafts), so the output head,
  // the largest matrix of a decode step, is not read. ForwardBatch ignores it.
  bool logits = true;
};

// One sequence's part of a batch.
struct SequenceBatch {
  SequenceState* state = nullptr;
  std::span<const int32_t> tokens;
  bool all_logits = false;  // logits for every token of this sequence, not only its last
};

// One forward pass as handed to a backend (Backend::BeginPass). Token t of
// the pass belongs to the sequence that holds it in `batch` (sequences in
// order, tokens contiguous) and sits at that sequence's n_past plus its index.
struct PassDesc {
  const Model* model = nullptr;
  std::span<const SequenceBatch> batch;
  const ForwardOptions* options = nullptr;
  Workspace* workspace = nullptr;  // the backend's, with room for ForwardWorkspaceBytes of this pass
  int64_t n = 0;                   // tokens, all sequences together
  int64_t max_keys = 1;            // largest position + 1
  int64_t n_rows = 0;              // logits rows asked for
  // The table BeginPass gathers the tokens' embeddings from (null: the
  // model's token_embd; an MTP pass: its block's, Model::MtpEmbedding).
  const TensorView* embedding = nullptr;
  // An MTP pass (ForwardMtp): the model's MTP layer on an MTP state, with
  // host rows written into it mid-pass (no recorded replay).
  bool mtp = false;
  // The whole forward pass runs, from BeginPass through every layer to
  // Logits, with no other host access between the ops (ForwardBatch): a
  // backend may record the pass once and replay it (the GPU backend's decode
  // graphs). False for passes that run single ops (the op tests).
  bool whole = false;
};

}  // namespace strata
