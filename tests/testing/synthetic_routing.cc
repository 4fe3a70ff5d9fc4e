#include "tests/testing/synthetic_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

namespace strata::testing {

RoutingTrace MakeSyntheticRouting(const SyntheticRoutingSpec& s) {
  std::mt19937_64 rng(s.seed);
  RoutingTrace t;
  t.n_layer = s.n_layer;
  t.n_expert = s.n_expert;
  t.k = std::min(s.k, s.n_expert);
  const uint32_t L = s.n_layer, E = s.n_expert, K = t.k;
  // Static popularity: Zipf over a random permutation per layer.
  std::vector<double> base(static_cast<size_t>(L) * E);
  for (uint32_t l = 0; l < L; ++l) {
    std::vector<uint32_t> perm(E);
    std::iota(perm.begin(), perm.end(), 0u);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (uint32_t r = 0; r < E; ++r) base[static_cast<size_t>(l) * E + perm[r]] = std::pow(r + 1.0, -s.zipf_s);
  }
  std::vector<double> boost(base.size(), 1.0);
  std::geometric_distribution<uint64_t> seg_len(1.0 / std::max(1.0, s.segment_tokens));
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  uint64_t seg_left = 0;
  std::vector<double> w(E);
  std::vector<int32_t> chosen(K);
  std::vector<float> prob(K);
  t.experts.reserve(s.tokens * L * K);
  t.probs.reserve(s.tokens * L * K);
  t.sessions.push_back(0);
  for (uint64_t tok = 0; tok < s.tokens; ++tok) {
    if (seg_left == 0) {  // a new topic
      seg_left = 1 + seg_len(rng);
      std::fill(boost.begin(), boost.end(), 1.0);
      for (uint32_t l = 0; l < L; ++l)
        for (uint32_t j = 0; j < std::min(s.topic_experts, E); ++j)
          boost[static_cast<size_t>(l) * E + rng() % E] = s.topic_boost;
    }
    --seg_left;
    const bool repeat = tok > 0 && u01(rng) < s.repeat_p;
    const uint64_t src = repeat ? tok - 1 - rng() % std::min<uint64_t>(tok, s.repeat_window) : 0;
    for (uint32_t l = 0; l < L; ++l) {
      if (repeat) {
        auto e = t.Experts(src, l);
        auto p = t.Probs(src, l);
        std::vector<int32_t> ce(e.begin(), e.end());
        std::vector<float> cp(p.begin(), p.end());
        t.experts.insert(t.experts.end(), ce.begin(), ce.end());
        t.probs.insert(t.probs.end(), cp.begin(), cp.end());
        continue;
      }
      double total = 0;
      for (uint32_t e = 0; e < E; ++e) total += (w[e] = base[static_cast<size_t>(l) * E + e] * boost[static_cast<size_t>(l) * E + e]);
      const double all = total;
      for (uint32_t j = 0; j < K; ++j) {  // without replacement
        double x = u01(rng) * total;
        uint32_t e = 0;
        for (; e + 1 < E; ++e) {
          if (w[e] == 0) continue;
          if ((x -= w[e]) < 0) break;
        }
        while (w[e] == 0) e = (e + 1) % E;
        chosen[j] = static_cast<int32_t>(e);
        prob[j] = static_cast<float>(w[e] / all);
        total -= w[e];
        w[e] = 0;
      }
      t.experts.insert(t.experts.end(), chosen.begin(), chosen.end());
      t.probs.insert(t.probs.end(), prob.begin(), prob.end());
    }
  }
  return t;
}

}  // namespace strata::testing
