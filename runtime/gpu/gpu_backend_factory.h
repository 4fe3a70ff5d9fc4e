#pragma once
// The GPU backends' entries of the backend table (runtime/model/backend_factory.cc):
// cuda, hip, and software-gpu (the software GPU: a test device).

#include "runtime/gpu/device.h"
#include "runtime/model/backend_factory.h"

namespace strata {

// The GPU backend of `kind` for `model`: device 0 opened (none when
// options.plan_only: the backend then only answers the memory plan), every
// matrix checked against the kernels, the weights uploaded unless
// options.defer_bind. Errors: kUnsupported with the reason the device cannot
// be used (no driver, no device, no image for it in this build) and what to
// do; a matrix without a kernel, naming it; device memory.
Result<MadeBackend> MakeGpuBackend(const Model& model, const BackendOptions& options, gpu::DeviceKind kind);

}  // namespace strata
