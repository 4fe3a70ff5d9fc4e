#include "runtime/gpu/gpu_backend_factory.h"

#include <thread>

#include "runtime/base/strings.h"
#include "runtime/gpu/gpu_backend.h"
#include "runtime/gpu/gpu_pass.h"

namespace strata {
namespace {

Result<std::unique_ptr<gpu::Device>> OpenDevice(gpu::DeviceKind kind, int threads) {
  switch (kind) {
    case gpu::DeviceKind::kCuda: return gpu::OpenCudaDevice(0);
    case gpu::DeviceKind::kHip: return gpu::OpenHipDevice(0);
    case gpu::DeviceKind::kSoftware: {
      gpu::SoftwareGpuOptions o;
      o.threads = threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      return gpu::OpenSoftwareGpu(o);
    }
  }
  return Internal("unknown device kind");
}

}  // namespace

Result<MadeBackend> MakeGpuBackend(const Model& model, const BackendOptions& options, gpu::DeviceKind kind) {
  std::unique_ptr<GpuBackend> b;
  if (options.plan_only) {
    b = GpuBackend::ForPlanning(kind);
  } else {
    auto device = OpenDevice(kind, options.threads);
    if (!device.ok())
      return Unsupported(StrFormat("--backend %s: %s", std::string(gpu::DeviceKindName(kind)).c_str(),
                                   device.status().message().c_str()));
    STRATA_ASSIGN_OR_RETURN(b, GpuBackend::Create(std::move(*device)));
  }
  STRATA_RETURN_IF_ERROR(CheckEveryMatrixRuns(model, *b, b->name()));
  if (!options.plan_only) {
    auto shapes = b->KernelShapes(model.hp());
    if (!shapes.ok()) return Unsupported(b->name() + ": " + shapes.status().message());
  }
  if (!options.plan_only && !options.defer_bind) STRATA_RETURN_IF_ERROR(b->Bind(model));
  return MadeBackend{std::move(b), nullptr};
}

}  // namespace strata
