// Compiles every weight decoder (runtime/gpu/kernels/quant_decode.h) as device
// code: a kernel that instantiates DecodeSub32, DecodeFloat32 and LoadFloat for
// every type of STRATA_GPU_QUANT_TYPES and STRATA_GPU_FLOAT_TYPES. Not part of
// the CMake build (values are checked on the host by
// tests/gpu_quant_decode_test.cc); run from the repository root:
//
//   nvcc -std=c++20 --expt-relaxed-constexpr -arch=sm_90 -I. -c -o /tmp/x.o tests/gpu/quant_decode_compile.cu
//   hipcc -std=c++20 --genco --offload-arch=gfx90a -I. -o /tmp/x.co tests/gpu/quant_decode_compile.cu
//
// (also sm_75 .. sm_120, and gfx1030).

#include "runtime/gpu/kernels/quant_decode.h"

STRATA_GPU_BEGIN

struct DecodeCompileArgs {
  const uint8_t* row;
  float* out;
  int32_t* q;
};

STRATA_KERNEL(strata_decode_compile_check, DecodeCompileArgs) {
  const int64_t j = threadIdx.x;
  int o = 0;
#define STRATA_QUANT(id, NAME, elems, bytes)                                    \
  {                                                                             \
    Sub32 s;                                                                    \
    DecodeSub32<id>(a.row, j, s);                                               \
    for (int k = 0; k < 8; ++k) a.q[64 * o + 8 * j + k] = s.q[k];               \
    a.out[o] = s.scale[0] + s.scale[1] + s.offset[0] + s.offset[1];             \
    DecodeFloat32<id>(a.row, j, a.out + 32 * (o + 64));                         \
    ++o;                                                                        \
  }
#define STRATA_FLOAT(id, NAME, elems, bytes)                                    \
  {                                                                             \
    a.out[o] = LoadFloat<id>(a.row, j);                                         \
    DecodeFloat32<id>(a.row, j, a.out + 32 * (o + 64));                         \
    ++o;                                                                        \
  }
  STRATA_GPU_QUANT_TYPES(STRATA_QUANT)
  STRATA_GPU_FLOAT_TYPES(STRATA_FLOAT)
#undef STRATA_QUANT
#undef STRATA_FLOAT
}

STRATA_GPU_END
