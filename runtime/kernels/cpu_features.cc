#include "runtime/kernels/cpu_features.h"

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "runtime/base/strings.h"

#include "runtime/base/compiler.h"

namespace strata {
namespace {

#if defined(STRATA_X86)
using compiler::Cpuid;
using compiler::CpuidRegs;
using compiler::Xcr0;

bool Bit(uint32_t reg, int bit) { return ((reg >> bit) & 1u) != 0; }
#endif

std::atomic<int> g_forced_isa{-1};  // -1: none, else an IsaLevel value

}  // namespace

CpuFeatures DetectCpuFeatures() {
  CpuFeatures f;
#if defined(STRATA_X86)
  const uint32_t max_leaf = Cpuid(0, 0).eax;
  if (max_leaf < 1) return f;
  const CpuidRegs l1 = Cpuid(1, 0);
  const bool osxsave = Bit(l1.ecx, 27);
  const bool avx = Bit(l1.ecx, 28);
  f.fma = Bit(l1.ecx, 12);
  f.f16c = Bit(l1.ecx, 29);
  if (osxsave && avx) {
    const uint64_t xcr0 = Xcr0();
    f.os_saves_ymm = (xcr0 & 0x6) == 0x6;
    f.os_saves_zmm = f.os_saves_ymm && (xcr0 & 0xE0) == 0xE0;
  }
  if (max_leaf >= 7) {
    const CpuidRegs l7 = Cpuid(7, 0);
    f.avx2 = Bit(l7.ebx, 5);
    f.bmi2 = Bit(l7.ebx, 8);
    f.avx512f = Bit(l7.ebx, 16);
    f.avx512dq = Bit(l7.ebx, 17);
    f.avx512bw = Bit(l7.ebx, 30);
    f.avx512vl = Bit(l7.ebx, 31);
    f.avx512vnni = Bit(l7.ecx, 11);
    if (l7.eax >= 1) {
      const CpuidRegs l71 = Cpuid(7, 1);
      f.avx_vnni = Bit(l71.eax, 4);
      f.avx512bf16 = Bit(l71.eax, 5);
    }
  }
  // Brand string: leaves 0x80000002..4, 16 bytes each.
  if (Cpuid(0x80000000u, 0).eax >= 0x80000004u) {
    char brand[49] = {};
    for (uint32_t i = 0; i < 3; ++i) {
      const CpuidRegs r = Cpuid(0x80000002u + i, 0);
      std::memcpy(brand + 16 * i + 0, &r.eax, 4);
      std::memcpy(brand + 16 * i + 4, &r.ebx, 4);
      std::memcpy(brand + 16 * i + 8, &r.ecx, 4);
      std::memcpy(brand + 16 * i + 12, &r.edx, 4);
    }
    std::string s(brand);
    const size_t first = s.find_first_not_of(' ');
    f.brand = first == std::string::npos ? "" : s.substr(first);
  }
#endif
  return f;
}

const CpuFeatures& HostCpuFeatures() {
  static const CpuFeatures features = DetectCpuFeatures();
  return features;
}

std::string_view IsaName(IsaLevel level) {
  switch (level) {
    case IsaLevel::kScalar: return "scalar";
    case IsaLevel::kAvx2: return "avx2";
    case IsaLevel::kAvx512: return "avx512";
  }
  return "unknown";
}

Result<IsaLevel> ParseIsaLevel(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (IsaLevel level : kAllIsaLevels)
    if (lower == IsaName(level)) return level;
  return InvalidArgument(StrFormat("unknown ISA level '%s': expected scalar, avx2 or avx512",
                                   Printable(name).c_str()));
}

bool CpuSupports(IsaLevel level, const CpuFeatures& f) {
  const bool avx2 = f.avx2 && f.fma && f.f16c && f.bmi2 && f.os_saves_ymm;
  switch (level) {
    case IsaLevel::kScalar: return true;
    case IsaLevel::kAvx2: return avx2;
    case IsaLevel::kAvx512:
      return avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni && f.os_saves_zmm;
  }
  return false;
}

IsaLevel BestIsa(const CpuFeatures& f) {
  if (CpuSupports(IsaLevel::kAvx512, f)) return IsaLevel::kAvx512;
  if (CpuSupports(IsaLevel::kAvx2, f)) return IsaLevel::kAvx2;
  return IsaLevel::kScalar;
}

std::string DescribeCpuFeatures(const CpuFeatures& f) {
  std::string s;
  auto add = [&s](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.f16c, "f16c");
  add(f.bmi2, "bmi2");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512dq, "avx512dq");
  add(f.avx512vnni, "avx512vnni");
  add(f.avx512bf16, "avx512bf16");
  add(f.avx_vnni, "avxvnni");
  if (s.empty()) s = "(no SIMD extensions Strata uses)";
  s += f.os_saves_zmm ? " (os: ymm zmm)" : f.os_saves_ymm ? " (os: ymm)" : " (os: no ymm state)";
  return s;
}

namespace {

// What a CPU lacks for `level`, for error messages.
std::string MissingFor(IsaLevel level, const CpuFeatures& f) {
  std::string s;
  auto need = [&s](bool have, const char* name) {
    if (have) return;
    if (!s.empty()) s += ", ";
    s += name;
  };
  if (level >= IsaLevel::kAvx2) {
    need(f.avx2, "AVX2");
    need(f.fma, "FMA");
    need(f.f16c, "F16C");
    need(f.bmi2, "BMI2");
    need(f.os_saves_ymm, "OS support for YMM state");
  }
  if (level >= IsaLevel::kAvx512) {
    need(f.avx512f, "AVX-512F");
    need(f.avx512bw, "AVX-512BW");
    need(f.avx512vl, "AVX-512VL");
    need(f.avx512dq, "AVX-512DQ");
    need(f.avx512vnni, "AVX-512 VNNI");
    need(f.os_saves_zmm, "OS support for ZMM state");
  }
  return s;
}

Status CheckSupported(IsaLevel level, std::string_view source, const CpuFeatures& f) {
  if (CpuSupports(level, f)) return Status::Ok();
  return Unsupported(StrFormat("%.*s asks for ISA level %.*s, but this CPU lacks %s (best level here: %.*s)",
                               static_cast<int>(source.size()), source.data(),
                               static_cast<int>(IsaName(level).size()), IsaName(level).data(),
                               MissingFor(level, f).c_str(), static_cast<int>(IsaName(BestIsa(f)).size()),
                               IsaName(BestIsa(f)).data()));
}

}  // namespace

Result<IsaLevel> ResolveIsa(std::optional<IsaLevel> forced, const char* env, const CpuFeatures& f) {
  if (forced) {
    STRATA_RETURN_IF_ERROR(CheckSupported(*forced, "the forced setting", f));
    return *forced;
  }
  if (env != nullptr && env[0] != '\0') {
    Result<IsaLevel> level = ParseIsaLevel(env);
    if (!level.ok()) return level.status().WithContext("STRATA_ISA");
    STRATA_RETURN_IF_ERROR(CheckSupported(*level, StrFormat("STRATA_ISA=%s", Printable(env).c_str()), f));
    return *level;
  }
  return BestIsa(f);
}

Status ForceIsa(std::optional<IsaLevel> level) {
  if (!level) {
    g_forced_isa.store(-1);
    return Status::Ok();
  }
  STRATA_RETURN_IF_ERROR(CheckSupported(*level, "the forced setting", HostCpuFeatures()));
  g_forced_isa.store(static_cast<int>(*level));
  return Status::Ok();
}

Result<IsaLevel> SelectIsa() {
  const int forced = g_forced_isa.load();
  std::optional<IsaLevel> f;
  if (forced >= 0) f = static_cast<IsaLevel>(forced);
  return ResolveIsa(f, std::getenv("STRATA_ISA"), HostCpuFeatures());
}

}  // namespace strata
