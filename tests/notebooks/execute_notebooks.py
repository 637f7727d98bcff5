"""Executes every notebook of notebooks_export/ with nbclient against freshly built tools.

Usage: execute_notebooks.py NOTEBOOK_DIR BUILD_DIR

Each notebook runs in a fresh Python 3 kernel, in a temporary working directory, with
FASIM_BIN=BUILD_DIR/sim/fa-sim and FASIM_LESSONS_DIR=BUILD_DIR/lessons, so it uses exactly
the programs this build produced (and never builds or clones anything itself). A cell that
raises fails the test; so does a step cell that printed nothing. The executed copies are
not kept. Ends with 'N passed, N failed'.
"""
import os
import pathlib
import sys
import tempfile
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def main():
    nb_dir, build = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]).resolve()
    fasim = build / "sim" / "fa-sim"
    lessons = build / "lessons"
    if not fasim.exists():
        print(f"notebooks: FAILED: {fasim} is missing: build first (scripts/build.sh)")
        return 1
    os.environ["FASIM_BIN"] = str(fasim)
    os.environ["FASIM_LESSONS_DIR"] = str(lessons)
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # quieter kernels (debugpy)
    notebooks = sorted(nb_dir.glob("*.ipynb"))
    built = sorted(p for p in lessons.glob("lesson-[0-9][0-9]") if p.is_file())
    if len(notebooks) != len(built):  # one notebook per lesson program
        print(f"notebooks: FAILED: {len(built)} lesson programs in {lessons} but {len(notebooks)} notebooks "
              f"in {nb_dir}: run notebooks_export/regenerate.sh")
        return 1
    passed = failed = 0
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        start = time.monotonic()
        with tempfile.TemporaryDirectory() as work:
            client = NotebookClient(nb, timeout=600, kernel_name="python3",
                                    resources={"metadata": {"path": work}})
            try:
                client.execute()
            except CellExecutionError as e:
                print(f"notebooks: {path.name}: FAILED\n{e}")
                failed += 1
                continue
        empty = [c["id"] for c in nb.cells
                 if c.cell_type == "code" and c["id"].endswith("-code")
                 and not any(o.get("output_type") == "stream" and o.get("text") for o in c.outputs)]
        if empty:
            print(f"notebooks: {path.name}: FAILED: cells printed nothing: {', '.join(empty)}")
            failed += 1
            continue
        images = sum(1 for c in nb.cells if c.cell_type == "code" for o in c.outputs
                     if o.get("output_type") == "display_data" and "image/png" in o.get("data", {}))
        print(f"notebooks: {path.name}: ok ({time.monotonic() - start:.1f} s, {images} plots)")
        passed += 1
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
