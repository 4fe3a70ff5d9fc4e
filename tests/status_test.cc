#include "runtime/base/status.h"

#include <gtest/gtest.h>

#include "runtime/base/checked_math.h"
#include "runtime/quant/ggml_type.h"

namespace strata {
namespace {

TEST(Status, CorruptAtNamesFileOffsetFieldExpectedFound) {
  Status s = CorruptAt("m.gguf", 4660, "tensor 'x' n_dims", "1..4", "7");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(), "m.gguf: byte 4660 (0x1234): tensor 'x' n_dims: expected 1..4, found 7");
}

TEST(Status, ResultCarriesValueOrError) {
  Result<int> a = 5;
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, 5);
  Result<int> b = NotFound("nope");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kNotFound);
  Result<int> c = Status::Ok();  // an OK status is not a value: that is a bug, reported as one
  EXPECT_EQ(c.status().code(), StatusCode::kInternal);
}

TEST(CheckedMath, DetectsOverflow) {
  uint64_t out;
  EXPECT_FALSE(CheckedAdd<uint64_t>(UINT64_MAX, 1, &out));
  EXPECT_FALSE(CheckedMul<uint64_t>(1ull << 33, 1ull << 33, &out));
  EXPECT_TRUE(CheckedAlignUp(33, 32, &out));
  EXPECT_EQ(out, 64u);
  EXPECT_FALSE(CheckedAlignUp(UINT64_MAX - 3, 32, &out));
  EXPECT_TRUE(RangeInside(10, 5, 15));
  EXPECT_FALSE(RangeInside(10, 6, 15));
  EXPECT_FALSE(RangeInside(16, 0, 15));
}

}  // namespace
}  // namespace strata
