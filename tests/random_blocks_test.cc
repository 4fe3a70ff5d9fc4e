#include "tests/testing/random_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <random>
#include <vector>

#include "runtime/quant/dequantize.h"

namespace strata::testing {
namespace {

// Random blocks of every dequantizable type decode to finite values whose RMS
// is close to the requested scale.
TEST(RandomBlocks, EveryTypeDecodesToFiniteValuesOfTheRequestedScale) {
  for (const GgmlTypeInfo& info : AllGgmlTypes()) {
    if (!HasDequantizer(info.type)) continue;
    SCOPED_TRACE(std::string(info.name));
    const uint64_t n_blocks = 4096 / info.block_elems;
    const size_t n = n_blocks * info.block_elems;
    for (float scale : {0.02f, 1.0f}) {
      std::mt19937_64 rng(42);
      std::vector<uint8_t> bytes(n_blocks * info.block_bytes);
      FillRandomBlocks(info.type, n_blocks, rng, bytes.data(), scale);
      std::vector<float> y(n);
      ASSERT_TRUE(DequantizeRow(info.type, bytes, y).ok());
      double sum2 = 0;
      for (float v : y) {
        ASSERT_TRUE(std::isfinite(v));
        sum2 += static_cast<double>(v) * static_cast<double>(v);
      }
      const double rms = std::sqrt(sum2 / static_cast<double>(n));
      const double ratio = rms / static_cast<double>(scale);
      EXPECT_GT(ratio, 0.5) << "scale " << scale;
      EXPECT_LT(ratio, 2.0) << "scale " << scale;
    }
  }
}

TEST(RandomBlocks, DeterministicForASeedAndCoversIntegerTypes) {
  for (const GgmlTypeInfo& info : AllGgmlTypes()) {
    std::vector<uint8_t> a(8 * info.block_bytes), b(8 * info.block_bytes);
    std::mt19937_64 r1(5), r2(5);
    FillRandomBlocks(info.type, 8, r1, a.data());
    FillRandomBlocks(info.type, 8, r2, b.data());
    EXPECT_EQ(a, b) << info.name;
  }
}

}  // namespace
}  // namespace strata::testing
