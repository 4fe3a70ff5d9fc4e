// Small kernels: fills and copies the backend uses between ops.

#include "runtime/gpu/kernels/kernel_args.h"
#include "runtime/gpu/kernels/portable.h"

STRATA_GPU_BEGIN

STRATA_KERNEL(strata_fill_f32, FillArgs) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < a.n) a.y[i] = a.value;
}

STRATA_GPU_END
