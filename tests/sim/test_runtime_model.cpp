// The runtime model's choice of arithmetic rate per kernel.
#include <catch2/catch.hpp>

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

    // Same GPU with the mma.sync ceiling removed: the flash kernel's matmul term shrinks by the ratio
    // of the two ceilings, standard's GEMMs do not change.
    GpuSpec no_mma = h200;
    no_mma.measured.mma_sync_fp16_flops = 0;
    const double ratio = h200.matmul_flops(DType::fp16) / h200.mma_sync_flops(DType::fp16);

    const AlgorithmResult fa2 = simulate(Algo::fa2, p, h200, {}, {});
    const AlgorithmResult fa2_lib = simulate(Algo::fa2, p, no_mma, {}, {});
    CHECK(matmul_seconds(fa2, "fa2_forward") / matmul_seconds(fa2_lib, "fa2_forward") == Approx(ratio).epsilon(1e-9));
    // At d=64 the online softmax outweighs the mma.sync time (FA2 paper, section 3.1: non-matmul FLOPs
    // are far slower). ncu on fa2_tc, N=4096 d=64 fp16 (cuda/results/2026-11-22-h200-c/profile): the
    // schedulers issue in 44% of cycles, the tensor pipe is busy in 39%.
    const KernelTiming& t = fa2.timing.front();
    CHECK(t.nonmatmul_s + t.sfu_s > t.matmul_s);
    CHECK(t.bound.find("non-matmul") != std::string::npos);

    const AlgorithmResult std_h = simulate(Algo::standard, p, h200, {}, {});
    const AlgorithmResult std_lib = simulate(Algo::standard, p, no_mma, {}, {});
    CHECK(matmul_seconds(std_h, "gemm_qk") == matmul_seconds(std_lib, "gemm_qk"));
    CHECK(matmul_seconds(std_h, "gemm_pv") == matmul_seconds(std_lib, "gemm_pv"));
}

TEST_CASE("CUDA-core runs: the fp32 rate, scaled by how often a scheduler finds a warp to issue", "[model]") {
    const GpuSpec h200 = find_gpu_preset("H200");
    ModelOptions cuda_cores;
    cuda_cores.tensor_cores = false;
    const AttentionProblem p = problem(2048, 64, 16, DType::fp32);
    const AlgorithmResult fa2 = simulate(Algo::fa2, p, h200, {}, cuda_cores);
    const KernelTiming& t = fa2.timing.front();
    // fa-sim's CUDA-core FA2 stages S in shared memory: 160 KiB per block, one 4-warp block per SM,
    // one warp per scheduler, which issues in 37% of cycles (ncu on the H200).
    CHECK(fa2.tiles.scores == Space::Shared);
    CHECK(fa2.kernels.front().occupancy.blocks_per_sm == 1);
    CHECK(t.issue_fraction == Approx(0.37));
    const double flops_on_busiest_sm = static_cast<double>(fa2.kernels.front().block_work.front().first.matmul_flops) *
                                       std::ceil(static_cast<double>(t.grid) / h200.sm_count);
    CHECK(matmul_seconds(fa2, "fa2_forward") ==
          Approx(flops_on_busiest_sm / (0.37 * h200.effective_fp32_flops() / h200.sm_count)).epsilon(1e-9));

    // Standard attention's GEMMs hold 8 warps per block and several blocks per SM: latency is hidden.
    const AlgorithmResult standard = simulate(Algo::standard, p, h200, {}, cuda_cores);
    for (const KernelTiming& k : standard.timing) {
        INFO(k.name);
        CHECK(k.issue_fraction > 0.95);
    }
    // Two warps per scheduler: each ready 37% of the time, independently.
    CHECK(1 - (1 - 0.37) * (1 - 0.37) == Approx(0.6031));
}

TEST_CASE("tensor-core runs keep S in registers and are not issue-limited", "[model]") {
    const AlgorithmResult fa2 = simulate(Algo::fa2, problem(2048, 64, 16, DType::fp16), find_gpu_preset("H200"), {}, {});
    CHECK(fa2.tiles.scores == Space::Registers);
    CHECK(fa2.timing.front().issue_fraction == 1.0);
}
