#include "runtime/quant/quantize.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "runtime/base/strings.h"
#include "runtime/quant/blocks.h"
#include "runtime/quant/fp_convert.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace strata {
namespace {

// roundf(v) as int8 for |v| <= 127.5; 0 where the C conversion would be
// undefined (non-finite or out of range), which is also what x86 code compiled
// from ggml's C produces for those inputs (cvttss2si gives 0x80000000, whose
// low byte is 0).
inline int8_t RoundAwayToInt8(float v) {
  const float r = std::round(v);
  if (!(r >= -128.0f && r <= 127.0f)) return 0;
  return static_cast<int8_t>(r);
}

// Round-half-even, saturated to int8 as the x86 pack instructions do (NaN and
// out-of-range values convert to INT_MIN first, which saturates to -128).
inline int8_t RoundEvenSaturateToInt8(float v) {
  if (!(v >= -2147483648.0f && v < 2147483648.0f)) return -128;  // NaN / "integer indefinite"
  if (v >= 127.0f) return 127;
  if (v <= -128.0f) return -128;
  return static_cast<int8_t>(NearestInt(v));
}

void QuantizeQ8_0Block(Q8_0Rule rule, const float* x, BlockQ8_0* y) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const float a = std::fabs(x[j]);
    amax = amax > a ? amax : a;  // ggml's MAX(amax, a)
  }
  const float d = amax / 127.0f;
  y->d = Fp32ToFp16(d);
  if (rule == Q8_0Rule::kGgmlReference) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < 32; ++j) y->qs[j] = RoundAwayToInt8(x[j] * id);
  } else {
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < 32; ++j) y->qs[j] = RoundEvenSaturateToInt8(x[j] * id);
  }
}

void QuantizeQ8_KBlock(const float* x, BlockQ8_K* y) {
  float max = 0.0f;
  float amax = 0.0f;
  for (int j = 0; j < 256; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (amax == 0.0f) {
    std::memset(y, 0, sizeof(*y));
    return;
  }
  const float iscale = -127.0f / max;
  for (int j = 0; j < 256; ++j) {
    const int v = NearestInt(iscale * x[j]);
    // ggml stores MIN(127, v) into an int8_t: a modular conversion, which only
    // matters for the degenerate inputs described in quantize.h.
    y->qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
  }
  for (int k = 0; k < 16; ++k) {
    int sum = 0;
    for (int l = 0; l < 16; ++l) sum += y->qs[16 * k + l];
    y->bsums[k] = static_cast<int16_t>(sum);
  }
  y->d = 1.0f / iscale;
}

Status CheckSizes(GgmlType type, size_t n, size_t dst_bytes) {
  const Result<uint64_t> bytes = RowBytes(type, n);
  if (!bytes.ok()) return bytes.status().WithContext("quantize");
  if (dst_bytes != *bytes)
    return InvalidArgument(StrFormat("quantize: a %s row of %zu elements takes %llu bytes, found %zu",
                                     std::string(TypeName(type)).c_str(), n,
                                     static_cast<unsigned long long>(*bytes), dst_bytes));
  return Status::Ok();
}

}  // namespace

int NearestInt(float v) {
  const float shifted = v + 12582912.0f;  // 1.5 * 2^23: the integer part lands in the low mantissa bits
  const uint32_t bits = std::bit_cast<uint32_t>(shifted);
  return static_cast<int>(bits & 0x007FFFFFu) - 0x00400000;
}

void QuantizeRowQ8_0Unchecked(Q8_0Rule rule, const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i) {
    BlockQ8_0 b;
    QuantizeQ8_0Block(rule, src + 32 * i, &b);
    StoreBlock(dst, i, b);
  }
}

void QuantizeRowQ8_KUnchecked(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i) {
    BlockQ8_K b;
    QuantizeQ8_KBlock(src + 256 * i, &b);
    StoreBlock(dst, i, b);
  }
}

void Fp32RowToFp16Unchecked(const float* src, void* dst, int64_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = Fp32ToFp16(src[i]);
    std::memcpy(out + 2 * i, &h, 2);
  }
}

void Fp32RowToBf16Unchecked(const float* src, void* dst, int64_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = Fp32ToBf16(src[i]);
    std::memcpy(out + 2 * i, &b, 2);
  }
}

Status QuantizeRowQ8_0(Q8_0Rule rule, std::span<const float> src, std::span<uint8_t> dst) {
  STRATA_RETURN_IF_ERROR(CheckSizes(GgmlType::kQ8_0, src.size(), dst.size()));
  QuantizeRowQ8_0Unchecked(rule, src.data(), dst.data(), static_cast<int64_t>(src.size()));
  return Status::Ok();
}

Status QuantizeRow(GgmlType type, std::span<const float> src, std::span<uint8_t> dst) {
  const auto n = static_cast<int64_t>(src.size());
  switch (type) {
    case GgmlType::kQ8_0:
      return QuantizeRowQ8_0(Q8_0Rule::kGgmlReference, src, dst);
    case GgmlType::kQ8_K:
      STRATA_RETURN_IF_ERROR(CheckSizes(type, src.size(), dst.size()));
      QuantizeRowQ8_KUnchecked(src.data(), dst.data(), n);
      return Status::Ok();
    case GgmlType::kF16:
      STRATA_RETURN_IF_ERROR(CheckSizes(type, src.size(), dst.size()));
      Fp32RowToFp16Unchecked(src.data(), dst.data(), n);
      return Status::Ok();
    case GgmlType::kBF16:
      STRATA_RETURN_IF_ERROR(CheckSizes(type, src.size(), dst.size()));
      Fp32RowToBf16Unchecked(src.data(), dst.data(), n);
      return Status::Ok();
    case GgmlType::kF32:
      STRATA_RETURN_IF_ERROR(CheckSizes(type, src.size(), dst.size()));
      if (n > 0) std::memcpy(dst.data(), src.data(), dst.size());
      return Status::Ok();
    default:
      return Unsupported(StrFormat("quantize: no reference quantizer for %s (Strata quantizes activations to "
                                   "Q8_0, Q8_K, F16 and BF16 only)",
                                   std::string(TypeName(type)).c_str()));
  }
}

}  // namespace strata
