#pragma once
// The CUDA device (device.h's OpenCudaDevice) over the driver API
// (cuda_driver.h), with its module loaded from a given image. OpenCudaDevice
// passes this build's embedded image (images.h); tests pass their own, to run
// against a fake driver in a build without nvcc.

#include <memory>

#include "runtime/gpu/device.h"
#include "runtime/gpu/images.h"

namespace strata::gpu {

// REQUIRES: image.data points at image.size bytes that stay valid while the
// device is open.
Result<std::unique_ptr<Device>> OpenCudaDeviceWithImage(int ordinal, const ModuleImage& image);

}  // namespace strata::gpu
