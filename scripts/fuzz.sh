#!/usr/bin/env bash
# Runs every fuzz target in a fuzz build for a bounded time, seeded with the
# real files in ../shared/data and the project's own corpus.
# -timeout is per input, after LLVMFuzzerInitialize: a 1 MiB tokenizer input
# takes up to 6 s under ASan+coverage on 2 cores, so 30 s leaves room for a
# slower machine while still catching a hang.
#   bash scripts/fuzz.sh BUILD_DIR SECONDS
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build-ci/fuzz}
SECONDS_EACH=${2:-60}
DATA=${STRATA_DATA_DIR:-../shared/data}
shopt -s nullglob
# Seeds for the pack reader: small packs of the conformance fixtures.
if [[ -x "$BUILD_DIR/packer/strata-pack" && -d "$DATA/conformance" ]]; then
  mkdir -p "$BUILD_DIR/fuzz-seeds/packs"
  for g in stories260k-q8_0 qwen3moe-q2_0 qwen35moe-q4_k_m; do
    [[ -f "$BUILD_DIR/fuzz-seeds/packs/$g.strata" ]] ||
      "$BUILD_DIR/packer/strata-pack" "$DATA/conformance/$g.gguf" -o "$BUILD_DIR/fuzz-seeds/packs/$g.strata" >/dev/null
  done
  # With Q8_0 decode copies and an expert profile (the default) to mutate.
  [[ -f "$BUILD_DIR/fuzz-seeds/packs/qwen3moe-q2_0-copies.strata" ]] ||
    "$BUILD_DIR/packer/strata-pack" "$DATA/conformance/qwen3moe-q2_0.gguf" --decode-copies q8_0 \
      -o "$BUILD_DIR/fuzz-seeds/packs/qwen3moe-q2_0-copies.strata" >/dev/null
fi
for bin in "$BUILD_DIR"/tests/*_fuzz; do
  name=$(basename "$bin")
  corpus="$BUILD_DIR/fuzz-corpus/$name"
  mkdir -p "$corpus"
  seeds=()
  case "$name" in
    gguf_reader_fuzz) seeds=("$DATA"/models "$DATA"/conformance "$DATA"/tokenizer) ;;
    pack_reader_fuzz) [[ -d "$BUILD_DIR/fuzz-seeds/packs" ]] && seeds=("$BUILD_DIR/fuzz-seeds/packs") ;;
  esac
  echo "fuzz: $name for ${SECONDS_EACH}s"
  ASAN_OPTIONS=detect_leaks=1 "$bin" -max_total_time="$SECONDS_EACH" -timeout=30 -rss_limit_mb=4096 \
    -max_len=1048576 -print_final_stats=1 "$corpus" "${seeds[@]}" 2>&1 | tail -n 12
done
