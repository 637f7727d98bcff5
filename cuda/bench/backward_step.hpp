// The issue rate of FlashAttention-2's backward step on the tensor cores (fa2_bwd_tc's), measured apart from
// the kernel's copies.
//
// fa-sim times mma.sync kernels by the warp instructions they issue at a rate per scheduler. For the forward
// step that rate comes from bench/attention_step.hpp; the backward's step is another loop body: five products
// per tile pair, dS^T exchanged through shared memory between two barriers, dQ added with fp32 atomics. This
// probe runs that step, the kernel's own code (kernels/fa2_backward_step.cuh), in the kernel's own shape: one
// block of 8 warps per SM (2 warps per scheduler: 255 registers a thread at d = 128, the kernel's bound at d =
// 64 too), K_j, V_j, Q, dO, LSE and D in shared memory, loaded once, the two barriers of every step, the dQ
// atomics into an fp32 buffer that stays in L2. Left out: the copies of the next Q tile and their waits, the
// causal masks, dK and dV's final stores. clock64 gives the cycles a step takes; Nsight Compute's
// smsp__inst_executed the instructions it issues (kBackwardStepWarpInstructions).
#pragma once

namespace fasim::bench {

// The head dims the probe is built for (fa2_bwd_tc's).
inline constexpr int kBackwardStepDims[] = {64, 128};
// Its warps per scheduler: one block of 8 warps per SM of 4 schedulers, as fa2_bwd_tc runs.
inline constexpr int kBackwardStepWarpsPerScheduler = 2;

// Warp instructions one warp issues per step, as this probe compiles for sm_90a with nvcc 13.0: Nsight Compute's
// smsp__inst_executed over warps and steps of the timed launch on an H200
// (cuda/results/2026-12-01-h200-backward-step/: 610.2 at d = 64, 919.0 at d = 128). clock64 gives the cycles a
// step takes without a profiler; 2 warps x these over them is the issue rate fa-calibrate writes
// (model.fa2_bwd_step_issue_d64/_d128). Another compiler or architecture may emit a few percent more or fewer:
// run the probe under Nsight Compute to check.
inline constexpr double kBackwardStepWarpInstructions(int d) { return d == 64 ? 610.2 : d == 128 ? 919.0 : 0.0; }

struct BackwardStepIssue {
    int d = 0;
    bool shared_dq = false;      // every block adds into the same dQ rows (see backward_step_issue)
    int registers = 0;           // per thread, as compiled
    bool ran = false;            // false: the register file or shared memory does not hold the block
    double cycles_per_step = 0;  // one warp's clock64 span over the steps, mean over every warp of the GPU
    double min_cycles_per_step = 0, max_cycles_per_step = 0;
    int steps = 0;
};

// fp16 operands, d = 64 or 128, one block of 8 warps per SM (sm_80 and later). Each block adds its dQ parts
// into rows of its own (shared_dq = false), or every block into the same rows (true): the kernel's blocks of
// one head add into the same Q tile at about the same time, so the truth lies between the two.
BackwardStepIssue backward_step_issue(int sms, int d, bool shared_dq, int steps = 1000);

}  // namespace fasim::bench
