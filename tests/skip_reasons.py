#!/usr/bin/env python3
"""Prints why CTest's skipped tests were skipped, one line per reason, after `make test`.

CTest's summary lists a skipped test by name only; the reason is in its output (ATTNLAB_SKIP prints
"skipped: <reason>"), which CTest keeps in Testing/Temporary/LastTest.log. Usage: skip_reasons.py LOG.
"""
import re
import sys
from collections import OrderedDict


def skipped_tests(log_text):
    """(test name, [reasons]) for each test in the log whose output names a skip."""
    blocks = re.split(r"^-{58}\n(?=\d+/\d+ Testing: )", log_text, flags=re.M)
    for block in blocks:
        name = re.search(r"^\d+/\d+ Test: (.+)$", block, flags=re.M)
        output = re.search(r"^Output:\n-+\n(.*?)<end of output>", block, flags=re.M | re.S)
        if not name or not output:
            continue
        reasons = re.findall(r"skipped: (.+)$", output.group(1), flags=re.M)
        if reasons:
            yield name.group(1).strip(), reasons


def main(argv):
    if len(argv) != 2:
        print("usage: skip_reasons.py Testing/Temporary/LastTest.log", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        print(f"skip_reasons.py: {argv[1]}: {e.strerror}", file=sys.stderr)
        return 2
    by_reason = OrderedDict()
    for test, reasons in skipped_tests(text):
        for reason in OrderedDict.fromkeys(reasons):
            by_reason.setdefault(reason, []).append(test)
    for reason, tests in by_reason.items():
        print(f"skipped ({reason}): {len(tests)} test{'s' if len(tests) != 1 else ''} — {', '.join(tests)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
