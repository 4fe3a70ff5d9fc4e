#include "runtime/model/sequence_state.h"

#include "runtime/base/checked_alloc.h"
#include "runtime/model/backend.h"

namespace strata {

std::vector<SequenceState::Layer> SequenceState::Layout(const HParams& hp, int64_t n_ctx, uint64_t* bytes) {
  constexpr uint64_t kAlignFloats = kBufferAlignment / sizeof(float);
  std::vector<Layer> layers(hp.n_layer);
  uint64_t at = 0, end = 0;  // in floats: the next part's offset, the end of the last nonempty part
  auto place = [&](Part& p, uint64_t floats) {
    p.offset = at;
    p.floats = floats;
    if (floats) end = at + floats;
    at += (floats + kAlignFloats - 1) / kAlignFloats * kAlignFloats;
  };
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    Layer& l = layers[il];
    if (hp.IsRecurrentLayer(il)) {
      const uint64_t conv_dim = 2ull * hp.ssm_n_group * hp.ssm_d_state + hp.ssm_d_inner;
      place(l.conv, (hp.ssm_d_conv - 1ull) * conv_dim);
      place(l.ssm, uint64_t{hp.ssm_dt_rank} * hp.ssm_d_state * hp.ssm_d_state);
    } else {
      place(l.k, static_cast<uint64_t>(n_ctx) * hp.n_head_kv * hp.head_dim_k);
      place(l.v, static_cast<uint64_t>(n_ctx) * hp.n_head_kv * hp.head_dim_v);
    }
  }
  if (bytes) *bytes = end * sizeof(float);
  return layers;
}

uint64_t SequenceState::BytesFor(const HParams& hp, int64_t n_ctx) {
  uint64_t bytes = 0;
  Layout(hp, n_ctx, &bytes);
  return bytes;
}

Result<SequenceState> SequenceState::Create(Backend& backend, const HParams& hp, int64_t n_ctx) {
  return backend.CreateState(hp, n_ctx);
}

Status SequenceState::Clear() {
  n_past = 0;
  if (!storage.valid()) return Status::Ok();
  return storage.owner()->ClearRecurrent(*this);
}

Status CopySequence(const SequenceState& from, SequenceState& to) {
  Backend* b = from.backend();
  if (!b || b != to.backend()) return Internal("CopySequence: states of different backends");
  if (from.n_ctx != to.n_ctx || from.layers.size() != to.layers.size())
    return Internal("CopySequence: states of different layouts");
  std::vector<float> rows;
  for (size_t il = 0; il < from.layers.size(); ++il) {
    for (auto part : {&SequenceState::Layer::k, &SequenceState::Layer::v}) {
      const SequenceState::Part& src = from.layers[il].*part;
      const SequenceState::Part& dst = to.layers[il].*part;
      if (src.floats != dst.floats) return Internal("CopySequence: states of different layouts");
      if (src.floats == 0 || from.n_ctx == 0) continue;
      const uint64_t n = src.floats / static_cast<uint64_t>(from.n_ctx) * static_cast<uint64_t>(from.n_past);
      rows.resize(n);
      if (Status st = b->Download(from.storage, src.offset * sizeof(float), rows.data(), n * sizeof(float)); !st.ok())
        return st;
      if (Status st = b->Upload(to.storage, dst.offset * sizeof(float), rows.data(), n * sizeof(float)); !st.ok())
        return st;
    }
  }
  if (Status st = b->CopyRecurrent(from, to); !st.ok()) return st;
  to.n_past = from.n_past;
  return Status::Ok();
}

}  // namespace strata
