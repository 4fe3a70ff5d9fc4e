#pragma once
// Runs one kernel launch on the software GPU with CUDA's execution model
// (sgpu.h's header comment, docs/gpu.md "The software GPU"):
//   * blocks one after another on each host thread; with several host
//     threads, each takes the next block from a shared counter and has
//     fibers of its own;
//   * the threads of a block are fibers; a fiber runs until it waits at
//     __syncthreads or at a warp operation, then the next runnable one runs;
//     one pass over the block's runnable threads is a round, and rounds
//     alternate the order (ascending thread index, then descending; odd
//     blocks start descending), so code that assumes lockstep warps breaks
//     whichever lane runs first;
//   * after a round every thread waits or has exited. Each warp whose lanes
//     all wait at the same operation from the same place completes it (the
//     shuffle and ballot results are computed then); if none did, the
//     barrier opens when every thread of the block waits at __syncthreads
//     from the same place. Anything else can never progress and is refused.
//
// Threads are numbered linearly, x fastest (x + y * blockDim.x + z *
// blockDim.x * blockDim.y), and warp w holds threads [w * warp, (w+1) * warp):
// the last warp of a block whose size is no multiple of the warp size has
// fewer lanes, and a warp operation needs only the lanes that exist. A
// shuffle that reads a lane that does not exist (undefined on hardware)
// gets 0xffffffff (a NaN as float); a ballot counts such lanes as false.

#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/gpu/software/kernel_registry.h"
#include "runtime/gpu/software/sgpu.h"

namespace strata::sgpu {

// Launch limits, as CUDA has them on every GPU since Kepler.
inline constexpr uint32_t kMaxThreadsPerBlock = 1024;
inline constexpr uint32_t kMaxBlockDimXY = 1024;
inline constexpr uint32_t kMaxBlockDimZ = 64;
inline constexpr uint32_t kMaxGridDimX = 0x7fffffffu;
inline constexpr uint32_t kMaxGridDimYZ = 65535;
// Shared memory (static + dynamic) of one block: 48 KiB, as every CUDA GPU
// gives without opt-in; up to 99 KiB with SetMaxDynamicShared. 99 KiB is the
// opt-in limit of sm_86, sm_89 and sm_120 (RTX 30xx, 40xx, 50xx), the
// smallest among the GPUs the backend targets after Turing (A100 has 163 KiB,
// H100 and H200 227; Turing's 64 KiB would need a variant of its own), so a
// kernel that runs here within it runs on all of them.
inline constexpr uint32_t kSharedPerBlock = 48u << 10;
inline constexpr uint32_t kSharedPerBlockOptIn = 99u << 10;

// What a shuffle reads from a lane that does not exist.
inline constexpr uint64_t kMissingLaneValue = 0xffffffffu;

struct LaunchSpec {
  const RegisteredKernel* kernel = nullptr;
  Dim grid{1, 1, 1};
  Dim block{1, 1, 1};
  uint32_t dynamic_shared = 0;
  uint32_t shared_limit = kSharedPerBlock;  // static + dynamic bytes one block may use
  const void* args = nullptr;               // kernel->args_bytes bytes, suitably aligned
};

// The launch's shape against the limits above: every dimension at least 1,
// the block's threads and dimensions, the grid's dimensions, the dynamic
// shared bytes against shared_limit. Errors: kInvalidArgument naming the
// kernel and what is out of range.
Status CheckLaunchShape(const LaunchSpec& launch);

class BlockWorker;  // one host thread's fibers and block state (block_scheduler.cc)

class BlockScheduler {
 public:
  // `host_threads` (at least 1) run blocks at once.
  BlockScheduler(uint32_t warp_size, int host_threads);
  ~BlockScheduler();
  BlockScheduler(const BlockScheduler&) = delete;
  BlockScheduler& operator=(const BlockScheduler&) = delete;

  // Runs every block of the launch. Errors: kInternal for what the model
  // refuses (a barrier or warp operation that can never complete, shared
  // memory declared differently or beyond shared_limit), naming the kernel,
  // the block, the threads and the places: no block starts after it, and the
  // fibers of the failed block are abandoned (their stacks are reused by the
  // next launch). kResourceExhausted when fiber stacks cannot be made.
  // REQUIRES: CheckLaunchShape(launch) is OK.
  Status Run(const LaunchSpec& launch);

  uint32_t warp_size() const { return warp_size_; }

 private:
  uint32_t warp_size_;
  std::vector<std::unique_ptr<BlockWorker>> workers_;
};

}  // namespace strata::sgpu
