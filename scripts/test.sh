#!/usr/bin/env bash
# Sets up (Debian 12 packages) and runs every test, three times: an optimized
# GCC build, a clang AddressSanitizer + UndefinedBehaviorSanitizer build, and
# a Windows x86-64 build (MinGW-w64) under Wine, warnings as errors. The
# sanitizer build also holds the libFuzzer targets, and each runs a fixed
# number of executions (scripts/fuzz.sh). Last, a Linux-built and a
# Windows-built strata-pack must write byte-identical packs from one GGUF.
#   STRATA_FUZZ_RUNS=120000 (default) executions per fuzz target; 0 skips fuzzing.
#   STRATA_WINDOWS=0 skips the Windows build.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_RUNS=${STRATA_FUZZ_RUNS:-120000}
JOBS=${STRATA_JOBS:-$(nproc)}
start=$(date +%s)
stamp() { echo "== [$(( $(date +%s) - start ))s] $*"; }

stamp "setup + optimized build (build-ci/release)"
STRATA_BUILD_DIR=build-ci/release STRATA_CMAKE_ARGS="-DSTRATA_WERROR=ON" bash scripts/setup.sh
stamp "tests, optimized build"
ctest --test-dir build-ci/release --output-on-failure -j "$JOBS"

# One clang build serves the sanitizer run of the whole suite and the fuzz
# targets: ASan + UBSan (float-cast-overflow included) with libFuzzer's
# coverage instrumentation, which the unit tests ignore.
stamp "clang ASan + UBSan + libFuzzer build (build-ci/asan)"
CC=clang CXX=clang++ cmake -S . -B build-ci/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" \
  -DSTRATA_WERROR=ON -DSTRATA_SANITIZE=address,undefined -DSTRATA_FUZZ=ON -DSTRATA_BUILD_BENCH=OFF
cmake --build build-ci/asan
stamp "tests, ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-ci/asan --output-on-failure -j "$JOBS"

if [[ "$FUZZ_RUNS" != "0" ]]; then
  stamp "fuzz targets (libFuzzer + ASan + UBSan), ${FUZZ_RUNS} executions each"
  bash scripts/fuzz.sh build-ci/asan "$FUZZ_RUNS"
fi
if [[ "${STRATA_WINDOWS:-1}" != "0" ]]; then
  stamp "Windows build (MinGW-w64) + tests under Wine + release zip (build-ci/windows)"
  STRATA_WINDOWS_BUILD_DIR=build-ci/windows STRATA_COMPARE_PACKS_WITH=build-ci/release bash scripts/build-windows.sh
fi
stamp "all tests passed"
