#include "runtime/quant/iq_grids.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace strata {
namespace {

// Every expected value below is copied from ggml-common.h (ggml-org/llama.cpp,
// ggml/src/ggml-common.h, GGML_TABLE_BEGIN blocks): first, last and some
// entries in between, found by counting table rows.

TEST(IqGrids, Sizes) {
  EXPECT_EQ(kIq2XxsGrid.size(), 256u);
  EXPECT_EQ(kIq2XsGrid.size(), 512u);
  EXPECT_EQ(kIq2SGrid.size(), 1024u);
  EXPECT_EQ(kIq3XxsGrid.size(), 256u);
  EXPECT_EQ(kIq3SGrid.size(), 512u);
  EXPECT_EQ(kIq1SGrid.size(), 2048u);
  EXPECT_EQ(kKsignsIq2xs.size(), 128u);
}

TEST(IqGrids, Iq2xxsMatchesGgml) {
  EXPECT_EQ(kIq2XxsGrid[0], 0x0808080808080808ull);
  EXPECT_EQ(kIq2XxsGrid[1], 0x080808080808082bull);
  EXPECT_EQ(kIq2XxsGrid[2], 0x0808080808081919ull);
  EXPECT_EQ(kIq2XxsGrid[3], 0x0808080808082b08ull);
  EXPECT_EQ(kIq2XxsGrid[5], 0x0808080808190819ull);
  EXPECT_EQ(kIq2XxsGrid[60], 0x08082b0808082b08ull);
  EXPECT_EQ(kIq2XxsGrid[128], 0x082b2b0808082b08ull);
  EXPECT_EQ(kIq2XxsGrid[132], 0x1908080808080819ull);
  EXPECT_EQ(kIq2XxsGrid[252], 0x2b2b082b08080808ull);
  EXPECT_EQ(kIq2XxsGrid[253], 0x2b2b190808192b08ull);
  EXPECT_EQ(kIq2XxsGrid[255], 0x2b2b2b1908081908ull);
}

TEST(IqGrids, Iq2xsMatchesGgml) {
  EXPECT_EQ(kIq2XsGrid[0], 0x0808080808080808ull);
  EXPECT_EQ(kIq2XsGrid[7], 0x080808080819192bull);
  EXPECT_EQ(kIq2XsGrid[8], 0x0808080808192b19ull);
  EXPECT_EQ(kIq2XsGrid[15], 0x080808081908192bull);
  EXPECT_EQ(kIq2XsGrid[508], 0x2b2b2b2b082b2b08ull);
  EXPECT_EQ(kIq2XsGrid[510], 0x2b2b2b2b2b190819ull);
  EXPECT_EQ(kIq2XsGrid[511], 0x2b2b2b2b2b2b2b2bull);
}

TEST(IqGrids, Iq2sMatchesGgml) {
  EXPECT_EQ(kIq2SGrid[0], 0x0808080808080808ull);
  EXPECT_EQ(kIq2SGrid[23], 0x08080808192b192bull);
  EXPECT_EQ(kIq2SGrid[32], 0x080808082b2b1919ull);
  EXPECT_EQ(kIq2SGrid[33], 0x080808082b2b2b2bull);
  EXPECT_EQ(kIq2SGrid[1020], 0x2b2b2b2b082b082bull);
  EXPECT_EQ(kIq2SGrid[1022], 0x2b2b2b2b2b082b08ull);
  EXPECT_EQ(kIq2SGrid[1023], 0x2b2b2b2b2b2b2b2bull);
}

TEST(IqGrids, Iq3xxsMatchesGgml) {
  EXPECT_EQ(kIq3XxsGrid[0], 0x04040404u);
  EXPECT_EQ(kIq3XxsGrid[1], 0x04040414u);
  EXPECT_EQ(kIq3XxsGrid[5], 0x04040c3eu);  // level 7 is 0x3e (62), not 60
  EXPECT_EQ(kIq3XxsGrid[10], 0x04043e1cu);
  EXPECT_EQ(kIq3XxsGrid[16], 0x040c140cu);
  EXPECT_EQ(kIq3XxsGrid[248], 0x3e1c1c1cu);
  EXPECT_EQ(kIq3XxsGrid[255], 0x3e341c04u);
}

TEST(IqGrids, Iq3sMatchesGgml) {
  EXPECT_EQ(kIq3SGrid[0], 0x01010101u);
  EXPECT_EQ(kIq3SGrid[3], 0x0101010bu);
  EXPECT_EQ(kIq3SGrid[8], 0x01010309u);
  EXPECT_EQ(kIq3SGrid[504], 0x0f090307u);
  EXPECT_EQ(kIq3SGrid[511], 0x0f0f0101u);
}

TEST(IqGrids, Iq1sMatchesGgml) {
  EXPECT_EQ(kIq1SGrid[0], 0xffffffffffffffffull);
  EXPECT_EQ(kIq1SGrid[1], 0xffffffffffffff01ull);
  EXPECT_EQ(kIq1SGrid[4], 0xffffffffffff0101ull);
  EXPECT_EQ(kIq1SGrid[48], 0xffffff01ffffffffull);
  EXPECT_EQ(kIq1SGrid[2044], 0x010101010101ffffull);
  EXPECT_EQ(kIq1SGrid[2046], 0x01010101010101ffull);
  EXPECT_EQ(kIq1SGrid[2047], 0x0101010101010101ull);
}

// Structural facts of the published grids: byte values come from the level
// sets only, and no two entries are equal.
template <typename Grid>
void ExpectLevelsAndUnique(const Grid& grid, std::initializer_list<uint8_t> levels) {
  for (size_t k = 0; k < grid.size(); ++k) {
    for (size_t j = 0; j < sizeof(grid[0]); ++j) {
      const auto byte = static_cast<uint8_t>(grid[k] >> (8 * j));
      EXPECT_NE(std::find(levels.begin(), levels.end(), byte), levels.end()) << "entry " << k << " byte " << j;
    }
  }
  auto sorted = grid;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end()) << "duplicate grid entry";
}

TEST(IqGrids, BytesUseOnlyTheLevelValues) {
  ExpectLevelsAndUnique(kIq2XxsGrid, {0x08, 0x19, 0x2b});
  ExpectLevelsAndUnique(kIq2XsGrid, {0x08, 0x19, 0x2b});
  ExpectLevelsAndUnique(kIq2SGrid, {0x08, 0x19, 0x2b});
  ExpectLevelsAndUnique(kIq1SGrid, {0xff, 0x00, 0x01});
  ExpectLevelsAndUnique(kIq3XxsGrid, {4, 12, 20, 28, 36, 44, 52, 62});
  ExpectLevelsAndUnique(kIq3SGrid, {1, 3, 5, 7, 9, 11, 13, 15});
}

TEST(IqTables, SignsAndValues) {
  // ksigns_iq2xs row 1 and row 8 of ggml-common.h.
  const uint8_t first[16] = {0, 129, 130, 3, 132, 5, 6, 135, 136, 9, 10, 139, 12, 141, 142, 15};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(kKsignsIq2xs[i], first[i]) << i;
  const uint8_t last[16] = {240, 113, 114, 243, 116, 245, 246, 119, 120, 249, 250, 123, 252, 125, 126, 255};
  for (int i = 0; i < 16; ++i) EXPECT_EQ(kKsignsIq2xs[112 + i], last[i]) << i;
  for (int j = 0; j < 8; ++j) EXPECT_EQ(kKmaskIq2xs[j], 1 << j);
  EXPECT_EQ(kValuesIq4nl[0], -127);
  EXPECT_EQ(kValuesIq4nl[7], -10);
  EXPECT_EQ(kValuesIq4nl[8], 1);
  EXPECT_EQ(kValuesIq4nl[15], 113);
  // kvalues_fp4 is E2M1 (0, 0.5, 1, 1.5, 2, 3, 4, 6 and negatives) doubled.
  const float e2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(kValuesFp4[i], static_cast<int8_t>(2 * e2m1[i]));
    EXPECT_EQ(kValuesFp4[8 + i], static_cast<int8_t>(-2 * e2m1[i]));
  }
  EXPECT_EQ(kIq1Delta, 0.125f);
}

}  // namespace
}  // namespace strata
