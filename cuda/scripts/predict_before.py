#!/usr/bin/env python3
"""Predictions written down before a run: fa-sim's time for every configuration a GPU session is about to
measure, on the preset of the GPU it will run on, so that the measurement checks a prediction nobody could
adjust afterwards (the hold-out rule: docs/model.md, "Where the constants come from").

    python3 cuda/scripts/predict_before.py --gpu H200 --kernels fa2_bwd_tc,standard_cublas_bwd \\
        --N 2048,4096 --d 64,128 --dtype fp16,bf16 --out cuda/results/<run>/predicted_before.json

Each kernel is modelled as fa-sim --kernel models it (its catalog row: tile rule, registers, warps), with
fa-validate's default batch and heads. The file records the commit of the simulator that predicted.
"""
import argparse
import datetime
import json
import os
import subprocess


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True, help="fa-sim preset of the GPU the run will use")
    ap.add_argument("--kernels", required=True, help="kernel-catalog names, comma separated")
    ap.add_argument("--N", default="1024,2048,4096,8192,16384")
    ap.add_argument("--d", default="64,128")
    ap.add_argument("--dtype", default="fp16,bf16")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--fa-sim", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "sim", "fa-sim"))
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    results = []
    for kernel in a.kernels.split(","):
        for d in a.d.split(","):
            for n in a.N.split(","):
                for dt in a.dtype.split(","):
                    for causal in (False, True):
                        args = [a.fa_sim, "--json", "--gpu", a.gpu, "--kernel", kernel, "--N", n, "--d", d,
                                "--batch", str(a.batch), "--heads", str(a.heads), "--dtype", dt]
                        if causal:
                            args.append("--causal")
                        out = subprocess.run(args, capture_output=True, text=True)
                        row = {"algo": kernel, "N": int(n), "d": int(d), "dtype": dt, "causal": causal,
                               "batch": a.batch, "heads": a.heads}
                        if out.returncode != 0:
                            row["error"] = out.stderr.strip()
                        else:
                            r = json.loads(out.stdout)["algorithms"][0]
                            row["predicted_s"] = r["time"]["predicted_s"]
                            longest = max(r["kernels"], key=lambda k: k["time"]["predicted_s"])
                            row["bound"] = longest["name"] + ": " + longest["time"]["bound"]
                        results.append(row)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    doc = {"schema_version": 1, "gpu_preset": a.gpu, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "simulator_commit": commit, "command": "python3 cuda/scripts/predict_before.py " + " ".join(
               f"--{k.replace('_', '-')} {v}" for k, v in vars(a).items() if k != "fa_sim"),
           "results": results}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {len(results)} predictions to {a.out}")


if __name__ == "__main__":
    main()
