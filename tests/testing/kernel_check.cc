#include "tests/testing/kernel_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/quant/blocks.h"
#include "runtime/quant/dequantize.h"
#include "runtime/quant/fp_convert.h"
#include "tests/testing/random_blocks.h"

namespace strata::testing {

std::vector<uint8_t> RandomMatrix(GgmlType type, int64_t rows, int64_t k, std::mt19937_64& rng) {
  const GgmlTypeInfo& info = TypeInfo(type);
  const auto blocks = static_cast<uint64_t>(rows * k) / info.block_elems;
  std::vector<uint8_t> m(blocks * info.block_bytes);
  FillRandomBlocks(type, blocks, rng, m.data(), 0.02f);
  return m;
}

std::vector<float> RandomActivations(int64_t n, int64_t k, std::mt19937_64& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int64_t> pick(0, k - 1);
  std::vector<float> x(static_cast<size_t>(n * k));
  for (float& v : x) v = normal(rng);
  for (int64_t t = 0; t < n; ++t)
    for (int i = 0; i < 3; ++i) x[static_cast<size_t>(t * k + pick(rng))] *= 20.0f;
  return x;
}

std::vector<float> DecodeActivationRow(ActFormat format, const uint8_t* row, int64_t k) {
  std::vector<float> out(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    switch (format) {
      case ActFormat::kF32:
      case ActFormat::kF16AsF32:
      case ActFormat::kBf16AsF32: std::memcpy(&out[i], row + 4 * i, 4); break;
      case ActFormat::kF16:
      case ActFormat::kBF16: {
        uint16_t h;
        std::memcpy(&h, row + 2 * i, 2);
        out[i] = format == ActFormat::kF16 ? Fp16ToFp32(h) : Bf16ToFp32(h);
        break;
      }
      case ActFormat::kQ8_0: {
        const auto b = LoadBlock<BlockQ8_0>(row, i / 32);
        out[i] = Fp16ToFp32(b.d) * static_cast<float>(b.qs[i % 32]);
        break;
      }
      case ActFormat::kQ8_1: {
        const auto b = LoadBlock<BlockQ8_1>(row, i / 32);
        out[i] = Fp16ToFp32(b.d) * static_cast<float>(b.qs[i % 32]);
        break;
      }
      case ActFormat::kQ8_K: {
        const auto b = LoadBlock<BlockQ8_K>(row, i / 256);
        out[i] = b.d * static_cast<float>(b.qs[i % 256]);
        break;
      }
    }
  }
  return out;
}

std::vector<float> DequantizeWeightRow(GgmlType type, const uint8_t* row, int64_t k) {
  std::vector<float> out(static_cast<size_t>(k));
  DequantizeRowUnchecked(type, row, out.data(), k);
  return out;
}

double ErrorScale(GgmlType type, const std::vector<float>& w, const std::vector<float>& a) {
  const auto block = static_cast<size_t>(TypeInfo(type).block_elems);
  double s = 0.0;
  for (size_t b0 = 0; b0 < w.size(); b0 += block) {
    double m = 0.0;
    for (size_t i = b0; i < b0 + block; ++i) m = std::max(m, std::fabs(static_cast<double>(w[i])));
    for (size_t i = b0; i < b0 + block; ++i)
      s += (std::fabs(static_cast<double>(w[i])) + (block > 1 ? m : 0.0)) * std::fabs(static_cast<double>(a[i]));
  }
  return s;
}

double AllowedError(GgmlType type, int64_t k, double error_scale) {
  const auto block = static_cast<int64_t>(TypeInfo(type).block_elems);
  const double steps = block > 1 ? static_cast<double>(k / block) : static_cast<double>(k) / 8.0;
  return 8.0 * std::ldexp(1.0, -23) * (steps + 8.0) * error_scale;
}

double ExactDot(const std::vector<float>& w, const std::vector<float>& a) {
  double s = 0.0;
  for (size_t i = 0; i < w.size(); ++i) s += static_cast<double>(w[i]) * static_cast<double>(a[i]);
  return s;
}

}  // namespace strata::testing
