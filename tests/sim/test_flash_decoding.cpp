// FlashDecoding (split-KV) and grouped-query attention: the combine is exact, the traffic of a decode
// step is K and V read once plus the partials' round trip, GQA divides it by the group size, and the
// split count follows flash-attention's heuristic.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <random>

#include "algorithms/algorithm.hpp"
#include "attention_reference.hpp"
#include "exec/functional_executor.hpp"
#include "exec/problem_inputs.hpp"
#include "kernels/tile_rules.hpp"
#include "precision.hpp"
#include "test_helpers.hpp"

using namespace fasim;
using namespace fasim::test;

namespace {

std::uint64_t test_seed() {
    if (const char* s = std::getenv("FASIM_TEST_SEED")) return std::strtoull(s, nullptr, 10);
    static const std::uint64_t seed = std::random_device{}();
    return seed;
}

AttentionProblem decode(std::int64_t N, std::int64_t Nk, std::int64_t heads, std::int64_t kv_heads, std::int64_t batch = 1,
                        std::int64_t d = 128, DType t = DType::fp16, bool causal = false) {
    AttentionProblem p = problem(N, d, heads, t, causal, Nk);
    p.batch = batch;
    p.kv_heads = kv_heads;
    return p;
}

const GpuSpec& h100() {
    static const GpuSpec g = find_gpu_preset("H100-SXM");
    return g;
}

const Algorithm& flash_decoding() { return algorithm("flash_decoding"); }

}  // namespace

TEST_CASE("FlashDecoding equals exact attention: any split count, GQA and MQA, causal query blocks", "[flash-decoding][functional]") {
    const std::uint64_t seed = test_seed();
    INFO("seed " << seed << " (rerun with FASIM_TEST_SEED=" << seed << ")");
    for (auto [N, Nk] : {std::pair{1L, 1L}, {1L, 77L}, {1L, 300L}, {3L, 77L}, {17L, 300L}})
        for (std::int64_t kv : {4L, 2L, 1L})
            for (DType t : {DType::fp32, DType::fp16, DType::bf16})
                for (bool causal : {false, true})
                    for (std::int64_t splits : {0L, 1L, 2L, 3L, 7L}) {
                        const AttentionProblem p = decode(N, Nk, 4, kv, 2, 16, t, causal);
                        TileRequest req;
                        req.Br = 8;
                        req.Bc = 16;  // several K/V tiles, so the splits hold different keys
                        if (splits > ceil_div(Nk, *req.Bc)) continue;
                        req.kv_splits = splits;
                        CAPTURE(N, Nk, kv, dtype_name(t), causal, splits);
                        const TileConfig tiles = choose_tiles(flash_decoding(), p, a100(), req);
                        const ProblemInputs in = random_inputs(p, seed);
                        const FunctionalRun run = run_functional(flash_decoding(), p, a100(), tiles, in.Q, in.K, in.V);
                        reference::AttentionOptions opt;
                        opt.causal = causal;
                        for (std::int64_t h = 0; h < p.batch_heads(); ++h) {
                            const auto hh = static_cast<std::size_t>(h);
                            const auto check = reference::check_tolerance(run.O[hh], in.Q[hh], in.K_of(p, h), in.V_of(p, h), opt, t);
                            CAPTURE(h, check.error, check.bound);
                            CHECK(check.pass);
                            const auto exact = reference::exact_attention(in.Q[hh], in.K_of(p, h), in.V_of(p, h), opt);
                            if (t == DType::fp32) CHECK(reference::check_lse(run.lse[hh], in.Q[hh], in.K_of(p, h), opt, exact).pass);
                        }
                    }
}

TEST_CASE("a decode step's HBM traffic: K and V once per K/V head, Q, O, and the partials' round trip", "[flash-decoding][closed-form]") {
    // Llama-style decode on an H100: 32 query heads sharing 8 K/V heads, one new token, 64k cached keys.
    for (std::int64_t kv : {32L, 8L, 1L})
        for (std::int64_t batch : {1L, 4L}) {
            const AttentionProblem p = decode(1, 65536, 32, kv, batch);
            const AlgorithmResult r = simulate(flash_decoding(), p, h100());
            CAPTURE(kv, batch, r.tiles.kv_splits);
            const std::int64_t e = 2, d = 128, S = r.tiles.kv_splits, rows = batch * 32;
            const std::int64_t kv_bytes = 2 * batch * kv * 65536 * d * e;         // K and V, each read once
            const std::int64_t q = S * rows * d * e;                               // each split reads the new token's Q
            const std::int64_t o = rows * (d * e + 4);                             // O and its LSE, written once
            const std::int64_t partials = S > 1 ? S * rows * (d + 1) * 4 : 0;      // fp32 O_s and LSE_s
            CHECK(r.hbm.read_bytes() == kv_bytes + q + partials);
            CHECK(r.hbm.write_bytes() == o + partials);
            // The split kernel reads Q once per split; with 8 or more K/V heads everything but K and V is under
            // 1% at this size. With one (MQA) K and V shrink 32-fold, and the partials' round trip shows.
            if (kv >= 8) CHECK(static_cast<double>(r.hbm.total()) < 1.01 * static_cast<double>(kv_bytes));
            const ClosedForm f = flash_decoding().closed_form(p, r.tiles);
            REQUIRE(f.hbm);
            CHECK(r.hbm.read_bytes() == f.hbm->read);
            CHECK(r.hbm.write_bytes() == f.hbm->write);
            CHECK(read_of(r.hbm, "O_partial") == write_of(r.hbm, "O_partial"));
            CHECK(read_of(r.hbm, "LSE_partial") == (S > 1 ? S * batch * 32 * 4 : 0));
        }
}

TEST_CASE("GQA: FlashDecoding reads each K/V head once for its whole group, FA2 once per query head", "[flash-decoding][gqa]") {
    const AttentionProblem mha = decode(1, 16384, 32, 32), gqa = decode(1, 16384, 32, 8), mqa = decode(1, 16384, 32, 1);
    auto kv_read = [](const AlgorithmResult& r) { return read_of(r.hbm, "K") + read_of(r.hbm, "V"); };
    const Count mha_bytes = kv_read(simulate(flash_decoding(), mha, h100()));
    CHECK(mha_bytes == 2 * 32 * 16384 * 128 * 2);
    CHECK(kv_read(simulate(flash_decoding(), gqa, h100())) * 4 == mha_bytes);
    CHECK(kv_read(simulate(flash_decoding(), mqa, h100())) * 32 == mha_bytes);
    // FA2 gives every query head its own blocks: the group's K/V head is requested once per query head
    // (the L2 may serve the repeats; the papers' HBM count does not).
    CHECK(kv_read(simulate(algorithm("fa2"), gqa, h100())) == mha_bytes);
}

TEST_CASE("GQA: the query heads of one K/V head run side by side, so FA2's K and V reach DRAM once per K/V head",
          "[flash-decoding][gqa][l2]") {
    // The papers' HBM count gives every query head its K/V reads; the L2 serves the group's repeats, as
    // it serves any tile a block running at the same time fetched (machine/l2_model.hpp, rule 1).
    auto kv = [](const LevelTraffic& t) { return read_of(t, "K") + read_of(t, "V"); };
    for (std::int64_t batch : {1L, 8L})
        for (std::int64_t kv_heads : {32L, 8L, 1L}) {
            const AttentionProblem p = decode(1, 65536, 32, kv_heads, batch);
            const AlgorithmResult r = simulate(algorithm("fa2"), p, h100());
            CAPTURE(batch, kv_heads);
            CHECK(kv(r.hbm) == 2 * batch * 32 * 65536 * 128 * 2);
            CHECK(kv(r.dram) == 2 * batch * kv_heads * 65536 * 128 * 2);
        }
    // Training length: a head's 32 Q tiles and its group's 4 heads (128 blocks) fit in one wave of the
    // H100's 132 SMs, so K/V come from DRAM once per K/V head here too; Q and O stay one per query head.
    AttentionProblem p = problem(4096, 128, 32, DType::fp16, false);
    p.kv_heads = 8;
    const AlgorithmResult r = simulate(algorithm("fa2"), p, h100());
    CHECK(kv(r.dram) == 2 * 8 * 4096 * 128 * 2);
    CHECK(read_of(r.dram, "Q") == 32 * 4096 * 128 * 2);
    CHECK(write_of(r.dram, "O") == 32 * 4096 * 128 * 2);
}

TEST_CASE("flash-attention's split heuristic: fill the SMs' slots, fewest splits within 85% of the best", "[flash-decoding][splits]") {
    // 8 K/V heads of one sequence on an H100 (264 slots, 2 per SM), 128 K/V tiles: 32 splits of 4 tiles
    // make 256 blocks (97% of a wave, the best); 26 to 31 splits all need 5 tiles each, so only 26 counts
    // among them, and its 208 blocks (79%) fall short of 85% of the best.
    CHECK(tile_rules::flash_decoding_splits(8, 264, 128) == 32);
    // Enough blocks already (80% of the slots): no split.
    CHECK(tile_rules::flash_decoding_splits(212, 264, 1000) == 1);
    CHECK(tile_rules::flash_decoding_splits(211, 264, 1000) > 1);
    // Never more splits than K/V tiles, nor than 128.
    CHECK(tile_rules::flash_decoding_splits(1, 264, 3) == 3);
    CHECK(tile_rules::flash_decoding_splits(1, 1000, 100000) == 109);  // 128 is the best; 109 the fewest within 85%
    // The simulator picks the same: batch 1, 32 heads over 8 K/V heads, 16k keys.
    const AlgorithmResult r = simulate(flash_decoding(), decode(1, 16384, 32, 8), h100());
    CHECK(r.tiles.Bc == tile_rules::flash_decoding_bc(128));
    CHECK(r.tiles.kv_splits == tile_rules::flash_decoding_splits(8, 2 * 132, ceil_div(16384, r.tiles.Bc)));
    CHECK(r.kernels.front().desc.grid() == 8 * r.tiles.kv_splits);
}

TEST_CASE("splits are rounded to the count whose splits all hold keys", "[flash-decoding][splits]") {
    // 10 K/V tiles in 6 splits of 2 leave the sixth empty: 5 splits run.
    TileRequest req;
    req.kv_splits = 6;
    const TileConfig t = choose_tiles(flash_decoding(), decode(1, 10 * tile_rules::flash_decoding_bc(128), 32, 32), h100(), req);
    CHECK(t.kv_splits == 5);
}

TEST_CASE("one query row leaves FA2 SMs idle, FlashDecoding fills them and is predicted several times faster", "[flash-decoding][model]") {
    const AttentionProblem p = decode(1, 65536, 32, 8);
    const AlgorithmResult fa2 = simulate(algorithm("fa2"), p, h100()), fd = simulate(flash_decoding(), p, h100());
    CHECK(fa2.kernels.front().desc.grid() == 32);
    CHECK(fa2.timing.front().idle_sms == 100);
    CHECK(fd.timing.front().idle_sms == 0);
    CHECK(fd.time_s * 4 < fa2.time_s);
    // FlashDecoding's split kernel nears DRAM's bound, K and V streamed once at the HBM's rate: its blocks'
    // one computing warp (4 query heads per K/V head: 4 rows) issues a tile's work in about the time the
    // HBM streams it (the H100 run measured 83% of the copy bandwidth on this shape).
    const KernelTiming& split = fd.timing.front();
    CHECK(split.dram_s > 0.85 * (split.total_s - split.launch_s));
}

TEST_CASE("a decoding step's one query row keeps one warp of four busy with whole 16-row mma fragments", "[flash-decoding][model]") {
    // FA2's split-Q kernels give each warp a fixed band of the Q tile's rows (Br / warps: 32 at d = 128,
    // two 16-row fragments); the tensor cores compute whole fragments, so one row costs its warp what a
    // full band does, and the warps with no row only copy. A block with one row so takes about as long as
    // a full one: its one warp issues on one scheduler what the full block's warps share on four
    // (KernelExecution::warp_rows; what the H100 decode run measured of fa2_tc's lone blocks).
    auto fa2_at = [](std::int64_t N, const ModelOptions& options = {}) {
        return simulate(algorithm("fa2"), decode(N, 8192, 32, 32), h100(), {}, options);
    };
    const AlgorithmResult one = fa2_at(1), sixteen = fa2_at(16);
    const AlgorithmResult full = fa2_at(one.tiles.Br);
    const KernelRecord &k1 = one.kernels.front(), &k16 = sixteen.kernels.front(), &kfull = full.kernels.front();
    REQUIRE(k1.desc.warps == 4);
    CHECK(k1.desc.grid() == kfull.desc.grid());
    CHECK(k1.active_warps == 1);
    CHECK(k16.active_warps == 1);
    CHECK(kfull.active_warps == 4);
    // The band's missing rows cost as much as present ones (only the Q loads and O stores grow with rows).
    CHECK(k16.warp_instructions == Approx(static_cast<double>(k1.warp_instructions)).epsilon(0.01));
    CHECK(k1.matmul_flops * 16 == k16.matmul_flops);  // FLOPs count the useful rows only
    CHECK(one.timing.front().issue_s == Approx(full.timing.front().issue_s).epsilon(0.05));
    CHECK(one.time_s == Approx(full.time_s).epsilon(0.05));
    // The CUDA-core kernels spread a tile's rows over every warp's lanes: no bands there.
    ModelOptions cuda_cores;
    cuda_cores.tensor_cores = false;
    CHECK(fa2_at(1, cuda_cores).kernels.front().active_warps == 4);
}

TEST_CASE("two one-row blocks on an SM compute on two schedulers: the busiest holds one block's own instructions and a "
          "quarter of both blocks' copies",
          "[flash-decoding][model]") {
    // The SM gives blocks sharing it warp slots that put their first warps on different schedulers (peak-rates
    // --warp-slots on an H200: 2, 3 or 4 blocks of 4 warps, every first warp on a scheduler of its own;
    // cuda/results/2026-11-28-h200-slots). 8 x 32 one-row blocks on 132 SMs: two per SM, each computing on its
    // first warp only.
    const AlgorithmResult r = simulate(algorithm("fa2"), decode(1, 8192, 32, 32, 8), h100(), {}, {});
    const KernelRecord& k = r.kernels.front();
    const KernelTiming& t = r.timing.front();
    REQUIRE(k.active_warps == 1);
    REQUIRE(k.desc.grid() == 256);
    REQUIRE(t.warps_per_scheduler == 2);  // 2 blocks x 4 warps over 4 schedulers
    REQUIRE(k.block_work.size() == 1);    // every block alike
    const BlockWork& w = k.block_work.front();
    const double shared = static_cast<double>(w.shared_thread_instructions) / 32;
    const double own = static_cast<double>(w.thread_instructions) / 32 - shared;
    const GpuSpec& gpu = h100();
    // 2 warps per scheduler, each with its independent 16-row mma blocks (2 in a 32-row band), at the rate of
    // FA2's step measured alone for that many blocks per scheduler
    REQUIRE(t.issue_law == IssueLaw::fa2_step);
    const double per_cycle = GpuSpec::step_issue_fraction(gpu.model.fa2_step_issue(static_cast<int>(r.problem.d)), 2.0 * k.row_blocks_per_warp);
    CHECK(t.issue_fraction == Approx(per_cycle));
    CHECK(t.issue_s == Approx((own + 2 * shared / 4) / (gpu.clock_hz * per_cycle)).epsilon(1e-9));
    // Both computing warps on one scheduler (the model until 2026-11-28) would take this much longer:
    CHECK(t.issue_s < (2 * own + 2 * shared / 4) / (gpu.clock_hz * per_cycle) * 0.8);
}

TEST_CASE("FlashDecoding's split blocks with one or two bands of rows share each tile's keys over all four warps",
          "[flash-decoding][model]") {
    // The split kernel's warps own 16-row bands; a one-row (or packed 4-, 16- or 32-row) Q tile fills one or two
    // of them, so the warps split into 4 or 2 key groups (tile_rules::flash_decoding_key_groups) and every warp
    // computes. The instructions are those of whole bands either way: the groups divide them, not add to them.
    // FA2's kernel keeps its bands (one row: one warp).
    for (const std::int64_t kv : {32, 8, 1}) {
        const AttentionProblem p = decode(1, 65536, 32, kv);
        const std::int64_t rows = 32 / kv;  // query rows per row head: one, or the packed group
        const AlgorithmResult r = simulate(flash_decoding(), p, h100());
        const KernelRecord& split = r.kernels.front();
        INFO("K/V heads " << kv << ", rows " << rows);
        CHECK(tile_rules::flash_decoding_key_groups(rows) == (rows <= 16 ? 4 : 2));
        CHECK(split.active_warps == 4);
    }
    // 64 rows: four bands, one group; 48: three bands, which four warps cannot split into groups.
    CHECK(tile_rules::flash_decoding_key_groups(64) == 1);
    CHECK(tile_rules::flash_decoding_key_groups(48) == 1);
    CHECK(simulate(flash_decoding(), decode(48, 65536, 32, 32), h100()).kernels.front().active_warps == 3);
    CHECK(simulate(algorithm("fa2"), decode(1, 65536, 32, 32), h100()).kernels.front().active_warps == 1);
    // The MQA block's issue time halves: the same instructions, on four schedulers instead of two.
    const AlgorithmResult mqa = simulate(flash_decoding(), decode(1, 131072, 32, 1), h100());
    const KernelTiming& t = mqa.timing.front();
    const KernelRecord& k = mqa.kernels.front();
    CHECK(t.issue_s < 0.6 * static_cast<double>(k.block_work.front().thread_instructions) / 32 /
                          (2 * h100().clock_hz * t.issue_fraction));
}

TEST_CASE("bad decode inputs are refused on one line: K/V heads that do not divide the heads, splits out of range, causal N > Nk",
          "[flash-decoding][errors]") {
    AttentionProblem p = decode(1, 1024, 32, 5);
    CHECK_THROWS_WITH(validate(p), Catch::Contains("--kv-heads 5") && Catch::Contains("divide"));
    TileRequest req;
    req.kv_splits = 9;  // 8 K/V tiles
    CHECK_THROWS_WITH(choose_tiles(flash_decoding(), decode(1, 8 * tile_rules::flash_decoding_bc(128), 32, 8), h100(), req),
                      Catch::Contains("--kv-splits 9") && Catch::Contains("1..8"));
    CHECK_THROWS_WITH(choose_tiles(flash_decoding(), decode(8, 4, 32, 8, 1, 128, DType::fp16, true), h100(), {}),
                      Catch::Contains("N = 8") && Catch::Contains("Nk = 4"));
    // An algorithm that gives every query head its own K/V head (PyTorch's math backend, as modelled) refuses grouped ones.
    CHECK_THROWS_WITH(choose_tiles(algorithm("torch_math"), decode(1, 1024, 32, 8), h100(), {}), Catch::Contains("--kv-heads"));
}
