#!/usr/bin/env bash
# Sets up (Debian 12 packages) and runs every test, twice: an optimized build
# and an AddressSanitizer + UndefinedBehaviorSanitizer build, warnings as
# errors. Then runs each fuzz target for a bounded time.
#   STRATA_FUZZ_SECONDS=60 (default) per fuzz target; 0 skips fuzzing.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${STRATA_FUZZ_SECONDS:-60}
JOBS=${STRATA_JOBS:-$(nproc)}
start=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - start ))s] $*"; }

stamp "setup + optimized build (build-ci/release)"
STRATA_BUILD_DIR=build-ci/release STRATA_CMAKE_ARGS="-DSTRATA_WERROR=ON" bash scripts/setup.sh
stamp "tests, optimized build"
ctest --test-dir build-ci/release --output-on-failure -j "$JOBS"

stamp "ASan + UBSan build (build-ci/asan)"
cmake -S . -B build-ci/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
  -DSTRATA_WERROR=ON -DSTRATA_SANITIZE=address,undefined -DSTRATA_BUILD_BENCH=OFF
cmake --build build-ci/asan
stamp "tests, ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-ci/asan --output-on-failure -j "$JOBS"

if [[ "$FUZZ_SECONDS" != "0" ]]; then
  stamp "fuzz targets (clang, libFuzzer + ASan + UBSan), ${FUZZ_SECONDS}s each"
  CC=clang CXX=clang++ cmake -S . -B build-ci/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSTRATA_WERROR=ON -DSTRATA_FUZZ=ON -DSTRATA_SANITIZE=address,undefined -DSTRATA_BUILD_BENCH=OFF
  cmake --build build-ci/fuzz --target all
  bash scripts/fuzz.sh build-ci/fuzz "$FUZZ_SECONDS"
fi
stamp "all tests passed"
