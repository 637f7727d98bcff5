"""Measured kernel timings beside the simulator: lesson 09 from Python (its notebook uses these).

The repository commits what fa-validate and torch_sdpa.py measured on real GPUs (cuda/results/, one folder
per run). The module carries a copy of those files (fasim/data/results/, made when the module was built), so
a notebook needs no clone; ``load`` reads them, or a folder or file of your own, and ``predict`` puts the
current simulator's time beside each measurement, modelled as fa-validate models it (the kernel of the
catalog, with the tiles, splits and registers the run recorded). The reading and predicting are lesson 09's
own code (sim/figures/measurements.hpp), so the notebook and ``lesson-09`` agree.

    data = fasim.measured.load()                        # the committed measurements
    m = data["measurements"][0]                         # {"file", "gpu", "gpu_preset", "algo", "N", ..., "measured_s", "predicted_s"}
    now = fasim.measured.predict(data["measurements"], progress=True)    # seconds, or None, per measurement
    fasim.measured.load("cuda/results/2026-11-25-h100-d")               # one run's folder, or one file

``predicted_s`` in a measurement is what the simulator of the day of the run predicted (None where it
recorded none); ``predict`` gives today's. ``data["skipped"]`` says which files and entries were not
compared, and why (failed runs, predictions recorded before a run, kernels fa-sim does not model).
"""

import os
import sys
import time

from . import _fasim

__all__ = ["cuda_tools", "data_dir", "default_dir", "load", "measure", "predict"]


def data_dir():
    """The copy of cuda/results/ packaged with the module (fasim/data/results), or None when it has none."""
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "results")
    return d if os.path.isdir(d) else None


def default_dir():
    """The folder load() reads when given none: the packaged copy, else the source tree the module was built from."""
    return _fasim.measured.default_dir()


def load(path=None):
    """Reads fa-validate result files: a folder (every *.json under it, sorted) or one file; None: default_dir().

    Returns {"path", "files" (those read, relative to path), "skipped" ("FILE: why" for what was not compared),
    "measurements": [{"file", "gpu", "gpu_preset", "driver", "date", "algo" (the kernel), "N", "Nk", "d", "dtype",
    "causal", "batch", "heads", "kv_heads", "launch" ({"Br", "Bc", "q_splits", "kv_splits", "warps",
    "registers_per_thread", "smem_bytes"}: what the run recorded, 0 where nothing; "tile_addresses": "one_per_tile"
    where the kernel copied whole tiles from one address per thread, else "per_chunk"), "measured_s" (the median
    time), "predicted_s" (the prediction recorded when it was measured, or None)}]}. A path that does not exist
    gives no files and no measurements.
    """
    return _fasim.measured.load(str(default_dir() if path is None else path))


def _printer():
    """A progress line, rewritten in place (a carriage return) every 2 seconds and at the end."""
    start = time.monotonic()
    last = [start - 10.0]

    def show(done, total):
        now = time.monotonic()
        if done != total and now - last[0] < 2.0:
            return
        last[0] = now
        print(f"\rpredicting the measurements' configurations: {done:,} of {total:,} ({now - start:.0f} s)",
              end="\n" if done == total else "", flush=True)
        sys.stdout.flush()

    return show


def predict(measurements, progress=False):
    """Today's simulator's time, in seconds, for one measurement (a dict as load() gives them) or a list of them.

    Each is modelled as fa-validate models it: the catalog kernel "algo" on the preset "gpu_preset", with the
    launch the run recorded. None where the simulator has no model for it (no preset, a tile that does not fit).
    A list is predicted on all cores, each distinct configuration once. progress: True prints a line that
    counts the configurations as they finish; or a function f(done, total).
    """
    if isinstance(measurements, dict):
        return _fasim.measured.predict([measurements])[0]
    report = _printer() if progress is True else (progress or None)
    return _fasim.measured.predict(list(measurements), report)


def cuda_tools(folder=None):
    """Where cuda-check and fa-validate are (None: not built there) and whether nvidia-smi lists a GPU.

    folder: a build's cuda/ folder (None: the one of the build the module came from, as lesson 09's --cuda-bin).
    Returns {"folder", "cuda_check", "fa_validate", "gpu_present", "ready"}.
    """
    return _fasim.measured.cuda_tools(str(_fasim.measured.default_cuda_bin() if folder is None else folder))


def measure(folder=None, dtype="fp32", batch=2, heads=8):
    """Runs cuda-check --small, then fa-validate over N 1024 and 4096 at d=64 (lesson 09's --run), on this machine's GPU.

    Needs cuda_tools(folder)["ready"]. Returns {"cuda_check_exit", "fa_validate_exit", "results_file" (load() it),
    "output" (what the tools printed)}.
    """
    return _fasim.measured.measure(str(_fasim.measured.default_cuda_bin() if folder is None else folder),
                                   str(dtype), int(batch), int(heads))


# The packaged copy is what load() and lesson 09 in this module read when given no folder.
if data_dir() is not None:
    _fasim.measured.set_default_dir(data_dir())
