// Where a parameterized test's full matrix runs. The optimized build runs
// every case; the sanitizer build (STRATA_SANITIZED_TESTS, set by
// tests/CMakeLists.txt when STRATA_SANITIZE is on) runs the cases its
// caller marks, chosen so that every code path the matrix reaches is still
// run once under ASan and UBSan: each architecture, each kind of kernel,
// each cache and attention shape. The cases it leaves out differ from those
// it keeps only in numbers (another weight type of a kernel family the kept
// cases and the kernel tests already cover), and that is what the optimized
// build checks. It keeps a cold CI run's sanitizer stage in its budget.
#pragma once

#include <utility>
#include <vector>

#ifndef STRATA_SANITIZED_TESTS
#define STRATA_SANITIZED_TESTS 0
#endif

namespace strata::testing {

inline constexpr bool kSanitizedTests = STRATA_SANITIZED_TESTS != 0;

// All of `cases` in the optimized build; those `in_sanitized_subset` keeps in
// the sanitizer build.
template <class T, class Keep>
std::vector<T> MatrixCases(std::vector<T> cases, Keep in_sanitized_subset) {
  if (!kSanitizedTests) return cases;
  std::vector<T> kept;
  for (T& c : cases)
    if (in_sanitized_subset(c)) kept.push_back(std::move(c));
  return kept;
}

}  // namespace strata::testing
