// Reference dot products for the float types and the 32/64/128-element
// block types (Q8_0 activations; Q8_1 for Q4_1/Q5_1), and the dispatch.

#include <cstring>

#include "runtime/kernels/activation.h"
#include "runtime/kernels/vec_dot.h"
#include "runtime/kernels/vec_dot_internal.h"
#include "runtime/quant/blocks.h"
#include "runtime/quant/dequantize.h"
#include "runtime/quant/fp_convert.h"
#include "runtime/quant/iq_grids.h"

namespace strata {
namespace vecdot {
namespace {

inline float LoadF32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint16_t LoadU16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// sum over j < 16 of lo(qs[j]) * a[j] + hi(qs[j]) * a[j + 16] for 4-bit
// codes mapped through `values` (the Q4_0/IQ4_NL/MXFP4 layout).
inline int NibbleDot(const uint8_t qs[16], const int8_t a[32], const int8_t values[16]) {
  int lo = 0, hi = 0;
  for (int j = 0; j < 16; ++j) {
    lo += values[qs[j] & 0xF] * a[j];
    hi += values[qs[j] >> 4] * a[j + 16];
  }
  return lo + hi;
}

constexpr int8_t kQ4_0Values[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};

}  // namespace

float F32(const uint8_t* w, const uint8_t* a, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(LoadF32(w + 4 * i) * LoadF32(a + 4 * i));
  return static_cast<float>(sum);
}

float F16(const uint8_t* w, const uint8_t* a, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += static_cast<double>(Fp16ToFp32(LoadU16(w + 2 * i)) * Fp16ToFp32(LoadU16(a + 2 * i)));
  return static_cast<float>(sum);
}

float BF16(const uint8_t* w, const uint8_t* a, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    sum += static_cast<double>(Bf16ToFp32(LoadU16(w + 2 * i)) * Bf16ToFp32(LoadU16(a + 2 * i)));
  return static_cast<float>(sum);
}

float Q4_0(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockQ4_0>(w, i);
    const auto y = LoadBlock<BlockQ8_0>(a, i);
    const int isum = NibbleDot(x.qs, y.qs, kQ4_0Values);
    sum += static_cast<float>(isum) * Fp16ToFp32(x.d) * Fp16ToFp32(y.d);
  }
  return sum;
}

float Iq4_nl(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockIq4_nl>(w, i);
    const auto y = LoadBlock<BlockQ8_0>(a, i);
    const int isum = NibbleDot(x.qs, y.qs, kValuesIq4nl.data());
    sum += Fp16ToFp32(y.d) * Fp16ToFp32(x.d) * static_cast<float>(isum);
  }
  return sum;
}

float Mxfp4(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockMxfp4>(w, i);
    const auto y = LoadBlock<BlockQ8_0>(a, i);
    const int isum = NibbleDot(x.qs, y.qs, kValuesFp4.data());
    sum += Fp16ToFp32(y.d) * E8M0ToFp32Half(x.e) * static_cast<float>(isum);
  }
  return sum;
}

float Q4_1(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockQ4_1>(w, i);
    const auto y = LoadBlock<BlockQ8_1>(a, i);
    int isum = 0;
    for (int j = 0; j < 16; ++j) isum += (x.qs[j] & 0xF) * y.qs[j] + (x.qs[j] >> 4) * y.qs[j + 16];
    // value = d*q + m, so dot = d*dy*sum(q*a) + m*(dy*sum(a)) = ... + m*s.
    sum += Fp16ToFp32(x.d) * Fp16ToFp32(y.d) * static_cast<float>(isum) + Fp16ToFp32(x.m) * Fp16ToFp32(y.s);
  }
  return sum;
}

namespace {
// The 5-bit codes of a Q5_0/Q5_1 block: low nibbles plus bit j of qh (LE u32).
inline void Q5Codes(const uint8_t qs[16], const uint8_t qh_bytes[4], int codes[32]) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int j = 0; j < 16; ++j) {
    codes[j] = (qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
    codes[j + 16] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
  }
}
}  // namespace

float Q5_0(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockQ5_0>(w, i);
    const auto y = LoadBlock<BlockQ8_0>(a, i);
    int codes[32];
    Q5Codes(x.qs, x.qh, codes);
    int isum = 0;
    for (int j = 0; j < 32; ++j) isum += (codes[j] - 16) * y.qs[j];
    sum += Fp16ToFp32(x.d) * Fp16ToFp32(y.d) * static_cast<float>(isum);
  }
  return sum;
}

float Q5_1(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockQ5_1>(w, i);
    const auto y = LoadBlock<BlockQ8_1>(a, i);
    int codes[32];
    Q5Codes(x.qs, x.qh, codes);
    int isum = 0;
    for (int j = 0; j < 32; ++j) isum += codes[j] * y.qs[j];
    sum += Fp16ToFp32(x.d) * Fp16ToFp32(y.d) * static_cast<float>(isum) + Fp16ToFp32(x.m) * Fp16ToFp32(y.s);
  }
  return sum;
}

float Q8_0(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockQ8_0>(w, i);
    const auto y = LoadBlock<BlockQ8_0>(a, i);
    int isum = 0;
    for (int j = 0; j < 32; ++j) isum += x.qs[j] * y.qs[j];
    sum += static_cast<float>(isum) * (Fp16ToFp32(x.d) * Fp16ToFp32(y.d));
  }
  return sum;
}

// NVFP4: 64 elements = 4 sub-blocks of 16 with their own UE4M3 scale, against
// two Q8_0 blocks. Sub-block s: qs[8s+j] holds element 16s+j (low nibble) and
// 16s+j+8 (high nibble).
float Nvfp4(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockNvfp4>(w, i);
    for (int s = 0; s < 4; ++s) {
      const auto y = LoadBlock<BlockQ8_0>(a, 2 * i + s / 2);
      const int8_t* ya = y.qs + 16 * (s % 2);
      int isum = 0;
      for (int j = 0; j < 8; ++j) {
        const uint8_t q = x.qs[8 * s + j];
        isum += kValuesFp4[q & 0xF] * ya[j] + kValuesFp4[q >> 4] * ya[j + 8];
      }
      sum += Fp16ToFp32(y.d) * Ue4m3ToFp32(x.d[s]) * static_cast<float>(isum);
    }
  }
  return sum;
}

// Q1_0: 128 elements (+d or -d by bit) against four Q8_0 blocks.
float Q1_0(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockQ1_0>(w, i);
    float block_sum = 0.0f;
    for (int k = 0; k < 4; ++k) {
      const auto y = LoadBlock<BlockQ8_0>(a, 4 * i + k);
      int isum = 0;
      for (int j = 0; j < 32; ++j) {
        const int bit = (x.qs[4 * k + j / 8] >> (j % 8)) & 1;
        isum += bit ? y.qs[j] : -y.qs[j];
      }
      block_sum += Fp16ToFp32(y.d) * static_cast<float>(isum);
    }
    sum += Fp16ToFp32(x.d) * block_sum;
  }
  return sum;
}

// Q2_0: 64 elements with values q - 1 (q = 2 bits at qs[j/4] >> 2*(j%4))
// against two Q8_0 blocks.
float Q2_0(const uint8_t* w, const uint8_t* a, int64_t nb) {
  float sum = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const auto x = LoadBlock<BlockQ2_0>(w, i);
    float block_sum = 0.0f;
    for (int k = 0; k < 2; ++k) {
      const auto y = LoadBlock<BlockQ8_0>(a, 2 * i + k);
      int isum = 0;
      for (int j = 0; j < 32; ++j) {
        const int q = (x.qs[8 * k + j / 4] >> (2 * (j % 4))) & 3;
        isum += (q - 1) * y.qs[j];
      }
      block_sum += Fp16ToFp32(y.d) * static_cast<float>(isum);
    }
    sum += Fp16ToFp32(x.d) * block_sum;
  }
  return sum;
}

}  // namespace vecdot

bool HasVecDot(GgmlType weight) {
  const GgmlTypeInfo* info = LookupGgmlType(static_cast<uint32_t>(weight));
  return info != nullptr && info->weight && HasDequantizer(weight);
}

float VecDotReference(GgmlType weight, const void* w_row, const void* act_row, int64_t k) {
  const auto* w = static_cast<const uint8_t*>(w_row);
  const auto* a = static_cast<const uint8_t*>(act_row);
  const int64_t nb = k / static_cast<int64_t>(TypeInfo(weight).block_elems);
  using T = GgmlType;
  switch (weight) {
    case T::kF32: return vecdot::F32(w, a, nb);
    case T::kF16: return vecdot::F16(w, a, nb);
    case T::kBF16: return vecdot::BF16(w, a, nb);
    case T::kQ4_0: return vecdot::Q4_0(w, a, nb);
    case T::kQ4_1: return vecdot::Q4_1(w, a, nb);
    case T::kQ5_0: return vecdot::Q5_0(w, a, nb);
    case T::kQ5_1: return vecdot::Q5_1(w, a, nb);
    case T::kQ8_0: return vecdot::Q8_0(w, a, nb);
    case T::kIQ4_NL: return vecdot::Iq4_nl(w, a, nb);
    case T::kMXFP4: return vecdot::Mxfp4(w, a, nb);
    case T::kNVFP4: return vecdot::Nvfp4(w, a, nb);
    case T::kQ1_0: return vecdot::Q1_0(w, a, nb);
    case T::kQ2_0: return vecdot::Q2_0(w, a, nb);
    case T::kQ2_K: return vecdot::Q2_K(w, a, nb);
    case T::kQ3_K: return vecdot::Q3_K(w, a, nb);
    case T::kQ4_K: return vecdot::Q4_K(w, a, nb);
    case T::kQ5_K: return vecdot::Q5_K(w, a, nb);
    case T::kQ6_K: return vecdot::Q6_K(w, a, nb);
    case T::kTQ1_0: return vecdot::Tq1_0(w, a, nb);
    case T::kTQ2_0: return vecdot::Tq2_0(w, a, nb);
    case T::kIQ2_XXS: return vecdot::Iq2_xxs(w, a, nb);
    case T::kIQ2_XS: return vecdot::Iq2_xs(w, a, nb);
    case T::kIQ2_S: return vecdot::Iq2_s(w, a, nb);
    case T::kIQ3_XXS: return vecdot::Iq3_xxs(w, a, nb);
    case T::kIQ3_S: return vecdot::Iq3_s(w, a, nb);
    case T::kIQ1_S: return vecdot::Iq1_s(w, a, nb);
    case T::kIQ1_M: return vecdot::Iq1_m(w, a, nb);
    case T::kIQ4_XS: return vecdot::Iq4_xs(w, a, nb);
    default: return 0.0f;  // not a weight type (REQUIRES HasVecDot)
  }
}

}  // namespace strata
