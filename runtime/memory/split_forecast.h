#pragma once
// The forecast of a VRAM/RAM split of the routed experts (docs/experts-split.md):
// which experts the device tier starts with, per layer; the share of routed
// uses the expert profile says they take (the expected hit rate); the bytes a
// decoded token moves over the link; and a decode rate predicted by a
// bandwidth model whose inputs it names. strata-run --plan prints it, on a
// machine with or without the GPU.
//
// The model, per decoded token and MoE layer: the device reads the layer's
// dense weights; the routing and the token's row come down; the device runs
// the experts in its slots while the host runs the others; the host's results
// go up. So a token takes
//   sum over layers of  dense_l / device + down_l / link + max(hits_l / device, misses_l / host) + up_l / link
// plus the output head on the device, where hits_l and misses_l are the
// expected expert bytes read from the slots and from host RAM. KV-cache
// reads, kernel launch gaps and the cost of slot uploads (admissions) are
// left out: the prediction is an upper bound on the rate.

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/memory/memory_plan.h"

namespace strata {

// Read rates, GB/s, and where each came from.
struct SplitRates {
  double device_gbs = 500;  // VRAM read rate: an 8-16 GB card (RTX 4060 Ti 288, 4070 504, 4080 717 GB/s)
  double host_gbs = 60;     // host RAM read rate: dual-channel DDR5 sustained
  double link_gbs = 25;     // PCIe 4.0 x16, sustained
  double link_latency_us = 10;  // one synchronised transfer
  std::string source = "assumed (--split-rates DEVICE,HOST,LINK in GB/s gives your machine's)";
};
// "500,60,25" -> rates. Errors: not three positive numbers.
Result<SplitRates> ParseSplitRates(std::string_view s);

struct SplitForecast {
  int32_t slots = 0;
  int32_t experts = 0;                  // n_layer x n_expert
  std::vector<int32_t> per_layer;       // device experts of each layer at start (the profile's hottest)
  double hit_rate = 0;                  // expected share of routed uses served from the slots
  std::string hit_source;               // the profile, or "no profile: slots / experts"
  uint64_t device_bytes = 0, host_bytes = 0;  // expected weight bytes per decoded token on each side
  uint64_t link_down = 0, link_up = 0;        // bytes per decoded token over the link
  uint32_t link_transfers = 0;                // synchronised transfers per token
  double device_s = 0, host_s = 0, link_s = 0, token_s = 0;  // the model's terms, seconds per token
  SplitRates rates;

  double TokensPerSecond() const { return token_s > 0 ? 1.0 / token_s : 0; }
  // The lines strata-run --plan prints.
  std::vector<std::string> Lines() const;
};

// REQUIRES: in.tier.backend is in.backend (the split), in.expert_slots set.
Result<SplitForecast> ForecastSplit(const PlanInputs& in, const SplitRates& rates);

}  // namespace strata
