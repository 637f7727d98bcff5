// Grouped-query attention in the counting executor (exec/kv_head_units.hpp): which heads run together,
// how a tensor of several heads per K/V head is stacked for the L2 model, and what it changes.
#include <catch2/catch.hpp>

#include "algorithms/algorithm.hpp"
#include "exec/kv_head_units.hpp"
#include "test_helpers.hpp"

using namespace fasim;
using namespace fasim::test;

TEST_CASE("a grouped problem's unit: the heads of one K/V head, each tensor's heads stacked on whole tiles", "[gqa][l2]") {
    KvHeadUnits units(4);  // B * kv_heads = 4 K/V heads
    CHECK(units.heads_per_unit(4) == 1);    // K, V and kernels over K/V heads
    CHECK(units.heads_per_unit(32) == 8);   // Q, O over 32 query heads: groups of 8
    CHECK(units.heads_per_unit(96) == 24);  // a split's partials, 3 splits per query head
    CHECK(units.heads_per_unit(6) == 1);    // not a multiple: left alone
    CHECK(KvHeadUnits().heads_per_unit(32) == 1);

    // 100 rows on a grid of 64-row tiles: each head takes two whole tiles (128 rows) of the stacked tensor.
    GlobalTensor q{"Q", 32, 100, 64, 2, 64, 64};
    q.id = 0;
    const Region r = units.folded(view(q, 3).rows(64, 36));
    CHECK(r.tensor->name == "Q");
    CHECK(r.tensor->id == 0);
    CHECK(r.tensor->rows == 8 * 128);
    CHECK(r.head == 0);
    CHECK(r.row0 == 3 * 128 + 64);
    CHECK(r.nrows == 36);
    CHECK(units.folded(view(q, 5).rows(0, 1)).tensor == r.tensor);  // one stacked tensor per tensor
    GlobalTensor k{"K", 4, 100, 64, 2, 64, 64};
    k.id = 1;
    CHECK(units.folded(view(k, 0).rows(0, 64)).tensor == &k);  // one head per K/V head: as it is
    CHECK_THROWS_AS(units.folded(view(q, 8).rows(0, 1)), std::logic_error);  // outside the unit: a program bug
}

TEST_CASE("heads of a group far apart in the launch are simulated one at a time: standard attention's S = QK^T",
          "[gqa][l2]") {
    // A head of S = QK^T at N = 4096 is (4096/64)^2 = 4096 blocks: the group's 8th head starts 28,672 blocks after
    // its first, more than an A100 holds of those 8-warp blocks at once (108 SMs x 8), so each query head reads K
    // from DRAM. O = PV is 64 blocks a head and FA2 32: their groups run as units of 8 heads and read V (and K) once
    // per K/V head.
    AttentionProblem p = problem(4096, 64, 32, DType::fp16, false);
    p.kv_heads = 4;
    const AlgorithmResult standard = simulate(algorithm("standard"), p, a100());
    const AlgorithmResult fa2 = simulate(algorithm("fa2"), p, a100());
    const Count once = 4 * 4096 * 64 * 2;  // one of K or V, each K/V head once
    CHECK(read_of(standard.dram, "K") == 8 * once);
    CHECK(read_of(standard.dram, "V") == once);
    CHECK(read_of(fa2.dram, "K") == once);
    CHECK(read_of(fa2.dram, "V") == once);
}

TEST_CASE("a group too long to run together is simulated in units of its largest divisor that can", "[gqa][l2]") {
    // MQA, 32 query heads, N = 16384, d = 128 on an H200: FA2's 128 blocks a head, at most 132 x 16 blocks of 4 warps
    // resident, so 16 heads (15 x 128 = 1920 blocks apart) run as a unit and 32 (3968) do not: K and V come from
    // DRAM twice per K/V head. With 8 K/V heads (groups of 4) once: never more bytes for fewer K/V heads.
    const GpuSpec h200 = find_gpu_preset("H200");
    auto kv_dram = [&](std::int64_t kv_heads) {
        AttentionProblem p = problem(16384, 128, 32, DType::fp16, false);
        p.batch = 2;
        p.kv_heads = kv_heads;
        const AlgorithmResult r = simulate(algorithm("fa2"), p, h200);
        return read_of(r.dram, "K") + read_of(r.dram, "V");
    };
    const Count kv_head = 2 * 2 * 16384 * 128 * 2;  // K and V of one K/V head, over the batch of 2
    CHECK(kv_dram(32) == 32 * kv_head);
    CHECK(kv_dram(8) == 8 * kv_head);
    CHECK(kv_dram(1) == 2 * kv_head);
}
