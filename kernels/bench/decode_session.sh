#!/usr/bin/env bash
# GPU calls for flash2's grouped decode kernel (kernels/flash2/flash2_decode.cu), run from the repository root on the
# GPU machine with .peers/tools/peer_bench.py carried (../shared/peers/peer_bench.py: ../shared does not travel).
# Two steps, each well inside one call's 10 minutes; the machine keeps build-gpu/ between calls made close together:
#   STEP=build  build attnlab for sm_90a, the flash2 and kivi [gpu] tests (kivi shares the chain code:
#               kernels/common/decode_chain.cuh), compute-sanitizer memcheck and racecheck on flash2's [sanitize] cases
#   STEP=bench  attnlab bench over B 1/4/16 × N 4k–32k (BATCHES, LENS) at MHA 32/32, GQA 32/8 and 40/10 (d 128; d 64 at
#               32/8), then
#               PyTorch SDPA (cuDNN, FlashAttention-2) on the same shapes in the same call (peer_bench.py --ours, which
#               also times the device-to-device copy): ours over cuDNN, and each kernel's bytes over its time against copy;
#               and a read of each shape's K/V bytes (torch.sum: one launch, one pass), the floor at the small shapes
#   STEP=compressed  issue 36 item 3 (builds first where build-gpu/ is missing: one call on a fresh machine; STALLS=1
#               adds ncu_profile.sh decode-stalls-bench, the model's turbo rows): the kivi [gpu] tests and sanitizers
#               (kivi v2), attnlab bench on the turbo/kivi and
#               fireq decode configs at MHA and GQA 32/8 (B 16, N 32k, d 128), cuDNN and the copy on the same shapes,
#               and Nsight Compute on kivi and turbo at GQA (issue rate, stalls, DRAM bytes, and every SASS instruction's
#               stall samples of the 2-bit kernels; not with NCU=0); GPU_TESTS (a
#               CTest regex) and SANITIZE (Catch2 tags) name other tests (e.g. turbo's after a change to its kernel)
#   STEP=turbo  a turbo decode change (PATCH: a diff applied first): built or brought up to date, turbo's [gpu]
#               tests and sanitizers (TESTS=0: not; SAN=0: the tests alone), attnlab bench of the turbo decode
#               configs (BENCH=0: not; CONFIGS names others, D64=1 adds their GQA turbo rows at d 64), PEERS=1 cuDNN
#               and the copy, STALLS=1 Nsight Compute's stalls, SASS=1 every SASS instruction's samples of the 2-bit
#               kernel at GQA
#   STEP=compressed-fig6  the same kernels at Fig. 6's shapes (configs/bench-compressed-decode-fig6.json: 40/10 heads,
#               B 1 and 4, N 4k–32k), cuDNN and the copy on the same shapes, and a copy of each row's own bytes
#               (copy_floor.py: the rate a copy of that few bytes reaches, the ceiling item 3's 60% is held against)
#   STEP=kivi   kivi decode v4 (the FP32 path out of line: three CTAs per SM at d 128, 2 bits): the kivi [gpu] tests
#               and sanitizers, attnlab bench of kivi 2- and 4-bit at MHA 32/32 and GQA 32/8 (B 16, N 32k, d 128), then
#               the same rebuilt with four CTAs per SM at d 128, 2 bits (kivi_decode.cu's kCtasD128Bits2, restored
#               after), cuDNN and the copy on the shapes (peer_bench.py over both), and Nsight Compute on one launch of
#               each build's 2-bit kernel at MHA
#   STEP=ncu-gqa  Nsight Compute alone on kivi 2-bit, turbo 2-bit and the turbo mix at GQA 32/8 (the rows below 70%;
#               NCU_ROWS names others, e.g. "turbo:2"), every SASS instruction's samples of SASS_ROWS' (kivi:2)
#   STEP=kivi-quick  the least that checks kivi v4 with a few device minutes: attnlab alone built, kivi decode on a
#               small problem against the reference (attnlab run's errors), attnlab bench of kivi 2- and 4-bit at MHA
#               and GQA 32/8 (B 16, N 32k, d 128); no tests, no peers
#   STEP=fig6   TurboAttention Fig. 6 re-measured: attnlab bench on configs/papers/turbo-fig6-decode.json (turbo 4-bit,
#               the 2/4-bit mix, kivi 2-bit and our FP16 decode at 40/10 heads, B 4, N 4k–32k), SDPA on the same shapes,
#               and the preset's report (its bars over our FP16 decode)
set -u
source kernels/bench/session_lib.sh
# The model's turbo rows (core/kernel_traits.h kDecodeIssue): Nsight Compute's counts and stalls by reason of turbo
# 4/2-bit at MHA and GQA 4:1 (ncu_profile.sh decode-stalls-bench → ncu-decode-stalls-bench.csv).
turbo_stalls() {
  step "Nsight Compute: turbo 4/2-bit at MHA and GQA 4:1, stalls by reason (ncu-decode-stalls-bench.csv)"
  bash kernels/bench/ncu_profile.sh "$out/ncu-decode-stalls-bench.csv" decode-stalls-bench >"$out/ncu-stalls.log" 2>&1
  echo "exit $?"; tail -4 "$out/ncu-stalls.log"
}
session_start decode-session
case "${STEP:-build}" in
build)
  build_sm90a 14 || exit 1
  gpu_tests "test_flash2_kernel:gpu|test_kivi_decode_kernel:gpu|test_kernel_table:gpu"
  sanitize "[#test_flash2_kernel][sanitize]"
  ;;
bench)
  for shape in "32 32 128" "32 8 128" "40 10 128" "32 8 64"; do
    set -- $shape
    tag="h$1-$2-d$3"
    edit_config configs/bench-flash2-decode.json "c['problem'].update(q_heads=$1, kv_heads=$2, head_dim=$3)" \
      >"$out/config-$tag.json"
    bench_ours "$tag" "$out/config-$tag.json" 14 --vary "problem.batch=${BATCHES:-1,4,16}" \
      --vary "problem.kv_len=${LENS:-4096,8192,16384,32768}"
  done
  peers_on decode
  step "a read of each shape's K/V bytes (read-floor.txt): the floor a decode of that shape stands on"
  # Issue 36 item 1's small shapes: at B 1 a decode moves a few MB, where a launch's fixed costs outweigh the bytes.
  # torch.sum over an FP16 tensor of the same bytes (one read, one launch; timed as the kernels are) says what any
  # kernel reading them takes here, beside the large-copy rate the tables divide by.
  python3 - "$out"/ours-*.json <<'PY' | tee "$out/read-floor.txt"
import json, statistics, sys, torch
shapes = set()
for f in sys.argv[1:]:
    for r in json.load(open(f))["measurements"]:
        p = r["problem"]
        shapes.add((p["batch"], p["kv_heads"], p["kv_len"], p["head_dim"]))
def median_ms(fn, runs=50, warm=10):
    ts = []
    for i in range(runs + warm):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize()
        if i >= warm: ts.append(s.elapsed_time(e))
    return statistics.median(ts)
print(f"{torch.cuda.get_device_name()}: empty launch {1e3 * median_ms(lambda: torch.cuda._sleep(0)):.1f} us")
for b, h, n, d in sorted(shapes):
    x = torch.randn(2 * b * h * n * d, dtype=torch.float16, device="cuda")
    ms = median_ms(lambda: x.sum(dtype=torch.float32))
    print(f"B {b} Hkv {h} N {n} d {d}: {2 * x.numel() / 1e6:.1f} MB read in {1e3 * ms:.1f} us = {2 * x.numel() / ms / 1e6:.0f} GB/s")
PY
  ;;
compressed)
  ensure_built || exit 1  # build-gpu/ brought up to date, or built on a fresh machine; the tests' binary too
  cmake --build build-gpu -j "$(nproc)" --target attnlab_tests >>"$out/build.log" 2>&1 ||
    { tail -20 "$out/build.log"; exit 1; }
  gpu_tests "${GPU_TESTS:-test_kivi_decode_kernel:gpu}"
  sanitize "${SANITIZE:-[#test_kivi_decode_kernel][sanitize]}"
  for c in bench-turbo-decode bench-turbo-decode-gqa bench-fireq-decode bench-fireq-decode-gqa; do
    bench_ours "$c" "configs/$c.json" 10
  done
  peers_on compressed 40
  if [ "${STALLS:-0}" = 1 ]; then  # the model's turbo rows: counts and stalls by reason (core/kernel_traits.h kDecodeIssue)
    turbo_stalls
  fi
  [ "${NCU:-1}" = 0 ] && exit 0  # NCU=0: the times only (Nsight Compute's counts of these kernels do not move with the GPU)
  step "Nsight Compute: kivi 2/4-bit, turbo 2/4-bit at GQA 32/8, B 16, N 32k, d 128 (ncu-*.txt): issue, stalls, DRAM"
  for v in kivi:2 kivi:4 turbo:2 turbo:4; do
    bits=${v##*:}
    case $v in
    kivi*) variant='{"id": "kivi", "params": {"bits": '$bits'}}' ;;
    *) variant='{"id": "turbo", "params": {"two_bit_heads": '$(( bits == 4 ? 0 : 8 ))'}}' ;;
    esac
    one_launch_config configs/bench-turbo-decode-gqa.json "$variant" >"$out/ncu-$v.json"
    ncu_attnlab "$v" "turbo_chains_kernel|kivi_chains_kernel" "$out/ncu-$v.json" 2
  done
  step "Nsight Compute: every SASS instruction's samples, turbo and kivi 2-bit at GQA 32/8 (sass-*.csv.gz)"
  for v in kivi:2 turbo:2; do
    sass_samples "${v/:/-}" --kernel-name regex:"turbo_chains_kernel|kivi_chains_kernel" --launch-skip 2 \
      build-gpu/bin/attnlab run --config "$out/ncu-$v.json"
  done
  ;;
turbo)
  # A turbo decode change on one machine: PATCH (a diff) applied to the tree first, attnlab brought up to date (built on
  # a fresh machine), turbo's [gpu] tests and sanitizer cases (TESTS=0: not; SAN=0: no sanitizers), attnlab bench on
  # the turbo decode configs (CONFIGS; by default MHA and GQA 32/8, B 16, N 32k, d 128; D64=1 the GQA turbo rows at
  # d 64 too; BENCH=0: none), cuDNN and the copy on their shapes (PEERS=1), Nsight Compute's stalls by reason
  # (STALLS=1) and every SASS instruction's samples of the 2-bit kernel at GQA 32/8 (SASS=1). Two builds compared on
  # one machine: a second run with the other build's PATCH and OUT=$OUT/NAME (the tree keeps the first's edits).
  if [ -n "${PATCH:-}" ]; then
    apply_patch "$PATCH" || exit 1
  fi
  ensure_built || exit 1
  if [ "${TESTS:-1}" = 1 ]; then
    cmake --build build-gpu -j "$(nproc)" --target attnlab_tests >>"$out/build.log" 2>&1 ||
      { tail -20 "$out/build.log"; exit 1; }
    gpu_tests 'test_turbo_decode_kernel:gpu|test_turbo_cache_write:gpu'
    [ "${SAN:-1}" = 1 ] && sanitize '[#test_turbo_decode_kernel][sanitize]'
  fi
  if [ "${BENCH:-1}" = 1 ]; then
    for c in ${CONFIGS-bench-turbo-decode bench-turbo-decode-gqa}; do bench_ours "$c" "configs/$c.json" 10; done
    if [ "${D64:-0}" = 1 ]; then  # the turbo rows at d 64 too (GQA 32/8: its kernel runs four CTAs at 128 registers)
      edit_config configs/bench-turbo-decode-gqa.json "c['problem']['head_dim'] = 64
c['variants'] = [v for v in c['variants'] if v['id'] == 'turbo']" >"$out/config-gqa-d64.json"
      bench_ours gqa-d64 "$out/config-gqa-d64.json" 6
    fi
    [ "${PEERS:-0}" = 1 ] && peers_on turbo 30
  fi
  if [ "${STALLS:-0}" = 1 ]; then
    turbo_stalls
  fi
  if [ "${SASS:-0}" = 1 ]; then
    step "Nsight Compute: every SASS instruction's samples, turbo 2-bit at GQA 32/8 (sass-turbo-2.csv.gz)"
    one_launch_config configs/bench-turbo-decode-gqa.json '{"id": "turbo", "params": {"two_bit_heads": 8}}' \
      >"$out/ncu-turbo-2.json"
    sass_samples turbo-2 --kernel-name regex:turbo_chains_kernel --launch-skip 2 \
      build-gpu/bin/attnlab run --config "$out/ncu-turbo-2.json"
  fi
  ;;
ncu-gqa)
  # The kernels item 3 leaves below 70% at GQA 32/8 (B 16, N 32k, d 128), Nsight Compute only (build-gpu/ kept from
  # an earlier call, else built): issue rate, stalls, DRAM bytes, and the SASS samples of SASS_ROWS
  ensure_built || exit 1
  for v in ${NCU_ROWS:-kivi:2 turbo:2 turbo:mix}; do
    case $v in
    kivi*) variant='{"id": "kivi", "params": {"bits": 2}}' ;;
    turbo:2) variant='{"id": "turbo", "params": {"two_bit_heads": 8}}' ;;
    *) variant='{"id": "turbo", "params": {"two_bit_heads": 4}}' ;;
    esac
    one_launch_config configs/bench-turbo-decode-gqa.json "$variant" >"$out/ncu-$v.json"
    ncu_attnlab "$v" "turbo_chains_kernel|kivi_chains_kernel" "$out/ncu-$v.json" 2
  done
  for v in ${SASS_ROWS:-kivi:2}; do
    sass_samples "${v/:/-}" --kernel-name regex:"turbo_chains_kernel|kivi_chains_kernel" --launch-skip 2 \
      build-gpu/bin/attnlab run --config "$out/ncu-$v.json"
  done
  ;;
compressed-fig6)
  bench_ours fig6-shapes configs/bench-compressed-decode-fig6.json 52
  peers_on compressed-fig6 52
  step "a copy of each row's own bytes (copy-floor.log)"
  python3 kernels/bench/copy_floor.py "${ours[@]}" --out "$out/copy-floor.json" >"$out/copy-floor.log" 2>&1
  echo "exit $?"; tail -60 "$out/copy-floor.log"
  ;;
kivi)
  ensure_built || exit 1
  cmake --build build-gpu -j "$(nproc)" --target attnlab_tests >>"$out/build.log" 2>&1 ||
    { tail -20 "$out/build.log"; exit 1; }
  gpu_tests test_kivi_decode_kernel:gpu
  sanitize "[#test_kivi_decode_kernel][sanitize]"
  kivi_rows() {  # LABEL: kivi 2- and 4-bit at MHA and GQA 32/8 into ours-LABEL-kvH.json; 2 bits at MHA under ncu
    local label=$1 kv
    for kv in 32 8; do
      edit_config configs/bench-turbo-decode.json "
c['problem']['kv_heads'] = $kv
c['variants'] = [{'id': 'kivi', 'label': 'kivi_2bit_$label', 'params': {'bits': 2}},
                 {'id': 'kivi', 'label': 'kivi_4bit_$label', 'params': {'bits': 4}}]" >"$out/config-$label-kv$kv.json"
      bench_ours "$label-kv$kv" "$out/config-$label-kv$kv.json" 4
    done
    one_launch_config configs/bench-turbo-decode.json '{"id": "kivi", "params": {"bits": 2}}' >"$out/ncu-$label.json"
    ncu_attnlab "kivi2-mha-$label" kivi_chains_kernel "$out/ncu-$label.json" 2
  }
  kivi_rows v4
  cp kernels/kivi/kivi_decode.cu /tmp/kivi_decode.cu.committed
  trap 'cp /tmp/kivi_decode.cu.committed kernels/kivi/kivi_decode.cu; pack_session' EXIT
  sed -i 's/^constexpr int kCtasD128Bits2 = 3;/constexpr int kCtasD128Bits2 = 4;/' kernels/kivi/kivi_decode.cu
  step "four CTAs at d 128, 2 bits: $(grep -c 'kCtasD128Bits2 = 4' kernels/kivi/kivi_decode.cu) line edited"
  ensure_built || exit 1
  kivi_rows v4-ctas4
  cp /tmp/kivi_decode.cu.committed kernels/kivi/kivi_decode.cu
  ensure_built || exit 1  # the committed kernel again, for the next call
  peers_on kivi 40
  ;;
kivi-quick)
  BUILD_TARGETS=attnlab build_sm90a || exit 1
  step "kivi decode against the reference (B 2, H 8/2, N 3000, d 128, 2 and 4 bits)"
  kivi_against_reference
  for kv in 32 8; do
    edit_config configs/bench-turbo-decode.json "c['problem']['kv_heads'] = $kv
c['variants'] = [v for v in c['variants'] if v['id'] == 'kivi']" >"$out/kivi-kv$kv.json"
    bench_ours "kivi-kv$kv" "$out/kivi-kv$kv.json" 4
  done
  ;;
fig6)
  bench_with_peers fig6 configs/papers/turbo-fig6-decode.json
  step "the preset's report"
  build-gpu/bin/attnlab report --config configs/papers/turbo-fig6-decode.json --out "$out/fig6" >"$out/fig6.log" 2>&1
  echo "exit $?"; cat "$out/fig6/views/speedup.csv" 2>/dev/null
  ;;
esac
