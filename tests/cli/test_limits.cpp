// Issue 24, item 2: the limits users need, with every counter exact.
//   - batch*heads up to 2^16 (ProblemLimits::max_batch_heads), 65537 refused with value, range and fix;
//   - every counter summed over batch*heads is a 128-bit fasim::Count: at B*H = 2^16 the simulated
//     counters equal the closed forms computed in 128 bits, and are exactly 64 times those at B*H = 1024
//     (the counting executor simulates one head and multiplies);
//   - the closed forms at the target limits N = Nk = 2^24, B*H = 2^16, d = 256 (past 64 bits: matmul
//     FLOPs 2^74, standard attention's S 2^66 bytes) are exact, digit for digit;
//   - JSON and CSV carry counts past 2^64 with all their digits, and they read back exactly (a parse of the
//     text, and Python's json).
//   - N and Nk up to 2^24 (ProblemLimits::max_seq): the counting executor's class path simulates the
//     flash algorithms there in under a second, and their counters equal the closed forms.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include "algorithms/algorithm.hpp"
#include "common/errors.hpp"
#include "common/exact_json.hpp"
#include "gpu/gpu_catalog.hpp"
#include "model/simulation.hpp"
#include "report/report.hpp"
#include "run_command.hpp"

using namespace fasim;

namespace {

constexpr Count pow2(int e) { return Count::from_raw(int128_t{1} << e); }

const GpuSpec& a100() {
    static const GpuSpec g = find_gpu_preset(default_gpu_name());
    return g;
}

AttentionProblem problem(std::int64_t batch, std::int64_t heads, std::int64_t N, std::int64_t d, DType dtype,
                         std::int64_t Nk = 0) {
    AttentionProblem p;
    p.batch = batch;
    p.heads = heads;
    p.N = N;
    p.Nk = Nk > 0 ? Nk : N;
    p.d = d;
    p.dtype = dtype;
    return p;
}

// The sum of the closed forms of the programs a result ran (fwd+bwd: the forward's and the backward's).
ClosedForm closed_forms(const AlgorithmResult& r) {
    ClosedForm sum = r.algo->closed_form(r.problem, r.tiles);
    if (r.forward) {
        const ClosedForm f = r.forward->closed_form(r.problem, *r.forward_tiles);
        REQUIRE(f.hbm);
        REQUIRE(sum.hbm);
        sum.hbm->read += f.hbm->read;
        sum.hbm->write += f.hbm->write;
        REQUIRE(f.matmul_flops);
        REQUIRE(sum.matmul_flops);
        *sum.matmul_flops += *f.matmul_flops;
    }
    return sum;
}

// HBM bytes read and written and matmul FLOPs equal the closed form's, to the byte.
void check_against_closed_form(const AlgorithmResult& r) {
    const ClosedForm f = closed_forms(r);
    REQUIRE(f.hbm);
    REQUIRE(f.matmul_flops);
    CHECK(r.hbm.read_bytes() == f.hbm->read);
    CHECK(r.hbm.write_bytes() == f.hbm->write);
    CHECK(r.matmul_flops == *f.matmul_flops);
}

// Every counter the counting executor sums over heads, a run against k times the same run with k times
// fewer heads: equal to the byte (DRAM bytes follow the L2 model, which sees the other heads, and time
// follows the schedule: neither scales exactly).
void check_scaled(const AlgorithmResult& big, const AlgorithmResult& small, std::int64_t k) {
    CHECK(big.hbm == small.hbm.scaled(k));
    CHECK(big.l2 == small.l2.scaled(k));
    CHECK(big.smem_read == small.smem_read * k);
    CHECK(big.smem_write == small.smem_write * k);
    CHECK(big.matmul_flops == small.matmul_flops * k);
    CHECK(big.recomputed_matmul_flops == small.recomputed_matmul_flops * k);
    CHECK(big.nonmatmul_flops == small.nonmatmul_flops * k);
    CHECK(big.sfu_ops == small.sfu_ops * k);
    CHECK(big.barriers == small.barriers * k);
    CHECK(big.ideal_matmul_flops == small.ideal_matmul_flops * k);
    CHECK(big.global_bytes == small.global_bytes * k);
    CHECK(big.held_between_passes_bytes == small.held_between_passes_bytes * k);
    REQUIRE(big.kernels.size() == small.kernels.size());
    for (std::size_t i = 0; i < big.kernels.size(); ++i) {
        const KernelRecord &b = big.kernels[i], &s = small.kernels[i];
        CAPTURE(b.desc.name);
        CHECK(b.desc.grid() == s.desc.grid() * k);
        CHECK(b.smem_wavefronts == s.smem_wavefronts * k);
        CHECK(b.lane_matmul_flops == s.lane_matmul_flops * k);
        CHECK(b.l2_read_requests == s.l2_read_requests * k);
        CHECK(b.l2_write_requests == s.l2_write_requests * k);
        CHECK(b.warp_instructions == s.warp_instructions * k);
        CHECK(b.block_work == s.block_work);  // the work of each block of one head
    }
}

}  // namespace

TEST_CASE("batch*heads up to 65536 - 65537 is refused with the value, the range and a fix", "[limits]") {
    CHECK(ProblemLimits::max_batch_heads == 65536);
    CHECK(ProblemLimits::max_batch == 65536);
    CHECK(ProblemLimits::max_heads == 65536);
    for (const auto& [batch, heads] : {std::pair<std::int64_t, std::int64_t>{1, 65536}, {65536, 1}, {256, 256}, {4, 16384}})
        CHECK_NOTHROW(validate(problem(batch, heads, 4096, 64, DType::fp16)));
    auto message = [](std::int64_t batch, std::int64_t heads) -> std::string {
        try {
            validate(problem(batch, heads, 4096, 64, DType::fp16));
        } catch (const UsageError& e) {
            return e.what();
        }
        return "";
    };
    CHECK(message(1, 65537) == "--heads 65537 is out of range: heads must be 1..65536. Fix: pass a head count between 1 and 65536");
    CHECK(message(65537, 1) == "--batch 65537 is out of range: batch must be 1..65536. Fix: pass a batch size between 1 and 65536");
    CHECK(message(2, 32769) ==
          "--batch 2 x --heads 32769 = 65538 is too many: batch*heads must be at most 65536 (2^16). Fix: lower --batch or "
          "--heads (traffic scales linearly with batch*heads)");
}

TEST_CASE("the closed forms at N = Nk = 2^24, batch*heads = 2^16, d = 256 are exact past 64 bits", "[limits]") {
    // What the target limits give, from each algorithm's closed form, against the same numbers written as
    // powers of two by hand. fp32 (4 bytes) and the tiles named below.
    AttentionProblem p = problem(1, 65536, std::int64_t{1} << 24, 256, DType::fp32);
    TileConfig t;
    t.Br = 128;
    t.Bc = 64;
    t.q_splits = 1;
    t.kv_splits = 1;
    // FlashAttention-2: reads B·H·e·(N·d + (N/Br)·2·Nk·d) = 2^18·(2^32 + 2^17·2^33), writes B·H·(e·N·d + 4·N).
    const ClosedForm fa2 = algorithm("fa2").closed_form(p, t);
    REQUIRE(fa2.hbm);
    CHECK(*fa2.matmul_flops == pow2(74));
    CHECK(to_string(*fa2.matmul_flops) == "18889465931478580854784");
    CHECK(fa2.hbm->read == pow2(68) + pow2(50));
    CHECK(fa2.hbm->write == pow2(50) + pow2(42));
    CHECK(to_string(fa2.hbm->read) == "295149031079259668480");
    // Tiled: 6·B·H·N·Nk·d (S computed twice); FA1 4·B·H·N·Nk·d.
    CHECK(*algorithm("tiled").closed_form(p, t).matmul_flops == pow2(74) + pow2(73));
    CHECK(*algorithm("fa1").closed_form(p, t).matmul_flops == pow2(74));
    // Standard attention with GEMMs that read each operand once (Algorithm 0's count): S and P written,
    // B·H·N·Nk·e = 2^66 bytes each, and O: B·H·e·(2·N·Nk + N·d) = 2^67 + 2^50.
    const ClosedForm standard = algorithm("standard").closed_form(p, t);
    REQUIRE(standard.papers_hbm);
    CHECK(standard.papers_hbm->write == pow2(67) + pow2(50));
    CHECK(to_string(standard.papers_hbm->write) == "147575078489583255552");
    CHECK(standard.papers_hbm->read == pow2(67) + 3 * pow2(50));
    CHECK(*standard.matmul_flops == pow2(74));
    // The backward passes: 8 (standard) and 10 (FA1, FA2) FLOPs per pair and head dimension.
    CHECK(*algorithm("standard_bwd").closed_form(p, t).matmul_flops == pow2(75));
    CHECK(*algorithm("fa1_bwd").closed_form(p, t).matmul_flops == 10 * pow2(72));
    CHECK(*algorithm("fa2_bwd").closed_form(p, t).matmul_flops == 10 * pow2(72));
    TileConfig separate = t;
    separate.dq = DqMode::separate;
    CHECK(*algorithm("fa2_bwd").closed_form(p, separate).matmul_flops == 14 * pow2(72));
    // Causal: N·(N+1)/2 visible pairs per head, 2^47 + 2^23, and what the papers count for them.
    p.causal = true;
    CHECK(visible_pairs(p) == (std::int64_t{1} << 47) + (std::int64_t{1} << 23));
    CHECK(Count(4) * p.batch_heads() * p.d * visible_pairs(p) == pow2(73) + pow2(49));
    // Beyond a double: 2^74 + 1 has no double of its own, the Count keeps it.
    CHECK(pow2(74) + 1 != pow2(74));
    CHECK(to_double(pow2(74) + 1) == to_double(pow2(74)));
}

TEST_CASE("counters at batch*heads = 65536 equal the 128-bit closed forms and 64 times those at 1024", "[limits]") {
    struct Case {
        const char* algo;
        PassSelection pass;
        MatmulMode matmul;
        std::int64_t N, d;
        DType dtype;
    };
    const Case cases[] = {
        {"standard", PassSelection::fwd, MatmulMode::tiled, 2048, 128, DType::fp32},
        {"standard", PassSelection::fwd, MatmulMode::naive, 512, 64, DType::fp16},
        {"standard", PassSelection::fwd, MatmulMode::library, 2048, 128, DType::bf16},
        {"standard", PassSelection::bwd, MatmulMode::tiled, 1024, 64, DType::fp32},
        {"tiled", PassSelection::fwd, MatmulMode::tiled, 4096, 256, DType::fp16},
        {"fa1", PassSelection::fwd, MatmulMode::tiled, 2048, 256, DType::fp32},
        {"fa1", PassSelection::bwd, MatmulMode::tiled, 1024, 64, DType::fp16},
        {"fa2", PassSelection::fwd, MatmulMode::tiled, 4096, 256, DType::fp32},
        {"fa2", PassSelection::fwd_bwd, MatmulMode::tiled, 2048, 128, DType::fp16},
        {"fa2", PassSelection::fwd, MatmulMode::tiled, 65536, 64, DType::fp16},
    };
    for (const Case& c : cases) {
        CAPTURE(c.algo, pass_name(c.pass), matmul_name(c.matmul), c.N, c.d, dtype_name(c.dtype));
        TileRequest tiles;
        tiles.matmul = c.matmul;
        const AttentionProblem big = problem(4, 16384, c.N, c.d, c.dtype), small = problem(4, 256, c.N, c.d, c.dtype);
        const AlgorithmResult r = simulate(algorithm(c.algo), c.pass, big, a100(), tiles);
        check_against_closed_form(r);
        const std::int64_t per_pair = c.pass == PassSelection::fwd ? 4 : c.pass == PassSelection::bwd ? 10 : 14;
        CHECK(r.ideal_matmul_flops == Count(per_pair) * 65536 * c.N * c.N * c.d);
        check_scaled(r, simulate(algorithm(c.algo), c.pass, small, a100(), tiles), 64);
    }
    // Grouped-query decoding: FlashDecoding's closed form with B·H = 65536 query heads over 8192 K/V heads.
    AttentionProblem decode = problem(64, 1024, 1, 128, DType::fp16, 16384);
    decode.kv_heads = 128;
    const AlgorithmResult fd = simulate(algorithm("flash_decoding"), decode, a100());
    check_against_closed_form(fd);
    CHECK(read_of(fd.hbm, "K") == Count(64) * 128 * 16384 * 128 * 2);  // each K/V head read once
}

TEST_CASE("JSON and CSV carry counts past 2^64 with every digit, and they read back exactly", "[limits][json]") {
    // A real run at batch*heads = 65536, its counters set to what the target limits give (the closed forms
    // at N = Nk = 2^24, d = 256, fp32): what the report writers must carry once the fast path runs them.
    AlgorithmResult r = simulate(algorithm("standard"), problem(1, 65536, 512, 256, DType::fp32), a100());
    AttentionProblem limits = problem(1, 65536, std::int64_t{1} << 24, 256, DType::fp32);
    const ClosedForm f = algorithm("standard").closed_form(limits, r.tiles);
    r.matmul_flops = *f.matmul_flops;                    // 2^74
    r.ideal_matmul_flops = *f.matmul_flops + 1;          // 2^74 + 1: no double holds it
    for (TensorBytes& t : r.hbm.tensors)
        if (t.name == "S") t.write = pow2(66);           // B·H·N·Nk·4
    r.global_bytes = f.papers_hbm->write;                // 2^67 + 2^50
    const std::string expected_matmul = "18889465931478580854784", expected_ideal = "18889465931478580854785";

    const std::string text = json_text(report_json({r}, a100()), 2);
    CHECK(text.find("\"matmul\": " + expected_matmul + ",") != std::string::npos);
    CHECK(text.find("\"ideal_matmul\": " + expected_ideal + ",") != std::string::npos);
    CHECK(text.find("\"schema_version\": 2") != std::string::npos);
    // Read back exactly.
    const nlohmann::json doc = parse_json_exact(text);
    const nlohmann::json& a = doc.at("algorithms").at(0);
    CHECK(count_from_json(a.at("flops").at("matmul")) == pow2(74));
    CHECK(count_from_json(a.at("flops").at("ideal_matmul")) == pow2(74) + 1);
    CHECK(count_from_json(a.at("hbm").at("by_tensor").at("S").at("write_bytes")) == pow2(66));
    CHECK(count_from_json(a.at("hbm").at("write_bytes")) == r.hbm.write_bytes());
    CHECK(count_from_json(a.at("memory").at("global_bytes")) == pow2(67) + pow2(50));
    CHECK(r.hbm.write_bytes() > pow2(66));
    // nlohmann's own parser turns them into doubles: what docs/output-schema.md warns about.
    CHECK(nlohmann::json::parse(text).at("algorithms").at(0).at("flops").at("matmul").is_number_float());

    // Python's json keeps them as ints, digit for digit.
    const std::string path = "/tmp/fasim_limits_" + std::to_string(::getpid()) + ".json";
    std::ofstream(path) << text;
    std::string command =
        "python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))[\"algorithms\"][0]; "
        "print(a[\"flops\"][\"matmul\"], a[\"flops\"][\"ideal_matmul\"], a[\"hbm\"][\"by_tensor\"][\"S\"][\"write_bytes\"], "
        "type(a[\"flops\"][\"ideal_matmul\"]).__name__)' ";
    command += path;  // (appended, not "..." + path: GCC 12's -Wrestrict misfires on that)
    const auto py = fasim::test::run_command(command);
    std::remove(path.c_str());
    CAPTURE(py.err);
    REQUIRE(py.exit_code == 0);
    CHECK(py.out == expected_matmul + " " + expected_ideal + " " + to_string(pow2(66)) + " int\n");

    // CSV: the same digits.
    const std::string row = csv_row(r);
    CHECK(row.find("," + expected_matmul + ",") != std::string::npos);
    const std::string writes = to_string(r.hbm.write_bytes());
    CHECK(row.find("," + writes + ",") != std::string::npos);
    CHECK(row.rfind("2,", 0) == 0);  // schema version 2
}

TEST_CASE("counters at N = Nk = 2^24 and batch*heads = 2^16 equal the 128-bit closed forms", "[limits]") {
    // The limits together: 2^24 tokens, 65536 heads, d = 256 for FA2 (matmul FLOPs 2^74).
    struct Case {
        const char* algo;
        PassSelection pass;
        std::int64_t d;
        DType dtype;
    };
    const Case cases[] = {
        {"fa2", PassSelection::fwd, 256, DType::fp16},
        {"fa2", PassSelection::bwd, 64, DType::bf16},
        {"fa1", PassSelection::fwd, 64, DType::fp16},
        {"fa1", PassSelection::bwd, 64, DType::fp32},
        {"tiled", PassSelection::fwd, 128, DType::fp16},
    };
    const std::int64_t N = std::int64_t{1} << 24;
    for (const Case& c : cases) {
        CAPTURE(c.algo, pass_name(c.pass), c.d, dtype_name(c.dtype));
        const AlgorithmResult r = simulate(algorithm(c.algo), c.pass, problem(4, 16384, N, c.d, c.dtype), a100());
        check_against_closed_form(r);
        const std::int64_t per_pair = c.pass == PassSelection::fwd ? 4 : 10;
        CHECK(r.ideal_matmul_flops == Count(per_pair) * 65536 * N * N * c.d);
        if (c.d == 256) CHECK(r.matmul_flops == pow2(74));  // 4 * 2^16 * 2^24 * 2^24 * 2^8
        CHECK(r.time_s > 0);
    }
    // FlashDecoding: one token against 2^24 cached keys, 32 query heads over 8 K/V heads, batch 2048.
    AttentionProblem decode = problem(2048, 32, 1, 128, DType::fp16, N);
    decode.kv_heads = 8;
    const AlgorithmResult fd = simulate(algorithm("flash_decoding"), decode, a100());
    check_against_closed_form(fd);
    CHECK(read_of(fd.hbm, "K") == Count(2048) * 8 * N * 128 * 2);  // each K/V head read once
}

TEST_CASE("N and Nk up to 2^24 - 2^24 + 1 is refused with the value, the range and a fix", "[limits]") {
    AttentionProblem p = problem(1, 1, (std::int64_t{1} << 24) + 1, 64, DType::fp16);
    try {
        validate(p);
        FAIL("N = 2^24 + 1 was accepted");
    } catch (const UsageError& e) {
        CHECK(std::string(e.what()).find("16777217") != std::string::npos);
        CHECK(std::string(e.what()).find("1..16777216") != std::string::npos);
    }
}
