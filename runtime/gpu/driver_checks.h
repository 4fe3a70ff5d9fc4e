#pragma once
// What the CUDA and HIP devices (cuda_device.cc, hip_device.cc) check and
// say the same way before they call their driver.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/base/status.h"
#include "runtime/gpu/device.h"

namespace strata::gpu {

// "512 bytes", "3.50 MiB", "1.25 GiB".
std::string ByteCount(uint64_t bytes);

// A launch the driver would refuse, said in Strata's words: no argument
// struct; a struct whose size differs from the kernel's parameter
// (`param_bytes`, 0 when the driver does not say); a zero dimension; a block
// over `max_threads` threads; dynamic shared memory over what the kernel is
// allowed (`max_shared`).
Status CheckLaunch(std::string_view kernel, Dim3 grid, Dim3 block, uint32_t dynamic_shared, const void* args,
                   size_t args_bytes, size_t param_bytes, uint32_t max_threads, uint32_t max_shared);

}  // namespace strata::gpu
