#include "runtime/kernels/activation.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/kernels/activation_simd.h"
#include "runtime/quant/blocks.h"
#include "runtime/quant/fp_convert.h"
#include "runtime/quant/quantize.h"

namespace strata {

std::string_view ActFormatName(ActFormat format) {
  switch (format) {
    case ActFormat::kF32: return "F32";
    case ActFormat::kF16: return "F16";
    case ActFormat::kBF16: return "BF16";
    case ActFormat::kF16AsF32: return "F16 (as F32)";
    case ActFormat::kBf16AsF32: return "BF16 (as F32)";
    case ActFormat::kQ8_0: return "Q8_0";
    case ActFormat::kQ8_1: return "Q8_1";
    case ActFormat::kQ8_K: return "Q8_K";
  }
  return "?";
}

int64_t ActBlockElems(ActFormat format) {
  switch (format) {
    case ActFormat::kQ8_0:
    case ActFormat::kQ8_1: return 32;
    case ActFormat::kQ8_K: return 256;
    default: return 1;
  }
}

uint64_t ActRowBytes(ActFormat format, int64_t k) {
  const auto n = static_cast<uint64_t>(k);
  switch (format) {
    case ActFormat::kF32:
    case ActFormat::kF16AsF32:
    case ActFormat::kBf16AsF32: return n * 4;
    case ActFormat::kF16:
    case ActFormat::kBF16: return n * 2;
    case ActFormat::kQ8_0: return n / 32 * sizeof(BlockQ8_0);
    case ActFormat::kQ8_1: return n / 32 * sizeof(BlockQ8_1);
    case ActFormat::kQ8_K: return n / 256 * sizeof(BlockQ8_K);
  }
  return 0;
}

ActFormat VecDotFormat(GgmlType weight) {
  switch (weight) {
    case GgmlType::kF32: return ActFormat::kF32;
    case GgmlType::kF16: return ActFormat::kF16;
    case GgmlType::kBF16: return ActFormat::kBF16;
    case GgmlType::kQ4_0:
    case GgmlType::kQ5_0:
    case GgmlType::kQ8_0:
    case GgmlType::kIQ4_NL:
    case GgmlType::kMXFP4:
    case GgmlType::kNVFP4:
    case GgmlType::kQ1_0:
    case GgmlType::kQ2_0: return ActFormat::kQ8_0;
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_1: return ActFormat::kQ8_1;
    default: return ActFormat::kQ8_K;  // K-quants, i-quants, TQ1_0, TQ2_0
  }
}

void QuantizeRowQ8_1X86(const float* x, void* dst, int64_t k) {
  for (int64_t i = 0; i < k / 32; ++i, x += 32) {
    // d and q exactly as the Q8_0 x86 rule; then the sum of the quants.
    BlockQ8_0 q0;
    QuantizeRowQ8_0Unchecked(Q8_0Rule::kGgmlX86Simd, x, &q0, 32);
    BlockQ8_1 b;
    b.d = q0.d;
    std::memcpy(b.qs, q0.qs, 32);
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += b.qs[j];
    // ggml: FP16(d * sum) with d = amax / 127 as a float (not the F16 d).
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    b.s = Fp32ToFp16(d * static_cast<float>(sum));
    StoreBlock(dst, i, b);
  }
}

void QuantizeActivationRowReference(ActFormat format, const float* x, void* dst, int64_t k) {
  switch (format) {
    case ActFormat::kF32:
      if (k > 0) std::memcpy(dst, x, static_cast<size_t>(k) * sizeof(float));
      return;
    case ActFormat::kF16: Fp32RowToFp16Unchecked(x, dst, k); return;
    case ActFormat::kBF16: Fp32RowToBf16Unchecked(x, dst, k); return;
    case ActFormat::kF16AsF32:
      for (int64_t i = 0; i < k; ++i) {
        const float v = Fp16ToFp32(Fp32ToFp16(x[i]));
        std::memcpy(static_cast<uint8_t*>(dst) + 4 * i, &v, 4);
      }
      return;
    case ActFormat::kBf16AsF32:
      for (int64_t i = 0; i < k; ++i) {
        const float v = Bf16ToFp32(Fp32ToBf16(x[i]));
        std::memcpy(static_cast<uint8_t*>(dst) + 4 * i, &v, 4);
      }
      return;
    case ActFormat::kQ8_0: QuantizeRowQ8_0Unchecked(Q8_0Rule::kGgmlX86Simd, x, dst, k); return;
    case ActFormat::kQ8_1: QuantizeRowQ8_1X86(x, dst, k); return;
    case ActFormat::kQ8_K: QuantizeRowQ8_KUnchecked(x, dst, k); return;
  }
}

void QuantizeActivationRow(ActFormat format, IsaLevel isa, const float* x, void* dst, int64_t k) {
  if (isa >= IsaLevel::kAvx2) {
    switch (format) {
      case ActFormat::kQ8_0: kernels::QuantizeRowQ8_0Avx2(x, dst, k); return;
      case ActFormat::kQ8_1: kernels::QuantizeRowQ8_1Avx2(x, dst, k); return;
      case ActFormat::kQ8_K: kernels::QuantizeRowQ8_KAvx2(x, dst, k); return;
      case ActFormat::kF16AsF32: kernels::RoundRowToF16Avx2(x, dst, k); return;
      case ActFormat::kBf16AsF32: kernels::RoundRowToBf16Avx2(x, dst, k); return;
      default: break;
    }
  }
  QuantizeActivationRowReference(format, x, dst, k);
}

}  // namespace strata
