#include "validate/validator.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>

#include "packer/report.h"
#include "runtime/base/strings.h"
#include "runtime/model/backend_factory.h"
#include "runtime/model/probe.h"
#include "runtime/pack/pack_reader.h"
#include "runtime/pack/pack_vocab.h"
#include "runtime/quant/dequantize.h"
#include "runtime/tokenizer/tokenizer.h"

namespace strata {
namespace {

constexpr size_t kMaxProblems = 20;

class Timer {
 public:
  double Seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }

 private:
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

CheckResult Skipped(const std::string& name, const std::string& why) {
  CheckResult c;
  c.name = name;
  c.skipped = true;
  c.detail = "skipped: " + why;
  return c;
}

}  // namespace

std::vector<std::string> CheckZeroBytes(std::span<const uint8_t> file, uint64_t header_size,
                                        const std::vector<std::pair<uint64_t, uint64_t>>& used_in) {
  std::vector<std::pair<uint64_t, uint64_t>> used = used_in;
  used.emplace_back(0, header_size);
  std::sort(used.begin(), used.end());
  std::vector<std::string> problems;
  uint64_t pos = 0;
  auto scan = [&](uint64_t begin, uint64_t end) {
    // 8 bytes at a time; report the first non-zero byte of the gap.
    uint64_t i = begin;
    for (; i + 8 <= end; i += 8) {
      uint64_t w;
      std::memcpy(&w, file.data() + i, 8);
      if (w) break;
    }
    for (; i < end; ++i) {
      if (file[i]) {
        if (problems.size() < kMaxProblems)
          problems.push_back(StrFormat("byte %" PRIu64 " = 0x%02x in the gap [%" PRIu64 ", %" PRIu64
                                       ") that must be zero (padding or unused space)",
                                       i, file[i], begin, end));
        return;
      }
    }
  };
  for (const auto& [b, e] : used) {
    if (b > pos) scan(pos, std::min<uint64_t>(b, file.size()));
    pos = std::max(pos, e);
  }
  if (pos < file.size()) scan(pos, file.size());
  return problems;
}

ValidateReport ValidatePack(const std::string& path, const ValidateOptions& options) {
  ValidateReport rep;
  rep.path = path;

  // 1. Structure: header, manifest (checksum, verifier, fields), blobs, tensors, spec.
  Timer t_open;
  auto pack = Pack::Open(path);
  CheckResult structure;
  structure.name = "structure";
  structure.seconds = t_open.Seconds();
  if (!pack.ok()) {
    structure.detail = pack.status().message();
    structure.problems.push_back(pack.status().message());
    rep.checks.push_back(structure);
    for (const char* n : {"checksums", "zero-bytes", "tokenizer", "kernel-coverage", "probe-replay"})
      rep.checks.push_back(Skipped(n, "the pack's structure is not sound"));
    return rep;
  }
  const Pack& p = **pack;
  const auto& m = p.manifest();
  structure.ok = true;
  structure.detail = StrFormat("header, manifest (%s, FlatBuffers-verified), %u blobs, %zu tensors; the %s spec holds",
                               HumanBytes(p.header().manifest_size).c_str(), m.blobs() ? m.blobs()->size() : 0u,
                               p.tensors().size(), std::string(ArchName(p.arch())).c_str());
  rep.checks.push_back(structure);
  rep.info["arch"] = std::string(ArchName(p.arch()));
  rep.info["arch_name"] = m.arch_name() ? m.arch_name()->str() : "";
  rep.info["summary"] = DescribeHParams(p.arch(), p.hparams());
  rep.info["format"] = StrFormat("%u.%u", p.header().format_major, p.header().format_minor);
  rep.info["file_bytes"] = p.file_size();
  uint64_t weight_bytes = 0;
  for (const auto& t : p.tensors()) weight_bytes += t.data.size();
  rep.info["weight_bytes"] = weight_bytes;
  nlohmann::json fixes = nlohmann::json::array();
  if (m.fixes())
    for (const auto* f : *m.fixes())
      fixes.push_back({{"kind", f->kind() ? f->kind()->str() : ""},
                       {"location", f->location() ? f->location()->str() : ""},
                       {"before", f->before() ? f->before()->str() : ""},
                       {"after", f->after() ? f->after()->str() : ""}});
  rep.info["fixes"] = fixes;
  if (m.provenance() && m.provenance()->packer_version()) rep.info["packer"] = m.provenance()->packer_version()->str();

  // 2. Checksums of every blob.
  CheckResult sums;
  sums.name = "checksums";
  if (!options.checksums) {
    rep.checks.push_back(Skipped("checksums", "--no-checksums"));
  } else {
    ChecksumReport cr = p.VerifyChecksums(options.threads);
    sums.seconds = cr.seconds;
    sums.ok = cr.failures.empty();
    sums.problems = cr.failures;
    if (sums.problems.size() > kMaxProblems) sums.problems.resize(kMaxProblems);
    sums.detail = sums.ok ? StrFormat("%u blobs, %s verified at %.1f GB/s on %d threads", m.blobs() ? m.blobs()->size() : 0u,
                                      HumanBytes(cr.bytes).c_str(), cr.gb_per_s, cr.threads)
                          : StrFormat("%zu of %u blobs do not match their checksum", cr.failures.size(),
                                      m.blobs() ? m.blobs()->size() : 0u);
    rep.info["checksum_gb_per_s"] = cr.gb_per_s;
    rep.checks.push_back(sums);
  }

  // 3. Every byte outside header, blobs and manifest is zero.
  Timer t_zero;
  CheckResult zero;
  zero.name = "zero-bytes";
  std::vector<std::pair<uint64_t, uint64_t>> used;
  if (m.blobs())
    for (const auto* b : *m.blobs()) used.emplace_back(b->offset(), b->offset() + b->size());
  used.emplace_back(p.header().manifest_offset, p.header().manifest_offset + p.header().manifest_size);
  zero.problems = CheckZeroBytes(p.file_bytes(), pack::kHeaderSize, used);
  zero.ok = zero.problems.empty();
  zero.seconds = t_zero.Seconds();
  zero.detail = zero.ok ? "every byte outside the header, blobs and manifest is zero"
                        : zero.problems.front();
  rep.checks.push_back(zero);

  // 4. Tokenizer: sections decode, checksums match, ids and merges are consistent.
  Timer t_tok;
  CheckResult tok;
  tok.name = "tokenizer";
  auto vocab = VocabFromManifest(*m.tokenizer(), path);
  if (vocab.ok()) {
    auto tk = tokenizer::Tokenizer::Create(*vocab);
    if (tk.ok()) {
      tok.ok = true;
      tok.detail = StrFormat("%s (%s): %zu tokens, %zu merges, %zu end-of-generation ids",
                             std::string(tokenizer::VocabModelName(vocab->model)).c_str(), vocab->pre.c_str(),
                             vocab->tokens.size(), vocab->merges.size(), vocab->eog_ids.size());
    } else {
      tok.detail = tk.status().message();
    }
  } else {
    tok.detail = vocab.status().message();
  }
  if (!tok.ok) tok.problems.push_back(tok.detail);
  tok.seconds = t_tok.Seconds();
  rep.checks.push_back(tok);

  // 5. Kernel coverage on the CPU: every weight type has a path.
  CheckResult cov;
  cov.name = "kernel-coverage";
  for (const auto& t : p.tensors())
    if (!HasDequantizer(t.type) && cov.problems.size() < kMaxProblems)
      cov.problems.push_back("tensor '" + std::string(t.name) + "' has type " + std::string(TypeName(t.type)) +
                             ", which has no CPU kernel in this build");
  cov.ok = cov.problems.empty();
  cov.detail = cov.ok ? "every tensor's type has a CPU path" : cov.problems.front();
  rep.checks.push_back(cov);

  // 6. Probe replay: the packer's reference-path logits, recomputed with this
  // machine's fast kernels.
  if (!m.probe()) {
    rep.checks.push_back(Skipped("probe-replay", p.arch() == Arch::kVocabOnly ? "a vocab-only pack has no weights"
                                                                             : "the pack has no probe record"));
    return rep;
  }
  Timer t_probe;
  CheckResult probe;
  probe.name = "probe-replay";
  auto model = Model::Create(p);
  auto backend = model.ok() ? MakeBackend(*model, BackendKind::kFast, options.threads)
                            : Result<std::unique_ptr<MatMulBackend>>(model.status());
  if (!backend.ok()) {
    probe.detail = backend.status().message();
  } else {
    auto replay = ReplayProbe(*model, **backend, ProbeFromManifest(*m.probe()));
    if (!replay.ok()) {
      probe.detail = replay.status().message();
    } else {
      probe.ok = replay->ok;
      probe.detail = replay->detail;
      rep.info["probe_max_abs_diff"] = replay->max_abs_diff;
    }
  }
  if (!probe.ok) probe.problems.push_back(probe.detail);
  probe.seconds = t_probe.Seconds();
  rep.checks.push_back(probe);
  return rep;
}

std::string ValidateReportText(const ValidateReport& r) {
  std::string out = "strata-validate: " + r.path + "\n";
  if (r.info.contains("summary"))
    out += "  " + r.info["arch"].get<std::string>() + ": " + r.info["summary"].get<std::string>() + "\n";
  if (r.info.contains("fixes") && !r.info["fixes"].empty())
    out += StrFormat("  %zu fixes recorded by the packer (strata-validate --json lists them)\n", r.info["fixes"].size());
  for (const CheckResult& c : r.checks) {
    const char* verdict = c.skipped ? "SKIP" : c.ok ? "ok  " : "FAIL";
    out += StrFormat("  %s %-16s %s", verdict, c.name.c_str(), c.detail.c_str());
    if (c.seconds >= 0.001) out += StrFormat(" (%.3f s)", c.seconds);
    out += "\n";
    if (!c.ok && !c.skipped)
      for (size_t i = 1; i < c.problems.size(); ++i) out += "         " + c.problems[i] + "\n";
  }
  out += r.ok() ? "  sound: strata-run may serve this pack\n" : "  NOT SOUND: do not serve this pack\n";
  return out;
}

nlohmann::json ValidateReportJson(const ValidateReport& r) {
  nlohmann::json j;
  j["ok"] = r.ok();
  j["path"] = r.path;
  j["info"] = r.info;
  nlohmann::json checks = nlohmann::json::array();
  for (const CheckResult& c : r.checks)
    checks.push_back({{"name", c.name}, {"ok", c.ok}, {"skipped", c.skipped}, {"detail", c.detail},
                      {"problems", c.problems}, {"seconds", c.seconds}});
  j["checks"] = checks;
  return j;
}

}  // namespace strata
