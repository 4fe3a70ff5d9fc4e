#pragma once
// Small value tables for the SIMD kernels, as plain constant data.
//
// The ISA files (*_avx2.cc, *_avx512.cc) must not call inline functions from
// shared headers: such a function can be emitted there with AVX code and the
// linker may keep that copy for baseline callers too. So the scale
// conversions they need come from these tables, which are filled at compile
// time by the exact converters in fp_convert.h.

#include <cstdint>

namespace strata::kernels {

struct FloatTable256 {
  float v[256];
};
extern const FloatTable256 kE8M0HalfToFloat;  // E8M0ToFp32Half(e) (MXFP4 block scales)
extern const FloatTable256 kUe4m3ToFloat;     // Ue4m3ToFp32(x) (NVFP4 sub-block scales)

// The i-quant grids and sign patterns (iq_grids.h), as plain pointers.
extern const uint32_t* const kIq3SGridData;
extern const uint32_t* const kIq3XxsGridData;
extern const uint64_t* const kIq2XxsGridData;
extern const uint64_t* const kIq2XsGridData;
extern const uint64_t* const kIq2SGridData;
extern const uint64_t* const kIq1SGridData;  // bytes are int8 -1, 0, +1
extern const uint8_t* const kKsignsIq2xsData;

}  // namespace strata::kernels
