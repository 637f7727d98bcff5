// One call that runs an algorithm's tile program on the counting executor and
// times every kernel: what fa-sim, the sweeps, the plots and the lessons use.
#pragma once

#include <vector>

#include "algorithms/algorithm.hpp"
#include "exec/kernel_record.hpp"
#include "model/runtime_model.hpp"

namespace fasim {

struct AlgorithmResult {
    const Algorithm* algo = nullptr;
    AttentionProblem problem;
    std::string gpu_name;
    TileConfig tiles;
    std::vector<KernelRecord> kernels;
    std::vector<KernelTiming> timing;

    // Totals over all kernels.
    LevelTraffic hbm, l2, dram;
    std::int64_t smem_read = 0, smem_write = 0;
    std::int64_t matmul_flops = 0, nonmatmul_flops = 0, sfu_ops = 0, barriers = 0;
    std::int64_t ideal_matmul_flops = 0;  // 4·B·H·d·(visible query-key pairs): what causal skipping aims for
    std::int64_t global_bytes = 0;        // footprint of every global tensor (all heads)
    bool fits_in_hbm = true;
    double time_s = 0;

    double arithmetic_intensity() const;  // matmul+non-matmul FLOPs per HBM byte (papers' sense)
    double achieved_flops() const;        // predicted matmul FLOP/s
    const KernelTiming& longest_kernel() const;  // the kernel that decides most of the time
};

AlgorithmResult simulate(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& request = {},
                         const ModelOptions& options = {}, std::size_t timeline_blocks = 0);

// Number of (query, key) pairs the mask lets through: N·Nk, or fewer when causal.
std::int64_t visible_pairs(const AttentionProblem& p);

}  // namespace fasim
