#include "runtime/model/sequence_state.h"

#include <algorithm>

#include "runtime/base/checked_alloc.h"
#include "runtime/base/strings.h"
#include "runtime/model/backend.h"

namespace strata {

int64_t SequenceState::SwaRingRows(const HParams& hp, int64_t n_ctx, int64_t pass_tokens) {
  if (hp.n_swa == 0 || pass_tokens <= 0 || n_ctx <= 0) return 0;
  const int64_t need = static_cast<int64_t>(hp.n_swa) - 1 + pass_tokens;
  const int64_t ring = (need + kSwaRingAlign - 1) / kSwaRingAlign * kSwaRingAlign;
  return 2 * ring < n_ctx ? ring : 0;
}

std::vector<SequenceState::Layer> SequenceState::Layout(const HParams& hp, int64_t n_ctx, KvType kv,
                                                        uint64_t* bytes, int64_t pass_tokens, StateLayers which) {
  const bool mtp = which == StateLayers::kMtp;
  std::vector<Layer> layers(hp.n_layer + (mtp ? 1u : 0u));
  uint64_t at = 0, end = 0;  // the next part's offset, the end of the last nonempty part
  auto place = [&](Part& p, uint64_t n) {
    p.offset = at;
    p.bytes = n;
    if (n) end = at + n;
    at += (n + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  };
  const int64_t ring = SwaRingRows(hp, n_ctx, pass_tokens);
  for (uint32_t il = mtp ? hp.n_layer : 0; il < layers.size(); ++il) {
    Layer& l = layers[il];
    l.ring = ring > 0 && hp.IsSwaLayer(il);
    const auto positions = static_cast<uint64_t>(l.ring ? 2 * ring : n_ctx);
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

uint64_t SequenceState::BytesFor(const HParams& hp, int64_t n_ctx, KvType kv, int64_t pass_tokens,
                                 StateLayers which) {
  uint64_t bytes = 0;
  Layout(hp, n_ctx, kv, &bytes, pass_tokens, which);
  return bytes;
}

bool SequenceState::TruncateKv(int64_t n) {
  if (n >= n_past) return true;
  // A ring of R rows holds positions n_past - R .. n_past - 1; a token at n
  // sees n - n_swa + 1 .. n. (The window's size: what a later pass checks,
  // MaxPassTokens, keeps the ring at least n_swa rows beyond that.)
  if (swa_ring && n_past - swa_ring > std::max<int64_t>(0, n - swa_window + 1)) return false;
  n_past = n;
  return true;
}

int64_t SequenceState::MaxPassTokens(const HParams& hp) const {
  if (!swa_ring) return n_ctx;
  return swa_ring - (static_cast<int64_t>(hp.n_swa) - 1);
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

Result<SequenceState> SequenceState::Create(Backend& backend, const HParams& hp, int64_t n_ctx, KvType kv,
                                            int64_t pass_tokens, StateLayers which) {
  return backend.CreateState(hp, n_ctx, kv, pass_tokens, which);
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
  if (from.swa_ring != to.swa_ring) return Internal("CopySequence: states of different sliding-window rings");
  std::vector<uint8_t> rows;
  for (size_t il = 0; il < from.layers.size(); ++il) {
    for (auto part : {&SequenceState::Layer::k, &SequenceState::Layer::v}) {
      const SequenceState::Part& src = from.layers[il].*part;
      const SequenceState::Part& dst = to.layers[il].*part;
      if (src.bytes != dst.bytes) return Internal("CopySequence: states of different layouts");
      if (src.bytes == 0 || from.n_ctx == 0) continue;
      // A ring holds the window wherever it is: all of it.
      const uint64_t n = from.layers[il].ring
                             ? src.bytes
                             : src.bytes / static_cast<uint64_t>(from.n_ctx) * static_cast<uint64_t>(from.n_past);
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
