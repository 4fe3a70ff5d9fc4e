#pragma once
// The GPU backend's per-pass state and its tables: what BeginPass uploads
// (token ids, positions, sequences, the rows asked for, the attention tiles,
// and each sequence's cache addresses per layer) and where it lives.

#include <cstdint>
#include <functional>
#include <span>

#include "runtime/base/status.h"
#include "runtime/gpu/device.h"
#include "runtime/gpu/gpu_backend.h"
#include "runtime/gpu/kernels/kernel_args.h"
#include "runtime/model/pass.h"
#include "runtime/model/workspace.h"

namespace strata::gpu {

template <typename T>
T* AsPtr(DevicePtr p) {
  return reinterpret_cast<T*>(static_cast<uintptr_t>(p));
}
inline uint32_t GridFor(int64_t n, int64_t per) { return static_cast<uint32_t>((n + per - 1) / per); }
// `bytes` of the workspace (device memory), 64-byte aligned; 0 when it does
// not fit (Workspace::Take's rule: later takes fail too until a Release).
inline DevicePtr Take(Workspace& ws, uint64_t bytes) {
  return static_cast<DevicePtr>(reinterpret_cast<uintptr_t>(ws.Take<uint8_t>(bytes)));
}

// Attention's blocking for a model (kernels/attention.cu): query rows per
// block (a whole number of tokens x the GQA group), keys staged per tile,
// the dynamic shared memory that takes; decode splits the context in pieces
// of kSplitKeys.
struct AttnBlocking {
  int32_t rows = 16;
  int32_t keys = 32;
  uint32_t shared_bytes = 0;
  static constexpr int32_t kSplitKeys = 256;
  // Errors: a head or group too large for the kernel, naming the limit.
  static Result<AttnBlocking> For(int64_t group, int64_t dk, int64_t dv, uint32_t warp, uint32_t shared_limit);
  int32_t TokensPerTile(int64_t group) const { return static_cast<int32_t>(std::max<int64_t>(1, rows / group)); }
};

// Bytes of the pass tables for n tokens of n_seq sequences and `layers` layers.
uint64_t PassTablesBytes(int64_t n, int64_t n_seq, int64_t layers);

}  // namespace strata::gpu

namespace strata {

struct GpuBackend::PassState {
  // --- per pass (Reset clears them) ---
  const Model* m = nullptr;
  const HParams* hp = nullptr;
  std::span<const SequenceBatch> batch;
  const ForwardOptions* opt = nullptr;
  Workspace* ws = nullptr;
  uint64_t ws_mark = 0;
  int64_t n = 0, n_rows = 0, max_keys = 1;
  int32_t n_seq = 0;
  gpu::PassTables tables{};
  const int32_t* tile_t0 = nullptr;  // attention tiles (device)
  const int32_t* tile_nt = nullptr;
  int32_t n_tiles = 0;
  gpu::DevicePtr act[3] = {0, 0, 0};

  // --- for the bound model and the backend's life ---
  uint64_t bound_embd = 0;
  uint32_t bound_layers = 0;
  int64_t bound_group = 1;  // n_head / n_head_kv
  gpu::AttnBlocking attn;
  uint8_t* staging = nullptr;  // pinned host memory for the tables
  uint64_t staging_bytes = 0;

  void Reset() {
    m = nullptr;
    hp = nullptr;
    batch = {};
    opt = nullptr;
    ws = nullptr;
    ws_mark = 0;
    n = n_rows = 0;
    max_keys = 1;
    n_seq = 0;
    tables = gpu::PassTables{};
    tile_t0 = tile_nt = nullptr;
    n_tiles = 0;
    act[0] = act[1] = act[2] = 0;
  }
};

namespace gpu {

// Makes the staging hold the tables of up to max_tokens tokens.
Status ReserveStaging(Device& device, GpuBackend::PassState& p, int64_t max_tokens, uint32_t layers);
// Builds the pass's tables on the host and uploads them into the workspace
// (counted as an upload); sets p.tables and the attention tiles.
Status UploadPassTables(Device& device, Stream stream, GpuBackend::PassState& p,
                        const std::function<DevicePtr(const SequenceState&)>& address, TransferCounts& transfers);

}  // namespace gpu
}  // namespace strata
