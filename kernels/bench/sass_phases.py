#!/usr/bin/env python3
"""Where a kernel's executed instructions and stall samples go, phase by phase, from Nsight Compute's source page of
one launch (session_lib.sh's sass_samples: sass-NAME.csv.gz): each phase is a range of SASS indices, counted per unit
of work (e.g. per tile: the launch's tiles), with its top opcodes.

  python3 kernels/bench/sass_phases.py sass-turbo-2.csv.gz UNITS                       # every instruction, indexed
  python3 kernels/bench/sass_phases.py sass-turbo-2.csv.gz UNITS name:FIRST-LAST …     # the phases' table
"""
import collections
import csv
import gzip
import sys

from sass_text import opcode as full_opcode


def instructions(path):
    rows = list(csv.reader(gzip.open(path, "rt")))
    header = rows[1]
    col = {h: i for i, h in enumerate(header)}
    for r in rows[2:]:
        src = r[col["Source"]].strip()
        yield src, int(r[col["Instructions Executed"]] or 0), int(r[col["Warp Stall Sampling (All Samples)"]] or 0)


def opcode(src):
    """The opcode without its modifiers ('IMMA' of '@P0 IMMA.16832.S8.S8 R4, …')."""
    op = full_opcode(src)
    return op.split(".")[0] if op else "?"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ins = list(instructions(sys.argv[1]))
    units = float(sys.argv[2])
    samples = sum(s for *_, s in ins) or 1
    if len(sys.argv) == 3:
        for i, (src, ex, s) in enumerate(ins):
            if ex:
                print(f"{i:5d} {ex / units:7.2f} {s:5d}  {src}")
        return
    print(f"{sum(e for _, e, _ in ins) / units:.1f} instructions a unit, {samples} samples")
    for phase in sys.argv[3:]:
        name, span = phase.rsplit(":", 1)
        first, last = (int(x) for x in span.split("-"))
        part = ins[first:last + 1]
        ops = collections.Counter()
        for src, ex, _ in part:
            ops[opcode(src)] += ex / units
        top = ", ".join(f"{o} {c:.0f}" for o, c in ops.most_common(6))
        executed = sum(e for _, e, _ in part) / units
        share = 100 * sum(s for *_, s in part) / samples
        print(f"{name:24s} {executed:7.1f} a unit  {share:5.1f}% of samples | {top}")


if __name__ == "__main__":
    main()
