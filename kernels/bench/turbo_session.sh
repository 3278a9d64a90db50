#!/usr/bin/env bash
# One call on the GPU machine for the compressed-cache decode kernels (turbo, kivi): build for sm_90a, run
# their [gpu] tests and compute-sanitizer on the small shapes, time them with attnlab bench at the
# benchmark shapes (B 16, d 128, N 32k; MHA and GQA 4:1) and PyTorch SDPA's FP16 decode on the same shapes
# in the same session, and print the ratios. Logs land in $OUT (at most 8 files come back: they are
# packed). TESTS_ONLY=1 stops after the tests; BENCH_ONLY=1 skips them.
set -u
out=${OUT:-/tmp/attnlab-out}
mkdir -p "$out"
log="$out/session.log"
step() { echo; echo "== $*" | tee -a "$log"; }
step configure and build
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNLAB_CUDA_ARCHITECTURES=90a >>"$log" 2>&1 ||
  { tail -30 "$log"; exit 1; }
cmake --build build-gpu -j "$(nproc)" --target attnlab attnlab_tests >"$out/build.log" 2>&1 ||
  { grep -E "error" -A5 "$out/build.log" | head -60; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used,memory.total --format=csv,noheader | tee -a "$log"
if [ -z "${BENCH_ONLY:-}" ]; then
  step "[gpu] tests of the decode kernels"
  build-gpu/bin/attnlab_tests "${TEST_SPEC:-[turbo],[kivi]}" >"$out/gpu-tests.log" 2>&1
  echo "exit $?" | tee -a "$log"
  grep -E "FAILED|failed|passed|skipped" "$out/gpu-tests.log" | tail -5 | tee -a "$log"
  grep -B3 -A14 "FAILED" "$out/gpu-tests.log" | head -80
  step "compute-sanitizer memcheck + racecheck (small shapes)"
  for tool in memcheck racecheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 build-gpu/bin/attnlab_tests "${SANITIZE_SPEC:-turbo decode kernel on a small shape (sanitizer run)}" >"$out/$tool.log" 2>&1
    echo "$tool exit $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/$tool.log" | tail -1)" | tee -a "$log"
  done
  [ -n "${TESTS_ONLY:-}" ] && exit 0
fi
for cfg in ${BENCH_CONFIGS:-configs/bench-turbo-decode.json configs/bench-turbo-decode-gqa.json}; do
  name=$(basename "$cfg" .json)
  step "attnlab bench $cfg"
  build-gpu/bin/attnlab bench --config "$cfg" --out "$out/$name.json" >"$out/$name.log" 2>&1
  echo "exit $?" | tee -a "$log"
  cat "$out/$name.log" | tail -12
done
step "PyTorch SDPA on the same shapes"
python3 - "$out" <<'PY'
import json, sys, glob
out = sys.argv[1]
ms = []
for f in sorted(glob.glob(f"{out}/bench-*.json")):
    ms += json.load(open(f))["measurements"]
json.dump({"schema": "attnlab.measurements/1", "measurements": ms}, open(f"{out}/ours.json", "w"))
PY
PYTHONUNBUFFERED=1 python3 kernels/bench/sdpa_bench.py --out-dir "$out" --ours "$out/ours.json" 2>&1 | tee -a "$log"
