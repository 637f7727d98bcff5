// The papers' scaling laws and comparisons, checked on the simulator's counts.
#include <catch2/catch.hpp>

#include "test_helpers.hpp"

using namespace fasim;
using namespace fasim::test;

TEST_CASE("FA1's HBM traffic is Theta(N^2 d^2 / M): doubling SRAM halves its N^2 term", "[scaling][fa1]") {
    GpuSpec big = a100();
    big.smem_per_block_bytes *= 2;
    big.smem_per_sm_bytes *= 2;
    const auto p = problem(16384, 64);
    const auto base = simulate(algorithm("fa1"), p, a100());
    const auto more = simulate(algorithm("fa1"), p, big);
    // Everything that does not grow with Tc: K, V read once, O/l/m initialised once.
    const double e = 2, N = 16384, d = 64, BH = 16;
    const double linear = BH * (2 * N * d * e + N * d * e + 2 * N * 4);
    const double n2_base = static_cast<double>(base.hbm.total()) - linear;
    const double n2_more = static_cast<double>(more.hbm.total()) - linear;
    CHECK(more.tiles.Bc == 2 * base.tiles.Bc);
    CHECK(n2_more / n2_base == Approx(0.5).epsilon(0.02));
}

TEST_CASE("standard attention's HBM traffic does not depend on SRAM size", "[scaling][standard]") {
    GpuSpec big = a100();
    big.smem_per_block_bytes *= 2;
    big.smem_per_sm_bytes *= 2;
    const auto p = problem(4096, 64);
    CHECK(simulate(algorithm("standard"), p, a100()).hbm.total() == simulate(algorithm("standard"), p, big).hbm.total());
}

TEST_CASE("FA2 moves fewer bytes than FA1, and both far fewer than standard, for N >= 1024 at d=64", "[scaling]") {
    for (std::int64_t N = 1024; N <= 32768; N *= 2) {
        CAPTURE(N);
        const auto p = problem(N, 64);
        const auto std_ = simulate(algorithm("standard"), p, a100());
        const auto fa1 = simulate(algorithm("fa1"), p, a100());
        const auto fa2 = simulate(algorithm("fa2"), p, a100());
        // DRAM, as the hardware counters read it: FA2 reaches compulsory traffic.
        CHECK(fa2.dram.total() < fa1.dram.total());
        // The papers' sense, at equal tiles (FA1's K/V tile = FA2's Q tile): FA2 re-reads K and V
        // (2 tiles per step) where FA1 reads Q and O and writes O back (3 per step).
        TileRequest same;
        same.Bc = fa2.tiles.Br;
        CHECK(fa2.hbm.total() < simulate(algorithm("fa1"), p, a100(), same).hbm.total());
        // FA1's ratio is N-independent: per outer step Q (d·e) and the fp32 running O (8d) per row
        // against standard's 4·N·e, i.e. (d·e + 8d + 16) / (4·e·Bc) = 0.25 at fp16 d=64, Bc=326.
        CHECK(fa1.hbm.total() * 3 < std_.hbm.total());
        CHECK(fa2.hbm.total() * 5 < std_.hbm.total());
        CHECK(fa2.dram.total() * 5 < std_.dram.total());
    }
}

TEST_CASE("matmul FLOPs are 4*B*H*N*Nk*d for the forward pass", "[flops]") {
    for (auto [N, Nk] : {std::pair{4096L, 4096L}, {1000L, 777L}}) {
        const auto p = problem(N, 64, 16, DType::fp16, false, Nk);
        const std::int64_t expected = 4 * 16 * N * Nk * 64;
        for (const Algorithm* a : {&algorithm("standard"), &algorithm("fa1"), &algorithm("fa2")}) CHECK(simulate(*a, p, a100()).matmul_flops == expected);
        // tiled recomputes Q·Kᵀ in its second pass
        CHECK(simulate(algorithm("tiled"), p, a100()).matmul_flops == expected / 2 * 3);
    }
}

TEST_CASE("causal FLOPs: whole tiles above the diagonal are skipped, counted exactly", "[flops][causal]") {
    const std::int64_t N = 4096, d = 64, BH = 16;
    const auto p = problem(N, d, BH, DType::fp16, true);
    const auto r = simulate(algorithm("fa2"), p, a100());
    const std::int64_t Br = r.tiles.Br, Bc = r.tiles.Bc;
    std::int64_t pairs_computed = 0;
    for (std::int64_t q0 = 0; q0 < N; q0 += Br)
        for (std::int64_t k0 = 0; k0 <= q0 + Br - 1; k0 += Bc) pairs_computed += Br * Bc;
    CHECK(r.matmul_flops == 4 * BH * d * pairs_computed);
    CHECK(r.ideal_matmul_flops == 4 * BH * d * (N * (N + 1) / 2));  // every visible (query, key) pair
    CHECK(r.matmul_flops > 2 * BH * N * N * d);                     // the 2·B·H·N²·d ideal, approached as N/Br grows
    CHECK(static_cast<double>(r.matmul_flops) < 1.05 * 2.0 * BH * N * N * d);
}

TEST_CASE("FA2 does fewer non-matmul FLOPs than FA1 (FA2 paper, section 3.1)", "[flops]") {
    for (std::int64_t N : {1024L, 4096L}) {
        TileRequest same;  // same tiles, so the difference is the algorithm's, not the tiling's
        same.Br = 64;
        same.Bc = 128;
        const auto p = problem(N, 64);
        CHECK(simulate(algorithm("fa2"), p, a100(), same).nonmatmul_flops < simulate(algorithm("fa1"), p, a100(), same).nonmatmul_flops);
        CHECK(simulate(algorithm("fa2"), p, a100()).nonmatmul_flops < simulate(algorithm("fa1"), p, a100()).nonmatmul_flops);
    }
}

TEST_CASE("grids: FA1 launches B*H blocks, FA2 B*H*ceil(N/Br), and B*H=16 leaves 92 of 108 A100 SMs idle", "[grid]") {
    const auto p = problem(4096, 64, 16);
    const auto fa1 = simulate(algorithm("fa1"), p, a100());
    const auto fa2 = simulate(algorithm("fa2"), p, a100());
    const auto& fa1_main = fa1.kernels.back();
    REQUIRE(fa1_main.desc.name == "fa1_forward");
    CHECK(fa1_main.desc.grid() == 16);
    CHECK(fa1.timing.back().idle_sms == 108 - 16);
    CHECK(fa2.kernels.front().desc.grid() == 16 * ceil_div(4096, fa2.tiles.Br));
    CHECK(fa2.timing.front().idle_sms == 0);
    CHECK(fa2.time_s < fa1.time_s);  // parallelism over the sequence (FA2 paper, section 3.2)
}

TEST_CASE("the shared memory a block holds while running equals the tile formula", "[smem]") {
    for (const Algorithm* a : algorithms())
        for (DType t : {DType::fp16, DType::fp32}) {
            CAPTURE(std::string(a->id), dtype_name(t));
            const auto r = simulate(*a, problem(2048, 64, 2, t), a100());
            std::int64_t peak = 0;
            for (const auto& k : r.kernels) peak = std::max(peak, k.smem_bytes_per_block);
            CHECK(peak == r.tiles.smem_bytes);
            CHECK(peak <= a100().smem_per_block_bytes);
        }
}

TEST_CASE("64-bit counters: the largest problem the CLI accepts does not overflow", "[overflow]") {
    AttentionProblem p = problem(1 << 20, 16, 1024);
    TileRequest big;
    big.Br = 1024;
    big.Bc = 1024;
    const auto r = simulate(algorithm("fa2"), p, find_gpu_preset("H200"), big);
    CHECK(r.hbm.read_bytes() == r.algo->closed_form(p, r.tiles).hbm->read);
    CHECK(r.matmul_flops == std::int64_t{4} * 1024 * (std::int64_t{1} << 40) * 16);
    CHECK(r.time_s > 0);
}
