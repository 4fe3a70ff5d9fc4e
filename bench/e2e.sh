#!/usr/bin/env bash
# End-to-end CPU speed: the same model shapes as llama.cpp's figures in
# ../shared/reference/peer-bench.md (4 layers of Qwen3-30B-A3B and of
# Qwen3.6-35B-A3B, random weights, Q4_K_M and Q8_0), made with the project's
# own GGUF writer (the Qwen3 models with the real Qwen2 tokenizer, vocab
# 151936; the Qwen3.6 ones with the preset's vocab of 248320, as Qwen3.6 has),
# packed, then `strata-run --bench -p 512 -n 64 -t 2`
# (prefill of 512 tokens, 64 decoded, 5 repetitions after a warm-up; medians);
# the Qwen3.6 models twice, with the sequential and the chunked delta rule.
# Each model's line is followed by this machine's memory read rate measured
# right before it (kernels_bench MemoryRead, 2 threads), so decode can be read
# against the bandwidth roofline: decode tok/s x bytes per token / read GB/s.
#
#   bash bench/e2e.sh [BUILD_DIR] > bench-e2e.txt
#   STRATA_BENCH_DIR=/some/disk   where the multi-GB models go (default BUILD_DIR/bench-data)
#   STRATA_E2E_MODELS="q3-q4km q3-q8 q36-q4km q36-q8 stories"  a subset
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DIR=${STRATA_BENCH_DIR:-$BUILD/bench-data}
DATA=${STRATA_SHARED_DATA:-../shared/data}
MODELS=${STRATA_E2E_MODELS:-"q3-q4km q3-q8 q36-q4km q36-q8 stories"}
mkdir -p "$DIR"
MAKE="$BUILD/tests/strata-make-gguf"
PACK="$BUILD/packer/strata-pack"
RUN="$BUILD/runtime/strata-run"
TOK=()
[[ -f "$DATA/tokenizer/ggml-vocab-qwen2.gguf" ]] && TOK=(--tokenizer "$DATA/tokenizer/ggml-vocab-qwen2.gguf")

make_pack() {  # name, make-gguf args...
  local name=$1; shift
  if [[ ! -f "$DIR/$name.strata" ]]; then
    [[ -f "$DIR/$name.gguf" ]] || "$MAKE" "$@" -o "$DIR/$name.gguf" >&2
    # No profile or probe: this measures running, not packing.
    "$PACK" "$DIR/$name.gguf" -o "$DIR/$name.strata" --no-profile --no-probe >&2
  fi
}

memread() {
  "$BUILD/bench/kernels_bench" --benchmark_filter='MemoryRead/threads:2' --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true 2>/dev/null | awk '/_median/ {for (i=1;i<=NF;i++) if ($i ~ /bytes_per_second=/) {sub("bytes_per_second=","",$i); print $i}}'
}

bench() {  # name, pack, extra args
  local name=$1 pack=$2; shift 2
  echo "### $name"
  echo "memory read (2 threads, median of 3): $(memread)"
  echo "\$ strata-run $(basename "$pack") --bench -p 512 -n 64 -t 2 $*"
  "$RUN" "$pack" --bench -p 512 -n 64 -t 2 "$@" 2>&1
  echo
}

for m in $MODELS; do
  case $m in
    q3-q4km) make_pack q3-4L-q4km --preset qwen3-30b-a3b --layers 4 --mix q4_k_m "${TOK[@]}"
             bench "Qwen3-30B-A3B shape, 4 layers, Q4_K_M" "$DIR/q3-4L-q4km.strata" ;;
    q3-q8)   make_pack q3-4L-q8_0 --preset qwen3-30b-a3b --layers 4 --type Q8_0 "${TOK[@]}"
             bench "Qwen3-30B-A3B shape, 4 layers, Q8_0" "$DIR/q3-4L-q8_0.strata" ;;
    q36-q4km) make_pack q36-4L-q4km --arch qwen35moe --preset qwen36-35b-a3b --layers 1 --mix q4_k_m
             bench "Qwen3.6-35B-A3B shape, 4 layers (3 delta-net + 1 attention), Q4_K_M, sequential delta rule" "$DIR/q36-4L-q4km.strata" --delta-net sequential
             bench "Qwen3.6-35B-A3B shape, 4 layers (3 delta-net + 1 attention), Q4_K_M, chunked delta rule" "$DIR/q36-4L-q4km.strata" --delta-net chunked ;;
    q36-q8)  make_pack q36-4L-q8_0 --arch qwen35moe --preset qwen36-35b-a3b --layers 1 --type Q8_0
             bench "Qwen3.6-35B-A3B shape, 4 layers (3 delta-net + 1 attention), Q8_0, sequential delta rule" "$DIR/q36-4L-q8_0.strata" --delta-net sequential
             bench "Qwen3.6-35B-A3B shape, 4 layers (3 delta-net + 1 attention), Q8_0, chunked delta rule" "$DIR/q36-4L-q8_0.strata" --delta-net chunked ;;
    stories) if [[ -f "$DATA/models/stories260K.gguf" ]]; then
               [[ -f "$DIR/stories260K.strata" ]] || "$PACK" "$DATA/models/stories260K.gguf" -o "$DIR/stories260K.strata" >&2
               bench "stories260K (llama, F32)" "$DIR/stories260K.strata"
             fi ;;
    *) echo "unknown model '$m'" >&2; exit 2 ;;
  esac
done
