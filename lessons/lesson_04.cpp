// Lesson 04: online softmax: the m/ℓ recurrence on a small row, then what attention
// costs without it (the two-pass tiled algorithm) in the simulator.
#include <cmath>
#include <limits>
#include <iostream>

#include "blocked_attention.hpp"
#include "common/lesson.hpp"
#include "common/sim_helpers.hpp"
#include "common/text.hpp"
#include "inputs.hpp"
#include "precision.hpp"
#include "report/units.hpp"

using namespace fasim;
using namespace fasim::lessons;

namespace {

// A row of scores with two decimals (so a student can redo every step by hand):
// 3 × N(0, 1) draws of the given seed, rounded.
reference::Vector score_row(std::int64_t n, std::int64_t seed) {
    const reference::Matrix z = reference::random_normal(1, static_cast<long>(n), static_cast<std::uint64_t>(seed));
    reference::Vector x(n);
    for (Eigen::Index i = 0; i < n; ++i) x(i) = std::round(300.0 * z(0, i)) / 100.0;
    return x;
}

std::string row_text(const reference::Vector& x, int decimals) {
    std::string s = "[";
    for (Eigen::Index i = 0; i < x.size(); ++i) {
        if (i) s += ", ";
        s += fixed(x(i), decimals);
    }
    s += ']';
    return s;
}

// softmax written directly: max, then exp and sum, then divide.
reference::Vector softmax(const reference::Vector& x) {
    const double m = x.maxCoeff();
    reference::Vector p = (x.array() - m).exp().matrix();
    return p / p.sum();
}

constexpr std::int64_t kExerciseSeed = 7, kExerciseRow = 8, kExerciseChunk = 3;

}  // namespace

int FASIM_LESSON_ENTRY(int argc, char** argv) {
    Lesson L(4, "online_softmax", "Online softmax",
             "Softmax normalises a whole row at once: it needs the row's maximum and the sum of its "
             "exponentials before it can produce a single output. That seems to force a kernel to see "
             "all N scores of a row, or to make several passes over them. The online softmax keeps a "
             "running maximum m and a running sum ℓ, and corrects ℓ whenever m grows; this is what lets "
             "FlashAttention work one tile at a time. The lesson runs the recurrence on a small row, "
             "checks it against the exact softmax, and then prices the alternative, two passes over K, "
             "with the simulator.");
    L.problem_options(make_problem(1, 16, 4096, 64), kN | kD | kHeads | kBatch | kDtype);
    std::int64_t& row_len = L.int_option("--row", 8, 2, 32, "length of the example row");
    std::int64_t& chunk = L.int_option("--chunk", 2, 1, 32, "entries processed per step");
    std::int64_t& seed = L.int_option("--seed", 9, 0, 1000000, "seed of the example row");

    return L.run(argc, argv, [&](Lesson&) {
        const GpuSpec& gpu = L.gpu();
        const AttentionProblem& p = L.problem();

        L.step({"softmax", "Softmax, the safe way",
                R"(For a row of scores x, softmax(x)_i = exp(x_i) / Σ_j exp(x_j). Computed like
that, exp overflows as soon as a score exceeds the logarithm of the largest
finite number (printed below). So every implementation subtracts the row
maximum m first, which changes nothing mathematically:

    m = max_j x_j,   ℓ = Σ_j exp(x_j − m),   p_i = exp(x_i − m) / ℓ

Done plainly, that is three passes over the row: one for m, one for ℓ, one to
write p. Here is a row of scores (3 × N(0,1), rounded to two decimals; --row,
--seed) and its softmax.)",
                [&](Ctx& c) {
                    const reference::Vector x = score_row(row_len, seed);
                    const reference::Vector sm = softmax(x);
                    const double m = x.maxCoeff(), l = (x.array() - m).exp().sum();
                    print_para(c.out, "exp(x) overflows for x > " + fixed(std::log(static_cast<double>(reference::fp16_bits_to_float(0x7BFF))), 2) + " in fp16 and x > " +
                                          fixed(std::log(static_cast<double>(std::numeric_limits<float>::max())), 2) + " in fp32.");
                    c.out << '\n';
                    print_para(c.out, "x = " + row_text(x, 2), "", "     ");
                    c.out << "m = " << fixed(m, 2) << ",  ℓ = " << fixed(l, 6) << '\n';
                    print_para(c.out, "p = " + row_text(sm, 4), "", "     ");
                    c.out << "Σ p = " << fixed(sm.sum(), 6) << '\n';
                    c.results["x"] = std::vector<double>(x.data(), x.data() + x.size());
                    c.results["m"] = m;
                    c.results["l"] = l;
                    c.results["p"] = std::vector<double>(sm.data(), sm.data() + sm.size());
                },
                "",
                R"PY(ROW, CHUNK, SEED = 8, 2, 9  # the row's length, the entries per step, the row's seed (the lesson's --row, --chunk, --seed)
z = fasim.random_normal(1, ROW, SEED)[0]  # N(0,1) draws from the generator the lesson program uses
x = np.sign(z) * np.floor(np.abs(300 * z) + 0.5) / 100  # 3 × N(0,1), rounded to two decimals (halves away from 0)
fmt = lambda v, decimals: "[" + ", ".join(f"{e:.{decimals}f}" for e in v) + "]"
print(f"exp(x) overflows for x > {np.log(float(np.finfo(np.float16).max)):.2f} in fp16 and "
      f"x > {np.log(float(np.finfo(np.float32).max)):.2f} in fp32.\n")
m = x.max()                 # pass 1: the maximum
l = np.exp(x - m).sum()     # pass 2: the sum
p = np.exp(x - m) / l       # pass 3: the probabilities
print("x = " + fmt(x, 2))
print(f"m = {m:.2f},  ℓ = {l:.6f}")
print("p = " + fmt(p, 4))
print(f"Σ p = {p.sum():.6f}")
RESULTS["softmax"] = dict(x=[float(v) for v in x], m=float(m), l=float(l), p=[float(v) for v in p]))PY"});

        L.step({"online", "One pass: the running max and sum",
                R"(Process the row a chunk at a time, keeping only two numbers. When a chunk
arrives, its maximum may exceed the running m; every term already summed in ℓ
was computed against the old m and must be scaled by exp(m_old − m_new):

    m_new = max(m_old, max(chunk))
    ℓ_new = exp(m_old − m_new)·ℓ_old + Σ_chunk exp(x_j − m_new)

Start from m = −∞ and ℓ = 0; after the last chunk m and ℓ are the row's
maximum and sum, exactly. The table is reference::online_softmax_row
(reference/blocked_attention.hpp) on the row above, chunk size --chunk.)",
                [&](Ctx& c) {
                    const reference::Vector x = score_row(row_len, seed);
                    const auto r = reference::online_softmax_row(x, static_cast<long>(chunk));
                    Table t({"chunk", "entries", "chunk max", "m", "exp(m_old - m_new)", "ℓ"}, "rlrrrr");
                    Json steps = Json::array();
                    for (std::size_t k = 0; k < r.steps.size(); ++k) {
                        const auto& s = r.steps[k];
                        std::string range = "[";
                        range += std::to_string(s.begin);
                        range += ", ";
                        range += std::to_string(s.end);
                        range += ')';
                        t.row({std::to_string(k + 1), range,
                               fixed(s.chunk_max, 2), fixed(s.m, 2), fixed(s.correction, 6), fixed(s.l, 6)});
                        steps.push_back({{"begin", s.begin}, {"end", s.end}, {"chunk_max", s.chunk_max}, {"m", s.m},
                                         {"correction", s.correction}, {"l", s.l}});
                    }
                    t.print(c.out);
                    const reference::Vector exact = softmax(x);
                    const double diff = (r.p - exact).cwiseAbs().maxCoeff();
                    c.out << '\n';
                    print_para(c.out, "Final m = " + fixed(r.m, 2) + ", ℓ = " + fixed(r.l, 6) + "; p = exp(x − m)/ℓ " +
                                          (diff == 0 ? std::string("equals the three-pass softmax to the last bit.")
                                                     : "differs from the three-pass softmax by at most " + num(diff, 3) +
                                                           " (float64 rounding)."));
                    c.results["steps"] = steps;
                    c.results["max_diff_vs_exact"] = diff;
                    c.results["equals_exact"] = diff < 1e-12;
                },
                "",
                R"PY(def online_softmax(x, chunk):
    """One pass over x, `chunk` entries at a time, keeping the running max m and sum l."""
    m, l, steps = -np.inf, 0.0, []
    for begin in range(0, len(x), chunk):
        part = x[begin:begin + chunk]
        m_new = max(m, part.max())
        correction = np.exp(m - m_new)  # exp(-inf) = 0 on the first chunk
        l = correction * l + np.exp(part - m_new).sum()  # the old sum re-expressed relative to the new max
        m = m_new
        steps.append(dict(begin=begin, end=begin + len(part), chunk_max=float(part.max()), m=float(m),
                          correction=float(correction), l=float(l)))
    return m, l, steps

m, l, steps = online_softmax(x, CHUNK)

# The simulator's FA2 tile program keeps the same two numbers per row. Trace it on one query whose scores are x:
# q = (1, 0, 0, 0) and K's first column x·sqrt(d) make scale·q·k_j = x_j; Bc = CHUNK keys per K/V tile.
D = 4
Kx = np.zeros((1, 1, ROW, D)); Kx[0, 0, :, 0] = x * np.sqrt(D)
qx = np.zeros((1, 1, 1, D)); qx[0, 0, 0, 0] = 1
trace = fasim.trace("fa2", qx, Kx, np.ones((1, 1, ROW, D)), Br=1, Bc=CHUNK, dtype="fp32")
fa2_m = [float(s["values"][0, 0]) for s in trace if s["op"] == "max"]  # m_new <- max(m_new of the tile, m_i)
fa2_l = [float(s["values"][0, 0]) for s in trace if s["op"] == "fma"]  # l_i <- alpha·l_i + rowsum
table(["chunk", "entries", "chunk max", "m", "exp(m_old - m_new)", "ℓ", "FA2's m", "FA2's ℓ (fp32)"],
      [[k + 1, f"[{s['begin']}, {s['end']})", f"{s['chunk_max']:.2f}", f"{s['m']:.2f}", f"{s['correction']:.6f}", f"{s['l']:.6f}",
        f"{fm:.2f}", f"{fl:.6f}"] for k, (s, fm, fl) in enumerate(zip(steps, fa2_m, fa2_l))])
diff = np.abs(np.exp(x - m) / l - p).max()  # against step 1's three passes
print(f"\nFinal m = {m:.2f}, ℓ = {l:.6f}; p = exp(x − m)/ℓ "
      + ("equals the three-pass softmax to the last bit." if diff == 0 else
         f"differs from the three-pass softmax by at most {diff:.3g} (float64 rounding)."))
RESULTS["online"] = dict(steps=steps, max_diff_vs_exact=float(diff), equals_exact=bool(diff < 1e-12)))PY"});

        L.step({"output", "The same trick for the output",
                R"(Attention does not need p itself but o = Σ_j p_j·v_j, a weighted sum of the
rows of V. Keep that sum unnormalised as well, and rescale it with ℓ:

    o_new = exp(m_old − m_new)·o_old + Σ_chunk exp(x_j − m_new)·v_j
    o     = o_new / ℓ                 once, after the last chunk

One query attends to keys whose scores are the row above (scale·q·k_j = x_j)
with random values V (d = 4); exact attention against that recurrence, run by
reference::flash_attention_2 with one query per block and --chunk keys per
block. This is FlashAttention-2's inner loop for a single row.)",
                [&](Ctx& c) {
                    const reference::Vector x = score_row(row_len, seed);
                    const long n = static_cast<long>(row_len), d = 4;
                    // q = (1, 0, 0, 0) and K's first column = x / scale make scale·q·k_j = x_j.
                    reference::Matrix Q = reference::Matrix::Zero(1, d), K = reference::Matrix::Zero(n, d);
                    Q(0, 0) = 1.0;
                    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
                    for (long j = 0; j < n; ++j) K(j, 0) = x(j) / scale;
                    const reference::Matrix V = reference::random_normal(n, d, static_cast<std::uint64_t>(seed) + 1);
                    const auto exact = reference::exact_attention(Q, K, V);
                    const auto online = reference::flash_attention_2<double>(Q, K, V, {}, 1, static_cast<long>(chunk));
                    const double diff = (online.O - exact.O).cwiseAbs().maxCoeff();
                    const reference::Vector o_exact = exact.O.row(0).transpose(), o_online = online.O.row(0).transpose();
                    c.out << "exact  o = " << row_text(o_exact, 6) << '\n';
                    c.out << "online o = " << row_text(o_online, 6) << '\n';
                    print_para(c.out, "max difference " + num(diff, 3) + "; logsumexp m + log ℓ = " + fixed(online.lse(0), 6) +
                                          " (exact " + fixed(exact.lse(0), 6) + ").");
                    c.results["max_diff_vs_exact"] = diff;
                    c.results["equals_exact"] = diff < 1e-12;
                },
                "",
                R"PY(D = 4
scale = 1 / np.sqrt(D)
q = np.zeros(D); q[0] = 1  # q = (1, 0, 0, 0) and K's first column x / scale make scale·q·k_j = x_j
K = np.zeros((ROW, D)); K[:, 0] = x / scale
V = fasim.random_normal(ROW, D, SEED + 1)  # the lesson's values
s = scale * K @ q
o_exact = np.exp(s - s.max()) @ V / np.exp(s - s.max()).sum()  # exact attention for this query
m, l, o = -np.inf, 0.0, np.zeros(D)  # the recurrence, one chunk of keys at a time (FA2's inner loop, one row)
for begin in range(0, ROW, CHUNK):
    part = s[begin:begin + CHUNK]
    m_new = max(m, part.max())
    w = np.exp(part - m_new)
    l = np.exp(m - m_new) * l + w.sum()
    o = np.exp(m - m_new) * o + w @ V[begin:begin + CHUNK]
    m = m_new
o = o / l  # once, after the last chunk
diff = np.abs(o - o_exact).max()
print("exact  o = " + fmt(o_exact, 6))
print("online o = " + fmt(o, 6))
print(f"max difference {diff:.3g}; logsumexp m + log ℓ = {m + np.log(l):.6f} "
      f"(exact {s.max() + np.log(np.exp(s - s.max()).sum()):.6f}).")
# The simulator's FA2 tile program does the same on the module's functional executor (fp32 arithmetic):
run = fasim.run("fa2", q.reshape(1, 1, 1, D), K.reshape(1, 1, ROW, D), V.reshape(1, 1, ROW, D), Br=1, Bc=CHUNK, dtype="fp32")
print("fasim.run('fa2') o = " + fmt(run["O"][0, 0, 0], 6) + f" (fp32: max difference {np.abs(run['O'][0, 0, 0] - o_exact).max():.2g})")
RESULTS["output"] = dict(max_diff_vs_exact=float(diff), equals_exact=bool(diff < 1e-12)))PY"});

        L.step({"two_pass", "Without the output trick: two passes over K",
                R"(The online statistics alone are not enough for a tiled attention kernel: if
O is not rescaled as it accumulates, a block must know the final m and ℓ of
its rows before it can weight any value. The simulator's tiled algorithm
does exactly that. Per Q tile, pass 1 walks over all K tiles computing S
just for m and ℓ; pass 2 walks over K and V again, recomputes S, forms
P = exp(S − m)/ℓ and adds P·V to O. It is still fused and never writes S,
but it reads K twice and computes Q·Kᵀ twice. FlashAttention avoids both by
rescaling O, as in the previous step.)",
                [&](Ctx& c) {
                    const AlgorithmResult& t = sim_cached(algorithm("tiled"), p, gpu);
                    const AlgorithmResult& f = sim_cached(algorithm("fa2"), p, gpu);
                    c.out << p.describe() << ", both with " << f.tiles.Br << " x " << f.tiles.Bc << " tiles\n\n";
                    Table tb({"", "tiled (two passes)", "FlashAttention-2", "ratio"}, "lrrr");
                    auto ratio = [](double a, double b) { return units::ratio(a / b); };
                    const double kt = static_cast<double>(read_of(t.hbm, "K")), kf = static_cast<double>(read_of(f.hbm, "K"));
                    tb.row({"K read from HBM", units::bytes(kt), units::bytes(kf), ratio(kt, kf)});
                    tb.row({"V read from HBM", units::bytes(static_cast<double>(read_of(t.hbm, "V"))),
                            units::bytes(static_cast<double>(read_of(f.hbm, "V"))),
                            ratio(static_cast<double>(read_of(t.hbm, "V")), static_cast<double>(read_of(f.hbm, "V")))});
                    tb.row({"matmul FLOPs", units::flops(static_cast<double>(t.matmul_flops)), units::flops(static_cast<double>(f.matmul_flops)),
                            ratio(static_cast<double>(t.matmul_flops), static_cast<double>(f.matmul_flops))});
                    tb.row({"exp (SFU)", units::count(static_cast<double>(t.sfu_ops)), units::count(static_cast<double>(f.sfu_ops)),
                            ratio(static_cast<double>(t.sfu_ops), static_cast<double>(f.sfu_ops))});
                    tb.row({"predicted time", units::seconds(t.time_s), units::seconds(f.time_s), ratio(t.time_s, f.time_s)});
                    tb.print(c.out);
                    c.out << '\n';
                    print_para(c.out, "Tiled: " + main_timing(t).bound + ". FlashAttention-2: " + main_timing(f).bound + ".");
                    c.results["tiled_k_read_bytes"] = read_of(t.hbm, "K");
                    c.results["fa2_k_read_bytes"] = read_of(f.hbm, "K");
                    c.results["tiled_matmul_flops"] = t.matmul_flops;
                    c.results["fa2_matmul_flops"] = f.matmul_flops;
                    c.results["tiled_predicted_s"] = t.time_s;
                    c.results["fa2_predicted_s"] = f.time_s;
                },
                "",
                R"PY(t = fasim.simulate("tiled", gpu=GPU, **PROBLEM)  # the two-pass tiled algorithm
f = fasim.simulate("fa2", gpu=GPU, **PROBLEM)
print(f"{describe(f['problem'])}, both with {f['tiles']['Br']} x {f['tiles']['Bc']} tiles\n")
read = lambda r, name: r["hbm"]["by_tensor"][name]["read_bytes"]
row = lambda what, a, b, unit: [what, quantity(a, unit), quantity(b, unit), f"{a / b:.3g}x"]
table(["", "tiled (two passes)", "FlashAttention-2", "ratio"], [
    row("K read from HBM", read(t, "K"), read(f, "K"), "B"),
    row("V read from HBM", read(t, "V"), read(f, "V"), "B"),
    row("matmul FLOPs", t["flops"]["matmul"], f["flops"]["matmul"], "FLOP"),
    row("exp (SFU)", t["flops"]["sfu_ops"], f["flops"]["sfu_ops"], ""),
    row("predicted time", t["time"]["predicted_s"], f["time"]["predicted_s"], "s"),
])
print(f"\nTiled: {t['kernels'][-1]['time']['bound']}. FlashAttention-2: {f['kernels'][-1]['time']['bound']}.")
RESULTS["two_pass"] = dict(tiled_k_read_bytes=read(t, "K"), fa2_k_read_bytes=read(f, "K"), tiled_matmul_flops=t["flops"]["matmul"],
                           fa2_matmul_flops=f["flops"]["matmul"], tiled_predicted_s=t["time"]["predicted_s"],
                           fa2_predicted_s=f["time"]["predicted_s"]))PY"});

        const reference::Vector ex_row = score_row(kExerciseRow, kExerciseSeed);
        const std::string ex_text = row_text(ex_row, 2);
        Exercise m_after{"m_after",
                         "Process x = " + ex_text + " in chunks of " + std::to_string(kExerciseChunk) +
                             ". What is the running max m after the second chunk?",
                         Exercise::Kind::number, 0, {}, "",
                         [ex_row] { return reference::online_softmax_row(ex_row, kExerciseChunk).steps.at(1).m; }, {},
                         "the second chunk covers entries 3, 4 and 5 (counting from 0); m is the largest value seen so "
                         "far, not the largest of the chunk alone."};
        m_after.abs_tol = 0.005;
        L.exercise(m_after);
        L.exercise({"l_final",
                    "Same row and chunks: what is ℓ after the last chunk, i.e. the sum of exp(x_j − m) with m the row's "
                    "maximum?",
                    Exercise::Kind::number, 0.005, {}, "",
                    [ex_row] { return reference::online_softmax_row(ex_row, kExerciseChunk).l; }, {},
                    "whatever the chunks, the final ℓ is Σ_j exp(x_j − max x); the largest entry contributes exactly 1."});
        L.exercise({"matmul_ratio",
                    "B=1, H=16, N=4096, d=64, fp16 on " + gpu.name + ": the two-pass tiled algorithm's matmul FLOPs "
                    "divided by FlashAttention-2's?",
                    Exercise::Kind::number, 0.01, {}, "ratio",
                    [gpu] {
                        const AttentionProblem q = make_problem(1, 16, 4096, 64);
                        return static_cast<double>(sim_cached(algorithm("tiled"), q, gpu).matmul_flops) /
                               static_cast<double>(sim_cached(algorithm("fa2"), q, gpu).matmul_flops);
                    },
                    {}, "count the products per (Q tile, K tile) pair: Q·Kᵀ in both passes, P·V in the second only."});
    });
}
