#include "model/runtime_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "kernels/cuda_core_products.hpp"

namespace fasim {

namespace {

// CUDA-core products: one FFMA per warp instruction, its operands loaded from shared memory just
// before. A scheduler (gpu.model.schedulers_per_sm per SM) hides that latency only with several warps
// to choose from. The model takes each warp to be ready in a share p of cycles
// (gpu.model.cuda_core_warp_ready: 0.37 on the H200, Nsight Compute's smsp__issue_active of fa-sim's
// fa2 fp32 kernel with one warp per scheduler), independently of the others: a scheduler with W warps
// issues in 1 - (1 - p)^W of cycles. Tensor-core kernels are not subject to it.
//
// Warp-level mma.sync kernels (FlashAttention's way) are latency-bound as well: the mma results,
// the exponentials and the quad shuffles of the online softmax wait on one another. With R independent
// 16-row mma blocks per warp (a warp with 32 rows counts as 2 warps), each ready in a share p of cycles
// (gpu.model.mma_sync_warp_ready: 0.17 on the H200, the mean of what ncu's issue counters give for six
// kernels, read from the counters, not fitted to the measured times), a scheduler issues in
// 1 - (1 - p)^(W R) of cycles, and such a kernel's blocks take at least their warp instructions
// (kernels/issue_costs.hpp) over that rate. The GPU file gives both (docs/gpu-file.md, "model").
//
// That law's shape is wrong for FA2's forward step (cuda/results/2026-11-30-h200-attention-step/): the
// step alone issues in a third of cycles with one block of it per scheduler, and more warps add little,
// because they queue for the same tensor pipe and MUFU/shuffle units. Where the GPU file holds the step's
// issue rate by blocks per scheduler, measured on the step alone (gpu.model.fa2_step_issue_d64/_d128:
// the attention-step probe, fa-calibrate), kernels whose loop is that step (KernelExecution::fa2_step_d)
// take it instead, where an SM holds two or more of their blocks at once. The probe's step has no copies
// to wait for and no barriers; a kernel's block waits at three barriers per K/V tile, for the copy of V_j
// among others, and only another block's warps issue meanwhile. A block alone on its SM (a decoding step,
// a grid smaller than the SMs) leaves those waits exposed: it keeps the readiness p, read from whole
// kernels' counters, which hold such waits, and so does a computing warp alone in its block for its own
// chain (2026-11-30-h200-lone-warps/: fa2_tc's lone decode warp issues 0.23 per cycle, its step alone 0.32).
//
// fa2_bwd_tc's step is another loop body: five products per tile pair, dS^T through shared memory between two
// barriers, dQ added with atomics, one block of 8 warps per SM. The backward-step probe times that step in that
// shape (gpu.model.fa2_bwd_step_issue_d64/_d128; cuda/results/2026-12-01-h200-backward-step/: 0.26 and 0.22
// of cycles on the H200, where the law gives 0.77 for its 2 warps x 4 mma blocks per scheduler), barriers and
// shared-memory waits included, so the kernel, always alone on its SM, takes the rate as it is.

struct SmRates {
    double matmul, fp32, sfu, smem, l2, l2_requests;  // per SM, per second
    double issue = 0;                    // warp instructions per SM per second (mma.sync kernels; 0: no issue term)
    // One computing warp's instructions per second at its own latency-bound rate, and the warps that
    // compute in a block (BlockTerms::chain; 0: no chain term, every warp computes).
    double warp_issue = 0, computing_warps = 1, block_warps = 1;
    // Schedulers of the SM over those that issue the computing warps' own instructions (1 unless a
    // split-Q block has fewer computing warps than schedulers: KernelExecution::warp_rows).
    double issue_concentration = 1;
    // CUDA-core runs (kernels/cuda_core_products.hpp): shared memory is timed by the wavefronts its pipe
    // serves (128 bytes each), which every lane's own operand loads multiply, and products by the FLOPs
    // the lanes execute (whole micro-tiles); otherwise by the bytes moved and the tile's FLOPs.
    bool cuda_core_lanes = false;
    bool overlapped_products = false;  // wgmma kernels (BlockTerms::overlapped_products)
    // Little's law: a block with F bytes in flight streams from DRAM at most F / latency (seconds per
    // DRAM byte = latency / F); dram_share: the kernel's DRAM bytes over its L2 bytes, the part of a
    // block's L2 traffic that misses. 0: no such term (kernels/kernel_execution.hpp, bytes_in_flight).
    double latency_s_per_byte = 0, dram_share = 0;
    // A block's fill and drain (BlockTerms::fill): its first load's latency, before its first product.
    // false: a library GEMM, whose measured rate already holds its tiles' fill and drain (a persistent
    // kernel overlaps one tile's stores and the next tile's loads with its products).
    bool block_fill = false;
    double dram_latency_s = 0;
};

BlockTerms terms(const BlockWork& w, const SmRates& r) {
    const double smem_bytes = r.cuda_core_lanes ? static_cast<double>(w.smem_wavefronts * cuda_core::kWavefrontBytes)
                                                : static_cast<double>(w.smem_bytes);
    const double matmul_flops = static_cast<double>(r.cuda_core_lanes ? w.lane_matmul_flops : w.matmul_flops);
    const double l2 = std::max(static_cast<double>(w.l2_bytes) / r.l2, static_cast<double>(w.l2_requests) / r.l2_requests);
    BlockTerms t{matmul_flops / r.matmul, static_cast<double>(w.nonmatmul_flops) / r.fp32,
                 static_cast<double>(w.sfu_ops) / r.sfu, smem_bytes / r.smem, l2};
    t.latency = static_cast<double>(w.l2_bytes) * r.dram_share * r.latency_s_per_byte;
    if (r.block_fill && w.matmul_flops > 0)
        t.fill = r.dram_latency_s + static_cast<double>(w.prologue_bytes + w.epilogue_bytes) / r.l2;
    t.overlapped_products = r.overlapped_products;
    if (r.issue > 0) {
        t.latency_bound_tensor = true;
        // The busiest scheduler's share, times the SM's schedulers: what every warp issues (copies,
        // barriers) spreads over all of them, the computing warps' own work over theirs.
        const double shared = static_cast<double>(w.shared_thread_instructions);
        const double own = static_cast<double>(w.thread_instructions) - shared;
        t.issue = (shared + own * r.issue_concentration) / 32.0 / r.issue;
        // A computing warp's own instructions and its share of every warp's (the block's warps split those).
        if (r.warp_issue > 0) t.chain = (own / r.computing_warps + shared / r.block_warps) / 32.0 / r.warp_issue;
    }
    return t;
}

}  // namespace

const char* issue_law_name(IssueLaw law) {
    switch (law) {
        case IssueLaw::readiness: return "readiness";
        case IssueLaw::fa2_step: return "fa2_step";
        case IssueLaw::fa2_bwd_step: return "fa2_bwd_step";
        case IssueLaw::none: break;
    }
    return "none";
}

KernelTiming time_kernel(const KernelRecord& k, const GpuSpec& gpu, DType dtype, const ModelOptions& options,
                         std::size_t timeline_blocks) {
    KernelTiming t;
    t.name = k.desc.name;
    t.grid = k.desc.grid();
    const int bps = std::max(1, k.occupancy.blocks_per_sm);
    t.concurrent_blocks = static_cast<std::int64_t>(gpu.sm_count) * bps;
    // The block scheduler deals blocks to the SMs round-robin: a grid smaller than the SMs times the
    // occupancy leaves ⌈grid/SMs⌉ blocks on an SM, not as many as would fit (32 decode blocks on 132
    // SMs run alone, each with its SM's whole bandwidth and its schedulers).
    const int resident = static_cast<int>(std::min<std::int64_t>(bps, (t.grid + gpu.sm_count - 1) / gpu.sm_count));
    t.waves = static_cast<double>(t.grid) / static_cast<double>(t.concurrent_blocks);
    t.idle_sms = static_cast<int>(std::max<std::int64_t>(0, gpu.sm_count - t.grid));

    const double sms = gpu.sm_count;
    const bool mma_sync = k.execution.instruction == MatrixInstruction::mma_sync;
    const bool wgmma = k.execution.instruction == MatrixInstruction::wgmma;
    const double mm_rate = !options.tensor_cores ? gpu.effective_fp32_flops()
                         : mma_sync           ? gpu.mma_sync_flops(dtype)
                                              : gpu.matmul_flops(dtype);
    const double warps_per_scheduler = static_cast<double>(resident * k.desc.warps) / gpu.model.schedulers_per_sm;
    t.warps_per_scheduler = warps_per_scheduler;
    // A split-Q block with fewer rows than warps (a decoding step's one query row) computes on its first
    // warps only; the other warps only copy. Warps go to the schedulers by their slot in the SM (slot mod
    // schedulers), and the SM gives blocks sharing it slots that put their first warps on different
    // schedulers (peak-rates --warp-slots on an H200: 2, 3 or 4 blocks of 4 warps, each first warp on a
    // scheduler of its own, their FFMA chains as fast as one block's; cuda/results/2026-11-28-h200-slots/).
    // So the computing warps of the resident blocks spread over that many schedulers.
    double issuing_schedulers = gpu.model.schedulers_per_sm;
    if (k.active_warps > 0 && k.active_warps < k.desc.warps && k.desc.warps >= gpu.model.schedulers_per_sm)
        issuing_schedulers = std::min<double>(gpu.model.schedulers_per_sm, static_cast<double>(k.active_warps) * resident);
    // Products on the tensor cores through mma.sync with 16-bit operands: latency-bound issue (above).
    // Kernels without products (FA1's init, standard's softmax) are not: the cost table describes the
    // operations of flash kernels only.
    const bool mma_latency = options.tensor_cores && mma_sync && dtype != DType::fp32 && k.matmul_flops > 0;
    if (!options.tensor_cores) t.issue_fraction = 1.0 - std::pow(1.0 - gpu.model.cuda_core_warp_ready, warps_per_scheduler);
    else if (mma_latency) {
        const double row_blocks_per_scheduler = warps_per_scheduler * k.row_blocks_per_warp;
        const std::vector<double>& step = gpu.model.fa2_step_issue(k.execution.fa2_step_d);
        t.issue_law = k.execution.fa2_step_d > 0 && !step.empty() && resident >= 2 ? IssueLaw::fa2_step : IssueLaw::readiness;
        t.issue_fraction = t.issue_law == IssueLaw::fa2_step ? GpuSpec::step_issue_fraction(step, row_blocks_per_scheduler)
                                                             : 1.0 - std::pow(1.0 - gpu.model.mma_sync_warp_ready, row_blocks_per_scheduler);
        // fa2_bwd_tc's step, measured in the kernel's own shape (one block of 8 warps per SM, its barriers
        // included): its rate as it is, where the GPU file has it and the kernel runs in that shape.
        const double bwd_step = gpu.model.fa2_bwd_step_issue(k.execution.fa2_bwd_step_d);
        if (k.execution.fa2_bwd_step_d > 0 && bwd_step > 0 && resident == 1 && k.desc.warps == 2 * gpu.model.schedulers_per_sm) {
            t.issue_law = IssueLaw::fa2_bwd_step;
            t.issue_fraction = bwd_step;
        }
    }
    const double issue = options.tensor_cores ? 1.0 : t.issue_fraction;  // CUDA cores: scales their rates
    // A library GEMM on the tensor cores moves its operands through shared memory its own way
    // (large wgmma tiles); the measured library rate already includes that, so the tile program's
    // 64x64 operand traffic does not bound it.
    const bool library_smem_in_rate = options.tensor_cores && !mma_sync && dtype != DType::fp32;
    const double smem_rate = library_smem_in_rate ? std::numeric_limits<double>::infinity() : gpu.smem_bandwidth_per_sm;
    // Non-matmul FLOPs (max, add, multiply, compare) are one instruction each, not fused pairs: the
    // FP32 pipe retires them at half its FFMA FLOP rate (docs/flop-accounting.md counts FLOPs).
    const double nonmatmul_rate = gpu.effective_fp32_flops() / 2;
    SmRates r{issue * mm_rate / sms, issue * nonmatmul_rate / sms, issue * gpu.effective_sfu_ops() / sms, smem_rate,
              gpu.l2_bandwidth / sms, gpu.l2_request_rate() / sms};
    if (mma_latency) {
        r.issue = gpu.model.schedulers_per_sm * gpu.clock_hz * t.issue_fraction;
        r.issue_concentration = gpu.model.schedulers_per_sm / issuing_schedulers;
        // A block computing on fewer warps than the SM has schedulers: each computing warp issues its own
        // instructions at one warp's rate, however many others share its scheduler (BlockTerms::chain).
        if (k.active_warps > 0 && k.active_warps < gpu.model.schedulers_per_sm) {
            r.warp_issue = gpu.clock_hz * (1.0 - std::pow(1.0 - gpu.model.mma_sync_warp_ready, k.row_blocks_per_warp));
            r.computing_warps = k.active_warps;
            r.block_warps = k.desc.warps;
        }
    }
    r.cuda_core_lanes = !options.tensor_cores;
    r.block_fill = k.execution.instruction != MatrixInstruction::library_gemm;
    r.dram_latency_s = gpu.model.dram_latency_s;
    r.overlapped_products = options.tensor_cores && wgmma && dtype != DType::fp32;
    if (k.execution.bytes_in_flight > 0 && gpu.model.dram_latency_s > 0 && k.l2.total() > 0) {
        r.latency_s_per_byte = gpu.model.dram_latency_s / static_cast<double>(k.execution.bytes_in_flight);
        r.dram_share = std::min(1.0, static_cast<double>(k.dram.total()) / static_cast<double>(k.l2.total()));
    }

    // Greedy list scheduling over the slots, in launch order (head-major).
    std::vector<TimedBlocks> head;
    head.reserve(k.block_work.size());
    k.block_work.for_each_entry([&](const BlockWork& work, std::int64_t count) {
        const BlockTerms bt = terms(work, r);
        head.push_back({bt, bt.duration(resident), count});
    });
    BlockSchedule schedule = schedule_blocks(head, k.desc.heads / k.heads_simulated, gpu.sm_count, bps, timeline_blocks, k.block_work.repeats());
    const double makespan = schedule.makespan_s, busy = schedule.block_seconds / resident;
    const BlockTerms& busiest = schedule.busiest;  // the busiest SM's terms, summed over its blocks
    t.timeline = std::move(schedule.timeline);
    t.matmul_s = busiest.matmul;
    t.nonmatmul_s = busiest.nonmatmul;
    t.sfu_s = busiest.sfu;
    t.smem_s = busiest.smem;
    t.l2_per_sm_s = busiest.l2;
    t.issue_s = busiest.issue;
    t.overlapped_products = busiest.overlapped_products;
    t.memory_latency_s = busiest.latency / resident;  // resident blocks overlap their latencies
    t.warp_chain_s = busiest.chain / resident;        // and run their computing warps side by side
    t.fill_s = resident == 1 ? busiest.fill : 0;
    t.schedule_s = makespan;
    t.schedule_bound_s = schedule.makespan_bound_s;
    t.sm_busy_fraction = makespan > 0 ? busy / (sms * makespan) : 0;

    t.dram_s = static_cast<double>(k.dram.total()) / gpu.effective_hbm_bandwidth();
    // The L2 moves sectors at l2_bandwidth and its slices look up requests (lines per warp access) at
    // l2_request_rate: loads that touch one sector per line (the naive GEMM's) are bound by the second.
    const double l2_sectors_s = static_cast<double>(k.l2.total()) / gpu.l2_bandwidth;
    t.l2_requests_s = static_cast<double>(k.l2_requests()) / gpu.l2_request_rate();
    t.l2_s = std::max(l2_sectors_s, t.l2_requests_s);
    t.launch_s = gpu.launch_overhead_s;
    const double body = std::max({t.schedule_s, t.dram_s, t.l2_s});
    t.total_s = t.launch_s + body;
    const bool l2_requests_bind = t.l2_requests_s > l2_sectors_s;

    if (body == t.dram_s) t.bound = "DRAM bandwidth";
    else if (body == t.l2_s) t.bound = l2_requests_bind ? "L2 requests (a sector per line)" : "L2 bandwidth";
    else {
        const double compute = busiest.compute();
        std::string what;
        if (t.memory_latency_s > std::max({compute, t.smem_s, t.l2_per_sm_s})) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "DRAM latency: %.0f KB in flight per block over %.0f ns (Little's law), %d block%s per SM",
                          static_cast<double>(k.execution.bytes_in_flight) / 1024, gpu.model.dram_latency_s * 1e9, resident,
                          resident == 1 ? "" : "s");
            what = buf;
        } else if (t.warp_chain_s > std::max({compute, t.smem_s, t.l2_per_sm_s})) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "one warp's instructions (mma.sync, latency-bound): %d computing warp%s a block, %d block%s per SM",
                          k.active_warps, k.active_warps == 1 ? "" : "s", resident, resident == 1 ? "" : "s");
            what = buf;
        } else if (compute >= t.smem_s && compute >= t.l2_per_sm_s) {
            if (mma_latency && t.issue_s >= t.matmul_s + t.nonmatmul_s + t.sfu_s)
                what = "instruction issue (mma.sync, latency-bound)";
            // matmul, non-matmul and exp add (the same warps issue them): the bound is the one that is at
            // least half of their sum, or the sum itself when none is.
            else if (t.matmul_s >= t.nonmatmul_s + t.sfu_s) what = !options.tensor_cores || dtype == DType::fp32 ? "FP32 matmul"
                                       : mma_sync ? "tensor cores (mma.sync)" : wgmma ? "tensor cores (wgmma)" : "tensor cores";
            else if (wgmma && busiest.overlapped_products)
                what = "softmax (non-matmul + exp), which the other warpgroup's products overlap";
            else if (t.nonmatmul_s >= t.matmul_s + t.sfu_s) what = "FP32 non-matmul work";
            else if (t.sfu_s >= t.matmul_s + t.nonmatmul_s) what = "exp on the SFUs (non-matmul)";
            else what = "arithmetic: matmul + non-matmul + exp, which add (none is half)";
        } else if (t.smem_s >= t.l2_per_sm_s) what = "shared-memory bandwidth";
        else what = l2_requests_bind ? "L2 requests per SM (a sector per line)" : "L2 bandwidth per SM";
        t.bound = what;
        // Few warps to hide latency, where latency decides (CUDA cores; mma.sync when issue binds): say how many.
        const bool latency_decides = !options.tensor_cores || (mma_latency && what.rfind("instruction issue", 0) == 0);
        if (latency_decides && t.issue_fraction < 0.9 && compute >= t.smem_s && compute >= t.l2_per_sm_s) {
            char buf[64];
            std::snprintf(buf, sizeof buf, ", %.2g warp%s/scheduler", warps_per_scheduler, warps_per_scheduler == 1 ? "" : "s");
            t.bound += buf;
        }
        if (t.sm_busy_fraction < 0.75) t.bound += " (with " + std::to_string(static_cast<int>((1 - t.sm_busy_fraction) * 100 + 0.5)) + "% of SM time idle)";
    }
    return t;
}

}  // namespace fasim
