#!/usr/bin/env python3
"""Predictions written down before a run: fa-sim's time for every configuration a GPU session is about to
measure, on the preset of the GPU it will run on, so that the measurement checks a prediction nobody could
adjust afterwards (the hold-out rule: docs/model.md, "Where the constants come from").

    python3 cuda/scripts/predict_before.py --gpu H200 --kernels fa2_bwd_tc,standard_cublas_bwd \\
        --N 2048,4096 --d 64,128 --dtype fp16,bf16 --out cuda/results/<run>/predicted_before.json

    python3 cuda/scripts/predict_before.py --gpu H100-SXM --kernels flash_decoding,fa2_tc --decode \
        --out cuda/results/<run>/predicted_before_decode.json

    python3 cuda/scripts/predict_before.py --gpu H200 --kernels fa2_tc --N 4096 --d 128 --dtype fp16 \
        --heads 32 --grid-kv-heads 32,8,1 --out cuda/results/<run>/predicted_before_gqa.json

Each kernel is modelled as fa-sim --kernel models it (its catalog row: tile rule, registers, warps), with
fa-validate's default batch and heads; --paper predicts gpu_session.sh's paper step; --decode instead predicts fa-validate's decode grid (one query row,
--heads 32 over --kv-heads K/V heads, --batches, --Nk cache lengths, d = 128, fp16; a kernel without
grouped K/V heads is predicted where K/V heads = heads only). Each prediction carries the DRAM bytes the L2 model lets through
(predicted_dram_read_bytes, predicted_dram_write_bytes), to set beside Nsight Compute's. The file records the
commit of the simulator that predicted. --gpu-file instead of --gpu predicts with a GPU file, e.g. the one fa-calibrate
measured on the card (docs/calibrate.md): what calibration changes, beside the preset's predictions.
"""
import argparse
import datetime
import json
import os
import subprocess


def main():
    ap = argparse.ArgumentParser()
    gpu = ap.add_mutually_exclusive_group(required=True)
    gpu.add_argument("--gpu", help="fa-sim preset of the GPU the run will use")
    gpu.add_argument("--gpu-file", help="a GPU file (fa-sim --gpu-file), e.g. fa-calibrate's")
    ap.add_argument("--kernels", required=True, help="kernel-catalog names, comma separated")
    ap.add_argument("--N", default="1024,2048,4096,8192,16384")
    ap.add_argument("--d", default="64,128")
    ap.add_argument("--dtype", default="fp16,bf16")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--decode", action="store_true", help="the decode grid instead of the training grid")
    ap.add_argument("--paper", action="store_true",
                    help="the FlashAttention-2 paper's setting (gpu_session.sh paper): batch = 16384/N, heads = 2048/d, "
                         "causal or not, at --N (default 2048..16384) and --d, fp16")
    ap.add_argument("--Nk", default="1024,4096,16384,65536,131072", help="--decode: cache lengths")
    ap.add_argument("--batches", default="1,8,64", help="--decode: batch sizes")
    ap.add_argument("--kv-heads", default="32,8,1", help="--decode: K/V heads (of 32 query heads)")
    ap.add_argument("--grid-kv-heads", help="the training grid: K/V heads of --heads, comma separated (default: --heads)")
    ap.add_argument("--fa-sim", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "sim", "fa-sim"))
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    results = []

    def predict(args, row):
        gpu_args = ["--gpu", a.gpu] if a.gpu else ["--gpu-file", a.gpu_file]
        out = subprocess.run([a.fa_sim, "--json"] + gpu_args + args, capture_output=True, text=True)
        if out.returncode != 0:
            row["error"] = out.stderr.strip()
        else:
            r = json.loads(out.stdout)["algorithms"][0]
            row["predicted_s"] = r["time"]["predicted_s"]
            # What the L2 model lets through to DRAM, to set beside Nsight Compute's dram__bytes counters.
            row["predicted_dram_read_bytes"] = r["dram"]["read_bytes"]
            row["predicted_dram_write_bytes"] = r["dram"]["write_bytes"]
            longest = max(r["kernels"], key=lambda k: k["time"]["predicted_s"])
            row["bound"] = longest["name"] + ": " + longest["time"]["bound"]
            if "kv_splits" in r["tiles"]:
                row["kv_splits"] = r["tiles"]["kv_splits"]
        results.append(row)

    if a.decode:
        catalog = json.loads(subprocess.run([a.fa_sim, "--list-kernels", "--json"], capture_output=True, text=True).stdout)
        grouped = {k["name"]: k["grouped_kv"] for k in catalog["kernels"]}
        for kernel in a.kernels.split(","):
            for kv in a.kv_heads.split(","):
                if int(kv) != 32 and not grouped.get(kernel, False):
                    continue
                for b in a.batches.split(","):
                    for nk in a.Nk.split(","):
                        predict(["--kernel", kernel, "--N", "1", "--Nk", nk, "--heads", "32", "--kv-heads", kv, "--batch", b,
                                 "--d", "128", "--dtype", "fp16"],
                                {"algo": kernel, "N": 1, "Nk": int(nk), "d": 128, "dtype": "fp16", "causal": False,
                                 "batch": int(b), "heads": 32, "kv_heads": int(kv)})
        a.N = a.d = a.dtype = a.batch = a.heads = None
    if a.paper:
        ns = a.N if a.N != ap.get_default("N") else "2048,4096,8192,16384"
        for kernel in a.kernels.split(","):
            for d in a.d.split(","):
                for n in ns.split(","):
                    for causal in (False, True):
                        b, h = 16384 // int(n), 2048 // int(d)
                        predict(["--kernel", kernel, "--N", n, "--d", d, "--batch", str(b), "--heads", str(h), "--dtype", "fp16"]
                                + (["--causal"] if causal else []),
                                {"algo": kernel, "N": int(n), "d": int(d), "dtype": "fp16", "causal": causal, "batch": b,
                                 "heads": h})
        a.N, a.dtype, a.batch, a.heads = ns, None, None, None
    for kernel in a.kernels.split(",") if not (a.decode or a.paper) else []:
        for d in a.d.split(","):
            for n in a.N.split(","):
                for dt in a.dtype.split(","):
                    for causal in (False, True):
                        for kv in (a.grid_kv_heads or str(a.heads)).split(","):
                            args = ["--kernel", kernel, "--N", n, "--d", d, "--batch", str(a.batch), "--heads", str(a.heads),
                                    "--dtype", dt] + (["--causal"] if causal else []) + (["--kv-heads", kv] if a.grid_kv_heads else [])
                            row = {"algo": kernel, "N": int(n), "d": int(d), "dtype": dt, "causal": causal, "batch": a.batch,
                                   "heads": a.heads}
                            if a.grid_kv_heads:
                                row["kv_heads"] = int(kv)
                            predict(args, row)
    # A copy of the tree without .git (the device machine's) names its commit in FASIM_COMMIT.
    commit = os.environ.get("FASIM_COMMIT") or subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True,
                                                               text=True).stdout.strip()
    doc = {"schema_version": 1, "gpu_preset": a.gpu, "gpu_file": a.gpu_file, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "simulator_commit": commit, "command": "python3 cuda/scripts/predict_before.py " + " ".join(
               (f"--{k.replace('_', '-')}" if v is True else f"--{k.replace('_', '-')} {v}")
               for k, v in vars(a).items()
               if k != "fa_sim" and v not in (None, False) and (a.decode or k not in ("Nk", "batches", "kv_heads"))),
           "results": results}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {len(results)} predictions to {a.out}")


if __name__ == "__main__":
    main()
