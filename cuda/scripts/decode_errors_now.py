#!/usr/bin/env python3
"""A decode run's timings against what an fa-sim build predicts for them today.

summarize_decode.py shows the predictions a run recorded (and those written before it); this recomputes
them with any fa-sim build, for every timed configuration of the run's validate_decode.json (same kernel,
shape, K/V heads and split count), and prints each error and, per kernel, the range, the mean absolute
error and how many are within 20%. Compare two builds by running it with each (--fa-sim).

    python3 cuda/scripts/decode_errors_now.py cuda/results/2026-11-28-h200-decode --gpu H200
    python3 cuda/scripts/decode_errors_now.py cuda/results/2026-11-25-h100-c \\
        --gpu-file cuda/results/2026-11-25-h100-c/calibrated-gpu.json --fa-sim /tmp/old/fa-sim
"""
import argparse
import json
import os
import subprocess


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="a results folder with validate_decode.json")
    gpu = ap.add_mutually_exclusive_group(required=True)
    gpu.add_argument("--gpu", help="fa-sim preset")
    gpu.add_argument("--gpu-file", help="a GPU file, e.g. the card's fa-calibrate file")
    ap.add_argument("--fa-sim", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "sim", "fa-sim"))
    a = ap.parse_args()
    gpu_args = ["--gpu", a.gpu] if a.gpu else ["--gpu-file", a.gpu_file]
    with open(os.path.join(a.run, "validate_decode.json")) as f:
        doc = json.load(f)
    errors = {}
    for r in doc["results"]:
        if "measured_s" not in r:
            continue
        args = [a.fa_sim, "--json", "--kernel", r["algo"], "--N", str(r["N"]), "--Nk", str(r["Nk"]), "--batch", str(r["batch"]),
                "--heads", str(r["heads"]), "--kv-heads", str(r["kv_heads"]), "--d", str(r["d"]), "--dtype", r["dtype"]] + gpu_args
        if r["algo"] == "flash_decoding":
            args += ["--kv-splits", str(r["launches"][0].get("kv_splits", 1))]
        if r.get("launches"):  # how the run's tile copies took their addresses; runs before 2026-11-30 do not say: per chunk
            args += ["--tile-addresses", r["launches"][0].get("tile_addresses", "per_chunk")]
        out = subprocess.run(args, capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{r['algo']} B={r['batch']} KV={r['kv_heads']} Nk={r['Nk']}: fa-sim failed: {out.stderr.strip()}")
            continue
        predicted = json.loads(out.stdout)["algorithms"][0]["time"]["predicted_s"]
        e = predicted / r["measured_s"] - 1
        errors.setdefault(r["algo"], []).append(e)
        print(f"{r['algo']:15s} B={r['batch']:3d} KV={r['kv_heads']:3d} Nk={r['Nk']:7d}  measured {r['measured_s'] * 1e3:8.3f} ms"
              f"  predicted {predicted * 1e3:8.3f} ms  {e * 100:+6.1f}%")
    for algo, es in errors.items():
        print(f"{algo}: {len(es)} timed, {min(es) * 100:+.0f}..{max(es) * 100:+.0f}%, mean absolute error "
              f"{sum(map(abs, es)) / len(es) * 100:.1f}%, {sum(abs(e) <= 0.20 for e in es)} within 20%")


if __name__ == "__main__":
    main()
