#include "runtime/quant/iq_grids.h"

#include <cstddef>
#include <cstdint>

namespace strata {
namespace {

#include "runtime/quant/iq_grid_index.h"  // the index tables, levels and KsignsIq2xs

// Sanity checks that catch a mistyped or dropped entry: each table is strictly
// increasing and every field is a valid level index.
template <size_t N>
constexpr bool IsValidIndexTable(const uint16_t (&t)[N], int bits, int fields, int max_level) {
  for (size_t k = 0; k < N; ++k) {
    if (k > 0 && t[k] <= t[k - 1]) return false;
    for (int i = 0; i < fields; ++i)
      if (((t[k] >> (bits * i)) & ((1 << bits) - 1)) > max_level) return false;
    if ((t[k] >> (bits * fields)) != 0) return false;
  }
  return true;
}
static_assert(IsValidIndexTable(kIq2XxsIndex, 2, 8, 2));
static_assert(IsValidIndexTable(kIq2XsIndex, 2, 8, 2));
static_assert(IsValidIndexTable(kIq2SIndex, 2, 8, 2));
static_assert(IsValidIndexTable(kIq1SIndex, 2, 8, 2));
static_assert(IsValidIndexTable(kIq3XxsIndex, 3, 4, 7));
static_assert(IsValidIndexTable(kIq3SIndex, 3, 4, 7));

// Grid entry k: byte i is the level of field i of index[k].
template <typename Word, size_t N, typename Level, size_t L>
constexpr std::array<Word, N> ExpandGrid(const uint16_t (&index)[N], int bits, const Level (&levels)[L]) {
  constexpr int kFields = sizeof(Word);  // one byte per element
  std::array<Word, N> grid{};
  for (size_t k = 0; k < N; ++k) {
    Word w = 0;
    for (int i = 0; i < kFields; ++i) {
      const int l = (index[k] >> (bits * i)) & ((1 << bits) - 1);
      w |= static_cast<Word>(static_cast<uint8_t>(levels[l])) << (8 * i);
    }
    grid[k] = w;
  }
  return grid;
}

constexpr std::array<uint8_t, 128> MakeKsigns() {
  std::array<uint8_t, 128> s{};
  for (uint32_t i = 0; i < 128; ++i) s[i] = static_cast<uint8_t>(KsignsIq2xs(i));
  return s;
}

}  // namespace

// constinit: computed at compile time, so usable from any static initializer.
constinit const std::array<uint64_t, 256> kIq2XxsGrid = ExpandGrid<uint64_t>(kIq2XxsIndex, 2, kIq2Levels);
constinit const std::array<uint64_t, 512> kIq2XsGrid = ExpandGrid<uint64_t>(kIq2XsIndex, 2, kIq2Levels);
constinit const std::array<uint64_t, 1024> kIq2SGrid = ExpandGrid<uint64_t>(kIq2SIndex, 2, kIq2Levels);
constinit const std::array<uint64_t, 2048> kIq1SGrid = ExpandGrid<uint64_t>(kIq1SIndex, 2, kIq1Levels);
constinit const std::array<uint32_t, 256> kIq3XxsGrid = ExpandGrid<uint32_t>(kIq3XxsIndex, 3, kIq3XxsLevels);
constinit const std::array<uint32_t, 512> kIq3SGrid = ExpandGrid<uint32_t>(kIq3SIndex, 3, kIq3SLevels);
constinit const std::array<uint8_t, 128> kKsignsIq2xs = MakeKsigns();

}  // namespace strata
