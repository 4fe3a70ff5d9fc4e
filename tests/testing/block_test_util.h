#pragma once
// Helpers for tests that build quant blocks by hand and compare dequantized
// values with expectations written from the format description.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/quant/dequantize.h"
#include "runtime/quant/fp_convert.h"

namespace strata::testing {

inline uint16_t H(float f) { return Fp32ToFp16(f); }
inline float F(uint16_t h) { return Fp16ToFp32(h); }

template <typename Block>
std::vector<uint8_t> Bytes(const Block& b) {
  std::vector<uint8_t> v(sizeof(Block));
  std::memcpy(v.data(), &b, sizeof(Block));
  return v;
}

// DequantizeRow of n elements; a failure is a test failure.
inline std::vector<float> Deq(GgmlType type, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> out(n, -12345.0f);
  const Status s = DequantizeRow(type, bytes, out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}
template <typename Block>
std::vector<float> DeqBlock(GgmlType type, const Block& b) {
  return Deq(type, Bytes(b), TypeInfo(type).block_elems);
}

// Exact comparison (+0 == -0); reports the first few mismatches.
inline void ExpectSame(const std::vector<float>& want, const std::vector<float>& got) {
  ASSERT_EQ(want.size(), got.size());
  int failures = 0;
  for (size_t i = 0; i < want.size() && failures < 8; ++i) {
    if (!(want[i] == got[i]) && !(std::isnan(want[i]) && std::isnan(got[i]))) {
      ADD_FAILURE() << "element " << i << ": want " << want[i] << " got " << got[i];
      ++failures;
    }
  }
}

// IQ4_NL levels (ggml-common.h kvalues_iq4nl), typed independently of iq_grids.h.
inline constexpr int kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

}  // namespace strata::testing
