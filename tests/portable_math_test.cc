// runtime/base/portable_math.h: each function gives the correctly rounded
// float at known points, in every build (Linux and the Windows build under
// Wine run this same test), so pack-time figures match across systems.
#include "runtime/base/portable_math.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

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

}  // namespace
}  // namespace strata
