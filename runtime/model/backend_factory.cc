#include "runtime/model/backend_factory.h"

#include <set>

#include "runtime/base/strings.h"
#include "runtime/model/fast_backend.h"
#include "runtime/model/kernel_coverage.h"

namespace strata {
namespace {

// FastBackend plus what a user should know about it for this model.
class FastModelBackend : public MatMulBackend {
 public:
  FastModelBackend(std::unique_ptr<FastBackend> b, std::vector<std::string> notes)
      : b_(std::move(b)), notes_(std::move(notes)) {}
  void MatMul(const WeightMatrix& w, const float* x, int64_t n, float* y) override { b_->MatMul(w, x, n, y); }
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn) override { b_->ParallelFor(n, fn); }
  int threads() const override { return b_->threads(); }
  std::string name() const override { return b_->name(); }
  std::vector<std::string> Notes() const override { return notes_; }
  uint64_t ScratchBytes(GgmlType type, int64_t cols, int64_t n) const override { return b_->ScratchBytes(type, cols, n); }
  Status ReserveScratch(uint64_t bytes) override { return b_->ReserveScratch(bytes); }
  const kernels::AttnKernels& attention() const override { return b_->attention(); }

 private:
  std::unique_ptr<FastBackend> b_;
  std::vector<std::string> notes_;
};

}  // namespace

Result<std::unique_ptr<MatMulBackend>> MakeBackend(const Model& model, BackendKind kind, int threads) {
  if (kind == BackendKind::kReference) return std::unique_ptr<MatMulBackend>(new ReferenceBackend());
  FastBackend::Options o;
  o.threads = threads;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<FastBackend> fast, FastBackend::Create(o));
  // Which weight types this model multiplies, and which of them have no SIMD kernel.
  std::set<GgmlType> types;
  auto add = [&](const TensorView* t) {
    if (t && IsMultipliedOnCpu(t->role, t->rank, model.hp().tied_output)) types.insert(t->type);
  };
  for (size_t r = 0; r < static_cast<size_t>(TensorRole::kCount); ++r) {
    add(model.Get(static_cast<TensorRole>(r)));
    for (uint32_t il = 0; il < model.hp().n_layer; ++il) add(model.Get(static_cast<int32_t>(il), static_cast<TensorRole>(r)));
  }
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
  return std::unique_ptr<MatMulBackend>(new FastModelBackend(std::move(fast), std::move(notes)));
}

Result<size_t> ApplyDecodeCopies(Model& model, std::string_view policy, BackendKind kind) {
  STRATA_ASSIGN_OR_RETURN(DecodeCopyPolicy p, ParseDecodeCopyPolicy(policy));
  IsaLevel isa = IsaLevel::kScalar;
  if (kind == BackendKind::kFast) {
    STRATA_ASSIGN_OR_RETURN(isa, SelectIsa());
  }
  if (kind == BackendKind::kReference && p == DecodeCopyPolicy::kAuto) p = DecodeCopyPolicy::kNative;
  return model.UseDecodeCopies(p, isa);
}

}  // namespace strata
