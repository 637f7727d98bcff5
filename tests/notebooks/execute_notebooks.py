"""Executes every notebook of notebooks_export/ with nbclient against freshly built tools.

Usage: execute_notebooks.py NOTEBOOK_DIR BUILD_DIR

Each notebook runs in a fresh Python 3 kernel, in a temporary working directory. Notebooks on the
Python module (their setup cell imports fasim) get only PYTHONPATH=BUILD_DIR/python: no lesson program,
no fa-sim, which they must not need; for each of them the test also checks that
  - no code cell runs a subprocess;
  - every key result a step cell records (RESULTS[step][key]) equals what the lesson program computes
    (lesson-NN --json's "results", through fasim.lessons), so the Python cells and the lesson never drift;
  - without the module, the setup cell stops with the one line that installs it (%pip install ...).
The others (cells that run the lesson program) get FASIM_BIN=BUILD_DIR/sim/fa-sim and
FASIM_LESSONS_DIR=BUILD_DIR/lessons, so they use exactly the programs this build produced (and never
build or clone anything themselves). A cell that raises fails the test; so does a step cell that
printed nothing. The executed copies are not kept. Ends with 'N passed, N failed'.
"""
import json
import math
import os
import pathlib
import sys
import tempfile
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def is_module_notebook(nb):
    setup = nb.cells[1].source if len(nb.cells) > 1 else ""
    return "import fasim" in setup and "FASIM_BIN" not in setup


def differences(got, want, path):
    """Where a notebook's RESULTS differ from the lesson's: every key the notebook records must be the lesson's,
    numbers equal to 1e-9 relative."""
    if isinstance(got, dict):
        if not isinstance(want, dict):
            return [f"{path}: the lesson has {want!r}"]
        out = []
        for k, v in got.items():
            out += differences(v, want[k], f"{path}.{k}") if k in want else [f"{path}.{k}: not among the lesson's results"]
        return out
    if isinstance(got, list):
        if not isinstance(want, list) or len(got) != len(want):
            return [f"{path}: {len(got)} items, the lesson has {want!r}"[:300]]
        return [d for i, (g, w) in enumerate(zip(got, want)) for d in differences(g, w, f"{path}[{i}]")]
    if isinstance(got, (int, float)) and not isinstance(got, bool) and isinstance(want, (int, float)) and not isinstance(want, bool):
        return [] if math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12) else [f"{path}: {got!r}, the lesson {want!r}"]
    return [] if got == want else [f"{path}: {got!r}, the lesson {want!r}"]


def check_install_message(nb, work):
    """The setup cell alone, without the module on the path and outside a clone: it must stop with the install line."""
    import nbformat
    setup = nbformat.v4.new_notebook(cells=[nb.cells[1]], metadata=nb.metadata)
    saved = os.environ.pop("PYTHONPATH", None)
    try:
        client = NotebookClient(setup, timeout=120, kernel_name="python3", resources={"metadata": {"path": work}})
        try:
            client.execute()
        except CellExecutionError:
            pass
    finally:
        if saved is not None:
            os.environ["PYTHONPATH"] = saved
    errors = [o for o in setup.cells[0].outputs if o.get("output_type") == "error"]
    if not errors:
        return None  # the kernel's Python has fasim installed: nothing to check here
    if errors[0]["ename"] != "ImportError" or "%pip install " not in errors[0]["evalue"]:
        return f"without the module the setup cell raised {errors[0]['ename']}: {errors[0]['evalue']}"
    return None


def main():
    nb_dir, build = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]).resolve()
    fasim_bin = build / "sim" / "fa-sim"
    lessons = build / "lessons"
    module_dir = build / "python"
    if not fasim_bin.exists():
        print(f"notebooks: FAILED: {fasim_bin} is missing: build first (scripts/build.sh)")
        return 1
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(module_dir), os.environ.get("PYTHONPATH", "")) if p)
    sys.path.insert(0, str(module_dir))
    try:
        import fasim
    except ImportError as e:
        print(f"notebooks: FAILED: the Python module is not built in {module_dir} ({e}): build it (scripts/build.sh, "
              "with pybind11-dev and python3-dev installed)")
        return 1
    tools = {"FASIM_BIN": str(fasim_bin), "FASIM_LESSONS_DIR": str(lessons)}
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
        module = is_module_notebook(nb)
        for name, value in tools.items():  # a module notebook must run without the programs
            if module:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        problems = []
        if module:
            problems += [f"cell {c['id']} runs a subprocess" for c in nb.cells
                         if c.cell_type == "code" and "subprocess" in c.source]
            nb.cells.append(nbformat.v4.new_code_cell("import json as _json\nprint('RESULTS=' + _json.dumps(RESULTS))"))
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
            if module:
                message = check_install_message(nb, work)
                if message:
                    problems.append(message)
        if module:
            dump = nb.cells.pop()
            text = "".join(o.get("text", "") for o in dump.outputs if o.get("output_type") == "stream")
            recorded = json.loads(text.split("RESULTS=", 1)[1])
            want = fasim.lessons.results(int(path.name[:2]))
            steps = [c["id"].split("-step-", 1)[1][:-5] for c in nb.cells if c["id"].endswith("-code") and "-step-" in c["id"]]
            problems += [f"step {s} records no RESULTS" for s in steps if s not in recorded]
            problems += differences(recorded, want, "RESULTS")
        if problems:
            print(f"notebooks: {path.name}: FAILED:\n  " + "\n  ".join(problems[:20]))
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
        print(f"notebooks: {path.name}: ok ({time.monotonic() - start:.1f} s, {images} plots"
              + (", on the module alone, its results equal the lesson's)" if module else ")"))
        passed += 1
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
