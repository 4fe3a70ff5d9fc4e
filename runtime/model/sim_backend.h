#pragma once
// SimBackend: the CPU backend's ops on memory the forward pass cannot touch.
//
// It exists to prove the execution seam (backend.h). Every buffer it makes
// (each sequence's KV cache and recurrent state, the pass workspace with its
// activations) and its copy of the weights (made at Bind, counted as
// weight_bytes) live in pages of their own that are inaccessible except while
// one of its ops or transfers runs (the weights are then read-only). A host
// access from outside an op faults: the forward pass, the scheduler or a
// test that kept a pointer into backend memory crashes at once instead of
// working by accident. Its ops are the CPU backend's, over a matrix engine
// it wraps (fast or reference), so its results are bit-identical to that
// engine's; its transfer counts say what a device backend would move.
//
// Cost: two mprotect calls per op over all of its memory; for checking, not
// for speed.

#include <memory>
#include <string>
#include <vector>

#include "runtime/base/platform.h"
#include "runtime/model/backend.h"

namespace strata {

class SimBackend : public CpuBackend {
 public:
  explicit SimBackend(std::unique_ptr<CpuBackend> engine) : engine_(std::move(engine)) {}
  ~SimBackend() override;

  void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) override { engine_->MatMul(w, x, n, y); }
  void MatMulBatch(std::span<const MatMulJob> jobs) override { engine_->MatMulBatch(jobs); }
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn) override { engine_->ParallelFor(n, fn); }
  int threads() const override { return engine_->threads(); }
  std::string name() const override { return "sim over " + engine_->name(); }
  std::vector<std::string> Notes() const override { return engine_->Notes(); }
  bool CanMultiply(GgmlType type) const override { return engine_->CanMultiply(type); }
  uint64_t ScratchBytes(GgmlType type, int64_t cols, int64_t n) const override {
    return engine_->ScratchBytes(type, cols, n);
  }
  uint64_t BatchScratchBytes(GgmlType type, int64_t cols, int64_t n) const override {
    return engine_->BatchScratchBytes(type, cols, n);
  }
  Status ReserveScratch(uint64_t bytes) override { return engine_->ReserveScratch(bytes); }
  const kernels::AttnKernels& attention() const override { return engine_->attention(); }

  // Copies every tensor of `model` into its own memory (read-only inside ops,
  // inaccessible outside), counted as TransferCounts::weight_bytes.
  Status Bind(const Model& model) override;
  // Its weights are its own copy (multiplied by the CPU's kernels: placement cpu).
  uint64_t ResidentWeightBytes(const Model& model) const override;
  // Refuses a pass of a model it does not hold (Bind first).
  Status BeginPass(const PassDesc& pass) override;

  // True while an op runs (its memory is open).
  bool open() const { return open_; }

 protected:
  Result<uint8_t*> AllocateHost(uint64_t bytes, std::string_view what) override;
  void FreeHost(uint8_t* p, uint64_t bytes) override;
  void EnterOp() override;
  void LeaveOp() override;

 private:
  void SetAll(bool open);

  std::unique_ptr<CpuBackend> engine_;
  std::vector<GuardedMemory> regions_;  // buffers
  GuardedMemory weights_;
  const TensorView* bound_ = nullptr;  // the bound model's tensors
  bool open_ = false;
};

}  // namespace strata
