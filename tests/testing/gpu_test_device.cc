#include "tests/testing/gpu_test_device.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>

namespace strata::testing {
namespace {

std::string_view Requested() {
  const char* v = std::getenv("STRATA_TEST_DEVICE");
  return v && *v ? std::string_view(v) : std::string_view("software");
}

}  // namespace

bool OnSoftwareGpu() { return Requested() == "software"; }

std::string TestDeviceBackend() { return OnSoftwareGpu() ? "software-gpu" : std::string(Requested()); }

Result<std::unique_ptr<gpu::Device>> OpenTestDevice(uint32_t warp) {
  const std::string_view kind = Requested();
  if (kind == "cuda") return gpu::OpenCudaDevice(0);
  if (kind == "hip") return gpu::OpenHipDevice(0);
  if (kind != "software")
    return InvalidArgument("STRATA_TEST_DEVICE='" + std::string(kind) + "': expected software, cuda or hip");
  gpu::SoftwareGpuOptions o;
  o.warp_size = warp;
  o.threads = 2;
  return gpu::OpenSoftwareGpu(o);
}

Result<std::unique_ptr<GpuBackend>> MakeTestGpuBackend(const Model& model, uint32_t warp) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<gpu::Device> d, OpenTestDevice(warp));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<GpuBackend> b, GpuBackend::Create(std::move(d)));
  STRATA_RETURN_IF_ERROR(b->Bind(model));
  return b;
}

GpuTestMatrix TestMatrix() {
#if defined(_WIN32)
  return GpuTestMatrix::kSmoke;
#elif defined(__SANITIZE_ADDRESS__)
  return GpuTestMatrix::kTails;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return GpuTestMatrix::kTails;
#else
  return GpuTestMatrix::kFull;
#endif
#else
  return GpuTestMatrix::kFull;
#endif
}

std::string TestMatrixName(GpuTestMatrix m) {
  switch (m) {
    case GpuTestMatrix::kFull: return "full";
    case GpuTestMatrix::kTails: return "one tail shape per kernel (sanitizer build)";
    case GpuTestMatrix::kSmoke: return "smoke subset (Windows build)";
  }
  return "?";
}

Result<std::vector<float>> PromptAndThreeSteps(const Model& m, Backend& be, SequenceState& state,
                                               ForwardOptions options) {
  STRATA_RETURN_IF_ERROR(state.Clear());
  std::vector<float> all, logits;
  options.all_logits = true;
  std::vector<int32_t> prompt;
  for (int i = 0; i < 9; ++i) prompt.push_back((i * 37 + 11) % static_cast<int32_t>(m.hp().n_vocab));
  STRATA_RETURN_IF_ERROR(Forward(m, be, state, prompt, options, &logits));
  all = logits;
  options.all_logits = false;
  for (int i = 0; i < 3; ++i) {
    const int32_t next = static_cast<int32_t>((i * 101 + 7) % m.hp().n_vocab);
    STRATA_RETURN_IF_ERROR(Forward(m, be, state, std::span(&next, 1), options, &logits));
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

double NormalizedError(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return std::numeric_limits<double>::infinity();
  double ss = 0, mx = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return std::numeric_limits<double>::infinity();
    ss += static_cast<double>(want[i]) * static_cast<double>(want[i]);
    mx = std::max(mx, std::abs(static_cast<double>(got[i]) - static_cast<double>(want[i])));
  }
  return mx / (std::sqrt(ss / static_cast<double>(want.size())) + 1e-30);
}

}  // namespace strata::testing
