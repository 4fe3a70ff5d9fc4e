#include "runtime/pack/pack_reader.h"

#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <mutex>
#include <numeric>
#include <thread>
#include <unordered_set>

#include "runtime/base/checked_math.h"
#include "runtime/base/strings.h"
#include "runtime/pack/pack_enums.h"

namespace strata {
namespace {

std::string U64(uint64_t v) { return StrFormat("%" PRIu64, v); }

uint64_t RoleKey(TensorRole role, int32_t layer) {
  return (uint64_t{static_cast<uint16_t>(role)} << 32) | static_cast<uint32_t>(layer);
}

std::string ShapeText(std::span<const uint64_t> s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + U64(s[i]);
  return t + "]";
}

}  // namespace

HParams HParamsFromManifest(const fb::HyperParams& f) {
  HParams h;
  h.n_vocab = f.n_vocab();
  h.n_ctx_train = f.n_ctx_train();
  h.n_embd = f.n_embd();
  h.n_layer_all = f.n_layer_all();
  h.n_layer = f.n_layer();
  h.n_head = f.n_head();
  h.n_head_kv = f.n_head_kv();
  h.head_dim_k = f.head_dim_k();
  h.head_dim_v = f.head_dim_v();
  h.n_ff = f.n_ff();
  h.n_expert = f.n_expert();
  h.n_expert_used = f.n_expert_used();
  h.n_ff_exp = f.n_ff_exp();
  h.n_ff_shexp = f.n_ff_shexp();
  h.n_rot = f.n_rot();
  h.rope_type = static_cast<RopeType>(f.rope_type());
  h.rope_freq_base = f.rope_freq_base();
  h.rope_freq_scale = f.rope_freq_scale();
  if (f.rope_sections())
    for (uint32_t i = 0; i < f.rope_sections()->size() && i < 4; ++i) h.rope_sections[i] = f.rope_sections()->Get(i);
  h.rms_eps = f.rms_eps();
  h.attn_scale = f.attn_scale();
  h.expert_weights_norm = f.expert_weights_norm();
  h.expert_weights_scale = f.expert_weights_scale();
  h.ssm_d_conv = f.ssm_d_conv();
  h.ssm_d_state = f.ssm_d_state();
  h.ssm_n_group = f.ssm_n_group();
  h.ssm_dt_rank = f.ssm_dt_rank();
  h.ssm_d_inner = f.ssm_d_inner();
  h.full_attn_interval = f.full_attn_interval();
  h.nextn_predict_layers = f.nextn_predict_layers();
  h.tied_output = f.tied_output();
  h.rope_scaling = static_cast<RopeScaling>(f.rope_scaling());
  h.n_ctx_orig_yarn = f.n_ctx_orig_yarn();
  h.rope_attn_factor = f.rope_attn_factor();
  h.expert_gating = static_cast<ExpertGating>(f.expert_gating());
  h.n_layer_dense_lead = f.n_layer_dense_lead();
  h.n_expert_shared = f.n_expert_shared();
  h.n_swa = f.n_swa();
  h.swa_pattern = f.swa_pattern();
  h.q_lora_rank = f.q_lora_rank();
  h.kv_lora_rank = f.kv_lora_rank();
  h.head_dim_k_mla = f.head_dim_k_mla();
  h.head_dim_v_mla = f.head_dim_v_mla();
  h.n_expert_groups = f.n_expert_groups();
  h.n_expert_groups_used = f.n_expert_groups_used();
  h.rope_yarn_log_mul = f.rope_yarn_log_mul();
  h.swiglu_alpha = f.swiglu_alpha();
  h.swiglu_limit = f.swiglu_limit();
  h.ssm_grouped_heads = f.ssm_grouped_heads();
  return h;
}

Result<std::unique_ptr<Pack>> Pack::Open(const std::string& path, const PackOpenOptions& options) {
  std::unique_ptr<Pack> p(new Pack());
  STRATA_ASSIGN_OR_RETURN(p->file_, MappedFile::Open(path));
  p->name_ = path;
  p->bytes_ = p->file_.bytes();
  STRATA_RETURN_IF_ERROR(p->Load());
  if (options.verify_checksums) {
    ChecksumReport r = p->VerifyChecksums(options.threads);
    if (!r.failures.empty()) return DataLoss(r.failures.front());
  }
  return p;
}

Result<std::unique_ptr<Pack>> Pack::FromBytes(const std::string& name, std::span<const uint8_t> bytes) {
  std::unique_ptr<Pack> p(new Pack());
  p->name_ = name;
  p->bytes_ = bytes;
  STRATA_RETURN_IF_ERROR(p->Load());
  return p;
}

std::span<const uint8_t> Pack::manifest_bytes() const {
  return bytes_.subspan(header_.manifest_offset, header_.manifest_size);
}

namespace {
// A manifest field that is not what the format says: which pack, which field,
// what was expected, what is there.
Status Bad(const std::string& pack, const std::string& what, const std::string& expected, const std::string& found) {
  return DataLoss(StrFormat("%s: manifest: %s: expected %s, found %s", pack.c_str(), what.c_str(), expected.c_str(),
                            found.c_str()));
}
}  // namespace

// Every check before anything is used, in order: the manifest's integrity,
// the hyperparameters, the blob layout, the tensor table, the decode copies,
// the architecture spec, the expert profile.
Status Pack::Load() {
  STRATA_ASSIGN_OR_RETURN(header_, pack::DecodeHeader(name_, bytes_));
  STRATA_RETURN_IF_ERROR(VerifyManifest());
  STRATA_RETURN_IF_ERROR(LoadHParams());
  STRATA_RETURN_IF_ERROR(CheckBlobs());
  STRATA_RETURN_IF_ERROR(LoadTensors());
  STRATA_RETURN_IF_ERROR(CheckDecodeCopies());
  STRATA_RETURN_IF_ERROR(CheckAgainstSpec());
  // The expert profile (optional).
  if (manifest_->expert_profile()) {
    STRATA_ASSIGN_OR_RETURN(ExpertProfile prof,
                            ExpertProfileFromManifest(*manifest_->expert_profile(), arch_, hparams_, name_));
    profile_ = std::move(prof);
  }
  return Status::Ok();
}

// The manifest: its checksum, then the FlatBuffers verifier, before any field is read.
Status Pack::VerifyManifest() {
  const std::string& name = name_;
  std::span<const uint8_t> mb = manifest_bytes();
  uint64_t mx = pack::Xxh3(mb);
  if (mx != header_.manifest_xxh3)
    return CorruptAt(name, header_.manifest_offset, "manifest checksum",
                     StrFormat("XXH3 %016" PRIx64 " as the header records", header_.manifest_xxh3),
                     StrFormat("%016" PRIx64 " (the manifest is corrupt)", mx));
  if (!fb::ManifestBufferHasIdentifier(mb.data()))
    return CorruptAt(name, header_.manifest_offset + 4, "manifest identifier", "\"STRM\"", "something else");
  flatbuffers::Verifier verifier(mb.data(), mb.size(), /*max_depth=*/64, /*max_tables=*/10'000'000);
  if (!fb::VerifyManifestBuffer(verifier))
    return CorruptAt(name, header_.manifest_offset, "manifest", "a well-formed FlatBuffer (Manifest table)",
                     "one that fails the FlatBuffers verifier");
  manifest_ = fb::GetManifest(mb.data());
  return Status::Ok();
}

// The format version, architecture, hyperparameters and tokenizer size.
Status Pack::LoadHParams() {
  const std::string& name = name_;
  const fb::Manifest& m = *manifest_;
  if (m.format_major() != header_.format_major)
    return Bad(name, "format_major", StrFormat("%u (the header's)", header_.format_major), U64(m.format_major()));
  if (pack::RawValue(m.arch()) > pack::RawValue(fb::Arch::MAX))
    return Status(StatusCode::kUnsupported,
                  StrFormat("%s: architecture id %u is not known to this build", name.c_str(), pack::RawValue(m.arch())));
  arch_ = static_cast<Arch>(m.arch());
  if (!m.hparams()) return Bad(name, "hparams", "a hyperparameter table", "none");
  if (pack::RawValue(m.hparams()->rope_type()) > pack::RawValue(fb::RopeType::MAX))
    return Status(StatusCode::kUnsupported, StrFormat("%s: RoPE type %u is not known to this build", name.c_str(),
                                                      pack::RawValue(m.hparams()->rope_type())));
  hparams_ = HParamsFromManifest(*m.hparams());
  if (m.hparams()->rope_sections() && m.hparams()->rope_sections()->size() > 4)
    return Bad(name, "hparams.rope_sections", "at most 4 entries", U64(m.hparams()->rope_sections()->size()));
  STRATA_RETURN_IF_ERROR(CheckHParams(arch_, hparams_).WithContext(name));
  if (hparams_.n_layer + hparams_.nextn_predict_layers != hparams_.n_layer_all)
    return Bad(name, "hparams.n_layer", "n_layer_all - nextn_predict_layers", U64(hparams_.n_layer));
  if (arch_ != Arch::kVocabOnly && hparams_.rope_type != GetArchSpec(arch_).rope_type)
    return Bad(name, "hparams.rope_type", std::string(RopeTypeName(GetArchSpec(arch_).rope_type)),
               std::string(RopeTypeName(hparams_.rope_type)));
  if (!m.tokenizer()) return Bad(name, "tokenizer", "a tokenizer table", "none");
  if (m.tokenizer()->n_tokens() != hparams_.n_vocab)
    return Bad(name, "tokenizer.n_tokens", U64(hparams_.n_vocab) + " (n_vocab)", U64(m.tokenizer()->n_tokens()));

  return Status::Ok();
}

// Blobs: inside the region, aligned, padded, in order, not overlapping.
Status Pack::CheckBlobs() {
  const std::string& name = name_;
  const fb::Manifest& m = *manifest_;
  const uint64_t region_begin = header_.blob_region_offset;
  const uint64_t region_end = header_.blob_region_offset + header_.blob_region_size;
  const auto* blobs = m.blobs();
  const uint32_t n_blobs = blobs ? blobs->size() : 0;
  uint64_t prev_end = region_begin;
  for (uint32_t i = 0; i < n_blobs; ++i) {
    const fb::Blob* b = blobs->Get(i);
    uint64_t end, padded_end;
    std::string what = StrFormat("blob %u", i);
    if (b->offset() % header_.blob_alignment != 0)
      return Bad(name, what + " offset", StrFormat("a multiple of %u", header_.blob_alignment), U64(b->offset()));
    if (b->offset() < prev_end)
      return Bad(name, what + " offset",
                 StrFormat("at or after byte %" PRIu64 " (the end of the previous blob and its padding)", prev_end),
                 U64(b->offset()) + " (blobs overlap or are out of order)");
    if (!CheckedAdd(b->offset(), b->size(), &end) || !CheckedAdd<uint64_t>(end, header_.blob_padding, &padded_end) ||
        padded_end > region_end)
      return Bad(name, what, StrFormat("%" PRIu64 " bytes plus %u of padding inside the blob region [%" PRIu64 ", %" PRIu64 ")",
                                 b->size(), header_.blob_padding, region_begin, region_end),
                 StrFormat("bytes %" PRIu64 "..%s", b->offset(),
                           end < b->offset() ? "beyond 2^64" : U64(padded_end).c_str()));
    prev_end = padded_end;
  }

  return Status::Ok();
}

// The tensor table: names, roles, layers, types, shapes, sizes against their
// blobs (each blob used by exactly one tensor), expert layout.
Status Pack::LoadTensors() {
  const std::string& name = name_;
  const fb::Manifest& m = *manifest_;
  const auto* blobs = m.blobs();
  const uint32_t n_blobs = blobs ? blobs->size() : 0;
  const auto* ts = m.tensors();
  const uint32_t n_tensors = ts ? ts->size() : 0;
  std::vector<uint8_t> blob_used(n_blobs, 0);
  tensors_.reserve(n_tensors);
  for (uint32_t i = 0; i < n_tensors; ++i) {
    const fb::Tensor* t = ts->Get(i);
    TensorView v;
    v.index = i;
    if (!t->name() || t->name()->size() == 0) return Bad(name, StrFormat("tensor %u name", i), "a name", "none");
    v.name = std::string_view(t->name()->c_str(), t->name()->size());
    std::string what = "tensor '" + Printable(v.name) + "'";
    if (!by_name_.emplace(v.name, i).second) return Bad(name, what, "a unique name", "a duplicate");
    if (pack::RawValue(t->role()) > pack::RawValue(fb::TensorRole::MAX))
      return Bad(name, what + " role", StrFormat("a role id 0..%u", pack::RawValue(fb::TensorRole::MAX)),
                 U64(pack::RawValue(t->role())));
    v.role = static_cast<TensorRole>(t->role());
    v.layer = t->layer();
    if (v.layer < -1 || (v.layer >= 0 && static_cast<uint32_t>(v.layer) >= hparams_.n_layer_all))
      return Bad(name, what + " layer", StrFormat("-1..%u", hparams_.n_layer_all - 1), StrFormat("%d", v.layer));
    const GgmlTypeInfo* ti = LookupGgmlType(pack::RawValue(t->type()));
    if (!ti || !ti->weight)
      return Bad(name, what + " type", "a weight type this build knows", DescribeTypeId(pack::RawValue(t->type())));
    v.type = ti->type;
    if (!t->shape() || t->shape()->size() < 1 || t->shape()->size() > 4)
      return Bad(name, what + " shape", "1..4 dimensions", t->shape() ? U64(t->shape()->size()) : "none");
    // FlatBuffers' verifier (2.0) checks a vector's length word to 4 bytes,
    // not its 8-byte elements; a writer always aligns them, so a misaligned
    // shape is corruption (and reading it would be a misaligned load).
    if (reinterpret_cast<uintptr_t>(t->shape()->Data()) % alignof(uint64_t) != 0)
      return Bad(name, what + " shape", "8-byte aligned elements", "a vector at a 4-byte boundary");
    v.rank = t->shape()->size();
    std::vector<int64_t> ne;
    for (uint32_t d = 0; d < v.rank; ++d) {
      uint64_t x = t->shape()->Get(d);
      if (x < 1 || x > (uint64_t{1} << 40))
        return Bad(name, what + StrFormat(" shape[%u]", d), "1..2^40", U64(x));
      v.shape[d] = x;
      ne.push_back(static_cast<int64_t>(x));
    }
    Result<uint64_t> rb = RowBytes(v.type, v.shape[0]);
    if (!rb.ok()) return Bad(name, what + " row", "a whole number of blocks", rb.status().message());
    if (*rb != t->row_bytes()) return Bad(name, what + " row_bytes", U64(*rb), U64(t->row_bytes()));
    v.row_bytes = *rb;
    Result<uint64_t> nb = TensorBytes(v.type, ne);
    if (!nb.ok()) return Bad(name, what + " size", "a size that fits in 64 bits", nb.status().message());
    if (t->blob() >= n_blobs) return Bad(name, what + " blob", StrFormat("an index below %u", n_blobs), U64(t->blob()));
    if (blob_used[t->blob()]++) return Bad(name, what + " blob", "a blob no other tensor uses", U64(t->blob()));
    const fb::Blob* b = blobs->Get(t->blob());
    if (b->size() != *nb)
      return Bad(name, what + " blob size",
                 StrFormat("%" PRIu64 " bytes (%s %s)", *nb, std::string(ti->name).c_str(),
                           ShapeText({v.shape.data(), v.rank}).c_str()),
                 U64(b->size()));
    v.data = bytes_.subspan(b->offset(), b->size());
    v.expert_count = t->expert_count();
    v.expert_stride = t->expert_stride();
    if (v.expert_count > 0) {
      if (v.rank != 3 || v.shape[2] != v.expert_count)
        return Bad(name, what + " expert_count", "shape[2] of a 3-D tensor", U64(v.expert_count));
      if (v.expert_stride != v.row_bytes * v.shape[1])
        return Bad(name, what + " expert_stride", U64(v.row_bytes * v.shape[1]), U64(v.expert_stride));
    } else if (v.expert_stride != 0) {
      return Bad(name, what + " expert_stride", "0 for a tensor that is not an expert tensor", U64(v.expert_stride));
    }
    v.decode_copy = t->decode_copy();
    v.is_decode_copy = t->is_decode_copy();
    if (v.decode_copy < -1 || v.decode_copy >= static_cast<int32_t>(n_tensors) || v.decode_copy == static_cast<int32_t>(i))
      return Bad(name, what + " decode_copy", StrFormat("-1 or another tensor's index below %u", n_tensors),
                 StrFormat("%d", v.decode_copy));
    if (!t->is_decode_copy()) {
      uint64_t key = RoleKey(v.role, v.layer);
      if (!by_role_.emplace(key, i).second) return Bad(name, what + " role", "one tensor per (role, layer)", "a duplicate");
    }
    tensors_.push_back(v);
  }
  for (uint32_t i = 0; i < n_blobs; ++i)
    if (!blob_used[i]) return Bad(name, StrFormat("blob %u", i), "a tensor that uses it", "none");
  return Status::Ok();
}

// Decode copies: each belongs to exactly one ordinary tensor, which it
// mirrors (role, layer, shape, experts) in Q8_0.
Status Pack::CheckDecodeCopies() {
  const std::string& name = name_;
  const uint32_t n_tensors = static_cast<uint32_t>(tensors_.size());
  std::vector<int32_t> copy_owner(n_tensors, -1);
  for (const TensorView& v : tensors_) {
    if (v.decode_copy < 0) continue;
    const TensorView& c = tensors_[v.decode_copy];
    std::string what = "tensor '" + Printable(v.name) + "' decode copy '" + Printable(c.name) + "'";
    if (v.is_decode_copy)
      return Bad(name, "tensor '" + Printable(v.name) + "' decode_copy", "-1 for a tensor that is itself a decode copy",
                 StrFormat("%d", v.decode_copy));
    if (!c.is_decode_copy) return Bad(name, what, "a tensor marked as a decode copy", "an ordinary tensor");
    if (copy_owner[c.index] >= 0)
      return Bad(name, what, "a copy of this tensor only",
                 "a copy that tensor '" + Printable(tensors_[copy_owner[c.index]].name) + "' also names");
    copy_owner[c.index] = static_cast<int32_t>(v.index);
    if (c.type != GgmlType::kQ8_0) return Bad(name, what + " type", "Q8_0", std::string(TypeName(c.type)));
    if (c.rank != v.rank || c.shape != v.shape)
      return Bad(name, what + " shape", ShapeText({v.shape.data(), v.rank}), ShapeText({c.shape.data(), c.rank}));
    if (c.expert_count != v.expert_count) return Bad(name, what + " expert_count", U64(v.expert_count), U64(c.expert_count));
    if (c.role != v.role || c.layer != v.layer)
      return Bad(name, what + " role and layer",
                 StrFormat("%s of layer %d (the original's)", std::string(TensorRoleName(v.role)).c_str(), v.layer),
                 StrFormat("%s of layer %d", std::string(TensorRoleName(c.role)).c_str(), c.layer));
  }
  for (const TensorView& c : tensors_)
    if (c.is_decode_copy && copy_owner[c.index] < 0)
      return Bad(name, "tensor '" + Printable(c.name) + "'", "a decode copy that an ordinary tensor names",
                 "a decode copy no tensor names");

  return Status::Ok();
}

// The architecture spec: every tensor it requires, with its shape and type, and nothing else.
Status Pack::CheckAgainstSpec() {
  const std::string& name = name_;
  const auto* ts = manifest_->tensors();
  const uint32_t n_tensors = static_cast<uint32_t>(tensors_.size());
  if (arch_ != Arch::kVocabOnly) {
    const ArchSpec& spec = GetArchSpec(arch_);
    const std::vector<ExpectedTensor> expected = ExpectedTensors(spec, hparams_);
    std::unordered_set<std::string_view> expected_names;
    for (const ExpectedTensor& e : expected) {
      expected_names.insert(e.name);
      const TensorView* v = Find(e.name);
      if (!v) {
        if (e.spec->optional) continue;
        return Bad(name, "tensor '" + e.name + "'", "present (the " + std::string(ArchName(arch_)) + " spec requires it)",
                   "no such tensor");
      }
      std::string what = "tensor '" + e.name + "'";
      if (v->role != e.spec->role || v->layer != e.layer)
        return Bad(name, what + " role", std::string(TensorRoleName(e.spec->role)), std::string(TensorRoleName(v->role)));
      if (v->rank != e.shape.size() || !std::equal(e.shape.begin(), e.shape.end(), v->shape.begin()))
        return Bad(name, what + " shape", ShapeText(e.shape), ShapeText({v->shape.data(), v->rank}));
      if (!TypeAllowed(e.spec->types, v->type))
        return Bad(name, what + " type", std::string(TypeRuleText(e.spec->types)), std::string(TypeName(v->type)));
      if (e.spec->rank == 3 && v->expert_count != e.shape[2])  // experts, or deepseek2's per-head matrices
        return Bad(name, what + " expert_count", U64(e.shape[2]), U64(v->expert_count));
    }
    for (uint32_t i = 0; i < n_tensors; ++i)
      if (!ts->Get(i)->is_decode_copy() && !expected_names.count(tensors_[i].name))
        return Bad(name, "tensor '" + Printable(tensors_[i].name) + "'",
                   "only tensors of the " + std::string(ArchName(arch_)) + " spec", "an unexpected tensor");
    if (hparams_.tied_output != (Find(TensorRole::kOutput) == nullptr))
      return Bad(name, "hparams.tied_output", hparams_.tied_output ? "no output.weight" : "an output.weight",
                 hparams_.tied_output ? "one" : "none");
  } else if (n_tensors != 0) {
    return Bad(name, "tensors", "none in a vocab-only pack", U64(n_tensors));
  }

  return Status::Ok();
}

const TensorView* Pack::Find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

const TensorView* Pack::Find(TensorRole role, int32_t layer) const {
  auto it = by_role_.find(RoleKey(role, layer));
  return it == by_role_.end() ? nullptr : &tensors_[it->second];
}

ChecksumReport Pack::VerifyChecksums(int threads) const {
  ChecksumReport r;
  const auto* blobs = manifest_->blobs();
  const uint32_t n = blobs ? blobs->size() : 0;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  r.threads = threads;
  // Large blobs first so the threads finish together.
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return blobs->Get(a)->size() > blobs->Get(b)->size(); });
  std::atomic<uint32_t> next{0};
  std::atomic<uint64_t> bytes{0};
  std::mutex mu;
  auto t0 = std::chrono::steady_clock::now();
  auto work = [&] {
    for (uint32_t k; (k = next.fetch_add(1)) < n;) {
      const fb::Blob* b = blobs->Get(order[k]);
      uint64_t got = XXH3_64bits(bytes_.data() + b->offset(), b->size());
      bytes += b->size();
      if (got != b->xxh3()) {
        std::string who;
        for (const TensorView& v : tensors_)
          if (manifest_->tensors()->Get(v.index)->blob() == order[k]) who = " (tensor '" + std::string(v.name) + "')";
        std::lock_guard<std::mutex> lock(mu);
        r.failures.push_back(StrFormat("%s: blob %u%s at byte %" PRIu64 ": checksum: expected XXH3 %016" PRIx64
                                       ", found %016" PRIx64 " (the weights are corrupt)",
                                       name_.c_str(), order[k], who.c_str(), b->offset(), b->xxh3(), got));
      }
    }
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.bytes = bytes.load();
  r.gb_per_s = r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds / 1e9 : 0;
  std::sort(r.failures.begin(), r.failures.end());
  return r;
}

}  // namespace strata
