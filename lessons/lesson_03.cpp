// Lesson 03: standard attention: S and P through HBM, Θ(Nd + N²) traffic, memory footprint.
#include <iostream>

#include "common/lesson.hpp"
#include "common/sim_helpers.hpp"
#include "common/text.hpp"
#include "report/units.hpp"

using namespace fasim;
using namespace fasim::lessons;

namespace {

std::string b(Count v) { return units::bytes(to_double(v)); }

// Largest power-of-two N (up to 2^24) whose tensors fit in the GPU's memory; 0 if none.
std::int64_t largest_fitting_n(const Algorithm& algo, AttentionProblem p, const GpuSpec& gpu) {
    std::int64_t best = 0;
    for (std::int64_t n = 1; n <= ProblemLimits::max_seq; n *= 2) {
        p.N = p.Nk = n;
        if (footprint_bytes(algo, p, gpu) <= gpu.hbm_bytes) best = n;
        else break;
    }
    return best;
}

}  // namespace

int FASIM_LESSON_ENTRY(int argc, char** argv) {
    Lesson L(3, "standard_attention", "Standard attention",
             "Attention computes O = softmax(Q·Kᵀ/√d)·V for every head. The straightforward GPU version "
             "runs it as three kernels and keeps the N×N intermediate matrices S and P in HBM between "
             "them. This lesson counts what that costs with the simulator: traffic that grows with N², "
             "kernels limited by memory bandwidth, and a memory footprint that stops fitting on the GPU "
             "long before Q, K and V do.");
    L.problem_options(make_problem(1, 16, 4096, 64), kN | kD | kHeads | kBatch | kDtype);

    return L.run(argc, argv, [&](Lesson&) {
        const GpuSpec& gpu = L.gpu();
        const AttentionProblem& p = L.problem();

        L.step({"kernels", "Three kernels, two N×N matrices in HBM",
                R"(Standard attention (the FlashAttention paper's Algorithm 0) per head:

    1. S = Q·Kᵀ/√d       read Q and K, write S (N×Nk)     kernel gemm_qk
    2. P = softmax(S)    read S, write P (N×Nk)           kernel softmax
    3. O = P·V           read P and V, write O            kernel gemm_pv

Counting each tensor once, that is 2·N·d + 2·Nk·d + 4·N·Nk elements: the
N·Nk terms are S written and read, P written and read. The simulator counts
what its kernels really issue. Its tiled GEMMs re-read panels of their
operands from global memory (lesson 02), so their loads exceed the formula,
but L2 serves those re-reads: the DRAM bytes after the L2 model come close to
the formula.)",
                [&](Ctx& c) {
                    const AlgorithmResult& r = sim_cached(algorithm("standard"), p, gpu);
                    c.out << p.describe() << " on " << gpu.name << "\n\n";
                    Table t({"kernel", "HBM read", "HBM written", "DRAM total", "predicted", "bound by"}, "lrrrrl");
                    for (std::size_t i = 0; i < r.kernels.size(); ++i) {
                        const KernelRecord& k = r.kernels[i];
                        std::string bound = r.timing[i].bound;
                        if (bound.size() > 16) bound = bound_kind(bound);
                        t.row({k.desc.name, b(k.hbm.read_bytes()), b(k.hbm.write_bytes()), b(k.dram.total()),
                               units::seconds(r.timing[i].total_s), bound});
                    }
                    t.print(c.out);
                    // Algorithm 0's own count (standard_attention.cpp's closed form): 2Nd + 2Nk·d + 4·N·Nk elements.
                    const Count formula = r.algo->closed_form(p, r.tiles).papers_hbm->total();
                    const Count sp = both_of(r.hbm, "S") + both_of(r.hbm, "P");
                    const Count sp_dram = both_of(r.dram, "S") + both_of(r.dram, "P");
                    c.out << '\n';
                    print_para(c.out, "Formula: " + grouped(formula) + " bytes. Simulator: HBM " + grouped(r.hbm.total()) +
                                          ", DRAM " + grouped(r.dram.total()) + ". S and P alone: " + b(sp) + " through HBM (" +
                                          percent(static_cast<double>(sp) / static_cast<double>(r.hbm.total()), 0) + " of it) and " +
                                          b(sp_dram) + " at DRAM (" +
                                          percent(static_cast<double>(sp_dram) / static_cast<double>(r.dram.total()), 0) +
                                          " of it). Predicted time " + units::seconds(r.time_s) + ".");
                    c.results["formula_bytes"] = formula;
                    c.results["hbm_bytes"] = r.hbm.total();
                    c.results["dram_bytes"] = r.dram.total();
                    c.results["s_p_bytes"] = sp;
                    c.results["s_p_dram_bytes"] = sp_dram;
                    c.results["predicted_s"] = r.time_s;
                },
                "",
                R"PY(r = fasim.simulate("standard", gpu=GPU, **PROBLEM)  # fa-sim --algo standard --json, as a dict
p = r["problem"]
print(f"B={p['batch']} H={p['heads']} N={p['N']} d={p['d']} {p['dtype']} on {r['gpu']['name']}\n")
table(["kernel", "HBM read", "HBM written", "DRAM total", "predicted", "bound by"],
      [[k["name"], quantity(k["hbm"]["read_bytes"], "B"), quantity(k["hbm"]["write_bytes"], "B"),
        quantity(k["dram"]["read_bytes"] + k["dram"]["write_bytes"], "B"), quantity(k["time"]["predicted_s"], "s"),
        k["time"]["bound"]] for k in r["kernels"]])

def total(level, *names):  # read + written bytes of these tensors at one level (hbm, l2, dram)
    return sum(t["read_bytes"] + t["write_bytes"] for n, t in level["by_tensor"].items() if n in names or not names)

e = {"fp32": 4, "fp16": 2, "bf16": 2}[p["dtype"]]
BH, N, Nk, d = p["batch"] * p["heads"], p["N"], p["Nk"], p["d"]
formula = (2 * N * d + 2 * Nk * d + 4 * N * Nk) * e * BH  # Algorithm 0, each tensor counted once
sp, sp_dram = total(r["hbm"], "S", "P"), total(r["dram"], "S", "P")
print(f"\nFormula: {formula:,} bytes. Simulator: HBM {total(r['hbm']):,}, DRAM {total(r['dram']):,}. S and P alone: "
      f"{quantity(sp, 'B')} through HBM ({sp / total(r['hbm']):.0%} of it) and {quantity(sp_dram, 'B')} at DRAM "
      f"({sp_dram / total(r['dram']):.0%} of it). Predicted time {quantity(r['time']['predicted_s'], 's')}.")
RESULTS["kernels"] = dict(formula_bytes=formula, hbm_bytes=total(r["hbm"]), dram_bytes=total(r["dram"]), s_p_bytes=sp,
                          s_p_dram_bytes=sp_dram, predicted_s=r["time"]["predicted_s"]))PY"});

        L.step({"quadratic", "Θ(Nd + N²): traffic over N",
                R"(The Nd terms (Q, K, V, O) grow linearly with N, the N² terms (S, P)
quadratically, so for long sequences S and P are nearly all the traffic and
doubling N nearly quadruples it. Simulated, for this batch, heads, d and
dtype, beside step 1's formula (each tensor counted once):)",
                [&](Ctx& c) {
                    Table t({"N", "formula", "DRAM bytes", "x prev", "S and P share", "footprint", "predicted"}, "rrrrrrr");
                    Json rows = Json::array();
                    Count prev = 0;
                    std::string below;
                    for (std::int64_t n = 1024; n <= 16384; n *= 2) {
                        AttentionProblem q = p;
                        q.N = q.Nk = n;
                        const AlgorithmResult& r = sim_cached(algorithm("standard"), q, gpu);
                        const Count sp = both_of(r.dram, "S") + both_of(r.dram, "P");
                        const Count formula = r.algo->closed_form(q, r.tiles).papers_hbm->total();
                        t.row({grouped(n), b(formula), b(r.dram.total()),
                               prev > 0 ? fixed(static_cast<double>(r.dram.total()) / static_cast<double>(prev), 2) : "-",
                               percent(static_cast<double>(sp) / static_cast<double>(r.dram.total()), 0), b(r.global_bytes),
                               units::seconds(r.time_s)});
                        rows.push_back({{"N", n}, {"formula_bytes", formula}, {"dram_bytes", r.dram.total()}, {"hbm_bytes", r.hbm.total()},
                                        {"s_p_dram_bytes", sp}, {"global_bytes", r.global_bytes}, {"predicted_s", r.time_s}});
                        prev = r.dram.total();
                        if (static_cast<double>(r.dram.total()) < 0.95 * static_cast<double>(formula))
                            below += (below.empty() ? "" : ", ") + grouped(n);
                    }
                    t.print(c.out);
                    if (!below.empty()) {
                        c.out << '\n';
                        print_para(c.out, "At N = " + below + " the DRAM bytes are below the formula: the " +
                                              units::capacity(static_cast<double>(gpu.l2_bytes)) +
                                              " L2 keeps part of S and P between one kernel and the next.");
                    }
                    c.results["over_N"] = rows;
                },
                "",
                R"PY(sizes = [1024, 2048, 4096, 8192, 16384]
sweep = fasim.sweep("all", parameter="N", values=sizes, gpu=GPU, **{k: v for k, v in PROBLEM.items() if k != "N"})
e = {"fp32": 4, "fp16": 2, "bf16": 2}[PROBLEM["dtype"]]
rows = []
for run in sweep["runs"]:
    r = next(a for a in run["algorithms"] if a["algo"] == "standard")
    p = run["problem"]
    BH, N, Nk, d = p["batch"] * p["heads"], p["N"], p["Nk"], p["d"]
    dram = r["dram"]["read_bytes"] + r["dram"]["write_bytes"]
    sp = sum(t["read_bytes"] + t["write_bytes"] for n, t in r["dram"]["by_tensor"].items() if n in ("S", "P"))
    rows.append(dict(N=N, formula_bytes=(2 * N * d + 2 * Nk * d + 4 * N * Nk) * e * BH, dram_bytes=dram,
                     hbm_bytes=r["hbm"]["read_bytes"] + r["hbm"]["write_bytes"], s_p_dram_bytes=sp,
                     global_bytes=r["memory"]["global_bytes"], predicted_s=r["time"]["predicted_s"]))
table(["N", "formula", "DRAM bytes", "x prev", "S and P share", "footprint", "predicted"],
      [[x["N"], quantity(x["formula_bytes"], "B"), quantity(x["dram_bytes"], "B"),
        f"{x['dram_bytes'] / rows[i - 1]['dram_bytes']:.2f}" if i else "-", f"{x['s_p_dram_bytes'] / x['dram_bytes']:.0%}",
        quantity(x["global_bytes"], "B"), quantity(x["predicted_s"], "s")] for i, x in enumerate(rows)])
below = [f"{x['N']:,}" for x in rows if x["dram_bytes"] < 0.95 * x["formula_bytes"]]
if below:
    print(f"\nAt N = {', '.join(below)} the DRAM bytes are below the formula: the {quantity(sweep['gpu']['l2_bytes'], 'B')} "
          "L2 keeps part of S and P between one kernel and the next.")
RESULTS["quadratic"] = dict(over_N=rows)

import matplotlib.pyplot as plt
for algo in ("standard", "fa2"):  # the same sweep holds FlashAttention-2
    gb = [sum(next(a for a in run["algorithms"] if a["algo"] == algo)["dram"][k] for k in ("read_bytes", "write_bytes")) / 1e9
          for run in sweep["runs"]]
    plt.loglog(sizes, gb, "o-", label=algo)
top = rows[-1]["dram_bytes"] / 1e9
plt.loglog(sizes, [top * (n / sizes[-1]) ** 2 for n in sizes], ":", label="grows like N^2")
plt.xlabel("N")
plt.ylabel("DRAM bytes (GB)")
plt.title(f"{sweep['gpu']['name']}, standard attention and FA2")
plt.legend()
plt.show())PY"});

        L.step({"memory", "Where it stops fitting",
                R"(S and P must exist in HBM in full (B·H·N·Nk elements each) for standard
attention to run at all, on top of Q, K, V and O. FlashAttention keeps only
Q, K, V, O and one or two fp32 numbers per row. The footprints below are the
simulator's: the sum of the global tensors each program declares.)",
                [&](Ctx& c) {
                    Table t({"N", "standard", "FlashAttention-2", "fits (standard)"}, "rrrl");
                    for (std::int64_t n : {4096, 16384, 65536}) {
                        AttentionProblem q = p;
                        q.N = q.Nk = n;
                        const Count s = footprint_bytes(algorithm("standard"), q, gpu), f = footprint_bytes(algorithm("fa2"), q, gpu);
                        t.row({grouped(n), b(s), b(f), s <= gpu.hbm_bytes ? "yes" : "no"});
                    }
                    c.out << "B=" << p.batch << " H=" << p.heads << " d=" << p.d << " " << dtype_name(p.dtype) << ", "
                          << gpu.name << " has " << units::capacity(static_cast<double>(gpu.hbm_bytes)) << " of HBM\n";
                    t.print(c.out);
                    const std::int64_t ns = largest_fitting_n(algorithm("standard"), p, gpu), nf = largest_fitting_n(algorithm("fa2"), p, gpu);
                    c.out << '\n';
                    print_para(c.out, "Largest power-of-two N that fits: standard attention " + grouped(ns) + "; FlashAttention-2 " +
                                          (nf >= ProblemLimits::max_seq ? "still fits at " + grouped(nf) + ", the largest N the simulator accepts."
                                                                        : grouped(nf) + "."));
                    c.results["max_n_standard"] = ns;
                    c.results["max_n_fa2"] = nf;
                },
                "",
                R"PY(e = {"fp32": 4, "fp16": 2, "bf16": 2}[PROBLEM["dtype"]]
BH, d = PROBLEM["batch"] * PROBLEM["heads"], PROBLEM["d"]
def footprint(algo, N):  # the global tensors the program declares
    qkvo = 4 * N * d * e * BH                     # Q, K, V, O
    return qkvo + (2 * N * N * e * BH if algo == "standard" else 4 * N * BH)  # S and P; or FA2's fp32 LSE
for algo in ("standard", "fa2"):  # the simulator's count of them agrees, at this problem's N
    assert footprint(algo, PROBLEM["N"]) == fasim.simulate(algo, gpu=GPU, **PROBLEM)["memory"]["global_bytes"]
hbm = fasim.gpu(GPU)["hbm_bytes"]
print(f"B={PROBLEM['batch']} H={PROBLEM['heads']} d={d} {PROBLEM['dtype']}, {fasim.gpu(GPU)['name']} has {quantity(hbm, 'B')} of HBM")
table(["N", "standard", "FlashAttention-2", "fits (standard)"],
      [[N, quantity(footprint("standard", N), "B"), quantity(footprint("fa2", N), "B"),
        "yes" if footprint("standard", N) <= hbm else "no"] for N in (4096, 16384, 65536)])
def largest_fitting_n(algo):  # powers of two up to 2^24, the largest N fa-sim takes
    fits = [2**k for k in range(25) if footprint(algo, 2**k) <= hbm]
    return fits[-1] if fits else 0
ns, nf = largest_fitting_n("standard"), largest_fitting_n("fa2")
print(f"\nLargest power-of-two N that fits: standard attention {ns:,}; FlashAttention-2 {nf:,}"
      + (", the largest N the simulator accepts." if nf == 2**24 else "."))
RESULTS["memory"] = dict(max_n_standard=ns, max_n_fa2=nf))PY"});

        L.step({"flash", "What fusing the kernels buys",
                R"(The fix the next lessons build: compute S and P one tile at a time in shared
memory and never store them. Here is where that ends up, FlashAttention-2
against standard attention on the same problem, as fa-sim --algo all would
show it.)",
                [&](Ctx& c) {
                    const AlgorithmResult& s = sim_cached(algorithm("standard"), p, gpu);
                    const AlgorithmResult& f = sim_cached(algorithm("fa2"), p, gpu);
                    Table t({"", "standard", "FlashAttention-2", "ratio"}, "lrrr");
                    t.row({"HBM loads+stores", b(s.hbm.total()), b(f.hbm.total()),
                           units::ratio(static_cast<double>(s.hbm.total()) / static_cast<double>(f.hbm.total()))});
                    t.row({"DRAM bytes", b(s.dram.total()), b(f.dram.total()),
                           units::ratio(static_cast<double>(s.dram.total()) / static_cast<double>(f.dram.total()))});
                    t.row({"kernels", std::to_string(s.kernels.size()), std::to_string(f.kernels.size()), ""});
                    t.row({"predicted time", units::seconds(s.time_s), units::seconds(f.time_s), units::ratio(s.time_s / f.time_s)});
                    t.print(c.out);
                    c.results["standard_predicted_s"] = s.time_s;
                    c.results["fa2_predicted_s"] = f.time_s;
                },
                "",
                R"PY(s = fasim.simulate("standard", gpu=GPU, **PROBLEM)
f = fasim.simulate("fa2", gpu=GPU, **PROBLEM)
def both(level):
    return level["read_bytes"] + level["write_bytes"]
table(["", "standard", "FlashAttention-2", "ratio"], [
    ["HBM loads+stores", quantity(both(s["hbm"]), "B"), quantity(both(f["hbm"]), "B"), f"{both(s['hbm']) / both(f['hbm']):.3g}x"],
    ["DRAM bytes", quantity(both(s["dram"]), "B"), quantity(both(f["dram"]), "B"), f"{both(s['dram']) / both(f['dram']):.3g}x"],
    ["kernels", str(len(s["kernels"])), str(len(f["kernels"])), ""],
    ["predicted time", quantity(s["time"]["predicted_s"], "s"), quantity(f["time"]["predicted_s"], "s"),
     f"{s['time']['predicted_s'] / f['time']['predicted_s']:.3g}x"],
])
RESULTS["flash"] = dict(standard_predicted_s=s["time"]["predicted_s"], fa2_predicted_s=f["time"]["predicted_s"]))PY"});

        L.exercise({"sp_bytes",
                    "Standard attention at B=1, H=16, N=8192, d=64, fp16 on " + gpu.name + ": how many bytes of S and P "
                    "cross HBM (read + written, every load and store its kernels issue)?",
                    Exercise::Kind::number, 0.01, {}, "bytes",
                    [gpu] {
                        const AlgorithmResult& r = sim_cached(algorithm("standard"), make_problem(1, 16, 8192, 64), gpu);
                        return static_cast<double>(both_of(r.hbm, "S") + both_of(r.hbm, "P"));
                    },
                    {}, "S is written once and read once, P too: 4 × B × H × N² elements of 2 bytes, unless a row of S "
                        "does not fit in shared memory (then the softmax reads it twice)."});
        L.exercise({"max_n",
                    "Standard attention at B=1, H=16, d=64, fp16: what is the largest power-of-two N for which all its "
                    "tensors fit in the HBM of " + gpu.name + "?",
                    Exercise::Kind::integer, 0, {}, "N",
                    [gpu] { return static_cast<double>(largest_fitting_n(algorithm("standard"), make_problem(1, 16, 1024, 64), gpu)); }, {},
                    "S and P take 2 × B × H × N² × 2 bytes; step 3 prints the footprint for a few N."});
        L.exercise({"growth",
                    "By what factor does standard attention's DRAM traffic grow from N=4096 to N=8192 (B=1, H=16, d=64, "
                    "fp16, " + gpu.name + ")?",
                    Exercise::Kind::number, 0.02, {}, "ratio",
                    [gpu] {
                        return static_cast<double>(sim_cached(algorithm("standard"), make_problem(1, 16, 8192, 64), gpu).dram.total()) /
                               static_cast<double>(sim_cached(algorithm("standard"), make_problem(1, 16, 4096, 64), gpu).dram.total());
                    },
                    {}, "not quite 4: the N·d terms only double. Step 2 prints the ratio column."});
    });
}
