// strata-pack: GGUF (one file or a split set) -> one checksummed Strata pack.

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "packer/describe_arch.h"
#include "packer/gguf/gguf_file.h"
#include "packer/inspect.h"
#include "packer/packer.h"
#include "packer/report.h"
#include "runtime/base/main_guard.h"
#include "runtime/base/platform.h"
#include "runtime/base/strings.h"
#include "strata/version.h"

namespace {

using namespace strata;

// A one-line progress bar on a terminal; silent otherwise.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled), start_(std::chrono::steady_clock::now()) {}
  void Update(const PackProgress& p) {
    if (!enabled_) return;
    auto now = std::chrono::steady_clock::now();
    bool done = p.tensors_done == p.tensors_total;
    if (!done && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    double frac = p.bytes_total ? static_cast<double>(p.bytes_done) / static_cast<double>(p.bytes_total) : 1.0;
    double secs = std::chrono::duration<double>(now - start_).count();
    int filled = static_cast<int>(frac * 30);
    std::fprintf(stderr, "\r[%-30s] %3.0f%%  %zu/%zu tensors  %s  %.0f MB/s  %-40.40s", std::string(filled, '#').c_str(),
                 frac * 100, p.tensors_done, p.tensors_total, HumanBytes(p.bytes_done).c_str(),
                 secs > 0 ? static_cast<double>(p.bytes_done) / secs / 1e6 : 0.0, std::string(p.current).c_str());
    if (done) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point start_, last_;
};

int Main(int argc, char** argv) {
  CLI::App app{"strata-pack: reads a GGUF model (one file or a split set), checks it against its architecture, "
               "normalizes it (every fix recorded) and writes one checksummed Strata pack."};
  // The same options on every system: no /option forms on Windows (CLI11's
  // default there), so a path such as /data/model.gguf stays a path.
  app.allow_windows_style_options(false);
  app.set_version_flag("--version", std::string("strata-pack ") + kVersion);
  std::vector<std::string> inputs;
  PackOptions o;
  bool inspect = false, json = false, describe = false;
  std::vector<std::string> sets;
  app.add_option("inputs", inputs, "GGUF file(s): one file, the first shard of a split model, or every shard");
  app.add_flag("--describe-arch", describe, "print the architecture specs (keys, defaults, tensors) as Markdown");
  app.add_option("-o,--output", o.output, "the pack to write (written as OUTPUT.tmp-PID, renamed when complete)");
  app.add_flag("--inspect", inspect, "print a summary of the GGUF and exit (writes nothing)");
  app.add_flag("--json", json, "machine-readable output on stdout");
  app.add_flag("--dry-run", o.dry_run, "report what would be fixed or refused; write nothing");
  app.add_option("--set", sets, "override a hyperparameter key before any check: KEY=VALUE (recorded as a fix)");
  std::string mtp_from;
  app.add_option("--mtp-from", mtp_from,
                 "take the MTP block (qwen35moe, glm4moe) from this GGUF, which a publisher ships apart from the "
                 "model; checked against the model's metadata (docs/speculative.md)");
  app.add_flag("--allow-unsafe-fixes", o.allow_unsafe_fixes,
               "apply fixes that are not provably safe (e.g. an f64 that f32 cannot hold exactly)");
  app.add_flag("--drop-unknown-tensors", o.drop_unknown_tensors, "leave out tensors the architecture does not use");
  bool no_compress = false, no_probe = false, no_profile = false;
  std::string decode_copies = "none";
  app.add_flag("--no-probe", no_probe, "do not record a probe (reference-path logits strata-validate replays)");
  app.add_option("--calibration", o.calibration,
                 "text to measure the expert profile on (default: the built-in corpus of prose, code, chat and "
                 "several languages); lines reading <<<strata:document>>> separate documents");
  app.add_flag("--no-profile", no_profile, "do not measure an expert profile (MoE models)");
  app.add_option("--profile-tokens", o.profile_tokens,
                 "run at most this many calibration tokens (default 4096; documents are cut proportionally)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100'000'000}));
  app.add_option("--decode-copies", decode_copies,
                 "q8_0: also write Q8_0 copies of the routed experts and of every matrix without a fast CPU kernel "
                 "(strata-run reads them where they are faster); none (default)")
      ->check(CLI::IsMember({"none", "q8_0", "Q8_0"}));
  app.add_option("-t,--threads", o.threads, "threads for the profile and decode copies (default: all cores)")
      ->check(CLI::Range(0, 1024));
  app.add_flag("--no-compress-tokenizer", no_compress, "store tokenizer sections uncompressed");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (describe) {
    std::printf("%s", DescribeArchitecturesMarkdown().c_str());
    return kExitOk;
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "strata-pack: no input: give a GGUF file (see --help)\n");
    return kExitUsage;
  }
  o.compress_tokenizer = !no_compress;
  o.probe = !no_probe;
  o.profile = !no_profile;
  o.decode_copies = decode_copies == "none" ? DecodeCopyType::kNone : DecodeCopyType::kQ8_0;
  for (const std::string& s : sets) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::fprintf(stderr, "strata-pack: --set %s: expected KEY=VALUE\n", s.c_str());
      return kExitUsage;
    }
    o.overrides.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  if (!inspect && !o.dry_run && o.output.empty()) {
    std::fprintf(stderr, "strata-pack: no output: give -o OUT.strata (or --dry-run, or --inspect)\n");
    return kExitUsage;
  }

  auto model = gguf::GgufModel::Open(inputs);
  if (!model.ok()) {
    if (json) std::printf("%s\n", nlohmann::json{{"ok", false}, {"error", model.status().message()}}.dump(2).c_str());
    std::fprintf(stderr, "strata-pack: error: %s\n", model.status().message().c_str());
    return kExitError;
  }
  if (!mtp_from.empty() && inspect) {
    std::fprintf(stderr, "strata-pack: --mtp-from packs a model with its block; --inspect one GGUF at a time\n");
    return kExitUsage;
  }
  if (!mtp_from.empty()) {
    if (Status st = AttachMtpFrom(*model, mtp_from, &o); !st.ok()) {
      if (json) std::printf("%s\n", nlohmann::json{{"ok", false}, {"error", st.message()}}.dump(2).c_str());
      std::fprintf(stderr, "strata-pack: error: %s\n", st.message().c_str());
      return kExitError;
    }
  }
  if (inspect) {
    if (json) {
      nlohmann::json j = InspectGgufJson(*model);
      j["ok"] = true;
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("%s", InspectGgufText(*model).c_str());
    }
    return kExitOk;
  }

  ProgressBar bar(!json && IsTerminal(2));
  auto r = PackModel(*model, o, [&](const PackProgress& p) { bar.Update(p); });
  if (!r.ok()) {
    if (json) std::printf("%s\n", nlohmann::json{{"ok", false}, {"error", r.status().message()}}.dump(2).c_str());
    std::fprintf(stderr, "strata-pack: error: %s\n", r.status().message().c_str());
    return r.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitError;
  }
  if (json) std::printf("%s\n", PackReportJson(*model, *r, o).dump(2).c_str());
  else std::printf("%s", PackReportText(*model, *r, o).c_str());
  return r->ok() ? kExitOk : kExitError;
}

}  // namespace

int main(int argc, char** argv) {
  return strata::GuardedMain("strata-pack", argc, argv, Main);
}
