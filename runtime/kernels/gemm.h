#pragma once
// Matrix kernels: a range of weight rows times a range of activation columns.
//
// A kernel computes y[c * ldy + r] = dot(weight row r, activation column c)
// for r < rows, c < cols, where the activation columns are already in the
// kernel's ActFormat (activation.h). It picks its own inner shape by `cols`:
// a matrix-vector loop for one column (decode), and tiles of a few rows times
// a few columns that reuse each unpacked weight block for all columns of the
// tile (prefill). Threads split rows and columns outside (FastBackend).
//
// Memory contract: a kernel reads only the rows and columns it is given and
// never more than 64 bytes past the end of a weight row (a pack puts 64 zero
// bytes after every tensor blob). The kernels here read nothing past a block.
//
// Fast kernels exist per (type, ISA level); gemm_*_avx2.cc / gemm_*_avx512.cc
// define them, the tables below list them. Types without one run
// GemmReference: the scalar vec_dot (vec_dot.h) per (row, column).

#include <cstdint>

#include "runtime/kernels/activation.h"
#include "runtime/kernels/cpu_features.h"
#include "runtime/quant/ggml_type.h"

namespace strata {

struct GemmArgs {
  GgmlType type = GgmlType::kF32;  // weight type (the reference kernel dispatches on it)
  const uint8_t* w = nullptr;      // first weight row
  uint64_t w_row_bytes = 0;        // weight row stride
  int64_t rows = 0;
  const uint8_t* act = nullptr;    // first activation column
  uint64_t act_row_bytes = 0;      // activation column stride
  int64_t cols = 0;
  int64_t k = 0;                   // elements per row; a multiple of the block size
  float* y = nullptr;              // y[c * ldy + r]
  int64_t ldy = 0;
};
using GemmFn = void (*)(const GemmArgs&);

struct GemmKernel {
  GgmlType type;
  ActFormat act;     // the activation format the kernel reads
  IsaLevel isa;      // the level the kernel needs
  GemmFn fn;
  const char* name;  // what runs, e.g. "avx512-vnni"
};
struct GemmKernelTable {
  const GemmKernel* entries;
  int count;
};

// The best fast kernel for `type` that a CPU at level `isa` can run (an
// AVX-512 machine also runs AVX2 kernels), or nullptr. Does not check the
// host CPU: callers pass a level that CpuSupports().
const GemmKernel* FindGemmKernel(GgmlType type, IsaLevel isa);
inline bool HasFastKernel(GgmlType type, IsaLevel isa) { return FindGemmKernel(type, isa) != nullptr; }

// The scalar fallback: VecDotReference for every (row, column), activations
// in VecDotFormat(args.type). REQUIRES: HasVecDot(args.type).
void GemmReference(const GemmArgs& args);

namespace kernels {
// Defined in the ISA files (constant data; reading them is safe on any CPU,
// calling an entry's fn only after the ISA check).
extern const GemmKernelTable kFloatGemmAvx2, kFloatGemmAvx512;
extern const GemmKernelTable kLegacyGemmAvx2, kLegacyGemmAvx512;
extern const GemmKernelTable kKQuantGemmAvx2, kKQuantGemmAvx512;
extern const GemmKernelTable kIQuantGemmAvx2, kIQuantGemmAvx512;
}  // namespace kernels

}  // namespace strata
