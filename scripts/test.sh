#!/usr/bin/env bash
# Sets up (Debian 12 packages) and runs every test, three times: an optimized
# GCC build, a clang AddressSanitizer + UndefinedBehaviorSanitizer build, and
# a Windows x86-64 build (MinGW-w64) under Wine, warnings as errors. The
# sanitizer build also holds the libFuzzer targets, and each runs a fixed
# number of executions (scripts/fuzz.sh). Last, a Linux-built and a
# Windows-built strata-pack must write byte-identical packs from one GGUF.
# GPU device code (cmake/StrataGpu.cmake) is compiled once, by the optimized
# build (nvcc and hipcc, where found); the sanitizer and Windows builds embed
# the same files from build-ci/release/gpu-images (STRATA_GPU_IMAGES_DIR).
# Each stage's duration is printed as it ends, and all of them at the end.
#   STRATA_FUZZ_RUNS=60000 (default) executions per fuzz target; 0 skips fuzzing.
#   STRATA_WINDOWS=0 skips the Windows build.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_RUNS=${STRATA_FUZZ_RUNS:-60000}
JOBS=${STRATA_JOBS:-$(nproc)}
GPU_IMAGES=$PWD/build-ci/release/gpu-images

# stage NAME: ends the running stage (printing its duration) and starts NAME.
start=$(date +%s)
stage_name=""
stage_start=$start
summary=()
minutes() { awk -v s="$1" 'BEGIN { printf "%.1f", s / 60 }'; }
end_stage() {
  [[ -n "$stage_name" ]] || return 0
  local took=$(( $(date +%s) - stage_start ))
  echo "== stage '$stage_name' took $(minutes "$took") min"
  summary+=("$(printf '%6s min  %s' "$(minutes "$took")" "$stage_name")")
  stage_name=""
}
stage() {
  end_stage
  stage_name=$1
  stage_start=$(date +%s)
  echo "== [$(( stage_start - start ))s] stage '$stage_name'"
}
# The summary, also when a stage fails (it names the stage that did).
print_summary() {
  local rc=$?
  if ((rc != 0)) && [[ -n "$stage_name" ]]; then
    summary+=("$(printf '%6s min  %s (FAILED)' "$(minutes $(( $(date +%s) - stage_start )))" "$stage_name")")
  fi
  echo "== stages:"
  local line
  for line in "${summary[@]}"; do echo "  $line"; done
  echo "== total $(minutes $(( $(date +%s) - start ))) min"
}
trap print_summary EXIT

stage "setup + release build (build-ci/release, GPU images compiled)"
STRATA_BUILD_DIR=build-ci/release STRATA_CMAKE_ARGS="-DSTRATA_WERROR=ON" bash scripts/setup.sh
stage "tests, release build"
ctest --test-dir build-ci/release --output-on-failure -j "$JOBS"

# One clang build serves the sanitizer run of the whole suite and the fuzz
# targets: ASan + UBSan (float-cast-overflow included) with libFuzzer's
# coverage instrumentation, which the unit tests ignore.
stage "clang ASan + UBSan + libFuzzer build (build-ci/asan, the release build's GPU images)"
# (-gline-tables-only: a report's stack still names every file and line,
# inlined frames too; full debug info made the build slower, not the reports
# better.)
CC=clang CXX=clang++ cmake -S . -B build-ci/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" \
  -DSTRATA_WERROR=ON -DSTRATA_SANITIZE=address,undefined -DSTRATA_FUZZ=ON -DSTRATA_BUILD_BENCH=OFF \
  -DSTRATA_GPU_IMAGES_DIR="$GPU_IMAGES"
cmake --build build-ci/asan
stage "tests, ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-ci/asan --output-on-failure -j "$JOBS"

if [[ "$FUZZ_RUNS" != "0" ]]; then
  stage "fuzz targets (libFuzzer + ASan + UBSan), ${FUZZ_RUNS} executions each"
  bash scripts/fuzz.sh build-ci/asan "$FUZZ_RUNS"
fi
if [[ "${STRATA_WINDOWS:-1}" != "0" ]]; then
  stage "Windows build (MinGW-w64, the release build's GPU images) + tests under Wine + release zip (build-ci/windows)"
  STRATA_WINDOWS_BUILD_DIR=build-ci/windows STRATA_COMPARE_PACKS_WITH=build-ci/release \
    STRATA_CMAKE_ARGS="-DSTRATA_GPU_IMAGES_DIR=$GPU_IMAGES" bash scripts/build-windows.sh
fi
end_stage
echo "== all tests passed"
