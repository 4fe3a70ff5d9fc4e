// The GPU backend's kernels (runtime/gpu/kernels/all_kernels.cu) compiled as
// host C++ for the software GPU with 64-lane wavefronts (gfx90a): the same
// source as sgpu_kernels_32.cc, registered under warp size 64.

#define STRATA_SGPU_WARP_SIZE 64
#include "runtime/gpu/kernels/all_kernels.cu"

namespace strata::sgpu {
// Referenced by sgpu_device.cc (see sgpu_kernels_32.cc).
extern const int kKernelsForWarp64;
const int kKernelsForWarp64 = 64;
}  // namespace strata::sgpu
