#pragma once
// Helpers for the software GPU's tests (sgpu_test.cc, sgpu_device_test.cc).

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/gpu/device.h"

namespace strata::gpu::sgpu_testing {

#define EXPECT_OK(expr)                                   \
  do {                                                    \
    const ::strata::Status s_ = (expr);                   \
    EXPECT_TRUE(s_.ok()) << #expr << ": " << s_.ToString(); \
  } while (0)
#define ASSERT_OK(expr)                                   \
  do {                                                    \
    const ::strata::Status s_ = (expr);                   \
    ASSERT_TRUE(s_.ok()) << #expr << ": " << s_.ToString(); \
  } while (0)

inline std::unique_ptr<Device> Open(uint32_t warp = 32, int threads = 1, uint64_t memory = 1ull << 30) {
  SoftwareGpuOptions o;
  o.warp_size = warp;
  o.threads = threads;
  o.memory_bytes = memory;
  auto d = OpenSoftwareGpu(o);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return d.ok() ? std::move(*d) : nullptr;
}

// `count` values of T on the device, freed with the object.
template <typename T>
class Buffer {
 public:
  Buffer(Device& d, size_t count, const char* what = "test buffer") : d_(d), count_(count) {
    auto p = d.Allocate(count * sizeof(T), what);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (p.ok()) p_ = *p;
  }
  ~Buffer() { d_.Free(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  T* ptr() const { return reinterpret_cast<T*>(static_cast<uintptr_t>(p_)); }
  DevicePtr dev() const { return p_; }
  void Upload(const std::vector<T>& v) { EXPECT_OK(d_.CopyToDevice(p_, v.data(), v.size() * sizeof(T), nullptr)); }
  std::vector<T> Download() {
    std::vector<T> v(count_);
    EXPECT_OK(d_.CopyToHost(v.data(), p_, count_ * sizeof(T), nullptr));
    return v;
  }

 private:
  Device& d_;
  size_t count_;
  DevicePtr p_ = 0;
};

template <typename Args>
Status LaunchNamed(Device& d, const char* name, Dim3 grid, Dim3 block, const Args& a, uint32_t dynamic_shared = 0,
                   Stream stream = nullptr) {
  auto k = d.FindKernel(name);
  if (!k.ok()) return k.status();
  return d.Launch(*k, grid, block, dynamic_shared, stream, &a, sizeof a);
}

// Small integers stored as floats: every partial sum is exact, in any order.
inline std::vector<float> SmallIntegers(size_t n, int seed = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(static_cast<int>((i * 7 + static_cast<size_t>(seed)) % 13) - 6);
  return v;
}

inline bool IsNanBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b == 0xffffffffu;
}

}  // namespace strata::gpu::sgpu_testing
