#pragma once
// The software GPU's kernels by name: every STRATA_KERNEL compiled as host
// C++ registers itself here before main (sgpu.h's KernelRegistrar), once per
// warp size it was compiled for (the kernels of runtime/gpu/kernels/ twice:
// sgpu_kernels_32.cc and sgpu_kernels_64.cc). The device looks them up by
// (name, warp size).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/gpu/software/sgpu.h"

namespace strata::sgpu {

struct RegisteredKernel {
  std::string name;
  uint32_t warp_size = 32;
  size_t args_bytes = 0;       // sizeof the kernel's argument struct
  KernelEntry entry = nullptr; // runs one GPU thread of it
  // Two kernels of one name and warp size (two translation units defining
  // it): FindKernel refuses the name rather than pick one.
  int registrations = 0;
};

// nullptr when no kernel of that name was compiled for that warp size.
const RegisteredKernel* FindRegisteredKernel(std::string_view name, uint32_t warp_size);
// Every registered name for `warp_size`, sorted (for messages and tests).
std::vector<std::string> RegisteredKernelNames(uint32_t warp_size);

}  // namespace strata::sgpu
