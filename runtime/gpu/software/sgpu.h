#pragma once
// The software GPU's side of the kernel source (kernels/portable.h, host
// mode): what CUDA's built-ins become when a kernel is compiled as host C++.
//
// Execution model (docs/gpu.md, "The software GPU"): a launch runs its blocks
// one after another; each thread of a block is a fiber. A fiber runs until it
// reaches __syncthreads or a warp operation, then the next fiber of the block
// runs. A barrier opens when every live thread of the block waits at it; a
// warp operation completes when every lane of the warp waits at it (the same
// operation, from the same place). So lanes interleave only at barriers and
// warp operations, and code that assumes lockstep warps reads stale or
// poisoned shared memory here, as it can on hardware. The scheduler refuses:
//   * a __syncthreads that not every thread of the block reaches (some exited,
//     or wait elsewhere): the launch fails naming the kernel and the place;
//   * a warp operation whose lanes are not all there (a lane exited, waits at
//     a barrier or at another operation);
//   * shared memory declared differently by two threads, or more of it than
//     the device gives a block.
// Shared memory is filled with 0xff bytes (a NaN as float) at each block's
// start, so a read before any write shows. The order in which fibers run
// alternates between rounds (lane 0 first, then the last lane first), so a
// missing WarpSync shows in either direction.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <source_location>

#include "runtime/quant/fp_convert.h"

#ifndef STRATA_SGPU_WARP_SIZE
#define STRATA_SGPU_WARP_SIZE 32
#endif

namespace strata::sgpu {

struct Dim {
  uint32_t x = 0, y = 0, z = 0;
};

// The calling fiber's coordinates (valid inside a kernel only).
const Dim& CurrentThreadIdx();
const Dim& CurrentBlockIdx();
const Dim& CurrentBlockDim();
const Dim& CurrentGridDim();

void SyncThreads(std::source_location where = std::source_location::current());

// Shared memory: the k-th SharedBytes call of a thread in a block returns the
// same address in every thread of the block (declarations in order, at the
// top of the kernel); each is 16-byte aligned.
void* SharedBytes(size_t bytes, std::source_location where = std::source_location::current());
void* DynamicSharedBytes();
template <typename T>
T* SharedArray(size_t n, std::source_location where = std::source_location::current()) {
  return static_cast<T*>(SharedBytes(n * sizeof(T), where));
}
template <typename T>
T* DynamicShared() {
  return static_cast<T*>(DynamicSharedBytes());
}

// Warp operations over the full warp of the calling lane. `kind` tells them
// apart for the check that every lane waits at the same operation.
enum class WarpOp : uint8_t { kShflXor, kShfl, kBallot, kSync };
// Deposits `value` (up to 8 bytes), waits for every lane of the warp, and
// returns the value of the lane the operation names (kShflXor: lane ^ arg;
// kShfl: lane arg, wrapped to the warp), or the ballot.
uint64_t WarpExchange(WarpOp op, uint64_t value, int arg, std::source_location where);

template <typename To, typename From>
To BitCast(From f) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  std::memcpy(&t, &f, sizeof(To));
  return t;
}
template <typename T>
T ShflXor(T v, int lane_mask, std::source_location where = std::source_location::current()) {
  static_assert(sizeof(T) == 4);
  return BitCast<T>(static_cast<uint32_t>(WarpExchange(WarpOp::kShflXor, BitCast<uint32_t>(v), lane_mask, where)));
}
template <typename T>
T Shfl(T v, int src_lane, std::source_location where = std::source_location::current()) {
  static_assert(sizeof(T) == 4);
  return BitCast<T>(static_cast<uint32_t>(WarpExchange(WarpOp::kShfl, BitCast<uint32_t>(v), src_lane, where)));
}
inline uint64_t Ballot(bool p, std::source_location where = std::source_location::current()) {
  return WarpExchange(WarpOp::kBallot, p ? 1 : 0, 0, where);
}
inline void SyncWarp(std::source_location where = std::source_location::current()) {
  WarpExchange(WarpOp::kSync, 0, 0, where);
}

// Atomics: blocks may run on several host threads at once.
float AtomicAdd(float* p, float v);
int AtomicAdd(int* p, int v);
uint32_t AtomicAdd(uint32_t* p, uint32_t v);

// Pure functions, inline here so that plain device functions (the weight
// decoders) run on the host without the software GPU's runtime: the CPU's
// exact conversions.
inline float HalfToFloat(uint16_t h) { return ::strata::Fp16ToFp32(h); }
inline uint16_t FloatToHalf(float f) { return ::strata::Fp32ToFp16(f); }

// Registers a kernel (STRATA_KERNEL, host mode) under its name and the warp
// size it was compiled for. `entry` runs one thread of it on its argument
// struct.
using KernelEntry = void (*)(const void* args);
class KernelRegistrar {
 public:
  KernelRegistrar(const char* name, uint32_t warp_size, size_t args_bytes, KernelEntry entry);
};

}  // namespace strata::sgpu

#define threadIdx (::strata::sgpu::CurrentThreadIdx())
#define blockIdx (::strata::sgpu::CurrentBlockIdx())
#define blockDim (::strata::sgpu::CurrentBlockDim())
#define gridDim (::strata::sgpu::CurrentGridDim())
#define __syncthreads() ::strata::sgpu::SyncThreads()
