#pragma once
// The one load routine: strata-run and the server both open a pack and
// prepare a run through it, so they cannot drift apart. Read top to bottom:
//
//   LoadRun:          open the pack (checksums if asked), make the model, point
//                     it at its decode copies (--decode-copies), make the
//                     backend (which refuses a matrix it cannot multiply,
//                     naming it), resolve and check the context length.
//   PlanAndAllocate:  PlanRun (run_memory.h: the inputs, then the plan as
//                     lines); for --plan, the plan alone; a plan that does
//                     not fit is an error with the numbers and what to
//                     change; else AllocateRun walks the lines.
//
// Each step that a user should hear about prints one line to stderr,
// prefixed with `LoadOptions::who`.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "runtime/base/status.h"
#include "runtime/memory/run_memory.h"
#include "runtime/model/backend.h"
#include "runtime/model/backend_factory.h"
#include "runtime/model/model.h"
#include "runtime/pack/pack_reader.h"

namespace strata {

struct LoadOptions {
  std::string pack;
  bool verify = false;                  // verify every blob's checksum at load
  int threads = 0;                      // backend threads (and checksum threads); 0: all cores
  std::string decode_copies = "auto";   // --decode-copies auto|native|copies
  // --backend: a name of the backend table (backend_factory.h), or auto:
  // the first GPU whose device opens (cuda, hip), else the CPU, said once;
  // and, when that GPU's memory does not hold the plan, the CPU, said once.
  std::string backend = "auto";
  // --plan: the backend only answers the plan's questions (BackendOptions::plan_only).
  bool plan_only = false;
  // When the backend cannot be made: run on the one its table entry falls
  // back to (cpu: reference), with a note (the server's choice), instead of
  // failing (strata-run's).
  bool allow_fall_back = false;
  int64_t n_ctx = 0;                    // positions; 0: the training context, at most 4096
  bool mtp = false;                     // run the pack's MTP block too (Model::EnableMtp; --spec mtp)
  std::string who = "strata-run";       // prefix of the notes printed to stderr
};

struct LoadedRun {
  std::unique_ptr<Pack> pack;
  std::unique_ptr<Model> model;  // on the heap: the backend and the run's memory keep its address
  std::unique_ptr<Backend> backend;
  // The CPU engine the host expert tier runs on: the backend itself on a CPU
  // run; null beside a device backend (HostTierEngine says what then).
  CpuBackend* host_engine = nullptr;
  // Beside a device backend: the host tier's own CPU engine (HostTierEngine
  // makes it when the plan splits the experts).
  std::unique_ptr<CpuBackend> own_host_engine;
  int64_t n_ctx = 0;             // resolved and checked against the training context
  // A device backend made before its plan was checked: PlanAndAllocate
  // uploads the weights (Bind) once the plan fits.
  bool bind_pending = false;
  // The backend --backend auto chose for a device: a plan that does not fit
  // it moves the run to the CPU instead of refusing.
  bool auto_device = false;
  LoadOptions options;           // what it was loaded with (to move it to the CPU)
};

Result<LoadedRun> LoadRun(const LoadOptions& options);

// The CPU engine for the host expert tier of a plan that has expert tiers:
// the run's own backend on a CPU run; beside a device backend, a
// FastBackend of its own (the run's threads, bound to the model), made once
// and owned by the run.
Result<CpuBackend*> HostTierEngine(LoadedRun& run);

struct PlannedRun {
  RunSetup setup;                  // the plan (setup.plan) and what the allocations use
  std::optional<RunMemory> memory;  // unset for plan_only
};

// PlanRun for `shape`; plan_only returns the plan, fitting or not (the caller
// prints it and exits 0 only when it fits). Otherwise a plan that does not
// fit is ResourceExhausted with FormatRefusal's text, and one that fits is
// allocated (AllocateRun). The result must outlive the run (the expert
// executor uses its device and hotness), so it is returned on the heap.
// A run on a device --backend auto chose whose plan does not fit is moved
// to the CPU (run.backend and run.model are made anew), said once.
Result<std::unique_ptr<PlannedRun>> PlanAndAllocate(LoadedRun& run, const RunMemoryOptions& memory,
                                                    const RunShape& shape, bool plan_only, const std::string& who);

}  // namespace strata
