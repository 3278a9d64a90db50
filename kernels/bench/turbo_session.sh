#!/usr/bin/env bash
# One call on the GPU machine for the compressed-cache decode kernels (turbo, kivi): build for sm_90a, run
# their [gpu] tests and compute-sanitizer on the small shapes, time them with attnlab bench at the
# benchmark shapes (B 16, d 128, N 32k; MHA and GQA 4:1) and PyTorch SDPA's FP16 decode on the same shapes
# in the same session, and print the ratios. Logs land in $OUT (at most 8 files come back: they are
# packed). TESTS_ONLY=1 stops after the tests; BENCH_ONLY=1 skips them; NO_BENCH=1 skips the timings and
# SDPA (for a call that only profiles or checks the refusals). NCU=1 adds Nsight Compute's DRAM
# bytes and warp stalls of each decode kernel (NCU_COUNT launches each, 1 unless set: a mixed 2/4-bit
# turbo step is 2 launches, one per width); PIPES=1 the instruction pipes' rates (pipe_rates.cu) and what
# ex2.approx.f16x2 compiles to; SASS=1 the kernels'
# disassembly; OOM=1 the GPU-memory refusals (a problem larger than the GPU; a GPU mostly taken by another
# process); FIG6=1 the report of configs/papers/turbo-fig6-decode.json. Everything lands packed in
# $OUT/logs.tar.gz beside session.log and comparison.json. Each test and sanitizer run is killed after
# TEST_LIMIT_S seconds (300 unless set; exit 137), as is each bench, so a hanging kernel costs that much and no more.
set -u
out=${OUT:-/tmp/attnlab-out}
mkdir -p "$out"
log="$out/session.log"
source kernels/bench/session_lib.sh
step() { echo; echo "== $*" | tee -a "$log"; }  # this session's steps in session.log too
build_sm90a 2>&1 | tee -a "$log"; [ "${PIPESTATUS[0]}" = 0 ] || exit 1
nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader | tee -a "$log"
if [ -z "${BENCH_ONLY:-}" ]; then
  step "[gpu] tests of the decode kernels"
  # A kernel that hangs would otherwise take the whole call: each run has a limit (TEST_LIMIT_S, 300 unless set).
  timeout -s KILL "${TEST_LIMIT_S:-300}" build-gpu/bin/attnlab_tests "${TEST_SPEC:-[turbo],[kivi],[kernels]}" >"$out/gpu-tests.log" 2>&1
  echo "exit $?" | tee -a "$log"
  grep -E "FAILED|failed|passed|skipped" "$out/gpu-tests.log" | tail -5 | tee -a "$log"
  grep -B3 -A14 "FAILED" "$out/gpu-tests.log" | head -80
  step "compute-sanitizer memcheck + racecheck (small shapes)"
  for tool in memcheck racecheck; do
    timeout -s KILL "${TEST_LIMIT_S:-300}" compute-sanitizer --tool $tool --error-exitcode 9 build-gpu/bin/attnlab_tests "${SANITIZE_SPEC:-[sanitize]}" >"$out/$tool.log" 2>&1
    echo "$tool exit $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/$tool.log" | tail -1)" | tee -a "$log"
  done
  [ -n "${TESTS_ONLY:-}" ] && exit 0
fi
if [ -z "${NO_BENCH:-}" ]; then
for cfg in ${BENCH_CONFIGS:-configs/bench-turbo-decode.json configs/bench-turbo-decode-gqa.json}; do
  name=$(basename "$cfg" .json)
  step "attnlab bench $cfg"
  timeout -s KILL "${TEST_LIMIT_S:-300}" build-gpu/bin/attnlab bench --config "$cfg" --out "$out/$name.json" >"$out/$name.log" 2>&1
  echo "exit $?" | tee -a "$log"
  tail -12 "$out/$name.log"
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
fi

if [ -n "${OOM:-}" ]; then
  step "GPU memory refusals"
  cat >/tmp/oom-big.json <<'J'
{"problem": {"batch": 64, "q_heads": 32, "kv_heads": 32, "q_len": 1, "kv_len": 262144, "head_dim": 128, "phase": "decode"},
 "data": {"generator": "normal", "seed": 1}, "variants": [{"id": "flash2"}], "backends": ["kernel"]}
J
  # The host limit raised so that the host check passes: the GPU's check refuses before data is made.
  ATTNLAB_MAX_MEMORY_GB=2000 build-gpu/bin/attnlab run --config /tmp/oom-big.json --json /tmp/oom-big-results.json
  echo "exit $? (results file: $(ls /tmp/oom-big-results.json 2>&1))" | tee -a "$log"
  cat >/tmp/oom-held.json <<'J'
{"problem": {"batch": 8, "q_heads": 32, "kv_heads": 32, "q_len": 1, "kv_len": 131072, "head_dim": 128, "phase": "decode"},
 "data": {"generator": "normal", "seed": 1}, "variants": [{"id": "flash2"}], "backends": ["kernel"]}
J
  python3 -c "
import torch, time, sys
free, total = torch.cuda.mem_get_info()
x = torch.empty(int(free - 6 * 2**30), dtype=torch.uint8, device='cuda')
print(f'holding {x.numel() / 2**30:.1f} GiB of {total / 2**30:.1f}', flush=True)
open('/tmp/held', 'w').close()
time.sleep(60)
" & holder=$!
  for i in $(seq 60); do [ -e /tmp/held ] && break; sleep 1; done
  build-gpu/bin/attnlab bench --config /tmp/oom-held.json --out /tmp/oom-held-results.json
  echo "exit $? (results file: $(ls /tmp/oom-held-results.json 2>&1))" | tee -a "$log"
  kill $holder; wait $holder 2>/dev/null
fi
if [ -n "${NCU:-}" ]; then
  step "Nsight Compute: DRAM bytes and stalls of the decode kernels"
  for cfg in ${NCU_CONFIGS:-configs/bench-turbo-decode.json}; do
    # NCU_LABELS (space-separated variant labels) profiles only those.
    for label in ${NCU_LABELS:-$(python3 -c "import json,sys; print(' '.join(v.get('label', v['id']) for v in json.load(open('$cfg'))['variants']))")}; do
      python3 - "$cfg" "$label" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["variants"] = [v for v in c["variants"] if v.get("label", v["id"]) == sys.argv[2]]
for v in c["variants"]:
    v.get("params", {}).pop("decode_steps", None)
c["backends"] = ["kernel"]
json.dump(c, open("/tmp/ncu-one.json", "w"))
PY
      name=$(basename "$cfg" .json)-$label
      ncu --kernel-name regex:"chains_kernel|flash2_decode|flash2_kernel|split" --launch-skip 2 --launch-count "${NCU_COUNT:-1}" \
          --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum \
          --section WarpStateStats --section Occupancy --section SchedulerStats --section LaunchStats \
          build-gpu/bin/attnlab bench --config /tmp/ncu-one.json --out /tmp/ncu-one-out.json >"$out/ncu-$name.txt" 2>&1
      echo "$name: $(grep -E 'dram__bytes_(read|write).sum|gpu__time_duration.sum' "$out/ncu-$name.txt" | awk '{print $1, $(NF-1), $NF}' | tr '\n' ' ')" | tee -a "$log"
    done
  done
fi
if [ -n "${SASS:-}" ]; then
  step "disassembly of the decode kernels"
  for o in build-gpu/kernels/CMakeFiles/attnlab_kernels.dir/{turbo/turbo,kivi/kivi,fireq/fireq}_decode.cu.o; do
    cuobjdump -sass "$o" >"$out/$(basename "$o" .cu.o).sass" 2>&1
    echo "$(basename "$o"): $(wc -l <"$out/$(basename "$o" .cu.o).sass") lines" | tee -a "$log"
  done
fi
if [ -n "${PIPES:-}" ]; then
  step "pipe rates (kernels/bench/pipe_rates.cu): FFMA, ex2 in FP32 and in half2, HFMA2, HMNMX2, conversions"
  nvcc -O3 -arch=sm_90a kernels/bench/pipe_rates.cu -o /tmp/pipe_rates >>"$log" 2>&1 && /tmp/pipe_rates | tee -a "$log"
  # What ex2.approx.f16x2 became: one MUFU per half2, or two.
  cuobjdump -sass /tmp/pipe_rates | grep -oE "(MUFU|HMNMX2|HFMA2|F2FP|HADD2)[A-Z0-9_.]*" | sort | uniq -c | sort -rn | tee -a "$log"
fi
if [ -n "${FIG6:-}" ]; then
  step "TurboAttention Fig. 6 (decode) report, kernels and model"
  build-gpu/bin/attnlab report --config configs/papers/turbo-fig6-decode.json --out "$out/fig6" >"$out/fig6.log" 2>&1
  echo "exit $?" | tee -a "$log"
  grep -o 'Speedup over[^<]*' "$out/fig6/index.html" | head -1 | tee -a "$log"
  cp "$out/fig6/views/speedup.csv" "$out/fig6-speedup.csv" 2>/dev/null && cat "$out/fig6-speedup.csv" | tee -a "$log"
fi
step pack
# Only 8 files come back: everything but the log and the comparison goes into one archive (made outside
# $OUT, so tar does not read its own output).
(cd "$out" && tar czf /tmp/attnlab-logs.tar.gz --exclude=session.log --exclude=comparison.json . &&
  find . -mindepth 1 -maxdepth 1 ! -name session.log ! -name comparison.json -exec rm -rf {} + &&
  mv /tmp/attnlab-logs.tar.gz logs.tar.gz)
ls -la "$out"
