// 32/64/128-element block kernels (Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4, NVFP4, Q2_0, Q1_0; Q4_1, Q5_1),
// AVX-512 build: the same code with 32 registers and AVX-512 VNNI (vpdpbusd, vpdpwssd). The kernels
// themselves are in x86_legacy_kernels.h; Q8_0, and Q4_0, Q5_0, IQ4_NL and MXFP4 decoded to Q8_0's
// int8 blocks, use the 512-bit one of x86_zmm_kernels.h, and panels (x86_panel_kernels.h) from a
// few columns on.
#define STRATA_KERNEL_NS avx512
#include "runtime/kernels/x86_legacy_kernels.h"
#include "runtime/kernels/x86_zmm_kernels.h"
#include "runtime/kernels/x86_panel_kernels.h"

namespace strata::kernels {
namespace {
template <class F>
using Nibbles = avx512::NibbleValues<F>;
constexpr GemmKernel kEntries[] = {
    {GgmlType::kQ8_0, ActFormat::kQ8_0, IsaLevel::kAvx512, &avx512::PanelGemm<avx512::Q8_0Panel, avx512::Q8_0KernelZmm>, "avx512-zmm"},
    {GgmlType::kQ4_0, ActFormat::kQ8_0, IsaLevel::kAvx512, &avx512::PanelGemm<avx512::Int8BlockPanel<Nibbles<avx512::Q4_0Format>>, avx512::Int8BlockKernelZmm<Nibbles<avx512::Q4_0Format>>>, "avx512-zmm"},
    {GgmlType::kIQ4_NL, ActFormat::kQ8_0, IsaLevel::kAvx512, &avx512::PanelGemm<avx512::Int8BlockPanel<Nibbles<avx512::Iq4NlFormat>>, avx512::Int8BlockKernelZmm<Nibbles<avx512::Iq4NlFormat>>>, "avx512-zmm"},
    {GgmlType::kMXFP4, ActFormat::kQ8_0, IsaLevel::kAvx512, &avx512::PanelGemm<avx512::Int8BlockPanel<Nibbles<avx512::Mxfp4Format>>, avx512::Int8BlockKernelZmm<Nibbles<avx512::Mxfp4Format>>>, "avx512-zmm"},
    {GgmlType::kNVFP4, ActFormat::kQ8_0, IsaLevel::kAvx512, &avx512::Gemm<avx512::Nvfp4Kernel>, "avx512-vnni"},
    {GgmlType::kQ2_0, ActFormat::kQ8_0, IsaLevel::kAvx512, &avx512::Gemm<avx512::Q2_0Kernel>, "avx512-vnni"},
    {GgmlType::kQ5_0, ActFormat::kQ8_0, IsaLevel::kAvx512, &avx512::PanelGemm<avx512::Int8BlockPanel<Nibbles<avx512::Q5_0Format>>, avx512::Int8BlockKernelZmm<Nibbles<avx512::Q5_0Format>>>, "avx512-zmm"},
    {GgmlType::kQ1_0, ActFormat::kQ8_0, IsaLevel::kAvx512, &avx512::Gemm<avx512::Q1_0Kernel>, "avx512-vnni"},
    {GgmlType::kQ4_1, ActFormat::kQ8_1, IsaLevel::kAvx512, &avx512::Gemm<avx512::Q4_1Kernel<false>>, "avx512-vnni"},
    {GgmlType::kQ5_1, ActFormat::kQ8_1, IsaLevel::kAvx512, &avx512::Gemm<avx512::Q4_1Kernel<true>>, "avx512-vnni"},
};
}  // namespace
constinit const GemmKernelTable kLegacyGemmAvx512 = {kEntries, static_cast<int>(sizeof(kEntries) / sizeof(kEntries[0]))};
}  // namespace strata::kernels
