# The steps every GPU session script takes (sourced, from the repository root on the GPU machine): a work folder
# packed into one archive in $OUT on exit (only 8 files come back from $OUT), attnlab built for sm_90a into
# build-gpu/ (kept between calls made close together), and compute-sanitizer over a set of [sanitize] cases.
#   source kernels/bench/session_lib.sh
#   session_start decode-session   # $out = /tmp/decode-session; packed as $OUT/decode-session-$STEP.tgz
#   build_sm90a 14 || exit 1        # configure.log, build.log in $out; prints the build time and the GPU
#   gpu_tests "test_flash2_kernel:gpu"
#   sanitize "[#test_flash2_kernel][sanitize]"
#   bench_ours d128 CONFIG 20; peers_on prefill   # attnlab bench, then the peers on the same shapes
#   one_launch_config CONFIG '{"id": "turbo"}' >one.json; ncu_attnlab turbo turbo_prefill_kernel one.json
#   ensure_built || exit 1          # build-gpu/ brought up to date (or built)
#   sass_samples NAME NCU-FILTERS… COMMAND…   # every SASS instruction's warp-state samples of one launch
#   wait_placement_of OBJECT LABEL [FRAGMENTS…]   # where ptxas put the wgmma waits (wait_placement.py)
#   locked_clocks_flash2 NAME ROWS [PARAMS]; locked_clocks_peers; locked_clocks_table   # Nsight Compute's locked clocks

# A step's title; a session_start folder is packed first, so a command killed by a time limit (no exit trap) still
# brings back every step before the one it was in. (Scripts that set $out themselves pack nothing here.)
step() {
  [ -n "${archive:-}" ] && pack_session
  echo; echo "== $*"
}

# $out: a fresh work folder /tmp/NAME, packed into $OUT/NAME-${STEP:-build}.tgz at each step and when the script exits.
session_start() {
  out=/tmp/$1
  archive="${OUT:-/tmp}/$1-${STEP:-build}.tgz"
  rm -rf "$out" && mkdir -p "$out"
  trap pack_session EXIT
}
pack_session() { tar czf "$archive.part" -C "$out" . && mv "$archive.part" "$archive"; }

# A diff applied to the tree before a build (an A/B's other version), its files recorded in build-gpu/patched-files.
# Why: each device call copies the working tree afresh with this checkout's file times, older than the objects a
# patched build left in build-gpu/, so ninja would keep the patched objects under the unpatched sources (2026-12-07:
# a call timed v19's binary as v21's). ensure_built touches every recorded file whose content is not the one it last
# built, so the next build compiles what the tree holds.
apply_patch() {
  step "apply $1"
  git apply "$1" 2>/dev/null || patch -p1 <"$1" || return 1
  mkdir -p build-gpu
  sed -n 's|^+++ b/||p' "$1" | while read -r f; do echo "- $f"; done >>build-gpu/patched-files
}
touch_patched_files() {
  [ -f build-gpu/patched-files ] || return 0
  local sum f
  while read -r sum f; do
    [ -f "$f" ] && [ "$(sha1sum <"$f" | cut -d' ' -f1)" != "$sum" ] && touch "$f"
  done <build-gpu/patched-files
  return 0
}
# After a build: each recorded file with the content just built.
record_patched_files() {
  [ -f build-gpu/patched-files ] || return 0
  local f
  cut -d' ' -f2- build-gpu/patched-files | sort -u | while read -r f; do
    [ -f "$f" ] && echo "$(sha1sum <"$f" | cut -d' ' -f1) $f"
  done >build-gpu/patched-files.new && mv build-gpu/patched-files.new build-gpu/patched-files
}

# attnlab and its tests for sm_90a with JOBS compile jobs (the peers' background build takes the other cores).
# attnlab built up to date: build-gpu/ rebuilt where it is (seconds when nothing changed), else configured and built
# (build_sm90a's BUILD_TARGETS).
ensure_built() {
  touch_patched_files
  if [ -f build-gpu/build.ninja ]; then
    cmake --build build-gpu -j "$(nproc)" --target attnlab >>"$out/build.log" 2>&1 || { tail -20 "$out/build.log"; return 1; }
  else
    build_sm90a 10 || return 1
  fi
  record_patched_files
}
build_sm90a() {
  step configure and build attnlab
  # -lineinfo: Nsight Compute's source pages map each SASS instruction to its line (no change to the code generated).
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNLAB_CUDA_ARCHITECTURES=90a -DCMAKE_CUDA_FLAGS=-lineinfo \
    >"$out/configure.log" 2>&1 ||
    { tail -30 "$out/configure.log"; return 1; }
  local start=$SECONDS
  # shellcheck disable=SC2086  # BUILD_TARGETS: a list (STEP=quick builds attnlab alone)
  cmake --build build-gpu -j "${1:-$(nproc)}" --target ${BUILD_TARGETS:-attnlab attnlab_tests} >"$out/build.log" 2>&1 ||
    { grep -E "error" -A5 "$out/build.log" | head -80; return 1; }
  echo "built in $((SECONDS - start)) s"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
}

# The [gpu] CTest tests whose names match REGEX (e.g. "test_flash2_kernel:gpu|test_kernel_table:gpu"), one at a time,
# into $out/gpu-tests.log; the exit status and the summary printed. Each test file is stopped after TEST_TIMEOUT
# seconds (default 240): a kernel that hangs fails its test instead of the call.
gpu_tests() {
  step "[gpu] tests matching $1 (gpu-tests.log)"
  (cd build-gpu && ctest -R "$1" --output-on-failure -j 1 --timeout "${TEST_TIMEOUT:-240}") >"$out/gpu-tests.log" 2>&1
  echo "ctest exit $?"; grep -E "tests passed|Passed|Failed|\*\*\*|FAILED|with expansion" -A2 "$out/gpu-tests.log" | tail -30
}

# attnlab bench on CONFIG (further arguments go to attnlab bench: --vary …) into $out/ours-NAME.json, the last LINES
# lines of its log printed; the file joins $ours, the attnlab rows peers_on hands to peer_bench.py.
ours=()
bench_ours() {
  local name=$1 config=$2 lines=$3
  shift 3
  step "attnlab bench $config $* (bench-$name.log)"
  build-gpu/bin/attnlab bench --config "$config" "$@" --out "$out/ours-$name.json" >"$out/bench-$name.log" 2>&1
  echo "exit $?"; grep -vE "^\s*$" "$out/bench-$name.log" | tail -"$lines"
  ours+=(--ours "$out/ours-$name.json")
}

# Wait (at most MAX seconds, default 300) for the peers' background build (build.sh BACKGROUND=1) to finish.
wait_peers() {
  step "waiting for the peers' build"
  local i
  for i in $(seq 1 $(( ${1:-300} / 5 ))); do
    grep -q "exit" /tmp/peers/fa3.log 2>/dev/null && grep -q "exit" /tmp/peers/sage.log 2>/dev/null && break
    sleep 5
  done
  tail -n 1 /tmp/peers/fa3.log /tmp/peers/sage.log; cp /tmp/peers/*.log "$out/" 2>/dev/null
}

# The peers on the shapes of every bench_ours file so far, in the same call (peer_bench.py --ours), into
# $out/peers-NAME.json; the last LINES lines printed (its table of every attnlab row against each peer).
peers_on() {
  local name=$1 lines=${2:-60}
  step "peers on the same shapes (peers-$name.log)"
  PYTHONUNBUFFERED=1 python3 .peers/tools/peer_bench.py "${ours[@]}" --out "$out/peers-$name.json" \
    >"$out/peers-$name.log" 2>&1
  echo "peer_bench exit $?"; grep -vE '^\{' "$out/peers-$name.log" | tail -"$lines"
}

# kivi decode (configs/bench-turbo-decode.json's kivi rows, 2 and 4 bits) on a small problem (B 2, H 8/2, N 3000)
# through the reference and the kernel: attnlab run's errors against FP64 side by side, the least check of a kivi
# change where there is no time for the [gpu] tests.
kivi_against_reference() {
  edit_config configs/bench-turbo-decode.json "c['variants'] = [v for v in c['variants'] if v['id'] == 'kivi']
c['backends'] = ['reference', 'kernel']
c['problem'].update(batch=2, q_heads=8, kv_heads=2, kv_len=3000)" >"$out/small-decode.json"
  timeout 120 build-gpu/bin/attnlab run --config "$out/small-decode.json" 2>&1 | tail -7
}

# One config and the peers on its shapes.
bench_with_peers() {
  bench_ours "$1" "$2" "${3:-24}"
  peers_on "$1" "${3:-24}"
}

# CONFIG (a file) with the Python statements STATEMENTS applied to its dict `c`, on stdout:
#   edit_config configs/bench-flash2-prefill.json "c['problem']['head_dim'] = 64" >d64.json
edit_config() {
  python3 - "$1" "$2" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
exec(sys.argv[2])
print(json.dumps(c))
PY
}

# A config for one kernel launch under Nsight Compute, on stdout: BASE (a config file) with only the variant VARIANT (a
# JSON object), the problem fields of UPDATE (a JSON object, optional) changed, the kernel backend alone, no sweep.
one_launch_config() {
  python3 - "$1" "$2" "${3:-"{}"}" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["variants"] = [json.loads(sys.argv[2])]
c["problem"].update(json.loads(sys.argv[3]))
c["backends"] = ["kernel"]
c.pop("sweep", None)
print(json.dumps(c))
PY
}

# Nsight Compute on one launch of KERNEL (a regex; SKIP launches before it) of COMMAND: speed of light, warp states, the
# scheduler, occupancy, the warp instructions, DRAM bytes, the L2 hit rate and each pipe's utilization (FMA, ALU, XU = the SFU and
# conversions, tensor), into $out/ncu-NAME.txt; the lines that give them printed.
ncu_launch() {
  local name=$1 kernel=$2 skip=$3
  shift 3
  local pipes=sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active
  pipes=$pipes,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active
  pipes=$pipes,lts__t_sector_hit_rate.pct
  timeout 240 ncu --kernel-name regex:"$kernel" --launch-skip "$skip" --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
    --metrics smsp__inst_executed.sum,dram__bytes_read.sum,dram__bytes_write.sum,$pipes "$@" >"$out/ncu-$name.txt" 2>&1
  echo "ncu $name exit $?"
  grep -E "Duration|DRAM Throughput|dram__bytes|lts__t_sector_hit|inst_executed|pipe_|Issued Warp|No Eligible|Active Warps|Achieved Occupancy|Warp Cycles Per Issued" \
    "$out/ncu-$name.txt" | head -17
}
# Nsight Compute's source page of one launch: every SASS instruction of the kernel with its executions and warp-state
# samples (stall reasons), into $out/sass-NAME.csv.gz; NAME, then ncu's launch filters and the command to profile
# (its first launch that passes them). The GPU build has -lineinfo, so each instruction names its source line too.
sass_samples() {
  local name=$1; shift
  rm -f "/tmp/sass-$name.ncu-rep"  # a failed profile must not export an earlier call's report
  timeout 150 ncu --launch-count 1 --section SourceCounters --section WarpStateStats -f -o "/tmp/sass-$name" "$@" \
    >"$out/sass-$name.log" 2>&1
  echo "$name: ncu exit $?"
  timeout 60 ncu -i "/tmp/sass-$name.ncu-rep" --page source --csv --print-source sass 2>>"$out/sass-$name.log" |
    gzip >"$out/sass-$name.csv.gz"
  echo "$name: $(zcat "$out/sass-$name.csv.gz" | wc -l) SASS lines"
}
# The same on one launch of attnlab's KERNEL while it runs CONFIG (one_launch_config's), SKIP (default 1) launches first.
ncu_attnlab() {
  ncu_launch "$1" "$2" "${4:-1}" build-gpu/bin/attnlab run --config "$3"
}

# Where ptxas put the warpgroup MMA waits (kernels/bench/wait_placement.py) in the kernels of OBJECT (an object file of
# build-gpu/) whose mangled names contain one of the FRAGMENTS (none: every kernel), each line prefixed with LABEL,
# into $out/wait-placement.txt; the object's SASS kept in $out/sass-LABEL-OBJECT.txt.gz.
wait_placement_of() {
  local object=$1 label=$2; shift 2
  local sass="$out/sass-$label-$(basename "$object" .cu.o).txt"
  cuobjdump -sass "$object" >"$sass" 2>>"$out/wait-placement.log" || { echo "cuobjdump failed: $object"; return 1; }
  python3 kernels/bench/wait_placement.py --label "$label" ${1:+--match "$@"} <"$sass" | tee -a "$out/wait-placement.txt"
  gzip -f "$sass"
}

# Nsight Compute's locked clocks on attnlab: 3 launches after 5 of flash2 (row_blocks ROWS; PARAMS: more of the
# variant's parameters as JSON members, e.g. '"kv_tile": "128"') at B 4, H 16, d 128, N 4k–16k (LENS), causal and not
# (CAUSALS), into $out/clk/flash2_NAME__N__causal.csv (kernels/bench/locked_clocks.py reads them).
locked_clocks_flash2() {
  local name=$1 rows=$2 params=${3:+, $3} n c causal
  local metrics=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second
  mkdir -p "$out/clk"
  for n in ${LENS:-4096 8192 16384}; do
    for c in ${CAUSALS:-0 1}; do
      causal=$([ $c = 1 ] && echo true || echo false)
      one_launch_config configs/bench-flash2-prefill.json '{"id": "flash2", "params": {"row_blocks": "'$rows'"'"$params"'}}' \
        '{"q_len": '$n', "kv_len": '$n', "causal": '$causal'}' >/tmp/clk-config.json
      timeout 120 ncu --kernel-name regex:flash2_sm90 --launch-skip 5 --launch-count 3 --csv --print-units base \
        --metrics $metrics build-gpu/bin/attnlab bench --config /tmp/clk-config.json >"$out/clk/flash2_$name"__${n}__$c.csv 2>&1
      echo "flash2 $name ($rows) N $n causal $c: ncu exit $?"
    done
  done
}
# The same for cuDNN and FlashAttention-3 BF16 (the peers built: wait_peers), 3 calls each in a profiled range.
locked_clocks_peers() {
  local n c impl metrics=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second
  mkdir -p "$out/clk"
  for n in ${LENS:-4096 8192 16384}; do
    for c in 0 1; do
      for impl in sdpa_cudnn fa3_bf16; do
        timeout 120 ncu --profile-from-start off --csv --print-units base --metrics $metrics \
          python3 kernels/bench/peer_launches.py --impl $impl --prefill 4,16,16,$n,128,$c --calls 3 \
          >"$out/clk/$impl"__${n}__$c.csv 2>&1
        echo "$impl N $n causal $c: ncu exit $?"
      done
    done
  done
}

# locked_clocks.py's table of every CSV in $out/clk (ours and the peers) into $out/locked-clocks.json.
locked_clocks_table() {  # PEERS_FROM: an earlier call's locked-clocks JSON for the peers' rows this call lacks
  python3 kernels/bench/locked_clocks.py "$out/clk" --calls 3 --out "$out/locked-clocks.json" ${PEERS_FROM:+--peers-from "$PEERS_FROM"} \
    --gpu "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
}

# compute-sanitizer memcheck and racecheck on the attnlab_tests cases TAGS names (Catch2's -# file tags), into
# $out/sanitize.log; each tool's exit status and summary printed.
sanitize() {
  step "compute-sanitizer memcheck and racecheck on $1 (sanitize.log)"
  local tool
  for tool in memcheck racecheck; do
    timeout "${SANITIZE_TIMEOUT:-240}" compute-sanitizer --tool $tool --error-exitcode 9 build-gpu/bin/attnlab_tests -# "$1" >>"$out/sanitize.log" 2>&1
    echo "$tool exit $?"
  done
  grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test cases" "$out/sanitize.log" | tail -6
}
