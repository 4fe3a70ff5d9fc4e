#pragma once
// strata-validate's checks. A pack that passes them all cannot crash
// strata-run: every byte is accounted for (header, manifest, blobs and
// their checksums, zero padding), every tensor matches its architecture's
// spec, the tokenizer decodes and is consistent, and every weight type has a
// CPU path.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/status.h"

namespace strata {

struct CheckResult {
  std::string name;    // "structure", "checksums", "zero-bytes", ...
  bool ok = false;
  bool skipped = false;
  std::string detail;  // one line: what was checked, or what is wrong
  std::vector<std::string> problems;  // every problem found (up to a limit)
  double seconds = 0;
};

struct ValidateOptions {
  int threads = 0;
  bool checksums = true;
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
nlohmann::json ValidateReportJson(const ValidateReport& r);

// Every byte of the file outside the header, the blobs and the manifest must
// be zero. Returns the problems (first offsets of non-zero runs).
std::vector<std::string> CheckZeroBytes(std::span<const uint8_t> file, uint64_t header_size,
                                        const std::vector<std::pair<uint64_t, uint64_t>>& used_ranges);

}  // namespace strata
