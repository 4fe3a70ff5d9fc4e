#pragma once
// Scalar reference dot products: one weight row times one activation row in
// the weight's vec_dot format (activation.h: VecDotFormat).
//
// Each computes what ggml-cpu's ggml_vec_dot_<type>_generic computes: integer
// sums of quant products per block (or sub-block), multiplied by the block
// scales, accumulated in float (F32/F16/BF16: float products summed in
// double). The summation order may differ from ggml's in the last bits; the
// integer parts are exact. These are the functions every fast kernel is
// tested against, and the fallback for types without a fast kernel.
//
// Integer ranges: activation quants are in [-127, 127] (Q8_0/Q8_1/Q8_K
// quantizers never produce -128 from finite input), weight quants are at most
// 8 bits, so a block's integer sum fits easily in int32.

#include <cstdint>

#include "runtime/quant/ggml_type.h"

namespace strata {

// True for every weight type with a reference dequantizer (docs/quant-types.md:
// F32, F16, BF16, the legacy 32-element types, K-quants, i-quants, TQ, MXFP4,
// NVFP4, Q1_0, Q2_0). False for Q8_1/Q8_K (activations only), integers, F64.
bool HasVecDot(GgmlType weight);

// dot(weight row, activation row) over k elements.
// REQUIRES: HasVecDot(weight); k a multiple of the weight's block size; `w`
// holds RowBytes(weight, k) bytes and `act` ActRowBytes(VecDotFormat(weight), k)
// bytes (any alignment).
float VecDotReference(GgmlType weight, const void* w, const void* act, int64_t k);

}  // namespace strata
