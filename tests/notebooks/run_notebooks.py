#!/usr/bin/env python3
"""Executes every notebook in notebooks/ headlessly against this build's `attnlab` module (make test).

Usage: run_notebooks.py <notebooks folder>, with the module on PYTHONPATH. Each notebook must be stored
without outputs (a stored output would go stale when the engine changes, and reviews would diff pictures),
and must execute top to bottom without an error; the notebooks check their own teaching claims with
assert. Plots go to matplotlib's Agg backend. The notebooks run with their own folder as the working
folder, as they do when a user opens them from notebooks/ in Jupyter; nothing is written back.
"""
import atexit
import os
import shutil
import sys
import tempfile
import time

import nbclient
import nbformat

CELL_TIMEOUT_S = 300  # one cell; the slowest take seconds on CI's 2-core machine


def stored_outputs(nb):
    """The code cells that carry outputs or an execution count."""
    return [i for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: run_notebooks.py <notebooks folder>")
    folder = os.path.abspath(sys.argv[1])
    os.environ["MPLBACKEND"] = "Agg"
    # Jupyter's connection files, IPython's profile and matplotlib's font cache in a folder of this run's
    # own, removed at the end: nothing lands in the user's home, and a home that cannot be written is fine.
    scratch = tempfile.mkdtemp(prefix="attnlab-notebooks-")
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    for var, sub in (("JUPYTER_RUNTIME_DIR", "jupyter"), ("IPYTHONDIR", "ipython"), ("MPLCONFIGDIR", "matplotlib")):
        os.environ[var] = os.path.join(scratch, sub)
        os.makedirs(os.environ[var])
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # ipykernel's debugger notice about frozen modules
    # The kernels start in the notebooks' folder: relative entries of PYTHONPATH would point elsewhere there.
    if os.environ.get("PYTHONPATH"):
        os.environ["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p) for p in os.environ["PYTHONPATH"].split(os.pathsep))
    names = sorted(n for n in os.listdir(folder) if n.endswith(".ipynb"))
    if not names:
        sys.exit(f"notebooks: none in {folder}")
    failed = []
    for name in names:
        path = os.path.join(folder, name)
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        if cells := stored_outputs(nb):
            failed.append(name)
            print(f"{name}: stored with outputs in code cells {cells} (clear them before committing)", file=sys.stderr)
            continue
        start = time.monotonic()
        try:
            nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                    resources={"metadata": {"path": folder}}).execute()
        except nbclient.exceptions.CellExecutionError as err:
            failed.append(name)
            print(f"{name}: {err}", file=sys.stderr)
            continue
        print(f"{name}: ran in {time.monotonic() - start:.1f} s")
    if failed:
        sys.exit(f"notebooks: {len(failed)} of {len(names)} failed: {', '.join(failed)}")
    print(f"notebooks: {len(names)} of {len(names)} ran")


if __name__ == "__main__":
    main()
