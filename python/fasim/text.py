"""Two small helpers the lesson notebooks print with: quantities with SI prefixes, and aligned tables.

    quantity(1.07e9, "B")        -> '1.07 GB'        quantity(0.00141, "s") -> '1.41 ms'
    quantity(3.12e14, "FLOP/s")  -> '312 TFLOP/s'    quantity(4096)         -> '4.1 k'
    table(["N", "bytes"], [[1024, quantity(2**30, "B")], [2048, "..."]])   # prints the columns aligned
    describe(fasim.simulate("fa2")["problem"])  -> 'B=1 H=16 N=4096 Nk=4096 d=64 fp16 non-causal'
"""

import math

__all__ = ["describe", "quantity", "table"]

_PREFIXES = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""), (1e-3, "m"), (1e-6, "µ"),
             (1e-9, "n")]


def quantity(value, unit="", digits=3):
    """value with an SI prefix and `digits` significant digits: quantity(1.07e9, "B") is '1.07 GB'."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}".strip()
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale * 0.9995:
            break
    scaled = value / scale
    text = f"{scaled:.{digits}g}"
    if "e" in text:  # 1000 at three digits
        text = f"{scaled:.0f}"
    if prefix == "k" and unit == "B":
        prefix = "K"
    return f"{text} {prefix}{unit}".strip()


def table(header, rows):
    """Prints rows (lists of values) under header, each column as wide as its widest cell: text left,
    numbers right."""
    cells = [[str(c) for c in header]] + [[c if isinstance(c, str) else f"{c:,}" if isinstance(c, int) else f"{c:.4g}"
                                          for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    numeric = [all(not isinstance(row[i], str) or row[i][:1].isdigit() or row[i][:1] in "-+." for row in rows)
               for i in range(len(header))]
    for n, r in enumerate(cells):
        print("  ".join(c.rjust(w) if num else c.ljust(w) for c, w, num in zip(r, widths, numeric)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def describe(problem):
    """A result's "problem" dict as fa-sim writes it: 'B=1 H=16 N=4096 Nk=4096 d=64 fp16 non-causal'."""
    p = problem
    kv = f" KV={p['kv_heads']}" if p.get("kv_heads", p["heads"]) != p["heads"] else ""
    return (f"B={p['batch']} H={p['heads']}{kv} N={p['N']} Nk={p['Nk']} d={p['d']} {p['dtype']} "
            + ("causal" if p["causal"] else "non-causal"))
