#include "runtime/model/backend_factory.h"

#include <functional>
#include <set>
#include <vector>

#include "runtime/base/strings.h"
#include "runtime/model/fast_backend.h"
#include "runtime/model/kernel_coverage.h"
#include "runtime/model/sim_backend.h"
#include "runtime/quant/dequantize.h"

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

}  // namespace

namespace {

// Every tensor the forward pass multiplies (with the bytes that will run:
// a decode copy once ApplyDecodeCopies chose it).
std::vector<const TensorView*> MultipliedTensors(const Model& model) {
  std::vector<const TensorView*> out;
  auto add = [&](const TensorView* t) {
    if (t && IsMultipliedOnCpu(t->role, t->rank, model.hp().tied_output)) out.push_back(t);
  };
  for (size_t r = 0; r < static_cast<size_t>(TensorRole::kCount); ++r) {
    add(model.Get(static_cast<TensorRole>(r)));
    for (uint32_t il = 0; il < model.hp().n_layer; ++il) add(model.Get(static_cast<int32_t>(il), static_cast<TensorRole>(r)));
  }
  return out;
}

// A backend that cannot compute a matrix's type is an error here, at load,
// naming the tensor: never NaN (or garbage) out of a run.
Status CheckEveryMatrixRuns(const std::vector<const TensorView*>& tensors, std::string_view backend,
                            const std::function<bool(GgmlType)>& runs) {
  for (const TensorView* t : tensors) {
    if (runs(t->type)) continue;
    return Unsupported(StrFormat("tensor '%s' is %s, which the %s backend cannot multiply in this build; "
                                 "repack with --decode-copies q8_0 (strata-pack) to give it a Q8_0 copy",
                                 std::string(t->name).c_str(), std::string(TypeName(t->type)).c_str(),
                                 std::string(backend).c_str()));
  }
  return Status::Ok();
}

}  // namespace

std::string_view BackendKindName(BackendKind k) {
  switch (k) {
    case BackendKind::kReference: return "reference";
    case BackendKind::kFast: return "cpu";
    case BackendKind::kSim: return "sim";
  }
  return "?";
}

Result<BackendKind> ParseBackendKind(std::string_view name) {
  if (name == "cpu") return BackendKind::kFast;
  if (name == "reference") return BackendKind::kReference;
  if (name == "sim") return BackendKind::kSim;
  return InvalidArgument(StrFormat("unknown backend '%.*s': expected cpu, reference or sim", static_cast<int>(name.size()),
                                   name.data()));
}

Result<std::unique_ptr<CpuBackend>> MakeSimBackend(const Model& model, std::unique_ptr<CpuBackend> engine) {
  std::unique_ptr<CpuBackend> sim(new SimBackend(std::move(engine)));
  STRATA_RETURN_IF_ERROR(sim->Bind(model));
  return sim;
}

Result<std::unique_ptr<CpuBackend>> MakeBackend(const Model& model, BackendKind kind, int threads) {
  if (kind == BackendKind::kSim) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<CpuBackend> engine, MakeBackend(model, BackendKind::kFast, threads));
    return MakeSimBackend(model, std::move(engine));
  }
  const std::vector<const TensorView*> multiplied = MultipliedTensors(model);
  if (kind == BackendKind::kReference) {
    STRATA_RETURN_IF_ERROR(CheckEveryMatrixRuns(multiplied, "reference", [](GgmlType t) { return HasDequantizer(t); }));
    std::unique_ptr<CpuBackend> ref(new ReferenceBackend());
    STRATA_RETURN_IF_ERROR(ref->Bind(model));
    return ref;
  }
  FastBackend::Options o;
  o.threads = threads;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<FastBackend> fast, FastBackend::Create(o));
  STRATA_RETURN_IF_ERROR(
      CheckEveryMatrixRuns(multiplied, "fast CPU", [&](GgmlType t) { return fast->Choice(t).supported; }));
  // Which weight types this model multiplies, and which of them have no SIMD kernel.
  std::set<GgmlType> types;
  for (const TensorView* t : multiplied) types.insert(t->type);
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

namespace {
// Where a backend of `kind` keeps its weights (Backend::WeightPlacement): the
// CPU for every kind this build has.
Placement WeightPlacementOf(BackendKind kind) {
  switch (kind) {
    case BackendKind::kReference:
    case BackendKind::kFast:
    case BackendKind::kSim: return Placement::kCpu;
  }
  return Placement::kCpu;
}
}  // namespace

Result<size_t> ApplyDecodeCopies(Model& model, std::string_view policy, BackendKind kind) {
  STRATA_ASSIGN_OR_RETURN(DecodeCopyPolicy p, ParseDecodeCopyPolicy(policy));
  IsaLevel isa = IsaLevel::kScalar;
  if (kind != BackendKind::kReference) {
    STRATA_ASSIGN_OR_RETURN(isa, SelectIsa());
  }
  if (kind == BackendKind::kReference && p == DecodeCopyPolicy::kAuto) p = DecodeCopyPolicy::kNative;
  // Keyed by placement: each tensor asks the kernels of where it runs. Every
  // backend of this build places its weights on the CPU (sim's copy is
  // multiplied by CPU kernels too); a GPU backend will place the tensors it
  // holds on its device, and its kernels answer for them.
  const Placement placement = WeightPlacementOf(kind);
  return model.UseDecodeCopies(p, [placement, isa](const TensorView& t) {
    return KernelSupportAt(placement, t.type, isa) == KernelSupport::kFast;
  });
}

}  // namespace strata
