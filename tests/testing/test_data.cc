#include "tests/testing/test_data.h"

#include <cstdlib>
#include <filesystem>

namespace strata::testing {

std::string SharedDataDir() {
  if (const char* d = std::getenv("STRATA_DATA_DIR")) return d;
  return STRATA_SHARED_DATA_DIR;
}

std::string SharedFile(const std::string& relative) { return SharedDataDir() + "/" + relative; }

std::string ScratchDir(const std::string& name) {
  namespace fs = std::filesystem;
  fs::path p = fs::path(STRATA_BINARY_DIR) / "test-scratch" / name;
  std::error_code ec;
  fs::remove_all(p, ec);
  fs::create_directories(p, ec);
  return p.string();
}

}  // namespace strata::testing
