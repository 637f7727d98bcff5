"""The Python module fasim against fa-sim itself, the closed forms and NumPy float64 attention.

Run by CTest (python_fasim) with PYTHONPATH at the built package and FASIM_CLI at fa-sim; by hand:
PYTHONPATH=build/python FASIM_CLI=build/sim/fa-sim python3 -m pytest tests/python
"""

import json
import math
import os
import subprocess

import numpy as np
import pytest

import fasim

CLI = os.environ.get("FASIM_CLI", "")
needs_cli = pytest.mark.skipif(not (CLI and os.access(CLI, os.X_OK)), reason="FASIM_CLI does not name fa-sim")

EPS = {"fp32": 2.0**-23, "fp16": 2.0**-10}


def cli_json(*args):
    out = subprocess.run([CLI, *args, "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def split_single(result):
    """simulate()'s answer for one algorithm: (the ALGORITHM entry, gpu, problem)."""
    entry = {k: v for k, v in result.items() if k not in ("schema_version", "gpu", "problem")}
    return entry, result["gpu"], result["problem"]


# ---- NumPy float64 references ------------------------------------------------------------------

def visible(N, Nk, causal):
    """[N, Nk] mask: query i sees key j (causal: bottom-right aligned, j <= i + Nk - N)."""
    if not causal:
        return np.ones((N, Nk), dtype=bool)
    return np.arange(Nk)[None, :] <= np.arange(N)[:, None] + (Nk - N)


def expand_kv(K, H):
    """[B, KV, Nk, d] -> [B, H, Nk, d]: each K/V head serves H/KV consecutive query heads."""
    return np.repeat(K, H // K.shape[1], axis=1)


def softmax_rows(Q, K, causal):
    d = Q.shape[-1]
    S = np.einsum("bhid,bhjd->bhij", Q, K) / math.sqrt(d)
    mask = visible(Q.shape[2], K.shape[2], causal)
    m = np.where(mask, S, -np.inf).max(axis=-1, keepdims=True)
    E = np.where(mask, np.exp(S - np.where(np.isfinite(m), m, 0)), 0)
    l = E.sum(axis=-1, keepdims=True)
    # A row that sees no key (causal with Nk < N) has P = 0 (so O = 0) and LSE = -inf.
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(l > 0, E / np.where(l > 0, l, 1), 0), np.where(l > 0, m + np.log(l), -np.inf)[..., 0]


def attention(Q, K, V, causal=False):
    K, V = expand_kv(K, Q.shape[1]), expand_kv(V, Q.shape[1])
    P, lse = softmax_rows(Q, K, causal)
    return P @ V, lse


def naive_attention(Q, K, V, causal, dtype):
    """A plain GPU implementation storing S, P and O in fp16 with fp32 arithmetic: the yardstick of
    reference/TOLERANCES.md (twice its error, plus one ulp of the largest output, is allowed)."""
    K, V = expand_kv(K, Q.shape[1]), expand_kv(V, Q.shape[1])
    store = (lambda x: x.astype(np.float16).astype(np.float32)) if dtype == "fp16" else (lambda x: x.astype(np.float32))
    q, k, v = (x.astype(np.float32) for x in (Q, K, V))
    S = store(np.einsum("bhid,bhjd->bhij", q, k) * np.float32(1 / math.sqrt(Q.shape[-1])))
    mask = visible(Q.shape[2], K.shape[2], causal)
    m = np.where(mask, S, np.float32(-np.inf)).max(axis=-1, keepdims=True)
    E = np.where(mask, np.exp(S - np.where(np.isfinite(m), m, 0)), np.float32(0))
    l = E.sum(axis=-1, keepdims=True)
    P = store(np.where(l > 0, E / np.where(l > 0, l, 1), 0))
    return store(P @ v).astype(np.float64)


def attention_backward(Q, K, V, dO, causal=False):
    P, _ = softmax_rows(Q, K, causal)
    O = P @ V
    scale = 1 / math.sqrt(Q.shape[-1])
    dV = np.swapaxes(P, -1, -2) @ dO
    dP = dO @ np.swapaxes(V, -1, -2)
    D = (dO * O).sum(axis=-1, keepdims=True)
    dS = P * (dP - D)
    return scale * dS @ K, scale * np.swapaxes(dS, -1, -2) @ Q, dV


def inputs(rng, B, H, KV, N, Nk, d, dtype):
    """Q, K, V drawn from N(0, 1), already representable in dtype (so the module's rounding is exact)."""
    def draw(*shape):
        x = rng.standard_normal(shape)
        return x.astype(np.float16).astype(np.float64) if dtype == "fp16" else x.astype(np.float32).astype(np.float64)
    return draw(B, H, N, d), draw(B, KV, Nk, d), draw(B, KV, Nk, d)


def tolerance(O_ref, Q, K, V, causal, dtype):
    naive = naive_attention(Q, K, V, causal, dtype)
    # fp32's floor is the logits' fp32 rounding (TOLERANCES.md's E_S); a flat 1e-6 covers it for these
    # N(0, 1) inputs, whose logits stay below 10 (E_S ~ 2^-24 · 10).
    return 2 * np.abs(naive - O_ref).max() + EPS[dtype] * np.abs(O_ref).max() + (1e-6 if dtype == "fp32" else 0)


# ---- simulate and sweep: fa-sim --json, as dicts --------------------------------------------------

@needs_cli
@pytest.mark.parametrize("kwargs, flags", [
    ({"algo": "fa2", "N": 1024}, ["--algo", "fa2", "--N", "1024"]),
    ({"algo": "fa1", "N": 2048, "causal": True, "dtype": "bf16", "gpu": "H100-SXM"},
     ["--algo", "fa1", "--N", "2048", "--causal", "--dtype", "bf16", "--gpu", "H100-SXM"]),
    ({"algo": "flash_decoding", "N": 1, "Nk": 8192, "heads": 32, "kv_heads": 8, "d": 128},
     ["--algo", "flash_decoding", "--N", "1", "--Nk", "8192", "--heads", "32", "--kv-heads", "8", "--d", "128"]),
    ({"algo": "fa2", "N": 1024, "pass_": "fwd+bwd"}, ["--algo", "fa2", "--N", "1024", "--pass", "fwd+bwd"]),
    ({"algo": "fa2", "N": 4096, "d": 128, "batch": 256, "heads": 256},  # batch*heads at its limit, 65536
     ["--algo", "fa2", "--N", "4096", "--d", "128", "--batch", "256", "--heads", "256"]),
    ({"algo": "fa2_bwd", "N": 512, "Br": 64, "Bc": 64}, ["--algo", "fa2_bwd", "--N", "512", "--Br", "64", "--Bc", "64"]),
    ({"algo": "standard", "N": 1024, "matmul": "naive", "cuda_cores": True, "dtype": "fp32"},
     ["--algo", "standard", "--N", "1024", "--matmul", "naive", "--cuda-cores", "--dtype", "fp32"]),
])
def test_simulate_equals_fa_sim_json(kwargs, flags):
    doc = cli_json(*flags)
    entry, gpu, problem = split_single(fasim.simulate(**kwargs))
    assert entry == doc["algorithms"][0]
    assert gpu == doc["gpu"] and problem == doc["problem"]


@needs_cli
def test_simulate_all_is_the_whole_document():
    assert fasim.simulate("all", N=2048, causal=True) == cli_json("--algo", "all", "--N", "2048", "--causal")
    decode = fasim.simulate("all", N=1, Nk=16384, heads=32, kv_heads=8, d=128)
    assert decode == cli_json("--algo", "all", "--N", "1", "--Nk", "16384", "--heads", "32", "--kv-heads", "8", "--d", "128")
    assert [a["algo"] for a in decode["algorithms"]] == ["standard", "tiled", "fa1", "fa2", "flash_decoding"]
    pair = fasim.simulate(["standard", "fa2"], N=4096)
    assert pair["algorithms"][1]["vs_standard"]["speedup"] > 1


@needs_cli
def test_sweep_equals_fa_sim_json():
    assert fasim.sweep("all", values=[512, 1024, 2048]) == cli_json("--algo", "all", "--sweep", "N=512:2048")
    nk = fasim.sweep("flash_decoding", parameter="Nk", values=[1024, 2048], N=1, heads=32, kv_heads=8, d=128)
    assert nk == cli_json("--algo", "flash_decoding", "--sweep", "Nk=1024:2048", "--N", "1", "--heads", "32",
                          "--kv-heads", "8", "--d", "128")
    assert [run["problem"]["Nk"] for run in nk["runs"]] == [1024, 2048]


def test_counts_past_64_bits_arrive_as_exact_ints():
    # simulate() and sweep() build their dicts from fa-sim's JSON document with the conversion this hook
    # runs (docs/output-schema.md: counts are integers of any size). 2^74 + 1 has no double of its own.
    text = ('{"flops": {"matmul": 18889465931478580854785, "nonmatmul": 3}, "ratio": 0.5, '
            '"list": [73786976294838206464, -1180591620717411303424, 18446744073709551615], "name": "fa2"}')
    got = fasim._fasim._json_to_python(text)
    assert got == json.loads(text)
    assert got["flops"]["matmul"] == 2**74 + 1 and type(got["flops"]["matmul"]) is int
    assert got["list"] == [2**66, -(2**70), 2**64 - 1]
    assert fasim.SCHEMA_VERSION == 2


@pytest.mark.parametrize("N, Nk, d, dtype, heads, batch", [
    (4096, 4096, 64, "fp16", 16, 1), (1000, 3000, 128, "fp32", 3, 2), (777, 777, 96, "bf16", 8, 1)])
def test_fa2_hbm_bytes_equal_the_closed_form(N, Nk, d, dtype, heads, batch):
    r = fasim.simulate("fa2", N=N, Nk=Nk, d=d, dtype=dtype, heads=heads, batch=batch)
    e, BH, Tr = (4 if dtype == "fp32" else 2), batch * heads, math.ceil(N / r["tiles"]["Br"])
    # Per head: Q read once, K and V once per Q tile; O written once in the dtype, LSE once in fp32.
    assert r["hbm"]["read_bytes"] == BH * e * (N * d + Tr * 2 * Nk * d)
    assert r["hbm"]["write_bytes"] == BH * (e * N * d + 4 * N)
    by = r["hbm"]["by_tensor"]
    assert by["K"]["read_bytes"] == by["V"]["read_bytes"] == BH * e * Tr * Nk * d
    assert by["O"] == {"read_bytes": 0, "write_bytes": BH * e * N * d}


# ---- the reference's random inputs ---------------------------------------------------------------

def test_random_normal_is_the_reference_generator():
    z = fasim.random_normal(1, 8, 9)
    assert z.shape == (1, 8) and z.dtype == np.float64
    assert np.array_equal(z, fasim.random_normal(1, 8, 9))  # the same seed gives the same draws
    assert not np.array_equal(z, fasim.random_normal(1, 8, 10))
    # lesson 04 draws its example row from it: 3 x N(0,1) rounded to two decimals, halves away from zero
    x = np.sign(z[0]) * np.floor(np.abs(300 * z[0]) + 0.5) / 100
    assert x.tolist() == fasim.lessons.results(4)["softmax"]["x"]
    with pytest.raises(fasim.UsageError, match="out of range"):
        fasim.random_normal(0, 8, 9)


# ---- GPUs ---------------------------------------------------------------------------------------

@needs_cli
def test_gpu_presets_and_gpu_files(tmp_path):
    assert "A100-SXM4-40GB" in fasim.gpus() and "H100-SXM" in fasim.gpus()
    spec = fasim.gpu("h100-sxm")
    assert spec["name"] == "H100-SXM" and spec["format"] == "fa-sim-gpu/1"
    assert fasim.gpu() == fasim.gpu("A100-SXM4-40GB")
    spec["name"] = "H100-half-bandwidth"
    spec["hbm_bandwidth_bytes_per_s"] /= 2
    spec["measured"] = {}
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(spec))
    handle = fasim.load_gpu_file(str(path))
    assert handle.name == "H100-half-bandwidth" and fasim.gpu(handle)["hbm_bandwidth_bytes_per_s"] == spec["hbm_bandwidth_bytes_per_s"]
    entry, gpu, _ = split_single(fasim.simulate("fa2", N=2048, gpu=handle))
    doc = cli_json("--algo", "fa2", "--N", "2048", "--gpu-file", str(path))
    assert entry == doc["algorithms"][0] and gpu == doc["gpu"]
    assert fasim.simulate("fa2", N=2048, gpu=fasim.gpu_from_dict(spec)) == fasim.simulate("fa2", N=2048, gpu=handle)
    assert fasim.simulate("standard", gpu=handle)["time"]["predicted_s"] > fasim.simulate("standard", gpu="H100-SXM")["time"]["predicted_s"]


# ---- the functional executor ----------------------------------------------------------------------

@pytest.mark.parametrize("algo, B, H, KV, N, Nk, d", [
    ("fa2", 2, 4, 2, 96, 80, 16),
    ("fa1", 1, 3, 3, 70, 70, 32),
    ("standard", 2, 2, 2, 64, 48, 8),
    ("tiled", 1, 4, 1, 40, 72, 16),
    ("flash_decoding", 2, 8, 2, 1, 300, 64),
    ("flash_decoding", 1, 4, 2, 4, 130, 32),
])
@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
@pytest.mark.parametrize("causal", [False, True])
def test_run_equals_float64_attention(algo, B, H, KV, N, Nk, d, dtype, causal):
    rng = np.random.default_rng([B, H, KV, N, Nk, d, causal, len(algo)])
    Q, K, V = inputs(rng, B, H, KV, N, Nk, d, dtype)
    r = fasim.run(algo, Q, K, V, causal=causal, dtype=dtype)
    O_ref, lse_ref = attention(Q, K, V, causal)
    assert r["O"].shape == (B, H, N, d) and r["O"].dtype == np.float64
    assert np.abs(r["O"] - O_ref).max() <= tolerance(O_ref, Q, K, V, causal, dtype)
    if algo == "standard":
        assert r["lse"] is None  # it keeps none
    else:
        assert r["lse"].shape == (B, H, N)
        np.testing.assert_allclose(r["lse"], lse_ref, rtol=1e-5, atol=1e-5)
    assert r["problem"] == {"batch": B, "heads": H, "N": N, "Nk": Nk, "d": d, "dtype": dtype, "causal": causal,
                            "kv_heads": KV}


def test_run_counts_what_simulate_counts():
    rng = np.random.default_rng(7)
    Q, K, V = inputs(rng, 1, 4, 2, 256, 256, 64, "fp16")
    r = fasim.run("fa2", Q, K, V, Br=64, Bc=64)
    s = fasim.simulate("fa2", N=256, d=64, heads=4, kv_heads=2, Br=64, Bc=64)
    for key in ("hbm", "l2", "dram", "smem", "barriers"):
        assert r[key] == s[key], key
    assert r["flops"]["matmul"] == s["flops"]["matmul"] and r["flops"]["nonmatmul"] == s["flops"]["nonmatmul"]
    assert [k["name"] for k in r["kernels"]] == [k["name"] for k in s["kernels"]]
    # Every query head's blocks read their group's K: 4 heads x 4 Q tiles x 256 x 64 fp16 elements.
    assert r["tiles"]["Br"] == 64 and r["hbm"]["by_tensor"]["K"]["read_bytes"] == 4 * 4 * 256 * 64 * 2


@pytest.mark.parametrize("algo", ["fa2", "fa1", "standard"])
@pytest.mark.parametrize("causal", [False, True])
def test_run_backward_equals_float64_gradients(algo, causal):
    rng = np.random.default_rng([len(algo), causal])
    B, H, N, Nk, d = 2, 2, 72, 56, 16
    Q, K, V = inputs(rng, B, H, H, N, Nk, d, "fp32")
    dO = rng.standard_normal((B, H, N, d)).astype(np.float32).astype(np.float64)
    r = fasim.run_backward(algo, Q, K, V, dO, causal=causal, dtype="fp32", Br=16, Bc=16)
    for name, got, want in zip(("dQ", "dK", "dV"), (r["dQ"], r["dK"], r["dV"]), attention_backward(Q, K, V, dO, causal)):
        assert got.shape == want.shape
        assert np.abs(got - want).max() <= 1e-5 * max(1.0, np.abs(want).max()), name
    assert r["programs"] == [algo, algo + "_bwd"] and r["hbm"]["by_tensor"]["dQ"]["write_bytes"] > 0


@pytest.mark.parametrize("algo", ["fa2", "fa1", "standard"])
def test_run_backward_with_grouped_kv_heads_sums_each_groups_gradients(algo):
    # Grouped-query attention: K and V of 2 heads serve Q's 4; dK and dV come back with K's shape, each the sum
    # over its group of what the query heads would give with the K/V head repeated.
    rng = np.random.default_rng(5)
    B, H, KV, N, Nk, d = 2, 4, 2, 40, 48, 16
    Q, K, V = inputs(rng, B, H, KV, N, Nk, d, "fp32")
    dO = rng.standard_normal((B, H, N, d)).astype(np.float32).astype(np.float64)
    r = fasim.run_backward(algo, Q, K, V, dO, causal=True, dtype="fp32", Br=16, Bc=16)
    dQ, dK, dV = attention_backward(Q, np.repeat(K, H // KV, axis=1), np.repeat(V, H // KV, axis=1), dO, True)
    want = {"dQ": dQ, "dK": dK.reshape(B, KV, H // KV, Nk, d).sum(axis=2), "dV": dV.reshape(B, KV, H // KV, Nk, d).sum(axis=2)}
    for name in ("dQ", "dK", "dV"):
        assert r[name].shape == want[name].shape, name
        assert np.abs(r[name] - want[name]).max() <= 1e-5 * max(1.0, np.abs(want[name]).max()), name
    assert r["kernels"][-1]["name"] == {"fa2": "fa2_bwd_sum_groups", "fa1": "fa1_bwd_sum_groups", "standard": "sum_groups"}[algo]


def test_run_backward_fp16():
    rng = np.random.default_rng(3)
    Q, K, V = inputs(rng, 1, 2, 2, 64, 64, 32, "fp16")
    dO = rng.standard_normal(Q.shape).astype(np.float16).astype(np.float64)
    r = fasim.run_backward("fa2_bwd", Q, K, V, dO)
    for got, want in zip((r["dQ"], r["dK"], r["dV"]), attention_backward(Q, K, V, dO)):
        assert np.abs(got - want).max() <= 8 * EPS["fp16"] * np.abs(want).max()


def test_trace_of_fa2():
    rng = np.random.default_rng(11)
    Q, K, V = inputs(rng, 1, 1, 1, 8, 8, 4, "fp32")
    steps = fasim.trace("fa2", Q, K, V, dtype="fp32")
    assert steps[0]["kind"] == "kernel" and steps[0]["kernel"] == "fa2_forward" and steps[0]["grid"] == 2
    loads = {s["result"] for s in steps if s["kind"] == "load"}
    assert {"Q_i", "K_j", "V_j"} <= loads
    k_loads = [s["region"]["rows"] for s in steps if s["kind"] == "load" and s["result"] == "K_j"]
    assert k_loads == [(0, 4), (4, 8), (0, 4), (4, 8)]  # two tiles per sequence, as fa-sim --trace
    stores = [s for s in steps if s["kind"] == "store" and s["region"]["tensor"] == "O"]
    assert [s["region"]["rows"] for s in stores] == [(0, 4), (4, 8)]
    O = fasim.run("fa2", Q, K, V, dtype="fp32", Br=4, Bc=4)["O"][0, 0]
    for s in stores:
        r0, r1 = s["region"]["rows"]
        assert s["values"].dtype == np.float32 and s["mode"] == "overwrite"
        np.testing.assert_array_equal(s["values"].astype(np.float64), O[r0:r1])
    matmuls = [s for s in steps if s["kind"] == "matmul"]
    assert matmuls[0]["operands"] == ["Q_i", "K_j"] and matmuls[0]["transpose_b"]
    assert any(s["kind"] == "map" and s["op"] == "exp" for s in steps)
    # The running max keeps its name from the second K/V tile on (it once took the tile's, m_new).
    maxes = [s["operands"] for s in steps if s["kind"] == "map" and s["op"] == "max"]
    alphas = [s["operands"] for s in steps if s["kind"] == "map" and s["op"] == "expdiff"]
    assert len(maxes) == len(alphas) == 4  # two blocks x two K/V tiles
    assert all(ops == ["m_new", "m_i"] for ops in maxes) and all(ops == ["m_i", "m_new"] for ops in alphas)


def test_trace_of_the_backward():
    rng = np.random.default_rng(5)
    Q, K, V = inputs(rng, 1, 1, 1, 8, 8, 4, "fp32")
    steps = fasim.trace("fa2", Q, K, V, dO=np.ones_like(Q), pass_="bwd", dtype="fp32")
    assert steps[0]["kind"] == "kernel" and "bwd" in steps[0]["kernel"]
    assert {"dQ", "dK", "dV"} <= {s["region"]["tensor"] for s in steps if s["kind"] == "store"}


# ---- errors: fasim.UsageError, a ValueError with fa-sim's one line ---------------------------------

def one_line_error(call, *needles):
    with pytest.raises(fasim.UsageError) as e:
        call()
    message = str(e.value)
    assert isinstance(e.value, ValueError)
    assert "\n" not in message and "Fix:" in message, message
    for n in needles:
        assert n in message, message
    return message


def test_errors():
    rng = np.random.default_rng(1)
    Q, K, V = inputs(rng, 1, 4, 4, 16, 16, 8, "fp16")
    one_line_error(lambda: fasim.simulate("fa3"), "fa3", "fa2")
    one_line_error(lambda: fasim.simulate("fa2", heads=16, kv_heads=3), "kv-heads 3", "divisor")
    one_line_error(lambda: fasim.simulate("fa2", N=0), "N")
    one_line_error(lambda: fasim.simulate("fa2", heads=65537), "65537", "1..65536")
    one_line_error(lambda: fasim.simulate("fa2", batch=2, heads=32769), "65538 is too many", "at most 65536")
    one_line_error(lambda: fasim.simulate("fa2", dtype="fp8"), "fp8")
    one_line_error(lambda: fasim.simulate("fa2", gpu="V100"), "V100")
    one_line_error(lambda: fasim.simulate("standard", pass_="sideways"), "sideways")
    one_line_error(lambda: fasim.simulate("flash_decoding", pass_="bwd"), "backward")
    one_line_error(lambda: fasim.sweep("fa2"), "values")
    one_line_error(lambda: fasim.load_gpu_file("/nonexistent/gpu.json"), "/nonexistent/gpu.json")
    one_line_error(lambda: fasim.run("fa3", Q, K, V), "fa3")
    one_line_error(lambda: fasim.run("fa2", Q, K[:, :3], V[:, :3]), "3 heads", "Q's 4")
    one_line_error(lambda: fasim.run("torch_math", Q, K[:, :2], V[:, :2]), "torch_math", "numpy.repeat")
    one_line_error(lambda: fasim.run("fa2", Q[0], K, V), "Q", "[batch, heads, N, d]", "Q[None]")
    one_line_error(lambda: fasim.run("fa2", Q, K, V[..., :4]), "V", "(1, 4, 16, 8)")
    one_line_error(lambda: fasim.run("fa2", Q[..., :5], K[..., :5], V[..., :5]), "d=5")
    one_line_error(lambda: fasim.run("fa2", Q, K, [["a"]]), "V is not an array of numbers")
    bad = Q.copy()
    bad[0, 1, 3, 2] = np.nan
    one_line_error(lambda: fasim.run("fa2", bad, K, V), "Q[0, 1, 3, 2] is nan", "finite")
    big = V.copy()
    big[0, 0, 0, 0] = 1e6
    one_line_error(lambda: fasim.run("fa2", Q, K, big), "V[0, 0, 0, 0]", "overflows fp16")
    one_line_error(lambda: fasim.run_backward("flash_decoding", Q, K, V, Q), "backward")
    one_line_error(lambda: fasim.run_backward("torch_math", Q, K[:, :2], V[:, :2], Q), "grouped-query", "fa2")
    one_line_error(lambda: fasim.run_backward("fa2", Q, K, V, Q[:, :, :8]), "dO")
    one_line_error(lambda: fasim.trace("fa2", np.zeros((1, 1, 512, 8)), np.zeros((1, 1, 512, 8)), np.zeros((1, 1, 512, 8))),
                   "trace()")
    one_line_error(lambda: fasim.trace("fa2", Q, K, V, pass_="bwd"), "dO")


def test_dq_separate_gives_fa2_backward_its_own_dq_kernel_and_bad_values_are_refused():
    atomic = fasim.simulate("fa2", N=1024, pass_="bwd")
    separate = fasim.simulate("fa2", N=1024, pass_="bwd", dq="separate")
    assert atomic["tiles"]["dq"] == "atomic" and separate["tiles"]["dq"] == "separate"
    assert "dQ_acc" in atomic["hbm"]["by_tensor"] and "dQ_acc" not in separate["hbm"]["by_tensor"]
    assert [k["name"] for k in separate["kernels"]][-1] == "fa2_bwd_dq"
    assert separate["flops"]["matmul"] * 10 == atomic["flops"]["matmul"] * 14
    one_line_error(lambda: fasim.simulate("fa2", pass_="bwd", dq="sideways"), "sideways", "atomic")
    one_line_error(lambda: fasim.simulate("fa2", dq="separate"), "forward pass")
    one_line_error(lambda: fasim.simulate("fa1", pass_="bwd", dq="separate"), "fa2")


# ---- measured: the committed measurements beside the simulator (lesson 09) ------------------------

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "lessons", "fixtures")


def test_measured_reads_and_predicts_as_lesson_09():
    data = fasim.measured.load(FIXTURES)
    assert data["files"] == ["synthetic-decode-fixture.json", "synthetic-test-fixture.json"]
    ms = data["measurements"]
    assert len(ms) == 5
    gqa, mha = ms[0], ms[1]
    assert (gqa["algo"], gqa["heads"], gqa["kv_heads"], gqa["predicted_s"]) == ("flash_decoding", 32, 8, None)
    assert mha["kv_heads"] == 32 and mha["predicted_s"] == 9e-5
    assert ms[3]["launch"]["Br"] == 32 and ms[3]["launch"]["Bc"] == 64  # fa1's launch, not its init kernel's
    assert data["not_compared"]["outside_kernels"] == ["torch_cudnn"]
    assert data["not_compared"]["failed"] == 1 and data["not_compared"]["not_run"] == 1 and data["not_compared"]["no_time"] == 1
    now = fasim.measured.predict(ms)
    assert all(t is not None and t > 0 for t in now)
    assert now[0] < 0.5 * now[1]  # 8 K/V heads read a quarter of the cache that 32 read
    assert fasim.measured.predict(ms[0]) == now[0]
    # The lesson's own numbers (lesson-09 --results FIXTURES --json, run inside the module).
    rows = fasim.lessons.results(9, results=FIXTURES)["measured"]["rows"]
    assert [r["predicted_now_s"] for r in rows] == now
    # The same configuration by hand: the kernel of the catalog on the file's preset, as fasim.simulate(kernel=...).
    by_hand = dict(algo="flash_decoding", gpu_preset="A100-SXM4-40GB", N=1, Nk=16384, d=128, dtype="fp16", heads=32,
                   kv_heads=8)
    assert fasim.measured.predict(by_hand) == now[0]
    assert fasim.simulate(kernel="flash_decoding", N=1, Nk=16384, d=128, heads=32, kv_heads=8,
                          gpu="A100-SXM4-40GB")["time"]["predicted_s"] == now[0]
    # Progress goes to the function given, the last call with everything done.
    calls = []
    fasim.measured.predict(ms, progress=lambda done, total: calls.append((done, total)))
    assert calls and calls[-1][0] == calls[-1][1] and calls[-1][1] >= 1
    assert fasim.measured.load(os.path.join(FIXTURES, "no-such-folder"))["measurements"] == []


def test_measured_launch_keeps_how_tiles_were_copied():
    """A run that recorded its tile copies ("tile_addresses") is predicted with them, through load() and by hand."""
    mqa = dict(algo="flash_decoding", gpu_preset="H200", N=1, Nk=131072, d=128, dtype="fp16", heads=32, kv_heads=1,
               launch=dict(Br=64, Bc=64, warps=4, kv_splits=114, tile_addresses="per_chunk"))
    per_chunk = fasim.measured.predict(mqa)
    one_per_tile = fasim.measured.predict(dict(mqa, launch=dict(mqa["launch"], tile_addresses="one_per_tile")))
    assert one_per_tile < per_chunk  # batch-1 MQA issues its copies' instructions on two warps per block
    assert fasim.measured.predict(dict(mqa, launch=dict(mqa["launch"], tile_addresses=None))) == per_chunk
    one_line_error(lambda: fasim.measured.predict(dict(mqa, launch=dict(mqa["launch"], tile_addresses="whole"))),
                   "one_per_tile")


def test_measured_packaged_copy_is_cuda_results():
    """The module carries cuda/results/*.json byte for byte; load() and lesson 09 inside the module read it."""
    packaged = fasim.measured.data_dir()
    assert packaged is not None and fasim.measured.default_dir() == packaged
    source = os.path.join(ROOT, "cuda", "results")

    def json_files(top):
        return sorted(os.path.relpath(os.path.join(d, f), top) for d, _, fs in os.walk(top) for f in fs if f.endswith(".json"))

    assert json_files(packaged) == json_files(source)
    for rel in json_files(source):
        with open(os.path.join(source, rel), "rb") as a, open(os.path.join(packaged, rel), "rb") as b:
            assert a.read() == b.read(), rel
    data = fasim.measured.load()
    assert len(data["measurements"]) > 1000
    lesson = fasim.lessons.results(9)
    assert data["files"] == lesson["measured"]["files"]
    # Its kernel-ladder steps (5 and 6) read the same copy: the two runs and the card's fa-calibrate file are in it.
    assert lesson["ladder"]["found"] and lesson["ladder_model"]["found"]
    assert all(os.path.isdir(os.path.join(packaged, run)) for run in lesson["ladder"]["runs"].values())
    assert lesson["ladder_model"]["calibrated_gpu_file"] == "2026-11-26-h200/calibrated-gpu.json"
    assert os.path.isfile(os.path.join(packaged, lesson["ladder_model"]["calibrated_gpu_file"]))


@needs_cli
@pytest.mark.parametrize("kwargs, flags", [
    ({"kernel": "fa2_tc", "N": 2048, "gpu": "H100-SXM"}, ["--kernel", "fa2_tc", "--N", "2048", "--gpu", "H100-SXM"]),
    ({"kernel": "standard_cublas", "N": 1024, "dtype": "fp32"}, ["--kernel", "standard_cublas", "--N", "1024", "--dtype", "fp32"]),
    ({"kernel": "fa1_tc", "N": 4096, "Br": 64, "Bc": 128}, ["--kernel", "fa1_tc", "--N", "4096", "--Br", "64", "--Bc", "128"]),
])
def test_simulate_kernel_equals_fa_sim_kernel(kwargs, flags):
    doc = cli_json(*flags)
    entry, gpu, problem = split_single(fasim.simulate(**kwargs))
    assert entry == doc["algorithms"][0]
    assert gpu == doc["gpu"] and problem == doc["problem"]


def test_measured_and_kernel_errors():
    one_line_error(lambda: fasim.simulate(kernel="fa3_tc"), "fa3_tc", "fa2_tc")
    one_line_error(lambda: fasim.simulate("fa1", kernel="fa2_tc"), "implements fa2", "drop algo")
    one_line_error(lambda: fasim.simulate(kernel="fa2_tc", dtype="fp32"), "no fp32 kernel")
    one_line_error(lambda: fasim.simulate(kernel="fa2_tc", gpu="T4"), "compute capability 8.0")
    one_line_error(lambda: fasim.simulate(kernel="fa2", cuda_cores=True), "cuda_cores")
    one_line_error(lambda: fasim.measured.predict([{"algo": "fa2", "N": 1024, "d": 64, "dtype": "fp16"}]),
                   'measurements[0]["gpu_preset"] is missing')
    one_line_error(lambda: fasim.measured.predict([{"algo": "fa2", "gpu_preset": "V100", "N": 1024, "d": 64, "dtype": "fp16"}]),
                   "V100")
    one_line_error(lambda: fasim.measured.predict([{"algo": "nope", "gpu_preset": "H200", "N": 1024, "d": 64, "dtype": "fp16"}]),
                   '["algo"]', "nope")
    one_line_error(lambda: fasim.measured.predict([{"algo": "fa2", "gpu_preset": "H200", "N": 0, "d": 64, "dtype": "fp16"}]),
                   '["N"] = 0')
    one_line_error(lambda: fasim.measured.predict(["fa2"]), "measurements[0] is not a dict")
