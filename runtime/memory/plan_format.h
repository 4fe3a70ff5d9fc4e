#pragma once
// The memory plan (memory_plan.h) as users read it.

#include <string>

#include "runtime/memory/memory_plan.h"

namespace strata {

// The table strata-run --plan prints.
std::string FormatPlan(const MemoryPlan& plan);
// "refusing to start: ..." with the numbers and the advice.
std::string FormatRefusal(const MemoryPlan& plan);
// One line for the start of a run: "memory: RAM 1.2 GiB of 20.0 GiB, device 0 0.8 GiB of 12 GiB".
std::string PlanSummary(const MemoryPlan& plan);

}  // namespace strata
