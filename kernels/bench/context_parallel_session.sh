#!/usr/bin/env bash
# GPU calls for context parallelism's ring (kernels/context_parallel/, issue 39), run from the repository root on the
# GPU machine. NCCL comes from PyTorch's wheel there (nvidia-nccl-cu13: its include/ and lib/), which CMake is told
# through ATTNLAB_NCCL_ROOT. NVLink multicast stays off (the machines' NCCL_NVLS_ENABLE=0 is inherited).
#   STEP=build  attnlab for sm_90a with NCCL (PEERS=1: the peers' build started first, in the background, for a
#               later baselines_session.sh call); the ring's [gpu] tests (every rank on one device: shards, blocks,
#               transfers and merges against each one-GPU kernel — every variant's ring; on a
#               host of several GPUs also the NCCL [multi] case), compute-sanitizer memcheck and racecheck on the
#               one-device ring. GPU_TESTS (a CTest regex, e.g. ":gpu" for every [gpu] test) widens the tests run.
#   STEP=bench  on a host of GPUS GPUs (default 2 and 4 where present): attnlab bench on
#               configs/bench-context-parallel.json (every variant's prefill ring, N 64k and 128k causal) and on
#               configs/bench-context-parallel-decode.json (the sharded caches' decode: batch 1 at N 256k and 1M, batch
#               16 at 32k and 128k), 1 … GPUS GPUs, the cost model beside each run, each ring's traced timeline in
#               its measurement (context_parallel.timeline, the model's beside it), and `attnlab calibrate --dry-run`
#               fitting the link term to the rings
set -u
source kernels/bench/session_lib.sh
session_start context-parallel
nccl_root=$(python3 -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))" 2>/dev/null)
case "${STEP:-build}" in
build)
  [ -n "${PEERS:-}" ] && BACKGROUND=1 bash .peers/tools/build.sh .peers
  step "configure with NCCL from $nccl_root"
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNLAB_CUDA_ARCHITECTURES=90a \
    -DATTNLAB_NCCL_ROOT="$nccl_root" >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
  grep -i nccl "$out/configure.log"
  build_sm90a "$(nproc)" || exit 1
  nvidia-smi --query-gpu=index,name --format=csv,noheader
  gpu_tests "${GPU_TESTS:-test_ring_attention:gpu|test_flash2_kernel:gpu}"
  sanitize "[#test_ring_attention][sanitize]"
  ;;
bench)
  gpus=$(nvidia-smi -L | wc -l)
  edit_config configs/bench-context-parallel.json "c['sweep'][1]['values'] = list(range(1, $gpus + 1))" >"$out/config.json"
  bench_ours "gpus$gpus" "$out/config.json" 30
  edit_config configs/bench-context-parallel-decode.json "c['sweep'][1]['values'] = list(range(1, $gpus + 1))" \
    >"$out/decode-b1.json"
  bench_ours "decode-b1-gpus$gpus" "$out/decode-b1.json" 20
  edit_config configs/bench-context-parallel-decode.json "c['problem']['batch'] = 16; c['sweep'][0]['values'] = [32768, 131072]; c['sweep'][1]['values'] = list(range(1, $gpus + 1))" \
    >"$out/decode-b16.json"
  bench_ours "decode-b16-gpus$gpus" "$out/decode-b16.json" 20
  # The link term fitted to the rings (their one-GPU rows fit the units): per-row model error before and after, and the
  # links' efficiency and latency per transfer, or "not identifiable" where every transfer hid.
  for name in "gpus$gpus" "decode-b1-gpus$gpus"; do
    step "attnlab calibrate --dry-run on ours-$name.json"
    build-gpu/bin/attnlab calibrate --measurements "$out/ours-$name.json" --dry-run >"$out/calibrate-$name.log" 2>&1
    echo "exit $?"; tail -8 "$out/calibrate-$name.log"
  done
  ;;
esac
