#include "runtime/memory/load_run.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "runtime/base/strings.h"
#include "runtime/memory/plan_format.h"
#include "runtime/model/backend_factory.h"
#include "runtime/model/fast_backend.h"

namespace strata {

Result<LoadedRun> LoadRun(const LoadOptions& o) {
  LoadedRun run;
  PackOpenOptions po;
  po.verify_checksums = o.verify;
  po.threads = o.threads;
  STRATA_ASSIGN_OR_RETURN(run.pack, Pack::Open(o.pack, po));
  STRATA_ASSIGN_OR_RETURN(Model model, Model::Create(*run.pack));
  if (o.mtp) STRATA_RETURN_IF_ERROR(model.EnableMtp().WithContext("--spec mtp"));
  run.model = std::make_unique<Model>(std::move(model));

  run.options = o;
  // --backend auto: a GPU if one opens (made before the decode-copy choice,
  // which asks the kernels where the weights will be).
  AutoChoice chosen;
  const BackendKind* kind = nullptr;
  if (o.backend == "auto") {
    chosen = ChooseAuto(*run.model, o.threads);
    kind = chosen.kind;
    if (!chosen.backend)
      std::fprintf(stderr, "%s: no GPU to run on (%s); running on the CPU (--backend cpu to not look)\n",
                   o.who.c_str(), chosen.why.c_str());
  } else {
    STRATA_ASSIGN_OR_RETURN(kind, ParseBackendKind(o.backend));
  }
  auto switched = ApplyDecodeCopies(*run.model, o.decode_copies, *kind);
  if (!switched.ok()) return switched.status().WithContext("--decode-copies");
  if (*switched > 0)
    std::fprintf(stderr, "%s: %zu tensors read their Q8_0 decode copies (--decode-copies %s)\n", o.who.c_str(),
                 *switched, o.decode_copies.c_str());

  BackendOptions bo;
  bo.kind = std::string(kind->name);
  bo.threads = o.threads;
  bo.plan_only = o.plan_only;
  bo.defer_bind = true;
  Result<MadeBackend> made = chosen.backend ? Result<MadeBackend>(MadeBackend{std::move(chosen.backend), nullptr})
                                            : MakeBackend(*run.model, bo);
  if (!made.ok() && o.allow_fall_back && !kind->fall_back_to.empty()) {
    std::fprintf(stderr, "%s: note: the %s backend is not available (%s); running on the %s backend, which is "
                 "much slower\n", o.who.c_str(), std::string(kind->name).c_str(), made.status().message().c_str(),
                 std::string(kind->fall_back_to).c_str());
    bo.kind = std::string(kind->fall_back_to);
    made = MakeBackend(*run.model, bo);
  }
  if (!made.ok()) return made.status();
  run.backend = std::move(made->backend);
  run.host_engine = made->cpu;
  run.auto_device = o.backend == "auto" && kind->tried_by_auto;
  run.bind_pending = !o.plan_only && run.backend->BufferPlace().kind == MemoryPlace::Kind::kDevice;
  if (run.auto_device)
    std::fprintf(stderr, "%s: running on %s (--backend auto)\n", o.who.c_str(), run.backend->name().c_str());
  for (const std::string& note : run.backend->Notes()) std::fprintf(stderr, "%s: %s\n", o.who.c_str(), note.c_str());

  const HParams& hp = run.model->hp();
  run.n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min<int64_t>(hp.n_ctx_train, 4096);
  if (run.n_ctx > hp.n_ctx_train)
    return InvalidArgument(StrFormat("-c %lld is more than the model's training context %u (its GGUF's "
                                     "context_length, which counts any RoPE scaling the model was made with)",
                                     static_cast<long long>(run.n_ctx), hp.n_ctx_train));
  return run;
}

Result<CpuBackend*> HostTierEngine(LoadedRun& run) {
  if (run.host_engine) return run.host_engine;
  if (!run.own_host_engine) {
    FastBackend::Options fo;
    fo.threads = run.options.threads;
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<FastBackend> cpu, FastBackend::Create(fo));
    STRATA_RETURN_IF_ERROR(cpu->Bind(*run.model));
    run.own_host_engine = std::move(cpu);
  }
  return run.own_host_engine.get();
}

Result<std::unique_ptr<PlannedRun>> PlanAndAllocate(LoadedRun& run, const RunMemoryOptions& memory,
                                                    const RunShape& shape, bool plan_only, const std::string& who) {
  auto planned = std::make_unique<PlannedRun>();
  STRATA_ASSIGN_OR_RETURN(planned->setup, PlanRun(*run.pack, *run.model, *run.backend, memory, shape));
  if (!plan_only && !planned->setup.plan.Fits() && run.auto_device) {
    // --backend auto chose a GPU whose memory does not hold the run: the CPU
    // runs it instead (--backend cuda would refuse with these numbers).
    std::string problems;
    for (const std::string& p : planned->setup.plan.Problems()) problems += (problems.empty() ? "" : "; ") + p;
    std::fprintf(stderr, "%s: the plan does not fit %s (%s); running on the CPU\n", who.c_str(),
                 run.backend->name().c_str(), problems.c_str());
    LoadOptions cpu = run.options;
    cpu.backend = "cpu";
    run.backend.reset();
    STRATA_ASSIGN_OR_RETURN(LoadedRun moved, LoadRun(cpu));
    run = std::move(moved);
    STRATA_ASSIGN_OR_RETURN(planned->setup, PlanRun(*run.pack, *run.model, *run.backend, memory, shape));
  }
  if (plan_only) return planned;
  const MemoryPlan& plan = planned->setup.plan;
  if (!plan.Fits()) return ResourceExhausted(FormatRefusal(plan));
  if (run.bind_pending) {
    const auto t0 = std::chrono::steady_clock::now();
    // The split: the routed experts stay in host RAM (the host tier reads
    // the mapping; the device tier's slots are filled at AllocateRun).
    STRATA_RETURN_IF_ERROR(planned->setup.split ? run.backend->BindWithoutRoutedExperts(*run.model)
                                                : run.backend->Bind(*run.model));
    run.bind_pending = false;
    std::fprintf(stderr, "%s: weights on %s: %s in %.2f s\n", who.c_str(), run.backend->name().c_str(),
                 HumanBytes(run.backend->transfers().weight_bytes).c_str(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::fprintf(stderr, "%s: %s\n", who.c_str(), PlanSummary(plan).c_str());
  CpuBackend* host_engine = nullptr;
  if (plan.Find(PlanItem::kExpertSlots)) {
    STRATA_ASSIGN_OR_RETURN(host_engine, HostTierEngine(run));
  }
  STRATA_ASSIGN_OR_RETURN(RunMemory mem, AllocateRun(*run.model, *run.backend, host_engine, planned->setup));
  planned->memory.emplace(std::move(mem));
  const Backend::LargePageCounts lp = run.backend->large_pages();
  std::string large = planned->setup.large_pages;
  if (run.backend->large_page_bytes())
    large = StrFormat("large pages: %llu buffer%s, %s%s", static_cast<unsigned long long>(lp.buffers),
                      lp.buffers == 1 ? "" : "s",
                      HumanBytes(lp.bytes).c_str(),
                      lp.refused ? StrFormat(" (%llu refused by the OS: ordinary pages)",
                                             static_cast<unsigned long long>(lp.refused)).c_str()
                                 : "");
  std::fprintf(stderr, "%s: %s\n", who.c_str(), large.c_str());
  if (planned->memory->experts)
    std::fprintf(stderr, "%s: %s\n", who.c_str(), planned->memory->experts->Describe().c_str());
  return planned;
}

}  // namespace strata
