// The software GPU's test kernels compiled again for 64-lane wavefronts
// (gfx90a), as the backend's kernels are by sgpu_kernels_64.cc: each
// registers under its name and warp size 64, beside its 32-lane twin.

#define STRATA_SGPU_WARP_SIZE 64
#include "tests/gpu/sgpu_test_kernels.cc"  // NOLINT(bugprone-suspicious-include)
