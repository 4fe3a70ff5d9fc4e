#pragma once
// Reference quantizers for activations: F32 rows to the vec_dot types llama.cpp
// converts activations to before a quantized dot product (Q8_0, Q8_K, F16,
// BF16; docs/quant-types.md says which weight type uses which).
//
// Rounding, exactly as ggml:
//   Q8_0 (quantize_row_q8_0_ref): amax = max |x|; d = amax / 127 (float);
//     id = d != 0 ? 1/d : 0; q = roundf(x * id), i.e. halves away from zero;
//     d is stored as F16 (round-to-nearest-even).
//   Q8_0, x86 SIMD rule (quantize_row_q8_0 in ggml-cpu when built with AVX or
//     AVX2, which is what produced the conformance "native" references): d as
//     above, but id = amax != 0 ? 127 / amax : 0 and q = round-half-to-even
//     (x * id). Differs from the reference rule in the last bit of some q.
//   Q8_K (quantize_row_q8_K_ref; also ggml-cpu's quantize_row_q8_K on x86):
//     max = the element of largest |x| with its sign (first one on ties);
//     iscale = -127 / max; q = min(127, nearest_int(iscale * x)); d = 1 / iscale
//     stored as F32; bsums[k] = sum of q over elements 16k..16k+15. nearest_int
//     is ggml's float trick: add 1.5 * 2^23 and read the low mantissa bits, which
//     rounds halves to even (exact for |v| < 2^22). An all-zero block gives
//     d = 0, q = 0 and (unlike ggml, which leaves them unwritten) bsums = 0.
//
// Inputs are expected to be finite. Where ggml's C code has undefined behaviour
// (a non-finite x * id converted to int8, reachable with NaN/inf inputs or a
// block whose amax is below ~3.7e-37), these functions still produce defined
// bytes: q = 0 for the Q8_0 reference rule, saturation to [-128, 127] for the
// x86 rule, and ggml's own nearest_int arithmetic (wrapped to int8) for Q8_K.

#include <cstdint>
#include <span>

#include "runtime/base/status.h"
#include "runtime/quant/ggml_type.h"

namespace strata {

// How to quantize activations to Q8_0.
enum class Q8_0Rule {
  kGgmlReference,  // quantize_row_q8_0_ref (roundf; id = 1/d)
  kGgmlX86Simd,    // ggml-cpu quantize_row_q8_0 on x86 AVX/AVX2 (round-half-even; id = 127/amax)
};

// Quantizes one row of src.size() F32 values to `type`: Q8_0 (reference rule),
// Q8_K, F16, BF16 or F32 (a copy).
// Errors: kUnsupported for other types; kInvalidArgument when src.size() is not
// a whole number of blocks or dst.size() != RowBytes(type, src.size()).
Status QuantizeRow(GgmlType type, std::span<const float> src, std::span<uint8_t> dst);
// Q8_0 with an explicit rule; same checks as QuantizeRow.
Status QuantizeRowQ8_0(Q8_0Rule rule, std::span<const float> src, std::span<uint8_t> dst);

// Unchecked forms. REQUIRES: n >= 0 and a multiple of the block size (32 for
// Q8_0, 256 for Q8_K); dst holds RowBytes(type, n) bytes (any alignment).
void QuantizeRowQ8_0Unchecked(Q8_0Rule rule, const float* src, void* dst, int64_t n);
void QuantizeRowQ8_KUnchecked(const float* src, void* dst, int64_t n);
void Fp32RowToFp16Unchecked(const float* src, void* dst, int64_t n);
void Fp32RowToBf16Unchecked(const float* src, void* dst, int64_t n);

// ggml's nearest_int (see above). REQUIRES |v| < 2^22 for a meaningful result;
// other inputs give ggml's (defined) garbage.
int NearestInt(float v);

}  // namespace strata
