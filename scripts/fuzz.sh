#!/usr/bin/env bash
# Runs every fuzz target of a fuzz build (clang, libFuzzer + ASan + UBSan) for
# a number of executions, seeded with the checked-in corpus
# (tests/fuzz/corpus/TARGET) and small deep seeds that strata-make-fuzz-seeds
# writes (a GGUF and a pack per architecture, every value type, decode
# copies, a profile), with a dictionary and an input size limit per target.
# Fails when a target crashes, leaks, trips a sanitizer, hangs, or runs fewer
# executions than asked (so a slow target cannot pass by doing nothing).
#
#   bash scripts/fuzz.sh BUILD_DIR [RUNS]        RUNS per target (default 120000)
#   STRATA_FUZZ_TARGETS="gguf_reader_fuzz ..."   a subset
#   STRATA_FUZZ_MAX_SECONDS=900                  per-target time cap (0: none)
#   STRATA_FUZZ_JOBS=N                           targets run at once (default: the CPU count)
#   STRATA_FUZZ_TIMEOUT=30                       seconds one input may take (wall clock:
#                                                raise it when the machine is shared)
#
# A campaign is the same command with more runs, e.g. 10 million per target:
#   STRATA_FUZZ_MAX_SECONDS=0 bash scripts/fuzz.sh build-fuzz 10000000
# Findings (crash-*, leak-*, timeout-*, oom-*) land in BUILD_DIR/fuzz-findings/TARGET/;
# copy each one into tests/fuzz/corpus/TARGET/ with the fix, so it stays a
# regression test (docs/fuzzing.md). Each target's log is BUILD_DIR/fuzz-logs/TARGET.log.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build-ci/fuzz}
RUNS=${2:-120000}
MAX_SECONDS=${STRATA_FUZZ_MAX_SECONDS:-900}
TIMEOUT=${STRATA_FUZZ_TIMEOUT:-30}
DATA=${STRATA_DATA_DIR:-../shared/data}
export STRATA_DATA_DIR=$DATA

targets=(${STRATA_FUZZ_TARGETS:-gguf_reader_fuzz pack_reader_fuzz serve_request_fuzz http_request_fuzz chat_template_fuzz tokenizer_fuzz grammar_fuzz})

# Input size limits that match what each target parses: a GGUF's header,
# metadata and tensor table with tiny tensors; a small pack (128-byte blob
# alignment) of a per-architecture seed; one request body; one request head
# and body (limits shrunk to a few KiB); a chat template (the real ones are
# 1-17 KiB); one text to tokenize.
max_len() {
  case "$1" in
    gguf_reader_fuzz) echo 81920 ;;
    pack_reader_fuzz) echo 98304 ;;
    serve_request_fuzz) echo 16384 ;;
    http_request_fuzz) echo 8192 ;;
    chat_template_fuzz) echo 20480 ;;
    tokenizer_fuzz) echo 8192 ;;
    grammar_fuzz) echo 8192 ;;
    *) echo 65536 ;;
  esac
}

seeds_dir="$BUILD_DIR/fuzz-seeds"
if [[ ! -f "$seeds_dir/.done" ]]; then
  rm -rf "$seeds_dir"
  "$BUILD_DIR/tests/strata-make-fuzz-seeds" "$seeds_dir" >/dev/null
  touch "$seeds_dir/.done"
fi

JOBS=${STRATA_FUZZ_JOBS:-$(nproc)}

# One target; its summary line (and, on failure, the end of its log) goes to
# $BUILD_DIR/fuzz-logs/NAME.report, its status to NAME.status.
run_target() {
  local name=$1
  local bin="$BUILD_DIR/tests/$name"
  local corpus="$BUILD_DIR/fuzz-corpus/$name"
  local findings="$BUILD_DIR/fuzz-findings/$name"
  local log="$BUILD_DIR/fuzz-logs/$name.log" report="$BUILD_DIR/fuzz-logs/$name.report"
  mkdir -p "$corpus" "$findings" "$(dirname "$log")"
  local inputs=("$corpus")
  [[ -d "tests/fuzz/corpus/$name" ]] && inputs+=("tests/fuzz/corpus/$name")
  [[ -d "$seeds_dir/$name" ]] && inputs+=("$seeds_dir/$name")
  local t0 rc secs execs last cov ft line
  t0=$(date +%s)
  set +e
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$bin" -runs="$RUNS" -max_total_time="$MAX_SECONDS" -timeout="$TIMEOUT" -rss_limit_mb=4096 \
    -max_len="$(max_len "$name")" -dict="tests/fuzz/dict/$name.dict" -print_final_stats=1 \
    -artifact_prefix="$findings/" "${inputs[@]}" >"$log" 2>&1
  rc=$?
  set -e
  secs=$(( $(date +%s) - t0 ))
  # (|| true: a target that crashed may have printed neither line.)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  line="$name: ${execs:-0} executions in ${secs}s, cov ${cov:-?} ft ${ft:-?}, corpus $(ls "$corpus" | wc -l) inputs"
  : >"$report"
  local status=0
  if (( rc != 0 )); then
    tail -n 40 "$log" >>"$report"
    line+=" -- FAILED (exit $rc; findings in $findings)"
    status=1
  elif (( ${execs:-0} < RUNS )); then
    tail -n 5 "$log" >>"$report"
    line+=" -- FAILED (fewer than $RUNS executions within ${MAX_SECONDS}s)"
    status=1
  fi
  echo "$line" >>"$report"
  echo "$status" >"$BUILD_DIR/fuzz-logs/$name.status"
}

# Every target is checked before any runs; then JOBS run at once (each
# libFuzzer process is single-threaded), and the reports print in order.
for name in "${targets[@]}"; do
  [[ -x "$BUILD_DIR/tests/$name" ]] || { echo "fuzz: $BUILD_DIR/tests/$name missing (configure with -DSTRATA_FUZZ=ON)"; exit 1; }
  [[ -s "tests/fuzz/dict/$name.dict" ]] || { echo "fuzz: tests/fuzz/dict/$name.dict missing (every target has one)"; exit 1; }
  rm -f "$BUILD_DIR/fuzz-logs/$name.status"
done
running=0
for name in "${targets[@]}"; do
  if (( running >= JOBS )); then
    wait -n || true
    running=$((running - 1))
  fi
  echo "fuzz: $name: $RUNS runs, inputs <= $(max_len "$name") bytes"
  run_target "$name" &
  running=$((running + 1))
done
wait || true

fail=0
summary=()
for name in "${targets[@]}"; do
  report="$BUILD_DIR/fuzz-logs/$name.report"
  status=$(cat "$BUILD_DIR/fuzz-logs/$name.status" 2>/dev/null || echo 1)
  if [[ -s "$report" ]]; then
    (( status == 0 )) || head -n -1 "$report"
    line=$(tail -n 1 "$report")
  else
    line="$name: no report (the run was killed) -- FAILED"
    status=1
  fi
  (( status == 0 )) || fail=1
  echo "fuzz: $line"
  summary+=("$line")
done
echo "fuzz summary:"
printf '  %s\n' "${summary[@]}"
exit $fail
