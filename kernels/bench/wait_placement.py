#!/usr/bin/env python3
"""Where ptxas put the warpgroup MMA waits of a wgmma attention kernel (reads `cuobjdump -sass` output).

FlashAttention-3's intra-warpgroup overlap (Shah et al. 2024, §3.2) needs the wait for P̃·V_j
(`wgmma.wait_group 0`, SASS `WARPGROUP.DEPBAR.LE gsb0, 0x0`) to come after the softmax of tile j + 1,
which follows the wait for S_{j+1} (`... gsb0, 0x1`). The PTX says so, but ptxas schedules the SASS
and may move the wait up (a wait has no register operands, so it is ready at once). This prints, for
each wait 1, the softmax instructions (MUFU = the exponentials, FMNMX = the row maxima, F2FP = P̃'s
rounding, FMUL = O's rescale) that follow it up to the wait 0 — they run under the P̃·V product — and
from the wait 0 to the span's end — they run after it. A span ends at the next MMA issue
(WARPGROUP.ARRIVE), the next wait 1, or a backward branch (the loop's end); a span that the loop's end
closes before any wait 0 had its wait for P̃·V at the next iteration's top (flash2 v7's order at 128 keys,
kernels/PERF.md): its whole softmax runs under P̃·V.

    cuobjdump -sass file.o | python3 wait_placement.py [--label L] [--match FRAGMENT ...]

Each kernel of the dump (a `Function : NAME` line starts one) is read apart; --match keeps those whose mangled name
contains one of the fragments (e.g. ILi128ELb1ELb1ELi176ELb0ELb0E).
"""
import argparse
import re
import sys

from sass_text import functions, instructions

WAIT = re.compile(r"WARPGROUP\.DEPBAR\.LE\s+gsb0,\s*0x([0-9a-f]+)")
COUNTED = ("MUFU", "FMNMX", "F2FP", "FMUL")


def placements(lines):
    """Per wait 1: counts of COUNTED opcodes from it to the wait 0 ("under") and from the wait 0 to the span's end
    ("after", None where the span ended first), and what closed the "under" part ("wait 0" or "loop's end")."""
    spans, current, side = [], None, None

    def close():
        nonlocal current
        if current is not None:
            spans.append(current)
        current = None

    for ins in instructions(lines):
        m = WAIT.search(ins.text)
        if m:
            depth = int(m.group(1), 16)
            if depth == 1:
                close()
                current, side = {"under": dict.fromkeys(COUNTED, 0), "after": None, "closed_by": None}, "under"
            elif depth == 0 and current is not None and side == "under":
                current["after"], current["closed_by"], side = dict.fromkeys(COUNTED, 0), "wait 0", "after"
            continue
        if current is None:
            continue
        if ins.opcode.startswith("WARPGROUP.ARRIVE") or ins.backward:
            if side == "under":
                current["closed_by"] = "loop's end" if ins.backward else "next MMA"
            close()
            continue
        base = ins.opcode.split(".")[0]
        if base in COUNTED:
            current[side][base] += 1
    close()
    return spans


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="")
    parser.add_argument("--match", nargs="*", default=[])
    args = parser.parse_args()
    read = 0
    for name, body in functions(sys.stdin):
        if args.match and not any(m in name for m in args.match):
            continue
        read += 1
        at = name.find("kernelI")  # the template arguments tell a file's kernels apart
        short = next((m for m in args.match if m in name), name[at:at + 60] if at >= 0 else name[-60:])
        title = f"{args.label} {short}".strip()
        spans = placements(body)
        if not spans:
            print(f"{title}: no wait 1")
        for i, s in enumerate(spans):
            under = " ".join(f"{k} {v}" for k, v in s["under"].items())
            after = " ".join(f"{k} {v}" for k, v in s["after"].items()) if s["after"] is not None else "—"
            print(f"{title} span {i}: under P·V: {under} (to the {s['closed_by'] or 'function end'}) | after the wait: {after}")
    if read == 0:
        sys.exit(f"wait_placement: no kernel{' matching ' + ' '.join(args.match) if args.match else ''} in the input")


if __name__ == "__main__":
    main()
