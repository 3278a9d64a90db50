#!/usr/bin/env python3
"""The [gpu] tests are CTest tests of their own, reported as skipped with a reason where they cannot run.

Usage: gpu_skips.py BUILD_DIR SOURCE_DIR. Checks, from CTest's own list of tests (the CTestTestfile.cmake files
CMake writes; not `ctest --show-only`, which would replace the running ctest's LastTest.log, where
skip_reasons.py reads why each test was skipped):
  - every test file with a [gpu] case has a `<file>:gpu` test that selects the [gpu] cases, labelled gpu,
    with SKIP_RETURN_CODE set, and its other cases stay in `<file>`, which never has a skip code;
  - a `:gpu` test run here exits with that code and prints "skipped: <reason>" in device_reason.h's words
    where there is no usable GPU, and passes (exit 0) where there is one;
  - a selection whose cases all ran is not reported as skipped (exit 0 with the skip code asked for).
"""
import os
import re
import subprocess
import sys

REASONS = ("no CUDA GPU found", "the driver is older than the runtime", "sm_80 or newer needed",
           "no kernels for this GPU", "sm_90a needed", "sm_89 or newer needed")


def fail(message):
    print(f"gpu_skips.py: {message}", file=sys.stderr)
    sys.exit(1)


QUOTED = r'"((?:[^"\\]|\\.)*)"'


def ctest_tests(build):
    """{name: {"command": [...], "properties": {...}}} from every CTestTestfile.cmake under build."""
    tests = {}
    for root, _, files in os.walk(build):
        if "CTestTestfile.cmake" not in files:
            continue
        for line in open(os.path.join(root, "CTestTestfile.cmake"), encoding="utf-8"):
            added = re.match(r"add_test\(\[=\[(.+?)\]=\] (.*)\)$", line.strip())
            if added:
                tests.setdefault(added.group(1), {"properties": {}})["command"] = re.findall(QUOTED, added.group(2))
            props = re.match(r"set_tests_properties\(\[=\[(.+?)\]=\] PROPERTIES (.*)\)$", line.strip())
            if props:
                pairs = re.findall(r"(\w+) " + QUOTED, props.group(2))
                tests.setdefault(props.group(1), {"properties": {}})["properties"].update(pairs)
    return tests


def properties(test):
    return test["properties"]


def main(build, source):
    tests = ctest_tests(build)

    gpu_files = set()
    for root, _, files in os.walk(os.path.join(source, "tests")):
        for f in files:
            if f.endswith(".cpp"):
                text = open(os.path.join(root, f), encoding="utf-8").read()
                for case in re.findall(r"\nTEST_CASE\(([^{]*)\{", "\n" + text):
                    if "[gpu]" in case and '"[.' not in case:
                        gpu_files.add(f[:-4])
    gpu_tests = {n for n in tests if n.endswith(":gpu")}
    expected = {f"attnlab_tests:{stem}:gpu" for stem in gpu_files}
    if not gpu_files:
        fail("no test file has a [gpu] case: the scan is wrong")
    if gpu_tests != expected:
        fail(f"the :gpu tests {sorted(gpu_tests)} are not the files with [gpu] cases {sorted(expected)}")
    for name in sorted(gpu_tests):
        props = properties(tests[name])
        command = tests[name]["command"]
        if props.get("SKIP_RETURN_CODE") != "77" or "gpu" not in props.get("LABELS", "").split(";"):
            fail(f"{name}: SKIP_RETURN_CODE 77 and the label gpu expected, got {props}")
        if not any(arg.endswith("[gpu]~[.]") for arg in command) or "--skip-exit-code" not in command:
            fail(f"{name}: should select its file's [gpu] cases with --skip-exit-code: {command}")
    for name, test in tests.items():
        if name.startswith("attnlab_tests:") and not name.endswith(":gpu"):
            if "SKIP_RETURN_CODE" in properties(test) or not any("~[gpu]" in a for a in test["command"]):
                fail(f"{name}: a test of CPU cases must leave out [gpu] and never count as skipped")

    # Run the smallest [gpu] test as CTest would.
    command = tests["attnlab_tests:test_mma_accumulation:gpu"]["command"]
    run = subprocess.run(command, cwd=source, capture_output=True, text=True)
    if run.returncode == 77:
        said = re.findall(r"skipped: (.+)", run.stdout + run.stderr)
        if not said or not said[0].startswith(REASONS):
            fail(f"skipped without a reason in device_reason.h's words: {said or run.stdout[-400:]}")
        print(f"gpu_skips.py: the [gpu] tests report themselves skipped here: {said[0]}")
    elif run.returncode != 0:
        fail(f"{' '.join(command)} exited {run.returncode}:\n{run.stdout[-2000:]}")
    else:
        print("gpu_skips.py: a GPU is here: the [gpu] test ran")

    # Cases that all ran are not skipped, even when the skip code is asked for.
    binary = command[0]
    plain = subprocess.run([binary, "[#test_device_reason]", "--skip-exit-code", "77"], cwd=source,
                           capture_output=True, text=True)
    if plain.returncode != 0:
        fail(f"test_device_reason's cases with --skip-exit-code exited {plain.returncode}, not 0")
    print(f"gpu_skips.py: {len(gpu_tests)} :gpu tests, each with its skip code; CPU tests never skipped")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: gpu_skips.py BUILD_DIR SOURCE_DIR", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2])
