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

from sass_text import functions, instructions


def kernel_instructions(path, function):
    for name, body in functions(open(path)):
        if function in name:
            return list(instructions(body))
    sys.exit(f"sass_histogram: no function containing '{function}' in {path}")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ins = kernel_instructions(sys.argv[1], sys.argv[2])
    if len(sys.argv) == 3:
        print(f"{len(ins)} instructions")
        for i, x in enumerate(ins):
            if x.backward or re.search(r"GMMA|BAR\.SYNC|DEPBAR|VOTE|EXIT", x.text):
                print(i, hex(x.address), x.text[:90])
        return
    for spec in sys.argv[3:]:
        lo, hi = map(int, spec.split(":"))
        ops = collections.Counter(x.opcode for x in ins[lo:hi])
        print(f"[{lo}:{hi}] {hi - lo} instructions: " + ", ".join(f"{k} {v}" for k, v in ops.most_common()))


if __name__ == "__main__":
    main()
