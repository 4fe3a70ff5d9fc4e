#pragma once
// Kernel coverage: which weight types this build can multiply, where, and
// how fast. One source of truth for the packer (convert or refuse), the
// validator (strata-validate --target) and strata-run (which tensors read
// their Q8_0 decode copies). docs/experts.md explains the rules.
//
// Placements: the CPU (always built) and GPUs (CUDA, HIP), built when this
// build embeds that device's images (runtime/gpu/images.h; the configure step
// says which). A GPU has one kernel source for every type (runtime/gpu/
// kernels): a type is kFast there when the device kernels cover it, else
// kNone (there is no slow scalar path on a device). A check for a GPU this
// build has no images for says so instead of pretending.
//
// On the CPU a type is
//   kFast  a SIMD kernel exists at the ISA level asked about (gemm.h tables);
//   kSlow  only the scalar reference vec_dot (correct, several times slower);
//   kNone  no kernel at all: the runtime cannot compute it.
// Pack-time decisions use kBaselineServingIsa (AVX2): a pack is written once
// and served on many machines, and AVX2 is the lowest level Strata ships
// SIMD kernels for (an AVX-512 machine runs every AVX2 kernel too).

#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "runtime/arch/arch_spec.h"
#include "runtime/base/status.h"
#include "runtime/kernels/cpu_features.h"
#include "runtime/pack/pack_reader.h"
#include "runtime/quant/ggml_type.h"

namespace strata {

enum class Placement : uint8_t { kCpu = 0, kCuda = 1, kHip = 2 };
std::string_view PlacementName(Placement p);  // "cpu", "cuda", "hip"
// Parses "cpu", "cuda" or "hip" (case-insensitive).
Result<Placement> ParsePlacement(std::string_view name);
// True when this build can run on the placement: the CPU always; CUDA or HIP
// when this build embeds that device's module image.
bool PlacementBuilt(Placement p);

inline constexpr IsaLevel kBaselineServingIsa = IsaLevel::kAvx2;

// How much slower a type with only the scalar kernel runs than its Q8_0
// decode copy on a SIMD kernel, as measured (bench/results/decode-copies.md),
// for messages: "... run the scalar reference vec_dot, <this> a SIMD kernel ...".
inline constexpr const char* kScalarKernelSlowdown = "3-12x slower in decode (13-39x in prefill) than";

enum class KernelSupport : uint8_t { kNone = 0, kSlow = 1, kFast = 2 };

// What the CPU backend has for `type` at `isa` in this build.
KernelSupport CpuKernelSupport(GgmlType type, IsaLevel isa = kBaselineServingIsa);
// What the GPU kernels have for `type` (the same on CUDA and HIP: kFast or
// kNone), whether or not this build embeds a device image.
KernelSupport GpuKernelSupport(GgmlType type);
// What a placement's backend has for `type` (the CPU's at `isa`; kNone where
// this build has no backend for the placement).
KernelSupport KernelSupportAt(Placement p, GgmlType type, IsaLevel isa = kBaselineServingIsa);

// True for tensors the forward pass multiplies with a kernel (MatMul): every
// matrix except the token embedding, which is only looked up by row unless
// the output head is tied to it. 1-D tensors (norms, biases) are read as F32.
bool IsMultipliedOnCpu(TensorRole role, uint32_t rank, bool tied_output);
// Routed expert tensors (ffn_{gate,up,down}_exps).
bool IsRoutedExpertRole(TensorRole role);
// A routed expert tensor: one of those roles, with its experts stacked.
bool IsRoutedExpert(const TensorView& t);

// Test hook: makes CpuKernelSupport and GpuKernelSupport report kNone for these types (as if this
// build had no kernel for them) while the object lives. Not thread-safe;
// one at a time. Only tests use it; nothing in the programs does.
class ScopedKernelLessTypesForTesting {
 public:
  explicit ScopedKernelLessTypesForTesting(std::initializer_list<GgmlType> types);
  ~ScopedKernelLessTypesForTesting();
  ScopedKernelLessTypesForTesting(const ScopedKernelLessTypesForTesting&) = delete;
  ScopedKernelLessTypesForTesting& operator=(const ScopedKernelLessTypesForTesting&) = delete;

 private:
  std::vector<GgmlType> previous_;
};

}  // namespace strata
