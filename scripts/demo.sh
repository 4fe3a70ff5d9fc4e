#!/usr/bin/env bash
# The main job on a built-in default: make a model, pack it, validate the
# pack, run it. The model is a synthetic qwen3moe (the conformance fixtures'
# shape, 3 layers, 8 experts, seeded random weights) written by the project's
# own GGUF writer, with the real Qwen2 tokenizer when ../shared/data has it and
# a built-in byte-level tokenizer otherwise. Random weights generate
# gibberish: this shows the pipeline and its reports; step 5 then runs the
# real stories260K model from ../shared/data when it is there.
#   bash scripts/demo.sh            (after bash scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${STRATA_BUILD_DIR:-build}
OUT=${STRATA_DEMO_DIR:-$BUILD/demo}
DATA=${STRATA_DATA_DIR:-../shared/data}
mkdir -p "$OUT"
[[ -x "$BUILD/packer/strata-pack" ]] || bash scripts/setup.sh

tok_args=()
if [[ -f "$DATA/tokenizer/ggml-vocab-qwen2.gguf" ]]; then
  tok_args=(--tokenizer "$DATA/tokenizer/ggml-vocab-qwen2.gguf")
  echo "== tokenizer: Qwen2's, from $DATA/tokenizer/ggml-vocab-qwen2.gguf"
else
  echo "== tokenizer: built-in byte-level BPE ($DATA/tokenizer not found)"
fi

echo "== 1. make a synthetic qwen3moe GGUF (seed 42)"
"$BUILD/tests/strata-make-gguf" --arch qwen3moe --preset tiny --type Q8_0 --seed 42 "${tok_args[@]}" \
  -o "$OUT/default-qwen3moe.gguf"
"$BUILD/packer/strata-pack" --inspect "$OUT/default-qwen3moe.gguf" | head -n 12

echo "== 2. pack it"
"$BUILD/packer/strata-pack" "$OUT/default-qwen3moe.gguf" -o "$OUT/default-qwen3moe.strata"

echo "== 3. validate the pack"
"$BUILD/validate/strata-validate" "$OUT/default-qwen3moe.strata"

echo "== 4. run it"
"$BUILD/runtime/strata-run" "$OUT/default-qwen3moe.strata" -p "The quick brown fox" -n 32 --seed 42

# A real model, when the shared data has it: Karpathy's stories260K (llama,
# 260K parameters), so the pipeline ends on real generated text.
STORIES="$DATA/models/stories260K.gguf"
if [[ -f "$STORIES" ]]; then
  echo "== 5. the same pipeline on a real model: stories260K"
  "$BUILD/packer/strata-pack" "$STORIES" -o "$OUT/stories260K.strata"
  "$BUILD/validate/strata-validate" "$OUT/stories260K.strata"
  "$BUILD/runtime/strata-run" "$OUT/stories260K.strata" -p "Once upon a time" -n 48 --temp 0
else
  echo "== 5. skipped: $STORIES not found (the real-model step needs ../shared/data)"
fi
