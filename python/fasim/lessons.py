"""The lessons' exercises and results from Python (the notebooks in notebooks_export/ use these).

Each lesson program (lesson-01 ... lesson-11) is compiled into the module too, so a notebook checks its
answers without running a program in a subprocess. The checks compute the right answer with the
simulator when they grade, as ``lesson-NN --check`` does, and never print it.

    fasim.lessons.questions(3)                                  # the exercises of lesson 03
    fasim.lessons.check(3, {"max_n": 32768, "growth": None})    # grades the answers given
    fasim.lessons.results(3)["quadratic"]                       # what lesson-03 --json computes
    fasim.lessons.show(3, "kernels")                            # one step as lesson-03 prints it

Keyword arguments are the lesson's flags: ``gpu="H100-SXM"`` is ``--gpu H100-SXM``, ``N=8192`` is
``--N 8192``, ``trace_N=16`` is ``--trace-N 16`` (``lesson-NN --help`` lists them).
"""

import atexit
import json
import os
import tempfile
import textwrap

from . import _fasim

__all__ = ["check", "document", "numbers", "questions", "results", "run", "show"]


def numbers():
    """The lessons in this module: [1, 2, ..., 11]."""
    return list(_fasim.lessons.numbers())


def _flags(kwargs):
    args = []
    for key, value in kwargs.items():
        if value is None or value is False:
            continue
        if key == "gpu" and isinstance(value, _fasim.Gpu):  # a GPU made in Python: the lesson reads it as a file
            with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="fasim-gpu-", delete=False) as f:
                json.dump(value.to_dict(), f)
            _temporary.append(f.name)
            args += ["--gpu-file", f.name]
            continue
        flag = "--" + key.replace("_", "-")
        args += [flag] if value is True else [flag, str(value)]
    return args


_temporary = []


@atexit.register
def _remove_temporary():
    for path in _temporary:
        try:
            os.unlink(path)
        except OSError:
            pass


def run(lesson, *args, **flags):
    """Runs lesson-NN with these arguments (and flags) in this process; returns what it printed.

    Raises fasim.UsageError with the lesson's own message when it exits with an error.
    """
    rc, out, err = _fasim.lessons.run(int(lesson), [str(a) for a in args] + _flags(flags))
    if rc not in (0, 1) or (rc == 1 and "--check" not in args):
        raise _fasim.UsageError(err.strip() or f"lesson {lesson} exited with {rc}")
    return out


def document(lesson, **flags):
    """lesson-NN --json: the exercises, the parameters and every step's key results, as a dict."""
    return json.loads(run(lesson, "--json", **flags))


def results(lesson, **flags):
    """Every step's key results (lesson-NN --json's "results"), computed now by the lesson."""
    return document(lesson, **flags)["results"]


def show(lesson, step, **flags):
    """Prints one step as the lesson program prints it (without its prose)."""
    print(run(lesson, "--only", step, "--no-prose", **flags), end="")


def questions(lesson, **flags):
    """Prints the lesson's exercises (for the GPU in flags) and returns them as dicts."""
    exercises = document(lesson, **flags)["exercises"]
    for ex in exercises:
        print(textwrap.fill("[" + ex["id"] + "] " + ex["question"], 79, subsequent_indent="    "))
        print(textwrap.fill("Answer" + (" (" + ex["unit"] + ")" if ex["unit"] else "") + ": " + ex["tolerance"] + ".",
                            79, initial_indent="    ", subsequent_indent="    "))
        print()
    return exercises


def check(lesson, answers, **flags):
    """Grades answers {exercise id: answer} (None: not answered yet), printing a line for each.

    Returns lesson-NN --check --json's record of the answers given (None when none was).
    """
    given = {k: v for k, v in answers.items() if v is not None}
    for ex_id, answer in answers.items():
        if answer is None:
            print(ex_id + ": no answer yet")
    if not given:
        return None
    args = []
    for ex_id, answer in given.items():
        args += ["--check", f"{ex_id}={answer}"]
    print(run(lesson, *args, **flags), end="")
    return json.loads(run(lesson, *args, "--json", **flags))
