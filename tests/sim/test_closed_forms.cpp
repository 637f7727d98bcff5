// Simulated HBM traffic (the papers' sense: what the tile program loads and stores) equals each
// algorithm's closed form (Algorithm::closed_form, written beside its program from the papers'
// formulas), exactly, for tile-multiple and ragged N; so do the matmul FLOPs.
#include <catch2/catch.hpp>

#include "test_helpers.hpp"

using namespace fasim;
using namespace fasim::test;

namespace {
ClosedForm::Bytes formula(const AlgorithmResult& r) {
    const ClosedForm f = r.algo->closed_form(r.problem, r.tiles);
    REQUIRE(f.hbm);
    return *f.hbm;
}
void check(const AlgorithmResult& r) {
    const ClosedForm f = r.algo->closed_form(r.problem, r.tiles);
    REQUIRE(f.hbm);
    CHECK(r.hbm.read_bytes() == f.hbm->read);
    CHECK(r.hbm.write_bytes() == f.hbm->write);
    if (f.matmul_flops) CHECK(r.matmul_flops == *f.matmul_flops);
}
}  // namespace

TEST_CASE("FA2 (Dao 2023): reads Nd + Tr*2*Nk*d, writes Nd + N", "[closed-form][fa2]") {
    for (auto [N, Nk, d, t] : {std::tuple{4096L, 4096L, 64L, DType::fp16}, {1000L, 1000L, 64L, DType::fp16},
                               {2048L, 777L, 128L, DType::bf16}, {513L, 4096L, 32L, DType::fp32}, {1L, 1L, 64L, DType::fp16}}) {
        CAPTURE(N, Nk, d, dtype_name(t));
        const auto p = problem(N, d, 16, t, false, Nk);
        const auto r = simulate(algorithm("fa2"), p, a100());
        check(r);
        // reads Nd + Tr·2·Nk·d, writes Nd + N (the fp32 LSE): by hand at the first size
        if (N == 4096 && d == 64) CHECK(r.hbm.read_bytes() == std::int64_t{16} * 2 * (4096 * 64 + 32 * 2 * 4096 * 64));
    }
}

TEST_CASE("FA1 Algorithm 1: reads 2Nk*d + Tc(2Nd+2N), writes (Nd+2N) + Tc(Nd+2N) elements, running O in fp32", "[closed-form][fa1]") {
    for (auto [N, Nk, d, t] : {std::tuple{4096L, 4096L, 64L, DType::fp16}, {1000L, 1000L, 64L, DType::fp16},
                               {2048L, 777L, 128L, DType::bf16}, {513L, 4096L, 32L, DType::fp32}, {1L, 1L, 64L, DType::fp16}}) {
        CAPTURE(N, Nk, d, dtype_name(t));
        const auto p = problem(N, d, 4, t, false, Nk);
        const auto r = simulate(algorithm("fa1"), p, a100());
        check(r);
    }
}

TEST_CASE("FA1 tiles follow line 1: Bc = ceil(M/4d), Br = min(Bc, d)", "[fa1][tiles]") {
    const auto p = problem(4096, 64);  // fp16 on A100: M = 166912 B / 2 = 83456 elements
    const auto r = simulate(algorithm("fa1"), p, a100());
    CHECK(r.tiles.M_elements == 83456);
    CHECK(r.tiles.Bc == (83456 + 4 * 64 - 1) / (4 * 64));
    CHECK(r.tiles.Br == 64);
}

TEST_CASE("tiled two-pass: Q once, K twice and V once per Q tile", "[closed-form][tiled]") {
    for (auto [N, d] : {std::pair{4096L, 64L}, {1000L, 128L}, {77L, 64L}}) {
        CAPTURE(N, d);
        const auto p = problem(N, d);
        const auto r = simulate(algorithm("tiled"), p, a100());
        check(r);
    }
}

TEST_CASE("standard (Algorithm 0): papers' formula plus the tiled GEMMs' operand re-reads", "[closed-form][standard]") {
    for (auto [N, Nk, d] : {std::tuple{4096L, 4096L, 64L}, {1000L, 1000L, 64L}, {256L, 300L, 128L}}) {
        CAPTURE(N, Nk, d);
        const auto p = problem(N, d, 16, DType::fp16, false, Nk);
        const auto r = simulate(algorithm("standard"), p, a100());
        check(r);
        // the tiled GEMMs re-read Q once per 64-column tile of S: more than the paper's Q read once
        CHECK(read_of(r.hbm, "Q") == 16 * 2 * N * d * ((Nk + 63) / 64));
    }
}

TEST_CASE("standard: the re-reads are served by L2, so DRAM sees the papers' 2Nd+2Nk*d+4N*Nk", "[standard][l2]") {
    const auto p = problem(4096, 64);
    const auto r = simulate(algorithm("standard"), p, a100());
    const ClosedForm f = r.algo->closed_form(p, r.tiles);
    REQUIRE(f.papers_hbm);
    const double paper = static_cast<double>(f.papers_hbm->total());
    CHECK(f.papers_hbm->total() == std::int64_t{16} * 2 * (2 * 4096 * 64 + 2 * 4096 * 64 + 4 * 4096 * 4096));
    CHECK(static_cast<double>(r.dram.total()) == Approx(paper).epsilon(0.02));
    CHECK(r.hbm.total() > r.dram.total());
}

TEST_CASE("FA2 on H100: DRAM close to compulsory while L2 traffic follows the formula", "[fa2][l2]") {
    // Measured on an H200 (ncu): PyTorch's flash backend at B=4, H=16, N=4096, d=64 fp16 read ~0.1 GB from DRAM (Q, K, V once)
    // while its SMs requested ~2.0 GB from L2.
    AttentionProblem p = problem(4096, 64, 64);
    const auto r = simulate(algorithm("fa2"), p, find_gpu_preset("H100-SXM"));
    const std::int64_t compulsory_reads = 3 * 64 * 4096 * 64 * 2;
    CHECK(r.dram.read_bytes() == compulsory_reads);
    CHECK(r.l2.read_bytes() == formula(r).read);
    CHECK(static_cast<double>(r.l2.read_bytes()) > 10.0 * static_cast<double>(r.dram.read_bytes()));
}

TEST_CASE("FA1's O/l/m round trips hit L2 only while every head's working set fits", "[fa1][l2]") {
    // 16 heads x (Q in fp16 + O_acc in fp32) of 0.75 MB at N=2048 fit in 40 MiB; at N=16384 (6 MB
    // each) they do not.
    const auto small = simulate(algorithm("fa1"), problem(2048, 64), a100());
    const auto large = simulate(algorithm("fa1"), problem(16384, 64), a100());
    CHECK(small.dram.read_bytes() < small.hbm.read_bytes() / 5);
    CHECK(static_cast<double>(large.dram.read_bytes()) > 0.9 * static_cast<double>(large.hbm.read_bytes()));
}

TEST_CASE("causal FA2 reads only the K/V tiles at or below the diagonal", "[closed-form][fa2][causal]") {
    for (auto [N, Nk] : {std::pair{4096L, 4096L}, {1000L, 1000L}, {1000L, 600L}, {300L, 1000L}}) {
        CAPTURE(N, Nk);
        const auto p = problem(N, 64, 16, DType::fp16, true, Nk);
        const auto r = simulate(algorithm("fa2"), p, a100());
        const std::int64_t Br = r.tiles.Br, Bc = r.tiles.Bc;
        std::int64_t kv_rows = 0;  // K rows read, summed over Q tiles
        for (std::int64_t q0 = 0; q0 < N; q0 += Br) {
            const std::int64_t last_key = std::min(q0 + Br, N) - 1 + (Nk - N);  // bottom-right aligned
            for (std::int64_t k0 = 0; k0 < Nk && k0 <= last_key; k0 += Bc) kv_rows += std::min(Bc, Nk - k0);
        }
        CHECK(r.hbm.read_bytes() == 16 * 2 * (N * 64 + 2 * kv_rows * 64));
    }
}
