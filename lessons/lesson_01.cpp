// Lesson 01: the GPU memory hierarchy and the roofline model.
#include <cmath>
#include <iostream>

#include "common/lesson.hpp"
#include "common/sim_helpers.hpp"
#include "common/text.hpp"
#include "report/units.hpp"

using namespace fasim;
using namespace fasim::lessons;

namespace {

std::string cap(double b) { return units::capacity(b); }
std::string bw(double b) { return units::rate(b, "B/s"); }

}  // namespace

int FASIM_LESSON_ENTRY(int argc, char** argv) {
    Lesson L(1, "memory_hierarchy_and_roofline", "The memory hierarchy and the roofline",
             "A GPU computes far faster than it can fetch data from its main memory. Whether a kernel is "
             "fast therefore depends less on how many FLOPs it does than on how many bytes it moves, and "
             "between which levels of memory. This lesson reads the sizes and bandwidths of the chosen "
             "GPU's memory levels from its preset, introduces arithmetic intensity and the roofline "
             "model, and uses them to see why standard attention is limited by memory.");
    L.problem_options(make_problem(1, 16, 4096, 64), kN | kD | kHeads | kBatch | kDtype);

    return L.run(argc, argv, [&](Lesson&) {
        const GpuSpec& gpu = L.gpu();
        const AttentionProblem& p = L.problem();

        L.step({"hierarchy", "Small and fast, large and slow",
                R"(Data lives in a hierarchy. HBM (the GPU's DRAM, "global memory") holds
everything, tens of gigabytes, but every byte a kernel uses must travel from
it to the SMs. L2 is a cache shared by all SMs. Each SM has its own on-chip
SRAM, split between L1 cache and shared memory that a thread block manages
itself, and a register file. The closer to the arithmetic units, the smaller
and the faster. Here are the chosen GPU's numbers, as its preset gives them
(fa-sim --list-gpus names the source of each).)",
                [&](Ctx& c) {
                    const double sms = gpu.sm_count;
                    const double smem_total = static_cast<double>(gpu.smem_per_sm_bytes) * sms;
                    const double smem_bw = gpu.smem_bandwidth_per_sm * sms;
                    const double regs_total = static_cast<double>(gpu.registers_per_sm) * 4.0 * sms;
                    c.out << gpu.name << ": " << gpu.sm_count << " SMs\n\n";
                    Table t({"level", "size", "bandwidth", "where"}, "lrrl");
                    t.row({"registers", cap(regs_total), "-", cap(gpu.registers_per_sm * 4.0) + " per SM"});
                    t.row({"shared memory (SRAM)", cap(smem_total), bw(smem_bw), cap(static_cast<double>(gpu.smem_per_sm_bytes)) + " per SM"});
                    t.row({"L2 cache", cap(static_cast<double>(gpu.l2_bytes)), bw(gpu.l2_bandwidth), "shared by all SMs"});
                    t.row({"HBM (DRAM)", cap(static_cast<double>(gpu.hbm_bytes)), bw(gpu.effective_hbm_bandwidth()), "off chip"});
                    t.print(c.out);
                    c.out << '\n';
                    print_para(c.out, "All the shared memory together is " + units::ratio(static_cast<double>(gpu.hbm_bytes) / smem_total) +
                                          " smaller than HBM, and " + units::ratio(smem_bw / gpu.effective_hbm_bandwidth()) +
                                          " faster. (Shared-memory bandwidth: " + bw(gpu.smem_bandwidth_per_sm) +
                                          " per SM times the SM count.)");
                    c.results["sm_count"] = gpu.sm_count;
                    c.results["smem_total_bytes"] = smem_total;
                    c.results["smem_bandwidth"] = smem_bw;
                    c.results["l2_bytes"] = gpu.l2_bytes;
                    c.results["l2_bandwidth"] = gpu.l2_bandwidth;
                    c.results["hbm_bytes"] = gpu.hbm_bytes;
                    c.results["hbm_bandwidth"] = gpu.effective_hbm_bandwidth();
                    c.results["hbm_to_smem_capacity"] = static_cast<double>(gpu.hbm_bytes) / smem_total;
                    c.results["smem_to_hbm_bandwidth"] = smem_bw / gpu.effective_hbm_bandwidth();
                },
                "",
                R"PY(g = fasim.gpu(GPU)  # the GPU file: sizes, rates, and where each number comes from (g["sources"])
rates = fasim.simulate("fa2", gpu=GPU, **PROBLEM)["gpu"]  # the rates the simulator uses (measured where known)
sms = g["sm_count"]
smem_total = g["smem_per_sm_bytes"] * sms
smem_bw = g["smem_bandwidth_per_sm_bytes_per_s"] * sms
hbm_bw = rates["hbm_bandwidth_bytes_per_s"]
print(g["name"] + ":", sms, "SMs\n")
table(["level", "size", "bandwidth", "where"], [
    ["registers", quantity(g["registers_per_sm"] * 4 * sms, "B"), "-", quantity(g["registers_per_sm"] * 4, "B") + " per SM"],
    ["shared memory (SRAM)", quantity(smem_total, "B"), quantity(smem_bw, "B/s"), quantity(g["smem_per_sm_bytes"], "B") + " per SM"],
    ["L2 cache", quantity(g["l2_bytes"], "B"), quantity(g["l2_bandwidth_bytes_per_s"], "B/s"), "shared by all SMs"],
    ["HBM (DRAM)", quantity(g["hbm_bytes"], "B"), quantity(hbm_bw, "B/s"), "off chip"],
])
print(f"\nAll the shared memory together is {g['hbm_bytes'] / smem_total:.4g}x smaller than HBM, "
      f"and {smem_bw / hbm_bw:.3g}x faster.")
RESULTS["hierarchy"] = dict(sm_count=sms, smem_total_bytes=smem_total, smem_bandwidth=smem_bw, l2_bytes=g["l2_bytes"],
                            l2_bandwidth=g["l2_bandwidth_bytes_per_s"], hbm_bytes=g["hbm_bytes"], hbm_bandwidth=hbm_bw,
                            hbm_to_smem_capacity=g["hbm_bytes"] / smem_total, smem_to_hbm_bandwidth=smem_bw / hbm_bw))PY"});

        L.step({"roofline", "The roofline: compute-bound or memory-bound",
                R"(A kernel that does F FLOPs and moves B bytes through HBM needs at least

    time ≥ max(F / peak FLOP rate, B / HBM bandwidth)

Its arithmetic intensity I = F / B (FLOPs per byte) decides which term wins.
The ridge point is the intensity at which both are equal: peak rate divided
by bandwidth. Below it a kernel is memory-bound (faster memory would help,
more arithmetic units would not); above it, compute-bound. The attainable
rate is min(peak, I × bandwidth): plotted on log axes, a slanted roof that
meets a flat one at the ridge. A GPU has several peaks: tensor cores for
matrix products in fp16 or bf16, and the ordinary fp32 units for everything
else (exponentials, maxima, sums).)",
                [&](Ctx& c) {
                    const double mm = gpu.matmul_flops(p.dtype), fp32 = gpu.effective_fp32_flops(), hbm = gpu.effective_hbm_bandwidth();
                    Table t({"peak", "FLOP/s", "ridge point (FLOP/byte)"}, "lrr");
                    t.row({std::string("matrix products, ") + dtype_name(p.dtype), units::rate(mm, "FLOP/s"), fixed(mm / hbm, 1)});
                    t.row({"fp32 arithmetic", units::rate(fp32, "FLOP/s"), fixed(fp32 / hbm, 1)});
                    c.out << gpu.name << ", HBM bandwidth " << bw(hbm) << "\n\n";
                    t.print(c.out);
                    c.results["matmul_peak"] = mm;
                    c.results["fp32_peak"] = fp32;
                    c.results["ridge_matmul"] = mm / hbm;
                    c.results["ridge_fp32"] = fp32 / hbm;
                },
                "",
                R"PY(rates = fasim.simulate("fa2", gpu=GPU, **PROBLEM)["gpu"]
dtype = PROBLEM["dtype"]
mm = rates.get(f"tensor_{dtype}_flops_per_s", rates["fp32_flops_per_s"])  # fp32 products run on the CUDA cores
fp32, hbm = rates["fp32_flops_per_s"], rates["hbm_bandwidth_bytes_per_s"]
print(rates["name"] + ", HBM bandwidth " + quantity(hbm, "B/s") + "\n")
table(["peak", "FLOP/s", "ridge point (FLOP/byte)"], [
    ["matrix products, " + dtype, quantity(mm, "FLOP/s"), f"{mm / hbm:.1f}"],
    ["fp32 arithmetic", quantity(fp32, "FLOP/s"), f"{fp32 / hbm:.1f}"],
])
RESULTS["roofline"] = dict(matmul_peak=mm, fp32_peak=fp32, ridge_matmul=mm / hbm, ridge_fp32=fp32 / hbm))PY"});

        L.step({"intensity", "Arithmetic intensity of three kernels",
                R"(Three kernels, with intensities from closed forms (each input read once,
each output written once, e bytes per element):

- an elementwise exponential y = exp(x): 1 FLOP per element, 2e bytes;
- a square matrix product C = A·B of n×n matrices: 2n³ FLOPs, 3n²·e bytes,
  so the intensity 2n/3e grows with n;
- attention, whose bytes and FLOPs the simulator counts (next step).)",
                [&](Ctx& c) {
                    const double mm = gpu.matmul_flops(p.dtype), fp32 = gpu.effective_fp32_flops(), hbm = gpu.effective_hbm_bandwidth();
                    const double e = static_cast<double>(p.elem_bytes());
                    Table t({"kernel", "intensity", "attainable", "of peak", "bound"}, "lrrrl");
                    Json rows = Json::array();
                    auto row = [&](const std::string& name, double I, double peak) {
                        const double att = std::min(peak, I * hbm);
                        t.row({name, fixed(I, 2), units::rate(att, "FLOP/s"), percent(att / peak, 0), I < peak / hbm ? "memory" : "compute"});
                        rows.push_back({{"kernel", name}, {"intensity", I}, {"attainable", att}, {"peak", peak}});
                    };
                    row("exp(x)", 1.0 / (2 * e), fp32);
                    for (double n : {64.0, 256.0, 1024.0, 4096.0}) row("matmul n=" + num(n, 5), 2 * n / (3 * e), mm);
                    c.out << dtype_name(p.dtype) << " storage (e = " << p.elem_bytes() << " bytes) on " << gpu.name << ":\n";
                    t.print(c.out);
                    c.results["kernels"] = rows;
                },
                "",
                R"PY(e = {"fp32": 4, "fp16": 2, "bf16": 2}[PROBLEM["dtype"]]  # bytes per element
r = RESULTS["roofline"]
hbm = RESULTS["hierarchy"]["hbm_bandwidth"]
rows = []
def row(name, intensity, peak):  # the roofline: min(peak, intensity x bandwidth)
    attainable = min(peak, intensity * hbm)
    rows.append(dict(kernel=name, intensity=intensity, attainable=attainable, peak=peak))
row("exp(x)", 1 / (2 * e), r["fp32_peak"])  # 1 FLOP per element, read and written once
for n in (64, 256, 1024, 4096):             # C = A·B: 2n³ FLOPs, 3n² elements moved
    row(f"matmul n={n}", 2 * n / (3 * e), r["matmul_peak"])
print(f"{PROBLEM['dtype']} storage (e = {e} bytes) on {fasim.gpu(GPU)['name']}:")
table(["kernel", "intensity", "attainable", "of peak", "bound"],
      [[k["kernel"], f"{k['intensity']:.2f}", quantity(k["attainable"], "FLOP/s"), f"{k['attainable'] / k['peak']:.0%}",
        "memory" if k["intensity"] < k["peak"] / hbm else "compute"] for k in rows])
RESULTS["intensity"] = dict(kernels=rows)

import matplotlib.pyplot as plt
I = np.logspace(-2, 4, 200)
plt.loglog(I, np.minimum(r["matmul_peak"], I * hbm) / 1e12, label="matrix products")
plt.loglog(I, np.minimum(r["fp32_peak"], I * hbm) / 1e12, label="fp32 arithmetic")
for k in rows:
    plt.plot(k["intensity"], k["attainable"] / 1e12, "o")
    plt.annotate(k["kernel"], (k["intensity"], k["attainable"] / 1e12), fontsize=8,
                 xytext=(4, -10), textcoords="offset points")
plt.xlabel("arithmetic intensity (FLOP/byte)")
plt.ylabel("attainable TFLOP/s")
plt.title("Roofline of " + fasim.gpu(GPU)["name"])
plt.legend()
plt.show())PY"});

        L.step({"attention", "Where attention sits on the roofline",
                R"(Standard attention runs three kernels: S = Q·Kᵀ, P = softmax(S) and O = P·V.
The simulator counts the bytes each moves through HBM (every load and store
the kernel issues, re-reads of GEMM operands included: the papers count each
operand once, lesson 03), the bytes that reach DRAM after its L2 model, and
the FLOPs. The softmax does few FLOPs per byte of S and P, and
S and P are N×N. FlashAttention-2 does the same FLOPs in one kernel that
never writes S or P. Which intensity decides? The bytes that really come from
DRAM: re-reads that L2 serves cost L2 bandwidth, not HBM bandwidth. The
simulator's verdict weighs DRAM, L2, shared memory and the arithmetic units.)",
                [&](Ctx& c) {
                    const AlgorithmResult s = sim(algorithm("standard"), p, gpu), f = sim(algorithm("fa2"), p, gpu);
                    c.out << p.describe() << "\n\n";
                    Table t({"kernel", "HBM bytes", "DRAM bytes", "FLOPs", "I (HBM)", "I (DRAM)", "bound"}, "lrrrrrl");
                    Json rows = Json::array();
                    auto add = [&](const AlgorithmResult& r) {
                        for (std::size_t i = 0; i < r.kernels.size(); ++i) {
                            const KernelRecord& k = r.kernels[i];
                            const double flops = static_cast<double>(k.matmul_flops + k.nonmatmul_flops);
                            const double I = flops / static_cast<double>(k.hbm.total());
                            const double Id = flops / static_cast<double>(k.dram.total());
                            const std::string kind = bound_kind(r.timing[i].bound);
                            t.row({k.desc.name, units::bytes(static_cast<double>(k.hbm.total())),
                                   units::bytes(static_cast<double>(k.dram.total())), units::flops(flops), fixed(I, 1), fixed(Id, 1),
                                   kind});
                            rows.push_back({{"kernel", k.desc.name}, {"hbm_bytes", k.hbm.total()}, {"dram_bytes", k.dram.total()},
                                            {"flops", flops}, {"intensity", I}, {"dram_intensity", Id},
                                            {"predicted_s", r.timing[i].total_s}, {"bound", r.timing[i].bound}, {"bound_kind", kind}});
                        }
                    };
                    add(s);
                    add(f);
                    t.print(c.out);
                    c.out << '\n';
                    print_para(c.out, "Ridge point at this dtype: " + fixed(gpu.matmul_flops(p.dtype) / gpu.effective_hbm_bandwidth(), 1) +
                                          " FLOP/byte. Standard attention in total: " + fixed(s.arithmetic_intensity(), 1) +
                                          " FLOP/byte, " + units::seconds(s.time_s) + "; FlashAttention-2: " +
                                          fixed(f.arithmetic_intensity(), 1) + " FLOP/byte, " + units::seconds(f.time_s) +
                                          ". 'bound' sums up the simulator's verdict for each kernel; fa-sim --algo "
                                          "standard prints every term of it.");
                    c.results["kernels"] = rows;
                    c.results["standard_intensity"] = s.arithmetic_intensity();
                    c.results["fa2_intensity"] = f.arithmetic_intensity();
                },
                "",
                R"PY(standard = fasim.simulate("standard", gpu=GPU, **PROBLEM)  # fa-sim --algo standard --json, as a dict
fa2 = fasim.simulate("fa2", gpu=GPU, **PROBLEM)
p = standard["problem"]
print(f"B={p['batch']} H={p['heads']} N={p['N']} d={p['d']} {p['dtype']}\n")
rows = []
for r in (standard, fa2):
    for k in r["kernels"]:
        flops = k["flops"]["matmul"] + k["flops"]["nonmatmul"]
        hbm = k["hbm"]["read_bytes"] + k["hbm"]["write_bytes"]
        dram = k["dram"]["read_bytes"] + k["dram"]["write_bytes"]
        bound = k["time"]["bound"]
        kind = "memory" if any(m in bound for m in ("DRAM", "L2", "shared-memory")) else "compute"
        rows.append(dict(kernel=k["name"], hbm_bytes=hbm, dram_bytes=dram, flops=flops, intensity=flops / hbm,
                         dram_intensity=flops / dram, predicted_s=k["time"]["predicted_s"], bound=bound, bound_kind=kind))
table(["kernel", "HBM bytes", "DRAM bytes", "FLOPs", "I (HBM)", "I (DRAM)", "bound"],
      [[k["kernel"], quantity(k["hbm_bytes"], "B"), quantity(k["dram_bytes"], "B"), quantity(k["flops"]),
        f"{k['intensity']:.1f}", f"{k['dram_intensity']:.1f}", k["bound_kind"]] for k in rows])
print(f"\nRidge point at this dtype: {RESULTS['roofline']['ridge_matmul']:.1f} FLOP/byte. Standard attention in total: "
      f"{standard['arithmetic_intensity']:.1f} FLOP/byte, {quantity(standard['time']['predicted_s'], 's')}; "
      f"FlashAttention-2: {fa2['arithmetic_intensity']:.1f} FLOP/byte, {quantity(fa2['time']['predicted_s'], 's')}.")
RESULTS["attention"] = dict(kernels=rows, standard_intensity=standard["arithmetic_intensity"],
                            fa2_intensity=fa2["arithmetic_intensity"]))PY"});

        L.exercise({"ridge",
                    "What is the ridge point of " + gpu.name + " for fp16 matrix products: its fp16 tensor-core FLOP/s "
                    "divided by its HBM bandwidth in bytes/s?",
                    Exercise::Kind::number, 0.01, {}, "FLOP per byte",
                    [gpu] { return gpu.matmul_flops(DType::fp16) / gpu.effective_hbm_bandwidth(); }, {},
                    "both numbers are in steps 1 and 2 (run with --dtype fp16); divide FLOP/s by bytes/s."});
        L.exercise({"square_n",
                    "An n×n by n×n fp16 matrix product does 2n³ FLOPs and moves 3n² elements of 2 bytes. From which n on "
                    "is it compute-bound at " + gpu.name + "'s fp16 tensor-core rate?",
                    Exercise::Kind::number, 0.02, {}, "n",
                    [gpu] { return std::ceil(3.0 * gpu.matmul_flops(DType::fp16) / gpu.effective_hbm_bandwidth()); }, {},
                    "set the intensity 2n³ / (3n² × 2 bytes) = n/3 equal to the ridge point of the exercise 'ridge'."});
        L.exercise({"softmax_bound",
                    "Standard attention at B=1, H=16, N=4096, d=64, fp16 on " + gpu.name + ": is its softmax kernel "
                    "memory-bound or compute-bound according to the simulator?",
                    Exercise::Kind::choice, 0, {"memory", "compute"}, "",
                    {}, [gpu] { return bound_kind(timing(sim(algorithm("standard"), make_problem(1, 16, 4096, 64), gpu), "softmax").bound); },
                    "compare its intensity (step 4) with the ridge point for the fp32 units that do its arithmetic."});
    });
}
