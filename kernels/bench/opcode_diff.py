#!/usr/bin/env python3
"""Two kernels' executed warp instructions per SASS opcode side by side, from Nsight Compute text output of
`--metrics sass__inst_executed_per_opcode --print-metric-instances details` (one profiled launch each): every
opcode, largest difference first, and the totals. What one kernel executes that the other does not is where
its extra issue slots go (kernels/PERF.md, "Ours against FlashAttention-3 and cuDNN, one launch each").

  python3 kernels/bench/opcode_diff.py BASELINE.txt OURS.txt
"""
import pathlib
import re
import signal
import sys


def opcodes(path):
    try:
        text = pathlib.Path(path).read_text(errors="replace")
    except OSError as e:
        print(f"opcode_diff.py: {path}: {e.strerror}", file=sys.stderr)
        sys.exit(2)
    at = text.find("sass__inst_executed_per_opcode")
    if at < 0:
        print(f"opcode_diff.py: {path}: no sass__inst_executed_per_opcode (was the launch profiled?)", file=sys.stderr)
        sys.exit(2)
    block = re.sub(r"\s+", " ", text[at:text.find(")", at)])
    return {op: float(n.replace(",", "")) for op, n in re.findall(r"([A-Z][A-Z0-9_.]*): ([\d,]+)", block)}


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # piped into head: stop quietly
    if len(sys.argv) != 3:
        print("usage: opcode_diff.py BASELINE.txt OURS.txt", file=sys.stderr)
        sys.exit(2)
    base, ours = opcodes(sys.argv[1]), opcodes(sys.argv[2])
    print(f"{'opcode':12s} {'baseline':>13s} {'ours':>13s} {'ours - base':>13s}")
    for op in sorted(set(base) | set(ours), key=lambda k: -(ours.get(k, 0) - base.get(k, 0))):
        print(f"{op:12s} {base.get(op, 0):13.0f} {ours.get(op, 0):13.0f} {ours.get(op, 0) - base.get(op, 0):13.0f}")
    print(f"{'total':12s} {sum(base.values()):13.0f} {sum(ours.values()):13.0f} "
          f"{sum(ours.values()) - sum(base.values()):13.0f}")


if __name__ == "__main__":
    main()
