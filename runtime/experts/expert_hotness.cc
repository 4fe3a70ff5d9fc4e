#include "runtime/experts/expert_hotness.h"

#include <algorithm>
#include <numeric>

#include "runtime/base/strings.h"
#include "runtime/pack/pack_reader.h"

namespace strata {

std::vector<ExpertKey> ExpertHotness::Hottest(size_t n) const {
  const size_t skip = std::min<size_t>(static_cast<size_t>(dense_lead) * n_expert, counts.size());
  std::vector<uint32_t> order(counts.size() - skip);
  std::iota(order.begin(), order.end(), static_cast<uint32_t>(skip));
  n = std::min(n, order.size());
  auto hotter = [&](uint32_t a, uint32_t b) {
    if (counts[a] != counts[b]) return counts[a] > counts[b];
    if (mass[a] != mass[b]) return mass[a] > mass[b];
    return a < b;  // lower layer, then lower expert
  };
  std::partial_sort(order.begin(), order.begin() + static_cast<ptrdiff_t>(n), order.end(), hotter);
  std::vector<ExpertKey> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back({static_cast<int32_t>(order[i] / n_expert), order[i] % n_expert});
  return out;
}

double ExpertHotness::Share(const std::vector<ExpertKey>& keys) const {
  uint64_t all = 0, part = 0;
  for (uint64_t c : counts) all += c;
  for (const ExpertKey& k : keys) part += count(k.layer, k.expert);
  return all ? static_cast<double>(part) / static_cast<double>(all) : 0.0;
}

Result<ExpertHotness> ExpertHotness::FromPack(const Pack& pack, const HParams& hp) {
  const fb::ExpertProfile* prof = pack.manifest().expert_profile();
  if (!prof || !prof->layers() || prof->layers()->size() == 0)
    return NotFound(pack.path() + ": the pack has no expert profile");
  const std::string where = pack.path() + ": expert profile";
  if (prof->layers()->size() != hp.n_layer)
    return DataLoss(StrFormat("%s: expected %u layers (n_layer), found %u", where.c_str(), hp.n_layer,
                              prof->layers()->size()));
  ExpertHotness h;
  h.n_layer = hp.n_layer;
  h.n_expert = hp.n_expert;
  h.dense_lead = hp.n_layer_dense_lead;
  h.counts.assign(static_cast<size_t>(h.n_layer) * h.n_expert, 0);
  h.mass.assign(h.counts.size(), 0.0);
  h.tokens = prof->n_tokens();
  for (uint32_t l = 0; l < hp.n_layer; ++l) {
    const fb::LayerProfile* lp = prof->layers()->Get(l);
    const auto* counts = lp ? lp->counts() : nullptr;
    const auto* mass = lp ? lp->mass() : nullptr;
    const auto* ranking = lp ? lp->ranking() : nullptr;
    if (counts && counts->size() != hp.n_expert)
      return DataLoss(StrFormat("%s: layer %u: expected %u counts (n_expert), found %u", where.c_str(), l,
                                hp.n_expert, counts->size()));
    if (mass && mass->size() != hp.n_expert)
      return DataLoss(StrFormat("%s: layer %u: expected %u mass entries (n_expert), found %u", where.c_str(), l,
                                hp.n_expert, mass->size()));
    double* m = &h.mass[static_cast<size_t>(l) * h.n_expert];
    uint64_t* c = &h.counts[static_cast<size_t>(l) * h.n_expert];
    if (counts) {
      for (uint32_t e = 0; e < hp.n_expert; ++e) c[e] = counts->Get(e);
      if (mass)
        for (uint32_t e = 0; e < hp.n_expert; ++e) m[e] = static_cast<double>(mass->Get(e));
      continue;
    }
    // A ranking alone: rank r counts as n_expert - r (layers then compare by rank).
    if (!ranking || ranking->size() != hp.n_expert)
      return DataLoss(StrFormat("%s: layer %u: expected counts or a ranking of %u experts, found neither", where.c_str(),
                                l, hp.n_expert));
    std::vector<uint8_t> seen(hp.n_expert, 0);
    for (uint32_t r = 0; r < hp.n_expert; ++r) {
      const uint32_t e = ranking->Get(r);
      if (e >= hp.n_expert || seen[e]++)
        return DataLoss(StrFormat("%s: layer %u: the ranking is not a permutation of 0..%u (entry %u is %u)",
                                  where.c_str(), l, hp.n_expert - 1, r, e));
      c[e] = hp.n_expert - r;
    }
  }
  h.source = StrFormat("the pack's expert profile (%s, %llu tokens)",
                       prof->corpus_name() ? Printable(prof->corpus_name()->string_view()).c_str() : "unnamed corpus",
                       static_cast<unsigned long long>(h.tokens));
  return h;
}

Result<ExpertHotness> ExpertHotness::FromTrace(const RoutingTrace& t, uint64_t begin, uint64_t end, const HParams* hp) {
  if (hp && (t.n_layer != hp->n_layer || t.n_expert != hp->n_expert))
    return InvalidArgument(StrFormat("the routing trace has %u layers x %u experts; the model has %u x %u", t.n_layer,
                                     t.n_expert, hp->n_layer, hp->n_expert));
  ExpertHotness h;
  h.n_layer = t.n_layer;
  h.n_expert = t.n_expert;
  h.dense_lead = hp ? hp->n_layer_dense_lead : t.dense_lead;
  h.counts.assign(static_cast<size_t>(h.n_layer) * h.n_expert, 0);
  h.mass.assign(h.counts.size(), 0.0);
  end = std::min(end, t.tokens());
  for (uint64_t tok = begin; tok < end; ++tok)
    for (uint32_t l = 0; l < t.n_layer; ++l) {
      auto e = t.Experts(tok, l);
      auto p = t.Probs(tok, l);
      for (uint32_t j = 0; j < t.k; ++j) {
        if (e[j] < 0 || static_cast<uint32_t>(e[j]) >= t.n_expert) continue;
        const size_t i = static_cast<size_t>(l) * h.n_expert + static_cast<uint32_t>(e[j]);
        ++h.counts[i];
        h.mass[i] += static_cast<double>(p[j]);
      }
    }
  h.tokens = end > begin ? end - begin : 0;
  h.source = StrFormat("a routing trace (%llu tokens)", static_cast<unsigned long long>(h.tokens));
  return h;
}

}  // namespace strata
