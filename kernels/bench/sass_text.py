r"""Reading `cuobjdump -sass` text: the kernels of a dump, and each kernel's instructions with their addresses,
opcodes and backward branches (a loop's end). One reader for kernels/bench/sass_histogram.py and
kernels/bench/wait_placement.py; its opcode() reads Nsight Compute's source lines too (kernels/bench/sass_phases.py).

cuobjdump writes `        /*0a80*/                   @!P0 BRA 0x0a00 ;   /* 0x… */` (targets as addresses); nvdisasm
writes targets as labels — `@!P0 BRA \`(.L_x_3) ;` with `.L_x_3:` on a line of its own before the target — so both
are read.
"""
import re
from typing import Iterator, NamedTuple

ADDRESS = re.compile(r"/\*([0-9a-f]{4,})\*/")
LABEL = re.compile(r"^\s*(\.L_x_\d+):")
BRANCH = re.compile(r"\bBRA\b[^`;]*?(?:`\((\.L_x_\d+)\)|0x([0-9a-f]+))")
HEADER = re.compile(r"Function\s*:\s*(\S+)")


def opcode(line):
    """The opcode of one SASS line ('/*0a80*/  @!P0 FMNMX R1, ... ;'), or None where the line is no instruction."""
    body = line.split("*/", 1)[-1].strip()
    if not body or body.startswith(("/*", ".")):
        return None
    tokens = body.rstrip(";").split()
    if tokens and tokens[0].startswith("@"):
        tokens = tokens[1:]
    return tokens[0] if tokens else None


def functions(lines):
    """(name, lines) per kernel of a cuobjdump dump; lines before the first header under the name ''."""
    name, body = "", []
    for line in lines:
        header = HEADER.search(line)
        if header:
            if body:
                yield name, body
            name, body = header.group(1), []
        else:
            body.append(line)
    if body:
        yield name, body


class Instruction(NamedTuple):
    address: int
    opcode: str
    text: str  # the instruction without its address and encoding
    backward: bool  # a branch to this address or an earlier one


def instructions(lines) -> Iterator[Instruction]:
    """The instructions of one kernel's lines, in order."""
    labels = {}  # label → address of the instruction after it
    pending, last_address = [], -1
    for line in lines:
        label = LABEL.match(line)
        if label:
            pending.append(label.group(1))
            continue
        address = ADDRESS.search(line)
        op = opcode(line)
        if op is None or address is None:  # a header, an encoding, a separator, "Fatbin … code:"
            continue
        last_address = int(address.group(1), 16)
        for name in pending:
            labels[name] = last_address
        pending = []
        branch = BRANCH.search(line)
        backward = False
        if branch:
            target = labels.get(branch.group(1)) if branch.group(1) else int(branch.group(2), 16)
            backward = target is not None and 0 <= target <= last_address
        text = line.split("*/", 1)[-1].split(";", 1)[0].strip()
        yield Instruction(last_address, op, text, backward)
