// Lesson 02: tiling a matrix product: naive, shared-memory tiled, register-blocked.
// The naive and tiled numbers are simulated (standard attention's first GEMM,
// S = Q·Kᵀ, with --matmul naive and tiled); the register-blocked ones with the
// --reg-tile/--reg-block options are a closed form, and the lesson says so. The
// simulator's own tiled GEMM is register-blocked 4×4 (its shared-memory wavefronts
// are simulated).
#include <cmath>
#include <iostream>

#include "common/lesson.hpp"
#include "common/sim_helpers.hpp"
#include "common/text.hpp"
#include "report/units.hpp"

using namespace fasim;
using namespace fasim::lessons;

namespace {

TileRequest matmul_mode(MatmulMode m) {
    TileRequest t;
    t.matmul = m;
    return t;
}

std::string b(double v) { return units::bytes(v); }

}  // namespace

int FASIM_LESSON_ENTRY(int argc, char** argv) {
    Lesson L(2, "tiling_a_matmul", "Tiling a matrix product",
             "Every output of a matrix product C = A·B needs a whole row of A and a whole column of B. "
             "Read them from HBM for every output and the product drowns in memory traffic; keep tiles "
             "of A and B on chip and let many outputs share them, and the same product moves a small "
             "fraction of the bytes. This lesson counts that reuse on the first product of attention, "
             "S = Q·Kᵀ (m = N rows, n = N columns, k = d), as the simulator runs it.");
    AttentionProblem def = make_problem(1, 1, 4096, 64);
    L.problem_options(def, kN | kD | kDtype);
    std::int64_t& rb = L.int_option("--reg-tile", 8, 1, 16, "register-blocked case: outputs per thread along each side (r)");
    std::int64_t& rb_block = L.int_option("--reg-block", 128, 16, 256, "register-blocked case: rows and columns of C per block");

    return L.run(argc, argv, [&](Lesson&) {
        const GpuSpec& gpu = L.gpu();
        const AttentionProblem& p = L.problem();
        const double m = static_cast<double>(p.N), n = static_cast<double>(p.Nk), k = static_cast<double>(p.d);
        const double e = static_cast<double>(p.elem_bytes());

        L.step({"naive", "Naive: every output reads its own operands",
                R"(The most direct GPU kernel gives each thread one output C[i][j] and lets it
loop over k, reading A[i][k] and B[k][j] from global memory each time. The
GEMM kernels of standard attention (sim/algorithms/standard_attention.cpp)
do exactly this with --matmul naive: one output per thread, no shared
memory. Each element of A is then read once per output column (n times),
each element of B once per output row (m times):

    reads = 2·m·n·k elements

The simulator counts the loads of its gemm_qk kernel (S = scale·Q·Kᵀ). It
also passes them through its L2 model: neighbouring threads read the same
rows at about the same time, so many of these re-reads are served by L2
rather than DRAM, but every one still crosses from L2 to an SM, in whole
32-byte sectors. A warp (2 rows x 16 columns of threads) loads, for one k,
one element of each of its 2 rows of Q and one of each of 16 rows of K:
18 sectors in 18 different 128-byte lines, for 18 useful elements. L2
looks each line up as a request of its own, and those requests, not its
bandwidth, are what the kernel waits for (a real H200 counts exactly these
sectors and requests: cuda/results/README.md).)",
                [&, m, n, k, e](Ctx& c) {
                    const AlgorithmResult& r = sim_cached(algorithm("standard"), p, gpu, matmul_mode(MatmulMode::naive));
                    const KernelRecord& g = kernel(r, "gemm_qk");
                    const KernelTiming& t = timing(r, "gemm_qk");
                    const double reads = static_cast<double>(read_of(g.hbm, "Q") + read_of(g.hbm, "K"));
                    c.out << "S = Q·Kᵀ: m = " << p.N << ", n = " << p.Nk << ", k = " << p.d << ", " << dtype_name(p.dtype) << '\n';
                    for (const auto& why : r.tiles.reasons) print_para(c.out, why, "  ", "  ");
                    c.out << '\n';
                    Table tb({"", "bytes"}, "lr");
                    tb.row({"A = Q and B = K read (simulated)", grouped(static_cast<std::int64_t>(reads))});
                    tb.row({"2·m·n·k·e (formula)", grouped(static_cast<std::int64_t>(2 * m * n * k * e))});
                    tb.row({"Q and K themselves", grouped(static_cast<std::int64_t>((m + n) * k * e))});
                    tb.row({"of which DRAM reads after L2", grouped(read_of(g.dram, "Q") + read_of(g.dram, "K"))});
                    tb.row({"sector bytes the SMs ask of L2", grouped(read_of(g.l2, "Q") + read_of(g.l2, "K"))});
                    tb.print(c.out);
                    c.out << '\n';
                    print_para(c.out, "Each element of Q is read " + num(static_cast<double>(read_of(g.hbm, "Q")) / (m * k * e), 6) +
                                          " times; the SMs make " + grouped(g.l2_read_requests) + " read requests of L2. Predicted time of the kernel: " +
                                          units::seconds(t.total_s) + ", bound by " + t.bound + ".");
                    c.results["reads_bytes"] = reads;
                    c.results["formula_bytes"] = 2 * m * n * k * e;
                    c.results["dram_read_bytes"] = read_of(g.dram, "Q") + read_of(g.dram, "K");
                    c.results["l2_read_requests"] = g.l2_read_requests;
                    c.results["predicted_s"] = t.total_s;
                },
                "",
                R"PY(ONE_HEAD = {"batch": 1, "heads": 1, **PROBLEM}  # the lesson simulates one head

def gemm_qk(r):
    """Standard attention's first kernel, S = scale·Q·Kᵀ, in a result of fasim.simulate."""
    return next(k for k in r["kernels"] if k["name"] == "gemm_qk")

def q_and_k(traffic):  # bytes of Q and K read, from a kernel's "hbm", "l2" or "dram" dict
    return sum(traffic["by_tensor"].get(t, {}).get("read_bytes", 0) for t in ("Q", "K"))

r = fasim.simulate("standard", matmul="naive", gpu=GPU, **ONE_HEAD)  # fa-sim --algo standard --matmul naive
g = gemm_qk(r)
p = r["problem"]
m, n, k = p["N"], p["Nk"], p["d"]  # S = Q·Kᵀ is m x n, summed over k
e = {"fp32": 4, "fp16": 2, "bf16": 2}[p["dtype"]]  # bytes per element
reads = q_and_k(g["hbm"])
print(f"S = Q·Kᵀ: m = {m}, n = {n}, k = {k}, {p['dtype']}")
for why in r["tiles"]["reasons"]:
    print("  " + why)
print()
table(["", "bytes"], [
    ["A = Q and B = K read (simulated)", reads],
    ["2·m·n·k·e (formula)", 2 * m * n * k * e],
    ["Q and K themselves", (m + n) * k * e],
    ["of which DRAM reads after L2", q_and_k(g["dram"])],
    ["sector bytes the SMs ask of L2", q_and_k(g["l2"])],
])
t = g["time"]
print(f"\nEach element of Q is read {g['hbm']['by_tensor']['Q']['read_bytes'] / (m * k * e):g} times; the SMs make "
      f"{g['l2_requests']['read']:,} read requests of L2. Predicted time of the kernel: {quantity(t['predicted_s'], 's')}, "
      f"bound by {t['bound']}.")
RESULTS["naive"] = dict(reads_bytes=reads, formula_bytes=2 * m * n * k * e, dram_read_bytes=q_and_k(g["dram"]),
                        l2_read_requests=g["l2_requests"]["read"], predicted_s=t["predicted_s"]))PY"});

        L.step({"tiled", "Shared-memory tiling: load once, use many times",
                R"(The tiled kernel gives each thread block a Tm×Tn tile of C and walks along
k in steps of Tk: the block copies a Tm×Tk tile of A and a Tk×Tn tile of B
into shared memory, waits at a barrier, and all its threads
compute from those copies. A value loaded once from global memory now serves
a whole row or column of the output tile:

    reads = m·k·⌈n/Tn⌉ + k·n·⌈m/Tm⌉ elements

Each element of A is read n/Tn times instead of n times: the reuse factor is
the tile size. Bigger tiles reuse more, until the tiles no longer fit in
shared memory (or the registers that accumulate C run out).)",
                [&, m, n, k, e](Ctx& c) {
                    const AlgorithmResult& r = sim_cached(algorithm("standard"), p, gpu, matmul_mode(MatmulMode::tiled));
                    const AlgorithmResult& rn = sim_cached(algorithm("standard"), p, gpu, matmul_mode(MatmulMode::naive));
                    const KernelRecord& g = kernel(r, "gemm_qk");
                    const KernelTiming& t = timing(r, "gemm_qk");
                    const double Tm = static_cast<double>(r.tiles.gemm_m), Tn = static_cast<double>(r.tiles.gemm_n);
                    const double reads = static_cast<double>(read_of(g.hbm, "Q") + read_of(g.hbm, "K"));
                    const double formula = (m * k * std::ceil(n / Tn) + k * n * std::ceil(m / Tm)) * e;
                    const double naive = static_cast<double>(read_of(kernel(rn, "gemm_qk").hbm, "Q") +
                                                             read_of(kernel(rn, "gemm_qk").hbm, "K"));
                    c.out << "Tm x Tn = " << r.tiles.gemm_m << " x " << r.tiles.gemm_n << ", Tk = " << r.tiles.gemm_k << "\n\n";
                    Table tb({"", "bytes"}, "lr");
                    tb.row({"A = Q and B = K read (simulated)", grouped(static_cast<std::int64_t>(reads))});
                    tb.row({"formula", grouped(static_cast<std::int64_t>(formula))});
                    tb.row({"of which DRAM reads after L2", grouped(read_of(g.dram, "Q") + read_of(g.dram, "K"))});
                    tb.row({"sector bytes the SMs ask of L2", grouped(read_of(g.l2, "Q") + read_of(g.l2, "K"))});
                    tb.print(c.out);
                    c.out << '\n';
                    const double reuse = static_cast<double>(read_of(g.hbm, "Q")) / (m * k * e);
                    print_para(c.out, "Each element of Q is read " + num(reuse, 6) + " times; the naive kernel read " +
                                          units::ratio(naive / reads) + " as many bytes. Predicted time: " + units::seconds(t.total_s) +
                                          " (naive: " + units::seconds(timing(rn, "gemm_qk").total_s) + "), bound by " + t.bound + ".");
                    c.results["reads_bytes"] = reads;
                    c.results["formula_bytes"] = formula;
                    c.results["q_reads_per_element"] = reuse;
                    c.results["naive_over_tiled"] = naive / reads;
                    c.results["predicted_s"] = t.total_s;
                },
                "",
                R"PY(r = fasim.simulate("standard", matmul="tiled", gpu=GPU, **ONE_HEAD)
g = gemm_qk(r)
g_naive = gemm_qk(fasim.simulate("standard", matmul="naive", gpu=GPU, **ONE_HEAD))
Tm, Tn = r["tiles"]["Br"], r["tiles"]["Bc"]  # standard attention's Br x Bc are the GEMM's output tile
reads = q_and_k(g["hbm"])
formula = (m * k * -(-n // Tn) + k * n * -(-m // Tm)) * e  # -(-a // b) is ⌈a/b⌉
print(f"Tm x Tn = {Tm} x {Tn}: {r['tiles']['reasons'][0]}\n")
table(["", "bytes"], [
    ["A = Q and B = K read (simulated)", reads],
    ["formula", formula],
    ["of which DRAM reads after L2", q_and_k(g["dram"])],
    ["sector bytes the SMs ask of L2", q_and_k(g["l2"])],
])
reuse = g["hbm"]["by_tensor"]["Q"]["read_bytes"] / (m * k * e)
naive = q_and_k(g_naive["hbm"])
print(f"\nEach element of Q is read {reuse:g} times; the naive kernel read {naive / reads:.3g}x as many bytes. "
      f"Predicted time: {quantity(g['time']['predicted_s'], 's')} (naive: {quantity(g_naive['time']['predicted_s'], 's')}), "
      f"bound by {g['time']['bound']}.")
RESULTS["tiled"] = dict(reads_bytes=reads, formula_bytes=formula, q_reads_per_element=reuse, naive_over_tiled=naive / reads,
                        predicted_s=g["time"]["predicted_s"]))PY"});

        L.step({"registers", "Register blocking, and what shared memory really serves",
                R"(One level further down: each thread computes an r×r block of C and keeps
those r² accumulators in registers. Per step along k it loads r values of A
and r values of B from shared memory into registers and does r² multiply-adds
with them, so every value it loads is used r times. Two things follow, here
from closed forms for the r and T you choose (--reg-tile, --reg-block):

- loads from shared memory, counted per thread: 2·m·n·k/r elements, against
  2·m·n·k when each thread computes one output;
- with r² outputs per thread, a block of threads can own a larger T×T tile of
  C (--reg-block), so global memory is read even less: m·k·⌈n/T⌉ + k·n·⌈m/T⌉
  elements.

The simulator's tiled kernel is itself register-blocked: 8 warps, each 2×16
lanes, each lane a 4×4 block of C (cuda/kernels/standard_gemm_tiled.cu). What
limits it is not the bytes it reads from shared memory but the wavefronts: the
shared-memory pipe serves 128 bytes per clock, each lane loads its own float4s,
and a half-warp's load takes a wavefront per 128 distinct bytes. Per k-step a
warp loads A (one float4 per half-warp: a broadcast, 1 wavefront each) and B
(16 float4s, 256 bytes: 2 each): 6 wavefronts for 32 × 16 multiply-adds. The
operand tiles are also staged k-major by transposing copies: the 8 lanes that
copy one source row store to only 2 of the 32 banks, a 4-way bank conflict (4
wavefronts per store). On an H200 the simulator predicts 0.98 of the wavefronts
Nsight Compute counts for this kernel (cuda/results/2026-11-25-h200-b).)",
                [&, m, n, k, e](Ctx& c) {
                    const AlgorithmResult& r = sim_cached(algorithm("standard"), p, gpu, matmul_mode(MatmulMode::tiled));
                    const KernelRecord& g = kernel(r, "gemm_qk");
                    const double Tm = static_cast<double>(r.tiles.gemm_m), Tn = static_cast<double>(r.tiles.gemm_n);
                    const double T = static_cast<double>(rb_block), rr = static_cast<double>(rb);
                    const double tiled_global = static_cast<double>(read_of(g.hbm, "Q") + read_of(g.hbm, "K"));
                    const double reg_global = (m * k * std::ceil(n / T) + k * n * std::ceil(m / T)) * e;
                    const double smem_one = 2 * m * n * k * e, smem_reg = smem_one / rr;
                    Table tb({"S = Q·Kᵀ", "global reads", "shared-memory loads"}, "lrr");
                    tb.row({"naive", b(2 * m * n * k * e), "0 B"});
                    tb.row({"tiled " + num(Tm, 4) + "x" + num(Tn, 4) + ", 1 output/thread", b(tiled_global), b(smem_one) + " (f)"});
                    tb.row({"tiled " + num(T, 4) + "x" + num(T, 4) + ", " + num(rr, 3) + "x" + num(rr, 3) + " per thread",
                            b(reg_global) + " (f)", b(smem_reg) + " (f)"});
                    tb.print(c.out);
                    c.out << "  (f): closed form; the other numbers are the simulator's counts.\n\n";
                    const double wavefronts = static_cast<double>(g.smem_wavefronts);
                    const double data = static_cast<double>(g.smem_read + g.smem_write);
                    print_para(c.out, "The simulator's tiled kernel (4x4 per lane): " + b(static_cast<double>(g.smem_read)) +
                                          " of operand data read from shared memory and " + b(static_cast<double>(g.smem_write)) +
                                          " written to it (the staging copies), " + grouped(static_cast<std::int64_t>(wavefronts)) +
                                          " wavefronts for both (" + b(wavefronts * 128) + " at 128 bytes each, " +
                                          units::ratio(wavefronts * 128 / data) + " the " + b(data) +
                                          " read and written): on the CUDA cores (fa-sim --cuda-cores) the kernel is timed by them.");
                    c.results["reg_global_bytes"] = reg_global;
                    c.results["reg_smem_load_bytes"] = smem_reg;
                    c.results["one_output_smem_load_bytes"] = smem_one;
                    c.results["simulated_tiled_smem_read_bytes"] = g.smem_read;
                    c.results["simulated_tiled_smem_wavefronts"] = wavefronts;
                },
                "",
                R"PY(R, T = 8, 128  # r x r outputs per thread, T x T outputs per block (the lesson's --reg-tile and --reg-block)
r = fasim.simulate("standard", matmul="tiled", gpu=GPU, **ONE_HEAD)
g = gemm_qk(r)
Tm, Tn = r["tiles"]["Br"], r["tiles"]["Bc"]
reg_global = (m * k * -(-n // T) + k * n * -(-m // T)) * e  # closed forms
smem_one = 2 * m * n * k * e
smem_reg = smem_one / R
table(["S = Q·Kᵀ", "global reads", "shared-memory loads"], [
    ["naive", quantity(2 * m * n * k * e, "B"), "0 B"],
    [f"tiled {Tm}x{Tn}, 1 output/thread", quantity(q_and_k(g["hbm"]), "B"), quantity(smem_one, "B") + " (f)"],
    [f"tiled {T}x{T}, {R}x{R} per thread", quantity(reg_global, "B") + " (f)", quantity(smem_reg, "B") + " (f)"],
])
print("  (f): closed form; the other numbers are the simulator's counts.\n")
smem = g["smem"]
wavefronts = g["smem_wavefronts"]
data = smem["read_bytes"] + smem["write_bytes"]
print(f"The simulator's tiled kernel (4x4 per lane): {quantity(smem['read_bytes'], 'B')} of operand data read from shared "
      f"memory and {quantity(smem['write_bytes'], 'B')} written to it (the staging copies), {wavefronts:,} wavefronts for "
      f"both ({quantity(wavefronts * 128, 'B')} at 128 bytes each, {wavefronts * 128 / data:.3g}x the {quantity(data, 'B')} "
      "read and written): on the CUDA cores (cuda_cores=True) the kernel is timed by them.")
RESULTS["registers"] = dict(reg_global_bytes=reg_global, reg_smem_load_bytes=smem_reg, one_output_smem_load_bytes=smem_one,
                            simulated_tiled_smem_read_bytes=smem["read_bytes"], simulated_tiled_smem_wavefronts=wavefronts))PY"});

        L.step({"sweep", "Traffic against size",
                R"(The gap grows with the problem: the naive kernel's reads grow like m·n·k,
the tiled kernel's like m·n·k divided by the tile size. Over N (m = n = N,
k = d), simulated:)",
                [&](Ctx& c) {
                    Table t({"N", "naive reads", "tiled reads", "ratio", "naive time", "tiled time"}, "rrrrrr");
                    Json rows = Json::array();
                    for (std::int64_t nn = 256; nn <= 4096; nn *= 2) {
                        AttentionProblem q = p;
                        q.N = q.Nk = nn;
                        const AlgorithmResult& rn = sim_cached(algorithm("standard"), q, gpu, matmul_mode(MatmulMode::naive));
                        const AlgorithmResult& rt = sim_cached(algorithm("standard"), q, gpu, matmul_mode(MatmulMode::tiled));
                        const KernelRecord &gn = kernel(rn, "gemm_qk"), &gt = kernel(rt, "gemm_qk");
                        const double a = static_cast<double>(read_of(gn.hbm, "Q") + read_of(gn.hbm, "K"));
                        const double bb = static_cast<double>(read_of(gt.hbm, "Q") + read_of(gt.hbm, "K"));
                        t.row({grouped(nn), b(a), b(bb), units::ratio(a / bb), units::seconds(timing(rn, "gemm_qk").total_s),
                               units::seconds(timing(rt, "gemm_qk").total_s)});
                        rows.push_back({{"N", nn}, {"naive_read_bytes", a}, {"tiled_read_bytes", bb},
                                        {"naive_s", timing(rn, "gemm_qk").total_s}, {"tiled_s", timing(rt, "gemm_qk").total_s}});
                    }
                    c.out << "d = " << p.d << ", " << dtype_name(p.dtype) << ", one head, kernel gemm_qk on " << gpu.name << ":\n";
                    t.print(c.out);
                    c.results["over_N"] = rows;
                },
                "",
                R"PY(sizes = [256, 512, 1024, 2048, 4096]
rows = []
for N in sizes:  # m = n = N, k = d
    gn = gemm_qk(fasim.simulate("standard", matmul="naive", gpu=GPU, **dict(ONE_HEAD, N=N)))
    gt = gemm_qk(fasim.simulate("standard", matmul="tiled", gpu=GPU, **dict(ONE_HEAD, N=N)))
    rows.append(dict(N=N, naive_read_bytes=q_and_k(gn["hbm"]), tiled_read_bytes=q_and_k(gt["hbm"]),
                     naive_s=gn["time"]["predicted_s"], tiled_s=gt["time"]["predicted_s"]))
print(f"d = {k}, {p['dtype']}, one head, kernel gemm_qk on {fasim.gpu(GPU)['name']}:")
table(["N", "naive reads", "tiled reads", "ratio", "naive time", "tiled time"],
      [[x["N"], quantity(x["naive_read_bytes"], "B"), quantity(x["tiled_read_bytes"], "B"),
        f"{x['naive_read_bytes'] / x['tiled_read_bytes']:.3g}x", quantity(x["naive_s"], "s"), quantity(x["tiled_s"], "s")]
       for x in rows])
RESULTS["sweep"] = dict(over_N=rows)

import matplotlib.pyplot as plt
plt.loglog(sizes, [x["naive_read_bytes"] / 1e9 for x in rows], "o-", label="naive", base=2)
plt.loglog(sizes, [x["tiled_read_bytes"] / 1e9 for x in rows], "s-", label=f"tiled {Tm}x{Tn}", base=2)
plt.xlabel("N (m = n = N, k = d)")
plt.ylabel("bytes of Q and K read (GB)")
plt.title("S = Q K^T: global-memory reads")
plt.legend()
plt.show())PY"});

        auto q_and_k_reads = [](const AlgorithmResult& r) {
            const KernelRecord& g = kernel(r, "gemm_qk");
            return static_cast<double>(read_of(g.hbm, "Q") + read_of(g.hbm, "K"));
        };
        L.exercise({"naive_bytes",
                    "The naive kernel for S = Q·Kᵀ with N=1024, d=64, fp16, one head: how many bytes of Q and K does it "
                    "read from global memory?",
                    Exercise::Kind::number, 0.01, {}, "bytes",
                    [gpu, q_and_k_reads] {
                        return q_and_k_reads(sim_cached(algorithm("standard"), make_problem(1, 1, 1024, 64), gpu, matmul_mode(MatmulMode::naive)));
                    },
                    {}, "every one of the m·n outputs reads k elements of Q and k of K, 2 bytes each."});
        L.exercise({"tiled_bytes",
                    "The 64×64 tiled kernel for the same product (N=1024, d=64, fp16, one head): how many bytes of Q and K "
                    "does it read from global memory?",
                    Exercise::Kind::number, 0.01, {}, "bytes",
                    [gpu, q_and_k_reads] {
                        return q_and_k_reads(sim_cached(algorithm("standard"), make_problem(1, 1, 1024, 64), gpu, matmul_mode(MatmulMode::tiled)));
                    },
                    {}, "each block reads a 64-row panel of Q and a 64-row panel of K; there are (1024/64)² blocks."});
        L.exercise({"reuse",
                    "In the 64×64 tiled kernel at N=4096, d=64: how many times is each element of Q read from global memory?",
                    Exercise::Kind::integer, 0, {}, "times",
                    [gpu] {
                        const AttentionProblem q = make_problem(1, 1, 4096, 64);
                        const KernelRecord& g = kernel(sim_cached(algorithm("standard"), q, gpu, matmul_mode(MatmulMode::tiled)), "gemm_qk");
                        return static_cast<double>(read_of(g.hbm, "Q")) / static_cast<double>(q.N * q.d * q.elem_bytes());
                    },
                    {}, "once per block column of the output: n / Tn."});
    });
}
