#include "runtime/model/model.h"

namespace strata {

WeightMatrix Matrix(const TensorView& t) {
  WeightMatrix m;
  m.type = t.type;
  m.data = t.data.data();
  m.row_bytes = t.row_bytes;
  m.rows = static_cast<int64_t>(t.shape[1]);
  m.cols = static_cast<int64_t>(t.shape[0]);
  m.tensor = &t;
  return m;
}

WeightMatrix ExpertMatrix(const TensorView& t, uint32_t expert) {
  WeightMatrix m = Matrix(t);
  m.data = t.data.data() + expert * t.expert_stride;
  m.expert = static_cast<int32_t>(expert);
  return m;
}

Result<Model> Model::Create(const Pack& pack) {
  if (pack.arch() == Arch::kVocabOnly)
    return Unsupported(pack.path() + ": a vocab-only pack has no weights to run (it can only tokenize)");
  Model m;
  m.pack_ = &pack;
  m.arch_ = pack.arch();
  m.hp_ = pack.hparams();
  m.layers_.resize(m.hp_.n_layer_all);
  for (const TensorView& t : pack.tensors()) {
    if (t.role >= TensorRole::kCount) continue;
    if (t.layer < 0) m.global_[static_cast<size_t>(t.role)] = &t;
    else if (pack.manifest().tensors()->Get(t.index)->is_decode_copy()) continue;
    else m.layers_[static_cast<size_t>(t.layer)][static_cast<size_t>(t.role)] = &t;
  }
  // The pack reader proved every required tensor is present with its shape;
  // these checks only guard against a spec/runtime mismatch (a Strata bug).
  if (!m.Get(TensorRole::kTokenEmbd) || !m.Get(TensorRole::kOutputNorm))
    return Internal(pack.path() + ": token_embd or output_norm missing after validation");
  return m;
}

}  // namespace strata
