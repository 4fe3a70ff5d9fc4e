#!/usr/bin/env bash
# The conformance fixtures written by the project's GGUF writer
# (tests/conformance/, docs/conformance.md "Fixtures from the project's
# writer"): each fixture is a strata-make-gguf command; this script writes its
# GGUF, records the GGUF's sha256 and has llama.cpp compute the references.
# llama.cpp is not built here: give an existing reference driver, a program
# linked against libllama that follows ../shared/data/conformance/README.md's
# method (CPU, 1 thread, n_ctx 256, n_batch = n_ubatch = 256, F32 K/V cache,
# flash attention off; the 24-id PROMPT1 in one llama_decode with logits for
# every position, then 32 one-token greedy steps), called as
#   $LLAMA_REF MODEL.gguf OUT_PREFIX 32
# and writing OUT_PREFIX.logits.f32, .decode.f32 and .prompt.json (prompt_ids,
# greedy_ids, min_greedy_margin, llama_cpp). docs/conformance.md says which
# commit and build made the files in the repository.
#
#   LLAMA_REF=/path/to/llama_ref bash scripts/conformance-refs.sh [BUILD_DIR] [FIXTURE...]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
shift || true
LLAMA_REF=${LLAMA_REF:?give LLAMA_REF=/path/to/the reference driver}
MAKE="$BUILD/tests/strata-make-gguf"
OUT=tests/conformance
command -v jq >/dev/null || { echo "conformance-refs: needs jq (apt-get install jq)" >&2; exit 2; }

# name|strata-make-gguf arguments (the F32-math twin of a quantized fixture
# adds --f32-math).
FIXTURES=(
  "glm4moe-f32|--arch glm4moe --type F32 --seed 41 --qk-norm"
  "glm4moe-q8_0|--arch glm4moe --type Q8_0 --seed 42"
  "glm4moe-q4_k_m-yarn|--arch glm4moe --mix q4_k_m --seed 43 --rope-scaling yarn:4:64"
  "qwen3-f32-yarn|--arch qwen3 --type F32 --seed 44 --rope-scaling yarn:4:64"
  "qwen3moe-q8_0-linear|--arch qwen3moe --type Q8_0 --seed 45 --rope-scaling linear:2"
  "gpt-oss-f32|--arch gpt-oss --type F32 --seed 61"
  "gpt-oss-mxfp4_moe|--arch gpt-oss --mix mxfp4_moe --seed 62"
  "qwen3next-f32|--arch qwen3next --type F32 --seed 71 --split-qkvz"
  "qwen3next-q8_0|--arch qwen3next --type Q8_0 --seed 72"
  "qwen3next-q4_k_m-yarn|--arch qwen3next --mix q4_k_m --seed 73 --rope-scaling yarn:4:64"
  "deepseek2-f32|--arch deepseek2 --type F32 --seed 81"
  "deepseek2-q8_0|--arch deepseek2 --type Q8_0 --seed 82"
  "deepseek2-lite-q4_k_m-yarn|--arch deepseek2 --lite --mix q4_k_m --seed 83 --rope-scaling yarn:4:64"
  "deepseek2-legacy-f32|--arch deepseek2 --legacy-kv-b --type F32 --seed 84"
  "deepseek2-lite-legacy-q8_0|--arch deepseek2 --lite --legacy-kv-b --type Q8_0 --seed 85"
)
WANT=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "${FIXTURES[@]}"; do
  name=${f%%|*}
  args=${f#*|}
  if ((${#WANT[@]})) && [[ ! " ${WANT[*]} " == *" $name "* ]]; then continue; fi
  echo "== $name: strata-make-gguf $args" >&2
  # shellcheck disable=SC2086
  xxh3=$("$MAKE" $args --print-xxh3 -o "$tmp/$name.gguf" | cut -d' ' -f2)
  sha=$(sha256sum "$tmp/$name.gguf" | cut -d' ' -f1)
  "$LLAMA_REF" "$tmp/$name.gguf" "$OUT/$name" 32
  f32math=null
  if [[ "$args" != *"--type F32"* ]]; then
    # shellcheck disable=SC2086
    "$MAKE" $args --f32-math -o "$tmp/$name.f32math.gguf" >/dev/null
    "$LLAMA_REF" "$tmp/$name.f32math.gguf" "$OUT/$name.f32math" 32
    f32math=$(jq -c --arg sha "$(sha256sum "$tmp/$name.f32math.gguf" | cut -d' ' -f1)" \
      '{greedy_ids, min_greedy_margin, gguf_sha256: $sha}' "$OUT/$name.f32math.prompt.json")
    rm "$OUT/$name.f32math.prompt.json"
  fi
  jq --arg name "$name" --arg args "$args" --arg sha "$sha" --arg xxh3 "$xxh3" --argjson f32math "$f32math" \
    '{fixture: $name, make_gguf_args: $args, gguf_sha256: $sha, gguf_xxh3: $xxh3} + . + (if $f32math == null then {} else {f32math_reference: $f32math} end)' \
    "$OUT/$name.prompt.json" > "$tmp/p.json"
  mv "$tmp/p.json" "$OUT/$name.prompt.json"
done
ls -la "$OUT" >&2
