#pragma once
// SequenceState: everything one sequence carries between forward calls: the
// KV cache of the attention layers (F32, as the conformance references use)
// and the recurrent state of gated delta-net layers (convolution window and
// delta-rule matrix per head). The memory belongs to the backend that made
// the state (Backend::CreateState); the state holds a handle to it and the
// layout, and only that backend's ops read or write it.

#include <cstdint>
#include <vector>

#include "runtime/arch/arch_spec.h"
#include "runtime/base/status.h"
#include "runtime/model/backend_buffer.h"

namespace strata {

struct SequenceState {
  int64_t n_ctx = 0;   // positions the KV cache holds
  int64_t n_past = 0;  // positions already processed

  // Float offsets into `storage` per layer, and the floats there; 0 floats
  // for parts a layer does not use. Every part starts on a 64-byte boundary,
  // so head rows of 16 floats or a multiple start on a cache line (SIMD loads
  // in the attention and delta-rule loops never split a line).
  struct Part {
    uint64_t offset = 0;
    uint64_t floats = 0;
  };
  struct Layer {
    Part k;     // [n_ctx][n_head_kv * head_dim_k]
    Part v;     // [n_ctx][n_head_kv * head_dim_v]
    Part conv;  // [(d_conv - 1)][conv_dim]: the last inputs
    Part ssm;   // [n_v_heads][d_state (key)][d_state (value)]
  };
  std::vector<Layer> layers;
  BackendBuffer storage;

  Backend* backend() const { return storage.owner(); }

  // Bytes a state for these hyperparameters and context takes.
  static uint64_t BytesFor(const HParams& hp, int64_t n_ctx);
  // The part of BytesFor that does not grow with the context (recurrent state).
  static uint64_t RecurrentBytesFor(const HParams& hp) { return BytesFor(hp, 0); }
  // The layout for n_ctx positions; `bytes` (if given): the end of its last
  // part, which is BytesFor.
  static std::vector<Layer> Layout(const HParams& hp, int64_t n_ctx, uint64_t* bytes = nullptr);
  // Allocates for `n_ctx` positions on `backend` (Backend::CreateState).
  static Result<SequenceState> Create(Backend& backend, const HParams& hp, int64_t n_ctx);
  // Forgets all positions and zeroes the recurrent state (keeps the memory).
  Status Clear();
  // Keeps the first n positions (attention layers only; recurrent state
  // cannot be rewound and must be recomputed by the caller).
  void TruncateKv(int64_t n) { if (n < n_past) n_past = n; }
};

// Makes `to` hold what `from` holds: its n_past positions of every KV cache
// and its recurrent state (n > 1 choices of one prompt). Both states belong
// to one backend and have one layout.
Status CopySequence(const SequenceState& from, SequenceState& to);

}  // namespace strata
