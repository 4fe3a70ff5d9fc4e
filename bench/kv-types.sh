#!/usr/bin/env bash
# The KV cache types side by side (--kv-type f32, f16, q8_0; kernels/kv_type.h)
# on one strata-run build: for each pack and depth, ROUNDS rounds of
# `--bench -p PROMPT -n GEN -t 2 --bench-depth DEPTH --bench-reps REPS`, the
# types in a rotating order within a round (so none always runs first on a
# cooler machine). Prints each run's JSON line, then per depth the median of
# the runs' decode (and prefill) medians and each type's ratio to F32, with
# the memory read rate (kernels_bench MemoryRead, 2 threads) measured first.
#
#   bash bench/kv-types.sh BUILD_DIR PACK... > kv.txt
#   STRATA_KV_DEPTHS="4096 16384" STRATA_KV_ROUNDS=2 STRATA_KV_REPS=2 STRATA_KV_PROMPT=16 STRATA_KV_GEN=32
#
# Each rep refills the context to DEPTH (not timed), so depth 16384 takes
# minutes per run on 2 cores.
set -euo pipefail
[[ $# -ge 2 ]] || { echo "usage: bash bench/kv-types.sh BUILD_DIR PACK..." >&2; exit 2; }
BUILD=$1; shift
RUN="$BUILD/runtime/strata-run"
DEPTHS=${STRATA_KV_DEPTHS:-4096}
ROUNDS=${STRATA_KV_ROUNDS:-2}
REPS=${STRATA_KV_REPS:-2}
PROMPT=${STRATA_KV_PROMPT:-16}
GEN=${STRATA_KV_GEN:-32}
TYPES=(f32 f16 q8_0)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$BUILD/bench/kernels_bench" --benchmark_filter='MemoryRead/threads:2' --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true 2>/dev/null | grep median || true
for pack in "$@"; do
  for depth in $DEPTHS; do
    for ((round = 0; round < ROUNDS; ++round)); do
      for ((i = 0; i < ${#TYPES[@]}; ++i)); do
        kv=${TYPES[(i + round) % ${#TYPES[@]}]}
        line=$("$RUN" "$pack" --bench -p "$PROMPT" -n "$GEN" -t 2 --bench-depth "$depth" --bench-reps "$REPS" \
               --kv-type "$kv" 2>/dev/null | tail -1)
        echo "$(basename "$pack") depth $depth round $((round + 1)) $kv: $line"
        echo "$(basename "$pack") $depth $kv $line" >> "$out"
      done
    done
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    pack, depth, kv, js = line.split(" ", 3)
    j = json.loads(js)
    runs.setdefault((pack, int(depth)), {}).setdefault(kv, []).append(j)
print()
print("| pack | depth | KV | decode tok/s (median of runs) | vs F32 | prefill tok/s | vs F32 |")
print("|---|---|---|---|---|---|---|")
for (pack, depth), by in sorted(runs.items()):
    med = {kv: (statistics.median(r["decode_tps_median"] for r in rs), statistics.median(r["prefill_tps_median"] for r in rs))
           for kv, rs in by.items()}
    for kv in ("f32", "f16", "q8_0"):
        if kv not in med: continue
        d, p = med[kv]
        d0, p0 = med.get("f32", (d, p))
        print(f"| {pack} | {depth} | {kv} | {d:.2f} | {d / d0:.2f}x | {p:.1f} | {p / p0:.2f}x |")
PY
