// FA1's Q splits (q_splits, FlashAttention-1's num_splits): q_splits blocks per batch·head,
// each taking every q_splits-th Q tile and loading the K/V tiles its Q tiles see itself.
// The Q/O/ℓ/m traffic is Algorithm 1's; only the K/V reads multiply (fewer when causal).
#include <catch2/catch.hpp>

#include "common/errors.hpp"
#include "exec/functional_executor.hpp"
#include "inputs.hpp"
#include "precision.hpp"
#include "test_helpers.hpp"
#include "../common/random_heads.hpp"

using namespace fasim;
using namespace fasim::test;

namespace {

AlgorithmResult fa1_with(const AttentionProblem& p, std::int64_t q_splits, std::optional<std::int64_t> Br = std::nullopt,
                         std::optional<std::int64_t> Bc = std::nullopt) {
    TileRequest req;
    req.Br = Br;
    req.Bc = Bc;
    req.q_splits = q_splits;
    return simulate(algorithm("fa1"), p, a100(), req);
}

}  // namespace

TEST_CASE("FA1 q_splits = s (non-causal) reads K and V exactly s times as often, Q, O, O_acc, l and m traffic unchanged",
          "[fa1][q-splits][closed-form]") {
    for (auto [N, Nk, d, t] : {std::tuple{1000L, 1000L, 64L, DType::fp16}, {2048L, 777L, 128L, DType::bf16},
                               {513L, 4096L, 32L, DType::fp32}})
        for (std::int64_t s : {2L, 3L, 5L}) {
            CAPTURE(N, Nk, d, dtype_name(t), s);
            const auto p = problem(N, d, 4, t, false, Nk);
            const auto one = fa1_with(p, 1), split = fa1_with(p, s);
            REQUIRE(split.tiles.q_splits == s);
            REQUIRE(split.tiles.Br == one.tiles.Br);
            REQUIRE(split.tiles.Bc == one.tiles.Bc);
            CHECK(one.hbm.read_bytes() == one.algo->closed_form(p, one.tiles).hbm->read);  // q_splits = 1 is Algorithm 1
            CHECK(split.hbm.read_bytes() == split.algo->closed_form(p, split.tiles).hbm->read);  // K, V read s times
            CHECK(split.kernels.back().desc.blocks_per_head == s);
            CHECK(split.kernels.back().desc.grid() == s * p.batch_heads());
            for (std::string_view n : {"K", "V"}) {
                CHECK(read_of(split.hbm, n) == s * read_of(one.hbm, n));  // bytes requested from global
                CHECK(read_of(split.l2, n) == s * read_of(one.l2, n));    // the same requests in sectors
                CHECK(write_of(split.hbm, n) == 0);
            }
            for (std::string_view n : {"Q", "O", "O_acc", "l", "m"}) {
                CHECK(read_of(split.hbm, n) == read_of(one.hbm, n));
                CHECK(write_of(split.hbm, n) == write_of(one.hbm, n));
            }
            CHECK(split.matmul_flops == one.matmul_flops);
        }
}

TEST_CASE("FA1 causal with q_splits = 3 and ragged N equals exact attention, and blocks skip K/V tiles none of their Q "
          "tiles sees",
          "[fa1][q-splits][functional]") {
    for (std::int64_t Nk : {200L, 150L, 260L})
        for (DType t : {DType::fp32, DType::fp16}) {
            CAPTURE(Nk, dtype_name(t));
            const auto p = problem(200, 32, 2, t, true, Nk);  // Tr = 13 Q tiles of 16 rows, the last one 8
            const auto one = fa1_with(p, 1, 16, 64), split = fa1_with(p, 3, 16, 64);
            REQUIRE(split.tiles.q_splits == 3);
            for (std::string_view n : {"K", "V"}) {
                CHECK(read_of(split.hbm, n) < 3 * read_of(one.hbm, n));
                CHECK(read_of(split.hbm, n) > read_of(one.hbm, n));
            }
            for (std::string_view n : {"Q", "O", "O_acc", "l", "m"}) {
                CHECK(read_of(split.hbm, n) == read_of(one.hbm, n));
                CHECK(write_of(split.hbm, n) == write_of(one.hbm, n));
            }

            const HeadInputs in = random_heads(p, 41);
            const auto& Q = in.Q;
            const auto& K = in.K;
            const auto& V = in.V;
            const FunctionalRun run = run_functional(algorithm("fa1"), p, a100(), split.tiles, Q, K, V);
            reference::AttentionOptions opt;
            opt.causal = true;
            for (std::size_t h = 0; h < Q.size(); ++h) {
                const auto check = reference::check_tolerance(run.O[h], Q[h], K[h], V[h], opt, t);
                CAPTURE(h, check.error, check.bound, check.naive_error);
                CHECK(check.pass);
            }
            REQUIRE(run.kernels.size() == split.kernels.size());
            for (std::size_t k = 0; k < run.kernels.size(); ++k) {  // the functional run moves what was counted
                CHECK(run.kernels[k].hbm == split.kernels[k].hbm);
            }
        }
}

TEST_CASE("q_splits 0 and 1 both mean one block per batch*head, Algorithm 1 as written", "[fa1][q-splits]") {
    const auto p = problem(1000, 64, 4, DType::fp16, true);
    const auto zero = fa1_with(p, 0), one = fa1_with(p, 1);
    CHECK(zero.tiles.q_splits == 1);
    CHECK(zero.kernels.back().desc.blocks_per_head == 1);
    CHECK(zero.hbm == one.hbm);
}

TEST_CASE("choose_tiles refuses q_splits outside 1..Tr and for algorithms other than FA1", "[fa1][q-splits][errors]") {
    const auto p = problem(200, 64);
    TileRequest req;
    req.Br = 16;  // Tr = 13
    req.q_splits = 14;
    CHECK_THROWS_WITH(choose_tiles(algorithm("fa1"), p, a100(), req), Catch::Contains("--q-splits 14 is out of range") &&
                                                                   Catch::Contains("1..Tr = ceil(N/Br) = 13") &&
                                                                   Catch::Contains("Fix:"));
    req.q_splits = -1;
    CHECK_THROWS_AS(choose_tiles(algorithm("fa1"), p, a100(), req), UsageError);
    req.q_splits = 13;
    CHECK(choose_tiles(algorithm("fa1"), p, a100(), req).q_splits == 13);
    req.q_splits = 2;
    for (const Algorithm* a : {&algorithm("standard"), &algorithm("tiled"), &algorithm("fa2")}) {
        CAPTURE(std::string(a->id));
        CHECK_THROWS_WITH(choose_tiles(*a, p, a100(), req),
                          Catch::Contains("--q-splits 2 does not apply to") && Catch::Contains("--algo fa1"));
    }
}
