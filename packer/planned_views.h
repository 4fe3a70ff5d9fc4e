#pragma once
// The planned tensors of a GGUF as runtime TensorViews, so the packer can run
// the runtime's forward pass (probe, expert profile) on exactly the bytes the
// pack will hold, before the pack exists.

#include <memory>
#include <vector>

#include "packer/gguf/gguf_file.h"
#include "packer/tensor_plan.h"
#include "runtime/pack/pack_reader.h"

namespace strata {

struct PlannedViews {
  std::vector<TensorView> views;              // one per planned tensor, in plan order
  std::vector<std::vector<float>> widened;    // storage of tensors widened to F32
  std::vector<std::vector<uint8_t>> gathered; // storage of tensors gathered from fused ones
};

// REQUIRES: `plan` came from PlanTensors on `model` without refusals. The
// views point into `model`'s mapping (and the result's own storage), which
// must outlive them.
std::unique_ptr<PlannedViews> ViewPlannedTensors(const gguf::GgufModel& model, const std::vector<PlannedTensor>& plan);

}  // namespace strata
