#include "runtime/memory/memory_plan.h"

#include <algorithm>
#include <cinttypes>
#include <set>

#include "runtime/base/platform.h"
#include "runtime/base/strings.h"
#include "runtime/experts/routing_trace.h"
#include "runtime/experts/tiered_executor.h"
#include "runtime/model/forward.h"
#include "runtime/model/sequence_state.h"
#include "runtime/pack/pack_reader.h"
#include "runtime/quant/ggml_type.h"

namespace strata {
namespace {

bool IsRoutedExpert(const TensorView& t) {
  return t.expert_count > 0 && (t.role == TensorRole::kFfnGateExps || t.role == TensorRole::kFfnUpExps ||
                                t.role == TensorRole::kFfnDownExps);
}

// The host tier reads this view for this expert tensor (decode copy or native).
const TensorView& HostRead(const Model& m, const TensorView& t, bool decode_copies) {
  if (decode_copies && t.decode_copy >= 0) return m.tensors()[static_cast<size_t>(t.decode_copy)];
  return t;
}

}  // namespace

Result<KvType> ParseKvType(std::string_view s) {
  // The cache types are ggml types by name: the same case-insensitive lookup.
  if (const GgmlTypeInfo* g = FindGgmlTypeByName(s))
    for (KvType t : {KvType::kF32, KvType::kF16, KvType::kQ8_0})
      if (g->name == KvTypeName(t)) return t;
  return InvalidArgument("--kv-type '" + Printable(s) + "': expected f16 (the default), q8_0 or f32");
}

int64_t PlanTokensPerPass(const PlanInputs& in) {
  return std::max<int64_t>(1, std::min<int64_t>(in.batch, static_cast<int64_t>(in.parallel) * in.n_ctx));
}

uint64_t MemoryPlan::Heap() const {
  uint64_t b = 0;
  for (const PlanLine& l : lines) if (l.pool == PlanPool::kHeap) b += l.bytes;
  return b;
}
uint64_t MemoryPlan::MappedResident() const {
  uint64_t b = 0;
  for (const PlanLine& l : lines) if (l.pool == PlanPool::kMapped && l.counts) b += l.bytes;
  return b;
}
uint64_t MemoryPlan::Mapped() const {
  uint64_t b = 0;
  for (const PlanLine& l : lines) if (l.pool == PlanPool::kMapped) b += l.bytes;
  return b;
}
uint64_t MemoryPlan::Device() const {
  uint64_t b = 0;
  for (const PlanLine& l : lines) if (l.pool == PlanPool::kDevice) b += l.bytes;
  return b;
}
uint64_t MemoryPlan::RamNeeded() const {
  return Heap() + MappedResident() + (device_in_host_ram ? Device() : 0);
}

uint64_t MemoryPlan::CommitNeeded() const { return Heap() + (device_in_host_ram ? Device() : 0); }

bool MemoryPlan::RamFits() const {
  const uint64_t hard = Heap() + (device_in_host_ram ? Device() : 0);
  if (hard > ram.bytes || !CommitFits()) return false;
  return allow_paging || RamNeeded() <= ram.bytes;
}

bool MemoryPlan::DeviceFits() const {
  const uint64_t dev = Device();
  if (dev == 0) return true;
  auto it = devices.find(device_index);
  return it == devices.end() || dev <= it->second.bytes;
}

std::vector<std::string> MemoryPlan::Problems() const {
  std::vector<std::string> p;
  const uint64_t hard = Heap() + (device_in_host_ram ? Device() : 0);
  if (hard > ram.bytes) {
    p.push_back(StrFormat("RAM: the run's buffers need %s (%s%s) but the budget is %s (%s)", HumanBytes(hard).c_str(),
                          ("heap " + HumanBytes(Heap())).c_str(),
                          device_in_host_ram && Device() ? (" + device tier in host RAM " + HumanBytes(Device())).c_str() : "",
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
  if (!DeviceFits()) {
    const Budget& b = devices.at(device_index);
    p.push_back(StrFormat("device %d (%s): the expert tier needs %s but the budget is %s (%s)", device_index,
                          device_name.c_str(), HumanBytes(Device()).c_str(), HumanBytes(b.bytes).c_str(),
                          b.source.c_str()));
  }
  return p;
}

namespace {

Result<MemoryPlan> PlanOnly(const Pack& pack, const Model& model, const CpuBackend& backend, const PlanInputs& in) {
  const HParams& hp = model.hp();
  if (in.n_ctx < 1) return InvalidArgument("the memory plan needs a context of at least 1 position");
  if (in.parallel < 1) return InvalidArgument("the memory plan needs at least 1 sequence (--parallel)");
  STRATA_RETURN_IF_ERROR(SequenceState::CheckKvType(hp, in.kv_type));
  if (in.expert_slots < 0 || in.expert_pinned < 0 || in.expert_pinned > in.expert_slots)
    return InvalidArgument(StrFormat("expert slots %d with %d pinned: expected 0 <= pinned <= slots", in.expert_slots,
                                     in.expert_pinned));
  MemoryPlan plan;
  plan.ram = in.ram;
  plan.devices = in.devices;
  plan.device_index = in.device_index;
  plan.allow_paging = in.allow_paging;
  const bool tier = in.device != nullptr && hp.n_expert > 0;
  const int32_t slots = tier ? in.expert_slots : 0;
  const int32_t pinned = tier ? std::min(in.expert_pinned, slots) : 0;
  if (tier) {
    plan.device_name = in.device->name();
    plan.device_in_host_ram = in.device->memory() == DeviceMemory::kHostRam;
  }
  const int64_t T = PlanTokensPerPass(in);
  plan.model = StrFormat("%s, %u layers", std::string(ArchName(model.arch())).c_str(), hp.n_layer);
  if (hp.n_expert)
    plan.model += StrFormat(", %u experts per layer (top-%u)", hp.n_expert, hp.n_expert_used);
  plan.shape = StrFormat("context %lld x %d sequence%s, passes of up to %lld tokens, %d thread%s, KV cache %s",
                         static_cast<long long>(in.n_ctx), in.parallel, in.parallel == 1 ? "" : "s",
                         static_cast<long long>(T), in.threads, in.threads == 1 ? "" : "s",
                         std::string(KvTypeName(in.kv_type)).c_str());
  plan.large_page_bytes = in.large_page_bytes;
  if (in.large_page_bytes) plan.shape += ", large pages " + HumanBytes(in.large_page_bytes);
  auto add = [&](std::string item, PlanPool pool, uint64_t bytes, bool counts, std::string how) {
    plan.lines.push_back({std::move(item), pool, bytes, counts, std::move(how)});
  };

  // --- the mapped pack
  std::set<int64_t> pinned_keys;  // layer * n_expert + expert
  if (pinned > 0 && in.hotness)
    for (const ExpertKey& k : in.hotness->Hottest(static_cast<size_t>(pinned)))
      pinned_keys.insert(static_cast<int64_t>(k.layer) * hp.n_expert + k.expert);
  uint64_t dense = 0, experts_read = 0, experts_pinned = 0, unread = 0, tensor_bytes = 0;
  uint32_t n_dense = 0, n_copies = 0;
  for (const TensorView& t : model.tensors()) n_copies += t.is_decode_copy ? 1 : 0;
  for (const TensorView& t : model.tensors()) {
    tensor_bytes += t.data.size();
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
  add("weights: dense", PlanPool::kMapped, dense, true,
      StrFormat("%u tensors (attention, norms, routers, embeddings, output head), read every token", n_dense));
  if (hp.n_expert) {
    add("weights: experts, host tier", PlanPool::kMapped, experts_read, true,
        StrFormat("routed experts the host tier may run (%s), read as routed%s",
                  !n_copies            ? "native blobs; the pack has no decode copies"
                  : in.decode_copies ? "Q8_0 decode copies where present, else native"
                                     : "native blobs (--decode-copies native)",
                  pinned ? StrFormat(", less the %d pinned on the device", pinned).c_str() : ""));
    if (experts_pinned)
      add("weights: experts pinned on device", PlanPool::kMapped, experts_pinned, false,
          StrFormat("%d experts, read once to fill the device tier", pinned));
    if (unread)
      add("weights: not read", PlanPool::kMapped, unread, false,
          in.decode_copies ? "native expert blobs the decode copies stand in for" : "decode copies (not used)");
  }
  const uint64_t overhead = pack.file_size() > tensor_bytes ? pack.file_size() - tensor_bytes : 0;
  add("pack: header, manifest, padding", PlanPool::kMapped, overhead, false,
      "read at open (tokenizer, tensor table); not touched afterwards");
  if (const uint64_t copy = backend.ResidentWeightBytes(model))
    add("weights: the backend's own copy", PlanPool::kHeap, copy, true,
        StrFormat("the %s backend keeps every tensor in its own memory (multiplied on: %s; docs/backends.md)",
                  backend.name().c_str(), std::string(PlacementName(backend.WeightPlacement())).c_str()));

  // --- heap
  const uint64_t per_seq = SequenceState::BytesFor(hp, in.n_ctx, in.kv_type);
  const uint64_t recurrent = SequenceState::RecurrentBytesFor(hp);
  uint32_t attn_layers = 0;
  for (uint32_t il = 0; il < hp.n_layer; ++il) attn_layers += hp.IsRecurrentLayer(il) ? 0 : 1;
  const std::string kv_name(KvTypeName(in.kv_type));
  add("KV cache (" + kv_name + ")", PlanPool::kHeap, static_cast<uint64_t>(in.parallel) * (per_seq - recurrent), true,
      StrFormat("%d seq x %lld positions x %u attention layers x %u KV heads x (%lld + %lld) B (%u + %u dims as %s)",
                in.parallel, static_cast<long long>(in.n_ctx), attn_layers, hp.n_head_kv,
                static_cast<long long>(KvHeadBytes(in.kv_type, hp.head_dim_k)),
                static_cast<long long>(KvHeadBytes(in.kv_type, hp.head_dim_v)), hp.head_dim_k, hp.head_dim_v,
                kv_name.c_str()));
  if (recurrent)
    add("recurrent state (F32)", PlanPool::kHeap, static_cast<uint64_t>(in.parallel) * recurrent, true,
        StrFormat("%d seq x %u delta-net layers x (conv window + %u heads x %u x %u state)", in.parallel,
                  hp.n_layer - attn_layers, hp.ssm_dt_rank, hp.ssm_d_state, hp.ssm_d_state));
  if (recurrent && in.recurrent_snapshots)
    add("recurrent state snapshots (F32)", PlanPool::kHeap, static_cast<uint64_t>(in.parallel) * recurrent, true,
        StrFormat("%d seq x one copy of the recurrent state, so a prompt that shares a prefix resumes from it",
                  in.parallel));
  const PassShape shape{T, in.n_ctx, in.threads};
  const uint64_t workspace = backend.WorkspaceBytes(model, shape);
  add("forward workspace", PlanPool::kHeap, workspace, true,
      StrFormat("activations and scratch of a pass of %lld tokens, %lld keys, %d threads (ForwardWorkspaceBytes)",
                static_cast<long long>(T), static_cast<long long>(in.n_ctx), in.threads));
  if (const uint64_t lp = in.large_page_bytes) {
    // The backend puts each buffer of a large page or more on large pages,
    // rounded up to whole ones (CpuBackend::AllocateHost).
    auto pad = [lp](uint64_t b) { return b >= lp ? LargePageSpan(b, lp) - b : 0; };
    uint64_t extra = static_cast<uint64_t>(in.parallel) * pad(per_seq) + pad(workspace);
    if (recurrent && in.recurrent_snapshots) extra += static_cast<uint64_t>(in.parallel) * pad(recurrent);
    add("large-page rounding", PlanPool::kHeap, extra, true,
        StrFormat("sequence states and workspace rounded up to whole %s pages", HumanBytes(lp).c_str()));
  }
  // The MoE op converts the rows of every selected expert at once (T x
  // n_expert_used), its gate's and up's together (one conversion when the
  // two are of one type).
  const int64_t expert_rows = T * std::max<int64_t>(hp.n_expert_used, 1);
  uint64_t act = 0;
  for (const TensorView& t : model.tensors()) {
    if (t.rank < 2) continue;
    const auto cols = static_cast<int64_t>(t.shape[0]);
    if (t.expert_count == 0) {
      act = std::max(act, backend.ScratchBytes(t.type, cols, T));
      continue;
    }
    uint64_t bytes = backend.BatchScratchBytes(t.type, cols, expert_rows);
    if (t.role == TensorRole::kFfnUpExps && !t.is_decode_copy) {
      const TensorView* gate = model.Get(t.layer, TensorRole::kFfnGateExps);
      if (gate && gate->type != t.type) bytes += backend.BatchScratchBytes(gate->type, cols, expert_rows);
    }
    act = std::max(act, bytes);
  }
  add("backend scratch", PlanPool::kHeap, act, true,
      StrFormat("%s: converted activations of %lld rows for the widest matrix, %lld for experts' gate and up",
                backend.name().c_str(), static_cast<long long>(T), static_cast<long long>(expert_rows)));
  const uint64_t rows = in.logits_all ? static_cast<uint64_t>(T) : static_cast<uint64_t>(in.parallel);
  add("logits", PlanPool::kHeap, rows * hp.n_vocab * sizeof(float), true,
      StrFormat("%" PRIu64 " rows x %u vocabulary x 4 B", rows, hp.n_vocab));
  // The sampler's candidates (id, logit) and its probabilities (two doubles)
  // per vocabulary entry; the generated ids and the penalty counts per position.
  add("sampler and generated tokens", PlanPool::kHeap,
      static_cast<uint64_t>(in.parallel) * (uint64_t{hp.n_vocab} * 24 + static_cast<uint64_t>(in.n_ctx) * 40), true,
      StrFormat("%d seq x (%u vocabulary x 24 B + %lld positions x 40 B)", in.parallel, hp.n_vocab,
                static_cast<long long>(in.n_ctx)));
  if (tier) {
    add("host expert tier scratch", PlanPool::kHeap, TieredExpertExecutor::HostScratchBytes(hp, T), true,
        StrFormat("gate and up outputs of %lld rows x %u", static_cast<long long>(T), hp.n_ff_exp));
    const SlotLayout layout = ExpertSlotLayout(model, in.decode_copies);
    add("expert slots", PlanPool::kDevice, in.device->SlotBytes(slots, layout), true,
        StrFormat("%d slots (%d pinned, %d run-time) x %s (largest expert of any layer: 3 matrices + %llu B padding "
                  "each)",
                  slots, pinned, slots - pinned, HumanBytes(layout.bytes).c_str(),
                  static_cast<unsigned long long>(kSlotPadding)));
    if (slots)
      add("device tier scratch", PlanPool::kDevice, in.device->ScratchBytes(model, layout, T), true,
          StrFormat("the device's activations for %lld rows", static_cast<long long>(T)));
    const uint64_t staging = in.device->StagingBytes(layout);
    add("staging buffers", PlanPool::kHeap, slots ? staging : 0, true,
        staging ? "host buffers uploads pass through" : "none: uploads copy straight from the mapped pack");
  }
  if (in.trace_tokens)
    add("routing trace", PlanPool::kHeap, RoutingTraceRecorder::BytesFor(hp.n_layer, hp.n_expert_used, in.trace_tokens),
        true, StrFormat("%" PRIu64 " tokens x %u layers x %u experts x 8 B (id and probability)", in.trace_tokens,
                        hp.n_layer, hp.n_expert_used));
  // Runtime metadata: the tensor table and its indexes, the tokenizer's
  // tables (built from the manifest's sections: the strings plus a hash-map
  // entry each), the model's role table. Estimated; tests/memory_plan_test.cc
  // measures it (151k-token Qwen2 vocabulary: 38.9 MB measured, 44 MB here).
  uint64_t tok_bytes = 0, merge_bytes = 0, n_merges = 0;
  if (const fb::Tokenizer* tk = pack.manifest().tokenizer()) {
    tok_bytes = tk->token_bytes() ? tk->token_bytes()->size() : 0;
    merge_bytes = tk->merge_bytes() ? tk->merge_bytes()->size() : 0;
    n_merges = tk->n_merges();
  }
  const uint64_t meta = static_cast<uint64_t>(model.tensors().size()) * 192 + uint64_t{hp.n_vocab} * 160 + tok_bytes +
                        n_merges * 112 + merge_bytes + (32u << 10);
  add("runtime metadata (estimate)", PlanPool::kHeap, meta, true,
      StrFormat("%zu tensors x 192 B + %u tokens x 160 B + %llu merges x 112 B + %s of strings + 32 KiB",
                model.tensors().size(), hp.n_vocab, static_cast<unsigned long long>(n_merges),
                HumanBytes(tok_bytes + merge_bytes).c_str()));
  return plan;
}

}  // namespace

int32_t LargestFittingExpertSlots(const Pack& pack, const Model& model, const CpuBackend& backend,
                                  const PlanInputs& in, int32_t limit) {
  auto fits = [&](int32_t s) {
    PlanInputs t = in;
    t.expert_slots = s;
    t.expert_pinned = std::min(in.expert_pinned, s);
    auto p = PlanOnly(pack, model, backend, t);
    return p.ok() && p->Fits();
  };
  if (!fits(0)) return -1;
  int32_t lo = 0, hi = limit;  // fits(lo)
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

Result<MemoryPlan> PlanMemory(const Pack& pack, const Model& model, const CpuBackend& backend,
                              const PlanInputs& in) {
  STRATA_ASSIGN_OR_RETURN(MemoryPlan plan, PlanOnly(pack, model, backend, in));
  if (plan.Fits()) return plan;
  // What to change: each knob alone, at the largest value that fits.
  auto fits = [&](const PlanInputs& t) {
    auto p = PlanOnly(pack, model, backend, t);
    return p.ok() && p->Fits();
  };
  auto largest = [&](int64_t hi, auto set) -> int64_t {  // largest v in [1, hi) that fits, 0 if none
    int64_t lo = 0;
    --hi;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      PlanInputs t = in;
      set(t, mid);
      if (fits(t)) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  if (in.expert_slots > 0) {
    int32_t s = LargestFittingExpertSlots(pack, model, backend, in, in.expert_slots - 1);
    if (s >= 0)
      plan.advice.push_back(StrFormat("--expert-slots %d (a smaller expert cache: %d slots fit)", s, s));
  }
  if (int64_t c = largest(in.n_ctx, [](PlanInputs& t, int64_t v) { t.n_ctx = v; }); c > 0)
    plan.advice.push_back(StrFormat("-c %lld (a smaller context)", static_cast<long long>(c)));
  if (in.parallel > 1)
    if (int64_t p = largest(in.parallel, [](PlanInputs& t, int64_t v) { t.parallel = static_cast<int32_t>(v); }); p > 0)
      plan.advice.push_back(StrFormat("--parallel %lld (fewer sequences at once)", static_cast<long long>(p)));
  if (in.batch > 1)
    if (int64_t b = largest(in.batch, [](PlanInputs& t, int64_t v) { t.batch = static_cast<int32_t>(v); }); b > 0)
      plan.advice.push_back(StrFormat("-b %lld (smaller forward passes)", static_cast<long long>(b)));
  if (!in.allow_paging) {
    PlanInputs t = in;
    t.allow_paging = true;
    if (fits(t))
      plan.advice.push_back("--allow-paging (let the OS page weights from disk as they are read: it runs, slowly)");
  }
  if (in.trace_tokens) {
    PlanInputs t = in;
    t.trace_tokens = 0;
    if (fits(t)) plan.advice.push_back("no --routing-trace-out");
  }
  if (plan.advice.empty())
    plan.advice.push_back("no single option makes it fit: a larger budget (more memory), or a smaller quantization");
  return plan;
}

std::string FormatPlan(const MemoryPlan& plan) {
  std::string out = "memory plan: " + plan.model + "\n  " + plan.shape + "\n\n";
  out += StrFormat("  %-36s %-9s %12s  %s\n", "item", "where", "bytes", "how");
  for (const PlanLine& l : plan.lines) {
    std::string where = l.pool == PlanPool::kHeap     ? "RAM"
                        : l.pool == PlanPool::kMapped ? (l.counts ? "mapped" : "mapped*")
                                                      : StrFormat("device %d", plan.device_index);
    out += StrFormat("  %-36s %-9s %12s  %s\n", l.item.c_str(), where.c_str(), HumanBytes(l.bytes).c_str(),
                     l.how.c_str());
  }
  out += "  (mapped*: mapped, not expected to stay resident; not counted against the RAM budget)\n";
  for (const std::string& n : plan.notes) out += "  note: " + n + "\n";
  out += "\n";
  const uint64_t dev_host = plan.device_in_host_ram ? plan.Device() : 0;
  out += StrFormat("  RAM      %s needed = heap %s + resident weights %s%s; budget %s (%s): %s\n",
                   HumanBytes(plan.RamNeeded()).c_str(), HumanBytes(plan.Heap()).c_str(),
                   HumanBytes(plan.MappedResident()).c_str(),
                   dev_host ? (" + device tier in host RAM " + HumanBytes(dev_host)).c_str() : "",
                   HumanBytes(plan.ram.bytes).c_str(), plan.ram.source.c_str(),
                   plan.RamFits() ? (plan.allow_paging && plan.RamNeeded() > plan.ram.bytes
                                         ? "fits with paging (weights are read from disk as needed)"
                                         : "fits")
                                  : "DOES NOT FIT");
  if (plan.ram.commit_limited)
    out += StrFormat("  commit   %s charged (heap%s; mapped weights are not); left %s (%s): %s\n",
                     HumanBytes(plan.CommitNeeded()).c_str(), dev_host ? " + device tier in host RAM" : "",
                     HumanBytes(plan.ram.commit).c_str(), plan.ram.commit_source.c_str(),
                     plan.CommitFits() ? "fits" : "DOES NOT FIT");
  if (plan.Device() || !plan.device_name.empty()) {
    auto it = plan.devices.find(plan.device_index);
    out += StrFormat("  device %d (%s): %s needed; budget %s: %s\n", plan.device_index, plan.device_name.c_str(),
                     HumanBytes(plan.Device()).c_str(),
                     it == plan.devices.end() ? "none given (host RAM budget applies)"
                                              : (HumanBytes(it->second.bytes) + " (" + it->second.source + ")").c_str(),
                     plan.DeviceFits() ? "fits" : "DOES NOT FIT");
  }
  out += StrFormat("  mapped   %s in all (%s expected resident)\n", HumanBytes(plan.Mapped()).c_str(),
                   HumanBytes(plan.MappedResident()).c_str());
  if (!plan.Fits()) {
    out += "\n  does not fit:\n";
    for (const std::string& p : plan.Problems()) out += "    " + p + "\n";
    out += "  any one of these fits:\n";
    for (const std::string& a : plan.advice) out += "    " + a + "\n";
  }
  return out;
}

std::string FormatRefusal(const MemoryPlan& plan) {
  std::string out = "refusing to start: the memory plan does not fit\n";
  for (const std::string& n : plan.notes) out += "  note: " + n + "\n";
  for (const std::string& p : plan.Problems()) out += "  " + p + "\n";
  out += "  any one of these fits:\n";
  for (const std::string& a : plan.advice) out += "    " + a + "\n";
  out += "  (strata-run PACK --plan [options] prints the whole plan)";
  return out;
}

std::string PlanSummary(const MemoryPlan& plan) {
  std::string s = StrFormat("memory: RAM %s of %s (heap %s, resident weights %s)", HumanBytes(plan.RamNeeded()).c_str(),
                            HumanBytes(plan.ram.bytes).c_str(), HumanBytes(plan.Heap()).c_str(),
                            HumanBytes(plan.MappedResident()).c_str());
  if (plan.Device()) s += StrFormat("; device %d %s", plan.device_index, HumanBytes(plan.Device()).c_str());
  return s;
}

}  // namespace strata
