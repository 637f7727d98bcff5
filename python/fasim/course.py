"""fa-grade for Python tile programs: the same assignments, tests, points and results.json.

A submission is a Python file with a tile program (fasim.tile) and the line that names its assignment,
as FASIM_SUBMISSION does in C++::

    FASIM_SUBMISSION = ("fa2_forward", program)

Grade it (the same C++ grader as fa-grade, course/grader/, through the module)::

    python3 -m fasim.grade my_fa2_forward.py                  # writes results.json, prints the tests
    python3 -m fasim.grade my_fa2_forward.py --results - --seed 7

or from Python: ``fasim.course.grade("fa2_forward", program)["score"]``. Handouts: docs/assignments/.
"""

import argparse
import importlib.util
import os
import pathlib
import re
import sys
import tempfile
import traceback

from . import _fasim

_course = _fasim.course

__all__ = ["assignments", "grade", "load_submission", "main", "SubmissionError"]


class SubmissionError(Exception):
    """A submission file that cannot be loaded: it raised while importing, or names no assignment."""

    def __init__(self, message, assignment=None):
        super().__init__(message)
        self.assignment = assignment  # what the file names, when that much could be read


def assignments():
    """The assignments, their shapes and points, as fa-grade --list shows them: a list of dicts."""
    return _course.assignments()


def grade(assignment, program, seed=1):
    """Grades program(x, p, cfg) for an assignment ('fa2_forward', 'fa2_backward', 'flash_decoding').

    Returns {"results": results.json as a dict, "text": its text as fa-grade writes it, "table": the
    per-test lines fa-grade prints, "score", "max_score"}. The same program and seed give the same text.
    """
    return _course.grade(assignment, program, seed)


def _assignment_named_in(source):
    m = re.search(r"""FASIM_SUBMISSION\s*=\s*\(\s*["']([A-Za-z0-9_]+)["']""", source)
    return m.group(1) if m else None


def load_submission(path):
    """Imports a submission file and returns (assignment, program) from its FASIM_SUBMISSION line.

    Raises SubmissionError with the traceback (what a compiler's messages are to a C++ submission) when
    the file cannot be imported or has no FASIM_SUBMISSION = ("<assignment>", program).
    """
    path = pathlib.Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SubmissionError(f"{path} cannot be read: {e.strerror}") from None
    named = _assignment_named_in(source)
    name = "fasim_submission_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except BaseException as e:  # noqa: BLE001  (a submission's SyntaxError, ImportError, SystemExit ...)
        if isinstance(e, KeyboardInterrupt):
            raise
        lines = traceback.format_exception(type(e), e, e.__traceback__)
        # Only the submission's own frames: importlib's are noise to a student.
        text = "".join(line for line in lines if "importlib._bootstrap" not in line)
        raise SubmissionError(f"{path} could not be loaded:\n{text}", named) from None
    entry = getattr(module, "FASIM_SUBMISSION", None)
    if not (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str) and callable(entry[1])):
        raise SubmissionError(
            f"{path} has no line FASIM_SUBMISSION = (\"<assignment>\", program) naming its assignment and its "
            "tile program; add it at the end of the file (the starters in course/starter/ have it)", named)
    return entry


def _write(path, text):
    if path == "-":
        sys.stdout.write(text)
        return
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".results-", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main(argv=None):
    """python3 -m fasim.grade FILE.py [--assignment A] [--seed N] [--results FILE|-] [--list] [--version]."""
    ap = argparse.ArgumentParser(
        prog="python3 -m fasim.grade",
        description="fa-grade for a Python tile program: grades it and writes Gradescope's results.json")
    ap.add_argument("submission", nargs="?", help="the Python file with the tile program and FASIM_SUBMISSION")
    ap.add_argument("--assignment", help="which assignment to grade (default: the one FASIM_SUBMISSION names)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random inputs (the same seed gives the same results.json)")
    ap.add_argument("--results", default="results.json", metavar="FILE", help="where results.json goes ('-': stdout)")
    ap.add_argument("--list", action="store_true", help="list the assignments, their shapes and points")
    ap.add_argument("--version", action="store_true", help="print the version and commit")
    args = ap.parse_args(argv)
    err = sys.stderr
    if args.version:
        print("fa-grade " + _course.version())
        return 0
    if args.list:
        for a in assignments():
            print(f"{a['id']}: {a['title']} ({a['max_score']:g} points; the reference is fa-sim's {a['reference']})")
            for s in a["shapes"]:
                print("  shape: " + s["label"])
        return 0
    if not args.submission:
        print("python3 -m fasim.grade: error: no submission file: pass the Python file to grade "
              "(python3 -m fasim.grade --list shows the assignments)", file=err)
        return 2
    if args.seed < 0:
        print(f"python3 -m fasim.grade: error: --seed {args.seed} is out of range: a seed is 0..9223372036854775807. "
              "Fix: pass a non-negative integer", file=err)
        return 2
    ids = [a["id"] for a in assignments()]
    if args.assignment is not None and args.assignment not in ids:
        print(f"python3 -m fasim.grade: error: --assignment {args.assignment} is unknown: it must be one of "
              f"{', '.join(ids)}. Fix: pass one of those (--list shows them)", file=err)
        return 2
    try:
        named, program = load_submission(args.submission)
    except SubmissionError as e:
        assignment = args.assignment or (e.assignment if e.assignment in ids else None)
        if assignment is None:
            print(f"python3 -m fasim.grade: error: {e}\nFix: pass --assignment so that the record of the failed "
                  "submission names it", file=err)
            return 2
        # As fa-grade --build-log: score 0, the error as output, so that Gradescope shows it.
        record = _course.build_failure(assignment, str(e))
        print(str(e), file=err)
        _write(args.results, record["text"])
        return 0
    assignment = args.assignment or named
    if assignment != named:
        print(f"python3 -m fasim.grade: error: --assignment {assignment} but {args.submission} submits {named}. "
              f"Fix: pass --assignment {named}, or change the file's FASIM_SUBMISSION line", file=err)
        return 2
    try:
        g = grade(assignment, program, args.seed)
    except _fasim.UsageError as e:
        print(f"python3 -m fasim.grade: error: {e}", file=err)
        return 2
    (err if args.results == "-" else sys.stdout).write(g["table"])  # stdout carries the JSON then
    _write(args.results, g["text"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
