// Lesson 05: FlashAttention-1 (Dao et al. 2022, Algorithm 1), traced and counted.
#include <cmath>
#include <iostream>

#include "blocked_attention.hpp"
#include "common/errors.hpp"
#include "common/lesson.hpp"
#include "common/sim_helpers.hpp"
#include "common/text.hpp"
#include "precision.hpp"
#include "report/units.hpp"

using namespace fasim;
using namespace fasim::lessons;

namespace {

}  // namespace

int FASIM_LESSON_ENTRY(int argc, char** argv) {
    Lesson L(5, "flashattention_1", "FlashAttention-1",
             "FlashAttention computes exact attention without ever writing the N×N score matrix to HBM. "
             "It cuts Q, K and V into tiles that fit in shared memory (SRAM), fuses every step into one "
             "kernel, and keeps the softmax correct with the running max m and sum ℓ of lesson 04. This "
             "lesson runs Algorithm 1 of the FlashAttention paper on real numbers, checks that it gives "
             "exact attention, and measures its HBM traffic with the simulator: Θ(N²d²/M) bytes "
             "for an SRAM of M elements.");
    L.problem_options(make_problem(1, 16, 4096, 64), kN | kD | kHeads | kBatch | kDtype);
    std::int64_t& trace_n = L.int_option("--trace-N", 8, 2, 64, "sequence length of the traced problem");
    std::int64_t& trace_d = L.int_option("--trace-d", 4, 4, 16, "head dimension of the traced problem (4, 8 or 16)");
    std::int64_t& trace_tile = L.int_option("--trace-tile", 4, 1, 64, "Br = Bc of the traced problem");
    std::int64_t& seed = L.int_option("--seed", 1, 0, 1000000, "seed of the traced problem's random Q, K, V");

    return L.run(argc, argv, [&](Lesson&) {
        const GpuSpec& gpu = L.gpu();
        const AttentionProblem& p = L.problem();
        if (!supported_head_dim(trace_d) || trace_d > 16)
            throw usage_error("--trace-d " + std::to_string(trace_d) + " is not supported", "the traced head dimension must be 4, 8 or 16",
                              "e.g. --trace-d 4");

        L.step({"tiles", "Tile sizes come from the SRAM size M",
                R"(Algorithm 1 starts (line 1) by choosing its tiles from M, the on-chip
memory one thread block may use, counted in elements:

    Bc = ⌈M/4d⌉             rows of a K/V tile
    Br = min(⌈M/4d⌉, d)     rows of a Q tile

The 4d comes from what must sit in SRAM at once: a K tile and a V tile
(Bc×d each) and a Q tile and an O tile (Br×d each, with Br ≤ Bc), so about
4·Bc·d elements fill M. Larger M means fewer, larger K/V tiles, and
every K/V tile costs one more pass over Q and O.

The simulator applies the formula, then checks that everything its FA1 program
keeps in shared memory at the peak fits; that includes the buffer in which the
four warps exchange partial results (split-K, lesson 06). If it does not fit,
it lowers the tiles and says so.)",
                [&](Ctx& c) {
                    const TileConfig t = choose_tiles(algorithm("fa1"), p, gpu, {});
                    const std::int64_t paper_bc = ceil_div(t.M_elements, 4 * p.d);
                    c.out << "  shared memory per block  " << grouped(gpu.smem_per_block_bytes) << " bytes on " << gpu.name << '\n'
                          << "  M                        " << grouped(gpu.smem_per_block_bytes) << " / " << p.elem_bytes()
                          << " bytes per " << dtype_name(p.dtype) << " element = " << grouped(t.M_elements) << " elements\n"
                          << "  Bc = ⌈M/4d⌉              ⌈" << grouped(t.M_elements) << " / " << 4 * p.d << "⌉ = " << paper_bc << '\n'
                          << "  Br = min(Bc, d)          min(" << paper_bc << ", " << p.d << ") = " << std::min(paper_bc, p.d) << "\n\n";
                    c.out << "The simulator's choice:\n";
                    for (const auto& r : t.reasons) print_para(c.out, r, "  - ", "    ");
                    c.out << "  -> Br = " << t.Br << ", Bc = " << t.Bc << ", " << grouped(t.smem_bytes)
                          << " bytes of shared memory per block at the peak\n";
                    c.out << "  -> N = " << p.N << ": Tr = ⌈N/Br⌉ = " << ceil_div(p.N, t.Br) << " Q tiles, Tc = ⌈N/Bc⌉ = "
                          << ceil_div(p.Nk, t.Bc) << " K/V tiles\n";
                    c.results["M_elements"] = t.M_elements;
                    c.results["paper_Bc"] = paper_bc;
                    c.results["paper_Br"] = std::min(paper_bc, p.d);
                    c.results["Br"] = t.Br;
                    c.results["Bc"] = t.Bc;
                    c.results["Tr"] = ceil_div(p.N, t.Br);
                    c.results["Tc"] = ceil_div(p.Nk, t.Bc);
                },
                "",
                R"PY(r = fasim.simulate("fa1", gpu=GPU, **PROBLEM)  # fa-sim --algo fa1 --json, as a dict
p, tiles = r["problem"], r["tiles"]
e = {"fp32": 4, "fp16": 2, "bf16": 2}[p["dtype"]]  # bytes per element
smem = fasim.gpu(GPU)["smem_per_block_bytes"]
M = tiles["M_elements"]  # the SRAM size M in elements: smem // e
paper_Bc = -(-M // (4 * p["d"]))  # ⌈M/4d⌉
print(f"  shared memory per block  {smem:,} bytes on {r['gpu']['name']}")
print(f"  M                        {smem:,} / {e} bytes per {p['dtype']} element = {M:,} elements")
print(f"  Bc = ⌈M/4d⌉              ⌈{M:,} / {4 * p['d']}⌉ = {paper_Bc}")
print(f"  Br = min(Bc, d)          min({paper_Bc}, {p['d']}) = {min(paper_Bc, p['d'])}\n")
print("The simulator's choice:")
for why in tiles["reasons"]:
    print("  - " + why)
Br, Bc = tiles["Br"], tiles["Bc"]
Tr, Tc = -(-p["N"] // Br), -(-p["Nk"] // Bc)
print(f"  -> Br = {Br}, Bc = {Bc}, {tiles['smem_bytes_per_block']:,} bytes of shared memory per block at the peak")
print(f"  -> N = {p['N']}: Tr = ⌈N/Br⌉ = {Tr} Q tiles, Tc = ⌈N/Bc⌉ = {Tc} K/V tiles")
RESULTS["tiles"] = dict(M_elements=tiles["M_elements"], paper_Bc=paper_Bc, paper_Br=min(paper_Bc, p["d"]), Br=Br, Bc=Bc,
                        Tr=Tr, Tc=Tc))PY"});

        L.step({"trace", "Algorithm 1 on a tiny problem, step by step",
                R"(The same FA1 tile program the simulator counts now runs on real numbers (the
functional executor), on a problem small enough to read: one head, with two
tiles along the sequence (--trace-N, --trace-d and --trace-tile change it).
What to look for:

- fa1_init writes O = 0, ℓ = 0 and m = −∞ to HBM (line 2); the trace
  spells ℓ as l.
- fa1_forward has one thread block per head. Its outer loop loads a K/V tile
  K_j, V_j (lines 5-6); its inner loop loads Q_i and the current O_i, ℓ_i,
  m_i from HBM (line 8).
- S_ij = Q_i K_jᵀ, then the tile's row max m~, P~ = exp(S − m~) and its row
  sums ℓ~ (lines 9-10); the new statistics m_new = max(m_i, m~) and
  ℓ_new = e^(m_i − m_new)·ℓ_i + e^(m~ − m_new)·ℓ~ (line 11).
- O_i is rescaled, P~V_j added, the sum divided by ℓ_new and written back to
  HBM together with ℓ_new and m_new (lines 12-13): every (i, j) pair pays an
  HBM round trip for O_i, ℓ_i and m_i.
- "warps exchange" lines are FA1's split-K work partitioning: the four warps
  hold different keys, so they combine row maxima, row sums and partial P~V
  products through shared memory.

At the end the traced O is compared with exact attention in float64.)",
                [&](Ctx& c) {
                    const AttentionProblem tp = make_problem(1, 1, trace_n, trace_d, p.dtype);
                    const TileConfig cfg = choose_tiles(algorithm("fa1"), tp, gpu, tiles(trace_tile, trace_tile));
                    const TracedRun t = traced_run(algorithm("fa1"), tp, gpu, cfg, static_cast<std::uint64_t>(seed));
                    c.out << tp.describe() << ", Br = Bc = " << trace_tile << "; Q, K, V ~ N(0,1) with seed " << seed
                          << ";\nvalues shown for at most 4 rows and 4 columns.\n\n"
                          << t.trace << '\n';
                    const auto check = reference::check_tolerance(t.run.O[0], t.Q[0], t.K[0], t.V[0], {}, tp.dtype);
                    const auto key = reference::flash_attention_1<double>(t.Q[0], t.K[0], t.V[0], {}, cfg.Br, cfg.Bc);
                    const double vs_key = (t.run.O[0] - key.O).cwiseAbs().maxCoeff();
                    print_para(c.out, "max |O - O_exact| = " + num(check.error, 3) + "; allowed " + num(check.bound, 3) +
                                          " (twice the error of plain " + dtype_name(tp.dtype) +
                                          " attention plus rounding; reference/TOLERANCES.md) -> " +
                                          (check.pass ? "the traced O equals exact attention." : "the traced O DIFFERS from exact attention."));
                    print_para(c.out, "max |O - O_answer_key| = " + num(vs_key, 3) +
                                          " against reference::flash_attention_1, Algorithm 1 written as plain loops in float64.");
                    c.results["problem"] = tp.describe();
                    c.results["max_error"] = check.error;
                    c.results["allowed_error"] = check.bound;
                    c.results["equals_exact"] = check.pass;
                    c.results["max_diff_vs_answer_key"] = vs_key;
                },
                "",
                R"PY(TRACE_N, TRACE_D, TILE, SEED = 8, 4, 4, 1  # the traced problem: one head, N = Nk = TRACE_N, Br = Bc = TILE
rng = np.random.default_rng(SEED)
Q, K, V = (rng.standard_normal((1, 1, TRACE_N, TRACE_D)) for _ in range(3))
dtype = PROBLEM["dtype"]
steps = fasim.trace("fa1", Q, K, V, Br=TILE, Bc=TILE, dtype=dtype)  # every step of the tile program, with its values
print(f"B=1 H=1 N={TRACE_N} d={TRACE_D} {dtype}, Br = Bc = {TILE}; Q, K, V ~ N(0,1) with seed {SEED}; "
      "the row statistics' first 4 values\n")
for s in steps:
    if s["kind"] == "kernel":
        print(f"kernel {s['kernel']}: {s['role']} (grid {s['grid']})")
    elif s["kind"] == "block":
        print(f"block {s['block']} (head {s['head']})")
    else:
        source = s["region"]["text"] if s["region"] else ", ".join(s["operands"])
        v = s["values"]
        shown = np.array2string(v[:4, 0], precision=3) if v is not None and v.ndim == 2 and v.shape[1] == 1 else ""
        print(f"  {s['op'] or s['kind']:8} {s['result'] or '':7} <- {source:22} {shown}".rstrip())

# Algorithm 1 as plain loops in float64 (the answer key), and exact attention, on the inputs as the run stores them
out = fasim.run("fa1", Q, K, V, Br=TILE, Bc=TILE, dtype=dtype)
q, k, v = (x.astype(np.float16 if dtype == "fp16" else np.float32).astype(np.float64)[0, 0] for x in (Q, K, V))
q = q / np.sqrt(TRACE_D)  # the softmax scale, folded into Q
O, l, m = np.zeros_like(q), np.zeros(TRACE_N), np.full(TRACE_N, -np.inf)  # line 2
for j in range(0, TRACE_N, TILE):  # line 5: K_j, V_j
    for i in range(0, TRACE_N, TILE):  # line 7: Q_i, O_i, l_i, m_i
        S = q[i:i + TILE] @ k[j:j + TILE].T  # line 9
        m_t = S.max(axis=1)  # line 10
        P = np.exp(S - m_t[:, None])
        l_t = P.sum(axis=1)
        m_new = np.maximum(m[i:i + TILE], m_t)  # line 11
        l_new = np.exp(m[i:i + TILE] - m_new) * l[i:i + TILE] + np.exp(m_t - m_new) * l_t
        O[i:i + TILE] = ((l[i:i + TILE] * np.exp(m[i:i + TILE] - m_new))[:, None] * O[i:i + TILE]  # line 12
                         + np.exp(m_t - m_new)[:, None] * (P @ v[j:j + TILE])) / l_new[:, None]
        l[i:i + TILE], m[i:i + TILE] = l_new, m_new  # line 13
S = q @ k.T
P = np.exp(S - S.max(axis=1, keepdims=True))
O_exact = P @ v / P.sum(axis=1, keepdims=True)
err, vs_key = np.abs(out["O"][0, 0] - O_exact).max(), np.abs(out["O"][0, 0] - O).max()
print(f"\nmax |O - O_exact| = {err:.3g} ({dtype} keeps about 3 significant digits: the traced program computes exact attention)")
print(f"max |O - O_answer_key| = {vs_key:.3g} against Algorithm 1 written above as plain loops in float64.")
RESULTS["trace"] = dict(problem=describe(out["problem"]), equals_exact=bool(err < 1e-2)))PY"});

        L.step({"traffic", "HBM traffic: simulator and formula",
                R"(Count what Algorithm 1 moves through HBM for one head (elements of e bytes;
ℓ, m and the running O are fp32, 4 bytes: with fp16 or bf16 storage the
running O is a tensor of its own, O_acc, and O receives only the last write):

    reads  = 2·Nk·d·e + Tc·(N·d·e + N·d·4 + 2·N·4)   K, V once; Q, O, ℓ, m per j
    writes = Tc·(N·d·4 + 2·N·4) + N·d·e + 2·N·4      init, then O, ℓ, m per j
                                                     (the last O write: e bytes)

Q and O cross HBM once per K/V tile, so the traffic grows like Tc·N·d, that
is N²d/Bc, and with Bc ≈ M/4d like N²d²/M. The simulator counts every
load and store the program issues; the formula must agree with it.)",
                [&](Ctx& c) {
                    const AlgorithmResult r = sim(algorithm("fa1"), p, gpu);
                    const AlgorithmResult s = sim(algorithm("standard"), p, gpu);
                    // Algorithm 1's closed form (flash_attention_1.cpp), all heads.
                    const ClosedForm::Bytes f = *r.algo->closed_form(p, r.tiles).hbm;
                    c.out << p.describe() << ", Br = " << r.tiles.Br << ", Bc = " << r.tiles.Bc << ", Tc = "
                          << ceil_div(p.Nk, r.tiles.Bc) << "\n\n";
                    Table t({"tensor", "read", "written"}, "lrr");
                    for (const std::string& n : tensor_names({&r.hbm})) {
                        if (both_of(r.hbm, n) == 0) continue;
                        t.row({n, units::bytes(static_cast<double>(read_of(r.hbm, n))),
                               units::bytes(static_cast<double>(write_of(r.hbm, n)))});
                    }
                    t.row({"all (simulator)", grouped(r.hbm.read_bytes()), grouped(r.hbm.write_bytes())});
                    t.row({"formula x B x H", grouped(f.read), grouped(f.write)});
                    t.print(c.out);
                    const bool agree = f.read == r.hbm.read_bytes() && f.write == r.hbm.write_bytes();
                    const ClosedForm sf = s.algo->closed_form(p, s.tiles);
                    const Count s_paper = sf.papers_hbm ? sf.papers_hbm->total() : s.hbm.total();
                    c.out << '\n';
                    print_para(c.out, std::string("Simulator and formula ") + (agree ? "agree to the byte." : "DIFFER.") +
                                          " Standard attention's kernels load and store " +
                                          units::bytes(static_cast<double>(s.hbm.total())) + " for the same problem (" +
                                          units::bytes(static_cast<double>(s_paper)) +
                                          " by Algorithm 0's formula, each GEMM operand once, lesson 03): FA1 moves " +
                                          units::ratio(static_cast<double>(s.hbm.total()) / static_cast<double>(r.hbm.total())) +
                                          " less (" + units::ratio(static_cast<double>(s_paper) / static_cast<double>(r.hbm.total())) +
                                          " less than the formula). After the L2 model, FA1's DRAM traffic is " +
                                          units::bytes(static_cast<double>(r.dram.total())) + " (standard: " +
                                          units::bytes(static_cast<double>(s.dram.total())) + ").");
                    c.results["hbm_read_bytes"] = r.hbm.read_bytes();
                    c.results["hbm_write_bytes"] = r.hbm.write_bytes();
                    c.results["formula_read_bytes"] = f.read;
                    c.results["formula_write_bytes"] = f.write;
                    c.results["formula_agrees"] = agree;
                    c.results["standard_hbm_bytes"] = s.hbm.total();
                    c.results["dram_bytes"] = r.dram.total();
                    c.results["standard_dram_bytes"] = s.dram.total();
                },
                "",
                R"PY(r = fasim.simulate("fa1", gpu=GPU, **PROBLEM)
s = fasim.simulate("standard", gpu=GPU, **PROBLEM)
p, t = r["problem"], r["tiles"]
BH, N, Nk, d = p["batch"] * p["heads"], p["N"], p["Nk"], p["d"]
e = {"fp32": 4, "fp16": 2, "bf16": 2}[p["dtype"]]
Tc = -(-Nk // t["Bc"])
splits = t.get("q_splits", 1)  # blocks per batch·head; each reads K and V itself
# Algorithm 1's closed form. Q, K, V and the final O are stored in e bytes; l, m and the running O (O_acc) in fp32:
# every K/V tile reads Q_i (e) and O_i (4 bytes), and writes O_i (4 bytes, the last time e), l_i and m_i.
formula_read = BH * (splits * 2 * Nk * d * e + Tc * (N * d * e + N * d * 4 + 2 * N * 4))
formula_write = BH * ((N * d * 4 + 2 * N * 4) + (Tc - 1) * N * d * 4 + N * d * e + Tc * 2 * N * 4)
print(f"{describe(p)}, Br = {t['Br']}, Bc = {t['Bc']}, Tc = {Tc}\n")
rows = [[name, quantity(x["read_bytes"], "B"), quantity(x["write_bytes"], "B")]
        for name, x in r["hbm"]["by_tensor"].items() if x["read_bytes"] + x["write_bytes"]]
rows += [["all (simulator)", r["hbm"]["read_bytes"], r["hbm"]["write_bytes"]], ["formula x B x H", formula_read, formula_write]]
table(["tensor", "read", "written"], rows)
agree = formula_read == r["hbm"]["read_bytes"] and formula_write == r["hbm"]["write_bytes"]
fa1_hbm = r["hbm"]["read_bytes"] + r["hbm"]["write_bytes"]
s_hbm = s["hbm"]["read_bytes"] + s["hbm"]["write_bytes"]
s_paper = BH * e * (2 * N * d + 2 * Nk * d + 4 * N * Nk)  # Algorithm 0: Q, K, V read and O written once, S and P twice each
dram = lambda x: x["dram"]["read_bytes"] + x["dram"]["write_bytes"]
print(f"\nSimulator and formula {'agree to the byte' if agree else 'DIFFER'}. Standard attention's kernels load and store "
      f"{quantity(s_hbm, 'B')} for the same problem ({quantity(s_paper, 'B')} by Algorithm 0's formula, each GEMM operand "
      f"once, lesson 03): FA1 moves {s_hbm / fa1_hbm:.3g}x less ({s_paper / fa1_hbm:.3g}x less than the formula). After the "
      f"L2 model, FA1's DRAM traffic is {quantity(dram(r), 'B')} (standard: {quantity(dram(s), 'B')}).")
RESULTS["traffic"] = dict(hbm_read_bytes=r["hbm"]["read_bytes"], hbm_write_bytes=r["hbm"]["write_bytes"],
                          formula_read_bytes=formula_read, formula_write_bytes=formula_write, formula_agrees=agree,
                          standard_hbm_bytes=s_hbm, dram_bytes=dram(r), standard_dram_bytes=dram(s)))PY"});

        L.step({"law", "The N²d²/M law: double the SRAM",
                R"(The FlashAttention paper proves that Algorithm 1 needs Θ(N²d²/M) HBM
accesses, and that no exact attention algorithm can do asymptotically
better for every M. Test the M part: copy the GPU description, multiply its
shared memory by 2, 4 and 8, and let the simulator choose the tiles and count
again. Each doubling of M should roughly halve the traffic, a little less
than half because reading K and V once (2·N·d) does not shrink.)",
                [&](Ctx& c) {
                    Table t({"shared memory", "M (elements)", "Br x Bc", "Tc", "HBM bytes", "vs 1x"}, "lrrrrr");
                    Json rows = Json::array();
                    double base = 0;
                    for (double f : {1.0, 2.0, 4.0, 8.0}) {
                        const GpuSpec g = with_shared_memory(gpu, f);
                        const AlgorithmResult r = sim(algorithm("fa1"), p, g);
                        const double total = static_cast<double>(r.hbm.total());
                        if (f == 1.0) base = total;
                        t.row({num(f, 2) + "x " + units::capacity(static_cast<double>(g.smem_per_block_bytes)),
                               grouped(r.tiles.M_elements), std::to_string(r.tiles.Br) + " x " + std::to_string(r.tiles.Bc),
                               std::to_string(ceil_div(p.Nk, r.tiles.Bc)), units::bytes(total), units::ratio(base / total)});
                        rows.push_back({{"smem_factor", f}, {"M_elements", r.tiles.M_elements}, {"Br", r.tiles.Br},
                                        {"Bc", r.tiles.Bc}, {"hbm_bytes", r.hbm.total()}});
                    }
                    c.out << p.describe() << '\n';
                    t.print(c.out);
                    c.out << "\nAnd the d part, at this GPU's M (fewer K/V rows fit when d grows):\n";
                    Table td({"d", "Br x Bc", "Tc", "HBM bytes", "bytes / (N d)"}, "rrrrr");
                    Json drows = Json::array();
                    for (std::int64_t dd : {16, 32, 64}) {
                        AttentionProblem q = p;
                        q.d = dd;
                        const AlgorithmResult r = sim(algorithm("fa1"), q, gpu);
                        const double per = static_cast<double>(r.hbm.total()) /
                                           static_cast<double>(q.batch_heads() * q.N * q.d);
                        td.row({std::to_string(dd), std::to_string(r.tiles.Br) + " x " + std::to_string(r.tiles.Bc),
                                std::to_string(ceil_div(q.Nk, r.tiles.Bc)), units::bytes(static_cast<double>(r.hbm.total())),
                                fixed(per, 1)});
                        drows.push_back({{"d", dd}, {"Br", r.tiles.Br}, {"Bc", r.tiles.Bc}, {"hbm_bytes", r.hbm.total()}});
                    }
                    td.print(c.out);
                    c.out << '\n';
                    print_para(c.out, "Bytes per element of Q roughly double with d: a wider head leaves room for half "
                                      "as many keys per tile, so Q and O are re-read twice as often. Together: N²d²/M.");
                    c.results["smem_scaling"] = rows;
                    c.results["head_dim_scaling"] = drows;
                },
                "",
                R"PY(base_gpu = fasim.gpu(GPU)  # the GPU file as a dict: change a copy of it
rows = []
for factor in (1, 2, 4, 8):
    g = dict(base_gpu, name=f"{base_gpu['name']}-{factor}x-smem",
             smem_per_block_bytes=int(base_gpu["smem_per_block_bytes"] * factor),
             smem_per_sm_bytes=int(base_gpu["smem_per_sm_bytes"] * factor))
    r = fasim.simulate("fa1", gpu=fasim.gpu_from_dict(g), **PROBLEM)
    t = r["tiles"]
    rows.append(dict(smem_factor=factor, M_elements=t["M_elements"], Br=t["Br"], Bc=t["Bc"],
                     hbm_bytes=r["hbm"]["read_bytes"] + r["hbm"]["write_bytes"], smem=g["smem_per_block_bytes"]))
print(describe(r["problem"]))
table(["shared memory", "M (elements)", "Br x Bc", "Tc", "HBM bytes", "vs 1x"],
      [[f"{x['smem_factor']}x {quantity(x['smem'], 'B')}", x["M_elements"], f"{x['Br']} x {x['Bc']}",
        -(-r["problem"]["Nk"] // x["Bc"]), quantity(x["hbm_bytes"], "B"), f"{rows[0]['hbm_bytes'] / x['hbm_bytes']:.3g}x"]
       for x in rows])
for x in rows:
    del x["smem"]  # the lesson records the rest

print("\nAnd the d part, at this GPU's M (fewer K/V rows fit when d grows):")
drows = []
for d in (16, 32, 64):
    r = fasim.simulate("fa1", gpu=GPU, **dict(PROBLEM, d=d))
    p, t = r["problem"], r["tiles"]
    drows.append(dict(d=d, Br=t["Br"], Bc=t["Bc"], hbm_bytes=r["hbm"]["read_bytes"] + r["hbm"]["write_bytes"]))
table(["d", "Br x Bc", "Tc", "HBM bytes", "bytes / (N d)"],
      [[x["d"], f"{x['Br']} x {x['Bc']}", -(-p["Nk"] // x["Bc"]), quantity(x["hbm_bytes"], "B"),
        f"{x['hbm_bytes'] / (p['batch'] * p['heads'] * p['N'] * x['d']):.1f}"] for x in drows])
print("\nBytes per element of Q roughly double with d: a wider head leaves room for half as many keys per tile, "
      "so Q and O are re-read twice as often. Together: N²d²/M.")
RESULTS["law"] = dict(smem_scaling=rows, head_dim_scaling=drows)

import matplotlib.pyplot as plt
M = [x["M_elements"] for x in rows]
hbm = [x["hbm_bytes"] / 1e9 for x in rows]
plt.loglog(M, hbm, "o-", label="FA1, simulated")
plt.loglog(M, [hbm[0] * M[0] / m for m in M], "--", label="proportional to 1/M")
plt.xlabel("M: shared memory per block (elements)")
plt.ylabel("HBM traffic (GB)")
plt.title("FlashAttention-1: traffic against SRAM size")
plt.legend()
plt.show())PY"});

        L.step({"blocks", "Block sizes: a sweep over Bc",
                R"(The paper's Bc is the largest K/V tile that fits. Try smaller ones (Br stays
at its default): each halving of Bc doubles the number of outer iterations Tc,
and every iteration re-reads Q and rewrites O, ℓ and m. Tiles larger than the
default do not fit in shared memory; the simulator refuses them.)",
                [&](Ctx& c) {
                    const TileConfig def = choose_tiles(algorithm("fa1"), p, gpu, {});
                    Table t({"Br x Bc", "Tc", "smem/block", "HBM bytes", "predicted time"}, "rrrrr");
                    Json rows = Json::array();
                    std::vector<std::int64_t> bcs;
                    for (std::int64_t b = 16; b < def.Bc; b *= 2) bcs.push_back(b);
                    bcs.push_back(def.Bc);
                    bcs.push_back(def.Bc * 2);
                    for (std::int64_t bc : bcs) {
                        try {
                            const AlgorithmResult r = sim(algorithm("fa1"), p, gpu, tiles(def.Br, bc));
                            t.row({std::to_string(def.Br) + " x " + std::to_string(bc), std::to_string(ceil_div(p.Nk, bc)),
                                   units::capacity(static_cast<double>(r.tiles.smem_bytes)),
                                   units::bytes(static_cast<double>(r.hbm.total())), units::seconds(r.time_s)});
                            rows.push_back({{"Br", def.Br}, {"Bc", bc}, {"fits", true}, {"hbm_bytes", r.hbm.total()},
                                            {"predicted_s", r.time_s}});
                        } catch (const UsageError&) {
                            t.row({std::to_string(def.Br) + " x " + std::to_string(bc), std::to_string(ceil_div(p.Nk, bc)),
                                   units::capacity(static_cast<double>(algorithm("fa1").smem_bytes(p, def.Br, bc, def))),
                                   "does not fit", "-"});
                            rows.push_back({{"Br", def.Br}, {"Bc", bc}, {"fits", false}});
                        }
                    }
                    print_para(c.out, p.describe() + " on " + gpu.name + " (at most " +
                                          units::capacity(static_cast<double>(gpu.smem_per_block_bytes)) + " per block):");
                    t.print(c.out);
                    c.results["sweep"] = rows;
                },
                "",
                R"PY(default = fasim.simulate("fa1", gpu=GPU, **PROBLEM)["tiles"]
Br = default["Br"]
bcs = [16]
while bcs[-1] * 2 < default["Bc"]:  # powers of two below the default, the default, and twice it
    bcs.append(bcs[-1] * 2)
bcs = [bc for bc in bcs if bc < default["Bc"]] + [default["Bc"], 2 * default["Bc"]]
rows, shown = [], []
for bc in bcs:
    Tc = -(-PROBLEM["N"] // bc)
    try:
        r = fasim.simulate("fa1", Br=Br, Bc=bc, gpu=GPU, **PROBLEM)
    except fasim.UsageError as e:  # the tiles do not fit in shared memory: fa-sim says so
        rows.append(dict(Br=Br, Bc=bc, fits=False))
        shown.append([f"{Br} x {bc}", Tc, "-", "does not fit", "-"])
        refused = str(e)
        continue
    hbm = r["hbm"]["read_bytes"] + r["hbm"]["write_bytes"]
    rows.append(dict(Br=Br, Bc=bc, fits=True, hbm_bytes=hbm, predicted_s=r["time"]["predicted_s"]))
    shown.append([f"{Br} x {bc}", Tc, quantity(r["tiles"]["smem_bytes_per_block"], "B"), quantity(hbm, "B"),
                  quantity(r["time"]["predicted_s"], "s")])
g = fasim.gpu(GPU)
print(f"{describe(r['problem'])} on {g['name']} (at most {quantity(g['smem_per_block_bytes'], 'B')} per block):")
table(["Br x Bc", "Tc", "smem/block", "HBM bytes", "predicted time"], shown)
if not rows[-1]["fits"]:
    print("\nfasim.simulate refused the largest tiles:", refused)
RESULTS["blocks"] = dict(sweep=rows)

import matplotlib.pyplot as plt
fits = [x for x in rows if x["fits"]]
fig, ax = plt.subplots()
ax.plot([x["Bc"] for x in fits], [x["hbm_bytes"] / 1e9 for x in fits], "o-")
ax.set_xscale("log", base=2)
ax.set_xlabel("Bc (rows of a K/V tile)")
ax.set_ylabel("HBM traffic (GB)")
ax.set_title("FlashAttention-1: block-size sweep")
plt.show())PY"});

        L.step({"limits", "What FlashAttention-2 will change",
                R"(Algorithm 1 already beats standard attention on HBM traffic, but it leaves
three things on the table, which the next two lessons take up:

- One thread block per batch × head: with few heads most SMs have nothing to
  do (lesson 07).
- O, ℓ and m make an HBM round trip on every (i, j) pair (the running O as
  O_acc, in fp32 when O is stored in fp16 or bf16), and O is rescaled and
  divided by ℓ each time: extra bytes and extra non-matmul work (lesson 06).
- Split-K: the warps exchange partial results through shared memory with
  barriers (lesson 06).)",
                [&](Ctx& c) {
                    const AlgorithmResult r = sim(algorithm("fa1"), p, gpu);
                    const KernelTiming& k = main_timing(r);
                    // O_acc is the running O in HBM (fp32 when O is stored in fp16 or bf16; O itself when fp32),
                    // read and written on every (i, j) pair; O is the final output, written once.
                    const Count acc = both_of(r.hbm, "O_acc"), out = both_of(r.hbm, "O");
                    const Count stats = both_of(r.hbm, "l") + both_of(r.hbm, "m");
                    const Count oml = acc + out + stats;
                    const double total = static_cast<double>(r.hbm.total());
                    print_para(c.out, "fa1_forward launches " + grouped(k.grid) + " blocks on " + std::to_string(gpu.sm_count) +
                                          " SMs: " + std::to_string(k.idle_sms) + " SMs idle, SMs busy " +
                                          percent(k.sm_busy_fraction, 0) + " of the time.");
                    const bool separate = acc > 0;  // fp16/bf16 storage: the running O is O_acc in fp32
                    print_para(c.out, std::string(separate ? "O_acc, O, ℓ and m" : "O, ℓ and m") + " (step 3's rows " +
                                          (separate ? "O_acc, O, l and m" : "O, l and m") + ") move " +
                                          units::bytes(static_cast<double>(oml)) + ", " + percent(static_cast<double>(oml) / total, 0) +
                                          " of FA1's " + units::bytes(total) + " of HBM traffic. The running O" +
                                          (separate ? " (O_acc, in fp32 for " + std::string(dtype_name(p.dtype)) + " storage)" : "") +
                                          ", read and written on every (i, j) pair, is " +
                                          units::bytes(static_cast<double>(separate ? acc : out)) + " of it; ℓ and m " +
                                          units::bytes(static_cast<double>(stats)) + ".");
                    print_para(c.out, "Non-matmul FLOPs: " + units::flops(static_cast<double>(r.nonmatmul_flops)) + " beside " +
                                          units::flops(static_cast<double>(r.matmul_flops)) + " of matrix products; barriers: " +
                                          grouped(r.barriers) + ". Predicted time " + units::seconds(r.time_s) + ", bound by " +
                                          k.bound + ".");
                    c.results["grid"] = k.grid;
                    c.results["idle_sms"] = k.idle_sms;
                    c.results["o_l_m_bytes"] = oml;  // O_acc, O, l and m, read and written
                    c.results["o_acc_bytes"] = acc;
                    c.results["nonmatmul_flops"] = r.nonmatmul_flops;
                    c.results["predicted_s"] = r.time_s;
                },
                "",
                R"PY(r = fasim.simulate("fa1", gpu=GPU, **PROBLEM)
k = next(x for x in r["kernels"] if x["name"] == "fa1_forward")  # the main kernel (fa1_init only writes O, l and m)
both = lambda name: sum(r["hbm"]["by_tensor"].get(name, {}).get(key, 0) for key in ("read_bytes", "write_bytes"))
acc, out, stats = both("O_acc"), both("O"), both("l") + both("m")
oml = acc + out + stats
total = r["hbm"]["read_bytes"] + r["hbm"]["write_bytes"]
separate = acc > 0  # fp16/bf16 storage: the running O is O_acc, in fp32
print(f"fa1_forward launches {k['grid']:,} blocks on {r['gpu']['sm_count']} SMs: {k['idle_sms']} SMs idle, SMs busy "
      f"{k['sm_busy_fraction']:.0%} of the time.\n")
print(f"{'O_acc, O, ℓ and m' if separate else 'O, ℓ and m'} (step 3's rows {'O_acc, O, l and m' if separate else 'O, l and m'}) "
      f"move {quantity(oml, 'B')}, {oml / total:.0%} of FA1's {quantity(total, 'B')} of HBM traffic. The running O"
      + (f" (O_acc, in fp32 for {PROBLEM['dtype']} storage)" if separate else "")
      + f", read and written on every (i, j) pair, is {quantity(acc if separate else out, 'B')} of it; ℓ and m "
      f"{quantity(stats, 'B')}.\n")
print(f"Non-matmul FLOPs: {quantity(r['flops']['nonmatmul'], 'FLOP')} beside {quantity(r['flops']['matmul'], 'FLOP')} of "
      f"matrix products; barriers: {r['barriers']:,}. Predicted time {quantity(r['time']['predicted_s'], 's')}, "
      f"bound by {k['time']['bound']}.")
RESULTS["limits"] = dict(grid=k["grid"], idle_sms=k["idle_sms"], o_l_m_bytes=oml, o_acc_bytes=acc,
                         nonmatmul_flops=r["flops"]["nonmatmul"], predicted_s=r["time"]["predicted_s"]))PY"});

        // ---- exercises ----
        const AttentionProblem p128 = make_problem(1, 1, 4096, 128, DType::fp16);
        const std::int64_t M128 = choose_tiles(algorithm("fa1"), p128, gpu, {}).M_elements;
        L.exercise({"bc",
                    "On " + gpu.name + " with d=128 and fp16, what Bc does line 1 of Algorithm 1 give, Bc = ⌈M/4d⌉, "
                    "with M the shared memory per block in elements? (The formula's value, before any lowering.)",
                    Exercise::Kind::integer, 0, {}, "rows",
                    [=] { return static_cast<double>(ceil_div(M128, 4 * 128)); }, {},
                    "M = " + grouped(gpu.smem_per_block_bytes) + " bytes of shared memory per block / 2 bytes per fp16 "
                    "element; divide by 4d = 512 and round up."});
        L.exercise({"reads",
                    "For B=1, H=1, N=2048, d=64, fp16 on " + gpu.name + " with the default FA1 tiles, how many bytes "
                    "does FA1 read from HBM (every load it issues, the papers' sense)?",
                    Exercise::Kind::number, 0.01, {}, "bytes",
                    [gpu] { return static_cast<double>(sim(algorithm("fa1"), make_problem(1, 1, 2048, 64), gpu).hbm.read_bytes()); }, {},
                    "reads = 2·N·d·e + Tc·(2·N·d·e + 2·N·4) with e = 2 bytes, Tc = ⌈N/Bc⌉ and Bc from step 1 "
                    "(run with --N 2048 --heads 1 to see it)."});
        L.exercise({"shrink",
                    "At B=1, H=16, N=8192, d=64, fp16, by what factor does FA1's total HBM traffic (reads + writes) "
                    "shrink when the shared memory per block of " + gpu.name + " doubles?",
                    Exercise::Kind::number, 0.02, {}, "ratio old/new",
                    [gpu] {
                        const AttentionProblem q = make_problem(1, 16, 8192, 64);
                        return static_cast<double>(sim(algorithm("fa1"), q, gpu).hbm.total()) /
                               static_cast<double>(sim(algorithm("fa1"), q, with_shared_memory(gpu, 2)).hbm.total());
                    }, {},
                    "the law says about 2, but K and V are still read once whatever M is, and Tc is rounded up; "
                    "take the two totals from step 4 (run it with --N 8192)."});
    });
}
