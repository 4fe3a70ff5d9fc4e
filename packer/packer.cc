#include "packer/packer.h"

#include <xxhash.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>

#include "packer/decode_copies.h"
#include "packer/hparams_import.h"
#include "packer/pack_writer.h"
#include "packer/planned_views.h"
#include "packer/tokenizer_import.h"
#include "runtime/base/strings.h"
#include "runtime/kernels/thread_pool.h"
#include "runtime/model/backend.h"
#include "runtime/model/fast_backend.h"
#include "runtime/model/probe.h"
#include "runtime/pack/pack_enums.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/pack/pack_format.h"
#include "runtime/pack/pack_vocab.h"
#include "runtime/quant/fp_convert.h"
#include "schema/strata_pack_generated.h"
#include "strata/version.h"

namespace strata {
namespace {

// Writes one planned tensor as a blob, converting if the plan says so.
Result<BlobInfo> WriteTensor(PackWriter& w, const gguf::GgufModel& model, const PlannedTensor& p) {
  std::span<const uint8_t> src = model.TensorData(*p.source);
  if (p.transform == TensorTransform::kCopy) return w.AddBlob(src);
  if (IsGathered(p.transform)) return w.AddBlob(GatherRows(model, p));
  // kWidenToF32: F16/BF16 -> F32, in chunks.
  STRATA_RETURN_IF_ERROR(w.BeginBlob());
  constexpr size_t kChunk = 1 << 16;
  std::vector<float> buf(kChunk);
  const size_t n = src.size() / 2;
  for (size_t i = 0; i < n; i += kChunk) {
    size_t m = std::min(kChunk, n - i);
    for (size_t k = 0; k < m; ++k) {
      uint16_t h;
      std::memcpy(&h, src.data() + 2 * (i + k), 2);
      buf[k] = p.source->type == GgmlType::kF16 ? Fp16ToFp32(h) : Bf16ToFp32(h);
    }
    STRATA_RETURN_IF_ERROR(w.Append({reinterpret_cast<const uint8_t*>(buf.data()), m * sizeof(float)}));
  }
  return w.EndBlob();
}

flatbuffers::Offset<fb::HyperParams> BuildHParams(flatbuffers::FlatBufferBuilder& b, const HParams& h) {
  auto sections = b.CreateVector(std::vector<int32_t>(h.rope_sections.begin(), h.rope_sections.end()));
  fb::HyperParamsBuilder hb(b);
  hb.add_n_vocab(h.n_vocab);
  hb.add_n_ctx_train(h.n_ctx_train);
  hb.add_n_embd(h.n_embd);
  hb.add_n_layer_all(h.n_layer_all);
  hb.add_n_layer(h.n_layer);
  hb.add_n_head(h.n_head);
  hb.add_n_head_kv(h.n_head_kv);
  hb.add_head_dim_k(h.head_dim_k);
  hb.add_head_dim_v(h.head_dim_v);
  hb.add_n_ff(h.n_ff);
  hb.add_n_expert(h.n_expert);
  hb.add_n_expert_used(h.n_expert_used);
  hb.add_n_ff_exp(h.n_ff_exp);
  hb.add_n_ff_shexp(h.n_ff_shexp);
  hb.add_n_rot(h.n_rot);
  hb.add_rope_type(pack::ToFb(h.rope_type));
  hb.add_rope_freq_base(h.rope_freq_base);
  hb.add_rope_freq_scale(h.rope_freq_scale);
  hb.add_rope_sections(sections);
  hb.add_rms_eps(h.rms_eps);
  hb.add_attn_scale(h.attn_scale);
  hb.add_expert_weights_norm(h.expert_weights_norm);
  hb.add_expert_weights_scale(h.expert_weights_scale);
  hb.add_ssm_d_conv(h.ssm_d_conv);
  hb.add_ssm_d_state(h.ssm_d_state);
  hb.add_ssm_n_group(h.ssm_n_group);
  hb.add_ssm_dt_rank(h.ssm_dt_rank);
  hb.add_ssm_d_inner(h.ssm_d_inner);
  hb.add_full_attn_interval(h.full_attn_interval);
  hb.add_nextn_predict_layers(h.nextn_predict_layers);
  hb.add_tied_output(h.tied_output);
  hb.add_rope_scaling(static_cast<uint8_t>(h.rope_scaling));
  hb.add_n_ctx_orig_yarn(h.n_ctx_orig_yarn);
  hb.add_rope_attn_factor(h.rope_attn_factor);
  hb.add_expert_gating(static_cast<uint8_t>(h.expert_gating));
  hb.add_n_layer_dense_lead(h.n_layer_dense_lead);
  hb.add_n_expert_shared(h.n_expert_shared);
  hb.add_n_swa(h.n_swa);
  hb.add_swa_pattern(h.swa_pattern);
  hb.add_q_lora_rank(h.q_lora_rank);
  hb.add_kv_lora_rank(h.kv_lora_rank);
  hb.add_head_dim_k_mla(h.head_dim_k_mla);
  hb.add_head_dim_v_mla(h.head_dim_v_mla);
  hb.add_n_expert_groups(h.n_expert_groups);
  hb.add_n_expert_groups_used(h.n_expert_groups_used);
  hb.add_rope_yarn_log_mul(h.rope_yarn_log_mul);
  hb.add_swiglu_alpha(h.swiglu_alpha);
  hb.add_ssm_grouped_heads(h.ssm_grouped_heads);
  hb.add_swiglu_limit(h.swiglu_limit);
  return hb.Finish();
}

std::string BaseName(const std::string& p) { return std::filesystem::path(p).filename().string(); }

// The probe record: the reference path run on the planned tensors (which
// are the bytes the pack will hold) before the pack is written.
Result<ProbeData> ComputeProbe(const Model& m, const PackResult& r) {
  STRATA_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok, tokenizer::Tokenizer::Create(r.vocab));
  ReferenceBackend reference;
  FastBackend::Options ko;
  ko.isa = IsaLevel::kScalar;  // the scalar kernels: the same numbers on every machine
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<FastBackend> kernels, FastBackend::Create(ko));
  return RecordProbe(m, reference, *kernels, ProbePrompt(tok, r.hparams.n_vocab), 8);
}

flatbuffers::Offset<fb::ExpertProfile> BuildProfile(flatbuffers::FlatBufferBuilder& b, const ExpertProfile& p) {
  std::vector<flatbuffers::Offset<fb::LayerProfile>> layers;
  for (const LayerExpertProfile& l : p.layers)
    layers.push_back(fb::CreateLayerProfile(b, b.CreateVector(l.counts), b.CreateVector(l.mass),
                                            b.CreateVector(l.ranking)));
  auto name = b.CreateString(p.corpus_name);
  auto layers_vec = b.CreateVector(layers);
  auto isa = b.CreateString(p.isa);
  return fb::CreateExpertProfile(b, name, p.corpus_xxh3, p.n_tokens, layers_vec, isa);
}

bool HasRoutedExperts(Arch arch) { return GetArchSpec(arch).has_experts(); }

}  // namespace

std::vector<std::string> PackOptions::Recorded() const {
  std::vector<std::string> r;
  if (allow_unsafe_fixes) r.push_back("--allow-unsafe-fixes");
  if (drop_unknown_tensors) r.push_back("--drop-unknown-tensors");
  auto ends = [](const std::string& k, std::string_view tail) {
    return k.size() >= tail.size() && k.compare(k.size() - tail.size(), tail.size(), tail) == 0;
  };
  for (const auto& [k, v] : overrides)  // (--mtp-from's two keys: recorded as --mtp-from below)
    if (mtp_from.empty() || !(ends(k, ".block_count") || ends(k, ".nextn_predict_layers")))
      r.push_back("--set " + k + "=" + v);
  if (!compress_tokenizer) r.push_back("--no-compress-tokenizer");
  if (!probe) r.push_back("--no-probe");
  if (!profile) r.push_back("--no-profile");
  if (profile && !calibration.empty()) r.push_back("--calibration " + BaseName(calibration));
  if (profile && profile_tokens != PackOptions{}.profile_tokens)
    r.push_back("--profile-tokens " + std::to_string(profile_tokens));
  if (decode_copies == DecodeCopyType::kQ8_0) r.push_back("--decode-copies q8_0");
  if (blob_alignment != PackOptions{}.blob_alignment) r.push_back("blob alignment " + std::to_string(blob_alignment));
  if (!mtp_from.empty()) r.push_back("--mtp-from " + BaseName(mtp_from));
  return r;
}

namespace {

// Step 1: the architecture (general.architecture; none for a vocab-only
// file). False when refused (r->log says why).
bool ResolveArch(const gguf::GgufModel& model, PackResult* out) {
  PackResult& r = *out;
  auto arch_name = model.GetString("general.architecture");
  r.arch_name = arch_name.ok() ? std::string(*arch_name) : "";
  if (model.tensors().empty()) {
    r.arch = Arch::kVocabOnly;
  } else if (!arch_name.ok()) {
    r.log.Refuse("general.architecture", arch_name.status().message());
    return false;
  } else if (auto a = ArchFromName(*arch_name)) {
    r.arch = *a;
  } else {
    r.log.Refuse("general.architecture",
                 "architecture '" + Printable(*arch_name) +
                     "' is not supported (Strata runs " + RunnableArchNames() + ", and packs vocab-only files)");
    return false;
  }

  return true;
}

// Step 2: the tokenizer, then the hyperparameters checked against it.
// Refusals go to r->log; errors are I/O or internal.
Status ImportTokenizerAndHParams(const gguf::GgufModel& model, const PackOptions& options, PackResult* out) {
  PackResult& r = *out;
  auto vocab = ImportVocab(model, &r.log.warnings);
  if (!vocab.ok()) {
    r.log.Refuse("tokenizer", vocab.status().message());
    return Status::Ok();
  }
  r.vocab = std::move(*vocab);
  if (r.vocab.tokens.empty()) {
    r.log.Refuse("tokenizer.ggml.tokens", "a pack needs a tokenizer: expected a token list, found none");
    return Status::Ok();
  }
  if (r.arch == Arch::kVocabOnly) {
    r.hparams.n_vocab = static_cast<uint32_t>(r.vocab.tokens.size());
  } else {
    STRATA_ASSIGN_OR_RETURN(r.hparams, ImportHParams(model, r.arch, static_cast<uint32_t>(r.vocab.tokens.size()),
                                                     options, &r.log));
    if (!r.log.refused() && r.hparams.n_vocab != r.vocab.tokens.size())
      r.log.Refuse(std::string(ArchName(r.arch)) + ".vocab_size",
                   StrFormat("expected the token count %zu, found %u", r.vocab.tokens.size(), r.hparams.n_vocab));
  }

  return Status::Ok();
}

// Step 5a: the probe record and the expert profile, computed by running the
// planned tensors (before anything is written).
Status MeasureProbeAndProfile(const gguf::GgufModel& model, const PackOptions& options, PackResult* out,
                              std::optional<ProbeData>* probe_out) {
  PackResult& r = *out;
  std::optional<ProbeData>& probe = *probe_out;
  std::optional<CalibrationCorpus> corpus;
  const bool want_profile = options.profile && HasRoutedExperts(r.arch) && r.hparams.n_expert > 0;
  if (want_profile) {
    if (options.calibration.empty()) {
      corpus = DefaultCalibrationCorpus();
    } else {
      STRATA_ASSIGN_OR_RETURN(corpus, LoadCalibrationCorpus(options.calibration));
    }
  }
  if (r.arch != Arch::kVocabOnly && (options.probe || want_profile)) {
    std::unique_ptr<PlannedViews> views = ViewPlannedTensors(model, r.plan);
    STRATA_ASSIGN_OR_RETURN(Model m, Model::FromTensors(r.arch, r.hparams, views->views, "the planned tensors"));
    if (options.probe) {
      STRATA_ASSIGN_OR_RETURN(probe, ComputeProbe(m, r));
    }
    if (want_profile) {
      STRATA_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok, tokenizer::Tokenizer::Create(r.vocab));
      ProfileOptions po;
      po.max_tokens = options.profile_tokens;
      po.threads = options.threads;
      STRATA_ASSIGN_OR_RETURN(r.profile, MeasureExpertProfile(m, tok, *corpus, po));
    }
  }
  return Status::Ok();
}

// The manifest's tensor and blob tables as the blobs are written.
struct WrittenTables {
  std::vector<flatbuffers::Offset<fb::Blob>> blobs;
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
};

// Step 5b: every planned tensor's blob, each decode copy right after its
// tensor (tensor i of the manifest uses blob i), with progress.
Result<WrittenTables> WriteTensors(PackWriter& w, flatbuffers::FlatBufferBuilder& b, const gguf::GgufModel& model,
                                   const PackResult& r, const DecodeCopyPlan& copies, const PackOptions& options,
                                   const ProgressFn& progress) {
  WrittenTables out;
  std::vector<flatbuffers::Offset<fb::Blob>>& blobs = out.blobs;
  std::vector<flatbuffers::Offset<fb::Tensor>>& tensors = out.tensors;
  std::optional<ThreadPool> pool;
  if (copies.count > 0) pool.emplace(options.threads);
  PackProgress prog;
  prog.bytes_total = r.weight_bytes + copies.bytes;
  prog.tensors_total = r.plan.size() + copies.count;
  auto add_tensor = [&](const std::string& name, const PlannedTensor& p, GgmlType type, uint64_t row_bytes,
                        uint64_t expert_stride, int32_t decode_copy, bool is_copy) {
    auto name_off = b.CreateString(name);
    auto shape = b.CreateVector(p.shape);
    fb::TensorBuilder tb(b);
    tb.add_name(name_off);
    tb.add_role(pack::ToFb(p.role));
    tb.add_layer(p.layer);
    tb.add_type(pack::ToFb(type));
    tb.add_shape(shape);
    tb.add_blob(static_cast<uint32_t>(tensors.size()));
    tb.add_row_bytes(row_bytes);
    tb.add_expert_count(p.expert_count);
    tb.add_expert_stride(expert_stride);
    tb.add_decode_copy(decode_copy);
    tb.add_is_decode_copy(is_copy);
    tensors.push_back(tb.Finish());
  };
  for (size_t i = 0; i < r.plan.size(); ++i) {
    const PlannedTensor& p = r.plan[i];
    prog.current = p.name;
    if (progress) progress(prog);
    STRATA_ASSIGN_OR_RETURN(BlobInfo bi, WriteTensor(w, model, p));
    blobs.push_back(fb::CreateBlob(b, bi.offset, bi.size, bi.xxh3));
    const bool copy = copies.copy[i];
    add_tensor(p.name, p, p.type, p.row_bytes, p.expert_stride, copy ? static_cast<int32_t>(tensors.size() + 1) : -1,
               false);
    prog.bytes_done += p.bytes;
    ++prog.tensors_done;
    if (!copy) continue;
    // The Q8_0 decode copy, right after its tensor.
    const std::string copy_name = p.name + kDecodeCopySuffix;
    prog.current = copy_name;
    if (progress) progress(prog);
    const auto cols = static_cast<int64_t>(p.shape[0]);
    const uint64_t copy_row_bytes = static_cast<uint64_t>(cols) / 32 * 34;
    // The tensor's own bytes: the source's, or its rows gathered from a fused tensor.
    std::vector<uint8_t> gathered;
    if (IsGathered(p.transform)) gathered = GatherRows(model, p);
    const std::span<const uint8_t> src =
        IsGathered(p.transform) ? std::span<const uint8_t>(gathered) : model.TensorData(*p.source);
    STRATA_ASSIGN_OR_RETURN(BlobInfo ci, WriteDecodeCopy(w, p.type, src, p.row_bytes, cols, *pool));
    blobs.push_back(fb::CreateBlob(b, ci.offset, ci.size, ci.xxh3));
    add_tensor(copy_name, p, GgmlType::kQ8_0, copy_row_bytes, p.expert_count ? copy_row_bytes * p.shape[1] : 0, -1,
               true);
    prog.bytes_done += ci.size;
    ++prog.tensors_done;
  }
  prog.current = "";
  if (progress) progress(prog);

  return out;
}

// Step 5c: the manifest: provenance, fixes, hyperparameters, tokenizer,
// tensors and blobs, probe and profile.
Status BuildManifest(flatbuffers::FlatBufferBuilder& b, const gguf::GgufModel& model, const PackOptions& options,
                     const PackResult& r, const std::optional<ProbeData>& probe, const WrittenTables& written) {
  const std::vector<flatbuffers::Offset<fb::Blob>>& blobs = written.blobs;
  const std::vector<flatbuffers::Offset<fb::Tensor>>& tensors = written.tensors;
  std::vector<flatbuffers::Offset<fb::SourceFile>> sources;
  for (size_t i = 0; i < model.shard_count(); ++i) {
    const auto& s = model.shard(i);
    sources.push_back(fb::CreateSourceFile(b, b.CreateString(BaseName(s.path)), s.file.size(),
                                           XXH3_64bits(s.file.data(), s.file.size())));
  }
  std::vector<flatbuffers::Offset<flatbuffers::String>> opts;
  for (const auto& o : options.Recorded()) opts.push_back(b.CreateString(o));
  auto model_name = model.GetString("general.name");
  auto provenance = fb::CreateProvenance(b, b.CreateString(std::string("strata-pack ") + kVersion),
                                         b.CreateVector(opts), b.CreateVector(sources), model.shard(0).parsed.version,
                                         b.CreateString(model_name.ok() ? std::string(*model_name) : ""));
  std::vector<flatbuffers::Offset<fb::Fix>> fixes;
  for (const Fix& f : r.log.fixes)
    fixes.push_back(fb::CreateFix(b, b.CreateString(f.kind), b.CreateString(f.location), b.CreateString(f.before),
                                  b.CreateString(f.after), b.CreateString(f.reason)));
  auto hp = BuildHParams(b, r.hparams);
  STRATA_ASSIGN_OR_RETURN(auto tok, BuildTokenizer(b, r.vocab, options.compress_tokenizer));
  auto arch_str = b.CreateString(r.arch_name);
  auto tensors_vec = b.CreateVector(tensors);
  auto blobs_vec = b.CreateVector(blobs);
  auto fixes_vec = b.CreateVector(fixes);
  flatbuffers::Offset<fb::ProbeRecord> probe_rec;
  if (probe) probe_rec = BuildProbe(b, *probe);
  flatbuffers::Offset<fb::ExpertProfile> profile_rec;
  if (r.profile) profile_rec = BuildProfile(b, r.profile->profile);
  fb::ManifestBuilder mb(b);
  mb.add_format_major(pack::kFormatMajor);
  mb.add_format_minor(pack::kFormatMinor);
  mb.add_arch(pack::ToFb(r.arch));
  mb.add_arch_name(arch_str);
  mb.add_hparams(hp);
  mb.add_tokenizer(tok);
  mb.add_tensors(tensors_vec);
  mb.add_blobs(blobs_vec);
  mb.add_provenance(provenance);
  mb.add_fixes(fixes_vec);
  if (probe) mb.add_probe(probe_rec);
  if (r.profile) mb.add_expert_profile(profile_rec);
  fb::FinishManifestBuffer(b, mb.Finish());
  return Status::Ok();
}

}  // namespace

namespace {

// Whether two metadata values are equal: type, value, every element.
bool SameValue(const gguf::Value& a, const gguf::Value& b) {
  if (a.type != b.type) return false;
  if (!a.is_array()) return a.u64 == b.u64 && a.i64 == b.i64 && a.f64 == b.f64 && a.str == b.str;
  if (a.elem_type != b.elem_type || a.count != b.count) return false;
  if (a.elem_type == gguf::ValueType::kString) return a.strings == b.strings;
  for (uint64_t i = 0; i < a.count; ++i)
    if (a.ElementText(i) != b.ElementText(i)) return false;
  return true;
}

Result<uint64_t> U32Key(const gguf::GgufModel& m, const std::string& key, const std::string& file, bool required) {
  const gguf::KeyValue* kv = m.Find(key);
  if (!kv) {
    if (required) return InvalidArgument(file + ": metadata '" + key + "' is missing");
    return uint64_t{0};
  }
  if (!kv->value.is_integer() || (kv->value.is_signed_integer() && kv->value.i64 < 0))
    return InvalidArgument(file + ": metadata '" + key + "': expected an unsigned integer, found " +
                           kv->value.Describe());
  return kv->value.u64;
}

}  // namespace

Status AttachMtpFrom(gguf::GgufModel& model, const std::string& path, PackOptions* options) {
  const std::string what = "--mtp-from " + path;
  STRATA_ASSIGN_OR_RETURN(gguf::GgufModel mtp, gguf::GgufModel::Open(path));
  auto arch = model.GetString("general.architecture");
  auto mtp_arch = mtp.GetString("general.architecture");
  if (!arch.ok()) return InvalidArgument("--mtp-from: the model has no general.architecture");
  if (!mtp_arch.ok() || *mtp_arch != *arch)
    return InvalidArgument(what + ": general.architecture: expected \"" + std::string(*arch) + "\" (the model's), found " +
                           (mtp_arch.ok() ? "\"" + Printable(*mtp_arch) + "\"" : std::string("none")));
  const std::string a(*arch);
  const std::optional<Arch> known = ArchFromName(a);
  if (!known || !GetArchSpec(*known).mtp)
    return InvalidArgument(what + ": " + a + " has no MTP block Strata runs (qwen35moe and glm4moe have)");
  const std::string bc = a + ".block_count", nx = a + ".nextn_predict_layers";
  for (const auto& [k, v] : options->overrides)
    if (k == bc || k == nx) return InvalidArgument(what + ": it sets " + k + " itself; drop --set " + k);
  STRATA_ASSIGN_OR_RETURN(uint64_t blocks, U32Key(model, bc, "the model", true));
  STRATA_ASSIGN_OR_RETURN(uint64_t nextn, U32Key(model, nx, "the model", false));
  STRATA_ASSIGN_OR_RETURN(uint64_t mtp_blocks, U32Key(mtp, bc, path, true));
  STRATA_ASSIGN_OR_RETURN(uint64_t mtp_nextn, U32Key(mtp, nx, path, true));
  if (nextn > blocks) return InvalidArgument(StrFormat("the model: %s %llu is more than %s %llu", nx.c_str(),
                                                       static_cast<unsigned long long>(nextn), bc.c_str(),
                                                       static_cast<unsigned long long>(blocks)));
  const uint64_t n_layer = blocks - nextn;
  if (mtp_nextn == 0 || mtp_nextn > mtp_blocks)
    return InvalidArgument(StrFormat("%s: %s: expected 1 or more MTP layers (at most %s), found %llu", what.c_str(),
                                     nx.c_str(), bc.c_str(), static_cast<unsigned long long>(mtp_nextn)));
  if (mtp_blocks - mtp_nextn != n_layer)
    return InvalidArgument(StrFormat("%s: %s - %s: expected %llu (the model's main layers), found %llu", what.c_str(),
                                     bc.c_str(), nx.c_str(), static_cast<unsigned long long>(n_layer),
                                     static_cast<unsigned long long>(mtp_blocks - mtp_nextn)));
  // Every other key of the architecture, as the model's file has it (a key
  // --set overrides is the user's to answer for: not compared).
  for (const gguf::KeyValue& kv : mtp.metadata()) {
    const std::string key(kv.key);
    if (key.rfind(a + ".", 0) != 0 || key == bc || key == nx) continue;
    bool overridden = false;
    for (const auto& [k, v] : options->overrides) overridden |= k == key;
    if (overridden) continue;
    const gguf::KeyValue* mine = model.Find(key);
    if (!mine)
      return InvalidArgument(what + ": metadata '" + key + "' (" + kv.value.Describe() +
                             ") is not in the model: the block may be of another model");
    if (!SameValue(mine->value, kv.value))
      return InvalidArgument(what + ": metadata '" + key + "': expected " + mine->value.Describe() +
                             " (the model's), found " + kv.value.Describe() + ": the block is of another model");
  }
  // The block's tensors: blk.N.* for N in n_layer .. n_layer + mtp_nextn - 1.
  auto in_block = [&](std::string_view name) {
    for (uint64_t il = n_layer; il < n_layer + mtp_nextn; ++il)
      if (name.rfind(StrFormat("blk.%llu.", static_cast<unsigned long long>(il)), 0) == 0) return true;
    return false;
  };
  for (const gguf::TensorInfo& t : model.tensors())
    if (in_block(t.name))
      return InvalidArgument(what + ": the model already has tensor '" + Printable(t.name) +
                             "' of the MTP layers: take the block from one file");
  STRATA_ASSIGN_OR_RETURN(size_t taken, model.AddTensorsFrom(std::move(mtp), in_block));
  if (taken == 0)
    return InvalidArgument(StrFormat("%s: no tensor of blk.%llu (the MTP layer) in it", what.c_str(),
                                     static_cast<unsigned long long>(n_layer)));
  options->overrides.emplace_back(bc, std::to_string(n_layer + mtp_nextn));
  options->overrides.emplace_back(nx, std::to_string(mtp_nextn));
  options->mtp_from = path;
  return Status::Ok();
}

Result<PackResult> PackModel(const gguf::GgufModel& model, const PackOptions& options, const ProgressFn& progress) {
  auto t0 = std::chrono::steady_clock::now();
  PackResult r;
  r.output = options.output;

  // 1. Architecture. 2. Tokenizer and hyperparameters.
  if (!ResolveArch(model, &r)) return r;
  STRATA_RETURN_IF_ERROR(ImportTokenizerAndHParams(model, options, &r));
  if (!options.mtp_from.empty())  // the keys AttachMtpFrom set: fixes of their own kind
    for (Fix& f : r.log.fixes)
      if (f.kind == "user-override" &&
          (f.location == r.arch_name + ".block_count" || f.location == r.arch_name + ".nextn_predict_layers")) {
        f.kind = "mtp-from";
        f.reason = "the MTP block's tensors come from " + BaseName(options.mtp_from) + " (--mtp-from)";
      }
  if (r.log.refused()) return r;

  // 3. Tensors.
  r.plan = PlanTensors(model, r.arch, &r.hparams, options, &r.log);
  for (const auto& p : r.plan) r.weight_bytes += p.bytes;
  if (r.log.refused()) return r;

  // 4. Kernel coverage and decode copies.
  DecodeCopyPlan copies;
  if (r.arch != Arch::kVocabOnly) {
    copies = PlanDecodeCopies(r.plan, r.hparams, options, &r.log);
    r.decode_copies = copies.count;
    r.decode_copy_bytes = copies.bytes;
  }
  if (r.log.refused() || options.dry_run) return r;

  // 5. The probe and the expert profile, run on the planned tensors; then the
  // blobs and the manifest, written to a temporary file renamed when complete.
  std::optional<ProbeData> probe;
  STRATA_RETURN_IF_ERROR(MeasureProbeAndProfile(model, options, &r, &probe));
  STRATA_ASSIGN_OR_RETURN(PackWriter w, PackWriter::Create(options.output, options.blob_alignment));
  flatbuffers::FlatBufferBuilder b(1 << 20);
  STRATA_ASSIGN_OR_RETURN(WrittenTables written, WriteTensors(w, b, model, r, copies, options, progress));
  STRATA_RETURN_IF_ERROR(BuildManifest(b, model, options, r, probe, written));
  STRATA_RETURN_IF_ERROR(w.Finish({b.GetBufferPointer(), b.GetSize()}));
  r.pack_bytes = w.bytes_written();
  r.written = true;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace strata
