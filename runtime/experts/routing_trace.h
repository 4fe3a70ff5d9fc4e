#pragma once
// RoutingTrace: which experts every token chose at every layer, recorded from
// real forward passes (RoutingTraceRecorder is a RoutingObserver) and stored
// as text. Traces are what expert-cache policies are measured on
// (bench/expert_cache_bench.cc) and one source of expert hotness
// (expert_hotness.h) until a pack carries its own profile.
//
// File format (text, one token per line after the header):
//   strata-routing-trace 1
//   layers L experts E k K
//   session                       <- a new prompt starts (optional lines)
//   e:p e:p ... | e:p e:p ... | ...  <- K "expert:probability" pairs per layer, L groups
// Probabilities are the router's softmax for the chosen expert, before
// renormalization, printed with 4 significant digits.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/model/forward.h"

namespace strata {

struct RoutingTrace {
  uint32_t n_layer = 0;
  uint32_t n_expert = 0;
  uint32_t k = 0;
  uint32_t dense_lead = 0;             // leading layers that route nothing: their entries are -1
  std::vector<int32_t> experts;        // [token][layer][k]
  std::vector<float> probs;            // [token][layer][k]
  std::vector<uint64_t> sessions;      // first token of each session, ascending

  uint64_t tokens() const { return n_layer && k ? experts.size() / (uint64_t{n_layer} * k) : 0; }
  std::span<const int32_t> Experts(uint64_t token, uint32_t layer) const {
    return {experts.data() + (token * n_layer + layer) * k, k};
  }
  std::span<const float> Probs(uint64_t token, uint32_t layer) const {
    return {probs.data() + (token * n_layer + layer) * k, k};
  }
  // Tokens [begin, end) as a trace of their own (sessions kept where they fall).
  RoutingTrace Slice(uint64_t begin, uint64_t end) const;
  // Appends another trace of the same shape as a new session.
  Status Append(const RoutingTrace& other);
};

// Records the routing of single-sequence runs. The forward pass reports a
// pass layer by layer (all tokens of layer 0, then layer 1, ...), so token
// indexes are counted per layer. Not for batches of several sequences.
class RoutingTraceRecorder : public RoutingObserver {
 public:
  // The first `dense_lead` layers route nothing (HParams::n_layer_dense_lead).
  RoutingTraceRecorder(uint32_t n_layer, uint32_t n_expert, uint32_t k, uint32_t dense_lead = 0);
  void OnRouted(int32_t layer, std::span<const int32_t> experts, std::span<const float> probs) override;
  // The tokens recorded from now on start a new session.
  void BeginSession();
  // The trace so far. Errors if the layers saw different numbers of tokens
  // (a pass that failed half way).
  Result<RoutingTrace> Finish() const;
  // Allocates room for `tokens` tokens now (the memory plan's line), so
  // recording them allocates nothing. Errors: kResourceExhausted with the size.
  Status Reserve(uint64_t tokens);
  // Bytes Reserve(tokens) takes.
  static uint64_t BytesFor(uint32_t n_layer, uint32_t k, uint64_t tokens);

 private:
  RoutingTrace trace_;
  uint64_t base_ = 0;               // tokens of earlier sessions
  std::vector<uint64_t> per_layer_; // tokens seen in this session, per layer
  Status error_;
};

Status WriteRoutingTrace(const RoutingTrace& trace, const std::string& path);
// Errors: kNotFound, kDataLoss with the line number and what was expected.
Result<RoutingTrace> ReadRoutingTrace(const std::string& path);

}  // namespace strata
