#include "runtime/pack/expert_profile.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <numeric>

#include "runtime/base/checked_math.h"
#include "runtime/base/strings.h"

namespace strata {

std::vector<uint16_t> RankExperts(std::span<const uint32_t> counts, std::span<const float> mass) {
  std::vector<uint16_t> order(counts.size());
  std::iota(order.begin(), order.end(), uint16_t{0});
  std::sort(order.begin(), order.end(), [&](uint16_t a, uint16_t b) {
    if (counts[a] != counts[b]) return counts[a] > counts[b];
    if (mass[a] != mass[b]) return mass[a] > mass[b];
    return a < b;
  });
  return order;
}

Result<ExpertProfile> ExpertProfileFromManifest(const fb::ExpertProfile& f, Arch arch, const HParams& hp,
                                                const std::string& where) {
  auto bad = [&](const std::string& what, const std::string& expected, const std::string& found) {
    return DataLoss(StrFormat("%s: manifest: expert_profile%s: expected %s, found %s", where.c_str(), what.c_str(),
                              expected.c_str(), found.c_str()));
  };
  if (!GetArchSpec(arch).has_experts() || hp.n_expert == 0)
    return bad("", "none (the " + std::string(ArchName(arch)) + " architecture has no routed experts)", "one");
  ExpertProfile p;
  if (!f.corpus_name() || f.corpus_name()->size() == 0) return bad(".corpus_name", "a name", "none");
  p.corpus_name = f.corpus_name()->str();
  p.corpus_xxh3 = f.corpus_xxh3();
  p.n_tokens = f.n_tokens();
  if (f.isa()) p.isa = f.isa()->str();
  if (p.n_tokens == 0) return bad(".n_tokens", "at least 1", "0");
  uint64_t routed_per_layer;
  if (!CheckedMul<uint64_t>(p.n_tokens, hp.n_expert_used, &routed_per_layer))
    return bad(".n_tokens", "a count whose routings fit in 64 bits", StrFormat("%" PRIu64, p.n_tokens));
  const uint32_t n_layers = f.layers() ? f.layers()->size() : 0;
  if (n_layers != hp.n_layer)
    return bad(".layers", StrFormat("%u entries (n_layer)", hp.n_layer), StrFormat("%u", n_layers));
  const uint32_t ne = hp.n_expert;
  p.layers.resize(n_layers);
  for (uint32_t il = 0; il < n_layers; ++il) {
    const fb::LayerProfile* l = f.layers()->Get(il);
    const std::string at = StrFormat(".layers[%u]", il);
    auto size_of = [](const auto* v) { return v ? v->size() : 0u; };
    if (size_of(l->counts()) != ne)
      return bad(at + ".counts", StrFormat("%u entries (n_expert)", ne), StrFormat("%u", size_of(l->counts())));
    if (size_of(l->mass()) != ne)
      return bad(at + ".mass", StrFormat("%u entries (n_expert)", ne), StrFormat("%u", size_of(l->mass())));
    if (size_of(l->ranking()) != ne)
      return bad(at + ".ranking", StrFormat("%u entries (n_expert)", ne), StrFormat("%u", size_of(l->ranking())));
    LayerExpertProfile& lp = p.layers[il];
    lp.counts.assign(l->counts()->begin(), l->counts()->end());
    lp.mass.assign(l->mass()->begin(), l->mass()->end());
    lp.ranking.assign(l->ranking()->begin(), l->ranking()->end());
    uint64_t sum = 0;
    for (uint32_t e = 0; e < ne; ++e) {
      sum += lp.counts[e];  // at most 512 uint32 values: no overflow
      const float m = lp.mass[e];
      if (!std::isfinite(m) || m < 0.0f || m > static_cast<float>(lp.counts[e]))
        return bad(at + StrFormat(".mass[%u]", e),
                   StrFormat("a finite value in [0, %u] (at most one unit of probability per routing)", lp.counts[e]),
                   StrFormat("%g", static_cast<double>(m)));
    }
    if (hp.IsDenseLeadLayer(il) && sum != 0)
      return bad(at + ".counts", "all 0 (a leading dense layer routes nothing)", StrFormat("%" PRIu64, sum));
    if (!hp.IsDenseLeadLayer(il) && sum != routed_per_layer)
      return bad(at + ".counts",
                 StrFormat("a sum of %" PRIu64 " (n_tokens %" PRIu64 " x n_expert_used %u)", routed_per_layer,
                           p.n_tokens, hp.n_expert_used),
                 StrFormat("%" PRIu64, sum));
    std::vector<uint8_t> seen(ne, 0);
    for (uint32_t r = 0; r < ne; ++r) {
      const uint16_t e = lp.ranking[r];
      if (e >= ne)
        return bad(at + StrFormat(".ranking[%u]", r), StrFormat("an expert id below %u", ne), StrFormat("%u", e));
      if (seen[e]++)
        return bad(at + ".ranking", StrFormat("a permutation of 0..%u", ne - 1),
                   StrFormat("expert %u twice (again at position %u)", e, r));
    }
    const std::vector<uint16_t> expected = RankExperts(lp.counts, lp.mass);
    for (uint32_t r = 0; r < ne; ++r)
      if (lp.ranking[r] != expected[r])
        return bad(at + ".ranking",
                   StrFormat("experts by descending count, then mass, then id: expert %u (count %u) at position %u",
                             expected[r], lp.counts[expected[r]], r),
                   StrFormat("expert %u (count %u)", lp.ranking[r], lp.counts[lp.ranking[r]]));
  }
  return p;
}

uint32_t TopExpertCount(uint32_t n_expert, double fraction) {
  if (n_expert == 0) return 0;
  const double k = std::ceil(fraction * static_cast<double>(n_expert) - 1e-9);
  return static_cast<uint32_t>(std::clamp(k, 1.0, static_cast<double>(n_expert)));
}

namespace {

// (mass of the top experts, mass of all experts) of one layer.
std::pair<double, double> TopAndTotal(const LayerExpertProfile& layer, double fraction) {
  const uint32_t k = TopExpertCount(static_cast<uint32_t>(layer.ranking.size()), fraction);
  double top = 0, total = 0;
  for (uint32_t r = 0; r < layer.ranking.size(); ++r) {
    const auto m = static_cast<double>(layer.mass[layer.ranking[r]]);
    total += m;
    if (r < k) top += m;
  }
  return {top, total};
}

}  // namespace

double TopMassShare(const LayerExpertProfile& layer, double fraction) {
  auto [top, total] = TopAndTotal(layer, fraction);
  return total > 0 ? top / total : 0.0;
}

double OverallTopMassShare(const ExpertProfile& profile, double fraction) {
  double top = 0, total = 0;
  for (const LayerExpertProfile& l : profile.layers) {
    auto [t, a] = TopAndTotal(l, fraction);
    top += t;
    total += a;
  }
  return total > 0 ? top / total : 0.0;
}

}  // namespace strata
