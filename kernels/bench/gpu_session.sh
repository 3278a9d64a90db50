#!/usr/bin/env bash
# One call on the GPU machine (the device tool runs it from the repository root): build the kernels and
# the tests for sm_90a, run the [gpu] tests, compute-sanitizer memcheck and racecheck on small shapes,
# time our kernels (attnlab bench) and PyTorch SDPA on the same shapes in the same session, print one
# table with the ratios. Everything lands in $OUT.
set -u
out=${OUT:-/tmp/attnlab-out}
mkdir -p "$out"
step() { echo; echo "== $*"; }
step configure and build
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNLAB_CUDA_ARCHITECTURES=90a >"$out/configure.log" 2>&1 ||
  { tail -30 "$out/configure.log"; exit 1; }
cmake --build build-gpu -j "$(nproc)" --target attnlab attnlab_tests >"$out/build.log" 2>&1 ||
  { grep -E "error" -A5 "$out/build.log" | head -80; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
step "[gpu] tests"
build-gpu/bin/attnlab_tests "[gpu]" 2>&1 | tail -25
step "compute-sanitizer memcheck"
compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/bin/attnlab_tests "[sanitize]" 2>&1 | tail -4
step "compute-sanitizer racecheck"
compute-sanitizer --tool racecheck --error-exitcode 9 build-gpu/bin/attnlab_tests "[sanitize]" 2>&1 | tail -4
step "attnlab bench"
build-gpu/bin/attnlab bench --config "${BENCH_CONFIG:-configs/bench-gpu.json}" --out "$out/ours.json" 2>&1
step "PyTorch SDPA on the same shapes"
PYTHONUNBUFFERED=1 python3 kernels/bench/sdpa_bench.py --out-dir "$out" --ours "$out/ours.json" 2>&1
