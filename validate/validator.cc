#include "validate/validator.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstring>
#include <map>

#include "packer/decode_copies.h"
#include "packer/report.h"
#include "runtime/base/strings.h"
#include "runtime/gpu/images.h"
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

std::string NameList(const std::vector<std::string>& names) {
  std::string s = "'" + names.front() + "'";
  if (names.size() > 1) s += StrFormat(" and %zu more", names.size() - 1);
  return s;
}

// Kernel coverage on a GPU: the device kernels (one source for CUDA and HIP,
// runtime/gpu/kernels) for every tensor the GPU backend reads: matrices it
// multiplies and row-lookup tables it gathers from. A type without a device
// kernel runs from its Q8_0 decode copy when the pack has one (the backend
// picks it, as strata-run --decode-copies auto does), else it is a problem:
// the backend would refuse the pack at load, naming the tensor.
// The split (a VRAM budget): each routed expert matrix may run on either
// side, from what the host tier reads (its Q8_0 decode copy where the pack
// has one, as strata-run reads by default, else the original): the device
// runs it from a slot, the CPU from the mapping. Both need a kernel for it.
void CheckSplitCoverage(const Pack& p, const std::string& name, uint64_t budget, CheckResult* cov, std::string* detail) {
  size_t experts = 0;
  for (const TensorView& t : p.tensors()) {
    if (t.is_decode_copy || !IsRoutedExpert(t)) continue;
    ++experts;
    const TensorView& r = t.decode_copy >= 0 ? p.tensors()[static_cast<size_t>(t.decode_copy)] : t;
    const bool device = GpuKernelSupport(r.type) == KernelSupport::kFast;
    const bool cpu = CpuKernelSupport(r.type, kBaselineServingIsa) != KernelSupport::kNone;
    if ((!device || !cpu) && cov->problems.size() < kMaxProblems)
      cov->problems.push_back(StrFormat("tensor '%s' is read as %s%s, which has no %s kernel in this build: split "
                                        "across VRAM and RAM (--vram-budget %s) its experts could not run on the %s "
                                        "side (repack with --decode-copies q8_0)",
                                        std::string(t.name).c_str(), std::string(TypeName(r.type)).c_str(),
                                        &r != &t ? " (its decode copy)" : "", !device ? name.c_str() : "CPU",
                                        HumanBytes(budget).c_str(), !device ? "device" : "CPU"));
  }
  *detail += StrFormat("; split (--vram-budget %s): %zu routed expert matrices, each with a %s and a CPU kernel for "
                       "what the host tier reads (how many fit in VRAM: strata-run --plan)",
                       HumanBytes(budget).c_str(), experts, name.c_str());
}

CheckResult CheckDeviceKernelCoverage(const Pack& p, Placement target, uint64_t vram_budget) {
  CheckResult cov;
  cov.name = "kernel-coverage";
  const std::string name(PlacementName(target));
  if (!PlacementBuilt(target)) {
    cov.detail = StrFormat("target %s: this build has no %s device images (%s was not found when it was configured), "
                           "so nothing can run on %s; use a build with them (README, \"Building with GPU support\")",
                           name.c_str(), target == Placement::kCuda ? "CUDA" : "HIP",
                           target == Placement::kCuda ? "nvcc" : "hipcc", name.c_str());
    cov.problems.push_back(cov.detail);
    return cov;
  }
  const gpu::ModuleImage* image = target == Placement::kCuda ? gpu::CudaModuleImage() : gpu::HipModuleImage();
  size_t read = 0, native = 0, via_copy = 0, unused_copies = 0;
  for (const TensorView& t : p.tensors()) {
    if (t.is_decode_copy || t.rank < 2) continue;
    ++read;
    const bool copy = t.decode_copy >= 0;
    if (GpuKernelSupport(t.type) == KernelSupport::kFast) {
      ++native;
      if (copy) ++unused_copies;
    } else if (copy && GpuKernelSupport(p.tensors()[static_cast<size_t>(t.decode_copy)].type) == KernelSupport::kFast) {
      ++via_copy;
    } else if (cov.problems.size() < kMaxProblems) {
      cov.problems.push_back(StrFormat("tensor '%s' has type %s, which has no %s kernel in this build and no decode "
                                       "copy: strata-run --backend %s would refuse the pack (repack with "
                                       "--decode-copies q8_0)",
                                       std::string(t.name).c_str(), std::string(TypeName(t.type)).c_str(),
                                       name.c_str(), name.c_str()));
    }
  }
  std::string detail = StrFormat("target %s (device images %s, %s): %zu matrices and tables: %zu device kernel, %zu "
                                 "Q8_0 decode copy",
                                 name.c_str(), image->targets, image->compiler, read, native, via_copy);
  if (unused_copies > 0)
    detail += StrFormat("; %zu decode copies unused there (the device reads the originals)", unused_copies);
  if (vram_budget > 0) CheckSplitCoverage(p, name, vram_budget, &cov, &detail);
  cov.ok = cov.problems.empty();
  cov.detail = cov.ok ? detail : cov.problems.front();
  return cov;
}

// Kernel coverage for the target: every tensor the runtime multiplies has a
// kernel there (or a Q8_0 decode copy that has one), every row-lookup tensor
// a dequantizer. On the CPU the build's kernel table at AVX2 (the baseline
// serving level) decides fast or slow.
CheckResult CheckKernelCoverage(const Pack& p, Placement target, uint64_t vram_budget) {
  CheckResult cov;
  cov.name = "kernel-coverage";
  if (target != Placement::kCpu) return CheckDeviceKernelCoverage(p, target, vram_budget);
  const bool tied = p.hparams().tied_output;
  size_t matrices = 0, fast = 0, via_copy = 0, slow_count = 0;
  std::map<GgmlType, std::vector<std::string>> slow;
  for (const TensorView& t : p.tensors()) {
    if (t.is_decode_copy) continue;
    if (!IsMultipliedOnCpu(t.role, t.rank, tied)) {
      if (t.rank >= 2 && !HasDequantizer(t.type) && cov.problems.size() < kMaxProblems)
        cov.problems.push_back(StrFormat("tensor '%s' has type %s, which this build cannot read (no dequantizer for "
                                         "its row lookups)",
                                         std::string(t.name).c_str(), std::string(TypeName(t.type)).c_str()));
      continue;
    }
    ++matrices;
    const KernelSupport support = CpuKernelSupport(t.type, kBaselineServingIsa);
    const bool copy = t.decode_copy >= 0;
    if (support == KernelSupport::kFast) {
      ++fast;
    } else if (copy) {
      ++via_copy;  // strata-run reads the Q8_0 copy by default (DecodeCopyPolicy::kAuto)
    } else if (support == KernelSupport::kSlow) {
      ++slow_count;
      slow[t.type].push_back(std::string(t.name));
    } else if (cov.problems.size() < kMaxProblems) {
      cov.problems.push_back(StrFormat("tensor '%s' has type %s, which has no CPU kernel in this build and no decode "
                                       "copy: the CPU cannot compute it (repack with --decode-copies q8_0)",
                                       std::string(t.name).c_str(), std::string(TypeName(t.type)).c_str()));
    }
  }
  for (const auto& [type, names] : slow)
    cov.warnings.push_back(StrFormat(
        "%s has no fast kernel at %s: %zu matrices (%s) run the scalar reference vec_dot, %s a SIMD kernel on a Q8_0 "
        "copy (docs/experts.md); repack with --decode-copies q8_0",
        std::string(TypeName(type)).c_str(), std::string(IsaName(kBaselineServingIsa)).c_str(), names.size(),
        NameList(names).c_str(), kScalarKernelSlowdown));
  cov.ok = cov.problems.empty();
  cov.detail = cov.ok ? StrFormat("target cpu (kernel table at %s): %zu matrices: %zu fast kernel, %zu Q8_0 decode "
                                  "copy, %zu scalar kernel only",
                                  std::string(IsaName(kBaselineServingIsa)).c_str(), matrices, fast, via_copy,
                                  slow_count)
                      : cov.problems.front();
  return cov;
}

// Every decode copy holds its tensor's weights: sampled rows (one per expert
// of an expert tensor, at least 64 rows of any tensor) are converted again
// with the reference dequantizer and Q8_0 quantizer and must match byte for
// byte. The reader already proved the copy's type, shape and owner.
CheckResult CheckDecodeCopies(const Pack& p) {
  CheckResult c;
  c.name = "decode-copies";
  size_t copies = 0, rows_checked = 0;
  std::vector<uint8_t> expect;
  for (const TensorView& t : p.tensors()) {
    if (t.decode_copy < 0) continue;
    ++copies;
    const TensorView& copy = p.tensors()[static_cast<size_t>(t.decode_copy)];
    const uint64_t rows = t.rows();
    const auto cols = static_cast<int64_t>(t.shape[0]);
    std::vector<uint64_t> sample;
    const uint64_t n_sample = std::min<uint64_t>(rows, std::max<uint64_t>(64, t.expert_count));
    for (uint64_t i = 0; i < n_sample; ++i)
      sample.push_back(n_sample == 1 ? 0 : i * (rows - 1) / (n_sample - 1));
    expect.resize(copy.row_bytes);
    for (uint64_t r : sample) {
      MakeDecodeCopyRows(t.type, t.Row(r), t.row_bytes, cols, 1, expect.data());
      ++rows_checked;
      if (std::memcmp(expect.data(), copy.Row(r), copy.row_bytes) != 0) {
        if (c.problems.size() < kMaxProblems)
          c.problems.push_back(StrFormat("decode copy '%s' row %" PRIu64 " is not the Q8_0 conversion of tensor "
                                         "'%s' row %" PRIu64 ": the copy does not hold this tensor's weights",
                                         std::string(copy.name).c_str(), r, std::string(t.name).c_str(), r));
        break;
      }
    }
  }
  if (copies == 0) return Skipped("decode-copies", "the pack has no decode copies");
  c.ok = c.problems.empty();
  c.detail = c.ok ? StrFormat("%zu Q8_0 decode copies; %zu sampled rows equal the reference conversion of their "
                              "tensor's rows",
                              copies, rows_checked)
                  : c.problems.front();
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
    for (const char* n :
         {"checksums", "zero-bytes", "tokenizer", "kernel-coverage", "decode-copies", "expert-profile", "probe-replay"})
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

  // 5. Kernel coverage on the target.
  Timer t_cov;
  CheckResult cov = CheckKernelCoverage(p, options.target, options.vram_budget);
  cov.seconds = t_cov.Seconds();
  rep.info["target"] = std::string(PlacementName(options.target));
  rep.checks.push_back(cov);

  // 6. Decode copies hold their tensors' weights.
  Timer t_copies;
  CheckResult copies = CheckDecodeCopies(p);
  copies.seconds = t_copies.Seconds();
  rep.checks.push_back(copies);

  // 7. The expert profile (checked by the reader at open): a summary.
  if (const ExpertProfile* prof = p.expert_profile()) {
    CheckResult pc;
    pc.name = "expert-profile";
    pc.ok = true;
    pc.detail = StrFormat("corpus '%s', %" PRIu64 " tokens, %zu layers x %u experts (at %s): the top 10%% / 25%% / "
                          "50%% of each layer's experts hold %.1f%% / %.1f%% / %.1f%% of routed mass",
                          Printable(prof->corpus_name).c_str(), prof->n_tokens, prof->layers.size(),
                          p.hparams().n_expert, prof->isa.empty() ? "?" : Printable(prof->isa).c_str(),
                          100 * OverallTopMassShare(*prof, 0.10), 100 * OverallTopMassShare(*prof, 0.25),
                          100 * OverallTopMassShare(*prof, 0.50));
    rep.checks.push_back(pc);
    nlohmann::json layers = nlohmann::json::array();
    for (size_t il = 0; il < prof->layers.size(); ++il)
      layers.push_back({{"layer", il},
                        {"top10", TopMassShare(prof->layers[il], 0.10)},
                        {"top25", TopMassShare(prof->layers[il], 0.25)},
                        {"top50", TopMassShare(prof->layers[il], 0.50)},
                        {"ranking", prof->layers[il].ranking}});
    rep.info["expert_profile"] = {
        {"corpus", prof->corpus_name},
        {"corpus_xxh3", StrFormat("%016" PRIx64, prof->corpus_xxh3)},
        {"tokens", prof->n_tokens},
        {"isa", prof->isa},
        {"n_expert", p.hparams().n_expert},
        {"top_counts", {{"top10", TopExpertCount(p.hparams().n_expert, 0.10)},
                        {"top25", TopExpertCount(p.hparams().n_expert, 0.25)},
                        {"top50", TopExpertCount(p.hparams().n_expert, 0.50)}}},
        {"overall", {{"top10", OverallTopMassShare(*prof, 0.10)},
                     {"top25", OverallTopMassShare(*prof, 0.25)},
                     {"top50", OverallTopMassShare(*prof, 0.50)}}},
        {"layers", layers}};
  } else {
    rep.checks.push_back(Skipped("expert-profile", p.hparams().n_expert > 0
                                                       ? "the pack has no expert profile (packed with --no-profile)"
                                                       : "the model has no routed experts"));
  }

  // 8. Probe replay: the packer's reference-path logits, recomputed with this
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
  BackendOptions bo;
  bo.threads = options.threads;
  auto backend = model.ok() ? MakeBackend(*model, bo) : Result<MadeBackend>(model.status());
  if (!backend.ok()) {
    probe.detail = backend.status().message();
  } else {
    auto replay = ReplayProbe(*model, *backend->backend, ProbeFromManifest(*m.probe()));
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

std::string ProfileSummaryText(const nlohmann::json& info) {
  if (!info.contains("expert_profile")) return "";
  const nlohmann::json& p = info["expert_profile"];
  const nlohmann::json& k = p["top_counts"];
  std::string out = StrFormat("  expert profile: share of each layer's routed mass held by its top 10%% / 25%% / 50%% "
                              "of experts (%u / %u / %u of %u, ranked by count):\n",
                              k["top10"].get<unsigned>(), k["top25"].get<unsigned>(), k["top50"].get<unsigned>(),
                              p["n_expert"].get<unsigned>());
  out += "    layer   top 10%  top 25%  top 50%\n";
  auto row = [&](const std::string& label, const nlohmann::json& v) {
    out += StrFormat("    %-7s %6.1f%%  %6.1f%%  %6.1f%%\n", label.c_str(), 100 * v["top10"].get<double>(),
                     100 * v["top25"].get<double>(), 100 * v["top50"].get<double>());
  };
  for (const nlohmann::json& l : p["layers"]) row(std::to_string(l["layer"].get<size_t>()), l);
  row("overall", p["overall"]);
  const double n = p["n_expert"].get<double>();
  out += StrFormat("    (uniform routing: %.1f%% / %.1f%% / %.1f%%)\n", 100 * k["top10"].get<double>() / n,
                   100 * k["top25"].get<double>() / n, 100 * k["top50"].get<double>() / n);
  return out;
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
    for (const std::string& w : c.warnings) out += "  warn " + w + "\n";
  }
  out += ProfileSummaryText(r.info);
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
                      {"problems", c.problems}, {"warnings", c.warnings}, {"seconds", c.seconds}});
  j["checks"] = checks;
  return j;
}

}  // namespace strata
