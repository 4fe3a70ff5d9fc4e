#pragma once
// Weight blocks as the GPU kernels read them: every quantized type GGUF files
// carry, decoded 32 elements at a time into int8 values with an affine map
// per 16, so one int8 product kernel (dp4a, tensor-core MMA) serves them all:
//
//   w[i] = scale[i / 16] * q[i] + offset[i / 16]      i < 32, q[i] in int8
//
// Offsets are nonzero for the types with a per-block minimum (Q4_1, Q5_1,
// Q2_K, Q4_K, Q5_K); the i-quants whose grid is offset by a delta (IQ1_S,
// IQ1_M) are scaled by 8 so the delta is an integer (8 * grid +- 1). The
// float types (F32, F16, BF16) are read as floats (LoadFloat).
//
// This is device code (kernels/portable.h): the same source runs on CUDA, HIP
// and the software GPU, and tests/gpu_quant_decode_test.cc checks every type
// against the reference dequantizers (runtime/quant/dequantize.h) on random
// blocks, compiled as host C++.

#include <cstdint>

#include "runtime/gpu/kernels/portable.h"
#include "runtime/gpu/kernels/weight_types.h"

STRATA_GPU_BEGIN

struct Sub32 {
  int32_t q[8];     // 32 int8 values: element i is byte i % 4 of word i / 4
  float scale[2];   // elements 0..15, 16..31
  float offset[2];
};

// True for the types whose offsets can be nonzero; for the others DecodeSub32
// sets them to 0, and a kernel can skip the activation sums they multiply.
constexpr bool HasOffset(int type) {
  return type == wt::kQ4_1 || type == wt::kQ5_1 || type == wt::kQ2_K || type == wt::kQ4_K || type == wt::kQ5_K;
}

// Sub-block j (elements 32j .. 32j + 31) of a row of type kType, which starts
// at `row` (a row is a whole number of blocks). REQUIRES: IsQuantized(kType).
template <int kType>
STRATA_DEV void DecodeSub32(const uint8_t* row, int64_t j, Sub32& out);

// Element i of a row of a float type (F32, F16, BF16).
template <int kType>
STRATA_DEV float LoadFloat(const uint8_t* row, int64_t i);

// Elements [32j, 32j + 32) of a row of any weight type, as floats
// (scale * q + offset for the quantized ones): the embedding gather and the
// float fallbacks use it.
template <int kType>
STRATA_DEV void DecodeFloat32(const uint8_t* row, int64_t j, float* out);

STRATA_GPU_END

#include "runtime/gpu/kernels/quant_decode_impl.h"
