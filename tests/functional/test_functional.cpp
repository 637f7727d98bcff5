// The functional executor runs the same tile programs with real numbers: its output
// equals exact attention (float64) within the dtype-aware rule of
// reference/TOLERANCES.md, and its traffic equals the counting executor's.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <random>

#include "exec/functional_executor.hpp"
#include "gpu/gpu_catalog.hpp"
#include "inputs.hpp"
#include "model/simulation.hpp"
#include "../common/random_heads.hpp"

using namespace fasim;
using reference::Matrix;
using test::HeadInputs;
using test::random_heads;
using test::test_seed;

namespace {

const GpuSpec& gpu() {
    static const GpuSpec g = find_gpu_preset("A100-SXM4-40GB");
    return g;
}

AttentionProblem make(std::int64_t N, std::int64_t Nk, std::int64_t d, std::int64_t heads, DType t, bool causal) {
    AttentionProblem p;
    p.batch = 1;
    p.heads = heads;
    p.N = N;
    p.Nk = Nk;
    p.d = d;
    p.dtype = t;
    p.causal = causal;
    return p;
}

bool finite_or_masked(const Matrix& m) {
    for (Eigen::Index i = 0; i < m.size(); ++i)
        if (std::isnan(m.data()[i]) || std::isinf(m.data()[i])) return false;
    return true;
}

}  // namespace

TEST_CASE("every algorithm equals exact attention on fresh random inputs, all dtypes, causal or not, ragged shapes",
          "[functional][accuracy]") {
    const std::uint64_t seed = test_seed();
    INFO("seed " << seed << " (rerun with FASIM_TEST_SEED=" << seed << ")");
    struct Shape {
        std::int64_t N, Nk, d;
    };
    for (Shape s : {Shape{64, 64, 64}, Shape{100, 37, 32}, Shape{37, 100, 16}, Shape{1, 1, 16}, Shape{130, 129, 48}})
        for (DType t : {DType::fp32, DType::fp16, DType::bf16})
            for (bool causal : {false, true})
                for (const Algorithm* a : algorithms(Pass::forward)) {
                    if (a->decoding && causal && s.N > s.Nk) continue;  // refused: a decode step's rows follow its cache
                    CAPTURE(std::string(a->id), s.N, s.Nk, s.d, dtype_name(t), causal);
                    const AttentionProblem p = make(s.N, s.Nk, s.d, 2, t, causal);
                    TileRequest req;  // several tiles per sequence, so tiling and online updates are exercised
                    if (a->id != "standard") req.Br = req.Bc = 32;
                    const TileConfig tiles = choose_tiles(*a, p, gpu(), req);
                    const HeadInputs in = random_heads(p, seed);
                    const FunctionalRun run = run_functional(*a, p, gpu(), tiles, in.Q, in.K, in.V);
                    reference::AttentionOptions opt;
                    opt.causal = causal;
                    for (std::size_t h = 0; h < in.Q.size(); ++h) {
                        const auto check = reference::check_tolerance(run.O[h], in.Q[h], in.K[h], in.V[h], opt, t);
                        CAPTURE(h, check.error, check.bound, check.naive_error);
                        CHECK(check.pass);
                        // Standard attention keeps P, PyTorch's math backend the weights: neither saves an LSE.
                        if (!a->baseline && !a->library_model && t == DType::fp32) {
                            const auto exact = reference::exact_attention(in.Q[h], in.K[h], in.V[h], opt);
                            CHECK(reference::check_lse(run.lse[h], in.Q[h], in.K[h], opt, exact).pass);
                        }
                    }
                }
}

TEST_CASE("grouped-query attention: every algorithm that takes grouped K/V heads equals exact attention for each "
          "query head with its group's K and V, MQA and GQA, causal or not, ragged shapes",
          "[functional][accuracy][grouped]") {
    const std::uint64_t seed = test_seed();
    INFO("seed " << seed << " (rerun with FASIM_TEST_SEED=" << seed << ")");
    int algorithms_run = 0;
    for (const Algorithm* a : algorithms(Pass::forward)) {
        if (!a->grouped_kv) continue;
        ++algorithms_run;
        for (auto [N, Nk] : {std::pair{64L, 64L}, {37L, 100L}, {100L, 37L}})
            for (std::int64_t kv : {2L, 1L})
                for (DType t : {DType::fp32, DType::bf16})
                    for (bool causal : {false, true}) {
                        if (a->decoding && causal && N > Nk) continue;  // refused: a decode step's rows follow its cache
                        CAPTURE(std::string(a->id), N, Nk, kv, dtype_name(t), causal);
                        AttentionProblem p = make(N, Nk, 16, 4, t, causal);
                        p.batch = 2;
                        p.kv_heads = kv;
                        TileRequest req;
                        if (a->tunable_tiles) req.Br = req.Bc = 32;
                        const HeadInputs in = random_heads(p, seed);
                        REQUIRE(in.K.size() == static_cast<std::size_t>(2 * kv));
                        const FunctionalRun run = run_functional(*a, p, gpu(), choose_tiles(*a, p, gpu(), req), in.Q, in.K, in.V);
                        reference::AttentionOptions opt;
                        opt.causal = causal;
                        for (std::int64_t h = 0; h < p.batch_heads(); ++h) {
                            const auto hh = static_cast<std::size_t>(h);
                            const auto check = reference::check_tolerance(run.O[hh], in.Q[hh], in.K_of(p, h), in.V_of(p, h), opt, t);
                            CAPTURE(h, check.error, check.bound, check.naive_error);
                            CHECK(check.pass);
                        }
                    }
    }
    CHECK(algorithms_run == 5);  // standard, tiled, fa1, fa2, flash_decoding
}

TEST_CASE("rows that see no key (causal, Nk < N) give O = 0 and LSE = -inf, never NaN", "[functional][masked]") {
    const AttentionProblem p = make(37, 13, 16, 1, DType::fp16, true);  // bottom-right: rows 0..23 see nothing
    const HeadInputs in = random_heads(p, test_seed());
    for (const Algorithm* a : training_algorithms()) {  // FlashDecoding refuses causal N > Nk (a decode step's rows follow its cache)
        CAPTURE(std::string(a->id));
        TileRequest req;
        if (a->id != "standard") req.Br = req.Bc = 8;
        const FunctionalRun run = run_functional(*a, p, gpu(), choose_tiles(*a, p, gpu(), req), in.Q, in.K, in.V);
        CHECK(run.O[0].topRows(24).isZero(0.0));
        CHECK(!run.O[0].bottomRows(13).isZero(0.0));
        CHECK(finite_or_masked(run.O[0]));
        if (a->id != "standard") {
            for (Eigen::Index i = 0; i < 24; ++i) CHECK(run.lse[0](i) == -std::numeric_limits<double>::infinity());
            for (Eigen::Index i = 24; i < 37; ++i) CHECK(std::isfinite(run.lse[0](i)));
        }
    }
}

TEST_CASE("logits up to 1e4 produce no inf or NaN and still equal exact attention", "[functional][large-logits]") {
    for (const char* name : {"large_logits", "large_logits_causal"}) {
        const auto c = reference::named_case(name, DType::fp32);
        AttentionProblem p = make(c.inputs.Q.rows(), c.inputs.K.rows(), c.inputs.Q.cols(), 1, DType::fp32, c.options.causal);
        for (const Algorithm* a : algorithms(Pass::forward)) {
            CAPTURE(name, std::string(a->id));
            TileRequest req;
            if (a->id != "standard") req.Br = req.Bc = 16;
            const FunctionalRun run =
                run_functional(*a, p, gpu(), choose_tiles(*a, p, gpu(), req), {c.inputs.Q}, {c.inputs.K}, {c.inputs.V});
            CHECK(finite_or_masked(run.O[0]));
            CHECK(reference::check_tolerance(run.O[0], c.inputs.Q, c.inputs.K, c.inputs.V, c.options, DType::fp32).pass);
        }
    }
}

TEST_CASE("functional and counting executors report identical traffic and FLOPs", "[functional][counts]") {
    for (auto [N, Nk, d, causal] : {std::tuple{64L, 64L, 64L, false}, {100L, 37L, 32L, true}, {130L, 129L, 48L, true}})
        for (const Algorithm* a : algorithms(Pass::forward)) {
            if (a->decoding && causal && N > Nk) continue;  // refused: a decode step's rows follow its cache
            CAPTURE(std::string(a->id), N, Nk, d, causal);
            const AttentionProblem p = make(N, Nk, d, 3, DType::fp16, causal);
            TileRequest req;
            if (a->id != "standard") req.Br = req.Bc = 32;
            const AlgorithmResult counted = simulate(*a, p, gpu(), req);
            const HeadInputs in = random_heads(p, 1);
            const FunctionalRun run = run_functional(*a, p, gpu(), counted.tiles, in.Q, in.K, in.V);
            REQUIRE(run.kernels.size() == counted.kernels.size());
            for (std::size_t k = 0; k < run.kernels.size(); ++k) {
                const KernelRecord &f = run.kernels[k], &c = counted.kernels[k];
                CHECK(f.hbm == c.hbm);
                CHECK(f.l2 == c.l2);
                CHECK(f.dram == c.dram);
                CHECK(f.smem_read == c.smem_read);
                CHECK(f.smem_write == c.smem_write);
                CHECK(f.matmul_flops == c.matmul_flops);
                CHECK(f.nonmatmul_flops == c.nonmatmul_flops);
                CHECK(f.sfu_ops == c.sfu_ops);
                CHECK(f.barriers == c.barriers);
            }
        }
}

TEST_CASE("the FA1 vs FA2 difference in non-matmul work is what the functional run performs", "[functional][flops]") {
    const AttentionProblem p = make(128, 128, 32, 1, DType::fp16, false);
    TileRequest req;
    req.Br = req.Bc = 32;
    const HeadInputs in = random_heads(p, 3);
    auto nonmatmul = [&](const Algorithm& a) {
        const auto run = run_functional(a, p, gpu(), choose_tiles(a, p, gpu(), req), in.Q, in.K, in.V);
        Count n = 0;
        for (const auto& k : run.kernels) n += k.nonmatmul_flops;
        return n;
    };
    // Per inner step FA1 rescales O twice, adds and divides (4·Br·d) where FA2 rescales once (Br·d);
    // FA2 divides once at the end. 16 steps of 32x32 (d = 32).
    const std::int64_t Br = 32, d = 32, steps = 16;
    const Count fa1 = nonmatmul(algorithm("fa1")), fa2 = nonmatmul(algorithm("fa2"));
    CHECK(fa1 > fa2);
    CHECK(fa1 - fa2 >= steps * 3 * Br * d - 4 * Br * d);
}
