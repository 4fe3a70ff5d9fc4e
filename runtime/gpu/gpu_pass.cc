#include "runtime/gpu/gpu_pass.h"

#include <algorithm>
#include <cstring>

#include "runtime/base/strings.h"
#include "runtime/model/model.h"
#include "runtime/model/sequence_state.h"

namespace strata::gpu {
namespace {

// Where each table lies in the region (bytes from its start): seven int32
// arrays of n, three of n_seq, then four pointer arrays of layers x n_seq.
struct TablesLayout {
  uint64_t ids, pos, seq, run_start, seq_first, seq_len, swa_ring, rows, tile_t0, tile_nt;
  uint64_t k, v, conv, ssm, end;
  TablesLayout(int64_t n, int64_t n_seq, int64_t layers) {
    const auto un = static_cast<uint64_t>(n), us = static_cast<uint64_t>(n_seq);
    uint64_t at = 0;
    auto ints = [&](uint64_t count) {
      const uint64_t o = at;
      at += 4 * count;
      return o;
    };
    ids = ints(un);
    pos = ints(un);
    seq = ints(un);
    run_start = ints(un);
    seq_first = ints(us);
    seq_len = ints(us);
    swa_ring = ints(us);
    rows = ints(un);
    tile_t0 = ints(un);
    tile_nt = ints(un);
    at = (at + 7) / 8 * 8;
    const uint64_t ptrs = static_cast<uint64_t>(layers) * us * 8;
    k = at;
    v = k + ptrs;
    conv = v + ptrs;
    ssm = conv + ptrs;
    end = ssm + ptrs;
  }
};

}  // namespace

uint64_t PassTablesBytes(int64_t n, int64_t n_seq, int64_t layers) { return TablesLayout(n, n_seq, layers).end; }

Result<AttnBlocking> AttnBlocking::For(int64_t group, int64_t dk, int64_t dv, uint32_t warp, uint32_t shared_limit) {
  AttnBlocking b;
  if (group > 32)
    return Unsupported(StrFormat("%lld query heads per KV head: the GPU attention kernel takes at most 32",
                                 static_cast<long long>(group)));
  if (dv > 8 * static_cast<int64_t>(warp))
    return Unsupported(StrFormat("value heads of %lld dimensions: the GPU attention kernel takes at most %u",
                                 static_cast<long long>(dv), 8 * warp));
  b.rows = static_cast<int32_t>(std::max<int64_t>(16, group));
  for (int32_t keys = 32; keys >= 1; keys /= 2) {
    const int64_t floats = b.rows * dk + keys * (dk + 1) + keys * dv + b.rows * keys;
    if (floats * 4 <= shared_limit) {
      b.keys = keys;
      b.shared_bytes = static_cast<uint32_t>(floats * 4);
      return b;
    }
  }
  return Unsupported(StrFormat("key heads of %lld dimensions: the GPU attention kernel's tile does not fit %u bytes "
                               "of shared memory",
                               static_cast<long long>(dk), shared_limit));
}

Status ReserveStaging(Device& device, GpuBackend::PassState& p, int64_t max_tokens, uint32_t layers) {
  const uint64_t bytes = PassTablesBytes(max_tokens, max_tokens, std::max<uint32_t>(layers, 1));
  if (bytes <= p.staging_bytes) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(void* s, device.AllocatePinned(bytes, "the pass tables' staging"));
  if (p.staging) device.FreePinned(p.staging);
  p.staging = static_cast<uint8_t*>(s);
  p.staging_bytes = bytes;
  return Status::Ok();
}

Status UploadPassTables(Device& device, Stream stream, GpuBackend::PassState& p,
                        const std::function<DevicePtr(const SequenceState&)>& address, TransferCounts& transfers) {
  // A row per layer and one for an MTP layer (an MTP state's; a main state has none).
  const int64_t n = p.n, S = static_cast<int64_t>(p.batch.size()), L = p.hp->n_layer + 1;
  const TablesLayout lay(n, S, L);
  if (lay.end > p.staging_bytes)
    return Internal(StrFormat("a pass of %lld tokens needs %s of tables; the staging holds %s (a workspace made for "
                              "fewer tokens)",
                              static_cast<long long>(n), HumanBytes(lay.end).c_str(), HumanBytes(p.staging_bytes).c_str()));
  // The previous pass's copy from the staging has finished before it is rewritten.
  STRATA_RETURN_IF_ERROR(device.Synchronize(stream));
  uint8_t* h = p.staging;
  auto ints = [h](uint64_t off) { return reinterpret_cast<int32_t*>(h + off); };
  auto ptrs = [h](uint64_t off) { return reinterpret_cast<uint64_t*>(h + off); };
  const int64_t group = p.bound_group;
  const int32_t per_tile = p.attn.TokensPerTile(group);
  int64_t t = 0, r = 0, tiles = 0;
  for (int64_t s = 0; s < S; ++s) {
    const SequenceBatch& sb = p.batch[static_cast<size_t>(s)];
    const auto m = static_cast<int64_t>(sb.tokens.size());
    ints(lay.seq_first)[s] = static_cast<int32_t>(t);
    ints(lay.seq_len)[s] = static_cast<int32_t>(m);
    ints(lay.swa_ring)[s] = static_cast<int32_t>(sb.state->swa_ring);
    for (int64_t i = 0; i < m; ++i, ++t) {
      ints(lay.ids)[t] = sb.tokens[static_cast<size_t>(i)];
      ints(lay.pos)[t] = static_cast<int32_t>(sb.state->n_past + i);
      ints(lay.seq)[t] = static_cast<int32_t>(s);
      ints(lay.run_start)[t] = ints(lay.seq_first)[s];
      if (sb.all_logits || i == m - 1) ints(lay.rows)[r++] = static_cast<int32_t>(t);
    }
    for (int64_t i = 0; i < m; i += per_tile, ++tiles) {
      ints(lay.tile_t0)[tiles] = static_cast<int32_t>(ints(lay.seq_first)[s] + i);
      ints(lay.tile_nt)[tiles] = static_cast<int32_t>(std::min<int64_t>(per_tile, m - i));
    }
    const SequenceState& st = *sb.state;
    const DevicePtr base = address(st);
    for (int64_t il = 0; il < L; ++il) {
      const int64_t at = il * S + s;
      if (il >= static_cast<int64_t>(st.layers.size())) {
        ptrs(lay.k)[at] = ptrs(lay.v)[at] = ptrs(lay.conv)[at] = ptrs(lay.ssm)[at] = 0;
        continue;
      }
      const SequenceState::Layer& l = st.layers[static_cast<size_t>(il)];
      ptrs(lay.k)[at] = l.k.bytes ? base + l.k.offset : 0;
      ptrs(lay.v)[at] = l.v.bytes ? base + l.v.offset : 0;
      ptrs(lay.conv)[at] = l.conv.bytes ? base + l.conv.offset : 0;
      ptrs(lay.ssm)[at] = l.ssm.bytes ? base + l.ssm.offset : 0;
    }
  }
  if (r != p.n_rows) return Internal("BeginPass: the logits rows do not match the batch");
  const DevicePtr region = Take(*p.ws, lay.end);
  if (!region) return p.ws->Exhausted("the pass tables");
  STRATA_RETURN_IF_ERROR(device.CopyToDevice(region, h, lay.end, stream));
  transfers.up_bytes += lay.end;
  ++transfers.up_calls;
  p.n_seq = static_cast<int32_t>(S);
  p.n_tiles = static_cast<int32_t>(tiles);
  p.tables.ids = AsPtr<const int32_t>(region + lay.ids);
  p.tables.pos = AsPtr<const int32_t>(region + lay.pos);
  p.tables.seq = AsPtr<const int32_t>(region + lay.seq);
  p.tables.run_start = AsPtr<const int32_t>(region + lay.run_start);
  p.tables.seq_first = AsPtr<const int32_t>(region + lay.seq_first);
  p.tables.seq_len = AsPtr<const int32_t>(region + lay.seq_len);
  p.tables.swa_ring = AsPtr<const int32_t>(region + lay.swa_ring);
  p.tables.rows = AsPtr<const int32_t>(region + lay.rows);
  p.tables.k_cache = AsPtr<uint8_t* const>(region + lay.k);
  p.tables.v_cache = AsPtr<uint8_t* const>(region + lay.v);
  p.tables.conv_state = AsPtr<float* const>(region + lay.conv);
  p.tables.ssm_state = AsPtr<float* const>(region + lay.ssm);
  p.tile_t0 = AsPtr<const int32_t>(region + lay.tile_t0);
  p.tile_nt = AsPtr<const int32_t>(region + lay.tile_nt);
  return Status::Ok();
}

}  // namespace strata::gpu
