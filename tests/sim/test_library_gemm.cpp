// Standard attention with a library's GEMM tiles (--matmul library): cuBLAS on Hopper computes
// S = QK^T in 256x128 output tiles and O = PV in (32768/d) x d tiles, at most 512 rows (ncu on the H200,
// cuda/results/2026-11-23-h200/profile_cublas_fp16_d*). A block reads (Tm + Tn)·K operand elements
// for its Tm·Tn outputs, so larger tiles read the operands fewer times; the papers' Θ(N²) HBM
// traffic of S and P does not change.
#include <catch2/catch.hpp>

#include "exec/functional_executor.hpp"
#include "inputs.hpp"
#include "precision.hpp"
#include "test_helpers.hpp"
#include "../common/random_heads.hpp"

using namespace fasim;
using namespace fasim::test;

namespace {

AlgorithmResult standard_with(const AttentionProblem& p, MatmulMode m) {
    TileRequest req;
    req.matmul = m;
    return simulate(algorithm("standard"), p, find_gpu_preset("H200"), req);
}

}  // namespace

TEST_CASE("library GEMM tiles: Q is read Nk/128 times and K N/256 times for S, P once and V N·d/32768 times for O",
          "[standard][library][closed-form]") {
    for (auto [N, Nk, d, t] : {std::tuple{4096L, 4096L, 64L, DType::fp16}, {2048L, 1024L, 128L, DType::bf16},
                               {1024L, 2048L, 64L, DType::fp16}}) {
        CAPTURE(N, Nk, d, dtype_name(t));
        const auto p = problem(N, d, 4, t, false, Nk);
        const std::int64_t BH = p.batch_heads(), e = p.elem_bytes();
        const auto lib = standard_with(p, MatmulMode::library);
        REQUIRE(lib.tiles.gemm_m == 256);
        REQUIRE(lib.tiles.gemm_n == 128);
        REQUIRE(lib.tiles.pv_n == d);
        REQUIRE(lib.tiles.pv_m == std::min<std::int64_t>(32768 / d, 512));
        REQUIRE(lib.tiles.gemm_k * e == 128);  // 64 fp16/bf16 elements
        REQUIRE(lib.kernels.size() == 3);
        const KernelRecord &qk = lib.kernels[0], &pv = lib.kernels[2];
        CHECK(qk.desc.grid() == BH * (N / 256) * (Nk / 128));
        CHECK(pv.desc.grid() == BH * ceil_div(N, lib.tiles.pv_m));
        CHECK(qk.desc.warps == 12);
        // Rows of Q, K (d elements) and of P (Nk elements) are whole 32-byte sectors here, so the
        // L2 requests are exactly the elements read.
        CHECK(read_of(qk.l2, "Q") == BH * N * d * e * (Nk / 128));
        CHECK(read_of(qk.l2, "K") == BH * Nk * d * e * (N / 256));
        CHECK(read_of(pv.l2, "P") == BH * N * Nk * e);
        CHECK(read_of(pv.l2, "V") == BH * Nk * d * e * ceil_div(N, lib.tiles.pv_m));
        // The tiles change how often operands are re-read, not the S and P the softmax moves; with
        // 64x64 tiles P is read once per 64 columns of O (twice at d = 128).
        const auto tiled = standard_with(p, MatmulMode::tiled);
        CHECK(read_of(lib.hbm, "S") == read_of(tiled.hbm, "S"));
        CHECK(write_of(lib.hbm, "S") == write_of(tiled.hbm, "S"));
        CHECK(write_of(lib.hbm, "P") == write_of(tiled.hbm, "P"));
        CHECK(read_of(tiled.hbm, "P") == (d / 64) * read_of(lib.hbm, "P"));
        CHECK(read_of(tiled.l2, "Q") == BH * N * d * e * (Nk / 64));  // 64x64 tiles: twice as often
        CHECK(lib.matmul_flops == tiled.matmul_flops);
    }
}

TEST_CASE("library GEMMs in fp32 (cuBLAS's SGEMM, not profiled) keep 64x64 tiles and their shared memory is in the rate",
          "[standard][library]") {
    // fp32 cuBLAS in the sixth run is predicted within -16..+6% at N >= 2048 with 64x64 tiles at its
    // measured FP32 rate; the fp16 kernels' 256x128 tiles put it up to 41% slow (N=2048, d=64).
    const auto p = problem(2048, 64, 4, DType::fp32, false);
    const auto lib = standard_with(p, MatmulMode::library);
    const auto tiled = standard_with(p, MatmulMode::tiled);
    CHECK(lib.tiles.gemm_m == 64);
    CHECK(lib.tiles.gemm_n == 64);
    CHECK(lib.tiles.pv_m == 64);
    CHECK(lib.hbm.total() == tiled.hbm.total());
    // Same operand bytes through shared memory, but the library's operand reads are not multiplied
    // by fa-sim's per-lane loads (kernels/cuda_core_products.hpp).
    CHECK(lib.kernels[0].smem_read == tiled.kernels[0].smem_read);
    const KernelRecord& qk = lib.kernels[0];
    CHECK(static_cast<double>(qk.smem_wavefronts * 128) == Approx(static_cast<double>(qk.smem_read + qk.smem_write)).epsilon(0.01));
    CHECK(tiled.kernels[0].smem_wavefronts > 2 * lib.kernels[0].smem_wavefronts);
}

TEST_CASE("library GEMM tiles on ragged sizes equal exact attention, causal or not", "[standard][library][functional]") {
    for (bool causal : {false, true})
        for (DType t : {DType::fp32, DType::fp16}) {
            CAPTURE(causal, dtype_name(t));
            const auto p = problem(300, 32, 2, t, causal, 333);  // partial 256x128 and 512x32 tiles
            const auto lib = standard_with(p, MatmulMode::library);
            const HeadInputs in = random_heads(p, 77);
            const auto& Q = in.Q;
            const auto& K = in.K;
            const auto& V = in.V;
            const FunctionalRun run = run_functional(algorithm("standard"), p, find_gpu_preset("H200"), lib.tiles, Q, K, V);
            reference::AttentionOptions opt;
            opt.causal = causal;
            for (std::size_t h = 0; h < Q.size(); ++h) {
                const auto check = reference::check_tolerance(run.O[h], Q[h], K[h], V[h], opt, t);
                CAPTURE(h, check.error, check.bound, check.naive_error);
                CHECK(check.pass);
            }
        }
}
