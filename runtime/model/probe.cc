#include "runtime/model/probe.h"

#include <algorithm>
#include <cmath>

#include "runtime/base/strings.h"
#include "runtime/model/forward.h"
#include "runtime/model/generator.h"
#include "runtime/model/sequence_state.h"

namespace strata {
namespace {

constexpr const char* kProbeText = "The capital of France is Paris. One, two, three, four";
constexpr size_t kMaxPromptTokens = 16;

// Runs `ids` as one prompt and returns every row of logits.
Result<std::vector<float>> AllRows(const Model& model, Backend& backend, const std::vector<int32_t>& ids) {
  STRATA_ASSIGN_OR_RETURN(SequenceState st, SequenceState::Create(backend, model.hp(), static_cast<int64_t>(ids.size())));
  std::vector<float> logits;
  ForwardOptions fo;
  fo.all_logits = true;
  STRATA_RETURN_IF_ERROR(Forward(model, backend, st, ids, fo, &logits));
  return logits;
}

}  // namespace

std::vector<int32_t> ProbePrompt(const tokenizer::Tokenizer& tok, uint32_t n_vocab) {
  std::vector<int32_t> ids = tok.Encode(kProbeText, /*add_special=*/true, /*parse_special=*/false);
  if (ids.size() > kMaxPromptTokens) ids.resize(kMaxPromptTokens);
  ids.erase(std::remove_if(ids.begin(), ids.end(), [&](int32_t id) { return id < 0 || static_cast<uint32_t>(id) >= n_vocab; }),
            ids.end());
  if (ids.size() < 4) {  // a vocabulary that cannot spell the sentence
    ids.clear();
    for (uint32_t i = 0; i < 8; ++i) ids.push_back(static_cast<int32_t>((1 + 7 * i) % n_vocab));
  }
  return ids;
}

float ProbeTolerance(const Model& model) {
  bool all_f32 = true;
  for (uint32_t il = 0; il < model.hp().n_layer; ++il)
    for (size_t r = 0; r < static_cast<size_t>(TensorRole::kCount); ++r)
      if (const TensorView* t = model.Get(static_cast<int32_t>(il), static_cast<TensorRole>(r)))
        all_f32 &= t->type == GgmlType::kF32;
  for (TensorRole r : {TensorRole::kTokenEmbd, TensorRole::kOutput})
    if (const TensorView* t = model.Get(r)) all_f32 &= t->type == GgmlType::kF32;
  if (all_f32) return 1e-3f;
  // The fast path follows llama.cpp's native arithmetic; its gap to the
  // reference is the native-vs-F32-math gap the conformance README measures:
  // up to 0.28 (Q8_0) and 0.5 (Q2_0) for qwen3moe, where MoE routing flips at
  // single positions, and 0.78 for qwen35moe, whose recurrence carries such a
  // flip forward. A kernel that computes the wrong thing is off by whole units
  // on most entries, and the top-1 check on confident rows catches the rest.
  return GetArchSpec(model.arch()).probe_tolerance;
}

Result<ProbeData> RecordProbe(const Model& model, Backend& backend, Backend& kernels,
                              std::vector<int32_t> prompt, int n_gen) {
  ProbeData p;
  p.prompt_ids = prompt;
  p.tolerance = ProbeTolerance(model);
  const uint32_t V = model.hp().n_vocab;
  p.top_k = std::min<uint32_t>(8, V);
  // The prompt, then a greedy continuation with every token fed back: one row
  // of logits per id of prompt + continuation.
  STRATA_ASSIGN_OR_RETURN(SequenceState st,
                          SequenceState::Create(backend, model.hp(), static_cast<int64_t>(prompt.size()) + n_gen));
  Generator g(model, backend, st, nullptr);
  GenerateOptions go;
  go.n_predict = n_gen;
  go.ignore_eog = true;
  go.sampling.temperature = 0;
  go.prompt_logits = true;
  go.feed_last = true;
  std::vector<int32_t> order(V);
  GenerateCallbacks cb;
  cb.on_logits = [&](std::span<const float> row) {
    for (uint32_t i = 0; i < V; ++i) order[i] = static_cast<int32_t>(i);
    std::partial_sort(order.begin(), order.begin() + p.top_k, order.end(),
                      [&](int32_t a, int32_t b) { return row[a] != row[b] ? row[a] > row[b] : a < b; });
    for (uint32_t k = 0; k < p.top_k; ++k) {
      p.top_ids.push_back(order[k]);
      p.top_logits.push_back(row[order[k]]);
    }
  };
  STRATA_ASSIGN_OR_RETURN(GenerateResult r, g.Generate(prompt, go, cb));
  p.greedy_ids = r.tokens;
  // The scalar kernels on the same rows (teacher-forced, one pass).
  std::vector<int32_t> ids = prompt;
  ids.insert(ids.end(), p.greedy_ids.begin(), p.greedy_ids.end());
  STRATA_ASSIGN_OR_RETURN(std::vector<float> rows, AllRows(model, kernels, ids));
  for (size_t row = 0; row < ids.size(); ++row)
    for (uint32_t k = 0; k < p.top_k; ++k) p.kernel_logits.push_back(rows[row * V + p.top_ids[row * p.top_k + k]]);
  // SIMD kernels differ from the scalar ones only in float summation order:
  // measured mean |diff| 1e-7..2.5e-3 and max up to 0.02 on the conformance
  // fixtures (a near-tie in routing can amplify a rounding difference). A
  // kernel that is 2% off moves the mean by ~0.04.
  p.kernel_mean_tolerance = 0.01f;
  p.kernel_max_tolerance = 0.5f;
  return p;
}

Result<ProbeReplay> ReplayProbe(const Model& model, Backend& backend, const ProbeData& p) {
  const uint32_t V = model.hp().n_vocab;
  std::vector<int32_t> ids = p.prompt_ids;
  ids.insert(ids.end(), p.greedy_ids.begin(), p.greedy_ids.end());
  if (p.top_k == 0 || p.top_ids.size() != ids.size() * p.top_k || p.top_logits.size() != p.top_ids.size())
    return DataLoss(StrFormat("probe record: expected %zu rows of %u entries, found %zu ids and %zu logits", ids.size(),
                              p.top_k, p.top_ids.size(), p.top_logits.size()));
  for (int32_t id : ids)
    if (id < 0 || static_cast<uint32_t>(id) >= V) return DataLoss(StrFormat("probe record: token id %d out of range", id));
  for (int32_t id : p.top_ids)
    if (id < 0 || static_cast<uint32_t>(id) >= V) return DataLoss(StrFormat("probe record: token id %d out of range", id));
  if (ids.size() > model.hp().n_ctx_train) return DataLoss("probe record: longer than the model's context");
  STRATA_ASSIGN_OR_RETURN(std::vector<float> rows, AllRows(model, backend, ids));
  ProbeReplay r;
  r.rows = static_cast<int>(ids.size());
  const bool has_kernel = p.kernel_logits.size() == p.top_ids.size();
  double sum = 0, ksum = 0;
  for (size_t row = 0; row < ids.size(); ++row) {
    const float* got = rows.data() + row * V;
    const int32_t* tid = &p.top_ids[row * p.top_k];
    const float* tl = &p.top_logits[row * p.top_k];
    for (uint32_t k = 0; k < p.top_k; ++k) {
      float d = std::fabs(got[tid[k]] - tl[k]);
      r.max_abs_diff = std::max(r.max_abs_diff, d);
      sum += static_cast<double>(d);
      if (has_kernel) {
        float kd = std::fabs(got[tid[k]] - p.kernel_logits[row * p.top_k + k]);
        r.kernel_max_diff = std::max(r.kernel_max_diff, kd);
        ksum += static_cast<double>(kd);
      }
    }
    if (p.top_k >= 2 && tl[0] - tl[1] > p.tolerance) {
      ++r.confident_rows;
      int32_t best = 0;
      for (uint32_t i = 1; i < V; ++i)
        if (got[i] > got[best]) best = static_cast<int32_t>(i);
      if (best != tid[0]) ++r.top1_mismatches;
    }
  }
  const double entries = static_cast<double>(ids.size() * p.top_k);
  r.mean_abs_diff = static_cast<float>(sum / entries);
  r.kernel_mean_diff = static_cast<float>(ksum / entries);
  r.ok = r.max_abs_diff <= p.tolerance && r.top1_mismatches == 0;
  if (has_kernel)
    r.ok = r.ok && r.kernel_mean_diff <= p.kernel_mean_tolerance && r.kernel_max_diff <= p.kernel_max_tolerance;
  r.detail = StrFormat("%d rows on the %s backend: vs the scalar kernels mean |diff| %.3g (tolerance %.3g), max %.3g "
                       "(%.3g); vs the reference max %.3g (%.3g); top-1 %d of %d confident rows agree",
                       r.rows, backend.name().c_str(), static_cast<double>(r.kernel_mean_diff),
                       static_cast<double>(p.kernel_mean_tolerance), static_cast<double>(r.kernel_max_diff),
                       static_cast<double>(p.kernel_max_tolerance), static_cast<double>(r.max_abs_diff),
                       static_cast<double>(p.tolerance), r.confident_rows - r.top1_mismatches, r.confident_rows);
  return r;
}

ProbeData ProbeFromManifest(const fb::ProbeRecord& r) {
  ProbeData p;
  auto vec = [](auto* v, auto& out) {
    if (v) out.assign(v->begin(), v->end());
  };
  vec(r.prompt_ids(), p.prompt_ids);
  vec(r.top_ids(), p.top_ids);
  vec(r.top_logits(), p.top_logits);
  vec(r.greedy_ids(), p.greedy_ids);
  vec(r.kernel_logits(), p.kernel_logits);
  p.top_k = r.top_k();
  p.tolerance = r.tolerance();
  p.kernel_mean_tolerance = r.kernel_mean_tolerance();
  p.kernel_max_tolerance = r.kernel_max_tolerance();
  return p;
}

flatbuffers::Offset<fb::ProbeRecord> BuildProbe(flatbuffers::FlatBufferBuilder& b, const ProbeData& p) {
  return fb::CreateProbeRecord(b, b.CreateVector(p.prompt_ids), p.top_k, b.CreateVector(p.top_ids),
                               b.CreateVector(p.top_logits), p.tolerance, b.CreateVector(p.greedy_ids),
                               b.CreateVector(p.kernel_logits), p.kernel_mean_tolerance, p.kernel_max_tolerance);
}

}  // namespace strata
