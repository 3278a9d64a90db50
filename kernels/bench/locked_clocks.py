#!/usr/bin/env python3
"""Our prefill kernels and the peers timed under Nsight Compute's locked clocks: one table from the CSVs of
`ncu --csv --print-units base --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second`.

Why: on an H100 at d 128 and N ≥ 8k the bench's samples of one kernel spread by up to 15% (p10 against median,
e.g. 3.33 / 3.85 ms), the clock moving under the power limit from one launch to the next; rows timed one after
another then differ by the clock, not the kernel. Nsight Compute locks the SM clock (its default
--clock-control base) for every profiled launch, so a ratio between two kernels measured this way is the
kernels' own, at (nearly) one clock — not the time a user sees at boost clocks.

Each CSV is named IMPL__N__CAUSAL.csv (CAUSAL 0 or 1). Ours (IMPL starting "flash2"): the profiled launches are
one call each, the figures the median launch's. Peers (peer_launches.py's profiled range of CALLS calls): every
kernel in the range belongs to a call, the figures their sum over CALLS. Locked, the SM clock still differs by a few
per cent between kernels (1.41–1.46 GHz, duration-weighted, on an H100), so the ratios are of SM cycles (time × the launch's clock).

  python3 kernels/bench/locked_clocks.py DIR --calls 3 --gpu "NVIDIA H100 80GB HBM3" --out locked.json

--peers-from FILE takes the peers' rows from an earlier call's output (the same GPU model) where DIR has none for that
shape — a call that times only our variants (prefill_session.sh STEP=flash2-ab PEERS=0) still gets its ratios; the
rows keep "from": FILE, and the table marks them with *. Locked cycles reproduce across H100s within 0.2%
(kernels/PERF.md, wgmma v6 and v7), which is what makes an earlier call's peers a fair denominator.
"""
import argparse
import json
import pathlib
import sys

from ncu_csv import launches

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--calls", type=int, default=3)
ap.add_argument("--gpu", default="")
ap.add_argument("--out", required=True)
ap.add_argument("--peers-from", help="an earlier locked-clocks JSON: its peers' rows where DIR has none")
args = ap.parse_args()


def refuse(message):
    print(f"locked_clocks.py: {message}", file=sys.stderr)
    sys.exit(2)


def earlier_peers(path):
    """The peers' rows of an earlier call's output, checked: its schema, and its GPU where both name one."""
    try:
        earlier = json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError) as e:
        refuse(f"--peers-from {path}: {e}")
    if not isinstance(earlier, dict) or earlier.get("schema") != "attnlab.locked_clocks/1":
        refuse(f"--peers-from {path}: not an attnlab.locked_clocks/1 file")
    if args.gpu and earlier.get("gpu") and earlier["gpu"] != args.gpu:
        refuse(f"--peers-from {path}: measured on {earlier['gpu']}, not {args.gpu}")
    keys = ("impl", "len", "causal", "kcycles")
    found = [r for r in earlier.get("rows", []) if isinstance(r, dict) and all(k in r for k in keys)]
    return [r for r in found if not str(r["impl"]).startswith("flash2")]


def number(metrics, name):
    try:
        return float(metrics.get(name, "nan"))
    except ValueError:
        return float("nan")


rows = []
for path in sorted(pathlib.Path(args.dir).glob("*__*__*.csv")):
    impl, n, causal = path.stem.split("__")
    found = launches(path.read_text(errors="replace").splitlines())
    if not found:
        print(f"locked_clocks.py: {path}: no profiled launch (see the file)", file=sys.stderr)
        continue
    ns = [number(m, "gpu__time_duration.sum") for _, _, m in found]
    hz = [number(m, "sm__cycles_elapsed.avg.per_second") for _, _, m in found]
    cycles = [t * f / 1e9 for t, f in zip(ns, hz)]  # each launch's SM cycles: its time at its own clock
    ours = impl.startswith("flash2")
    if ours:  # the median launch, by time
        i = sorted(range(len(ns)), key=lambda k: ns[k])[len(ns) // 2]
        ms, kcycles = ns[i] / 1e6, cycles[i] / 1e3
    else:  # every kernel of the calls, per call
        ms, kcycles = sum(ns) / args.calls / 1e6, sum(cycles) / args.calls / 1e3
    rows.append(dict(impl=impl, len=int(n), causal=bool(int(causal)), ms_locked=round(ms, 4),
                     kcycles=round(kcycles, 1), sm_ghz=round(sum(cycles) / sum(ns), 3),  # duration-weighted
                     launches=len(found), kernels=sorted({name[:90] for _, name, _ in found})))

if args.peers_from:
    have = {(r["impl"], r["len"], r["causal"]) for r in rows}
    rows += [dict(r, **{"from": args.peers_from}) for r in earlier_peers(args.peers_from)
             if (r["impl"], r["len"], r["causal"]) not in have]

print(f"Nsight Compute's locked clocks ({args.gpu or 'GPU'}), B 4, H 16, d 128: ms and thousands of SM cycles per call "
      "(the SM clock, duration-weighted, differs a little between kernels even locked), and the peers' cycles ÷ ours")
for key in sorted({(r["len"], r["causal"]) for r in rows}):
    here = [r for r in rows if (r["len"], r["causal"]) == key]
    peers = {r["impl"]: r["kcycles"] for r in here if not r["impl"].startswith("flash2")}
    for r in here:
        ratios = "  ".join(f"x{p}={c / r['kcycles']:.3f}" for p, c in peers.items()) if r["impl"].startswith("flash2") else ""
        impl = r["impl"] + ("*" if "from" in r else "")
        print(f"N {key[0]:5d}{' causal' if key[1] else '       '} {impl:28s} {r['ms_locked']:8.4f} ms "
              f"{r['kcycles']:9.1f} kcyc  SM {r['sm_ghz']:.3f} GHz  {ratios}")
if args.peers_from:
    print(f"* from {args.peers_from} (an earlier call)")
pathlib.Path(args.out).write_text(json.dumps({"schema": "attnlab.locked_clocks/1", "gpu": args.gpu,
                                              "clock_control": "ncu base", "rows": rows}, indent=1) + "\n")
