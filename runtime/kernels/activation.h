#pragma once
// Activation formats: what an F32 activation row is converted to before it is
// multiplied with a weight row, and the converters.
//
// llama.cpp's CPU backend converts activations to the weight type's
// "vec_dot type" (docs/quant-types.md): F32 stays F32, F16 weights get F16
// activations, BF16 get BF16, Q8_0/Q4_0/Q5_0/IQ4_NL/MXFP4/NVFP4/Q1_0/Q2_0 get
// Q8_0, Q4_1/Q5_1 get Q8_1, K-quants, i-quants and TQ types get Q8_K. Strata
// uses the same formats with the same rounding, so its integer block sums are
// the ones llama.cpp computes. Two extra formats exist only for the fast float
// kernels: the F16 (BF16) rounding of the activations, kept as F32 so the
// kernel does not convert them back for every weight row. The values are the
// same; only the storage differs.
//
// Rounding rules (bit-identical to ggml on finite inputs):
//   kQ8_0  quantize.h Q8_0Rule::kGgmlX86Simd (ggml-cpu's x86 quantize_row_q8_0)
//   kQ8_1  the same d and q, plus s = F16(d * sum(q)) (ggml-cpu's x86 quantize_row_q8_1)
//   kQ8_K  quantize.h QuantizeRowQ8_KUnchecked (quantize_row_q8_K_ref)
//   kF16 / kBF16 and their AsF32 forms: round to nearest even (fp_convert.h)

#include <cstdint>
#include <string_view>

#include "runtime/kernels/cpu_features.h"
#include "runtime/quant/ggml_type.h"

namespace strata {

enum class ActFormat : uint8_t {
  kF32,        // floats as given
  kF16,        // IEEE binary16 (llama.cpp's vec_dot type for F16 weights)
  kBF16,       // bfloat16 (for BF16 weights)
  kF16AsF32,   // F32 holding F16-rounded values (fast F16 kernels)
  kBf16AsF32,  // F32 holding BF16-rounded values (fast BF16 kernels)
  kQ8_0,       // 32-element blocks: half d, int8 q[32]
  kQ8_1,       // 32-element blocks: half d, half s, int8 q[32]
  kQ8_K,       // 256-element blocks: float d, int8 q[256], int16 bsums[16]
};

std::string_view ActFormatName(ActFormat format);
// Elements per block (1 for the float formats).
int64_t ActBlockElems(ActFormat format);
// Bytes of a row of k elements. REQUIRES: k >= 0, a multiple of ActBlockElems.
uint64_t ActRowBytes(ActFormat format, int64_t k);

// The format llama.cpp quantizes activations to for `weight` (its vec_dot
// type, expressed as a format). REQUIRES: HasVecDot(weight) (vec_dot.h).
ActFormat VecDotFormat(GgmlType weight);

// Converts one row of k floats to `format` at `dst` (ActRowBytes(format, k)
// bytes, any alignment), with the scalar reference code.
// REQUIRES: k a multiple of ActBlockElems(format).
void QuantizeActivationRowReference(ActFormat format, const float* x, void* dst, int64_t k);

// The same conversion with SIMD code where `isa` has it (Q8_0, Q8_K and the
// AsF32 roundings on AVX2 and above); the output bytes are identical to the
// reference for finite inputs. REQUIRES: CpuSupports(isa).
void QuantizeActivationRow(ActFormat format, IsaLevel isa, const float* x, void* dst, int64_t k);

// ggml-cpu's x86 quantize_row_q8_1: Q8_0's d and q (kGgmlX86Simd), and
// s = F16(d * sum of q). REQUIRES: k a multiple of 32; dst holds k/32*36 bytes.
void QuantizeRowQ8_1X86(const float* x, void* dst, int64_t k);

}  // namespace strata
