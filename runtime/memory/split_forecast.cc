#include "runtime/memory/split_forecast.h"

#include <algorithm>
#include <cstdlib>

#include "runtime/base/strings.h"
#include "runtime/experts/expert_slots.h"
#include "runtime/model/kernel_coverage.h"

namespace strata {

Result<SplitRates> ParseSplitRates(std::string_view s) {
  SplitRates r;
  double v[3];
  std::string text(s);
  const char* p = text.c_str();
  for (int i = 0; i < 3; ++i) {
    char* end = nullptr;
    v[i] = std::strtod(p, &end);
    if (end == p || !(v[i] > 0) || v[i] > 1e6 || (i < 2 ? *end != ',' : *end != '\0'))
      return InvalidArgument("--split-rates '" + Printable(s) +
                             "': expected three rates in GB/s, DEVICE,HOST,LINK (e.g. 504,60,25)");
    p = end + 1;
  }
  r.device_gbs = v[0], r.host_gbs = v[1], r.link_gbs = v[2];
  r.source = "--split-rates " + text;
  return r;
}

Result<SplitForecast> ForecastSplit(const PlanInputs& in, const SplitRates& rates) {
  if (!in.model || !in.backend || in.tier.backend != in.backend)
    return Internal("ForecastSplit without a split (the device tier on the run's own backend)");
  const Model& model = *in.model;
  const HParams& hp = model.hp();
  SplitForecast f;
  f.rates = rates;
  f.slots = in.expert_slots;
  f.experts = static_cast<int32_t>(std::min<uint64_t>(hp.RoutedExperts(), INT32_MAX));
  f.per_layer.assign(hp.n_layer, 0);
  const double K = hp.n_expert_used;
  // Which experts start in the slots, and the share of routed uses they
  // took in the profile; without one, each layer's share is its slots over
  // its experts, the slots spread evenly.
  std::vector<double> layer_hit(hp.n_layer, 0.0);
  if (in.hotness) {
    const std::vector<ExpertKey> hot = in.hotness->Hottest(static_cast<size_t>(f.slots));
    for (const ExpertKey& k : hot) ++f.per_layer[static_cast<size_t>(k.layer)];
    f.hit_rate = in.hotness->Share(hot);
    f.hit_source = in.hotness->source;
    std::vector<uint64_t> layer_total(hp.n_layer, 0), layer_in(hp.n_layer, 0);
    for (uint32_t l = 0; l < hp.n_layer; ++l)
      for (uint32_t e = 0; e < hp.n_expert; ++e) layer_total[l] += in.hotness->count(static_cast<int32_t>(l), e);
    for (const ExpertKey& k : hot) layer_in[static_cast<size_t>(k.layer)] += in.hotness->count(k.layer, k.expert);
    for (uint32_t l = 0; l < hp.n_layer; ++l)
      layer_hit[l] = layer_total[l] ? static_cast<double>(layer_in[l]) / static_cast<double>(layer_total[l]) : 0.0;
  } else {
    for (int32_t i = 0; i < f.slots; ++i) ++f.per_layer[static_cast<size_t>(i) % hp.n_layer];
    for (uint32_t l = 0; l < hp.n_layer; ++l) layer_hit[l] = static_cast<double>(f.per_layer[l]) / hp.n_expert;
    f.hit_rate = f.experts ? static_cast<double>(f.slots) / f.experts : 0.0;
    f.hit_source = "no expert profile: each layer's slots over its experts";
  }
  // Dense bytes a token reads (the device's), and the routed experts' part.
  uint64_t routed_native = 0;
  for (const TensorView& t : model.tensors())
    if (!t.is_decode_copy && IsRoutedExpert(t)) routed_native += t.data.size();
  const uint64_t per_token = model.DecodeBytesPerToken();
  const uint64_t routed_read = hp.n_expert ? static_cast<uint64_t>(static_cast<double>(routed_native) * K / hp.n_expert) : 0;
  const uint64_t dense = per_token > routed_read ? per_token - routed_read : 0;
  const double dev = rates.device_gbs * 1e9, host = rates.host_gbs * 1e9, link = rates.link_gbs * 1e9;
  const double lat = rates.link_latency_us * 1e-6;
  double t = static_cast<double>(dense) / dev;
  f.device_bytes = dense;
  uint32_t moe_layers = 0;
  for (uint32_t l = 0; l < hp.n_layer; ++l) {
    auto w = HostExpertWeights(model, static_cast<int32_t>(l), 0, in.decode_copies);
    if (!w.ok()) continue;  // a layer without routed experts
    ++moe_layers;
    const double expert = static_cast<double>(w->bytes());
    const double hits = K * layer_hit[l] * expert, misses = K * (1.0 - layer_hit[l]) * expert;
    f.device_bytes += static_cast<uint64_t>(hits);
    f.host_bytes += static_cast<uint64_t>(misses);
    const double down = 4.0 * K + 4.0 * hp.n_embd;                       // the routing and the token's row
    const double up = 4.0 * K * (1.0 - layer_hit[l]) * hp.n_embd + 4.0 * (3 * K + 1);  // host results, the place table
    f.link_down += static_cast<uint64_t>(down);
    f.link_up += static_cast<uint64_t>(up);
    const double step = std::max(hits / dev, misses / host);
    f.device_s += hits / dev;
    f.host_s += misses / host;
    f.link_s += (down + up) / link + 3 * lat;
    t += (down + up) / link + 3 * lat + step;
  }
  f.link_transfers = 3 * moe_layers;
  f.device_s += static_cast<double>(dense) / dev;
  f.token_s = t;
  return f;
}

std::vector<std::string> SplitForecast::Lines() const {
  std::vector<std::string> out;
  out.push_back(StrFormat("experts: %d of %d in VRAM (device tier slots), the other %d on the CPU; expected hit rate "
                          "%.1f%% (%s)",
                          slots, experts, experts - slots, 100.0 * hit_rate, hit_source.c_str()));
  std::string layers = "device experts per layer at start:";
  for (size_t l = 0; l < per_layer.size(); ++l) layers += StrFormat(" %d", per_layer[l]);
  out.push_back(layers);
  out.push_back(StrFormat("per decoded token: device reads %s, host RAM %s; link %s down + %s up in %u transfers",
                          HumanBytes(device_bytes).c_str(), HumanBytes(host_bytes).c_str(),
                          HumanBytes(link_down).c_str(), HumanBytes(link_up).c_str(), link_transfers));
  out.push_back(StrFormat("predicted decode: %.1f tok/s (PREDICTION, not measured: device %.0f GB/s, host RAM %.0f GB/s, "
                          "link %.0f GB/s + %.0f us per transfer, %s; device %.2f ms, host %.2f ms, link %.2f ms per "
                          "token; KV reads, launch gaps and slot uploads left out)",
                          TokensPerSecond(), rates.device_gbs, rates.host_gbs, rates.link_gbs, rates.link_latency_us,
                          rates.source.c_str(), device_s * 1e3, host_s * 1e3, link_s * 1e3));
  return out;
}

}  // namespace strata
