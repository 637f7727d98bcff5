// Lesson 06: FlashAttention-2 (Dao 2023): loop order, O written once, logsumexp,
// fewer non-matmul FLOPs, split-Q instead of split-K.
#include <iostream>

#include "common/errors.hpp"
#include "common/lesson.hpp"
#include "common/sim_helpers.hpp"
#include "common/text.hpp"
#include "precision.hpp"
#include "report/units.hpp"

using namespace fasim;
using namespace fasim::lessons;

namespace {

std::string b(Count v) { return units::bytes(to_double(v)); }
double ratio(Count a, Count c) { return to_double(a) / to_double(c); }

}  // namespace

int FASIM_LESSON_ENTRY(int argc, char** argv) {
    Lesson L(6, "flashattention_2", "FlashAttention-2",
             "FlashAttention-2 computes exactly what FlashAttention-1 computes, with the same tiling and the "
             "same online softmax. What changes is the schedule: the loops are swapped so that each Q tile "
             "is finished by one thread block and O is written once; O is rescaled less often; only the "
             "logsumexp of each row is kept; and the four warps of a block split Q instead of K and V. "
             "This lesson traces it, then puts FA1 and FA2 side by side in the simulator.");
    L.problem_options(make_problem(1, 16, 4096, 64), kN | kD | kHeads | kBatch | kDtype);
    std::int64_t& trace_n = L.int_option("--trace-N", 8, 2, 64, "sequence length of the traced problem");
    std::int64_t& trace_d = L.int_option("--trace-d", 4, 4, 16, "head dimension of the traced problem (4, 8 or 16)");
    std::int64_t& trace_tile = L.int_option("--trace-tile", 4, 1, 64, "Br = Bc of the traced problem");
    std::int64_t& seed = L.int_option("--seed", 1, 0, 1000000, "seed of the traced problem's random Q, K, V");
    std::int64_t& same_tile = L.int_option("--same-tile", 64, 16, 128,
                                           "Br = Bc used for both algorithms when comparing work (steps 3-4)");

    return L.run(argc, argv, [&](Lesson&) {
        const GpuSpec& gpu = L.gpu();
        const AttentionProblem& p = L.problem();
        if (!supported_head_dim(trace_d) || trace_d > 16)
            throw usage_error("--trace-d " + std::to_string(trace_d) + " is not supported",
                              "the traced head dimension must be 4, 8 or 16", "e.g. --trace-d 4");
        const TileRequest same = tiles(same_tile, same_tile);

        L.step({"loop", "The loops swapped: one Q tile per thread block",
                R"(FlashAttention-2's Algorithm 1 puts the Q tiles in the outer loop and hands
each one to its own thread block. A block loads its Q_i once and then walks
over all K/V tiles:

    S = Q_i·K_jᵀ                 scores of this tile, in registers
    m_new = max(m, rowmax(S))    running max
    P~ = exp(S − m_new)          unnormalised probabilities
    ℓ = e^(m − m_new)·ℓ + rowsum(P~)
    O = e^(m − m_new)·O + P~·V_j   O stays unnormalised, in registers

Only after the last K/V tile does it divide O by ℓ, compute the logsumexp
LSE = m + log ℓ, and write O and LSE to HBM, once. Compare with lesson 05's
trace: no O, ℓ or m is loaded from HBM, no division inside the loop, and no
"warps exchange" lines. The trace below (the trace spells ℓ as l) runs the
simulator's FA2 tile program on real numbers; at the end its O and LSE are
compared with exact attention.)",
                [&](Ctx& c) {
                    const AttentionProblem tp = make_problem(1, 1, trace_n, trace_d, p.dtype);
                    const TileConfig cfg = choose_tiles(algorithm("fa2"), tp, gpu, tiles(trace_tile, trace_tile));
                    const TracedRun t = traced_run(algorithm("fa2"), tp, gpu, cfg, static_cast<std::uint64_t>(seed));
                    c.out << tp.describe() << ", Br = Bc = " << trace_tile << "; Q, K, V ~ N(0,1) with seed " << seed
                          << ";\nvalues shown for at most 4 rows and 4 columns.\n\n"
                          << t.trace << '\n';
                    const auto exact = reference::exact_attention(t.Q[0], t.K[0], t.V[0]);
                    const auto check = reference::check_tolerance(t.run.O[0], t.Q[0], t.K[0], t.V[0], {}, tp.dtype);
                    const auto lse = reference::check_lse(t.run.lse[0], t.Q[0], t.K[0], {}, exact);
                    print_para(c.out, "max |O - O_exact| = " + num(check.error, 3) + "; allowed " + num(check.bound, 3) + " -> " +
                                          (check.pass ? "the traced O equals exact attention." : "the traced O DIFFERS from exact attention."));
                    print_para(c.out, "max |LSE - LSE_exact| = " + num(lse.max_error, 3) + " -> " +
                                          (lse.pass ? "the logsumexp equals the exact one." : "the logsumexp DIFFERS."));
                    c.results["problem"] = tp.describe();
                    c.results["max_error"] = check.error;
                    c.results["allowed_error"] = check.bound;
                    c.results["equals_exact"] = check.pass;
                    c.results["lse_max_error"] = lse.max_error;
                    c.results["lse_equals_exact"] = lse.pass;
                },
                "",
                R"PY(TRACE_N, TRACE_D, TILE, SEED = 8, 4, 4, 1  # the traced problem: one head, N = Nk = TRACE_N, Br = Bc = TILE
rng = np.random.default_rng(SEED)
Q, K, V = (rng.standard_normal((1, 1, TRACE_N, TRACE_D)) for _ in range(3))
steps = fasim.trace("fa2", Q, K, V, Br=TILE, Bc=TILE, dtype=PROBLEM["dtype"])  # every step of the tile program
print(f"B=1 H=1 N={TRACE_N} d={TRACE_D} {PROBLEM['dtype']}, Br = Bc = {TILE}; Q, K, V ~ N(0,1) with seed {SEED}; "
      "the row statistics' first 4 values\n")
for s in steps:
    if s["kind"] == "kernel":
        print(f"kernel {s['kernel']}: {s['role']} (grid {s['grid']})")
    elif s["kind"] == "block":
        print(f"block {s['block']} (head {s['head']})")
    else:
        source = s["region"]["text"] if s["region"] else ", ".join(s["operands"])
        v = s["values"]
        shown = np.array2string(v[:4, 0], precision=3) if v is not None and v.shape[1] == 1 else ""
        print(f"  {s['op'] or s['kind']:8} {s['result'] or '':7} <- {source:22} {shown}".rstrip())

# O and LSE against exact attention in float64 (NumPy), on the inputs as fp16 stores them
out = fasim.run("fa2", Q, K, V, Br=TILE, Bc=TILE, dtype=PROBLEM["dtype"])
q, k, v = (x.astype(np.float16 if PROBLEM["dtype"] == "fp16" else np.float32).astype(np.float64)[0, 0] for x in (Q, K, V))
S = q @ k.T / np.sqrt(TRACE_D)
m = S.max(axis=1, keepdims=True)
P = np.exp(S - m)
O_exact, lse_exact = P @ v / P.sum(axis=1, keepdims=True), (m + np.log(P.sum(axis=1, keepdims=True)))[:, 0]
err, lse_err = np.abs(out["O"][0, 0] - O_exact).max(), np.abs(out["lse"][0, 0] - lse_exact).max()
print(f"\nmax |O - O_exact| = {err:.3g}; max |LSE - LSE_exact| = {lse_err:.3g} "
      f"(fp16 keeps about 3 significant digits: the traced program computes exact attention)")
RESULTS["loop"] = dict(problem=f"B=1 H=1 N={TRACE_N} Nk={TRACE_N} d={TRACE_D} {PROBLEM['dtype']} non-causal",
                       equals_exact=bool(err < 1e-2), lse_equals_exact=bool(lse_err < 1e-2)))PY"});

        L.step({"traffic", "HBM traffic: O written once",
                R"(Per head, FA2 reads Q once and K and V once per Q tile, and writes O and
the fp32 LSE once:

    reads  = N·d·e + Tr·2·Nk·d·e        Tr = ⌈N/Br⌉
    writes = N·d·e + N·4

FA1 instead rewrites O, ℓ and m on every one of its Tc outer iterations. The
table compares the two with their default tiles. Look at the writes first.
The reads are a trade: FA1 re-reads Q and O Tc times, FA2 re-reads K and V Tr
times, so depending on the tiles either may issue more reads. Re-reads of
data that other blocks are reading at the same time are served by L2 (see the
DRAM line, after the simulator's L2 model): FA2's re-reads of K and V are of
that kind, so what reaches DRAM is close to reading Q, K and V once. FA1's
round trips of O (O_acc), ℓ and m are not: a block comes back to a row only
after a pass over all its other rows, and whether the row is still in L2 then
depends on how much all the heads running at once have touched meanwhile.)",
                [&](Ctx& c) {
                    const AlgorithmResult r1 = sim(algorithm("fa1"), p, gpu), r2 = sim(algorithm("fa2"), p, gpu);
                    // FA2's closed form (flash_attention_2.cpp): reads Nd + Tr·2·Nk·d, writes Nd + N (LSE), all heads.
                    const ClosedForm::Bytes f = *r2.algo->closed_form(p, r2.tiles).hbm;
                    const Count f_reads = f.read, f_writes = f.write;
                    print_para(c.out, p.describe() + "; FA1 tiles " + std::to_string(r1.tiles.Br) + " x " +
                                          std::to_string(r1.tiles.Bc) + ", FA2 tiles " + std::to_string(r2.tiles.Br) + " x " +
                                          std::to_string(r2.tiles.Bc));
                    c.out << '\n';
                    Table t({"bytes", "FA1 read", "FA1 written", "FA2 read", "FA2 written"}, "lrrrr");
                    for (const std::string& n : tensor_names({&r1.hbm, &r2.hbm})) {
                        if (both_of(r1.hbm, n) + both_of(r2.hbm, n) == 0) continue;
                        t.row({n, b(read_of(r1.hbm, n)), b(write_of(r1.hbm, n)),
                               b(read_of(r2.hbm, n)), b(write_of(r2.hbm, n))});
                    }
                    t.row({"HBM (loads+stores)", b(r1.hbm.read_bytes()), b(r1.hbm.write_bytes()), b(r2.hbm.read_bytes()),
                           b(r2.hbm.write_bytes())});
                    t.row({"DRAM (after L2)", b(r1.dram.read_bytes()), b(r1.dram.write_bytes()), b(r2.dram.read_bytes()),
                           b(r2.dram.write_bytes())});
                    t.print(c.out);
                    const bool agree = f_reads == r2.hbm.read_bytes() && f_writes == r2.hbm.write_bytes();
                    c.out << '\n';
                    print_para(c.out, "FA2 formula: reads " + grouped(f_reads) + ", writes " + grouped(f_writes) + " bytes; the simulator " +
                                          (agree ? "agrees to the byte." : "DIFFERS.") + " FA2 writes " +
                                          units::ratio(ratio(r1.hbm.write_bytes(), r2.hbm.write_bytes())) + " less than FA1 and reads " +
                                          units::ratio(ratio(r2.hbm.read_bytes(), r1.hbm.read_bytes())) + " as much.");
                    // What reading Q, K and V once and writing O once costs; and how much of FA1's DRAM
                    // traffic is its round trips (O_acc, ℓ, m).
                    const std::int64_t once = p.batch_heads() * (2 * p.N * p.d + 2 * p.Nk * p.d) * p.elem_bytes();
                    // The running O is O_acc (fp32) with fp16/bf16 storage, O itself with fp32.
                    const std::string run_o = both_of(r1.hbm, "O_acc") > 0 ? "O_acc" : "O";
                    const Count trips = both_of(r1.dram, run_o) + both_of(r1.dram, "l") + both_of(r1.dram, "m");
                    const Count trips_hbm = both_of(r1.hbm, run_o) + both_of(r1.hbm, "l") + both_of(r1.hbm, "m");
                    const double reach = trips_hbm > 0 ? static_cast<double>(trips) / static_cast<double>(trips_hbm) : 0;
                    print_para(c.out, "At DRAM the two move " + b(r1.dram.total()) + " (FA1) and " + b(r2.dram.total()) +
                                          " (FA2); reading Q, K and V once and writing O once is " + b(once) + ". Of FA1's " +
                                          b(trips_hbm) + " of " + run_o + ", ℓ and m through HBM, " + b(trips) + " reach DRAM (" +
                                          percent(reach, 0) + "): the " + units::capacity(static_cast<double>(gpu.l2_bytes)) + " L2 " +
                                          (reach > 0.5 ? "does not keep" : "keeps") + " most rows between two visits here.");
                    c.results["fa1_round_trip_hbm_bytes"] = trips_hbm;
                    c.results["fa1_round_trip_dram_bytes"] = trips;
                    c.results["fa1_hbm_read_bytes"] = r1.hbm.read_bytes();
                    c.results["fa1_hbm_write_bytes"] = r1.hbm.write_bytes();
                    c.results["fa2_hbm_read_bytes"] = r2.hbm.read_bytes();
                    c.results["fa2_hbm_write_bytes"] = r2.hbm.write_bytes();
                    c.results["fa1_dram_bytes"] = r1.dram.total();
                    c.results["fa2_dram_bytes"] = r2.dram.total();
                    c.results["fa2_formula_agrees"] = agree;
                },
                "",
                R"PY(r1 = fasim.simulate("fa1", gpu=GPU, **PROBLEM)
r2 = fasim.simulate("fa2", gpu=GPU, **PROBLEM)
p = r2["problem"]
print(f"B={p['batch']} H={p['heads']} N={p['N']} d={p['d']} {p['dtype']}; FA1 tiles {r1['tiles']['Br']} x {r1['tiles']['Bc']}, "
      f"FA2 tiles {r2['tiles']['Br']} x {r2['tiles']['Bc']}\n")
def rw(r, level, name):  # (read, written) bytes of one tensor
    t = r[level]["by_tensor"].get(name, {"read_bytes": 0, "write_bytes": 0})
    return t["read_bytes"], t["write_bytes"]
names = list(dict.fromkeys([*r1["hbm"]["by_tensor"], *r2["hbm"]["by_tensor"]]))
rows = [[n, *(quantity(b, "B") for b in (*rw(r1, "hbm", n), *rw(r2, "hbm", n)))] for n in names]
for level, label in (("hbm", "HBM (loads+stores)"), ("dram", "DRAM (after L2)")):
    rows.append([label] + [quantity(r[level][k], "B") for r in (r1, r2) for k in ("read_bytes", "write_bytes")])
table(["bytes", "FA1 read", "FA1 written", "FA2 read", "FA2 written"], rows)

# FA2's closed form: Q once and K, V once per Q tile (Tr of them); O and the fp32 LSE written once.
BH, N, Nk, d, e = p["batch"] * p["heads"], p["N"], p["Nk"], p["d"], {"fp32": 4, "fp16": 2, "bf16": 2}[p["dtype"]]
Tr = -(-N // r2["tiles"]["Br"])
reads, writes = BH * e * (N * d + Tr * 2 * Nk * d), BH * (e * N * d + 4 * N)
agree = reads == r2["hbm"]["read_bytes"] and writes == r2["hbm"]["write_bytes"]
print(f"\nFA2 formula: reads {reads:,}, writes {writes:,} bytes; the simulator {'agrees to the byte' if agree else 'DIFFERS'}. "
      f"FA2 writes {r1['hbm']['write_bytes'] / r2['hbm']['write_bytes']:.3g}x less than FA1 and reads "
      f"{r2['hbm']['read_bytes'] / r1['hbm']['read_bytes']:.3g}x as much.")
run_o = "O_acc" if sum(rw(r1, "hbm", "O_acc")) else "O"  # FA1's running O: fp32 O_acc under fp16 storage
trips = sum(sum(rw(r1, "dram", n)) for n in (run_o, "l", "m"))
trips_hbm = sum(sum(rw(r1, "hbm", n)) for n in (run_o, "l", "m"))
print(f"Of FA1's {quantity(trips_hbm, 'B')} of {run_o}, l and m through HBM, {quantity(trips, 'B')} reach DRAM "
      f"({trips / trips_hbm:.0%}).")
both = lambda level: level["read_bytes"] + level["write_bytes"]
RESULTS["traffic"] = dict(fa1_round_trip_hbm_bytes=trips_hbm, fa1_round_trip_dram_bytes=trips,
                          fa1_hbm_read_bytes=r1["hbm"]["read_bytes"], fa1_hbm_write_bytes=r1["hbm"]["write_bytes"],
                          fa2_hbm_read_bytes=r2["hbm"]["read_bytes"], fa2_hbm_write_bytes=r2["hbm"]["write_bytes"],
                          fa1_dram_bytes=both(r1["dram"]), fa2_dram_bytes=both(r2["dram"]), fa2_formula_agrees=agree))PY"});

        L.step({"nonmatmul", "Fewer non-matmul FLOPs",
                R"(Tensor cores make matrix products far cheaper than any other arithmetic:
the first line below divides the chosen GPU's tensor-core rate by its rate for
ordinary fp32 operations. Every FLOP outside a matrix product costs that many
matmul FLOPs' worth of time, so a few percent of the FLOPs can take a large
share of the time.

Per K/V tile, FA1 rescales O twice (by ℓ_i·e^(m_i − m_new) and e^(m~ − m_new)),
adds, divides by ℓ_new, and its warps combine partial results. FA2 rescales O
once and divides once, after the loop. To compare the algorithms and not their
tile sizes, both run here on the same Br×Bc tiles (--same-tile).)",
                [&, same](Ctx& c) {
                    const AlgorithmResult r1 = sim(algorithm("fa1"), p, gpu, same), r2 = sim(algorithm("fa2"), p, gpu, same);
                    const double mm = gpu.matmul_flops(p.dtype), fp32 = gpu.effective_fp32_flops();
                    print_para(c.out, gpu.name + ": " + units::rate(mm, "FLOP/s") + " for " + dtype_name(p.dtype) +
                                          " matrix products, " + units::rate(fp32, "FLOP/s") + " for fp32 arithmetic: " +
                                          units::ratio(mm / fp32) + ".");
                    c.out << p.describe() << ", Br = Bc = " << same_tile << " for both\n\n";
                    Table t({"", "FA1", "FA2", "FA1 / FA2"}, "lrrr");
                    t.row({"matmul FLOPs", units::flops(static_cast<double>(r1.matmul_flops)),
                           units::flops(static_cast<double>(r2.matmul_flops)), units::ratio(ratio(r1.matmul_flops, r2.matmul_flops))});
                    t.row({"  at the tensor rate", units::seconds(static_cast<double>(r1.matmul_flops) / mm),
                           units::seconds(static_cast<double>(r2.matmul_flops) / mm), ""});
                    t.row({"non-matmul FLOPs", units::flops(static_cast<double>(r1.nonmatmul_flops)),
                           units::flops(static_cast<double>(r2.nonmatmul_flops)),
                           units::ratio(ratio(r1.nonmatmul_flops, r2.nonmatmul_flops))});
                    const double t1 = static_cast<double>(r1.nonmatmul_flops) / fp32, t2 = static_cast<double>(r2.nonmatmul_flops) / fp32;
                    t.row({"  at the fp32 rate", units::seconds(t1), units::seconds(t2), units::ratio(t1 / t2)});
                    t.row({"exp/log (SFU)", units::count(static_cast<double>(r1.sfu_ops)), units::count(static_cast<double>(r2.sfu_ops)),
                           units::ratio(ratio(r1.sfu_ops, r2.sfu_ops))});
                    t.print(c.out);
                    c.out << '\n';
                    print_para(c.out, "(Times: the FLOPs over the whole GPU's rate, a lower bound.) The matrix products are the "
                                      "same work; the bookkeeping around them halves, and it is a large part of the time.");
                    c.results["tensor_to_fp32_rate"] = mm / fp32;
                    c.results["fa1_nonmatmul_flops"] = r1.nonmatmul_flops;
                    c.results["fa2_nonmatmul_flops"] = r2.nonmatmul_flops;
                    c.results["fa1_matmul_flops"] = r1.matmul_flops;
                    c.results["fa2_matmul_flops"] = r2.matmul_flops;
                    c.results["nonmatmul_ratio"] = ratio(r1.nonmatmul_flops, r2.nonmatmul_flops);
                },
                "",
                R"PY(SAME_TILE = 64  # Br = Bc for both algorithms, to compare the algorithms and not their tiles
r1 = fasim.simulate("fa1", gpu=GPU, Br=SAME_TILE, Bc=SAME_TILE, **PROBLEM)
r2 = fasim.simulate("fa2", gpu=GPU, Br=SAME_TILE, Bc=SAME_TILE, **PROBLEM)
g = r2["gpu"]
mm = g.get(f"tensor_{PROBLEM['dtype']}_flops_per_s", g["fp32_flops_per_s"])
fp32 = g["fp32_flops_per_s"]
print(f"{g['name']}: {quantity(mm, 'FLOP/s')} for {PROBLEM['dtype']} matrix products, {quantity(fp32, 'FLOP/s')} for fp32 "
      f"arithmetic: {mm / fp32:.3g}x.\n")
f1, f2 = r1["flops"], r2["flops"]
table(["", "FA1", "FA2", "FA1 / FA2"], [
    ["matmul FLOPs", quantity(f1["matmul"]), quantity(f2["matmul"]), f"{f1['matmul'] / f2['matmul']:.3g}x"],
    ["  at the tensor rate", quantity(f1["matmul"] / mm, "s"), quantity(f2["matmul"] / mm, "s"), ""],
    ["non-matmul FLOPs", quantity(f1["nonmatmul"]), quantity(f2["nonmatmul"]), f"{f1['nonmatmul'] / f2['nonmatmul']:.3g}x"],
    ["  at the fp32 rate", quantity(f1["nonmatmul"] / fp32, "s"), quantity(f2["nonmatmul"] / fp32, "s"), ""],
    ["exp/log (SFU)", quantity(f1["sfu_ops"]), quantity(f2["sfu_ops"]), f"{f1['sfu_ops'] / f2['sfu_ops']:.3g}x"],
])
RESULTS["nonmatmul"] = dict(tensor_to_fp32_rate=mm / fp32, fa1_nonmatmul_flops=f1["nonmatmul"], fa2_nonmatmul_flops=f2["nonmatmul"],
                            fa1_matmul_flops=f1["matmul"], fa2_matmul_flops=f2["matmul"],
                            nonmatmul_ratio=f1["nonmatmul"] / f2["nonmatmul"]))PY"});

        L.step({"warps", "Split-K against split-Q: shared-memory traffic",
                R"(Inside a thread block the four warps must divide the work of S = Q_i·K_jᵀ
and of P~·V_j.

- FA1 splits K and V (split-K): every warp needs all of Q_i but only a quarter
  of the keys. Each warp then holds partial row maxima, partial row sums and a
  partial P~·V_j for every row, so the warps write them to shared memory, wait
  at a barrier, and add them up.
- FA2 splits Q (split-Q): every warp owns a quarter of the rows of Q_i and
  reads all of K_j and V_j. A row's scores, softmax and output stay in one
  warp, so nothing is exchanged in the forward pass.

The simulator counts shared-memory bytes for both (same tiles as step 3).)",
                [&, same](Ctx& c) {
                    const AlgorithmResult r1 = sim(algorithm("fa1"), p, gpu, same), r2 = sim(algorithm("fa2"), p, gpu, same);
                    const double BH = static_cast<double>(p.batch_heads());
                    Table t({"per head", "FA1 (split-K)", "FA2 (split-Q)", "FA1 / FA2"}, "lrrr");
                    t.row({"shared memory read", b(r1.smem_read / p.batch_heads()), b(r2.smem_read / p.batch_heads()),
                           units::ratio(ratio(r1.smem_read, r2.smem_read))});
                    t.row({"shared memory written", b(r1.smem_write / p.batch_heads()), b(r2.smem_write / p.batch_heads()),
                           units::ratio(ratio(r1.smem_write, r2.smem_write))});
                    t.row({"barriers", num(static_cast<double>(r1.barriers) / BH, 6), num(static_cast<double>(r2.barriers) / BH, 6),
                           r2.barriers ? units::ratio(ratio(r1.barriers, r2.barriers)) : "-"});
                    t.print(c.out);
                    const Count s1 = r1.smem_read + r1.smem_write, s2 = r2.smem_read + r2.smem_write;
                    c.out << '\n';
                    print_para(c.out, "In total FA1 moves " + units::ratio(ratio(s1, s2)) + " the shared-memory bytes of FA2 "
                                      "for the same attention.");
                    c.results["fa1_smem_bytes"] = s1;
                    c.results["fa2_smem_bytes"] = s2;
                    c.results["fa1_barriers"] = r1.barriers;
                    c.results["fa2_barriers"] = r2.barriers;
                    c.results["smem_ratio"] = ratio(s1, s2);
                },
                "",
                R"PY(SAME_TILE = 64  # as in step 3
r1 = fasim.simulate("fa1", gpu=GPU, Br=SAME_TILE, Bc=SAME_TILE, **PROBLEM)
r2 = fasim.simulate("fa2", gpu=GPU, Br=SAME_TILE, Bc=SAME_TILE, **PROBLEM)
BH = PROBLEM["batch"] * PROBLEM["heads"]
table(["per head", "FA1 (split-K)", "FA2 (split-Q)", "FA1 / FA2"], [
    ["shared memory read", quantity(r1["smem"]["read_bytes"] / BH, "B"), quantity(r2["smem"]["read_bytes"] / BH, "B"),
     f"{r1['smem']['read_bytes'] / r2['smem']['read_bytes']:.3g}x"],
    ["shared memory written", quantity(r1["smem"]["write_bytes"] / BH, "B"), quantity(r2["smem"]["write_bytes"] / BH, "B"),
     f"{r1['smem']['write_bytes'] / r2['smem']['write_bytes']:.3g}x"],
    ["barriers", f"{r1['barriers'] / BH:,.0f}", f"{r2['barriers'] / BH:,.0f}",
     f"{r1['barriers'] / r2['barriers']:.3g}x" if r2["barriers"] else "-"],
])
s1 = r1["smem"]["read_bytes"] + r1["smem"]["write_bytes"]
s2 = r2["smem"]["read_bytes"] + r2["smem"]["write_bytes"]
print(f"\nIn total FA1 moves {s1 / s2:.3g}x the shared-memory bytes of FA2 for the same attention.")
RESULTS["warps"] = dict(fa1_smem_bytes=s1, fa2_smem_bytes=s2, fa1_barriers=r1["barriers"], fa2_barriers=r2["barriers"],
                        smem_ratio=s1 / s2))PY"});

        L.step({"lse", "What is saved for the backward pass",
                R"(The backward pass recomputes S and P tile by tile instead of storing them,
and for that it needs each row's softmax statistics. FA1 keeps two fp32
vectors, m and ℓ, and rewrites both on every outer iteration. FA2 keeps one,
LSE = m + log ℓ, written once: exp(S − LSE) is exactly the normalised P.)",
                [&](Ctx& c) {
                    const AlgorithmResult r1 = sim(algorithm("fa1"), p, gpu), r2 = sim(algorithm("fa2"), p, gpu);
                    const Count s1 = both_of(r1.hbm, "m") + both_of(r1.hbm, "l");
                    const Count s2 = both_of(r2.hbm, "LSE");
                    print_para(c.out, "FA1 moves " + b(s1) + " of m and ℓ through HBM (stored: " +
                                          b(write_of(r1.hbm, "m") + write_of(r1.hbm, "l")) + " of writes); FA2 " +
                                          b(s2) + " of LSE (" + grouped(p.batch_heads() * p.N) + " rows x 4 bytes).");
                    c.results["fa1_m_l_bytes"] = s1;
                    c.results["fa2_lse_bytes"] = s2;
                },
                "",
                R"PY(r1 = fasim.simulate("fa1", gpu=GPU, **PROBLEM)
r2 = fasim.simulate("fa2", gpu=GPU, **PROBLEM)
def moved(r, *names, key=("read_bytes", "write_bytes")):
    return sum(r["hbm"]["by_tensor"].get(n, {}).get(k, 0) for n in names for k in key)
s1, s2 = moved(r1, "m", "l"), moved(r2, "LSE")
print(f"FA1 moves {quantity(s1, 'B')} of m and l through HBM (stored: {quantity(moved(r1, 'm', 'l', key=('write_bytes',)), 'B')} "
      f"of writes); FA2 {quantity(s2, 'B')} of LSE ({PROBLEM['batch'] * PROBLEM['heads'] * PROBLEM['N']:,} rows x 4 bytes).")
RESULTS["lse"] = dict(fa1_m_l_bytes=s1, fa2_lse_bytes=s2))PY"});

        L.step({"compare", "FA1 and FA2 side by side",
                R"(Everything together, each algorithm with its default tiles, as fa-sim
--algo all reports it. FA2 also launches one block per Q tile instead of one
per head; lesson 07 is about what that does to the SMs.)",
                [&](Ctx& c) {
                    const AlgorithmResult r1 = sim(algorithm("fa1"), p, gpu), r2 = sim(algorithm("fa2"), p, gpu);
                    const KernelTiming &k1 = main_timing(r1), &k2 = main_timing(r2);
                    Table t({"", "FA1", "FA2"}, "lrr");
                    t.row({"tiles Br x Bc", std::to_string(r1.tiles.Br) + " x " + std::to_string(r1.tiles.Bc),
                           std::to_string(r2.tiles.Br) + " x " + std::to_string(r2.tiles.Bc)});
                    t.row({"HBM read + write", b(r1.hbm.total()), b(r2.hbm.total())});
                    t.row({"DRAM read + write", b(r1.dram.total()), b(r2.dram.total())});
                    t.row({"shared memory", b(r1.smem_read + r1.smem_write), b(r2.smem_read + r2.smem_write)});
                    t.row({"non-matmul FLOPs", units::flops(static_cast<double>(r1.nonmatmul_flops)),
                           units::flops(static_cast<double>(r2.nonmatmul_flops))});
                    t.row({"grid (main kernel)", grouped(k1.grid), grouped(k2.grid)});
                    t.row({"idle SMs", std::to_string(k1.idle_sms), std::to_string(k2.idle_sms)});
                    t.row({"predicted time", units::seconds(r1.time_s), units::seconds(r2.time_s)});
                    t.row({"matmul throughput", units::rate(r1.achieved_flops(), "FLOP/s"), units::rate(r2.achieved_flops(), "FLOP/s")});
                    t.print(c.out);
                    c.out << '\n';
                    print_para(c.out, "FA2 is predicted " + units::ratio(r1.time_s / r2.time_s) + " faster. FA1: " + k1.bound +
                                          ". FA2: " + k2.bound + ".");
                    c.results["fa1_predicted_s"] = r1.time_s;
                    c.results["fa2_predicted_s"] = r2.time_s;
                    c.results["speedup"] = r1.time_s / r2.time_s;
                    c.results["fa1_grid"] = k1.grid;
                    c.results["fa2_grid"] = k2.grid;
                },
                "",
                R"PY(r1 = fasim.simulate("fa1", gpu=GPU, **PROBLEM)
r2 = fasim.simulate("fa2", gpu=GPU, **PROBLEM)
k1, k2 = r1["kernels"][-1], r2["kernels"][-1]  # the main kernel: the last launched (FA1's init kernel comes first)
both = lambda level: level["read_bytes"] + level["write_bytes"]
table(["", "FA1", "FA2"], [
    ["tiles Br x Bc", f"{r1['tiles']['Br']} x {r1['tiles']['Bc']}", f"{r2['tiles']['Br']} x {r2['tiles']['Bc']}"],
    ["HBM read + write", quantity(both(r1["hbm"]), "B"), quantity(both(r2["hbm"]), "B")],
    ["DRAM read + write", quantity(both(r1["dram"]), "B"), quantity(both(r2["dram"]), "B")],
    ["shared memory", quantity(both(r1["smem"]), "B"), quantity(both(r2["smem"]), "B")],
    ["non-matmul FLOPs", quantity(r1["flops"]["nonmatmul"]), quantity(r2["flops"]["nonmatmul"])],
    ["grid (main kernel)", f"{k1['grid']:,}", f"{k2['grid']:,}"],
    ["idle SMs", str(k1["idle_sms"]), str(k2["idle_sms"])],
    ["predicted time", quantity(r1["time"]["predicted_s"], "s"), quantity(r2["time"]["predicted_s"], "s")],
    ["matmul throughput", quantity(r1["time"]["matmul_flops_per_s"], "FLOP/s"), quantity(r2["time"]["matmul_flops_per_s"], "FLOP/s")],
])
speedup = r1["time"]["predicted_s"] / r2["time"]["predicted_s"]
print(f"\nFA2 is predicted {speedup:.3g}x faster. FA1: {k1['time']['bound']}. FA2: {k2['time']['bound']}.")
RESULTS["compare"] = dict(fa1_predicted_s=r1["time"]["predicted_s"], fa2_predicted_s=r2["time"]["predicted_s"], speedup=speedup,
                          fa1_grid=k1["grid"], fa2_grid=k2["grid"])

import matplotlib.pyplot as plt
sizes = [512, 1024, 2048, 4096, 8192, 16384]
sweep = fasim.sweep("all", values=sizes, gpu=GPU, **{k: v for k, v in PROBLEM.items() if k != "N"})
for algo in ("standard", "fa1", "fa2"):
    t = [next(a for a in run["algorithms"] if a["algo"] == algo)["time"]["predicted_s"] for run in sweep["runs"]]
    plt.loglog(sizes, [x * 1e3 for x in t], "o-", label=algo)
plt.xlabel("N (sequence length)")
plt.ylabel("predicted time (ms)")
plt.title(f"B={PROBLEM['batch']}, H={PROBLEM['heads']}, d={PROBLEM['d']}, {PROBLEM['dtype']} on {sweep['gpu']['name']}")
plt.legend()
plt.show())PY"});

        L.exercise({"o_writes",
                    "FA1 with Br = Bc = 64 on one head of N=1024, d=64, fp16: how many times is each element of O "
                    "written to HBM, counting the initialisation (the running O_acc in fp32 and the final O "
                    "in fp16 both count)?",
                    Exercise::Kind::integer, 0, {}, "times",
                    [gpu] {
                        const AttentionProblem q = make_problem(1, 1, 1024, 64);
                        const AlgorithmResult r = sim(algorithm("fa1"), q, gpu, tiles(64, 64));
                        const auto elements = static_cast<double>(q.N * q.d);
                        return static_cast<double>(write_of(r.hbm, "O")) / (elements * static_cast<double>(q.elem_bytes())) +
                               static_cast<double>(write_of(r.hbm, "O_acc")) / (elements * 4);
                    }, {},
                    "one write by fa1_init, then one per outer iteration: Tc = ⌈N/Bc⌉ of them (the last one in "
                    "fp16 to O, the others in fp32 to O_acc). FA2 writes it once."});
        L.exercise({"nonmatmul_ratio",
                    "B=1, H=16, N=4096, d=64, fp16 on " + gpu.name + ", both algorithms on Br = Bc = 64 tiles: "
                    "FA1's non-matmul FLOPs divided by FA2's?",
                    Exercise::Kind::number, 0.02, {}, "ratio FA1/FA2",
                    [gpu] {
                        const AttentionProblem q = make_problem(1, 16, 4096, 64);
                        return ratio(sim(algorithm("fa1"), q, gpu, tiles(64, 64)).nonmatmul_flops,
                                     sim(algorithm("fa2"), q, gpu, tiles(64, 64)).nonmatmul_flops);
                    }, {},
                    "run step 3 with --same-tile 64 (the default) and the default sizes; docs/flop-accounting.md "
                    "lists what each operation costs."});
        L.exercise({"smem_ratio",
                    "Same setting (Br = Bc = 64, N=4096, d=64, fp16): FA1's shared-memory traffic (read + write) "
                    "divided by FA2's?",
                    Exercise::Kind::number, 0.02, {}, "ratio FA1/FA2",
                    [gpu] {
                        const AttentionProblem q = make_problem(1, 16, 4096, 64);
                        const AlgorithmResult r1 = sim(algorithm("fa1"), q, gpu, tiles(64, 64)), r2 = sim(algorithm("fa2"), q, gpu, tiles(64, 64));
                        return ratio(r1.smem_read + r1.smem_write, r2.smem_read + r2.smem_write);
                    }, {},
                    "step 4 prints both; with split-K every warp reads all of Q_i and the warps exchange their partial "
                    "results through shared memory."});
    });
}
