"""fa-sim from Python: simulate attention on a GPU model, run its tile programs on numbers, trace them.

    import fasim, numpy as np
    r = fasim.simulate("fa2", N=4096)                 # fa-sim --algo fa2 --N 4096 --json, as a dict
    r["hbm"]["read_bytes"], r["time"]["predicted_s"]
    out = fasim.run("fa2", Q, K, V)                    # Q [B, H, N, d], K/V [B, KV, Nk, d]
    out["O"], out["lse"], out["hbm"]

Every function is documented (help(fasim.simulate)); python/README.md has an example of each, and
docs/output-schema.md the keys of the dicts. Bad arguments raise fasim.UsageError, a ValueError with
fa-sim's one-line message: the value, what is allowed, and a fix.
"""

from ._fasim import (  # noqa: F401  (the compiled module: python/src/)
    SCHEMA_VERSION,
    Gpu,
    UsageError,
    __version__,
    algorithms,
    gpu,
    gpu_from_dict,
    gpus,
    kernels,
    load_gpu_file,
    random_normal,
    run,
    run_backward,
    simulate,
    sweep,
    trace,
)

from . import course, lessons, measured, text, tile  # noqa: E402,F401  (tile programs in Python, their grader; the lessons; measurements)

__all__ = [
    "SCHEMA_VERSION",
    "Gpu",
    "UsageError",
    "algorithms",
    "course",
    "gpu",
    "gpu_from_dict",
    "gpus",
    "kernels",
    "lessons",
    "load_gpu_file",
    "measured",
    "random_normal",
    "run",
    "run_backward",
    "simulate",
    "sweep",
    "text",
    "tile",
    "trace",
]
