// Predicted runtime of one kernel from what the counting executor measured.
//
// Each thread block's duration on its SM comes from its own work: matmul FLOPs
// over the tensor-core rate of the kernel's instruction (mma.sync for the
// hand-written flash kernels, a library GEMM's for standard attention; they
// differ on Hopper) or the CUDA-core rate, non-matmul FLOPs over the FP32 rate,
// exp/log over the SFU rate (these three share the block's warps, so they add),
// shared-memory bytes over the SM's shared-memory bandwidth, and its L2 requests
// over the SM's share of L2 bandwidth; the slowest of those is the block's time.
// Blocks resident on one SM share its rates. A block streams from DRAM at most its bytes in flight over
// the DRAM latency (Little's law): resident blocks overlap their latencies, so this bounds the SM's time
// only where few blocks are resident (decode grids), never the sum of a full SM's blocks. CUDA-core products also need warps to hide
// latency: with W warps per scheduler the compute rates are scaled by 1 - (1 - p)^W, p the GPU's
// gpu.model.cuda_core_warp_ready (the H200: a lone warp of fa-sim's CUDA-core flash code issues in 37%
// of cycles). A greedy block scheduler (the GPU's)
// places blocks on free slots in launch order: that gives waves, the tail, and
// idle SMs. The chip-wide DRAM and L2 bandwidths bound the kernel from below.
//   kernel time = launch overhead + max(schedule makespan, DRAM bytes / HBM bandwidth,
//                                       L2 bytes / L2 bandwidth)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/kernel_record.hpp"
#include "gpu/gpu_spec.hpp"
#include "model/block_scheduler.hpp"

namespace fasim {

struct ModelOptions {
    // fp16/bf16 products on tensor cores (as FlashAttention does). false: every
    // product on the CUDA cores at the FP32 rate (fa-sim's own first CUDA kernels).
    bool tensor_cores = true;
    // The instruction the flash kernels' products run on (kernels/kernel_execution.hpp): mma.sync, as
    // FlashAttention-2's kernels and fa-sim's tensor-core kernels; wgmma for a Hopper kernel (the kernel
    // catalog's Products::wgmma). Library GEMMs keep their own.
    MatrixInstruction flash_instruction = MatrixInstruction::mma_sync;
    // Count by running every block and every loop iteration (the counting executor's by-block path)
    // instead of one of each class of alike blocks and iterations: the same counts, slower (--count block).
    bool count_every_block = false;
};

// How the model takes an mma.sync kernel's issue rate (model/runtime_model.cpp): the readiness law
// 1 - (1 - p)^n, FA2's step measured alone (GpuSpec::Model::fa2_step_issue), or fa2_bwd_tc's backward step
// measured alone (GpuSpec::Model::fa2_bwd_step_issue); none for other runs.
enum class IssueLaw : std::uint8_t { none, readiness, fa2_step, fa2_bwd_step };
const char* issue_law_name(IssueLaw law);

struct KernelTiming {
    std::string name;
    std::int64_t grid = 0;
    std::int64_t concurrent_blocks = 0;  // SMs x blocks per SM
    double waves = 0;                    // grid / concurrent blocks
    int idle_sms = 0;                    // SMs with no block at all (grid < SMs)
    double sm_busy_fraction = 0;         // SM-time spent on blocks / (SMs x makespan)
    double issue_fraction = 1;           // share of cycles a scheduler issues (latency hiding): CUDA-core and
                                         // mma.sync runs; 1 for library GEMMs
    IssueLaw issue_law = IssueLaw::none; // where issue_fraction of an mma.sync run comes from
    double warps_per_scheduler = 0;      // the warps of the blocks an SM runs at once, per scheduler

    // Block-level terms, summed over the busiest SM's blocks (seconds).
    double matmul_s = 0, nonmatmul_s = 0, sfu_s = 0, smem_s = 0, l2_per_sm_s = 0;
    double issue_s = 0;        // mma.sync kernels: warp instructions / the rate the schedulers issue them
    // wgmma kernels with warp-specialised warpgroups: compute is max(matmul, non-mm + exp), the products of
    // one warpgroup overlapping the softmax of another, instead of their sum.
    bool overlapped_products = false;
    double memory_latency_s = 0;  // the busiest SM's blocks' DRAM bytes x latency / bytes in flight (Little's
                                  // law), over the blocks it holds at once; 0 where the kernel has no such term
    // Blocks computing on fewer warps than schedulers: the busiest SM's blocks' computing-warp instructions at
    // one warp's latency-bound rate, over the blocks it holds at once (BlockTerms::chain); 0 otherwise.
    double warp_chain_s = 0;
    // Blocks alone on their SM (one resident): the busiest SM's blocks' fill and drain, what each waits for
    // its first tiles before its first product and spends storing its output after its last (BlockTerms::
    // fill), added to their compute. 0 where blocks share an SM (another block computes meanwhile) and for
    // library GEMMs (their measured rate holds it).
    double fill_s = 0;
    double schedule_s = 0;     // makespan of the greedy schedule
    // How far the greedy's makespan may be from schedule_s: 0 where every block was placed, else at most half
    // the longest block (a long kernel's blocks past the scheduler's budget spread evenly: schedule_blocks).
    double schedule_bound_s = 0;
    double dram_s = 0, l2_s = 0;  // chip-wide bandwidth bounds (l2_s: sectors or requests, the longer)
    double l2_requests_s = 0;     // the L2 slices' lookups alone: requests / l2_request_rate
    double launch_s = 0;
    double total_s = 0;
    std::string bound;         // what decides total_s
    std::vector<ScheduledBlock> timeline;  // the first blocks scheduled (for plots)
};

KernelTiming time_kernel(const KernelRecord& k, const GpuSpec& gpu, DType dtype, const ModelOptions& options,
                         std::size_t timeline_blocks = 0);

}  // namespace fasim
