#include "runtime/model/sim_backend.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/base/checked_alloc.h"
#include "runtime/base/strings.h"

namespace strata {

SimBackend::~SimBackend() = default;

namespace {
// A failed mprotect leaves memory in a state the run cannot reason about:
// stop with the reason (it does not fail on memory this process mapped).
void MustSet(GuardedMemory& m, GuardedMemory::Access a) {
  Status st = m.SetAccess(a);
  if (!st.ok()) {
    std::fprintf(stderr, "sim backend: %s\n", st.ToString().c_str());
    std::abort();
  }
}
}  // namespace

void SimBackend::SetAll(bool open) {
  open_ = open;
  for (GuardedMemory& r : regions_)
    MustSet(r, open ? GuardedMemory::Access::kReadWrite : GuardedMemory::Access::kNone);
  MustSet(weights_, open ? GuardedMemory::Access::kRead : GuardedMemory::Access::kNone);
}

void SimBackend::EnterOp() { SetAll(true); }
void SimBackend::LeaveOp() { SetAll(false); }

Result<uint8_t*> SimBackend::AllocateHost(uint64_t bytes, std::string_view what) {
  STRATA_ASSIGN_OR_RETURN(GuardedMemory m, GuardedMemory::Allocate(bytes, what));
  if (!open_) MustSet(m, GuardedMemory::Access::kNone);
  uint8_t* p = m.data();
  regions_.push_back(std::move(m));
  return p;
}

void SimBackend::FreeHost(uint8_t* p, uint64_t /*bytes*/) {
  for (size_t i = 0; i < regions_.size(); ++i)
    if (regions_[i].data() == p) {
      regions_.erase(regions_.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
}

uint64_t SimBackend::ResidentWeightBytes(const Model& model) const {
  uint64_t total = 0;
  for (const TensorView& t : model.tensors())
    total += (t.data.size() + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  return total;
}

Status SimBackend::Bind(const Model& model) {
  std::span<const TensorView> tensors = model.tensors();
  const uint64_t total = ResidentWeightBytes(model);
  STRATA_ASSIGN_OR_RETURN(GuardedMemory w, GuardedMemory::Allocate(total, "the sim backend's copy of the weights"));
  std::vector<TensorView> resident(tensors.begin(), tensors.end());
  uint64_t at = 0;
  for (TensorView& t : resident) {
    const size_t size = t.data.size();
    if (size) std::memcpy(w.data() + at, t.data.data(), size);
    t.data = std::span<const uint8_t>(w.data() + at, size);
    at += (size + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  }
  MustSet(w, open_ ? GuardedMemory::Access::kRead : GuardedMemory::Access::kNone);
  weights_ = std::move(w);
  transfers_.weight_bytes += total;
  SetResidentTensors(model, std::move(resident));
  bound_ = tensors.data();
  return Status::Ok();
}

Status SimBackend::BeginPass(const PassDesc& pass) {
  if (!pass.model || pass.model->tensors().data() != bound_)
    return FailedPrecondition(StrFormat("the sim backend does not hold the weights of model '%s' (Backend::Bind it "
                                        "before running)",
                                        pass.model ? pass.model->name().c_str() : "?"));
  return CpuBackend::BeginPass(pass);
}

}  // namespace strata
