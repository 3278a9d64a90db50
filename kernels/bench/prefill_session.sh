#!/usr/bin/env bash
# GPU calls for flash2's warp-specialized prefill (kernels/flash2/flash2_sm90.cu, issue 36 item 2) and the Fig. 6
# prefill preset over cuDNN, run from the repository root on the GPU machine with .peers carried (stage.sh's sage/ and
# fa3/, and tools/peer_bench.py, tools/build.sh copied from ../shared/peers: ../shared does not travel). Each step fits
# one call's 10 minutes; the machine keeps build-gpu/ and /tmp/peers between calls made close together:
#   STEP=build  start the peers' build in the background (FlashAttention-3 BF16 and FP8 at d 128, SageAttention2),
#               build attnlab for sm_90a, flash2's [gpu] tests, compute-sanitizer memcheck and racecheck on its
#               [sanitize] cases
#   STEP=bench  attnlab bench configs/bench-flash2-prefill.json at d 128 and d 64 (B 4, H 16, N 4k–16k, causal and
#               not), then — once the peers are built — SDPA (cuDNN, FlashAttention-2) and FlashAttention-3 BF16 on the
#               same shapes in the same call (peer_bench.py --ours), and Nsight Compute on one launch of each flash2
#               wgmma schedule at N 8k, d 128 (DRAM bytes, issue and stall reasons)
#   STEP=persistent  flash2's persistent CTAs (wgmma v4, v5) in one call: the peers' build in the background, attnlab
#               built, flash2's [gpu] tests and its sanitizer cases, attnlab bench configs/bench-flash2-prefill.json at
#               d 128 and 64 (the grid and every persistent order), Nsight Compute on one launch of the grid, head by head and dynamic at B 4, H 16, N 4k,
#               d 128, and of the grid and dynamic at N 8k causal (DRAM bytes, L2 hits, issue and stalls), then the peers
#   STEP=clocks flash2's grid, head-by-head and dynamic orders beside cuDNN and FlashAttention-3 BF16 under Nsight
#               Compute's locked clocks (gpu__time_duration of 3 launches each; B 4, H 16, d 128, N 4k–16k, causal and
#               not, KV128=1 adding the grid on 128-key tiles not causal; locked_clocks.py → locked-clocks.json): a
#               ratio the power limit's clock changes do not move;
#               then the executed instructions per opcode of ours (the grid) and FlashAttention-3's at N 4k (ncu-op-*.txt)
#               and their SASS with the warp-state samples of each instruction (sass-*.csv.gz; ours built with -lineinfo)
#   STEP=sass   the second half of STEP=clocks alone (the peers built): opcodes of ours and FA3 at N 4k, opcode_diff.py,
#               and every SASS instruction's warp-state samples of each (sass-*.csv.gz)
#   STEP=v6     flash2 wgmma v6 (mbarrier waits with a suspend hint — every kernel's — and advanced descriptors): attnlab
#               built, every [gpu] test file, flash2's sanitizer cases; then, as the next calls on the same machine,
#   STEP=v6-bench  attnlab bench at d 128 (the grid and the persistent orders) and the peers on the same shapes, and
#               STEP=clocks
#   STEP=pvwait flash2 as committed (its schedule constants printed): the peers' build in the
#               background, attnlab built, flash2's [gpu] tests and sanitizer cases, where ptxas put the waits in the SASS
#               (wait_placement.py), and flash2's grid under Nsight Compute's locked clocks; then, on the same machine,
#   STEP=flash2-ab  flash2 rebuilt with other choices of its schedule's constants (VARIANTS, default C = v6's
#               schedule, then A, the committed one), the waits' placement and locked clocks of each (TESTS=1: and
#               flash2's [gpu] tests; SANITIZE=1: its sanitizer cases too), the peers' locked clocks (PEERS=0: not),
#               and locked_clocks.py's table of them all
#   STEP=timeline  flash2's row blocks' timeline (kernels/bench/flash2_timeline.cu, cta_timeline.py): the steady tile,
#               the fill, drain, epilogue, the gap between CTAs and the boundary between row blocks, in SM cycles, on
#               the grid and the persistent order at N 4k and 16k (RUNS), flash2_sm90.cu built once more with it on
#   STEP=quick  the least that checks a kernel change on a fresh machine with little device time left: attnlab alone
#               built (no tests), flash2 prefill and kivi decode on small problems against the reference (attnlab run's
#               errors), attnlab bench of flash2 at d 128, N 4k and 8k, causal and not, and of the decode config at MHA
#   STEP=fig6   TurboAttention Fig. 6 prefill re-measured: attnlab bench on configs/papers/turbo-fig6-prefill.json, the
#               peers on its shapes, and the preset's report
#   STEP=sas    turbo's sas_share (issue 35 item 3): the turbo prefill [gpu] tests (the mixed path's among them), attnlab
#               bench on configs/bench-turbo-sas-share.json (shares 0 … 1 in eighths, the model beside each), and
#               Nsight Compute's pipe utilization (FMA, ALU, XU = the SFU, tensor) and issue at shares 0, 1/2 and 1
#   STEP=turbo  turbo's prefill on the warp-specialized pipeline (issue 35 item 2): the turbo [gpu] tests (the prefill's
#               three schedules' bits, the GPU's Eq. 11–12 ranking against the host's, the cache write, the decode after
#               the prefill) and memcheck and racecheck on the prefill's [sanitize] case
#   STEP=turbo-bench  attnlab bench on configs/bench-turbo-prefill-loads.json at d DIMS (default 128 and 64; producer and
#               cp.async, SAS and exp2, int_flash beside), the peers on the same shapes, and Nsight Compute's
#               instructions, pipes and stalls on one producer launch
#   STEP=ncu    Nsight Compute's instructions and stall reasons of every warp-specialized wgmma prefill kernel at B 4, H 16,
#               N 8k, d 128 (ncu_profile.sh wgmma-prefill → wgmma-prefill.csv): the measured rows issue 35 item 4's
#               model takes (D=64 for d 64)
#   STEP=int8   issue 35's final comparison: attnlab bench on configs/bench-int8-prefill-peers.json at d 128 and 64
#               (int_flash full INT8, turbo SAS FP32 and exp2), the peers on the same shapes (SageAttention2 among them:
#               waits for its build), and Nsight Compute on one launch each of int_flash's producer kernel, turbo's exp2
#               producer kernel and SageAttention2's kernel at B 4, H 16, N 8k, d 128 (instructions, issue, pipes)
#   Steps that time or profile attnlab build it first (build_sm90a) or bring build-gpu/ up to date (ensure_built); the
#   others (bench, fig6, sas, int8, ncu, turbo, turbo-bench) expect an earlier step's build on the same machine.
set -u
source kernels/bench/session_lib.sh
session_start prefill-session
with_dim() { edit_config "$1" "c['problem']['head_dim'] = $2"; }  # a bench config at head dim $2 from config $1
# Nsight Compute on ours (the grid) and FlashAttention-3 BF16 at B 4, H 16, N 4k, d 128: the executed instructions per
# opcode (ncu-op-*.txt, compared by opcode_diff.py) and every SASS instruction's warp-state samples (sass-*.csv.gz).
opcodes_and_sass() {
  step "Nsight Compute: executed instructions per opcode, ours (grid) and FlashAttention-3, N 4k, d 128 (ncu-op-*.txt)"
  opcodes="--metrics sass__inst_executed_per_opcode,smsp__inst_executed.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum --print-metric-instances details"
  one_launch_config configs/bench-flash2-prefill.json '{"id": "flash2"}' >/tmp/op-config.json
  timeout 120 ncu --kernel-name regex:flash2_sm90 --launch-skip 5 --launch-count 1 $opcodes \
    build-gpu/bin/attnlab bench --config /tmp/op-config.json >"$out/ncu-op-ours.txt" 2>&1
  echo "ours: ncu exit $?"
  timeout 120 ncu --profile-from-start off --kernel-name-base demangled --kernel-name regex:FlashAttnFwd --launch-count 1 \
    $opcodes python3 kernels/bench/peer_launches.py --impl fa3_bf16 --prefill 4,16,16,4096,128,0 --calls 1 >"$out/ncu-op-fa3.txt" 2>&1
  echo "fa3: ncu exit $?"
  python3 kernels/bench/opcode_diff.py "$out/ncu-op-fa3.txt" "$out/ncu-op-ours.txt" | tee "$out/opcode-diff.txt" | head -30
  step "Nsight Compute: warp-state samples per SASS instruction, ours (grid) and FlashAttention-3 (sass-*.csv.gz)"
  sass_samples ours --kernel-name regex:flash2_sm90 --launch-skip 5 build-gpu/bin/attnlab bench --config /tmp/op-config.json
  sass_samples fa3 --profile-from-start off --kernel-name-base demangled --kernel-name regex:FlashAttnFwd python3 kernels/bench/peer_launches.py --impl fa3_bf16 --prefill 4,16,16,4096,128,0 --calls 1
}
# The P·V waits of flash2's ping-pong grid kernels (d 128 with 176 and 128 keys, d 64), labelled LABEL.
flash2_waits() {
  wait_placement_of build-gpu/kernels/CMakeFiles/attnlab_kernels.dir/flash2/flash2_sm90.cu.o "$1" \
    ILi128ELb1ELb1ELi176ELb0ELb0E ILi128ELb1ELb1ELi128ELb0ELb0E ILi64ELb1ELb1ELi128ELb0ELb0E
}
case "${STEP:-build}" in
build)
  step "peers: building in the background (/tmp/peers/*.log)"
  BACKGROUND=1 bash .peers/tools/build.sh .peers
  build_sm90a 10 || exit 1
  gpu_tests "test_flash2_kernel:gpu|test_int_flash_kernel:gpu|test_kernel_table:gpu"
  sanitize "[#test_flash2_kernel][sanitize]"
  ;;
bench)
  for d in 128 64; do
    with_dim configs/bench-flash2-prefill.json $d >"$out/config-d$d.json"
    bench_ours d$d "$out/config-d$d.json" 22
  done
  wait_peers
  peers_on flash2 70
  if [ -n "${NCU:-}" ]; then
    step "Nsight Compute: one launch of each wgmma schedule, B 4, H 16, N 8k, d 128 (ncu-*.txt)"
    for loads in tma_producer cp_async; do
      one_launch_config configs/bench-flash2-prefill.json \
        '{"id": "flash2", "params": {"kernel": "wgmma", "kv_loads": "'$loads'"}}' '{"q_len": 8192, "kv_len": 8192}' \
        >"$out/ncu-flash2-$loads.json"
      ncu_attnlab "flash2-$loads" flash2_sm90 "$out/ncu-flash2-$loads.json"
    done
  fi
  ;;
persistent)
  step "peers: building in the background (/tmp/peers/*.log)"
  BACKGROUND=1 bash .peers/tools/build.sh .peers
  build_sm90a 10 || exit 1
  gpu_tests "test_flash2_kernel:gpu"
  sanitize "[#test_flash2_kernel][sanitize]"
  with_dim configs/bench-flash2-prefill.json 128 >"$out/config-d128.json"
  bench_ours d128 "$out/config-d128.json" 32
  step "Nsight Compute: one launch of the grid and the persistent orders, B 4, H 16, d 128, N 4k and 8k causal (ncu-*.txt)"
  for rows in grid persistent_head_major persistent_dynamic; do
    one_launch_config configs/bench-flash2-prefill.json '{"id": "flash2", "params": {"row_blocks": "'$rows'"}}' \
      >"$out/ncu-flash2-$rows.json"
    ncu_attnlab "flash2-$rows" flash2_sm90 "$out/ncu-flash2-$rows.json"
  done
  for rows in grid persistent_dynamic; do
    one_launch_config configs/bench-flash2-prefill.json '{"id": "flash2", "params": {"row_blocks": "'$rows'"}}' \
      '{"q_len": 8192, "kv_len": 8192, "causal": true}' >"$out/ncu-flash2-$rows-causal.json"
    ncu_attnlab "flash2-$rows-causal" flash2_sm90 "$out/ncu-flash2-$rows-causal.json"
  done
  with_dim configs/bench-flash2-prefill.json 64 >"$out/config-d64.json"
  bench_ours d64 "$out/config-d64.json" 32
  wait_peers
  peers_on flash2 80
  ;;
clocks)
  step "peers: building in the background (/tmp/peers/*.log)"
  BACKGROUND=1 bash .peers/tools/build.sh .peers
  build_sm90a 10 || exit 1
  step "Nsight Compute's locked clocks: ours, 3 launches after 5 (clk/*.csv)"
  for rows in grid persistent_head_major persistent_dynamic; do locked_clocks_flash2 $rows $rows; done
  # KV128=1: the grid with 128-key tiles where the 176-key one runs (not causal; at N 4k its last tile holds 48 keys)
  [ "${KV128:-0}" = 1 ] && CAUSALS=0 locked_clocks_flash2 grid_kv128 grid '"kv_tile": "128"'
  wait_peers
  step "Nsight Compute's locked clocks: cuDNN and FlashAttention-3 BF16, 3 calls in a profiled range (clk/*.csv)"
  locked_clocks_peers
  locked_clocks_table
  opcodes_and_sass
  ;;
sass)
  BACKGROUND=1 bash .peers/tools/build.sh .peers  # at once where an earlier step built them
  ensure_built || exit 1
  wait_peers
  opcodes_and_sass
  ;;
v6)
  step "peers: building in the background (/tmp/peers/*.log)"
  BACKGROUND=1 bash .peers/tools/build.sh .peers
  build_sm90a 10 || exit 1
  gpu_tests ":gpu"
  sanitize "[#test_flash2_kernel][sanitize]"
  ;;
v6-bench)
  BACKGROUND=1 bash .peers/tools/build.sh .peers  # at once where STEP=v6 built them
  edit_config configs/bench-flash2-prefill.json \
    "c['variants'] = [v for v in c['variants'] if v.get('label', 'flash2') in ('flash2', 'flash2_persistent_heads', 'flash2_persistent_dynamic')]" \
    >"$out/config-v6.json"
  bench_ours d128 "$out/config-v6.json" 24
  wait_peers
  peers_on flash2 40
  ;;
pvwait)
  step "peers: building in the background (/tmp/peers/*.log)"
  BACKGROUND=1 bash .peers/tools/build.sh .peers
  build_sm90a 10 || exit 1
  gpu_tests "test_flash2_kernel:gpu|test_kernel_table:gpu"
  sanitize "[#test_flash2_kernel][sanitize]"
  step "where ptxas put the P·V waits (wait-placement.txt), as built: $(grep -o 'kFlash2[A-Za-z]* = [A-Za-z]*::[a-z_]*' kernels/flash2/flash2_sm90.cu | tr '\n' ' ')"
  flash2_waits built
  step "the P·V waits of the other wgmma prefill kernels, each kernel (wait-placement.txt)"
  for kernel in int8/int_flash_sm90 turbo/turbo_prefill_sm90 fp8/flash3_fp8_sm90 fireq/fireq_prefill_sm90; do
    wait_placement_of build-gpu/kernels/CMakeFiles/attnlab_kernels.dir/$kernel.cu.o built | grep -c "span" |
      xargs echo "$kernel: spans"
  done
  step "Nsight Compute's locked clocks: flash2 (grid) as built (clk/*.csv)"
  locked_clocks_flash2 built grid
  ;;
flash2-ab)
  # flash2 rebuilt with other choices of its schedule's constants (kernels/flash2/flash2_sm90.cu's kFlash2PvWait,
  # kFlash2RescaleO, kFlash2RowScale, kFlash2GridQ, kFlash2GridPrefetch, kFlash2GridStore; edited in this copy):
  # VARIANTS, ';'-separated "LABEL NAME=VALUE ..." (NAME the constant's name after kFlash2, VALUE one of its enum's;
  # default C = v6's schedule: PvWait=after_softmax RescaleO=on_landing RowScale=divide GridQ=consumers
  # GridPrefetch=none GridStore=rows), then A = the file as committed, last, so that the next steps run it; the file is
  # restored however the step ends. Each variant: its waits' placement and its locked clocks at N 4k and 16k (LENS);
  # with TESTS=1 also flash2's [gpu] tests (gpu-tests-LABEL.log; ≈ 30 s a variant), and with SANITIZE=1 its sanitizer
  # cases (sanitize.log; ≈ 40 s). PEERS=0 leaves out the peers' build and locked clocks (an earlier call's stand: locked
  # cycles reproduce across H100s, kernels/PERF.md); PEERS_FROM=FILE (a committed locked-clocks JSON of the same GPU)
  # then gives the table its peers' rows.
  [ "${PEERS:-1}" = 1 ] && BACKGROUND=1 bash .peers/tools/build.sh .peers  # at once where STEP=pvwait built them
  ensure_built || exit 1
  cp kernels/flash2/flash2_sm90.cu /tmp/flash2_sm90.cu.committed
  trap 'cp /tmp/flash2_sm90.cu.committed kernels/flash2/flash2_sm90.cu; pack_session' EXIT
  step "as committed: $(grep -o 'kFlash2[A-Za-z]* = [A-Za-z]*::[a-z_]*' kernels/flash2/flash2_sm90.cu | tr '\n' ' ')"
  export LENS=${LENS:-4096 16384}  # a variant's 4 locked runs ≈ 40 s, its rebuild ≈ 40 s, the peers' 8 ≈ 80 s
  v6="C PvWait=after_softmax RescaleO=on_landing RowScale=divide GridQ=consumers GridPrefetch=none GridStore=rows"
  IFS=';' read -ra variants <<<"${VARIANTS:-$v6}"
  targets=attnlab; [ "${TESTS:-0}" = 1 ] && targets="attnlab attnlab_tests"
  for v in "${variants[@]}" "A"; do
    set -- $v
    [ $# -eq 0 ] && continue  # an empty element ("a;;b", a trailing ';')
    label=$1; shift
    cp /tmp/flash2_sm90.cu.committed kernels/flash2/flash2_sm90.cu
    for choice in "$@"; do  # kFlash2NAME = TYPE::old; → TYPE::VALUE
      sed -i -E "s/(kFlash2${choice%%=*} = [A-Za-z]+::)[a-z_]+;/\1${choice#*=};/" kernels/flash2/flash2_sm90.cu
      grep -qE "kFlash2${choice%%=*} = [A-Za-z]+::${choice#*=};" kernels/flash2/flash2_sm90.cu || {
        echo "prefill_session.sh: variant $label: no constant kFlash2${choice%%=*} to set to ${choice#*=}" >&2
        cp /tmp/flash2_sm90.cu.committed kernels/flash2/flash2_sm90.cu
        exit 2
      }
    done
    step "flash2 variant $label: $(grep -o 'kFlash2[A-Za-z]* = [A-Za-z]*::[a-z_]*' kernels/flash2/flash2_sm90.cu | tr '\n' ' ')"
    # shellcheck disable=SC2086  # targets: a list
    cmake --build build-gpu -j "$(nproc)" --target $targets >>"$out/build.log" 2>&1 ||
      { tail -20 "$out/build.log"; cp /tmp/flash2_sm90.cu.committed kernels/flash2/flash2_sm90.cu; exit 1; }
    flash2_waits "$label"
    if [ "${TESTS:-0}" = 1 ]; then
      (cd build-gpu && ctest -R "test_flash2_kernel:gpu" --output-on-failure --timeout 240) >"$out/gpu-tests-$label.log" 2>&1
      echo "variant $label: flash2 [gpu] tests exit $?"
      [ "${SANITIZE:-0}" = 1 ] && sanitize "[#test_flash2_kernel][sanitize]"  # memcheck, racecheck: sanitize.log
    fi
    locked_clocks_flash2 "$label" grid
  done
  cmp -s /tmp/flash2_sm90.cu.committed kernels/flash2/flash2_sm90.cu && echo "flash2_sm90.cu as committed (A)" ||
    { echo "flash2_sm90.cu differs from the committed file: restored"; cp /tmp/flash2_sm90.cu.committed kernels/flash2/flash2_sm90.cu; }
  if [ "${PEERS:-1}" = 1 ]; then
    wait_peers
    step "Nsight Compute's locked clocks: cuDNN and FlashAttention-3 BF16 (clk/*.csv)"
    locked_clocks_peers
  fi
  locked_clocks_table
  ;;
quick)
  BUILD_TARGETS=attnlab build_sm90a || exit 1  # attnlab alone, with build_sm90a's flags (later steps reuse the tree)
  step "small problems against the reference: flash2 prefill (B 1, H 4/2, N 1000, causal), kivi decode (B 2, H 8/2, N 3000)"
  edit_config configs/bench-flash2-prefill.json "c['variants'] = [{'id': 'flash2'}]; c.pop('sweep'); c['backends'] = ['reference', 'kernel']
c['problem'].update(batch=1, q_heads=4, kv_heads=2, q_len=1000, kv_len=1000, causal=True)" >"$out/small-prefill.json"
  timeout 120 build-gpu/bin/attnlab run --config "$out/small-prefill.json" 2>&1 | tail -6
  kivi_against_reference
  edit_config configs/bench-flash2-prefill.json "c['variants'] = [{'id': 'flash2'}]
c['sweep'][0]['values'] = [4096, 8192]" >"$out/quick-prefill.json"
  bench_ours quick-prefill "$out/quick-prefill.json" 8
  bench_ours quick-decode configs/bench-turbo-decode.json 10
  ;;
fig6)
  bench_with_peers fig6 configs/papers/turbo-fig6-prefill.json
  ;;
sas)
  gpu_tests "test_turbo_prefill_kernel:gpu"
  bench_ours sas configs/bench-turbo-sas-share.json 14
  step "Nsight Compute: the attention kernel at shares 0, 1/2, 1 (B 1, H 16, N 8k, causal; ncu-sas-*.txt)"
  for share in 0 0.5 1; do
    one_launch_config configs/bench-turbo-sas-share.json '{"id": "turbo", "params": {"sas_share": '$share'}}' \
      '{"batch": 1}' >"$out/ncu-sas-$share.json"
    ncu_attnlab "sas-$share" turbo_prefill_kernel "$out/ncu-sas-$share.json"
  done
  ;;
int8)
  for d in 128 64; do
    with_dim configs/bench-int8-prefill-peers.json $d >"$out/config-int8-d$d.json"
    bench_ours int8-d$d "$out/config-int8-d$d.json" 26
  done
  wait_peers 400
  peers_on int8 80
  step "Nsight Compute: one launch each, B 4, H 16, N 8k, d 128, non-causal (ncu-*.txt)"
  one_launch_config configs/bench-int8-prefill-peers.json '{"id": "int_flash", "params": {"block_c": 128}}' \
    '{"q_len": 8192, "kv_len": 8192}' >"$out/ncu-int-flash.json"
  ncu_attnlab int-flash int_flash_sm90 "$out/ncu-int-flash.json"
  one_launch_config configs/bench-int8-prefill-peers.json '{"id": "turbo", "params": {"exact_exp": true}}' \
    '{"q_len": 8192, "kv_len": 8192}' >"$out/ncu-turbo-exp2.json"
  ncu_attnlab turbo-exp2 turbo_prefill_kernel "$out/ncu-turbo-exp2.json"
  ncu_launch sage2 qk_int8_sv_f8 5 python3 .peers/tools/peer_bench.py --prefill 4,16,16,8192,128,0 --out /tmp/ncu-peers.json
  ;;
ncu)
  step "Nsight Compute: the wgmma prefill kernels' instructions and stalls (wgmma-prefill.csv)"
  timeout 560 bash kernels/bench/ncu_profile.sh "$out/wgmma-prefill.csv" wgmma-prefill
  echo "exit $?"
  python3 - "$out/wgmma-prefill.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["label"], r["kernel"][:40], "ms", round(float(r["time_ns"] or 0) / 1e6, 3), "warp instructions", r["instructions"],
          "issue active", r["issue_active"], "wait", r["wait"], "selected", r["selected"], "not_selected", r["not_selected"])
PY
  step "Nsight Compute: SageAttention2's sm90 kernel on the same shape (ncu-sage2.txt; the peers must be built)"
  # Its warp instructions per score and pipes beside int_flash's: the per-thread scale granularity that lets it fold the
  # dequantization into one FFMA per score (kernels/PERF.md, "int_flash against SageAttention2's kernel").
  ncu_launch sage2 qk_int8_sv_f8 5 python3 .peers/tools/peer_bench.py --prefill 4,16,16,8192,${D:-128},0 --out /tmp/ncu-peers.json
  ;;
turbo)
  gpu_tests "test_turbo_prefill_kernel:gpu|test_turbo_head_bits:gpu|test_turbo_cache_write:gpu|test_turbo_decode_kernel:gpu"
  sanitize "[#test_turbo_prefill_kernel][sanitize]"
  ;;
turbo-bench)
  for d in ${DIMS:-128 64}; do
    with_dim configs/bench-turbo-prefill-loads.json $d >"$out/config-turbo-d$d.json"
    bench_ours turbo-d$d "$out/config-turbo-d$d.json" 34
  done
  wait_peers
  peers_on turbo
  step "Nsight Compute: one producer launch, SAS FP32, B 4, H 16, N 8k, d 128, non-causal (ncu-turbo.txt)"
  one_launch_config configs/bench-turbo-prefill-loads.json '{"id": "turbo"}' '{"q_len": 8192, "kv_len": 8192}' \
    >"$out/ncu-turbo.json"
  ncu_attnlab turbo turbo_prefill_kernel "$out/ncu-turbo.json"
  ;;
timeline)
  # flash2's row blocks' timeline (kernels/bench/flash2_timeline.cu; cta_timeline.py reads it): where a CTA's cycles
  # go beyond its tiles' steady cost. B 4, H 16, d 128 (RUNS: "N ORDER KV_TILE [causal]" each, ';'-separated).
  BUILD_TARGETS=attnlab ensure_built || exit 1  # the libraries (attnlab alone where build-gpu/ is new)
  step "flash2_timeline built (flash2_sm90.cu with its timeline on)"
  cmake --build build-gpu -j "$(nproc)" --target flash2_timeline >>"$out/build.log" 2>&1 ||
    { tail -20 "$out/build.log"; exit 1; }
  default_runs="4096 grid 176;4096 heads 176;4096 grid 128;4096 grid 128 causal;16384 grid 176;16384 heads 176"
  IFS=';' read -ra runs <<<"${RUNS:-$default_runs}"
  for r in "${runs[@]}"; do
    set -- $r
    [ $# -ge 3 ] || continue
    name="timeline-$1-$2-kv$3${4:+-$4}.csv"
    build-gpu/bin/flash2_timeline --batch 4 --heads 16 --len "$1" --dim 128 --order "$2" --kv-tile "$3" \
      ${4:+--causal} --out "$out/$name"
    echo "$name: exit $?"
  done
  step "cta_timeline.py (timeline.txt)"
  python3 kernels/bench/cta_timeline.py "$out"/timeline-*.csv | tee "$out/timeline.txt"
  gzip "$out"/timeline-*.csv
  ;;
*)
  echo "prefill_session.sh: unknown STEP '${STEP:-}' (the header lists the steps)" >&2
  exit 2
  ;;
esac
