// runtime/base/portable_math.h: each function gives the correctly rounded
// float at known points, in every build (Linux and the Windows build under
// Wine run this same test), so pack-time figures match across systems.
#include "runtime/base/portable_math.h"
#include "runtime/model/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace strata {
namespace {

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

TEST(PortableMath, CorrectlyRoundedAtKnownPoints) {
  EXPECT_EQ(Bits(ExpF(1.0f)), 0x402DF854u);     // e = 2.718281828...
  EXPECT_EQ(Bits(ExpF(0.0f)), 0x3F800000u);     // 1
  EXPECT_EQ(Bits(SinF(1.0f)), 0x3F576AA4u);     // 0.841470984...
  EXPECT_EQ(Bits(CosF(1.0f)), 0x3F0A5140u);     // 0.540302305...
  EXPECT_EQ(Bits(Log1pF(1.0f)), 0x3F317218u);   // ln 2 = 0.693147180...
  EXPECT_EQ(Bits(PowF(10000.0f, -0.25f)), 0x3DCCCCCDu);  // 0.1
  EXPECT_EQ(Bits(PowF(2.0f, 10.0f)), 0x44800000u);       // 1024
}

TEST(PortableMath, LimitsBehaveAsIeee) {
  EXPECT_EQ(ExpF(-200.0f), 0.0f);
  EXPECT_TRUE(std::isinf(ExpF(200.0f)));
  EXPECT_EQ(Log1pF(0.0f), 0.0f);
}

// RoPE's angles, computed once per position for all heads (ops::RopeAngles):
// theta_i = freq_scale * pos * base^(-2i / n_rot) built by repeated float
// multiplication (within a few float ulps of the exact angle), cos then sin;
// the rotations pair (i, i + n_rot/2) (NEOX) and (2i, 2i + 1) (NORM).
TEST(PortableMath, RopeAnglesAndRotations) {
  for (const int64_t n_rot : {2, 64, 128})
    for (const int64_t pos : {0, 1, 7, 4095})
      for (const float base : {10000.0f, 1000000.0f})
        for (const float fscale : {1.0f, 0.25f}) {
          SCOPED_TRACE(testing::Message() << "n_rot " << n_rot << " pos " << pos << " base " << base << " scale " << fscale);
          const int64_t half = n_rot / 2;
          std::vector<float> cs(static_cast<size_t>(n_rot), -9.0f);
          ops::RopeAngles(n_rot, pos, base, fscale, cs.data());
          EXPECT_EQ(Bits(cs[0]), Bits(CosF(fscale * static_cast<float>(pos))));
          EXPECT_EQ(Bits(cs[half]), Bits(SinF(fscale * static_cast<float>(pos))));
          for (int64_t i = 0; i < half; ++i) {
            const double theta = static_cast<double>(fscale) * static_cast<double>(pos) *
                                 std::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / static_cast<double>(n_rot));
            EXPECT_NEAR(cs[i], std::cos(theta), 2e-3 + 1e-6 * static_cast<double>(pos)) << "cos " << i;
            EXPECT_NEAR(cs[half + i], std::sin(theta), 2e-3 + 1e-6 * static_cast<double>(pos)) << "sin " << i;
          }
          std::vector<float> x(static_cast<size_t>(n_rot + 3)), neox = x, norm = x;
          for (size_t i = 0; i < x.size(); ++i) x[i] = neox[i] = norm[i] = 0.5f + static_cast<float>(i) * 0.25f;
          ops::RopeNeox(neox.data(), n_rot, cs.data());
          ops::RopeNorm(norm.data(), n_rot, cs.data());
          for (int64_t i = 0; i < half; ++i) {
            const float c = cs[i], s = cs[half + i];
            EXPECT_EQ(Bits(neox[i]), Bits(x[i] * c - x[i + half] * s));
            EXPECT_EQ(Bits(neox[i + half]), Bits(x[i] * s + x[i + half] * c));
            EXPECT_EQ(Bits(norm[2 * i]), Bits(x[2 * i] * c - x[2 * i + 1] * s));
            EXPECT_EQ(Bits(norm[2 * i + 1]), Bits(x[2 * i] * s + x[2 * i + 1] * c));
          }
          for (int64_t i = n_rot; i < n_rot + 3; ++i) {  // past n_rot: untouched
            EXPECT_EQ(neox[i], x[i]);
            EXPECT_EQ(norm[i], x[i]);
          }
        }
}

}  // namespace
}  // namespace strata
