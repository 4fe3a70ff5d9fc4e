#pragma once
// The HIP device (device.h's OpenHipDevice) over HIP's module API
// (hip_driver.h), with its module loaded from a given image. OpenHipDevice
// passes this build's embedded image (images.h).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/gpu/device.h"
#include "runtime/gpu/images.h"

namespace strata::gpu {

// REQUIRES: image.data points at image.size bytes that stay valid while the
// device is open.
Result<std::unique_ptr<Device>> OpenHipDeviceWithImage(int ordinal, const ModuleImage& image);

// The architecture in the bytes hipGetDeviceProperties wrote ("gfx90a" of
// the gcnArchName "gfx90a:sramecc+:xnack-"), found without a declared
// hipDeviceProp_t layout (it changed between HIP 5 and 6); "" when there is
// none. Public for its test.
std::string FindGcnArchName(const uint8_t* properties, size_t size);

}  // namespace strata::gpu
