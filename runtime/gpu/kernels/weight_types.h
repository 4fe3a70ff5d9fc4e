#pragma once
// Weight type ids as the kernels see them: ggml's ids (runtime/quant/ggml_type.h,
// where the host code static_asserts that they match), with the block
// geometry the kernels need. Plain C++, shared by the kernels and the host.

#include <cstdint>

namespace strata::gpu {

namespace wt {
inline constexpr int kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ2_K = 10,
                     kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kIQ2_XXS = 16, kIQ2_XS = 17, kIQ3_XXS = 18,
                     kIQ1_S = 19, kIQ4_NL = 20, kIQ3_S = 21, kIQ2_S = 22, kIQ4_XS = 23, kIQ1_M = 29, kBF16 = 30,
                     kTQ1_0 = 34, kTQ2_0 = 35, kMXFP4 = 39, kNVFP4 = 40, kQ1_0 = 41, kQ2_0 = 42;
}  // namespace wt

// X(id, NAME, block elements, block bytes) for every weight type the GPU
// kernels read. The kernels are instantiated from this list.
#define STRATA_GPU_QUANT_TYPES(X)          \
  X(2, Q4_0, 32, 18)                       \
  X(3, Q4_1, 32, 20)                       \
  X(6, Q5_0, 32, 22)                       \
  X(7, Q5_1, 32, 24)                       \
  X(8, Q8_0, 32, 34)                       \
  X(10, Q2_K, 256, 84)                     \
  X(11, Q3_K, 256, 110)                    \
  X(12, Q4_K, 256, 144)                    \
  X(13, Q5_K, 256, 176)                    \
  X(14, Q6_K, 256, 210)                    \
  X(16, IQ2_XXS, 256, 66)                  \
  X(17, IQ2_XS, 256, 74)                   \
  X(18, IQ3_XXS, 256, 98)                  \
  X(19, IQ1_S, 256, 50)                    \
  X(20, IQ4_NL, 32, 18)                    \
  X(21, IQ3_S, 256, 110)                   \
  X(22, IQ2_S, 256, 82)                    \
  X(23, IQ4_XS, 256, 136)                  \
  X(29, IQ1_M, 256, 56)                    \
  X(34, TQ1_0, 256, 54)                    \
  X(35, TQ2_0, 256, 66)                    \
  X(39, MXFP4, 32, 17)                     \
  X(40, NVFP4, 64, 36)                     \
  X(41, Q1_0, 128, 18)                     \
  X(42, Q2_0, 64, 18)
#define STRATA_GPU_FLOAT_TYPES(X) \
  X(0, F32, 1, 4)                 \
  X(1, F16, 1, 2)                 \
  X(30, BF16, 1, 2)

constexpr bool IsQuantized(int type) { return type != wt::kF32 && type != wt::kF16 && type != wt::kBF16; }

}  // namespace strata::gpu
