#!/usr/bin/env python3
"""Runs the code blocks of README.md, docs/*.md and notebooks/README.md that are marked runnable, and checks
their links.

A fenced block whose info string holds the word `runnable` is run: ```sh runnable with bash -euo pipefail,
```python runnable with the Python the module was built for (/usr/bin/python3 unless --python says
otherwise). Each block runs alone, in a fresh temporary working folder holding links to the repository's
configs/, sim/, kernels/ and notebooks/ and a link `build` to the build folder, so a block reads as a user types it
from the repository root (`build/bin/attnlab run --config configs/default.json`); the build's Python
module is on PYTHONPATH. A block may not call `make` (blocks stay seconds long: small configs, the model
backend), and each has a time limit. A failure names the block (file:line), its exit code and the end of
its output.

Every relative link of those files must name a file or folder of the repository, and a `#fragment` into a
Markdown file one of its headings (GitHub's anchors).

Usage: run_doc_blocks.py BUILD_DIR [--repo DIR] [--python EXE] [--timeout S] [--keep] [FILE.md ...]
(default files: README.md, docs/*.md, notebooks/README.md)
Exit code 0 when every block passed and every link resolves, 1 otherwise.
"""
import argparse
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unicodedata

# What a block's working folder holds: links to the repository's folders a block reads, and `build`; and
# folders a block may cd into, made of links to their files, so that `..` from inside them is the working
# folder (`cd notebooks && source ../build/env.sh`).
LINKED_FOLDERS = ("configs", "sim", "kernels")  # kernels/bench: the measurements presets read (report.baselines)
FOLDERS_OF_LINKS = ("notebooks",)
LANGUAGES = {"sh": "bash", "bash": "bash", "python": "python"}
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
CALLS_MAKE = re.compile(r"(^|[;&|(]|\bthen|\bdo)\s*make\b", re.MULTILINE)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)(?:\s+\"[^\"]*\")?\)"  # [text](target "title")
                  r"|!\[[^\]]*\]\((?P<image>[^)\s]+)\)")                             # ![alt](image)


class Block:
    def __init__(self, path, line, info, text):
        self.path, self.line, self.info, self.text = path, line, info, text

    @property
    def words(self):
        return self.info.split()

    @property
    def runnable(self):
        return "runnable" in self.words[1:]

    def where(self, root):
        return f"{shown(self.path, root)}:{self.line}"


def shown(path, root):
    """A file as messages name it: relative to the repository where it lies inside."""
    return os.path.relpath(path, root) if str(path).startswith(str(root) + os.sep) else str(path)


def fenced_blocks(path):
    """Every fenced code block of a Markdown file: its opening line (1-based), info string and text."""
    blocks, lines = [], path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, start, body = m.group("fence"), i + 1, []
        i += 1
        while i < len(lines):
            close = FENCE.match(lines[i])
            if close and close.group("fence")[0] == fence[0] and len(close.group("fence")) >= len(fence) \
                    and not close.group("info").strip():
                break
            body.append(lines[i])
            i += 1
        blocks.append(Block(path, start, m.group("info").strip(), "\n".join(body) + "\n"))
        i += 1
    return blocks


def heading_anchors(path):
    """GitHub's anchors of a Markdown file's headings: lower case, punctuation dropped, spaces to hyphens."""
    anchors, counts, in_fence = set(), {}, False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if in_fence or not m:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1)).lower()
        slug = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN").replace(" ", "-")
        n = counts.get(slug, 0)
        counts[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def link_failures(path, root):
    """Relative links of `path` that name nothing in the repository."""
    failures, text = [], path.read_text(encoding="utf-8")
    in_fence = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
        if in_fence:
            continue
        for m in LINK.finditer(line):
            target = m.group("target") or m.group("image")
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, fragment = target.partition("#")
            resolved = (path.parent / file_part).resolve() if file_part else path
            if not resolved.exists():
                failures.append(f"{shown(path, root)}:{number}: link to '{target}': no such file")
            elif not str(resolved).startswith(str(root)):
                failures.append(f"{shown(path, root)}:{number}: link to '{target}' leaves the repository")
            elif fragment and resolved.suffix == ".md" and fragment not in heading_anchors(resolved):
                failures.append(f"{shown(path, root)}:{number}: link to '{target}': no heading has that anchor")
    return failures


def working_folder(root, build):
    folder = pathlib.Path(tempfile.mkdtemp(prefix="attnlab-doc-"))
    for name in LINKED_FOLDERS:
        (folder / name).symlink_to(root / name, target_is_directory=True)
    for name in FOLDERS_OF_LINKS:
        (folder / name).mkdir()
        for entry in (root / name).iterdir():
            (folder / name / entry.name).symlink_to(entry)
    (folder / "build").symlink_to(build, target_is_directory=True)
    return folder


def run_block(block, root, build, python, timeout, keep):
    """Runs one block; returns None when it passed, else a message naming it."""
    language = LANGUAGES.get(block.words[0] if block.words else "")
    where = block.where(root)
    if language is None:
        return f"{where}: a runnable block must be sh, bash or python (got '{block.info}')"
    if language == "bash" and CALLS_MAKE.search(block.text):
        return f"{where}: a runnable block may not call make (blocks stay fast; the build is the suite's own)"
    folder = working_folder(root, build)
    script_name = "block.py" if language == "python" else "block.sh"
    script = pathlib.Path(tempfile.mkdtemp(prefix="attnlab-doc-block-")) / script_name
    script.write_text(block.text, encoding="utf-8")
    command = [python, str(script)] if language == "python" else ["bash", "-euo", "pipefail", str(script)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(build / "python"), env.get("PYTHONPATH")) if p)
    env.pop("DISPLAY", None)  # no window on the tester's screen: a block that draws uses xvfb-run
    env.pop("WAYLAND_DISPLAY", None)
    started = time.monotonic()
    # Its own process group, so that a block past its time is stopped with everything it started.
    process = subprocess.Popen(command, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, status = process.communicate(timeout=timeout)[0], process.returncode
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, status = process.communicate()[0], None
    output = output.decode("utf-8", "replace")
    seconds = time.monotonic() - started
    if status == 0 or not keep:
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(script.parent, ignore_errors=True)
    if status == 0:
        print(f"ok   {where} ({seconds:.1f} s)")
        return None
    tail = "\n".join("    " + line for line in output.rstrip().splitlines()[-25:])
    why = f"ran past {timeout} s" if status is None else f"exit code {status}"
    kept = f" (working folder kept: {folder})" if keep else ""
    return f"{where}: the block failed, {why}{kept}; the end of its output:\n{tail}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", type=pathlib.Path, help="the build folder (holds bin/attnlab and python/)")
    parser.add_argument("files", nargs="*", type=pathlib.Path,
                        help="Markdown files (default: README.md, docs/*.md, notebooks/README.md)")
    parser.add_argument("--repo", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parents[2])
    parser.add_argument("--python", default="/usr/bin/python3", help="the interpreter of python blocks")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds each block may take")
    parser.add_argument("--keep", action="store_true", help="keep the working folders of failed blocks")
    args = parser.parse_args()
    root, build = args.repo.resolve(), args.build.resolve()
    if not (build / "bin" / "attnlab").is_file():
        print(f"run_doc_blocks: {build}/bin/attnlab is missing: build first", file=sys.stderr)
        return 1
    files = [f.resolve() for f in args.files] or \
        [root / "README.md"] + sorted((root / "docs").glob("*.md")) + [root / "notebooks" / "README.md"]
    failures, runnable = [], 0
    for path in files:
        failures += link_failures(path, root)
        for block in fenced_blocks(path):
            if block.runnable:
                runnable += 1
                if (message := run_block(block, root, build, args.python, args.timeout, args.keep)) is not None:
                    failures.append(message)
    if runnable == 0:
        failures.append("no block marked runnable in " + ", ".join(shown(f, root) for f in files))
    for message in failures:
        print("FAIL " + message)
    print(f"run_doc_blocks: {runnable} runnable blocks in {len(files)} files, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
