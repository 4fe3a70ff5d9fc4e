#pragma once
// Lookup tables of the ggml i-quants, MXFP4/NVFP4 and IQ4_NL/IQ4_XS
// (ggml-common.h, reference/formats.md section 2.3).
//
// The big grids are not typed out: ggml defines them by compact index tables
// (the "kgrid" arrays of its quantizer), where each uint16 packs the 8 (or 4)
// level indices of one grid point. Each grid byte is a fixed level value for
// its index:
//   iq2xxs/iq2xs/iq2s (8 x 2 bits): index 0,1,2 -> bytes 0x08, 0x19, 0x2b
//   iq1s               (8 x 2 bits): index 0,1,2 -> int8 -1, 0, +1
//   iq3xxs             (4 x 3 bits): index l -> 4 + 8l, except l = 7 -> 62
//   iq3s               (4 x 3 bits): index l -> 2l + 1
// Byte j of a grid entry (bits 8j..8j+7) is the value of element j of the
// group. The index tables and level values live in iq_grid_index.h, the one
// copy that the CPU and the GPU decoders (runtime/gpu/kernels/
// quant_decode_impl.h) both include; iq_grids.cc expands them at compile time
// into the grids below. The tests compare entries with ggml-common.h.

#include <array>
#include <cstdint>

namespace strata {

extern const std::array<uint64_t, 256> kIq2XxsGrid;
extern const std::array<uint64_t, 512> kIq2XsGrid;
extern const std::array<uint64_t, 1024> kIq2SGrid;
extern const std::array<uint32_t, 256> kIq3XxsGrid;
extern const std::array<uint32_t, 512> kIq3SGrid;
extern const std::array<uint64_t, 2048> kIq1SGrid;  // bytes are int8 -1, 0, +1

// Sign patterns of the 2- and 3-bit i-quants: entry i is the 7 bits of i plus
// an 8th bit that makes the number of set bits even (ksigns_iq2xs;
// iq_grid_index.h's KsignsIq2xs). Bit j set means element j of the group of 8
// is negated.
extern const std::array<uint8_t, 128> kKsignsIq2xs;
// kmask_iq2xs: 1 << j.
inline constexpr std::array<uint8_t, 8> kKmaskIq2xs = {1, 2, 4, 8, 16, 32, 64, 128};

// IQ4_NL / IQ4_XS non-linear 4-bit levels.
inline constexpr std::array<int8_t, 16> kValuesIq4nl = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                        1,    13,   25,  38,  53,  69,  89,  113};
// E2M1 (FP4) values doubled, shared by MXFP4 and NVFP4 (kvalues_fp4 / kvalues_mxfp4).
inline constexpr std::array<int8_t, 16> kValuesFp4 = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

inline constexpr float kIq1Delta = 0.125f;  // IQ1S_DELTA (IQ1_M uses the same value)

}  // namespace strata
