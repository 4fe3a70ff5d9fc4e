// ExactCast / CheckedCast (runtime/base/checked_cast.h): every boundary of
// every conversion an untrusted number can take, so a value one past a limit
// is refused and the limit itself is kept.

#include "runtime/base/checked_cast.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

namespace strata {
namespace {

constexpr double kTwo63 = 9223372036854775808.0;
constexpr double kTwo64 = 18446744073709551616.0;

TEST(ExactCast, FloatToSignedKeepsWholeNumbersInRange) {
  EXPECT_EQ(ExactCast<int64_t>(-kTwo63), INT64_MIN);
  EXPECT_EQ(ExactCast<int64_t>(kTwo63), std::nullopt);  // INT64_MAX + 1
  EXPECT_EQ(ExactCast<int64_t>(std::nextafter(kTwo63, 0.0)), int64_t{9223372036854774784});
  EXPECT_EQ(ExactCast<int64_t>(std::nextafter(-kTwo63, -1e300)), std::nullopt);
  EXPECT_EQ(ExactCast<int64_t>(6.2e223), std::nullopt);
  EXPECT_EQ(ExactCast<int64_t>(1.8e28f), std::nullopt);
  EXPECT_EQ(ExactCast<int32_t>(2147483647.0), INT32_MAX);
  EXPECT_EQ(ExactCast<int32_t>(2147483648.0), std::nullopt);
  EXPECT_EQ(ExactCast<int32_t>(-2147483648.0), INT32_MIN);
  EXPECT_EQ(ExactCast<int32_t>(-2147483649.0), std::nullopt);
  EXPECT_EQ(ExactCast<int32_t>(2147483648.0f), std::nullopt);  // the float nearest INT32_MAX
  EXPECT_EQ(ExactCast<int8_t>(127.0), 127);
  EXPECT_EQ(ExactCast<int8_t>(128.0), std::nullopt);
  EXPECT_EQ(ExactCast<int32_t>(-0.0), 0);
}

TEST(ExactCast, FloatToUnsignedRefusesNegativesAndOverflow) {
  EXPECT_EQ(ExactCast<uint64_t>(std::nextafter(kTwo64, 0.0)), uint64_t{18446744073709549568ull});
  EXPECT_EQ(ExactCast<uint64_t>(kTwo64), std::nullopt);
  EXPECT_EQ(ExactCast<uint64_t>(-1.0), std::nullopt);
  EXPECT_EQ(ExactCast<uint32_t>(4294967295.0), UINT32_MAX);
  EXPECT_EQ(ExactCast<uint32_t>(4294967296.0), std::nullopt);
  EXPECT_EQ(ExactCast<uint32_t>(-0.0), 0u);
}

TEST(ExactCast, FloatToIntegerRefusesNanInfinityAndFractions) {
  for (double bad : {std::nan(""), -std::nan(""), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity(), 0.5, -0.5, 1e-300, 2.000001}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(ExactCast<int64_t>(bad), std::nullopt);
    EXPECT_EQ(ExactCast<uint64_t>(bad), std::nullopt);
  }
  for (float bad : {std::nanf(""), std::numeric_limits<float>::infinity(), 0.5f, -1e-30f, 2.25f})
    EXPECT_EQ(ExactCast<int32_t>(bad), std::nullopt) << bad;
}

TEST(ExactCast, IntegerNarrowing) {
  EXPECT_EQ(ExactCast<int32_t>(int64_t{INT32_MAX}), INT32_MAX);
  EXPECT_EQ(ExactCast<int32_t>(int64_t{INT32_MAX} + 1), std::nullopt);
  EXPECT_EQ(ExactCast<int32_t>(int64_t{INT32_MIN} - 1), std::nullopt);
  EXPECT_EQ(ExactCast<uint32_t>(int64_t{-1}), std::nullopt);
  EXPECT_EQ(ExactCast<int64_t>(UINT64_MAX), std::nullopt);
  EXPECT_EQ(ExactCast<int64_t>(uint64_t{INT64_MAX}), INT64_MAX);
  EXPECT_EQ(ExactCast<uint8_t>(256), std::nullopt);
  EXPECT_EQ(ExactCast<size_t>(uint64_t{12345}), size_t{12345});
}

TEST(ExactCast, DoubleToFloatRefusesOnlyFiniteOverflow) {
  EXPECT_EQ(ExactCast<float>(1e300), std::nullopt);
  EXPECT_EQ(ExactCast<float>(-1e39), std::nullopt);
  EXPECT_EQ(ExactCast<float>(static_cast<double>(std::numeric_limits<float>::max())),
            std::numeric_limits<float>::max());
  EXPECT_EQ(ExactCast<float>(0.1), 0.1f);  // rounds to nearest, as IEEE 754 defines
  EXPECT_EQ(ExactCast<float>(std::numeric_limits<double>::infinity()), std::numeric_limits<float>::infinity());
  std::optional<float> nan = ExactCast<float>(std::nan(""));
  ASSERT_TRUE(nan.has_value());
  EXPECT_TRUE(std::isnan(*nan));
  EXPECT_EQ(ExactCast<double>(int64_t{-7}), -7.0);
}

TEST(CheckedCast, MessageNamesWhatExpectedAndFound) {
  Result<int64_t> r = CheckedCast<int64_t>(6.2e223, "metadata 'x' element 3");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "metadata 'x' element 3: expected a whole number in [-9223372036854775808, 9223372036854775807], "
            "found 6.2e+223");
  Result<uint32_t> n = CheckedCast<uint32_t>(std::nan(""), "n", StatusCode::kDataLoss);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(n.status().message(), "n: expected a whole number in [0, 4294967295], found nan");
  Result<uint32_t> ok = CheckedCast<uint32_t>(uint64_t{7}, "n");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 7u);
}

}  // namespace
}  // namespace strata
