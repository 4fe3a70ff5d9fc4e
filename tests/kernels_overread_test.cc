// No kernel reads outside what it is given, beyond the 64 zero bytes a pack
// puts after every tensor blob: weight matrices are placed so that they end
// exactly 64 bytes before an inaccessible guard page (or start right after
// one), activation rows so that they end right at a guard page (no padding at
// all), and every kernel at every ISA level, the scalar reference and
// FastBackend::MatMul run on them. An out-of-bounds read is a SIGSEGV.


#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "runtime/kernels/gemm.h"
#include "runtime/kernels/vec_dot.h"
#include "runtime/model/fast_backend.h"
#include "tests/testing/kernel_check.h"
#include "runtime/base/platform.h"

namespace strata {
namespace {

// A read-write region with an inaccessible page on each side.
class GuardedRegion {
 public:
  explicit GuardedRegion(size_t bytes) {
    page_ = static_cast<size_t>(PageBytes());
    size_ = (bytes + page_ - 1) / page_ * page_;
    auto m = GuardedMemory::Allocate(size_ + 2 * page_, "overread guard region");
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (m.ok()) memory_ = std::move(*m);
    base_ = memory_.data();
    EXPECT_TRUE(memory_.SetAccess(GuardedMemory::Access::kNone, 0, page_).ok());
    EXPECT_TRUE(memory_.SetAccess(GuardedMemory::Access::kNone, page_ + size_, page_).ok());
  }
  GuardedRegion(const GuardedRegion&) = delete;
  GuardedRegion& operator=(const GuardedRegion&) = delete;

  uint8_t* begin() { return base_ + page_; }
  uint8_t* end() { return base_ + page_ + size_; }

 private:
  GuardedMemory memory_;
  uint8_t* base_ = nullptr;
  size_t page_ = 0, size_ = 0;
};

// `bytes` copied so that they end `padding` bytes before the trailing guard
// page (the padding zeroed), or start right after the leading one.
const uint8_t* PlaceAtEnd(GuardedRegion& region, const std::vector<uint8_t>& bytes, size_t padding) {
  uint8_t* dst = region.end() - padding - bytes.size();
  std::memcpy(dst, bytes.data(), bytes.size());
  std::memset(region.end() - padding, 0, padding);
  return dst;
}
const uint8_t* PlaceAtStart(GuardedRegion& region, const std::vector<uint8_t>& bytes) {
  std::memcpy(region.begin(), bytes.data(), bytes.size());
  return region.begin();
}

constexpr size_t kPackPadding = 64;

void RunKernel(GemmFn fn, GgmlType type, const uint8_t* w, uint64_t w_row, int64_t rows, const uint8_t* act,
               uint64_t a_row, int64_t cols, int64_t k) {
  std::vector<float> y(static_cast<size_t>(rows * cols));
  GemmArgs g{type, w, w_row, rows, act, a_row, cols, k, y.data(), rows};
  fn(g);
}

// The guard pages work: one byte past the padding, or before the start, faults.
TEST(KernelsOverreadDeathTest, GuardPagesFault) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  GuardedRegion region(100);
  const volatile uint8_t* past = region.end();
  const volatile uint8_t* before = region.begin() - 1;
  EXPECT_DEATH((void)*past, "");
  EXPECT_DEATH((void)*before, "");
}

TEST(KernelsOverread, NoReadBeyondRowsAndPadding) {
  for (const GgmlTypeInfo& info : AllGgmlTypes()) {
    if (!HasVecDot(info.type)) continue;
    SCOPED_TRACE(std::string(info.name));
    const int64_t unit = std::max<int64_t>(info.block_elems, 256);
    std::vector<int64_t> ks = {unit, 3 * unit};
    if (info.block_elems == 1) ks.insert(ks.end(), {1, 5, 33});
    if (info.block_elems > 1 && info.block_elems < 256) ks.insert(ks.end(), {info.block_elems, 3 * info.block_elems});
    for (int64_t k : ks) {
      for (int64_t rows : {1, 3, 5, 9}) {
        for (int64_t cols : {1, 2, 5, 9}) {
          // 9 x 9: the AVX-512 panels (Q4_K, Q5_K, Q8_0: a stripe of 8 rows, a row of tile kernel).
          if ((rows == 9) != (cols == 9)) continue;
          std::mt19937_64 rng(static_cast<uint64_t>(k * 100 + rows * 10 + cols));
          const std::vector<uint8_t> w = testing::RandomMatrix(info.type, rows, k, rng);
          const uint64_t w_row = w.size() / static_cast<uint64_t>(rows);
          const std::vector<float> x = testing::RandomActivations(cols, k, rng);
          GuardedRegion w_end(w.size() + kPackPadding), w_start(w.size() + kPackPadding);
          const uint8_t* w_at_end = PlaceAtEnd(w_end, w, kPackPadding);
          const uint8_t* w_at_start = PlaceAtStart(w_start, w);

          // Every SIMD kernel, and the scalar reference.
          struct Candidate {
            GemmFn fn;
            ActFormat act;
            IsaLevel isa;
          };
          std::vector<Candidate> candidates = {{&GemmReference, VecDotFormat(info.type), IsaLevel::kScalar}};
          for (IsaLevel isa : {IsaLevel::kAvx2, IsaLevel::kAvx512}) {
            const GemmKernel* kernel = FindGemmKernel(info.type, isa);
            if (kernel != nullptr && kernel->isa == isa && CpuSupports(isa))
              candidates.push_back({kernel->fn, kernel->act, isa});
          }
          for (const Candidate& cand : candidates) {
            const uint64_t a_row = ActRowBytes(cand.act, k);
            std::vector<uint8_t> act(a_row * static_cast<uint64_t>(cols));
            for (int64_t c = 0; c < cols; ++c)
              QuantizeActivationRow(cand.act, cand.isa, x.data() + c * k, act.data() + c * a_row, k);
            GuardedRegion a_end(act.size()), a_start(act.size());
            const uint8_t* act_at_end = PlaceAtEnd(a_end, act, 0);
            const uint8_t* act_at_start = PlaceAtStart(a_start, act);
            RunKernel(cand.fn, info.type, w_at_end, w_row, rows, act_at_end, a_row, cols, k);
            RunKernel(cand.fn, info.type, w_at_start, w_row, rows, act_at_start, a_row, cols, k);
          }

          // The backend, whose F32 activations are the caller's memory.
          std::vector<uint8_t> x_bytes(x.size() * sizeof(float));
          std::memcpy(x_bytes.data(), x.data(), x_bytes.size());
          GuardedRegion x_end(x_bytes.size());
          const auto* x_at_end = reinterpret_cast<const float*>(PlaceAtEnd(x_end, x_bytes, 0));
          for (IsaLevel isa : kAllIsaLevels) {
            if (!CpuSupports(isa)) continue;
            auto fast = FastBackend::Create({2, isa});
            ASSERT_TRUE(fast.ok());
            WeightMatrix m;
            m.type = info.type;
            m.data = w_at_end;
            m.row_bytes = w_row;
            m.rows = rows;
            m.cols = k;
            std::vector<float> y(static_cast<size_t>(rows * cols));
            (*fast)->MatMul(m, x_at_end, cols, y.data());
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace strata
