#pragma once
// Compiler specifics in one place: attributes, pragmas, builtins and the two
// x86 instructions (CPUID, XGETBV) that need them. GCC and clang on Linux and
// MinGW-w64; an MSVC branch where it costs one line. OS calls live in the
// platform layer (runtime/base/platform.h), not here.

#include <cstdint>

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#define STRATA_MSVC 1
#elif defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
#define STRATA_X86 1
#endif

// printf-style format checking for a function's format argument `f` and its
// first variadic argument `a`. MinGW's GCC checks plain `printf` against the
// Microsoft runtime's dialect (no %zu, %llu); the runtime Strata links is
// MinGW's C99-conforming one (libstdc++ turns on __USE_MINGW_ANSI_STDIO), so
// the GNU dialect is the right check there.
#if defined(STRATA_MSVC)
#define STRATA_PRINTF_FORMAT(f, a)
#elif defined(__MINGW32__) && !defined(__clang__)
#define STRATA_PRINTF_FORMAT(f, a) __attribute__((format(gnu_printf, f, a)))
#else
#define STRATA_PRINTF_FORMAT(f, a) __attribute__((format(printf, f, a)))
#endif

// Unrolls the next loop completely (bounds are template constants).
#if defined(STRATA_MSVC)
#define STRATA_UNROLL
#elif defined(__clang__)
#define STRATA_UNROLL _Pragma("unroll 16")
#else
#define STRATA_UNROLL _Pragma("GCC unroll 16")
#endif

// Stops the program at once (fuzz targets' invariant checks).
#if defined(STRATA_MSVC)
#define STRATA_TRAP() __debugbreak()
#else
#define STRATA_TRAP() __builtin_trap()
#endif

namespace strata::compiler {

// *out = a + b or a * b; false when the exact result does not fit T.
template <typename T>
[[nodiscard]] inline bool AddOverflows(T a, T b, T* out) {
  return __builtin_add_overflow(a, b, out);
}
template <typename T>
[[nodiscard]] inline bool MulOverflows(T a, T b, T* out) {
  return __builtin_mul_overflow(a, b, out);
}

#if defined(STRATA_X86)
struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};
// CPUID(leaf, subleaf); all zero when the leaf is beyond the CPU's maximum.
inline CpuidRegs Cpuid(uint32_t leaf, uint32_t subleaf) {
  CpuidRegs r;
#if defined(STRATA_MSVC)
  int max[4], out[4];
  __cpuid(max, static_cast<int>(leaf & 0x80000000u));
  if (static_cast<uint32_t>(max[0]) < leaf) return r;
  __cpuidex(out, static_cast<int>(leaf), static_cast<int>(subleaf));
  r = {static_cast<uint32_t>(out[0]), static_cast<uint32_t>(out[1]), static_cast<uint32_t>(out[2]),
       static_cast<uint32_t>(out[3])};
#else
  if (!__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx)) return CpuidRegs{};
#endif
  return r;
}
// XGETBV(0): which register states the OS saves on a context switch.
// REQUIRES: CPUID.1:ECX.OSXSAVE (otherwise the instruction faults).
inline uint64_t Xcr0() {
#if defined(STRATA_MSVC)
  return _xgetbv(0);
#else
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
#endif
}
#endif

}  // namespace strata::compiler
