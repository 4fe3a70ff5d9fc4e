#pragma once
// strata-validate's checks. A pack that passes them all cannot crash
// strata-run: every byte is accounted for (header, manifest, blobs and
// their checksums, zero padding), every tensor matches its architecture's
// spec, the tokenizer decodes and is consistent, every matrix has a kernel on
// the target (or a Q8_0 decode copy that has one), every decode copy holds
// its tensor's weights, and the expert profile (if any) is summarized.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/status.h"
#include "runtime/model/kernel_coverage.h"

namespace strata {

struct CheckResult {
  std::string name;    // "structure", "checksums", "zero-bytes", ...
  bool ok = false;
  bool skipped = false;
  std::string detail;  // one line: what was checked, or what is wrong
  std::vector<std::string> problems;  // every problem found (up to a limit)
  std::vector<std::string> warnings;  // things a user should know that do not fail the check
  double seconds = 0;
};

struct ValidateOptions {
  int threads = 0;
  bool checksums = true;
  // --target: the placement whose kernel coverage is checked. This build
  // has only a CPU backend; cuda and hip fail, saying so.
  Placement target = Placement::kCpu;
  // --vram-budget with a GPU target: the run may split the routed experts
  // between the device and the CPU (docs/experts-split.md), so the coverage
  // check holds every expert matrix to both sides' kernels. 0: no budget.
  uint64_t vram_budget = 0;
};

struct ValidateReport {
  std::string path;
  std::vector<CheckResult> checks;
  nlohmann::json info;  // arch, hparams summary, sizes, fixes
  bool ok() const {
    for (const auto& c : checks)
      if (!c.ok && !c.skipped) return false;
    return !checks.empty();
  }
};

ValidateReport ValidatePack(const std::string& path, const ValidateOptions& options);
std::string ValidateReportText(const ValidateReport& r);
// The per-layer expert profile table of a report's info (empty without a profile).
std::string ProfileSummaryText(const nlohmann::json& info);
nlohmann::json ValidateReportJson(const ValidateReport& r);

// Every byte of the file outside the header, the blobs and the manifest must
// be zero. Returns the problems (first offsets of non-zero runs).
std::vector<std::string> CheckZeroBytes(std::span<const uint8_t> file, uint64_t header_size,
                                        const std::vector<std::pair<uint64_t, uint64_t>>& used_ranges);

}  // namespace strata
