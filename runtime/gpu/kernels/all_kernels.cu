// Every kernel of the GPU backend, in one translation unit: nvcc compiles it
// into the CUDA fatbin, hipcc into the HIP code object, and the software GPU
// compiles it as host C++ once per warp size (software/sgpu_kernels_*.cc).
// One module per image: the host loads it once and finds kernels by name.

#include "runtime/gpu/kernels/misc.cu"
#include "runtime/gpu/kernels/norm.cu"
#include "runtime/gpu/kernels/matmul.cu"
#include "runtime/gpu/kernels/matmul_mma.cu"
#include "runtime/gpu/kernels/attention.cu"
#include "runtime/gpu/kernels/delta_net.cu"
#include "runtime/gpu/kernels/moe.cu"
