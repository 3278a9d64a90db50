#!/usr/bin/env python3
"""The copy of a kernel's own bytes: what a device-to-device copy of exactly the bytes a measured kernel moves takes,
timed as attnlab times its kernels, beside the rate of a large copy (the "% of copy" every bar is stated in).

A decode over a small cache (TurboAttention Fig. 6's B 1–4, N 4k–32k: 2 to 40 MB) moves too few bytes for any launch
to reach the large copy's rate: the copy itself is then the ceiling a kernel can be held to. For each row of the
attnlab measurement files given (attnlab bench --out), the row's bytes (hbm_gbps × median_ms) are copied — half read,
half written, as the large copy counts them — from enough buffers in turn that they exceed twice the L2 (each copy
reads HBM, as kernels/common/timing.cpp rotates its inputs), with CUDA events around each copy, after a warm-up, the
median of 50. Prints a table and writes a JSON list: the large copy's rate, then one object per row:

  python3 kernels/bench/copy_floor.py --ours ours-fig6.json [--ours …] --out copy-floor.json
"""
import argparse
import json
import math
import sys

import torch

from sdpa_bench import timed  # CUDA events around each run, after a warm-up (this folder's)


def copy_ms(total_bytes, l2_bytes):
    """Median ms of copying total_bytes / 2 (read + write = total_bytes), rotating buffers past 2·L2."""
    half = max(16, int(total_bytes // 2) // 16 * 16)
    sets = max(2, math.ceil(2 * l2_bytes / (2 * half)))
    bufs = [(torch.randint(0, 255, (half,), dtype=torch.uint8, device="cuda"),
             torch.empty(half, dtype=torch.uint8, device="cuda")) for _ in range(sets)]
    return timed(lambda a, b: b.copy_(a), bufs, warmup=10, reps=50)[0]


def refuse(message):
    print(f"copy_floor: {message}", file=sys.stderr)
    sys.exit(2)


def rows_of(path):
    try:
        data = json.load(open(path))
    except (OSError, ValueError) as e:
        refuse(f"{path}: {e}")
    if not isinstance(data, dict) or not isinstance(data.get("measurements"), list):
        refuse(f"{path}: not an attnlab measurement file (no 'measurements' list)")
    for i, m in enumerate(data["measurements"]):
        if not all(k in m for k in ("hbm_gbps", "median_ms", "problem", "label")):
            refuse(f"{path}: measurements[{i}] lacks hbm_gbps, median_ms, problem or label")
        yield m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ours", action="append", required=True, help="an attnlab measurement file")
    ap.add_argument("--out", required=True, help="a JSON list: the large copy, then one object per measured row")
    args = ap.parse_args()
    rows = [m for path in args.ours for m in rows_of(path)]
    props = torch.cuda.get_device_properties(0)
    gpu, l2 = torch.cuda.get_device_name(), props.L2_cache_size
    big = copy_ms(2 * 2**30, l2)
    big_gbps = 2 * 2**30 / (big * 1e-3) / 1e9
    out = [dict(impl="copy", gpu=gpu, GBps=round(big_gbps, 1))]
    print(f"{gpu}: large copy {big_gbps:.0f} GB/s (read + write)")
    print(f"{'label':14} {'B':>3} {'Hq/Hkv':>7} {'N':>7} {'MB':>7} {'ms':>8} {'% copy':>7} {'copy ms':>8} "
          f"{'copy %':>7} {'ms / copy ms':>12}")
    floors = {}
    for m in rows:
        p = m["problem"]
        moved = m["hbm_gbps"] * 1e9 * m["median_ms"] * 1e-3
        key = round(moved)
        if key not in floors:
            floors[key] = copy_ms(moved, l2)
        same = floors[key]
        rec = dict(impl="copy_same_bytes", gpu=gpu, label=m["label"], batch=p["batch"], q_heads=p["q_heads"],
                   kv_heads=p["kv_heads"], len=p["kv_len"], head_dim=p["head_dim"], bytes=key,
                   kernel_ms=round(m["median_ms"], 5), kernel_pct_copy=round(100 * m["hbm_gbps"] / big_gbps, 1),
                   copy_ms=round(same, 5), copy_pct_copy=round(100 * moved / (same * 1e-3) / 1e9 / big_gbps, 1),
                   kernel_over_copy=round(m["median_ms"] / same, 2))
        out.append(rec)
        print(f"{m['label']:14} {p['batch']:3} {p['q_heads']:3}/{p['kv_heads']:<3} {p['kv_len']:7} {key / 1e6:7.2f} "
              f"{m['median_ms']:8.4f} {rec['kernel_pct_copy']:7.1f} {same:8.4f} {rec['copy_pct_copy']:7.1f} "
              f"{rec['kernel_over_copy']:12.2f}", flush=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
