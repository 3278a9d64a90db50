#!/usr/bin/env python3
"""The peers' timings of ../shared/peers/peer_bench.py (its --out: a list of {impl, ms, phase, batch, ...} rows) as an
attnlab.measurements/1 file whose rows carry an `implementation`, the form a config's report.baselines reads
(docs/configs.md): attnlab then shows them as rows measured elsewhere and report.speedup_over may name one.

  python3 kernels/bench/peers_to_measurements.py PEERS.json OUT.json

Each peer row becomes one measurement of the variant whose function it computes (the table below); attnlab's own
rows ("attnlab:<label>"), the copy rate and the rows a peer refused are left out. The GPU is named by its spec id
(attnlab gpus) where the device is one attnlab has a spec for.
"""
import json
import sys

# The variant whose function each peer computes: FP16/BF16 attention is flash2's, FlashAttention-3's FP8 forward is
# flash3_fp8's, SageAttention2's INT8 Q·Kᵀ with FP8 P·V is int_flash's family (INT8 attention).
VARIANT_OF = {"sdpa_cudnn": "flash2", "sdpa_flash": "flash2", "fa3_bf16": "flash2", "fa3_fp8": "flash3_fp8",
              "sage2_kernel": "int_flash", "sage2_e2e_fp16": "int_flash"}
# Spec ids (sim/specs) by the runtime's device name.
SPEC_OF = (("H200", "h200"), ("H100", "h100-sxm5"), ("A100", "a100-sxm4-80gb"), ("L40S", "l40s"), ("4090", "rtx-4090"))


def spec_id(device):
    return next((spec for key, spec in SPEC_OF if key in device), "")


def main(src, dst):
    rows = json.load(open(src))
    if not isinstance(rows, list):
        sys.exit(f"{src}: not a peer_bench.py output (a list of rows)")
    device = next((r.get("gpu", "") for r in rows if r.get("gpu")), "")
    out = []
    for r in rows:
        impl = r.get("impl", "")
        if impl not in VARIANT_OF or "ms" not in r:
            continue
        decode = r["phase"] == "decode"
        problem = {"batch": r["batch"], "q_heads": r["q_heads"], "kv_heads": r["kv_heads"], "q_len": 1 if decode else r["len"],
                   "kv_len": r["len"], "head_dim": r["head_dim"], "causal": bool(r.get("causal") or False), "phase": r["phase"]}
        out.append({"variant": VARIANT_OF[impl], "implementation": impl, "problem": problem, "median_ms": r["ms"]})
    if not out:
        sys.exit(f"{src}: no peer rows")
    with open(dst, "w") as f:
        json.dump({"schema": "attnlab.measurements/1", "gpu": spec_id(device), "device": device, "measurements": out}, f,
                  indent=1)
        f.write("\n")
    print(f"{dst}: {len(out)} rows from {device or 'an unnamed device'}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
