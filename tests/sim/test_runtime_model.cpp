// The runtime model's choice of arithmetic rate per kernel.
#include <catch2/catch.hpp>

#include <cmath>

#include "kernels/kernel_catalog.hpp"
#include "model/kernel_setup.hpp"
#include "test_helpers.hpp"

using namespace fasim;
using namespace fasim::test;

namespace {

// Seconds of matmul work on the busiest SM, divided by the FLOPs it did: the rate the model used.
double matmul_seconds(const AlgorithmResult& r, const std::string& kernel) {
    for (const KernelTiming& t : r.timing)
        if (t.name == kernel) return t.matmul_s;
    FAIL("no kernel " << kernel);
    return 0;
}

}  // namespace

TEST_CASE("Hopper: flash kernels run at the measured mma.sync rate, standard's GEMMs at cuBLAS's", "[model][hopper]") {
    const GpuSpec h200 = find_gpu_preset("H200");
    REQUIRE(h200.mma_sync_flops(DType::fp16) < h200.matmul_flops(DType::fp16));
    const AttentionProblem p = problem(4096, 64, 16, DType::fp16);

    // Same GPU with the mma.sync ceiling removed: the flash kernel runs at Hopper's default share of the
    // datasheet tensor rate (0.65, model_defaults.json), not at cuBLAS's measured rate; standard's GEMMs
    // do not change.
    GpuSpec no_mma = h200;
    no_mma.measured.mma_sync_fp16_flops = 0;
    REQUIRE(no_mma.model.mma_sync_peak_fraction == 0.65);
    const double ratio = 0.65 * h200.tensor_fp16_flops / h200.mma_sync_flops(DType::fp16);

    const AlgorithmResult fa2 = simulate(algorithm("fa2"), p, h200, {}, {});
    const AlgorithmResult fa2_lib = simulate(algorithm("fa2"), p, no_mma, {}, {});
    CHECK(matmul_seconds(fa2, "fa2_forward") / matmul_seconds(fa2_lib, "fa2_forward") == Approx(ratio).epsilon(1e-9));
    // At d=64 the online softmax outweighs the mma.sync time (FA2 paper, section 3.1: non-matmul FLOPs
    // are far slower): with the default 128x128 tiles each warp holds two 16-row mma blocks, enough
    // independent work that the pipes, not the issue latency, bound it.
    const KernelTiming& t = fa2.timing.front();
    CHECK(t.nonmatmul_s + t.sfu_s > t.matmul_s);
    CHECK(t.issue_s < t.matmul_s + t.nonmatmul_s + t.sfu_s);
    CHECK(t.bound.find("non-matmul") != std::string::npos);

    const AlgorithmResult std_h = simulate(algorithm("standard"), p, h200, {}, {});
    const AlgorithmResult std_lib = simulate(algorithm("standard"), p, no_mma, {}, {});
    CHECK(matmul_seconds(std_h, "gemm_qk") == matmul_seconds(std_lib, "gemm_qk"));
    CHECK(matmul_seconds(std_h, "gemm_pv") == matmul_seconds(std_lib, "gemm_pv"));
}

TEST_CASE("CUDA-core runs: the fp32 rate, scaled by how often a scheduler finds a warp to issue", "[model]") {
    const GpuSpec h200 = find_gpu_preset("H200");
    ModelOptions cuda_cores;
    cuda_cores.tensor_cores = false;
    const AttentionProblem p = problem(2048, 64, 16, DType::fp32);
    const AlgorithmResult fa2 = simulate(algorithm("fa2"), p, h200, {}, cuda_cores);
    const KernelTiming& t = fa2.timing.front();
    // fa-sim's CUDA-core FA2 stages S in shared memory: 160 KiB per block, one 4-warp block per SM,
    // one warp per scheduler, which issues in 37% of cycles (ncu on the H200).
    CHECK(fa2.tiles.scores == Space::Shared);
    CHECK(fa2.kernels.front().occupancy.blocks_per_sm == 1);
    CHECK(t.issue_fraction == Approx(0.37));
    const double flops_on_busiest_sm = static_cast<double>(fa2.kernels.front().block_work.front().matmul_flops) *
                                       std::ceil(static_cast<double>(t.grid) / h200.sm_count);
    CHECK(matmul_seconds(fa2, "fa2_forward") ==
          Approx(flops_on_busiest_sm / (0.37 * h200.effective_fp32_flops() / h200.sm_count)).epsilon(1e-9));

    // Standard attention's GEMMs hold 8 warps per block and several blocks per SM: latency is hidden.
    const AlgorithmResult standard = simulate(algorithm("standard"), p, h200, {}, cuda_cores);
    for (const KernelTiming& k : standard.timing) {
        INFO(k.name);
        CHECK(k.issue_fraction > 0.95);
    }
    // Two warps per scheduler: each ready 37% of the time, independently.
    CHECK(1 - (1 - 0.37) * (1 - 0.37) == Approx(0.6031));
}

TEST_CASE("mma.sync runs: FA2's step issues at its measured rate, other kernels at the readiness law, and the "
          "schedulers' issue rate bounds the kernel",
          "[model][issue]") {
    const GpuSpec h200 = find_gpu_preset("H200");
    // fa2_tc as compiled: 64x64 tiles, 158 registers per thread, three 4-warp blocks per SM (ncu: 2.72 active
    // warps per scheduler, issuing in 45.8% of cycles).
    TileRequest fa2_tc;
    fa2_tc.Br = 64;
    fa2_tc.Bc = 64;
    fa2_tc.registers_per_thread = 158;
    const AlgorithmResult r = simulate(algorithm("fa2"), problem(4096, 64, 16, DType::fp16), h200, fa2_tc, {});
    CHECK(r.tiles.scores == Space::Registers);  // S and P never leave the registers on the tensor cores
    const KernelRecord& k = r.kernels.front();
    const KernelTiming& t = r.timing.front();
    CHECK(k.registers_given);
    CHECK(k.registers_per_thread == 158);
    REQUIRE(k.occupancy.blocks_per_sm == 3);
    CHECK(k.row_blocks_per_warp == 1);
    // fa2_tc's loop is FA2's step: 3 warps per scheduler issue at the H200 probe's rate for 3 (0.459 at d = 64,
    // cuda/results/2026-11-30-h200-attention-step/), not at 1 - 0.83^3 = 0.43.
    CHECK(t.issue_law == IssueLaw::fa2_step);
    CHECK(t.issue_fraction == Approx(0.459));
    // Every block is alike: the busiest SM runs ceil(grid / SMs) of them, one after another per slot.
    const double per_sm = std::ceil(static_cast<double>(t.grid) / h200.sm_count);
    const double block_warp_instructions = static_cast<double>(k.block_work.front().thread_instructions) / 32;
    CHECK(t.issue_s == Approx(per_sm * block_warp_instructions / (4 * h200.clock_hz * t.issue_fraction)).epsilon(1e-9));
    CHECK(k.warp_instructions == k.block_work.front().thread_instructions / 32 * t.grid);
    // With 64-row tiles a warp has one mma block: the issue term is the bound (ncu: issue 46% of cycles,
    // the tensor pipe 39%).
    CHECK(t.issue_s > t.matmul_s + t.nonmatmul_s + t.sfu_s);
    CHECK(t.bound.find("instruction issue") != std::string::npos);

    // 128-row Q tiles (PyTorch's FA2): each warp holds two independent 16-row mma blocks and counts twice.
    TileRequest wide;
    wide.Br = 128;
    wide.Bc = 64;
    wide.registers_per_thread = 255;  // PyTorch 2.11's flash_fwd_kernel: two 4-warp blocks per SM
    const AlgorithmResult w = simulate(algorithm("fa2"), problem(4096, 64, 16, DType::fp16), h200, wide, {});
    REQUIRE(w.kernels.front().occupancy.blocks_per_sm == 2);
    CHECK(w.kernels.front().row_blocks_per_warp == 2);
    CHECK(w.timing.front().issue_fraction == Approx(0.474));  // the probe's 4 row blocks per scheduler

    // A GPU whose file has no table for the step (every preset before Hopper) takes the readiness law: each
    // 16-row block ready in 17% of cycles, independently.
    GpuSpec unmeasured = h200;
    unmeasured.model.fa2_step_issue_d64.clear();
    unmeasured.model.fa2_step_issue_d128.clear();
    const AlgorithmResult at_law = simulate(algorithm("fa2"), problem(4096, 64, 16, DType::fp16), unmeasured, fa2_tc, {});
    const KernelTiming& law = at_law.timing.front();  // held: a reference into a temporary's member would dangle
    CHECK(law.issue_law == IssueLaw::readiness);
    CHECK(law.issue_fraction == Approx(1 - std::pow(0.83, 3.0)));
    CHECK(law.issue_s == Approx(t.issue_s * 0.459 / (1 - std::pow(0.83, 3.0))).epsilon(1e-9));
    CHECK(simulate(algorithm("fa2"), problem(4096, 64, 16, DType::fp16), find_gpu_preset("A100-SXM4-40GB"), fa2_tc, {})
              .timing.front().issue_law == IssueLaw::readiness);
    // FA1's loop is not that step (split-K warps exchanging through shared memory): the readiness law on the
    // H200 too.
    const AlgorithmResult fa1 = simulate(algorithm("fa1"), problem(4096, 64, 16, DType::fp16), h200, {}, {});
    for (const KernelTiming& f : fa1.timing)
        if (f.issue_s > 0) CHECK(f.issue_law == IssueLaw::readiness);

    // Not for fp32 inputs (no 16-bit mma.sync) nor for a library GEMM (measured rate, wgmma): no issue term.
    const AlgorithmResult fp32 = simulate(algorithm("fa2"), problem(2048, 64, 16, DType::fp32), h200, {}, {});
    CHECK(fp32.timing.front().issue_s == 0);
    TileRequest library;
    library.matmul = MatmulMode::library;
    for (const KernelTiming& g : simulate(algorithm("standard"), problem(2048, 64, 16, DType::fp16), h200, library, {}).timing) {
        INFO(g.name);
        CHECK(g.issue_s == 0);
    }
}

TEST_CASE("a compiled kernel's register count (fa-sim option registers) sets the occupancy of the kernels that multiply", "[model][issue]") {
    const GpuSpec h200 = find_gpu_preset("H200");
    TileRequest req;
    req.Br = 64;
    req.Bc = 64;
    const AttentionProblem p = problem(4096, 128, 16, DType::fp16);
    req.registers_per_thread = 192;  // fa2_tc at d=128 before its launch bounds: 192 * 128 threads -> 2 blocks
    CHECK(simulate(algorithm("fa2"), p, h200, req, {}).kernels.front().occupancy.blocks_per_sm == 2);
    req.registers_per_thread = 168;  // with __launch_bounds__(128, 3): three blocks fit the 64K registers
    CHECK(simulate(algorithm("fa2"), p, h200, req, {}).kernels.front().occupancy.blocks_per_sm == 3);
    req.registers_per_thread = 256;
    CHECK_THROWS_WITH(simulate(algorithm("fa2"), p, h200, req, {}), Catch::Contains("--registers 256") && Catch::Contains("1..255"));
}

TEST_CASE("Little's law: a lone block streams at most its bytes in flight over the DRAM latency, a full grid is not bound",
          "[model][memory]") {
    GpuSpec slow = find_gpu_preset("H100-SXM");
    slow.model.dram_latency_s = 5e-6;  // ten times the default, so that the term binds
    // Decode: 32 blocks on 132 SMs, one each; a block keeps one K and one V tile (64 x 128 fp16) in flight.
    const AttentionProblem decode = problem(1, 128, 32, DType::fp16, false, 16384);
    TileRequest tiles;  // fa2_tc's
    tiles.Br = 64;
    tiles.Bc = 64;
    const KernelTiming t = simulate(algorithm("fa2"), decode, slow, tiles, {}).timing.front();
    const double dram_bytes = 2.0 * 16384 * 128 * 2;  // K and V of one head, each read by one block
    CHECK(t.memory_latency_s == Approx(dram_bytes * 5e-6 / (2 * 64 * 128 * 2)).epsilon(0.02));
    CHECK(t.schedule_s == Approx(t.memory_latency_s));
    CHECK(t.bound.find("DRAM latency") != std::string::npos);
    // A full grid keeps many blocks' loads in flight and reads K/V mostly from L2: the same latency
    // changes nothing.
    const AttentionProblem full = problem(4096, 64, 64, DType::fp16);
    CHECK(simulate(algorithm("fa2"), full, slow).time_s == simulate(algorithm("fa2"), full, find_gpu_preset("H100-SXM")).time_s);
}

TEST_CASE("a block alone on its SM waits for its first tiles and stores its output with nothing else to do: its "
          "fill and drain add to its time (FlashAttention-3's one block per SM)", "[model][fill]") {
    const GpuSpec h200 = find_gpu_preset("H200");
    const AttentionProblem p = problem(2048, 128, 128, DType::fp16);
    auto main_kernel = [&](const char* name, const GpuSpec& gpu) {
        const KernelSetup s = kernel_setup(*find_kernel(name), p, gpu);
        const AlgorithmResult r = simulate(*s.algorithm, p, gpu, s.tiles, s.options);
        for (const KernelTiming& t : r.timing)
            if (t.name == "fa2_forward") return t;
        FAIL("no fa2_forward in " << name);
        return KernelTiming{};
    };
    // fa2_wgmma: 160 KB of shared memory, one block per SM; 128 x 128 tiles. Before its first product a block
    // loads Q_i, K_0 and V_0; after its last it stores O_i and the fp32 LSE_i.
    const KernelTiming wgmma = main_kernel("fa2_wgmma", h200);
    REQUIRE(wgmma.concurrent_blocks == h200.sm_count);
    const double first_tiles = (128 + 2 * 128) * 128 * 2, output = 128 * 128 * 2 + 128 * 4;
    const double per_block = h200.model.dram_latency_s + (first_tiles + output) / (h200.l2_bandwidth / h200.sm_count);
    const std::int64_t blocks = 128 * 16, on_busiest = (blocks + h200.sm_count - 1) / h200.sm_count;  // 16
    CHECK(wgmma.fill_s == Approx(static_cast<double>(on_busiest) * per_block).epsilon(1e-9));
    // Every block does the same work, so the busiest SM's 16 blocks run back to back, each with its fill.
    const double busy = std::max({std::max(wgmma.matmul_s, wgmma.nonmatmul_s + wgmma.sfu_s), wgmma.smem_s, wgmma.l2_per_sm_s});
    CHECK(wgmma.schedule_s == Approx(busy + wgmma.fill_s).epsilon(1e-9));
    // A card whose first load takes 1 us longer: 16 us more for the busiest SM.
    GpuSpec slower = h200;
    slower.model.dram_latency_s += 1e-6;
    CHECK(main_kernel("fa2_wgmma", slower).schedule_s - wgmma.schedule_s == Approx(16e-6).epsilon(1e-6));

    // Two blocks per SM (fa2_tc_tuned): while one waits for its tiles the other computes; nothing added.
    const KernelTiming tuned = main_kernel("fa2_tc_tuned", h200);
    REQUIRE(tuned.concurrent_blocks == 2 * h200.sm_count);
    CHECK(tuned.fill_s == 0);
    CHECK(main_kernel("fa2_tc_tuned", slower).schedule_s == tuned.schedule_s);

    // cuBLAS's GEMMs: its measured rate already holds its tiles' fill and drain (a persistent kernel overlaps
    // one tile's stores and the next one's loads with its products).
    const KernelSetup cublas = kernel_setup(*find_kernel("standard_cublas"), p, h200);
    for (const KernelTiming& t : simulate(*cublas.algorithm, p, h200, cublas.tiles, cublas.options).timing) CHECK(t.fill_s == 0);
}

TEST_CASE("fa2_bwd_tc's step issues at its rate measured alone (the backward-step probe) where the GPU file has one "
          "and the kernel runs as the probe did, one block of 8 warps per SM", "[model][backward]") {
    const AttentionProblem p64 = problem(4096, 64, 16, DType::fp16), p128 = problem(4096, 128, 16, DType::fp16);
    auto backward = [](const AttentionProblem& p, const GpuSpec& gpu) {
        const KernelSetup s = kernel_setup(*find_kernel("fa2_bwd_tc"), p, gpu);
        const AlgorithmResult r = simulate(*s.algorithm, p, gpu, s.tiles, s.options);
        for (const KernelTiming& t : r.timing)
            if (t.name == "fa2_backward") return t;
        FAIL("no fa2_backward kernel");
        return KernelTiming{};
    };
    // The H200's probe (cuda/results/2026-12-01-h200-backward-step/): 2 warps per scheduler issue in 26.3% of cycles
    // at d = 64 and 21.8% at d = 128, barriers and dQ atomics included, where 1 - 0.83^n over the warps' 16-row mma
    // blocks would give 0.77.
    const GpuSpec h200 = find_gpu_preset("H200");
    const KernelTiming t64 = backward(p64, h200), t128 = backward(p128, h200);
    CHECK(t64.issue_law == IssueLaw::fa2_bwd_step);
    CHECK(t64.issue_fraction == h200.model.fa2_bwd_step_issue_d64);
    CHECK(t128.issue_law == IssueLaw::fa2_bwd_step);
    CHECK(t128.issue_fraction == h200.model.fa2_bwd_step_issue_d128);
    CHECK(std::string(issue_law_name(t128.issue_law)) == "fa2_bwd_step");
    // The same instructions at another rate: the issue term scales by the rates' ratio, and at 22% it binds.
    GpuSpec unmeasured = h200;
    unmeasured.model.fa2_bwd_step_issue_d64 = unmeasured.model.fa2_bwd_step_issue_d128 = 0;
    const KernelTiming law = backward(p128, unmeasured);
    CHECK(law.issue_law == IssueLaw::readiness);
    CHECK(law.issue_fraction > 0.7);
    CHECK(law.issue_s * law.issue_fraction == Approx(t128.issue_s * t128.issue_fraction).epsilon(1e-9));
    CHECK(t128.bound.find("instruction issue") != std::string::npos);
    // A GPU whose file has no rate (every preset before Hopper: the probe has run on an H200 only) keeps the law.
    CHECK(backward(p128, find_gpu_preset("A100-SXM4-40GB")).issue_law == IssueLaw::readiness);
    // Another shape than the probe's (4 warps a block, FA2's CUDA-core backward): the law.
    const KernelSetup cores = kernel_setup(*find_kernel("fa2_bwd"), p64, h200);
    for (const KernelTiming& t : simulate(*cores.algorithm, p64, h200, cores.tiles, cores.options).timing)
        CHECK(t.issue_law != IssueLaw::fa2_bwd_step);
}
