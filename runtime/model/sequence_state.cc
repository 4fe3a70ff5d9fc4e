#include "runtime/model/sequence_state.h"

#include <algorithm>
#include <new>

#include "runtime/base/fault_injection.h"
#include "runtime/base/strings.h"

namespace strata {
namespace {

struct Sizes {
  uint64_t k, v, conv, ssm;
};

Sizes LayerSizes(const HParams& hp, uint32_t il, int64_t n_ctx) {
  Sizes s{0, 0, 0, 0};
  if (hp.IsRecurrentLayer(il)) {
    uint64_t conv_dim = 2ull * hp.ssm_n_group * hp.ssm_d_state + hp.ssm_d_inner;
    s.conv = (hp.ssm_d_conv - 1ull) * conv_dim;
    s.ssm = uint64_t{hp.ssm_dt_rank} * hp.ssm_d_state * hp.ssm_d_state;
  } else {
    s.k = static_cast<uint64_t>(n_ctx) * hp.n_head_kv * hp.head_dim_k;
    s.v = static_cast<uint64_t>(n_ctx) * hp.n_head_kv * hp.head_dim_v;
  }
  return s;
}

}  // namespace

uint64_t SequenceState::BytesFor(const HParams& hp, int64_t n_ctx) {
  uint64_t total = 0;
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    Sizes s = LayerSizes(hp, il, n_ctx);
    total += (s.k + s.v + s.conv + s.ssm) * sizeof(float);
  }
  return total;
}

Result<SequenceState> SequenceState::Create(const HParams& hp, int64_t n_ctx) {
  SequenceState st;
  st.n_ctx = n_ctx;
  st.k.resize(hp.n_layer);
  st.v.resize(hp.n_layer);
  st.conv.resize(hp.n_layer);
  st.ssm.resize(hp.n_layer);
  uint64_t bytes = BytesFor(hp, n_ctx);
  if (ShouldInjectFault(FaultSite::kAllocate))
    return ResourceExhausted(StrFormat("cannot allocate the sequence state (%s for %lld positions): injected fault",
                                       HumanBytes(bytes).c_str(), static_cast<long long>(n_ctx)));
  try {
    for (uint32_t il = 0; il < hp.n_layer; ++il) {
      Sizes s = LayerSizes(hp, il, n_ctx);
      st.k[il].assign(s.k, 0.0f);
      st.v[il].assign(s.v, 0.0f);
      st.conv[il].assign(s.conv, 0.0f);
      st.ssm[il].assign(s.ssm, 0.0f);
    }
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(StrFormat("cannot allocate the sequence state: %s for %lld positions",
                                       HumanBytes(bytes).c_str(), static_cast<long long>(n_ctx)));
  }
  return st;
}

void SequenceState::Clear() {
  n_past = 0;
  for (auto& c : conv) std::fill(c.begin(), c.end(), 0.0f);
  for (auto& s : ssm) std::fill(s.begin(), s.end(), 0.0f);
}

}  // namespace strata
