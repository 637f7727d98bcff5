// Lesson 07: parallelism and occupancy: grids, blocks per SM, waves, idle SMs.
#include <cmath>
#include <iostream>

#include "common/lesson.hpp"
#include "common/sim_helpers.hpp"
#include "common/text.hpp"
#include "report/units.hpp"

using namespace fasim;
using namespace fasim::lessons;

int FASIM_LESSON_ENTRY(int argc, char** argv) {
    Lesson L(7, "parallelism_and_occupancy", "Parallelism and occupancy",
             "A GPU runs a kernel as a grid of thread blocks, each on one streaming multiprocessor (SM). "
             "If the grid has fewer blocks than there are SMs, the rest sit idle however fast each block "
             "is. FlashAttention-1 launches one block per batch × head; FlashAttention-2 also splits the "
             "sequence, one block per Q tile. This lesson counts blocks, waves and idle SMs with the "
             "simulator, at the long sequences and small batches where the difference shows.");
    L.problem_options(make_problem(1, 16, 16384, 64), kN | kD | kHeads | kBatch | kDtype);
    std::int64_t& tokens = L.int_option("--tokens", 16384, 512, 1048576, "batch × sequence length kept fixed in step 4");

    return L.run(argc, argv, [&](Lesson&) {
        const GpuSpec& gpu = L.gpu();
        const AttentionProblem& p = L.problem();

        L.step({"grid", "Two grids for the same attention",
                R"(The thread blocks of a grid are independent: the GPU's block scheduler places
each on an SM with room for it, and an SM runs several at once if its
registers, shared memory and warp slots allow. Work inside one block cannot
spread over two SMs.

- FA1's outer loop runs over K/V tiles and updates every row of O each time,
  so one block must own a whole head: grid = B·H.
- FA2's outer loop runs over Q tiles and no two Q tiles share any state, so
  each becomes a block: grid = B·H·⌈N/Br⌉.)",
                [&](Ctx& c) {
                    const AlgorithmResult r1 = sim(algorithm("fa1"), p, gpu), r2 = sim(algorithm("fa2"), p, gpu);
                    const KernelTiming &k1 = main_timing(r1), &k2 = main_timing(r2);
                    c.out << p.describe() << " on " << gpu.name << " (" << gpu.sm_count << " SMs)\n\n";
                    Table t({"", "FA1", "FA2"}, "lrr");
                    t.row({"grid formula", "B·H", "B·H·⌈N/Br⌉"});
                    t.row({"grid", grouped(k1.grid), grouped(k2.grid)});
                    t.row({"blocks per SM", std::to_string(main_kernel(r1).occupancy.blocks_per_sm),
                           std::to_string(main_kernel(r2).occupancy.blocks_per_sm)});
                    t.row({"blocks at a time", grouped(k1.concurrent_blocks), grouped(k2.concurrent_blocks)});
                    t.row({"waves", fixed(k1.waves, 2), fixed(k2.waves, 2)});
                    t.row({"idle SMs", std::to_string(k1.idle_sms), std::to_string(k2.idle_sms)});
                    t.row({"SM time busy", percent(k1.sm_busy_fraction, 0), percent(k2.sm_busy_fraction, 0)});
                    t.row({"predicted time", units::seconds(r1.time_s), units::seconds(r2.time_s)});
                    t.print(c.out);
                    c.out << '\n';
                    print_para(c.out, "FA2 is predicted " + units::ratio(r1.time_s / r2.time_s) + " faster here; FA1 is bound by " +
                                          k1.bound + ".");
                    c.results["fa1_grid"] = k1.grid;
                    c.results["fa2_grid"] = k2.grid;
                    c.results["fa1_idle_sms"] = k1.idle_sms;
                    c.results["fa2_idle_sms"] = k2.idle_sms;
                    c.results["fa1_sm_busy_fraction"] = k1.sm_busy_fraction;
                    c.results["fa2_sm_busy_fraction"] = k2.sm_busy_fraction;
                    c.results["fa1_predicted_s"] = r1.time_s;
                    c.results["fa2_predicted_s"] = r2.time_s;
                },
                "",
                R"PY(def main_kernel(r):
    """The algorithm's main kernel: its last launch (FA1's fa1_forward after fa1_init, FA2's fa2_forward)."""
    return r["kernels"][-1]

r1, r2 = fasim.simulate("fa1", gpu=GPU, **PROBLEM), fasim.simulate("fa2", gpu=GPU, **PROBLEM)
k1, k2 = main_kernel(r1), main_kernel(r2)
print(f"{describe(r1['problem'])} on {r1['gpu']['name']} ({r1['gpu']['sm_count']} SMs)\n")
t1, t2 = r1["time"]["predicted_s"], r2["time"]["predicted_s"]
table(["", "FA1", "FA2"], [
    ["grid formula", "B·H", "B·H·⌈N/Br⌉"],
    ["grid", k1["grid"], k2["grid"]],
    ["blocks per SM", k1["blocks_per_sm"], k2["blocks_per_sm"]],
    ["blocks at a time", k1["concurrent_blocks"], k2["concurrent_blocks"]],
    ["waves", f"{k1['waves']:.2f}", f"{k2['waves']:.2f}"],
    ["idle SMs", k1["idle_sms"], k2["idle_sms"]],
    ["SM time busy", f"{k1['sm_busy_fraction']:.0%}", f"{k2['sm_busy_fraction']:.0%}"],
    ["predicted time", quantity(t1, "s"), quantity(t2, "s")],
])
print(f"\nFA2 is predicted {t1 / t2:.3g}x faster here; FA1 is bound by {k1['time']['bound']}.")
RESULTS["grid"] = dict(fa1_grid=k1["grid"], fa2_grid=k2["grid"], fa1_idle_sms=k1["idle_sms"], fa2_idle_sms=k2["idle_sms"],
                       fa1_sm_busy_fraction=k1["sm_busy_fraction"], fa2_sm_busy_fraction=k2["sm_busy_fraction"],
                       fa1_predicted_s=t1, fa2_predicted_s=t2))PY"});

        L.step({"occupancy", "How many blocks fit on one SM",
                R"(An SM holds as many blocks as the scarcest of its resources allows: its
shared memory, its registers (threads × registers per thread), its warp slots
and a fixed block limit. Occupancy is the share of warp slots in use. FA1's
tiles are sized to fill the shared memory of a block, so one block takes the
SM; FA2's smaller tiles leave room for more, but its per-thread registers
(the O accumulator and the scores live there) can run out first.)",
                [&](Ctx& c) {
                    const AlgorithmResult r1 = sim(algorithm("fa1"), p, gpu), r2 = sim(algorithm("fa2"), p, gpu);
                    Table t({"main kernel", "smem/block", "regs/thread", "blocks/SM", "limited by", "warp occupancy"}, "lrrrlr");
                    Json rows = Json::array();
                    for (const AlgorithmResult* r : {&r1, &r2}) {
                        const KernelRecord& k = main_kernel(*r);
                        t.row({k.desc.name, units::capacity(static_cast<double>(k.smem_bytes_per_block)),
                               std::to_string(k.registers_per_thread), std::to_string(k.occupancy.blocks_per_sm),
                               k.occupancy.limiter, percent(k.occupancy.warp_occupancy, 0)});
                        rows.push_back({{"kernel", k.desc.name}, {"smem_bytes_per_block", k.smem_bytes_per_block},
                                        {"registers_per_thread", k.registers_per_thread},
                                        {"blocks_per_sm", k.occupancy.blocks_per_sm}, {"limiter", k.occupancy.limiter},
                                        {"warp_occupancy", k.occupancy.warp_occupancy}});
                    }
                    t.print(c.out);
                    c.out << '\n';
                    print_para(c.out, gpu.name + " per SM: " + units::capacity(static_cast<double>(gpu.smem_per_sm_bytes)) +
                                          " shared memory, " + grouped(gpu.registers_per_sm) + " registers, " +
                                          std::to_string(gpu.max_warps_per_sm) + " warps, " + std::to_string(gpu.max_blocks_per_sm) +
                                          " blocks. (Registers per thread are the simulator's estimate from the tiles "
                                          "kept in registers.)");
                    c.results["kernels"] = rows;
                },
                "",
                R"PY(rows = []
for r in (fasim.simulate("fa1", gpu=GPU, **PROBLEM), fasim.simulate("fa2", gpu=GPU, **PROBLEM)):
    k = main_kernel(r)
    rows.append(dict(kernel=k["name"], smem_bytes_per_block=k["smem_bytes_per_block"],
                     registers_per_thread=k["registers_per_thread"], blocks_per_sm=k["blocks_per_sm"],
                     limiter=k["occupancy_limiter"], warp_occupancy=k["warp_occupancy"]))
table(["main kernel", "smem/block", "regs/thread", "blocks/SM", "limited by", "warp occupancy"],
      [[x["kernel"], quantity(x["smem_bytes_per_block"], "B"), x["registers_per_thread"], x["blocks_per_sm"], x["limiter"],
        f"{x['warp_occupancy']:.0%}"] for x in rows])
g = fasim.gpu(GPU)
print(f"\n{g['name']} per SM: {quantity(g['smem_per_sm_bytes'], 'B')} shared memory, {g['registers_per_sm']:,} registers, "
      f"{g['max_warps_per_sm']} warps, {g['max_blocks_per_sm']} blocks. (Registers per thread are the simulator's "
      "estimate from the tiles kept in registers.)")
RESULTS["occupancy"] = dict(kernels=rows))PY"});

        L.step({"waves", "Waves and the tail",
                R"(When the grid is larger than the number of blocks the GPU can hold at once,
blocks run in waves: as blocks finish, waiting ones take their place. The
number of waves is grid / blocks at a time. A fractional last wave is a tail:
for that part of the run only some SMs have work. FA2 at this batch and head
count, over N:)",
                [&](Ctx& c) {
                    Table t({"N", "grid", "blocks at a time", "waves", "SM time busy", "predicted time"}, "rrrrrr");
                    Json rows = Json::array();
                    for (std::int64_t n = 1024; n <= 16384; n *= 2) {
                        AttentionProblem q = p;
                        q.N = q.Nk = n;
                        const AlgorithmResult r = sim(algorithm("fa2"), q, gpu);
                        const KernelTiming& k = main_timing(r);
                        t.row({grouped(n), grouped(k.grid), grouped(k.concurrent_blocks), fixed(k.waves, 2),
                               percent(k.sm_busy_fraction, 0), units::seconds(r.time_s)});
                        rows.push_back({{"N", n}, {"grid", k.grid}, {"concurrent_blocks", k.concurrent_blocks},
                                        {"waves", k.waves}, {"sm_busy_fraction", k.sm_busy_fraction}, {"predicted_s", r.time_s}});
                    }
                    c.out << "B=" << p.batch << " H=" << p.heads << " d=" << p.d << " " << dtype_name(p.dtype) << ", FA2:\n";
                    t.print(c.out);
                    c.results["fa2_over_N"] = rows;
                },
                "",
                R"PY(sizes = [1024, 2048, 4096, 8192, 16384]
sweep = fasim.sweep("fa2", parameter="N", values=sizes, gpu=GPU, **{k: v for k, v in PROBLEM.items() if k != "N"})
rows = []
for run in sweep["runs"]:
    r = run["algorithms"][0]
    k = main_kernel(r)
    rows.append(dict(N=run["problem"]["N"], grid=k["grid"], concurrent_blocks=k["concurrent_blocks"], waves=k["waves"],
                     sm_busy_fraction=k["sm_busy_fraction"], predicted_s=r["time"]["predicted_s"]))
print(f"B={PROBLEM['batch']} H={PROBLEM['heads']} d={PROBLEM['d']} {PROBLEM['dtype']}, FA2:")
table(["N", "grid", "blocks at a time", "waves", "SM time busy", "predicted time"],
      [[x["N"], x["grid"], x["concurrent_blocks"], f"{x['waves']:.2f}", f"{x['sm_busy_fraction']:.0%}",
        quantity(x["predicted_s"], "s")] for x in rows])
RESULTS["waves"] = dict(fa2_over_N=rows))PY"});

        L.step({"tokens", "Long sequences, small batches",
                R"(Training keeps the number of tokens per batch roughly fixed, so a longer
sequence means a smaller batch. Keep batch × N fixed (--tokens) and grow N:
FA1's grid B·H shrinks until most SMs idle, while FA2's grid B·H·⌈N/Br⌉
stays the same size. This is the case FlashAttention-2's parallelism over
the sequence was made for.)",
                [&](Ctx& c) {
                    Table t({"N", "B", "FA1 grid", "idle", "FA1 time", "FA2 grid", "idle", "FA2 time"}, "rrrrrrrr");
                    Json rows = Json::array();
                    for (std::int64_t n = 512; n <= tokens; n *= 2) {
                        if (tokens % n != 0) continue;
                        const std::int64_t batch = tokens / n;
                        if (batch * p.heads > ProblemLimits::max_batch_heads || batch > ProblemLimits::max_batch) continue;
                        AttentionProblem q = p;
                        q.N = q.Nk = n;
                        q.batch = batch;
                        const AlgorithmResult r1 = sim(algorithm("fa1"), q, gpu), r2 = sim(algorithm("fa2"), q, gpu);
                        const KernelTiming &k1 = main_timing(r1), &k2 = main_timing(r2);
                        t.row({grouped(n), grouped(batch), grouped(k1.grid), std::to_string(k1.idle_sms), units::seconds(r1.time_s),
                               grouped(k2.grid), std::to_string(k2.idle_sms), units::seconds(r2.time_s)});
                        rows.push_back({{"N", n}, {"batch", batch}, {"fa1_grid", k1.grid}, {"fa1_idle_sms", k1.idle_sms},
                                        {"fa1_predicted_s", r1.time_s}, {"fa1_matmul_flops_per_s", r1.achieved_flops()},
                                        {"fa2_grid", k2.grid}, {"fa2_idle_sms", k2.idle_sms}, {"fa2_predicted_s", r2.time_s},
                                        {"fa2_matmul_flops_per_s", r2.achieved_flops()}});
                    }
                    c.out << "batch × N = " << grouped(tokens) << ", H=" << p.heads << " d=" << p.d << " " << dtype_name(p.dtype)
                          << " on " << gpu.name << " (" << gpu.sm_count << " SMs)\n";
                    t.print(c.out);
                    c.results["fixed_tokens"] = rows;
                },
                "",
                R"PY(TOKENS = 16384  # batch × N, kept fixed (the lesson's --tokens)
rows, shown = [], []
N = 512
while N <= TOKENS:
    batch = TOKENS // N
    if TOKENS % N == 0 and batch * PROBLEM["heads"] <= 65536 and batch <= 65536:  # the simulator's limits on B·H and B
        size = dict(PROBLEM, N=N, batch=batch)
        r1, r2 = fasim.simulate("fa1", gpu=GPU, **size), fasim.simulate("fa2", gpu=GPU, **size)
        k1, k2 = main_kernel(r1), main_kernel(r2)
        rows.append(dict(N=N, batch=batch, fa1_grid=k1["grid"], fa1_idle_sms=k1["idle_sms"],
                         fa1_predicted_s=r1["time"]["predicted_s"], fa1_matmul_flops_per_s=r1["time"]["matmul_flops_per_s"],
                         fa2_grid=k2["grid"], fa2_idle_sms=k2["idle_sms"], fa2_predicted_s=r2["time"]["predicted_s"],
                         fa2_matmul_flops_per_s=r2["time"]["matmul_flops_per_s"]))
    N *= 2
g = fasim.gpu(GPU)
print(f"batch × N = {TOKENS:,}, H={PROBLEM['heads']} d={PROBLEM['d']} {PROBLEM['dtype']} on {g['name']} ({g['sm_count']} SMs)")
table(["N", "B", "FA1 grid", "idle", "FA1 time", "FA2 grid", "idle", "FA2 time"],
      [[x["N"], x["batch"], x["fa1_grid"], x["fa1_idle_sms"], quantity(x["fa1_predicted_s"], "s"), x["fa2_grid"],
        x["fa2_idle_sms"], quantity(x["fa2_predicted_s"], "s")] for x in rows])
RESULTS["tokens"] = dict(fixed_tokens=rows)

import matplotlib.pyplot as plt
ns = [x["N"] for x in rows]
plt.semilogx(ns, [x["fa1_matmul_flops_per_s"] / 1e12 for x in rows], "o-", label="FA1", base=2)
plt.semilogx(ns, [x["fa2_matmul_flops_per_s"] / 1e12 for x in rows], "s-", label="FA2", base=2)
plt.xlabel("N (batch = tokens / N)")
plt.ylabel("predicted matmul TFLOP/s")
plt.title("Fixed tokens per batch on " + g["name"])
plt.legend()
plt.show())PY"});

        L.exercise({"fa2_blocks",
                    "How many thread blocks does FA2's kernel launch for B=2, H=8, N=8192, d=64, fp16 on " + gpu.name +
                        " with the default tiles?",
                    Exercise::Kind::integer, 0, {}, "blocks",
                    [gpu] { return static_cast<double>(main_timing(sim(algorithm("fa2"), make_problem(2, 8, 8192, 64), gpu)).grid); }, {},
                    "grid = B·H·⌈N/Br⌉; FA2's default Br for d = 64 is printed by fa-sim --algo fa2 (Tiles line)."});
        L.exercise({"fa1_idle",
                    "FA1 at B=1, H=16, N=16384, d=64, fp16 on " + gpu.name + ": how many SMs have no block at all "
                    "during its main kernel?",
                    Exercise::Kind::integer, 0, {}, "SMs",
                    [gpu] { return static_cast<double>(main_timing(sim(algorithm("fa1"), make_problem(1, 16, 16384, 64), gpu)).idle_sms); },
                    {}, "FA1 has one block per batch × head; compare with the GPU's SM count (fa-sim --list-gpus)."});
        L.exercise({"waves",
                    "FA2 at B=1, H=16, N=4096, d=64, fp16 on " + gpu.name + ": how many waves does its grid take "
                    "(grid / blocks at a time, a decimal)?",
                    Exercise::Kind::number, 0.02, {}, "waves",
                    [gpu] { return main_timing(sim(algorithm("fa2"), make_problem(1, 16, 4096, 64), gpu)).waves; }, {},
                    "blocks at a time = SMs × blocks per SM; step 2 shows blocks per SM and step 3 the waves for other N."});
    });
}
