// Where a parameterized test's full matrix runs. The Linux optimized build
// runs every case; the other builds of the suite (STRATA_MATRIX_SUBSET, set
// by tests/CMakeLists.txt for the sanitizer build and the Windows build) run
// the cases its caller marks, chosen so that every code path the matrix
// reaches is still run once there: under ASan and UBSan, and compiled by
// MinGW and run under Wine: each architecture, each kind of kernel, each
// cache and attention shape. The cases it leaves out differ from those it
// keeps only in numbers (another weight type of a kernel family the kept
// cases and the kernel tests already cover), and that is what the optimized
// build checks. It keeps a cold CI run's sanitizer and Windows stages in
// their budget.
#pragma once

#include <utility>
#include <vector>

#ifndef STRATA_MATRIX_SUBSET
#define STRATA_MATRIX_SUBSET 0
#endif

namespace strata::testing {

// True in the builds that run each matrix's subset.
inline constexpr bool kMatrixSubset = STRATA_MATRIX_SUBSET != 0;

// All of `cases` in the Linux optimized build; those `in_subset` keeps in
// the sanitizer and Windows builds.
template <class T, class Keep>
std::vector<T> MatrixCases(std::vector<T> cases, Keep in_subset) {
  if (!kMatrixSubset) return cases;
  std::vector<T> kept;
  for (auto&& c : cases)  // (auto&&: vector<bool>'s proxies too)
    if (in_subset(c)) kept.push_back(std::move(c));
  return kept;
}

}  // namespace strata::testing
