// 32/64/128-element block kernels (Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4, NVFP4, Q2_0, Q1_0; Q4_1, Q5_1),
// AVX2 build: 256-bit vectors, pmaddubsw/pmaddwd products. The kernels themselves are in
// x86_legacy_kernels.h.
#define STRATA_KERNEL_NS avx2
#include "runtime/kernels/x86_legacy_kernels.h"

namespace strata::kernels {
namespace {
constexpr GemmKernel kEntries[] = {
    {GgmlType::kQ8_0, ActFormat::kQ8_0, IsaLevel::kAvx2, &avx2::Gemm<avx2::Q8_0Kernel>, "avx2"},
    {GgmlType::kQ4_0, ActFormat::kQ8_0, IsaLevel::kAvx2, &avx2::Gemm<avx2::NibbleKernel<avx2::Q4_0Format>>, "avx2"},
    {GgmlType::kIQ4_NL, ActFormat::kQ8_0, IsaLevel::kAvx2, &avx2::Gemm<avx2::NibbleKernel<avx2::Iq4NlFormat>>, "avx2"},
    {GgmlType::kMXFP4, ActFormat::kQ8_0, IsaLevel::kAvx2, &avx2::Gemm<avx2::NibbleKernel<avx2::Mxfp4Format>>, "avx2"},
    {GgmlType::kNVFP4, ActFormat::kQ8_0, IsaLevel::kAvx2, &avx2::Gemm<avx2::Nvfp4Kernel>, "avx2"},
    {GgmlType::kQ2_0, ActFormat::kQ8_0, IsaLevel::kAvx2, &avx2::Gemm<avx2::Q2_0Kernel>, "avx2"},
    {GgmlType::kQ5_0, ActFormat::kQ8_0, IsaLevel::kAvx2, &avx2::Gemm<avx2::NibbleKernel<avx2::Q5_0Format>>, "avx2"},
    {GgmlType::kQ1_0, ActFormat::kQ8_0, IsaLevel::kAvx2, &avx2::Gemm<avx2::Q1_0Kernel>, "avx2"},
    {GgmlType::kQ4_1, ActFormat::kQ8_1, IsaLevel::kAvx2, &avx2::Gemm<avx2::Q4_1Kernel<false>>, "avx2"},
    {GgmlType::kQ5_1, ActFormat::kQ8_1, IsaLevel::kAvx2, &avx2::Gemm<avx2::Q4_1Kernel<true>>, "avx2"},
};
}  // namespace
constinit const GemmKernelTable kLegacyGemmAvx2 = {kEntries, static_cast<int>(sizeof(kEntries) / sizeof(kEntries[0]))};
}  // namespace strata::kernels
