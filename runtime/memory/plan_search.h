#pragma once
// Searches over the memory plan (memory_plan.h): each recomputes the plan
// (PlanMemory, pure and cheap) for changed inputs and bisects for the
// largest value that fits.
//
//   LargestFittingExpertSlots:  --expert-slots auto, and the slot advice.
//   PlanAdvice:                 what to change when a plan does not fit: each
//                               knob alone, at the largest value that fits.

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/memory/memory_plan.h"

namespace strata {

// The largest expert slot count in [0, limit] whose plan fits, with the
// pinned count of `in` (capped at the slots); -1: not even 0 fits.
int32_t LargestFittingExpertSlots(const PlanInputs& in, int32_t limit);

// For a plan of `in` that does not fit: the options that make it fit on
// their own ("-c 2048 (a smaller context)"), each at the largest value that
// fits; one line saying so when none does.
std::vector<std::string> PlanAdvice(const PlanInputs& in);

}  // namespace strata
