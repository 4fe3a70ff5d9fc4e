// The GPU backend's kernels (runtime/gpu/kernels/all_kernels.cu) compiled as
// host C++ for the software GPU with 32-lane warps (CUDA, RDNA's gfx1030).
// Each STRATA_KERNEL registers itself under its name and warp size 32.

#define STRATA_SGPU_WARP_SIZE 32
#include "runtime/gpu/kernels/all_kernels.cu"

namespace strata::sgpu {
// Referenced by sgpu_device.cc, so that linking the device from the static
// library also links these kernels (nothing else names this file's symbols).
extern const int kKernelsForWarp32;
const int kKernelsForWarp32 = 32;
}  // namespace strata::sgpu
