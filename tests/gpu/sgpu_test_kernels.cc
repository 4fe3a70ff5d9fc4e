// Small kernels for the software GPU's tests (tests/sgpu_test.cc), written as
// the backend's kernels are (runtime/gpu/kernels/portable.h) and compiled as
// host C++ twice: here for 32-lane warps, and by sgpu_test_kernels_wave64.cc
// (which defines STRATA_SGPU_WARP_SIZE 64 and includes this file) for 64-lane
// wavefronts. Those that break a rule of portable.h on purpose say which.
// Comments "place: ..." mark lines the tests expect in messages.

#include <functional>
#include <thread>

#include "runtime/gpu/kernels/portable.h"
#include "tests/gpu/sgpu_test_args.h"

STRATA_GPU_BEGIN

// Block sum for any block of at least one full warp: each thread sums a
// grid-stride slice, the threads' sums meet in shared memory, warp 0 folds
// them and finishes with WarpSum.
STRATA_KERNEL(sgpu_test_block_sum, BlockSumArgs) {
  STRATA_SHARED(float, sums, 1024);
  const uint32_t t = threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  float v = 0.0f;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + t; i < a.n; i += stride) v += a.x[i];
  sums[t] = v;
  __syncthreads();
  if (WarpId() == 0) {
    float w = 0.0f;
    for (uint32_t j = t; j < blockDim.x; j += kWarpSize) w += sums[j];
    w = WarpSum(w);
    if (t == 0) a.partial[blockIdx.x] = w;
  }
}

// The usual block sum: WarpSum in every warp, the warps' sums through shared
// memory, WarpSum again in warp 0. Right only when every warp is full: in a
// block whose last warp is partial, that warp's WarpSum reads lanes that do
// not exist (undefined on hardware, NaN here).
STRATA_KERNEL(sgpu_test_warp_sum, BlockSumArgs) {
  STRATA_SHARED(float, warp_sums, 1024 / kWarpSize);
  const uint32_t t = threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  float v = 0.0f;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + t; i < a.n; i += stride) v += a.x[i];
  v = WarpSum(v);
  if (LaneId() == 0) warp_sums[WarpId()] = v;
  __syncthreads();
  if (WarpId() == 0) {
    const uint32_t warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
    float w = LaneId() < warps ? warp_sums[LaneId()] : 0.0f;
    w = WarpSum(w);
    if (t == 0) a.partial[blockIdx.x] = w;
  }
}

STRATA_KERNEL(sgpu_test_atomic_sum, AtomicSumArgs) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < a.n; i += stride) {
    AtomicAdd(a.total, a.x[i]);
    AtomicAdd(a.count, 1);
  }
}

// Lane i writes i + 1 to shared memory and reads lane (i ^ 1)'s value.
// Without the WarpSync (a.sync == 0) that breaks portable.h's rule: the read
// may come before the neighbour's write.
STRATA_KERNEL(sgpu_test_neighbor, NeighborArgs) {
  STRATA_SHARED(float, s, 1024);
  const uint32_t t = threadIdx.x;
  s[t] = static_cast<float>(LaneId() + 1);
  if (a.sync) WarpSync();
  a.out[blockIdx.x * blockDim.x + t] = s[t ^ 1];
}

STRATA_KERNEL(sgpu_test_warp_ops, WarpOpsArgs) {
  const uint32_t t = threadIdx.x;
  const int lane = static_cast<int>(LaneId());
  const int mine = lane * 7 + 5;
  a.ballot[t] = WarpBallot(lane % 3 == 0);
  a.broadcast[t] = WarpShfl(mine, 0);
  a.wrapped[t] = WarpShfl(mine, lane + static_cast<int>(kWarpSize));
  a.butterfly[t] = WarpShflXor(mine, static_cast<int>(kWarpSize) + 1);
  a.last[t] = WarpShfl(mine, static_cast<int>(kWarpSize) - 1);
  a.lanes[t] = LaneId() + 1000 * WarpId();
}

STRATA_KERNEL(sgpu_test_reductions, ReductionArgs) {
  const uint32_t t = threadIdx.x;
  const int from = a.from;
  float sum = a.x[t], mx = a.x[t], fmx = a.x[t], av = a.x[t];
  int32_t isum = a.ix[t], at = a.ix[t];
  uint32_t bits = static_cast<uint32_t>(a.ix[t]);
  for (int m = from; m > 0; m >>= 1) {
    sum += WarpShflXor(sum, m);
    isum += WarpShflXor(isum, m);
    const float om = WarpShflXor(mx, m);
    mx = om > mx ? om : mx;
    fmx = DevFmax(fmx, WarpShflXor(fmx, m));
    bits |= WarpShflXor(bits, m);
    const float ov = WarpShflXor(av, m);
    const int32_t oi = WarpShflXor(at, m);
    if (ov > av || (ov == av && oi < at)) av = ov, at = oi;
  }
  uint32_t* loop = a.loop + 7 * t;
  loop[0] = FloatToBits(sum), loop[1] = static_cast<uint32_t>(isum), loop[2] = FloatToBits(mx);
  loop[3] = FloatToBits(fmx), loop[4] = bits, loop[5] = FloatToBits(av), loop[6] = static_cast<uint32_t>(at);
  float fav = a.x[t];
  int32_t fat = a.ix[t];
  WarpArgMax(fav, fat, from);
  uint32_t* fused = a.fused + 7 * t;
  fused[0] = FloatToBits(WarpSum(a.x[t], from));
  fused[1] = static_cast<uint32_t>(WarpSum(a.ix[t], from));
  fused[2] = FloatToBits(WarpMax(a.x[t], from));
  fused[3] = FloatToBits(WarpFmax(a.x[t], from));
  fused[4] = WarpOr(static_cast<uint32_t>(a.ix[t]), from);
  fused[5] = FloatToBits(fav), fused[6] = static_cast<uint32_t>(fat);
}

STRATA_KERNEL(sgpu_test_coords, CoordsArgs) {
  const uint32_t threads = blockDim.x * blockDim.y * blockDim.z;
  const uint32_t thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const uint32_t block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  uint32_t* out = a.out + 2 * (static_cast<uint64_t>(block) * threads + thread);
  out[0] = threadIdx.x | threadIdx.y << 10 | threadIdx.z << 20;
  out[1] = blockIdx.x | blockIdx.y << 10 | blockIdx.z << 20;
}

STRATA_KERNEL(sgpu_test_dynamic_shared, DynamicSharedArgs) {
  STRATA_DYNAMIC_SHARED(float, d);
  const int t = static_cast<int>(threadIdx.x);
  const int step = static_cast<int>(blockDim.x);
  for (int i = t; i < a.n; i += step) a.before[i] = d[i];
  __syncthreads();
  for (int i = t; i < a.n; i += step) d[i] = static_cast<float>(i) * 0.5f;
  __syncthreads();
  for (int i = t; i < a.n; i += step) a.after[i] = d[a.n - 1 - i];
}

// --- kernels that break a rule, each refused -----------------------------------

// Threads 0-16 return before a __syncthreads the others reach.
STRATA_KERNEL(sgpu_test_exit_before_barrier, RefusalArgs) {
  if (threadIdx.x < 17) return;
  __syncthreads();  // place: after exit
  a.out[threadIdx.x] = 1.0f;
}

// Even and odd threads wait at two different __syncthreads.
STRATA_KERNEL(sgpu_test_two_barriers, RefusalArgs) {
  if (threadIdx.x % 2 == 0) {
    __syncthreads();  // place: even
  } else {
    __syncthreads();  // place: odd
  }
  a.out[threadIdx.x] = 1.0f;
}

// Lane 5 of every warp returns before the others shuffle.
STRATA_KERNEL(sgpu_test_shuffle_after_exit, RefusalArgs) {
  if (LaneId() == 5) return;
  a.out[threadIdx.x] = WarpShflXor(1.0f, 1);  // place: shuffle
}

// Half of each warp waits at WarpSync, the other half at __syncthreads.
STRATA_KERNEL(sgpu_test_warp_op_and_barrier, RefusalArgs) {
  if (LaneId() < kWarpSize / 2) {
    WarpSync();  // place: half warp
  } else {
    __syncthreads();  // place: other half
  }
  a.out[threadIdx.x] = 1.0f;
}

// Thread 3 declares its shared array at another size than the others.
STRATA_KERNEL(sgpu_test_mismatched_shared, RefusalArgs) {
  STRATA_SHARED(float, s, threadIdx.x == 3 ? 64 : 32);  // place: mismatched
  s[threadIdx.x % 32] = 1.0f;
  a.out[threadIdx.x] = 1.0f;
}

// 1 KiB + 48 400 bytes of static shared memory: over the 48 KiB a block gets.
STRATA_KERNEL(sgpu_test_too_much_shared, RefusalArgs) {
  STRATA_SHARED(float, small, 256);
  STRATA_SHARED(float, big, 12100);  // place: too much
  small[threadIdx.x] = 1.0f;
  big[threadIdx.x] = 1.0f;
  a.out[threadIdx.x] = 1.0f;
}

// --- memory and speed ----------------------------------------------------------

STRATA_KERNEL(sgpu_test_read_at, ReadAtArgs) { a.out[0] = a.x[a.index]; }

STRATA_KERNEL(sgpu_test_write_at, WriteAtArgs) { a.x[a.index] = a.value; }

// `barriers` times: write shared memory, __syncthreads, read the next
// thread's value (double-buffered, so one barrier per round suffices).
// Thread t ends with (t + barriers) % blockDim.x + barriers.
STRATA_KERNEL(sgpu_test_barriers, BarrierArgs) {
  STRATA_SHARED(float, s, 2048);
  const uint32_t t = threadIdx.x;
  float v = static_cast<float>(t);
  for (int r = 0; r < a.barriers; ++r) {
    float* buf = s + (r % 2) * 1024;
    buf[t] = v;
    __syncthreads();
    v = buf[(t + 1) % blockDim.x] + 1.0f;
  }
  a.out[blockIdx.x * blockDim.x + t] = v;
}

// Software GPU only (a device has no host thread id): which host thread ran
// each block.
STRATA_KERNEL(sgpu_test_host_thread, HostThreadArgs) {
  for (int r = 0; r < a.barriers; ++r) __syncthreads();
  if (threadIdx.x == 0) a.thread_of_block[blockIdx.x] = std::hash<std::thread::id>()(std::this_thread::get_id());
}

STRATA_GPU_END
