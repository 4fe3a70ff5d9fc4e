// K-quant kernels (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, and the ternary TQ2_0), AVX-512 build: the same code
// with 32 registers and AVX-512 VNNI (vpdpbusd, vpdpwssd). The kernels themselves are in
// x86_kquant_kernels.h; Q4_K, Q5_K and Q6_K use the 512-bit ones of x86_zmm_kernels.h, Q4_K and
// Q5_K from 8 columns on the panels of x86_panel_kernels.h.
#define STRATA_KERNEL_NS avx512
#include "runtime/kernels/x86_kquant_kernels.h"
#include "runtime/kernels/x86_zmm_kernels.h"
#include "runtime/kernels/x86_panel_kernels.h"

namespace strata::kernels {
namespace {
constexpr GemmKernel kEntries[] = {
    {GgmlType::kQ2_K, ActFormat::kQ8_K, IsaLevel::kAvx512, &avx512::Gemm<avx512::Q2KKernel>, "avx512-vnni"},
    {GgmlType::kQ3_K, ActFormat::kQ8_K, IsaLevel::kAvx512, &avx512::Gemm<avx512::Q3KKernel>, "avx512-vnni"},
    {GgmlType::kQ4_K, ActFormat::kQ8_K, IsaLevel::kAvx512, &avx512::PanelGemm<avx512::Q45KPanel<false>, avx512::Q45KKernelZmm<false>>, "avx512-zmm"},
    {GgmlType::kQ5_K, ActFormat::kQ8_K, IsaLevel::kAvx512, &avx512::PanelGemm<avx512::Q45KPanel<true>, avx512::Q45KKernelZmm<true>>, "avx512-zmm"},
    {GgmlType::kQ6_K, ActFormat::kQ8_K, IsaLevel::kAvx512, &avx512::Gemm<avx512::Q6KKernelZmm>, "avx512-zmm"},
    {GgmlType::kTQ2_0, ActFormat::kQ8_K, IsaLevel::kAvx512, &avx512::Gemm<avx512::Tq2_0Kernel>, "avx512-vnni"},
};
}  // namespace
constinit const GemmKernelTable kKQuantGemmAvx512 = {kEntries, static_cast<int>(sizeof(kEntries) / sizeof(kEntries[0]))};
}  // namespace strata::kernels
