// Speed of the runtime model's block scheduler (model/block_scheduler.hpp) at long contexts: N = 2^24 with
// 128-row Q tiles is 2^17 blocks per head, and batch x heads reaches 2^16 (issue 24). time_kernel on
// FlashAttention-2 kernel records from the counting executor, their block work grown to those grids:
//  - a non-multiple N: interior blocks and a ragged last one. With 64 rows ragged the two durations make
//    the slots' free times repeat after a few hundred heads (the scheduler then adds whole cycles); with
//    28 rows ragged they do not repeat, and every head is scheduled;
//  - causal attention: Q tile i visits i + 1 K/V tiles, so every block differs, its work growing by one
//    tile's from one to the next (in launch order; reversed, shrinking, as FlashAttention-2's causal
//    backward does: K/V tile j visits Tr - j Q tiles).
// Prints a table; bench/README.md records it. An argument runs only the cases whose names contain it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "gpu/gpu_catalog.hpp"
#include "model/runtime_model.hpp"
#include "model/simulation.hpp"

using namespace fasim;

namespace {

struct Timing {
    double cpu_min_ms, cpu_median_ms, wall_median_ms;
};

Timing measure(int runs, const std::function<void()>& f) {
    std::vector<double> cpu, wall;
    for (int i = 0; i < runs; ++i) {
        const std::clock_t c0 = std::clock();
        const auto w0 = std::chrono::steady_clock::now();
        f();
        wall.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count());
        cpu.push_back(1e3 * static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
    }
    std::sort(cpu.begin(), cpu.end());
    std::sort(wall.begin(), wall.end());
    return {cpu.front(), cpu[cpu.size() / 2], wall[wall.size() / 2]};
}

KernelRecord fa2_forward(const GpuSpec& gpu, std::int64_t N, bool causal) {
    AttentionProblem p;  // defaults: 16 heads, d = 64, fp16
    p.N = p.Nk = N;
    p.causal = causal;
    return simulate(algorithm("fa2"), p, gpu).kernels.front();
}

// a + times x step, field by field.
BlockWork plus(BlockWork a, const BlockWork& step, std::int64_t times) {
    a.matmul_flops += step.matmul_flops * times;
    a.nonmatmul_flops += step.nonmatmul_flops * times;
    a.sfu_ops += step.sfu_ops * times;
    a.recomputed_matmul_flops += step.recomputed_matmul_flops * times;
    a.smem_bytes += step.smem_bytes * times;
    a.smem_wavefronts += step.smem_wavefronts * times;
    a.lane_matmul_flops += step.lane_matmul_flops * times;
    a.l2_bytes += step.l2_bytes * times;
    a.l2_requests += step.l2_requests * times;
    a.barriers += step.barriers * times;
    a.thread_instructions += step.thread_instructions * times;
    return a;
}

// A record with `heads` heads of the given blocks.
KernelRecord grown(KernelRecord k, std::int64_t heads, std::vector<std::pair<BlockWork, std::int64_t>> work) {
    k.desc.heads = heads;
    k.desc.blocks_per_head = 0;
    for (const auto& e : work) k.desc.blocks_per_head += e.second;
    k.block_work = std::move(work);
    return k;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string only = argc > 1 ? argv[1] : "";
    const GpuSpec gpu = find_gpu_preset("H100-SXM");
    const std::int64_t blocks = 1 << 17, many = 1 << 16;

    // Interior blocks and a ragged last one, from fa2 at N = 65536 - r (the same ragged tile as 2^24 - r).
    auto ragged = [&](std::int64_t short_rows, std::int64_t heads) {
        const KernelRecord k = fa2_forward(gpu, 65536 - short_rows, false);
        return grown(k, heads, {{k.block_work.expanded().at(0).first, blocks - 1}, {k.block_work.expanded().at(1).first, 1}});
    };
    // Causal: the block of Q tile i does the first one's work plus i tiles' (from fa2 causal at N = 8192).
    const KernelRecord causal = fa2_forward(gpu, 8192, true);
    const BlockWork first = causal.block_work.expanded().at(0).first;
    const BlockWork tile = plus(causal.block_work.expanded().at(1).first, first, -1);
    std::vector<std::pair<BlockWork, std::int64_t>> growing, shrinking;
    for (std::int64_t i = 0; i < blocks; ++i) growing.push_back({plus(first, tile, i), 1});
    shrinking.assign(growing.rbegin(), growing.rend());

    struct Case {
        std::string what;
        KernelRecord k;
        int runs;
        const char* target;
    };
    const std::vector<Case> cases = {
        {"2 entries, 64 rows ragged (repeats), 2^16 heads", ragged(64, many), 21, "< 10 ms"},
        {"2 entries, 28 rows ragged (no repeat), 2^16 heads", ragged(100, many), 11, "< 10 ms"},
        {"2 entries, 28 rows ragged, 16 heads", ragged(100, 16), 21, ""},
        {"1 entry (all alike), 2^16 heads", grown(ragged(64, 1), many, {{ragged(64, 1).block_work.expanded().at(0).first, blocks}}), 21, ""},
        {"causal, 2^17 entries growing, 16 heads", grown(causal, 16, growing), 11, ""},
        {"causal, 2^17 entries growing, 2^16 heads", grown(causal, many, growing), 5, "< 100 ms"},
        {"causal, 2^17 entries shrinking, 16 heads", grown(causal, 16, shrinking), 5, "< 20 ms"},
    };
    std::printf("time_kernel on %s (%d SMs), fa2_forward (2 blocks per SM: 264 slots), 2^17 blocks per head\n",
                gpu.name.c_str(), gpu.sm_count);
    std::printf("%-52s %9s %9s %9s %9s  %s\n", "block_work, heads", "cpu min", "cpu med", "wall med", "target", "schedule");
    for (const Case& c : cases) {
        if (c.what.find(only) == std::string::npos) continue;
        KernelTiming t;
        const Timing m = measure(c.runs, [&] { t = time_kernel(c.k, gpu, DType::fp16, {}); });
        std::printf("%-52s %6.2f ms %6.2f ms %6.2f ms %9s  %.6g s, SMs %.4f%% busy\n", c.what.c_str(), m.cpu_min_ms,
                    m.cpu_median_ms, m.wall_median_ms, c.target, t.schedule_s, 100 * t.sm_busy_fraction);
        std::fflush(stdout);
    }
    return 0;
}
