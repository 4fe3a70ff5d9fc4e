// K-quant kernels (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, and the ternary TQ2_0), AVX2 build: 256-bit vectors,
// pmaddubsw/pmaddwd products. The kernels themselves are in x86_kquant_kernels.h.
#define STRATA_KERNEL_NS avx2
#include "runtime/kernels/x86_kquant_kernels.h"

namespace strata::kernels {
namespace {
constexpr GemmKernel kEntries[] = {
    {GgmlType::kQ2_K, ActFormat::kQ8_K, IsaLevel::kAvx2, &avx2::Gemm<avx2::Q2KKernel>, "avx2"},
    {GgmlType::kQ3_K, ActFormat::kQ8_K, IsaLevel::kAvx2, &avx2::Gemm<avx2::Q3KKernel>, "avx2"},
    {GgmlType::kQ4_K, ActFormat::kQ8_K, IsaLevel::kAvx2, &avx2::Gemm<avx2::Q4KKernel>, "avx2"},
    {GgmlType::kQ5_K, ActFormat::kQ8_K, IsaLevel::kAvx2, &avx2::Gemm<avx2::Q5KKernel>, "avx2"},
    {GgmlType::kQ6_K, ActFormat::kQ8_K, IsaLevel::kAvx2, &avx2::Gemm<avx2::Q6KKernel>, "avx2"},
    {GgmlType::kTQ2_0, ActFormat::kQ8_K, IsaLevel::kAvx2, &avx2::Gemm<avx2::Tq2_0Kernel>, "avx2"},
};
}  // namespace
constinit const GemmKernelTable kKQuantGemmAvx2 = {kEntries, static_cast<int>(sizeof(kEntries) / sizeof(kEntries[0]))};
}  // namespace strata::kernels
