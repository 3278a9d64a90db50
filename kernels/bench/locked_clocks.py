#!/usr/bin/env python3
"""Our prefill kernels and the peers timed under Nsight Compute's locked clocks: one table from the CSVs of
`ncu --csv --print-units base --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second`.

Why: on an H100 at d 128 and N ≥ 8k the bench's samples of one kernel spread by up to 15% (p10 against median,
e.g. 3.33 / 3.85 ms), the clock moving under the power limit from one launch to the next; rows timed one after
another then differ by the clock, not the kernel. Nsight Compute locks the SM clock (its default
--clock-control base) for every profiled launch, so a ratio between two kernels measured this way is the
kernels' own, at one clock — not the time a user sees at boost clocks.

Each CSV is named IMPL__N__CAUSAL.csv (CAUSAL 0 or 1). Ours (IMPL starting "flash2"): the profiled launches are
one call each, the time is their median. Peers (peer_launches.py's profiled range of CALLS calls): every kernel
in the range belongs to a call, the time is their sum over CALLS.

  python3 kernels/bench/locked_clocks.py DIR --calls 3 --gpu "NVIDIA H100 80GB HBM3" --out locked.json
"""
import argparse
import csv
import json
import pathlib
import statistics
import sys

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--calls", type=int, default=3)
ap.add_argument("--gpu", default="")
ap.add_argument("--out", required=True)
args = ap.parse_args()


def launches(path):
    """[(kernel name, {metric: value})] in launch order, from one ncu --csv file."""
    lines = path.read_text(errors="replace").splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return []
    by_id = {}
    for row in csv.DictReader(lines[start:]):
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        entry = by_id.setdefault(row["ID"], (row["Kernel Name"], {}))
        entry[1][row["Metric Name"]] = value
    return [by_id[k] for k in sorted(by_id, key=int)]


rows = []
for path in sorted(pathlib.Path(args.dir).glob("*__*__*.csv")):
    impl, n, causal = path.stem.split("__")
    found = launches(path)
    if not found:
        print(f"locked_clocks.py: {path}: no profiled launch (see the file)", file=sys.stderr)
        continue
    ns = [m.get("gpu__time_duration.sum", float("nan")) for _, m in found]
    hz = [m.get("sm__cycles_elapsed.avg.per_second", float("nan")) for _, m in found]
    ours = impl.startswith("flash2")
    ms = (statistics.median(ns) if ours else sum(ns) / args.calls) / 1e6
    rows.append(dict(impl=impl, len=int(n), causal=bool(int(causal)), ms_locked=round(ms, 4),
                     sm_ghz=round(statistics.median(hz) / 1e9, 3), launches=len(found),
                     kernels=sorted({name[:90] for name, _ in found})))

print(f"Nsight Compute's locked clocks ({args.gpu or 'GPU'}), B 4, H 16, d 128; ms per call, and the peers' time ÷ ours")
for key in sorted({(r["len"], r["causal"]) for r in rows}):
    here = [r for r in rows if (r["len"], r["causal"]) == key]
    peers = {r["impl"]: r["ms_locked"] for r in here if not r["impl"].startswith("flash2")}
    for r in here:
        ratios = "  ".join(f"x{p}={t / r['ms_locked']:.3f}" for p, t in peers.items()) if r["impl"].startswith("flash2") else ""
        print(f"N {key[0]:5d}{' causal' if key[1] else '       '} {r['impl']:28s} {r['ms_locked']:8.4f} ms  "
              f"SM {r['sm_ghz']:.2f} GHz  {ratios}")
pathlib.Path(args.out).write_text(json.dumps({"schema": "attnlab.locked_clocks/1", "gpu": args.gpu,
                                              "clock_control": "ncu base", "rows": rows}, indent=1) + "\n")
