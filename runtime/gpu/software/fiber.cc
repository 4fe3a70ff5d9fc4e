#include "runtime/gpu/software/fiber.h"

#include <cstdio>
#include <cstdlib>

#include "runtime/base/strings.h"

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <boost/context/detail/fcontext.hpp>
#endif

// AddressSanitizer: GCC says __SANITIZE_ADDRESS__, clang __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define STRATA_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_FIBER_ASAN 1
#endif
#endif
#ifdef STRATA_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace strata::sgpu {
namespace {

#ifdef STRATA_FIBER_ASAN
constexpr size_t kStackBytes = 256u << 10;
#else
constexpr size_t kStackBytes = 64u << 10;
#endif

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "software GPU: fiber: %s\n", what);
  std::abort();
}

#ifndef _WIN32
// ASan's fiber announcements (no-ops without ASan). `save`: where to keep
// the leaving fiber's fake stack, or nullptr when the leaving fiber is
// finished (ASan frees it then).
#ifdef STRATA_FIBER_ASAN
void AnnounceSwitch(void** save, const void* bottom, size_t size) { __sanitizer_start_switch_fiber(save, bottom, size); }
void AnnounceArrival(void* saved, const void** from_bottom, size_t* from_size) {
  __sanitizer_finish_switch_fiber(saved, from_bottom, from_size);
}
#else
void AnnounceSwitch(void**, const void*, size_t) {}
void AnnounceArrival(void*, const void**, size_t*) {}
#endif
#endif

}  // namespace

size_t Fiber::StackBytes() { return kStackBytes; }

#ifndef _WIN32
// ---------------------------------------------------------------------------
// Linux and other POSIX systems: fcontext on our own stacks.
// ---------------------------------------------------------------------------
namespace ctx = boost::context::detail;

struct FiberBody {
  // First entry of a fiber: `t.fctx` is the Resume that jumped here, `t.data`
  // the fiber. The function must never return (fcontext would exit the
  // thread): when the entry is done it jumps back for good.
  static void Run(ctx::transfer_t t) {
    Fiber* f = static_cast<Fiber*>(t.data);
    f->caller_ = t.fctx;
    AnnounceArrival(nullptr, &f->caller_bottom_, &f->caller_size_);
    f->entry_(f->arg_);
    f->finished_ = true;
    AnnounceSwitch(nullptr, f->caller_bottom_, f->caller_size_);
    ctx::jump_fcontext(f->caller_, nullptr);
    Die("a finished fiber was resumed");
  }
};

Fiber::~Fiber() = default;

Result<std::unique_ptr<Fiber>> Fiber::Create() {
  const uint64_t page = PageBytes();
  std::unique_ptr<Fiber> f(new Fiber());
  STRATA_ASSIGN_OR_RETURN(f->stack_, GuardedMemory::Allocate(page + kStackBytes, "a software GPU fiber stack"));
  // The stack grows down: the page below its lowest address faults.
  STRATA_RETURN_IF_ERROR(f->stack_.SetAccess(GuardedMemory::Access::kNone, 0, page));
  f->stack_bottom_ = f->stack_.data() + page;
  f->finished_ = true;
  return f;
}

Status Fiber::Start(FiberEntry entry, void* arg) {
#ifdef STRATA_FIBER_ASAN
  __asan_unpoison_memory_region(stack_bottom_, kStackBytes);
#endif
  context_ = ctx::make_fcontext(stack_bottom_ + kStackBytes, kStackBytes, &FiberBody::Run);
  fake_stack_ = nullptr;
  entry_ = entry;
  arg_ = arg;
  finished_ = false;
  return Status::Ok();
}

void Fiber::Resume() {
  if (finished_) Die("Resume of a finished fiber");
  void* host_fake_stack = nullptr;
  AnnounceSwitch(&host_fake_stack, stack_bottom_, kStackBytes);
  const ctx::transfer_t t = ctx::jump_fcontext(context_, this);
  AnnounceArrival(host_fake_stack, nullptr, nullptr);
  context_ = t.fctx;  // where it suspended (unused once finished)
}

void Fiber::Suspend() {
  AnnounceSwitch(&fake_stack_, caller_bottom_, caller_size_);
  const ctx::transfer_t t = ctx::jump_fcontext(caller_, nullptr);
  AnnounceArrival(fake_stack_, &caller_bottom_, &caller_size_);
  caller_ = t.fctx;
}

FiberHostThread::FiberHostThread() = default;
FiberHostThread::~FiberHostThread() = default;

#else
// ---------------------------------------------------------------------------
// Windows: the OS's fibers. A fiber's body loops, so a finished fiber runs
// its next entry without being created again.
// ---------------------------------------------------------------------------
struct FiberBody {
  static void WINAPI Run(void* self) {
    Fiber* f = static_cast<Fiber*>(self);
    for (;;) {
      f->entry_(f->arg_);
      f->finished_ = true;
      f->in_body_ = false;
      SwitchToFiber(f->caller_);
    }
  }
};

Fiber::~Fiber() {
  if (handle_) DeleteFiber(handle_);
}

Result<std::unique_ptr<Fiber>> Fiber::Create() {
  std::unique_ptr<Fiber> f(new Fiber());
  f->finished_ = true;
  return f;
}

Status Fiber::Start(FiberEntry entry, void* arg) {
  if (handle_ && in_body_) {  // abandoned half way: its stack cannot be rewound
    DeleteFiber(handle_);
    handle_ = nullptr;
  }
  if (!handle_) {
    handle_ = CreateFiberEx(0, kStackBytes, 0, &FiberBody::Run, this);
    if (!handle_)
      return ResourceExhausted(StrFormat("software GPU: CreateFiberEx with a %s stack failed (Windows error %lu)",
                                         HumanBytes(kStackBytes).c_str(), GetLastError()));
  }
  entry_ = entry;
  arg_ = arg;
  finished_ = false;
  return Status::Ok();
}

void Fiber::Resume() {
  if (finished_) Die("Resume of a finished fiber");
  caller_ = GetCurrentFiber();
  in_body_ = true;
  SwitchToFiber(handle_);
}

void Fiber::Suspend() { SwitchToFiber(caller_); }

FiberHostThread::FiberHostThread() {
  if (IsThreadAFiber()) return;
  if (ConvertThreadToFiber(nullptr)) {
    converted_ = true;
  } else {
    status_ = Internal(StrFormat("software GPU: ConvertThreadToFiber failed (Windows error %lu)", GetLastError()));
  }
}

FiberHostThread::~FiberHostThread() {
  if (converted_) ConvertFiberToThread();
}
#endif

}  // namespace strata::sgpu
