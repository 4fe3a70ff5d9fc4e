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
#
# The builds after the first run beside a test stage, at the lowest
# priority (nice 19): a test stage leaves part of two cores idle (processes
# waiting on sockets, timers and each other, the last long tests alone), and
# the build takes it. The sanitizer build runs beside the release tests; the
# Windows build (without its tests) beside the sanitizer tests and the fuzz
# targets. Never two builds at once: on two cores they only slow each other.
# A stage "the rest of X" is the wait for what X had left. Their logs:
# build-ci/asan.log, build-ci/windows-build.log (shown when they fail).
#   STRATA_FUZZ_RUNS=60000 (default) executions per fuzz target; 0 skips fuzzing.
#   STRATA_WINDOWS=0 skips the Windows build.
#   STRATA_OVERLAP=0 runs every stage alone, one after another.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_RUNS=${STRATA_FUZZ_RUNS:-60000}
JOBS=${STRATA_JOBS:-$(nproc)}
GPU_IMAGES=$PWD/build-ci/release/gpu-images
OVERLAP=${STRATA_OVERLAP:-1}
WINDOWS=${STRATA_WINDOWS:-1}

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
# Background jobs: bg_start NAME NICE LOG CMD... runs CMD at nice NICE with
# its output in LOG; bg_wait NAME waits for it (its log's end when it failed)
# and records how long it ran in all.
declare -A bg_pid bg_log bg_t0
bg_start() {
  local name=$1 level=$2 log=$3
  shift 3
  mkdir -p "$(dirname "$log")"
  echo "== [$(( $(date +%s) - start ))s] started beside the stages, at nice $level: $name (log: $log)"
  # A subshell that lowers its own priority (its children inherit it), so it
  # can run this script's functions. Not setsid: a session of its own would
  # be an autogroup of its own, which the kernel shares the CPU with evenly,
  # whatever the nice level.
  (renice -n "$level" -p "$BASHPID" >/dev/null && "$@") >"$log" 2>&1 &
  bg_pid[$name]=$!
  bg_log[$name]=$log
  bg_t0[$name]=$(date +%s)
}
bg_wait() {
  local name=$1 rc=0
  wait "${bg_pid[$name]}" || rc=$?
  local took=$(( $(date +%s) - bg_t0[$name] ))
  summary+=("$(printf '%6s min  %s (in the background, from its start)' "$(minutes "$took")" "$name")")
  unset 'bg_pid[$name]'
  if ((rc != 0)); then
    echo "== $name failed (exit $rc); the end of ${bg_log[$name]}:"
    tail -n 80 "${bg_log[$name]}"
    return "$rc"
  fi
}

kill_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}

# The summary, also when a stage fails (it names the stage that did).
print_summary() {
  local rc=$?
  if ((rc != 0)) && [[ -n "$stage_name" ]]; then
    summary+=("$(printf '%6s min  %s (FAILED)' "$(minutes $(( $(date +%s) - stage_start )))" "$stage_name")")
  fi
  local name
  for name in "${!bg_pid[@]}"; do  # background jobs still running: stopped
    kill_tree "${bg_pid[$name]}"
  done
  echo "== stages:"
  local line
  for line in "${summary[@]}"; do echo "  $line"; done
  echo "== total $(minutes $(( $(date +%s) - start ))) min"
}
trap print_summary EXIT

# The sanitizer build (clang): ASan + UBSan (float-cast-overflow included)
# with libFuzzer's coverage instrumentation, which the unit tests ignore. One
# build serves the sanitizer run of the whole suite and the fuzz targets.
# (-gline-tables-only: a report's stack still names every file and line,
# inlined frames too; full debug info made the build slower, not the reports
# better.)
asan_build() {
  CC=clang CXX=clang++ cmake -S . -B build-ci/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" \
    -DSTRATA_WERROR=ON -DSTRATA_SANITIZE=address,undefined -DSTRATA_FUZZ=ON -DSTRATA_BUILD_BENCH=OFF \
    -DSTRATA_GPU_IMAGES_DIR="$GPU_IMAGES"
  cmake --build build-ci/asan -j "$JOBS"
}
# The Windows stage (scripts/build-windows.sh); `windows build-only`: its
# packages, its dependencies from Debian's sources and the build, without the
# tests, which a later `windows` runs (finding everything built).
windows() {
  local build_only=0
  [[ "${1:-}" == build-only ]] && build_only=1
  STRATA_WINDOWS_BUILD_ONLY=$build_only STRATA_WINDOWS_BUILD_DIR=build-ci/windows \
    STRATA_COMPARE_PACKS_WITH=build-ci/release STRATA_CMAKE_ARGS="-DSTRATA_GPU_IMAGES_DIR=$GPU_IMAGES" \
    bash scripts/build-windows.sh
}

stage "setup + release build (build-ci/release, GPU images compiled)"
STRATA_BUILD_DIR=build-ci/release STRATA_CMAKE_ARGS="-DSTRATA_WERROR=ON" bash scripts/setup.sh
if [[ "$OVERLAP" == "1" ]]; then
  bg_start "clang ASan + UBSan + libFuzzer build (build-ci/asan)" 19 build-ci/asan.log asan_build
fi
stage "tests, release build"
ctest --test-dir build-ci/release --output-on-failure -j "$JOBS"

if [[ "$OVERLAP" == "1" ]]; then
  stage "the rest of the clang ASan + UBSan + libFuzzer build"
  bg_wait "clang ASan + UBSan + libFuzzer build (build-ci/asan)"
else
  stage "clang ASan + UBSan + libFuzzer build (build-ci/asan, the release build's GPU images)"
  asan_build
fi
if [[ "$OVERLAP" == "1" && "$WINDOWS" == "1" ]]; then
  bg_start "Windows build (build-ci/windows, without its tests)" 19 build-ci/windows-build.log windows build-only
fi
stage "tests, ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-ci/asan --output-on-failure -j "$JOBS"

if [[ "$FUZZ_RUNS" != "0" ]]; then
  stage "fuzz targets (libFuzzer + ASan + UBSan), ${FUZZ_RUNS} executions each"
  bash scripts/fuzz.sh build-ci/asan "$FUZZ_RUNS"
fi
if [[ "$WINDOWS" == "1" ]]; then
  if [[ "$OVERLAP" == "1" ]]; then
    stage "the rest of the Windows build"
    bg_wait "Windows build (build-ci/windows, without its tests)"
  fi
  stage "Windows (MinGW-w64, the release build's GPU images): tests under Wine + release zip (build-ci/windows)"
  windows
fi
end_stage
echo "== all tests passed"
