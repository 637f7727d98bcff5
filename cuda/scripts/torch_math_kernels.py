#!/usr/bin/env python3
"""The CUDA kernels PyTorch's math SDPA backend launches, forward and backward, in order (torch.profiler).

fa-sim models that backend as the kernels it runs (sim/algorithms/torch_math_attention.cpp and its
backward); this lists them on the GPU at hand for the FA2 paper's shapes, causal or not, so that the
model's kernel lists can be checked against them.

    python3 cuda/scripts/torch_math_kernels.py --out torch_math_kernels.json
"""
import argparse
import json

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from torch_sdpa import cuda_kernels


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--N", type=int, default=2048)
    a = ap.parse_args()
    runs = []
    for d in (64, 128):
        for causal in (False, True):
            batch, heads = 16384 // a.N, 2048 // d
            q, k, v = (torch.randn(batch, heads, a.N, d, device="cuda", dtype=torch.float16, requires_grad=True)
                       for _ in range(3))
            d_out = torch.randn(batch, heads, a.N, d, device="cuda", dtype=torch.float16)
            with sdpa_kernel([SDPBackend.MATH]):
                forward = cuda_kernels(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal))
                out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                backward = cuda_kernels(lambda: torch.autograd.grad(out, (q, k, v), d_out, retain_graph=True))
            runs.append({"N": a.N, "d": d, "batch": batch, "heads": heads, "dtype": "fp16", "causal": causal,
                         "forward": forward, "backward": backward})
            print(f"d={d} causal={causal}: forward {len(forward or [])} kernels, backward {len(backward or [])}")
            for name, ks in (("forward", forward), ("backward", backward)):
                for kname in ks or []:
                    print(f"  {name}: {kname[:150]}")
            del q, k, v, d_out, out
            torch.cuda.empty_cache()
    doc = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "runs": runs}
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
