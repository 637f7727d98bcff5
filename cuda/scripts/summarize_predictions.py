#!/usr/bin/env python3
"""How well the predictions written before a run held: for each predicted_*.json of a run folder (predicted_before*: written before the run), the
error (predicted - measured) / measured per kernel and head dimension over the run's FA2-paper timings
(paper_d*_N*.json from fa-validate, paper_torch_*.json for PyTorch's flash backend, torch_flash; the kernel ladder's
ladder_fp16_d*_N*.json and ladder_torch_*.json) and backward timings (validate_bwd_half.json, torch_bwd.json: fp16
and bf16), as one Markdown table per file: mean, range, mean absolute error, and how many within 15% and 20%, with
the sequence lengths compared.

    python3 cuda/scripts/summarize_predictions.py cuda/results/2026-11-25-h100-d

--run D=FOLDER takes head dim D's timings from another run's folder instead (repeatable): the predictions a folder
holds, written before a card's first run, against a later run that timed the kernels as they are now, e.g.

    python3 cuda/scripts/summarize_predictions.py cuda/results/2026-11-26-h200-ladder \\
        --run 64=cuda/results/2026-11-26-h200-ladder-e --run 128=cuda/results/2026-11-26-h200-ladder-c
"""
import argparse
import collections
import glob
import json
import os


def measured_times(folder, d=None):
    """Measured seconds by (kernel, N, d, dtype, causal): the forward's fp16, which --paper predicts, and the
    backward's every dtype; every head dim, or d alone."""
    times = {}
    # The kernel ladder's runs time the same setting as ladder_fp16_* / ladder_torch_* (fp16 is what --paper predicts).
    for path in glob.glob(os.path.join(folder, "paper_d*_N*.json")) + glob.glob(os.path.join(folder, "ladder_fp16_d*_N*.json")):
        for r in json.load(open(path))["results"]:
            if "measured_s" in r and d in (None, r["d"]):
                times[(r["algo"], r["N"], r["d"], "fp16", r["causal"])] = r["measured_s"]
    for path in glob.glob(os.path.join(folder, "paper_torch_*.json")) + glob.glob(os.path.join(folder, "ladder_torch_*.json")):
        for r in json.load(open(path))["results"]:
            if r["algo"] == "torch_flash" and r["dtype"] == "fp16" and "measured_s" in r and d in (None, r["d"]):
                times[("torch_flash", r["N"], r["d"], "fp16", r["causal"])] = r["measured_s"]
    for path in glob.glob(os.path.join(folder, "validate_bwd_half.json")) + glob.glob(os.path.join(folder, "torch_bwd.json")):
        for r in json.load(open(path))["results"]:
            if "measured_s" in r and d in (None, r["d"]):
                times[(r["algo"], r["N"], r["d"], r["dtype"], r["causal"])] = r["measured_s"]
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", help="the run folder holding predicted_*.json (and, without --run, the timings)")
    ap.add_argument("--run", action="append", default=[], help="D=FOLDER: head dim D's timings from FOLDER")
    a = ap.parse_args()
    if a.run:
        times = {}
        for spec in a.run:
            d, folder = spec.split("=", 1)
            times.update(measured_times(folder, int(d)))
    else:
        times = measured_times(a.folder)
    for path in sorted(glob.glob(os.path.join(a.folder, "predicted_*.json"))):
        doc = json.load(open(path))
        errors = collections.defaultdict(list)
        ns = set()
        for r in doc["results"]:
            key = (r["algo"], r["N"], r["d"], r.get("dtype", "fp16"), r["causal"])
            if key in times and r.get("predicted_s"):
                errors[(r["algo"], r["d"])].append(100 * (r["predicted_s"] - times[key]) / times[key])
                ns.add(r["N"])
        gpu = f"GPU file `{doc['gpu_file']}`" if doc.get("gpu_file") else f"preset {doc['gpu_preset']}"
        against = "; timings of " + ", ".join(f"d = {s.split('=', 1)[0]} from `{s.split('=', 1)[1]}`" for s in a.run) if a.run else ""
        n_range = f"; N = {min(ns)}..{max(ns)}" if ns else ""
        print(f"### `{os.path.basename(path)}`: {gpu}, simulator {doc['simulator_commit'][:7]}, {doc['date'][:16]} UTC{n_range}{against}")
        print()
        print("| kernel | d | configurations | mean error | range | mean absolute error | within 15% | within 20% |")
        print("|---|---|---|---|---|---|---|---|")
        for (algo, d), e in sorted(errors.items()):
            print(f"| {algo} | {d} | {len(e)} | {sum(e) / len(e):+.0f}% | {min(e):+.0f}..{max(e):+.0f}% "
                  f"| {sum(map(abs, e)) / len(e):.1f}% | {sum(abs(x) <= 15 for x in e)} | {sum(abs(x) <= 20 for x in e)} |")
        print()


if __name__ == "__main__":
    main()
