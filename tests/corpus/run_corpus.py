#!/usr/bin/env python3
"""The hostile-input corpus: every case is one attnlab invocation with its expected exit code and the words
its one stderr line must contain (docs/input-contract.md).

A case is a folder tests/corpus/<kind>/<name>/ holding case.json and any input files:
  {
    "issue": "12.3",                       which reproducer it is (free text)
    "args": ["run", "--config", "c.json"],  argv after `attnlab`; {work} is the case's scratch folder; an
                                            argument may be a list of parts as in "generate" (text,
                                            repeat): ["--gpu", [["repeat", "a", 300]]]
    "cwd": "sub",                           optional: run in {work}/sub (created) instead of {work}
    "env": {"ATTNLAB_MAX_MEMORY_GB": "0.25"},
    "generate": {"c.json": [["text", "{\"problem\": "], ["repeat", "[", 90000], ["sparse", 1048576]]},
    "setup": [["mkfifo", "{work}/f.json"]], argv lists run first (never through a shell)
    "exit": 2,
    "words": ["problem", "deeper than"],    each must appear in stderr (case-insensitive)
    "timeout_s": 30,                        a hang fails the case (default 30)
    "max_rss_mb": 400,                      optional: the peak resident memory of attnlab
    "changes": false,                       default false for exit 2: nothing in {work} may be created,
                                            changed or deleted; true lets a successful run write outputs
    "present": ["r/index.html"],            optional: paths under {work} that must exist after the run
    "absent": ["INJECTED"]                  optional: paths under {work} that must not exist after it
  }
Each case runs in a fresh scratch folder holding a copy of its files, so no case can touch the repository.
Contract checked for exit 2: stderr is exactly one line, starting "attnlab: error:", at most 700 characters.
Exit 1 is checked likewise with "attnlab: internal error:" when "exit" is 1.
Usage: run_corpus.py ATTNLAB_BINARY CORPUS_DIR [SCRATCH_DIR] [-k SUBSTRING] [--time-scale F]
--time-scale multiplies every case's timeout_s: the limits are set for an optimized build, and a binary built
with sanitizers runs the same work several times slower (tests/CMakeLists.txt gives the measured factor).
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def snapshot(root):
    """Every path under root (files, folders, links) with its type and content hash."""
    seen = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                seen[rel] = ("link", os.readlink(path))
            elif os.path.isdir(path):
                seen[rel] = ("dir", None)
            elif os.path.isfile(path):
                h = hashlib.sha256()
                with open(path, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
                seen[rel] = ("file", h.hexdigest())
            else:
                seen[rel] = ("other", None)
    return seen


def generate(path, parts):
    with open(path, "wb") as f:
        for part in parts:
            kind = part[0]
            if kind == "text":
                f.write(part[1].encode())
            elif kind == "repeat":
                f.write(part[1].encode() * int(part[2]))
            elif kind == "sparse":  # a hole of n bytes (reads as zeros, takes no disk)
                f.seek(int(part[1]), os.SEEK_CUR)
                f.truncate()
            else:
                raise ValueError(f"unknown generate part {kind}")


def substitute(value, work):
    return value.replace("{work}", work)


def argument(value, work):
    """A string, or a list of parts as in "generate" (text, repeat): long or odd values without a long case.json."""
    if isinstance(value, str):
        return substitute(value, work)
    out = []
    for part in value:
        if part[0] == "text":
            out.append(substitute(part[1], work))
        elif part[0] == "repeat":
            out.append(part[1] * int(part[2]))
        else:
            raise ValueError(f"unknown argument part {part[0]}")
    return "".join(out)


def run_case(binary, case_dir, scratch, time_scale=1.0):
    with open(os.path.join(case_dir, "case.json")) as f:
        case = json.load(f)
    work = os.path.join(scratch, "work")
    shutil.copytree(case_dir, work, symlinks=True, ignore=shutil.ignore_patterns("case.json"))
    for name, parts in case.get("generate", {}).items():
        generate(os.path.join(work, name), parts)
    for argv in case.get("setup", []):
        subprocess.run([substitute(a, work) for a in argv], check=True, cwd=work)
    cwd = os.path.join(work, case["cwd"]) if "cwd" in case else work
    os.makedirs(cwd, exist_ok=True)
    before = snapshot(work)
    env = dict(os.environ)
    env.update({k: substitute(v, work) for k, v in case.get("env", {}).items()})
    argv = [binary] + [argument(a, work) for a in case["args"]]
    timeout = case.get("timeout_s", 30) * time_scale
    out_path, err_path = os.path.join(scratch, "stdout"), os.path.join(scratch, "stderr")
    with open(out_path, "wb") as out, open(err_path, "wb") as errf:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=errf)
    # wait4 gives this child's own peak memory (getrusage of all children would be a running maximum).
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            return [f"did not finish in {timeout:g} s (a hang)"]
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    with open(err_path, "rb") as f:
        proc.stderr = f.read()
    problems = []
    expected = case["exit"]
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode != expected:
        problems.append(f"exit {proc.returncode}, expected {expected}; stderr: {err[:300]!r}")
    if expected in (1, 2):
        lines = err.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        prefix = "attnlab: error:" if expected == 2 else "attnlab: internal error:"
        if len(lines) != 1:
            problems.append(f"stderr has {len(lines)} lines, expected one: {err[:300]!r}")
        elif not lines[0].startswith(prefix):
            problems.append(f"stderr does not start with '{prefix}': {lines[0][:200]!r}")
        elif len(lines[0]) > 700:
            problems.append(f"stderr line is {len(lines[0])} characters long")
    for word in case.get("words", []):
        if word.lower() not in err.lower():
            problems.append(f"stderr lacks '{word}': {err[:300]!r}")
    if "max_rss_mb" in case:
        peak_kb = usage.ru_maxrss
        if peak_kb / 1024 > case["max_rss_mb"]:
            problems.append(f"peak memory {peak_kb / 1024:.0f} MiB over {case['max_rss_mb']} MiB")
    for rel in case.get("present", []):
        if not os.path.lexists(os.path.join(work, rel)):
            problems.append(f"{rel} is missing after the run")
    for rel in case.get("absent", []):
        if os.path.lexists(os.path.join(work, rel)):
            problems.append(f"{rel} exists after the run and must not")
    if not case.get("changes", expected == 0):
        after = snapshot(work)
        created = sorted(set(after) - set(before))
        deleted = sorted(set(before) - set(after))
        changed = sorted(p for p in set(before) & set(after) if before[p] != after[p])
        for label, paths in (("created", created), ("deleted", deleted), ("changed", changed)):
            if paths:
                problems.append(f"{label}: {', '.join(paths[:5])}")
    return problems


def main():
    args = [a for a in sys.argv[1:]]
    pattern = None
    if "-k" in args:
        i = args.index("-k")
        pattern = args[i + 1]
        del args[i:i + 2]
    time_scale = 1.0
    if "--time-scale" in args:
        i = args.index("--time-scale")
        time_scale = float(args[i + 1])
        del args[i:i + 2]
    binary, corpus = os.path.abspath(args[0]), os.path.abspath(args[1])
    scratch_root = os.path.abspath(args[2]) if len(args) > 2 else tempfile.mkdtemp(prefix="attnlab-corpus-")
    os.makedirs(scratch_root, exist_ok=True)
    cases = sorted(os.path.relpath(d, corpus) for d, _, files in os.walk(corpus) if "case.json" in files)
    if pattern:
        cases = [c for c in cases if pattern in c]
    failed = 0
    for c in cases:
        scratch = tempfile.mkdtemp(dir=scratch_root)
        try:
            problems = run_case(binary, os.path.join(corpus, c), scratch, time_scale)
        except Exception as e:  # a broken case is a failure, not a crash of the runner
            problems = [f"case could not run: {e}"]
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if problems:
            failed += 1
            print(f"FAIL {c}")
            for p in problems:
                print(f"     {p}")
    print(f"corpus: {len(cases) - failed} of {len(cases)} cases hold the contract")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
