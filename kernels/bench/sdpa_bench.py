#!/usr/bin/env python3
"""PyTorch SDPA on the GPU machine: the baseline attnlab's kernels are compared with, and the kernel
times the cost model is calibrated against.

For each shape it times SDPA's flash backend (FlashAttention-2) and its cuDNN backend in FP16, with CUDA
events, after warm-up, as the median (and p10/p90) of many runs, rotating among input sets whose total
size exceeds the L2 cache, on random (never zero) data. It also measures the two ceilings of the device
(device-to-device copy bandwidth, FP16 matrix-product rate).

Writes (to --out-dir):
  sdpa.json         every timing, with the device and ceilings
  measurements.json the flash backend's times as attnlab.measurements/1 for variant flash2 (the same
                    algorithm: FlashAttention-2's forward; `attnlab calibrate` reads it)
and prints one table. Usage: python3 kernels/bench/sdpa_bench.py --out-dir DIR [--quick]
  [--ours M.json]: the shapes of attnlab's own measurements (attnlab bench --out M.json, run just before in
  the same session); the table then shows our kernel beside SDPA's backends, with the ratios.
"""
import argparse
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

L2_BYTES_FALLBACK = 50 * 2**20


def timed(fn, inputs, warmup=5, reps=30):
    """Median, p10, p90 in ms of fn(*inputs[i % len]) over reps runs, with CUDA events."""
    for i in range(warmup):
        fn(*inputs[i % len(inputs)])
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        args = inputs[i % len(inputs)]
        a.record()
        fn(*args)
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    q = lambda f: times[min(len(times) - 1, int(f * len(times)))]
    return statistics.median(times), q(0.1), q(0.9)


def input_sets(shape_q, shape_kv, l2):
    """Enough independent (q, k, v) sets that one pass over them exceeds twice the L2 cache."""
    one = 2 * (math.prod(shape_q) + 2 * math.prod(shape_kv))
    count = max(1, min(8, math.ceil(2 * l2 / one)))
    g = torch.Generator(device="cuda").manual_seed(1)
    sets = []
    for _ in range(count):
        q = torch.randn(shape_q, device="cuda", dtype=torch.float16, generator=g)
        k = torch.randn(shape_kv, device="cuda", dtype=torch.float16, generator=g)
        v = torch.randn(shape_kv, device="cuda", dtype=torch.float16, generator=g)
        sets.append((q, k, v))
    return sets


def ceilings(l2):
    n = 512 * 2**20  # 1 GiB of FP16 per copy: far beyond L2
    x = torch.randn(n, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    med, _, _ = timed(lambda a, b: b.copy_(a), [(x, y)], reps=20)
    copy_gbs = 2 * x.numel() * 2 / (med * 1e-3) / 1e9  # bytes read + written
    del x, y
    m = 8192
    a = torch.randn(m, m, device="cuda", dtype=torch.float16)
    b = torch.randn(m, m, device="cuda", dtype=torch.float16)
    med, _, _ = timed(lambda p, q: p @ q, [(a, b)], reps=20)
    mm_tflops = 2 * m**3 / (med * 1e-3) / 1e12
    return {"copy_gbs": copy_gbs, "fp16_matmul_tflops": mm_tflops}


def shapes(quick):
    out = []
    for d in (64, 128):
        heads = 2048 // d  # FlashAttention's benchmark convention: batch·N = 16k tokens, H·d = 2048
        for n in ((1024, 4096) if quick else (1024, 2048, 4096, 8192, 16384)):
            for causal in (False, True):
                out.append(dict(batch=16384 // n, q_heads=heads, kv_heads=heads, q_len=n, kv_len=n, head_dim=d,
                                causal=causal, phase="prefill"))
    for b in ((1, 16) if quick else (1, 8, 32)):
        for n in ((4096,) if quick else (4096, 16384, 65536)):
            out.append(dict(batch=b, q_heads=32, kv_heads=32, q_len=1, kv_len=n, head_dim=128, causal=False,
                            phase="decode"))
    return out


def flops(s):
    pairs = s["q_len"] * s["kv_len"]
    if s["causal"]:
        pairs = sum(min(s["kv_len"], i + 1 + s["kv_len"] - s["q_len"]) for i in range(s["q_len"]))
    return 4 * s["batch"] * s["q_heads"] * pairs * s["head_dim"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--ours", help="attnlab bench --out file: time SDPA on its shapes and compare")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("sdpa_bench: no CUDA device", file=sys.stderr)
        return 2
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", L2_BYTES_FALLBACK)
    ceil = ceilings(l2)
    rows, measurements = [], []
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
    ours = {}
    if args.ours:
        with open(args.ours) as f:
            mine = json.load(f)["measurements"]
        todo = []
        for m in mine:
            s = {k: m["problem"][k] for k in ("batch", "q_heads", "kv_heads", "q_len", "kv_len", "head_dim", "causal", "phase")}
            key = json.dumps(s, sort_keys=True)
            if key not in ours:
                todo.append(s)
            ours.setdefault(key, []).append(m)
    else:
        todo = shapes(args.quick)
    for s in todo:
        sq = (s["batch"], s["q_heads"], s["q_len"], s["head_dim"])
        skv = (s["batch"], s["kv_heads"], s["kv_len"], s["head_dim"])
        sets = input_sets(sq, skv, l2)
        row = dict(shape=s, sets=len(sets))
        for name, be in backends.items():
            try:
                with sdpa_kernel([be]):
                    gqa = s["q_heads"] != s["kv_heads"]  # grouped-query attention: SDPA repeats K/V heads itself
                    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=s["causal"], enable_gqa=gqa)
                    med, p10, p90 = timed(fn, sets)
                row[name] = dict(median_ms=med, p10_ms=p10, p90_ms=p90, tflops=flops(s) / (med * 1e-3) / 1e12)
            except RuntimeError as e:
                row[name] = dict(error=str(e).splitlines()[0][:120])
        rows.append(row)
        if "median_ms" in row["flash"]:
            problem = {k: s[k] for k in ("batch", "q_heads", "kv_heads", "q_len", "kv_len", "head_dim", "causal", "phase")}
            measurements.append(dict(variant="flash2", implementation="torch sdpa flash backend (FlashAttention-2)",
                                     problem=problem, **{k: row["flash"][k] for k in ("median_ms", "p10_ms", "p90_ms")}))
        del sets
        torch.cuda.empty_cache()
    device = dict(name=props.name, sms=props.multi_processor_count, l2_bytes=l2, torch=torch.__version__, **ceil)
    with open(f"{args.out_dir}/sdpa.json", "w") as f:
        json.dump(dict(device=device, rows=rows), f, indent=1)
    with open(f"{args.out_dir}/measurements.json", "w") as f:
        json.dump({"schema": "attnlab.measurements/1", "gpu": "h100-sxm5" if "H100" in props.name else "",
                   "device": device, "measurements": measurements}, f, indent=1)
    print(f"{props.name}: copy {ceil['copy_gbs']:.0f} GB/s (read + write), FP16 matmul {ceil['fp16_matmul_tflops']:.0f} TFLOP/s")
    if ours:
        print(f"{'ours':14} {'shape':40} {'ours ms':>9} {'TFLOP/s':>8} {'GB/s':>7} {'%copy':>6} {'flash ms':>9} {'cudnn ms':>9} {'flash/ours':>10} {'cudnn/ours':>10}")
        for r in rows:
            s = r["shape"]
            tag = (f"B{s['batch']} H{s['q_heads']}/{s['kv_heads']} N{s['kv_len']} d{s['head_dim']} "
                   f"{'causal' if s['causal'] else ''} {s['phase']}")
            fl, cu = r["flash"].get("median_ms", float("nan")), r["cudnn"].get("median_ms", float("nan"))
            for m in ours[json.dumps(s, sort_keys=True)]:
                gbs = m.get("hbm_gbps", float("nan"))
                print(f"{m['label'][:14]:14} {tag:40} {m['median_ms']:9.3f} {m['tops']:8.1f} {gbs:7.0f} "
                      f"{100 * gbs / ceil['copy_gbs']:6.1f} {fl:9.3f} {cu:9.3f} {fl / m['median_ms']:10.2f} {cu / m['median_ms']:10.2f}")
        with open(f"{args.out_dir}/comparison.json", "w") as f:
            json.dump(dict(device=device, rows=rows, ours=[m for ms in ours.values() for m in ms]), f, indent=1)
        return 0
    print(f"{'shape':44} {'flash ms':>9} {'TFLOP/s':>8} {'cudnn ms':>9} {'TFLOP/s':>8} {'cudnn/flash':>11}")
    for r in rows:
        s = r["shape"]
        tag = f"B{s['batch']} H{s['q_heads']} N{s['kv_len']} d{s['head_dim']} {'causal' if s['causal'] else ''} {s['phase']}"
        fl, cu = r["flash"], r["cudnn"]
        fms = f"{fl['median_ms']:9.3f} {fl['tflops']:8.1f}" if "median_ms" in fl else f"{'n/a':>18}"
        cms = f"{cu['median_ms']:9.3f} {cu['tflops']:8.1f}" if "median_ms" in cu else f"{'n/a':>18}"
        ratio = f"{cu['median_ms'] / fl['median_ms']:11.2f}" if "median_ms" in fl and "median_ms" in cu else ""
        print(f"{tag:44} {fms} {cms} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
