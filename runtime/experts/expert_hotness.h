#pragma once
// ExpertHotness: how often each (layer, expert) is routed, the input that
// decides which experts the device tier pins at start. It comes from the
// pack's expert profile (Manifest.expert_profile, written by strata-pack
// --calibration) when the pack has one, or is counted from a routing trace
// (routing_trace.h: `strata-run --routing-trace-out`, then
// `--expert-profile FILE`). Both give the same thing, so the tiering code
// does not care which.

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/arch/arch_spec.h"
#include "runtime/base/status.h"
#include "runtime/experts/routing_trace.h"

namespace strata {

class Pack;

struct ExpertKey {
  int32_t layer = 0;
  uint32_t expert = 0;
  bool operator==(const ExpertKey&) const = default;
};

struct ExpertHotness {
  uint32_t n_layer = 0;
  uint32_t n_expert = 0;
  std::vector<uint64_t> counts;  // [layer][expert]: times routed
  std::vector<double> mass;      // [layer][expert]: router probability received
  uint64_t tokens = 0;           // tokens counted
  uint32_t dense_lead = 0;       // leading layers without routed experts (HParams::n_layer_dense_lead)
  std::string source;            // for messages: "the pack's expert profile (corpus ..., N tokens)"

  uint64_t count(int32_t layer, uint32_t e) const { return counts[static_cast<size_t>(layer) * n_expert + e]; }
  // The n hottest (layer, expert) pairs over all layers, hottest first: by
  // count, then mass, then lower layer, then lower expert. Every layer sees
  // the same tokens, so counts compare across layers, and skewed layers get
  // more of the pinned slots than flat ones. Leading dense layers have none.
  std::vector<ExpertKey> Hottest(size_t n) const;
  // Share of all routed uses that the given experts received.
  double Share(const std::vector<ExpertKey>& keys) const;

  // From the pack's profile. Errors: kNotFound (the pack has none),
  // kDataLoss (its shape does not match the model: layers, experts, a
  // ranking that is not a permutation).
  static Result<ExpertHotness> FromPack(const Pack& pack, const HParams& hp);
  // Counted from tokens [begin, end) of a trace. Errors: the trace's shape
  // does not match hp (when hp is given).
  static Result<ExpertHotness> FromTrace(const RoutingTrace& trace, uint64_t begin = 0, uint64_t end = UINT64_MAX,
                                         const HParams* hp = nullptr);
};

}  // namespace strata
