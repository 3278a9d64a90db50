#!/usr/bin/env bash
# What the hardware counts for every attnlab kernel, for the cost model to be held to (issue: the model's
# DRAM bytes within 5% of Nsight Compute's): one `attnlab bench` per (variant, shape) under Nsight Compute,
# the first LAUNCHES kernel launches of it (the variant's correctness call, which launches the same kernels
# as each timed call), each with its DRAM bytes read and written, duration, warp instructions and warp
# stall reasons (cycles per issued instruction, by reason). Two shapes per phase: one whose K/V fit the L2
# (the re-reads hit it), one far larger. Writes a CSV (one row per kernel launch) labelled with the GPU and
# the date. `instructions` instead: the turbo prefill's kernels at d 64 and 128 with each exponential (B 4, H 16,
# N 8192), for core/kernel_traits.h's kPrefillIssue; `decode-stalls`: the turbo and kivi decode kernels at the
# groups and head dims kDecodeIssue has no stall for (d 128 at G 2, 4, 8; d 64 at G 1 and 4; 4- and 2-bit;
# B 4, 32 query heads, N 32768), for its StallParts, and our FP16 decode at GQA (its DRAM bytes). Usage, on the GPU machine after a build into build-gpu
# (turbo_session.sh BENCH_ONLY=1 NO_BENCH=1):
# `fp8`: flash3_fp8's prefill kernel at the two prefill shapes. `decode-stalls-bench`: the turbo decode chains at the benchmark's own shape (B 16, H 32/32 and 32/8, d 128,
# N 32768), whose chains are 4× longer than at B 4 (their prologue's stalls a smaller share). `fireq`: the fireq
# decode chains at the same two shapes. `fireq-prefill`: flash3_fp8 and fireq's prefill (FP8 K/V with β_K per
# key, per tile, and per tile with the FP16 softmax; INT4 K/V) at B 4, H 16, N 8192, d 128, causal and not.
# `wgmma-prefill`: the warp-specialized wgmma prefill kernels (flash2, int_flash full and half INT8, flash3_fp8, fireq FP8,
# turbo SAS and exp2) at B 4, H 16, N 8192, d D (default 128), non-causal — for the model's measured rows of them.
#   bash kernels/bench/ncu_profile.sh OUT.csv [prefill|decode|all|instructions|decode-stalls|decode-stalls-bench|fp8|fireq|fireq-prefill|wgmma-prefill]
set -u
out=${1:?usage: ncu_profile.sh OUT.csv [prefill|decode|all|instructions|decode-stalls|decode-stalls-bench|fp8|fireq|fireq-prefill|wgmma-prefill]}
which=${2:-all}
bin=build-gpu/bin/attnlab
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
stalls="barrier long_scoreboard short_scoreboard wait math_pipe_throttle mio_throttle not_selected selected dispatch_stall branch_resolving membar no_instruction lg_throttle misc"
metrics=dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg
for s in $stalls; do metrics="$metrics,smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio"; done
echo "gpu,date,phase,label,variant,params,batch,q_heads,kv_heads,q_len,kv_len,head_dim,causal,launch,kernel,dram_read,dram_write,time_ns,instructions,issue_active,${stalls// /,}" >"$out"
run() {  # phase label variant params(json) batch q_heads kv_heads q_len kv_len d causal launches [kernel regex]
  python3 - "$@" <<'PY'
import json, sys
phase, label, variant, params, b, hq, hkv, nq, nkv, d, causal = sys.argv[1:12]
json.dump({"problem": {"batch": int(b), "q_heads": int(hq), "kv_heads": int(hkv), "q_len": int(nq), "kv_len": int(nkv),
                       "head_dim": int(d), "causal": causal == "true", "phase": phase},
           "data": {"generator": "llm_like", "seed": 1},
           "variants": [{"id": variant, "label": label, "params": json.loads(params)}], "backends": ["kernel"]},
          open("/tmp/ncu-profile.json", "w"))
PY
  ncu --csv --print-units base --kernel-name regex:"${13:-.}" --launch-count "${12}" --metrics "$metrics" \
      "$bin" bench --config /tmp/ncu-profile.json --out /tmp/ncu-profile-out.json 2>/dev/null |
    python3 -c '
import sys
sys.path.insert(0, "kernels/bench")
from ncu_csv import launches
args = sys.argv[1:]
stalls = args.pop().split()
prefix = [args[0], args[1]] + args[2:]
for i, name, m in launches(sys.stdin.read().splitlines()):
    short = name.split("(")[0].replace("void ", "").replace("attnlab::kernels::", "").replace("<unnamed>::", "")
    vals = [m.get("dram__bytes_read.sum", ""), m.get("dram__bytes_write.sum", ""), m.get("gpu__time_duration.sum", ""),
            m.get("smsp__inst_executed.sum", ""), m.get("smsp__issue_active.avg", "")]
    vals += [m.get(f"smsp__average_warps_issue_stalled_{s}_per_issue_active.ratio", "") for s in stalls]
    print(",".join(prefix + [str(i), "\"" + short + "\""] + vals))
' "$gpu" "$(date +%F)" "$1" "$2" "$3" "\"${4//\"/\"\"}\"" "$5" "$6" "$7" "$8" "$9" "${10}" "${11}" "$stalls" >>"$out"
  echo "$2 B$5 H$6/$7 N$8/$9 d${10} causal=${11}: $(($(wc -l <"$out") - 1)) rows so far"
}
if [ "$which" = fp8 ]; then  # the FP8 prefill kernel at the two prefill shapes (its inputs are prepared on the host)
  for shape in "1 8 8 2048 2048 128 false" "4 16 16 8192 8192 128 false"; do
    run prefill flash3_fp8 flash3_fp8 '{}' $shape 2 flash3_fp8
  done
  exit 0
fi
if [ "$which" = fireq ]; then  # the fireq decode chains at the benchmark's shape (B 16, N 32k; MHA and GQA 4:1)
  for kv in 32 8; do run decode fireq fireq '{}' 16 32 $kv 1 32768 128 false 2 fireq_chains; done
  exit 0
fi
if [ "$which" = fireq-prefill ]; then  # the FP8 wgmma prefill kernels side by side: where fireq's time goes
  for causal in false true; do
    run prefill flash3_fp8 flash3_fp8 '{}' 4 16 16 8192 8192 128 $causal 1 flash3
    run prefill fireq_fp8 fireq '{"prefill_kv": "fp8", "block_c": 128}' 4 16 16 8192 8192 128 $causal 1 fireq_prefill
    run prefill fireq_int4 fireq '{"prefill_kv": "int4", "block_c": 128}' 4 16 16 8192 8192 128 $causal 1 fireq_prefill
    run prefill fireq_fp8_k_tile fireq '{"prefill_kv": "fp8", "block_c": 128, "fp8_k_scale": "tile"}' 4 16 16 8192 8192 128 $causal 1 fireq_prefill
    run prefill fireq_fp8_k_tile_fp16 fireq '{"prefill_kv": "fp8", "block_c": 128, "fp8_k_scale": "tile", "softmax_precision": "fp16"}' 4 16 16 8192 8192 128 $causal 1 fireq_prefill
  done
  exit 0
fi
if [ "$which" = decode-stalls-bench ]; then  # turbo at the benchmark's shape (B 16, N 32k; MHA and GQA 4:1)
  for kv in 32 8; do
    run decode turbo_4bit turbo '{"two_bit_heads": 0}' 16 32 $kv 1 32768 128 false 2 turbo_chains
    run decode turbo_2bit turbo "{\"two_bit_heads\": $kv}" 16 32 $kv 1 32768 128 false 2 turbo_chains
  done
  exit 0
fi
if [ "$which" = decode-stalls ]; then
  for dg in "128 2" "128 4" "128 8" "64 1" "64 4"; do
    set -- $dg
    d=$1 kv=$((32 / $2))
    run decode turbo_4bit turbo '{"two_bit_heads": 0}' 4 32 $kv 1 32768 $d false 4
    run decode turbo_2bit turbo "{\"two_bit_heads\": $kv}" 4 32 $kv 1 32768 $d false 4
    [ "$d" = 64 ] && run decode kivi_2bit kivi '{"bits": 2}' 4 32 $kv 1 32768 $d false 4
    [ "$d" = 64 ] && run decode kivi_4bit kivi '{"bits": 4}' 4 32 $kv 1 32768 $d false 4
  done
  # our FP16 decode at GQA: does it read each KV head once (L2 shared by its query heads) or once per query head?
  for kv in 8 4; do
    run decode flash2 flash2 '{}' 4 32 $kv 1 32768 128 false 4
    run decode flash2 flash2 '{}' 1 8 $((kv / 4)) 1 8192 128 false 4
  done
  exit 0
fi
if [ "$which" = wgmma-prefill ]; then  # the warp-specialized wgmma prefill kernels (a TMA producer, ping-pong): their
  # warp instructions per consumer warp and tile, and stall by reason — the measured work and Z the cost model's rows for
  # them take (issue 35 item 4: Nsight Compute names them latency-bound). B 4, H 16, N 8192, non-causal; D (128) or 64.
  d=${D:-128}
  run prefill flash2 flash2 '{"kernel": "wgmma"}' 4 16 16 8192 8192 $d false 2 flash2_sm90
  run prefill int_flash int_flash '{"block_c": 128, "kernel": "wgmma"}' 4 16 16 8192 8192 $d false 1 int_flash_sm90
  run prefill int_half int_flash '{"block_c": 128, "kernel": "wgmma", "v_fp16": true}' 4 16 16 8192 8192 $d false 1 int_flash_sm90
  run prefill flash3_fp8 flash3_fp8 '{}' 4 16 16 8192 8192 $d false 2 flash3
  run prefill fireq_fp8 fireq '{"prefill_kv": "fp8", "block_c": 128}' 4 16 16 8192 8192 $d false 1 fireq_prefill
  run prefill turbo_sas turbo '{}' 4 16 16 8192 8192 $d false 1 turbo_prefill_kernel
  run prefill turbo_exp turbo '{"exact_exp": true}' 4 16 16 8192 8192 $d false 1 turbo_prefill_kernel
  exit 0
fi
if [ "$which" = instructions ]; then
  for d in 64 128; do
    for e in 'turbo_sas {}' 'turbo_sas16 {"sas_precision": "fp16"}' 'turbo_exp {"exact_exp": true}'; do
      run prefill "${e%% *}" turbo "${e#* }" 4 16 16 8192 8192 $d false 4
    done
  done
  exit 0
fi
if [ "$which" != decode ]; then
  for shape in "1 8 8 2048 2048 128 false" "4 16 16 8192 8192 128 false"; do
    run prefill flash2 flash2 '{}' $shape 2
    # its first launches quantize the inputs (several copies at the small shape): the attention's alone
    run prefill int_flash int_flash '{"block_c": 128}' $shape 1 int_flash
    run prefill turbo_sas turbo '{}' $shape 6
    run prefill turbo_exp turbo '{"exact_exp": true}' $shape 6
  done
fi
if [ "$which" != prefill ]; then
  for shape in "1 8 8 1 8192 128 false" "4 32 32 1 32768 128 false"; do
    run decode flash2 flash2 '{}' $shape 4
    run decode turbo_4bit turbo '{"two_bit_heads": 0}' $shape 4
    run decode turbo_mix turbo "{\"two_bit_heads\": $(( $(echo $shape | cut -d' ' -f3) / 2 ))}" $shape 4
    run decode turbo_2bit turbo "{\"two_bit_heads\": $(echo $shape | cut -d' ' -f3)}" $shape 4
    run decode kivi_2bit kivi '{"bits": 2}' $shape 4
    run decode kivi_4bit kivi '{"bits": 4}' $shape 4
  done
fi
