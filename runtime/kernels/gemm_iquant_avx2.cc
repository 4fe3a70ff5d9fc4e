// i-quant kernels (IQ4_XS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ1_S, IQ1_M), AVX2 build: 256-bit vectors, pmaddubsw/pmaddwd products. The
// kernels themselves are in x86_iquant_kernels.h.
#define STRATA_KERNEL_NS avx2
#include "runtime/kernels/x86_iq_grid_kernels.h"
#include "runtime/kernels/x86_iquant_kernels.h"

namespace strata::kernels {
namespace {
constexpr GemmKernel kEntries[] = {
    {GgmlType::kIQ4_XS, ActFormat::kQ8_K, IsaLevel::kAvx2, &avx2::Gemm<avx2::Iq4XsKernel>, "avx2"},
    {GgmlType::kIQ3_S, ActFormat::kQ8_K, IsaLevel::kAvx2, &avx2::Gemm<avx2::Iq3SKernel>, "avx2"},
    {GgmlType::kIQ2_XXS, ActFormat::kQ8_K, IsaLevel::kAvx2, &avx2::Gemm<avx2::GridKernel<avx2::Iq2XxsFormat>>, "avx2"},
    {GgmlType::kIQ2_XS, ActFormat::kQ8_K, IsaLevel::kAvx2, &avx2::Gemm<avx2::GridKernel<avx2::Iq2XsFormat>>, "avx2"},
    {GgmlType::kIQ2_S, ActFormat::kQ8_K, IsaLevel::kAvx2, &avx2::Gemm<avx2::GridKernel<avx2::Iq2SFormat>>, "avx2"},
    {GgmlType::kIQ3_XXS, ActFormat::kQ8_K, IsaLevel::kAvx2, &avx2::Gemm<avx2::GridKernel<avx2::Iq3XxsFormat>>, "avx2"},
    {GgmlType::kIQ1_S, ActFormat::kQ8_K, IsaLevel::kAvx2, &avx2::Gemm<avx2::Iq1Kernel<avx2::Iq1SFormat>>, "avx2"},
    {GgmlType::kIQ1_M, ActFormat::kQ8_K, IsaLevel::kAvx2, &avx2::Gemm<avx2::Iq1Kernel<avx2::Iq1MFormat>>, "avx2"},
};
}  // namespace
constinit const GemmKernelTable kIQuantGemmAvx2 = {kEntries, static_cast<int>(sizeof(kEntries) / sizeof(kEntries[0]))};
}  // namespace strata::kernels
