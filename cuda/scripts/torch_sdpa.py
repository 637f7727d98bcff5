#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention as an outside yardstick for fa-validate.

Times the math backend (standard attention) and the flash backend (FlashAttention-2)
on the same problems (B, H, N, d, dtype, causal), with CUDA events: warm-up, median
of many runs, L2 flushed before each run by reading a buffer twice its size (a read, as in
fa-validate: a write would leave dirty lines whose write-back the timed kernel would pay for).
Writes JSON in fa-validate's result format ("algo": "torch_math" / "torch_flash"); the
predictions beside them are computed on the host by cuda/scripts/summarize_results.py.
With --pass bwd it times the backward instead (torch.autograd.grad of the output with a random dO,
after one untimed forward: "torch_math_bwd" / "torch_flash_bwd"); --pass fwd+bwd times both.

    python3 cuda/scripts/torch_sdpa.py --out torch.json
    python3 cuda/scripts/torch_sdpa.py --pass bwd --backends flash --dtype fp16 --out torch_bwd.json
"""
import argparse
import datetime
import json
import statistics
import subprocess

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel


def time_ms(fn, flush, runs, warmup):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        flush.sum()  # reads the whole buffer: evicts L2, leaves no dirty lines
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples), min(samples), max(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--N", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--d", default="64,128")
    ap.add_argument("--dtype", default="fp16,bf16,fp32")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--backends", default="math,flash", help="which of math, flash to run (flash alone: for ncu)")
    ap.add_argument("--pass", dest="passes", default="fwd", choices=("fwd", "bwd", "fwd+bwd"),
                    help="time the forward (default), the backward, or both")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    flush = torch.empty(int(torch.cuda.get_device_properties(0).L2_cache_size * 2 // 4), dtype=torch.float32, device="cuda")
    results = []
    for d in map(int, a.d.split(",")):
        for n in map(int, a.N.split(",")):
            for dt in a.dtype.split(","):
                training = a.passes != "fwd"
                q, k, v = (torch.randn(a.batch, a.heads, n, d, device="cuda", dtype=dtypes[dt], requires_grad=training)
                           for _ in range(3))
                d_out = torch.randn(a.batch, a.heads, n, d, device="cuda", dtype=dtypes[dt]) if training else None
                for causal in (False, True):
                    ref = None
                    for name, backend in (("torch_math", SDPBackend.MATH), ("torch_flash", SDPBackend.FLASH_ATTENTION)):
                        if name.removeprefix("torch_") not in a.backends.split(","):
                            continue
                        if name == "torch_flash" and dt == "fp32":
                            continue  # the flash backend takes fp16/bf16 only
                        # the math backend materialises S and P (and, training, their gradients)
                        if name == "torch_math" and n * n * a.batch * a.heads * 4 * (6 if training else 3) > 30e9:
                            continue
                        def forward():
                            with sdpa_kernel(backend):
                                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        out = forward()
                        if a.passes == "fwd":
                            fn, compared = forward, out
                        else:
                            # torch.autograd.grad returns fresh gradients: nothing is accumulated into .grad
                            def backward(o=out):
                                return torch.autograd.grad(o, (q, k, v), d_out, retain_graph=True)
                            def both():
                                return torch.autograd.grad(forward(), (q, k, v), d_out)
                            fn = backward if a.passes == "bwd" else both
                            compared = torch.cat([g.reshape(-1) for g in backward()])
                        if name == "torch_math":
                            ref = compared.float()
                        # null when the math backend did not run (--backends flash, or too large)
                        err = None if ref is None else (compared.float() - ref).abs().max().item()
                        med, lo, hi = time_ms(fn, flush, a.runs, a.warmup)
                        algo = name if a.passes == "fwd" else name + "_bwd"
                        result = {"algo": algo, "N": n, "Nk": n, "d": d, "dtype": dt, "causal": causal,
                                  "batch": a.batch, "heads": a.heads, "measured_s": med / 1e3,
                                  "measured_min_s": lo / 1e3, "measured_max_s": hi / 1e3, "runs": a.runs,
                                  "max_abs_diff_vs_math": err}
                        if a.passes != "fwd":
                            result["pass"] = a.passes
                        if a.passes == "fwd+bwd":
                            result["forward_algo"] = name
                        results.append(result)
                        print(f"{algo:16s} N={n:6d} d={d:3d} {dt} causal={int(causal)}  {med:9.3f} ms", flush=True)
    driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip()
    doc = {"schema_version": 1, "gpu": torch.cuda.get_device_name(0), "driver": driver,
           "torch": torch.__version__, "date": datetime.date.today().isoformat(),
           "command": "python3 cuda/scripts/torch_sdpa.py " + " ".join(
               f"--{'pass' if k == 'passes' else k} {v}" for k, v in vars(a).items()),
           "timing": {"warmup": a.warmup, "runs": a.runs, "statistic": "median", "l2_flushed": True},
           "results": results}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
