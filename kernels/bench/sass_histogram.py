#!/usr/bin/env python3
"""Where a kernel's instructions are, from its disassembly (cuobjdump -sass): the markers of its structure
(warpgroup MMAs, barriers, waits, votes, backward branches) with their indices, and an opcode histogram of
each index range asked for — the hot loop of a kernel, split into its phases.

  cuobjdump -sass kernel.cubin > k.sass
  python3 kernels/bench/sass_histogram.py k.sass FUNCTION_SUBSTRING            # the markers
  python3 kernels/bench/sass_histogram.py k.sass FUNCTION_SUBSTRING 1316:1628  # histograms of ranges
"""
import collections
import re
import sys


def instructions(path, function):
    for fn in open(path).read().split("Function : ")[1:]:
        if function in fn.split("\n", 1)[0]:
            return [(int(m.group(1), 16), m.group(2).strip())
                    for m in re.finditer(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?);", fn, re.M)]
    sys.exit(f"sass_histogram: no function containing '{function}' in {path}")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ins = instructions(sys.argv[1], sys.argv[2])
    if len(sys.argv) == 3:
        print(f"{len(ins)} instructions")
        for i, (addr, text) in enumerate(ins):
            target = re.search(r"BRA\s.*?(0x[0-9a-f]+)", text)
            backward = target is not None and int(target.group(1), 16) < addr
            if backward or re.search(r"GMMA|BAR\.SYNC|DEPBAR|VOTE|EXIT", text):
                print(i, hex(addr), text[:90])
        return
    for spec in sys.argv[3:]:
        lo, hi = map(int, spec.split(":"))
        ops = collections.Counter(re.sub(r"^@!?U?P\w+\s+", "", t).split()[0] for _, t in ins[lo:hi])
        print(f"[{lo}:{hi}] {hi - lo} instructions: " + ", ".join(f"{k} {v}" for k, v in ops.most_common()))


if __name__ == "__main__":
    main()
