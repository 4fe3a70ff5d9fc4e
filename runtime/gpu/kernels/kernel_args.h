#pragma once
// The argument of every kernel: one plain struct per kernel family, passed
// by value (Device::Launch copies its bytes). Shared by the kernels
// (runtime/gpu/kernels/*.cu) and the host code that launches them
// (runtime/gpu/gpu_backend.cc), so both see one layout. Device addresses are
// typed pointers; the host writes DevicePtr values into them.

#include <cstdint>

namespace strata::gpu {

// y[i] = value for i < n.
struct FillArgs {
  float* y;
  int64_t n;
  float value;
};

}  // namespace strata::gpu
