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
        double fp32_flops = 0;
        // Warp-level mma.sync (m16n8k16) products: what FlashAttention-2's kernels issue. On Hopper
        // they peak below the wgmma rate that cuBLAS reaches (cuda/bench/peak_rates.cu measures both).
        double mma_sync_fp16_flops = 0;
        double mma_sync_bf16_flops = 0;
        // Requests the L2 slices serve per second (a request: the sectors of one 128-byte line that one
        // warp access asks for, 1 to 4). Loads that touch a sector per line, as the naive GEMM's do,
        // are bound by it rather than by l2_bandwidth (cuda/bench/peak_rates.cu measures it).
        double l2_requests = 0;
        std::string source;            // command, driver, date
    } measured;

    // Where each number came from (field name -> source text), shown by --list-gpus.
    std::vector<std::pair<std::string, std::string>> sources;

    // Rates the runtime model uses: the measured ceiling where known, else the datasheet.
    // fp32 storage runs on the CUDA cores (no TF32), as the fp32 kernels in cuda/ do.
    double matmul_flops(DType dtype) const;
    // The rate of kernels that issue warp-level mma.sync: the measured mma.sync ceiling where known,
    // else matmul_flops (before Hopper, mma.sync is the tensor cores' only instruction).
    double mma_sync_flops(DType dtype) const;
    double effective_fp32_flops() const;
    double effective_hbm_bandwidth() const;
    // L2 requests per second: measured where known, else l2_bandwidth / kL2BytesPerRequest.
    double l2_request_rate() const;
    // The H200's measured L2 bandwidth over its measured request rate is 62 bytes (ncu: 94 slices at
    // 1.71 GHz, 0.9 requests and 1.7 sectors per slice and clock). GPUs without a measured request
    // rate are taken to have the same ratio (cuda/results/README.md, ninth run).
    static constexpr double kL2BytesPerRequest = 64;
};

}  // namespace fasim
