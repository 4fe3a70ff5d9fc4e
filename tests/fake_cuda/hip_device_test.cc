// runtime/gpu/hip_device.cc and hip_driver.cc against the fake HIP runtime
// (fake_libamdhip64.cc: the fake CUDA driver behind HIP's names, configured
// by the same FAKE_CUDA_* variables and FAKE_HIP_*): what is HIP's own (the
// version's form, the architecture from hipDeviceProp_t, wavefronts, no
// shared-memory opt-in, the offload bundle) and the paths the CUDA device
// shares (memory, launch arguments, poisoning, graphs).

#include "runtime/gpu/hip_device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "runtime/base/fault_injection.h"
#include "runtime/base/platform.h"
#include "runtime/gpu/images.h"
#include "runtime/gpu/kernels/kernel_args.h"
#include "tests/fake_cuda/fake_reader.h"

namespace strata::gpu {
namespace {

using ::testing::HasSubstr;

// This build's HIP image when it has one, else a one-entry offload bundle.
const ModuleImage& TestImage() {
  if (const ModuleImage* image = HipModuleImage()) return *image;
  static const std::vector<uint8_t> bytes = [] {
    const std::string triple = "hipv4-amdgcn-amd-amdhsa--gfx90a";
    std::vector<uint8_t> b(128, 0);
    std::memcpy(b.data(), "__CLANG_OFFLOAD_BUNDLE__", 24);
    const uint64_t fields[4] = {1, 112, 16, triple.size()};  // count; offset, size, triple length
    std::memcpy(b.data() + 24, fields, sizeof fields);
    std::memcpy(b.data() + 56, triple.data(), triple.size());
    return b;
  }();
  static const ModuleImage image{bytes.data(), bytes.size(), "gfx90a gfx1030", "hipcc (test)"};
  return image;
}

const char* const kFakeVariables[] = {"FAKE_CUDA_DEVICES", "FAKE_CUDA_MEMORY", "FAKE_CUDA_KERNELS", "FAKE_CUDA_PARAMS",
                                      "FAKE_CUDA_FAIL",    "FAKE_HIP_VERSION", "FAKE_HIP_WARP",     "FAKE_HIP_ARCH"};

class HipDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kFakeVariables) SetEnvVar(v, nullptr);
    SetEnvVar("STRATA_HIP_DRIVER", STRATA_FAKE_HIP);
    const Status opened = fake_.Open(STRATA_FAKE_HIP);
    ASSERT_TRUE(opened.ok()) << opened.ToString();
  }
  void TearDown() override {
    for (const char* v : kFakeVariables) SetEnvVar(v, nullptr);
    SetEnvVar("STRATA_HIP_DRIVER", nullptr);
  }
  static void Set(const char* name, const char* value) { SetEnvVar(name, value); }

  std::unique_ptr<Device> OpenOrDie(int ordinal = 0) {
    auto device = OpenHipDeviceWithImage(ordinal, TestImage());
    EXPECT_TRUE(device.ok()) << device.status().ToString();
    return device.ok() ? std::move(device).value() : nullptr;
  }
  static Status OpenError() {
    auto device = OpenHipDeviceWithImage(0, TestImage());
    EXPECT_FALSE(device.ok());
    return device.ok() ? Status::Ok() : device.status();
  }

  FakeReader fake_;
};

TEST_F(HipDeviceTest, OpensAndDescribesTheDevice) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  const DeviceInfo& info = device->info();
  EXPECT_EQ(info.kind, DeviceKind::kHip);
  EXPECT_EQ(info.name, "Fake HIP GPU 0");
  EXPECT_EQ(info.arch, "gfx90a");  // from gcnArchName "gfx90a:sramecc+:xnack-"
  EXPECT_EQ(info.driver, "HIP 5.2.21153");
  EXPECT_EQ(info.compute_capability, 0);
  EXPECT_EQ(info.warp_size, 64u);
  EXPECT_EQ(info.max_threads_per_block, 1024u);
  EXPECT_EQ(info.shared_per_block, 64u << 10);
  EXPECT_EQ(info.shared_per_block_optin, 64u << 10);  // no opt-in attribute: the same
  EXPECT_EQ(info.total_memory, 64ull << 20);
  EXPECT_TRUE(info.graphs);
  EXPECT_TRUE(info.dp4a);
  EXPECT_FALSE(info.int8_mma);
  EXPECT_EQ(fake_.loaded_image_size(), TestImage().size);  // the bundle's own size
  EXPECT_EQ(fake_.last_stream_flags(), 1);                 // its default stream: hipStreamNonBlocking
}

TEST_F(HipDeviceTest, Rdna2) {
  Set("FAKE_HIP_ARCH", "gfx1030");
  Set("FAKE_HIP_WARP", "32");
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  EXPECT_EQ(device->info().arch, "gfx1030");
  EXPECT_EQ(device->info().warp_size, 32u);
  EXPECT_FALSE(device->info().dp4a);
}

TEST_F(HipDeviceTest, HipTooOld) {
  Set("FAKE_HIP_VERSION", "40300000");
  const Status s = OpenError();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("is too old: it is HIP 4.3.0, and this build needs HIP 5.0.0 or later"));
  EXPECT_THAT(s.message(), HasSubstr("(STRATA_HIP_DRIVER)"));
}

TEST_F(HipDeviceTest, NoDevices) {
  Set("FAKE_CUDA_DEVICES", "0");
  const Status s = OpenError();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("no HIP device"));
}

TEST_F(HipDeviceTest, ImageWithoutCodeForTheDevice) {
  Set("FAKE_HIP_ARCH", "gfx1100");
  Set("FAKE_CUDA_FAIL", "cuModuleLoadData:1:nobinary");
  const Status s = OpenError();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("hipModuleLoadData on HIP device 0 (Fake HIP GPU 0): hipErrorNoBinaryForGpu"));
  EXPECT_THAT(s.message(),
              HasSubstr("the device is gfx1100, and this build's HIP image has " + std::string(TestImage().targets)));
  EXPECT_THAT(s.message(), HasSubstr("-DSTRATA_HIP_ARCHS=gfx1100"));
}

TEST_F(HipDeviceTest, CopiesRoundTripAndOutOfMemory) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto a = device->Allocate(300, "a");
  auto b = device->Allocate(300, "b");
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<uint8_t> in(300), out(300);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 3);
  ASSERT_TRUE(device->CopyToDevice(*a, in.data(), 300, nullptr).ok());
  ASSERT_TRUE(device->Fill(*a, 7, 10, nullptr).ok());
  ASSERT_TRUE(device->CopyOnDevice(*b, *a, 300, nullptr).ok());
  ASSERT_TRUE(device->CopyToHost(out.data(), *b, 300, nullptr).ok());
  ASSERT_TRUE(device->Synchronize(nullptr).ok());
  for (size_t i = 0; i < 300; ++i) ASSERT_EQ(out[i], i < 10 ? 7 : in[i]) << i;

  auto big = device->Allocate(65ull << 20, "kv cache");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(big.status().message(), HasSubstr("hipMalloc(65.00 MiB for 'kv cache') on HIP device 0 (Fake HIP GPU 0): "
                                                "hipErrorOutOfMemory: out of memory"));
  auto pinned = device->AllocatePinned(64, "staging");
  ASSERT_TRUE(pinned.ok());
  device->FreePinned(*pinned);
  device->Free(*a);
  device->Free(*b);
  EXPECT_EQ(fake_.live_host_allocations(), 0);
}

TEST_F(HipDeviceTest, LaunchPassesTheArgumentStructBytes) {
  Set("FAKE_CUDA_PARAMS", ("strata_fill_f32:" + std::to_string(sizeof(FillArgs))).c_str());
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto k = device->FindKernel("strata_fill_f32");
  ASSERT_TRUE(k.ok());
  FillArgs args{};
  args.n = 12345;
  args.value = 0.5f;
  // All of the LDS without an opt-in; more is refused before the runtime sees it.
  ASSERT_TRUE(device->Launch(*k, Dim3{2, 3, 1}, Dim3{64, 1, 1}, 64 << 10, nullptr, &args, sizeof args).ok());
  EXPECT_EQ(device->SetMaxDynamicShared(*k, (64 << 10) + 1).code(), StatusCode::kInvalidArgument);
  const auto launches = fake_.Launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_STREQ(launches[0].kernel, "strata_fill_f32");
  EXPECT_EQ(launches[0].grid[1], 3u);
  EXPECT_EQ(launches[0].shared_bytes, 64u << 10);
  FillArgs seen{};
  ASSERT_EQ(launches[0].args_bytes, sizeof seen);
  std::memcpy(&seen, launches[0].args, sizeof seen);
  EXPECT_EQ(seen.n, 12345);
  EXPECT_EQ(seen.value, 0.5f);
}

TEST_F(HipDeviceTest, KernelNotInTheImage) {
  Set("FAKE_CUDA_KERNELS", "strata_fill_f32");
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto k = device->FindKernel("strata_missing");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(k.status().message(), HasSubstr("kernel strata_missing is not in this build's HIP image"));
}

TEST_F(HipDeviceTest, IllegalAddressPoisons) {
  Set("FAKE_CUDA_FAIL", "cuLaunchKernel:1:illegal");
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto k = device->FindKernel("strata_fill_f32");
  ASSERT_TRUE(k.ok());
  FillArgs args{};
  const Status s = device->Launch(*k, Dim3{1, 1, 1}, Dim3{64, 1, 1}, 0, nullptr, &args, sizeof args);
  EXPECT_THAT(s.message(), HasSubstr("hipModuleLaunchKernel(strata_fill_f32) on HIP device 0 (Fake HIP GPU 0): "
                                     "hipErrorIllegalAddress"));
  EXPECT_EQ(device->poisoned().message(), s.message());
  EXPECT_EQ(device->Allocate(16, "after").status().message(), s.message());
  EXPECT_EQ(device->Synchronize(nullptr).message(), s.message());
}

TEST_F(HipDeviceTest, FaultSites) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  ArmFault(FaultSite::kGpuAllocate, 0);
  auto a = device->Allocate(64, "weights");
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("hipMalloc(64 bytes for 'weights') on HIP device 0 (Fake HIP GPU 0): "
                                              "injected fault (gpu-allocate)"));
  auto k = device->FindKernel("strata_fill_f32");
  ASSERT_TRUE(k.ok());
  FillArgs args{};
  ArmFault(FaultSite::kGpuPoison, 0);
  const Status poison = device->Launch(*k, Dim3{1, 1, 1}, Dim3{64, 1, 1}, 0, nullptr, &args, sizeof args);
  EXPECT_THAT(poison.message(), HasSubstr("[injected fault (gpu-poison)] on HIP device 0 (Fake HIP GPU 0): "
                                          "hipErrorIllegalAddress"));
  EXPECT_EQ(device->Allocate(16, "after").status().message(), poison.message());
  DisarmAllFaults();
}

TEST_F(HipDeviceTest, CapturedGraphReplays) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto stream = device->CreateStream();
  auto d = device->Allocate(32, "d");
  ASSERT_TRUE(stream.ok() && d.ok());
  std::vector<uint8_t> out(32, 0);
  ASSERT_TRUE(device->BeginCapture(*stream).ok());
  EXPECT_EQ(fake_.last_capture_mode(), 1);  // hipStreamCaptureModeThreadLocal
  ASSERT_TRUE(device->Fill(*d, 0x33, 32, *stream).ok());
  ASSERT_TRUE(device->CopyToHost(out.data(), *d, 32, *stream).ok());
  auto graph = device->EndCapture(*stream);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  EXPECT_EQ(out[0], 0);
  ASSERT_TRUE(device->LaunchGraph(*graph, *stream).ok());
  ASSERT_TRUE(device->Synchronize(*stream).ok());
  EXPECT_EQ(out[31], 0x33);
  device->DestroyGraph(*graph);
  device->Free(*d);
  device->DestroyStream(*stream);
}

TEST_F(HipDeviceTest, UsedFromAnotherThread) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  Status from_thread;
  std::thread t([&] {
    auto a = device->Allocate(64, "from another thread");
    from_thread = a.ok() ? Status::Ok() : a.status();
    if (a.ok()) device->Free(*a);
  });
  t.join();
  EXPECT_TRUE(from_thread.ok()) << from_thread.ToString();
}

}  // namespace
}  // namespace strata::gpu
