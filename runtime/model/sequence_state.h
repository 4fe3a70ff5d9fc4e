#pragma once
// SequenceState: everything one sequence carries between forward calls: the
// KV cache of the attention layers (F32, as the conformance references use)
// and the recurrent state of gated delta-net layers (convolution window and
// delta-rule matrix per head).

#include <cstdint>
#include <vector>

#include "runtime/arch/arch_spec.h"
#include "runtime/base/checked_alloc.h"
#include "runtime/base/status.h"

namespace strata {

struct SequenceState {
  int64_t n_ctx = 0;   // positions the KV cache holds
  int64_t n_past = 0;  // positions already processed
  // Per layer; empty for layers that do not use them. 64-byte aligned, so
  // head rows of 16 floats or a multiple start on a cache line (SIMD loads
  // in the attention and delta-rule loops never split a line).
  std::vector<AlignedVector<float>> k;     // [n_ctx][n_head_kv * head_dim_k]
  std::vector<AlignedVector<float>> v;     // [n_ctx][n_head_kv * head_dim_v]
  std::vector<AlignedVector<float>> conv;  // [(d_conv - 1)][conv_dim]: the last inputs
  std::vector<AlignedVector<float>> ssm;   // [n_v_heads][d_state (key)][d_state (value)]

  // Bytes a state for these hyperparameters and context takes.
  static uint64_t BytesFor(const HParams& hp, int64_t n_ctx);
  // The part of BytesFor that does not grow with the context (recurrent state).
  static uint64_t RecurrentBytesFor(const HParams& hp) { return BytesFor(hp, 0); }
  // Allocates for `n_ctx` positions (errors: kResourceExhausted with the size).
  static Result<SequenceState> Create(const HParams& hp, int64_t n_ctx);
  // Forgets all positions (keeps the memory).
  void Clear();
  // Keeps the first n positions (attention layers only; recurrent state
  // cannot be rewound and must be recomputed by the caller).
  void TruncateKv(int64_t n) { if (n < n_past) n_past = n; }
};

}  // namespace strata
