#pragma once
// SIMD activation converters (activation_avx2.cc). Internal to
// runtime/kernels: call them only through QuantizeActivationRow, which checks
// the ISA level first. Each produces exactly the bytes of its scalar
// reference in activation.h / quantize.h for finite inputs.

#include <cstdint>

namespace strata::kernels {

// Q8_0 with Q8_0Rule::kGgmlX86Simd. REQUIRES: k % 32 == 0.
void QuantizeRowQ8_0Avx2(const float* x, void* dst, int64_t k);
// Q8_0 plus s = F16(d * sum q) (ggml's x86 Q8_1). REQUIRES: k % 32 == 0.
void QuantizeRowQ8_1Avx2(const float* x, void* dst, int64_t k);
// Q8_K as QuantizeRowQ8_KUnchecked. REQUIRES: k % 256 == 0.
void QuantizeRowQ8_KAvx2(const float* x, void* dst, int64_t k);
// y = F16 (BF16) rounding of x, kept as F32. Any k.
void RoundRowToF16Avx2(const float* x, void* y, int64_t k);
void RoundRowToBf16Avx2(const float* x, void* y, int64_t k);

}  // namespace strata::kernels
