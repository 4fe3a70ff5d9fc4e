// The GPU weight decoders (runtime/gpu/kernels/quant_decode.h), compiled as
// host C++, against the reference dequantizers (runtime/quant/dequantize.h):
// every type of STRATA_GPU_QUANT_TYPES, random rows of several blocks, every
// sub-block, random and edge-case scales. The decoders are bit-exact for
// every type (quant_decode_impl.h says why), so values compare bit for bit
// (NaN equal to NaN).

#include "runtime/gpu/kernels/quant_decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "runtime/quant/blocks.h"
#include "runtime/quant/dequantize.h"
#include "runtime/quant/fp_convert.h"
#include "runtime/quant/ggml_type.h"
#include "runtime/quant/iq_grids.h"
#include "tests/testing/random_blocks.h"

namespace strata {
namespace {

namespace g = ::strata::gpu;

using SubFn = void (*)(const uint8_t*, int64_t, g::Sub32&);
using FloatFn = void (*)(const uint8_t*, int64_t, float*);

// The int8 range of q per type: what the matrix kernels may rely on.
struct QRange {
  int lo, hi;
};

struct TypeCase {
  int id;
  const char* name;
  int block_elems;
  int block_bytes;
  SubFn sub;
  FloatFn as_float;
};

void PrintTo(const TypeCase& c, std::ostream* os) { *os << c.name; }

// One case per entry of the X-macro list: a type added there gets a case (and
// fails to compile until it has a decoder).
const std::vector<TypeCase>& Cases() {
  static const std::vector<TypeCase> cases = {
#define STRATA_CASE(id, NAME, elems, bytes) {id, #NAME, elems, bytes, &g::DecodeSub32<id>, &g::DecodeFloat32<id>},
      STRATA_GPU_QUANT_TYPES(STRATA_CASE)
#undef STRATA_CASE
  };
  return cases;
}

QRange ExpectedRange(int id) {
  namespace wt = g::wt;
  switch (id) {
    case wt::kQ4_0: return {-8, 7};
    case wt::kQ4_1: return {0, 15};
    case wt::kQ5_0: return {-16, 15};
    case wt::kQ5_1: return {0, 31};
    case wt::kQ8_0: return {-128, 127};
    case wt::kQ2_K: return {0, 3};
    case wt::kQ3_K: return {-4, 3};
    case wt::kQ4_K: return {0, 15};
    case wt::kQ5_K: return {0, 31};
    case wt::kQ6_K: return {-32, 31};
    case wt::kIQ2_XXS:
    case wt::kIQ2_XS:
    case wt::kIQ2_S: return {-43, 43};
    case wt::kIQ3_XXS: return {-62, 62};
    case wt::kIQ1_S:
    case wt::kIQ1_M: return {-9, 9};
    case wt::kIQ4_NL:
    case wt::kIQ4_XS: return {-127, 113};
    case wt::kIQ3_S: return {-15, 15};
    case wt::kTQ1_0: return {-1, 1};
    case wt::kTQ2_0: return {-1, 2};
    case wt::kMXFP4:
    case wt::kNVFP4: return {-12, 12};
    case wt::kQ1_0: return {-1, 1};
    case wt::kQ2_0: return {-1, 2};
    default: return {1, 0};  // no range: fails every check
  }
}

int QAt(const g::Sub32& s, int i) {
  return static_cast<int8_t>(static_cast<uint32_t>(s.q[i / 4]) >> (8 * (i % 4)));
}

bool SameFloat(float a, float b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

std::string Describe(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", static_cast<double>(v), bits);
  return buf;
}

// Decodes every sub-block of a row of n_blocks blocks at `row` and compares
// it with the reference. Returns the number of mismatches (reported up to a
// few). `x` is a random int8 vector of the row's length for the dot check.
int CheckRow(const TypeCase& c, const uint8_t* row, int64_t n_blocks, const std::vector<int8_t>& x,
             const char* what) {
  const int64_t n = n_blocks * c.block_elems;
  std::vector<float> ref(static_cast<size_t>(n));
  DequantizeRowUnchecked(static_cast<GgmlType>(c.id), row, ref.data(), n);
  const QRange range = ExpectedRange(c.id);
  const bool has_offset = g::HasOffset(c.id);
  int failures = 0;
  auto fail = [&](const std::string& msg) {
    if (++failures <= 5) ADD_FAILURE() << c.name << " (" << what << "): " << msg;
  };
  for (int64_t j = 0; j < n / 32; ++j) {
    g::Sub32 sub;
    std::memset(&sub, 0xA5, sizeof sub);  // a field the decoder forgets shows
    c.sub(row, j, sub);
    float as_float[32];
    c.as_float(row, j, as_float);
    if (!has_offset && (!SameFloat(sub.offset[0], 0.0f) || !SameFloat(sub.offset[1], 0.0f)))
      fail("sub-block " + std::to_string(j) + ": nonzero offset for a type without one");
    for (int i = 0; i < 32; ++i) {
      const int q = QAt(sub, i);
      const float want = ref[static_cast<size_t>(32 * j + i)];
      const float product = sub.scale[i / 16] * static_cast<float>(q);
      const float got = has_offset ? product + sub.offset[i / 16] : product;
      const std::string where = "element " + std::to_string(32 * j + i) + " (sub-block " + std::to_string(j) + ")";
      if (q < range.lo || q > range.hi)
        fail(where + ": q = " + std::to_string(q) + " outside [" + std::to_string(range.lo) + ", " +
             std::to_string(range.hi) + "]");
      if (!SameFloat(got, want))
        fail(where + ": scale * q + offset = " + Describe(got) + ", reference " + Describe(want) + " (q " +
             std::to_string(q) + ", scale " + Describe(sub.scale[i / 16]) + ", offset " +
             Describe(sub.offset[i / 16]) + ")");
      if (!SameFloat(as_float[i], want))
        fail(where + ": DecodeFloat32 " + Describe(as_float[i]) + ", reference " + Describe(want));
    }
    // What the matrix kernel computes: per 16, scale * (int8 dot) + offset *
    // (sum of x), against the float dot of the reference values.
    float dot = 0.0f;
    double ref_dot = 0.0, magnitude = 0.0;
    for (int h = 0; h < 2; ++h) {
      int isum = 0, xsum = 0;
      for (int k = 4 * h; k < 4 * h + 4; ++k) {
        int32_t xw;
        std::memcpy(&xw, x.data() + 32 * j + 4 * k, 4);
        isum = g::Dp4a(sub.q[k], xw, isum);
      }
      for (int i = 16 * h; i < 16 * h + 16; ++i) xsum += x[static_cast<size_t>(32 * j + i)];
      dot += sub.scale[h] * static_cast<float>(isum) + sub.offset[h] * static_cast<float>(xsum);
      magnitude += std::fabs(static_cast<double>(sub.scale[h]) * isum) +
                   std::fabs(static_cast<double>(sub.offset[h]) * xsum);
    }
    for (int i = 0; i < 32; ++i) {
      const size_t e = static_cast<size_t>(32 * j + i);
      const double term = static_cast<double>(ref[e]) * x[e];
      ref_dot += term;
      magnitude += std::fabs(term);
    }
    // Four roundings in the kernel's sum, one in each reference value.
    const double bound = 4.0 * static_cast<double>(FLT_EPSILON) * magnitude + 1e-37;
    if (std::isfinite(ref_dot) && std::isfinite(magnitude) && magnitude < 1e37 &&
        !(std::fabs(static_cast<double>(dot) - ref_dot) <= bound))
      fail("sub-block " + std::to_string(j) + ": int8 dot " + Describe(dot) + ", float dot " +
           std::to_string(ref_dot) + " (bound " + std::to_string(bound) + ")");
  }
  return failures;
}

std::vector<int8_t> RandomInt8(std::mt19937_64& rng, int64_t n) {
  std::vector<int8_t> x(static_cast<size_t>(n));
  std::uniform_int_distribution<int> dist(-128, 127);
  for (int8_t& v : x) v = static_cast<int8_t>(dist(rng));
  return x;
}

class GpuQuantDecode : public ::testing::TestWithParam<TypeCase> {};

// Rows of 1..7 blocks from random_blocks.h (valid blocks, realistic scales), at
// every byte alignment.
TEST_P(GpuQuantDecode, RandomRowsMatchReference) {
  const TypeCase& c = GetParam();
  const auto type = static_cast<GgmlType>(c.id);
  ASSERT_EQ(TypeInfo(type).block_elems, static_cast<uint32_t>(c.block_elems)) << c.name;
  ASSERT_EQ(TypeInfo(type).block_bytes, static_cast<uint32_t>(c.block_bytes)) << c.name;
  std::mt19937_64 rng(0x5eed0000u + static_cast<uint64_t>(c.id));
  int failures = 0;
  for (int trial = 0; trial < 200 && failures == 0; ++trial) {
    const int64_t n_blocks = 1 + trial % 7;
    const size_t misalign = static_cast<size_t>(trial % 8);
    std::vector<uint8_t> buf(misalign + static_cast<size_t>(n_blocks * c.block_bytes));
    testing::FillRandomBlocks(type, static_cast<uint64_t>(n_blocks), rng, buf.data() + misalign,
                              trial % 3 == 0 ? 1.0f : 0.02f);
    failures += CheckRow(c, buf.data() + misalign, n_blocks, RandomInt8(rng, n_blocks * c.block_elems), "random row");
  }
}

// Every byte random, scales included: any bit pattern (inf and NaN halves,
// out-of-range ternary codes, every E8M0 / UE4M3 byte) decodes as the
// reference does.
TEST_P(GpuQuantDecode, RandomBytesMatchReference) {
  const TypeCase& c = GetParam();
  std::mt19937_64 rng(0xb17e5000u + static_cast<uint64_t>(c.id));
  int failures = 0;
  for (int trial = 0; trial < 200 && failures == 0; ++trial) {
    const int64_t n_blocks = 1 + trial % 3;
    std::vector<uint8_t> buf(1 + static_cast<size_t>(n_blocks * c.block_bytes));
    for (uint8_t& v : buf) v = static_cast<uint8_t>(rng());
    failures += CheckRow(c, buf.data() + 1, n_blocks, RandomInt8(rng, n_blocks * c.block_elems), "random bytes");
  }
}

// Where each type keeps its scales (blocks.h), to set them to edge values.
struct ScaleFields {
  std::vector<size_t> halves;  // byte offsets of half fields in a block
  bool iq1m_half = false;      // IQ1_M: the half d in the top nibbles of the four u16 scales
  std::vector<size_t> bytes;   // E8M0 / UE4M3 scale bytes
};
ScaleFields Halves(std::vector<size_t> offsets) { return {std::move(offsets), false, {}}; }
ScaleFields ScaleBytes(std::vector<size_t> offsets) { return {{}, false, std::move(offsets)}; }

ScaleFields FieldsOf(int id) {
  namespace wt = g::wt;
  switch (id) {
    case wt::kQ4_0: return Halves({offsetof(BlockQ4_0, d)});
    case wt::kQ4_1: return Halves({offsetof(BlockQ4_1, d), offsetof(BlockQ4_1, m)});
    case wt::kQ5_0: return Halves({offsetof(BlockQ5_0, d)});
    case wt::kQ5_1: return Halves({offsetof(BlockQ5_1, d), offsetof(BlockQ5_1, m)});
    case wt::kQ8_0: return Halves({offsetof(BlockQ8_0, d)});
    case wt::kQ2_K: return Halves({offsetof(BlockQ2_K, d), offsetof(BlockQ2_K, dmin)});
    case wt::kQ3_K: return Halves({offsetof(BlockQ3_K, d)});
    case wt::kQ4_K: return Halves({offsetof(BlockQ4_K, d), offsetof(BlockQ4_K, dmin)});
    case wt::kQ5_K: return Halves({offsetof(BlockQ5_K, d), offsetof(BlockQ5_K, dmin)});
    case wt::kQ6_K: return Halves({offsetof(BlockQ6_K, d)});
    case wt::kIQ2_XXS: return Halves({offsetof(BlockIq2_xxs, d)});
    case wt::kIQ2_XS: return Halves({offsetof(BlockIq2_xs, d)});
    case wt::kIQ3_XXS: return Halves({offsetof(BlockIq3_xxs, d)});
    case wt::kIQ1_S: return Halves({offsetof(BlockIq1_s, d)});
    case wt::kIQ4_NL: return Halves({offsetof(BlockIq4_nl, d)});
    case wt::kIQ3_S: return Halves({offsetof(BlockIq3_s, d)});
    case wt::kIQ2_S: return Halves({offsetof(BlockIq2_s, d)});
    case wt::kIQ4_XS: return Halves({offsetof(BlockIq4_xs, d)});
    case wt::kIQ1_M: return {{}, true, {}};
    case wt::kTQ1_0: return Halves({offsetof(BlockTq1_0, d)});
    case wt::kTQ2_0: return Halves({offsetof(BlockTq2_0, d)});
    case wt::kMXFP4: return ScaleBytes({offsetof(BlockMxfp4, e)});
    case wt::kNVFP4: return ScaleBytes({0, 1, 2, 3});  // BlockNvfp4::d[4]
    case wt::kQ1_0: return Halves({offsetof(BlockQ1_0, d)});
    case wt::kQ2_0: return Halves({offsetof(BlockQ2_0, d)});
    default: return {};
  }
}

void SetHalf(uint8_t* block, const ScaleFields& f, size_t which, uint16_t h) {
  if (f.iq1m_half) {
    for (int w = 0; w < 4; ++w) {
      uint8_t* p = block + offsetof(BlockIq1_m, scales) + 2 * w;
      uint16_t word;
      std::memcpy(&word, p, 2);
      word = static_cast<uint16_t>((word & 0x0FFFu) | (((h >> (4 * w)) & 0xFu) << 12));
      std::memcpy(p, &word, 2);
    }
  } else {
    std::memcpy(block + f.halves[which], &h, 2);
  }
}

// Scales at the edges: zero and -0, subnormal and extreme halves, infinities
// and NaN, every E8M0 byte (0, 1, 254, 255 among them), every UE4M3 byte in
// each NVFP4 group.
TEST_P(GpuQuantDecode, EdgeScalesMatchReference) {
  const TypeCase& c = GetParam();
  const ScaleFields fields = FieldsOf(c.id);
  const size_t n_halves = fields.iq1m_half ? 1 : fields.halves.size();
  ASSERT_TRUE(n_halves > 0 || !fields.bytes.empty()) << c.name << " has no scale fields listed in FieldsOf";
  std::mt19937_64 rng(0xed9e0000u + static_cast<uint64_t>(c.id));
  const uint16_t halves[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00,
                             0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x1234, 0x9234};
  constexpr int64_t kBlocks = 2;
  std::vector<uint8_t> buf(static_cast<size_t>(kBlocks * c.block_bytes));
  int failures = 0;
  for (size_t which = 0; which < n_halves; ++which)
    for (uint16_t h : halves) {
      testing::FillRandomBlocks(static_cast<GgmlType>(c.id), kBlocks, rng, buf.data());
      for (int64_t b = 0; b < kBlocks; ++b) SetHalf(buf.data() + b * c.block_bytes, fields, which, h);
      char what[64];
      std::snprintf(what, sizeof what, "half field %zu = 0x%04x", which, h);
      failures += CheckRow(c, buf.data(), kBlocks, RandomInt8(rng, kBlocks * c.block_elems), what);
    }
  for (size_t field : fields.bytes)
    for (int v = 0; v < 256 && failures == 0; ++v) {
      testing::FillRandomBlocks(static_cast<GgmlType>(c.id), kBlocks, rng, buf.data());
      for (int64_t b = 0; b < kBlocks; ++b)
        buf[static_cast<size_t>(b * c.block_bytes) + field] = static_cast<uint8_t>(v);
      char what[64];
      std::snprintf(what, sizeof what, "scale byte %zu = 0x%02x", field, v);
      failures += CheckRow(c, buf.data(), kBlocks, RandomInt8(rng, kBlocks * c.block_elems), what);
    }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, GpuQuantDecode, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<TypeCase>& p) { return std::string(p.param.name); });

// Every quantized weight type of ggml_type.h is in STRATA_GPU_QUANT_TYPES, so a
// type added there without a GPU decoder fails here.
TEST(GpuQuantDecodeCoverage, EveryQuantizedWeightTypeHasADecoder) {
  for (const GgmlTypeInfo& info : AllGgmlTypes()) {
    const int id = static_cast<int>(info.type);
    if (!info.weight || !g::IsQuantized(id)) continue;
    bool found = false;
    for (const TypeCase& c : Cases()) found = found || c.id == id;
    EXPECT_TRUE(found) << info.name << " has a reference dequantizer but no entry in STRATA_GPU_QUANT_TYPES";
  }
  EXPECT_EQ(Cases().size(), 25u);
}

TEST(GpuQuantDecodeFloats, LoadFloatAndDecodeFloat32MatchReference) {
  std::mt19937_64 rng(7);
  struct FloatCase {
    int id;
    float (*load)(const uint8_t*, int64_t);
    FloatFn as_float;
    int bytes;
  };
  const FloatCase cases[] = {
#define STRATA_FLOAT_CASE(id, NAME, elems, bytes) {id, &g::LoadFloat<id>, &g::DecodeFloat32<id>, bytes},
      STRATA_GPU_FLOAT_TYPES(STRATA_FLOAT_CASE)
#undef STRATA_FLOAT_CASE
  };
  for (const FloatCase& fc : cases) {
    constexpr int64_t kN = 96;
    std::vector<uint8_t> buf(1 + kN * static_cast<size_t>(fc.bytes));
    for (uint8_t& v : buf) v = static_cast<uint8_t>(rng());
    const uint8_t* row = buf.data() + 1;
    std::vector<float> ref(kN);
    DequantizeRowUnchecked(static_cast<GgmlType>(fc.id), row, ref.data(), kN);
    for (int64_t i = 0; i < kN; ++i) EXPECT_TRUE(SameFloat(fc.load(row, i), ref[i])) << fc.id << " element " << i;
    for (int64_t j = 0; j < kN / 32; ++j) {
      float out[32];
      fc.as_float(row, j, out);
      for (int i = 0; i < 32; ++i)
        EXPECT_TRUE(SameFloat(out[i], ref[32 * j + i])) << fc.id << " element " << 32 * j + i;
    }
  }
}

// The scale conversions written in the decoder header give fp_convert.h's
// results for every input.
TEST(GpuQuantDecodeScales, ConversionsMatchFpConvert) {
  for (int v = 0; v < 256; ++v) {
    const auto byte = static_cast<uint8_t>(v);
    EXPECT_TRUE(SameFloat(g::decode::E8M0HalfToFloat(byte), E8M0ToFp32Half(byte))) << "E8M0 " << v;
    EXPECT_TRUE(SameFloat(g::decode::Ue4m3ToFloat(byte), Ue4m3ToFp32(byte))) << "UE4M3 " << v;
  }
  for (uint32_t h = 0; h < 0x10000; ++h)
    ASSERT_TRUE(SameFloat(g::HalfToFloat(static_cast<uint16_t>(h)), Fp16ToFp32(static_cast<uint16_t>(h)))) << h;
}

// The device side expands grid points from the shared index tables with byte
// arithmetic; every point equals the CPU's expanded grid (iq_grids.h).
TEST(GpuQuantDecodeGrids, ExpandedPointsMatchCpuGrids) {
  namespace d = g::decode;
  auto iq2 = [](uint32_t index) {
    return static_cast<uint64_t>(d::Iq2Levels(d::Spread2(index & 0xFFu))) |
           static_cast<uint64_t>(d::Iq2Levels(d::Spread2(index >> 8))) << 32;
  };
  for (size_t k = 0; k < 256; ++k) EXPECT_EQ(iq2(g::kIq2XxsIndex[k]), kIq2XxsGrid[k]) << "IQ2_XXS " << k;
  for (size_t k = 0; k < 512; ++k) EXPECT_EQ(iq2(g::kIq2XsIndex[k]), kIq2XsGrid[k]) << "IQ2_XS " << k;
  for (size_t k = 0; k < 1024; ++k) EXPECT_EQ(iq2(g::kIq2SIndex[k]), kIq2SGrid[k]) << "IQ2_S " << k;
  for (size_t k = 0; k < 256; ++k)
    EXPECT_EQ(d::Iq3XxsLevels(d::Spread3(g::kIq3XxsIndex[k])), kIq3XxsGrid[k]) << "IQ3_XXS " << k;
  for (size_t k = 0; k < 512; ++k)
    EXPECT_EQ(d::Iq3SLevels(d::Spread3(g::kIq3SIndex[k])), kIq3SGrid[k]) << "IQ3_S " << k;
  // IQ1: 8 * grid + delta, for both deltas.
  for (size_t k = 0; k < 2048; ++k)
    for (int delta : {1, -1}) {
      const uint32_t kBias = delta > 0 ? 0x79797979u : 0x77777777u;
      const uint32_t index = g::kIq1SIndex[k];
      for (int half = 0; half < 2; ++half) {
        const uint32_t got = d::Iq1Values(d::Spread2((index >> (8 * half)) & 0xFFu), kBias);
        for (int e = 0; e < 4; ++e) {
          const int grid = static_cast<int8_t>(static_cast<uint8_t>(kIq1SGrid[k] >> (8 * (4 * half + e))));
          ASSERT_EQ(static_cast<int8_t>(static_cast<uint8_t>(got >> (8 * e))), 8 * grid + delta) << "IQ1_S " << k;
        }
      }
    }
  for (uint32_t i = 0; i < 128; ++i) EXPECT_EQ(g::KsignsIq2xs(i), kKsignsIq2xs[i]) << i;
}

// LoadWordsAligned (the CUDA device's LoadWords) on a padded buffer: the same
// words as Load32 at every alignment, and aligned loads only of the words that
// hold the wanted bytes.
struct RecordedWords {
  static inline uintptr_t lowest = 0, highest = 0;
  static uint32_t Load(uintptr_t a) {
    EXPECT_EQ(a % 4, 0u) << "unaligned load";
    lowest = std::min(lowest, a);
    highest = std::max(highest, a);
    uint32_t v;
    std::memcpy(&v, reinterpret_cast<const void*>(a), 4);
    return v;
  }
};

template <int N>
void CheckAlignedWords(const uint8_t* p) {
  RecordedWords::lowest = UINTPTR_MAX;
  RecordedWords::highest = 0;
  uint32_t got[N];
  g::decode::LoadWordsAligned<RecordedWords>(p, got);
  for (int k = 0; k < N; ++k) ASSERT_EQ(got[k], g::Load32(p + 4 * k)) << "word " << k << " of " << N;
  const auto first = reinterpret_cast<uintptr_t>(p), last = first + 4 * N - 1;
  EXPECT_EQ(RecordedWords::lowest, first & ~uintptr_t{3});
  EXPECT_EQ(RecordedWords::highest, last & ~uintptr_t{3});
}

TEST(GpuQuantDecodeLoads, AlignedWordsMatchLoad32) {
  alignas(4) uint8_t buf[64];
  std::mt19937_64 rng(5);
  for (uint8_t& v : buf) v = static_cast<uint8_t>(rng());
  for (int offset = 4; offset < 8; ++offset) {
    CheckAlignedWords<1>(buf + offset);
    CheckAlignedWords<2>(buf + offset);
    CheckAlignedWords<3>(buf + offset);
    CheckAlignedWords<5>(buf + offset);
    CheckAlignedWords<8>(buf + offset);
  }
}

// The instructions the device forms of Lookup16 use, as documented.
struct CudaBytePerm {  // __byte_perm(x, y, s): lane n = byte (s >> 4n) & 7 of y:x
  static uint32_t Perm(uint32_t x, uint32_t y, uint32_t s) {
    const uint64_t bytes = x | static_cast<uint64_t>(y) << 32;
    uint32_t r = 0;
    for (int n = 0; n < 4; ++n) r |= static_cast<uint32_t>((bytes >> (8 * ((s >> (4 * n)) & 7u))) & 0xFFu) << (8 * n);
    return r;
  }
};
struct AmdPermB32 {  // v_perm_b32(a, b, s): lane n = byte (s >> 8n) & 0xFF of a:b, for selectors 0..7
  static uint32_t Perm(uint32_t a, uint32_t b, uint32_t s) {
    const uint64_t bytes = b | static_cast<uint64_t>(a) << 32;
    uint32_t r = 0;
    for (int n = 0; n < 4; ++n) {
      const uint32_t sel = (s >> (8 * n)) & 0xFFu;
      EXPECT_LT(sel, 8u) << "selector outside 0..7";
      r |= static_cast<uint32_t>((bytes >> (8 * (sel & 7u))) & 0xFFu) << (8 * n);
    }
    return r;
  }
};

// Lookup16 (the host form) and the CUDA and HIP forms, run on emulated
// instructions, against the plain table.
TEST(GpuQuantDecodeTables, Lookup16AllForms) {
  namespace d = g::decode;
  const uint32_t t0 = d::TableWord(kValuesIq4nl, 0), t1 = d::TableWord(kValuesIq4nl, 1),
                 t2 = d::TableWord(kValuesIq4nl, 2), t3 = d::TableWord(kValuesIq4nl, 3);
  std::mt19937_64 rng(11);
  for (int t = 0; t < 20000; ++t) {
    const auto w = static_cast<uint32_t>(rng());
    uint32_t lo[3], hi[3];
    d::Lookup16<kValuesIq4nl>(w, lo[0], hi[0]);
    d::Lookup16ByNibbles<CudaBytePerm>(w, t0, t1, t2, t3, lo[1], hi[1]);
    d::Lookup16ByBytes<AmdPermB32>(w, t0, t1, t2, t3, lo[2], hi[2]);
    for (int form = 0; form < 3; ++form)
      for (int i = 0; i < 4; ++i) {
        ASSERT_EQ(static_cast<int8_t>(lo[form] >> (8 * i)), kValuesIq4nl[(w >> (8 * i)) & 0xF]) << form;
        ASSERT_EQ(static_cast<int8_t>(hi[form] >> (8 * i)), kValuesIq4nl[(w >> (8 * i + 4)) & 0xF]) << form;
      }
  }
}

}  // namespace
}  // namespace strata
