#!/usr/bin/env python3
"""Prints why CTest's skipped tests were skipped, one line per reason, after `make test`.

CTest's summary lists a skipped test by name only; the reason is in its output (ATTNLAB_SKIP prints
"skipped: <reason>"), which CTest keeps in Testing/Temporary/LastTest.log. Usage: skip_reasons.py LOG.
"""
import re
import sys
from collections import OrderedDict


def skipped_tests(log_text):
    """(test name, [reasons]) for each test in the log whose output names a skip.

    Each test's record starts with "<i>/<n> Test: <name>" and holds its output between "Output:" and
    "<end of output>"."""
    starts = list(re.finditer(r"^\d+/\d+ Test: (.+)$", log_text, flags=re.M))
    for i, start in enumerate(starts):
        block = log_text[start.end():starts[i + 1].start() if i + 1 < len(starts) else len(log_text)]
        output = re.search(r"^Output:\n-+\n(.*?)<end of output>", block, flags=re.M | re.S)
        if not output:
            continue
        # Catch2 wraps a message at 80 columns: its continuation lines keep the message's indent.
        reasons = [" ".join(m.group(1).split()) for m in
                   re.finditer(r"skipped: (.+(?:\n  \S.*)*)", output.group(1))]
        if reasons:
            yield start.group(1).strip(), reasons


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
