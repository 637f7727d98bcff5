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
--kv-heads on the default grid gives k and v [B, KV, N, d] (grouped-query attention, enable_gqa where KV < H:
the flash backend's GQA backward sums dK, dV over each group as fa2_bwd_tc does); each result then records the
backend, the CUDA kernels one call ran, and a backend that refuses the problem is recorded with its reason.
With --grid decode it times fa-validate's decode grid (one query row against Nk keys: q [B, H, 1, d],
k and v [B, KV, Nk, d], enable_gqa where KV < H; fp16, d 128, 32 heads, KV 32/8/1, batch 1/8/64,
Nk 1024..131072 unless told otherwise) on every SDPA backend that takes it - flash ("torch_flash_decoding":
flash-attention's split-KV kernels, or its regular one where one split fills the GPU), efficient, cudnn,
math - recording the CUDA kernels each ran (torch.profiler), why a backend refused, and the K/V
streaming bandwidth (bytes of K and V / time).

    python3 cuda/scripts/torch_sdpa.py --out torch.json
    python3 cuda/scripts/torch_sdpa.py --pass bwd --backends flash --dtype fp16 --out torch_bwd.json
    python3 cuda/scripts/torch_sdpa.py --pass bwd --heads 16 --kv-heads 16,4,1 --dtype fp16 --out torch_gqa_bwd.json
    python3 cuda/scripts/torch_sdpa.py --grid decode --out torch_decode.json
"""
import argparse
import datetime
import json
import math
import statistics
import subprocess
import warnings

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

DECODE_BACKENDS = (("flash", "torch_flash_decoding", SDPBackend.FLASH_ATTENTION),
                   ("efficient", "torch_efficient", SDPBackend.EFFICIENT_ATTENTION),
                   ("cudnn", "torch_cudnn", SDPBackend.CUDNN_ATTENTION),
                   ("math", "torch_math", SDPBackend.MATH))


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


def cuda_kernels(fn):
    """The CUDA kernels one call of fn launches, in order (torch.profiler); None where the profiler fails."""
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    except (RuntimeError, AttributeError):  # no CUPTI, or another PyTorch's profiler API
        return None


def decode_reference(q, k, v):
    """O of batch 0 in fp32, each query head with its K/V head (heads h*g .. h*g+g-1 read K/V head h)."""
    kv, d = k.shape[1], q.shape[-1]
    qf = q[0].float().reshape(kv, -1, d)                     # [KV, group, d]
    s = qf @ k[0].float().transpose(-1, -2) / math.sqrt(d)   # [KV, group, Nk]
    return (s.softmax(-1) @ v[0].float()).reshape(q.shape[1], 1, d)


def decode_grid(a, flush):
    """fa-validate's decode grid on every SDPA backend asked for; one result per (configuration, backend)."""
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16}
    results = []
    for d in map(int, a.d.split(",")):
        for dt in a.dtype.split(","):
            for kv in map(int, a.kv_heads.split(",")):
                for b in map(int, a.batches.split(",")):
                    for nk in map(int, a.Nk.split(",")):
                        h = a.heads
                        kv_bytes = 2 * b * kv * nk * d * torch.finfo(dtypes[dt]).bits // 8
                        base = {"grid": "decode", "N": 1, "Nk": nk, "d": d, "dtype": dt, "causal": False, "batch": b,
                                "heads": h, "kv_heads": kv, "kv_bytes": kv_bytes}
                        backends = [x for x in DECODE_BACKENDS if x[0] in a.backends.split(",")]
                        free = torch.cuda.mem_get_info()[0]
                        if kv_bytes + (256 << 20) > free:
                            why = f"K and V need {kv_bytes / 1e9:.1f} GB, {free / 1e9:.1f} GB are free"
                            results += [{**base, "algo": algo, "backend": name, "skipped": why} for name, algo, _ in backends]
                            print(f"decode B={b:2d} KV={kv:2d} Nk={nk:6d}  skipped: {why}", flush=True)
                            continue
                        q = torch.randn(b, h, 1, d, device="cuda", dtype=dtypes[dt])
                        k, v = (torch.randn(b, kv, nk, d, device="cuda", dtype=dtypes[dt]) for _ in range(2))
                        ref = decode_reference(q, k, v)
                        for name, algo, backend in backends:
                            def forward(backend=backend):
                                with sdpa_kernel(backend):
                                    return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=kv < h)
                            result = {**base, "algo": algo, "backend": name}
                            with warnings.catch_warnings(record=True) as caught:
                                warnings.simplefilter("always")
                                try:
                                    out = forward()
                                    torch.cuda.synchronize()
                                except RuntimeError as e:  # no kernel of this backend takes it, or out of memory
                                    reasons = [str(w.message) for w in caught] + [str(e).splitlines()[0]]
                                    result["refused"] = "; ".join(reasons)
                            if "refused" in result:
                                torch.cuda.empty_cache()
                                results.append(result)
                                print(f"{algo:21s} B={b:2d} KV={kv:2d} Nk={nk:6d}  refused", flush=True)
                                continue
                            err = (out[:1].float().reshape(ref.shape) - ref).abs().max().item()
                            del out
                            med, lo, hi = time_ms(forward, flush, a.runs, a.warmup)
                            result.update({"measured_s": med / 1e3, "measured_min_s": lo / 1e3, "measured_max_s": hi / 1e3,
                                           "runs": a.runs, "kv_bandwidth_gbps": kv_bytes / (med / 1e3) / 1e9,
                                           "max_abs_diff_vs_fp32_batch0": err, "kernels": cuda_kernels(forward)})
                            results.append(result)
                            print(f"{algo:21s} B={b:2d} KV={kv:2d} Nk={nk:6d}  {med:9.3f} ms  "
                                  f"{result['kv_bandwidth_gbps']:7.0f} GB/s", flush=True)
                        del q, k, v, ref
                        torch.cuda.empty_cache()
    return results


def training_grid(a, flush):
    """N = Nk: the math, flash and (with --backends ...,cudnn) cuDNN backends, one result per (configuration, backend)."""
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    results = []
    grouped_run = a.kv_heads is not None  # record backends, kernels and refusals
    for d in map(int, a.d.split(",")):
        for n in map(int, a.N.split(",")):
            for dt in a.dtype.split(","):
              for kv in map(int, (a.kv_heads or str(a.heads)).split(",")):
                if kv <= 0 or a.heads % kv:
                    raise SystemExit(f"--kv-heads {kv} does not divide --heads {a.heads}")
                training = a.passes != "fwd"
                q = torch.randn(a.batch, a.heads, n, d, device="cuda", dtype=dtypes[dt], requires_grad=training)
                k, v = (torch.randn(a.batch, kv, n, d, device="cuda", dtype=dtypes[dt], requires_grad=training)
                        for _ in range(2))
                gqa = {"enable_gqa": True} if kv < a.heads else {}
                d_out = torch.randn(a.batch, a.heads, n, d, device="cuda", dtype=dtypes[dt]) if training else None
                for causal in (False, True):
                    ref = None
                    for name, backend in (("torch_math", SDPBackend.MATH), ("torch_flash", SDPBackend.FLASH_ATTENTION),
                                          ("torch_cudnn", SDPBackend.CUDNN_ATTENTION)):
                        if name.removeprefix("torch_") not in a.backends.split(","):
                            continue
                        if name != "torch_math" and dt == "fp32":
                            continue  # the flash and cuDNN backends take fp16/bf16 only
                        # the math backend materialises S and P (and, training, their gradients)
                        if name == "torch_math" and n * n * a.batch * a.heads * 4 * (6 if training else 3) > 30e9:
                            continue
                        def forward():
                            with sdpa_kernel(backend):
                                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, **gqa)
                        where = f"{name:16s} N={n:6d} d={d:3d} {dt} causal={int(causal)}" + (f" KV={kv}" if grouped_run else "")
                        base = {"algo": name if a.passes == "fwd" else name + "_bwd", "backend": name.removeprefix("torch_"),
                                "N": n, "Nk": n, "d": d, "dtype": dt, "causal": causal, "batch": a.batch,
                                "heads": a.heads, "kv_heads": kv}
                        with warnings.catch_warnings(record=True) as caught:
                            warnings.simplefilter("always")
                            try:
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
                                torch.cuda.synchronize()
                            except RuntimeError as e:  # a backend that does not take this problem (its limits)
                                why = "; ".join([str(w.message) for w in caught] + [str(e).splitlines()[0]])
                                print(f"{where}  skipped: the {base['backend']} backend refused: {why}", flush=True)
                                if grouped_run:
                                    results.append({**base, "refused": why})
                                torch.cuda.empty_cache()
                                continue
                        if name == "torch_math":
                            ref = compared.float()
                        # null when the math backend did not run (--backends flash, or too large)
                        err = None if ref is None else (compared.float() - ref).abs().max().item()
                        med, lo, hi = time_ms(fn, flush, a.runs, a.warmup)
                        algo = base["algo"]
                        result = {**base, "measured_s": med / 1e3,
                                  "measured_min_s": lo / 1e3, "measured_max_s": hi / 1e3, "runs": a.runs,
                                  "max_abs_diff_vs_math": err}
                        if grouped_run:  # which kernels the backend ran (a GQA backward: its sum over the group too)
                            result["kernels"] = cuda_kernels(fn)
                        if a.passes != "fwd":
                            result["pass"] = a.passes
                        if a.passes == "fwd+bwd":
                            result["forward_algo"] = name
                        results.append(result)
                        print(f"{where}  {med:9.3f} ms", flush=True)
                del q, k, v, d_out
                torch.cuda.empty_cache()
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--grid", default="default", choices=("default", "decode"),
                    help="default: N = Nk; decode: one query row against Nk keys, grouped K/V heads")
    ap.add_argument("--N", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--Nk", default="1024,4096,16384,65536,131072", help="decode grid: key lengths")
    ap.add_argument("--kv-heads", dest="kv_heads", help="K/V head counts, divisors of --heads (decode grid default "
                    "32,8,1; default grid: --heads, no grouping)")
    ap.add_argument("--batches", default="1,8,64", help="decode grid: batch sizes")
    ap.add_argument("--d", help="head dims (default 64,128; decode grid 128)")
    ap.add_argument("--dtype", help="storage dtypes (default fp16,bf16,fp32; decode grid fp16)")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, help="query heads (default 8; decode grid 32)")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--backends", help="which of math, flash, cudnn to run (default math,flash; flash alone: for ncu); "
                    "decode grid: of flash, efficient, cudnn, math (default all four)")
    ap.add_argument("--pass", dest="passes", default="fwd", choices=("fwd", "bwd", "fwd+bwd"),
                    help="time the forward (default), the backward, or both")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    decode = a.grid == "decode"
    if decode and a.passes != "fwd":
        ap.error("--grid decode times the forward pass: drop --pass")
    a.d = a.d or ("128" if decode else "64,128")
    a.dtype = a.dtype or ("fp16" if decode else "fp16,bf16,fp32")
    a.heads = a.heads or (32 if decode else 8)
    a.backends = a.backends or ("flash,efficient,cudnn,math" if decode else "math,flash")
    if decode:
        a.kv_heads = a.kv_heads or "32,8,1"
    flush = torch.empty(int(torch.cuda.get_device_properties(0).L2_cache_size * 2 // 4), dtype=torch.float32, device="cuda")
    results = decode_grid(a, flush) if decode else training_grid(a, flush)
    driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip()
    doc = {"schema_version": 1, "gpu": torch.cuda.get_device_name(0), "driver": driver,
           "torch": torch.__version__, "date": datetime.date.today().isoformat(),
           "command": "python3 cuda/scripts/torch_sdpa.py " + " ".join(
               f"--{'pass' if k == 'passes' else k.replace('_', '-')} {v}" for k, v in vars(a).items()),
           "timing": {"warmup": a.warmup, "runs": a.runs, "statistic": "median", "l2_flushed": True},
           "results": results}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
