#include "runtime/gpu/images.h"

// What configure found (cmake/StrataGpu.cmake): STRATA_GPU_{CUDA,HIP}_IMAGE
// (0 or 1), _TARGETS, _COMPILER. The bytes are in the generated
// strata_gpu_images_data.cc, between these symbols (asm labels: the names the
// assembler defined, with no C name prefix on any target).
#include "strata/gpu_images_config.h"

#if STRATA_GPU_CUDA_IMAGE
extern "C" const uint8_t strata_gpu_cuda_image_begin[] asm("strata_gpu_cuda_image_begin");
extern "C" const uint8_t strata_gpu_cuda_image_end[] asm("strata_gpu_cuda_image_end");
#endif
#if STRATA_GPU_HIP_IMAGE
extern "C" const uint8_t strata_gpu_hip_image_begin[] asm("strata_gpu_hip_image_begin");
extern "C" const uint8_t strata_gpu_hip_image_end[] asm("strata_gpu_hip_image_end");
#endif

namespace strata::gpu {

const ModuleImage* CudaModuleImage() {
#if STRATA_GPU_CUDA_IMAGE
  static const ModuleImage image{strata_gpu_cuda_image_begin,
                                 static_cast<size_t>(strata_gpu_cuda_image_end - strata_gpu_cuda_image_begin),
                                 STRATA_GPU_CUDA_TARGETS, STRATA_GPU_CUDA_COMPILER};
  return &image;
#else
  return nullptr;
#endif
}

const ModuleImage* HipModuleImage() {
#if STRATA_GPU_HIP_IMAGE
  static const ModuleImage image{strata_gpu_hip_image_begin,
                                 static_cast<size_t>(strata_gpu_hip_image_end - strata_gpu_hip_image_begin),
                                 STRATA_GPU_HIP_TARGETS, STRATA_GPU_HIP_COMPILER};
  return &image;
#else
  return nullptr;
#endif
}

}  // namespace strata::gpu
