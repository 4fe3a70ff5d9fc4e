#!/usr/bin/env bash
# The GPU backend on a real GPU, from binaries built here (docs/gpu.md, "On a
# GPU machine"). Two halves:
#
#   bash scripts/device-check.sh prepare [DIR]
#       Here (Debian 12 with nvcc): a Release build with the sm_90 cubin only
#       (build-device/; an H200), its libstdc++ and libgcc linked statically,
#       and DIR (default device-check/, git-ignored) holding what the GPU
#       machine needs: the programs and GPU tests (stripped), the shared
#       libraries they use beyond glibc, a subset of the conformance
#       fixtures, and this script. Refuses when DIR passes 60 MiB (the device
#       tool carries 64 MiB in all).
#
#   bash DIR/device-check.sh run [DIR] [RESULTS]
#       On the GPU machine (it has the driver and nvcc, no package registry):
#       checks that the binaries run there, then
#         1. the op-by-op suite and the matrix kernels on the GPU
#            (STRATA_TEST_DEVICE=cuda gpu_ops_test, gpu_matmul_test);
#         2. compute-sanitizer memcheck and racecheck on a subset of it;
#         3. the conformance fixtures on --backend cuda;
#         4. --bench on the Qwen3-30B-A3B and Qwen3.6-35B-A3B shapes at 12
#            layers (written there by strata-make-gguf, packed by strata-pack):
#            prefill 512 and 4096 tokens, decode, and the device's copy
#            bandwidth measured in the same run; STRATA_DEVICE_CHECK_FULL=1
#            adds Qwen3-30B-A3B at its 48 layers (about 17 GB, on disk there);
#         5. the VRAM/RAM split of the routed experts: the 30B-A3B shape with
#            --vram-budget 2G, 4G and 6G at 12 layers (8, 16 and 24 GB cards
#            scaled to a quarter of the layers; 8G, 16G, 24G at 48 layers with
#            STRATA_DEVICE_CHECK_FULL=1), and the split's conformance tests.
#       Each step has a time limit; a failed step is recorded and the next
#       one runs (a failure is a finding). RESULTS (default $OUT, else
#       DIR/results) gets one log per step and summary.md. Meant to finish
#       within 8 minutes on an H200.
#
#   STRATA_DEVICE_BUILD_DIR=build STRATA_DEVICE_CHECK_SKIP_BUILD=1 \
#     bash scripts/device-check.sh prepare /tmp/dc
#   STRATA_DEVICE_CHECK_DRY=1 bash /tmp/dc/device-check.sh run /tmp/dc
#       Gathers from an existing build (any images; no size limit), then the
#       same steps here on the software GPU (STRATA_TEST_DEVICE=software,
#       --backend software-gpu, tiny shapes, no compute-sanitizer): checks the
#       script, not a GPU.
set -euo pipefail

mode=${1:-}
here=$(cd "$(dirname "$0")" && pwd)

prepare() {
  local dir=${1:-device-check} build=${STRATA_DEVICE_BUILD_DIR:-build-device}
  cd "$here/.."
  local targets=(strata-run strata-pack strata-make-gguf gpu_ops_test gpu_matmul_test conformance_test)
  # STRATA_DEVICE_CHECK_SKIP_BUILD=1: gather from an existing build (a dry run of the gathering).
  if [[ "${STRATA_DEVICE_CHECK_SKIP_BUILD:-0}" != 1 ]]; then
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTRATA_BUILD_BENCH=OFF \
      -DSTRATA_CUDA=ON -DSTRATA_CUDA_ARCHS=90 -DSTRATA_CUDA_PTX= -DSTRATA_HIP=OFF \
      -DCMAKE_EXE_LINKER_FLAGS="-static-libstdc++ -static-libgcc"
    cmake --build "$build" --target "${targets[@]}"
  fi
  rm -rf "$dir"
  mkdir -p "$dir/bin" "$dir/lib" "$dir/data/conformance"
  local t f
  for t in "${targets[@]}"; do
    f=$(find "$build" -type f -name "$t" -perm -u+x | head -1)
    [[ -n "$f" ]] || { echo "device-check: $t was not built in $build" >&2; exit 1; }
    cp "$f" "$dir/bin/"
    strip "$dir/bin/$t"
  done
  # Shared libraries beyond glibc (which the GPU machine has, at least 2.34).
  local lib
  for t in "$dir"/bin/*; do
    ldd "$t" | awk '/=> \// { print $3 }'
  done | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) ;;
      *) cp -L "$lib" "$dir/lib/" ;;
    esac
  done
  # The fixtures: one of each architecture and a few weight types.
  local data=${STRATA_DATA_DIR:-$here/../../shared/data}
  for f in qwen3moe-q4_k_m qwen3moe-iq3_s qwen35moe-q4_k_m stories260k-q8_0; do
    cp "$data/conformance/$f".* "$dir/data/conformance/"
  done
  cp "$here/device-check.sh" "$dir/"
  local bytes
  bytes=$(du -sb "$dir" | cut -f1)
  echo "device-check: $dir holds $(( bytes >> 20 )) MiB:"
  du -sh "$dir"/bin/* "$dir"/lib "$dir"/data
  if (( bytes > 60 << 20 )) && [[ "${STRATA_DEVICE_CHECK_SKIP_BUILD:-0}" != 1 ]]; then
    echo "device-check: $dir is over 60 MiB: the device tool carries 64 MiB in all" >&2
    exit 1
  fi
}

run_checks() {
  local dir results
  dir=$(cd "${1:-$here}" && pwd)
  results=${2:-${OUT:-$dir/results}}
  mkdir -p "$results"
  local dry=${STRATA_DEVICE_CHECK_DRY:-0}
  local device=cuda backend=cuda
  if [[ "$dry" == 1 ]]; then device=software; backend=software-gpu; fi
  export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export STRATA_TEST_DEVICE=$device STRATA_DATA_DIR="$dir/data"
  export STRATA_SCRATCH_DIR=${TMPDIR:-/tmp}/strata-device-check
  local work=$STRATA_SCRATCH_DIR/models bin=$dir/bin
  mkdir -p "$work"
  local summary=$results/summary.md failures=0 t0
  t0=$(date +%s)
  {
    echo "# device-check $(date -u +%Y-%m-%dT%H:%MZ)"
    echo
    echo "- machine: $(uname -srm), $(nproc) cores"
    if command -v nvidia-smi >/dev/null; then
      echo "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
    fi
    [[ "$dry" == 1 ]] && echo "- DRY RUN: the software GPU, tiny shapes (checks the script, not a GPU)"
    echo
    echo "| step | result | seconds |"
    echo "|---|---|---|"
  } >"$summary"
  # step NAME LIMIT_SECONDS COMMAND...: runs it with a limit, logs to NAME.log.
  step() {
    local name=$1 limit=$2
    shift 2
    local s rc=0
    s=$(date +%s)
    echo "== $name (limit ${limit} s): $*"
    timeout --kill-after=10 "$limit" "$@" >"$results/$name.log" 2>&1 || rc=$?
    local took=$(( $(date +%s) - s )) result=ok
    if (( rc == 124 || rc == 137 )); then result="TIMED OUT"; elif (( rc != 0 )); then result="FAILED (exit $rc)"; fi
    [[ "$result" == ok ]] || failures=$((failures + 1))
    echo "| $name | $result | $took |" >>"$summary"
    echo "   $result in $took s"
    tail -n 3 "$results/$name.log" | sed 's/^/   /'
  }

  # 0. The binaries run here (libraries, glibc, the driver).
  step binaries-run 30 bash -c "for b in '$bin'/*; do ldd \"\$b\" | grep 'not found' && exit 1; done; '$bin/strata-run' --version"
  # 1. Op by op, and the matrix kernels, on the device.
  step gpu_ops_test 240 "$bin/gpu_ops_test"
  step gpu_matmul_test 120 "$bin/gpu_matmul_test"
  # 2. compute-sanitizer on a subset: one architecture of each kind, one weight type of each family.
  local subset='Archs/GpuOpsArchTest.*/qwen3moe_Q4_K_kv0:Archs/GpuOpsArchTest.*/qwen35moe_*:Types/GpuOpsTypeTest.*/IQ3_S'
  local sanitizer=${COMPUTE_SANITIZER:-/usr/local/cuda/bin/compute-sanitizer}
  if [[ "$dry" != 1 ]]; then
    step memcheck 150 "$sanitizer" --tool memcheck --error-exitcode 9 "$bin/gpu_ops_test" --gtest_filter="$subset"
    step racecheck 150 "$sanitizer" --tool racecheck --error-exitcode 9 "$bin/gpu_ops_test" --gtest_filter="$subset"
  fi
  # 3. The conformance fixtures carried, on the device.
  local filter="" f n
  for f in "$dir"/data/conformance/*.prompt.json; do
    n=$(basename "$f" .prompt.json)
    filter+="${filter:+:}Fixtures/Conformance.GpuBackendMatchesNativeWithinTheFastPathTolerance/${n//[-.]/_}"
    filter+=":Fixtures/Conformance.ExpertSplitBetweenVramAndRamMatchesNativeWithinTheFastPathTolerance/${n//[-.]/_}"
  done
  step conformance 120 "$bin/conformance_test" --gtest_filter="$filter"
  # 4. Speed on real shapes, with the copy bandwidth of the same run.
  local preset layers pp_short=512 pp_long=4096 reps=3
  for preset in qwen3-30b-a3b qwen36-35b-a3b; do
    local arch=qwen3moe
    [[ "$preset" == qwen36-35b-a3b ]] && arch=qwen35moe
    layers=12
    local make=(--arch "$arch" --preset "$preset" --layers "$layers" --mix q4_k_m)
    if [[ "$dry" == 1 ]]; then make=(--arch "$arch" --preset tiny --type Q4_K); pp_short=16; pp_long=64; reps=1; fi
    step "make-$preset" 180 bash -c "'$bin/strata-make-gguf' ${make[*]} -o '$work/$preset.gguf' &&
      '$bin/strata-pack' '$work/$preset.gguf' -o '$work/$preset.strata' --no-profile --no-probe &&
      rm -f '$work/$preset.gguf'"
    step "bench-$preset-pp$pp_short" 150 "$bin/strata-run" "$work/$preset.strata" --backend "$backend" --bench \
      -p "$pp_short" -n 64 --bench-reps "$reps"
    step "bench-$preset-pp$pp_long" 150 "$bin/strata-run" "$work/$preset.strata" --backend "$backend" --bench \
      -p "$pp_long" -n 16 --bench-reps "$reps"
    # 5. The VRAM/RAM split (docs/experts-split.md) on the 30B-A3B shape:
    #    consumer cards of 8, 16 and 24 GB emulated by --vram-budget, scaled
    #    to the 12 layers here (a quarter of 48: 2, 4 and 6 GiB).
    if [[ "$preset" == qwen3-30b-a3b ]]; then
      local budget
      for budget in 2G 4G 6G; do
        [[ "$dry" == 1 ]] && budget=${budget%G}M
        # The plan's forecast first (its prediction), then the measurement.
        # (its context the bench's: prompt + 64 generated + 1)
        step "split-plan-$preset-vram$budget" 30 "$bin/strata-run" "$work/$preset.strata" --backend "$backend" --plan \
          --vram-budget "$budget" -c $((pp_short + 65))
        step "split-$preset-vram$budget" 150 "$bin/strata-run" "$work/$preset.strata" --backend "$backend" --bench \
          -p "$pp_short" -n 64 --bench-reps "$reps" --vram-budget "$budget" --expert-stats
      done
    fi
    rm -f "$work/$preset.strata"
  done
  if [[ "${STRATA_DEVICE_CHECK_FULL:-0}" == 1 && "$dry" != 1 ]]; then
    step make-qwen3-30b-a3b-48 300 bash -c "'$bin/strata-make-gguf' --arch qwen3moe --preset qwen3-30b-a3b --layers 48 \
      --mix q4_k_m -o '$work/full.gguf' && '$bin/strata-pack' '$work/full.gguf' -o '$work/full.strata' --no-profile \
      --no-probe && rm -f '$work/full.gguf'"
    step bench-qwen3-30b-a3b-48 200 "$bin/strata-run" "$work/full.strata" --backend cuda --bench -p 512 -n 64 \
      --bench-reps 3
    local budget
    for budget in 8G 16G 24G; do
      step "split-plan-qwen3-30b-a3b-48-vram$budget" 30 "$bin/strata-run" "$work/full.strata" --backend cuda --plan \
        --vram-budget "$budget" -c 577
      step "split-qwen3-30b-a3b-48-vram$budget" 200 "$bin/strata-run" "$work/full.strata" --backend cuda --bench \
        -p 512 -n 64 --bench-reps 3 --vram-budget "$budget" --expert-stats
    done
    rm -f "$work/full.strata"
  fi
  {
    echo
    echo "Total $(( $(date +%s) - t0 )) s; $failures step(s) failed. The bench lines:"
    echo
    echo '```'
    grep -h -E '^\{"arch"|device copy bandwidth|rep 1:|VRAM/RAM split|experts:|predicted decode' "$results"/bench-*.log \
      "$results"/split-*.log 2>/dev/null || true
    echo '```'
  } >>"$summary"
  cat "$summary"
  rm -rf "$STRATA_SCRATCH_DIR"
  return $(( failures > 0 ))
}

case "$mode" in
  prepare) prepare "${2:-}" ;;
  run) run_checks "${2:-}" "${3:-}" ;;
  *)
    echo "usage: bash scripts/device-check.sh prepare [DIR]   (here: build and gather DIR, default device-check/)" >&2
    echo "       bash DIR/device-check.sh run [DIR] [RESULTS]  (on the GPU machine; STRATA_DEVICE_CHECK_DRY=1: here, on the software GPU)" >&2
    exit 2
    ;;
esac
