#!/usr/bin/env python3
"""The kernel ladder's measured table and issue 22's targets, from one card's committed runs (docs/kernel-ladder.md).

    python3 cuda/scripts/ladder_table.py --run 64=cuda/results/2026-11-26-h200-ladder-e \\
        --run 128=cuda/results/2026-11-26-h200-ladder-c

Reads the ladder's files of each run (ladder_{fp16,bf16}_dD_N*.json from fa-validate, ladder_torch_dD_N*.json from
torch_sdpa.py) for its head dim D and prints, as Markdown:
- TFLOP/s of every rung and of PyTorch's flash and cuDNN backends (4 N^2 d per head and batch, halved with the causal
  mask), over every N, dtype and causal setting the run timed;
- the speedup of each step (the rung below's time over the rung's), and each rung against PyTorch's flash and cuDNN
  backends (their time over the rung's: the rung's share of their throughput), every ratio within one run;
- the targets of issue 22, met or not, with the worst configuration of each.
Nothing is predicted here (summarize_predictions.py compares the predictions written before a run).
"""
import argparse
import glob
import json
import os

RUNGS = (("fa2", "`fa2` (CUDA cores)"), ("fa2_tc", "`fa2_tc`"), ("fa2_tc_tuned", "`fa2_tc_tuned`"),
         ("fa2_wgmma", "`fa2_wgmma`"))
YARDSTICKS = (("torch_flash", "PyTorch flash"), ("torch_cudnn", "PyTorch cuDNN"))


def load(folder, d):
    """Measured records of one run at head dim d, by (kernel, dtype, N, causal)."""
    t, meta = {}, {}
    for path in sorted(glob.glob(os.path.join(folder, f"ladder_*_d{d}_N*.json"))):
        doc = json.load(open(path))
        meta.setdefault("gpu", doc.get("gpu"))
        meta.setdefault("driver", doc.get("driver"))
        meta.setdefault("date", doc.get("date"))
        for r in doc["results"]:
            if "measured_s" in r:
                t[(r["algo"], r["dtype"], r["N"], r["causal"])] = r
    return t, meta


def tflops(r):
    return 4.0 * r["N"] * r["Nk"] * r["d"] * r["batch"] * r["heads"] * (0.5 if r["causal"] else 1) / r["measured_s"] / 1e12


def ratios(t, num, den, keep=lambda key: True):
    """t[num]'s time over t[den]'s, for every configuration both have: [(ratio, (dtype, N, causal))]."""
    return [(t[(num, dt, N, c)]["measured_s"] / r["measured_s"], (dt, N, c))
            for (a, dt, N, c), r in sorted(t.items()) if a == den and (num, dt, N, c) in t and keep((dt, N, c))]


def span(values, digits=2):
    if not values:
        return ""
    lo, hi = min(values), max(values)
    return f"{lo:.{digits}f}–{hi:.{digits}f}" if f"{lo:.{digits}f}" != f"{hi:.{digits}f}" else f"{lo:.{digits}f}"


def where(d, key):
    dt, N, c = key
    return f"d={d} {'causal' if c else 'non-causal'} {dt} N={N}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", action="append", required=True, help="D=FOLDER: the run that timed head dim D as it is now")
    a = ap.parse_args()
    runs = sorted((int(x.split("=", 1)[0]), x.split("=", 1)[1]) for x in a.run)
    data = {d: load(folder, d) for d, folder in runs}
    for d, folder in runs:
        if not data[d][0]:
            raise SystemExit(f"no ladder_*_d{d}_N*.json with measured times in {folder}")
    gpus = sorted({m["gpu"] for _, m in data.values()})
    if len({folder for _, folder in runs}) == 1:
        m = data[runs[0][0]][1]
        print(f"{', '.join(gpus)}: `{runs[0][1]}` ({m['date']}, driver {m['driver']})")
    else:
        print(f"{', '.join(gpus)}: " + "; ".join(f"d = {d} from `{folder}` ({data[d][1]['date']}, driver {data[d][1]['driver']})"
                                                 for d, folder in runs))
    print()
    ds = [d for d, _ in runs]
    dcols = " | ".join(f"TFLOP/s, d = {d}" for d in ds)
    dsep = "; ".join(f"d = {d}" for d in ds)
    print(f"| rung | {dcols} | against the rung below | against PyTorch flash ({dsep}) | against PyTorch cuDNN ({dsep}) |")
    print("|---|" + "---|" * len(ds) + "---|---|---|")
    for i, (k, label) in enumerate(RUNGS + YARDSTICKS):
        cells = [span([tflops(r) for (al, _, _, _), r in data[d][0].items() if al == k], 0) for d in ds]
        below = ""
        if 0 < i < len(RUNGS):
            s = [x for d in ds for x, _ in ratios(data[d][0], RUNGS[i - 1][0], k)]
            below = f"{span(s, 1 if min(s) >= 5 else 2)}× `{RUNGS[i - 1][0]}`"
        against = []
        for y, _ in YARDSTICKS:
            against.append("" if i >= len(RUNGS) else "; ".join(span([x for x, _ in ratios(data[d][0], y, k)]) for d in ds))
        print(f"| {label} | " + " | ".join(cells) + f" | {below} | " + " | ".join(against) + " |")
    print()
    print("Targets of issue 22 (every ratio within one run):")
    print()
    # The tuned mma.sync rung >= 100% of PyTorch's flash forward at N >= 2048 for every d and causal setting.
    parts, below, total, worst = [], 0, 0, None
    for d in ds:
        for causal in (False, True):
            rs = ratios(data[d][0], "torch_flash", "fa2_tc_tuned", lambda key, c=causal: key[1] >= 2048 and key[2] == c)
            if not rs:
                continue
            total += len(rs)
            below += sum(x < 1.0 for x, _ in rs)
            lo = min(rs)
            worst = min(worst, (lo[0], d, lo[1])) if worst else (lo[0], d, lo[1])
            parts.append(f"d={d} {'causal' if causal else 'non-causal'} {span([x for x, _ in rs])}× "
                         f"({sum(x < 1.0 for x, _ in rs)} of {len(rs)} below 1)")
    print(f"- `fa2_tc_tuned` ≥ 100% of PyTorch's flash backend at N ≥ 2048, every d and causal setting: "
          f"{'met' if below == 0 else f'not met: below 1.0 in {below} of {total} configurations'}; " + ", ".join(parts) +
          (f"; lowest {worst[0]:.3f}× at {where(worst[1], worst[2])}" if worst else ""))
    # The Hopper rung >= 550 TFLOP/s at d = 128, N >= 4096, non-causal.
    if 128 in data:
        tf = [(tflops(r), (dt, N, c)) for (al, dt, N, c), r in data[128][0].items() if al == "fa2_wgmma" and N >= 4096 and not c]
        lo = min(tf)
        print(f"- `fa2_wgmma` ≥ 550 TFLOP/s at d = 128, N ≥ 4096, non-causal: {span([x for x, _ in tf], 0)} TFLOP/s "
              f"({'met' if lo[0] >= 550 else 'not met'}; lowest {lo[0]:.1f} at {where(128, lo[1])})")
    # The Hopper rung >= 85% of the cuDNN backend in the same run at every N >= 2048.
    rs = [(x, d, key) for d in ds for x, key in ratios(data[d][0], "torch_cudnn", "fa2_wgmma", lambda key: key[1] >= 2048)]
    lo = min(rs)
    n_below = sum(x < 0.85 for x, _, _ in rs)
    print(f"- `fa2_wgmma` ≥ 85% of PyTorch's cuDNN backend at every N ≥ 2048: {span([x for x, _, _ in rs])}× "
          f"({'met' if n_below == 0 else f'not met: below 0.85 in {n_below} of {len(rs)} configurations'}; "
          f"lowest {lo[0]:.3f}× at {where(lo[1], lo[2])})")


if __name__ == "__main__":
    main()
