// The GPU matrix kernels (runtime/gpu/kernels/matmul.cu) on the software GPU,
// for every weight type, against the reference: each weight row dequantized
// by the reference dequantizers (runtime/quant/dequantize.h), dotted with the
// activations in double. Shapes with tails: rows not a multiple of a tile or
// of the warps of a block, 1 to 69 columns (matrix-vector and tiled kernels),
// rows of one and of several blocks; the experts' grouped products too, and
// both warp sizes (32, and 64 as a gfx90a wavefront).
//
// Quantized weights multiply int8 activations (kernels/matmul.cu), quantized
// as llama.cpp's CPU backend quantizes them for that weight type (Q8_0, Q8_1
// or Q8_K: kernel_args.h ActQuant). The reference dots the dequantized rows
// with the activations put through the CPU's own quantizer for that format
// (runtime/kernels/activation.h) and dequantized, so what is compared is the
// kernels' arithmetic and their quantizer, not the quantization's error; for
// Q4_1 and Q5_1 the blocks' minimum meets the activations' F16 sum (Q8_1's
// s), as in ggml, and so in the reference. Tolerance, as a normalized error
// (max |gpu - ref| over rms(ref)): 1e-5, float sums in another order and
// fused multiply-adds.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/gpu/device.h"
#include "runtime/gpu/gpu_matmul.h"
#include "runtime/gpu/kernels/weight_types.h"
#include "runtime/kernels/activation.h"
#include "runtime/quant/dequantize.h"
#include "runtime/quant/fp_convert.h"
#include "tests/testing/gpu_test_device.h"
#include "tests/testing/random_blocks.h"

namespace strata::gpu {
namespace {

struct TypeCase {
  GgmlType type;
  const char* name;
};
std::vector<TypeCase> AllTypes() {
  std::vector<TypeCase> v;
#define STRATA_TYPE_CASE(id, NAME, elems, bytes) v.push_back({static_cast<GgmlType>(id), #NAME});
  STRATA_GPU_FLOAT_TYPES(STRATA_TYPE_CASE)
  STRATA_GPU_QUANT_TYPES(STRATA_TYPE_CASE)
#undef STRATA_TYPE_CASE
  return v;
}

class Gpu {
 public:
  explicit Gpu(uint32_t warp) {
    auto d = testing::OpenTestDevice(warp);
    EXPECT_TRUE(d.ok()) << d.status().message();
    device_ = std::move(*d);
    auto k = KernelTable::Load(*device_);
    EXPECT_TRUE(k.ok()) << k.status().message();
    kernels_ = *k;
  }
  ~Gpu() {
    for (DevicePtr p : owned_) device_->Free(p);
  }
  Launcher L() { return {device_.get(), nullptr, &kernels_}; }
  DevicePtr Put(const void* data, uint64_t bytes) {
    auto p = device_->Allocate(std::max<uint64_t>(bytes, 1), "test");
    EXPECT_TRUE(p.ok());
    owned_.push_back(*p);
    if (bytes) {
      EXPECT_TRUE(device_->CopyToDevice(*p, data, bytes, nullptr).ok());
    }
    return *p;
  }
  DevicePtr Alloc(uint64_t bytes) {
    auto p = device_->Allocate(std::max<uint64_t>(bytes, 1), "test");
    EXPECT_TRUE(p.ok());
    owned_.push_back(*p);
    return *p;
  }
  std::vector<float> Get(DevicePtr p, size_t n) {
    std::vector<float> v(n);
    EXPECT_TRUE(device_->CopyToHost(v.data(), p, n * sizeof(float), nullptr).ok());
    EXPECT_TRUE(device_->Synchronize(nullptr).ok());
    return v;
  }

 private:
  std::unique_ptr<Device> device_;
  KernelTable kernels_;
  std::vector<DevicePtr> owned_;
};

// A random matrix of `rows` x `cols` (of `experts` experts) and its rows dequantized.
struct Matrix {
  GgmlType type;
  int64_t rows, cols, experts;
  uint64_t row_bytes;
  std::vector<uint8_t> bytes;
  std::vector<float> deq;  // [experts * rows][cols]
  Matrix(GgmlType t, int64_t r, int64_t c, int64_t e, std::mt19937_64& rng)
      : type(t), rows(r), cols(c), experts(e) {
    const GgmlTypeInfo& info = TypeInfo(t);
    row_bytes = static_cast<uint64_t>(c) / info.block_elems * info.block_bytes;
    bytes.resize(row_bytes * static_cast<uint64_t>(r * e));
    testing::FillRandomBlocks(t, static_cast<uint64_t>(r * e * c) / info.block_elems, rng, bytes.data(), 0.5f);
    deq.resize(static_cast<size_t>(r * e * c));
    for (int64_t i = 0; i < r * e; ++i)
      DequantizeRowUnchecked(t, bytes.data() + static_cast<uint64_t>(i) * row_bytes, &deq[static_cast<size_t>(i * c)], c);
  }
  DeviceMatrix On(Gpu& g) const {
    DeviceMatrix m;
    m.type = type;
    m.data = g.Put(bytes.data(), bytes.size());
    m.row_bytes = row_bytes;
    m.rows = rows;
    m.cols = cols;
    m.expert_stride = row_bytes * static_cast<uint64_t>(rows);
    return m;
  }
};

// The minimum of block b of row r of a Q4_1 or Q5_1 matrix (half d, half m, ...).
double MinOf(GgmlType, const Matrix& w, int64_t r, int64_t b) {
  const uint8_t* block = w.bytes.data() + static_cast<uint64_t>(r) * w.row_bytes +
                         static_cast<uint64_t>(b) * TypeInfo(w.type).block_bytes;
  uint16_t h;
  std::memcpy(&h, block + 2, 2);
  return static_cast<double>(Fp16ToFp32(h));
}

std::vector<float> RandomX(int64_t n, int64_t cols, std::mt19937_64& rng) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n * cols));
  for (float& v : x) v = d(rng);
  return x;
}

double NormalizedError(const std::vector<float>& got, const std::vector<double>& want) {
  double ss = 0, mx = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    ss += want[i] * want[i];
    mx = std::max(mx, std::abs(static_cast<double>(got[i]) - want[i]));
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::infinity();
  }
  return mx / (std::sqrt(ss / static_cast<double>(want.size())) + 1e-30);
}

double Tolerance(GgmlType) { return 1e-5; }

// x (rows of `cols`) as the product kernels read it: for quantized weights,
// through the CPU's quantizer of the weight type's activation format, back
// to floats; `sums` gets Q8_1's s per 32 (the F16 d * sum q).
std::vector<float> AsMultiplied(GgmlType t, const std::vector<float>& x, int64_t cols, std::vector<float>* sums = nullptr) {
  if (!QuantizesActivations(t)) return x;
  const ActFormat f = VecDotFormat(t);
  std::vector<float> out(x.size());
  if (sums) sums->assign(x.size() / 32, 0.0f);
  std::vector<uint8_t> row(ActRowBytes(f, cols));
  for (size_t r = 0; r < x.size() / static_cast<size_t>(cols); ++r) {
    QuantizeActivationRowReference(f, &x[r * static_cast<size_t>(cols)], row.data(), cols);
    float* o = &out[r * static_cast<size_t>(cols)];
    const int64_t block = ActBlockElems(f);
    const uint64_t block_bytes = ActRowBytes(f, block);
    for (int64_t b = 0; b < cols / block; ++b) {
      const uint8_t* p = row.data() + static_cast<uint64_t>(b) * block_bytes;
      float d;
      const int8_t* q;
      if (f == ActFormat::kQ8_K) {
        std::memcpy(&d, p, 4);
        q = reinterpret_cast<const int8_t*>(p + 4);
      } else {  // Q8_0: half d, q; Q8_1: half d, half s, q
        uint16_t h;
        std::memcpy(&h, p, 2);
        d = Fp16ToFp32(h);
        q = reinterpret_cast<const int8_t*>(p + (f == ActFormat::kQ8_1 ? 4 : 2));
        if (f == ActFormat::kQ8_1 && sums) {
          std::memcpy(&h, p + 2, 2);
          (*sums)[r * static_cast<size_t>(cols / 32) + static_cast<size_t>(b)] = Fp16ToFp32(h);
        }
      }
      for (int64_t i = 0; i < block; ++i) o[b * block + i] = d * static_cast<float>(q[i]);
    }
  }
  return out;
}

// The columns every shape is tried with: matrix-vector (1, 3, 8) and tiled
// (9, 64, 69: a full and a partial tile).
constexpr int64_t kColumns[] = {1, 3, 8, 9, 64, 69};

class GpuMatMulTest : public ::testing::TestWithParam<uint32_t> {};

// A real device has one warp size: the other is tried on the software GPU.
// The Windows build runs a smoke subset: 32-lane warps, the 67-row shapes
// and three column counts (the optimized Linux build runs the whole matrix;
// the sanitizer build the whole of it on 32-lane warps, the smoke shapes on
// 64-lane wavefronts).
#define STRATA_WARP_ON_THIS_DEVICE()                                                           \
  if (!testing::OnSoftwareGpu() && GetParam() != 32) GTEST_SKIP() << "a real device runs its own warp size"; \
  if (Smoke() && GetParam() != 32) GTEST_SKIP() << "smoke subset (Windows build): 32-lane warps only"
bool Smoke() { return testing::TestMatrix() == testing::GpuTestMatrix::kSmoke; }

TEST_P(GpuMatMulTest, EveryTypeMatchesTheReferenceDequantizer) {
  STRATA_WARP_ON_THIS_DEVICE();
  Gpu g(GetParam());
  std::mt19937_64 rng(42);
  // The smoke shapes: the Windows build's, and the sanitizer build's on
  // 64-lane wavefronts (its 32-lane warps run every shape; the kernels' code
  // is the same, only the lane count differs).
  const bool few = Smoke() || (testing::TestMatrix() == testing::GpuTestMatrix::kTails && GetParam() == 64);
  for (const TypeCase& tc : AllTypes()) {
    const int64_t block = TypeInfo(tc.type).block_elems;
    // One block per row and several; 256-element blocks give at least 512.
    const int64_t cols_list[] = {std::max<int64_t>(block, 32) * (block >= 256 ? 2 : 1), std::max<int64_t>(block, 32) * 3};
    for (int64_t cols : cols_list)
      for (int64_t rows : {int64_t{5}, int64_t{67}}) {
        if (few && (rows == 5 || cols != cols_list[0])) continue;
        const Matrix w(tc.type, rows, cols, 1, rng);
        const DeviceMatrix dw = w.On(g);
        for (int64_t n : kColumns) {
          if (few && n != 1 && n != 9 && n != 69) continue;
          SCOPED_TRACE(std::string(tc.name) + " rows " + std::to_string(rows) + " cols " + std::to_string(cols) +
                       " n " + std::to_string(n) + " warp " + std::to_string(GetParam()));
          const std::vector<float> x0 = RandomX(n, cols, rng);
          const DevicePtr dx = g.Put(x0.data(), x0.size() * sizeof(float));
          std::vector<float> sums;
          const std::vector<float> x = AsMultiplied(tc.type, x0, cols, &sums);
          const bool with_min = tc.type == GgmlType::kQ4_1 || tc.type == GgmlType::kQ5_1;
          const DevicePtr dy = g.Alloc(static_cast<uint64_t>(n * rows) * sizeof(float));
          const DevicePtr xq = g.Alloc(QuantizedBytes(n, cols) + 1);
          ASSERT_TRUE(MatMul(g.L(), dw, dx, n, dy, xq).ok());
          std::vector<double> want(static_cast<size_t>(n * rows));
          for (int64_t c = 0; c < n; ++c)
            for (int64_t r = 0; r < rows; ++r) {
              double s = 0;
              for (int64_t b = 0; b < cols / 32; ++b) {
                // Q4_1/Q5_1: the block's minimum times the activations' s.
                const double m = with_min ? MinOf(tc.type, w, r, b) : 0.0;
                for (int64_t i = 32 * b; i < 32 * b + 32; ++i)
                  s += (static_cast<double>(w.deq[static_cast<size_t>(r * cols + i)]) - m) *
                       static_cast<double>(x[static_cast<size_t>(c * cols + i)]);
                if (with_min) s += m * static_cast<double>(sums[static_cast<size_t>(c * cols / 32 + b)]);
              }
              want[static_cast<size_t>(c * rows + r)] = s;
            }
          EXPECT_LE(NormalizedError(g.Get(dy, want.size()), want), Tolerance(tc.type));
        }
      }
  }
}

// The experts' products (MoE): each output column is one expert times one
// activation column, by place, matrix-vector per place and tiled over expert
// tiles (several tiles of one expert, an expert with none, a partial tile).
TEST_P(GpuMatMulTest, ExpertProductsMatchTheReference) {
  STRATA_WARP_ON_THIS_DEVICE();
  Gpu g(GetParam());
  std::mt19937_64 rng(7);
  for (GgmlType t : {GgmlType::kQ4_K, GgmlType::kQ8_0, GgmlType::kF16, GgmlType::kIQ2_XXS}) {
    const int64_t experts = 4, rows = 70, cols = 256, n_tokens = 40;
    const Matrix w(t, rows, cols, experts, rng);
    const DeviceMatrix dw = w.On(g);
    const std::vector<float> x0 = RandomX(n_tokens, cols, rng);
    const DevicePtr dx = g.Put(x0.data(), x0.size() * sizeof(float));
    const std::vector<float> x = AsMultiplied(t, x0, cols);
    // Places grouped by expert: expert 0 gets 70 (two tiles), 1 none, 2 gets 3, 3 gets 7.
    std::vector<int32_t> expert, xcol;
    for (auto [e, count] : {std::pair{0, 70}, {2, 3}, {3, 7}})
      for (int i = 0; i < count; ++i) {
        expert.push_back(e);
        xcol.push_back(static_cast<int32_t>(rng() % n_tokens));
      }
    const auto places = static_cast<int64_t>(expert.size());
    std::vector<int32_t> tile_expert = {0, 0, 2, 3}, tile_col0 = {0, 64, 70, 73}, tile_ncols = {64, 6, 3, 7};
    const int32_t n_tiles = 4;
    const DevicePtr xq = g.Alloc(QuantizedBytes(n_tokens, cols) + 1);
    DevicePtr prepared = dx;
    if (QuantizesActivations(t)) {
      ASSERT_TRUE(Quantize(g.L(), dx, 0, n_tokens, cols, xq, ActQuantFor(t)).ok());
      prepared = xq;
    }
    std::vector<double> want(static_cast<size_t>(places * rows));
    for (int64_t p = 0; p < places; ++p)
      for (int64_t r = 0; r < rows; ++r) {
        double s = 0;
        const float* wr = &w.deq[static_cast<size_t>((expert[static_cast<size_t>(p)] * rows + r) * cols)];
        const float* xr = &x[static_cast<size_t>(xcol[static_cast<size_t>(p)] * cols)];
        for (int64_t i = 0; i < cols; ++i) s += static_cast<double>(wr[i]) * static_cast<double>(xr[i]);
        want[static_cast<size_t>(p * rows + r)] = s;
      }
    for (bool per_place : {true, false}) {
      SCOPED_TRACE(std::string(TypeName(t)) + (per_place ? " per place" : " tiled"));
      ExpertPlaces pl;
      pl.n_places = places;
      pl.place_expert = g.Put(expert.data(), expert.size() * 4);
      pl.place_xcol = g.Put(xcol.data(), xcol.size() * 4);
      pl.per_place = per_place;
      pl.tile_expert = g.Put(tile_expert.data(), 16);
      pl.tile_col0 = g.Put(tile_col0.data(), 16);
      pl.tile_ncols = g.Put(tile_ncols.data(), 16);
      pl.n_tiles = g.Put(&n_tiles, 4);
      pl.max_tiles = 4 + static_cast<int32_t>(experts);  // more blocks than tiles: the rest leave
      const DevicePtr dy = g.Alloc(static_cast<uint64_t>(places * rows) * sizeof(float));
      const int64_t stride = QuantizesActivations(t) ? cols / 32 : cols;
      ASSERT_TRUE(ExpertMatMulPrepared(g.L(), dw, prepared, stride, pl, dy).ok());
      EXPECT_LE(NormalizedError(g.Get(dy, want.size()), want), Tolerance(t));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Warps, GpuMatMulTest, ::testing::Values(32u, 64u),
                         [](const ::testing::TestParamInfo<uint32_t>& p) { return "warp" + std::to_string(p.param); });

}  // namespace
}  // namespace strata::gpu
