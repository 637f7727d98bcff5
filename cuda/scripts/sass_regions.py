#!/usr/bin/env python3
"""Instruction counts of address ranges of one kernel's SASS: how the per-operation costs of
sim/kernels/issue_costs.hpp were read off fa-sim's tensor-core kernels (cuda/sass/README.md).

    # the SASS of one object (cuobjdump ships with the CUDA toolkit; pip's nvidia-cuda-cuobjdump has it too)
    nvcc -O3 -DNDEBUG -std=c++20 -arch=sm_90 -cubin -Icuda -Ireference -o fa2_tc.cubin cuda/kernels/fa2_tensor_core.cu
    cuobjdump -sass fa2_tc.cubin > fa2_tc.sass
    python3 cuda/scripts/sass_regions.py fa2_tc.sass --kernel 'fa2_tc_forward_kernelI6__halfLi64' \\
        --range 1010-1740 --range 1760-26f0 --range 40e0-4590

Without --range it lists the kernel's branches and barriers (to find the loop and its paths) and the
opcode counts of the whole kernel. Counts are static: one pass through each range.
"""
import argparse
import collections
import re
import sys

LINE = re.compile(r"\s*/\*([0-9a-f]{4,6})\*/\s+(.*?)\s*;")


def kernel_listing(text, pattern):
    """(address, opcode, instruction) of the first function whose mangled name matches pattern."""
    out, inside = [], False
    for line in text.splitlines():
        if "Function :" in line:
            if inside:
                break
            inside = re.search(pattern, line) is not None
            continue
        m = LINE.match(line) if inside else None
        if m:
            ins = m.group(2)
            tokens = ins.split()
            op = tokens[1] if tokens[0].startswith("@") else tokens[0]
            out.append((int(m.group(1), 16), op.split(".")[0], ins))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sass", help="output of cuobjdump -sass")
    ap.add_argument("--kernel", required=True, help="regular expression on the mangled kernel name")
    ap.add_argument("--range", action="append", default=[], metavar="START-END",
                    help="hex addresses, both included; repeat for the pieces of one path")
    a = ap.parse_args()
    listing = kernel_listing(open(a.sass).read(), a.kernel)
    if not listing:
        sys.exit(f"sass_regions.py: no kernel matching '{a.kernel}' in {a.sass}. Fix: check the name with "
                 f"grep Function {a.sass}")
    if not a.range:
        for addr, op, ins in listing:
            if op in ("BRA", "BAR", "EXIT", "CALL", "RET"):
                print(f"{addr:05x}  {ins}")
        counts = collections.Counter(op for _, op, _ in listing)
        print(f"whole kernel: {len(listing)} instructions", dict(counts.most_common()))
        return
    total = collections.Counter()
    for r in a.range:
        try:
            lo, hi = (int(x, 16) for x in r.split("-"))
        except ValueError:
            sys.exit(f"sass_regions.py: --range '{r}' is not START-END in hex. Fix: e.g. --range 1010-1740")
        counts = collections.Counter(op for addr, op, _ in listing if lo <= addr <= hi)
        total += counts
        print(f"{r}: {sum(counts.values())} instructions", dict(counts.most_common()))
    print(f"total: {sum(total.values())} instructions", dict(total.most_common()))


if __name__ == "__main__":
    main()
