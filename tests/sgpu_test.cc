// The software GPU's execution model (runtime/gpu/software/), with small
// kernels compiled as host C++ for 32-lane warps and 64-lane wavefronts
// (tests/gpu/):
//  * both warp sizes register the test kernels and the backend's;
//  * a block reduction (WarpSum, shared memory, __syncthreads) equals the
//    host's sum over every tail n = 1..1000 and block sizes 32..1024, partial
//    last warps included, on both warp sizes;
//  * shuffles, ballots and coordinates behave as CUDA's (wrapping source
//    lanes, partial warps, 3-D grids and blocks);
//  * a missing WarpSync reads the unwritten neighbour (the 0xff fill, a NaN)
//    in both orders the scheduler alternates, and is right with it;
//  * every refusal of the execution model is a clear kInternal Status, and
//    the device works on; bad launches are refused before they run.
// The device around it (memory, graphs, faults, host threads, speed):
// sgpu_device_test.cc.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "runtime/base/fault_injection.h"
#include "runtime/base/platform.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/kernels/kernel_args.h"
#include "runtime/gpu/software/block_scheduler.h"
#include "runtime/gpu/software/fiber.h"
#include "runtime/gpu/software/kernel_registry.h"
#include "runtime/gpu/software/sgpu.h"
#include "runtime/gpu/software/sgpu_memory.h"
#include "tests/gpu/sgpu_test_args.h"
#include "tests/gpu/sgpu_test_util.h"
#include "tests/testing/test_matrix.h"

namespace strata::gpu {
namespace {

using ::testing::HasSubstr;
using namespace sgpu_testing;  // NOLINT(google-build-using-namespace): Open, Buffer, LaunchNamed

// ---------------------------------------------------------------------------
// Kernels and results
// ---------------------------------------------------------------------------

TEST(SoftwareGpuKernels, BothWarpSizesAreRegisteredWithTheBackendsKernels) {
  for (uint32_t warp : {32u, 64u}) {
    const std::vector<std::string> names = sgpu::RegisteredKernelNames(warp);
    EXPECT_THAT(names, ::testing::Contains("strata_fill_f32")) << warp;
    EXPECT_THAT(names, ::testing::Contains("sgpu_test_block_sum")) << warp;
    const sgpu::RegisteredKernel* k = sgpu::FindRegisteredKernel("sgpu_test_block_sum", warp);
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->warp_size, warp);
    EXPECT_EQ(k->args_bytes, sizeof(BlockSumArgs));
    EXPECT_EQ(k->registrations, 1);
  }
  EXPECT_EQ(sgpu::FindRegisteredKernel("sgpu_test_block_sum", 16), nullptr);
  // The backend's own fill kernel runs on both.
  for (uint32_t warp : {32u, 64u}) {
    auto d = Open(warp);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->info().name, warp == 32 ? "software GPU (warp 32)" : "software GPU (warp 64)");
    EXPECT_EQ(d->info().warp_size, warp);
    Buffer<float> y(*d, 300);
    const FillArgs a{y.ptr(), 290, 2.5f};
    ASSERT_OK(LaunchNamed(*d, "strata_fill_f32", {3}, {128}, a));
    const std::vector<float> out = y.Download();
    for (size_t i = 0; i < out.size(); ++i) {
      if (i < 290) EXPECT_EQ(out[i], 2.5f) << i;
      else {
        uint32_t bits;
        std::memcpy(&bits, &out[i], 4);
        EXPECT_EQ(bits, 0xcdcdcdcdu) << i << ": a new allocation holds 0xcd bytes";
      }
    }
  }
}

TEST(SoftwareGpuKernels, BlockSumEqualsTheHostSumOverEveryTail) {
  const std::vector<float> x = SmallIntegers(1000);
  for (uint32_t warp : {32u, 64u}) {
    auto d = Open(warp);
    ASSERT_TRUE(d);
    Buffer<float> xd(*d, x.size());
    xd.Upload(x);
    Buffer<float> partial(*d, 3);
    // Partial last warps (33, 48, 100, 255, 1000, 1023), full ones, and the
    // largest block. A 64-lane device needs a full warp 0 for this kernel.
    std::vector<uint32_t> sizes = {32, 33, 48, 64, 100, 128, 255, 256, 512, 1000, 1023, 1024};
    std::erase_if(sizes, [&](uint32_t b) { return b < warp; });
    for (uint32_t block : sizes) {
      // Every n for two block sizes (one in the subset builds: 256); for the
      // others the first 70 tails and a stride through the rest.
      const bool every = block == 256 || (block == 1000 && !strata::testing::kMatrixSubset);
      for (int64_t n = 1; n <= 1000; ++n) {
        if (!every && n > 70 && n % 37 != 0 && n != 999 && n != 1000) continue;
        const BlockSumArgs a{xd.ptr(), partial.ptr(), n};
        ASSERT_OK(LaunchNamed(*d, "sgpu_test_block_sum", {3}, {block}, a));
        const std::vector<float> p = partial.Download();
        float host = 0.0f;
        for (int64_t i = 0; i < n; ++i) host += x[static_cast<size_t>(i)];
        ASSERT_EQ(p[0] + p[1] + p[2], host) << "warp " << warp << " block " << block << " n " << n;
      }
    }
  }
}

TEST(SoftwareGpuKernels, TheUsualWarpSumIsRightOnFullWarpsAndReadsMissingLanesAsNaN) {
  const std::vector<float> x = SmallIntegers(500);
  for (uint32_t warp : {32u, 64u}) {
    auto d = Open(warp);
    ASSERT_TRUE(d);
    Buffer<float> xd(*d, x.size());
    xd.Upload(x);
    Buffer<float> partial(*d, 1);
    float host = 0.0f;
    for (float v : x) host += v;
    for (uint32_t block : {warp, 2 * warp, 1024u}) {
      ASSERT_OK(LaunchNamed(*d, "sgpu_test_warp_sum", {1}, {block}, BlockSumArgs{xd.ptr(), partial.ptr(), 500}));
      EXPECT_EQ(partial.Download()[0], host) << warp << " " << block;
    }
    // A partial last warp: its WarpSum shuffles from lanes that do not exist.
    ASSERT_OK(LaunchNamed(*d, "sgpu_test_warp_sum", {1}, {warp + warp / 2}, BlockSumArgs{xd.ptr(), partial.ptr(), 500}));
    EXPECT_TRUE(std::isnan(partial.Download()[0])) << warp;
  }
}

TEST(SoftwareGpuKernels, ShufflesAndBallotsAreCudasOnFullAndPartialWarps) {
  for (uint32_t warp : {32u, 64u}) {
    auto d = Open(warp);
    ASSERT_TRUE(d);
    const uint32_t n = 2 * warp + warp / 2;  // two full warps and a half
    Buffer<uint64_t> ballot(*d, n);
    Buffer<int> broadcast(*d, n), wrapped(*d, n), butterfly(*d, n), last(*d, n), lanes(*d, n);
    const WarpOpsArgs a{ballot.ptr(), broadcast.ptr(), wrapped.ptr(), butterfly.ptr(), last.ptr(), lanes.ptr()};
    ASSERT_OK(LaunchNamed(*d, "sgpu_test_warp_ops", {1}, {n}, a));
    const auto b = ballot.Download();
    const auto bc = broadcast.Download(), wr = wrapped.Download(), bf = butterfly.Download(), la = last.Download(),
               ln = lanes.Download();
    for (uint32_t t = 0; t < n; ++t) {
      const uint32_t w = t / warp, lane = t % warp, lanes_in_warp = std::min(warp, n - w * warp);
      uint64_t expect_ballot = 0;
      for (uint32_t l = 0; l < lanes_in_warp; ++l)
        if (l % 3 == 0) expect_ballot |= uint64_t{1} << l;
      EXPECT_EQ(b[t], expect_ballot) << warp << " thread " << t;
      EXPECT_EQ(bc[t], 5) << t;
      EXPECT_EQ(wr[t], static_cast<int>(lane) * 7 + 5) << t;
      EXPECT_EQ(bf[t], static_cast<int>(lane ^ 1) * 7 + 5) << t;
      EXPECT_EQ(la[t], lanes_in_warp == warp ? static_cast<int>(warp - 1) * 7 + 5 : -1)
          << t << ": a missing lane reads as 0xffffffff";
      EXPECT_EQ(ln[t], static_cast<int>(lane + 1000 * w)) << t;
    }
  }
}

// portable.h's butterfly reductions are one warp operation on the software
// GPU (sgpu.h): they must give each lane the bits of the loop of xor shuffles
// that devices run, for every lane mask they start from (one that wraps
// too), on full and partial warps (whose missing lanes read 0xffffffff), with
// NaNs, infinities, signed zeros, subnormals and ties among the values.
TEST(SoftwareGpuKernels, FusedWarpReductionsGiveTheShuffleLoopsBits) {
  std::mt19937 rng(11);
  const float specials[] = {std::nanf(""), -std::nanf(""), INFINITY, -INFINITY, 0.0f, -0.0f, 0x1p-140f, -3.5f, 3.5f};
  for (uint32_t warp : {32u, 64u}) {
    auto d = Open(warp);
    ASSERT_TRUE(d);
    for (uint32_t n : {warp, 2 * warp + warp / 2 + 3}) {
      std::vector<float> x(n);
      std::vector<int32_t> ix(n);
      for (uint32_t i = 0; i < n; ++i) {
        const uint32_t pick = rng() % 4;
        x[i] = pick == 0   ? specials[rng() % std::size(specials)]
               : pick == 1 ? static_cast<float>(rng() % 5)  // ties
                           : std::uniform_real_distribution<float>(-100.0f, 100.0f)(rng);
        ix[i] = static_cast<int32_t>(rng() % 2000001) - 1000000;
      }
      Buffer<float> xd(*d, n);
      Buffer<int32_t> ixd(*d, n);
      xd.Upload(x);
      ixd.Upload(ix);
      Buffer<uint32_t> loop(*d, 7 * n), fused(*d, 7 * n);
      for (int from : {1, 2, 8, 16, static_cast<int>(warp / 2), static_cast<int>(warp)}) {
        ASSERT_OK(LaunchNamed(*d, "sgpu_test_reductions", {1}, {n},
                              ReductionArgs{xd.ptr(), ixd.ptr(), from, loop.ptr(), fused.ptr()}));
        const auto l = loop.Download(), f = fused.Download();
        for (uint32_t i = 0; i < 7 * n; ++i) {
          // Which NaN an addition of two NaNs gives is the compiler's choice
          // of operand order (x86 keeps the first operand's; GPUs give one
          // canonical NaN): any NaN stands for any.
          const bool is_float = i % 7 == 0 || i % 7 == 2 || i % 7 == 3 || i % 7 == 5;
          const auto nan = [](uint32_t b) { return (b & 0x7fffffffu) > 0x7f800000u; };
          if (is_float && nan(l[i]) && nan(f[i])) continue;
          ASSERT_EQ(l[i], f[i]) << "warp " << warp << ", " << n << " threads, from " << from << ": thread " << i / 7
                                << ", result " << i % 7;
        }
      }
    }
  }
}

TEST(SoftwareGpuKernels, CoordinatesOfThreeDimensionalGridsAndBlocks) {
  auto d = Open();
  ASSERT_TRUE(d);
  const Dim3 grid{3, 2, 2}, block{4, 3, 2};
  const uint32_t threads = 24, blocks = 12;
  Buffer<uint32_t> out(*d, 2 * threads * blocks);
  ASSERT_OK(LaunchNamed(*d, "sgpu_test_coords", grid, block, CoordsArgs{out.ptr()}));
  const auto o = out.Download();
  for (uint32_t b = 0; b < blocks; ++b)
    for (uint32_t t = 0; t < threads; ++t) {
      const uint32_t* w = &o[2 * (b * threads + t)];
      EXPECT_EQ(w[0], (t % 4) | (t / 4 % 3) << 10 | (t / 12) << 20) << b << " " << t;
      EXPECT_EQ(w[1], (b % 3) | (b / 3 % 2) << 10 | (b / 6) << 20) << b << " " << t;
    }
}

TEST(SoftwareGpuKernels, DynamicSharedMemoryStartsAs0xffAndNeedsOptInAbove48KiB) {
  auto d = Open();
  ASSERT_TRUE(d);
  const int n = 16384;  // 64 KiB
  Buffer<float> before(*d, n), after(*d, n);
  const DynamicSharedArgs a{before.ptr(), after.ptr(), n};
  Status s = LaunchNamed(*d, "sgpu_test_dynamic_shared", {1}, {256}, a, n * 4);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("SetMaxDynamicShared raises it"));
  auto k = d->FindKernel("sgpu_test_dynamic_shared");
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(d->SetMaxDynamicShared(*k, d->info().shared_per_block_optin + 1).code(), StatusCode::kInvalidArgument);
  ASSERT_OK(d->SetMaxDynamicShared(*k, n * 4));
  ASSERT_OK(d->Launch(*k, {1}, {256}, n * 4, nullptr, &a, sizeof a));
  const auto b = before.Download(), f = after.Download();
  for (int i = 0; i < n; ++i) {
    EXPECT_TRUE(IsNanBits(b[static_cast<size_t>(i)])) << i;
    EXPECT_EQ(f[static_cast<size_t>(i)], static_cast<float>(n - 1 - i) * 0.5f) << i;
  }
}

TEST(SoftwareGpuKernels, HalfConversionsRoundToNearestEven) {
  EXPECT_EQ(sgpu::FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(sgpu::FloatToHalf(1.0f + 0x1p-11f), 0x3c00);         // a tie: to the even neighbour
  EXPECT_EQ(sgpu::FloatToHalf(1.0f + 3 * 0x1p-11f), 0x3c02);     // a tie: to the even neighbour, up
  EXPECT_EQ(sgpu::FloatToHalf(65520.0f), 0x7c00);                // rounds up to inf
  EXPECT_EQ(sgpu::HalfToFloat(0x3555), 0x1.554p-2f);
  EXPECT_EQ(sgpu::HalfToFloat(0x0001), 0x1p-24f);                // the smallest subnormal
}

// ---------------------------------------------------------------------------
// The order of lanes
// ---------------------------------------------------------------------------

TEST(SoftwareGpuOrder, AMissingWarpSyncReadsTheUnwrittenNeighbourInBothOrders) {
  for (uint32_t warp : {32u, 64u}) {
    auto d = Open(warp);
    ASSERT_TRUE(d);
    Buffer<float> out(*d, 2 * warp);
    // Block 0 runs lane 0 first: even lanes read lane + 1 before it wrote.
    // Block 1 runs the last lane first: odd lanes read lane - 1 before it wrote.
    ASSERT_OK(LaunchNamed(*d, "sgpu_test_neighbor", {2}, {warp}, NeighborArgs{out.ptr(), 0}));
    auto o = out.Download();
    for (uint32_t b = 0; b < 2; ++b)
      for (uint32_t lane = 0; lane < warp; ++lane) {
        const float v = o[b * warp + lane];
        if (lane % 2 == b) EXPECT_TRUE(IsNanBits(v)) << "warp " << warp << " block " << b << " lane " << lane << ": " << v;
        else EXPECT_EQ(v, static_cast<float>((lane ^ 1) + 1)) << "block " << b << " lane " << lane;
      }
    ASSERT_OK(LaunchNamed(*d, "sgpu_test_neighbor", {2}, {warp}, NeighborArgs{out.ptr(), 1}));
    o = out.Download();
    for (uint32_t t = 0; t < 2 * warp; ++t) EXPECT_EQ(o[t], static_cast<float>(((t % warp) ^ 1) + 1)) << t;
  }
}

// ---------------------------------------------------------------------------
// Refusals
// ---------------------------------------------------------------------------

struct Refusal {
  const char* kernel;
  uint32_t block;
  std::vector<std::string> says;
};

// "sgpu_test_kernels.cc:N", N the line marked "place: <mark>" there: the
// messages name the kernel's own line, not one inside portable.h or sgpu.h.
std::string KernelPlace(const std::string& mark) {
  const std::string path = std::string(STRATA_SOURCE_DIR) + "/tests/gpu/sgpu_test_kernels.cc";
  std::ifstream f(path);
  EXPECT_TRUE(f) << path;
  std::string line;
  for (int n = 1; std::getline(f, line); ++n)
    if (line.find("// place: " + mark) != std::string::npos) return "sgpu_test_kernels.cc:" + std::to_string(n);
  ADD_FAILURE() << "no line marked 'place: " << mark << "' in " << path;
  return "?";
}

TEST(SoftwareGpuRefusals, EachIsAClearStatusAndTheDeviceWorksOn) {
  const std::vector<Refusal> refusals = {
      {"sgpu_test_exit_before_barrier", 64,
       {"kernel 'sgpu_test_exit_before_barrier' block (0,0,0)", "__syncthreads must be reached by every thread",
        "threads 17-63 reached __syncthreads at " + KernelPlace("after exit") + " while threads 0-16 exited"}},
      {"sgpu_test_two_barriers", 32,
       {"kernel 'sgpu_test_two_barriers' block (0,0,0)", "threads 0,2,4,6,",
        "30 reached __syncthreads at " + KernelPlace("even") + " while threads 1,3,5,",
        "31 reached __syncthreads at " + KernelPlace("odd")}},
      {"sgpu_test_shuffle_after_exit", 64,
       {"kernel 'sgpu_test_shuffle_after_exit' block (0,0,0) warp 0: a warp operation needs every lane",
        "threads 0-4,6-31 reached WarpShflXor at " + KernelPlace("shuffle") + " while thread 5 exited"}},
      {"sgpu_test_warp_op_and_barrier", 32,
       {"warp 0: a warp operation needs every lane", "threads 0-15 reached WarpSync at " + KernelPlace("half warp"),
        "threads 16-31 reached __syncthreads at " + KernelPlace("other half")}},
      {"sgpu_test_mismatched_shared", 32,
       {"shared memory declared differently by two threads: thread 3 declares its shared array #0 as 256 bytes at " +
            KernelPlace("mismatched"),
        "thread 0 declared it as 128 bytes"}},
      {"sgpu_test_too_much_shared", 32,
       {"too much shared memory: thread 0 declares 48400 bytes at " + KernelPlace("too much"),
        "49424 bytes of static and 0 of dynamic shared memory, over the 49152 bytes a block may use"}},
  };
  for (uint32_t warp : {32u, 64u}) {
    auto d = Open(warp);
    ASSERT_TRUE(d);
    Buffer<float> out(*d, 1024);
    const std::vector<float> x = SmallIntegers(300);
    Buffer<float> xd(*d, x.size());
    xd.Upload(x);
    Buffer<float> partial(*d, 1);
    float host = 0.0f;
    for (float v : x) host += v;
    for (const Refusal& r : refusals) {
      if (warp == 64 && std::string(r.kernel) == "sgpu_test_shuffle_after_exit") continue;  // its lanes are 32-wide
      if (warp == 64 && std::string(r.kernel) == "sgpu_test_warp_op_and_barrier") continue;
      const Status s = LaunchNamed(*d, r.kernel, {2}, {r.block}, RefusalArgs{out.ptr()});
      EXPECT_EQ(s.code(), StatusCode::kInternal) << r.kernel << ": " << s.ToString();
      if (warp == 32) std::printf("  %s\n", s.message().c_str());
      for (const std::string& part : r.says) EXPECT_THAT(s.message(), HasSubstr(part)) << r.kernel;
      EXPECT_TRUE(d->poisoned().ok()) << r.kernel;
      // The device works on: a good kernel right after.
      ASSERT_OK(LaunchNamed(*d, "sgpu_test_block_sum", {1}, {256}, BlockSumArgs{xd.ptr(), partial.ptr(), 300}));
      EXPECT_EQ(partial.Download()[0], host) << "after " << r.kernel;
    }
    // On 64-lane wavefronts the lanes of one warp are threads 0-63.
    if (warp == 64) {
      Status s = LaunchNamed(*d, "sgpu_test_shuffle_after_exit", {1}, {64}, RefusalArgs{out.ptr()});
      EXPECT_THAT(s.message(), HasSubstr("threads 0-4,6-63 reached WarpShflXor")) << s.ToString();
      s = LaunchNamed(*d, "sgpu_test_warp_op_and_barrier", {1}, {64}, RefusalArgs{out.ptr()});
      EXPECT_THAT(s.message(), HasSubstr("threads 0-31 reached WarpSync")) << s.ToString();
      EXPECT_THAT(s.message(), HasSubstr("threads 32-63 reached __syncthreads")) << s.ToString();
    }
  }
}

TEST(SoftwareGpuRefusals, BadLaunchesAreRefusedBeforeTheyRun) {
  auto d = Open();
  ASSERT_TRUE(d);
  Buffer<float> partial(*d, 1);
  const BlockSumArgs a{partial.ptr(), partial.ptr(), 0};
  auto k = d->FindKernel("sgpu_test_block_sum");
  ASSERT_TRUE(k.ok());

  Status s = d->Launch(*k, {1}, {32}, 0, nullptr, &a, sizeof a - 1);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("the argument struct is 23 bytes, the kernel takes 24"));

  auto unknown = d->FindKernel("sgpu_test_no_such_kernel");
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("no kernel 'sgpu_test_no_such_kernel' for warp size 32"));

  s = d->Launch(*k, {1}, {1025}, 0, nullptr, &a, sizeof a);
  EXPECT_THAT(s.message(), HasSubstr("1025 threads in a block, at most 1024"));
  s = d->Launch(*k, {1}, {32, 32, 2}, 0, nullptr, &a, sizeof a);
  EXPECT_THAT(s.message(), HasSubstr("2048 threads in a block"));
  s = d->Launch(*k, {0}, {32}, 0, nullptr, &a, sizeof a);
  EXPECT_THAT(s.message(), HasSubstr("every dimension must be at least 1"));
  s = d->Launch(*k, {1, 65536}, {32}, 0, nullptr, &a, sizeof a);
  EXPECT_THAT(s.message(), HasSubstr("a grid is at most"));
  s = d->Launch(*k, {1}, {32}, 48u << 10 | 4, nullptr, &a, sizeof a);
  EXPECT_THAT(s.message(), HasSubstr("dynamic shared memory"));

  // A kernel handle of another device.
  auto other = Open();
  ASSERT_TRUE(other);
  s = other->Launch(*k, {1}, {32}, 0, nullptr, &a, sizeof a);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("did not come from this device's FindKernel"));

  SoftwareGpuOptions bad;
  bad.warp_size = 16;
  EXPECT_EQ(OpenSoftwareGpu(bad).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(d->poisoned().ok());
}

}  // namespace
}  // namespace strata::gpu
