#include "runtime/memory/memory_plan.h"

#include <algorithm>
#include <cinttypes>
#include <set>

#include "runtime/base/platform.h"
#include "runtime/base/strings.h"
#include "runtime/experts/routing_trace.h"
#include "runtime/experts/tiered_executor.h"
#include "runtime/model/kernel_coverage.h"
#include "runtime/model/sequence_state.h"
#include "runtime/pack/pack_reader.h"
#include "runtime/quant/ggml_type.h"

namespace strata {
namespace {

// The host tier reads this view for this expert tensor (decode copy or native).
const TensorView& HostRead(const Model& m, const TensorView& t, bool decode_copies) {
  if (decode_copies && t.decode_copy >= 0) return m.tensors()[static_cast<size_t>(t.decode_copy)];
  return t;
}

bool IsExpertTierLine(PlanItem id) {
  return id == PlanItem::kExpertSlots || id == PlanItem::kDeviceTierScratch;
}

}  // namespace

Result<KvType> ParseKvType(std::string_view s) {
  // The cache types are ggml types by name: the same case-insensitive lookup.
  if (const GgmlTypeInfo* g = FindGgmlTypeByName(s))
    for (KvType t : {KvType::kF32, KvType::kF16, KvType::kQ8_0})
      if (g->name == KvTypeName(t)) return t;
  return InvalidArgument("--kv-type '" + Printable(s) + "': expected f16 (the default), q8_0 or f32");
}

uint64_t SplitHostBufferBytes(const HParams& hp, int64_t tokens) {
  const uint64_t n = static_cast<uint64_t>(std::max<int64_t>(tokens, 1)), E = hp.n_embd, K = hp.n_expert_used,
                 NE = hp.n_expert, nK = n * K;
  constexpr uint64_t kTileColumns = 64;  // the GPU's expert tiles (gpu_matmul.h)
  const uint64_t tiles = (nK + kTileColumns - 1) / kTileColumns + NE;
  const uint64_t floats = n * E /* rows down */ + nK * E /* host results */ + n * E /* one expert's rows */;
  const uint64_t ints = nK /* ids */ + 4 * NE /* counts, firsts, fills, slots */ + 4 * nK + 3 * tiles + 1 /* table */ +
                        NE /* experts */ + NE /* slots */;
  return 4 * floats + 4 * ints + 8 * NE /* rows */;
}

int64_t PlanTokensPerPass(const PlanInputs& in) {
  return std::max<int64_t>(1, std::min<int64_t>(in.batch, static_cast<int64_t>(in.parallel) * in.n_ctx));
}

// --- the fit rule -----------------------------------------------------------------

const PlanLine* MemoryPlan::Find(PlanItem id) const {
  for (const PlanLine& l : lines)
    if (l.id == id) return &l;
  return nullptr;
}

uint64_t MemoryPlan::Heap() const {
  uint64_t b = 0;
  for (const PlanLine& l : lines) if (l.place.kind == MemoryPlace::Kind::kHeap) b += l.bytes;
  return b;
}
uint64_t MemoryPlan::MappedResident() const {
  uint64_t b = 0;
  for (const PlanLine& l : lines) if (l.place.kind == MemoryPlace::Kind::kMapped && l.counts) b += l.bytes;
  return b;
}
uint64_t MemoryPlan::Mapped() const {
  uint64_t b = 0;
  for (const PlanLine& l : lines) if (l.place.kind == MemoryPlace::Kind::kMapped) b += l.bytes;
  return b;
}
uint64_t MemoryPlan::OnDevice(int device) const {
  uint64_t b = 0;
  for (const PlanLine& l : lines) if (l.place == MemoryPlace::Device(device)) b += l.bytes;
  return b;
}
uint64_t MemoryPlan::Device() const {
  uint64_t b = 0;
  for (const auto& [d, dev] : devices) b += OnDevice(d);
  return b;
}
uint64_t MemoryPlan::DeviceInHostRam() const {
  uint64_t b = 0;
  for (const auto& [d, dev] : devices) b += dev.host_ram ? OnDevice(d) : 0;
  return b;
}

uint64_t MemoryPlan::RamNeeded() const { return Heap() + MappedResident() + DeviceInHostRam(); }

uint64_t MemoryPlan::CommitNeeded() const { return Heap() + DeviceInHostRam(); }

bool MemoryPlan::RamFits() const {
  const uint64_t hard = Heap() + DeviceInHostRam();
  if (hard > ram.bytes || !CommitFits()) return false;
  return allow_paging || RamNeeded() <= ram.bytes;
}

bool MemoryPlan::DeviceFits() const {
  for (const auto& [d, dev] : devices)
    if (dev.budget && OnDevice(d) > dev.budget->bytes) return false;
  return true;
}

std::vector<std::string> MemoryPlan::Problems() const {
  std::vector<std::string> p;
  const uint64_t hard = Heap() + DeviceInHostRam();
  if (hard > ram.bytes) {
    p.push_back(StrFormat("RAM: the run's buffers need %s (%s%s) but the budget is %s (%s)", HumanBytes(hard).c_str(),
                          ("heap " + HumanBytes(Heap())).c_str(),
                          DeviceInHostRam() ? (" + device tier in host RAM " + HumanBytes(DeviceInHostRam())).c_str()
                                            : "",
                          HumanBytes(ram.bytes).c_str(), ram.source.c_str()));
  } else if (!allow_paging && RamNeeded() > ram.bytes) {
    p.push_back(StrFormat("RAM: %s of weights must stay resident (read every token) on top of %s of buffers: %s in "
                          "all, but the budget is %s (%s)",
                          HumanBytes(MappedResident()).c_str(), HumanBytes(hard).c_str(),
                          HumanBytes(RamNeeded()).c_str(), HumanBytes(ram.bytes).c_str(), ram.source.c_str()));
  }
  if (!CommitFits()) {
    p.push_back(StrFormat("commit: the run's private buffers need %s but the OS will commit only %s more (%s); "
                          "Windows charges every private byte against RAM plus the page file: close programs "
                          "or enlarge the page file",
                          HumanBytes(CommitNeeded()).c_str(), HumanBytes(ram.commit).c_str(),
                          ram.commit_source.c_str()));
  }
  for (const auto& [d, dev] : devices) {
    if (!dev.budget || OnDevice(d) <= dev.budget->bytes) continue;
    bool tier_only = true;
    for (const PlanLine& l : lines)
      if (l.place == MemoryPlace::Device(d) && l.bytes && !IsExpertTierLine(l.id)) tier_only = false;
    p.push_back(StrFormat("device %d (%s): %s needs %s but the budget is %s (%s)", d, dev.name.c_str(),
                          tier_only ? "the expert tier" : "the run", HumanBytes(OnDevice(d)).c_str(),
                          HumanBytes(dev.budget->bytes).c_str(), dev.budget->source.c_str()));
  }
  return p;
}

// --- the lines ----------------------------------------------------------------------

namespace {

// What every group of lines needs besides the inputs.
struct PlanScope {
  const PlanInputs& in;
  const Model& model;
  const Backend& backend;
  const HParams& hp;
  int64_t T;        // tokens per pass
  bool tier;        // expert tiers planned
  int32_t slots;    // device slots (0 without a tier)
  int32_t pinned;   // of which pinned
  MemoryPlace own;  // where the backend keeps its buffers
  std::vector<PlanLine>* lines;

  void Add(PlanItem id, MemoryPlace place, std::string label, uint64_t bytes, bool counts, std::string how) const {
    lines->push_back({id, place, std::move(label), bytes, counts, std::move(how)});
  }
};

// The mapped pack, and the backend's own copy of the weights.
void AddWeightLines(const PlanScope& s) {
  const PlanInputs& in = s.in;
  const Model& model = s.model;
  const HParams& hp = s.hp;
  std::set<int64_t> pinned_keys;  // layer * n_expert + expert
  if (s.pinned > 0 && in.hotness)
    for (const ExpertKey& k : in.hotness->Hottest(static_cast<size_t>(s.pinned)))
      pinned_keys.insert(static_cast<int64_t>(k.layer) * hp.n_expert + k.expert);
  uint64_t dense = 0, experts_read = 0, experts_pinned = 0, unread = 0, mtp = 0, tensor_bytes = 0;
  uint32_t n_dense = 0, n_copies = 0;
  for (const TensorView& t : model.tensors()) n_copies += t.is_decode_copy ? 1 : 0;
  for (const TensorView& t : model.tensors()) {
    tensor_bytes += t.data.size();
    if (t.layer >= static_cast<int32_t>(model.run_layers())) {  // an MTP layer's: kept in the pack, not run
      mtp += t.data.size();
      continue;
    }
    if (t.is_decode_copy) {
      if (!in.decode_copies) unread += t.data.size();
      continue;
    }
    if (!IsRoutedExpert(t)) {
      dense += t.data.size();
      ++n_dense;
      continue;
    }
    const TensorView& r = HostRead(model, t, in.decode_copies);
    if (&r != &t) unread += t.data.size();  // the decode copy stands in for it
    uint64_t pin = 0;
    for (int64_t key : pinned_keys)
      if (key / hp.n_expert == t.layer) pin += r.expert_stride;
    experts_pinned += pin;
    experts_read += r.data.size() - pin;
  }
  const MemoryPlace mapped = MemoryPlace::Mapped();
  // A device backend that holds its own copy of every tensor reads the
  // mapping once, at load: nothing of it need stay resident.
  // The split (a device tier on the backend itself): its copy leaves the
  // routed experts out; the host tier reads them from the mapping.
  const bool split = s.tier && s.in.tier.backend == &s.backend;
  const uint64_t copy = s.backend.ResidentWeightBytes(model) - (split ? s.backend.RoutedExpertBytes(model) : 0);
  const bool uploaded = copy > 0 && s.own.kind == MemoryPlace::Kind::kDevice;
  const bool experts_uploaded = uploaded && !split;
  s.Add(PlanItem::kWeightsDense, mapped, "weights: dense", dense, !uploaded,
        uploaded ? StrFormat("%u tensors, read once at load into the backend's copy on device %d", n_dense, s.own.device)
                 : StrFormat("%u tensors (attention, norms, routers, embeddings, output head), read every token",
                             n_dense));
  if (hp.n_expert) {
    s.Add(PlanItem::kExpertsHostTier, mapped, experts_uploaded ? "weights: experts" : "weights: experts, host tier",
          experts_read, !experts_uploaded,
          experts_uploaded ? StrFormat("routed experts, read once at load into the backend's copy on device %d", s.own.device) :
          StrFormat("routed experts the host tier may run (%s), read as routed%s",
                    !n_copies            ? "native blobs; the pack has no decode copies"
                    : in.decode_copies ? "Q8_0 decode copies where present, else native"
                                       : "native blobs (--decode-copies native)",
                    s.pinned ? StrFormat(", less the %d pinned on the device", s.pinned).c_str() : ""));
    if (experts_pinned)
      s.Add(PlanItem::kExpertsPinned, mapped, "weights: experts pinned on device", experts_pinned, false,
            StrFormat("%d experts, read once to fill the device tier", s.pinned));
  }
  if (unread || mtp) {
    std::string what = !unread           ? ""
                       : in.decode_copies ? "native expert blobs the decode copies stand in for"
                                          : "decode copies (not used)";
    if (mtp)
      what += StrFormat("%s%u MTP layer%s (%s; kept for speculative decoding, not run)", what.empty() ? "" : "; ",
                        hp.n_layer_all - model.run_layers(), hp.n_layer_all - model.run_layers() == 1 ? "" : "s",
                        HumanBytes(mtp).c_str());
    s.Add(PlanItem::kWeightsNotRead, mapped, "weights: not read", unread + mtp, false, what);
  }
  const uint64_t file = in.pack->file_size();
  s.Add(PlanItem::kPackOverhead, mapped, "pack: header, manifest, padding",
        file > tensor_bytes ? file - tensor_bytes : 0, false,
        "read at open (tokenizer, tensor table); not touched afterwards");
  if (copy)
    s.Add(PlanItem::kBackendWeights, s.own, "weights: the backend's own copy", copy, true,
          split ? StrFormat("the %s backend keeps every tensor but the routed experts in its own memory "
                            "(multiplied on: %s; the experts: device tier slots and host tier, docs/experts-split.md)",
                            s.backend.name().c_str(),
                            std::string(PlacementName(s.backend.WeightPlacement())).c_str())
                : StrFormat("the %s backend keeps every tensor in its own memory (multiplied on: %s; docs/backends.md)",
                            s.backend.name().c_str(), std::string(PlacementName(s.backend.WeightPlacement())).c_str()));
}

// What the backend allocates for the run: the sequences' states, the
// workspace, the large-page rounding of both, its scratch, and its own lines.
void AddBackendLines(const PlanScope& s) {
  const PlanInputs& in = s.in;
  const HParams& hp = s.hp;
  const uint64_t per_seq = SequenceState::BytesFor(hp, in.n_ctx, in.kv_type, s.T);
  // Sliding-window layers keep a ring of their last positions, twice
  // (SequenceState::swa_ring), when that is smaller than the context.
  const int64_t ring = SequenceState::SwaRingRows(hp, in.n_ctx, s.T);
  uint32_t ring_layers = 0;
  for (uint32_t il = 0; il < hp.n_layer; ++il) ring_layers += ring && hp.IsSwaLayer(il) ? 1 : 0;
  const uint64_t recurrent = SequenceState::RecurrentBytesFor(hp);
  uint32_t attn_layers = 0;
  for (uint32_t il = 0; il < hp.n_layer; ++il) attn_layers += hp.IsRecurrentLayer(il) ? 0 : 1;
  const std::string kv_name(KvTypeName(in.kv_type));
  // Latent attention caches one row a position (the latent and the RoPE
  // part) and reads its values from it.
  const std::string how =
      hp.IsLatentAttention()
          ? StrFormat("%d seq x %lld positions x %u latent-attention layers x %lld B (%u latent + %u RoPE dims as %s; "
                      "the values are the latent, no V cache)",
                      in.parallel, static_cast<long long>(in.n_ctx), attn_layers,
                      static_cast<long long>(KvHeadBytes(in.kv_type, hp.head_dim_k)), hp.kv_lora_rank, hp.n_rot,
                      kv_name.c_str())
      : ring_layers
          ? StrFormat("%d seq x (%u attention layers x %lld positions + %u sliding-window layers x 2 x %lld rows, a "
                      "ring for a window of %u and passes of %lld tokens) x %u KV heads x (%lld + %lld) B (%u + %u "
                      "dims as %s)",
                      in.parallel, attn_layers - ring_layers, static_cast<long long>(in.n_ctx), ring_layers,
                      static_cast<long long>(ring), hp.n_swa, static_cast<long long>(s.T), hp.n_head_kv,
                      static_cast<long long>(KvHeadBytes(in.kv_type, hp.head_dim_k)),
                      static_cast<long long>(KvHeadBytes(in.kv_type, hp.head_dim_v)), hp.head_dim_k, hp.head_dim_v,
                      kv_name.c_str())
          : StrFormat("%d seq x %lld positions x %u attention layers x %u KV heads x (%lld + %lld) B (%u + %u dims as %s)",
                      in.parallel, static_cast<long long>(in.n_ctx), attn_layers, hp.n_head_kv,
                      static_cast<long long>(KvHeadBytes(in.kv_type, hp.head_dim_k)),
                      static_cast<long long>(KvHeadBytes(in.kv_type, hp.head_dim_v)), hp.head_dim_k, hp.head_dim_v,
                      kv_name.c_str());
  s.Add(PlanItem::kKvCache, s.own, "KV cache (" + kv_name + ")",
        static_cast<uint64_t>(in.parallel) * (per_seq - recurrent), true, how);
  if (recurrent)
    s.Add(PlanItem::kRecurrentState, s.own, "recurrent state (F32)", static_cast<uint64_t>(in.parallel) * recurrent,
          true,
          StrFormat("%d seq x %u delta-net layers x (conv window + %u heads x %u x %u state)", in.parallel,
                    hp.n_layer - attn_layers, hp.ssm_dt_rank, hp.ssm_d_state, hp.ssm_d_state));
  if (recurrent && in.recurrent_snapshots)
    s.Add(PlanItem::kRecurrentSnapshots, s.own, "recurrent state snapshots (F32)",
          static_cast<uint64_t>(in.parallel) * recurrent, true,
          StrFormat("%d seq x one copy of the recurrent state, so a prompt that shares a prefix resumes from it",
                    in.parallel));
  const uint64_t per_mtp =
      in.model && in.model->mtp_enabled() ? SequenceState::BytesFor(hp, in.n_ctx, in.kv_type, s.T, StateLayers::kMtp) : 0;
  if (per_mtp)
    s.Add(PlanItem::kMtpCache, s.own, "MTP block's KV cache (" + kv_name + ")",
          static_cast<uint64_t>(in.parallel) * per_mtp, true,
          StrFormat("%d seq x %lld positions x 1 MTP layer (blk.%u), speculative decoding's drafts (--spec mtp)",
                    in.parallel, static_cast<long long>(in.n_ctx), hp.n_layer));
  const PassShape largest{s.T, in.n_ctx, in.threads};
  const uint64_t workspace = s.backend.WorkspaceBytes(s.model, largest);
  s.Add(PlanItem::kForwardWorkspace, s.own, "forward workspace", workspace, true,
        StrFormat("activations and scratch of a pass of %lld tokens, %lld keys, %d threads (ForwardWorkspaceBytes)",
                  static_cast<long long>(s.T), static_cast<long long>(in.n_ctx), in.threads));
  // Large pages round host buffers only: device memory has none.
  if (const uint64_t lp = s.own.kind == MemoryPlace::Kind::kHeap ? in.large_page_bytes : 0) {
    // The backend puts each buffer of a large page or more on large pages,
    // rounded up to whole ones (CpuBackend::AllocateHost).
    auto pad = [lp](uint64_t b) { return b >= lp ? LargePageSpan(b, lp) - b : 0; };
    uint64_t extra = static_cast<uint64_t>(in.parallel) * (pad(per_seq) + pad(per_mtp)) + pad(workspace);
    if (recurrent && in.recurrent_snapshots) extra += static_cast<uint64_t>(in.parallel) * pad(recurrent);
    s.Add(PlanItem::kLargePageRounding, s.own, "large-page rounding", extra, true,
          StrFormat("sequence states and workspace rounded up to whole %s pages", HumanBytes(lp).c_str()));
  }
  // The MoE op converts the rows of every selected expert at once (T x
  // n_expert_used), its gate's and up's together (one conversion when the
  // two are of one type).
  const int64_t expert_rows = s.T * std::max<int64_t>(hp.n_expert_used, 1);
  uint64_t act = 0;
  for (const TensorView& t : s.model.tensors()) {
    if (t.rank < 2) continue;
    const auto cols = static_cast<int64_t>(t.shape[0]);
    if (t.expert_count == 0) {
      act = std::max(act, s.backend.ScratchBytes(t.type, cols, s.T));
      continue;
    }
    if (!IsRoutedExpert(t)) {  // per-head matrices (deepseek2's attn_k_b, attn_v_b): one batch of every head
      act = std::max(act, s.backend.BatchScratchBytes(t.type, cols, s.T * static_cast<int64_t>(t.expert_count)));
      continue;
    }
    uint64_t bytes = s.backend.BatchScratchBytes(t.type, cols, expert_rows);
    if (t.role == TensorRole::kFfnUpExps && !t.is_decode_copy) {
      const TensorView* gate = s.model.Get(t.layer, TensorRole::kFfnGateExps);
      if (gate && gate->type != t.type) bytes += s.backend.BatchScratchBytes(gate->type, cols, expert_rows);
    }
    act = std::max(act, bytes);
  }
  s.Add(PlanItem::kBackendScratch, s.own, "backend scratch", act, true,
        StrFormat("%s: converted activations of %lld rows for the widest matrix, %lld for experts' gate and up",
                  s.backend.name().c_str(), static_cast<long long>(s.T), static_cast<long long>(expert_rows)));
  s.backend.AddPlanLines(s.model, largest, s.lines);
}

// The host's buffers of a run: logits and the sampler.
void AddHostLines(const PlanScope& s) {
  const PlanInputs& in = s.in;
  const HParams& hp = s.hp;
  const uint64_t rows = in.logits_all ? static_cast<uint64_t>(s.T) : static_cast<uint64_t>(in.parallel);
  s.Add(PlanItem::kLogits, MemoryPlace::Heap(), "logits", rows * hp.n_vocab * sizeof(float), true,
        StrFormat("%" PRIu64 " rows x %u vocabulary x 4 B", rows, hp.n_vocab));
  // The sampler's candidates (id, logit) and its probabilities (two doubles)
  // per vocabulary entry; the generated ids and the penalty counts per position.
  s.Add(PlanItem::kSampler, MemoryPlace::Heap(), "sampler and generated tokens",
        static_cast<uint64_t>(in.parallel) * (uint64_t{hp.n_vocab} * 24 + static_cast<uint64_t>(in.n_ctx) * 40), true,
        StrFormat("%d seq x (%u vocabulary x 24 B + %lld positions x 40 B)", in.parallel, hp.n_vocab,
                  static_cast<long long>(in.n_ctx)));
}

// The expert tiers: the host tier's scratch, the device tier's slots and
// scratch on its device, and the host buffers uploads pass through.
void AddTierLines(const PlanScope& s) {
  if (!s.tier) return;
  const TierDevice& dev = s.in.tier;
  const bool split = dev.backend == &s.backend;  // the GPU's own split: its MoE layer's host buffers too
  s.Add(PlanItem::kHostTierScratch, MemoryPlace::Heap(), "host expert tier scratch",
        TieredExpertExecutor::HostScratchBytes(s.hp, s.T) + (split ? SplitHostBufferBytes(s.hp, s.T) : 0), true,
        StrFormat("gate and up outputs of %lld rows x %u%s", static_cast<long long>(s.T), s.hp.n_ff_exp,
                  split ? "; the split layer's rows, routing, host results and place table" : ""));
  const SlotLayout layout = ExpertSlotLayout(s.model, s.in.decode_copies);
  s.Add(PlanItem::kExpertSlots, dev.place, "expert slots", ExpertSlots::SlotBytes(s.slots, layout), true,
        StrFormat("%d slots (%d pinned, %d run-time) x %s (largest expert of any layer: 3 matrices + %llu B padding "
                  "each)",
                  s.slots, s.pinned, s.slots - s.pinned, HumanBytes(layout.bytes).c_str(),
                  static_cast<unsigned long long>(kSlotPadding)));
  if (s.slots)
    s.Add(PlanItem::kDeviceTierScratch, dev.place, "device tier scratch",
          ExpertSlots::ScratchBytes(*dev.backend, s.model, s.T), true,
          StrFormat("the device's activations for %lld rows", static_cast<long long>(s.T)));
  const uint64_t staging = dev.backend->StagingBytes(layout.bytes);
  s.Add(PlanItem::kStaging, MemoryPlace::Heap(), "staging buffers", s.slots ? staging : 0, true,
        staging ? "host buffers uploads pass through" : "none: uploads copy straight from the mapped pack");
}

// A routing trace, and the runtime's metadata.
void AddRuntimeLines(const PlanScope& s) {
  const PlanInputs& in = s.in;
  const HParams& hp = s.hp;
  if (in.trace_tokens)
    s.Add(PlanItem::kRoutingTrace, MemoryPlace::Heap(), "routing trace",
          RoutingTraceRecorder::BytesFor(hp.n_layer, hp.n_expert_used, in.trace_tokens), true,
          StrFormat("%" PRIu64 " tokens x %u layers x %u experts x 8 B (id and probability)", in.trace_tokens,
                    hp.n_layer, hp.n_expert_used));
  // Runtime metadata: the tensor table and its indexes, the tokenizer's
  // tables (built from the manifest's sections: the strings plus a hash-map
  // entry each), the model's role table. Estimated; tests/memory_plan_test.cc
  // measures it (151k-token Qwen2 vocabulary: 38.9 MB measured, 44 MB here).
  uint64_t tok_bytes = 0, merge_bytes = 0, n_merges = 0;
  if (const fb::Tokenizer* tk = in.pack->manifest().tokenizer()) {
    tok_bytes = tk->token_bytes() ? tk->token_bytes()->size() : 0;
    merge_bytes = tk->merge_bytes() ? tk->merge_bytes()->size() : 0;
    n_merges = tk->n_merges();
  }
  const size_t n_tensors = s.model.tensors().size();
  const uint64_t meta = static_cast<uint64_t>(n_tensors) * 192 + uint64_t{hp.n_vocab} * 160 + tok_bytes +
                        n_merges * 112 + merge_bytes + (32u << 10);
  s.Add(PlanItem::kRuntimeMetadata, MemoryPlace::Heap(), "runtime metadata (estimate)", meta, true,
        StrFormat("%zu tensors x 192 B + %u tokens x 160 B + %llu merges x 112 B + %s of strings + 32 KiB", n_tensors,
                  hp.n_vocab, static_cast<unsigned long long>(n_merges), HumanBytes(tok_bytes + merge_bytes).c_str()));
}

// The devices the lines are placed on: named by the backend that keeps
// memory there, with the budget the inputs give.
std::map<int, PlanDevice> DevicesOf(const PlanScope& s) {
  std::map<int, PlanDevice> out;
  for (const PlanLine& l : *s.lines) {
    if (l.place.kind != MemoryPlace::Kind::kDevice || out.count(l.place.device)) continue;
    PlanDevice d;
    if (s.tier && l.place == s.in.tier.place && !(l.place == s.own)) {
      d.name = s.in.tier.name;
      d.host_ram = s.in.tier.host_ram;
    } else {
      d.name = s.backend.name();
    }
    if (auto it = s.in.devices.find(l.place.device); it != s.in.devices.end()) d.budget = it->second;
    out.emplace(l.place.device, std::move(d));
  }
  return out;
}

}  // namespace

Result<MemoryPlan> PlanMemory(const PlanInputs& in) {
  if (!in.pack || !in.model || !in.backend) return Internal("PlanMemory without a pack, a model or a backend");
  const HParams& hp = in.model->hp();
  if (in.n_ctx < 1) return InvalidArgument("the memory plan needs a context of at least 1 position");
  if (in.parallel < 1) return InvalidArgument("the memory plan needs at least 1 sequence (--parallel)");
  STRATA_RETURN_IF_ERROR(SequenceState::CheckKvType(hp, in.kv_type));
  if (in.expert_slots < 0 || in.expert_pinned < 0 || in.expert_pinned > in.expert_slots)
    return InvalidArgument(StrFormat("expert slots %d with %d pinned: expected 0 <= pinned <= slots", in.expert_slots,
                                     in.expert_pinned));
  MemoryPlan plan;
  plan.ram = in.ram;
  plan.allow_paging = in.allow_paging;
  plan.large_page_bytes = in.large_page_bytes;
  const bool tier = in.tier.backend != nullptr && hp.n_expert > 0;
  const int32_t slots = tier ? in.expert_slots : 0;
  const PlanScope s{in,    *in.model, *in.backend, hp, PlanTokensPerPass(in), tier, slots,
                    tier ? std::min(in.expert_pinned, slots) : 0, in.backend->BufferPlace(), &plan.lines};
  plan.model = StrFormat("%s, %u layers", std::string(ArchName(in.model->arch())).c_str(), hp.n_layer);
  if (hp.n_expert)
    plan.model += StrFormat(", %u experts per layer (top-%u)", hp.n_expert, hp.n_expert_used);
  plan.shape = StrFormat("context %lld x %d sequence%s, passes of up to %lld tokens, %d thread%s, KV cache %s",
                         static_cast<long long>(in.n_ctx), in.parallel, in.parallel == 1 ? "" : "s",
                         static_cast<long long>(s.T), in.threads, in.threads == 1 ? "" : "s",
                         std::string(KvTypeName(in.kv_type)).c_str());
  if (in.large_page_bytes) plan.shape += ", large pages " + HumanBytes(in.large_page_bytes);
  AddWeightLines(s);
  AddBackendLines(s);
  AddHostLines(s);
  AddTierLines(s);
  AddRuntimeLines(s);
  plan.devices = DevicesOf(s);
  return plan;
}

}  // namespace strata
