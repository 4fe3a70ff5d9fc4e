#!/usr/bin/env bash
# Folds what a fuzz campaign learned into the checked-in corpus
# (tests/fuzz/corpus/TARGET/): the campaign's inputs of at most MAX_BYTES
# (default 8192) that add coverage to what the checked-in corpus already
# reaches, as found by libFuzzer's -merge. Inputs named for a finding stay.
#   bash scripts/fuzz-merge.sh BUILD_DIR [MAX_BYTES]
# BUILD_DIR is a fuzz build whose BUILD_DIR/fuzz-corpus/TARGET holds a campaign's corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:?usage: fuzz-merge.sh BUILD_DIR [MAX_BYTES]}
MAX_BYTES=${2:-8192}
export STRATA_DATA_DIR=${STRATA_DATA_DIR:-../shared/data}
for bin in "$BUILD_DIR"/tests/*_fuzz; do
  name=$(basename "$bin")
  src="$BUILD_DIR/fuzz-corpus/$name"
  [[ -d "$src" ]] || continue
  small=$(mktemp -d)
  find "$src/" -type f -size -"$((MAX_BYTES + 1))"c -exec cp {} "$small/" \;
  mkdir -p "tests/fuzz/corpus/$name"
  before=$(ls "tests/fuzz/corpus/$name" | wc -l)
  "$bin" -merge=1 -max_len="$MAX_BYTES" -timeout=60 "tests/fuzz/corpus/$name" "$small" >/dev/null 2>&1
  echo "fuzz-merge: $name: $before -> $(ls "tests/fuzz/corpus/$name" | wc -l) inputs," \
       "$(du -sk "tests/fuzz/corpus/$name" | cut -f1) KiB"
  rm -rf "$small"
done
