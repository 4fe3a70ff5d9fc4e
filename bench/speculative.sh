#!/usr/bin/env bash
# Speculative decoding against plain decoding, side by side: for a model
# pack and a draft pack (the same tokenizer), or the word mtp (the model's
# own MTP block: --spec mtp), ROUNDS rounds of a greedy
# one-shot run of GEN tokens, plain then speculative (the order flipped
# every other round, so neither always runs on a warmer machine). Prints
# each run's decode rate and speculation line, then the medians and the
# ratio speculative / plain.
#
#   bash bench/speculative.sh STRATA_RUN MODEL.strata DRAFT.strata|mtp > spec.txt
#   STRATA_SPEC_ROUNDS=5 STRATA_SPEC_GEN=256 STRATA_SPEC_ARGS="--spec-max 4" STRATA_SPEC_PROMPT="Once upon a time"
set -euo pipefail
[[ $# -eq 3 ]] || { echo "usage: bash bench/speculative.sh STRATA_RUN MODEL.strata DRAFT.strata|mtp" >&2; exit 2; }
RUN=$1 MODEL=$2 DRAFT=$3
ROUNDS=${STRATA_SPEC_ROUNDS:-5}
GEN=${STRATA_SPEC_GEN:-256}
EXTRA=${STRATA_SPEC_ARGS:-}
PROMPT=${STRATA_SPEC_PROMPT:-Once upon a time}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((round = 1; round <= ROUNDS; ++round)); do
  order="plain spec"; (( round % 2 == 0 )) && order="spec plain"
  for who in $order; do
    args=()
    # shellcheck disable=SC2206
    if [[ $who == spec && $DRAFT == mtp ]]; then args=(--spec mtp $EXTRA)
    elif [[ $who == spec ]]; then args=(--spec draft --draft "$DRAFT" $EXTRA); fi
    err=$("$RUN" "$MODEL" -p "$PROMPT" -n "$GEN" --temp 0 --ignore-eos -t 2 "${args[@]}" 2>&1 >/dev/null)
    rate=$(sed -nE 's/.*generated [0-9]+ tokens in [0-9.]+ s \(([0-9.]+) tok\/s\).*/\1/p' <<<"$err")
    [[ -n "$rate" ]] || { echo "no rate in the output of round $round ($who):" >&2; echo "$err" >&2; exit 1; }
    echo "round $round $who: $rate tok/s $(grep -o 'speculation.*' <<<"$err" || true)"
    echo "$who $rate" >> "$out"
  done
done
python3 - "$out" <<'PY'
import statistics, sys
rates = {}
for l in open(sys.argv[1]):
    who, r = l.split()
    rates.setdefault(who, []).append(float(r))
p, s = statistics.median(rates["plain"]), statistics.median(rates["spec"])
print(f"median decode rate: plain {p:.2f} tok/s, speculative {s:.2f} tok/s, ratio {s / p:.3f}")
PY
