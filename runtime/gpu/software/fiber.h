#pragma once
// Fibers for the software GPU: every GPU thread of a block runs on a stack of
// its own, and control passes between it and the block scheduler only by
// explicit switches (no OS threads, no preemption).
//
//   Linux x86-64: a stack switch of our own (fiber.cc: six registers and the
//            stack pointer) on stacks this file maps, each with an
//            inaccessible guard page below it, so a kernel that overflows
//            its stack faults. Other POSIX systems: Boost.Context's fcontext
//            on the same stacks.
//   Windows: CreateFiberEx / SwitchToFiber (Boost.Context is not built for
//            MinGW in Debian). The OS allocates those stacks, with its own
//            guard page.
//
// Switch cost, measured by sgpu_device_test's SoftwareGpuSpeed (one switch
// is half a Resume + Suspend round trip) on the 2-core build machine (AMD
// EPYC), docs/gpu.md. ucontext's swapcontext is not used: it saves and
// restores the signal mask with a system call at every switch (about 1 us),
// and a tiled kernel switches every thread at every barrier of every tile.
//
// Under AddressSanitizer every switch is announced
// (__sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber),
// otherwise ASan takes the fiber's stack for a stack overflow of the host
// thread's, and a stack is unpoisoned before it is used again, since an
// abandoned fiber leaves the redzones of its live frames behind.
//
// A fiber runs on the host thread that Resumes it; a fiber that was suspended
// must be resumed on the same host thread (compilers keep thread-local
// addresses across calls).

#include <cstddef>
#include <cstdint>
#include <memory>

#include "runtime/base/platform.h"
#include "runtime/base/status.h"

namespace strata::sgpu {

// Runs on the fiber's stack; when it returns, the fiber is finished.
using FiberEntry = void (*)(void* arg);

class Fiber {
 public:
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Usable stack bytes per fiber: 64 KiB, 256 KiB under ASan (its redzones
  // and unmerged frames take about four times the room).
  static size_t StackBytes();

  // A fiber with its stack, not started. Errors: kResourceExhausted when the
  // stack cannot be mapped.
  static Result<std::unique_ptr<Fiber>> Create();

  // Arms the fiber to run entry(arg) from the top of its stack at the next
  // Resume. Whatever it was doing is abandoned: a fiber suspended half way
  // is simply forgotten, and nothing on its stack is destroyed (so code that
  // runs on fibers must not own objects that need destructors; sgpu.h).
  // Errors: kResourceExhausted (Windows: a fiber cannot be created).
  Status Start(FiberEntry entry, void* arg);

  // From the host thread's own stack (never from a fiber): runs the fiber
  // until it calls Suspend or its entry returns. REQUIRES: Start, and not
  // finished(); the calling thread holds a FiberHostThread (Windows).
  void Resume();

  // From inside this fiber: back to the host thread, whose Resume (of this
  // fiber or of one that switched to it) returns.
  void Suspend();

  // From inside this fiber: straight on to `next` (started, or suspended by
  // Suspend or SwitchTo; not finished), without passing through the host, which
  // halves the switches of a round of the block scheduler. `next` resumes
  // where it left off, and its Suspend returns to the same Resume.
  void SwitchTo(Fiber& next);

  // The entry returned (since the last Start).
  bool finished() const { return finished_; }

 private:
  friend struct FiberBody;  // the entry trampoline (fiber.cc)
  Fiber() = default;
#ifdef _WIN32
  void* handle_ = nullptr;  // the OS fiber
  bool in_body_ = false;    // entered and not finished: Start must replace it
#else
  GuardedMemory stack_;     // guard page, then StackBytes() usable
  uint8_t* stack_bottom_ = nullptr;  // the lowest usable byte
  void* context_ = nullptr; // where the fiber resumes
  void* fake_stack_ = nullptr;  // ASan's: the fake stack saved while suspended
#endif
  FiberEntry entry_ = nullptr;
  void* arg_ = nullptr;
  bool finished_ = false;
};

// Windows switches only between fibers: an object of this class makes the
// calling host thread one for its lifetime (and turns it back, if it made
// it). Nothing elsewhere. Check ok() before resuming fibers.
class FiberHostThread {
 public:
  FiberHostThread();
  ~FiberHostThread();
  FiberHostThread(const FiberHostThread&) = delete;
  FiberHostThread& operator=(const FiberHostThread&) = delete;
  Status ok() const { return status_; }

 private:
  Status status_;
#ifdef _WIN32
  bool converted_ = false;
#endif
};

}  // namespace strata::sgpu
