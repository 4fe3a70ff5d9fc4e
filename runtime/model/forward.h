#pragma once
// The forward pass: written once, against the architecture's layer plan
// (ArchSpec::Layer) and the ops of the execution seam (backend.h). It holds
// no pointer into backend memory: it checks the request, sizes the logits,
// and calls the backend's ops layer by layer.

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/model/backend.h"
#include "runtime/model/model.h"
#include "runtime/model/pass.h"
#include "runtime/model/sequence_state.h"
#include "runtime/model/workspace.h"

namespace strata {

// The most workspace a pass of this shape takes on the CPU backends (exact
// for the largest pass: the sum of its Takes, stage by stage, as the CPU
// backend's ops take them: cpu_backend.cc and delta_net.cc). Other backends
// state their own: Backend::WorkspaceBytes.
uint64_t ForwardWorkspaceBytes(const Model& model, const PassShape& shape);

// Runs `tokens` at positions state.n_past .. state.n_past + n - 1, appends
// them to the state and writes logits: n rows (all_logits) or 1 row (the last
// token) of n_vocab floats. Errors: a token id out of range, or more tokens
// than the context holds, a state made by another backend (the state is
// left unchanged).
Status Forward(const Model& model, Backend& backend, SequenceState& state, std::span<const int32_t> tokens,
               const ForwardOptions& options, std::vector<float>* logits);

// Several sequences in one pass (continuous batching): every matrix product
// runs once over the tokens of all sequences, attention and recurrent state
// stay per sequence. Logits rows are written sequence by sequence, in order.
// Each sequence's state must be distinct. On error no state changes.
Status ForwardBatch(const Model& model, Backend& backend, std::span<const SequenceBatch> batch,
                    const ForwardOptions& options, std::vector<float>* logits);

// One pass of the model's MTP block (arch_spec.h, MtpBlock; the model's
// EnableMtp) on `state`, an MTP state (StateLayers::kMtp) of one sequence:
// token i at position state.n_past + i, read with h_prev row i (n_embd
// floats: the hidden state, ForwardOptions::hidden, of the position before
// it, zeros before the first). Logits as Forward's (none with
// options.logits false); options.hidden gets the block's own hidden states,
// what it reads after a token it drafted.
Status ForwardMtp(const Model& model, Backend& backend, SequenceState& state, std::span<const int32_t> tokens,
                  std::span<const float> h_prev, const ForwardOptions& options, std::vector<float>* logits);

}  // namespace strata
