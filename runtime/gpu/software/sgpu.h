#pragma once
// The software GPU's side of the kernel source (kernels/portable.h, host
// mode): what CUDA's built-ins become when a kernel is compiled as host C++.
//
// Execution model (docs/gpu.md, "The software GPU"; block_scheduler.h): a
// launch runs its blocks one after another; each thread of a block is a
// fiber. A fiber runs until it reaches __syncthreads or a warp operation,
// then the next fiber of the block runs. A barrier opens when every thread of
// the block waits at it (from the same place); a warp operation completes
// when every lane of the warp waits at it (the same operation, from the same
// place). So lanes interleave only at barriers and warp operations, and code
// that assumes lockstep warps reads stale or poisoned shared memory here, as
// it can on hardware. The scheduler refuses (the launch fails with kInternal,
// naming the kernel, the block, the threads and the places):
//   * a __syncthreads that not every thread of the block reaches (some exited,
//     or wait elsewhere);
//   * a warp operation whose lanes are not all there (a lane exited, waits at
//     a barrier or at another operation);
//   * shared memory declared differently by two threads, or more of it than
//     the device gives a block.
// Shared memory is filled with 0xff bytes (a NaN as float) at each block's
// start, so a read before any write shows. The order in which fibers run
// alternates between rounds (lane 0 first, then the last lane first), so a
// missing WarpSync shows in either direction.
//
// Kernel code must not own heap objects or anything else with a destructor
// that matters (std::vector, std::string, locks): when a launch is refused,
// the other threads of the block are suspended mid-kernel and simply
// discarded, their stacks reused without unwinding. (Device code cannot
// allocate anyway.) A kernel's stack is 64 KiB here (256 KiB under ASan),
// with a guard page below it.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "runtime/quant/fp_convert.h"

#ifndef STRATA_SGPU_WARP_SIZE
#define STRATA_SGPU_WARP_SIZE 32
#endif

namespace strata::sgpu {

// Where kernel code called in: the file, line and column of the call, for the
// checks that every thread waits at the same place and for messages. Not
// std::source_location: libstdc++ 12 defines it only for compilers with
// __builtin_source_location, which clang 14 (the sanitizer build) lacks.
// These builtins, written directly in a default argument, give the caller's
// place in GCC and clang alike, in the form `SourcePlace where =
// STRATA_SGPU_HERE` (GCC 12 gives the declaration's line for
// `SourcePlace{...}`). GCC 12 has no __builtin_COLUMN: there two calls on
// one line count as one place.
struct SourcePlace {
  const char* file = "";
  unsigned line = 0;
  unsigned column = 0;
};
#if defined(__clang__)
#define STRATA_SGPU_COLUMN_ __builtin_COLUMN()
#else
#define STRATA_SGPU_COLUMN_ 0u
#endif
#define STRATA_SGPU_HERE {__builtin_FILE(), __builtin_LINE(), STRATA_SGPU_COLUMN_}

struct Dim {
  uint32_t x = 0, y = 0, z = 0;
};

// The calling fiber's coordinates (valid inside a kernel only).
const Dim& CurrentThreadIdx();
const Dim& CurrentBlockIdx();
const Dim& CurrentBlockDim();
const Dim& CurrentGridDim();

void SyncThreads(SourcePlace where = STRATA_SGPU_HERE);

// Shared memory: the k-th SharedBytes call of a thread in a block returns the
// same address in every thread of the block (declarations in order, at the
// top of the kernel); each is 16-byte aligned.
void* SharedBytes(size_t bytes, SourcePlace where = STRATA_SGPU_HERE);
void* DynamicSharedBytes();
template <typename T>
T* SharedArray(size_t n, SourcePlace where = STRATA_SGPU_HERE) {
  return static_cast<T*>(SharedBytes(n * sizeof(T), where));
}
template <typename T>
T* DynamicShared() {
  return static_cast<T*>(DynamicSharedBytes());
}

// Warp operations over the full warp of the calling lane. `kind` tells them
// apart for the check that every lane waits at the same operation.
//
// The butterfly reductions (kSumF32 ... kArgMaxF32) are portable.h's
// WarpSum, WarpMax, WarpFmax, WarpOr and WarpArgMax in one operation: each
// lane gets exactly what the loop of xor shuffles
//   for (m = arg; m > 0; m >>= 1) v = combine(v, ShflXor(v, m));
// would give it, the same operations in the same order (a lane that does not
// exist reads kMissingLaneValue, as a shuffle would), with one switch per
// lane instead of one per shuffle: they were 78% of a GPU conformance run's
// switches. Every lane must pass the same `arg`, a power of two below the
// warp size. combine(v, o) is v + o (kSumF32, float; kSumI32, int32
// wrapping), o > v ? o : v (kMaxF32), fmax(v, o) (kFmaxF32), v | o (kOrU32);
// kArgMaxF32's value is a float's bits (low half) and an int32 index (high
// half), and o wins when o.value > v.value, or they are equal and o.index
// < v.index.
enum class WarpOp : uint8_t { kShflXor, kShfl, kBallot, kSync, kSumF32, kSumI32, kMaxF32, kFmaxF32, kOrU32, kArgMaxF32 };
// Deposits `value` (up to 8 bytes), waits for every lane of the warp, and
// returns the value of the lane the operation names (kShflXor: lane ^ arg;
// kShfl: lane arg, wrapped to the warp), the ballot, or the reduction.
uint64_t WarpExchange(WarpOp op, uint64_t value, int arg, SourcePlace where);

template <typename To, typename From>
To BitCast(From f) {
  static_assert(sizeof(To) == sizeof(From));
  To t;
  std::memcpy(&t, &f, sizeof(To));
  return t;
}
template <typename T>
T ShflXor(T v, int lane_mask, SourcePlace where = STRATA_SGPU_HERE) {
  static_assert(sizeof(T) == 4);
  return BitCast<T>(static_cast<uint32_t>(WarpExchange(WarpOp::kShflXor, BitCast<uint32_t>(v), lane_mask, where)));
}
template <typename T>
T Shfl(T v, int src_lane, SourcePlace where = STRATA_SGPU_HERE) {
  static_assert(sizeof(T) == 4);
  return BitCast<T>(static_cast<uint32_t>(WarpExchange(WarpOp::kShfl, BitCast<uint32_t>(v), src_lane, where)));
}
inline uint64_t Ballot(bool p, SourcePlace where = STRATA_SGPU_HERE) {
  return WarpExchange(WarpOp::kBallot, p ? 1 : 0, 0, where);
}
inline void SyncWarp(SourcePlace where = STRATA_SGPU_HERE) {
  WarpExchange(WarpOp::kSync, 0, 0, where);
}
inline float ReduceF32(WarpOp op, float v, int from, SourcePlace where) {
  return BitCast<float>(static_cast<uint32_t>(WarpExchange(op, BitCast<uint32_t>(v), from, where)));
}
inline int32_t ReduceI32(WarpOp op, int32_t v, int from, SourcePlace where) {
  return static_cast<int32_t>(static_cast<uint32_t>(WarpExchange(op, static_cast<uint32_t>(v), from, where)));
}
inline void ArgMax(float& v, int32_t& at, int from, SourcePlace where) {
  const uint64_t r = WarpExchange(WarpOp::kArgMaxF32,
                                  uint64_t{static_cast<uint32_t>(at)} << 32 | BitCast<uint32_t>(v), from, where);
  v = BitCast<float>(static_cast<uint32_t>(r));
  at = static_cast<int32_t>(static_cast<uint32_t>(r >> 32));
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
