#include "tests/testing/random_blocks.h"

#include <cmath>
#include <cstring>

#include "runtime/quant/blocks.h"
#include "runtime/quant/fp_convert.h"

namespace strata::testing {
namespace {

void RandomBytes(std::mt19937_64& rng, void* dst, size_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  while (n > 0) {
    const uint64_t r = rng();
    const size_t k = n < 8 ? n : 8;
    std::memcpy(p, &r, k);
    p += k;
    n -= k;
  }
}

int UniformInt(std::mt19937_64& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

// Random bytes for the whole block, then `fix` sets the scale fields (and any
// field random bytes would make invalid).
template <typename Block, typename Fix>
void Fill(uint64_t n_blocks, std::mt19937_64& rng, uint8_t* out, Fix fix) {
  for (uint64_t i = 0; i < n_blocks; ++i) {
    Block b;
    RandomBytes(rng, &b, sizeof(b));
    fix(b);
    StoreBlock(out, static_cast<int64_t>(i), b);
  }
}

// The divisors below are the RMS of what multiplies the block scale (level
// tables, sub-block scales, grid values) when those fields are random, worked
// out from the formulas in docs/quant-types.md and trimmed so that
// random_blocks_test measures an RMS within ~10% of `scale`.
uint16_t Half(float v) { return Fp32ToFp16(v); }

// Each block's scales vary by up to 30% around the target, so that a kernel
// that takes a scale from the wrong row or block computes a wrong result
// (with one scale for all blocks it could not).
float Jitter(std::mt19937_64& rng) { return std::uniform_real_distribution<float>(0.7f, 1.3f)(rng); }

uint8_t NearestUe4m3(float target) {
  uint8_t best = 1;
  for (int c = 1; c < 0x7F; ++c)
    if (std::fabs(Ue4m3ToFp32(static_cast<uint8_t>(c)) - target) < std::fabs(Ue4m3ToFp32(best) - target))
      best = static_cast<uint8_t>(c);
  return best;
}

void RandomInt8NoMin(std::mt19937_64& rng, int8_t* q, int n) {  // -127..127, as quantizers produce
  for (int j = 0; j < n; ++j) q[j] = static_cast<int8_t>(UniformInt(rng, -127, 127));
}

}  // namespace

void FillRandomBlocks(GgmlType type, uint64_t n_blocks, std::mt19937_64& rng, uint8_t* out, float scale) {
  using T = GgmlType;
  std::normal_distribution<float> normal(0.0f, scale);
  switch (type) {
    case T::kF32:
      for (uint64_t i = 0; i < n_blocks; ++i) {
        const float v = normal(rng);
        std::memcpy(out + 4 * i, &v, 4);
      }
      return;
    case T::kF64:
      for (uint64_t i = 0; i < n_blocks; ++i) {
        const double v = static_cast<double>(normal(rng));
        std::memcpy(out + 8 * i, &v, 8);
      }
      return;
    case T::kF16:
    case T::kBF16:
      for (uint64_t i = 0; i < n_blocks; ++i) {
        const float v = normal(rng);
        const uint16_t h = type == T::kF16 ? Fp32ToFp16(v) : Fp32ToBf16(v);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case T::kI8:
    case T::kI16:
    case T::kI32:
    case T::kI64:
      RandomBytes(rng, out, n_blocks * TypeInfo(type).block_bytes);
      return;
    case T::kQ4_0:
      return Fill<BlockQ4_0>(n_blocks, rng, out, [&](BlockQ4_0& b) { b.d = Half(Jitter(rng) * scale / 4.6f); });
    case T::kQ4_1:
      return Fill<BlockQ4_1>(n_blocks, rng, out, [&](BlockQ4_1& b) {
        b.d = Half(Jitter(rng) * scale / 4.6f);
        b.m = Half(Jitter(rng) * -7.5f * scale / 4.6f);
      });
    case T::kQ5_0:
      return Fill<BlockQ5_0>(n_blocks, rng, out, [&](BlockQ5_0& b) { b.d = Half(Jitter(rng) * scale / 9.2f); });
    case T::kQ5_1:
      return Fill<BlockQ5_1>(n_blocks, rng, out, [&](BlockQ5_1& b) {
        b.d = Half(Jitter(rng) * scale / 9.2f);
        b.m = Half(Jitter(rng) * -15.5f * scale / 9.2f);
      });
    case T::kQ8_0:
      return Fill<BlockQ8_0>(n_blocks, rng, out, [&](BlockQ8_0& b) {
        b.d = Half(Jitter(rng) * scale / 73.0f);
        RandomInt8NoMin(rng, b.qs, 32);
      });
    case T::kQ8_1:
      return Fill<BlockQ8_1>(n_blocks, rng, out, [&](BlockQ8_1& b) {
        const float d = Jitter(rng) * scale / 73.0f;
        RandomInt8NoMin(rng, b.qs, 32);
        int sum = 0;
        for (int8_t q : b.qs) sum += q;
        b.d = Half(d);
        b.s = Half(Fp16ToFp32(b.d) * static_cast<float>(sum));
      });
    case T::kQ1_0:
      return Fill<BlockQ1_0>(n_blocks, rng, out, [&](BlockQ1_0& b) { b.d = Half(Jitter(rng) * scale); });
    case T::kQ2_0:
      return Fill<BlockQ2_0>(n_blocks, rng, out, [&](BlockQ2_0& b) { b.d = Half(Jitter(rng) * scale / 1.22f); });
    case T::kMXFP4:
      return Fill<BlockMxfp4>(n_blocks, rng, out, [&](BlockMxfp4& b) {
        const int e = 128 + static_cast<int>(std::lround(std::log2(scale / 5.85f))) + UniformInt(rng, -1, 1);
        b.e = static_cast<uint8_t>(e < 2 ? 2 : (e > 254 ? 254 : e));
      });
    case T::kNVFP4:
      return Fill<BlockNvfp4>(n_blocks, rng, out, [&](BlockNvfp4& b) {
        for (uint8_t& d : b.d) d = NearestUe4m3(scale / 5.85f * Jitter(rng));
      });
    case T::kTQ1_0:
      return Fill<BlockTq1_0>(n_blocks, rng, out, [&](BlockTq1_0& b) { b.d = Half(Jitter(rng) * scale / 0.82f); });
    case T::kTQ2_0:
      return Fill<BlockTq2_0>(n_blocks, rng, out, [&](BlockTq2_0& b) {
        for (uint8_t& q : b.qs) {  // four 2-bit fields, each 0..2 (ternary: -1, 0, +1)
          q = 0;
          for (int f = 0; f < 4; ++f) q = static_cast<uint8_t>(q | (UniformInt(rng, 0, 2) << (2 * f)));
        }
        b.d = Half(Jitter(rng) * scale / 0.82f);
      });
    case T::kQ2_K:
      return Fill<BlockQ2_K>(n_blocks, rng, out, [&](BlockQ2_K& b) {
        b.d = Half(Jitter(rng) * scale / 13.9f);
        b.dmin = Half(Jitter(rng) * 1.5f * scale / 13.9f);
      });
    case T::kQ3_K:
      return Fill<BlockQ3_K>(n_blocks, rng, out, [&](BlockQ3_K& b) { b.d = Half(Jitter(rng) * scale / 42.5f); });
    case T::kQ4_K:
      return Fill<BlockQ4_K>(n_blocks, rng, out, [&](BlockQ4_K& b) {
        b.d = Half(Jitter(rng) * scale / 254.0f);
        b.dmin = Half(Jitter(rng) * 7.5f * scale / 254.0f);
      });
    case T::kQ5_K:
      return Fill<BlockQ5_K>(n_blocks, rng, out, [&](BlockQ5_K& b) {
        b.d = Half(Jitter(rng) * scale / 518.0f);
        b.dmin = Half(Jitter(rng) * 15.5f * scale / 518.0f);
      });
    case T::kQ6_K:
      return Fill<BlockQ6_K>(n_blocks, rng, out, [&](BlockQ6_K& b) {
        RandomInt8NoMin(rng, b.scales, 16);
        b.d = Half(Jitter(rng) * scale / 1367.0f);
      });
    case T::kQ8_K:
      return Fill<BlockQ8_K>(n_blocks, rng, out, [&](BlockQ8_K& b) {
        RandomInt8NoMin(rng, b.qs, 256);
        for (int k = 0; k < 16; ++k) {
          int sum = 0;
          for (int l = 0; l < 16; ++l) sum += b.qs[16 * k + l];
          b.bsums[k] = static_cast<int16_t>(sum);
        }
        b.d = Jitter(rng) * scale / 73.0f;
      });
    case T::kIQ2_XXS:
      return Fill<BlockIq2_xxs>(n_blocks, rng, out, [&](BlockIq2_xxs& b) { b.d = Half(Jitter(rng) * scale / 51.0f); });
    case T::kIQ2_XS:
      return Fill<BlockIq2_xs>(n_blocks, rng, out, [&](BlockIq2_xs& b) { b.d = Half(Jitter(rng) * scale / 55.0f); });
    case T::kIQ2_S:
      return Fill<BlockIq2_s>(n_blocks, rng, out, [&](BlockIq2_s& b) { b.d = Half(Jitter(rng) * scale / 55.0f); });
    case T::kIQ3_XXS:
      return Fill<BlockIq3_xxs>(n_blocks, rng, out, [&](BlockIq3_xxs& b) { b.d = Half(Jitter(rng) * scale / 140.0f); });
    case T::kIQ3_S:
      return Fill<BlockIq3_s>(n_blocks, rng, out, [&](BlockIq3_s& b) { b.d = Half(Jitter(rng) * scale / 129.0f); });
    case T::kIQ1_S:
      return Fill<BlockIq1_s>(n_blocks, rng, out, [&](BlockIq1_s& b) { b.d = Half(Jitter(rng) * scale / 7.6f); });
    case T::kIQ1_M:
      return Fill<BlockIq1_m>(n_blocks, rng, out, [&](BlockIq1_m& b) {
        // The half scale lives in the top nibble of the four u16 scale words.
        const uint16_t d = Half(Jitter(rng) * scale / 7.6f);
        for (int w = 0; w < 4; ++w) {
          uint16_t word;
          std::memcpy(&word, b.scales + 2 * w, 2);
          word = static_cast<uint16_t>((word & 0x0FFFu) | (((d >> (4 * w)) & 0xFu) << 12));
          std::memcpy(b.scales + 2 * w, &word, 2);
        }
      });
    case T::kIQ4_NL:
      return Fill<BlockIq4_nl>(n_blocks, rng, out, [&](BlockIq4_nl& b) { b.d = Half(Jitter(rng) * scale / 67.4f); });
    case T::kIQ4_XS:
      return Fill<BlockIq4_xs>(n_blocks, rng, out, [&](BlockIq4_xs& b) { b.d = Half(Jitter(rng) * scale / 1247.0f); });
  }
}

}  // namespace strata::testing
