#!/usr/bin/env python3
"""The tables of FlashDecoding's one-call experiments on an H200: variants of the split kernel, each timed in
two passes of one device call, beside PyTorch's fastest SDPA backend (math left out) of the same call.
  cuda/results/2026-11-29-h200-decode-prefetch: K/V copies asking L2 to prefetch 0, 128 or 256 bytes
      (cp.async ... .L2::128B / .L2::256B); files validate_pass<i>_pf<bytes>.txt
  cuda/results/2026-11-29-h200-decode-stages: two or three K/V stages; files validate_pass<i>_stages<n>.txt
  cuda/results/2026-11-30-h200-decode-copies/call*: K/V tiles copied per thread (cp.async) or by the copy engine
      (one bulk copy per key row, or TMA boxes); files decode_<variant>_<i>.txt, PyTorch in torch_decode_*.json

Reads the fa-validate tables (some prefetch passes ran out of time before their JSON was written, every
finished row was printed) and torch_decode*.json. A variant's time is the mean of its passes; a time comes from
the K/V GB/s column (four digits) and the shape's K/V bytes.

    python3 cuda/scripts/decode_variants_table.py cuda/results/2026-11-29-h200-decode-prefetch
    python3 cuda/scripts/decode_variants_table.py cuda/results/2026-11-29-h200-decode-stages
    python3 cuda/scripts/decode_variants_table.py cuda/results/2026-11-30-h200-decode-copies/call2-tensor-tiles
"""
import glob
import json
import os
import re
import sys

ROW = re.compile(r"flash_decoding B=(\d+) H=\d+ KV=(\d+) Nk=(\d+) .*?ok\s+[\d.]+ms\s+[\d.]+ms\s+\S+\s+\d+\s+(\d+)")
PASS = re.compile(r"validate_pass\d+_(pf|stages)(\d+)\.txt$")
COPIES_PASS = re.compile(r"decode_(per_thread|bulk_rows|tensor_tiles)_\d+\.txt$")
# The variant a run's kernel had before the experiment, and the one set against it (None: the other one).
BASELINE = {"pf": (0, 128), "stages": (2, 3), "copies": ("per_thread", None)}


def label(kind, v):
    return {"pf": f"prefetch {v} B", "stages": f"{v} stages"}.get(kind, f"{v}")


def passes(run):
    """(path, kind, variant) of every pass's printed table."""
    for path in sorted(glob.glob(os.path.join(run, "validate_pass*.txt"))):
        m = PASS.search(path)
        if m:
            yield path, m[1], int(m[2])
    for path in sorted(glob.glob(os.path.join(run, "decode_*.txt"))):
        m = COPIES_PASS.search(path)
        if m:
            yield path, "copies", m[1]


def main(run):
    torch_rows = [r for f in sorted(glob.glob(os.path.join(run, "torch_decode*.json"))) for r in json.load(open(f))["results"]]
    kv_bytes, fastest = {}, {}
    for r in torch_rows:
        key = (r["batch"], r["kv_heads"], r["Nk"])
        kv_bytes[key] = r["kv_bytes"]
        if r["backend"] == "math" or r.get("measured_s") is None:
            continue
        if key not in fastest or r["measured_s"] < fastest[key][0]:
            fastest[key] = (r["measured_s"], r["backend"])
    times = {}  # variant -> shape -> [seconds per pass]
    kind = None
    for path, kind, variant in passes(run):
        for line in open(path):
            row = ROW.match(line)
            if row:
                key = (int(row[1]), int(row[2]), int(row[3]))
                times.setdefault(variant, {}).setdefault(key, []).append(kv_bytes[key] / (int(row[4]) * 1e9))
    variants = sorted(times, key=lambda v: (v != BASELINE[kind][0], v))
    print("| B | KV | Nk | PyTorch fastest | " + " | ".join(f"{label(kind, v)}: K/V GB/s, vs it" for v in variants) + " |")
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
    print("shapes where PyTorch's fastest backend is faster: " +
          ", ".join(f"{label(kind, v)}: {below[v]} of {timed[v]} timed" for v in variants))
    base, new = BASELINE[kind]
    new = new if new is not None else next((v for v in variants if v != base), None)
    if base in times and new in times:
        # Where the kernel streams at 4 TB/s or more as it was (both passes): the new variant's slower pass
        # against the baseline's faster one (the worst pair), and its faster pass against the baseline's slower one.
        shapes = [k for k in times[new] if k in times[base] and kv_bytes[k] / max(times[base][k]) >= 4e12]
        worst = [min(times[base][k]) / max(times[new][k]) - 1 for k in shapes]
        best = [max(times[base][k]) / min(times[new][k]) - 1 for k in shapes]
        print(f"{label(kind, new)} against {label(kind, base)}, where the kernel streams at 4 TB/s or more with "
              f"{label(kind, base)} ({len(shapes)} shapes): {min(worst) * 100:+.1f}..{max(worst) * 100:+.1f}% K/V bandwidth "
              f"(the worst pair of passes), {min(best) * 100:+.1f}..{max(best) * 100:+.1f}% (the best)")
        every = [min(times[base][k]) / max(times[new][k]) - 1 for k in times[new] if k in times[base]]
        print(f"every shape timed with both ({len(every)}): the worst pair of passes {min(every) * 100:+.1f}..{max(every) * 100:+.1f}%")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda/results/2026-11-29-h200-decode-prefetch")
