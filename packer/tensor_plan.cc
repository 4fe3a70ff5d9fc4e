#include "packer/tensor_plan.h"

#include <cinttypes>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_set>

#include "runtime/base/strings.h"
#include "runtime/quant/dequantize.h"

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

// A part of a fused GGUF tensor (ArchSpec::row_splits) that stands in for a
// tensor the GGUF does not carry.
struct SplitSource {
  const gguf::TensorInfo* tensor;
  const RowSplit* split;
  size_t part;
};

// Finds the fused tensors a GGUF carries, checks them, and says which spec
// tensors they supply; their names go into `expected_names`.
std::map<std::string, SplitSource> FindSplitSources(const gguf::GgufModel& model, const ArchSpec& spec,
                                                    const HParams& hp, std::unordered_set<std::string>* expected_names,
                                                    FixLog* log) {
  std::map<std::string, SplitSource> out;
  const std::vector<ExpectedTensor> expected = ExpectedTensors(spec, hp);
  for (const RowSplit& split : spec.row_splits) {
    for (const ExpectedTensor& e : expected) {
      if (e.spec->role != split.parts[0]) continue;
      const std::string name = TensorName(split.pattern, e.layer);
      const gguf::TensorInfo* t = model.FindTensor(name);
      if (!t) continue;
      expected_names->insert(name);
      const std::string part0 = TensorName(GetTensorPattern(spec, split.parts[0]), e.layer);
      const std::string part1 = TensorName(GetTensorPattern(spec, split.parts[1]), e.layer);
      if (model.FindTensor(part0) || model.FindTensor(part1)) {
        log->Refuse(name, "both forms: the GGUF carries " + name + " and " +
                              (model.FindTensor(part0) ? part0 : part1) + ", which it holds; expected one or the other");
        continue;
      }
      const uint64_t rows = split.rows.eval(hp), row = e.shape[0];
      const auto ne = [t](uint32_t d) { return static_cast<uint64_t>(t->ne[d]); };
      bool shape_ok = t->n_dims >= 2 && ne(0) == row && ne(1) == rows;
      for (uint32_t d = 2; d < t->n_dims; ++d) shape_ok &= ne(d) == 1;  // trailing size-1 dims hold no data
      if (!shape_ok) {
        log->Refuse(name, StrFormat("shape: expected [%" PRIu64 " (%s), %" PRIu64 " (%s)], found ", row,
                                    e.spec->shape[0].text, rows, split.rows.text) + t->ShapeString());
        continue;
      }
      if (!TypeAllowed(TypeRule::kAnyWeight, t->type)) {
        log->Refuse(name, "type: expected " + std::string(TypeRuleText(TypeRule::kAnyWeight)) + ", found " +
                              std::string(TypeName(t->type)));
        continue;
      }
      if (t->n_dims > 2)
        log->AddFix("squeeze-dims", name, t->ShapeString(), StrFormat("[%" PRIu64 ", %" PRIu64 "]", row, rows),
                    "trailing size-1 dimensions hold no data (llama.cpp accepts the same)");
      out[part0] = {t, &split, 0};
      out[part1] = {t, &split, 1};
      log->AddFix("split-tensor", name, t->ShapeString(), part0 + " + " + part1,
                  "the fused form of this architecture's GGUFs; its rows regrouped into the spec's two tensors "
                  "(llama.cpp splits the same rows in its graph)");
    }
  }
  return out;
}

// attn_k_b or attn_v_b of one layer out of the older form's attn_kv_b
// (ArchSpec::fused_kv_b): per head h, rows h * (nope + v) ... are the key's
// nope rows, then the value rows.
std::optional<PlannedTensor> PlanKvBPart(const gguf::TensorInfo& f, const ExpectedTensor& e, const HParams& hp,
                                         FixLog* log) {
  const uint64_t L = hp.kv_lora_rank, nope = hp.MlaNope(), v = hp.head_dim_v_mla, H = hp.n_head;
  const std::string name(f.name);
  const auto ne = [&f](uint32_t d) { return static_cast<uint64_t>(f.ne[d]); };
  // A problem of the source is refused once, with attn_k_b (attn_v_b leaves it out).
  const bool key = e.spec->role == TensorRole::kAttnKB;
  if (f.n_dims != 2 || ne(0) != L || ne(1) != H * (nope + v)) {
    if (key)
      log->Refuse(name, StrFormat("shape: expected [%" PRIu64 " (kv_lora_rank), %" PRIu64
                                " (n_head*(key_length_mla-n_rot+value_length_mla))], found ", L, H * (nope + v)) +
                          f.ShapeString());
    return std::nullopt;
  }
  if (!TypeAllowed(TypeRule::kAnyWeight, f.type) || !HasDequantizer(f.type)) {
    if (key)
      log->Refuse(name, "type: expected " + std::string(TypeRuleText(TypeRule::kAnyWeight)) + ", found " +
                            std::string(TypeName(f.type)));
    return std::nullopt;
  }
  PlannedTensor p;
  p.name = e.name;
  p.role = e.spec->role;
  p.layer = e.layer;
  p.source = &f;
  p.shape = e.shape;
  p.transform = key ? TensorTransform::kTransposeHeads : TensorTransform::kRowGather;
  p.type = key ? GgmlType::kF32 : f.type;
  Result<uint64_t> rb = RowBytes(p.type, p.shape[0]);
  if (!rb.ok()) {
    log->Refuse(e.name, "size: " + rb.status().message());
    return std::nullopt;
  }
  p.row_bytes = *rb;
  p.bytes = p.row_bytes * p.shape[1] * p.shape[2];
  p.expert_count = static_cast<uint32_t>(p.shape[2]);
  p.expert_stride = p.row_bytes * p.shape[1];
  const uint64_t per_head = key ? nope : v, first = key ? 0 : nope;
  for (uint64_t h = 0; h < H; ++h)
    for (uint64_t i = 0; i < per_head; ++i) p.rows.push_back(h * (nope + v) + first + i);
  log->AddFix(key ? "transpose-heads" : "split-tensor", name, f.ShapeString(), e.name + " " + ShapeString(p.shape),
              key ? "the older form's KV up-projection: each head's key rows, transposed into the latent form's "
                    "attn_k_b as F32 (exact values; llama.cpp's converter makes the same split)"
                  : "the older form's KV up-projection: each head's value rows, as they are");
  return p;
}

}  // namespace

const char* GetTensorPattern(const ArchSpec& spec, TensorRole role) {
  for (const TensorSpec& t : spec.tensors)
    if (t.role == role) return t.pattern;
  return "?";
}

std::vector<uint8_t> GatherRows(const gguf::GgufModel& model, const PlannedTensor& p) {
  std::span<const uint8_t> src = model.TensorData(*p.source);
  if (p.transform == TensorTransform::kTransposeHeads) {
    const uint64_t cols = p.shape[0], rows = p.shape[1], heads = p.shape[2];
    const auto src_cols = static_cast<int64_t>(p.source->ne[0]);
    const uint64_t src_row_bytes = src.size() / static_cast<uint64_t>(p.source->ne[1]);
    std::vector<float> row(static_cast<size_t>(src_cols)), out(cols * rows * heads);
    for (uint64_t h = 0; h < heads; ++h)
      for (uint64_t c = 0; c < cols; ++c) {
        DequantizeRowUnchecked(p.source->type, src.data() + p.rows[h * cols + c] * src_row_bytes, row.data(), src_cols);
        for (uint64_t r = 0; r < rows; ++r) out[(h * rows + r) * cols + c] = row[r];
      }
    std::vector<uint8_t> bytes(out.size() * sizeof(float));
    std::memcpy(bytes.data(), out.data(), bytes.size());
    return bytes;
  }
  std::vector<uint8_t> out(p.rows.size() * p.row_bytes);
  for (size_t i = 0; i < p.rows.size(); ++i)
    std::memcpy(out.data() + i * p.row_bytes, src.data() + p.rows[i] * p.row_bytes, p.row_bytes);
  return out;
}

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
  const std::map<std::string, SplitSource> split_sources = FindSplitSources(model, spec, *hp, &expected_names, log);
  // The MTP (nextn) layers are checked on their own log: a block that fails
  // its checks is dropped whole, with a recorded fix, never half-kept.
  FixLog mtp_log;
  FixLog* const main_log = log;
  for (const ExpectedTensor& e : ExpectedTensors(spec, *hp)) {
    log = e.layer >= 0 && static_cast<uint32_t>(e.layer) >= hp->n_layer ? &mtp_log : main_log;
    expected_names.insert(e.name);
    const gguf::TensorInfo* t = model.FindTensor(e.name);
    if (!t && spec.fused_kv_b && (e.spec->role == TensorRole::kAttnKB || e.spec->role == TensorRole::kAttnVB)) {
      const std::string kv_b = TensorName(spec.fused_kv_b, e.layer);
      if (const gguf::TensorInfo* f = model.FindTensor(kv_b)) {
        expected_names.insert(kv_b);
        if (auto p = PlanKvBPart(*f, e, *hp, log)) plan.push_back(std::move(*p));
        continue;
      }
    }
    if (auto it = split_sources.find(e.name); !t && it != split_sources.end()) {
      // Rows of a fused tensor, checked by FindSplitSources.
      const SplitSource& src = it->second;
      PlannedTensor p;
      p.name = e.name;
      p.role = e.spec->role;
      p.layer = e.layer;
      p.source = src.tensor;
      p.type = src.tensor->type;
      p.shape = e.shape;
      p.transform = TensorTransform::kRowGather;
      Result<uint64_t> rb = RowBytes(p.type, p.shape[0]);
      if (!rb.ok()) {
        log->Refuse(e.name, "size: " + rb.status().message());
        continue;
      }
      p.row_bytes = *rb;
      p.bytes = p.row_bytes * p.shape[1];
      p.rows.resize(p.shape[1]);
      for (uint64_t i = 0; i < p.shape[1]; ++i) p.rows[i] = src.split->row(*hp, src.part, i);
      plan.push_back(std::move(p));
      continue;
    }
    if (!t) {
      if (e.spec->role == TensorRole::kOutput) hp->tied_output = true;
      std::string fused;
      for (const RowSplit& r : spec.row_splits)
        if (r.parts[0] == e.spec->role || r.parts[1] == e.spec->role)
          fused = "; or the fused " + TensorName(r.pattern, e.layer) + " that holds it";
      if (!e.spec->optional)
        log->Refuse(e.name, "missing: the " + std::string(spec.gguf_name) + " spec requires it (" +
                                std::string(TensorRoleName(e.spec->role)) + ", shape " + ExpectedShapeText(e) + ")" +
                                fused);
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
  log = main_log;
  if (mtp_log.refused() && !options.mtp_from.empty()) {  // a block asked for by name: its faults are refusals
    for (Refusal& r : mtp_log.refusals)
      log->Refuse(r.location + " (from --mtp-from " + options.mtp_from + ")", r.message, r.override_flag);
  } else if (mtp_log.refused()) {
    const uint32_t first = hp->n_layer;
    std::erase_if(plan, [first](const PlannedTensor& p) { return p.layer >= 0 && static_cast<uint32_t>(p.layer) >= first; });
    std::string why;
    for (const Refusal& r : mtp_log.refusals) why += (why.empty() ? "" : "; ") + r.location + ": " + r.message;
    log->AddFix("drop-mtp-block", StrFormat("blk.%u (MTP)", first),
                StrFormat("%u MTP layer%s", hp->nextn_predict_layers, hp->nextn_predict_layers == 1 ? "" : "s"),
                "absent (nextn_predict_layers 0)",
                "its tensors failed their checks (" + why +
                    "); the model runs without it, and speculative decoding with --spec mtp is not available");
    hp->n_layer_all = hp->n_layer;
    hp->nextn_predict_layers = 0;
  } else {
    for (Fix& f : mtp_log.fixes) log->fixes.push_back(std::move(f));
  }
  for (std::string& w : mtp_log.warnings) log->warnings.push_back(std::move(w));

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
