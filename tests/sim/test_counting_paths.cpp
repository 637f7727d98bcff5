// The counting executor's two paths give the same counts: by class (one block and one loop iteration of
// each run of alike ones, the rest by multiplicity, the L2 model carrying alike items over) and by block
// (every block and iteration of the simulated head, each access played into the L2 model in order).
// Issue: "a test checks that both give identical counts — every byte counter, FLOP counter and the
// predicted time — over a grid of problems where the per-block path still runs".
#include <catch2/catch.hpp>

#include <random>

#include "algorithms/algorithm.hpp"
#include "algorithms/causal.hpp"
#include "exec/counting_executor.hpp"
#include "report/report.hpp"
#include "test_helpers.hpp"

namespace fasim {
namespace {

struct Case {
    const Algorithm* algo;
    PassSelection pass;
    AttentionProblem problem;
    const GpuSpec* gpu;
    TileRequest request;
    ModelOptions options;
    std::string text;
};

std::string describe(const Case& c) {
    return std::string(c.algo->id) + " " + pass_name(c.pass) + " " + c.problem.describe() + " on " + c.gpu->name + c.text;
}

// Both paths' results, field by field: the report's JSON (every counter per kernel, tensor and level, the
// FLOPs, the timing terms and the predicted time) and the per-block work the schedule is made from.
void check_same(const Case& c) {
    INFO(describe(c));
    ModelOptions by_block = c.options;
    by_block.count_every_block = true;
    const AlgorithmResult a = simulate(*c.algo, c.pass, c.problem, *c.gpu, c.request, c.options);
    const AlgorithmResult b = simulate(*c.algo, c.pass, c.problem, *c.gpu, c.request, by_block);
    REQUIRE(a.kernels.size() == b.kernels.size());
    for (std::size_t k = 0; k < a.kernels.size(); ++k) {
        INFO("kernel " << a.kernels[k].desc.name);
        CHECK(a.kernels[k].dram == b.kernels[k].dram);
        CHECK(a.kernels[k].hbm == b.kernels[k].hbm);
        CHECK(a.kernels[k].l2 == b.kernels[k].l2);
        CHECK(a.kernels[k].block_work == b.kernels[k].block_work);
        CHECK(a.timing[k].total_s == b.timing[k].total_s);
    }
    CHECK(algorithm_json(a, nullptr).dump() == algorithm_json(b, nullptr).dump());
}

const GpuSpec& gpu(const char* name) {
    static std::map<std::string, GpuSpec> cache;
    auto it = cache.find(name);
    if (it == cache.end()) it = cache.emplace(name, find_gpu_preset(name)).first;
    return it->second;
}

AttentionProblem problem(std::int64_t N, std::int64_t Nk, std::int64_t d, DType t, bool causal, std::int64_t batch,
                         std::int64_t heads, std::int64_t kv_heads = 0) {
    AttentionProblem p = test::problem(N, d, heads, t, causal, Nk);
    p.batch = batch;
    p.kv_heads = kv_heads;
    return p;
}

TEST_CASE("Counting by class equals counting every block: every algorithm and pass, ragged, causal, Nq != Nk, every "
          "matmul mode and preset",
          "[counting]") {
    // Problems: tile multiples and not, fewer and more keys than queries, causal or not.
    const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{256, 256}, {300, 300}, {1000, 1500}, {1500, 700}, {2048, 2048}};
    int cases = 0;
    for (const Algorithm* algo : algorithms(Pass::forward)) {
        if (algo->decoding) continue;  // below, on decode shapes
        for (const PassSelection pass : {PassSelection::fwd, PassSelection::bwd, PassSelection::fwd_bwd}) {
            if (pass != PassSelection::fwd && !backward_of(*algo)) continue;
            for (const auto& [N, Nk] : shapes)
                for (const bool causal : {false, true}) {
                    check_same({algo, pass, problem(N, Nk, 64, DType::fp16, causal, 1, 16), &gpu("A100-SXM4-40GB"), {}, {}, ""});
                    ++cases;
                }
            // Other head sizes, storage types, GPUs, grids of several waves, the CUDA-core kernels' tiles.
            check_same({algo, pass, problem(1000, 1000, 128, DType::fp32, false, 3, 5), &gpu("H100-SXM"), {}, {}, ""});
            check_same({algo, pass, problem(4096, 4096, 128, DType::bf16, true, 2, 8), &gpu("H200"), {}, {}, ""});
            check_same({algo, pass, problem(777, 777, 32, DType::fp16, false, 1, 2), &gpu("T4"), {}, {}, ""});
            ModelOptions cuda_cores;
            cuda_cores.tensor_cores = false;
            check_same({algo, pass, problem(1500, 1500, 64, DType::fp32, true, 1, 4), &gpu("H200"), {}, cuda_cores, " (CUDA cores)"});
            cases += 4;
        }
    }
    const Algorithm& standard = algorithm("standard");
    for (const MatmulMode m : {MatmulMode::naive, MatmulMode::library})
        for (const PassSelection pass : {PassSelection::fwd, PassSelection::bwd})
            for (const auto& [N, Nk] : shapes) {
                TileRequest r;
                r.matmul = m;
                check_same({&standard, pass, problem(N, Nk, 64, DType::fp16, N % 2 == 1, 1, 4), &gpu("H200"), r, {}, " (matmul)"});
                ++cases;
            }
    TileRequest splits;  // FA1 with several blocks per batch*head, some with a Q tile more
    splits.q_splits = 3;
    check_same({&algorithm("fa1"), PassSelection::fwd, problem(1000, 1000, 64, DType::fp16, false, 1, 4), &gpu("A100-SXM4-40GB"), splits, {}, " (q_splits 3)"});
    check_same({&algorithm("fa1"), PassSelection::fwd, problem(1000, 1300, 64, DType::fp16, true, 1, 4), &gpu("A100-SXM4-40GB"), splits, {}, " (q_splits 3)"});
    TileRequest separate;  // FA2's backward with dQ in a kernel of its own
    separate.dq = DqMode::separate;
    for (const bool causal : {false, true})
        check_same({&algorithm("fa2"), PassSelection::bwd, problem(1000, 1200, 64, DType::fp16, causal, 2, 2), &gpu("H100-SXM"), separate, {}, " (dq separate)"});
    // Training with grouped K/V heads: every algorithm that takes them, forward and backward (its group sums).
    for (const Algorithm* algo : algorithms(Pass::forward)) {
        if (!algo->grouped_kv || algo->decoding) continue;
        for (const PassSelection pass : {PassSelection::fwd, PassSelection::bwd}) {
            if (pass == PassSelection::bwd && !backward_of(*algo)) continue;
            check_same({algo, pass, problem(1000, 1000, 64, DType::fp16, false, 2, 8, 2), &gpu("H200"), {}, {}, " (GQA)"});
            check_same({algo, pass, problem(700, 1300, 128, DType::bf16, true, 1, 4, 1), &gpu("A100-SXM4-40GB"), {}, {}, " (MQA)"});
            cases += 2;
        }
    }
    // Decoding: grouped K/V heads, splits by the heuristic and given, a few query rows, causal.
    const Algorithm& decoding = algorithm("flash_decoding");
    check_same({&decoding, PassSelection::fwd, problem(1, 65536, 128, DType::fp16, false, 1, 32, 8), &gpu("H100-SXM"), {}, {}, ""});
    check_same({&decoding, PassSelection::fwd, problem(4, 10000, 64, DType::bf16, false, 2, 8, 1), &gpu("A100-SXM4-40GB"), {}, {}, ""});
    check_same({&decoding, PassSelection::fwd, problem(16, 3000, 64, DType::fp16, true, 1, 4), &gpu("H200"), {}, {}, ""});
    TileRequest kv;
    kv.kv_splits = 7;
    check_same({&decoding, PassSelection::fwd, problem(1, 5000, 64, DType::fp16, false, 3, 4), &gpu("L4"), kv, {}, " (kv_splits 7)"});
    // Long enough for every level to be carried over (loops of 64 K/V tiles, blocks of several waves).
    for (const Algorithm* algo : algorithms(Pass::forward)) {
        if (algo->decoding) continue;
        check_same({algo, PassSelection::fwd, problem(8192, 8192, 64, DType::fp16, false, 1, 32), &gpu("A100-SXM4-40GB"), {}, {}, ""});
        check_same({algo, PassSelection::fwd, problem(8000, 8192, 128, DType::bf16, true, 2, 8), &gpu("H100-SXM"), {}, {}, ""});
        if (backward_of(*algo))
            check_same({algo, PassSelection::fwd_bwd, problem(8192, 8192, 64, DType::fp16, false, 1, 16), &gpu("H200"), {}, {}, ""});
        cases += 3;
    }
    check_same({&decoding, PassSelection::fwd, problem(1, 262144, 128, DType::fp16, false, 1, 32, 8), &gpu("H200"), {}, {}, ""});
    CHECK(cases > 100);
}

TEST_CASE("Standard attention's causal rows longer than shared memory count by class: a run per chunk the diagonal enters",
          "[counting]") {
    // fp32 rows of 20000 keys on a T4 pass through shared memory in chunks of 16384: a row's masked chunks
    // start where its diagonal falls, the same for every row whose diagonal stays in one chunk.
    const Case c{&algorithm("standard"), PassSelection::fwd, problem(19000, 20000, 64, DType::fp32, true, 1, 2), &gpu("T4"), {}, {}, ""};
    check_same(c);
    const AlgorithmResult r = simulate(*c.algo, c.pass, c.problem, *c.gpu, c.request, c.options);
    REQUIRE(r.kernels.size() == 3);
    const KernelRecord& softmax = r.kernels[1];
    REQUIRE(softmax.desc.name == "softmax");
    CHECK(softmax.desc.blocks_per_head == 19000);
    CHECK(softmax.blocks_run <= 12);  // three of each run (rows whose diagonal is in chunk 0, chunk 1, the last row)
}

TEST_CASE("FA1 with the mask, one block per head, plays its long record in parts and counts as the by-block path",
          "[counting]") {
    // fp32 on a T4: small K/V tiles, so the one block's causal outer loop (each K/V tile's inner loop over
    // the Q tiles below the diagonal is its own length) unrolls into more than the 4096 top-level records a
    // lone block keeps before playing them into L2. Forward, backward, both, and several blocks per head.
    for (const PassSelection pass : {PassSelection::fwd, PassSelection::bwd, PassSelection::fwd_bwd})
        check_same({&algorithm("fa1"), pass, problem(30000, 31000, 64, DType::fp32, true, 1, 2), &gpu("T4"), {}, {}, ""});
    TileRequest splits;
    splits.q_splits = 3;
    check_same({&algorithm("fa1"), PassSelection::fwd, problem(30000, 30000, 64, DType::fp32, true, 1, 2), &gpu("T4"), splits, {}, " (q_splits 3)"});
}

TEST_CASE("FA1's causal backward with 83-row tiles grows in units of 32 K/V tiles and counts as the by-block path",
          "[counting]") {
    // fp16 at d = 128 on the A100: 83-row Q and K/V tiles, so each K/V tile meets one Q tile fewer than the
    // one before, but l and m of a Q tile (83 x 4 bytes) start at a place in a 128-byte line that recurs only
    // every 32 tiles: one K/V tile's requests to the next differ, 32 tiles' to the next 32 do not. The
    // staircase doubles its unit until four units grow alike (at N = 60,000: 723 K/V tiles, units of 32).
    for (const PassSelection pass : {PassSelection::bwd, PassSelection::fwd_bwd})
        check_same({&algorithm("fa1"), pass, problem(60000, 60000, 128, DType::fp16, true, 1, 1), &gpu("A100-SXM4-40GB"), {}, {}, ""});
}

TEST_CASE("Issue 24's slowest long-context lines, at lengths the by-block path runs, count as the by-block path",
          "[counting]") {
    // fa1 --pass fwd+bwd --d 128 --causal: the passes' 128-, 163- and 83-row tiles share a grid of one row, so
    // every Q, O, l and m access visits a tile state per row (TileStates::stored_around, L2Model::read).
    check_same({&algorithm("fa1"), PassSelection::fwd_bwd, problem(4099, 4099, 128, DType::fp16, true, 1, 16), &gpu("A100-SXM4-40GB"), {}, {}, ""});
    // standard --causal at an odd length: rows of 2-byte elements taken 64 at a time, and on the T4 (fp16 rows
    // of 40,003 keys longer than shared memory) a run of rows per chunk the diagonal enters, each replayed row
    // by row into one reused record (replay of RowRunAccesses).
    check_same({&algorithm("standard"), PassSelection::fwd, problem(4099, 4099, 64, DType::fp16, true, 1, 16), &gpu("A100-SXM4-40GB"), {}, {}, ""});
    check_same({&algorithm("standard"), PassSelection::fwd, problem(40003, 40003, 64, DType::fp16, true, 1, 2), &gpu("T4"), {}, {}, ""});
}

TEST_CASE("change_points finds every index where a non-decreasing step function changes", "[counting]") {
    std::mt19937_64 rng(20261128);
    for (int trial = 0; trial < 200; ++trial) {
        const std::int64_t n = std::uniform_int_distribution<std::int64_t>(1, 3000)(rng);
        std::vector<std::int64_t> f(static_cast<std::size_t>(n + 1));
        std::int64_t v = 0;
        for (auto& x : f) x = v += std::uniform_int_distribution<int>(0, 40)(rng) == 0 ? 1 : 0;
        std::vector<std::int64_t> expected, found;
        for (std::int64_t i = 1; i <= n; ++i)
            if (f[static_cast<std::size_t>(i)] != f[static_cast<std::size_t>(i - 1)]) expected.push_back(i);
        change_points(0, n, [&](std::int64_t i) { return f[static_cast<std::size_t>(i)]; }, found);
        CHECK(found == expected);
    }
}

TEST_CASE("A causal staircase counts by class from a few blocks: Q tile i visits one K/V tile more than Q tile i - 1",
          "[counting]") {
    // FlashAttention-2's causal grid: block i does block i - 1's work and one K/V tile more (forward), or one
    // Q tile less (the backward's K/V tiles). The class path describes blocks until four in a row grow
    // alike and makes the others from them; both paths must agree to the byte and the second.
    const Algorithm& fa2 = algorithm("fa2");
    for (const PassSelection pass : {PassSelection::fwd, PassSelection::bwd}) {
        // 128 x 128 tiles (d = 64), 128 x 64 (d = 128 on the H100: two K/V tiles per step), keys ahead of
        // the queries by a multiple of a tile and not (the backward's first K/V tiles seen by every Q tile:
        // a flat stretch before the staircase), a ragged last tile, several waves.
        check_same({&fa2, pass, problem(4096, 4096, 64, DType::fp16, true, 1, 4), &gpu("A100-SXM4-40GB"), {}, {}, ""});
        check_same({&fa2, pass, problem(3000, 9000, 128, DType::bf16, true, 1, 2), &gpu("H100-SXM"), {}, {}, ""});
        check_same({&fa2, pass, problem(5000, 5333, 64, DType::fp16, true, 2, 2), &gpu("H200"), {}, {}, ""});
    }
    TileRequest heaviest;  // fa2_tc_tuned's order: the longest Q tile first, a shrinking staircase
    heaviest.heaviest_first = true;
    check_same({&fa2, PassSelection::fwd, problem(5000, 5000, 64, DType::fp16, true, 1, 4), &gpu("H200"), heaviest, {}, " (heaviest first)"});
    TileRequest separate;  // the backward's dQ kernel over Q tiles: a growing staircase
    separate.dq = DqMode::separate;
    check_same({&fa2, PassSelection::bwd, problem(4000, 4000, 64, DType::fp16, true, 1, 2), &gpu("H100-SXM"), separate, {}, " (dq separate)"});
    check_same({&algorithm("tiled"), PassSelection::fwd, problem(4096, 4500, 64, DType::fp16, true, 1, 4), &gpu("A100-SXM4-40GB"), {}, {}, ""});

    // FlashAttention-1's causal outer loop: K/V tile j meets Bc / Br Q tiles fewer than K/V tile j - 1. The
    // paper's tiles on the A100 (Br = 64, Bc = 326 at d = 64) step a whole number of Q tiles every 32 K/V
    // tiles: units of 32 grow alike. Also 64 x 128 tiles (units of 2) and Q tiles dealt to 3 blocks.
    const Algorithm& fa1 = algorithm("fa1");
    TileRequest small;
    small.Br = 64;
    small.Bc = 128;
    for (const PassSelection pass : {PassSelection::fwd, PassSelection::bwd})
        check_same({&fa1, pass, problem(131072, 131072, 64, DType::fp16, true, 1, 2), &gpu("A100-SXM4-40GB"), {}, {}, ""});
    check_same({&fa1, PassSelection::bwd, problem(6000, 6100, 64, DType::fp16, true, 1, 2), &gpu("H100-SXM"), small, {}, " (64 x 128)"});
    check_same({&fa1, PassSelection::fwd, problem(6000, 6100, 64, DType::fp16, true, 1, 2), &gpu("H100-SXM"), small, {}, " (64 x 128)"});
    small.q_splits = 3;
    check_same({&fa1, PassSelection::fwd, problem(9000, 9000, 64, DType::fp16, true, 1, 2), &gpu("H100-SXM"), small, {}, " (64 x 128, q_splits 3)"});

    // At N = 65536 (A100: 512 Q tiles of 128 rows) the forward runs a handful of blocks, not 512.
    const AlgorithmResult r = simulate(fa2, test::problem(65536, 64, 16, DType::fp16, true), test::a100());
    REQUIRE(r.kernels.size() == 1);
    CHECK(r.kernels[0].desc.blocks_per_head == 512);
    CHECK(r.kernels[0].blocks_run <= 12);
}

TEST_CASE("Counting by class runs a handful of blocks however long the sequence", "[counting]") {
    // FA2 at N = 65536 has 512 Q tiles per head (A100: 128-row tiles): the class path runs three blocks of
    // the alike ones and the ragged-free last one; the by-block path runs all 512.
    const AlgorithmResult r = simulate(algorithm("fa2"), test::problem(65536), test::a100());
    REQUIRE(r.kernels.size() == 1);
    CHECK(r.kernels[0].desc.blocks_per_head == 512);
    CHECK(r.kernels[0].blocks_run == 4);
    ModelOptions every;
    every.count_every_block = true;
    CHECK(simulate(algorithm("fa2"), test::problem(65536), test::a100(), {}, every).kernels[0].blocks_run == 512);
}

// One kernel counted on both paths; how many times the program ran the loop body or a block, per path.
struct BothPaths {
    KernelRecord by_class, by_block;
    std::int64_t body_runs_by_class = 0, body_runs_by_block = 0;
};
BothPaths count_both(const GlobalTensor& tensor, const KernelDesc& k,
                     const std::function<void(Block&, const GlobalTensor&, std::int64_t, std::int64_t&)>& body) {
    BothPaths out;
    for (const CountPath path : {CountPath::by_class, CountPath::by_block}) {
        CountingExecutor x(gpu("A100-SXM4-40GB"), 0, {}, 0, path);
        const GlobalTensor t = x.declare(tensor);
        std::int64_t& runs = path == CountPath::by_class ? out.body_runs_by_class : out.body_runs_by_block;
        x.launch(k, [&](Block& b, std::int64_t, std::int64_t block) { body(b, t, block, runs); });
        (path == CountPath::by_class ? out.by_class : out.by_block) = x.take_kernels().front();
    }
    return out;
}

void check_same_counts(const BothPaths& both) {
    CHECK(both.by_class.hbm == both.by_block.hbm);
    CHECK(both.by_class.l2 == both.by_block.l2);
    CHECK(both.by_class.dram == both.by_block.dram);
    CHECK(both.by_class.block_work == both.by_block.block_work);
    CHECK(both.by_class.l2_read_requests == both.by_block.l2_read_requests);
}

TEST_CASE("Rows of an odd number of 2-byte elements: a loop's k-steps and one-block rows count by class a few at a "
          "time",
          "[counting]") {
    // A row of 1001 fp16 elements is 2002 bytes: a k-step of 32 rows moves 64,064 bytes, 64 past a multiple
    // of a 128-byte line, so the k-steps meet the lines at two places in turn and cost requests alike only
    // two at a time; one row after another meets them at 64 places (2002 = 82 mod 128).
    const GlobalTensor X{"X", 1, 4096, 1001, 2, 32, 1001};
    SECTION("a block's loop over 128 k-steps: three single steps, then units of two") {
        const BothPaths both = count_both(X, {"k_steps", "", 1, 1},
                                          [](Block& b, const GlobalTensor& t, std::int64_t, std::int64_t& runs) {
                                              b.repeat(0, 128, [&](std::int64_t k) {
                                                  ++runs;
                                                  Tile x = b.load(view(t, 0).tile(k * 32, 32, 0, 64), Space::Shared, "X k-step");
                                              });
                                          });
        CHECK(both.body_runs_by_block == 128);
        // 3 single steps, 3 units of two, then the 62 units run as one loop, and the one step left alone.
        CHECK(both.body_runs_by_class == 3 + 6 + 1);
        check_same_counts(both);
    }
    SECTION("a kernel of one block per row: rows taken 64 at a time") {
        KernelDesc rows{"rows", "", 4096, 1};
        rows.run_starts = {0};
        const BothPaths both = count_both(X, rows, [](Block& b, const GlobalTensor& t, std::int64_t row, std::int64_t& runs) {
            ++runs;
            Tile x = b.load(view(t, 0).rows(row, 1), Space::Registers, "X row");
            b.store(x, view(t, 0).rows(row, 1));
        });
        CHECK(both.body_runs_by_block == 4096);
        CHECK(both.by_class.blocks_run == both.body_runs_by_class);
        // Three units of each period tried (1, 2, ... 64 rows); then only rows before a unit can start a
        // group of whole waves and the few after the last whole unit run alone.
        CHECK(both.body_runs_by_class <= 3 * (1 + 2 + 4 + 8 + 16 + 32 + 64) + 2 * 64);
        check_same_counts(both);
    }
}

TEST_CASE("Element-wise rows not a multiple of 128 bytes long count by class a few rows at a time", "[counting]") {
    // PyTorch's math backend over 4096 x 4099 fp32 scores: a row is 16,396 bytes, so each starts 12 bytes
    // further into its 128-byte line than the row before, and its requests differ; the same places recur
    // every 32 rows (every 128 for the one-byte isneginf mask). Rows are taken 32 (128) at a time, and
    // only a few hundred of the 4096 rows run: three units of each period tried (1 + 2 + ... + 128 rows)
    // and the rows run alone before a unit can start a group of whole waves. Both paths still count alike.
    const AttentionProblem p = problem(4096, 4099, 64, DType::fp16, false, 1, 2);
    const AlgorithmResult r = simulate(algorithm("torch_math"), p, gpu("H200"));
    int element_wise = 0;
    for (const KernelRecord& k : r.kernels) {
        if (k.desc.row_blocks != ceil_div(std::int64_t{4099}, std::int64_t{512})) continue;
        INFO(k.desc.name);
        ++element_wise;
        const std::int64_t rows_run_alone = 4;  // three alike blocks of a row and its ragged last one
        CHECK(k.blocks_run <= 1000 * rows_run_alone);
        CHECK(k.blocks_run < k.desc.blocks_per_head / 8);
    }
    CHECK(element_wise >= 3);  // where, isneginf, the copy of the weights to fp16
    check_same({&algorithm("torch_math"), PassSelection::fwd, p, &gpu("H200"), {}, {}, ""});
}

}  // namespace
}  // namespace fasim
