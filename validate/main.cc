// strata-validate: proves a pack sound before anything serves it, or lints a
// GGUF (what strata-pack would fix, and what it would refuse and why).

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "packer/gguf/gguf_file.h"
#include "packer/packer.h"
#include "packer/report.h"
#include "runtime/base/main_guard.h"
#include "runtime/memory/budgets.h"
#include "strata/version.h"
#include "runtime/pack/pack_reader.h"
#include "validate/profile_svg.h"
#include "runtime/memory/budgets.h"
#include "validate/validator.h"

namespace {

using namespace strata;

int LintGguf(const std::vector<std::string>& inputs, bool json) {
  auto model = gguf::GgufModel::Open(inputs);
  if (!model.ok()) {
    if (json) std::printf("%s\n", nlohmann::json{{"ok", false}, {"error", model.status().message()}}.dump(2).c_str());
    std::fprintf(stderr, "strata-validate: %s\n", model.status().message().c_str());
    return kExitError;
  }
  PackOptions o;
  o.dry_run = true;
  auto r = PackModel(*model, o);
  if (!r.ok()) {
    std::fprintf(stderr, "strata-validate: %s\n", r.status().message().c_str());
    return kExitError;
  }
  if (json) {
    std::printf("%s\n", PackReportJson(*model, *r, o).dump(2).c_str());
  } else {
    std::string text = PackReportText(*model, *r, o);
    // The packer's report, framed as a lint.
    std::printf("strata-validate --gguf: what strata-pack would do\n%s", text.c_str());
    if (r->ok()) std::printf("  packable: strata-pack would write this model with the fixes above\n");
  }
  return r->ok() ? kExitOk : kExitError;
}

int Main(int argc, char** argv) {
  CLI::App app{"strata-validate: checks a Strata pack (structure, bounds, checksums, zero padding, architecture, "
               "tokenizer, kernel coverage), or lints a GGUF with --gguf."};
  // The same options on every system: no /option forms on Windows (CLI11's
  // default there), so a path such as /data/model.gguf stays a path.
  app.allow_windows_style_options(false);
  app.set_version_flag("--version", std::string("strata-validate ") + kVersion);
  std::vector<std::string> inputs;
  bool json = false, gguf = false, no_checksums = false;
  ValidateOptions o;
  app.add_option("input", inputs, "the pack to check (or, with --gguf, the GGUF file(s))")->required();
  app.add_flag("--gguf", gguf, "lint GGUF input: report what strata-pack would fix or refuse");
  app.add_flag("--json", json, "machine-readable report on stdout");
  app.add_flag("--no-checksums", no_checksums, "skip verifying every blob's checksum");
  app.add_option("-t,--threads", o.threads, "threads for checksum verification (default: all cores)")
      ->check(CLI::Range(0, 1024));
  std::string target = "cpu", svg;
  app.add_option("--target", target,
                 "placement whose kernel coverage to check: cpu (default), cuda or hip (this build's device "
                 "kernels; a build without that device's images fails, saying so)");
  app.add_option("--profile-svg", svg, "draw the pack's expert profile as an SVG heat map to this file");
  std::string vram;
  app.add_option("--vram-budget", vram,
                 "with --target cuda|hip: the device's memory, e.g. 8G; the routed experts may then be split between "
                 "VRAM and RAM, so each needs a kernel on both sides");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (gguf) return LintGguf(inputs, json);
  if (inputs.size() != 1) {
    std::fprintf(stderr, "strata-validate: give one pack (or --gguf for GGUF files)\n");
    return kExitUsage;
  }
  o.checksums = !no_checksums;
  auto placement = ParsePlacement(target);
  if (!placement.ok()) {
    std::fprintf(stderr, "strata-validate: --target: %s\n", placement.status().message().c_str());
    return kExitUsage;
  }
  o.target = *placement;
  if (!vram.empty()) {
    auto b = ParseByteSize(vram);
    if (!b.ok() || *b == 0 || o.target == Placement::kCpu) {
      std::fprintf(stderr, "strata-validate: --vram-budget '%s': %s\n", vram.c_str(),
                   !b.ok() ? b.status().message().c_str()
                   : *b == 0 ? "expected more than 0 bytes"
                             : "goes with --target cuda or hip (the device whose memory it is)");
      return kExitUsage;
    }
    o.vram_budget = *b;
  }
  ValidateReport r = ValidatePack(inputs[0], o);
  int rc = r.ok() ? kExitOk : kExitError;
  if (!svg.empty()) {
    // Drawn from the pack the reader proved sound; a pack without a profile is an error here.
    auto pack = Pack::Open(inputs[0]);
    Status s = !pack.ok() ? pack.status()
               : !(*pack)->expert_profile()
                   ? FailedPrecondition(inputs[0] + ": the pack has no expert profile to draw (packed with "
                                                    "--no-profile, or the model has no routed experts)")
                   : WriteExpertProfileSvg(*(*pack)->expert_profile(),
                                           "Expert profile of " + std::filesystem::path(inputs[0]).filename().string(),
                                           svg);
    if (s.ok()) {
      r.info["profile_svg"] = svg;
      if (!json) std::fprintf(stderr, "strata-validate: wrote the expert profile heat map to %s\n", svg.c_str());
    } else {
      std::fprintf(stderr, "strata-validate: --profile-svg: %s\n", s.message().c_str());
      r.info["profile_svg_error"] = s.message();
      rc = kExitError;
    }
  }
  if (json) std::printf("%s\n", ValidateReportJson(r).dump(2).c_str());
  else std::printf("%s", ValidateReportText(r).c_str());
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  return strata::GuardedMain("strata-validate", argc, argv, Main);
}
