// F32 / F16 / BF16 kernels, AVX2 build: 256-bit vectors, pmaddubsw/pmaddwd products. The kernels
// themselves are in x86_float_kernels.h.
#define STRATA_KERNEL_NS avx2
#include "runtime/kernels/x86_float_kernels.h"

namespace strata::kernels {
namespace {
constexpr GemmKernel kEntries[] = {
    {GgmlType::kF32, ActFormat::kF32, IsaLevel::kAvx2, &avx2::Gemm<avx2::FloatKernel<avx2::LoadF32>>, "avx2"},
    {GgmlType::kF16, ActFormat::kF16AsF32, IsaLevel::kAvx2, &avx2::Gemm<avx2::FloatKernel<avx2::LoadF16>>, "avx2"},
    {GgmlType::kBF16, ActFormat::kBf16AsF32, IsaLevel::kAvx2, &avx2::Gemm<avx2::FloatKernel<avx2::LoadBF16>>, "avx2"},
};
}  // namespace
constinit const GemmKernelTable kFloatGemmAvx2 = {kEntries, static_cast<int>(sizeof(kEntries) / sizeof(kEntries[0]))};
}  // namespace strata::kernels
