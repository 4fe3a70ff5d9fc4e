#pragma once
// Per-type reference dot products behind VecDotReference (vec_dot.cc
// dispatches). Each takes `nb` consecutive weight blocks at `w` and the
// matching activation blocks at `a` (any alignment) and returns the dot
// product. Products and sums round separately (no contraction), as ggml's C.

#include <cstdint>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace strata::vecdot {

// vec_dot_ref.cc: float types (nb = elements) and 32/64/128-element blocks.
float F32(const uint8_t* w, const uint8_t* a, int64_t nb);
float F16(const uint8_t* w, const uint8_t* a, int64_t nb);
float BF16(const uint8_t* w, const uint8_t* a, int64_t nb);
float Q4_0(const uint8_t* w, const uint8_t* a, int64_t nb);
float Q4_1(const uint8_t* w, const uint8_t* a, int64_t nb);
float Q5_0(const uint8_t* w, const uint8_t* a, int64_t nb);
float Q5_1(const uint8_t* w, const uint8_t* a, int64_t nb);
float Q8_0(const uint8_t* w, const uint8_t* a, int64_t nb);
float Iq4_nl(const uint8_t* w, const uint8_t* a, int64_t nb);
float Mxfp4(const uint8_t* w, const uint8_t* a, int64_t nb);
float Nvfp4(const uint8_t* w, const uint8_t* a, int64_t nb);
float Q1_0(const uint8_t* w, const uint8_t* a, int64_t nb);
float Q2_0(const uint8_t* w, const uint8_t* a, int64_t nb);

// vec_dot_ref_kquants.cc: K-quants and ternary types against Q8_K.
float Q2_K(const uint8_t* w, const uint8_t* a, int64_t nb);
float Q3_K(const uint8_t* w, const uint8_t* a, int64_t nb);
float Q4_K(const uint8_t* w, const uint8_t* a, int64_t nb);
float Q5_K(const uint8_t* w, const uint8_t* a, int64_t nb);
float Q6_K(const uint8_t* w, const uint8_t* a, int64_t nb);
float Tq1_0(const uint8_t* w, const uint8_t* a, int64_t nb);
float Tq2_0(const uint8_t* w, const uint8_t* a, int64_t nb);

// vec_dot_ref_iquants.cc: i-quants against Q8_K.
float Iq2_xxs(const uint8_t* w, const uint8_t* a, int64_t nb);
float Iq2_xs(const uint8_t* w, const uint8_t* a, int64_t nb);
float Iq2_s(const uint8_t* w, const uint8_t* a, int64_t nb);
float Iq3_xxs(const uint8_t* w, const uint8_t* a, int64_t nb);
float Iq3_s(const uint8_t* w, const uint8_t* a, int64_t nb);
float Iq1_s(const uint8_t* w, const uint8_t* a, int64_t nb);
float Iq1_m(const uint8_t* w, const uint8_t* a, int64_t nb);
float Iq4_xs(const uint8_t* w, const uint8_t* a, int64_t nb);

// Shared by the K-quant files: the 8 six-bit scales and 8 six-bit mins of a
// Q4_K/Q5_K block (12 packed bytes; get_scale_min_k4 in ggml), and the 16
// six-bit Q3_K scales with the bias of 32 removed.
void UnpackQ4KScales(const uint8_t packed[12], uint8_t scales[8], uint8_t mins[8]);
void UnpackQ3KScales(const uint8_t packed[12], int8_t scales[16]);

}  // namespace strata::vecdot
