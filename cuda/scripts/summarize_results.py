#!/usr/bin/env python3
"""Tables of a committed cuda/results/<run>/ folder, with the *current* simulator's predictions.

    python3 cuda/scripts/summarize_results.py cuda/results/2026-11-22-h200 [--fa-sim build/sim/fa-sim]

Writes <run>/SUMMARY.md. Every number comes from the JSON files of the run or from fa-sim.
"""
import argparse
import json
import os
import subprocess
import functools
import sys
from collections import defaultdict

@functools.lru_cache(maxsize=None)
def catalog(fa_sim):
    """The kernel catalog (sim/kernels/kernel_catalog.cpp) as fa-sim prints it, by kernel name, and the
    registered algorithms by id."""
    doc = json.loads(subprocess.run([fa_sim, "--list-kernels", "--json"], capture_output=True, text=True,
                                    check=True).stdout)
    return {k["name"]: k for k in doc["kernels"]}, {al["id"]: al for al in doc["algorithms"]}


def main_launch(launches):
    """The attention kernel of a run's launches, as fa-validate picks it (cuda/validate/fa_validate_main.cpp):
    the last with a Q and a K/V tile (fa1's init kernel comes first; FA2 backward's dQ conversion, Br only, and
    its sum over grouped K/V heads, Bc only, come after), else the last."""
    with_tile = [l for l in launches if l.get("Br") and l.get("Bc")]
    return with_tile[-1] if with_tile else (launches[-1] if launches else {})


def predict(fa_sim, gpu, r):
    """fa-sim's prediction for a measured run, as fa-validate makes it (sim/model/kernel_setup.hpp): the
    kernel as its catalog row describes it (fa-sim --kernel), with what the run recorded of its launch.
    A forward and backward timed together ("pass": "fwd+bwd") is predicted as the two kernels one after
    the other, the forward as its catalog row describes it."""
    if r.get("pass") == "fwd+bwd":
        fwd, err = predict(fa_sim, gpu, {**r, "algo": r["forward_algo"], "launches": [], "pass": "fwd"})
        bwd, err2 = predict(fa_sim, gpu, {**r, "pass": "bwd"})
        if fwd is None or bwd is None:
            return None, err or err2
        both = dict(bwd)
        both["time"] = {"predicted_s": fwd["time"]["predicted_s"] + bwd["time"]["predicted_s"]}
        both["flops"] = {**bwd["flops"], "ideal_matmul": fwd["flops"]["ideal_matmul"] + bwd["flops"]["ideal_matmul"]}
        return both, None
    kernels, algorithms = catalog(fa_sim)
    if r["algo"] not in kernels:
        return None, f"{r['algo']} is not in the kernel catalog"
    gpu_args = ["--gpu-file", gpu] if gpu.endswith(".json") else ["--gpu", gpu]  # a preset, or a GPU file
    args = [fa_sim, "--json", *gpu_args, "--kernel", r["algo"], "--N", str(r["N"]), "--d", str(r["d"]),
            "--batch", str(r["batch"]), "--heads", str(r["heads"]), "--dtype", r["dtype"]]
    if r.get("causal"):
        args.append("--causal")
    if r.get("kv_heads", r["heads"]) != r["heads"]:  # grouped-query attention
        args += ["--kv-heads", str(r["kv_heads"])]
    main = main_launch(r.get("launches", []))
    if algorithms[kernels[r["algo"]]["algorithm"]]["tunable_tiles"] and main.get("Br") and main.get("Bc"):
        args += ["--Br", str(main["Br"]), "--Bc", str(main["Bc"])]
    if (main.get("q_splits") or 1) > 1:
        args += ["--q-splits", str(main["q_splits"])]
    if main.get("registers_per_thread"):
        args += ["--registers", str(main["registers_per_thread"])]
    if main:  # how the run's tile copies took their addresses; before 2026-11-30 fa-validate did not say: per chunk
        args += ["--tile-addresses", main.get("tile_addresses", "per_chunk")]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        return None, out.stderr.strip()
    return json.loads(out.stdout)["algorithms"][0], None


def pct(p, m):
    return f"{100.0 * (p - m) / m:+.0f}%"


PAPER_ALGOS = ["standard_cublas", "torch_math", "fa1", "fa2", "fa1_tc", "fa2_tc", "torch_flash"]


def paper_section(a, paper_files):
    """The FlashAttention-2 paper's benchmark setting (16k tokens, hidden 2048): every algorithm's
    measured time, its speedup over standard attention (cuBLAS GEMMs + softmax), and fa-sim's
    predicted time for the same run."""
    by_key = defaultdict(dict)
    meta = None
    for f in paper_files:
        doc = json.load(open(os.path.join(a.run, f)))
        gpu = doc.get("gpu_preset") or ("H200" if "H200" in doc["gpu"] else "H100-SXM")
        if "gpu_preset" in doc:
            meta = doc
        for r in doc["results"]:
            if "measured_s" not in r:
                continue
            p, _ = predict(a.fa_sim, gpu, r)
            key = (r["d"], r["N"], r["causal"], r["batch"], r["heads"])
            by_key[key][r["algo"]] = (r["measured_s"], p["time"]["predicted_s"] if p else None)
    lines = ["## The FlashAttention-2 paper's setting (paper_*.json)", ""]
    if meta:
        lines += [f"GPU {meta['gpu']}, driver {meta.get('driver', '?')}, {meta.get('date', '?')}; commands: "
                  "`cuda/scripts/gpu_session.sh paper` (fa-validate and torch_sdpa.py per sequence length, "
                  "batch = 16384 / N, heads = 2048 / d, fp16).", ""]
    lines += ["Measured time in ms (predicted now in parentheses); speedup = standard_cublas time / this time. "
              "standard_cublas: cuBLAS GEMMs (tensor cores) + fa-sim's softmax kernel; torch_math: PyTorch's "
              "math backend; fa1, fa2: fa-sim's CUDA-core kernels; fa1_tc, fa2_tc: fa-sim's tensor-core FA1 and FA2; "
              "torch_flash: PyTorch's FlashAttention-2 backend.", ""]
    speedups = ["fa1", "fa2", "fa1_tc", "fa2_tc"]
    header = ("| d | N | causal | B x H | " + " | ".join(PAPER_ALGOS) + " | " +
              " | ".join(f"speedup {al}" for al in speedups) + " | fa2_tc vs fa1 | fa2_tc vs fa1_tc |")
    lines += [header, "|" + "---|" * (4 + len(PAPER_ALGOS) + len(speedups) + 2)]
    for key in sorted(by_key):
        v = by_key[key]
        d, n, causal, b, h = key
        cells = []
        for al in PAPER_ALGOS:
            if al in v:
                m, p = v[al]
                cells.append(f"{m * 1e3:.3f} ({p * 1e3:.3f})" if p else f"{m * 1e3:.3f}")
            else:
                cells.append("-")
        base = v.get("standard_cublas", (None,))[0]
        def speed(al):
            return f"{base / v[al][0]:.1f}x" if base and al in v else "-"
        def ratio(slow, fast):
            return f"{v[slow][0] / v[fast][0]:.1f}x" if slow in v and fast in v else "-"
        lines.append(f"| {d} | {n} | {'yes' if causal else 'no'} | {b} x {h} | " + " | ".join(cells) + " | " +
                     " | ".join(speed(al) for al in speedups) + f" | {ratio('fa1', 'fa2_tc')} | {ratio('fa1_tc', 'fa2_tc')} |")
    lines.append("")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--fa-sim", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "sim", "fa-sim"))
    a = ap.parse_args()
    files = sorted(f for f in os.listdir(a.run)
                   if f.endswith(".json") and not f.startswith("paper_") and not f.startswith("predicted_"))
    # Predictions written before the run (cuda/scripts/predict_before.py) on the GPU's preset, by configuration
    # (those with a GPU file, e.g. fa-calibrate's: summarize_predictions.py).
    before = {}
    for f in sorted(f for f in os.listdir(a.run) if f.startswith("predicted_before") and f.endswith(".json")):
        doc = json.load(open(os.path.join(a.run, f)))
        if not doc.get("gpu_preset"):
            continue
        for r in doc["results"]:
            if "predicted_s" in r:
                before[(r["algo"], r["N"], r["d"], r["dtype"], r["causal"])] = r["predicted_s"]
    paper_files = sorted(f for f in os.listdir(a.run) if f.startswith("paper_") and f.endswith(".json"))
    lines = [f"# Summary of {os.path.basename(a.run)}", "",
             "Generated by `python3 cuda/scripts/summarize_results.py " + a.run + "` from the JSON files of this run "
             "and the current `fa-sim` (predictions are recomputed, not copied from the run).", ""]
    for f in files:
        doc = json.load(open(os.path.join(a.run, f)))
        if "results" not in doc:  # peak_rates.json and other records that are not fa-validate runs
            continue
        gpu = doc.get("gpu_preset") or ("H200" if "H200" in doc["gpu"] else "H100-SXM")
        lines += [f"## {f}", "", f"GPU {doc['gpu']}, driver {doc.get('driver', '?')}, {doc.get('date', '?')}; "
                  f"command: `{doc.get('command', '?')}`", ""]
        rows = [r for r in doc["results"] if "measured_s" in r]
        if f.startswith("validate_ncu"):
            lines += ["L2 bytes are those between the SMs and L2 (what the simulator counts); where the run has them, "
                      "the last column gives the L2 slices' read sectors (after Hopper's request coalescer) over the "
                      "prediction's. DRAM writes include the write-back of lines left dirty in L2 at the kernel's end "
                      "where the run measured it.", "",
                      "| configuration | DRAM read meas. | pred./meas. | DRAM write meas. | pred./meas. | L2 read meas. | pred./meas. | L2 write meas. | pred./meas. | smem meas. | pred./meas. | L2 slice reads: pred./meas. |",
                      "|---|---|---|---|---|---|---|---|---|---|---|---|"]
            for r in doc["results"]:
                if "ncu" not in r or "measured" not in r["ncu"]:
                    continue
                p, err = predict(a.fa_sim, gpu, r)
                if p is None:
                    continue
                m = r["ncu"]["measured"]
                pred = {"dram_read_bytes": p["dram"]["read_bytes"], "dram_write_bytes": p["dram"]["write_bytes"],
                        "l2_read_bytes": p["l2"]["read_bytes"], "l2_write_bytes": p["l2"]["write_bytes"],
                        "smem_bytes": p["smem"]["read_bytes"] + p["smem"]["write_bytes"]}
                cells = []
                for k in ("dram_read_bytes", "dram_write_bytes", "l2_read_bytes", "l2_write_bytes", "smem_bytes"):
                    cells += [f"{m[k] / 1e6:.1f} MB", f"{pred[k] / m[k]:.2f}" if m[k] > 0 else "-"]
                slices = m.get("l2_slice_read_bytes", 0)
                cells.append(f"{pred['l2_read_bytes'] / slices:.2f}" if slices > 0 else "-")
                lines.append(f"| {r['algo']} N={r['N']} d={r['d']} {r['dtype']} | " + " | ".join(cells) + " |")
            lines.append("")
            continue
        has_before = any((r["algo"], r["N"], r["d"], r["dtype"], r["causal"]) in before for r in rows)
        if has_before:
            lines += ["| configuration | measured | predicted now | error | predicted before the run | error | measured TFLOP/s | accuracy |",
                      "|---|---|---|---|---|---|---|---|"]
        else:
            lines += ["| configuration | measured | predicted now | error | measured TFLOP/s | accuracy |", "|---|---|---|---|---|---|"]
        by_key = defaultdict(dict)
        for r in rows:
            p, err = predict(a.fa_sim, gpu, r)
            pred = p["time"]["predicted_s"] if p else None
            acc = r.get("accuracy", {}).get("pass")
            tf = r.get("measured_tflops")
            if tf is None and p:  # torch results: matmul FLOPs of the problem over the measured time
                tf = p["flops"]["ideal_matmul"] / r["measured_s"] * 1e-12
            timing = f"{pred * 1e3:.3f} ms | {pct(pred, r['measured_s'])}" if pred else f"- | {err[:60]}"
            if has_before:
                b = before.get((r["algo"], r["N"], r["d"], r["dtype"], r["causal"])) if r.get("pass") != "fwd+bwd" else None
                timing += f" | {b * 1e3:.3f} ms | {pct(b, r['measured_s'])}" if b else " | - | -"
            name = f"{r['forward_algo']}+{r['algo']}" if r.get("pass") == "fwd+bwd" else r["algo"]
            lines.append(f"| {name} N={r['N']} d={r['d']} {r['dtype']}{' causal' if r['causal'] else ''} | "
                         f"{r['measured_s'] * 1e3:.3f} ms | {timing} | " + (f"{tf:.2f}" if tf is not None else "-") +
                         " | " + ("ok" if acc else ("FAIL" if acc is False else "-")) + " |")
            by_key[(r["N"], r["d"], r["dtype"], r["causal"])][name] = (r["measured_s"], pred)
        lines.append("")
        algos = sorted({al for v in by_key.values() for al in v})
        if len(algos) > 1:
            lines += ["Order, fastest first (measured | predicted now):", ""]
            for key in sorted(by_key):
                v = by_key[key]
                meas = " < ".join(al for al, _ in sorted(v.items(), key=lambda kv: kv[1][0]))
                pr = " < ".join(al for al, _ in sorted(((al, x) for al, x in v.items() if x[1]), key=lambda kv: kv[1][1]))
                lines.append(f"- N={key[0]} d={key[1]} {key[2]}{' causal' if key[3] else ''}: {meas} | {pr}")
            lines.append("")
    if paper_files:
        lines += paper_section(a, paper_files)
    with open(os.path.join(a.run, "SUMMARY.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {os.path.join(a.run, 'SUMMARY.md')}")


if __name__ == "__main__":
    sys.exit(main())
