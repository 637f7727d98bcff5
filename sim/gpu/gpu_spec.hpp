// What the simulator needs to know about one GPU: sizes of each memory level,
// their bandwidths, the SM limits that decide occupancy, and the arithmetic rates.
// Presets live as JSON files in sim/gpu/presets/ (each number with its source);
// a user can describe any other GPU in the same format (--gpu-file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "problem/dtype.hpp"

namespace fasim {

struct GpuSpec {
    std::string name;         // e.g. "A100-SXM4-40GB"
    std::string description;  // one line for --list-gpus
    std::string architecture; // "Ampere", "Hopper", "Turing", "Ada"
    int compute_capability = 0;  // 80 for sm_80

    // Streaming multiprocessors and their occupancy limits.
    int sm_count = 0;
    int max_warps_per_sm = 0;
    int max_blocks_per_sm = 0;
    int registers_per_sm = 0;         // 32-bit registers
    int max_registers_per_thread = 0; // 255 on all supported GPUs
    std::int64_t smem_per_sm_bytes = 0;     // shared-memory carve-out maximum per SM
    std::int64_t smem_per_block_bytes = 0;  // opt-in maximum for one thread block
    double clock_hz = 0;                    // boost clock used for the rates below

    // Memory levels.
    std::int64_t hbm_bytes = 0;        // device memory capacity
    double hbm_bandwidth = 0;          // bytes/s, datasheet
    std::int64_t l2_bytes = 0;
    double l2_bandwidth = 0;           // bytes/s, SM<->L2 aggregate
    double smem_bandwidth_per_sm = 0;  // bytes/s per SM (bytes/clk/SM x clock)

    // Arithmetic rates, FLOP/s (dense, no sparsity).
    double tensor_fp16_flops = 0;  // fp16 inputs, fp32 accumulate
    double tensor_bf16_flops = 0;  // 0 where the GPU has no bf16 tensor cores (T4)
    double tensor_tf32_flops = 0;
    double fp32_flops = 0;         // FMA counted as 2 FLOPs
    double sfu_ops = 0;            // special-function (exp) results per second

    double launch_overhead_s = 0;  // per kernel launch

    // Ceilings measured on a real card (0 = not measured). Where present, the runtime
    // model uses them instead of the datasheet numbers, and the report says so.
    struct Measured {
        double hbm_bandwidth = 0;      // device-to-device copy, read+write bytes / s
        double tensor_fp16_flops = 0;
        double tensor_bf16_flops = 0;
        double fp32_flops = 0;         // cuBLAS SGEMM (fa-calibrate): every FP32 rate of the model
        // FFMA issued from registers (cuda/bench/microbench.cu): the FP32 pipe's peak, above the SGEMM rate
        // (this project's H100: 61.7 against 52.0 TFLOP/s). Recorded, not used by the model: run at this
        // peak, the CUDA-core FA2 at d = 64 comes within 4% of the committed runs, but FA1 (both head dims)
        // and FA2 at d = 128 come out 11-30% fast (docs/gpu-file.md, "How fa-sim uses the rates"). The model does not count these
        // kernels' other instructions (shared-memory loads, address arithmetic), which the lower SGEMM
        // rate may have been standing in for.
        double ffma_flops = 0;
        // Warp-level mma.sync (m16n8k16) products: what FlashAttention-2's kernels issue. On Hopper
        // they peak below the wgmma rate that cuBLAS reaches (cuda/bench/peak_rates.cu measures both).
        double mma_sync_fp16_flops = 0;
        double mma_sync_bf16_flops = 0;
        // Requests the L2 slices serve per second (a request: the sectors of one 128-byte line that one
        // warp access asks for, 1 to 4). Loads that touch a sector per line, as the naive GEMM's do,
        // are bound by it rather than by l2_bandwidth (cuda/bench/peak_rates.cu measures it).
        double l2_requests = 0;
        double sfu_ops = 0;            // exp2 (MUFU.EX2) results per second
        std::string source;            // command, driver, date
    } measured;

    // Where each number came from (field name -> source text), shown by --list-gpus.
    std::vector<std::pair<std::string, std::string>> sources;

    // The runtime model's calibration constants: facts of the architecture and numbers read off
    // microbenchmarks or profiler counters of a real card, never fitted to attention timings. A GPU
    // file sets them under "model"; a key it leaves out takes its architecture's default
    // (sim/gpu/model_defaults.json, by compute capability), and `sources` says which.
    struct Model {
        // Warp schedulers per SM (4 on every architecture since Maxwell): the issue terms count warps
        // per scheduler.
        int schedulers_per_sm = 0;
        // Share of cycles one warp of a CUDA-core flash kernel is ready to issue (a scheduler with W
        // warps issues in 1 - (1 - p)^W of cycles; docs/model.md, "Latency hiding on the CUDA cores").
        double cuda_core_warp_ready = 0;
        // The same for one 16-row mma block of an mma.sync flash kernel (docs/model.md, "Issue on the
        // tensor cores").
        double mma_sync_warp_ready = 0;
        // The issue rate of FlashAttention-2's forward step on the tensor cores (S = Q K^T over a 64-key
        // tile, the online softmax, O += P V), measured on the step alone by the attention-step probe
        // (cuda/bench/attention_step.hpp): warp instructions a scheduler issues per cycle with n = 1, 2, ...
        // 16-row mma blocks on it (entry n - 1; past the last entry, the last), at d = 64 and d = 128.
        // Kernels whose loop is that step (KernelExecution::fa2_step_d) issue at it where an SM holds two or
        // more of their blocks; empty: not measured for this architecture, and they take the readiness law
        // above (docs/model.md, "FA2's step, measured alone").
        std::vector<double> fa2_step_issue_d64, fa2_step_issue_d128;
        // The table for head dimension d: the measured d nearest to it (d <= 96: d = 64's), or the other
        // where only one was measured; empty where neither was.
        const std::vector<double>& fa2_step_issue(int d) const;
        // The issue rate of fa2_bwd_tc's backward step, measured alone by the backward-step probe
        // (cuda/bench/backward_step.hpp) in the kernel's own shape, one block of 8 warps per SM (2 per
        // scheduler, its barriers and dQ atomics included): warp instructions a scheduler issues per cycle,
        // at d = 64 and d = 128. Kernels whose loop is that step (KernelExecution::fa2_bwd_step_d) issue at
        // it; 0: not measured for this architecture, and they take the readiness law.
        double fa2_bwd_step_issue_d64 = 0, fa2_bwd_step_issue_d128 = 0;
        // The rate for head dimension d: the measured d nearest to it (d <= 96: d = 64's), or the other where
        // only one was measured; 0 where neither was.
        double fa2_bwd_step_issue(int d) const;
        // Bytes of L2 bandwidth per L2 request, where the request rate is not measured:
        // l2_request_rate() = l2_bandwidth / this.
        double l2_bytes_per_request = 0;
        // The output tiles, k-step and warps a library GEMM (cuBLAS, fp16/bf16 on the tensor cores)
        // picks for attention's products: S = QK^T rows x cols, O = PV (outputs / d) x d, at most
        // max_rows rows (algorithms/standard_attention.cpp).
        int library_gemm_s_rows = 0, library_gemm_s_cols = 0;
        int library_gemm_o_outputs = 0, library_gemm_o_max_rows = 0;
        int library_gemm_k_step_bytes = 0, library_gemm_warps = 0;
        // The rate warp-level mma.sync reaches, as a share of the dense tensor-core peak, where the card's
        // mma.sync ceiling is not measured: 1 where mma.sync is the tensor cores' full path (sm_75 to
        // sm_89), about two thirds on Hopper, whose dense peak needs wgmma (docs/model.md).
        double mma_sync_peak_fraction = 0;
        // The FP32 rate the model uses (what cuBLAS's SGEMM reaches, measured.fp32_flops where fa-calibrate ran) as a
        // share of the datasheet FP32 rate, where the card's is not measured: on Hopper 0.76 (the H200's SGEMM; the
        // datasheet counts every FFMA at the 1.98 GHz boost clock), 1 before Hopper, where nothing was measured.
        double fp32_peak_fraction = 0;
        // Seconds from a load that misses L2 to its data: with F bytes in flight a block streams from
        // DRAM at most F / this (Little's law; docs/model.md, "Memory latency").
        double dram_latency_s = 0;
    } model;

    // The share of cycles a scheduler issues with n 16-row mma blocks of FA2's step on it, from a
    // Model::fa2_step_issue table (not empty): linear between its entries and from 0 at n = 0, its last
    // entry past its end (more warps than the probe ran add nothing: the tensor pipe is saturated).
    static double step_issue_fraction(const std::vector<double>& table, double n);

    // Rates the runtime model uses: the measured ceiling where known, else the datasheet.
    // fp32 storage runs on the CUDA cores (no TF32), as the fp32 kernels in cuda/ do.
    double matmul_flops(DType dtype) const;
    // The rate of kernels that issue warp-level mma.sync: the measured mma.sync ceiling where known,
    // else model.mma_sync_peak_fraction of the datasheet tensor-core rate (1 before Hopper, where
    // mma.sync is the tensor cores' only instruction); without tensor cores for the dtype, matmul_flops.
    double mma_sync_flops(DType dtype) const;
    // Every FP32 rate of the model (CUDA-core products, non-matmul work): the measured SGEMM rate where known, else
    // model.fp32_peak_fraction of the datasheet FP32 rate.
    double effective_fp32_flops() const;
    double effective_hbm_bandwidth() const;
    double effective_sfu_ops() const;
    // L2 requests per second: measured where known, else l2_bandwidth / model.l2_bytes_per_request.
    double l2_request_rate() const;
    // The measured ceilings the model uses, as "copy 4.19 TB/s, mma.sync fp16 642 TFLOP/s, ..."
    // (empty when none): the report names them.
    std::string measured_ceilings_text() const;
};

}  // namespace fasim
