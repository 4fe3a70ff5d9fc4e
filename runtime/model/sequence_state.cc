#include "runtime/model/sequence_state.h"

#include "runtime/base/checked_alloc.h"
#include "runtime/base/strings.h"
#include "runtime/model/backend.h"

namespace strata {

std::vector<SequenceState::Layer> SequenceState::Layout(const HParams& hp, int64_t n_ctx, KvType kv,
                                                        uint64_t* bytes) {
  std::vector<Layer> layers(hp.n_layer);
  uint64_t at = 0, end = 0;  // the next part's offset, the end of the last nonempty part
  auto place = [&](Part& p, uint64_t n) {
    p.offset = at;
    p.bytes = n;
    if (n) end = at + n;
    at += (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  };
  const auto positions = static_cast<uint64_t>(n_ctx);
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    Layer& l = layers[il];
    if (hp.IsRecurrentLayer(il)) {
      const uint64_t conv_dim = 2ull * hp.ssm_n_group * hp.ssm_d_state + hp.ssm_d_inner;
      place(l.conv, (hp.ssm_d_conv - 1ull) * conv_dim * sizeof(float));
      place(l.ssm, uint64_t{hp.ssm_dt_rank} * hp.ssm_d_state * hp.ssm_d_state * sizeof(float));
    } else {
      place(l.k, positions * hp.n_head_kv * static_cast<uint64_t>(KvHeadBytes(kv, hp.head_dim_k)));
      // Latent attention reads its values from the key rows: no V cache.
      place(l.v, hp.IsLatentAttention() ? 0
                                        : positions * hp.n_head_kv * static_cast<uint64_t>(KvHeadBytes(kv, hp.head_dim_v)));
    }
  }
  if (bytes) *bytes = end;
  return layers;
}

uint64_t SequenceState::BytesFor(const HParams& hp, int64_t n_ctx, KvType kv) {
  uint64_t bytes = 0;
  Layout(hp, n_ctx, kv, &bytes);
  return bytes;
}

Status SequenceState::CheckKvType(const HParams& hp, KvType kv) {
  for (uint32_t d : {hp.head_dim_k, hp.head_dim_v})
    if (!KvTypeFits(kv, d))
      return InvalidArgument(StrFormat("--kv-type %s stores blocks of %lld values; this model's head dimensions are "
                                       "%u (K) and %u (V): expected multiples of %lld (use f16 or f32)",
                                       std::string(KvTypeName(kv)).c_str(), static_cast<long long>(kKvQ8Block),
                                       hp.head_dim_k, hp.head_dim_v, static_cast<long long>(kKvQ8Block)));
  return Status::Ok();
}

Result<SequenceState> SequenceState::Create(Backend& backend, const HParams& hp, int64_t n_ctx, KvType kv) {
  return backend.CreateState(hp, n_ctx, kv);
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
  if (from.kv_type != to.kv_type) return Internal("CopySequence: states of different KV types");
  std::vector<uint8_t> rows;
  for (size_t il = 0; il < from.layers.size(); ++il) {
    for (auto part : {&SequenceState::Layer::k, &SequenceState::Layer::v}) {
      const SequenceState::Part& src = from.layers[il].*part;
      const SequenceState::Part& dst = to.layers[il].*part;
      if (src.bytes != dst.bytes) return Internal("CopySequence: states of different layouts");
      if (src.bytes == 0 || from.n_ctx == 0) continue;
      const uint64_t n = src.bytes / static_cast<uint64_t>(from.n_ctx) * static_cast<uint64_t>(from.n_past);
      rows.resize(n);
      if (Status st = b->Download(from.storage, src.offset, rows.data(), n); !st.ok()) return st;
      if (Status st = b->Upload(to.storage, dst.offset, rows.data(), n); !st.ok()) return st;
    }
  }
  if (Status st = b->CopyRecurrent(from, to); !st.ok()) return st;
  to.n_past = from.n_past;
  return Status::Ok();
}

}  // namespace strata
