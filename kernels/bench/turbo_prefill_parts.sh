#!/usr/bin/env bash
# Where turbo prefill's time goes, on the GPU machine: builds (turbo_session.sh), runs the kernel backend on one
# shape of configs/bench-turbo-prefill.json (B 4, H 16, N 8192, d 128; SAS and exp2) and prints its
# prefill.parts probe (the whole prefill, without the cache write, the attention alone), then Nsight Compute on
# the three kernels of one N 4096 prefill (pre-pass, Q blocks, attention): time, instructions, issue rate,
# occupancy, stalls. Logs in $OUT.
set -u
BENCH_ONLY=1 NO_BENCH=1 bash kernels/bench/turbo_session.sh >/dev/null 2>&1
python3 - <<'PY'
import json
c = json.load(open("configs/bench-turbo-prefill.json"))
c.pop("sweep"); c["backends"] = ["kernel"]; c["variants"] = c["variants"][:2]
c["problem"]["q_len"] = c["problem"]["kv_len"] = 8192
json.dump(c, open("/tmp/parts.json", "w"))
c["problem"]["q_len"] = c["problem"]["kv_len"] = 4096; c["variants"] = c["variants"][:1]
json.dump(c, open("/tmp/ncu.json", "w"))
PY
build-gpu/bin/attnlab run --config /tmp/parts.json --json $OUT/parts-results.json > $OUT/parts.log 2>&1
python3 -c "
import json
d = json.load(open('$OUT/parts-results.json'))
for v in d['variants']:
    p = v['kernel']['probes']['prefill.parts']
    print(v['label'], v['kernel']['median_ms'], p)
"
ncu --kernel-name regex:"turbo_prefill_kernel|turbo_prefill_cache_kernel|turbo_q_blocks" --launch-skip 0 --launch-count 3 \
    --metrics smsp__inst_executed.sum,gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
    --section WarpStateStats --section SchedulerStats --section Occupancy \
    build-gpu/bin/attnlab bench --config /tmp/ncu.json --out /tmp/ncu-out.json > $OUT/ncu-prefill.txt 2>&1
grep -E "turbo_|gpu__time_duration|smsp__inst_executed|Issued Ipc|No Eligible|Warp Cycles Per Issued|Achieved Active Warps|Stall|dram__bytes" $OUT/ncu-prefill.txt | head -60
