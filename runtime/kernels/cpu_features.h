#pragma once
// What the CPU can execute, and which kernel ISA level Strata runs at.
//
// Kernel code for one ISA lives only in files named *_avx2.cc / *_avx512.cc
// (compiled with that ISA's flags, cmake/StrataFlags.cmake) and is only ever
// called after CpuSupports() said yes for its level. Everything else, this file
// included, is compiled for baseline x86-64 and never executes an instruction
// the CPU may lack.
//
// Levels and what they require (all of it, including the OS saving the
// registers, checked with XGETBV):
//   kScalar  nothing: the reference vec_dot for every type
//   kAvx2    AVX2, FMA, F16C, BMI2; OS saves YMM state
//   kAvx512  kAvx2 plus AVX-512 F, BW, VL, DQ and VNNI; OS saves ZMM/opmask state
//
// The level is chosen at run time: the best one the CPU supports, unless a
// program forces one (ForceIsa, e.g. from a -isa flag) or the environment
// variable STRATA_ISA=scalar|avx2|avx512 asks for one. Asking for a level the
// CPU lacks is an error (a Status), never a crash.

#include <optional>
#include <string>
#include <string_view>

#include "runtime/base/status.h"

namespace strata {

// CPUID/XGETBV results that the kernels care about. All false on non-x86.
struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool bmi2 = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;  // detected and reported; no kernel needs it
  bool avx_vnni = false;    // VEX-encoded VNNI (reported only)
  bool os_saves_ymm = false;  // XCR0 bits 1-2 (SSE and AVX state)
  bool os_saves_zmm = false;  // XCR0 bits 5-7 (opmask, ZMM_Hi256, Hi16_ZMM)
  std::string brand;          // "Intel(R) Xeon(R) ..." when CPUID has it
};

// The features of the CPU this process runs on (detected once, thread-safe).
const CpuFeatures& HostCpuFeatures();
// Runs CPUID/XGETBV now (what HostCpuFeatures caches).
CpuFeatures DetectCpuFeatures();

enum class IsaLevel : uint8_t { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };
inline constexpr IsaLevel kAllIsaLevels[] = {IsaLevel::kScalar, IsaLevel::kAvx2, IsaLevel::kAvx512};
// The entry for `level` among a kernel's scalar reference and its AVX2 and
// AVX-512 versions (what each kernel family's *For(level) returns).
template <class T>
constexpr T PickForIsa(IsaLevel level, T scalar, T avx2, T avx512) {
  switch (level) {
    case IsaLevel::kAvx512: return avx512;
    case IsaLevel::kAvx2: return avx2;
    case IsaLevel::kScalar: break;
  }
  return scalar;
}

// "scalar", "avx2", "avx512".
std::string_view IsaName(IsaLevel level);
// Parses an ISA name (case-insensitive). kInvalidArgument lists the valid names.
Result<IsaLevel> ParseIsaLevel(std::string_view name);

// True if a CPU with `features` can run kernels of `level`.
bool CpuSupports(IsaLevel level, const CpuFeatures& features);
inline bool CpuSupports(IsaLevel level) { return CpuSupports(level, HostCpuFeatures()); }
// The highest level `features` supports.
IsaLevel BestIsa(const CpuFeatures& features);
inline IsaLevel BestIsa() { return BestIsa(HostCpuFeatures()); }
// "avx2 fma f16c bmi2 avx512f ... (os: ymm zmm)" for logs.
std::string DescribeCpuFeatures(const CpuFeatures& features);

// The pure rule behind SelectIsa, testable with made-up features: `forced` if
// set, else `env` (the STRATA_ISA value; nullptr or "" when unset), else the
// best level. Errors (kInvalidArgument / kUnsupported) name the level asked
// for, where it came from and what the CPU lacks.
Result<IsaLevel> ResolveIsa(std::optional<IsaLevel> forced, const char* env, const CpuFeatures& features);

// Process-wide override, e.g. from a command-line flag or a test. nullopt
// clears it. Errors (and changes nothing) if the CPU cannot run `level`.
Status ForceIsa(std::optional<IsaLevel> level);
// The level to run at now: ResolveIsa(forced level, getenv("STRATA_ISA"), host).
Result<IsaLevel> SelectIsa();

}  // namespace strata
