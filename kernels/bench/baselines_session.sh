#!/usr/bin/env bash
# GPU calls for issue 36's final comparison, kernels/bench/<gpu>-baselines-peers-<date>.json: the FP16 decode and
# prefill kernels' rows and every compressed-cache decode kernel's, with the peers on all their shapes from one
# peer_bench.py call. Run from the repository root on the GPU machine with .peers carried (stage.sh's sage/ and fa3/,
# and tools/peer_bench.py, tools/build.sh from ../shared/peers). Each step fits one call's 10 minutes; the machine keeps
# build-gpu/, /tmp/peers and the steps' work folders between calls made close together:
#   STEP=build       the peers' build in the background (FlashAttention-3 BF16 for the prefill rows), attnlab for
#                    sm_90a, flash2's and kivi's [gpu] tests (the decode's TMA and cp.async chains equal bit for bit;
#                    kivi v4's occupancy) and compute-sanitizer memcheck and racecheck on their [sanitize] cases
#   STEP=decode      attnlab bench: flash2 decode with both loads (kv_loads tma_producer, the default, and cp_async) at
#                    32/32, 32/8 and 40/10 heads (d 128) and 32/8 (d 64), B BATCHES (1, 4, 16) × N LENS (4k, 32k)
#   STEP=compressed  attnlab bench: turbo 4-bit, 2/4 mix, 2-bit, kivi 2- and 4-bit and fireq at MHA 32/32 and GQA 32/8,
#                    B 16, N 32k, d 128 (llm_like data, as the kernels' own configs); with PEERS=1 cuDNN and the
#                    copy on the same shapes in the same call (item 3's % of copy without the prefill step)
#   PEER_BUILD=0     STEP=build without the peers' background build (a call that times no FlashAttention-3 row)
#   STEP=prefill     attnlab bench: flash2 prefill (configs/bench-flash2-prefill.json's wgmma rows) at d 128 and 64; then, once the
#                    peers are built, peer_bench.py over every attnlab file of the three steps (baselines-peers.json:
#                    cuDNN, FlashAttention-2 and -3, the device-to-device copy, each row's ratios)
set -u
source kernels/bench/session_lib.sh
session_start "baselines-${STEP:-build}"
case "${STEP:-build}" in
build)
  if [ "${PEER_BUILD:-1}" = 1 ]; then
    step "peers: building in the background (/tmp/peers/*.log)"
    BACKGROUND=1 bash .peers/tools/build.sh .peers
  fi
  build_sm90a 12 || exit 1
  gpu_tests "test_flash2_kernel:gpu|test_kernel_table:gpu|test_kivi_decode_kernel:gpu"
  sanitize "[#test_flash2_kernel][sanitize]"
  sanitize "[#test_kivi_decode_kernel][sanitize]"
  ;;
decode)
  for shape in "32 32 128" "32 8 128" "40 10 128" "32 8 64"; do
    set -- $shape
    edit_config configs/bench-flash2-decode.json "
c['problem'].update(q_heads=$1, kv_heads=$2, head_dim=$3)
c['variants'] = [{'id': 'flash2'}, {'id': 'flash2', 'label': 'flash2_cp_async', 'params': {'kv_loads': 'cp_async'}}]" \
      >"$out/config-h$1-$2-d$3.json"
    bench_ours "h$1-$2-d$3" "$out/config-h$1-$2-d$3.json" 16 --vary "problem.batch=${BATCHES:-1,4,16}" \
      --vary "problem.kv_len=${LENS:-4096,32768}"
  done
  ;;
compressed)
  for kv_heads in 32 8; do
    edit_config configs/bench-turbo-decode.json "
c['problem']['kv_heads'] = $kv_heads
c['variants'] = [{'id': 'turbo', 'label': 'turbo_4bit', 'params': {'two_bit_heads': 0}},
                 {'id': 'turbo', 'label': 'turbo_mix', 'params': {'two_bit_heads': $kv_heads // 2}},
                 {'id': 'turbo', 'label': 'turbo_2bit', 'params': {'two_bit_heads': $kv_heads}},
                 {'id': 'kivi', 'label': 'kivi_2bit', 'params': {'bits': 2}},
                 {'id': 'kivi', 'label': 'kivi_4bit', 'params': {'bits': 4}},
                 {'id': 'fireq'}]" >"$out/config-compressed-kv$kv_heads.json"
    bench_ours "compressed-kv$kv_heads" "$out/config-compressed-kv$kv_heads.json" 16
  done
  # PEERS=1: cuDNN and the copy on these shapes now (item 3's % of copy from this call alone, without the prefill step)
  [ "${PEERS:-0}" = 1 ] && peers_on compressed
  ;;
prefill)
  for d in 128 64; do
    edit_config configs/bench-flash2-prefill.json "
c['problem']['head_dim'] = $d
c['variants'] = c['variants'][:2]  # the producer generation (the default) and its cp.async schedule" \
      >"$out/config-prefill-d$d.json"
    bench_ours "prefill-d$d" "$out/config-prefill-d$d.json" 16
  done
  for f in /tmp/baselines-decode/ours-*.json /tmp/baselines-compressed/ours-*.json; do
    [ -f "$f" ] && cp "$f" "$out/" && ours+=(--ours "$out/$(basename "$f")")
  done
  wait_peers 400
  peers_on baselines 120
  ;;
esac
