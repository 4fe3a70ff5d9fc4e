// The software GPU as a gpu::Device (runtime/gpu/software/sgpu_device.h):
//  * memory: a kernel reading past an allocation dies, one writing into its
//    slack is reported at Synchronize and at Free (and poisons the device),
//    capacity is enforced and reported, copies out of range are refused;
//  * graphs replay captured copies and launches with new host input, and
//    refuse an allocation freed since the capture;
//  * each GPU fault site gives its documented error; gpu-poison poisons;
//  * events time launches;
//  * two host threads give the results of one, atomics included, and both
//    run blocks;
//  * the fiber switch cost and a launch of 1024 blocks x 256 threads with 4
//    barriers each, printed.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

#include "runtime/base/fault_injection.h"
#include "runtime/base/platform.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/kernels/kernel_args.h"
#include "runtime/gpu/software/fiber.h"
#include "runtime/gpu/software/sgpu_memory.h"
#include "tests/gpu/sgpu_test_args.h"
#include "tests/gpu/sgpu_test_util.h"

namespace strata::gpu {
namespace {

using ::testing::HasSubstr;
using namespace sgpu_testing;  // NOLINT(google-build-using-namespace): Open, Buffer, LaunchNamed

// ---------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------

TEST(SoftwareGpuMemoryDeathTest, AKernelReadingPastAnAllocationDies) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto d = Open();
  ASSERT_TRUE(d);
  // 1000 floats: 4000 bytes, then 96 bytes of slack holding the canary up
  // to the 256-byte boundary, where the guard page begins.
  Buffer<float> x(*d, 1000, "x");
  Buffer<float> out(*d, 1);
  ASSERT_OK(LaunchNamed(*d, "sgpu_test_read_at", {1}, {1}, ReadAtArgs{x.ptr(), 1000, out.ptr()}));
  uint32_t bits = 0;
  const float got = out.Download()[0];
  std::memcpy(&bits, &got, 4);
  EXPECT_EQ(bits, 0x01010101u * sgpu::kCanaryByte) << "the slack holds the canary";
  EXPECT_DEATH((void)LaunchNamed(*d, "sgpu_test_read_at", {1}, {1}, ReadAtArgs{x.ptr(), 1024, out.ptr()}), "");
  // 4096 bytes fill their page exactly: the leading guard page is right before them.
  ASSERT_EQ(PageBytes() % 4096, 0u);
  if (PageBytes() == 4096) {
    Buffer<float> page(*d, 1024, "page");
    EXPECT_DEATH((void)LaunchNamed(*d, "sgpu_test_read_at", {1}, {1}, ReadAtArgs{page.ptr(), -1, out.ptr()}), "");
  }
}

TEST(SoftwareGpuMemory, AWriteIntoTheSlackIsReportedAtSynchronizeAndPoisons) {
  auto d = Open();
  ASSERT_TRUE(d);
  Buffer<float> victim(*d, 1000, "victim");
  ASSERT_OK(d->Synchronize(nullptr));
  ASSERT_OK(LaunchNamed(*d, "sgpu_test_write_at", {1}, {1}, WriteAtArgs{victim.ptr(), 1003, 1.0f}));
  const Status s = d->Synchronize(nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("a kernel wrote past the end of 'victim' (3.91 KiB at 0x"));
  EXPECT_THAT(s.message(), HasSubstr("byte 12 after the end"));
  EXPECT_THAT(s.message(), HasSubstr("found at Synchronize, after kernel 'sgpu_test_write_at'"));
  EXPECT_EQ(d->poisoned().message(), s.message());
  EXPECT_EQ(d->Allocate(64, "later").status().message(), s.message()) << "every later call fails with it";
}

TEST(SoftwareGpuMemory, AWriteIntoTheSlackIsReportedAtFree) {
  auto d = Open();
  ASSERT_TRUE(d);
  auto p = d->Allocate(100, "small");
  ASSERT_TRUE(p.ok());
  float* f = reinterpret_cast<float*>(static_cast<uintptr_t>(*p));
  ASSERT_OK(LaunchNamed(*d, "sgpu_test_write_at", {1}, {1}, WriteAtArgs{f, 60, 2.0f}));
  d->Free(*p);
  EXPECT_EQ(d->poisoned().code(), StatusCode::kInternal);
  EXPECT_THAT(d->poisoned().message(), HasSubstr("a kernel wrote past the end of 'small' (100 B"));
  EXPECT_THAT(d->poisoned().message(), HasSubstr("found at its Free, after kernel 'sgpu_test_write_at'"));
  // A Free of what is no allocation poisons a device too (Free returns nothing).
  auto e = Open();
  ASSERT_TRUE(e);
  e->Free(0x1000);
  EXPECT_THAT(e->poisoned().message(), HasSubstr("Free of 0x1000, which is not a live allocation"));
}

TEST(SoftwareGpuMemory, CapacityIsEnforcedAndReported) {
  auto d = Open(32, 1, 1ull << 20);
  ASSERT_TRUE(d);
  uint64_t free_bytes = 0, total = 0;
  ASSERT_OK(d->MemoryInfo(&free_bytes, &total));
  EXPECT_EQ(total, 1ull << 20);
  EXPECT_EQ(free_bytes, 1ull << 20);
  auto a = d->Allocate(600 << 10, "first");
  ASSERT_TRUE(a.ok());
  ASSERT_OK(d->MemoryInfo(&free_bytes, &total));
  EXPECT_EQ(free_bytes, (1ull << 20) - (600 << 10));
  auto b = d->Allocate(600 << 10, "second");
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(b.status().message(),
              HasSubstr("cannot allocate 600.00 KiB for 'second': 600.00 KiB of its 1.00 MiB are in use, 424.00 KiB free"));
  EXPECT_EQ(d->Allocate(0, "nothing").status().code(), StatusCode::kInvalidArgument);
  d->Free(*a);
  ASSERT_OK(d->MemoryInfo(&free_bytes, &total));
  EXPECT_EQ(free_bytes, 1ull << 20);
  EXPECT_TRUE(d->poisoned().ok());
}

TEST(SoftwareGpuMemory, CopiesOutOfRangeAreRefused) {
  auto d = Open();
  ASSERT_TRUE(d);
  auto x = d->Allocate(1000, "x");
  auto y = d->Allocate(1000, "y");
  ASSERT_TRUE(x.ok() && y.ok());
  std::vector<uint8_t> host(2000, 7);
  Status s = d->CopyToDevice(*x + 990, host.data(), 16, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("CopyToDevice: device bytes [0x"));
  EXPECT_THAT(s.message(), HasSubstr("run 6 bytes past the end of 'x' (1000 B at 0x"));
  s = d->CopyToHost(host.data(), 0x1000, 4, nullptr);
  EXPECT_THAT(s.message(), HasSubstr("CopyToHost: device bytes [0x1000, +4) are not in any live allocation"));
  s = d->CopyOnDevice(*x, *y + 8, 1000, nullptr);
  EXPECT_THAT(s.message(), HasSubstr("run 8 bytes past the end of 'y'"));
  s = d->Fill(*y, 0, 1001, nullptr);
  EXPECT_THAT(s.message(), HasSubstr("Fill: device bytes"));
  s = d->CopyToDevice(*x, nullptr, 4, nullptr);
  EXPECT_THAT(s.message(), HasSubstr("null host pointer"));
  // In range: done, and exactly.
  ASSERT_OK(d->CopyToDevice(*x, host.data(), 1000, nullptr));
  ASSERT_OK(d->Fill(*y, 9, 500, nullptr));
  ASSERT_OK(d->CopyOnDevice(*y + 500, *x, 500, nullptr));
  std::vector<uint8_t> back(1000);
  ASSERT_OK(d->CopyToHost(back.data(), *y, 1000, nullptr));
  for (size_t i = 0; i < 1000; ++i) EXPECT_EQ(back[i], i < 500 ? 9 : 7) << i;
  d->Free(*x);
  s = d->CopyToDevice(*x, host.data(), 4, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << "a freed allocation";
  d->Free(*y);
  EXPECT_TRUE(d->poisoned().ok());
}

// ---------------------------------------------------------------------------
// Streams, events, graphs
// ---------------------------------------------------------------------------

TEST(SoftwareGpuGraphs, ACapturedSequenceReplaysWithNewHostInput) {
  auto d = Open();
  ASSERT_TRUE(d);
  auto stream = d->CreateStream();
  ASSERT_TRUE(stream.ok());
  const size_t n = 700;
  Buffer<float> x(*d, n), partial(*d, 3), scratch(*d, 3);
  std::vector<float> host_in(n, 0.0f), host_out(3, -1.0f);
  auto done = d->CreateEvent();
  ASSERT_TRUE(done.ok());

  ASSERT_OK(d->BeginCapture(*stream));
  ASSERT_OK(d->Fill(scratch.dev(), 0, 12, *stream));
  ASSERT_OK(d->CopyToDevice(x.dev(), host_in.data(), n * 4, *stream));
  ASSERT_OK(LaunchNamed(*d, "sgpu_test_block_sum", {3}, {128}, BlockSumArgs{x.ptr(), scratch.ptr(), int64_t{n}}, 0,
                        *stream));
  ASSERT_OK(d->CopyOnDevice(partial.dev(), scratch.dev(), 12, *stream));
  ASSERT_OK(d->CopyToHost(host_out.data(), partial.dev(), 12, *stream));
  ASSERT_OK(d->Record(*done, *stream));
  EXPECT_EQ(d->Synchronize(*stream).code(), StatusCode::kFailedPrecondition) << "capturing";
  auto graph = d->EndCapture(*stream);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  EXPECT_EQ(host_out, std::vector<float>(3, -1.0f)) << "nothing ran during the capture";
  EXPECT_EQ(d->ElapsedMs(*done, *done).status().code(), StatusCode::kFailedPrecondition) << "not recorded yet";

  for (int replay = 0; replay < 2; ++replay) {
    // New input in the same host memory: the graph reads it at replay.
    const std::vector<float> input = SmallIntegers(n, replay * 5 + 1);
    std::copy(input.begin(), input.end(), host_in.begin());
    float host = 0.0f;
    for (float v : input) host += v;
    ASSERT_OK(d->LaunchGraph(*graph, *stream));
    ASSERT_OK(d->Synchronize(*stream));
    EXPECT_EQ(host_out[0] + host_out[1] + host_out[2], host) << "replay " << replay;
  }
  auto ms = d->ElapsedMs(*done, *done);
  ASSERT_TRUE(ms.ok()) << "the replay recorded the event";
  EXPECT_EQ(*ms, 0.0f);

  // An allocation the graph uses is freed: its replay is an error, not a crash.
  auto temp = d->Allocate(64, "temp");
  ASSERT_TRUE(temp.ok());
  ASSERT_OK(d->BeginCapture(*stream));
  ASSERT_OK(d->Fill(*temp, 1, 64, *stream));
  auto second = d->EndCapture(*stream);
  ASSERT_TRUE(second.ok());
  d->Free(*temp);
  const Status s = d->LaunchGraph(*second, *stream);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("LaunchGraph: step 1 of 1 (Fill): software GPU: Fill: device bytes"));
  d->DestroyGraph(*second);
  d->DestroyGraph(*graph);
  d->DestroyEvent(*done);
  d->DestroyStream(*stream);
  EXPECT_EQ(d->LaunchGraph(*graph, nullptr).code(), StatusCode::kInvalidArgument) << "destroyed";
  EXPECT_TRUE(d->poisoned().ok());
}

TEST(SoftwareGpuStreams, EventsTimeLaunches) {
  auto d = Open();
  ASSERT_TRUE(d);
  auto start = d->CreateEvent();
  auto end = d->CreateEvent();
  ASSERT_TRUE(start.ok() && end.ok());
  Buffer<float> out(*d, 256 * 8);
  ASSERT_OK(d->Record(*start, nullptr));
  ASSERT_OK(LaunchNamed(*d, "sgpu_test_barriers", {8}, {256}, BarrierArgs{out.ptr(), 50}));
  ASSERT_OK(d->Record(*end, nullptr));
  ASSERT_OK(d->StreamWait(nullptr, *end));
  ASSERT_OK(d->EventSynchronize(*end));
  auto ms = d->ElapsedMs(*start, *end);
  ASSERT_TRUE(ms.ok());
  EXPECT_GT(*ms, 0.0f);
  auto back = d->ElapsedMs(*end, *start);
  ASSERT_TRUE(back.ok());
  EXPECT_LT(*back, 0.0f);
  d->DestroyEvent(*start);
  d->DestroyEvent(*end);
}

// ---------------------------------------------------------------------------
// Fault sites
// ---------------------------------------------------------------------------

TEST(SoftwareGpuFaults, EachInjectedFaultGivesItsDocumentedError) {
  EXPECT_STREQ(FaultSiteName(FaultSite::kGpuAllocate), "GPU allocation");
  EXPECT_STREQ(FaultSiteName(FaultSite::kGpuPoison), "GPU launch (poisoning)");
  auto d = Open();
  ASSERT_TRUE(d);
  Buffer<float> y(*d, 64);
  const FillArgs fill{y.ptr(), 64, 1.0f};

  ArmFault(FaultSite::kGpuAllocate, 1);
  auto a = d->Allocate(64, "first");
  ASSERT_TRUE(a.ok()) << "skip 1: the first call passes";
  auto b = d->Allocate(64, "second");
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(b.status().message(), HasSubstr("cannot allocate 64 B for 'second': injected fault (gpu-allocate)"));
  auto c = d->Allocate(64, "third");
  EXPECT_TRUE(c.ok()) << "a fault fires once";
  d->Free(*a);
  d->Free(*c);

  ArmFault(FaultSite::kGpuLaunch, 0);
  Status s = LaunchNamed(*d, "strata_fill_f32", {1}, {64}, fill);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("Launch of 'strata_fill_f32' (grid (1,1,1), block (64,1,1)): too many resources "
                                     "requested for launch: injected fault (gpu-launch)"));
  EXPECT_TRUE(d->poisoned().ok());
  EXPECT_OK(LaunchNamed(*d, "strata_fill_f32", {1}, {64}, fill));

  ArmFault(FaultSite::kGpuCopy, 0);
  std::vector<float> host(64, 3.0f);
  s = d->CopyToDevice(y.dev(), host.data(), 256, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("CopyToDevice of 256 bytes failed: injected fault (gpu-copy)"));
  EXPECT_TRUE(d->poisoned().ok());
  EXPECT_EQ(y.Download(), std::vector<float>(64, 1.0f)) << "the failed copy wrote nothing";

  ArmFault(FaultSite::kGpuPoison, 0);
  s = LaunchNamed(*d, "strata_fill_f32", {1}, {64}, fill);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("Launch of 'strata_fill_f32': an illegal memory access was encountered: "
                                     "injected fault (gpu-poison)"));
  EXPECT_EQ(d->poisoned().message(), s.message());
  EXPECT_EQ(d->Allocate(64, "after").status().message(), s.message());
  uint64_t free_bytes = 0;
  EXPECT_EQ(d->MemoryInfo(&free_bytes, nullptr).message(), s.message());
  EXPECT_EQ(d->FindKernel("strata_fill_f32").status().message(), s.message());
  EXPECT_EQ(d->CopyToDevice(y.dev(), host.data(), 4, nullptr).message(), s.message());
  EXPECT_EQ(d->Synchronize(nullptr).message(), s.message());
  EXPECT_EQ(d->CreateStream().status().message(), s.message());
  DisarmAllFaults();
}

// ---------------------------------------------------------------------------
// Host threads
// ---------------------------------------------------------------------------

TEST(SoftwareGpuThreads, TwoHostThreadsGiveTheResultsOfOne) {
  const int64_t n = 100000;
  const std::vector<float> x = SmallIntegers(static_cast<size_t>(n));
  float host = 0.0f;
  for (float v : x) host += v;
  std::vector<float> partial_by[3];
  for (int threads : {1, 2}) {
    auto d = Open(32, threads);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->info().multiprocessors, static_cast<uint32_t>(threads));
    Buffer<float> xd(*d, x.size()), partial(*d, 64), total(*d, 1);
    Buffer<int> count(*d, 1);
    xd.Upload(x);
    ASSERT_OK(LaunchNamed(*d, "sgpu_test_block_sum", {64}, {128}, BlockSumArgs{xd.ptr(), partial.ptr(), n}));
    partial_by[threads] = partial.Download();
    ASSERT_OK(d->Fill(total.dev(), 0, 4, nullptr));
    ASSERT_OK(d->Fill(count.dev(), 0, 4, nullptr));
    ASSERT_OK(LaunchNamed(*d, "sgpu_test_atomic_sum", {64}, {128}, AtomicSumArgs{xd.ptr(), total.ptr(), count.ptr(), n}));
    EXPECT_EQ(total.Download()[0], host) << threads;
    EXPECT_EQ(count.Download()[0], n) << threads;
    // Both host threads run blocks (each block long enough for the second to start).
    Buffer<uint64_t> who(*d, 1024);
    ASSERT_OK(LaunchNamed(*d, "sgpu_test_host_thread", {1024}, {64}, HostThreadArgs{who.ptr(), 20}));
    const auto ids = who.Download();
    EXPECT_EQ(std::set<uint64_t>(ids.begin(), ids.end()).size(), static_cast<size_t>(threads));
  }
  EXPECT_EQ(partial_by[1], partial_by[2]);
}

// ---------------------------------------------------------------------------
// Speed (printed, not asserted)
// ---------------------------------------------------------------------------

TEST(SoftwareGpuSpeed, FiberSwitchAndABarrierHeavyLaunch) {
  // One switch is half a Resume + Suspend round trip. The least of 20
  // batches: the build machine is shared, and a batch that lost the CPU
  // says nothing about switching.
  auto fiber = sgpu::Fiber::Create();
  ASSERT_TRUE(fiber.ok());
  struct Loop {
    sgpu::Fiber* fiber;
    int rounds;
  } loop{fiber->get(), 50000};
  sgpu::FiberHostThread host;
  ASSERT_OK(host.ok());
  double switch_ns = 1e9;
  for (int batch = 0; batch < 20; ++batch) {
    ASSERT_OK((*fiber)->Start(
        [](void* p) {
          auto* l = static_cast<Loop*>(p);
          for (int i = 0; i < l->rounds; ++i) l->fiber->Suspend();
        },
        &loop));
    int resumes = 0;
    const auto t0 = std::chrono::steady_clock::now();
    while (!(*fiber)->finished()) {
      (*fiber)->Resume();
      ++resumes;
    }
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_EQ(resumes, loop.rounds + 1);
    switch_ns = std::min(switch_ns, ns / (2.0 * resumes));
  }

  auto d = Open();
  ASSERT_TRUE(d);
  const uint32_t blocks = 1024, threads = 256;
  const int barriers = 4;
  Buffer<float> out(*d, blocks * threads);
  const auto t1 = std::chrono::steady_clock::now();
  ASSERT_OK(LaunchNamed(*d, "sgpu_test_barriers", {blocks}, {threads}, BarrierArgs{out.ptr(), barriers}));
  const double launch_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
  const auto o = out.Download();
  for (uint32_t i = 0; i < blocks * threads; ++i)
    ASSERT_EQ(o[i], static_cast<float>((i % threads + barriers) % threads + barriers)) << i;
  std::printf("  fiber switch: %.1f ns; launch of %u blocks x %u threads with %d barriers: %.1f ms (%.0f ns per thread "
              "per barrier)\n",
              switch_ns, blocks, threads, barriers, launch_ms,
              launch_ms * 1e6 / (static_cast<double>(blocks) * threads * (barriers + 1)));
}

}  // namespace
}  // namespace strata::gpu
