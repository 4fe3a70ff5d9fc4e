#pragma once
// The device code of this build, embedded in the binary as data: a CUDA
// fatbin (cubins per architecture plus PTX) and a HIP code-object bundle,
// each compiled once per build from runtime/gpu/kernels/ (cmake/StrataGpu.cmake)
// and embedded unchanged in the Windows build. Device code does not depend on
// the host's operating system.

#include <cstddef>
#include <cstdint>

namespace strata::gpu {

struct ModuleImage {
  const uint8_t* data = nullptr;
  size_t size = 0;
  const char* targets = "";  // "sm_75 sm_80 sm_90 sm_120 compute_90", "gfx90a gfx1030"
  const char* compiler = "";  // "nvcc 13.0", "hipcc 5.2.3"
};

// Null when this build has no image of that kind (the compiler was not found
// at configure time; the configure step said so).
const ModuleImage* CudaModuleImage();
const ModuleImage* HipModuleImage();

}  // namespace strata::gpu
