"""Python tile programs graded by fa-grade's grader through the module (fasim.tile, fasim.course).

The Python twins of the course's C++ submissions (course/{starter,solutions,wrong}/*.py): the solutions
score full marks, the starters 0, each known-wrong submission is rejected by the tests named for its
mistake while the tests it gets right pass (as course/tests/CMakeLists.txt checks the C++ ones), and
each twin writes the very bytes of results.json its C++ twin's grader writes. Then the tile API's
lifetimes and errors: a tile kept after its block raises TileError, not a crash.

Run by CTest (python_course) with PYTHONPATH at the built package and FASIM_COURSE_BIN at build/course
(the C++ graders); by hand: PYTHONPATH=build/python FASIM_COURSE_BIN=build/course python3 -m pytest tests/python/test_course.py
"""

import gc
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import fasim
from fasim.tile import (Fill, Fn, GlobalTensor, KernelDesc, Space, TileError, fused_tensors, per_row, view)

ROOT = pathlib.Path(__file__).resolve().parents[2]
COURSE = ROOT / "course"
CPP_GRADERS = os.environ.get("FASIM_COURSE_BIN", "")

O = "O equals exact attention"
LSE = "LSE equals the exact log-sum-exp"


def load(relative):
    """(assignment, program) of a course file, e.g. 'solutions/fa2_forward'."""
    return fasim.course.load_submission(COURSE / (relative + ".py"))


def graded(relative, seed=1):
    assignment, program = load(relative)
    return fasim.course.grade(assignment, program, seed)


def named_tests(g, pattern):
    found = [t for t in g["results"]["tests"] if pattern in t["name"]]
    assert found, f"no test named like {pattern!r}"
    return found


def check_record(g):
    """Gradescope's fields and the grader's provenance in every record (grade_and_check.cmake's checks)."""
    r = g["results"]
    assert json.loads(g["text"]) == r and g["text"].endswith("\n")
    assert r["score"] == g["score"] and sum(t["max_score"] for t in r["tests"]) == g["max_score"]
    assert r["extra_data"]["tool"] == "fa-grade" and "seed" in r["extra_data"]
    for t in r["tests"]:
        for key in ("name", "score", "max_score", "visibility", "output", "extra_data"):
            assert key in t, key
        assert t["extra_data"]["version"].split(" ")[0].count(".") == 2


# ---- the course's Python submissions ---------------------------------------------------------------

@pytest.mark.parametrize("assignment", ["fa2_forward", "fa2_backward", "flash_decoding"])
def test_solution_full_marks_deterministically(assignment):
    g = graded("solutions/" + assignment)
    check_record(g)
    assert g["score"] == g["max_score"] == next(a["max_score"] for a in fasim.course.assignments() if a["id"] == assignment)
    assert graded("solutions/" + assignment)["text"] == g["text"]  # the same seed, the same bytes


def test_solution_full_marks_seed_7():
    g = graded("solutions/fa2_forward", seed=7)
    assert g["score"] == g["max_score"] and g["results"]["extra_data"]["seed"] == 7


@pytest.mark.parametrize("assignment", ["fa2_forward", "fa2_backward", "flash_decoding"])
def test_starter_runs_and_scores_zero(assignment):
    g = graded("starter/" + assignment)
    check_record(g)
    assert g["score"] == 0
    assert "your program stopped" not in g["text"]  # it runs; it computes nothing yet


# (file, tests that must fail, tests that must pass): course/tests/CMakeLists.txt's, for the C++ twins.
WRONG = [
    ("no_rescale", [O + ": N = Nk = 64"], [LSE]),
    ("divide_every_step", [O + ": N = Nk = 64"], [LSE]),
    ("causal_offset", [O + ": causal, Nq < Nk", O + ": causal, Nq > Nk"],
     [O + ": causal: N = Nk = 48", O + ": N = Nk = 64", O + ": Nq != Nk"]),
    ("ragged_tile_dropped", [O + ": ragged", O + ": Nq != Nk", O + ": causal, Nq < Nk"],
     [O + ": N = Nk = 64", O + ": causal: N = Nk = 48"]),
    ("lse_not_saved", [LSE], [O]),
    ("kv_reread_per_row", ["HBM traffic"], [O, LSE]),
    ("backward_no_D", ["dQ equals", "dK equals"], ["dV equals"]),
    ("decoding_unweighted_combine", [O + ": one query row, Nk = 300, 4 splits", O + ": MQA"], [O + ": one split", LSE]),
]


@pytest.mark.parametrize("name,must_fail,must_pass", WRONG, ids=[w[0] for w in WRONG])
def test_wrong_submission_rejected_for_its_mistake(name, must_fail, must_pass):
    g = graded("wrong/" + name)
    check_record(g)
    assert 0 < g["score"] < g["max_score"], g["table"]
    for pattern in must_fail:
        for t in named_tests(g, pattern):
            assert t["score"] < t["max_score"], f"{t['name']} should fail:\n{g['table']}"
    for pattern in must_pass:
        for t in named_tests(g, pattern):
            assert t["score"] == t["max_score"], f"{t['name']} should pass:\n{t['output']}"


def test_traffic_mistake_is_caught_by_traffic_only():
    g = graded("wrong/kv_reread_per_row")
    traffic = named_tests(g, "HBM traffic")
    assert all(t["score"] == 0 for t in traffic)
    assert "K: read" in traffic[1]["output"]  # the per-tensor table names what was re-read


TWINS = [f"solutions/{a}" for a in ("fa2_forward", "fa2_backward", "flash_decoding")] + [f"wrong/{w[0]}" for w in WRONG]


@pytest.mark.skipif(not CPP_GRADERS, reason="FASIM_COURSE_BIN does not name build/course (the C++ graders)")
@pytest.mark.parametrize("relative", TWINS)
def test_python_twin_writes_the_cpp_graders_bytes(relative, tmp_path):
    exe = pathlib.Path(CPP_GRADERS) / ("fa-grade-" + relative.replace("/", "-").replace("_", "-"))
    out = tmp_path / "results.json"
    subprocess.run([str(exe), "--seed", "3", "--results", str(out)], check=True, capture_output=True)
    assert graded(relative, seed=3)["text"] == out.read_text(encoding="utf-8")


# ---- python3 -m fasim.grade -----------------------------------------------------------------------------

def grade_cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, "-m", "fasim.grade", *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=env)


def test_cli_writes_results_json(tmp_path):
    r = grade_cli(COURSE / "solutions" / "fa2_forward.py", "--seed", "2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "total 100 / 100" in r.stdout
    data = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert data["score"] == 100 and data["extra_data"]["seed"] == 2
    assert (tmp_path / "results.json").read_text(encoding="utf-8") == graded("solutions/fa2_forward", seed=2)["text"]


def test_cli_results_to_stdout(tmp_path):
    r = grade_cli(COURSE / "wrong" / "lse_not_saved.py", "--results", "-", cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["score"] < 100 and "total" in r.stderr


def test_cli_submission_that_does_not_load_scores_zero_with_the_error(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text('from fasim.tile import *\n\ndef program(x, p, cfg)\n    pass\n\nFASIM_SUBMISSION = ("fa2_backward", program)\n')
    r = grade_cli(broken, cwd=tmp_path)
    assert r.returncode == 0
    data = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert data["score"] == 0 and data["extra_data"]["assignment"] == "fa2_backward"
    assert "SyntaxError" in data["tests"][0]["output"]


def test_cli_errors(tmp_path):
    nameless = tmp_path / "nameless.py"
    nameless.write_text("def program(x, p, cfg):\n    pass\n")
    r = grade_cli(nameless, cwd=tmp_path)
    assert r.returncode == 2 and "FASIM_SUBMISSION" in r.stderr and "--assignment" in r.stderr
    r = grade_cli(COURSE / "solutions" / "fa2_forward.py", "--assignment", "fa3", cwd=tmp_path)
    assert r.returncode == 2 and "fa2_forward, fa2_backward, flash_decoding" in r.stderr
    r = grade_cli(COURSE / "solutions" / "fa2_forward.py", "--assignment", "fa2_backward", cwd=tmp_path)
    assert r.returncode == 2 and "submits fa2_forward" in r.stderr
    assert not (tmp_path / "results.json").exists()
    r = grade_cli("--list", cwd=tmp_path)
    assert r.returncode == 0 and "fa2_forward: FlashAttention-2 forward (100 points" in r.stdout
    r = grade_cli("--version", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("fa-grade " + fasim.__version__)


def test_grade_argument_errors():
    _, program = load("solutions/fa2_forward")
    with pytest.raises(fasim.UsageError, match="fa2_forward, fa2_backward, flash_decoding"):
        fasim.course.grade("fa3", program)
    with pytest.raises(fasim.UsageError, match="program"):
        fasim.course.grade("fa2_forward", 42)
    with pytest.raises(fasim.UsageError, match="seed"):
        fasim.course.grade("fa2_forward", program, -1)


# ---- the tile API: the same executors as the C++ programs ------------------------------------------------

def inputs(N=50, Nk=70, heads=2, d=16, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((1, heads, N, d)), rng.standard_normal((1, heads, Nk, d)),
            rng.standard_normal((1, heads, Nk, d)))


@pytest.mark.parametrize("causal", [False, True])
def test_python_program_runs_like_the_builtin(causal):
    Q, K, V = inputs()
    _, program = load("solutions/fa2_forward")
    ours = fasim.run("fa2", Q, K, V, causal=causal, Br=16, Bc=16, program=program)
    builtin = fasim.run("fa2", Q, K, V, causal=causal, Br=16, Bc=16)
    assert np.array_equal(ours["O"], builtin["O"]) and np.array_equal(ours["lse"], builtin["lse"])
    assert ours["hbm"] == builtin["hbm"] and ours["flops"] == builtin["flops"]


def test_python_backward_runs_like_the_builtin():
    Q, K, V = inputs(N=40, Nk=57)
    dO = np.random.default_rng(1).standard_normal(Q.shape)
    _, program = load("solutions/fa2_backward")
    ours = fasim.run_backward("fa2", Q, K, V, dO, Br=16, Bc=16, program=program)
    builtin = fasim.run_backward("fa2", Q, K, V, dO, Br=16, Bc=16)
    for g in ("dQ", "dK", "dV"):
        assert np.array_equal(ours[g], builtin[g]), g
    assert ours["hbm"] == builtin["hbm"]


def test_python_program_traced():
    Q, K, V = inputs(N=8, Nk=8, heads=1, d=4)
    _, program = load("solutions/fa2_forward")
    steps = fasim.trace("fa2", Q, K, V, program=program)
    builtin = fasim.trace("fa2", Q, K, V)
    assert [(s["kind"], s["result"]) for s in steps] == [(s["kind"], s["result"]) for s in builtin]


def test_run_program_must_be_callable():
    Q, K, V = inputs(N=16, Nk=16)
    with pytest.raises(fasim.UsageError, match="program"):
        fasim.run("fa2", Q, K, V, program="fa2")


def run_body(body, declare=None):
    """Runs body(b, Q, O) as one block of a kernel over a tiny problem (fasim.run with a program)."""
    Q, K, V = inputs(N=16, Nk=16, heads=1)

    def program(x, p, cfg):
        Qt, Kt, Vt, Ot, LSEt = fused_tensors(x, p, cfg.Br, cfg.Bc)
        if declare:
            declare(x)
        x.launch(KernelDesc("k", "a test kernel", 1, 1, cfg.warps), lambda b, bh, i: body(b, Qt, Ot))

    return fasim.run("fa2", Q, K, V, Br=16, Bc=16, program=program)


# ---- lifetimes: nothing Python keeps can reach freed memory -----------------------------------------------

def test_tile_kept_after_its_block_raises_tile_error():
    kept, blocks, executors = [], [], []

    def program(x, p, cfg):
        Q, K, V, O, LSE = fused_tensors(x, p, cfg.Br, cfg.Bc)
        executors.append(x)

        def block(b, bh, i):
            if kept:
                kept[-1].rows()  # a tile of the previous block
            kept.append(b.load(view(Q, bh).rows(0, 4), Space.Shared, "Q_i"))
            blocks.append(b)

        x.launch(KernelDesc("keeps_tiles", "keeps a tile past its block", 2, 1, cfg.warps), block)

    Q, K, V = inputs(N=16, Nk=16, heads=1)
    with pytest.raises(TileError, match=r"tile 'Q_i' \(4x16\) was made by block 0 of head 0 of kernel 'keeps_tiles', which has ended"):
        fasim.run("fa2", Q, K, V, Br=16, Bc=16, program=program)
    tile = kept[0]
    assert not tile.alive and "its block has ended" in repr(tile)
    for use in (tile.rows, tile.bytes, lambda: blocks[0].barrier(), lambda: blocks[0].alloc(1, 1, Space.Registers, Fill.Zero, "t"),
                lambda: executors[0].tensors(), lambda: executors[0].declare(GlobalTensor("X", 1, 1, 1, 4))):
        with pytest.raises(TileError):
            use()
    del kept[:], blocks[:], executors[:], tile
    gc.collect()  # releasing them now touches nothing freed


def test_tile_kept_after_the_block_in_a_graded_program_fails_that_test_only():
    kept = []

    def program(x, p, cfg):
        Q, K, V, O, LSE = fused_tensors(x, p, cfg.Br, cfg.Bc)

        def block(b, bh, i):
            if kept:
                b.store(kept[0], view(O, bh).rows(0, 1))
            kept.append(b.load(view(Q, bh).rows(0, 1), Space.Shared, "Q_i"))

        x.launch(KernelDesc("fa2_forward", "keeps a tile", 2, p.batch_heads(), cfg.warps), block)

    g = fasim.course.grade("fa2_forward", program)
    assert g["score"] == 0
    out = g["results"]["tests"][0]["output"]
    assert "your program stopped: fasim.tile.TileError: tile 'Q_i'" in out and "test_course.py" in out
    del kept[:]
    gc.collect()


def test_tile_from_an_exception_traceback_is_released_safely():
    saved = {}

    def body(b, Q, O):
        t = b.alloc(4, 4, Space.Registers, Fill.Zero, "t")  # noqa: F841  (held by the traceback's frame)
        raise KeyError("stop")

    with pytest.raises(KeyError) as info:
        run_body(body)
    saved["tb"] = info.value.__traceback__
    frame_tiles = [v for tb in _frames(saved["tb"]) for v in tb.f_locals.values() if isinstance(v, fasim.tile.Tile)]
    assert frame_tiles and not frame_tiles[0].alive
    with pytest.raises(TileError):
        frame_tiles[0].cols()
    del saved["tb"], frame_tiles, info
    gc.collect()


def _frames(tb):
    while tb is not None:
        yield tb.tb_frame
        tb = tb.tb_next


# ---- the tile API's errors: said in Python, before the executors see them -----------------------------------

def test_shape_errors_are_python_errors():
    def matmul_mismatch(b, Q, O):
        A = b.alloc(4, 8, Space.Registers, Fill.Zero, "A")
        C = b.alloc(4, 4, Space.Registers, Fill.Zero, "C")
        b.matmul(C, A, A)  # 4x8 · 4x8: needs transpose_b=True

    with pytest.raises(ValueError, match="matmul into tile 'C'.*transpose_b=True"):
        run_body(matmul_mismatch)

    def store_mismatch(b, Q, O):
        b.store(b.alloc(4, 8, Space.Registers, Fill.Zero, "t"), view(O, 0).rows(0, 4))

    with pytest.raises(ValueError, match="store of tile 't' \\(4x8\\)"):
        run_body(store_mismatch)

    def outside(b, Q, O):
        b.load(view(Q, 0).rows(10, 16), Space.Shared, "Q_i")

    with pytest.raises(IndexError, match=r"load of Q\[head 0\]\[10:26, 0:16\] is outside the tensor"):
        run_body(outside)

    def bad_map(b, Q, O):
        t = b.alloc(4, 4, Space.Registers, Fill.Zero, "t")
        b.map(t, Fn.fma, [t, t])

    with pytest.raises(ValueError, match="2 operands, it takes 3"):
        run_body(bad_map)

    def bad_operand(b, Q, O):
        t = b.alloc(4, 4, Space.Registers, Fill.Zero, "t")
        b.map(t, Fn.add, [t, "one"])

    with pytest.raises(TypeError, match="operands are tiles"):
        run_body(bad_operand)

    def per_row_of_number(b, Q, O):
        t = b.alloc(4, 4, Space.Registers, Fill.Zero, "t")
        b.map(t, Fn.add, [t, per_row(2.0)])

    with pytest.raises(TypeError, match="per_row of a float"):
        run_body(per_row_of_number)


def test_tensor_errors_are_python_errors():
    def undeclared(b, Q, O):
        b.load(view(GlobalTensor("X", 1, 16, 16, 2), 0).rows(0, 4), Space.Shared, "X")

    with pytest.raises(TileError, match="tensor 'X', which was never declared"):
        run_body(undeclared)

    def program(x, p, cfg):
        x.launch(KernelDesc("k", "declares in a block", 1, 1, cfg.warps), lambda b, bh, i: x.declare(GlobalTensor("X", 1, 1, 1, 4)))

    Q, K, V = inputs(N=16, Nk=16, heads=1)
    with pytest.raises(TileError, match="inside a kernel's block body"):
        fasim.run("fa2", Q, K, V, Br=16, Bc=16, program=program)

    first = {}

    def remember(x, p, cfg):
        first.setdefault("Q", fused_tensors(x, p, cfg.Br, cfg.Bc)[0])
        Qt = first["Q"]
        x.launch(KernelDesc("k", "uses a tensor of an earlier run", 1, 1, cfg.warps),
                 lambda b, bh, i: b.load(view(Qt, 0).rows(0, 4), Space.Shared, "Q_i"))

    fasim.run("fa2", Q, K, V, Br=16, Bc=16, program=remember)  # the first run declares it
    with pytest.raises(TileError, match="declared by another run"):
        fasim.run("fa2", Q, K, V, Br=16, Bc=16, program=remember)

    with pytest.raises(ValueError, match="grid of at least 1 x 1 blocks"):
        fasim.run("fa2", Q, K, V, Br=16, Bc=16,
                  program=lambda x, p, cfg: x.launch(KernelDesc("k", "no blocks", 0, 1), lambda b, bh, i: None))


def test_a_tile_program_reads_like_its_cpp_twin():
    """The Python solution is the C++ one line for line: every call of the tile API is there."""
    cpp = (COURSE / "solutions" / "fa2_forward.cpp").read_text(encoding="utf-8")
    py = (COURSE / "solutions" / "fa2_forward.py").read_text(encoding="utf-8")
    for call in ("b.load(", "b.alloc(", "b.alloc_statistic(", "b.matmul(", "b.mask(", "b.row_max(", "b.map(", "b.row_sum(",
                 "b.round_to_storage(", "b.store(", "fused_tensors(", "x.launch("):
        assert cpp.count(call) == py.count(call), call


def test_grade_command_exists():
    spec = importlib.util.find_spec("fasim.grade")
    assert spec is not None  # python3 -m fasim.grade exists
