#pragma once
// Where tests find ../shared/data and scratch space.

#include <cstdlib>
#include <string>

#include "runtime/base/mapped_file.h"

namespace strata::testing {

// The shared data folder (../shared/data, or $STRATA_DATA_DIR).
std::string SharedDataDir();
// SharedDataDir() + "/" + relative. A test that needs such a file calls
// RequireSharedFile(), which fails the test with a clear message when the
// folder is missing (it never passes silently); with STRATA_ALLOW_MISSING_DATA=1
// the test is skipped instead, and says why.
std::string SharedFile(const std::string& relative);
// A fresh, empty scratch directory for this test (under the build folder).
std::string ScratchDir(const std::string& name);

}  // namespace strata::testing

// Use at the top of a TEST body: stops the test (fail or skip, see above) if
// the shared file is missing.
#define STRATA_REQUIRE_SHARED_FILE(path_expr)                                        \
  do {                                                                               \
    if (!::strata::FileExists(path_expr)) {                                          \
      const char* allow = std::getenv("STRATA_ALLOW_MISSING_DATA");                  \
      if (allow && std::string(allow) == "1")                                        \
        GTEST_SKIP() << "shared data file missing (STRATA_ALLOW_MISSING_DATA=1): " << (path_expr); \
      FAIL() << "shared data file missing: " << (path_expr)                          \
             << " (tests read ../shared/data; set STRATA_DATA_DIR to its location)"; \
    }                                                                                \
  } while (0)
