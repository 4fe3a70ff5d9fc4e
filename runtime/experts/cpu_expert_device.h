#pragma once
// CpuExpertDevice: an ExpertDevice whose slots are host buffers and whose
// kernels are a FastBackend of its own. It stands in for a GPU so the tiering
// (slot fill, uploads, runs from slots, the memory plan's device lines, fault
// handling) is exercised end to end without one; running an expert from a
// slot computes exactly what the host tier computes from the pack (same
// kernels, same ISA), which the tests check bit for bit.
//
// Its memory is host RAM (the plan counts it there); `capacity` simulates a
// card of that size (--vram-budget), 0 leaves it to the RAM budget.

#include <memory>
#include <vector>

#include "runtime/base/checked_alloc.h"
#include "runtime/experts/expert_device.h"
#include "runtime/model/backend.h"

namespace strata {

class CpuExpertDevice : public ExpertDevice {
 public:
  struct Options {
    int threads = 1;        // the device backend's threads (0: all cores)
    uint64_t capacity = 0;  // bytes; 0: unlimited (the RAM budget governs)
  };
  static Result<std::unique_ptr<CpuExpertDevice>> Create(const Options& options);

  std::string name() const override;
  DeviceMemory memory() const override { return DeviceMemory::kHostRam; }
  uint64_t capacity_bytes() const override { return capacity_; }
  bool CanRun(GgmlType type) const override;
  uint64_t SlotBytes(int32_t slots, const SlotLayout& layout) const override;
  uint64_t ScratchBytes(const Model& model, const SlotLayout& layout, int64_t max_rows) const override;
  uint64_t StagingBytes(const SlotLayout&) const override { return 0; }  // uploads copy straight from the mapping
  Status AllocateSlots(const Model& model, int32_t slots, const SlotLayout& layout, int64_t max_rows) override;
  Status Upload(int32_t slot, const ExpertWeights& w) override;
  Status Run(int32_t slot, const float* x, int64_t m, float* y) override;

 private:
  CpuExpertDevice(std::unique_ptr<CpuBackend> backend, uint64_t capacity)
      : backend_(std::move(backend)), capacity_(capacity) {}
  struct Held {
    WeightMatrix m[3];
    bool full = false;
  };
  std::unique_ptr<CpuBackend> backend_;
  uint64_t capacity_;
  SlotLayout layout_;
  int32_t n_slots_ = 0;
  int64_t max_rows_ = 0;
  AlignedBuffer slots_;
  AlignedBuffer scratch_;  // SwiGLU's gate and up outputs
  std::vector<Held> held_;
};

}  // namespace strata
