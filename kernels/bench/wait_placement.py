#!/usr/bin/env python3
"""Where ptxas put the warpgroup MMA waits of a wgmma attention kernel (reads `cuobjdump -sass` output).

FlashAttention-3's intra-warpgroup overlap (Shah et al. 2024, §3.2) needs the wait for P̃·V_j
(`wgmma.wait_group 0`, SASS `WARPGROUP.DEPBAR.LE gsb0, 0x0`) to come after the softmax of tile j + 1,
which runs between it and the wait for S_{j+1} (`... gsb0, 0x1`). The PTX says so, but ptxas schedules
the SASS and may move the wait up (a wait has no register operands, so it is ready at once). This
prints, for each wait 0 that follows a wait 1, the softmax instructions (MUFU = the exponentials,
FMNMX = the row maxima) between the two waits — run under the P̃·V product — and after the wait 0 up
to the next wait 1 — run with the tensor cores idle unless the other warpgroup keeps them busy.

    cuobjdump -sass file.o | python3 wait_placement.py [--label L] [--match FRAGMENT ...]

Each kernel of the dump (a `Function : NAME` line starts one) is read apart; --match keeps those whose mangled name
contains one of the fragments (e.g. ILi128ELb1ELb1ELi176ELb0ELb0E).
"""
import argparse
import re
import sys

WAIT = re.compile(r"WARPGROUP\.DEPBAR\.LE\s+gsb0,\s*0x([0-9a-f]+)")
COUNTED = ("MUFU", "FMNMX", "F2FP", "FMUL")


def opcode(line):
    """The opcode of one SASS line ('/*0a80*/  @!P0 FMNMX R1, ... ;'), or None."""
    body = line.split("*/", 1)[-1].strip()
    if not body or body.startswith(("/*", ".")):
        return None
    tokens = body.rstrip(";").split()
    if tokens and tokens[0].startswith("@"):
        tokens = tokens[1:]
    return tokens[0] if tokens else None


def placements(lines):
    """Per wait-1 … wait-0 … next-wait-1 span: counts of COUNTED opcodes between wait 1 and wait 0
    ("under") and after wait 0 ("after")."""
    spans, current, side = [], None, None
    for line in lines:
        m = WAIT.search(line)
        if m:
            depth = int(m.group(1), 16)
            if depth == 1:
                if current is not None:
                    spans.append(current)
                current, side = {"under": dict.fromkeys(COUNTED, 0), "after": None}, "under"
            elif depth == 0 and current is not None and side == "under":
                current["after"], side = dict.fromkeys(COUNTED, 0), "after"
            continue
        op = opcode(line)
        if current is None or op is None:
            continue
        base = op.split(".")[0]
        if base in COUNTED:
            current[side][base] += 1
    if current is not None:
        spans.append(current)
    return [s for s in spans if s["after"] is not None]


def functions(lines):
    """(name, lines) per kernel of a cuobjdump dump; lines before the first header under the name ''."""
    name, body = "", []
    for line in lines:
        header = re.search(r"Function\s*:\s*(\S+)", line)
        if header:
            if body:
                yield name, body
            name, body = header.group(1), []
        else:
            body.append(line)
    if body:
        yield name, body


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="")
    parser.add_argument("--match", nargs="*", default=[])
    args = parser.parse_args()
    for name, body in functions(sys.stdin):
        if args.match and not any(m in name for m in args.match):
            continue
        short = next((m for m in args.match if m in name), name[:90])
        title = f"{args.label} {short}".strip()
        spans = placements(body)
        if not spans:
            print(f"{title}: no wait 1 followed by a wait 0")
        for i, s in enumerate(spans):
            under = " ".join(f"{k} {v}" for k, v in s["under"].items())
            after = " ".join(f"{k} {v}" for k, v in s["after"].items())
            print(f"{title} span {i}: under P·V: {under} | after the wait: {after}")


if __name__ == "__main__":
    main()
