#pragma once
// SequenceState: everything one sequence carries between forward calls: the
// KV cache of the attention layers (F32, F16 or Q8_0: kernels/kv_type.h; the
// conformance references use F32) and the recurrent state of gated delta-net layers (convolution window and
// delta-rule matrix per head). The memory belongs to the backend that made
// the state (Backend::CreateState); the state holds a handle to it and the
// layout, and only that backend's ops read or write it.

#include <cstdint>
#include <vector>

#include "runtime/arch/arch_spec.h"
#include "runtime/base/status.h"
#include "runtime/kernels/kv_type.h"
#include "runtime/model/backend_buffer.h"

namespace strata {

// Which layers a state holds: the model's (kMain), or its MTP layer alone
// (kMtp: an MTP block's own KV cache, docs/speculative.md; `layers` then
// has n_layer + 1 entries, the main ones empty).
enum class StateLayers : uint8_t { kMain = 0, kMtp = 1 };

struct SequenceState {
  int64_t n_ctx = 0;   // positions the KV cache holds
  int64_t n_past = 0;  // positions already processed

  KvType kv_type = KvType::kF32;  // how the KV rows are stored

  // Sliding-window layers (HParams::IsSwaLayer) keep a ring of their last
  // positions instead of the whole context when the state was made for
  // passes of a bounded size: swa_ring rows R (a multiple of 64, at least
  // n_swa - 1 + the pass's tokens), and every position p is stored twice,
  // at rows p mod R and p mod R + R, so any R consecutive positions lie in
  // one run of rows (SwaKeyOffset): the attention kernels read a window as
  // they read a full cache, from a shifted key index. 0: every layer keeps
  // every position at row p.
  int64_t swa_ring = 0;
  int64_t swa_window = 0;  // HParams::n_swa where swa_ring is set
  static constexpr int64_t kSwaRingAlign = 64;  // the attention kernels' key block

  // Byte offsets into `storage` per layer, and the bytes there; 0 bytes for
  // parts a layer does not use. Every part starts on a 64-byte boundary, so
  // F32 head rows of 16 floats or a multiple start on a cache line (SIMD
  // loads in the attention and delta-rule loops never split a line).
  struct Part {
    uint64_t offset = 0;
    uint64_t bytes = 0;
    uint64_t floats() const { return bytes / sizeof(float); }  // conv, ssm (F32)
  };
  struct Layer {
    Part k;     // [n_ctx][n_head_kv][head_dim_k as kv_type]
    Part v;     // [n_ctx][n_head_kv][head_dim_v as kv_type]; none with latent attention (values: k's rows)
    Part conv;  // [(d_conv - 1)][conv_dim] F32: the last inputs
    Part ssm;   // [n_v_heads][d_state (key)][d_state (value)] F32
    bool ring = false;  // k and v are the sliding window's ring: 2 * swa_ring rows
  };
  std::vector<Layer> layers;
  BackendBuffer storage;

  Backend* backend() const { return storage.owner(); }

  // The ring rows of a state for n_ctx positions and passes of at most
  // pass_tokens tokens (0: unbounded): 0 when the model has no sliding
  // window, pass_tokens is 0, or the ring's 2R rows would not be fewer than
  // n_ctx.
  static int64_t SwaRingRows(const HParams& hp, int64_t n_ctx, int64_t pass_tokens);
  // Bytes a state for these hyperparameters and context takes.
  static uint64_t BytesFor(const HParams& hp, int64_t n_ctx, KvType kv = KvType::kF32, int64_t pass_tokens = 0,
                           StateLayers which = StateLayers::kMain);
  // The part of BytesFor that does not grow with the context (recurrent state).
  static uint64_t RecurrentBytesFor(const HParams& hp) { return BytesFor(hp, 0); }
  // The layout for n_ctx positions and passes of at most pass_tokens tokens
  // of one sequence (0: unbounded, no ring); `bytes` (if given): the end of
  // its last part, which is BytesFor.
  static std::vector<Layer> Layout(const HParams& hp, int64_t n_ctx, KvType kv, uint64_t* bytes = nullptr,
                                   int64_t pass_tokens = 0, StateLayers which = StateLayers::kMain);
  // Whether this model's KV rows can be stored as `kv` (Q8_0: head dimensions
  // a multiple of 32); the error says which dimension does not fit.
  static Status CheckKvType(const HParams& hp, KvType kv);
  // Allocates for `n_ctx` positions on `backend` (Backend::CreateState),
  // for passes of at most pass_tokens tokens of this sequence (0: any
  // size; a sliding-window model then keeps every position).
  static Result<SequenceState> Create(Backend& backend, const HParams& hp, int64_t n_ctx, KvType kv = KvType::kF32,
                                      int64_t pass_tokens = 0, StateLayers which = StateLayers::kMain);
  // Forgets all positions and zeroes the recurrent state (keeps the memory).
  Status Clear();
  // Keeps the first n positions (attention layers only; recurrent state
  // cannot be rewound and must be recomputed by the caller). False, and
  // nothing changed, when a sliding window's ring has already overwritten
  // positions that a token at n would see: the caller starts afresh.
  [[nodiscard]] bool TruncateKv(int64_t n);
  // The tokens one pass of this sequence may run: the context, or what the
  // ring holds beside the window (n_swa - 1 positions before the pass).
  int64_t MaxPassTokens(const HParams& hp) const;
  // Where position `pos` of a ring layer is stored: rows Row and Row + R.
  int64_t RingRow(int64_t pos) const { return swa_ring ? pos % swa_ring : pos; }
  // The key offset for a window whose lowest position is lo: key j (j >= lo,
  // j < lo + R) is at row j - SwaKeyOffset(lo). A multiple of R (so of 64).
  int64_t SwaKeyOffset(int64_t lo) const { return swa_ring ? lo - lo % swa_ring : 0; }
};

// Makes `to` hold what `from` holds: its n_past positions of every KV cache
// and its recurrent state (n > 1 choices of one prompt). Both states belong
// to one backend and have one layout.
Status CopySequence(const SequenceState& from, SequenceState& to);

}  // namespace strata
