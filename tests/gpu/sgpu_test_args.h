#pragma once
// The argument structs of the software GPU's test kernels
// (sgpu_test_kernels.cc), shared with sgpu_test.cc: one layout for the
// kernels of both warp sizes and the host that launches them.

#include <cstdint>

namespace strata::gpu {

// Sums x[0, n) per block into partial[blockIdx.x].
struct BlockSumArgs {
  const float* x;
  float* partial;
  int64_t n;
};

// Adds x[0, n) into *total with AtomicAdd, and counts the elements into *count.
struct AtomicSumArgs {
  const float* x;
  float* total;
  int* count;
  int64_t n;
};

// Each thread writes its lane number + 1 to shared memory and reads its
// neighbour's (lane ^ 1), with or without a WarpSync between.
struct NeighborArgs {
  float* out;  // one per thread of the grid
  int sync;
};

// Warp operations, each lane offering lane * 7 + 5: per thread, the ballot of
// (lane % 3 == 0), a broadcast of lane 0's value, a shuffle from lane +
// kWarpSize (wraps to the lane itself), a butterfly with lane mask
// kWarpSize + 1 (wraps to 1) and a shuffle from the warp's last lane.
struct WarpOpsArgs {
  uint64_t* ballot;
  int* broadcast;
  int* wrapped;
  int* butterfly;
  int* last;   // a shuffle from lane kWarpSize - 1 (missing in a partial warp)
  int* lanes;  // LaneId() + 1000 * WarpId()
};

// Each thread's value x and integer ix go through portable.h's butterfly
// reductions from lane mask `from`, twice: written out as the loop of xor
// shuffles (`loop`) and through the helpers (`fused`, one warp operation on
// the software GPU). Seven words a thread in each: WarpSum(float),
// WarpSum(int), WarpMax, WarpFmax, WarpOr, WarpArgMax's value and index.
struct ReductionArgs {
  const float* x;
  const int32_t* ix;
  int from;
  uint32_t* loop;
  uint32_t* fused;
};

// Every thread writes where it is: words 2 * ((block linear) * threads +
// (thread linear)) and the next get threadIdx and blockIdx, 10 bits a
// coordinate.
struct CoordsArgs {
  uint32_t* out;
};

// Dynamic shared memory: `n` floats of it are copied to before[] as the
// block found them, then written and read back into after[].
struct DynamicSharedArgs {
  float* before;
  float* after;
  int n;
};

// Refused kernels: they write nothing unless the model lets them run.
struct RefusalArgs {
  float* out;
};

// out[0] = x[index]: reads wherever index says.
struct ReadAtArgs {
  const float* x;
  int64_t index;
  float* out;
};

// x[index] = value.
struct WriteAtArgs {
  float* x;
  int64_t index;
  float value;
};

// Which host thread ran each block (a hash of its id), after `barriers`
// __syncthreads that give the block some length.
struct HostThreadArgs {
  uint64_t* thread_of_block;
  int barriers;
};

// `barriers` rounds of: write shared, __syncthreads, read a neighbour.
struct BarrierArgs {
  float* out;
  int barriers;
};

}  // namespace strata::gpu
