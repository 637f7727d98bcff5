#!/usr/bin/env python3
"""The kernel ladder's figure: measured and predicted TFLOP/s of every rung (fa2, fa2_tc, fa2_tc_tuned, fa2_wgmma)
in the FlashAttention-2 paper's setting (fp16, no causal mask), beside PyTorch's flash and cuDNN backends timed in
the same run and the card's two tensor-core ceilings (mma.sync and the dense rate cuBLAS reaches, from its
fa-calibrate file).

    python3 cuda/scripts/plot_ladder.py --run 128=cuda/results/2026-11-26-h200-ladder-c \\
        --run 64=cuda/results/2026-11-26-h200-ladder-e --gpu-file cuda/results/2026-11-26-h200/calibrated-gpu.json \\
        --out docs/figures/kernel_ladder.svg

Several cards, one row each (--card GPU_FILE D=FOLDER [D=FOLDER ...], repeatable, instead of --run and --gpu-file):

    python3 cuda/scripts/plot_ladder.py \\
        --card cuda/results/2026-11-26-h200/calibrated-gpu.json 64=cuda/results/2026-11-26-h200-ladder-e \\
               128=cuda/results/2026-11-26-h200-ladder-c \\
        --card cuda/results/2026-11-25-h100-c/calibrated-gpu.json 64=cuda/results/2026-11-27-h100-ladder \\
               128=cuda/results/2026-11-27-h100-ladder \\
        --out docs/figures/kernel_ladder.svg

Predictions are fa-sim's, now (--kernel NAME with the card's GPU file): microbenchmarked ceilings, never the rungs'
timings.
"""
import argparse
import glob
import json
import os
import subprocess

import matplotlib

matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "kernel-ladder"  # the SVG's ids fixed: the same runs give the same file
import matplotlib.pyplot as plt  # noqa: E402

RUNGS = (("fa2", "fa2 (CUDA cores)", "#9e9e9e"), ("fa2_tc", "fa2_tc (mma.sync)", "#1f77b4"),
         ("fa2_tc_tuned", "fa2_tc_tuned (mma.sync, tuned)", "#2ca02c"), ("fa2_wgmma", "fa2_wgmma (Hopper: wgmma, TMA)", "#d62728"))
YARDSTICKS = (("torch_flash", "PyTorch flash (FlashAttention-2)", "#7f7f7f"), ("torch_cudnn", "PyTorch cuDNN", "#000000"))


def measured(folder, d):
    times = {}
    for path in glob.glob(os.path.join(folder, f"ladder_*_d{d}_N*.json")):
        for r in json.load(open(path))["results"]:
            if "measured_s" in r and r["dtype"] == "fp16" and not r["causal"]:
                times[(r["algo"], r["N"])] = r
    return times


def predicted(fa_sim, gpu_file, kernel, r):
    out = subprocess.run([fa_sim, "--json", "--gpu-file", gpu_file, "--kernel", kernel, "--N", str(r["N"]), "--d", str(r["d"]),
                          "--batch", str(r["batch"]), "--heads", str(r["heads"]), "--dtype", "fp16"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["algorithms"][0]["time"]["predicted_s"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", action="append", default=[], help="D=FOLDER: the run that timed head dim D (one card)")
    ap.add_argument("--gpu-file", help="the card's fa-calibrate file (ceilings and predictions), with --run")
    ap.add_argument("--card", nargs="+", action="append", default=[], metavar="GPU_FILE D=FOLDER",
                    help="one card per row: its fa-calibrate file, then the run that timed each head dim")
    ap.add_argument("--fa-sim", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "sim", "fa-sim"))
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cards = [(c[0], c[1:]) for c in a.card]
    if a.run or a.gpu_file:
        if not (a.run and a.gpu_file):
            ap.error("--run and --gpu-file go together")
        cards.insert(0, (a.gpu_file, a.run))
    if not cards or any(not runs for _, runs in cards):
        ap.error("give --run D=FOLDER with --gpu-file, or --card GPU_FILE D=FOLDER ...")
    columns = max(len(runs) for _, runs in cards)
    fig, axes = plt.subplots(len(cards), columns, figsize=(6.2 * columns, 4.6 * len(cards)), sharey=True, squeeze=False)
    top, names = 0, []
    for row, (gpu_file, specs) in zip(axes, cards):
        gpu = json.load(open(gpu_file))
        name = gpu["name"].replace("-", " ")
        names.append(name)
        ceilings = (("mma.sync peak", gpu["measured"]["mma_sync_fp16_flops_per_s"]),
                    ("dense (cuBLAS) peak", gpu["measured"]["tensor_fp16_flops_per_s"]))
        top = max([top] + [rate for _, rate in ceilings])
        runs = sorted((int(x.split("=", 1)[0]), x.split("=", 1)[1]) for x in specs)
        for ax, (d, folder) in zip(row, runs):
            t = measured(folder, d)
            ns = sorted({n for (_, n) in t})
            flops = {n: 4.0 * 16384 * 2048 * n for n in ns}  # batch x N = 16k tokens, hidden 2048: 4 N^2 d per head
            for kernel, label, colour in RUNGS:
                xs = [n for n in ns if (kernel, n) in t]
                ax.plot(xs, [flops[n] / t[(kernel, n)]["measured_s"] / 1e12 for n in xs], "o-", color=colour, label=label)
                ax.plot(xs, [flops[n] / predicted(a.fa_sim, gpu_file, kernel, t[(kernel, n)]) / 1e12 for n in xs], "x--",
                        color=colour, alpha=0.7)
            for kernel, label, colour in YARDSTICKS:
                xs = [n for n in ns if (kernel, n) in t]
                ax.plot(xs, [flops[n] / t[(kernel, n)]["measured_s"] / 1e12 for n in xs], "s:", color=colour, label=label)
            for cname, rate in ceilings:
                ax.axhline(rate / 1e12, color="#bbbbbb", linewidth=1)
                ax.text(ns[0], rate / 1e12 + 8, f"{cname} {rate / 1e12:.0f}", fontsize=8, color="#666666")
            ax.set_xscale("log", base=2)
            ax.set_xticks(ns, [f"{n // 1024}k" for n in ns])
            ax.set_xlabel("sequence length N (batch x N = 16k tokens, hidden 2048, fp16)")
            card = f"{name}, " if len(cards) > 1 else ""
            ax.set_title(f"{card}d = {d} ({os.path.basename(folder.rstrip('/'))})", fontsize=10)
            ax.grid(alpha=0.3)
        for ax in row[len(runs):]:
            ax.set_visible(False)
        row[0].set_ylabel("TFLOP/s (4 N\u00b2 d per head)")
    axes[0][0].set_ylim(0, top / 1e12 * 1.08)
    axes[0][-1].legend(fontsize=7, loc="lower right")
    with_file = ", with each card's fa-calibrate file" if len(cards) > 1 else ""
    fig.suptitle(f"The kernel ladder on {' and '.join('an ' + n for n in names)}: measured (solid) and predicted by fa-sim "
                 f"(dashed, x{with_file})", fontsize=10)
    fig.tight_layout()
    fig.savefig(a.out, metadata={"Date": None})
    print("wrote", a.out)


if __name__ == "__main__":
    main()
