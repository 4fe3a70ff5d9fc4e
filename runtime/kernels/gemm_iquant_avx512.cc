// i-quant kernels (IQ4_XS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ1_S, IQ1_M), AVX-512 build: the same code with 32 registers and AVX-512 VNNI
// (vpdpbusd, vpdpwssd). The kernels themselves are in x86_iquant_kernels.h.
#define STRATA_KERNEL_NS avx512
#include "runtime/kernels/x86_iq_grid_kernels.h"
#include "runtime/kernels/x86_iquant_kernels.h"

namespace strata::kernels {
namespace {
constexpr GemmKernel kEntries[] = {
    {GgmlType::kIQ4_XS, ActFormat::kQ8_K, IsaLevel::kAvx512, &avx512::Gemm<avx512::Iq4XsKernel>, "avx512-vnni"},
    {GgmlType::kIQ3_S, ActFormat::kQ8_K, IsaLevel::kAvx512, &avx512::Gemm<avx512::Iq3SKernel>, "avx512-vnni"},
    {GgmlType::kIQ2_XXS, ActFormat::kQ8_K, IsaLevel::kAvx512, &avx512::Gemm<avx512::GridKernel<avx512::Iq2XxsFormat>>, "avx512-vnni"},
    {GgmlType::kIQ2_XS, ActFormat::kQ8_K, IsaLevel::kAvx512, &avx512::Gemm<avx512::GridKernel<avx512::Iq2XsFormat>>, "avx512-vnni"},
    {GgmlType::kIQ2_S, ActFormat::kQ8_K, IsaLevel::kAvx512, &avx512::Gemm<avx512::GridKernel<avx512::Iq2SFormat>>, "avx512-vnni"},
    {GgmlType::kIQ3_XXS, ActFormat::kQ8_K, IsaLevel::kAvx512, &avx512::Gemm<avx512::GridKernel<avx512::Iq3XxsFormat>>, "avx512-vnni"},
    {GgmlType::kIQ1_S, ActFormat::kQ8_K, IsaLevel::kAvx512, &avx512::Gemm<avx512::Iq1Kernel<avx512::Iq1SFormat>>, "avx512-vnni"},
    {GgmlType::kIQ1_M, ActFormat::kQ8_K, IsaLevel::kAvx512, &avx512::Gemm<avx512::Iq1Kernel<avx512::Iq1MFormat>>, "avx512-vnni"},
};
}  // namespace
constinit const GemmKernelTable kIQuantGemmAvx512 = {kEntries, static_cast<int>(sizeof(kEntries) / sizeof(kEntries[0]))};
}  // namespace strata::kernels
