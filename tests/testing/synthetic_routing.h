#pragma once
// Synthetic routing traces with a controlled mix of the two properties expert
// caches exploit (bench/expert_cache_bench.cc, tests):
//  * static skew: each layer's experts have Zipf-like popularity
//    p(rank r) ~ (r + 1)^-zipf_s, over a random permutation per layer (so
//    layers disagree on which experts are hot);
//  * temporal locality: the stream is cut into segments (a topic: a
//    conversation, a document, a code file) of geometric length; each segment
//    boosts its own random `topic_experts` experts per layer by `topic_boost`,
//    and a token repeats the routing of one of the last `repeat_window` tokens
//    with probability `repeat_p` (repeated words and phrases).
// A token chooses k distinct experts per layer, drawn without replacement
// with these weights; the recorded probability is the normalized weight.

#include <cstdint>

#include "runtime/experts/routing_trace.h"

namespace strata::testing {

struct SyntheticRoutingSpec {
  uint32_t n_layer = 48;
  uint32_t n_expert = 128;
  uint32_t k = 8;
  uint64_t tokens = 20000;
  double zipf_s = 0.8;           // 0: no static skew
  double segment_tokens = 400;   // mean segment (topic) length
  uint32_t topic_experts = 16;   // experts a topic boosts, per layer
  double topic_boost = 8.0;      // 1: no topic effect
  double repeat_p = 0.2;         // chance a token repeats a recent token's routing
  uint32_t repeat_window = 64;
  uint64_t seed = 1;
};

RoutingTrace MakeSyntheticRouting(const SyntheticRoutingSpec& spec);

}  // namespace strata::testing
