#pragma once
// The forward pass. One function per architecture family, readable top to
// bottom; matrix products go through a MatMulBackend (reference or fast),
// everything else is the plain float code in ops.h.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "runtime/model/backend.h"
#include "runtime/model/model.h"
#include "runtime/model/sequence_state.h"
#include "runtime/model/workspace.h"

namespace strata {

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
// decode copies.
class ExpertExecutor {
 public:
  virtual ~ExpertExecutor() = default;
  // y[m x n_embd] = down_e(silu(gate_e x) * up_e x) for the m rows of x.
  virtual Status RunExpert(int32_t layer, uint32_t expert, const float* x, int64_t m, float* y) = 0;
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

struct ForwardOptions {
  bool all_logits = false;               // logits for every token, not only the last
  RoutingObserver* observer = nullptr;
  ExpertExecutor* experts = nullptr;     // null: experts run on the backend
  // Scratch for the pass, made once for the run (memory plan). Null: the pass
  // allocates a workspace of ForwardWorkspaceBytes for itself.
  Workspace* workspace = nullptr;
  DeltaNetMode delta_net = DeltaNetMode::kSequential;  // how gated delta-net layers run a prompt
};

// The most workspace a pass of this shape takes (exact for the largest pass:
// the sum of its Takes, stage by stage, as forward.cc and delta_net.cc take them).
uint64_t ForwardWorkspaceBytes(const Model& model, const PassShape& shape);

// The default expert computation: SwiGLU with the expert's slices of
// ffn_{gate,up,down}_exps on `backend` (or of their decode copies, when
// use_decode_copies and the pack has them). `scratch` holds 2 * m * n_ff_exp
// floats; null: allocated for the call.
Status RunExpertOnBackend(const Model& model, MatMulBackend& backend, int32_t layer, uint32_t expert, const float* x,
                          int64_t m, float* y, bool use_decode_copies = false, float* scratch = nullptr);
// y = down(silu(gate x) * up x) for m rows; scratch as above (2 * m * gate.rows floats, or null).
Status RunSwiGlu(MatMulBackend& backend, const WeightMatrix& gate, const WeightMatrix& up, const WeightMatrix& down,
                 const float* x, int64_t m, float* y, float* scratch = nullptr);

// Runs `tokens` at positions state.n_past .. state.n_past + n - 1, appends
// them to the state and writes logits: n rows (all_logits) or 1 row (the last
// token) of n_vocab floats. Errors: a token id out of range, or more tokens
// than the context holds (the state is left unchanged).
Status Forward(const Model& model, MatMulBackend& backend, SequenceState& state, std::span<const int32_t> tokens,
               const ForwardOptions& options, std::vector<float>* logits);

// One sequence's part of a batch.
struct SequenceBatch {
  SequenceState* state = nullptr;
  std::span<const int32_t> tokens;
  bool all_logits = false;  // logits for every token of this sequence, not only its last
};


// Several sequences in one pass (continuous batching): every matrix product
// runs once over the tokens of all sequences, attention and recurrent state
// stay per sequence. Logits rows are written sequence by sequence, in order.
// Each sequence's state must be distinct. On error no state changes.
Status ForwardBatch(const Model& model, MatMulBackend& backend, std::span<const SequenceBatch> batch,
                    const ForwardOptions& options, std::vector<float>* logits);

}  // namespace strata
