// runtime/gpu/cuda_device.cc and cuda_driver.cc against the fake CUDA driver
// (fake_libcuda.cc, configured through FAKE_CUDA_* variables:
// fake_cuda_control.h): loading and its refusals, the device's information,
// memory, kernels and launch arguments, errors and poisoning, events, streams
// and graphs.

#include "runtime/gpu/cuda_device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
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

// An image the fake accepts: this build's CUDA image when it has one, else a
// fatbin header (magic 0xBA55ED50, version 1, 16-byte header) with 48 bytes
// of body.
const ModuleImage& TestImage() {
  if (const ModuleImage* image = CudaModuleImage()) return *image;
  static const std::vector<uint8_t> bytes = [] {
    std::vector<uint8_t> b(64, 0);
    const uint32_t magic = 0xBA55ED50u;
    const uint16_t version = 1, header = 16;
    const uint64_t body = 48;
    std::memcpy(b.data(), &magic, 4);
    std::memcpy(b.data() + 4, &version, 2);
    std::memcpy(b.data() + 6, &header, 2);
    std::memcpy(b.data() + 8, &body, 8);
    return b;
  }();
  static const ModuleImage image{bytes.data(), bytes.size(), "sm_75 sm_80 sm_90 sm_120 compute_90", "nvcc (test)"};
  return image;
}

const char* const kFakeVariables[] = {"FAKE_CUDA_DEVICES", "FAKE_CUDA_CC",     "FAKE_CUDA_VERSION", "FAKE_CUDA_MEMORY",
                                      "FAKE_CUDA_KERNELS", "FAKE_CUDA_PARAMS", "FAKE_CUDA_HIDE",    "FAKE_CUDA_FAIL"};

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* v : kFakeVariables) SetEnvVar(v, nullptr);
    UseDriver(STRATA_FAKE_CUDA);
    const Status opened = fake_.Open(STRATA_FAKE_CUDA);
    ASSERT_TRUE(opened.ok()) << opened.ToString();
  }
  void TearDown() override {
    for (const char* v : kFakeVariables) SetEnvVar(v, nullptr);
    SetEnvVar("STRATA_CUDA_DRIVER", nullptr);
  }

  static void UseDriver(const char* path) { SetEnvVar("STRATA_CUDA_DRIVER", path); }
  static void Set(const char* name, const char* value) { SetEnvVar(name, value); }

  std::unique_ptr<Device> OpenOrDie(int ordinal = 0) {
    auto device = OpenCudaDeviceWithImage(ordinal, TestImage());
    EXPECT_TRUE(device.ok()) << device.status().ToString();
    return device.ok() ? std::move(device).value() : nullptr;
  }
  static Status OpenError(int ordinal = 0) {
    auto device = OpenCudaDeviceWithImage(ordinal, TestImage());
    EXPECT_FALSE(device.ok());
    return device.ok() ? Status::Ok() : device.status();
  }

  std::vector<FakeCudaLaunch> Launches() const { return fake_.Launches(); }

  FakeReader fake_;
};

// --- opening --------------------------------------------------------------------

TEST_F(CudaDeviceTest, OpensAndDescribesTheDevice) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  const DeviceInfo& info = device->info();
  EXPECT_EQ(info.kind, DeviceKind::kCuda);
  EXPECT_EQ(info.ordinal, 0);
  EXPECT_EQ(info.name, "Fake CUDA GPU 0");
  EXPECT_EQ(info.arch, "sm_90");
  EXPECT_EQ(info.driver, "CUDA driver 13.0");
  EXPECT_EQ(info.compute_capability, 90);
  EXPECT_EQ(info.warp_size, 32u);
  EXPECT_EQ(info.multiprocessors, 132u);
  EXPECT_EQ(info.max_threads_per_block, 1024u);
  EXPECT_EQ(info.shared_per_block, 48u << 10);
  EXPECT_EQ(info.shared_per_block_optin, 227u << 10);
  EXPECT_EQ(info.total_memory, 64ull << 20);
  EXPECT_TRUE(info.graphs);
  EXPECT_TRUE(info.int8_mma);
  EXPECT_TRUE(info.dp4a);
  EXPECT_TRUE(device->poisoned().ok());
  // The primary context is held while the device is open, and the module was
  // loaded from the image's bytes (the fatbin header's size is the image's).
  EXPECT_EQ(fake_.primary_context_retains(), 1);
  EXPECT_EQ(fake_.loaded_image_size(), TestImage().size);
  // Its default stream is its own, non-blocking (CU_STREAM_NON_BLOCKING).
  EXPECT_EQ(fake_.last_stream_flags(), 1);
  device.reset();
  EXPECT_EQ(fake_.primary_context_retains(), 0);
}

TEST_F(CudaDeviceTest, TuringHasNoInt8Mma) {
  Set("FAKE_CUDA_CC", "75");
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  EXPECT_EQ(device->info().arch, "sm_75");
  EXPECT_EQ(device->info().compute_capability, 75);
  EXPECT_FALSE(device->info().int8_mma);
}

TEST_F(CudaDeviceTest, TakesEntryPointsThroughCuGetProcAddressAtOneVersion) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  for (const char* name : {"cuInit", "cuMemAlloc", "cuMemFree", "cuLaunchKernel", "cuStreamBeginCapture",
                           "cuGraphInstantiateWithFlags", "cuDevicePrimaryCtxRelease", "cuEventElapsedTime"}) {
    EXPECT_EQ(fake_.proc_version(name), 12000) << name;
  }
  // The base names only: which _v2 serves them is the driver's choice.
  EXPECT_EQ(fake_.proc_version("cuMemAlloc_v2"), -1);
  EXPECT_EQ(fake_.proc_version("cuGraphInstantiate"), -1);
  // cuDriverGetVersion before the version is known; the optional
  // cuFuncGetParamInfo at the version that introduced it.
  EXPECT_EQ(fake_.proc_version("cuDriverGetVersion"), 11030);
  EXPECT_EQ(fake_.proc_version("cuFuncGetParamInfo"), 12040);
}

TEST_F(CudaDeviceTest, DriverTooOld) {
  Set("FAKE_CUDA_VERSION", "11080");
  const Status s = OpenError();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("too old: it supports CUDA 11.8"));
  EXPECT_THAT(s.message(), HasSubstr("needs CUDA 12.0 or later"));
  EXPECT_THAT(s.message(), HasSubstr("NVIDIA driver"));
}

TEST_F(CudaDeviceTest, DriverWithOnlyTheFirstCuGetProcAddress) {
  UseDriver(STRATA_FAKE_CUDA_LEGACY);
  const Status s = OpenError();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("too old: it supports CUDA 11.8"));
}

TEST_F(CudaDeviceTest, DriverWithoutCuGetProcAddress) {
  UseDriver(STRATA_FAKE_CUDA_ANCIENT);
  const Status s = OpenError();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("has no cuGetProcAddress"));
  EXPECT_THAT(s.message(), HasSubstr(STRATA_FAKE_CUDA_ANCIENT));
  EXPECT_THAT(s.message(), HasSubstr("(STRATA_CUDA_DRIVER)"));
}

TEST_F(CudaDeviceTest, DriverMissingAnEntryPoint) {
  Set("FAKE_CUDA_HIDE", "cuGraphLaunch");
  const Status s = OpenError();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("has no cuGraphLaunch for CUDA 12.0 (the driver does not have it)"));
}

TEST_F(CudaDeviceTest, DriverFileMissing) {
  UseDriver("/nonexistent/libcuda-for-strata.so");  // a folder: no search, that file only
  const Status s = OpenError();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("no CUDA driver: /nonexistent/libcuda-for-strata.so (STRATA_CUDA_DRIVER)"));
  EXPECT_THAT(s.message(), HasSubstr("--backend cpu"));
}

TEST_F(CudaDeviceTest, NoDevices) {
  Set("FAKE_CUDA_DEVICES", "0");
  const Status s = OpenError();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("no CUDA device"));
  EXPECT_THAT(s.message(), HasSubstr("--backend cpu"));
}

TEST_F(CudaDeviceTest, CuInitFails) {
  Set("FAKE_CUDA_FAIL", "cuInit:1:nodevice");
  const Status s = OpenError();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("cuInit failed"));
  EXPECT_THAT(s.message(), HasSubstr("CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"));
  EXPECT_THAT(s.message(), HasSubstr("CUDA_VISIBLE_DEVICES"));
}

TEST_F(CudaDeviceTest, OrdinalOutOfRange) {
  Set("FAKE_CUDA_DEVICES", "2");
  const Status s = OpenError(2);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("CUDA device 2 does not exist: the driver sees 2 (0 to 1)"));
}

TEST_F(CudaDeviceTest, ImageWithoutCodeForTheDevice) {
  Set("FAKE_CUDA_CC", "86");
  Set("FAKE_CUDA_FAIL", "cuModuleLoadData:1:nobinary");
  const Status s = OpenError();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("CUDA_ERROR_NO_BINARY_FOR_GPU"));
  EXPECT_THAT(s.message(), HasSubstr("the device is sm_86 (compute capability 8.6)"));
  EXPECT_THAT(s.message(), HasSubstr(std::string("this build's CUDA image has ") + TestImage().targets));
  EXPECT_THAT(s.message(), HasSubstr("-DSTRATA_CUDA_ARCHS=86"));
  // A failed open gives back what it took.
  EXPECT_EQ(fake_.primary_context_retains(), 0);
}

TEST_F(CudaDeviceTest, ImageNewerThanTheDriver) {
  Set("FAKE_CUDA_FAIL", "cuModuleLoadData:1:ptx");
  const Status s = OpenError();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("CUDA_ERROR_UNSUPPORTED_PTX_VERSION"));
  EXPECT_THAT(s.message(), HasSubstr("update the NVIDIA driver"));
}

// --- memory ---------------------------------------------------------------------

TEST_F(CudaDeviceTest, CopiesAndFillsRoundTrip) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto a = device->Allocate(1000, "a");
  auto b = device->Allocate(1000, "b");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  uint64_t free_bytes = 0, total_bytes = 0;
  ASSERT_TRUE(device->MemoryInfo(&free_bytes, &total_bytes).ok());
  EXPECT_EQ(total_bytes, 64ull << 20);
  EXPECT_EQ(free_bytes, total_bytes - 2000);

  std::vector<uint8_t> in(1000);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(device->CopyToDevice(*a, in.data(), in.size(), nullptr).ok());
  ASSERT_TRUE(device->Fill(*a + 100, 0xAB, 50, nullptr).ok());
  ASSERT_TRUE(device->CopyOnDevice(*b, *a, 1000, nullptr).ok());
  std::vector<uint8_t> out(1000, 0);
  ASSERT_TRUE(device->CopyToHost(out.data(), *b, out.size(), nullptr).ok());
  ASSERT_TRUE(device->Synchronize(nullptr).ok());
  for (size_t i = 0; i < out.size(); ++i) {
    const uint8_t want = i >= 100 && i < 150 ? 0xAB : in[i];
    ASSERT_EQ(out[i], want) << "byte " << i;
  }
  EXPECT_EQ(fake_.live_allocations(), 2);
  device->Free(*a);
  device->Free(*b);
  device->Free(0);  // no-op
  EXPECT_EQ(fake_.live_allocations(), 0);
}

TEST_F(CudaDeviceTest, PinnedHostMemory) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto pinned = device->AllocatePinned(256, "staging");
  ASSERT_TRUE(pinned.ok()) << pinned.status().ToString();
  auto* p = static_cast<uint8_t*>(*pinned);
  for (int i = 0; i < 256; ++i) p[i] = static_cast<uint8_t>(255 - i);
  auto d = device->Allocate(256, "d");
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(device->CopyToDevice(*d, p, 256, nullptr).ok());
  std::vector<uint8_t> back(256);
  ASSERT_TRUE(device->CopyToHost(back.data(), *d, 256, nullptr).ok());
  EXPECT_EQ(std::memcmp(back.data(), p, 256), 0);
  EXPECT_EQ(fake_.live_host_allocations(), 1);
  device->FreePinned(*pinned);
  device->Free(*d);
  EXPECT_EQ(fake_.live_host_allocations(), 0);
}

TEST_F(CudaDeviceTest, OutOfMemorySaysWhatAndHowMuch) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto a = device->Allocate(65ull << 20, "expert weights");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(a.status().message(), HasSubstr("cuMemAlloc(65.00 MiB for 'expert weights') on CUDA device 0 "
                                              "(Fake CUDA GPU 0): CUDA_ERROR_OUT_OF_MEMORY: out of memory"));
  EXPECT_THAT(a.status().message(), HasSubstr("64.00 MiB of 64.00 MiB free"));
  EXPECT_TRUE(device->poisoned().ok());
  EXPECT_TRUE(device->Allocate(1 << 20, "small").ok());
}

TEST_F(CudaDeviceTest, InjectedAllocationFailure) {
  Set("FAKE_CUDA_FAIL", "cuMemAlloc:2");
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto first = device->Allocate(64, "first");
  auto second = device->Allocate(64, "second");
  auto third = device->Allocate(64, "third");
  EXPECT_TRUE(first.ok());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(second.status().message(), HasSubstr("'second'"));
  EXPECT_TRUE(third.ok());
  device->Free(*first);
  device->Free(*third);
}

TEST_F(CudaDeviceTest, ZeroBytesAllocationIsRefused) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto a = device->Allocate(0, "nothing");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(CudaDeviceTest, ErrorThatDoesNotPoison) {
  Set("FAKE_CUDA_FAIL", "cuMemcpyHtoDAsync:1:invalid");
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto d = device->Allocate(16, "d");
  ASSERT_TRUE(d.ok());
  const uint8_t bytes[16] = {};
  const Status s = device->CopyToDevice(*d, bytes, 16, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("cuMemcpyHtoDAsync(16 bytes) on CUDA device 0 (Fake CUDA GPU 0): "
                                     "CUDA_ERROR_INVALID_VALUE: invalid argument"));
  EXPECT_TRUE(device->poisoned().ok());
  EXPECT_TRUE(device->CopyToDevice(*d, bytes, 16, nullptr).ok());
  device->Free(*d);
}

// --- kernels ------------------------------------------------------------------------

TEST_F(CudaDeviceTest, LaunchPassesTheArgumentStructBytes) {
  Set("FAKE_CUDA_PARAMS", ("strata_fill_f32:" + std::to_string(sizeof(FillArgs))).c_str());
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto k = device->FindKernel("strata_fill_f32");
  ASSERT_TRUE(k.ok()) << k.status().ToString();
  auto again = device->FindKernel("strata_fill_f32");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*k, *again);
  EXPECT_EQ(fake_.calls("cuModuleGetFunction"), 1);  // found once, then cached

  auto y = device->Allocate(4000, "y");
  ASSERT_TRUE(y.ok());
  FillArgs args{};
  args.y = reinterpret_cast<float*>(static_cast<uintptr_t>(*y));
  args.n = 1000;
  args.value = 2.5f;
  ASSERT_TRUE(device->Launch(*k, Dim3{4, 1, 1}, Dim3{256, 1, 1}, 128, nullptr, &args, sizeof args).ok());
  args.value = -1.0f;  // the driver took the bytes at the launch

  const auto launches = Launches();
  ASSERT_EQ(launches.size(), 1u);
  const FakeCudaLaunch& l = launches[0];
  EXPECT_STREQ(l.kernel, "strata_fill_f32");
  EXPECT_EQ(l.grid[0], 4u);
  EXPECT_EQ(l.grid[1], 1u);
  EXPECT_EQ(l.block[0], 256u);
  EXPECT_EQ(l.block[2], 1u);
  EXPECT_EQ(l.shared_bytes, 128u);
  EXPECT_NE(l.stream, nullptr);  // the device's own default stream, not CUDA's legacy one
  EXPECT_EQ(l.from_graph, 0);
  ASSERT_EQ(l.args_bytes, sizeof(FillArgs));
  FillArgs seen{};
  std::memcpy(&seen, l.args, sizeof seen);
  EXPECT_EQ(seen.y, reinterpret_cast<float*>(static_cast<uintptr_t>(*y)));
  EXPECT_EQ(seen.n, 1000);
  EXPECT_EQ(seen.value, 2.5f);
  device->Free(*y);
}

TEST_F(CudaDeviceTest, ArgumentStructOfTheWrongSize) {
  Set("FAKE_CUDA_PARAMS", "strata_fill_f32:16");
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto k = device->FindKernel("strata_fill_f32");
  ASSERT_TRUE(k.ok());
  FillArgs args{};
  const Status s = device->Launch(*k, Dim3{1, 1, 1}, Dim3{32, 1, 1}, 0, nullptr, &args, sizeof args);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("its argument struct is " + std::to_string(sizeof args) +
                                     " bytes, and the kernel in the device image takes 16"));
  EXPECT_EQ(fake_.launch_count(), 0);
}

TEST_F(CudaDeviceTest, KernelNotInTheImage) {
  Set("FAKE_CUDA_KERNELS", "strata_fill_f32");
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  EXPECT_TRUE(device->FindKernel("strata_fill_f32").ok());
  auto k = device->FindKernel("strata_no_such_kernel");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(k.status().message(), HasSubstr("kernel strata_no_such_kernel is not in this build's CUDA image"));
  EXPECT_TRUE(device->poisoned().ok());
}

TEST_F(CudaDeviceTest, LaunchShapesAndSharedMemory) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto k = device->FindKernel("strata_fill_f32");
  ASSERT_TRUE(k.ok());
  FillArgs args{};
  const auto launch = [&](Dim3 grid, Dim3 block, uint32_t shared) {
    return device->Launch(*k, grid, block, shared, nullptr, &args, sizeof args);
  };
  EXPECT_EQ(launch(Dim3{1, 1, 1}, Dim3{2048, 1, 1}, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(launch(Dim3{0, 1, 1}, Dim3{32, 1, 1}, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(device->Launch(*k, Dim3{1, 1, 1}, Dim3{32, 1, 1}, 0, nullptr, nullptr, 0).code(),
            StatusCode::kInvalidArgument);
  // Over 48 KiB of dynamic shared memory needs the opt-in first.
  const Status too_much = launch(Dim3{1, 1, 1}, Dim3{32, 1, 1}, 64 << 10);
  EXPECT_EQ(too_much.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(too_much.message(), HasSubstr("SetMaxDynamicShared"));
  ASSERT_TRUE(device->SetMaxDynamicShared(*k, 64 << 10).ok());
  EXPECT_EQ(fake_.last_max_dynamic_shared(), 64 << 10);
  EXPECT_TRUE(launch(Dim3{1, 1, 1}, Dim3{32, 1, 1}, 64 << 10).ok());
  const Status over = device->SetMaxDynamicShared(*k, 300 << 10);
  EXPECT_EQ(over.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(over.message(), HasSubstr("allows " + std::to_string(227 << 10)));
  EXPECT_EQ(fake_.launch_count(), 1);
}

// --- poisoning ------------------------------------------------------------------------

TEST_F(CudaDeviceTest, IllegalAddressPoisonsEveryLaterCall) {
  Set("FAKE_CUDA_FAIL", "cuLaunchKernel:1:illegal");
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto d = device->Allocate(64, "d");
  ASSERT_TRUE(d.ok());
  auto k = device->FindKernel("strata_fill_f32");
  ASSERT_TRUE(k.ok());
  FillArgs args{};
  const Status s = device->Launch(*k, Dim3{1, 1, 1}, Dim3{32, 1, 1}, 0, nullptr, &args, sizeof args);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("cuLaunchKernel(strata_fill_f32) on CUDA device 0 (Fake CUDA GPU 0): "
                                     "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"));
  EXPECT_THAT(s.message(), HasSubstr("restart the process"));
  EXPECT_EQ(device->poisoned().message(), s.message());

  // Every later call fails with the first error, without calling the driver.
  const int allocs = fake_.calls("cuMemAlloc");
  auto after = device->Allocate(64, "after");
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().message(), s.message());
  uint8_t out[8];
  EXPECT_EQ(device->CopyToHost(out, *d, 8, nullptr).message(), s.message());
  EXPECT_EQ(device->Synchronize(nullptr).message(), s.message());
  EXPECT_EQ(device->FindKernel("strata_fill_f32").status().message(), s.message());
  EXPECT_EQ(device->CreateStream().status().message(), s.message());
  EXPECT_EQ(fake_.calls("cuMemAlloc"), allocs);
  device->Free(*d);  // nothing to do on a poisoned context; must not crash
  device.reset();
  EXPECT_EQ(fake_.primary_context_retains(), 0);
}

TEST_F(CudaDeviceTest, FaultReportedAtSynchronizePoisons) {
  Set("FAKE_CUDA_FAIL", "cuStreamSynchronize:1:launch");
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  const Status s = device->Synchronize(nullptr);
  EXPECT_THAT(s.message(), HasSubstr("cuStreamSynchronize on CUDA device 0 (Fake CUDA GPU 0): "
                                     "CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"));
  EXPECT_FALSE(device->poisoned().ok());
  uint64_t free_bytes = 0, total_bytes = 0;
  EXPECT_EQ(device->MemoryInfo(&free_bytes, &total_bytes).message(), s.message());
}

// The gpu-* fault sites (runtime/base/fault_injection.h), as the software GPU
// has them, on the paths the driver's own errors take.
TEST_F(CudaDeviceTest, FaultSites) {
  Set("FAKE_CUDA_PARAMS", ("strata_fill_f32:" + std::to_string(sizeof(FillArgs))).c_str());
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  ArmFault(FaultSite::kGpuAllocate, 0);
  auto a = device->Allocate(64, "weights");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(a.status().message(), HasSubstr("cuMemAlloc(64 bytes for 'weights') on CUDA device 0 (Fake CUDA GPU 0): "
                                              "injected fault (gpu-allocate)"));
  auto d = device->Allocate(64, "weights");
  ASSERT_TRUE(d.ok());

  ArmFault(FaultSite::kGpuCopy, 1);  // the second copy
  const uint8_t bytes[64] = {};
  EXPECT_TRUE(device->CopyToDevice(*d, bytes, 64, nullptr).ok());
  const Status copy = device->Fill(*d, 0, 64, nullptr);
  EXPECT_EQ(copy.code(), StatusCode::kInternal);
  EXPECT_THAT(copy.message(), HasSubstr("cuMemsetD8Async(64 bytes) on CUDA device 0 (Fake CUDA GPU 0): "
                                        "injected fault (gpu-copy)"));

  auto k = device->FindKernel("strata_fill_f32");
  ASSERT_TRUE(k.ok());
  FillArgs args{};
  ArmFault(FaultSite::kGpuLaunch, 0);
  const Status launch = device->Launch(*k, Dim3{1, 1, 1}, Dim3{32, 1, 1}, 0, nullptr, &args, sizeof args);
  EXPECT_EQ(launch.code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(launch.message(), HasSubstr("injected fault (gpu-launch)"));
  EXPECT_TRUE(device->poisoned().ok());
  EXPECT_EQ(fake_.launch_count(), 0);

  ArmFault(FaultSite::kGpuPoison, 0);
  const Status poison = device->Launch(*k, Dim3{1, 1, 1}, Dim3{32, 1, 1}, 0, nullptr, &args, sizeof args);
  EXPECT_THAT(poison.message(), HasSubstr("cuLaunchKernel(strata_fill_f32) [injected fault (gpu-poison)] on CUDA "
                                          "device 0 (Fake CUDA GPU 0): CUDA_ERROR_ILLEGAL_ADDRESS"));
  EXPECT_EQ(device->poisoned().message(), poison.message());
  EXPECT_EQ(device->Synchronize(nullptr).message(), poison.message());
  DisarmAllFaults();
}

// --- order and time -----------------------------------------------------------------------

TEST_F(CudaDeviceTest, EventsMeasureTheWorkBetweenThem) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto start = device->CreateEvent();
  auto end = device->CreateEvent();
  ASSERT_TRUE(start.ok() && end.ok());
  auto d = device->Allocate(64, "d");
  ASSERT_TRUE(d.ok());
  // Unrecorded events have no time.
  EXPECT_FALSE(device->ElapsedMs(*start, *end).ok());
  EXPECT_TRUE(device->poisoned().ok());
  ASSERT_TRUE(device->Record(*start, nullptr).ok());
  ASSERT_TRUE(device->Fill(*d, 0, 64, nullptr).ok());
  ASSERT_TRUE(device->Fill(*d, 1, 64, nullptr).ok());
  ASSERT_TRUE(device->Record(*end, nullptr).ok());
  ASSERT_TRUE(device->EventSynchronize(*end).ok());
  auto ms = device->ElapsedMs(*start, *end);
  ASSERT_TRUE(ms.ok()) << ms.status().ToString();
  EXPECT_EQ(*ms, 3.0f);  // the fake's clock: 1 ms per operation after the start
  device->DestroyEvent(*start);
  device->DestroyEvent(*end);
  device->Free(*d);
}

TEST_F(CudaDeviceTest, StreamsAreNonBlockingAndWaitOnEvents) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto s = device->CreateStream();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(fake_.last_stream_flags(), 1);
  auto e = device->CreateEvent();
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE(device->Record(*e, nullptr).ok());
  ASSERT_TRUE(device->StreamWait(*s, *e).ok());
  ASSERT_TRUE(device->Synchronize(*s).ok());
  device->DestroyEvent(*e);
  device->DestroyStream(*s);
  EXPECT_EQ(fake_.calls("cuStreamDestroy"), 1);
}

TEST_F(CudaDeviceTest, UsedFromAnotherThread) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  // The fake, like the driver, needs a current context on the calling thread.
  Status from_thread;
  DevicePtr p = 0;
  std::thread t([&] {
    auto a = device->Allocate(64, "from another thread");
    from_thread = a.ok() ? Status::Ok() : a.status();
    if (a.ok()) p = *a;
  });
  t.join();
  EXPECT_TRUE(from_thread.ok()) << from_thread.ToString();
  device->Free(p);
  EXPECT_EQ(fake_.live_allocations(), 0);
}

TEST_F(CudaDeviceTest, TwoDevicesOnOneThread) {
  Set("FAKE_CUDA_DEVICES", "2");
  auto d0 = OpenOrDie(0);
  auto d1 = OpenOrDie(1);
  ASSERT_NE(d0, nullptr);
  ASSERT_NE(d1, nullptr);
  EXPECT_EQ(d1->info().name, "Fake CUDA GPU 1");
  const int before = fake_.calls("cuCtxSetCurrent");
  auto a = d0->Allocate(16, "on 0");
  auto b = d1->Allocate(16, "on 1");
  auto c = d1->Allocate(16, "on 1 again");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  // A switch makes the other context current; staying does not.
  EXPECT_EQ(fake_.calls("cuCtxSetCurrent") - before, 2);
  d0->Free(*a);
  d1->Free(*b);
  d1->Free(*c);
}

// --- graphs ------------------------------------------------------------------------------------

TEST_F(CudaDeviceTest, CapturedGraphReplays) {
  Set("FAKE_CUDA_PARAMS", ("strata_fill_f32:" + std::to_string(sizeof(FillArgs))).c_str());
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  EXPECT_TRUE(device->info().graphs);
  auto stream = device->CreateStream();
  ASSERT_TRUE(stream.ok());
  auto d = device->Allocate(64, "d");
  ASSERT_TRUE(d.ok());
  auto k = device->FindKernel("strata_fill_f32");
  ASSERT_TRUE(k.ok());
  std::vector<uint8_t> out(64, 0);
  FillArgs args{};
  args.n = 7;

  ASSERT_TRUE(device->BeginCapture(*stream).ok());
  EXPECT_EQ(fake_.last_capture_mode(), 1);  // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
  ASSERT_TRUE(device->Fill(*d, 0x5A, 64, *stream).ok());
  ASSERT_TRUE(device->Launch(*k, Dim3{1, 1, 1}, Dim3{64, 1, 1}, 0, *stream, &args, sizeof args).ok());
  ASSERT_TRUE(device->CopyToHost(out.data(), *d, 64, *stream).ok());
  auto graph = device->EndCapture(*stream);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  // Captured, not run.
  EXPECT_EQ(fake_.launch_count(), 0);
  EXPECT_EQ(out[0], 0);

  for (int replay = 0; replay < 2; ++replay) {
    std::fill(out.begin(), out.end(), 0);
    ASSERT_TRUE(device->LaunchGraph(*graph, *stream).ok());
    ASSERT_TRUE(device->Synchronize(*stream).ok());
    EXPECT_EQ(out[0], 0x5A);
    EXPECT_EQ(out[63], 0x5A);
  }
  const auto launches = Launches();
  ASSERT_EQ(launches.size(), 2u);
  for (const FakeCudaLaunch& l : launches) {
    EXPECT_EQ(l.from_graph, 1);
    FillArgs seen{};
    std::memcpy(&seen, l.args, sizeof seen);
    EXPECT_EQ(seen.n, 7);
  }
  device->DestroyGraph(*graph);
  EXPECT_EQ(fake_.calls("cuGraphExecDestroy"), 1);
  EXPECT_EQ(fake_.calls("cuGraphDestroy"), 1);  // the captured graph, once instantiated
  device->Free(*d);
  device->DestroyStream(*stream);
}

TEST_F(CudaDeviceTest, TheDefaultStreamCanBeCaptured) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto d = device->Allocate(8, "d");
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(device->BeginCapture(nullptr).ok());
  ASSERT_TRUE(device->Fill(*d, 1, 8, nullptr).ok());
  auto graph = device->EndCapture(nullptr);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  ASSERT_TRUE(device->LaunchGraph(*graph, nullptr).ok());
  device->DestroyGraph(*graph);
  device->Free(*d);
}

TEST_F(CudaDeviceTest, AnAllocationDuringCaptureInvalidatesIt) {
  auto device = OpenOrDie();
  ASSERT_NE(device, nullptr);
  auto stream = device->CreateStream();
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE(device->BeginCapture(*stream).ok());
  auto a = device->Allocate(64, "inside a capture");
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(a.status().message(), HasSubstr("CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"));
  auto graph = device->EndCapture(*stream);
  ASSERT_FALSE(graph.ok());
  EXPECT_EQ(graph.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(graph.status().message(), HasSubstr("could not be captured"));
  // A broken capture is the caller's bug, not a broken context.
  EXPECT_TRUE(device->poisoned().ok());
  auto after = device->Allocate(64, "after the capture");
  EXPECT_TRUE(after.ok());
  device->Free(*after);
  device->DestroyStream(*stream);
}

}  // namespace
}  // namespace strata::gpu
