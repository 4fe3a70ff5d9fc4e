#include "packer/report.h"

#include <cinttypes>
#include <filesystem>
#include <map>

#include "runtime/base/strings.h"

namespace strata {
namespace {

std::string Sources(const gguf::GgufModel& m) {
  std::string s;
  for (size_t i = 0; i < m.shard_count(); ++i)
    s += (i ? ", " : "") + std::filesystem::path(m.shard(i).path).filename().string();
  return s;
}

std::map<std::string, std::pair<size_t, uint64_t>> ByType(const PackResult& r) {
  std::map<std::string, std::pair<size_t, uint64_t>> t;
  for (const auto& p : r.plan) {
    auto& e = t[std::string(TypeName(p.type))];
    e.first++;
    e.second += p.bytes;
  }
  return t;
}

}  // namespace

std::string DescribeHParams(Arch arch, const HParams& hp) {
  if (arch == Arch::kVocabOnly) return StrFormat("vocab-only, %u tokens", hp.n_vocab);
  std::string s = StrFormat("%u layers", hp.n_layer);
  if (hp.nextn_predict_layers) s += StrFormat(" + %u MTP", hp.nextn_predict_layers);
  s += StrFormat(", n_embd %u, %u heads / %u KV heads of %u", hp.n_embd, hp.n_head, hp.n_head_kv, hp.head_dim_k);
  if (hp.n_expert) s += StrFormat(", %u experts (%u used) of %u", hp.n_expert, hp.n_expert_used, hp.n_ff_exp);
  if (hp.n_ff_shexp) s += StrFormat(", shared expert of %u", hp.n_ff_shexp);
  if (!GetArchSpec(arch).has_experts()) s += StrFormat(", ffn %u", hp.n_ff);
  if (hp.full_attn_interval)
    s += StrFormat(", attention every %u layers, delta-net %u/%u heads of %u", hp.full_attn_interval, hp.ssm_n_group,
                   hp.ssm_dt_rank, hp.ssm_d_state);
  s += StrFormat(", vocab %u, context %u", hp.n_vocab, hp.n_ctx_train);
  return s;
}

std::string PackReportText(const gguf::GgufModel& m, const PackResult& r, const PackOptions& o) {
  std::string out;
  out += StrFormat("strata-pack: %s (%s; %s)\n",
                   r.arch == Arch::kVocabOnly ? ("vocab-only, " + r.arch_name).c_str() : r.arch_name.c_str(),
                   Sources(m).c_str(), HumanBytes(m.total_file_bytes()).c_str());
  out += "  model      " + DescribeHParams(r.arch, r.hparams) + "\n";
  out += StrFormat("  tokenizer  %s (%s), %zu tokens, %zu merges\n",
                   std::string(tokenizer::VocabModelName(r.vocab.model)).c_str(), r.vocab.pre.c_str(),
                   r.vocab.tokens.size(), r.vocab.merges.size());
  if (!r.plan.empty()) {
    out += StrFormat("  tensors    %zu, %s:", r.plan.size(), HumanBytes(r.weight_bytes).c_str());
    for (const auto& [t, e] : ByType(r)) out += StrFormat(" %s x%zu", t.c_str(), e.first);
    out += "\n";
  }
  if (r.decode_copies > 0)
    out += StrFormat("  copies     %zu Q8_0 decode copies, %s%s\n", r.decode_copies,
                     HumanBytes(r.decode_copy_bytes).c_str(), r.written ? "" : " (planned)");
  if (r.profile) {
    const ProfileRun& p = *r.profile;
    out += StrFormat("  profile    %" PRIu64 " tokens of corpus '%s' (%zu documents, %zu prompts of <= %u tokens) in "
                     "%.2f s (%.0f tok/s) on %s; the top 25%% of experts hold %.1f%% of routed mass\n",
                     p.profile.n_tokens, p.profile.corpus_name.c_str(), p.documents, p.prompts, p.prompt_tokens,
                     p.seconds, p.seconds > 0 ? static_cast<double>(p.profile.n_tokens) / p.seconds : 0.0,
                     p.backend.c_str(), 100.0 * OverallTopMassShare(p.profile, 0.25));
    if (p.corpus_tokens > p.profile.n_tokens)
      out += StrFormat("             (the corpus has %" PRIu64 " tokens; --profile-tokens %" PRIu64 " capped it)\n",
                       p.corpus_tokens, o.profile_tokens);
  }
  if (!r.log.fixes.empty()) {
    out += StrFormat("  fixes      %zu applied and recorded in the pack:\n", r.log.fixes.size());
    for (const Fix& f : r.log.fixes)
      out += StrFormat("    %-15s %s: %s -> %s\n                    why: %s\n", f.kind.c_str(), f.location.c_str(),
                       f.before.c_str(), f.after.c_str(), f.reason.c_str());
  }
  for (const std::string& w : r.log.warnings) out += "  warning    " + w + "\n";
  if (r.log.refused()) {
    out += StrFormat("  REFUSED    %zu problem%s; nothing was written:\n", r.log.refusals.size(),
                     r.log.refusals.size() == 1 ? "" : "s");
    for (const Refusal& f : r.log.refusals) {
      out += "    " + f.location + ": " + f.message + "\n";
      if (!f.override_flag.empty()) out += "      to override: " + f.override_flag + "\n";
    }
  } else if (o.dry_run) {
    out += "  dry run    the pack would be written; nothing was\n";
  } else if (r.written) {
    out += StrFormat("  wrote      %s (%s) in %.2f s (%.0f MB/s)\n", r.output.c_str(), HumanBytes(r.pack_bytes).c_str(),
                     r.seconds, r.seconds > 0 ? static_cast<double>(r.pack_bytes) / r.seconds / 1e6 : 0.0);
  }
  return out;
}

nlohmann::json PackReportJson(const gguf::GgufModel& m, const PackResult& r, const PackOptions& o) {
  using nlohmann::json;
  json j;
  j["ok"] = !r.log.refused();
  j["dry_run"] = o.dry_run;
  j["written"] = r.written;
  j["output"] = r.written ? json(r.output) : json(nullptr);
  j["arch"] = std::string(ArchName(r.arch));
  j["arch_name"] = r.arch_name;
  json src = json::array();
  for (size_t i = 0; i < m.shard_count(); ++i) src.push_back({{"path", m.shard(i).path}, {"bytes", m.shard(i).file.size()}});
  j["sources"] = src;
  j["summary"] = DescribeHParams(r.arch, r.hparams);
  j["tokenizer"] = {{"model", std::string(tokenizer::VocabModelName(r.vocab.model))},
                    {"pre", r.vocab.pre},
                    {"tokens", r.vocab.tokens.size()},
                    {"merges", r.vocab.merges.size()}};
  json bt = json::object();
  for (const auto& [t, e] : ByType(r)) bt[t] = {{"count", e.first}, {"bytes", e.second}};
  j["tensors"] = {{"count", r.plan.size()}, {"bytes", r.weight_bytes}, {"by_type", bt}};
  json fixes = json::array();
  for (const Fix& f : r.log.fixes)
    fixes.push_back({{"kind", f.kind}, {"location", f.location}, {"before", f.before}, {"after", f.after},
                     {"reason", f.reason}});
  j["fixes"] = fixes;
  json ref = json::array();
  for (const Refusal& f : r.log.refusals)
    ref.push_back({{"location", f.location}, {"message", f.message},
                   {"override", f.override_flag.empty() ? json(nullptr) : json(f.override_flag)}});
  j["refusals"] = ref;
  j["warnings"] = r.log.warnings;
  j["decode_copies"] = {{"count", r.decode_copies}, {"bytes", r.decode_copy_bytes}};
  if (r.profile) {
    const ProfileRun& p = *r.profile;
    j["expert_profile"] = {{"corpus", p.profile.corpus_name},
                           {"corpus_xxh3", StrFormat("%016" PRIx64, p.profile.corpus_xxh3)},
                           {"tokens", p.profile.n_tokens},
                           {"corpus_tokens", p.corpus_tokens},
                           {"documents", p.documents},
                           {"prompts", p.prompts},
                           {"seconds", p.seconds},
                           {"backend", p.backend},
                           {"top25_mass_share", OverallTopMassShare(p.profile, 0.25)}};
  } else {
    j["expert_profile"] = nullptr;
  }
  if (r.written) {
    j["pack_bytes"] = r.pack_bytes;
    j["seconds"] = r.seconds;
  }
  return j;
}

}  // namespace strata
