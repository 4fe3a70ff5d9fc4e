#pragma once
// Per-type reference dequantizers behind DequantizeRowUnchecked (dequantize.cc
// dispatches). Each reads `n_blocks` consecutive blocks from `src` (any
// alignment) and writes n_blocks * block_elems floats to `dst`.
//
// Float evaluation order follows ggml's dequantize_row_* exactly; the files
// are compiled without FP contraction (C++ ISO mode: GCC's default is
// -ffp-contract=off; clang gets the pragma below), so `a*b - c` is never
// fused into an fma and results stay bit-identical to ggml's.

#include <cstdint>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace strata::dequant {

// dequantize.cc: plain types and 32/64/128-element blocks.
void F32(const uint8_t* src, float* dst, int64_t n_blocks);
void F16(const uint8_t* src, float* dst, int64_t n_blocks);
void BF16(const uint8_t* src, float* dst, int64_t n_blocks);
void Q4_0(const uint8_t* src, float* dst, int64_t n_blocks);
void Q4_1(const uint8_t* src, float* dst, int64_t n_blocks);
void Q5_0(const uint8_t* src, float* dst, int64_t n_blocks);
void Q5_1(const uint8_t* src, float* dst, int64_t n_blocks);
void Q8_0(const uint8_t* src, float* dst, int64_t n_blocks);
void Q1_0(const uint8_t* src, float* dst, int64_t n_blocks);
void Q2_0(const uint8_t* src, float* dst, int64_t n_blocks);
void Mxfp4(const uint8_t* src, float* dst, int64_t n_blocks);
void Nvfp4(const uint8_t* src, float* dst, int64_t n_blocks);
void Iq4_nl(const uint8_t* src, float* dst, int64_t n_blocks);

// dequantize_kquants.cc: 256-element K-quant and ternary super-blocks.
void Q2_K(const uint8_t* src, float* dst, int64_t n_blocks);
void Q3_K(const uint8_t* src, float* dst, int64_t n_blocks);
void Q4_K(const uint8_t* src, float* dst, int64_t n_blocks);
void Q5_K(const uint8_t* src, float* dst, int64_t n_blocks);
void Q6_K(const uint8_t* src, float* dst, int64_t n_blocks);
void Q8_K(const uint8_t* src, float* dst, int64_t n_blocks);
void Tq1_0(const uint8_t* src, float* dst, int64_t n_blocks);
void Tq2_0(const uint8_t* src, float* dst, int64_t n_blocks);

// dequantize_iquants.cc: grid-based i-quants and IQ4_XS.
void Iq2_xxs(const uint8_t* src, float* dst, int64_t n_blocks);
void Iq2_xs(const uint8_t* src, float* dst, int64_t n_blocks);
void Iq2_s(const uint8_t* src, float* dst, int64_t n_blocks);
void Iq3_xxs(const uint8_t* src, float* dst, int64_t n_blocks);
void Iq3_s(const uint8_t* src, float* dst, int64_t n_blocks);
void Iq1_s(const uint8_t* src, float* dst, int64_t n_blocks);
void Iq1_m(const uint8_t* src, float* dst, int64_t n_blocks);
void Iq4_xs(const uint8_t* src, float* dst, int64_t n_blocks);

}  // namespace strata::dequant
