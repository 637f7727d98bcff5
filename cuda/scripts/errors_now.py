#!/usr/bin/env python3
"""Committed runs' timings against what an fa-sim build predicts for them today, per kernel and head dim.

summarize_results.py writes a run's tables; this recomputes the prediction of every timed configuration of
one or more runs (each fa-validate JSON in them, as summarize_results.py predicts it: the kernel's catalog
row and what the run recorded of its launch) and prints, per kernel and d, how many, the error range, the
mean absolute error and how many are within 15% and 20%. Compare two builds by running it with each
(--fa-sim): how a model change is shown to move every committed measurement, not only the one it targets.

    python3 cuda/scripts/errors_now.py cuda/results/2026-11-28-h200-ladder --gpu H200
    python3 cuda/scripts/errors_now.py cuda/results/2026-11-28-h100-ladder \\
        --gpu cuda/results/2026-11-25-h100-b/calibrated-gpu.json --min-N 2048 --fa-sim /tmp/old/fa-sim
"""
import argparse
import json
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize_results import predict  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="results folders")
    ap.add_argument("--gpu", required=True, help="an fa-sim preset, or a GPU file (.json, e.g. the card's fa-calibrate file)")
    ap.add_argument("--fa-sim", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "sim", "fa-sim"))
    ap.add_argument("--min-N", type=int, default=0, help="only configurations with N at least this (the issues' targets: 2048)")
    ap.add_argument("--only", default="", help="comma-separated kernel names to keep")
    ap.add_argument("--each", action="store_true", help="print every configuration, not only the summary")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    errors = defaultdict(list)
    for run in a.runs:
        for f in sorted(os.listdir(run)):
            if not f.endswith(".json") or f.startswith("predicted_"):
                continue
            doc = json.load(open(os.path.join(run, f)))
            if not isinstance(doc, dict) or "results" not in doc or f.startswith("validate_ncu") or "decode" in f:
                continue  # ncu byte counts and decode grids (decode_errors_now.py) are not timings of this kind
            for r in doc["results"]:
                if "measured_s" not in r or r["N"] < a.min_N or (only and r["algo"] not in only):
                    continue
                p, err = predict(a.fa_sim, a.gpu, r)
                if p is None:
                    continue
                e = p["time"]["predicted_s"] / r["measured_s"] - 1
                name = f"{r['forward_algo']}+{r['algo']}" if r.get("pass") == "fwd+bwd" else r["algo"]
                errors[(name, r["d"])].append(e)
                if a.each:
                    print(f"{os.path.basename(run)}/{f}: {name} N={r['N']} d={r['d']} {r['dtype']}"
                          f"{' causal' if r.get('causal') else ''}: measured {r['measured_s'] * 1e3:.3f} ms, "
                          f"predicted {p['time']['predicted_s'] * 1e3:.3f} ms ({e * 100:+.1f}%)")
    print(f"{'kernel':24s} {'d':>4s} {'n':>4s} {'range':>14s} {'MAE':>7s} {'<=15%':>6s} {'<=20%':>6s}")
    for (name, d), es in sorted(errors.items()):
        print(f"{name:24s} {d:4d} {len(es):4d} {min(es) * 100:+6.0f}..{max(es) * 100:+4.0f}% {sum(map(abs, es)) / len(es) * 100:6.1f}% "
              f"{sum(abs(e) <= 0.15 for e in es):6d} {sum(abs(e) <= 0.20 for e in es):6d}")


if __name__ == "__main__":
    main()
