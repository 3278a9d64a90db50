#!/usr/bin/env python3
"""One peer's prefill forward, CALLS times inside cudaProfilerStart/Stop, for Nsight Compute run with
`--profile-from-start off`: the kernels a peer launches for one call are exactly those in the range, whatever
their names. The peers are called as ../shared/peers/peer_bench.py calls them (SDPA's cuDNN backend on FP16
(B, H, N, d); FlashAttention-3's BF16 forward on (B, N, H, d)), after 3 warm-up calls outside the range.
Needs build.sh's FlashAttention-3 in /tmp/peers for fa3_bf16.

  ncu --profile-from-start off --metrics gpu__time_duration.sum --csv python3 kernels/bench/peer_launches.py \
      --impl sdpa_cudnn --prefill 4,16,16,8192,128,1 [--calls 3]
"""
import argparse
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

IMPLS = ("sdpa_cudnn", "fa3_bf16")
ap = argparse.ArgumentParser()
ap.add_argument("--impl", required=True, choices=IMPLS)
ap.add_argument("--prefill", required=True, help="B,Hq,Hkv,N,d,causal")
ap.add_argument("--calls", type=int, default=3)
args = ap.parse_args()
try:
    B, Hq, Hkv, N, d, causal = (int(x) for x in args.prefill.split(","))
except ValueError:
    print(f"peer_launches.py: --prefill {args.prefill!r}: expected six integers B,Hq,Hkv,N,d,causal", file=sys.stderr)
    sys.exit(2)
causal = bool(causal)

q, k, v = (torch.randn(B, h, N, d, device="cuda", dtype=torch.float16) for h in (Hq, Hkv, Hkv))
if args.impl == "sdpa_cudnn":
    def call():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=Hq != Hkv)
else:
    sys.path.insert(0, "/tmp/peers/fa3/hopper")
    from flash_attn_interface import flash_attn_func as fa3
    qb, kb, vb = (t.transpose(1, 2).contiguous().to(torch.bfloat16) for t in (q, k, v))
    del q, k, v
    def call():
        return fa3(qb, kb, vb, causal=causal)

for _ in range(3):
    call()
torch.cuda.synchronize()
torch.cuda.profiler.start()
for _ in range(args.calls):
    call()
torch.cuda.synchronize()
torch.cuda.profiler.stop()
print(f"{args.impl} {args.prefill}: {args.calls} calls in the profiled range")
