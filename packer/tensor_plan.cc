#include "packer/tensor_plan.h"

#include <cinttypes>
#include <unordered_set>

#include "runtime/base/strings.h"

namespace strata {
namespace {

std::string ExpectedShapeText(const ExpectedTensor& e) {
  std::string s = "[";
  for (size_t i = 0; i < e.shape.size(); ++i) {
    if (i) s += ", ";
    s += StrFormat("%" PRIu64 " (%s)", e.shape[i], e.spec->shape[i].text);
  }
  return s + "]";
}

}  // namespace

std::string ShapeString(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + StrFormat("%" PRIu64, shape[i]);
  return s + "]";
}

std::vector<PlannedTensor> PlanTensors(const gguf::GgufModel& model, Arch arch, HParams* hp,
                                       const PackOptions& options, FixLog* log) {
  std::vector<PlannedTensor> plan;
  if (arch == Arch::kVocabOnly) return plan;
  const ArchSpec& spec = GetArchSpec(arch);
  std::unordered_set<std::string> expected_names;
  for (const ExpectedTensor& e : ExpectedTensors(spec, *hp)) {
    expected_names.insert(e.name);
    const gguf::TensorInfo* t = model.FindTensor(e.name);
    if (!t) {
      if (e.spec->role == TensorRole::kOutput) hp->tied_output = true;
      if (!e.spec->optional)
        log->Refuse(e.name, "missing: the " + std::string(spec.gguf_name) + " spec requires it (" +
                                std::string(TensorRoleName(e.spec->role)) + ", shape " + ExpectedShapeText(e) + ")");
      continue;
    }
    PlannedTensor p;
    p.name = e.name;
    p.role = e.spec->role;
    p.layer = e.layer;
    p.source = t;
    p.type = t->type;
    p.shape = e.shape;

    // Shape: equal, or equal after dropping/adding trailing size-1 dims.
    std::vector<uint64_t> found(t->ne.begin(), t->ne.begin() + t->n_dims);
    size_t common = std::min(found.size(), e.shape.size());
    bool prefix_equal = std::equal(found.begin(), found.begin() + static_cast<long>(common), e.shape.begin());
    bool rest_ones = true;
    for (size_t i = common; i < found.size(); ++i) rest_ones &= found[i] == 1;
    for (size_t i = common; i < e.shape.size(); ++i) rest_ones &= e.shape[i] == 1;
    if (!prefix_equal || !rest_ones) {
      log->Refuse(e.name, "shape: expected " + ExpectedShapeText(e) + ", found " + t->ShapeString());
      continue;
    }
    if (found.size() != e.shape.size())
      log->AddFix("squeeze-dims", e.name, t->ShapeString(), ShapeString(e.shape),
                  found.size() > e.shape.size()
                      ? "trailing size-1 dimensions hold no data; the spec's shape has rank " +
                            std::to_string(e.shape.size()) + " (llama.cpp accepts the same)"
                      : "a size-1 dimension the writer dropped; the data is identical");

    // Type.
    if (!TypeAllowed(e.spec->types, t->type)) {
      if (e.spec->types == TypeRule::kF32Only && (t->type == GgmlType::kF16 || t->type == GgmlType::kBF16)) {
        p.type = GgmlType::kF32;
        p.transform = TensorTransform::kWidenToF32;
        log->AddFix("widen-type", e.name, std::string(TypeName(t->type)), "F32",
                    "this tensor is used as F32; every F16/BF16 value is exactly representable in F32");
      } else {
        log->Refuse(e.name, "type: expected " + std::string(TypeRuleText(e.spec->types)) + ", found " +
                                std::string(TypeName(t->type)));
        continue;
      }
    }
    std::vector<int64_t> ne(p.shape.begin(), p.shape.end());
    Result<uint64_t> nb = TensorBytes(p.type, ne);
    Result<uint64_t> rb = RowBytes(p.type, p.shape[0]);
    if (!nb.ok() || !rb.ok()) {
      log->Refuse(e.name, "size: " + (nb.ok() ? rb.status() : nb.status()).message());
      continue;
    }
    p.bytes = *nb;
    p.row_bytes = *rb;
    if (e.spec->rank == 3) {
      p.expert_count = static_cast<uint32_t>(p.shape[2]);
      p.expert_stride = p.row_bytes * p.shape[1];
    }
    plan.push_back(std::move(p));
  }

  size_t unknown = 0;
  for (const gguf::TensorInfo& t : model.tensors()) {
    std::string name(t.name);
    if (expected_names.count(name)) continue;
    if (options.drop_unknown_tensors) {
      log->AddFix("drop-tensor", name, std::string(TypeName(t.type)) + " " + t.ShapeString(), "absent",
                  "not part of the " + std::string(spec.gguf_name) + " spec (--drop-unknown-tensors)");
    } else if (++unknown <= 20) {
      log->Refuse(name, "not a tensor of the " + std::string(spec.gguf_name) + " spec for these hyperparameters (" +
                            StrFormat("%u layers, %u MTP layers", hp->n_layer, hp->nextn_predict_layers) + ")",
                  "--drop-unknown-tensors");
    }
  }
  if (unknown > 20)
    log->Refuse("(more tensors)", StrFormat("%zu more tensors are not part of the spec", unknown - 20),
                "--drop-unknown-tensors");
  return plan;
}

}  // namespace strata
