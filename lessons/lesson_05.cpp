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
                }});

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
                }});

        L.step({"traffic", "HBM traffic: simulator and formula",
                R"(Count what Algorithm 1 moves through HBM for one head (elements of e bytes;
ℓ and m are fp32, 4 bytes):

    reads  = 2·Nk·d·e + Tc·(2·N·d·e + 2·N·4)    K, V once; Q, O, ℓ, m per j
    writes = (N·d·e + 2·N·4)·(1 + Tc)           O, ℓ, m: init, then once per j

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
                    const std::int64_t s_paper = sf.papers_hbm ? sf.papers_hbm->total() : s.hbm.total();
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
                }});

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
                R"PY(import matplotlib.pyplot as plt
rows = RESULTS["law"]["smem_scaling"]
M = [r["M_elements"] for r in rows]
hbm = [r["hbm_bytes"] / 1e9 for r in rows]
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
                R"PY(import matplotlib.pyplot as plt
rows = [r for r in RESULTS["blocks"]["sweep"] if r["fits"]]
fig, ax = plt.subplots()
ax.plot([r["Bc"] for r in rows], [r["hbm_bytes"] / 1e9 for r in rows], "o-")
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
                    const std::int64_t acc = both_of(r.hbm, "O_acc"), out = both_of(r.hbm, "O");
                    const std::int64_t stats = both_of(r.hbm, "l") + both_of(r.hbm, "m");
                    const std::int64_t oml = acc + out + stats;
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
                }});

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
