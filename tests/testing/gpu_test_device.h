#pragma once
// The device the GPU tests run on: the software GPU by default (CI has no
// GPU); with STRATA_TEST_DEVICE=cuda (or hip) the real device 0, as
// scripts/device-check.sh runs them on a GPU machine. A device asked for
// that cannot be opened fails the test (never a silent skip).
//
// How much of a test's matrix runs depends on the build (the whole matrix
// in one build only): the optimized build runs all of it; a sanitizer build
// one tail shape per kernel; the Windows build under Wine a smoke subset.

#include <memory>
#include <string>
#include <vector>

#include "runtime/base/status.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/gpu_backend.h"
#include "runtime/model/forward.h"
#include "runtime/model/model.h"

namespace strata::testing {

// The kind STRATA_TEST_DEVICE names (software when unset). A real kind has one
// warp size; `warp` picks the software GPU's (32 or 64).
Result<std::unique_ptr<gpu::Device>> OpenTestDevice(uint32_t warp = 32);
// True when the tests run on the software GPU (warp sizes other than the
// device's own are tried there only).
bool OnSoftwareGpu();
// The --backend name of the test device (software-gpu, cuda or hip).
std::string TestDeviceBackend();

// A GPU backend on the test device, bound to `model`.
Result<std::unique_ptr<GpuBackend>> MakeTestGpuBackend(const Model& model, uint32_t warp = 32);

enum class GpuTestMatrix { kFull, kTails, kSmoke };
// This build's share: kFull (optimized), kTails (sanitizers), kSmoke (Windows).
GpuTestMatrix TestMatrix();
std::string TestMatrixName(GpuTestMatrix m);

// A 9-token prompt (every row's logits) and 3 decode steps on `state`
// (cleared first), with `options`' experts and workspace: the 12 rows'
// logits, or the first error. The GPU fault and expert-split tests' run.
Result<std::vector<float>> PromptAndThreeSteps(const Model& m, Backend& be, SequenceState& state,
                                               ForwardOptions options = {});

// max |got - want| over the RMS of want (infinity for a size mismatch or a
// non-finite value): how the GPU tests compare logits and activations.
double NormalizedError(const std::vector<float>& got, const std::vector<float>& want);

}  // namespace strata::testing
