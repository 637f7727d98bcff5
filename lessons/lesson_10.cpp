// Lesson 10: the backward pass. The chain rule through softmax tile by tile, what the forward keeps
// for it, recomputation (more FLOPs, fewer bytes), and where dQ goes in FA1's and FA2's schedules.
#include <iostream>
#include <vector>

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

// The HBM bytes a run's programs move by their closed forms: the forward's (fwd+bwd) plus the backward's.
ClosedForm::Bytes closed_form_hbm(const AlgorithmResult& r) {
    ClosedForm::Bytes sum = *r.algo->closed_form(r.problem, r.tiles).hbm;
    if (r.forward) {
        const ClosedForm::Bytes f = *r.forward->closed_form(r.problem, *r.forward_tiles).hbm;
        sum.read += f.read;
        sum.write += f.write;
    }
    return sum;
}

// The one gradient the FA2 backward kernel does not store itself (it adds it atomically to a buffer).
std::string gradient_added_atomically(const AlgorithmResult& r) {
    const KernelRecord& k = kernel(r, "fa2_backward");
    for (const char* g : {"dQ", "dK", "dV"})
        if (write_of(k.hbm, g) == 0) return g;
    throw std::logic_error("fa2_backward stores every gradient itself");
}

}  // namespace

int FASIM_LESSON_ENTRY(int argc, char** argv) {
    Lesson L(10, "backward_pass", "The backward pass: recomputation",
             "Training needs the gradients dQ, dK and dV as well as O. Standard attention keeps the N x N "
             "matrix P from the forward pass and reads it back; FlashAttention keeps only one number per row "
             "and recomputes S and P tile by tile, doing more arithmetic to move far fewer bytes. This lesson "
             "traces FlashAttention-2's backward on real numbers, measures what each algorithm keeps between "
             "the passes and what it moves, and follows dQ through FA1's and FA2's schedules.");
    L.problem_options(make_problem(1, 16, 4096, 64), kN | kD | kHeads | kBatch | kDtype | kCausal);
    std::int64_t& trace_n = L.int_option("--trace-N", 8, 2, 64, "sequence length of the traced problem");
    std::int64_t& trace_d = L.int_option("--trace-d", 4, 4, 16, "head dimension of the traced problem (4, 8 or 16)");
    std::int64_t& trace_tile = L.int_option("--trace-tile", 4, 1, 64, "Br = Bc of the traced problem");
    std::int64_t& seed = L.int_option("--seed", 1, 0, 1000000, "seed of the traced problem's random Q, K, V and dO");

    return L.run(argc, argv, [&](Lesson&) {
        const GpuSpec& gpu = L.gpu();
        const AttentionProblem& p = L.problem();
        if (!supported_head_dim(trace_d) || trace_d > 16)
            throw usage_error("--trace-d " + std::to_string(trace_d) + " is not supported",
                              "the traced head dimension must be 4, 8 or 16", "e.g. --trace-d 4");

        L.step({"trace", "The chain rule through softmax, one tile at a time",
                R"(With S = scale·Q·Kᵀ, P = softmax(S) row by row and O = P·V, the gradient dO
of the loss with respect to O gives the others:

    dV = Pᵀ·dO                 dP = dO·Vᵀ
    dS = P ∘ (dP − D)          D_i = Σ_j P_ij·dP_ij
    dQ = scale·dS·K            dK = scale·dSᵀ·Q

D needs a whole row of P and dP, which no tile holds. But Σ_j P_ij·dP_ij =
Σ_j P_ij·(dO_i·V_j) = dO_i·O_i, so D = rowsum(dO ∘ O) can be computed first,
from two N×d matrices. Then every tile is independent: P_ij is recomputed
from Q_i, K_j and the row's logsumexp, P_ij = exp(scale·Q_i·K_jᵀ − LSE_i) =
exp(S_ij − LSE_i), exactly the normalised probabilities.

FlashAttention-2's backward gives each K/V tile its own thread block: the
block keeps K_j, V_j, dK_j and dV_j on chip, walks over all Q tiles, and adds
its share of each dQ_i to an fp32 buffer with atomic adds. The trace below
runs the simulator's program on real numbers (the forward ran first, not
shown); at the end each gradient is compared with the float64 backward.)",
                [&](Ctx& c) {
                    const AttentionProblem tp = make_problem(1, 1, trace_n, trace_d, p.dtype, p.causal);
                    const TileRequest req = tiles(trace_tile, trace_tile);
                    const Algorithm& fa2 = algorithm("fa2");
                    const TracedBackward t = traced_backward(fa2, tp, gpu, choose_tiles(fa2, tp, gpu, req),
                                                             choose_tiles(backward_program(fa2), tp, gpu, req),
                                                             static_cast<std::uint64_t>(seed));
                    c.out << tp.describe() << ", Br = Bc = " << trace_tile << "; Q, K, V, dO ~ N(0,1), seed " << seed
                          << ";\nvalues shown for at most 4 rows and 4 columns.\n\n"
                          << t.trace << '\n';
                    const reference::GradientChecks& g = t.checks.front();
                    for (const auto& [name, check] : {std::pair{"dQ", &g.dQ}, std::pair{"dK", &g.dK}, std::pair{"dV", &g.dV}}) {
                        print_para(c.out, std::string("max |") + name + " - " + name + "_exact| = " + num(check->error, 3) +
                                              "; allowed " + num(check->bound, 3) + " -> " +
                                              (check->pass ? "equals the exact gradient." : "DIFFERS from the exact gradient."));
                        c.results[std::string(name) + "_max_error"] = check->error;
                        c.results[std::string(name) + "_allowed_error"] = check->bound;
                    }
                    c.results["problem"] = tp.describe();
                    c.results["gradients_equal_exact"] = t.pass();
                },
                "",
                R"PY(TRACE_N, TRACE_D, TILE, SEED = 8, 4, 4, 1  # the traced problem: one head, N = Nk = TRACE_N, Br = Bc = TILE
rng = np.random.default_rng(SEED)
Q, K, V, dO = (rng.standard_normal((1, 1, TRACE_N, TRACE_D)) for _ in range(4))
causal, dtype = PROBLEM["causal"], PROBLEM["dtype"]
steps = fasim.trace("fa2", Q, K, V, dO=dO, pass_="bwd", Br=TILE, Bc=TILE, causal=causal, dtype=dtype)
print(f"B=1 H=1 N={TRACE_N} d={TRACE_D} {dtype}{' causal' if causal else ''}, Br = Bc = {TILE}; Q, K, V, dO ~ N(0,1), "
      f"seed {SEED}; the backward's steps (the forward ran first), row statistics' first 4 values\n")
for s in steps:
    if s["kind"] == "kernel":
        print(f"kernel {s['kernel']}: {s['role']} (grid {s['grid']})")
    elif s["kind"] == "block":
        print(f"block {s['block']} (head {s['head']})")
    else:
        source = s["region"]["text"] if s["region"] else ", ".join(s["operands"])
        v = s["values"]
        shown = np.array2string(v[:4, 0], precision=3) if v is not None and v.shape[1] == 1 else ""
        print(f"  {s['op'] or s['kind']:8} {s['result'] or '':14} <- {source:22} {shown}".rstrip())

# The gradients against the float64 backward (NumPy), on the inputs as the dtype stores them
g = fasim.run_backward("fa2", Q, K, V, dO, Br=TILE, Bc=TILE, causal=causal, dtype=dtype)
q, k, v, do = (x.astype(np.float16 if dtype == "fp16" else np.float32).astype(np.float64)[0, 0] for x in (Q, K, V, dO))
scale = 1 / np.sqrt(TRACE_D)
S = np.where(np.arange(TRACE_N)[None, :] <= np.arange(TRACE_N)[:, None] if causal else True, scale * q @ k.T, -np.inf)
P = np.exp(S - S.max(axis=1, keepdims=True))
P /= P.sum(axis=1, keepdims=True)
O = P @ v
dP = do @ v.T
dS = P * (dP - (do * O).sum(axis=1, keepdims=True))  # D = rowsum(dO o O)
exact = {"dQ": scale * dS @ k, "dK": scale * dS.T @ q, "dV": P.T @ do}
ok = True
for name, want in exact.items():
    err = np.abs(g[name][0, 0] - want).max()
    ok = ok and err < 1e-2 * max(1.0, np.abs(want).max())
    print(f"max |{name} - {name}_exact| = {err:.3g}")
RESULTS["trace"] = dict(problem=f"B=1 H=1 N={TRACE_N} Nk={TRACE_N} d={TRACE_D} {dtype} {'causal' if causal else 'non-causal'}",
                        gradients_equal_exact=bool(ok)))PY"});

        L.step({"kept", "What the forward keeps for the backward",
                R"(Besides its output O, each algorithm's forward leaves something in HBM for
the backward to read:

- standard attention: the probabilities P, N×N per head, in the storage
  dtype: the backward reads it for dV = Pᵀ·dO and for dS;
- FlashAttention-1: its running max m and sum ℓ, two fp32 numbers per row;
- FlashAttention-2: the logsumexp LSE = m + log ℓ, one fp32 number per row.

The table lists the bytes kept over N, for the batch and heads chosen, and
whether standard attention's forward and backward fit in the GPU's memory at
all. Quadratic against linear: this, not speed, is what first made long
sequences trainable.)",
                [&](Ctx& c) {
                    c.out << "B=" << p.batch << " H=" << p.heads << " d=" << p.d << ' ' << dtype_name(p.dtype)
                          << (p.causal ? " causal" : "") << " on " << gpu.name << " (" << b(gpu.hbm_bytes) << ")\n\n";
                    Table t({"N", "standard (P)", "FA1 (m, l)", "FA2 (LSE)", "standard fits?"}, "rrrrl");
                    Json rows = Json::array();
                    for (std::int64_t n = 1024; n <= 32768; n *= 2) {
                        AttentionProblem q = p;
                        q.N = q.Nk = n;
                        const AlgorithmResult& s = sim_cached(algorithm("standard"), PassSelection::fwd_bwd, q, gpu);
                        const AlgorithmResult& f1 = sim_cached(algorithm("fa1"), PassSelection::fwd_bwd, q, gpu);
                        const AlgorithmResult& f2 = sim_cached(algorithm("fa2"), PassSelection::fwd_bwd, q, gpu);
                        t.row({grouped(n), b(s.held_between_passes_bytes), b(f1.held_between_passes_bytes),
                               b(f2.held_between_passes_bytes), s.fits_in_hbm ? "yes" : "no (" + b(s.global_bytes) + ")"});
                        rows.push_back({{"N", n},
                                        {"standard_bytes", s.held_between_passes_bytes},
                                        {"fa1_bytes", f1.held_between_passes_bytes},
                                        {"fa2_bytes", f2.held_between_passes_bytes},
                                        {"standard_fits", s.fits_in_hbm}});
                    }
                    t.print(c.out);
                    c.out << '\n';
                    print_para(c.out, "Doubling N multiplies standard attention's P by 4 and FlashAttention's statistics by 2.");
                    c.results["kept"] = rows;
                },
                "",
                R"PY(sizes = [1024, 2048, 4096, 8192, 16384, 32768]
sweep = fasim.sweep(["standard", "fa1", "fa2"], values=sizes, pass_="fwd+bwd", gpu=GPU,
                    **{k: v for k, v in PROBLEM.items() if k != "N"})
g = fasim.gpu(GPU)
print(f"B={PROBLEM['batch']} H={PROBLEM['heads']} d={PROBLEM['d']} {PROBLEM['dtype']}{' causal' if PROBLEM['causal'] else ''} "
      f"on {g['name']} ({quantity(g['hbm_bytes'], 'B')})\n")
rows = []
for N, run in zip(sizes, sweep["runs"]):
    mem = {a["algo"]: a["memory"] for a in run["algorithms"]}  # what each forward keeps for the backward, and the footprint
    rows.append(dict(N=N, standard_bytes=mem["standard"]["held_between_passes_bytes"],
                     fa1_bytes=mem["fa1"]["held_between_passes_bytes"], fa2_bytes=mem["fa2"]["held_between_passes_bytes"],
                     standard_fits=mem["standard"]["fits_in_hbm"]))
    rows[-1]["footprint"] = mem["standard"]["global_bytes"]
table(["N", "standard (P)", "FA1 (m, l)", "FA2 (LSE)", "standard fits?"],
      [[x["N"], quantity(x["standard_bytes"], "B"), quantity(x["fa1_bytes"], "B"), quantity(x["fa2_bytes"], "B"),
        "yes" if x["standard_fits"] else f"no ({quantity(x.pop('footprint'), 'B')})"] for x in rows])
for x in rows:
    x.pop("footprint", None)
print("\nDoubling N multiplies standard attention's P by 4 and FlashAttention's statistics by 2.")
RESULTS["kept"] = dict(kept=rows))PY"});

        L.step({"traffic", "HBM traffic of a training step",
                R"(Forward and backward together, per tensor. Standard attention writes S and P
in the forward, reads P back in the backward, and sends dP and dS through
HBM as well: each N×N matrix crosses HBM several times. FlashAttention-2
reads Q, K, V, O, dO and the statistics, re-reads Q and dO once per K/V tile
(K/V outer loop) and sends dQ through an fp32 buffer; nothing N×N ever
leaves the chip. The simulator's counts are checked against each program's
closed form.)",
                [&](Ctx& c) {
                    const AlgorithmResult& s = sim_cached(algorithm("standard"), PassSelection::fwd_bwd, p, gpu);
                    const AlgorithmResult& f = sim_cached(algorithm("fa2"), PassSelection::fwd_bwd, p, gpu);
                    print_para(c.out, p.describe() + "; FA2 tiles " + std::to_string(f.forward_tiles->Br) + " x " +
                                          std::to_string(f.forward_tiles->Bc) + " forward, " + std::to_string(f.tiles.Br) +
                                          " x " + std::to_string(f.tiles.Bc) + " backward");
                    c.out << '\n';
                    Table t({"HBM bytes", "standard read", "written", "FA2 read", "written"}, "lrrrr");
                    for (const std::string& n : tensor_names({&s.hbm, &f.hbm})) {
                        if (both_of(s.hbm, n) + both_of(f.hbm, n) == 0) continue;
                        t.row({n, b(read_of(s.hbm, n)), b(write_of(s.hbm, n)), b(read_of(f.hbm, n)), b(write_of(f.hbm, n))});
                    }
                    t.row({"all", b(s.hbm.read_bytes()), b(s.hbm.write_bytes()), b(f.hbm.read_bytes()), b(f.hbm.write_bytes())});
                    t.print(c.out);
                    const ClosedForm::Bytes cs = closed_form_hbm(s), cf = closed_form_hbm(f);
                    const bool agree = cs.read == s.hbm.read_bytes() && cs.write == s.hbm.write_bytes() &&
                                       cf.read == f.hbm.read_bytes() && cf.write == f.hbm.write_bytes();
                    c.out << '\n';
                    print_para(c.out, "Standard attention moves " + units::ratio(ratio(s.hbm.total(), f.hbm.total())) +
                                          " the bytes of FlashAttention-2 (the closed forms " +
                                          (agree ? "agree to the byte" : "DIFFER") + "). After the L2, DRAM sees " +
                                          b(s.dram.total()) + " and " + b(f.dram.total()) + ".");
                    c.results["standard_hbm_bytes"] = s.hbm.total();
                    c.results["fa2_hbm_bytes"] = f.hbm.total();
                    c.results["hbm_ratio"] = ratio(s.hbm.total(), f.hbm.total());
                    c.results["closed_forms_agree"] = agree;
                    c.results["standard_dram_bytes"] = s.dram.total();
                    c.results["fa2_dram_bytes"] = f.dram.total();
                },
                "",
                R"PY(s = fasim.simulate("standard", pass_="fwd+bwd", gpu=GPU, **PROBLEM)
f = fasim.simulate("fa2", pass_="fwd+bwd", gpu=GPU, **PROBLEM)
print(f"{describe(f['problem'])}; FA2 tiles {f['forward_tiles']['Br']} x {f['forward_tiles']['Bc']} forward, "
      f"{f['tiles']['Br']} x {f['tiles']['Bc']} backward\n")
def rw(r, name):
    t = r["hbm"]["by_tensor"].get(name, {"read_bytes": 0, "write_bytes": 0})
    return [quantity(t["read_bytes"], "B"), quantity(t["write_bytes"], "B")]
names = list(dict.fromkeys([*s["hbm"]["by_tensor"], *f["hbm"]["by_tensor"]]))
table(["HBM bytes", "standard read", "written", "FA2 read", "written"],
      [[n, *rw(s, n), *rw(f, n)] for n in names] +
      [["all", *(quantity(r["hbm"][k], "B") for r in (s, f) for k in ("read_bytes", "write_bytes"))]])
both = lambda level: level["read_bytes"] + level["write_bytes"]
print(f"\nStandard attention moves {both(s['hbm']) / both(f['hbm']):.3g}x the bytes of FlashAttention-2. "
      f"After the L2, DRAM sees {quantity(both(s['dram']), 'B')} and {quantity(both(f['dram']), 'B')}.")
RESULTS["traffic"] = dict(standard_hbm_bytes=both(s["hbm"]), fa2_hbm_bytes=both(f["hbm"]), hbm_ratio=both(s["hbm"]) / both(f["hbm"]),
                          standard_dram_bytes=both(s["dram"]), fa2_dram_bytes=both(f["dram"])))PY"});

        L.step({"recompute", "Recomputation: more FLOPs, fewer bytes, less time",
                R"(Not storing P has a price: the backward computes S = Q·Kᵀ again. The papers
count 4·N·Nk·d matmul FLOPs per head forward (Q·Kᵀ and P·V) and 10·N·Nk·d
backward (S again, dV, dP, dQ, dK): 2.5 times the forward. Standard attention
does 4 + 8. The trade pays because the bytes saved cost far more time than
the FLOPs added: arithmetic intensity (FLOPs per HBM byte) rises past the
GPU's ridge point, where the tensor cores, not HBM, set the time.)",
                [&](Ctx& c) {
                    const AlgorithmResult& s = sim_cached(algorithm("standard"), PassSelection::fwd_bwd, p, gpu);
                    const AlgorithmResult& f = sim_cached(algorithm("fa2"), PassSelection::fwd_bwd, p, gpu);
                    const double ridge = gpu.matmul_flops(p.dtype) / gpu.effective_hbm_bandwidth();
                    print_para(c.out, p.describe() + ", forward + backward on " + gpu.name);
                    c.out << '\n';
                    Table t({"", "standard", "FA2", "standard / FA2"}, "lrrr");
                    t.row({"matmul FLOPs", units::flops(static_cast<double>(s.matmul_flops)), units::flops(static_cast<double>(f.matmul_flops)),
                           units::ratio(ratio(s.matmul_flops, f.matmul_flops))});
                    t.row({"  recomputed", units::flops(static_cast<double>(s.recomputed_matmul_flops)),
                           units::flops(static_cast<double>(f.recomputed_matmul_flops)), ""});
                    t.row({"HBM bytes", b(s.hbm.total()), b(f.hbm.total()), units::ratio(ratio(s.hbm.total(), f.hbm.total()))});
                    t.row({"FLOPs per HBM byte", num(s.arithmetic_intensity(), 3), num(f.arithmetic_intensity(), 3), ""});
                    t.row({"predicted time", units::seconds(s.time_s), units::seconds(f.time_s), units::ratio(s.time_s / f.time_s)});
                    t.print(c.out);
                    c.out << '\n';
                    print_para(c.out, "Ridge point of " + gpu.name + " at " + dtype_name(p.dtype) + ": " + num(ridge, 3) +
                                          " FLOPs per byte. FlashAttention-2 does " +
                                          units::ratio(ratio(f.matmul_flops, s.matmul_flops)) + " the matmul FLOPs of standard "
                                          "attention and is predicted " + units::ratio(s.time_s / f.time_s) + " faster. Its "
                                          "slowest kernel: " + f.longest_kernel().name + ", " + f.longest_kernel().bound + ".");
                    c.results["standard_matmul_flops"] = s.matmul_flops;
                    c.results["fa2_matmul_flops"] = f.matmul_flops;
                    c.results["fa2_recomputed_matmul_flops"] = f.recomputed_matmul_flops;
                    c.results["standard_intensity"] = s.arithmetic_intensity();
                    c.results["fa2_intensity"] = f.arithmetic_intensity();
                    c.results["ridge_point"] = ridge;
                    c.results["standard_predicted_s"] = s.time_s;
                    c.results["fa2_predicted_s"] = f.time_s;
                    c.results["speedup"] = s.time_s / f.time_s;
                },
                "",
                R"PY(s = fasim.simulate("standard", pass_="fwd+bwd", gpu=GPU, **PROBLEM)
f = fasim.simulate("fa2", pass_="fwd+bwd", gpu=GPU, **PROBLEM)
g = f["gpu"]
ridge = g.get(f"tensor_{PROBLEM['dtype']}_flops_per_s", g["fp32_flops_per_s"]) / g["hbm_bandwidth_bytes_per_s"]
both = lambda level: level["read_bytes"] + level["write_bytes"]
print(f"{describe(f['problem'])}, forward + backward on {g['name']}\n")
ts, tf = s["time"]["predicted_s"], f["time"]["predicted_s"]
table(["", "standard", "FA2", "standard / FA2"], [
    ["matmul FLOPs", quantity(s["flops"]["matmul"]), quantity(f["flops"]["matmul"]), f"{s['flops']['matmul'] / f['flops']['matmul']:.3g}x"],
    ["  recomputed", quantity(s["flops"]["recomputed_matmul"]), quantity(f["flops"]["recomputed_matmul"]), ""],
    ["HBM bytes", quantity(both(s["hbm"]), "B"), quantity(both(f["hbm"]), "B"), f"{both(s['hbm']) / both(f['hbm']):.3g}x"],
    ["FLOPs per HBM byte", f"{s['arithmetic_intensity']:.3g}", f"{f['arithmetic_intensity']:.3g}", ""],
    ["predicted time", quantity(ts, "s"), quantity(tf, "s"), f"{ts / tf:.3g}x"],
])
slowest = max(f["kernels"], key=lambda k: k["time"]["predicted_s"])
print(f"\nRidge point of {g['name']} at {PROBLEM['dtype']}: {ridge:.3g} FLOPs per byte. FlashAttention-2 does "
      f"{f['flops']['matmul'] / s['flops']['matmul']:.3g}x the matmul FLOPs of standard attention and is predicted "
      f"{ts / tf:.3g}x faster. Its slowest kernel: {slowest['name']}, {slowest['time']['bound']}.")
RESULTS["recompute"] = dict(standard_matmul_flops=s["flops"]["matmul"], fa2_matmul_flops=f["flops"]["matmul"],
                            fa2_recomputed_matmul_flops=f["flops"]["recomputed_matmul"],
                            standard_intensity=s["arithmetic_intensity"], fa2_intensity=f["arithmetic_intensity"],
                            ridge_point=ridge, standard_predicted_s=ts, fa2_predicted_s=tf, speedup=ts / tf)

import matplotlib.pyplot as plt
sizes = [512, 1024, 2048, 4096, 8192, 16384]
sweep = fasim.sweep(["standard", "fa1", "fa2"], values=sizes, pass_="fwd+bwd", gpu=GPU,
                    **{k: v for k, v in PROBLEM.items() if k != "N"})
for algo in ("standard", "fa1", "fa2"):
    t = [next(a for a in run["algorithms"] if a["algo"] == algo)["time"]["predicted_s"] for run in sweep["runs"]]
    plt.loglog(sizes, [x * 1e3 for x in t], "o-", label=algo + " forward + backward")
plt.xlabel("N (sequence length)")
plt.ylabel("predicted time (ms)")
plt.title(f"B={PROBLEM['batch']}, H={PROBLEM['heads']}, d={PROBLEM['d']}, {PROBLEM['dtype']} on {g['name']}")
plt.legend()
plt.show())PY"});

        L.step({"dq", "Where dQ goes: FA1's round trips, FA2's atomic adds",
                R"(dK_j and dV_j are sums over the Q tiles, dQ_i a sum over the K/V tiles: one of
the two must be gathered from many places. Both papers put K/V in the outer
loop, so dK_j and dV_j are finished on chip and written once, and dQ is the
one that travels.

- FlashAttention-1 (the paper's Algorithm 4) runs the whole loop nest in one
  block per head and, on every outer iteration, reads dQ_i from HBM, adds
  its part and writes it back: Tc round trips of N×d fp32 numbers.
- FlashAttention-2 gives each K/V tile its own block, so a head's Tc blocks
  run at the same time. They cannot own dQ_i, so each adds its part with
  fp32 atomic adds, which the L2 performs: nothing is read back, and the
  buffer is converted to the storage dtype by a last small kernel.)",
                [&](Ctx& c) {
                    const AlgorithmResult& f1 = sim_cached(algorithm("fa1"), PassSelection::bwd, p, gpu);
                    const AlgorithmResult& f2 = sim_cached(algorithm("fa2"), PassSelection::bwd, p, gpu);
                    const KernelTiming &k1 = timing(f1, "fa1_backward"), &k2 = timing(f2, "fa2_backward");
                    print_para(c.out, p.describe() + ", backward only; FA1 tiles " + std::to_string(f1.tiles.Br) + " x " +
                                          std::to_string(f1.tiles.Bc) + ", FA2 tiles " + std::to_string(f2.tiles.Br) + " x " +
                                          std::to_string(f2.tiles.Bc));
                    c.out << '\n';
                    Table t({"", "FA1 backward", "FA2 backward"}, "lrr");
                    t.row({"blocks of the main kernel", grouped(k1.grid), grouped(k2.grid)});
                    t.row({"dQ_acc read from HBM", b(read_of(f1.hbm, "dQ_acc")), b(read_of(f2.hbm, "dQ_acc"))});
                    t.row({"dQ_acc written (FA2: added)", b(write_of(f1.hbm, "dQ_acc")), b(write_of(f2.hbm, "dQ_acc"))});
                    t.row({"dQ_acc at DRAM (after L2)", b(both_of(f1.dram, "dQ_acc")), b(both_of(f2.dram, "dQ_acc"))});
                    t.row({"dK, dV written", b(write_of(f1.hbm, "dK") + write_of(f1.hbm, "dV")),
                           b(write_of(f2.hbm, "dK") + write_of(f2.hbm, "dV"))});
                    t.row({"predicted time", units::seconds(f1.time_s), units::seconds(f2.time_s)});
                    t.print(c.out);
                    c.out << '\n';
                    print_para(c.out, "FA2's backward is predicted " + units::ratio(f1.time_s / f2.time_s) + " faster than FA1's. "
                                      "FA1 with " + grouped(k1.grid) + " blocks leaves most of " + gpu.name + "'s " +
                                      std::to_string(gpu.sm_count) + " SMs idle.");
                    c.results["fa1_grid"] = k1.grid;
                    c.results["fa2_grid"] = k2.grid;
                    c.results["fa1_dq_acc_hbm_read"] = read_of(f1.hbm, "dQ_acc");
                    c.results["fa1_dq_acc_hbm_write"] = write_of(f1.hbm, "dQ_acc");
                    c.results["fa2_dq_acc_hbm_read"] = read_of(f2.hbm, "dQ_acc");
                    c.results["fa2_dq_acc_hbm_write"] = write_of(f2.hbm, "dQ_acc");
                    c.results["fa1_predicted_s"] = f1.time_s;
                    c.results["fa2_predicted_s"] = f2.time_s;
                    c.results["atomically_added"] = gradient_added_atomically(f2);
                },
                "",
                R"PY(f1 = fasim.simulate("fa1", pass_="bwd", gpu=GPU, **PROBLEM)
f2 = fasim.simulate("fa2", pass_="bwd", gpu=GPU, **PROBLEM)
k1 = next(k for k in f1["kernels"] if k["name"] == "fa1_backward")
k2 = next(k for k in f2["kernels"] if k["name"] == "fa2_backward")
def get(r, level, name, key):
    return r[level]["by_tensor"].get(name, {}).get(key, 0)
print(f"{describe(f2['problem'])}, backward only; FA1 tiles {f1['tiles']['Br']} x {f1['tiles']['Bc']}, "
      f"FA2 tiles {f2['tiles']['Br']} x {f2['tiles']['Bc']}\n")
table(["", "FA1 backward", "FA2 backward"], [
    ["blocks of the main kernel", f"{k1['grid']:,}", f"{k2['grid']:,}"],
    ["dQ_acc read from HBM", *(quantity(get(r, "hbm", "dQ_acc", "read_bytes"), "B") for r in (f1, f2))],
    ["dQ_acc written (FA2: added)", *(quantity(get(r, "hbm", "dQ_acc", "write_bytes"), "B") for r in (f1, f2))],
    ["dQ_acc at DRAM (after L2)", *(quantity(get(r, "dram", "dQ_acc", "read_bytes") + get(r, "dram", "dQ_acc", "write_bytes"), "B")
                                    for r in (f1, f2))],
    ["dK, dV written", *(quantity(get(r, "hbm", "dK", "write_bytes") + get(r, "hbm", "dV", "write_bytes"), "B") for r in (f1, f2))],
    ["predicted time", quantity(f1["time"]["predicted_s"], "s"), quantity(f2["time"]["predicted_s"], "s")],
])
# The gradient the FA2 backward kernel does not store itself: it adds it atomically to an fp32 buffer.
atomic = next(n for n in ("dQ", "dK", "dV") if k2["hbm"]["by_tensor"].get(n, {}).get("write_bytes", 0) == 0)
print(f"\nFA2's backward is predicted {f1['time']['predicted_s'] / f2['time']['predicted_s']:.3g}x faster than FA1's. "
      f"FA1 with {k1['grid']:,} blocks leaves most of {f2['gpu']['name']}'s {f2['gpu']['sm_count']} SMs idle. "
      f"FA2 adds {atomic} atomically.")
RESULTS["dq"] = dict(fa1_grid=k1["grid"], fa2_grid=k2["grid"],
                     fa1_dq_acc_hbm_read=get(f1, "hbm", "dQ_acc", "read_bytes"), fa1_dq_acc_hbm_write=get(f1, "hbm", "dQ_acc", "write_bytes"),
                     fa2_dq_acc_hbm_read=get(f2, "hbm", "dQ_acc", "read_bytes"), fa2_dq_acc_hbm_write=get(f2, "hbm", "dQ_acc", "write_bytes"),
                     fa1_predicted_s=f1["time"]["predicted_s"], fa2_predicted_s=f2["time"]["predicted_s"], atomically_added=atomic))PY"});

        L.step({"gqa", "Grouped K/V heads: one K/V head, G gradients to add",
                R"(With grouped-query attention (Llama 2 70B, Llama 3, Mistral) the G = H/KV
query heads of a group share one K/V head. The forward simply reads the
shared K and V. The backward must add: K's gradient is the sum of what each
query head that read it contributes, dK = sum over the group of dS_hᵀ·Q_h,
and likewise dV.

flash-attention 2 does it in two steps: each query head's blocks write their
dK and dV parts into per-query-head buffers (dk_expanded, dv_expanded), and
a reduction adds every group's G parts and writes dK and dV once per K/V
head. That costs 2·Nk·d·e bytes per query head written, the same read back,
and a small kernel; dQ does not change. The table shows FA2's backward as
K/V heads are shared by more query heads (G query heads each): the parts its
main kernel writes, what the sum reads and stores, the sum's time.)",
                [&](Ctx& c) {
                    c.out << p.describe() << ", FA2 backward on " << gpu.name << "\n\n";
                    Table t({"K/V heads", "G", "parts written", "parts read", "dK+dV stored", "sum", "backward"}, "rrrrrrr");
                    Json rows = Json::array();
                    std::vector<std::int64_t> kv_counts{p.heads};  // no grouping, groups of 4, one K/V head (MQA)
                    if (p.heads / 4 > 1 && p.heads % (p.heads / 4) == 0) kv_counts.push_back(p.heads / 4);
                    if (p.heads > 1) kv_counts.push_back(1);
                    for (const std::int64_t kv : kv_counts) {
                        AttentionProblem q = p;
                        q.kv_heads = kv;
                        const AlgorithmResult& r = sim_cached(algorithm("fa2"), PassSelection::bwd, q, gpu);
                        const bool is_grouped = q.grouped();
                        const char* parts = is_grouped ? "dK_expanded" : "dK";
                        const char* parts_v = is_grouped ? "dV_expanded" : "dV";
                        const Count written = write_of(kernel(r, "fa2_backward").hbm, parts) + write_of(kernel(r, "fa2_backward").hbm, parts_v);
                        const Count read = is_grouped ? read_of(r.hbm, "dK_expanded") + read_of(r.hbm, "dV_expanded") : Count(0);
                        const Count stored = write_of(r.hbm, "dK") + write_of(r.hbm, "dV");
                        const double sum_s = is_grouped ? timing(r, "fa2_bwd_sum_groups").total_s : 0.0;
                        t.row({grouped(kv), grouped(p.heads / kv), b(written), b(read), b(stored),
                               is_grouped ? units::seconds(sum_s) : "-", units::seconds(r.time_s)});
                        rows.push_back({{"kv_heads", kv},
                                        {"parts_written_bytes", written},
                                        {"parts_read_bytes", read},
                                        {"stored_bytes", stored},
                                        {"sum_kernel_s", sum_s},
                                        {"predicted_s", r.time_s}});
                    }
                    t.print(c.out);
                    c.out << '\n';
                    print_para(c.out, "The parts are written whatever the grouping; the sum reads them once more and stores "
                                      "dK, dV G times smaller. dQ, the rest of the backward and its time barely move.");
                    c.results["gqa"] = rows;
                },
                "",
                R"PY(rows = []
table_rows = []
H = PROBLEM["heads"]
kv_counts = [H] + ([H // 4] if H // 4 > 1 and H % (H // 4) == 0 else []) + ([1] if H > 1 else [])
for kv in kv_counts:  # no grouping, groups of 4, one K/V head (MQA)
    r = fasim.simulate("fa2", pass_="bwd", gpu=GPU, **{**PROBLEM, "kv_heads": kv})
    grouped = kv != PROBLEM["heads"]
    main = next(k for k in r["kernels"] if k["name"] == "fa2_backward")
    def get(tensors, name, key):
        return tensors["by_tensor"].get(name, {}).get(key, 0)
    parts = ("dK_expanded", "dV_expanded") if grouped else ("dK", "dV")
    written = sum(get(main["hbm"], n, "write_bytes") for n in parts)
    read = sum(get(r["hbm"], n, "read_bytes") for n in ("dK_expanded", "dV_expanded")) if grouped else 0
    stored = sum(get(r["hbm"], n, "write_bytes") for n in ("dK", "dV"))
    sum_s = next(k for k in r["kernels"] if k["name"] == "fa2_bwd_sum_groups")["time"]["predicted_s"] if grouped else 0.0
    rows.append(dict(kv_heads=kv, parts_written_bytes=written, parts_read_bytes=read, stored_bytes=stored,
                     sum_kernel_s=sum_s, predicted_s=r["time"]["predicted_s"]))
    table_rows.append([f"{kv:,}", f"{PROBLEM['heads'] // kv:,}", quantity(written, "B"), quantity(read, "B"),
                       quantity(stored, "B"), quantity(sum_s, "s") if grouped else "-", quantity(r["time"]["predicted_s"], "s")])
print(f"{describe(r['problem'])}, FA2 backward on {r['gpu']['name']}\n")
table(["K/V heads", "G", "parts written", "parts read", "dK+dV stored", "sum", "backward"], table_rows)
print("\nThe parts are written whatever the grouping; the sum reads them once more and stores dK, dV G times smaller. "
      "dQ, the rest of the backward and its time barely move.")
RESULTS["gqa"] = dict(gqa=rows))PY"});

        L.exercise({"kept_by_standard",
                    "Standard attention, B=1, H=16, N=8192, fp16: how many bytes does the forward keep in HBM for "
                    "the backward, besides O?",
                    Exercise::Kind::integer, 0, {}, "bytes",
                    [gpu] {
                        return static_cast<double>(
                            simulate(algorithm("standard"), PassSelection::bwd, make_problem(1, 16, 8192, 64), gpu)
                                .held_between_passes_bytes);
                    }, {},
                    "P is N x N per head in the storage dtype (2 bytes for fp16); step 2 prints it for the default "
                    "sizes."});
        L.exercise({"training_bytes_ratio",
                    "B=1, H=16, N=4096, d=64, fp16, forward + backward on " + gpu.name + " with each algorithm's "
                    "default tiles: standard attention's HBM bytes divided by FlashAttention-2's?",
                    Exercise::Kind::number, 0.02, {}, "ratio standard/FA2",
                    [gpu] {
                        const AttentionProblem q = make_problem(1, 16, 4096, 64);
                        return ratio(simulate(algorithm("standard"), PassSelection::fwd_bwd, q, gpu).hbm.total(),
                                     simulate(algorithm("fa2"), PassSelection::fwd_bwd, q, gpu).hbm.total());
                    }, {},
                    "step 3 prints it for the default sizes (the last line of its table)."});
        L.exercise({"fa1_dq_round_trips",
                    "FlashAttention-1's backward on one head of N=1024, d=64, fp16 with Br = Bc = 64: how many "
                    "times does it read the whole fp32 dQ buffer (dQ_acc) from HBM?",
                    Exercise::Kind::integer, 0, {}, "times",
                    [gpu] {
                        const AttentionProblem q = make_problem(1, 1, 1024, 64);
                        const AlgorithmResult r = simulate(algorithm("fa1"), PassSelection::bwd, q, gpu, tiles(64, 64));
                        return static_cast<double>(read_of(r.hbm, "dQ_acc")) / static_cast<double>(q.N * q.d * 4);
                    }, {},
                    "once per outer iteration over the K/V tiles: Tc = ⌈N/Bc⌉ of them."});
    });
}
