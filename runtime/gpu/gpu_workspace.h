#pragma once
// The GPU backend's workspace: the shapes its ops take scratch for, and the
// most a pass of a given shape takes (GpuBackend::WorkspaceBytes), counted
// op by op in the order the ops take it (gpu_backend.cc, gpu_layers.cc).

#include <cstdint>

#include "runtime/arch/arch_spec.h"
#include "runtime/model/model.h"
#include "runtime/model/workspace.h"

namespace strata::gpu {

struct AttentionShape {
  int64_t q_width = 0;        // a token's q row: [q | gate] per head when gated
  int64_t q_head_stride = 0;
  int64_t splits = 1;         // decode: the keys split in pieces, merged after
  static AttentionShape For(const HParams& hp, Mixer mixer, int64_t n, int64_t max_keys);
};

struct DeltaNetShape {
  int64_t n_k = 0, n_v = 0, dk = 0, dv = 0, key_dim = 0, value_dim = 0, channels = 0, d_conv = 0;
  bool grouped_heads = false;  // HParams::ssm_grouped_heads
  static constexpr int64_t kChunk = 64;  // kernels/delta_net.cu kDeltaChunk
  static DeltaNetShape For(const HParams& hp);
};

struct MoeShape {
  int64_t ff = 0;
  bool per_place = true;  // matrix-vector per (token, expert) entry, else expert tiles
  int32_t max_tiles = 0;
  static MoeShape For(const HParams& hp, int64_t n);
};

// The most workspace a pass of `shape` takes on the GPU backend.
uint64_t GpuWorkspaceBytes(const Model& model, const PassShape& shape);

}  // namespace strata::gpu
