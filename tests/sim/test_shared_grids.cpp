// The programs of one run (forward and backward) track each tensor on one tile grid in the L2 model: the
// finer of their grids where one divides the other (exec/shared_grids.hpp).
#include <catch2/catch.hpp>

#include "algorithms/algorithm.hpp"
#include "exec/shared_grids.hpp"
#include "gpu/gpu_catalog.hpp"
#include "test_helpers.hpp"

namespace fasim {
namespace {

const Executor::TensorGrid* grid_of(const std::vector<Executor::TensorGrid>& grids, const std::string& name) {
    for (const Executor::TensorGrid& g : grids)
        if (g.name == name) return &g;
    return nullptr;
}

TEST_CASE("FlashAttention-2's forward and backward share the finer tile grid where one divides the other", "[counting]") {
    // On Hopper at d = 128 the forward takes 128-row Q tiles and 64-key K/V tiles, the backward 64-row Q
    // tiles and 128-key K/V tiles (flash-attention's defaults). Q, O (rows) and LSE (a row of N) take the
    // backward's 64; K and V keep the forward's 64 keys, which the backward's 128 do not divide.
    const AttentionProblem p = test::problem(4096, 128, 16, DType::bf16, true);
    const GpuSpec h200 = find_gpu_preset("H200");
    const Algorithm& fa2 = algorithm("fa2");
    const Algorithm& bwd = *backward_of(fa2);
    const TileConfig fwd_tiles = choose_tiles(fa2, p, h200, {}), bwd_tiles = choose_tiles(bwd, p, h200, {});
    REQUIRE(fwd_tiles.Br == 128);
    REQUIRE(fwd_tiles.Bc == 64);
    REQUIRE(bwd_tiles.Br == 64);
    REQUIRE(bwd_tiles.Bc == 128);
    const std::vector<Executor::TensorGrid> grids = shared_grids({{&fa2, fwd_tiles}, {&bwd, bwd_tiles}}, p);
    for (const char* rows64 : {"Q", "O"}) {
        INFO(rows64);
        const Executor::TensorGrid* g = grid_of(grids, rows64);
        REQUIRE(g);
        CHECK(g->rows == 64);
        CHECK(g->cols == 128);
    }
    const Executor::TensorGrid* lse = grid_of(grids, "LSE");
    REQUIRE(lse);
    CHECK(lse->rows == 1);
    CHECK(lse->cols == 64);
    CHECK(grid_of(grids, "K") == nullptr);
    CHECK(grid_of(grids, "V") == nullptr);
    CHECK(grid_of(grids, "dO") == nullptr);  // the backward's own: declared once

    // The same tiles in both passes (A100, d = 64: 128 x 128): nothing to share.
    const AttentionProblem a = test::problem(4096, 64, 16, DType::fp16, true);
    const GpuSpec a100 = find_gpu_preset("A100-SXM4-40GB");
    CHECK(shared_grids({{&fa2, choose_tiles(fa2, a, a100, {})}, {&bwd, choose_tiles(bwd, a, a100, {})}}, a).empty());
}

}  // namespace
}  // namespace fasim
