// The backward pass: the three backward programs' gradients against the float64 backward, their
// traffic against their closed forms, and what the papers say about training with FlashAttention.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "attention_backward.hpp"
#include "common/errors.hpp"
#include "exec/functional_executor.hpp"
#include "inputs.hpp"
#include "precision.hpp"
#include "test_helpers.hpp"
#include "../common/random_heads.hpp"

using namespace fasim;
using namespace fasim::test;

namespace {

const char* const kWithBackward[] = {"standard", "fa1", "fa2"};

// The output gradient dO of each head, in the problem's dtype.
std::vector<reference::Matrix> random_dO(const AttentionProblem& p, std::uint64_t seed) {
    std::vector<reference::Matrix> dO;
    for (std::int64_t h = 0; h < p.batch_heads(); ++h)
        dO.push_back(reference::round_matrix(reference::random_normal(p.N, p.d, seed + static_cast<std::uint64_t>(h)), p.dtype));
    return dO;
}

}  // namespace

TEST_CASE("every backward program's gradients equal the float64 backward within the rule (2x a naive backward's "
          "error), causal or not, ragged tiles, Nq != Nk, every dtype",
          "[backward][functional]") {
    for (auto [N, Nk, d, causal] : {std::tuple{64L, 64L, 16L, false}, {50L, 37L, 8L, true}, {33L, 70L, 16L, true}, {20L, 20L, 4L, false}})
        for (DType t : {DType::fp32, DType::fp16, DType::bf16})
            for (const char* id : kWithBackward) {
                CAPTURE(id, N, Nk, d, causal, dtype_name(t));
                const AttentionProblem p = problem(N, d, 2, t, causal, Nk);
                const Algorithm& fwd = algorithm(id);
                const Algorithm& bwd = backward_program(fwd);
                TileRequest req;
                if (fwd.tunable_tiles) req.Br = req.Bc = 16;  // several tiles each way, the last ones ragged
                const TileConfig ft = choose_tiles(fwd, p, a100(), req), bt = choose_tiles(bwd, p, a100(), req);
                const HeadInputs in = random_heads(p, 3);
                const auto dO = random_dO(p, 101);
                const BackwardRun run = run_functional_backward(fwd, bwd, p, a100(), ft, bt, in.Q, in.K, in.V, dO);
                reference::AttentionOptions o;
                o.causal = causal;
                for (std::size_t h = 0; h < 2; ++h) {
                    const auto checks = reference::check_gradients({run.dQ[h], run.dK[h], run.dV[h]}, in.Q[h], in.K[h], in.V[h],
                                                                   dO[h], o, t);
                    for (const auto& [name, c] : {std::pair{"dQ", &checks.dQ}, std::pair{"dK", &checks.dK}, std::pair{"dV", &checks.dV}}) {
                        CAPTURE(name, c->error, c->bound, c->naive_error);
                        CHECK(c->pass);
                    }
                }
            }
}

TEST_CASE("the functional backward moves exactly what the counting executor counts", "[backward][functional][counts]") {
    const AttentionProblem p = problem(70, 16, 3, DType::fp16, true, 50);
    for (const auto& [id, dq] : {std::pair{"standard", DqMode::atomic}, {"fa1", DqMode::atomic}, {"fa2", DqMode::atomic},
                                 {"fa2", DqMode::separate}}) {
        CAPTURE(id, dq_name(dq));
        const Algorithm& fwd = algorithm(id);
        TileRequest req;
        req.dq = dq;
        if (fwd.tunable_tiles) req.Br = req.Bc = 16;
        const AlgorithmResult counted = simulate(fwd, PassSelection::bwd, p, a100(), req);
        const HeadInputs in = random_heads(p, 5);
        const BackwardRun run = run_functional_backward(fwd, backward_program(fwd), p, a100(), choose_tiles(fwd, p, a100(), req),
                                                        counted.tiles, in.Q, in.K, in.V, random_dO(p, 9));
        REQUIRE(run.kernels.size() == counted.kernels.size());
        for (std::size_t k = 0; k < run.kernels.size(); ++k) {
            // The functional run declared the forward's tensors first: compare by name.
            const LevelTraffic &f = run.kernels[k].hbm, &c = counted.kernels[k].hbm;
            for (const TensorBytes& t : f.tensors) {
                CAPTURE(k, t.name);
                CHECK(t.read == read_of(c, t.name));
                CHECK(t.write == write_of(c, t.name));
            }
            CHECK(f.total() == c.total());
            CHECK(run.kernels[k].matmul_flops == counted.kernels[k].matmul_flops);
            CHECK(run.kernels[k].nonmatmul_flops == counted.kernels[k].nonmatmul_flops);
        }
    }
}

TEST_CASE("backward traffic equals each program's closed form, exactly, for tile-multiple and ragged sizes",
          "[backward][closed-form]") {
    for (auto [N, Nk, d, t] : {std::tuple{4096L, 4096L, 64L, DType::fp16}, {1000L, 1000L, 64L, DType::bf16},
                               {2048L, 777L, 128L, DType::fp16}, {513L, 1024L, 32L, DType::fp32}})
        for (const char* id : kWithBackward)
            for (MatmulMode m : {MatmulMode::tiled, MatmulMode::naive, MatmulMode::library}) {
                for (DqMode dq : {DqMode::atomic, DqMode::separate}) {
                    if (m != MatmulMode::tiled && std::string_view(id) != "standard") continue;
                    if (m == MatmulMode::naive && N > 1024) continue;  // the naive GEMM's simulation is slow
                    if (dq == DqMode::separate && !backward_program(algorithm(id)).dq_modes) continue;
                    CAPTURE(id, N, Nk, d, dtype_name(t), matmul_name(m), dq_name(dq));
                    const AttentionProblem p = problem(N, d, 4, t, false, Nk);
                    TileRequest req;
                    req.matmul = m;
                    req.dq = dq;
                    const AlgorithmResult r = simulate(algorithm(id), PassSelection::bwd, p, a100(), req);
                    const ClosedForm f = r.algo->closed_form(p, r.tiles);
                    REQUIRE(f.hbm);
                    CHECK(r.hbm.read_bytes() == f.hbm->read);
                    CHECK(r.hbm.write_bytes() == f.hbm->write);
                    CHECK(r.matmul_flops == *f.matmul_flops);
                }
            }
}

namespace {

// B = 2 batches of H = 4 query heads sharing KV K/V heads.
AttentionProblem grouped_problem(std::int64_t N, std::int64_t Nk, std::int64_t d, std::int64_t kv_heads, DType t, bool causal) {
    AttentionProblem p = problem(N, d, 4, t, causal, Nk);
    p.batch = 2;
    p.kv_heads = kv_heads;
    return p;
}

}  // namespace

TEST_CASE("grouped-query attention's backward (each query head's dK, dV summed over its group, as flash-attention 2's "
          "dk_expanded): every gradient of standard, FA1 and FA2 equals the float64 backward within the rule on fresh "
          "random inputs, MQA and GQA, causal or not, ragged tiles, both of FA2's dQ modes",
          "[backward][functional][grouped]") {
    const std::uint64_t seed = test_seed();
    INFO("seed " << seed << " (rerun with FASIM_TEST_SEED=" << seed << ")");
    for (auto [N, Nk, d, causal] : {std::tuple{48L, 48L, 16L, false}, {37L, 50L, 8L, true}, {50L, 37L, 8L, true}})
        for (std::int64_t kv : {1L, 2L})
            for (DType t : {DType::fp32, DType::fp16, DType::bf16})
                for (const auto& [id, dq] : {std::pair{"standard", DqMode::atomic}, {"fa1", DqMode::atomic},
                                             {"fa2", DqMode::atomic}, {"fa2", DqMode::separate}}) {
                    CAPTURE(id, N, Nk, d, causal, kv, dtype_name(t), dq_name(dq));
                    const AttentionProblem p = grouped_problem(N, Nk, d, kv, t, causal);
                    const Algorithm& fwd = algorithm(id);
                    const Algorithm& bwd = backward_program(fwd);
                    TileRequest req;
                    if (fwd.tunable_tiles) req.Br = req.Bc = 16;
                    req.dq = dq;
                    const HeadInputs in = random_heads(p, seed);
                    const auto dO = random_dO(p, seed + 1);
                    const BackwardRun run = run_functional_backward(fwd, bwd, p, a100(), choose_tiles(fwd, p, a100(), req),
                                                                    choose_tiles(bwd, p, a100(), req), in.Q, in.K, in.V, dO);
                    REQUIRE(run.dK.size() == static_cast<std::size_t>(2 * kv));
                    std::vector<std::int64_t> kv_head_of;
                    for (std::int64_t h = 0; h < p.batch_heads(); ++h) kv_head_of.push_back(p.kv_head_of(h));
                    reference::AttentionOptions o;
                    o.causal = causal;
                    const auto checks = reference::check_grouped_gradients(run.dQ, run.dK, run.dV, in.Q, in.K, in.V, dO,
                                                                           kv_head_of, o, t);
                    for (const auto& [name, each] : {std::pair{"dQ", &checks.dQ}, std::pair{"dK", &checks.dK}, std::pair{"dV", &checks.dV}})
                        for (std::size_t h = 0; h < each->size(); ++h) {
                            const reference::GradientCheck& c = (*each)[h];
                            CAPTURE(name, h, c.error, c.bound, c.naive_error);
                            CHECK(c.pass);
                        }
                }
}

TEST_CASE("grouped-query attention's backward: a K/V head's dK and dV are its query heads' gradients summed (the same "
          "inputs run as G independent heads give the parts), standard, FA1 and FA2",
          "[backward][functional][grouped]") {
    // In fp32 the group's sum and the sum of the ungrouped run's heads differ only by fp32 rounding.
    const AttentionProblem grouped = grouped_problem(40, 40, 8, 1, DType::fp32, true);
    AttentionProblem ungrouped = grouped;
    ungrouped.kv_heads = 0;
    const HeadInputs in = random_heads(grouped, 11);
    HeadInputs repeated = in;  // every query head given its group's K and V
    repeated.K.clear();
    repeated.V.clear();
    for (std::int64_t h = 0; h < grouped.batch_heads(); ++h) {
        repeated.K.push_back(in.K_of(grouped, h));
        repeated.V.push_back(in.V_of(grouped, h));
    }
    const auto dO = random_dO(grouped, 12);
    for (const char* id : kWithBackward) {
        CAPTURE(id);
        const Algorithm& fwd = algorithm(id);
        TileRequest req;
        if (fwd.tunable_tiles) req.Br = req.Bc = 16;
        auto run = [&](const AttentionProblem& p, const HeadInputs& x) {
            return run_functional_backward(fwd, backward_program(fwd), p, a100(), choose_tiles(fwd, p, a100(), req),
                                           choose_tiles(backward_program(fwd), p, a100(), req), x.Q, x.K, x.V, dO);
        };
        const BackwardRun g = run(grouped, in), u = run(ungrouped, repeated);
        REQUIRE(g.dK.size() == 2);
        REQUIRE(u.dK.size() == 8);
        for (std::int64_t b = 0; b < 2; ++b) {
            reference::Matrix dK = u.dK[static_cast<std::size_t>(4 * b)], dV = u.dV[static_cast<std::size_t>(4 * b)];
            for (std::int64_t h = 1; h < 4; ++h) {
                dK += u.dK[static_cast<std::size_t>(4 * b + h)];
                dV += u.dV[static_cast<std::size_t>(4 * b + h)];
            }
            CHECK((g.dK[static_cast<std::size_t>(b)] - dK).cwiseAbs().maxCoeff() <= 1e-5 * (1 + dK.cwiseAbs().maxCoeff()));
            CHECK((g.dV[static_cast<std::size_t>(b)] - dV).cwiseAbs().maxCoeff() <= 1e-5 * (1 + dV.cwiseAbs().maxCoeff()));
        }
        for (std::size_t h = 0; h < 8; ++h) CHECK(g.dQ[h] == u.dQ[h]);  // dQ does not depend on the grouping
    }
}

TEST_CASE("grouped-query attention's backward in closed form: the per-query-head parts of dK and dV written, read "
          "once more and summed into one dK, dV per K/V head, and the functional run moves what is counted",
          "[backward][closed-form][grouped]") {
    const std::map<std::string, std::string> sum_kernel{{"standard", "sum_groups"}, {"fa1", "fa1_bwd_sum_groups"},
                                                        {"fa2", "fa2_bwd_sum_groups"}};
    for (auto [N, Nk, d, t] : {std::tuple{4096L, 4096L, 64L, DType::fp16}, {1000L, 777L, 128L, DType::bf16}})
        for (std::int64_t kv : {1L, 2L, 4L})
            for (const auto& [id, dq] : {std::pair{"standard", DqMode::atomic}, {"fa1", DqMode::atomic},
                                         {"fa2", DqMode::atomic}, {"fa2", DqMode::separate}}) {
                CAPTURE(id, N, Nk, d, kv, dq_name(dq));
                AttentionProblem p = grouped_problem(N, Nk, d, kv, t, false);
                TileRequest req;
                req.dq = dq;
                const AlgorithmResult r = simulate(algorithm(id), PassSelection::bwd, p, a100(), req);
                const ClosedForm f = r.algo->closed_form(p, r.tiles);
                REQUIRE(f.hbm);
                CHECK(r.hbm.read_bytes() == f.hbm->read);
                CHECK(r.hbm.write_bytes() == f.hbm->write);
                const bool grouped = kv < 4;
                CHECK(read_of(r.hbm, "dK_expanded") == (grouped ? Count(8) * Nk * d * p.elem_bytes() : 0));
                CHECK(write_of(r.hbm, "dK") == Count(grouped ? 2 * kv : 8) * Nk * d * p.elem_bytes());
                CHECK((r.kernels.back().desc.name == sum_kernel.at(id)) == grouped);
            }
    // What the functional run moves is what the counting executor counts, kernel by kernel.
    const AttentionProblem p = grouped_problem(70, 50, 16, 2, DType::fp16, true);
    for (const char* id : kWithBackward) {
        CAPTURE(id);
        const Algorithm& fwd = algorithm(id);
        TileRequest req;
        if (fwd.tunable_tiles) req.Br = req.Bc = 16;
        const AlgorithmResult counted = simulate(fwd, PassSelection::bwd, p, a100(), req);
        const HeadInputs in = random_heads(p, 5);
        const BackwardRun run = run_functional_backward(fwd, backward_program(fwd), p, a100(), choose_tiles(fwd, p, a100(), req),
                                                        counted.tiles, in.Q, in.K, in.V, random_dO(p, 9));
        REQUIRE(run.kernels.size() == counted.kernels.size());
        for (std::size_t k = 0; k < run.kernels.size(); ++k)
            for (const TensorBytes& b : run.kernels[k].hbm.tensors) {
                CAPTURE(k, b.name);
                CHECK(b.read == read_of(counted.kernels[k].hbm, b.name));
                CHECK(b.write == write_of(counted.kernels[k].hbm, b.name));
            }
    }
}

TEST_CASE("FA2 backward's separate dQ kernel gives dQ equal to the float64 backward on fresh random inputs",
          "[backward][functional][dq]") {
    const std::uint64_t seed = test_seed();
    INFO("seed " << seed << " (rerun with FASIM_TEST_SEED=" << seed << ")");
    for (auto [N, Nk, d, causal] : {std::tuple{64L, 64L, 16L, false}, {50L, 37L, 8L, true}, {33L, 70L, 16L, true}, {45L, 45L, 32L, false}})
        for (DType t : {DType::fp32, DType::fp16, DType::bf16}) {
            CAPTURE(N, Nk, d, causal, dtype_name(t));
            const AttentionProblem p = problem(N, d, 2, t, causal, Nk);
            const Algorithm& fwd = algorithm("fa2");
            TileRequest req;
            req.Br = req.Bc = 16;  // several tiles each way, the last ones ragged
            req.dq = DqMode::separate;
            const TileConfig ft = choose_tiles(fwd, p, a100(), req), bt = choose_tiles(backward_program(fwd), p, a100(), req);
            REQUIRE(bt.dq == DqMode::separate);
            const HeadInputs in = random_heads(p, seed);
            const auto dO = random_dO(p, seed + 1);
            const BackwardRun run = run_functional_backward(fwd, backward_program(fwd), p, a100(), ft, bt, in.Q, in.K, in.V, dO);
            for (const KernelRecord& k : run.kernels) CHECK(write_of(k.hbm, "dQ_acc") == 0);  // no atomics, no fp32 buffer
            reference::AttentionOptions o;
            o.causal = causal;
            for (std::size_t h = 0; h < 2; ++h) {
                const auto checks = reference::check_gradients({run.dQ[h], run.dK[h], run.dV[h]}, in.Q[h], in.K[h], in.V[h], dO[h], o, t);
                CAPTURE(h, checks.dQ.error, checks.dQ.bound, checks.dQ.naive_error);
                CHECK(checks.dQ.pass);
                CHECK(checks.dK.pass);
                CHECK(checks.dV.pass);
            }
        }
}

TEST_CASE("FA2 backward's dQ traffic in closed form: atomic adds Tc fp32 partials per row, separate writes dQ once "
          "and re-reads K and V per Q tile",
          "[backward][closed-form][dq]") {
    for (auto [N, d, t] : {std::tuple{4096L, 64L, DType::fp16}, {1000L, 128L, DType::bf16}, {513L, 32L, DType::fp32}}) {
        const AttentionProblem p = problem(N, d, 4, t);
        const std::int64_t BH = 4, e = p.elem_bytes();
        TileRequest req;
        const AlgorithmResult at = simulate(algorithm("fa2"), PassSelection::bwd, p, a100(), req);
        req.dq = DqMode::separate;
        const AlgorithmResult sep = simulate(algorithm("fa2"), PassSelection::bwd, p, a100(), req);
        CAPTURE(N, d, dtype_name(t), at.tiles.Br, at.tiles.Bc);
        REQUIRE(at.tiles.Br == sep.tiles.Br);
        REQUIRE(at.tiles.Bc == sep.tiles.Bc);
        const std::int64_t Tr = ceil_div(N, at.tiles.Br), Tc = ceil_div(N, at.tiles.Bc);
        // Atomic: dQ_acc zeroed (N·d fp32), Tc partials added to it, read once by the conversion, which writes dQ.
        CHECK(write_of(at.hbm, "dQ_acc") == BH * (1 + Tc) * N * d * 4);
        CHECK(read_of(at.hbm, "dQ_acc") == BH * N * d * 4);
        CHECK(write_of(at.hbm, "dQ") == BH * N * d * e);
        CHECK(read_of(at.hbm, "dQ") == 0);
        // Separate: no fp32 buffer; dQ written once; its kernel reads K and V once per Q tile.
        CHECK(write_of(sep.hbm, "dQ_acc") + read_of(sep.hbm, "dQ_acc") == 0);
        CHECK(write_of(sep.hbm, "dQ") == BH * N * d * e);
        CHECK(read_of(sep.hbm, "dQ") == 0);
        for (const char* kv : {"K", "V"}) {
            CAPTURE(kv);
            CHECK(read_of(sep.hbm, kv) - read_of(at.hbm, kv) == BH * Tr * N * d * e);
        }
        // Its own kernel, one block per Q tile, redoing S and dP and computing dQ: 14·N·Nk·d against 10.
        const auto dq_kernel = std::find_if(sep.kernels.begin(), sep.kernels.end(), [](const KernelRecord& k) { return k.desc.name == "fa2_bwd_dq"; });
        REQUIRE(dq_kernel != sep.kernels.end());
        CHECK(dq_kernel->desc.grid() == BH * Tr);
        CHECK(dq_kernel->matmul_flops == 6 * BH * N * N * d);
        CHECK(sep.matmul_flops == 14 * BH * N * N * d);
        CHECK(sep.recomputed_matmul_flops == 6 * BH * N * N * d);
        CHECK(at.matmul_flops == 10 * BH * N * N * d);
        CHECK(at.recomputed_matmul_flops == 2 * BH * N * N * d);
        CHECK(sep.timing.size() == sep.kernels.size());
        CHECK(sep.timing.back().total_s > 0);
    }
}

TEST_CASE("standard attention's backward runs at every length: rows of P and dP that exceed shared memory are "
          "read twice in chunks (closed form), also when a chunk could hold the row but not P*dP",
          "[backward][closed-form]") {
    for (std::int64_t N : {32768L, 40000L, 21000L}) {
        CAPTURE(N);
        const AttentionProblem p = problem(N, 64, 1, DType::fp16);
        const AlgorithmResult r = simulate(algorithm("standard"), PassSelection::bwd, p, a100());
        CHECK(r.tiles.softmax_chunk < N);
        CHECK(r.algo->smem_bytes(p, r.tiles.Br, r.tiles.Bc, r.tiles) <= a100().smem_per_block_bytes);
        const ClosedForm f = r.algo->closed_form(p, r.tiles);
        CHECK(r.hbm.read_bytes() == f.hbm->read);
        CHECK(r.hbm.write_bytes() == f.hbm->write);
        CHECK(read_of(r.hbm, "P") == 2 * N * N * 2 + N * N * 2);  // twice in the row kernel, once for dV = P^T dO (d = 64 < tile)
    }
}

TEST_CASE("FlashAttention's backward recomputes S: five products per tile pair (10·N·Nk·d, 2.5x the forward's), "
          "standard attention's four (8·N·Nk·d)",
          "[backward][flops]") {
    const AttentionProblem p = problem(2048, 64, 8);
    const std::int64_t unit = std::int64_t{8} * 2048 * 2048 * 64;
    for (const char* id : {"fa1", "fa2"}) {
        const AlgorithmResult r = simulate(algorithm(id), PassSelection::bwd, p, a100());
        CHECK(r.matmul_flops == 10 * unit);
        CHECK(r.recomputed_matmul_flops == 2 * unit);
        CHECK(r.matmul_flops * 2 == 5 * simulate(algorithm(id), p, a100()).matmul_flops);
    }
    const AlgorithmResult s = simulate(algorithm("standard"), PassSelection::bwd, p, a100());
    CHECK(s.matmul_flops == 8 * unit);
    CHECK(s.recomputed_matmul_flops == 0);
    // Causal: the K/V tiles above the diagonal are skipped, about half of the work.
    const AlgorithmResult c = simulate(algorithm("fa2"), PassSelection::bwd, problem(2048, 64, 8, DType::fp16, true), a100());
    CHECK(static_cast<double>(c.matmul_flops) < 0.6 * 10 * static_cast<double>(unit));
}

TEST_CASE("training with FlashAttention moves several times fewer HBM bytes than standard attention (N = 1024..4096, "
          "d = 64) at more FLOPs",
          "[backward][paper]") {
    for (std::int64_t N : {1024L, 2048L, 4096L}) {
        CAPTURE(N);
        const AttentionProblem p = problem(N, 64, 16);
        const AlgorithmResult s = simulate(algorithm("standard"), PassSelection::fwd_bwd, p, a100());
        for (const char* id : {"fa1", "fa2"}) {
            CAPTURE(id);
            const AlgorithmResult f = simulate(algorithm(id), PassSelection::fwd_bwd, p, a100());
            CHECK(static_cast<double>(f.hbm.total()) * 4 < static_cast<double>(s.hbm.total()));
            CHECK(f.matmul_flops > s.matmul_flops);
        }
    }
}

TEST_CASE("memory kept between the passes: quadratic in N for standard attention (P), linear for FlashAttention "
          "(FA2: LSE, FA1: m and l)",
          "[backward][memory]") {
    for (const char* id : kWithBackward)
        for (PassSelection pass : {PassSelection::bwd, PassSelection::fwd_bwd})
            for (std::int64_t N : {1024L, 2048L}) {  // each doubling up to 4096
                CAPTURE(id, pass_name(pass), N);
                const AlgorithmResult a = simulate(algorithm(id), pass, problem(N, 64, 16), a100());
                const AlgorithmResult b = simulate(algorithm(id), pass, problem(2 * N, 64, 16), a100());
                CHECK(b.held_between_passes_bytes == (std::string_view(id) == "standard" ? 4 : 2) * a.held_between_passes_bytes);
            }
    CHECK(simulate(algorithm("standard"), PassSelection::bwd, problem(1024, 64, 16), a100()).held_between_passes_bytes ==
          16 * 1024 * 1024 * 2);  // P in fp16
    CHECK(simulate(algorithm("fa2"), PassSelection::bwd, problem(1024, 64, 16), a100()).held_between_passes_bytes ==
          16 * 1024 * 4);  // LSE in fp32
}

TEST_CASE("the forward and backward on one chip: the backward's kernels follow the forward's", "[backward]") {
    const AttentionProblem p = problem(2048, 64, 16);
    const AlgorithmResult both = simulate(algorithm("fa2"), PassSelection::fwd_bwd, p, a100());
    const AlgorithmResult fwd = simulate(algorithm("fa2"), p, a100());
    const AlgorithmResult bwd = simulate(algorithm("fa2"), PassSelection::bwd, p, a100());
    REQUIRE(both.kernels.size() == fwd.kernels.size() + bwd.kernels.size());
    CHECK(both.kernels.front().desc.name == "fa2_forward");
    CHECK(both.hbm.total() == fwd.hbm.total() + bwd.hbm.total());
    CHECK(both.matmul_flops == fwd.matmul_flops + bwd.matmul_flops);
    REQUIRE(both.forward_tiles);
    CHECK(both.forward_tiles->Br == fwd.tiles.Br);
}

TEST_CASE("an algorithm without a backward pass is refused, named", "[backward][errors]") {
    CHECK_THROWS_WITH(simulate(algorithm("tiled"), PassSelection::bwd, problem(512), a100()),
                      Catch::Contains("tiled has no backward pass"));
}

TEST_CASE("NaN or inf in an input is refused by the functional executor, named", "[functional][errors]") {
    const AttentionProblem p = problem(8, 4, 1, DType::fp32);
    HeadInputs in = random_heads(p, 1);
    in.K[0](3, 2) = std::numeric_limits<double>::quiet_NaN();
    const TileConfig t = choose_tiles(algorithm("fa2"), p, a100(), {});
    CHECK_THROWS_WITH(run_functional(algorithm("fa2"), p, a100(), t, in.Q, in.K, in.V),
                      Catch::Contains("input K of head 0 holds nan at (3, 2)"));
}
