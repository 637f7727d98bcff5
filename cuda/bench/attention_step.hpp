// The issue rate of FlashAttention-2's step on the tensor cores, measured apart from any kernel around it.
//
// fa-sim times mma.sync kernels by the warp instructions they issue (sim/kernels/issue_costs.hpp) at a
// rate that depends on how many warps share a scheduler: each warp waits on its products, shuffles and
// exponentials, and the others fill the gaps. The model's rate came from Nsight Compute's counters of
// whole attention kernels; this probe measures it on the step alone, so that anyone can measure it on
// their GPU: one block per SM of 4 W warps (W per scheduler), each warp looping over fa2_tc's step for
// R 16-row blocks (S = Q K^T over a 64-key tile, online softmax, O += P V), operands in shared memory and
// registers, nothing else. Under Nsight Compute, smsp__issue_active per cycle of these launches is the
// issue fraction of W R row blocks per scheduler; without it, the cycles per step at each W give the
// fractions relative to one another (the step's instructions are the same at every W).
#pragma once

#include <utility>

namespace fasim::bench {

// The (d, row blocks a warp) the probe is built for; peak-rates and fa-calibrate run each at 1 to 4 warps
// per scheduler.
inline constexpr std::pair<int, int> kAttentionStepShapes[] = {{64, 1}, {64, 2}, {128, 1}};

// Warp instructions one warp issues per step with one row block, as this probe compiles for sm_90a with
// nvcc 13.0: Nsight Compute's smsp__inst_executed over warps and steps on an H200
// (cuda/results/2026-11-30-h200-attention-step/: 300.2-300.6 at d = 64, 429.4-430.2 at d = 128, at every
// warps per scheduler). clock64 gives the cycles a step takes without a profiler; times these it gives the
// issue rate fa-calibrate writes (model.fa2_step_issue_d64/_d128). Another compiler or architecture may
// emit a few percent more or fewer: run the probe under Nsight Compute to check.
inline constexpr double kAttentionStepWarpInstructions(int d) { return d == 64 ? 300.0 : d == 128 ? 430.0 : 0.0; }

struct AttentionStepIssue {
    int d = 0, row_blocks = 0, warps_per_scheduler = 0;
    int registers = 0;          // per thread, as compiled
    bool ran = false;           // false: the register file does not hold 4 W warps of this step
    double cycles_per_step = 0; // one warp's clock64 span over the steps, mean over every warp of the GPU
    double min_cycles_per_step = 0, max_cycles_per_step = 0;
    int steps = 0;
};

// fp16 operands; d = 64 with 1 or 2 row blocks a warp, d = 128 with 1; warps_per_scheduler 1..8, run where
// the register file holds them (sm_80 and later).
AttentionStepIssue attention_step_issue(int sms, int d, int row_blocks, int warps_per_scheduler, int steps = 2000);

}  // namespace fasim::bench
