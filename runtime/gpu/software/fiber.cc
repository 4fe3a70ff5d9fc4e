#include "runtime/gpu/software/fiber.h"

#include <cstdio>
#include <cstdlib>

#include "runtime/base/strings.h"

#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#elif !defined(__x86_64__) || defined(STRATA_FIBER_BOOST)
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
// POSIX: our own stacks, each with a guard page below it.
// ---------------------------------------------------------------------------
namespace {
// The host thread's side: where the Resume that runs its fibers saved its
// context, its stack's bounds (ASan's announcements need them when a fiber
// switches back), whether the switch in progress leaves the host, and the
// fiber it goes to.
struct HostSide {
  void* context = nullptr;
  const void* bottom = nullptr;
  size_t size = 0;
  bool from_host = false;
  Fiber* target = nullptr;
};
thread_local HostSide t_host;

#if defined(__x86_64__) && !defined(STRATA_FIBER_BOOST)
// ---------------------------------------------------------------------------
// x86-64 System V (Linux): our own stack switch. A switch pushes the six
// callee-saved registers on the leaving stack, stores its stack pointer,
// loads the other's and pops its six. Boost's fcontext also saves and
// restores MXCSR and the x87 control word (its fnstcw/fldcw pair drew most
// of its samples in a GPU conformance test's profile); the ABI makes those
// callee-saved too, but no kernel changes them (the fibers share the host
// thread's), so nothing is lost.
// ---------------------------------------------------------------------------
extern "C" {
// Saves the calling context's stack pointer in *save, continues the one at
// `to` (a pointer this function stored, or a fresh frame of Start's).
void strata_sgpu_stack_switch(void** save, void* to);
// A fresh frame's first return lands here: entry (r13) gets arg (r12).
void strata_sgpu_fiber_start();
}
asm(R"(
  .text
  .globl strata_sgpu_stack_switch
  .type strata_sgpu_stack_switch, @function
  .p2align 4
strata_sgpu_stack_switch:
  .cfi_startproc
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size strata_sgpu_stack_switch, .-strata_sgpu_stack_switch

  .globl strata_sgpu_fiber_start
  .type strata_sgpu_fiber_start, @function
  .p2align 4
strata_sgpu_fiber_start:
  .cfi_startproc
  .cfi_undefined rip
  movq %r12, %rdi
  callq *%r13
  ud2
  .cfi_endproc
  .size strata_sgpu_fiber_start, .-strata_sgpu_fiber_start
)");

void Switch(void** save, void* to) { strata_sgpu_stack_switch(save, to); }

// A fresh frame for strata_sgpu_stack_switch to pop: r15, r14, r13 (the
// body), r12 (its argument), rbx, rbp, then the return into
// strata_sgpu_fiber_start, whose call then finds the stack 16-byte aligned,
// as the ABI wants.
void* FreshContext(uint8_t* top_of_stack, size_t, void (*body)(Fiber*), Fiber* f) {
  const uintptr_t top = reinterpret_cast<uintptr_t>(top_of_stack) & ~uintptr_t{15};
  auto* frame = reinterpret_cast<uint64_t*>(top - 72);
  frame[0] = frame[1] = frame[4] = frame[5] = frame[7] = frame[8] = 0;
  frame[2] = reinterpret_cast<uint64_t>(body);
  frame[3] = reinterpret_cast<uint64_t>(f);
  frame[6] = reinterpret_cast<uint64_t>(&strata_sgpu_fiber_start);
  return frame;
}
#else
// ---------------------------------------------------------------------------
// Other POSIX systems (aarch64 Linux, ...): Boost.Context's fcontext.
// (STRATA_FIBER_BOOST selects it on x86-64 too, to compile and test it.)
// The side that jumps passes where its own context is to be kept; the side
// that lands stores it there.
// ---------------------------------------------------------------------------
namespace ctx = boost::context::detail;

void Switch(void** save, void* to) {
  const ctx::transfer_t t = ctx::jump_fcontext(to, save);
  *static_cast<void**>(t.data) = t.fctx;
}

void (*t_body)(Fiber*) = nullptr;  // the same for every fiber: FiberBody::Run

void FreshEntry(ctx::transfer_t t) {
  *static_cast<void**>(t.data) = t.fctx;
  t_body(t_host.target);
}

void* FreshContext(uint8_t* top_of_stack, size_t size, void (*body)(Fiber*), Fiber*) {
  t_body = body;
  return ctx::make_fcontext(top_of_stack, size, &FreshEntry);
}
#endif

// Arrival in a fiber: from the host, ASan tells the host stack's bounds.
void ArriveInFiber(void* fake_stack) {
  if (t_host.from_host) AnnounceArrival(fake_stack, &t_host.bottom, &t_host.size);
  else AnnounceArrival(fake_stack, nullptr, nullptr);
}
}  // namespace

struct FiberBody {
  // A fiber's first entry. It never returns: when the entry is done it
  // switches to the host for good.
  static void Run(Fiber* f) {
    ArriveInFiber(nullptr);
    f->entry_(f->arg_);
    f->finished_ = true;
    AnnounceSwitch(nullptr, t_host.bottom, t_host.size);
    Switch(&f->context_, t_host.context);
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
  context_ = FreshContext(stack_bottom_ + kStackBytes, kStackBytes, &FiberBody::Run, this);
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
  t_host.from_host = true;
  t_host.target = this;
  Switch(&t_host.context, context_);
  AnnounceArrival(host_fake_stack, nullptr, nullptr);
}

void Fiber::Suspend() {
  AnnounceSwitch(&fake_stack_, t_host.bottom, t_host.size);
  Switch(&context_, t_host.context);
  ArriveInFiber(fake_stack_);
}

void Fiber::SwitchTo(Fiber& next) {
  if (next.finished_) Die("SwitchTo a finished fiber");
  AnnounceSwitch(&fake_stack_, next.stack_bottom_, kStackBytes);
  t_host.from_host = false;
  t_host.target = &next;
  Switch(&context_, next.context_);
  ArriveInFiber(fake_stack_);
}

FiberHostThread::FiberHostThread() = default;
FiberHostThread::~FiberHostThread() = default;

#else
// ---------------------------------------------------------------------------
// Windows: the OS's fibers. A fiber's body loops, so a finished fiber runs
// its next entry without being created again.
// ---------------------------------------------------------------------------
namespace {
thread_local void* t_host_fiber = nullptr;  // the fiber of the host thread that resumed
}  // namespace

struct FiberBody {
  static void WINAPI Run(void* self) {
    Fiber* f = static_cast<Fiber*>(self);
    for (;;) {
      f->entry_(f->arg_);
      f->finished_ = true;
      f->in_body_ = false;
      SwitchToFiber(t_host_fiber);
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
  t_host_fiber = GetCurrentFiber();
  in_body_ = true;
  SwitchToFiber(handle_);
}

void Fiber::Suspend() { SwitchToFiber(t_host_fiber); }

void Fiber::SwitchTo(Fiber& next) {
  if (next.finished_) Die("SwitchTo a finished fiber");
  next.in_body_ = true;
  SwitchToFiber(next.handle_);
}

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
