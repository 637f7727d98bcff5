// One call that runs an algorithm's tile program on the counting executor and
// times every kernel: what fa-sim, the sweeps, the plots and the lessons use.
#pragma once

#include <optional>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "exec/kernel_record.hpp"
#include "model/runtime_model.hpp"

namespace fasim {

// Which passes of training a simulation runs: the forward, the backward, or both, one after the other
// on the same chip (the L2 keeps what the forward left for the backward).
enum class PassSelection : std::uint8_t { fwd, bwd, fwd_bwd };
const char* pass_name(PassSelection p);  // "fwd", "bwd", "fwd+bwd"

struct AlgorithmResult {
    const Algorithm* algo = nullptr;     // the program run (the backward's for bwd and fwd+bwd)
    const Algorithm* forward = nullptr;  // fwd+bwd: the forward's program, run first
    PassSelection pass = PassSelection::fwd;
    AttentionProblem problem;
    std::string gpu_name;
    TileConfig tiles;                     // algo's tiles
    std::optional<TileConfig> forward_tiles;  // fwd+bwd: the forward's
    std::vector<KernelRecord> kernels;
    std::vector<KernelTiming> timing;

    // Totals over all kernels (Counts: exact past 64 bits, exec/kernel_record.hpp).
    LevelTraffic hbm, l2, dram;
    Count smem_read = 0, smem_write = 0;
    Count matmul_flops = 0, nonmatmul_flops = 0, sfu_ops = 0, barriers = 0;
    Count recomputed_matmul_flops = 0;  // of matmul_flops: products the backward redoes (S = Q Kᵀ)
    // The matmul FLOPs the papers count for the passes: 4·B·H·d per visible (query, key) pair forward, 10
    // backward (2.5x); what causal skipping aims for, and what measured TFLOP/s divide by the time.
    Count ideal_matmul_flops = 0;
    Count global_bytes = 0;               // footprint of every global tensor (all heads): the peak allocation
                                          // when nothing is freed
    // bwd, fwd+bwd: the bytes the forward keeps for the backward besides its output O (standard: P;
    // FlashAttention-2: LSE; FlashAttention-1: m and ℓ).
    Count held_between_passes_bytes = 0;
    bool fits_in_hbm = true;
    double time_s = 0;

    double arithmetic_intensity() const;  // matmul+non-matmul FLOPs per HBM byte (papers' sense)
    double achieved_flops() const;        // predicted matmul FLOP/s
    const KernelTiming& longest_kernel() const;  // the kernel that decides most of the time
};

AlgorithmResult simulate(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& request = {},
                         const ModelOptions& options = {}, std::size_t timeline_blocks = 0);

// The passes of a forward algorithm: fwd is simulate(forward); bwd its backward program; fwd+bwd both
// on one chip. Throws UsageError when the algorithm has no backward.
AlgorithmResult simulate(const Algorithm& forward, PassSelection pass, const AttentionProblem& p, const GpuSpec& gpu,
                         const TileRequest& request = {}, const ModelOptions& options = {}, std::size_t timeline_blocks = 0);

// The backward program of a forward algorithm, or a UsageError naming those that have one.
const Algorithm& backward_program(const Algorithm& forward);

// The global tensors a program declares (nothing is launched).
std::vector<GlobalTensor> declared_tensors(const Algorithm& algo, const AttentionProblem& p, const TileConfig& tiles);

// Number of (query, key) pairs of one head the mask lets through: N·Nk, or fewer when causal (at most
// 2^48 at N = Nk = 2^24: a 64-bit integer holds it).
std::int64_t visible_pairs(const AttentionProblem& p);

}  // namespace fasim
