// CUDA-core products on their lanes (sim/kernels/cuda_core_products.hpp): each lane loads its own
// micro-tile's operands, 16 bytes at a time, served half a warp per wavefront of 128 distinct bytes, and
// computes whole micro-tiles. The closed forms below are the kernels' inner loops counted by hand; the
// whole-kernel wavefronts are checked against ncu in tests/cuda/test_results_agreement.cpp.
#include <catch2/catch.hpp>

#include "kernels/cuda_core_products.hpp"
#include "test_helpers.hpp"

using namespace fasim;
using namespace fasim::test;

TEST_CASE("tiled GEMM: a warp's 4x4 micro-tiles on 2 x 16 lanes cost 6 wavefronts per k-step (ncu: 6.06)",
          "[smem][wavefronts][closed-form]") {
    // Per k-step each lane loads a float4 of A (broadcast: a half-warp shares one lane row, 16 bytes)
    // and a float4 of B (a half-warp reads 16 different ones, 256 bytes = 2 wavefronts).
    const LaneGrid gemm{2, 16, 4, 4, 4};
    for (std::int64_t k : {4, 32, 64, 4096}) {
        CAPTURE(k);
        CHECK(cuda_core::operand_wavefronts({8, 64, k}, gemm, 4, 4, true, true) == 6 * k);
        // fp16 storage: staged as fp32, so the same.
        CHECK(cuda_core::operand_wavefronts({8, 64, k}, gemm, 2, 2, true, true) == 6 * k);
    }
}

TEST_CASE("flash kernels: scores in 4-column passes re-read Q, P V reads P and V once per 4 k-steps",
          "[smem][wavefronts][closed-form]") {
    const LaneGrid flash{4, 8, std::int64_t{1} << 30, 4, 0};
    // S = Q K^T of a warp's 32 rows x 128 keys, d = 64: 8 rows x 4 keys per lane per pass, 4 passes;
    // per 4 k-steps and pass each half-warp issues 8 Q loads and 4 K loads of one wavefront each.
    CHECK(cuda_core::operand_wavefronts({32, 128, 64, flash.score_cols}, flash, 4, 4, true, true) == 4 * 2 * (8 + 4) * 16);
    // O += P V, 32 rows x 64 columns over 128 keys: 8 x 8 per lane in one pass (O stays in registers).
    CHECK(cuda_core::operand_wavefronts({32, 64, 128}, flash, 4, 4, true, true) == 2 * (8 + 8) * 32);
    // Operands in registers cost nothing here.
    CHECK(cuda_core::operand_wavefronts({32, 64, 128}, flash, 4, 4, false, true) == 2 * 8 * 32);
    // FA1: a warp scores its 32 keys for a 64-row Q tile in 16-row chunks (4 rows per lane), re-reading K
    // for each chunk.
    const LaneGrid fa1{4, 8, 4, 4, 0};
    CHECK(cuda_core::operand_wavefronts({64, 32, 64, fa1.score_cols}, fa1, 4, 4, true, true) ==
          4 * 2 * (4 + 4) * 16);  // 4 chunks x 2 half-warps x (4 Q + 4 K loads) x 16 four-k steps
}

TEST_CASE("lanes execute whole micro-tiles: FA1 at d=128 (114 x 114 tiles) computes 26% more than its tiles hold",
          "[flops][closed-form]") {
    // fa1.cu at d=128, fp32: Q tiles of 114 rows in 16-row chunks (8 chunks: 128 rows), K/V tiles of 114
    // keys split over 4 warps (the tile program: 29 each; the kernel: 28, 28, 28, 30), scored 2 keys per
    // lane per pass of 16, multiplied by V 4 keys per step.
    const LaneGrid fa1{4, 8, 4, 2, 0};
    const std::int64_t scores = cuda_core::executed_flops({114, 29, 128, fa1.score_cols}, fa1);
    CHECK(scores == 2 * 128 * 32 * 128);
    const std::int64_t pv = cuda_core::executed_flops({114, 128, 29}, fa1);
    CHECK(pv == 2 * 128 * 128 * 32);
    CHECK(static_cast<double>(scores + pv) / (2.0 * 2 * 114 * 28.5 * 128) == Approx(1.26).epsilon(0.01));
    // At d=64 (64 x 227 tiles): rows whole, the last warp's 57 keys scored as 64 and multiplied as 60 -> 60.
    const LaneGrid fa1_d64{4, 8, 4, 4, 0};
    CHECK(cuda_core::executed_flops({64, 57, 64, fa1_d64.score_cols}, fa1_d64) == 2 * 64 * 64 * 64);
    CHECK(cuda_core::executed_flops({64, 64, 57}, fa1_d64) == 2 * 64 * 64 * 60);
    // Tiles that fill the lane grid compute exactly their FLOPs: fa2's 32 x 128 scores, the GEMM's 8 x 64.
    const LaneGrid flash{4, 8, std::int64_t{1} << 30, 4, 0};
    CHECK(cuda_core::executed_flops({32, 128, 64, 4}, flash) == 2 * 32 * 128 * 64);
    CHECK(cuda_core::executed_flops({8, 64, 32, 4}, LaneGrid{2, 16, 4, 4, 4}) == 2 * 8 * 64 * 32);
}

TEST_CASE("the counting executor: the tiled GEMM's shared-memory wavefronts are its operand loads plus its "
          "staging",
          "[smem][wavefronts]") {
    const auto p = problem(1024, 64, 4, DType::fp32, false);
    ModelOptions cuda_cores;
    cuda_cores.tensor_cores = false;
    const AlgorithmResult r = simulate(algorithm("standard"), p, find_gpu_preset("H200"), {}, cuda_cores);
    const KernelRecord& qk = r.kernels.front();
    const std::int64_t blocks = qk.desc.grid(), k_steps = p.d / 32;
    // 8 warps x 64 k x 6 per block, and each k-step's A and B tiles (64 x 32 fp32 each) written once by
    // transposing copies (both k-major for S = Q K^T): 4 wavefronts per 128 bytes (4-way bank conflicts).
    CHECK(qk.smem_wavefronts == blocks * (8 * 64 * 6 + k_steps * 2 * 4 * (64 * 32 * 4 / 128)));
    // O = P V: P is copied transposed, V row by row.
    const KernelRecord& pv = r.kernels.back();
    const std::int64_t pv_steps = p.N / 32;
    CHECK(pv.smem_wavefronts == pv.desc.grid() * (8 * p.N * 6 + pv_steps * (4 + 1) * (64 * 32 * 4 / 128)));
    // With the tensor cores the time does not use them; on the CUDA cores the GEMM is bound by them.
    CHECK(r.timing.front().bound == "shared-memory bandwidth");
}
