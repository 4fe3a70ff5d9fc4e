#include "runtime/quant/dequantize.h"

#include <bit>
#include <cstring>
#include <string>

#include "runtime/base/strings.h"
#include "runtime/quant/blocks.h"
#include "runtime/quant/dequantize_internal.h"
#include "runtime/quant/fp_convert.h"
#include "runtime/quant/iq_grids.h"

namespace strata {
namespace dequant {

void F32(const uint8_t* src, float* dst, int64_t n_blocks) {
  std::memcpy(dst, src, static_cast<size_t>(n_blocks) * sizeof(float));
}

void F16(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    uint16_t h;
    std::memcpy(&h, src + 2 * i, 2);
    dst[i] = Fp16ToFp32(h);
  }
}

void BF16(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    uint16_t b;
    std::memcpy(&b, src + 2 * i, 2);
    dst[i] = Bf16ToFp32(b);
  }
}

void Q4_0(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += 32) {
    const auto b = LoadBlock<BlockQ4_0>(src, i);
    const float d = Fp16ToFp32(b.d);
    for (int j = 0; j < 16; ++j) {
      const int x0 = (b.qs[j] & 0x0F) - 8;
      const int x1 = (b.qs[j] >> 4) - 8;
      dst[j] = static_cast<float>(x0) * d;
      dst[j + 16] = static_cast<float>(x1) * d;
    }
  }
}

void Q4_1(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += 32) {
    const auto b = LoadBlock<BlockQ4_1>(src, i);
    const float d = Fp16ToFp32(b.d);
    const float m = Fp16ToFp32(b.m);
    for (int j = 0; j < 16; ++j) {
      const float p0 = static_cast<float>(b.qs[j] & 0x0F) * d;
      const float p1 = static_cast<float>(b.qs[j] >> 4) * d;
      dst[j] = p0 + m;
      dst[j + 16] = p1 + m;
    }
  }
}

// Bit 4 of the 5-bit quants of elements j and j+16 (qh is a little-endian u32).
static inline void Q5HighBits(const uint8_t qh_bytes[4], int j, int* h0, int* h1) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  *h0 = static_cast<int>(((qh >> j) << 4) & 0x10u);
  *h1 = static_cast<int>((qh >> (j + 12)) & 0x10u);
}

void Q5_0(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += 32) {
    const auto b = LoadBlock<BlockQ5_0>(src, i);
    const float d = Fp16ToFp32(b.d);
    for (int j = 0; j < 16; ++j) {
      int h0, h1;
      Q5HighBits(b.qh, j, &h0, &h1);
      const int x0 = ((b.qs[j] & 0x0F) | h0) - 16;
      const int x1 = ((b.qs[j] >> 4) | h1) - 16;
      dst[j] = static_cast<float>(x0) * d;
      dst[j + 16] = static_cast<float>(x1) * d;
    }
  }
}

void Q5_1(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += 32) {
    const auto b = LoadBlock<BlockQ5_1>(src, i);
    const float d = Fp16ToFp32(b.d);
    const float m = Fp16ToFp32(b.m);
    for (int j = 0; j < 16; ++j) {
      int h0, h1;
      Q5HighBits(b.qh, j, &h0, &h1);
      const float p0 = static_cast<float>((b.qs[j] & 0x0F) | h0) * d;
      const float p1 = static_cast<float>((b.qs[j] >> 4) | h1) * d;
      dst[j] = p0 + m;
      dst[j + 16] = p1 + m;
    }
  }
}

void Q8_0(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += 32) {
    const auto b = LoadBlock<BlockQ8_0>(src, i);
    const float d = Fp16ToFp32(b.d);
    for (int j = 0; j < 32; ++j) dst[j] = static_cast<float>(b.qs[j]) * d;
  }
}

void Q1_0(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += 128) {
    const auto b = LoadBlock<BlockQ1_0>(src, i);
    // bit ? d : -d, as a sign-bit flip rather than a branch on random bits.
    const uint32_t d_bits = std::bit_cast<uint32_t>(Fp16ToFp32(b.d));
    for (int j = 0; j < 128; ++j) {
      const uint32_t clear = ((b.qs[j / 8] >> (j % 8)) & 1u) ^ 1u;
      dst[j] = std::bit_cast<float>(d_bits ^ (clear << 31));
    }
  }
}

void Q2_0(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += 64) {
    const auto b = LoadBlock<BlockQ2_0>(src, i);
    const float d = Fp16ToFp32(b.d);
    for (int j = 0; j < 64; ++j) {
      const int q = (b.qs[j / 4] >> (2 * (j % 4))) & 3;  // 0..3 -> -1, 0, 1, 2
      dst[j] = static_cast<float>(q - 1) * d;
    }
  }
}

void Mxfp4(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += 32) {
    const auto b = LoadBlock<BlockMxfp4>(src, i);
    const float d = E8M0ToFp32Half(b.e);
    for (int j = 0; j < 16; ++j) {
      dst[j] = static_cast<float>(kValuesFp4[b.qs[j] & 0x0F]) * d;
      dst[j + 16] = static_cast<float>(kValuesFp4[b.qs[j] >> 4]) * d;
    }
  }
}

void Nvfp4(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockNvfp4>(src, i);
    for (int s = 0; s < 4; ++s, dst += 16) {
      const float d = Ue4m3ToFp32(b.d[s]);
      for (int j = 0; j < 8; ++j) {
        const uint8_t q = b.qs[8 * s + j];
        dst[j] = static_cast<float>(kValuesFp4[q & 0x0F]) * d;
        dst[j + 8] = static_cast<float>(kValuesFp4[q >> 4]) * d;
      }
    }
  }
}

void Iq4_nl(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += 32) {
    const auto b = LoadBlock<BlockIq4_nl>(src, i);
    const float d = Fp16ToFp32(b.d);
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * static_cast<float>(kValuesIq4nl[b.qs[j] & 0x0F]);
      dst[j + 16] = d * static_cast<float>(kValuesIq4nl[b.qs[j] >> 4]);
    }
  }
}

}  // namespace dequant

namespace {

using RowFn = void (*)(const uint8_t*, float*, int64_t);

RowFn FindDequantizer(GgmlType type) {
  using T = GgmlType;
  switch (type) {
    case T::kF32: return dequant::F32;
    case T::kF16: return dequant::F16;
    case T::kBF16: return dequant::BF16;
    case T::kQ4_0: return dequant::Q4_0;
    case T::kQ4_1: return dequant::Q4_1;
    case T::kQ5_0: return dequant::Q5_0;
    case T::kQ5_1: return dequant::Q5_1;
    case T::kQ8_0: return dequant::Q8_0;
    case T::kQ2_K: return dequant::Q2_K;
    case T::kQ3_K: return dequant::Q3_K;
    case T::kQ4_K: return dequant::Q4_K;
    case T::kQ5_K: return dequant::Q5_K;
    case T::kQ6_K: return dequant::Q6_K;
    case T::kQ8_K: return dequant::Q8_K;
    case T::kIQ2_XXS: return dequant::Iq2_xxs;
    case T::kIQ2_XS: return dequant::Iq2_xs;
    case T::kIQ2_S: return dequant::Iq2_s;
    case T::kIQ3_XXS: return dequant::Iq3_xxs;
    case T::kIQ3_S: return dequant::Iq3_s;
    case T::kIQ1_S: return dequant::Iq1_s;
    case T::kIQ1_M: return dequant::Iq1_m;
    case T::kIQ4_NL: return dequant::Iq4_nl;
    case T::kIQ4_XS: return dequant::Iq4_xs;
    case T::kTQ1_0: return dequant::Tq1_0;
    case T::kTQ2_0: return dequant::Tq2_0;
    case T::kMXFP4: return dequant::Mxfp4;
    case T::kNVFP4: return dequant::Nvfp4;
    case T::kQ1_0: return dequant::Q1_0;
    case T::kQ2_0: return dequant::Q2_0;
    case T::kQ8_1:
    case T::kI8:
    case T::kI16:
    case T::kI32:
    case T::kI64:
    case T::kF64:
      return nullptr;
  }
  return nullptr;
}

}  // namespace

bool HasDequantizer(GgmlType type) { return FindDequantizer(type) != nullptr; }

Status DequantizeRow(GgmlType type, std::span<const uint8_t> src, std::span<float> dst) {
  const GgmlTypeInfo* info = LookupGgmlType(static_cast<uint32_t>(type));
  if (info == nullptr)
    return InvalidArgument(StrFormat("dequantize: %s", DescribeTypeId(static_cast<uint32_t>(type)).c_str()));
  const std::string name(info->name);
  if (!HasDequantizer(type))
    return Unsupported(StrFormat("dequantize: %s has no dequantizer (%s)", name.c_str(),
                                 type == GgmlType::kQ8_1 ? "it is an activation-only type; ggml defines no to_float"
                                                         : "it is not a float weight type"));
  const Result<uint64_t> row_bytes = RowBytes(type, dst.size());
  if (!row_bytes.ok()) return row_bytes.status().WithContext("dequantize");
  const uint64_t expected = *row_bytes;
  if (src.size() != expected)
    return InvalidArgument(StrFormat("dequantize: a %s row of %zu elements takes %llu bytes, found %zu", name.c_str(),
                                     dst.size(), static_cast<unsigned long long>(expected), src.size()));
  DequantizeRowUnchecked(type, src.data(), dst.data(), static_cast<int64_t>(dst.size()));
  return Status::Ok();
}

void DequantizeRowUnchecked(GgmlType type, const void* src, float* dst, int64_t n) {
  const RowFn fn = FindDequantizer(type);
  if (fn == nullptr || n <= 0) return;
  fn(static_cast<const uint8_t*>(src), dst, n / TypeInfo(type).block_elems);
}

}  // namespace strata
