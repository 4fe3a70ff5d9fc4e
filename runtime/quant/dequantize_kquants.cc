// Reference dequantizers for the K-quants (Q2_K..Q6_K, Q8_K) and the ternary
// TQ1_0 / TQ2_0: all 256-element super-blocks. See dequantize_internal.h for
// the float-order contract.

#include "runtime/quant/blocks.h"
#include "runtime/quant/dequantize_internal.h"
#include "runtime/quant/fp_convert.h"

namespace strata::dequant {
namespace {

// Q4_K / Q5_K: the 6-bit scale and min of sub-block j (0..7) from the 12
// packed bytes. j < 4: low 6 bits of bytes j and j+4. j >= 4: a nibble of byte
// j+4 plus the top 2 bits of bytes j-4 (scale) and j (min).
inline void ScaleMinK4(int j, const uint8_t* q, int* sc, int* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Q3_K: the 6-bit scale of sub-block j (0..15), before the -32 bias. Low 4 bits
// are a nibble of bytes 0..7; the top 2 bits come from bytes 8..11.
inline int ScaleQ3K(int j, const uint8_t* s) {
  const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return low | (high << 4);
}

}  // namespace

void Q2_K(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockQ2_K>(src, i);
    const float d = Fp16ToFp32(b.d);
    const float dmin = Fp16ToFp32(b.dmin);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = b.qs + 32 * half;
      for (int j = 0; j < 4; ++j) {
        const int shift = 2 * j;
        for (int g = 0; g < 2; ++g) {  // two groups of 16 share the shift
          const uint8_t sc = b.scales[8 * half + 2 * j + g];
          const float dl = d * static_cast<float>(sc & 0xF);
          const float ml = dmin * static_cast<float>(sc >> 4);
          for (int l = 0; l < 16; ++l) {
            const float p = dl * static_cast<float>((q[l + 16 * g] >> shift) & 3);
            *dst++ = p - ml;
          }
        }
      }
    }
  }
}

void Q3_K(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockQ3_K>(src, i);
    const float d_all = Fp16ToFp32(b.d);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* q = b.qs + 32 * half;
      for (int j = 0; j < 4; ++j) {
        const int shift = 2 * j;
        const uint8_t m = static_cast<uint8_t>(1u << (4 * half + j));  // hmask bit of this 32
        for (int g = 0; g < 2; ++g) {
          const float dl = d_all * static_cast<float>(ScaleQ3K(8 * half + 2 * j + g, b.scales) - 32);
          for (int l = 0; l < 16; ++l) {
            const int k = l + 16 * g;
            const int v = ((q[k] >> shift) & 3) - ((b.hmask[k] & m) ? 0 : 4);
            *dst++ = dl * static_cast<float>(v);
          }
        }
      }
    }
  }
}

void Q4_K(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockQ4_K>(src, i);
    const float d = Fp16ToFp32(b.d);
    const float dmin = Fp16ToFp32(b.dmin);
    for (int c = 0; c < 4; ++c) {  // 64 elements: low nibbles, then high nibbles
      const uint8_t* q = b.qs + 32 * c;
      int sc, m;
      ScaleMinK4(2 * c, b.scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(m);
      ScaleMinK4(2 * c + 1, b.scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        const float p = d1 * static_cast<float>(q[l] & 0xF);
        *dst++ = p - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const float p = d2 * static_cast<float>(q[l] >> 4);
        *dst++ = p - m2;
      }
    }
  }
}

void Q5_K(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockQ5_K>(src, i);
    const float d = Fp16ToFp32(b.d);
    const float dmin = Fp16ToFp32(b.dmin);
    for (int c = 0; c < 4; ++c) {
      const uint8_t* ql = b.qs + 32 * c;
      const uint8_t u1 = static_cast<uint8_t>(1u << (2 * c));  // qh bit of the low-nibble 32
      const uint8_t u2 = static_cast<uint8_t>(2u << (2 * c));  // qh bit of the high-nibble 32
      int sc, m;
      ScaleMinK4(2 * c, b.scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(m);
      ScaleMinK4(2 * c + 1, b.scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        const float p = d1 * static_cast<float>((ql[l] & 0xF) + ((b.qh[l] & u1) ? 16 : 0));
        *dst++ = p - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const float p = d2 * static_cast<float>((ql[l] >> 4) + ((b.qh[l] & u2) ? 16 : 0));
        *dst++ = p - m2;
      }
    }
  }
}

void Q6_K(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockQ6_K>(src, i);
    const float d = Fp16ToFp32(b.d);
    for (int half = 0; half < 2; ++half, dst += 128) {
      const uint8_t* ql = b.ql + 64 * half;
      const uint8_t* qh = b.qh + 32 * half;
      const int8_t* sc = b.scales + 8 * half;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        dst[l] = d * static_cast<float>(sc[is]) * static_cast<float>(q1);
        dst[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        dst[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        dst[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

void Q8_K(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, dst += 256) {
    const auto b = LoadBlock<BlockQ8_K>(src, i);
    for (int j = 0; j < 256; ++j) dst[j] = b.d * static_cast<float>(b.qs[j]);
  }
}

namespace {
// TQ1_0 stores 5 (or 4) base-3 digits in a byte as a fixed-point fraction:
// byte = ceil(v * 256 / 243). Digit n is recovered by multiplying by 3^n mod
// 256 (dropping the digits above) and taking the top "trit" of q*3/256.
inline float Trit(uint8_t byte, int n, float d) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const uint8_t q = static_cast<uint8_t>(byte * kPow3[n]);
  const int xi = (static_cast<uint16_t>(q) * 3) >> 8;  // 0, 1, 2
  return static_cast<float>(xi - 1) * d;
}
}  // namespace

void Tq1_0(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockTq1_0>(src, i);
    const float d = Fp16ToFp32(b.d);
    for (int n = 0; n < 5; ++n)  // qs[0..31]: elements 32n + m
      for (int m = 0; m < 32; ++m) *dst++ = Trit(b.qs[m], n, d);
    for (int n = 0; n < 5; ++n)  // qs[32..47]: elements 160 + 16n + m
      for (int m = 0; m < 16; ++m) *dst++ = Trit(b.qs[32 + m], n, d);
    for (int n = 0; n < 4; ++n)  // qh[0..3]: elements 240 + 4n + j
      for (int j = 0; j < 4; ++j) *dst++ = Trit(b.qh[j], n, d);
  }
}

void Tq2_0(const uint8_t* src, float* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const auto b = LoadBlock<BlockTq2_0>(src, i);
    const float d = Fp16ToFp32(b.d);
    for (int j = 0; j < 64; j += 32)
      for (int l = 0; l < 4; ++l)
        for (int m = 0; m < 32; ++m) {
          const int q = (b.qs[j + m] >> (2 * l)) & 3;
          *dst++ = static_cast<float>(q - 1) * d;
        }
  }
}

}  // namespace strata::dequant
