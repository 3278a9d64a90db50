#!/usr/bin/env python3
"""Where a warpgroup kernel's row blocks spend their cycles beyond their tiles (kernels/common/cta_timeline.cuh).

Reads the CSV kernels/bench/flash2_timeline.cu writes — one line per (row block, consumer warpgroup): the SM, the
block's tiles and the SM clock (clock64) at the CTA's start, the warpgroup's start on the block, its first S issued
and landed, its last S landed, its last P·V issued, the loop's end (that P·V landed) and O stored, and when the
producer issued the warpgroup's Q and the block's first K (0: not the producer's), and where O goes out through
shared memory, when the warpgroup's O was staged there and when its warps met before the store (0: stored from
registers) — and prints, in SM cycles (median, p10, p90):

  tile       the steady tile: (last S − first S) / (tiles − 1)
  setup      the CTA's start to the warpgroup's start on its first block (barriers, the register split)
  fill       the block's start to its first S landed, in two parts:
  to issue     to the first S's issue: Q, the first K and the warpgroup's first turn waited for
  first S      the first S's MMAs, issue to landing
  drain      the last S landed to the loop's end, in two parts:
  to last P·V  the last softmax and the wait for the last turn
  last P·V     the last P·V's MMAs, issue to landing
  epilogue   the loop's end to O stored, where O goes through shared memory in three parts:
  stage        the loop's end to O staged (ℓ summed, O scaled and rounded, the stmatrix issued)
  meet         O staged to the warpgroup's barrier passed (the fence, the slowest warp's staging)
  store        the barrier to O stored (the TMA store issued and its shared memory read)
  gap        on one SM, the end of a CTA (its last O stored) to the next CTA's start
  boundary   on one SM and warpgroup, the last S of one row block to the first S of the next, less one steady tile:
             what each row block costs beyond its tiles once the GPU is full (the sum of the above, as they overlap)
  ping-pong  warpgroup 1's first S after warpgroup 0's, in one block
  Q to S     the producer's Q issued to the warpgroup's first S issued (Q's latency, or the wait for K or the turn)
  K to S     the producer's first K issued to the first S issued
  Q reload   on one SM and warpgroup, its last S landed (Q given back) to the producer's issue of the next block's Q

and, on the GPU's one clock (%globaltimer, ns), the kernel's span from the first CTA's start to the last O stored, how
far apart the SMs' first CTAs started, and how long the SMs stood idle at the end (the last wave's tail).

and the share of the SMs' time the blocks' tiles take at the steady rate (the rest: boundaries and the last wave).

  python3 kernels/bench/cta_timeline.py FILE [FILE ...]

A file that is not such a CSV is refused with one line naming the file and the line, exit 2.
"""
import csv
import statistics
import sys

FIELDS = ["block", "group", "sm", "tiles", "cta_start_ns", "cta_start", "block_start", "first_issue", "first_scores",
          "last_scores", "last_pv_issue", "loop_done", "stored", "q_issued", "k_issued", "stored_ns", "staged", "met"]


class BadInput(Exception):
    pass


def read(path):
    """(title, rows): the '# ' line's text and one dict of ints per record line."""
    try:
        with open(path, newline="") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"{path}: cannot read ({e})")
    title = ""
    body = []
    for number, line in enumerate(lines, 1):
        if line.startswith("#"):
            title = title or line.lstrip("# ").strip()
        elif line.strip():
            body.append((number, line))
    if not body or next(csv.reader([body[0][1]])) != FIELDS:
        raise BadInput(f"{path}: no header line '{','.join(FIELDS)}'")
    rows = []
    for number, line in body[1:]:
        cells = next(csv.reader([line]))
        if len(cells) != len(FIELDS):
            raise BadInput(f"{path} line {number}: {len(cells)} fields, {len(FIELDS)} expected")
        try:
            row = {k: int(v) for k, v in zip(FIELDS, cells)}
        except ValueError:
            raise BadInput(f"{path} line {number}: a field is not an integer")
        if row["group"] not in (0, 1) or min(row.values()) < 0:
            raise BadInput(f"{path} line {number}: group must be 0 or 1 and no field negative")
        rows.append(row)
    if not rows:
        raise BadInput(f"{path}: no record")
    return title, rows


def summarize(rows):
    """The quantities of the docstring, each a list of cycles (one per record, CTA, SM gap or boundary)."""
    done = [r for r in rows if r["tiles"] > 0 and r["first_scores"] > 0]
    tile = {}
    for r in done:
        if r["tiles"] >= 2:
            tile[(r["block"], r["group"])] = (r["last_scores"] - r["first_scores"]) / (r["tiles"] - 1)
    steady = statistics.median(tile.values()) if tile else 0.0
    out = {"tile": list(tile.values()),
           "fill": [r["first_scores"] - r["block_start"] for r in done],
           "to issue": [r["first_issue"] - r["block_start"] for r in done],
           "first S": [r["first_scores"] - r["first_issue"] for r in done],
           "drain": [r["loop_done"] - r["last_scores"] for r in done],
           "to last P·V": [r["last_pv_issue"] - r["last_scores"] for r in done],
           "last P·V": [r["loop_done"] - r["last_pv_issue"] for r in done],
           "epilogue": [r["stored"] - r["loop_done"] for r in done]}
    staged = [r for r in done if r["staged"] and r["met"]]
    out["stage"] = [r["staged"] - r["loop_done"] for r in staged]
    out["meet"] = [r["met"] - r["staged"] for r in staged]
    out["store"] = [r["stored"] - r["met"] for r in staged]
    # CTAs: their first block's setup, their end. Each warpgroup reads the CTA's start clock itself, a few cycles
    # apart, so a CTA is the records of one SM whose start comes before its first block starts (the setup, hundreds
    # of cycles, lies between; one CTA at a time on an SM).
    ctas = []
    for r in sorted(rows, key=lambda r: (r["sm"], r["cta_start"])):
        if ctas and ctas[-1][0]["sm"] == r["sm"] and r["cta_start"] <= min(x["block_start"] for x in ctas[-1]):
            ctas[-1].append(r)
        else:
            ctas.append([r])
    out["setup"] = [min(r["block_start"] for r in rs) - min(r["cta_start"] for r in rs) for rs in ctas]
    out["gap"] = []
    by_sm = {}
    for rs in ctas:
        by_sm.setdefault(rs[0]["sm"], []).append((min(r["cta_start"] for r in rs), max(r["stored"] for r in rs)))
    for spans in by_sm.values():
        spans.sort()
        out["gap"] += [nxt[0] - prev[1] for prev, nxt in zip(spans, spans[1:])]
    # Boundaries: consecutive blocks on one SM and warpgroup, in the order their first S landed.
    out["boundary"], out["Q reload"] = [], []
    lanes = {}
    for r in done:
        lanes.setdefault((r["sm"], r["group"]), []).append(r)
    for rs in lanes.values():
        rs.sort(key=lambda r: r["first_scores"])
        out["boundary"] += [nxt["first_scores"] - prev["last_scores"] - tile.get((prev["block"], prev["group"]), steady)
                            for prev, nxt in zip(rs, rs[1:])]
        out["Q reload"] += [nxt["q_issued"] - prev["last_scores"] for prev, nxt in zip(rs, rs[1:]) if nxt["q_issued"]]
    first = {(r["block"], r["group"]): r["first_scores"] for r in done}
    out["ping-pong"] = [first[(b, 1)] - first[(b, 0)] for (b, g) in first if g == 0 and (b, 1) in first]
    out["Q to S"] = [r["first_issue"] - r["q_issued"] for r in done if r["q_issued"]]
    k_issued = {r["block"]: r["k_issued"] for r in done if r["group"] == 0 and r["k_issued"]}
    out["K to S"] = [r["first_issue"] - k_issued[r["block"]] for r in done if r["block"] in k_issued]
    # The SMs' time: each SM from its first CTA's start to its last O stored.
    sm_time = sum(max(end for _, end in spans) - min(start for start, _ in spans) for spans in by_sm.values())
    tiles = sum(r["tiles"] for r in done if r["group"] == 0)
    share = tiles * steady / sm_time if sm_time > 0 else 0.0
    return out, steady, share, len(by_sm)


def gpu_clock(rows):
    """(span, start skew, mean idle at the end), in ns: the kernel from its first CTA's start to its last O stored; the
    SMs' first CTAs' starts, p90 after the first; each SM's last O stored before the kernel's, averaged."""
    start, end = {}, {}
    for r in rows:
        start[r["sm"]] = min(start.get(r["sm"], r["cta_start_ns"]), r["cta_start_ns"])
        end[r["sm"]] = max(end.get(r["sm"], 0), r["stored_ns"])
    first, last = min(start.values()), max(end.values())
    skew = sorted(s - first for s in start.values())
    return last - first, skew[min(len(skew) - 1, int(0.9 * len(skew)))], statistics.mean(last - e for e in end.values())


def quantiles(xs):
    xs = sorted(xs)
    pick = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))]
    return statistics.median(xs), pick(0.1), pick(0.9)


def report(title, rows):
    out, steady, share, sms = summarize(rows)
    lines = [title or "(no title line)",
             f"{len(rows)} records on {sms} SMs; SM cycles: median (p10–p90), and in steady tiles"]
    for name in ["tile", "setup", "fill", "to issue", "first S", "drain", "to last P·V", "last P·V", "epilogue",
                 "stage", "meet", "store", "gap", "boundary", "ping-pong", "Q to S", "K to S", "Q reload"]:
        xs = out[name]
        if not xs:
            lines.append(f"  {name:12s} —")
            continue
        med, p10, p90 = quantiles(xs)
        in_tiles = f"{med / steady:6.2f} tiles" if steady else ""
        lines.append(f"  {name:12s} {med:10.0f} ({p10:.0f}–{p90:.0f})  {in_tiles}  [{len(xs)}]")
    lines.append(f"  the blocks' tiles at the steady rate: {100 * share:.1f}% of the SMs' time")
    span, skew, idle = gpu_clock(rows)
    if span > 0:
        lines.append(f"  on the GPU's clock: span {span / 1e3:.1f} µs; the SMs' first CTAs started within "
                     f"{skew / 1e3:.2f} µs (p90); SMs idle at the end {idle / 1e3:.2f} µs on average "
                     f"({100 * idle / span:.1f}% of the span)")
    return "\n".join(lines)


def main(argv):
    if len(argv) >= 2 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) < 2:
        print("cta_timeline.py: no file named (FILE [FILE ...]: flash2_timeline's CSVs)", file=sys.stderr)
        return 2
    try:
        texts = [report(*read(path)) for path in argv[1:]]
    except BadInput as e:
        print(f"cta_timeline.py: {e}", file=sys.stderr)
        return 2
    print("\n\n".join(texts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
