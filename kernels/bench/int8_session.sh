#!/usr/bin/env bash
# GPU calls for the 8-bit prefill kernels (int_flash, turbo), run from the repository root on the GPU machine
# with .peers carried: ../shared/peers/stage.sh's sources, and its build.sh and peer_bench.py copied into
# .peers/tools/ (../shared does not travel to the GPU machine). Two steps, each well inside one call's 10 minutes; the
# machine keeps build-gpu/ and /tmp/peers between calls made close together:
#   STEP=build  start the peers' build (SageAttention2, FlashAttention-3) in the background, build attnlab for
#               sm_90a, run every [gpu] CTest test (ctest -L gpu: the suite split by file, as `make test` runs
#               it) and compute-sanitizer on the int_flash [sanitize] cases
#   STEP=bench  attnlab bench (BENCH_CONFIG) and the peers on the same shapes in the same call
#               (../shared/peers/peer_bench.py --ours): one table of ratios, the rows in $OUT/peers-int8.json;
#               the CPU cases of attnlab_tests run beside them on the machine's other cores
set -u
out=${OUT:-/tmp/attnlab-out}
mkdir -p "$out"
source kernels/bench/session_lib.sh
case "${STEP:-build}" in
build)
  step peers: building in the background
  BACKGROUND=1 bash .peers/tools/build.sh .peers 2>&1 | tail -1
  build_sm90a 12 || exit 1
  step "the [gpu] CTest tests (gpu-tests.log)"
  (cd build-gpu && ctest -L gpu --output-on-failure -j 1 ${CTEST_ARGS:-}) >"$out/gpu-tests.log" 2>&1
  echo "ctest exit $?"; grep -E "tests passed|Passed|Failed|Skipped|\*\*\*" "$out/gpu-tests.log" | tail -20
  sanitize "${SANITIZE_TAGS:=[#test_int_flash_kernel][sanitize]}"
  ;;
bench)
  [ -n "${SANITIZE_TAGS:-}" ] && sanitize "$SANITIZE_TAGS"
  step "the CPU tests of attnlab_tests (cpu-tests.log), beside the bench"
  (cd build-gpu && ctest -R "^attnlab_tests:" -LE gpu -j 8 --output-on-failure) >"$out/cpu-tests.log" 2>&1 &
  cpu_tests=$!
  bench_ours int8 "${BENCH_CONFIG:-configs/bench-int-flash-loads.json}" 25
  wait_peers
  peers_on int8 40
  wait $cpu_tests; echo "CPU tests exit $?"; grep -E "tests passed|\*\*\*|Failed" "$out/cpu-tests.log" | tail -12
  ;;
esac
