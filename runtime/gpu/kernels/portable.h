#pragma once
// The one kernel source, three compilers: this header is what the kernels of
// runtime/gpu/kernels/ may use besides plain C++, and what it becomes on each.
//
//   nvcc (CUDA, __CUDACC__):     CUDA as written.
//   hipcc (HIP, __HIP__):        HIP's names for the same things; the
//                                wavefront is 64 wide on gfx90a, 32 on gfx1030.
//   host C++ (the software GPU): every thread a fiber of software/sgpu.h;
//                                shared memory per block; lanes interleave only
//                                at __syncthreads and warp operations.
//
// Rules for kernel code (the software GPU enforces those it can):
//   * A kernel is `STRATA_KERNEL(name, ArgsType) { ... }`: one argument, a
//     struct of kernel_args.h passed by value, named `a` in the body.
//   * Shared memory only through STRATA_SHARED / STRATA_DYNAMIC_SHARED, at
//     the top of the kernel body, in the same order in every thread.
//   * Warp operations only through the Warp* functions below, with every lane
//     of the warp taking part (they all take the full-warp mask): no partial
//     masks, no __activemask.
//   * Lanes of a warp are not in lockstep: data a lane writes to shared memory
//     for another lane is read after WarpSync() or __syncthreads().
//   * __syncthreads is reached by every thread of the block, or none.
//   * Math through the Dev* functions (fast intrinsics on devices, libm here).

#include <cstdint>

#if defined(__CUDACC__)
#define STRATA_GPU_CUDA 1
#include <cuda_fp16.h>
#elif defined(__HIP__) || defined(__HIPCC__)
#define STRATA_GPU_HIP 1
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#else
#define STRATA_GPU_HOST 1
#include "runtime/gpu/software/sgpu.h"
#endif

// Kernel code lives in STRATA_GPU_BEGIN ... STRATA_GPU_END: namespace
// strata::gpu, with an inline namespace per compilation (the software GPU
// compiles the kernels once per warp size, 32 and 64, into one program).
// The argument structs (kernel_args.h) are outside it: one layout for all.
#if defined(STRATA_GPU_HOST) && STRATA_SGPU_WARP_SIZE == 64
#define STRATA_GPU_BEGIN namespace strata::gpu { inline namespace wave64 {
#elif defined(STRATA_GPU_HOST)
#define STRATA_GPU_BEGIN namespace strata::gpu { inline namespace wave32 {
#else
#define STRATA_GPU_BEGIN namespace strata::gpu { inline namespace device {
#endif
#define STRATA_GPU_END } }

STRATA_GPU_BEGIN

// ----------------------------------------------------------------------------
// Qualifiers, kernels, shared memory
// ----------------------------------------------------------------------------
#if defined(STRATA_GPU_CUDA) || defined(STRATA_GPU_HIP)

#define STRATA_DEV __device__ __forceinline__
#define STRATA_DEVICE_TABLE __device__ const
#define STRATA_KERNEL(name, Args) extern "C" __global__ void name(const Args a)
// Kernels that need a block size bound for register allocation.
#define STRATA_KERNEL_BOUNDED(name, Args, max_threads) \
  extern "C" __global__ void __launch_bounds__(max_threads) name(const Args a)
#define STRATA_SHARED(T, name, n) __shared__ T name[n]
#define STRATA_DYNAMIC_SHARED(T, name)                       \
  extern __shared__ __align__(16) unsigned char strata_dynamic_shared_[]; \
  T* name = reinterpret_cast<T*>(strata_dynamic_shared_)

#else  // host C++ for the software GPU

#define STRATA_DEV inline
#define STRATA_DEVICE_TABLE const
// Declares the kernel, registers it with the software GPU by name and warp
// size (with the size of its argument struct, which a launch must match),
// defines it. Internal linkage: a kernel is compiled once per warp size.
#define STRATA_KERNEL(name, Args)                                                                  \
  static void name(const Args a);                                                                  \
  static const ::strata::sgpu::KernelRegistrar strata_registrar_##name(                           \
      #name, STRATA_SGPU_WARP_SIZE, sizeof(Args), [](const void* p) { name(*static_cast<const Args*>(p)); }); \
  static void name(const Args a)
#define STRATA_KERNEL_BOUNDED(name, Args, max_threads) STRATA_KERNEL(name, Args)
#define STRATA_SHARED(T, name, n) T* const name = ::strata::sgpu::SharedArray<T>(n)
#define STRATA_DYNAMIC_SHARED(T, name) T* const name = ::strata::sgpu::DynamicShared<T>()

#endif

// ----------------------------------------------------------------------------
// Warps
// ----------------------------------------------------------------------------
#if defined(STRATA_GPU_CUDA)
inline constexpr uint32_t kWarpSize = 32;
#elif defined(STRATA_GPU_HIP)
#if defined(__AMDGCN_WAVEFRONT_SIZE)
inline constexpr uint32_t kWarpSize = __AMDGCN_WAVEFRONT_SIZE;
#else
inline constexpr uint32_t kWarpSize = 64;  // the host pass of hipcc; never used on a device
#endif
#else
inline constexpr uint32_t kWarpSize = STRATA_SGPU_WARP_SIZE;
#endif

// A ballot's result: one bit per lane (64 wide, for 64-lane wavefronts).
using WarpMask = uint64_t;

#if defined(STRATA_GPU_CUDA)
STRATA_DEV float WarpShflXor(float v, int lane_mask) { return __shfl_xor_sync(0xffffffffu, v, lane_mask); }
STRATA_DEV int WarpShflXor(int v, int lane_mask) { return __shfl_xor_sync(0xffffffffu, v, lane_mask); }
STRATA_DEV uint32_t WarpShflXor(uint32_t v, int lane_mask) { return __shfl_xor_sync(0xffffffffu, v, lane_mask); }
STRATA_DEV float WarpShfl(float v, int src_lane) { return __shfl_sync(0xffffffffu, v, src_lane); }
STRATA_DEV int WarpShfl(int v, int src_lane) { return __shfl_sync(0xffffffffu, v, src_lane); }
STRATA_DEV uint32_t WarpShfl(uint32_t v, int src_lane) { return __shfl_sync(0xffffffffu, v, src_lane); }
STRATA_DEV WarpMask WarpBallot(bool p) { return __ballot_sync(0xffffffffu, p); }
STRATA_DEV void WarpSync() { __syncwarp(); }
#elif defined(STRATA_GPU_HIP)
STRATA_DEV float WarpShflXor(float v, int lane_mask) { return __shfl_xor(v, lane_mask); }
STRATA_DEV int WarpShflXor(int v, int lane_mask) { return __shfl_xor(v, lane_mask); }
STRATA_DEV uint32_t WarpShflXor(uint32_t v, int lane_mask) {
  return static_cast<uint32_t>(__shfl_xor(static_cast<int>(v), lane_mask));
}
STRATA_DEV float WarpShfl(float v, int src_lane) { return __shfl(v, src_lane); }
STRATA_DEV int WarpShfl(int v, int src_lane) { return __shfl(v, src_lane); }
STRATA_DEV uint32_t WarpShfl(uint32_t v, int src_lane) {
  return static_cast<uint32_t>(__shfl(static_cast<int>(v), src_lane));
}
STRATA_DEV WarpMask WarpBallot(bool p) { return __ballot(p); }
// HIP 5.2 has no __syncwarp; a wavefront's lanes share one instruction
// stream there, and a fence orders their shared-memory accesses.
STRATA_DEV void WarpSync() { __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront"); __builtin_amdgcn_wave_barrier(); __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront"); }
#else
// Each takes its caller's place, so the software GPU's checks (every lane at
// the same operation from the same place) and messages name the kernel's line.
#define STRATA_WARP_SITE ::strata::sgpu::SourcePlace where = STRATA_SGPU_HERE
STRATA_DEV float WarpShflXor(float v, int lane_mask, STRATA_WARP_SITE) { return ::strata::sgpu::ShflXor(v, lane_mask, where); }
STRATA_DEV int WarpShflXor(int v, int lane_mask, STRATA_WARP_SITE) { return ::strata::sgpu::ShflXor(v, lane_mask, where); }
STRATA_DEV uint32_t WarpShflXor(uint32_t v, int lane_mask, STRATA_WARP_SITE) {
  return ::strata::sgpu::ShflXor(v, lane_mask, where);
}
STRATA_DEV float WarpShfl(float v, int src_lane, STRATA_WARP_SITE) { return ::strata::sgpu::Shfl(v, src_lane, where); }
STRATA_DEV int WarpShfl(int v, int src_lane, STRATA_WARP_SITE) { return ::strata::sgpu::Shfl(v, src_lane, where); }
STRATA_DEV uint32_t WarpShfl(uint32_t v, int src_lane, STRATA_WARP_SITE) { return ::strata::sgpu::Shfl(v, src_lane, where); }
STRATA_DEV WarpMask WarpBallot(bool p, STRATA_WARP_SITE) { return ::strata::sgpu::Ballot(p, where); }
STRATA_DEV void WarpSync(STRATA_WARP_SITE) { ::strata::sgpu::SyncWarp(where); }
#endif

// Butterfly reductions: with `from` = F (a power of two below the warp
// size; the whole warp by default), every lane of each aligned group of 2F
// lanes gets the combination of the group's values, by the xor shuffles
//   for (m = F; m > 0; m >>= 1) v = combine(v, WarpShflXor(v, m));
// On devices that loop is what runs. The software GPU runs the same
// operations in the same order as one warp operation (sgpu.h), so the bits
// are the loop's (sgpu_test compares them with the loop written out).
#define STRATA_WARP_LOOP(combine)                                                           \
  for (int m = from; m > 0; m >>= 1) {                                                      \
    const auto o = WarpShflXor(v, m);                                                       \
    v = combine;                                                                            \
  }                                                                                         \
  return v
#if defined(STRATA_GPU_CUDA) || defined(STRATA_GPU_HIP)
// Sums: every lane gets the sum.
STRATA_DEV float WarpSum(float v, int from = kWarpSize / 2) { STRATA_WARP_LOOP(v + o); }
STRATA_DEV int WarpSum(int v, int from = kWarpSize / 2) { STRATA_WARP_LOOP(v + o); }
// Maxima: o > v ? o : v (a NaN in v stays), and DevFmax's (a NaN is ignored).
STRATA_DEV float WarpMax(float v, int from = kWarpSize / 2) { STRATA_WARP_LOOP(o > v ? o : v); }
STRATA_DEV float WarpFmax(float v, int from = kWarpSize / 2) { STRATA_WARP_LOOP(fmaxf(v, o)); }
STRATA_DEV uint32_t WarpOr(uint32_t v, int from = kWarpSize / 2) { STRATA_WARP_LOOP(v | o); }
// The largest v and its index `at`, the lowest index among equals.
STRATA_DEV void WarpArgMax(float& v, int32_t& at, int from = kWarpSize / 2) {
  for (int m = from; m > 0; m >>= 1) {
    const float ov = WarpShflXor(v, m);
    const int32_t oi = WarpShflXor(at, m);
    if (ov > v || (ov == v && oi < at)) v = ov, at = oi;
  }
}
#else
using ::strata::sgpu::WarpOp;
STRATA_DEV float WarpSum(float v, int from = kWarpSize / 2, STRATA_WARP_SITE) {
  return ::strata::sgpu::ReduceF32(WarpOp::kSumF32, v, from, where);
}
STRATA_DEV int WarpSum(int v, int from = kWarpSize / 2, STRATA_WARP_SITE) {
  return ::strata::sgpu::ReduceI32(WarpOp::kSumI32, v, from, where);
}
STRATA_DEV float WarpMax(float v, int from = kWarpSize / 2, STRATA_WARP_SITE) {
  return ::strata::sgpu::ReduceF32(WarpOp::kMaxF32, v, from, where);
}
STRATA_DEV float WarpFmax(float v, int from = kWarpSize / 2, STRATA_WARP_SITE) {
  return ::strata::sgpu::ReduceF32(WarpOp::kFmaxF32, v, from, where);
}
STRATA_DEV uint32_t WarpOr(uint32_t v, int from = kWarpSize / 2, STRATA_WARP_SITE) {
  return static_cast<uint32_t>(::strata::sgpu::ReduceI32(WarpOp::kOrU32, static_cast<int32_t>(v), from, where));
}
STRATA_DEV void WarpArgMax(float& v, int32_t& at, int from = kWarpSize / 2, STRATA_WARP_SITE) {
  ::strata::sgpu::ArgMax(v, at, from, where);
}
#undef STRATA_WARP_SITE
#endif
#undef STRATA_WARP_LOOP

STRATA_DEV uint32_t LaneId() { return threadIdx.x % kWarpSize; }
STRATA_DEV uint32_t WarpId() { return threadIdx.x / kWarpSize; }

// ----------------------------------------------------------------------------
// Atomics
// ----------------------------------------------------------------------------
#if defined(STRATA_GPU_CUDA) || defined(STRATA_GPU_HIP)
STRATA_DEV float AtomicAdd(float* p, float v) { return atomicAdd(p, v); }
STRATA_DEV int AtomicAdd(int* p, int v) { return atomicAdd(p, v); }
STRATA_DEV uint32_t AtomicAdd(uint32_t* p, uint32_t v) { return atomicAdd(p, v); }
#else
STRATA_DEV float AtomicAdd(float* p, float v) { return ::strata::sgpu::AtomicAdd(p, v); }
STRATA_DEV int AtomicAdd(int* p, int v) { return ::strata::sgpu::AtomicAdd(p, v); }
STRATA_DEV uint32_t AtomicAdd(uint32_t* p, uint32_t v) { return ::strata::sgpu::AtomicAdd(p, v); }
#endif

// ----------------------------------------------------------------------------
// Math
// ----------------------------------------------------------------------------
#if defined(STRATA_GPU_CUDA) || defined(STRATA_GPU_HIP)
STRATA_DEV float DevExp(float x) { return expf(x); }
STRATA_DEV float DevLog(float x) { return logf(x); }
STRATA_DEV float DevLog1p(float x) { return log1pf(x); }
STRATA_DEV float DevSqrt(float x) { return sqrtf(x); }
STRATA_DEV float DevPow(float x, float y) { return powf(x, y); }
STRATA_DEV float DevSin(float x) { return sinf(x); }
STRATA_DEV float DevCos(float x) { return cosf(x); }
STRATA_DEV float DevFmax(float x, float y) { return fmaxf(x, y); }
STRATA_DEV float DevFmin(float x, float y) { return fminf(x, y); }
STRATA_DEV bool DevIsNan(float x) { return isnan(x); }
// Round to the nearest integer, ties to even (as the CPU's nearbyint in the
// default rounding mode).
STRATA_DEV int DevRoundToInt(float x) { return __float2int_rn(x); }
#else
STRATA_DEV float DevExp(float x) { return std::exp(x); }
STRATA_DEV float DevLog(float x) { return std::log(x); }
STRATA_DEV float DevLog1p(float x) { return std::log1p(x); }
STRATA_DEV float DevSqrt(float x) { return std::sqrt(x); }
STRATA_DEV float DevPow(float x, float y) { return std::pow(x, y); }
STRATA_DEV float DevSin(float x) { return std::sin(x); }
STRATA_DEV float DevCos(float x) { return std::cos(x); }
STRATA_DEV float DevFmax(float x, float y) { return std::fmax(x, y); }
STRATA_DEV float DevFmin(float x, float y) { return std::fmin(x, y); }
STRATA_DEV bool DevIsNan(float x) { return std::isnan(x); }
STRATA_DEV int DevRoundToInt(float x) { return static_cast<int>(std::nearbyint(x)); }
#endif
STRATA_DEV float DevAbs(float x) { return x < 0.0f ? -x : x; }
STRATA_DEV float DevSigmoid(float x) { return 1.0f / (1.0f + DevExp(-x)); }
STRATA_DEV float DevSilu(float x) { return x / (1.0f + DevExp(-x)); }
STRATA_DEV float DevSoftplus(float x) { return x > 20.0f ? x : DevLog1p(DevExp(x)); }

// ----------------------------------------------------------------------------
// Bits: small floats stored as their bits, int8 dot products
// ----------------------------------------------------------------------------
#if defined(STRATA_GPU_CUDA) || defined(STRATA_GPU_HIP)
STRATA_DEV float BitsToFloat(uint32_t b) { return __uint_as_float(b); }
STRATA_DEV uint32_t FloatToBits(float f) { return __float_as_uint(f); }
STRATA_DEV float HalfToFloat(uint16_t h) { return __half2float(__ushort_as_half(h)); }
// Round to nearest even, as the CPU's Fp32ToFp16 (NaN payloads aside).
STRATA_DEV uint16_t FloatToHalf(float f) { return __half_as_ushort(__float2half_rn(f)); }
#else
STRATA_DEV float BitsToFloat(uint32_t b) { return ::strata::sgpu::BitCast<float>(b); }
STRATA_DEV uint32_t FloatToBits(float f) { return ::strata::sgpu::BitCast<uint32_t>(f); }
STRATA_DEV float HalfToFloat(uint16_t h) { return ::strata::sgpu::HalfToFloat(h); }
STRATA_DEV uint16_t FloatToHalf(float f) { return ::strata::sgpu::FloatToHalf(f); }
#endif
STRATA_DEV float Bf16ToFloat(uint16_t b) { return BitsToFloat(static_cast<uint32_t>(b) << 16); }

// c + the dot product of the four signed bytes of a and of b.
STRATA_DEV int Dp4a(int a, int b, int c) {
#if defined(STRATA_GPU_CUDA) && defined(__CUDA_ARCH__)
  return __dp4a(a, b, c);
#elif defined(STRATA_GPU_HIP) && defined(__gfx90a__)
  return __builtin_amdgcn_sdot4(a, b, c, false);
#else
  for (int i = 0; i < 4; ++i)
    c += static_cast<int>(static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * i))) *
         static_cast<int>(static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * i)));
  return c;
#endif
}

// Unaligned little-endian loads from weight blocks (blocks of 18, 22, 110...
// bytes put their fields at any byte offset).
STRATA_DEV uint16_t Load16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
STRATA_DEV uint32_t Load32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

STRATA_GPU_END
