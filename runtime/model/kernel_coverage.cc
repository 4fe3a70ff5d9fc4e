#include "runtime/model/kernel_coverage.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "runtime/gpu/images.h"
#include "runtime/gpu/kernel_table.h"
#include "runtime/kernels/gemm.h"
#include "runtime/kernels/vec_dot.h"

namespace strata {
namespace {

// The test hook's types (empty in the programs).
std::vector<GgmlType>& KernelLessTypes() {
  static std::vector<GgmlType> types;
  return types;
}

}  // namespace

std::string_view PlacementName(Placement p) {
  switch (p) {
    case Placement::kCpu: return "cpu";
    case Placement::kCuda: return "cuda";
    case Placement::kHip: return "hip";
  }
  return "unknown";
}

Result<Placement> ParsePlacement(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (Placement p : {Placement::kCpu, Placement::kCuda, Placement::kHip})
    if (lower == PlacementName(p)) return p;
  return InvalidArgument("target '" + std::string(name) + "': expected cpu, cuda or hip");
}

bool PlacementBuilt(Placement p) {
  switch (p) {
    case Placement::kCpu: return true;
    case Placement::kCuda: return gpu::CudaModuleImage() != nullptr;
    case Placement::kHip: return gpu::HipModuleImage() != nullptr;
  }
  return false;
}

KernelSupport GpuKernelSupport(GgmlType type) {
  const std::vector<GgmlType>& hook = KernelLessTypes();
  if (std::find(hook.begin(), hook.end(), type) != hook.end()) return KernelSupport::kNone;
  return gpu::KernelTable::CoversType(type) ? KernelSupport::kFast : KernelSupport::kNone;
}

KernelSupport KernelSupportAt(Placement p, GgmlType type, IsaLevel isa) {
  if (p == Placement::kCpu) return CpuKernelSupport(type, isa);
  return PlacementBuilt(p) ? GpuKernelSupport(type) : KernelSupport::kNone;
}

KernelSupport CpuKernelSupport(GgmlType type, IsaLevel isa) {
  const std::vector<GgmlType>& hook = KernelLessTypes();
  if (std::find(hook.begin(), hook.end(), type) != hook.end()) return KernelSupport::kNone;
  if (!HasVecDot(type)) return KernelSupport::kNone;
  return HasFastKernel(type, isa) ? KernelSupport::kFast : KernelSupport::kSlow;
}

bool IsMultipliedOnCpu(TensorRole role, uint32_t rank, bool tied_output) {
  if (rank < 2) return false;
  if (role == TensorRole::kTokenEmbd) return tied_output;  // row lookups dequantize; a tied head multiplies
  if (role == TensorRole::kNextnEmbedTokens) return false;   // row lookups only
  return true;
}

bool IsRoutedExpertRole(TensorRole role) {
  return role == TensorRole::kFfnGateExps || role == TensorRole::kFfnUpExps || role == TensorRole::kFfnDownExps;
}

bool IsRoutedExpert(const TensorView& t) { return t.expert_count > 0 && IsRoutedExpertRole(t.role); }

ScopedKernelLessTypesForTesting::ScopedKernelLessTypesForTesting(std::initializer_list<GgmlType> types)
    : previous_(KernelLessTypes()) {
  KernelLessTypes().assign(types.begin(), types.end());
}

ScopedKernelLessTypesForTesting::~ScopedKernelLessTypesForTesting() { KernelLessTypes() = previous_; }

}  // namespace strata
