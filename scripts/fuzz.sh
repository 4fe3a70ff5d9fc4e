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

fail=0
summary=()
for name in "${targets[@]}"; do
  bin="$BUILD_DIR/tests/$name"
  [[ -x "$bin" ]] || { echo "fuzz: $bin missing (configure with -DSTRATA_FUZZ=ON)"; exit 1; }
  [[ -s "tests/fuzz/dict/$name.dict" ]] || { echo "fuzz: tests/fuzz/dict/$name.dict missing (every target has one)"; exit 1; }
  corpus="$BUILD_DIR/fuzz-corpus/$name"
  findings="$BUILD_DIR/fuzz-findings/$name"
  log="$BUILD_DIR/fuzz-logs/$name.log"
  mkdir -p "$corpus" "$findings" "$(dirname "$log")"
  inputs=("$corpus")
  [[ -d "tests/fuzz/corpus/$name" ]] && inputs+=("tests/fuzz/corpus/$name")
  [[ -d "$seeds_dir/$name" ]] && inputs+=("$seeds_dir/$name")
  echo "fuzz: $name: $RUNS runs, inputs <= $(max_len "$name") bytes"
  t0=$(date +%s)
  set +e
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$bin" -runs="$RUNS" -max_total_time="$MAX_SECONDS" -timeout="$TIMEOUT" -rss_limit_mb=4096 \
    -max_len="$(max_len "$name")" -dict="tests/fuzz/dict/$name.dict" -print_final_stats=1 \
    -artifact_prefix="$findings/" "${inputs[@]}" >"$log" 2>&1
  rc=$?
  set -e
  secs=$(( $(date +%s) - t0 ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  line="$name: ${execs:-0} executions in ${secs}s, cov ${cov:-?} ft ${ft:-?}, corpus $(ls "$corpus" | wc -l) inputs"
  if (( rc != 0 )); then
    tail -n 40 "$log"
    line+=" -- FAILED (exit $rc; findings in $findings)"
    fail=1
  elif (( ${execs:-0} < RUNS )); then
    tail -n 5 "$log"
    line+=" -- FAILED (fewer than $RUNS executions within ${MAX_SECONDS}s)"
    fail=1
  fi
  echo "fuzz: $line"
  summary+=("$line")
done
echo "fuzz summary:"
printf '  %s\n' "${summary[@]}"
exit $fail
