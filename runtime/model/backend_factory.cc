#include "runtime/model/backend_factory.h"

#include <functional>
#include <iterator>
#include <set>
#include <vector>

#include "runtime/base/strings.h"
#include "runtime/model/fast_backend.h"
#include "runtime/model/kernel_coverage.h"
#include "runtime/gpu/gpu_backend_factory.h"
#include "runtime/model/sim_backend.h"

namespace strata {
namespace {

// FastBackend plus what a user should know about it for this model.
class FastModelBackend : public CpuBackend {
 public:
  FastModelBackend(std::unique_ptr<FastBackend> b, std::vector<std::string> notes)
      : b_(std::move(b)), notes_(std::move(notes)) {}
  void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) override { b_->MatMul(w, x, n, y); }
  void MatMulBatch(std::span<const MatMulJob> jobs) override { b_->MatMulBatch(jobs); }
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn) override { b_->ParallelFor(n, fn); }
  int threads() const override { return b_->threads(); }
  uint64_t SyncWaitNs() const override { return b_->SyncWaitNs(); }
  std::string name() const override { return b_->name(); }
  std::vector<std::string> Notes() const override { return notes_; }
  bool CanMultiply(GgmlType type) const override { return b_->CanMultiply(type); }
  uint64_t ScratchBytes(GgmlType type, int64_t cols, int64_t n) const override { return b_->ScratchBytes(type, cols, n); }
  uint64_t BatchScratchBytes(GgmlType type, int64_t cols, int64_t n) const override {
    return b_->BatchScratchBytes(type, cols, n);
  }
  Status ReserveScratch(uint64_t bytes) override { return b_->ReserveScratch(bytes); }
  const kernels::AttnKernels& attention() const override { return b_->attention(); }

 private:
  std::unique_ptr<FastBackend> b_;
  std::vector<std::string> notes_;
};

// Every tensor the forward pass multiplies (with the bytes that will run:
// a decode copy once ApplyDecodeCopies chose it).
std::vector<const TensorView*> MultipliedTensors(const Model& model) {
  std::vector<const TensorView*> out;
  auto add = [&](const TensorView* t) {
    if (t && IsMultipliedOnCpu(t->role, t->rank, model.hp().tied_output)) out.push_back(t);
  };
  for (size_t r = 0; r < static_cast<size_t>(TensorRole::kCount); ++r) {
    add(model.Get(static_cast<TensorRole>(r)));
    for (uint32_t il = 0; il < model.run_layers(); ++il) add(model.Get(static_cast<int32_t>(il), static_cast<TensorRole>(r)));
  }
  return out;
}

}  // namespace

Status CheckEveryMatrixRuns(const Model& model, const Backend& backend, std::string_view name) {
  for (const TensorView* t : MultipliedTensors(model)) {
    if (backend.CanMultiply(t->type)) continue;
    return Unsupported(StrFormat("tensor '%s' is %s, which the %s backend cannot multiply in this build; "
                                 "repack with --decode-copies q8_0 (strata-pack) to give it a Q8_0 copy",
                                 std::string(t->name).c_str(), std::string(TypeName(t->type)).c_str(),
                                 std::string(name).c_str()));
  }
  return Status::Ok();
}

namespace {

// A CPU backend is its own CPU engine.
MadeBackend OnTheCpu(std::unique_ptr<CpuBackend> b) {
  CpuBackend* cpu = b.get();
  return MadeBackend{std::move(b), cpu};
}

// The CPU backend over FastBackend, with a note naming the model's types
// that have no SIMD kernel here.
Result<std::unique_ptr<CpuBackend>> MakeFastCpu(const Model& model, int threads) {
  FastBackend::Options o;
  o.threads = threads;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<FastBackend> fast, FastBackend::Create(o));
  STRATA_RETURN_IF_ERROR(CheckEveryMatrixRuns(model, *fast, "fast CPU"));
  std::set<GgmlType> types;
  for (const TensorView* t : MultipliedTensors(model)) types.insert(t->type);
  std::vector<GgmlType> list(types.begin(), types.end());
  std::vector<std::string> notes;
  std::vector<GgmlType> slow = fast->SlowTypes(list);
  if (!slow.empty()) {
    std::string names;
    for (GgmlType t : slow) names += (names.empty() ? "" : ", ") + std::string(TypeName(t));
    notes.push_back(StrFormat("no fast kernel on this CPU (%s) for %s: those products run the scalar reference "
                              "kernel (correct, slower)",
                              fast->name().c_str(), names.c_str()));
  }
  std::unique_ptr<CpuBackend> b(new FastModelBackend(std::move(fast), std::move(notes)));
  STRATA_RETURN_IF_ERROR(b->Bind(model));
  return b;
}

// --- the table's makers (a CPU backend ignores plan_only: planning touches nothing) ---

Result<MadeBackend> MakeCpu(const Model& model, const BackendOptions& o) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<CpuBackend> b, MakeFastCpu(model, o.threads));
  return OnTheCpu(std::move(b));
}

Result<MadeBackend> MakeReference(const Model& model, const BackendOptions& /*o*/) {
  std::unique_ptr<CpuBackend> ref(new ReferenceBackend());
  STRATA_RETURN_IF_ERROR(CheckEveryMatrixRuns(model, *ref, "reference"));
  STRATA_RETURN_IF_ERROR(ref->Bind(model));
  return OnTheCpu(std::move(ref));
}

Result<MadeBackend> MakeSim(const Model& model, const BackendOptions& o) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<CpuBackend> engine, MakeFastCpu(model, o.threads));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<CpuBackend> sim, MakeSimBackend(model, std::move(engine)));
  return OnTheCpu(std::move(sim));
}

Result<MadeBackend> MakeCuda(const Model& model, const BackendOptions& o) {
  return MakeGpuBackend(model, o, gpu::DeviceKind::kCuda);
}
Result<MadeBackend> MakeHip(const Model& model, const BackendOptions& o) {
  return MakeGpuBackend(model, o, gpu::DeviceKind::kHip);
}
Result<MadeBackend> MakeSoftwareGpu(const Model& model, const BackendOptions& o) {
  return MakeGpuBackend(model, o, gpu::DeviceKind::kSoftware);
}

// The backends of this build. The CPU ones place their weights on the CPU
// (sim's copy is multiplied by CPU kernels too); the GPU ones on their
// device (the software GPU runs the CUDA kernels' source: its placement is
// cuda's), where their kernels answer for each type.
constexpr BackendKind kKinds[] = {
    {"cpu", "SIMD kernels, threads", Placement::kCpu, false, "reference", false, MakeCpu},
    {"reference", "plain dequantize-and-dot, one thread", Placement::kCpu, true, "", false, MakeReference},
    {"sim",
     "the cpu kernels on memory the forward pass cannot touch, counting transfers: proves the execution seam; slow",
     Placement::kCpu, false, "", false, MakeSim},
    {"cuda", "an NVIDIA GPU through its driver (device 0)", Placement::kCuda, false, "", true, MakeCuda},
    {"hip", "an AMD GPU through HIP (device 0)", Placement::kHip, false, "", true, MakeHip},
    {"software-gpu", "the GPU kernels on the software GPU, a test device: many times slower than cpu",
     Placement::kCuda, false, "", false, MakeSoftwareGpu},
};

}  // namespace

std::span<const BackendKind> BackendKinds() { return kKinds; }

std::string BackendKindNames() {
  std::string out;
  for (size_t i = 0; i < std::size(kKinds); ++i)
    out += (i == 0 ? "" : i + 1 == std::size(kKinds) ? " or " : ", ") + std::string(kKinds[i].name);
  return out;
}

AutoChoice ChooseAuto(const Model& model, int threads) {
  AutoChoice c;
  for (const BackendKind& k : kKinds) {
    if (!k.tried_by_auto) continue;
    BackendOptions o;
    o.kind = std::string(k.name);
    o.threads = threads;
    o.defer_bind = true;
    auto made = k.make(model, o);
    if (made.ok()) {
      c.kind = &k;
      c.backend = std::move(made->backend);
      return c;
    }
    c.why += (c.why.empty() ? "" : "; ") + made.status().message();
  }
  c.kind = &kKinds[0];
  return c;
}

Result<const BackendKind*> ParseBackendKind(std::string_view name) {
  for (const BackendKind& k : kKinds)
    if (k.name == name) return &k;
  return InvalidArgument(StrFormat("unknown backend '%s': expected %s", Printable(name).c_str(),
                                   BackendKindNames().c_str()));
}

Result<std::unique_ptr<CpuBackend>> MakeSimBackend(const Model& model, std::unique_ptr<CpuBackend> engine) {
  std::unique_ptr<CpuBackend> sim(new SimBackend(std::move(engine)));
  STRATA_RETURN_IF_ERROR(sim->Bind(model));
  return sim;
}

Result<MadeBackend> MakeBackend(const Model& model, const BackendOptions& options) {
  STRATA_ASSIGN_OR_RETURN(const BackendKind* kind, ParseBackendKind(options.kind));
  return kind->make(model, options);
}

Result<size_t> ApplyDecodeCopies(Model& model, std::string_view policy, const BackendKind& kind) {
  STRATA_ASSIGN_OR_RETURN(DecodeCopyPolicy p, ParseDecodeCopyPolicy(policy));
  IsaLevel isa = IsaLevel::kScalar;
  if (!kind.one_path_for_every_type) {
    STRATA_ASSIGN_OR_RETURN(isa, SelectIsa());
  }
  if (kind.one_path_for_every_type && p == DecodeCopyPolicy::kAuto) p = DecodeCopyPolicy::kNative;
  // Keyed by placement: each tensor asks the kernels of where it runs.
  const Placement placement = kind.weights;
  // A GPU asks its kernels (the same source for every device, the software
  // GPU's included), whether or not this build embeds a device image.
  return model.UseDecodeCopies(p, [placement, isa](const TensorView& t) {
    const KernelSupport s =
        placement == Placement::kCpu ? KernelSupportAt(placement, t.type, isa) : GpuKernelSupport(t.type);
    return s == KernelSupport::kFast;
  });
}

}  // namespace strata
