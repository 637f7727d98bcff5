// Lesson 08: causal masking: skipped tiles, masked diagonal tiles, FLOPs about halved.
#include <iostream>

#include "algorithms/causal.hpp"
#include "common/lesson.hpp"
#include "common/sim_helpers.hpp"
#include "common/text.hpp"
#include "report/units.hpp"

using namespace fasim;
using namespace fasim::lessons;

namespace {

struct TileCounts {
    std::int64_t total = 0, skipped = 0, masked = 0, full = 0;
};

// Classifies every (Q tile, K/V tile) pair of one head with the simulator's own rules
// (sim/algorithms/causal.hpp): what the tile programs skip and what they mask.
TileCounts classify(const AttentionProblem& p, std::int64_t Br, std::int64_t Bc) {
    TileCounts c;
    for (std::int64_t q0 = 0; q0 < p.N; q0 += Br) {
        const std::int64_t rows = std::min(Br, p.N - q0);
        for (std::int64_t k0 = 0; k0 < p.Nk; k0 += Bc) {
            const std::int64_t cols = std::min(Bc, p.Nk - k0);
            ++c.total;
            if (tile_fully_masked(q0, rows, k0, p.N, p.Nk, true)) ++c.skipped;
            else if (tile_crosses_diagonal(q0, k0, cols, p.N, p.Nk, true)) ++c.masked;
            else ++c.full;
        }
    }
    return c;
}

double ratio(Count a, Count b) { return to_double(a) / to_double(b); }

}  // namespace

int FASIM_LESSON_ENTRY(int argc, char** argv) {
    Lesson L(8, "causal_masking", "Causal masking",
             "In a decoder, query i may only attend to keys up to its own position: the upper triangle of "
             "the score matrix is masked out. Standard attention still computes all of S and masks it in "
             "the softmax. A tiled algorithm can do better: tiles entirely above the diagonal are skipped, "
             "and only the tiles on the diagonal need an element-by-element mask. This lesson counts "
             "those tiles and what skipping saves, with the simulator.");
    L.problem_options(make_problem(1, 16, 4096, 64), kN | kD | kHeads | kBatch | kDtype);
    std::int64_t& map_n = L.int_option("--map-N", 1024, 16, 4096, "sequence length of the tile map in step 1");

    return L.run(argc, argv, [&](Lesson&) {
        const GpuSpec& gpu = L.gpu();
        const AttentionProblem& p = L.problem();

        L.step({"map", "Which tiles are skipped, which are masked",
                R"(With the causal mask, query i sees key j only when j ≤ i (for N = Nk; fa-sim
aligns the mask to the bottom right when Nk ≠ N, like flash-attention 2.1 and
later). Cut S into Br×Bc tiles, one row of tiles per Q tile:

- a tile whose every key lies after its last query is skipped: no load of K_j
  or V_j, no product, no softmax work;
- a tile that the diagonal crosses is computed and then masked element by
  element (scores set to −∞ before the exponential);
- every other tile is computed as usual.

The map uses FA2's default tiles for this head dimension and the simulator's
own rules (sim/algorithms/causal.hpp): '#' computed, '/' masked, '.' skipped.)",
                [&](Ctx& c) {
                    AttentionProblem q = p;
                    q.N = q.Nk = map_n;
                    q.causal = true;
                    const TileConfig t = choose_tiles(algorithm("fa2"), q, gpu, {});
                    const TileCounts n = classify(q, t.Br, t.Bc);
                    c.out << "N = " << map_n << ", Br x Bc = " << t.Br << " x " << t.Bc << ": " << ceil_div(q.N, t.Br) << " x "
                          << ceil_div(q.Nk, t.Bc) << " tiles per head\n\n";
                    const std::int64_t Tr = ceil_div(q.N, t.Br), Tc = ceil_div(q.Nk, t.Bc);
                    if (Tc <= 64 && Tr <= 32) {
                        for (std::int64_t i = 0; i < Tr; ++i) {
                            std::string row = "    ";
                            const std::int64_t q0 = i * t.Br, rows = std::min(t.Br, q.N - q0);
                            for (std::int64_t j = 0; j < Tc; ++j) {
                                const std::int64_t k0 = j * t.Bc, cols = std::min(t.Bc, q.Nk - k0);
                                row += tile_fully_masked(q0, rows, k0, q.N, q.Nk, true)          ? '.'
                                       : tile_crosses_diagonal(q0, k0, cols, q.N, q.Nk, true) ? '/'
                                                                                              : '#';
                            }
                            c.out << row << '\n';
                        }
                        c.out << '\n';
                    } else {
                        c.out << "    (too many tiles to draw; pass a smaller --map-N)\n\n";
                    }
                    c.out << "  computed in full  " << n.full << '\n'
                          << "  masked            " << n.masked << '\n'
                          << "  skipped           " << n.skipped << '\n'
                          << "  all               " << n.total << " (" << percent(ratio(n.skipped, n.total), 0) << " skipped)\n";
                    c.results["N"] = map_n;
                    c.results["Br"] = t.Br;
                    c.results["Bc"] = t.Bc;
                    c.results["tiles"] = n.total;
                    c.results["skipped"] = n.skipped;
                    c.results["masked"] = n.masked;
                    c.results["full"] = n.full;
                },
                "",
                R"PY(from fasim.tile import tile_crosses_diagonal, tile_fully_masked  # the simulator's own rules (sim/algorithms/causal.hpp)

def classify(N, Nk, Br, Bc):
    """Every (Q tile, K/V tile) pair of one causal head: '.' skipped, '/' masked, '#' computed in full, row by row."""
    tiles = []
    for q0 in range(0, N, Br):
        rows = min(Br, N - q0)
        tiles.append("".join("." if tile_fully_masked(q0, rows, k0, N, Nk, True)
                             else "/" if tile_crosses_diagonal(q0, k0, min(Bc, Nk - k0), N, Nk, True) else "#"
                             for k0 in range(0, Nk, Bc)))
    return tiles

MAP_N = 1024  # the sequence length of the map (the lesson's --map-N)
t = fasim.simulate("fa2", gpu=GPU, **dict(PROBLEM, N=MAP_N, causal=True))["tiles"]  # FA2's default tiles
Br, Bc = t["Br"], t["Bc"]
tile_map = classify(MAP_N, MAP_N, Br, Bc)
print(f"N = {MAP_N}, Br x Bc = {Br} x {Bc}: {len(tile_map)} x {len(tile_map[0])} tiles per head\n")
if len(tile_map) <= 32 and len(tile_map[0]) <= 64:
    for row in tile_map:
        print("    " + row)
    print()
else:
    print("    (too many tiles to draw; make MAP_N smaller)\n")
cells = "".join(tile_map)
full, masked, skipped = cells.count("#"), cells.count("/"), cells.count(".")
print(f"  computed in full  {full}\n  masked            {masked}\n  skipped           {skipped}\n"
      f"  all               {len(cells)} ({skipped / len(cells):.0%} skipped)")
RESULTS["map"] = dict(N=MAP_N, Br=Br, Bc=Bc, tiles=len(cells), skipped=skipped, masked=masked, full=full))PY"});

        L.step({"flops", "Matmul FLOPs: computed against needed",
                R"(A causal head needs 4·d FLOPs for each visible (query, key) pair, about half
of the N·Nk pairs: the simulator calls that the ideal. What an algorithm
computes is larger: standard attention computes all of S; the tiled
algorithms compute every tile they do not skip, masked diagonal tiles in
full. Smaller tiles waste less along the diagonal but cost more elsewhere.)",
                [&](Ctx& c) {
                    AttentionProblem q = p, nc = p;
                    q.causal = true;
                    nc.causal = false;
                    c.out << q.describe() << "\n\n";
                    Table t({"", "matmul FLOPs", "vs non-causal", "vs ideal", "predicted", "speedup"}, "lrrrrr");
                    Json rows = Json::array();
                    for (const Algorithm* a : {&algorithm("standard"), &algorithm("fa1"), &algorithm("fa2")}) {
                        const AlgorithmResult rc = sim(*a, q, gpu), rn = sim(*a, nc, gpu);
                        t.row({std::string(a->id), units::flops(static_cast<double>(rc.matmul_flops)),
                               fixed(ratio(rc.matmul_flops, rn.matmul_flops), 3), fixed(ratio(rc.matmul_flops, rc.ideal_matmul_flops), 3),
                               units::seconds(rc.time_s), units::ratio(rn.time_s / rc.time_s)});
                        rows.push_back({{"algo", std::string(a->id)}, {"matmul_flops", rc.matmul_flops},
                                        {"noncausal_matmul_flops", rn.matmul_flops}, {"ideal_matmul_flops", rc.ideal_matmul_flops},
                                        {"predicted_s", rc.time_s}, {"noncausal_predicted_s", rn.time_s}});
                    }
                    t.print(c.out);
                    c.out << '\n';
                    print_para(c.out, "'speedup' is the non-causal time over the causal one, each predicted by the simulator.");
                    c.results["algorithms"] = rows;
                },
                "",
                R"PY(causal = dict(PROBLEM, causal=True)
rows = []
for algo in ("standard", "fa1", "fa2"):
    rc = fasim.simulate(algo, gpu=GPU, **causal)
    rn = fasim.simulate(algo, gpu=GPU, **dict(PROBLEM, causal=False))
    rows.append(dict(algo=algo, matmul_flops=rc["flops"]["matmul"], noncausal_matmul_flops=rn["flops"]["matmul"],
                     ideal_matmul_flops=rc["flops"]["ideal_matmul"], predicted_s=rc["time"]["predicted_s"],
                     noncausal_predicted_s=rn["time"]["predicted_s"]))
print(describe(rc["problem"]) + "\n")
table(["", "matmul FLOPs", "vs non-causal", "vs ideal", "predicted", "speedup"],
      [[x["algo"], quantity(x["matmul_flops"], "FLOP"), f"{x['matmul_flops'] / x['noncausal_matmul_flops']:.3f}",
        f"{x['matmul_flops'] / x['ideal_matmul_flops']:.3f}", quantity(x["predicted_s"], "s"),
        f"{x['noncausal_predicted_s'] / x['predicted_s']:.3g}x"] for x in rows])
print("\n'speedup' is the non-causal time over the causal one, each predicted by the simulator.")
RESULTS["flops"] = dict(algorithms=rows))PY"});

        L.step({"tilesize", "Tile size along the diagonal",
                R"(FA2 with square tiles of different sizes on the causal problem: the fraction
of computed FLOPs that the mask throws away shrinks with the tile, while the
number of tiles (and of K/V re-reads) grows.)",
                [&](Ctx& c) {
                    AttentionProblem q = p;
                    q.causal = true;
                    Table t({"Br x Bc", "tiles computed", "masked", "FLOPs vs ideal", "HBM bytes", "predicted"}, "rrrrrr");
                    Json rows = Json::array();
                    for (std::int64_t s : {32, 64, 128}) {
                        try {
                            const AlgorithmResult r = sim(algorithm("fa2"), q, gpu, tiles(s, s));
                            const TileCounts n = classify(q, s, s);
                            t.row({std::to_string(s) + " x " + std::to_string(s), grouped(n.total - n.skipped), grouped(n.masked),
                                   fixed(ratio(r.matmul_flops, r.ideal_matmul_flops), 3),
                                   units::bytes(static_cast<double>(r.hbm.total())), units::seconds(r.time_s)});
                            rows.push_back({{"tile", s}, {"computed_tiles", n.total - n.skipped}, {"masked_tiles", n.masked},
                                            {"matmul_flops", r.matmul_flops}, {"ideal_matmul_flops", r.ideal_matmul_flops},
                                            {"hbm_bytes", r.hbm.total()}, {"predicted_s", r.time_s}});
                        } catch (const std::exception&) {
                            t.row({std::to_string(s) + " x " + std::to_string(s), "does not fit", "", "", "", ""});
                        }
                    }
                    c.out << q.describe() << ", FA2\n";
                    t.print(c.out);
                    c.results["fa2_tile_sizes"] = rows;
                },
                "",
                R"PY(rows, shown = [], []
for s in (32, 64, 128):
    try:
        r = fasim.simulate("fa2", Br=s, Bc=s, gpu=GPU, **causal)
    except fasim.UsageError:  # the tiles do not fit in shared memory
        shown.append([f"{s} x {s}", "does not fit", "", "", "", ""])
        continue
    cells = "".join(classify(PROBLEM["N"], PROBLEM["N"], s, s))
    x = dict(tile=s, computed_tiles=len(cells) - cells.count("."), masked_tiles=cells.count("/"),
             matmul_flops=r["flops"]["matmul"], ideal_matmul_flops=r["flops"]["ideal_matmul"],
             hbm_bytes=r["hbm"]["read_bytes"] + r["hbm"]["write_bytes"], predicted_s=r["time"]["predicted_s"])
    rows.append(x)
    shown.append([f"{s} x {s}", x["computed_tiles"], x["masked_tiles"], f"{x['matmul_flops'] / x['ideal_matmul_flops']:.3f}",
                  quantity(x["hbm_bytes"], "B"), quantity(x["predicted_s"], "s")])
print(describe(fasim.simulate("fa2", gpu=GPU, **causal)["problem"]) + ", FA2")
table(["Br x Bc", "tiles computed", "masked", "FLOPs vs ideal", "HBM bytes", "predicted"], shown)
RESULTS["tilesize"] = dict(fa2_tile_sizes=rows))PY"});

        L.step({"balance", "Uneven work per block",
                R"(Skipping makes the blocks of one grid unequal. In FA2 the block of the first
Q tile visits one K/V tile, the block of the last visits them all. The GPU's
scheduler hands waiting blocks to SMs as others finish, so uneven blocks
mostly even out, except in the last wave. When the whole grid fits in a
single wave, the kernel lasts as long as its longest block, the last Q tile
that visits every K/V tile, and skipping saves no time at all. The simulator
schedules every block with its own work; FA2's kernel over N, causal against
non-causal:)",
                [&](Ctx& c) {
                    Table t({"N", "waves", "SM time busy", "causal", "non-causal", "ratio"}, "rrrrrr");
                    Json rows = Json::array();
                    for (std::int64_t n = 1024; n <= 16384; n *= 4) {
                        AttentionProblem q = p, nc = p;
                        q.N = q.Nk = nc.N = nc.Nk = n;
                        q.causal = true;
                        nc.causal = false;
                        const AlgorithmResult rc = sim(algorithm("fa2"), q, gpu), rn = sim(algorithm("fa2"), nc, gpu);
                        const KernelTiming& k = main_timing(rc);
                        t.row({grouped(n), fixed(k.waves, 2), percent(k.sm_busy_fraction, 0), units::seconds(rc.time_s),
                               units::seconds(rn.time_s), fixed(rc.time_s / rn.time_s, 2)});
                        rows.push_back({{"N", n}, {"causal_s", rc.time_s}, {"noncausal_s", rn.time_s},
                                        {"sm_busy_fraction", k.sm_busy_fraction}});
                    }
                    t.print(c.out);
                    c.results["fa2_over_N"] = rows;
                },
                "",
                R"PY(sizes = [1024, 4096, 16384]
others = {k: v for k, v in PROBLEM.items() if k != "N"}
runs = {c: fasim.sweep("fa2", parameter="N", values=sizes, causal=c, gpu=GPU, **others)["runs"] for c in (True, False)}
rows, shown = [], []
for rc, rn in zip(runs[True], runs[False]):
    c, n = rc["algorithms"][0], rn["algorithms"][0]
    k = c["kernels"][-1]  # the main kernel
    rows.append(dict(N=rc["problem"]["N"], causal_s=c["time"]["predicted_s"], noncausal_s=n["time"]["predicted_s"],
                     sm_busy_fraction=k["sm_busy_fraction"]))
    shown.append([rc["problem"]["N"], f"{k['waves']:.2f}", f"{k['sm_busy_fraction']:.0%}", quantity(rows[-1]["causal_s"], "s"),
                  quantity(rows[-1]["noncausal_s"], "s"), f"{rows[-1]['causal_s'] / rows[-1]['noncausal_s']:.2f}"])
table(["N", "waves", "SM time busy", "causal", "non-causal", "ratio"], shown)
RESULTS["balance"] = dict(fa2_over_N=rows)

import matplotlib.pyplot as plt
ns = [1024 * 2 ** i for i in range(6)]  # 1024 ... 32768
for c in (False, True):
    sweep = fasim.sweep("fa2", parameter="N", values=ns, causal=c, gpu=GPU, **others)
    plt.loglog(ns, [run["algorithms"][0]["time"]["predicted_s"] * 1e3 for run in sweep["runs"]], "o-",
               label="causal" if c else "non-causal")
plt.xlabel("N")
plt.ylabel("predicted time (ms)")
plt.title(f"FlashAttention-2, B={PROBLEM['batch']} H={PROBLEM['heads']} d={PROBLEM['d']} {PROBLEM['dtype']}")
plt.legend()
plt.show())PY"});

        L.exercise({"skipped",
                    "Causal self-attention with N=1024 and FA2's 128×128 tiles: how many of the tile pairs of one head are "
                    "skipped entirely?",
                    Exercise::Kind::integer, 0, {}, "tiles",
                    [] { return static_cast<double>(classify(make_problem(1, 1, 1024, 64, DType::fp16, true), 128, 128).skipped); },
                    {}, "Tr = Tc = 1024/128; the tiles strictly above the diagonal of the Tr×Tc grid of tiles are skipped."});
        L.exercise({"masked",
                    "Same problem (N=1024, 128×128 tiles): how many tile pairs of one head need an element-by-element mask?",
                    Exercise::Kind::integer, 0, {}, "tiles",
                    [] { return static_cast<double>(classify(make_problem(1, 1, 1024, 64, DType::fp16, true), 128, 128).masked); },
                    {}, "only the tiles the diagonal passes through; with square tiles and N = Nk that is one per row of tiles."});
        L.exercise({"flops_ratio",
                    "FA2 with its default tiles at B=1, H=16, N=4096, d=64, fp16 on " + gpu.name + ": its causal matmul "
                    "FLOPs divided by its non-causal matmul FLOPs?",
                    Exercise::Kind::number, 0.01, {}, "ratio",
                    [gpu] {
                        const AttentionProblem nc = make_problem(1, 16, 4096, 64), q = make_problem(1, 16, 4096, 64, DType::fp16, true);
                        return ratio(sim(algorithm("fa2"), q, gpu).matmul_flops, sim(algorithm("fa2"), nc, gpu).matmul_flops);
                    },
                    {}, "count the computed tiles: with T tiles per side, T(T+1)/2 of T² are computed (step 1 for N=4096: "
                        "--map-N 4096)."});
    });
}
