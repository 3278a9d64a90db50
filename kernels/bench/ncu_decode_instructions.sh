#!/usr/bin/env bash
# Warp instructions per KV tile of the decode kernels (turbo, kivi) — what the cost model's issue term
# counts (sim/schedule.cpp reads kernels/bench/h100-decode-instructions.csv through core's table) —
# measured by Nsight Compute's smsp__inst_executed.sum on the chains kernel at two context lengths with
# the same chains, so that the difference is the loop's alone: per tile = Δ instructions / (pairs · Δ tiles).
# One row per (variant, head dim, group, bits). Usage (on the GPU machine, after turbo_session.sh's build):
#   bash kernels/bench/ncu_decode_instructions.sh OUT.csv     (VARIANTS="kivi": that variant's rows only)
set -u
out=${1:-/tmp/decode-instructions.csv}
bin=build-gpu/bin/attnlab
echo "variant,head_dim,group,bits,kv_len,pairs,instructions" >"$out"
for d in 128 64; do
  groups="1 2 4 8"; [ "$d" = 64 ] && groups="1 4"
  for g in $groups; do
    for variant in ${VARIANTS:-turbo kivi}; do
      for bits in 4 2; do
        for n in 8192 16384; do
          python3 - "$variant" "$d" "$g" "$bits" "$n" <<'PY'
import json, sys
variant, d, g, bits, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
kv = 8
params = ({"two_bit_heads": 0 if bits == 4 else kv, "kv_splits": 32} if variant == "turbo" else {"bits": bits})
json.dump({"problem": {"batch": 2, "q_heads": kv * g, "kv_heads": kv, "q_len": 1, "kv_len": n, "head_dim": d,
                       "causal": False, "phase": "decode"},
           "data": {"generator": "llm_like", "seed": 1},
           "variants": [{"id": variant, "params": params}], "backends": ["kernel"]}, open("/tmp/ncu-ins.json", "w"))
PY
          ins=$(ncu --kernel-name regex:"turbo_chains_kernel|kivi_chains_kernel" --launch-skip 2 --launch-count 1 \
                  --metrics smsp__inst_executed.sum "$bin" bench --config /tmp/ncu-ins.json --out /tmp/ncu-ins-out.json 2>&1 |
                awk '/smsp__inst_executed.sum/ {gsub(",", "", $NF); print $NF}' | tail -1)
          echo "$variant,$d,$g,$bits,$n,16,${ins:-none}" | tee -a "$out"
        done
      done
    done
  done
done
