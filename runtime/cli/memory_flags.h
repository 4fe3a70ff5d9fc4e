#pragma once
// strata-run's memory-plan and expert-tier options (kept apart from
// run_options.h so the two grow independently).

#include <cstdint>
#include <limits>
#include <string>

#include <CLI/CLI.hpp>

#include "runtime/memory/run_memory.h"

namespace strata {

struct MemoryFlags {
  bool plan = false;
  std::string ram_budget, vram_budget, reserve;
  // Not a value anyone can type in range, so an explicit --parallel -1 is refused like 0.
  static constexpr int32_t kParallelUnset = std::numeric_limits<int32_t>::min();
  int32_t parallel = kParallelUnset;  // unset: 1 sequence, or 4 slots with --serve
  std::string kv_type = "f16";
  bool allow_paging = false;
  std::string large_pages = "auto";
  std::string expert_device = "none";
  std::string expert_slots = "auto";
  int32_t expert_pinned = -1;
  std::string expert_policy = "lfru";
  double expert_half_life = 0;
  std::string expert_profile;
  std::string split_rates;  // --split-rates DEVICE,HOST,LINK
  std::string routing_trace_out;
  bool expert_stats = false;

  // Errors: kInvalidArgument naming the option (a size that does not parse, ...).
  Result<RunMemoryOptions> Resolve() const;
};

void AddMemoryFlags(CLI::App& app, MemoryFlags& f);

}  // namespace strata
