#pragma once
// FastBackend: the CpuBackend strata-run uses on the CPU.
//
// For each MatMul it converts the activation rows once to the format the
// weight type's kernel reads (activation.h: Q8_0 / Q8_1 / Q8_K quantized as
// llama.cpp's CPU backend does, F16/BF16 rounding, or F32 as is), then runs
// the best kernel for the weight type at the backend's ISA level
// (kernels/gemm.h) on a thread pool: threads take chunks of output rows; each
// chunk walks all activation columns in blocks of 64, so a chunk's weights are
// read from memory once and reused from cache for every column block.
//
// Numerics: the integer block sums are exactly llama.cpp's; results equal the
// scalar reference vec_dot (kernels/vec_dot.h) up to float summation order
// (tests/fast_backend_test.cc states the bound). Types without a fast kernel
// at the chosen ISA level run the scalar reference vec_dot (correct, slow);
// SlowTypes() names them so a program can say so once at startup.
//
// Thread safety: MatMul and ParallelFor must not be called concurrently on one
// backend (they share the pool and the activation buffer). After the buffer
// has grown to the largest product, MatMul allocates nothing.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/kernels/activation.h"
#include "runtime/kernels/cpu_features.h"
#include "runtime/kernels/gemm.h"
#include "runtime/kernels/thread_pool.h"
#include "runtime/model/backend.h"

namespace strata {

class FastBackend : public CpuBackend {
 public:
  struct Options {
    int threads = 0;              // total threads including the caller; 0: every logical CPU
    std::optional<IsaLevel> isa;  // unset: SelectIsa() (ForceIsa, STRATA_ISA, else the best)
  };
  // Errors: the ISA level (from options or the environment) is invalid or the
  // CPU cannot run it.
  static Result<std::unique_ptr<FastBackend>> Create(const Options& options);

  void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) override;
  void MatMulBatch(std::span<const MatMulJob> jobs) override;
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn) override;
  int threads() const override { return pool_.threads(); }
  uint64_t SyncWaitNs() const override { return pool_.caller_wait_ns(); }
  std::string name() const override;  // "fast (avx512, 2 threads)"
  bool CanMultiply(GgmlType type) const override;  // Choice(type).supported
  uint64_t ScratchBytes(GgmlType type, int64_t cols, int64_t n) const override;
  uint64_t BatchScratchBytes(GgmlType type, int64_t cols, int64_t n) const override;
  Status ReserveScratch(uint64_t bytes) override;
  const kernels::AttnKernels& attention() const override { return kernels::AttnKernelsFor(isa_); }
  IsaLevel isa() const { return isa_; }

  // What runs for a weight type.
  struct KernelChoice {
    GgmlType type = GgmlType::kF32;
    bool supported = false;  // the type has a vec_dot at all
    bool fast = false;       // a SIMD kernel (else the scalar reference vec_dot)
    IsaLevel isa = IsaLevel::kScalar;
    ActFormat act = ActFormat::kF32;
    std::string kernel;  // "avx512-vnni", "avx2", "scalar reference vec_dot"
  };
  KernelChoice Choice(GgmlType type) const;
  // Choice() for every weight type, in id order.
  std::vector<KernelChoice> Report() const;
  // The types among `types` that have no fast kernel at this ISA level.
  std::vector<GgmlType> SlowTypes(std::span<const GgmlType> types) const;
  // One line per type: "Q4_K      avx512-vnni  (activations Q8_K)".
  std::string Describe(std::span<const GgmlType> types) const;

 private:
  FastBackend(IsaLevel isa, int threads);

  struct Plan {
    GemmFn fn = nullptr;
    ActFormat act = ActFormat::kF32;
    const GemmKernel* kernel = nullptr;  // nullptr: the scalar reference
  };

  // A job of a MatMulBatch: its plan, where its converted activations are,
  // and its row chunks' tasks.
  struct BatchItem {
    const Plan* plan = nullptr;
    uint64_t act_offset = 0;     // in act_buf_
    uint64_t act_row_bytes = 0;
    int64_t convert_begin = 0;   // its first row among the rows converted
    int64_t rows_per = 1;        // rows per task
    int64_t task_begin = 0;      // its tasks: [task_begin, task_end)
    int64_t task_end = 0;
    bool converts = false;       // converts its own rows (else shares the previous job's, or reads x)
    bool in_x = false;           // F32 activations read in place
  };
  // The plan for a weight type; a type without one stops the process (a caller's bug).
  const Plan& KernelPlan(GgmlType type, const char* op) const;
  // Rows per task for a product of n columns on `threads` threads.
  static int64_t RowsPerChunk(const WeightMatrix& w, int64_t n, int64_t threads);
  // MatMulBatch on at most kMaxBatchJobs jobs.
  void RunBatch(std::span<const MatMulJob> jobs);
  // Jobs per batch run (gate and up of 32 experts; a decode step's 8 experts
  // in one): longer batches run in slices, each with its own two meetings.
  static constexpr int64_t kMaxBatchJobs = 64;

  IsaLevel isa_;
  ThreadPool pool_;
  Plan plans_[kGgmlTypeIdLimit];
  std::vector<uint8_t> act_buf_;  // converted activations, reused across calls
  std::array<BatchItem, kMaxBatchJobs> batch_;  // a MatMulBatch slice's jobs
};

}  // namespace strata
