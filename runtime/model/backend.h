#pragma once
// MatMulBackend: how the forward pass multiplies activations by weights.
// The forward pass is written once; the reference backend (dequantized
// weights, float activations, no SIMD) and the fast backend (activations
// quantized the way llama.cpp does, SIMD kernels, threads) plug in here.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/kernels/attention.h"
#include "runtime/model/model.h"

namespace strata {

class MatMulBackend {
 public:
  virtual ~MatMulBackend() = default;
  // y[t * w.rows + r] = dot(row r of w, x[t * w.cols ...]) for t < n.
  virtual void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) = 0;
  // Runs fn(begin, end) over [0, n) split across the backend's threads.
  virtual void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn);
  virtual int threads() const { return 1; }
  virtual std::string name() const = 0;
  // Things a user should know once at start (e.g. types without a fast kernel).
  virtual std::vector<std::string> Notes() const { return {}; }
  // Bytes MatMul uses beyond x and y for a product of n activation rows with
  // a matrix of this type and width (FastBackend: its converted-activation
  // buffer, kept between calls). The memory plan counts the largest.
  virtual uint64_t ScratchBytes(GgmlType /*type*/, int64_t /*cols*/, int64_t /*n*/) const { return 0; }
  // Makes that scratch `bytes` large now, so MatMul does not allocate during
  // a run. Errors: kResourceExhausted with the size.
  virtual Status ReserveScratch(uint64_t /*bytes*/) { return Status::Ok(); }
  // The attention inner loops (kernels/attention.h): the scalar reference
  // here; FastBackend gives its ISA level's SIMD versions.
  virtual const kernels::AttnKernels& attention() const { return kernels::AttnKernelsFor(IsaLevel::kScalar); }
};

// Plain reference: each weight row dequantized to F32 (the reference
// dequantizers), dotted with F32 activations in order, one thread.
class ReferenceBackend : public MatMulBackend {
 public:
  void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) override;
  std::string name() const override { return "reference"; }
  // One dequantized row per call (allocated by the call: the reference path
  // is plain code, not the serving path).
  uint64_t ScratchBytes(GgmlType, int64_t cols, int64_t) const override {
    return static_cast<uint64_t>(cols) * sizeof(float);
  }
};

}  // namespace strata
