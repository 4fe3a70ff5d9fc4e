#pragma once
// SwiGLU's gate over the gate and up products of a feed-forward block, and
// SiLU alone (the gated delta-net's convolution):
//
//   g[i] = silu(g[i]) * u[i]   (SwiGlu),   x[i] = silu(x[i])   (Silu),
//   silu(x) = x / (1 + exp(-x)),   i < n
//
// SwiGluFor(level) gives the scalar reference (exp in double, rounded once:
// portable_math.h; what --reference runs, and the bits ops::SiluF gives) or
// the AVX2 / AVX-512 versions, which take exp from the attention kernels'
// vector polynomial (attention_block.h ExpV, ~1 ulp) and equal the reference
// within a few ulp (tests/activation_test.cc holds them to that on random
// inputs, extremes and tail sizes). A value's result does not depend on its
// index or on n: the last n % lanes values run through a padded vector with
// the same operations, so splitting the work over threads changes no bit.

#include <cstdint>

#include "runtime/kernels/cpu_features.h"

namespace strata::kernels {

using SwiGluFn = void (*)(float* g, const float* u, int64_t n);
using SiluFn = void (*)(float* x, int64_t n);

void SwiGluRef(float* g, const float* u, int64_t n);
void SiluRef(float* x, int64_t n);
// The versions for `level` (the references for kScalar). The caller has
// checked that the CPU runs `level`.
SwiGluFn SwiGluFor(IsaLevel level);
SiluFn SiluFor(IsaLevel level);

}  // namespace strata::kernels
