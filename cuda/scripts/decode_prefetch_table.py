#!/usr/bin/env python3
"""The table of cuda/results/2026-11-29-h200-decode-prefetch: FlashDecoding's split kernel with its K/V
copies asking L2 to prefetch 0, 128 or 256 bytes (cp.async ... .L2::128B / .L2::256B), each timed in two
passes of one device call, beside PyTorch's fastest SDPA backend (math left out) of the same call.

Reads the fa-validate tables (validate_pass<i>_pf<bytes>.txt: some passes ran out of time before their
JSON was written, every finished row was printed) and torch_decode.json. A variant's time is the mean of
its passes; a time comes from the K/V GB/s column (four digits) and the shape's K/V bytes.

    python3 cuda/scripts/decode_prefetch_table.py cuda/results/2026-11-29-h200-decode-prefetch
"""
import glob
import json
import os
import re
import sys

ROW = re.compile(r"flash_decoding B=(\d+) H=\d+ KV=(\d+) Nk=(\d+) .*?ok\s+[\d.]+ms\s+[\d.]+ms\s+\S+\s+\d+\s+(\d+)")


def main(run):
    torch_rows = json.load(open(os.path.join(run, "torch_decode.json")))["results"]
    kv_bytes, fastest = {}, {}
    for r in torch_rows:
        key = (r["batch"], r["kv_heads"], r["Nk"])
        kv_bytes[key] = r["kv_bytes"]
        if r["backend"] == "math" or r.get("measured_s") is None:
            continue
        if key not in fastest or r["measured_s"] < fastest[key][0]:
            fastest[key] = (r["measured_s"], r["backend"])
    times = {}  # prefetch bytes -> shape -> [seconds per pass]
    for path in sorted(glob.glob(os.path.join(run, "validate_pass*_pf*.txt"))):
        prefetch = int(re.search(r"_pf(\d+)\.txt$", path).group(1))
        for line in open(path):
            m = ROW.match(line)
            if m:
                key = (int(m[1]), int(m[2]), int(m[3]))
                times.setdefault(prefetch, {}).setdefault(key, []).append(kv_bytes[key] / (int(m[4]) * 1e9))
    variants = sorted(times)
    print("| B | KV | Nk | PyTorch fastest | " + " | ".join(f"prefetch {v} B: K/V GB/s, vs it" for v in variants) + " |")
    print("|---|---|---|---|" + "---|" * len(variants))
    below = {v: 0 for v in variants}
    timed = {v: 0 for v in variants}
    for key in sorted(fastest):
        cells = []
        for v in variants:
            t = times[v].get(key)
            if not t:
                cells.append("-")
                continue
            mean = sum(t) / len(t)
            ratio = fastest[key][0] / mean
            below[v] += ratio < 1
            timed[v] += 1
            cells.append(f"{kv_bytes[key] / mean / 1e9:.0f}, {ratio:.3f}x")
        print(f"| {key[0]} | {key[1]} | {key[2]} | {fastest[key][1]} {fastest[key][0] * 1e3:.3f} ms | " + " | ".join(cells) + " |")
    print()
    print("shapes where PyTorch's fastest backend is faster: " + ", ".join(f"prefetch {v} B: {below[v]} of {timed[v]} timed" for v in variants))
    if 0 in times and 128 in times:
        # Where the kernel streams at 4 TB/s or more without the hint (both passes): the slower pass with it
        # against the faster pass without.
        gains = [min(times[0][k]) / max(times[128][k]) - 1 for k in times[128] if k in times[0]
                 and kv_bytes[k] / max(times[0][k]) >= 4e12]
        print(f"128 B prefetch against none, where the kernel streams at 4 TB/s or more without it ({len(gains)} shapes): "
              f"{min(gains) * 100:+.1f}..{max(gains) * 100:+.1f}% K/V bandwidth (the worst pair of passes)")

if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda/results/2026-11-29-h200-decode-prefetch")
