#!/usr/bin/env bash
# Strata and llama.cpp side by side: the same GGUF files, the same threads,
# the two engines alternating in one run, ratios printed (Strata / llama.cpp).
# llama.cpp is not built here: give the path of an existing llama-bench.
#
#   LLAMA_BENCH=/path/to/llama-bench bash bench/vs-llama.sh [BUILD_DIR] > vs-llama.txt
#   STRATA_VS_MODELS="q3-q4km q3-q8 q36-q4km"   models (bench/e2e.sh's shapes; q3-q4km-12 and q36-q4km-12: 12 layers;
#                                                glm-q4km: GLM-4.5-Air's shapes, 4 layers, the first dense;
#                                                oss-mxfp4: gpt-oss-20b's shapes, 4 layers, MXFP4 experts)
#   STRATA_VS_TESTS="512:64:0 4096:32:0 0:32:4096"  prompt:generated:depth per test (llama-bench -p/-n/-d)
#   STRATA_VS_ROUNDS=2  STRATA_VS_REPS=3  STRATA_VS_THREADS=2
#   LLAMA_COMMIT=...  printed beside what llama-bench reports (a build from a tree without .git reports none)
#
# Each test runs llama-bench (`-p P -n 0 -d D` then `-p 0 -n N -d D+P`, -r
# REPS, JSON) and `strata-run PACK --bench -p P -n N --bench-depth D --bench-reps REPS`
# (whose decode follows its prompt, so at depth D+P: llama.cpp's is measured
# at the same depth),
# round after round, engines alternating; both with their default KV cache,
# F16 (llama-bench's default -ctk/-ctv f16; strata-run's --kv-type f16); the table gives each engine's
# median over rounds of its median tok/s, the spread (min-max over rounds),
# and the ratio of medians. The memory read rate (kernels_bench MemoryRead,
# 2 threads) is measured at the start of each round.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
LLAMA_BENCH=${LLAMA_BENCH:?give LLAMA_BENCH=/path/to/llama-bench}
DIR=${STRATA_BENCH_DIR:-$BUILD/bench-data}
DATA=${STRATA_SHARED_DATA:-../shared/data}
MODELS=${STRATA_VS_MODELS:-"q3-q4km q3-q8 q36-q4km"}
TESTS=${STRATA_VS_TESTS:-"512:64:0 4096:32:0 0:32:4096"}
ROUNDS=${STRATA_VS_ROUNDS:-2}
REPS=${STRATA_VS_REPS:-3}
T=${STRATA_VS_THREADS:-2}
MAKE="$BUILD/tests/strata-make-gguf"
PACK="$BUILD/packer/strata-pack"
RUN="$BUILD/runtime/strata-run"
command -v jq >/dev/null || { echo "vs-llama: needs jq (apt-get install jq)" >&2; exit 2; }
mkdir -p "$DIR"
TOK=()
[[ -f "$DATA/tokenizer/ggml-vocab-qwen2.gguf" ]] && TOK=(--tokenizer "$DATA/tokenizer/ggml-vocab-qwen2.gguf")

model() {  # key -> "name|make-gguf args"
  case $1 in
    q3-q4km)     echo "q3-4L-q4km|--preset qwen3-30b-a3b --layers 4 --mix q4_k_m ${TOK[*]}" ;;
    q3-q8)       echo "q3-4L-q8_0|--preset qwen3-30b-a3b --layers 4 --type Q8_0 ${TOK[*]}" ;;
    q36-q4km)    echo "q36-4L-q4km|--arch qwen35moe --preset qwen36-35b-a3b --layers 1 --mix q4_k_m" ;;
    q3-q4km-12)  echo "q3-12L-q4km|--preset qwen3-30b-a3b --layers 12 --mix q4_k_m ${TOK[*]}" ;;
    q36-q4km-12) echo "q36-12L-q4km|--arch qwen35moe --preset qwen36-35b-a3b --layers 3 --mix q4_k_m" ;;
    glm-q4km)    echo "glm-air-4L-q4km|--arch glm4moe --preset glm45-air --layers 4 --mix q4_k_m ${TOK[*]}" ;;
    oss-mxfp4)   echo "oss20b-4L-mxfp4|--arch gpt-oss --preset gpt-oss-20b --layers 4 --mix mxfp4_moe" ;;
    *) echo "vs-llama: unknown model '$1'" >&2; exit 2 ;;
  esac
}

for m in $MODELS; do  # make every GGUF and pack first, so the rounds only measure
  IFS='|' read -r name args <<<"$(model "$m")"
  # shellcheck disable=SC2086
  [[ -f "$DIR/$name.gguf" ]] || "$MAKE" $args -o "$DIR/$name.gguf" >&2
  [[ -f "$DIR/$name.strata" ]] || "$PACK" "$DIR/$name.gguf" -o "$DIR/$name.strata" --no-profile --no-probe >&2
done

memread() {
  "$BUILD/bench/kernels_bench" --benchmark_filter='MemoryRead/threads:2' --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true 2>/dev/null |
    awk '/_median/ {for (i=1;i<=NF;i++) if ($i ~ /bytes_per_second=/) {sub("bytes_per_second=","",$i); print $i}}'
}

RES=$(mktemp)
trap 'rm -f "$RES"' EXIT
first=$(model "${MODELS%% *}" | cut -d'|' -f1)
echo "llama-bench: $LLAMA_BENCH, llama.cpp $("$LLAMA_BENCH" -m "$DIR/$first.gguf" -t "$T" -p 1 -n 0 -r 1 -o json 2>/dev/null |
  jq -r '.[0] | "commit \(.build_commit) (b\(.build_number))"')${LLAMA_COMMIT:+; given as $LLAMA_COMMIT}"
echo "strata-run: $("$RUN" --version), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "threads $T, $REPS reps per measurement, $ROUNDS rounds, $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
for round in $(seq 1 "$ROUNDS"); do
  echo "round $round: memory read (2 threads, median of 3) $(memread)"
  for m in $MODELS; do
    IFS='|' read -r name _ <<<"$(model "$m")"
    for test in $TESTS; do
      IFS=: read -r p n d <<<"$test"
      # llama.cpp: prefill and decode as separate tests, as llama-bench reports them.
      lp=0 lg=0
      if (( p > 0 )); then
        lp=$("$LLAMA_BENCH" -m "$DIR/$name.gguf" -t "$T" -p "$p" -n 0 -d "$d" -r "$REPS" -o json 2>/dev/null |
             jq '[.[] | .samples_ts[]] | sort | .[length/2|floor]')
      fi
      if (( n > 0 )); then
        lg=$("$LLAMA_BENCH" -m "$DIR/$name.gguf" -t "$T" -p 0 -n "$n" -d "$((d + p))" -r "$REPS" -o json 2>/dev/null |
             jq '[.[] | .samples_ts[]] | sort | .[length/2|floor]')
      fi
      # Strata: one --bench run gives both (a prompt of at least 1 token).
      sp=$(( p > 0 ? p : 1 ))  # (with p = 0 Strata's decode is at depth d + 1: one token more than llama.cpp's)
      js=$("$RUN" "$DIR/$name.strata" --bench -p "$sp" -n "$n" --bench-depth "$d" --bench-reps "$REPS" -t "$T" 2>/dev/null)
      spp=$(jq '.prefill_tps_median' <<<"$js")
      stg=$(jq '.decode_tps_median' <<<"$js")
      echo "$m $test $lp $spp $lg $stg" >>"$RES"
      echo "  $m p$p n$n d$d: llama.cpp pp $lp tg $lg | strata pp $spp tg $stg"
    done
  done
done

echo
echo "| model | test | llama.cpp tok/s (spread) | Strata tok/s (spread) | Strata / llama.cpp |"
echo "|---|---|---|---|---|"
python3 - "$RES" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m, test, lp, sp, lg, sg = line.split()
    rows.setdefault((m, test), []).append(tuple(map(float, (lp, sp, lg, sg))))
for (m, test), r in rows.items():
    p, n, d = test.split(':')
    for kind, li, si, count in (('pp', 0, 1, p), ('tg', 2, 3, n)):
        if int(count) == 0:
            continue
        l = [x[li] for x in r]; s = [x[si] for x in r]
        lm, sm = statistics.median(l), statistics.median(s)
        depth = int(d) + (int(p) if kind == 'tg' else 0)
        label = f"{kind}{count}" + (f" @ d{depth}" if depth else "") + (" (after its prompt)" if kind == 'tg' and int(p) > 0 else "")
        print(f"| {m} | {label} | {lm:.1f} ({min(l):.1f}-{max(l):.1f}) | {sm:.1f} ({min(s):.1f}-{max(s):.1f}) | "
              f"{sm / lm if lm else float('nan'):.2f}x |")
EOF
