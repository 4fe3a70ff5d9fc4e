#!/usr/bin/env bash
# Two strata-run builds side by side: for each pack, ROUNDS rounds of
# `--bench -p PROMPT -n GEN -t 2 --bench-reps REPS` (512 and 64 unless set), the builds alternating
# within a round (A then B, then B then A in the next round, so neither always
# runs on a warmer machine). Prints each run's JSON line, then a table of the
# medians of all its runs' medians and the ratio B/A.
#
#   bash bench/ab.sh OLD_STRATA_RUN NEW_STRATA_RUN PACK... > ab.txt
#   STRATA_AB_ROUNDS=3 STRATA_AB_REPS=3 STRATA_AB_PROMPT=512 STRATA_AB_GEN=64 STRATA_AB_ARGS="--delta-net chunked"
#
# The builds must read the same packs (same pack format major version).
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: bash bench/ab.sh OLD_STRATA_RUN NEW_STRATA_RUN PACK..." >&2; exit 2; }
A=$1 B=$2; shift 2
ROUNDS=${STRATA_AB_ROUNDS:-3}
REPS=${STRATA_AB_REPS:-3}
PROMPT=${STRATA_AB_PROMPT:-512}
GEN=${STRATA_AB_GEN:-64}
EXTRA=${STRATA_AB_ARGS:-}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for pack in "$@"; do
  for ((round = 1; round <= ROUNDS; ++round)); do
    order="A B"; (( round % 2 == 0 )) && order="B A"
    for who in $order; do
      bin=$A; [[ $who == B ]] && bin=$B
      # shellcheck disable=SC2086
      line=$("$bin" "$pack" --bench -p "$PROMPT" -n "$GEN" -t 2 --bench-reps "$REPS" $EXTRA 2>/dev/null | tail -1)
      echo "$(basename "$pack") round $round $who: $line"
      echo "$(basename "$pack") $who $line" >> "$out"
    done
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys
runs = {}
for l in open(sys.argv[1]):
    pack, who, js = l.split(' ', 2)
    j = json.loads(js)
    runs.setdefault(pack, {}).setdefault(who, []).append(j)
print()
print("| pack | prefill A | prefill B | B/A | decode A | decode B | B/A |")
print("|---|---:|---:|---:|---:|---:|---:|")
for pack, d in runs.items():
    def med(who, key): return statistics.median(r[key] for r in d[who])
    def rng(who, key): return "%.1f-%.1f" % (min(r[key] for r in d[who]), max(r[key] for r in d[who]))
    pa, pb = med('A', 'prefill_tps_median'), med('B', 'prefill_tps_median')
    da, db = med('A', 'decode_tps_median'), med('B', 'decode_tps_median')
    print("| %s | %.1f (%s) | %.1f (%s) | %.3f | %.2f (%s) | %.2f (%s) | %.3f |" % (
        pack, pa, rng('A', 'prefill_tps_median'), pb, rng('B', 'prefill_tps_median'), pb / pa,
        da, rng('A', 'decode_tps_median'), db, rng('B', 'decode_tps_median'), db / da))
PY
