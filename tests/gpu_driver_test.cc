// The GPU device code embedded in this build (runtime/gpu/images.h, made by
// cmake/StrataGpu.cmake) and the CUDA/HIP loaders on a machine without the
// driver: what they say. (The CUDA device's own paths run against a fake
// driver: tests/fake_cuda/cuda_device_test.cc.)

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/base/platform.h"
#include "runtime/gpu/cuda_device.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/hip_device.h"
#include "runtime/gpu/images.h"
#include "strata/gpu_images_config.h"

namespace strata::gpu {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// (Each of these is unused in a build without that image.)
#ifdef _WIN32
[[maybe_unused]] constexpr const char* kCudaLibrary = "nvcuda.dll";
[[maybe_unused]] constexpr const char* kHipLibrary = "amdhip64";
#else
[[maybe_unused]] constexpr const char* kCudaLibrary = "libcuda.so.1";
[[maybe_unused]] constexpr const char* kHipLibrary = "libamdhip64.so";
#endif

[[maybe_unused]] std::set<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::set<std::string> out;
  for (std::string w; in >> w;) out.insert(w);
  return out;
}

template <typename T>
[[maybe_unused]] T Read(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The targets in a CUDA fatbin: "sm_90" per cubin (kind 2), "compute_90" per
// PTX (kind 1). The container as nvcc writes it (read by cuobjdump; not a
// documented format): a 16-byte header (magic 0xBA55ED50, version, header
// size, then the size of the rest), then entries, each a header (kind at
// byte 0, its header size at 4, its payload size at 8, the architecture at 28)
// and its payload.
[[maybe_unused]] std::set<std::string> FatbinTargets(const ModuleImage& image, std::string* error) {
  std::set<std::string> out;
  const uint8_t* b = image.data;
  const uint16_t header = Read<uint16_t>(b + 6);
  const uint64_t body = Read<uint64_t>(b + 8);
  if (header + body != image.size) {
    *error = "the fatbin header says " + std::to_string(header + body) + " bytes, the image has " +
             std::to_string(image.size);
    return out;
  }
  for (uint64_t off = header; off < image.size;) {
    if (off + 32 > image.size) {
      *error = "an entry header runs past the end at byte " + std::to_string(off);
      return out;
    }
    const uint16_t kind = Read<uint16_t>(b + off);
    const uint32_t entry_header = Read<uint32_t>(b + off + 4);
    const uint64_t payload = Read<uint64_t>(b + off + 8);
    const uint32_t arch = Read<uint32_t>(b + off + 28);
    if (kind != 1 && kind != 2) {
      *error = "entry kind " + std::to_string(kind) + " at byte " + std::to_string(off);
      return out;
    }
    out.insert((kind == 2 ? "sm_" : "compute_") + std::to_string(arch));
    off += entry_header + payload;
  }
  return out;
}

// The device targets in a clang offload bundle: "__CLANG_OFFLOAD_BUNDLE__",
// the entry count (8 bytes), then per entry its offset, size and triple
// length (8 bytes each) and the triple ("hipv4-amdgcn-amd-amdhsa--gfx90a";
// the host entry is "host-x86_64-...").
[[maybe_unused]] std::set<std::string> BundleTargets(const ModuleImage& image) {
  std::set<std::string> out;
  const uint8_t* b = image.data;
  const uint64_t count = Read<uint64_t>(b + 24);
  uint64_t off = 32;
  for (uint64_t i = 0; i < count && off + 24 <= image.size; ++i) {
    const uint64_t length = Read<uint64_t>(b + off + 16);
    const std::string triple(reinterpret_cast<const char*>(b + off + 24), length);
    off += 24 + length;
    if (const size_t dash = triple.rfind("--"); triple.rfind("host-", 0) != 0 && dash != std::string::npos) {
      out.insert(triple.substr(dash + 2));
    }
  }
  return out;
}

// --- the embedded images ------------------------------------------------------------

TEST(GpuImages, CudaImageAgreesWithConfigure) {
  const ModuleImage* image = CudaModuleImage();
  std::printf("configure: %s\n", STRATA_GPU_CUDA_NOTE);
#if STRATA_GPU_CUDA_IMAGE
  EXPECT_THAT(STRATA_GPU_CUDA_NOTE, StartsWith("Strata GPU: CUDA image for "));
  ASSERT_NE(image, nullptr);
  ASSERT_GE(image->size, 16u);
  EXPECT_EQ(Read<uint32_t>(image->data), 0xBA55ED50u) << "not a fatbin";
  EXPECT_EQ(image->targets, std::string(STRATA_GPU_CUDA_TARGETS));
  EXPECT_THAT(image->compiler, StartsWith("nvcc "));
  std::string error;
  const std::set<std::string> in_image = FatbinTargets(*image, &error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(in_image, Words(image->targets)) << "configure said " << image->targets;
  // The data ends where the symbols say: the byte after is the terminating 0.
  EXPECT_EQ(image->data[image->size], 0);
#else
  EXPECT_THAT(STRATA_GPU_CUDA_NOTE, StartsWith("Strata GPU: no CUDA image: "));
  EXPECT_EQ(image, nullptr);
#endif
}

TEST(GpuImages, HipImageAgreesWithConfigure) {
  const ModuleImage* image = HipModuleImage();
  std::printf("configure: %s\n", STRATA_GPU_HIP_NOTE);
#if STRATA_GPU_HIP_IMAGE
  EXPECT_THAT(STRATA_GPU_HIP_NOTE, StartsWith("Strata GPU: HIP image for "));
  ASSERT_NE(image, nullptr);
  ASSERT_GE(image->size, 32u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(image->data), 24), "__CLANG_OFFLOAD_BUNDLE__");
  EXPECT_EQ(image->targets, std::string(STRATA_GPU_HIP_TARGETS));
  EXPECT_THAT(image->compiler, StartsWith("hipcc "));
  EXPECT_EQ(BundleTargets(*image), Words(image->targets)) << "configure said " << image->targets;
  EXPECT_EQ(image->data[image->size], 0);
#else
  EXPECT_THAT(STRATA_GPU_HIP_NOTE, StartsWith("Strata GPU: no HIP image: "));
  EXPECT_EQ(image, nullptr);
#endif
}

// --- the loaders without a driver ---------------------------------------------------------

// A fatbin header with nothing after it: enough to reach the driver.
const ModuleImage& HeaderOnlyImage() {
  static const uint8_t bytes[16] = {0x50, 0xED, 0x55, 0xBA, 1, 0, 16, 0};
  static const ModuleImage image{bytes, sizeof bytes, "sm_90", "nvcc (test)"};
  return image;
}

class GpuDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetEnvVar("STRATA_CUDA_DRIVER", nullptr);
    SetEnvVar("STRATA_HIP_DRIVER", nullptr);
  }
  void TearDown() override { SetUp(); }
};

// This machine's own driver: none on a build machine (the message says which
// library is missing, or that it sees no device); on a machine with an
// NVIDIA GPU the device opens.
TEST_F(GpuDriverTest, CudaWithTheSystemsDriver) {
  auto device = OpenCudaDevice(0);
  if (device.ok()) {
    std::printf("a CUDA device is here: %s, %s\n", (*device)->info().name.c_str(), (*device)->info().arch.c_str());
    EXPECT_EQ((*device)->info().kind, DeviceKind::kCuda);
    return;
  }
  const Status& s = device.status();
  std::printf("%s\n", s.ToString().c_str());
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("--backend cpu"));
#if STRATA_GPU_CUDA_IMAGE
  EXPECT_THAT(s.message(), HasSubstr(kCudaLibrary));
  EXPECT_THAT(s.message(),
              AnyOf(HasSubstr("no CUDA driver: "), HasSubstr("cuInit failed"), HasSubstr("no CUDA device")));
#else
  EXPECT_THAT(s.message(), HasSubstr("this build has no CUDA device code"));
  EXPECT_THAT(s.message(), HasSubstr(STRATA_GPU_CUDA_NOTE));
#endif
}

TEST_F(GpuDriverTest, CudaDriverOverrideThatIsNotThere) {
  SetEnvVar("STRATA_CUDA_DRIVER", "/nonexistent/folder/libcuda-strata-test.so");
  auto device = OpenCudaDeviceWithImage(0, HeaderOnlyImage());
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(
      device.status().message(),
      HasSubstr("no CUDA driver: /nonexistent/folder/libcuda-strata-test.so (STRATA_CUDA_DRIVER) was not found"));
  EXPECT_THAT(device.status().message(), HasSubstr("libcuda-strata-test.so"));
}

TEST_F(GpuDriverTest, HipWithTheSystemsRuntime) {
  auto device = OpenHipDevice(0);
  if (device.ok()) {
    std::printf("a HIP device is here: %s, %s\n", (*device)->info().name.c_str(), (*device)->info().arch.c_str());
    EXPECT_EQ((*device)->info().kind, DeviceKind::kHip);
    return;
  }
  const Status& s = device.status();
  std::printf("%s\n", s.ToString().c_str());
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_THAT(s.message(), HasSubstr("--backend cpu"));
#if STRATA_GPU_HIP_IMAGE
  // No HIP runtime at all, or one (Debian's libamdhip64 here) without a GPU.
  EXPECT_THAT(s.message(), HasSubstr(kHipLibrary));
  EXPECT_THAT(s.message(),
              AnyOf(HasSubstr("no HIP runtime: "), HasSubstr("hipInit failed"), HasSubstr("no HIP device")));
#else
  EXPECT_THAT(s.message(), HasSubstr("this build has no HIP device code"));
  EXPECT_THAT(s.message(), HasSubstr(STRATA_GPU_HIP_NOTE));
#endif
}

TEST_F(GpuDriverTest, HipDriverOverrideThatIsNotThere) {
  SetEnvVar("STRATA_HIP_DRIVER", "/nonexistent/folder/libamdhip64-strata-test.so");
  auto device = OpenHipDeviceWithImage(0, HeaderOnlyImage());
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(
      device.status().message(),
      HasSubstr("no HIP runtime: /nonexistent/folder/libamdhip64-strata-test.so (STRATA_HIP_DRIVER) not found"));
}

// --- reading the HIP architecture without hipDeviceProp_t's layout -----------------------

void Put(std::vector<uint8_t>& props, size_t offset, const char* text) {
  std::memcpy(props.data() + offset, text, std::strlen(text) + 1);
}

TEST(GcnArchName, FoundWhereverTheLayoutPutsIt) {
  for (size_t offset : {396u, 1024u, 1412u}) {  // HIP 5.2's offset, and others
    std::vector<uint8_t> props(2048, 0);
    Put(props, 0, "AMD Instinct MI210");
    Put(props, offset, "gfx90a:sramecc+:xnack-");
    EXPECT_EQ(FindGcnArchName(props.data(), props.size()), "gfx90a") << offset;
  }
  std::vector<uint8_t> props(2048, 0);
  Put(props, 0, "AMD Radeon RX 6800");
  Put(props, 700, "gfx1030");
  EXPECT_EQ(FindGcnArchName(props.data(), props.size()), "gfx1030");
}

TEST(GcnArchName, NotTheNameFieldNorTheMiddleOfAString) {
  std::vector<uint8_t> props(2048, 0);
  Put(props, 0, "gfx906");            // in the name field: not the arch field
  Put(props, 300, "xgfx908");         // not at the start of a field
  Put(props, 400, "gfxabc");          // no digit after gfx
  Put(props, 500, "gfx9:bad space");  // not a whole target id
  EXPECT_EQ(FindGcnArchName(props.data(), props.size()), "");
  Put(props, 900, "gfx908:xnack+");
  EXPECT_EQ(FindGcnArchName(props.data(), props.size()), "gfx908");
}

TEST(GcnArchName, UnterminatedAtTheEnd) {
  std::vector<uint8_t> props(300, 0);
  std::memcpy(props.data() + 294, "gfx90a", 6);  // runs into the end, no terminating 0
  EXPECT_EQ(FindGcnArchName(props.data(), props.size()), "");
}

}  // namespace
}  // namespace strata::gpu
