#pragma once
// ExpertProfile: how often each routed expert of each MoE layer was chosen
// on a calibration text, and how much router probability it received.
// strata-pack measures it (packer/expert_profiler.h) and stores it in the
// pack (docs/pack-format.md 4.7); the pack reader checks it; strata-validate
// summarizes and draws it; an expert cache fills its hot slots from
// `ranking` (docs/experts.md).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/arch/arch_spec.h"
#include "runtime/base/status.h"
#include "schema/strata_pack_generated.h"

namespace strata {

struct LayerExpertProfile {
  std::vector<uint32_t> counts;   // n_expert: times each expert was routed
  std::vector<float> mass;        // n_expert: sum of the router probabilities it was routed with
  std::vector<uint16_t> ranking;  // experts, most routed first (RankExperts)
};

struct ExpertProfile {
  std::string corpus_name;  // "default" or the calibration file's base name
  uint64_t corpus_xxh3 = 0;
  uint64_t n_tokens = 0;
  std::string isa;          // kernel level the routing was computed at
  std::vector<LayerExpertProfile> layers;  // n_layer entries
};

// Experts by descending count, ties by descending mass, then ascending id:
// the order the pack stores and the reader re-derives.
// REQUIRES: counts.size() == mass.size() <= 65536.
std::vector<uint16_t> RankExperts(std::span<const uint32_t> counts, std::span<const float> mass);

// Reads a manifest's profile and checks it against the hyperparameters:
// only for architectures with routed experts; one layer per n_layer; counts,
// mass and ranking of n_expert entries each; ranking is RankExperts' order
// (so a permutation); each layer's counts sum to n_tokens * n_expert_used;
// every mass is finite, >= 0 and at most its count (a probability is <= 1).
// Errors (kDataLoss) name the layer, the field and what was found.
Result<ExpertProfile> ExpertProfileFromManifest(const fb::ExpertProfile& f, Arch arch, const HParams& hp,
                                                const std::string& where);

// How many experts "the top `fraction`" of n_expert is: ceil(fraction *
// n_expert), at least 1, at most n_expert.
uint32_t TopExpertCount(uint32_t n_expert, double fraction);
// Share (0..1) of a layer's routed mass held by the first TopExpertCount
// experts of its ranking. 0 for a layer with no mass.
double TopMassShare(const LayerExpertProfile& layer, double fraction);
// The same over all layers together: sum of every layer's top mass over the
// sum of every layer's mass (each layer keeps its own top experts).
double OverallTopMassShare(const ExpertProfile& profile, double fraction);

}  // namespace strata
