// Lesson 03: standard attention: S and P through HBM, Θ(Nd + N²) traffic, memory footprint.
#include <iostream>

#include "common/lesson.hpp"
#include "common/sim_helpers.hpp"
#include "common/text.hpp"
#include "report/units.hpp"

using namespace fasim;
using namespace fasim::lessons;

namespace {

std::string b(std::int64_t v) { return units::bytes(static_cast<double>(v)); }

// Largest power-of-two N (up to 2^20) whose tensors fit in the GPU's memory; 0 if none.
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
                    const std::int64_t formula = r.algo->closed_form(p, r.tiles).papers_hbm->total();
                    const std::int64_t sp = both_of(r.hbm, "S") + both_of(r.hbm, "P");
                    const std::int64_t sp_dram = both_of(r.dram, "S") + both_of(r.dram, "P");
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
                }});

        L.step({"quadratic", "Θ(Nd + N²): traffic over N",
                R"(The Nd terms (Q, K, V, O) grow linearly with N, the N² terms (S, P)
quadratically, so for long sequences S and P are nearly all the traffic and
doubling N nearly quadruples it. Simulated, for this batch, heads, d and
dtype, beside step 1's formula (each tensor counted once):)",
                [&](Ctx& c) {
                    Table t({"N", "formula", "DRAM bytes", "x prev", "S and P share", "footprint", "predicted"}, "rrrrrrr");
                    Json rows = Json::array();
                    std::int64_t prev = 0;
                    std::string below;
                    for (std::int64_t n = 1024; n <= 16384; n *= 2) {
                        AttentionProblem q = p;
                        q.N = q.Nk = n;
                        const AlgorithmResult& r = sim_cached(algorithm("standard"), q, gpu);
                        const std::int64_t sp = both_of(r.dram, "S") + both_of(r.dram, "P");
                        const std::int64_t formula = r.algo->closed_form(q, r.tiles).papers_hbm->total();
                        t.row({grouped(n), b(formula), b(r.dram.total()),
                               prev ? fixed(static_cast<double>(r.dram.total()) / static_cast<double>(prev), 2) : "-",
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
                R"PY(import matplotlib.pyplot as plt
# fa-sim itself: standard attention and FlashAttention-2 over N (GPU from ARGS).
s = fasim("--algo", "all", "--sweep", "N=1024:16384", "--gpu", LESSON_JSON["parameters"]["gpu"])
ns = s["sweep"]["values"]
gb = {}
for algo in ("standard", "fa2"):
    d = [next(a for a in run["algorithms"] if a["algo"] == algo)["dram"] for run in s["runs"]]
    gb[algo] = [(x["read_bytes"] + x["write_bytes"]) / 1e9 for x in d]
    plt.loglog(ns, gb[algo], "o-", label=algo)
top = gb["standard"][-1]
plt.loglog(ns, [top * (n / ns[-1]) ** 2 for n in ns], ":", label="grows like N^2")
plt.xlabel("N")
plt.ylabel("DRAM bytes (GB)")
plt.title("B=1, H=16, d=64, fp16")
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
                        const std::int64_t s = footprint_bytes(algorithm("standard"), q, gpu), f = footprint_bytes(algorithm("fa2"), q, gpu);
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
                }});

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
                }});

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
