#!/usr/bin/env bash
# One call on the GPU machine (the device tool runs it from the repository root): build the kernels and
# the tests for sm_90a, run the [gpu] tests, compute-sanitizer memcheck and racecheck on small shapes,
# time our kernels (attnlab bench) and PyTorch SDPA on the same shapes in the same session, print one
# table with the ratios. Every step's full output lands in $OUT; stdout gets the summaries.
set -u
out=${OUT:-/tmp/attnlab-out}
mkdir -p "$out"
source kernels/bench/session_lib.sh
build_sm90a || exit 1
step "[gpu] tests (gpu-tests.log)"
build-gpu/bin/attnlab_tests "[gpu]" >"$out/gpu-tests.log" 2>&1
grep -E "FAILED|failed|passed|skipped|Randomness" "$out/gpu-tests.log" | head -20
grep -B2 -A12 "FAILED" "$out/gpu-tests.log" | head -60
step "compute-sanitizer memcheck (memcheck.log)"
compute-sanitizer --tool memcheck --error-exitcode 9 build-gpu/bin/attnlab_tests "[sanitize]" >"$out/memcheck.log" 2>&1
echo "exit $?"; grep -E "ERROR SUMMARY|passed|failed" "$out/memcheck.log" | tail -3
step "compute-sanitizer racecheck (racecheck.log)"
compute-sanitizer --tool racecheck --error-exitcode 9 build-gpu/bin/attnlab_tests "[sanitize]" >"$out/racecheck.log" 2>&1
echo "exit $?"; grep -E "RACECHECK SUMMARY|passed|failed" "$out/racecheck.log" | tail -3
step "attnlab bench (bench.log)"
build-gpu/bin/attnlab bench --config "${BENCH_CONFIG:-configs/bench-gpu.json}" --out "$out/ours.json" >"$out/bench.log" 2>&1
echo "exit $?"; awk 'NF > 8 {printf "%-20s %-10s %-12s %s %-7s %9s %9s %9s\n", $1, $2, $4, $5, ($6 == "causal" ? "causal" : ""), $(NF-6), $(NF-1), $NF}' "$out/bench.log"
step "PyTorch SDPA on the same shapes"
PYTHONUNBUFFERED=1 python3 kernels/bench/sdpa_bench.py --out-dir "$out" --ours "$out/ours.json" 2>&1 | tee "$out/sdpa.log"
