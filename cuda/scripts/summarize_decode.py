#!/usr/bin/env python3
"""The decode step's results as one Markdown table: for every configuration of fa-validate's decode grid,
fa-sim's kernels (measured time, K/V streaming bandwidth and its share of the card's copy bandwidth, the
fa-sim prediction recorded in the run and the one written before it), and PyTorch's fastest backend on the
same shape (which one, and its time) from torch_sdpa.py --grid decode.

    python3 cuda/scripts/summarize_decode.py cuda/results/2026-11-25-h100-decode > SUMMARY.md

The folder holds what gpu_session.sh decode writes: validate_decode.json, torch_decode.json,
decode_copy.json, and optionally predicted_before_decode.json (cuda/scripts/predict_before.py --decode; in later
runs predicted_before_decode_preset.json) and predicted_calibrated_decode.json (the same with --gpu-file, the card's
fa-calibrate file, a column of its own; later predicted_before_decode_calibrated.json).
"""
import json
import os
import sys


def load(folder, name):
    path = os.path.join(folder, name)
    return json.load(open(path)) if os.path.exists(path) else None


def key(r):
    return (r["batch"], r["kv_heads"], r["Nk"])


def main():
    folder = sys.argv[1]
    ours = load(folder, "validate_decode.json")
    torch = load(folder, "torch_decode.json")
    copy = load(folder, "decode_copy.json")
    # gpu_session.sh names them by their source since fa-calibrate came (_preset, _calibrated); older runs did not.
    before = load(folder, "predicted_before_decode.json") or load(folder, "predicted_before_decode_preset.json")
    calibrated = load(folder, "predicted_calibrated_decode.json") or load(folder, "predicted_before_decode_calibrated.json")
    copy_bw = copy["d2d_copy_bytes_per_s"] if copy else None

    fastest = {}  # PyTorch's fastest backend per shape
    for r in torch["results"] if torch else []:
        if "measured_s" in r and (key(r) not in fastest or r["measured_s"] < fastest[key(r)]["measured_s"]):
            fastest[key(r)] = r
    predicted_before = {(r["algo"],) + key(r): r.get("predicted_s") for r in (before or {}).get("results", [])}
    predicted_calibrated = {(r["algo"],) + key(r): r.get("predicted_s") for r in (calibrated or {}).get("results", [])}

    print(f"Decode step on {ours['gpu']} (driver {ours['driver']}), {ours['date']}; H = {ours['heads']} query heads, "
          f"N = 1, d = 128, fp16.")
    if copy_bw:
        print(f"Device-to-device copy bandwidth on the same card: {copy_bw / 1e12:.2f} TB/s (read+write bytes per second).")
    print()
    cal_head, cal_rule = (" calibrated (error) |", "---|") if calibrated else ("", "")
    print("| kernel | B | KV | Nk | splits | measured | K/V GB/s | of copy | predicted (error) | predicted before (error) |"
          + cal_head + " PyTorch fastest | ours vs it |")
    print("|---|---|---|---|---|---|---|---|---|---|" + cal_rule + "---|---|")
    for r in ours["results"]:
        if "measured_s" not in r:
            continue
        t = r["measured_s"]
        share = f"{100 * r['kv_bandwidth_gbps'] * 1e9 / copy_bw:.0f}%" if copy_bw else "-"
        pred = f"{r['predicted_s'] * 1e3:.3f} ms ({r['error_pct']:+.0f}%)" if r.get("predicted_s") else "- (B·H > 1024)"
        pb = predicted_before.get((r["algo"],) + key(r))
        pb_text = f"{pb * 1e3:.3f} ms ({100 * (pb - t) / t:+.0f}%)" if pb else "-"
        pc = predicted_calibrated.get((r["algo"],) + key(r))
        pc_text = (f" {pc * 1e3:.3f} ms ({100 * (pc - t) / t:+.0f}%) |" if pc else " - |") if calibrated else ""
        f = fastest.get(key(r))
        torch_text = f"{f['backend']} {f['measured_s'] * 1e3:.3f} ms" if f else "-"
        ratio = f"{f['measured_s'] / t:.2f}x" if f else "-"
        print(f"| {r['algo']} | {r['batch']} | {r['kv_heads']} | {r['Nk']} | {r.get('kv_splits', '-')} | {t * 1e3:.3f} ms "
              f"| {r['kv_bandwidth_gbps']:.0f} | {share} | {pred} | {pb_text} |{pc_text} {torch_text} | {ratio} |")
    print()
    print("ours vs it: PyTorch's time over ours (above 1: ours is faster). of copy: K and V bytes over the measured time, "
          "against the copy bandwidth. Errors: (predicted - measured) / measured." + (
              f" calibrated: today's fa-sim with the GPU file {calibrated['gpu_file']} (fa-calibrate on this card)."
              if calibrated else ""))


if __name__ == "__main__":
    main()
