#pragma once
// The backends this build can make, as one table (backend_factory.cc): for
// each, its name for --backend, how to make it, and where it places the
// weights it multiplies. Adding a backend is its folder and one entry there.
//
//   cpu           the CPU backend over the fast engine (SIMD kernels, threads)
//   reference     the CPU backend over the reference engine (dequantize and dot)
//   sim           the sim backend over the fast engine (sim_backend.h)
//   cuda, hip     the GPU backend (runtime/gpu/) on the device's driver
//   software-gpu  the GPU backend on the software GPU (a test device)
// and `auto` (the default), which is not a backend but a choice among them:
// the first device backend whose device opens, else cpu (ChooseAuto).

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "runtime/base/status.h"
#include "runtime/model/backend.h"

namespace strata {

struct BackendOptions {
  std::string kind = "cpu";  // a name of the table (--backend)
  int threads = 0;           // the backend's threads; 0: all cores
  // Made to answer the memory plan's questions only (BufferPlace,
  // WorkspaceBytes, ResidentWeightBytes, ScratchBytes, AddPlanLines,
  // StagingBytes), so `strata-run PACK --plan --backend X` works on a machine
  // without X's device: no device is opened, no weights are uploaded, and no
  // pass may run on it. The CPU backends: no difference.
  bool plan_only = false;
  // Made without the weights: the caller binds them (Backend::Bind) once the
  // memory plan fits, so a device's plan is checked before its weights are
  // uploaded (LoadRun). The CPU backends read the host mapping: no difference.
  bool defer_bind = false;
};

// What MakeBackend makes: the backend, and the CPU engine that host-side
// work beside it (the host expert tier) runs on: the backend itself when it
// computes on the CPU; null for a device backend, whose run makes a CPU
// engine of its own when it needs one (load_run.h HostTierEngine).
struct MadeBackend {
  std::unique_ptr<Backend> backend;
  CpuBackend* cpu = nullptr;
};

// One entry of the table.
struct BackendKind {
  std::string_view name;     // for --backend
  std::string_view summary;  // for --backend's help
  // Where its kernels multiply the weights (Backend::WeightPlacement): the
  // decode-copy choice asks that placement's kernels about each type.
  Placement weights = Placement::kCpu;
  // One kernel path for every type (the reference engine): no type is faster
  // native than as its Q8_0 copy, so --decode-copies auto keeps native bytes.
  bool one_path_for_every_type = false;
  // When this one cannot be made and the caller allows it (the server), the
  // backend to run on instead, with a note; empty: none.
  std::string_view fall_back_to;
  // Tried by --backend auto, in table order, before the CPU.
  bool tried_by_auto = false;
  // Makes the backend for `model` (bound to it unless options.plan_only).
  // Errors: a matrix it cannot multiply (naming the tensor and the type), a
  // device that cannot be opened.
  Result<MadeBackend> (*make)(const Model& model, const BackendOptions& options) = nullptr;
};

// Every backend of this build, cpu first.
std::span<const BackendKind> BackendKinds();

// --backend auto: the first backend of the table tried by auto whose device
// opens, made (unbound: defer_bind), and its kind; else the cpu kind and no
// backend, with why each was passed over in `why` ("cuda: no CUDA driver ...").
struct AutoChoice {
  const BackendKind* kind = nullptr;
  std::unique_ptr<Backend> backend;  // set for a device backend
  std::string why;
};
AutoChoice ChooseAuto(const Model& model, int threads);

// A backend that cannot multiply one of the model's matrices is an error, at
// load, naming the tensor and the type: never NaN (or garbage) out of a run.
Status CheckEveryMatrixRuns(const Model& model, const Backend& backend, std::string_view name);
// The entry named `name`. Errors: kInvalidArgument naming the choices.
Result<const BackendKind*> ParseBackendKind(std::string_view name);
// "cpu, reference or sim": the names, for messages.
std::string BackendKindNames();

// The backend options.kind names, made for `model`: it refuses, naming it, a
// matrix it cannot multiply, and holds the model's weights (Backend::Bind)
// when it returns (unless plan_only).
Result<MadeBackend> MakeBackend(const Model& model, const BackendOptions& options);
// The sim backend over `engine` (a fast or reference CPU backend), bound to `model`.
Result<std::unique_ptr<CpuBackend>> MakeSimBackend(const Model& model, std::unique_ptr<CpuBackend> engine);

// --decode-copies: points the model at its Q8_0 decode copies as `policy`
// ("auto", "native", "copies") says for a backend of `kind`, before that
// backend is made (its notes then describe the bytes that run). Returns how
// many tensors now read their copy.
Result<size_t> ApplyDecodeCopies(Model& model, std::string_view policy, const BackendKind& kind);

}  // namespace strata
