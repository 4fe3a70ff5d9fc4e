#include "tests/testing/test_data.h"
#include "runtime/base/platform.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>


namespace strata::testing {

std::string SharedDataDir() {
  if (const char* d = std::getenv("STRATA_DATA_DIR")) return d;
  return STRATA_SHARED_DATA_DIR;
}

std::string SharedFile(const std::string& relative) { return SharedDataDir() + "/" + relative; }

namespace {
// Scratch directories are per process (ctest runs test cases in parallel
// processes) and removed when the process exits, unless STRATA_KEEP_SCRATCH=1.
std::vector<std::string>& Created() {
  static std::vector<std::string> dirs;
  return dirs;
}
void RemoveScratch() {
  const char* keep = std::getenv("STRATA_KEEP_SCRATCH");
  if (keep && std::string(keep) == "1") return;
  std::error_code ec;
  for (const auto& d : Created()) std::filesystem::remove_all(d, ec);
}
}  // namespace

std::string ScratchDir(const std::string& name) {
  namespace fs = std::filesystem;
  // STRATA_SCRATCH_DIR: elsewhere than the build tree (a copied build, scripts/device-check.sh).
  const char* root = std::getenv("STRATA_SCRATCH_DIR");
  fs::path p = (root && *root ? fs::path(root) : fs::path(STRATA_BINARY_DIR) / "test-scratch") /
               (name + "-" + std::to_string(ProcessId()));
  std::error_code ec;
  fs::remove_all(p, ec);
  fs::create_directories(p, ec);
  if (Created().empty()) std::atexit(RemoveScratch);
  Created().push_back(p.string());
  return p.string();
}

}  // namespace strata::testing
