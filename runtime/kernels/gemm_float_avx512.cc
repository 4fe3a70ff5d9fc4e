// F32 / F16 / BF16 kernels, AVX-512 build: the same code with 32 registers and AVX-512 VNNI (vpdpbusd,
// vpdpwssd). The kernels themselves are in x86_float_kernels.h.
#define STRATA_KERNEL_NS avx512
#include "runtime/kernels/x86_float_kernels.h"

namespace strata::kernels {
namespace {
constexpr GemmKernel kEntries[] = {
    {GgmlType::kF32, ActFormat::kF32, IsaLevel::kAvx512, &avx512::Gemm<avx512::FloatKernel<avx512::LoadF32>>, "avx512-vnni"},
    {GgmlType::kF16, ActFormat::kF16AsF32, IsaLevel::kAvx512, &avx512::Gemm<avx512::FloatKernel<avx512::LoadF16>>, "avx512-vnni"},
    {GgmlType::kBF16, ActFormat::kBf16AsF32, IsaLevel::kAvx512, &avx512::Gemm<avx512::FloatKernel<avx512::LoadBF16>>, "avx512-vnni"},
};
}  // namespace
constinit const GemmKernelTable kFloatGemmAvx512 = {kEntries, static_cast<int>(sizeof(kEntries) / sizeof(kEntries[0]))};
}  // namespace strata::kernels
