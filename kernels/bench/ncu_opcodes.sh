#!/usr/bin/env bash
# Executed SASS instructions by opcode (Nsight Compute's sass__inst_executed_per_opcode) of the kernels whose
# name matches REGEX, for one `attnlab bench` of CONFIG — where a kernel's instructions go, to cut the ones
# that bound it. Prints one line per kernel launch and opcode, most executed first. Usage (on the GPU machine,
# after turbo_session.sh's build):  bash kernels/bench/ncu_opcodes.sh CONFIG REGEX [LAUNCHES] > OUT.txt
set -u
config=$1 regex=$2 launches=${3:-1}
ncu --kernel-name regex:"$regex" --launch-count "$launches" \
    --metrics smsp__inst_executed.sum,sass__inst_executed_per_opcode --print-metric-instances values \
    build-gpu/bin/attnlab bench --config "$config" --out /tmp/ncu-opcodes-out.json 2>&1 |
  python3 -c '
import re, sys
kernel = None
for line in sys.stdin:
    m = re.match(r"\s+(?:void )?(\S*kernel\S*)", line)
    if m and "(" in line: kernel = line.strip()[:140]; print("==", kernel); continue
    if "smsp__inst_executed.sum" in line: print(line.strip())
    if "sass__inst_executed_per_opcode" in line:
        print(line.strip()[:3000])
        pairs = re.findall(r"([A-Z0-9_.]+):\s*([\d.,]+)", line.split("sass__inst_executed_per_opcode", 1)[1])
        tot = sum(float(v.replace(",", "")) for _, v in pairs)
        for op, v in sorted(pairs, key=lambda p: -float(p[1].replace(",", ""))):
            print(f"  {op:16s} {float(v.replace(",", "")):16.0f} {100 * float(v.replace(",", "")) / tot:6.2f}%")
'
