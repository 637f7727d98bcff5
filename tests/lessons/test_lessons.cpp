// The lesson programs: every lesson runs non-interactively in 80 columns, prints the key
// facts it teaches (checked here against the JSON it emits and against closed forms),
// grades its exercises (right answer accepted, wrong answer rejected with a hint), and
// refuses bad flags with one line and exit code 2.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu_catalog.hpp"
#include "kernels/tile_rules.hpp"
#include "lesson_runner.hpp"

using namespace fasim::test;
using nlohmann::json;

namespace {

constexpr int kLessons = 11;

// The GPU a lesson runs on without --gpu: the course's default, except lesson 11 (decoding on an H100).
std::string default_gpu_of(int n) { return n == 11 ? "H100-SXM" : fasim::default_gpu_name(); }

void check_output_shape(int n, const Run& r) {
    CAPTURE(n, r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(r.err.empty());
    CHECK(r.out.find("Exercises") != std::string::npos);
    CHECK(r.out.find("DIFFERS") == std::string::npos);
    CHECK(r.out.find("nan") == std::string::npos);
    std::istringstream in(r.out);
    int lineno = 0;
    for (std::string line; std::getline(in, line);) {
        ++lineno;
        CAPTURE(lineno, line);
        CHECK(width(line) <= 80);
        CHECK((line.empty() || line.back() != ' '));
    }
}

double num(const json& j) { return j.get<double>(); }

}  // namespace

TEST_CASE("every lesson runs non-interactively in 80 columns", "[lessons]") {
    for (int n = 1; n <= kLessons; ++n) {
        const Run r = run(lesson(n, "--step"));  // --step must not wait: stdin is not a terminal
        check_output_shape(n, r);
        CHECK(r.out.rfind((n < 10 ? "Lesson 0" : "Lesson ") + std::to_string(n), 0) == 0);
    }
}

TEST_CASE("json is deterministic and lists exercises and results", "[lessons][json]") {
    for (int n = 1; n <= kLessons; ++n) {
        CAPTURE(n);
        const Run a = run(lesson(n, "--json")), b = run(lesson(n, "--json"));
        REQUIRE(a.exit_code == 0);
        CHECK(a.out == b.out);
        const json j = json::parse(a.out);
        CHECK(j["schema_version"] == 1);
        CHECK(j["lesson"] == n);
        CHECK(j["parameters"]["gpu"] == default_gpu_of(n));
        REQUIRE(j["exercises"].size() >= 2);
        REQUIRE(j["exercises"].size() <= 3);
        std::set<std::string> ids;
        for (const auto& e : j["exercises"]) {
            CHECK(!e["question"].get<std::string>().empty());
            CHECK(ids.insert(e["id"].get<std::string>()).second);
        }
        REQUIRE(j["steps"].size() >= 3);
        for (const auto& s : j["steps"]) CHECK(j["results"].contains(s["id"].get<std::string>()));
    }
}

TEST_CASE("only shows one step by number or id", "[lessons]") {
    const Run a = run(lesson(5, "--only 1")), b = run(lesson(5, "--only tiles"));
    REQUIRE(a.exit_code == 0);
    CHECK(a.out == b.out);
    CHECK(a.out.rfind("Step 1 of", 0) == 0);
    const Run c = run(lesson(5, "--only tiles --no-prose"));
    REQUIRE(c.exit_code == 0);
    CHECK(c.out.find("Step 1 of") == std::string::npos);
    CHECK(c.out.find("Bc = ⌈M/4d⌉") != std::string::npos);
}

TEST_CASE("every exercise accepts the right answer and rejects a wrong one with a hint", "[lessons][check]") {
    for (int n = 1; n <= kLessons; ++n) {
        const json j = lesson_json(n);
        char nn[8];
        std::snprintf(nn, sizeof nn, "%02d", n);
        const Run key = run(lesson_answers(nn));
        REQUIRE(key.exit_code == 0);
        std::istringstream in(key.out);
        std::size_t count = 0;
        for (std::string line; std::getline(in, line);) {
            ++count;
            const auto eq = line.find('=');
            REQUIRE(eq != std::string::npos);
            const std::string id = line.substr(0, eq), answer = line.substr(eq + 1);
            CAPTURE(n, id, answer);
            const Run ok = run(lesson(n, "--check '" + id + "=" + answer + "'"));
            CHECK(ok.exit_code == 0);
            CHECK(ok.out == id + ": correct\n");
            std::string wrong;
            if (answer == "memory") wrong = "compute";
            else if (answer == "compute") wrong = "memory";
            else wrong = std::to_string(std::stod(answer) * 1.5 + 7);
            const Run bad = run(lesson(n, "--check '" + id + "=" + wrong + "'"));
            CHECK(bad.exit_code == 1);
            CHECK(bad.out.find(id + ": not correct.") == 0);
            CHECK(bad.out.find("Hint:") != std::string::npos);
            const Run junk = run(lesson(n, "--check '" + id + "=banana'"));
            CHECK(junk.exit_code == 1);
        }
        CHECK(count == j["exercises"].size());
    }
}

TEST_CASE("exercise answers agree with closed forms on the default GPU", "[lessons][check]") {
    const fasim::GpuSpec a100 = fasim::find_gpu_preset(fasim::default_gpu_name());
    auto ok = [](int n, const std::string& spec) {
        CAPTURE(n, spec);
        const Run r = run(lesson(n, "--check " + spec));
        CAPTURE(r.out, r.err);
        CHECK(r.exit_code == 0);
    };
    ok(2, "naive_bytes=" + std::to_string(2LL * 1024 * 1024 * 64 * 2));        // 2·m·n·k·e
    ok(2, "tiled_bytes=" + std::to_string(2LL * 1024 * 64 * (1024 / 64) * 2));  // m·k·n/64 + k·n·m/64
    ok(2, "reuse=64");                                                          // n / Tn
    ok(3, "sp_bytes=" + std::to_string(4LL * 16 * 8192 * 8192 * 2));            // S, P written and read
    ok(4, "matmul_ratio=1.5");                                                  // Q·Kᵀ twice, P·V once
    const long long M = a100.smem_per_block_bytes / 2;
    ok(5, "bc=" + std::to_string((M + 4 * 128 - 1) / (4 * 128)));               // ⌈M/4d⌉
    ok(6, "o_writes=" + std::to_string(1024 / 64 + 1));                        // init + Tc
    ok(7, "fa2_blocks=" + std::to_string(2 * 8 * (8192 / 128)));               // B·H·⌈N/Br⌉
    ok(7, "fa1_idle=" + std::to_string(a100.sm_count - 16));                  // SMs − B·H
    ok(8, "skipped=28");                                                        // 8×8 tiles: 8·7/2 above the diagonal
    ok(8, "masked=8");
    ok(10, "kept_by_standard=" + std::to_string(16LL * 8192 * 8192 * 2));       // P: B·H·N²·e
    ok(10, "fa1_dq_round_trips=" + std::to_string(1024 / 64));                // Tc = ⌈N/Bc⌉
    ok(1, "ridge=" + std::to_string(a100.matmul_flops(fasim::DType::fp16) / a100.effective_hbm_bandwidth()));
    ok(1, "softmax_bound=memory");
    // Lesson 11 on its H100: B=1, H=32 over 8 K/V heads, N=1, Nk=65536, d=128, fp16.
    const fasim::GpuSpec h100 = fasim::find_gpu_preset(default_gpu_of(11));
    ok(11, "kv_bytes=" + std::to_string(2LL * 8 * 65536 * 128 * 2));          // K and V once per K/V head: 2·B·KV·Nk·d·e
    const long long tiles = 65536 / fasim::tile_rules::flash_decoding_bc(128);
    const long long picked = fasim::tile_rules::flash_decoding_splits(8, 2LL * h100.sm_count, tiles);  // 8 blocks: B·KV
    const long long S = (tiles + (tiles + picked - 1) / picked - 1) / ((tiles + picked - 1) / picked);  // splits holding tiles
    ok(11, "partial_bytes=" + std::to_string(2 * S * 32 * (128 + 1) * 4));    // O_s and LSE_s in fp32, written and read
}

TEST_CASE("lesson 01: standard attention below the ridge its softmax memory-bound", "[lessons][facts]") {
    const json r = lesson_json(1)["results"];
    CHECK(num(r["roofline"]["ridge_matmul"]) > num(r["attention"]["standard_intensity"]));
    CHECK(num(r["hierarchy"]["smem_to_hbm_bandwidth"]) > 1);
    for (const auto& k : r["attention"]["kernels"])
        if (k["kernel"] == "softmax") CHECK(k["bound_kind"] == "memory");
}

TEST_CASE("lesson 02: simulated GEMM traffic equals the closed forms", "[lessons][facts]") {
    const json r = lesson_json(2)["results"];
    CHECK(num(r["naive"]["reads_bytes"]) == num(r["naive"]["formula_bytes"]));
    CHECK(num(r["tiled"]["reads_bytes"]) == num(r["tiled"]["formula_bytes"]));
    CHECK(num(r["tiled"]["naive_over_tiled"]) == Approx(64));
    CHECK(num(r["registers"]["reg_global_bytes"]) < num(r["tiled"]["reads_bytes"]));
}

TEST_CASE("lesson 03: S and P dominate and stop fitting long before FlashAttention does", "[lessons][facts]") {
    const json r = lesson_json(3)["results"];
    CHECK(num(r["kernels"]["dram_bytes"]) == Approx(num(r["kernels"]["formula_bytes"])).epsilon(0.05));
    CHECK(num(r["kernels"]["s_p_dram_bytes"]) > 0.9 * num(r["kernels"]["dram_bytes"]));
    CHECK(num(r["kernels"]["hbm_bytes"]) >= num(r["kernels"]["formula_bytes"]));
    const auto& rows = r["quadratic"]["over_N"];
    const double last = num(rows.back()["dram_bytes"]) / num(rows[rows.size() - 2]["dram_bytes"]);
    CHECK(last > 3.8);
    CHECK(last < 4.0);
    CHECK(num(r["memory"]["max_n_standard"]) < num(r["memory"]["max_n_fa2"]));
}

TEST_CASE("lesson 04: the online recurrence equals the exact softmax - two passes cost 1.5x matmuls", "[lessons][facts]") {
    const json r = lesson_json(4)["results"];
    CHECK(r["online"]["equals_exact"] == true);
    CHECK(r["output"]["equals_exact"] == true);
    CHECK(num(r["online"]["steps"].back()["l"]) == Approx(num(r["softmax"]["l"])).epsilon(1e-12));
    CHECK(num(r["two_pass"]["tiled_k_read_bytes"]) == 2 * num(r["two_pass"]["fa2_k_read_bytes"]));
    CHECK(num(r["two_pass"]["tiled_matmul_flops"]) == 1.5 * num(r["two_pass"]["fa2_matmul_flops"]));
}

TEST_CASE("lesson 05: the traced O equals exact attention - traffic follows the formula and N^2 d^2 / M", "[lessons][facts]") {
    const Run text = run(lesson(5));
    REQUIRE(text.exit_code == 0);
    std::string flat = text.out;
    std::replace(flat.begin(), flat.end(), '\n', ' ');
    CHECK(flat.find("the traced O equals exact attention") != std::string::npos);
    CHECK(text.out.find("== kernel fa1_forward") != std::string::npos);
    const json r = lesson_json(5)["results"];
    CHECK(r["trace"]["equals_exact"] == true);
    CHECK(num(r["trace"]["max_diff_vs_answer_key"]) < 1e-2);
    CHECK(r["traffic"]["formula_agrees"] == true);
    CHECK(num(r["traffic"]["standard_hbm_bytes"]) > 5 * (num(r["traffic"]["hbm_read_bytes"]) + num(r["traffic"]["hbm_write_bytes"])));
    const auto& law = r["law"]["smem_scaling"];
    for (std::size_t i = 1; i < law.size(); ++i) {
        const double shrink = num(law[i - 1]["hbm_bytes"]) / num(law[i]["hbm_bytes"]);
        CHECK(shrink > 1.4);  // doubling M almost halves the traffic
        CHECK(shrink <= 2.0);
    }
    CHECK(num(r["tiles"]["paper_Br"]) == std::min(num(r["tiles"]["paper_Bc"]), 64.0));  // Br = min(⌈M/4d⌉, d)
    CHECK(num(r["tiles"]["Bc"]) <= num(r["tiles"]["paper_Bc"]));  // lowered only if they do not fit
    CHECK(num(r["tiles"]["Br"]) <= num(r["tiles"]["paper_Br"]));
}

TEST_CASE("lesson 06: FA2 writes less exchanges nothing does fewer non-matmul FLOPs runs faster", "[lessons][facts]") {
    const json r = lesson_json(6)["results"];
    CHECK(r["loop"]["equals_exact"] == true);
    CHECK(r["loop"]["lse_equals_exact"] == true);
    CHECK(r["traffic"]["fa2_formula_agrees"] == true);
    CHECK(num(r["traffic"]["fa2_hbm_write_bytes"]) < num(r["traffic"]["fa1_hbm_write_bytes"]));
    CHECK(num(r["warps"]["fa2_smem_bytes"]) < num(r["warps"]["fa1_smem_bytes"]));
    CHECK(num(r["warps"]["fa2_barriers"]) == 0);
    CHECK(num(r["warps"]["fa1_barriers"]) > 0);
    CHECK(num(r["nonmatmul"]["fa2_nonmatmul_flops"]) < num(r["nonmatmul"]["fa1_nonmatmul_flops"]));
    CHECK(num(r["nonmatmul"]["fa2_matmul_flops"]) == num(r["nonmatmul"]["fa1_matmul_flops"]));
    CHECK(num(r["lse"]["fa2_lse_bytes"]) < num(r["lse"]["fa1_m_l_bytes"]));
    CHECK(num(r["compare"]["fa2_predicted_s"]) < num(r["compare"]["fa1_predicted_s"]));
}

TEST_CASE("lesson 07: FA1 grid B*H idles SMs at long N - FA2 grid B*H*Tr does not", "[lessons][facts]") {
    const fasim::GpuSpec a100 = fasim::find_gpu_preset(fasim::default_gpu_name());
    const json r = lesson_json(7)["results"];
    CHECK(num(r["grid"]["fa1_grid"]) == 16);
    CHECK(num(r["grid"]["fa2_grid"]) == 16 * 16384 / 128);
    CHECK(num(r["grid"]["fa1_idle_sms"]) == a100.sm_count - 16);
    CHECK(num(r["grid"]["fa2_idle_sms"]) == 0);
    for (const auto& row : r["tokens"]["fixed_tokens"]) CHECK(num(row["fa2_predicted_s"]) <= num(row["fa1_predicted_s"]));
}

TEST_CASE("lesson 08: causal skipping halves FLOPs - standard attention computes them all", "[lessons][facts]") {
    const json r = lesson_json(8)["results"];
    CHECK(num(r["map"]["skipped"]) == 28);
    CHECK(num(r["map"]["masked"]) == 8);
    for (const auto& a : r["flops"]["algorithms"]) {
        const double ratio = num(a["matmul_flops"]) / num(a["noncausal_matmul_flops"]);
        if (a["algo"] == "standard") CHECK(ratio == 1.0);
        else {
            CHECK(ratio > 0.5);
            CHECK(ratio < 0.6);
        }
    }
}

TEST_CASE("lesson 10: the traced gradients equal exact ones - P kept is quadratic, statistics linear - "
          "recomputation trades FLOPs for bytes and wins - FA2 adds dQ atomically",
          "[lessons][facts]") {
    const json r = lesson_json(10)["results"];
    CHECK(r["trace"]["gradients_equal_exact"] == true);
    const auto& kept = r["kept"]["kept"];
    for (std::size_t i = 1; i < kept.size(); ++i) {
        CHECK(num(kept[i]["standard_bytes"]) == 4 * num(kept[i - 1]["standard_bytes"]));  // N² per head
        CHECK(num(kept[i]["fa2_bytes"]) == 2 * num(kept[i - 1]["fa2_bytes"]));            // N per head
        CHECK(num(kept[i]["fa1_bytes"]) == 2 * num(kept[i]["fa2_bytes"]));                // m and ℓ against LSE
    }
    CHECK(kept.back()["standard_fits"] == false);
    CHECK(r["traffic"]["closed_forms_agree"] == true);
    CHECK(num(r["traffic"]["hbm_ratio"]) > 5);  // the FA papers: several times fewer bytes for training
    CHECK(num(r["recompute"]["fa2_matmul_flops"]) > num(r["recompute"]["standard_matmul_flops"]));
    CHECK(num(r["recompute"]["fa2_recomputed_matmul_flops"]) == 2.0 * 16 * 4096 * 4096 * 64);
    CHECK(num(r["recompute"]["fa2_intensity"]) > num(r["recompute"]["standard_intensity"]));
    CHECK(num(r["recompute"]["speedup"]) > 1);
    CHECK(r["dq"]["atomically_added"] == "dQ");
    CHECK(num(r["dq"]["fa2_dq_acc_hbm_read"]) < num(r["dq"]["fa1_dq_acc_hbm_read"]));
    CHECK(num(r["dq"]["fa1_grid"]) == 16);
    CHECK(num(r["dq"]["fa2_predicted_s"]) < num(r["dq"]["fa1_predicted_s"]));
}

TEST_CASE("lesson 11: one query row idles FA2's SMs - the heuristic's splits fill them - the combine is exact - "
          "partials are small beside K and V - GQA divides FlashDecoding's K/V bytes - the speedup grows with Nk",
          "[lessons][facts]") {
    const fasim::GpuSpec h100 = fasim::find_gpu_preset(default_gpu_of(11));
    const json r = lesson_json(11)["results"];
    const double kv_bytes = 2.0 * 8 * 65536 * 128 * 2;
    CHECK(num(r["decode"]["fa2_grid"]) == 32);  // B·H·⌈N/Br⌉ with N = 1
    CHECK(num(r["decode"]["fa2_idle_sms"]) == h100.sm_count - 32);
    CHECK(num(r["decode"]["fa2_active_warps"]) == 1);  // one row: one warp's 16-row fragment computes
    CHECK(num(r["decode"]["fa2_warps_per_block"]) == 4);
    CHECK(num(r["decode"]["kv_cache_bytes"]) == kv_bytes);
    CHECK(num(r["decode"]["fa2_over_floor"]) > 4);
    CHECK(num(r["decode"]["flops_per_kv_byte"]) < num(r["decode"]["ridge_point"]));

    const auto& splits = r["splits"];
    CHECK(splits["heuristic_agrees"] == true);
    CHECK(num(splits["blocks_without_split"]) == 8);  // B·KV: a group's 4 query heads are the rows of one Q tile
    CHECK(num(splits["grid_with_splits"]) == 8 * num(splits["heuristic_splits"]));
    CHECK(num(splits["idle_sms_with_splits"]) == 0);
    CHECK(num(splits["by_splits"].front()["splits"]) == 1);
    CHECK(num(splits["by_splits"].front()["predicted_s"]) > 4 * num(splits["fd_predicted_s"]));
    CHECK(num(splits["speedup"]) > 4);

    CHECK(r["combine"]["equals_exact"] == true);
    CHECK(num(r["combine"]["splits"]) == 2);
    CHECK(num(r["combine"]["max_weight_error"]) < 1e-5);
    for (const auto& h : r["combine"]["heads"]) CHECK(num(h["weight_sum"]) == Approx(1).epsilon(1e-6));

    const auto& cost = r["cost"];
    const double S = num(cost["splits"]);
    CHECK(num(cost["o_partial_bytes"]) == 2 * S * 32 * 128 * 4);  // written by the splits, read by the combine
    CHECK(num(cost["lse_partial_bytes"]) == 2 * S * 32 * 4);
    CHECK(num(cost["kv_bytes"]) == kv_bytes);
    CHECK(num(cost["partial_bytes"]) < 0.01 * kv_bytes);
    const auto& mqa = cost["by_kv_heads"].back();
    CHECK(num(mqa["kv_heads"]) == 1);
    CHECK(num(mqa["partial_bytes"]) / num(mqa["kv_bytes"]) > num(cost["partial_bytes"]) / kv_bytes);

    const auto& gqa = r["gqa"]["by_kv_heads"];
    REQUIRE(gqa.size() == 3);  // 32, 8 and 1 K/V heads
    for (const auto& row : gqa) {
        CHECK(num(row["fd_kv_read_bytes"]) * num(row["group"]) == num(gqa[0]["fd_kv_read_bytes"]));  // once per K/V head
        CHECK(num(row["kv_cache_bytes"]) == num(row["fd_kv_read_bytes"]));
        CHECK(num(row["fa2_kv_read_bytes"]) == num(gqa[0]["fa2_kv_read_bytes"]));  // FA2: once per query head
    }
    CHECK(num(gqa[0]["fd_kv_read_bytes"]) == 2.0 * 32 * 65536 * 128 * 2);

    const auto& rows = r["context"]["rows"];
    REQUIRE(rows.size() == 9);  // Nk = 1k .. 256k
    for (std::size_t i = 0; i < rows.size(); ++i) {
        CHECK(num(rows[i]["fd_predicted_s"]) < num(rows[i]["fa2_predicted_s"]));
        CHECK(num(rows[i]["fd_predicted_s"]) >= num(rows[i]["kv_floor_s"]));
        if (i > 0) CHECK(num(rows[i]["speedup"]) > num(rows[i - 1]["speedup"]));
    }
    CHECK(num(r["context"]["first_near_floor_nk"]) > 0);
}

TEST_CASE("lesson 09: no measurements means predictions only - result files are read and re-predicted", "[lessons][facts]") {
    const std::string empty = "/tmp/fasim_lesson09_empty_" + std::to_string(::getpid());
    std::filesystem::create_directories(empty);
    const Run none = run(lesson(9, "--results " + empty));
    REQUIRE(none.exit_code == 0);
    CHECK(none.out.find("No measurements") != std::string::npos);
    CHECK(none.out.find("Median |error|") == std::string::npos);  // no table of measurements
    std::filesystem::remove_all(empty);

    const std::string fixture = std::string(FASIM_SOURCE_DIR) + "/tests/lessons/fixtures";
    const json r = lesson_json(9, "--results " + fixture)["results"];
    CHECK(num(r["measured"]["measurements"]) == 5);
    const json& rows = r["measured"]["rows"];
    REQUIRE(rows.size() == 5);
    for (const auto& row : rows) {
        CHECK(row.contains("predicted_now_s"));
        CHECK(num(row["predicted_now_s"]) > 0);
    }
    // The decode fixture: a measurement whose run recorded no prediction (null) is still compared, and grouped
    // K/V heads are predicted as such: 8 K/V heads read a quarter of the cache that 32 read.
    const json& gqa = rows[0];
    const json& mha = rows[1];
    CHECK(gqa["file"] == "synthetic-decode-fixture.json");
    CHECK(gqa["kv_heads"] == 8);
    CHECK(!gqa.contains("predicted_then_s"));
    CHECK(mha["kv_heads"] == 32);
    CHECK(num(mha["predicted_then_s"]) == 9e-5);
    CHECK(num(gqa["predicted_now_s"]) < 0.5 * num(mha["predicted_now_s"]));
    // What was not compared, and why: a failed run, a run not made, a kernel outside the catalog, no time.
    std::string skipped;
    for (const auto& s : r["measured"]["skipped"]) skipped += s.get<std::string>() + "\n";
    CAPTURE(skipped);
    CHECK(skipped.find("synthetic-decode-fixture.json: 3 entries not compared: 1 not run, 1 without a measured time, "
                       "1 of kernels outside fa-sim's catalog (torch_cudnn)") != std::string::npos);
    CHECK(skipped.find("synthetic-test-fixture.json: 1 entry not compared: 1 failed run") != std::string::npos);
    const Run text = run(lesson(9, "--results " + fixture));
    CHECK(text.out.find("Median |error|") != std::string::npos);
    CHECK(text.out.find("Not compared: 4 entries of 2 result files (1 failed run; 1 not run") != std::string::npos);
    // One file alone, too.
    const json one = lesson_json(9, "--results " + fixture + "/synthetic-test-fixture.json")["results"];
    CHECK(num(one["measured"]["measurements"]) == 3);
}

TEST_CASE("lesson 09: the kernel ladder - each rung faster than the one below, the measured files' times, the "
          "Hopper rung predicted fast", "[lessons][facts][ladder]") {
    // The runs that timed the ladder's kernels as they are now (cuda/results/README.md), read here on their own.
    const std::string results = std::string(FASIM_SOURCE_DIR) + "/cuda/results/";
    auto seconds = [&](const std::string& run, const std::string& file, const std::string& algo) {
        const json doc = json::parse(read_file(results + run + "/" + file));
        for (const auto& r : doc["results"])
            if (r["algo"] == algo && r["dtype"] == "fp16" && !r["causal"].get<bool>()) return num(r["measured_s"]);
        FAIL("no fp16 non-causal " << algo << " in " << run << "/" << file);
        return 0.0;
    };
    const json r = lesson_json(9)["results"];
    const json& l = r["ladder"];
    REQUIRE(l["found"] == true);
    CHECK(l["runs"]["64"] == "2026-11-26-h200-ladder-e");
    CHECK(l["runs"]["128"] == "2026-11-26-h200-ladder-c");
    REQUIRE(l["rows"].size() == 8);  // d = 64 and 128, N = 2k, 4k, 8k, 16k
    const std::vector<std::string> rungs{"fa2", "fa2_tc", "fa2_tc_tuned", "fa2_wgmma"};
    for (const auto& row : l["rows"]) {
        const int d = row["d"];
        const long long N = row["N"];
        const double n = num(row["N"]);
        CAPTURE(d, N);
        const std::string run = l["runs"][std::to_string(d)], tag = "_d" + std::to_string(d) + "_N" + std::to_string(N) + ".json";
        CHECK(num(row["batch"]) * n == 16384);                 // the FA2 paper's setting: 16k tokens,
        CHECK(num(row["heads"]) * d == 2048);                  // hidden 2048
        CHECK(num(row["flops"]) == 4.0 * n * n * d * num(row["batch"]) * num(row["heads"]));
        for (std::size_t i = 0; i < rungs.size(); ++i) {
            CHECK(num(row["measured_s"][rungs[i]]) == seconds(run, "ladder_fp16" + tag, rungs[i]));
            CHECK(num(row["tflops"][rungs[i]]) == Approx(num(row["flops"]) / num(row["measured_s"][rungs[i]]) / 1e12));
            if (i > 0) CHECK(num(row["measured_s"][rungs[i]]) < num(row["measured_s"][rungs[i - 1]]));
        }
        for (const char* backend : {"torch_flash", "torch_cudnn"})
            CHECK(num(row["measured_s"][backend]) == seconds(run, "ladder_torch" + tag, backend));
    }
    CHECK(l["speedups"].size() == 8);  // three steps and the whole ladder, at two head dims
    for (const auto& s : l["speedups"])
        for (const auto& v : s["by_N"]) CHECK(num(v) > 1);

    // Against the model: the prose's claims, as the lesson computes them.
    const json& m = r["ladder_model"];
    REQUIRE(m["found"] == true);
    CHECK(m["gpu_preset"] == "H200");
    REQUIRE(m["rows"].size() == 32);
    for (const auto& row : m["rows"]) {
        const std::string algo = row["algo"];
        const int d = row["d"];
        CAPTURE(algo, d, row["N"]);
        const double e = num(row["error_percent"]), ec = num(row["calibrated_error_percent"]);
        CHECK(e == Approx(100 * (num(row["predicted_s"]) - num(row["measured_s"])) / num(row["measured_s"])));
        if (algo == "fa2_wgmma") {
            CHECK(e < 0);   // predicted fast at every N and d,
            CHECK(ec < e);  // and faster still with the card's higher calibrated GEMM rate
        }
        if (algo == "fa2" && d == 64) CHECK(e > 15);       // predicted slow (fp32's lone-warp readiness)
        // predicted fast, within 10% with FA2's step measured alone (20% fast at the readiness law)
        if (algo == "fa2_tc" && d == 128) CHECK((e < -3 && e > -10));
    }
    CHECK(num(m["rates"]["calibrated_dense_flops"]) > num(m["rates"]["preset_dense_flops"]));
    CHECK(num(m["rates"]["preset_mma_sync_flops"]) < num(m["rates"]["preset_dense_flops"]));
    for (const auto& v : m["wgmma_share_of_dense"]["calibrated"]) CHECK(num(v) < 1);
    REQUIRE(m["bounds"].size() == 8);
    CHECK(m["bounds"][7]["algo"] == "fa2_wgmma");
    CHECK(m["bounds"][7]["bound"] == "tensor cores (wgmma)");

    // The exercise: fa2's time over fa2_tc's, from the file.
    const std::string f = "ladder_fp16_d128_N16384.json";
    const double speedup = seconds("2026-11-26-h200-ladder-c", f, "fa2") / seconds("2026-11-26-h200-ladder-c", f, "fa2_tc");
    CHECK(speedup > 5);
    CHECK(run(lesson(9, "--check tc_speedup=" + std::to_string(speedup))).exit_code == 0);
    CHECK(run(lesson(9, "--check tc_speedup=" + std::to_string(speedup * 1.05))).exit_code == 1);

    // Without the runs: said so, nothing measured shown, and the exercise cannot be graded (a usage error).
    const std::string fixture = std::string(FASIM_SOURCE_DIR) + "/tests/lessons/fixtures";
    const Run none = run(lesson(9, "--results " + fixture + " --only ladder --no-prose"));
    REQUIRE(none.exit_code == 0);
    CHECK(none.out.find("The kernel ladder's runs are not in") != std::string::npos);
    CHECK(none.out.find("TFLOP/s") == std::string::npos);
    const json without = lesson_json(9, "--results " + fixture)["results"];
    CHECK(without["ladder"] == json{{"found", false}});
    CHECK(without["ladder_model"] == json{{"found", false}});
    CHECK(run(lesson(9, "--results " + fixture + " --check tc_speedup=9")).exit_code == 2);
}

TEST_CASE("bad flags: one line naming the value the range and a fix - exit code 2", "[lessons][errors]") {
    auto bad = [](int n, const std::string& args, const std::string& names) {
        CAPTURE(n, args);
        const Run r = run(lesson(n, args));
        CAPTURE(r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        CHECK(r.err.find(names) != std::string::npos);
        CHECK(r.err.find("Fix:") != std::string::npos);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    };
    bad(5, "--N 0", "--N 0 is out of range");
    bad(5, "--d 65", "--d 65");
    bad(3, "--dtype fp8", "--dtype 'fp8'");
    bad(7, "--gpu B200", "B200");
    bad(5, "--trace-N 100", "--trace-N 100");
    bad(5, "--trace-d 5", "--trace-d 5");
    bad(6, "--check nosuch=1", "no exercise 'nosuch'");
    bad(6, "--check 42", "--check '42' names no exercise");
    bad(6, "--only 99", "--only '99'");
    bad(6, "--only 1 --check o_writes=17", "one of them per run");
    bad(6, "--answer-key", "--answer-key");  // the students' program prints no answers
    bad(4, "--no-such-flag", "no-such-flag");
    bad(8, "--no-prose", "--no-prose");
    bad(11, "--kv-heads 5", "--kv-heads 5");
    bad(11, "--kv-splits 5000", "--kv-splits 5000");
    bad(11, "--trace-splits 3", "--trace-splits 3");
}

TEST_CASE("lessons take --dtype in any case, and --help names each option's type (no TEXT)", "[lessons][errors]") {
    const json upper = lesson_json(5, "--dtype FP16");
    CHECK(upper["parameters"]["dtype"] == "fp16");
    CHECK(upper == lesson_json(5, "--dtype fp16"));
    for (int n = 1; n <= kLessons; ++n) {
        CAPTURE(n);
        const Run help = run(lesson(n, "--help"));
        REQUIRE(help.exit_code == 0);
        CHECK(help.out.find("TEXT") == std::string::npos);
        CHECK(help.out.find("answer") == std::string::npos);  // the answer keys are the instructors' program's
    }
    CHECK(run(lesson(9, "--help")).out.find("--rows INT") != std::string::npos);
}

TEST_CASE("export-notebook writes an nbformat 4 notebook with stable cell ids", "[lessons][notebook]") {
    const std::string dir = "/tmp/fasim_lesson_nb_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    const Run r = run(lesson(5, "--export-notebook " + dir));
    REQUIRE(r.exit_code == 0);
    const std::string path = dir + "/05_flashattention_1.ipynb";
    REQUIRE(std::filesystem::exists(path));
    const json nb = json::parse(read_file(path));
    CHECK(nb["nbformat"] == 4);
    CHECK(nb["nbformat_minor"] == 5);
    CHECK(nb["metadata"]["kernelspec"]["name"] == "python3");
    std::set<std::string> ids;
    for (const auto& c : nb["cells"]) CHECK(ids.insert(c["id"].get<std::string>()).second);
    CHECK(nb["cells"][0]["cell_type"] == "markdown");
    CHECK(nb["cells"][0]["id"] == "l05-top");
    const Run again = run(lesson(5, "--export-notebook " + dir + "/again.ipynb"));
    REQUIRE(again.exit_code == 0);
    CHECK(read_file(dir + "/again.ipynb") == read_file(path));
    std::filesystem::remove_all(dir);
}

TEST_CASE("a lesson whose steps carry Python exports a notebook on the module, without subprocesses", "[lessons][notebook]") {
    const std::string dir = "/tmp/fasim_lesson_module_nb_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    // Each module lesson, and the start of its PROBLEM line (the problem flags it offers, with their defaults).
    const std::vector<std::pair<int, std::string>> module_lessons = {
        {1, "PROBLEM = dict(batch=1, heads=16, N=4096, d=64, dtype=\"fp16\""},
        {2, "PROBLEM = dict(N=4096, d=64, dtype=\"fp16\")"},
        {3, "PROBLEM = dict(batch=1, heads=16, N=4096, d=64, dtype=\"fp16\""},
        {4, "PROBLEM = dict(batch=1, heads=16, N=4096, d=64, dtype=\"fp16\")"},
        {5, "PROBLEM = dict(batch=1, heads=16, N=4096, d=64, dtype=\"fp16\")"},
        {6, "PROBLEM = dict(batch=1, heads=16, N=4096, d=64, dtype=\"fp16\""},
        {7, "PROBLEM = dict(batch=1, heads=16, N=16384, d=64, dtype=\"fp16\")"},
        {8, "PROBLEM = dict(batch=1, heads=16, N=4096, d=64, dtype=\"fp16\")"},
        {9, "PROBLEM = dict(batch=2, heads=8, N=4096, d=64, dtype=\"fp32\")"},
        {10, "PROBLEM = dict(batch=1, heads=16, N=4096, d=64, dtype=\"fp16\""},
        {11, "PROBLEM = dict(batch=1, heads=32, d=128, dtype=\"fp16\")"},
    };
    for (const auto& [n, problem] : module_lessons) {
        CAPTURE(n);
        const Run r = run(lesson(n, "--export-notebook " + dir));
        REQUIRE(r.exit_code == 0);
        std::string text;
        for (const auto& entry : std::filesystem::directory_iterator(dir)) {
            char prefix[8];
            std::snprintf(prefix, sizeof prefix, "%02d_", n);
            if (entry.path().filename().string().rfind(prefix, 0) == 0) text = read_file(entry.path().string());
        }
        REQUIRE(!text.empty());
        const json nb = json::parse(text);
        std::string setup;
        for (const auto& line : nb["cells"][1]["source"]) setup += line.get<std::string>();
        CHECK(setup.find("import fasim") != std::string::npos);
        CHECK(setup.find("%pip install ") != std::string::npos);  // the line that installs the module, when it is missing
        CHECK(setup.find(problem) != std::string::npos);
        std::size_t code_cells = 0;
        for (const auto& c : nb["cells"]) {
            if (c["cell_type"] != "code") continue;
            std::string src;
            for (const auto& line : c["source"]) src += line.get<std::string>();
            CHECK(src.find("subprocess") == std::string::npos);
            CHECK(src.find("FASIM_BIN") == std::string::npos);
            const std::string id = c["id"];
            if (id.find("-step-") != std::string::npos) {
                ++code_cells;
                CHECK(src.find("fasim.") != std::string::npos);   // computed with the module
                CHECK(src.find("RESULTS[") != std::string::npos);  // and recorded for the drift check
            }
        }
        CHECK(code_cells >= 4);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("answer keys are the instructors' program's - students' programs grade without printing them", "[lessons][check]") {
    auto has_tool = [](const json& j) {
        CHECK(j["tool"]["name"] == "fa-sim");
        CHECK(!j["tool"]["version"].get<std::string>().empty());
        CHECK(!j["tool"]["commit"].get<std::string>().empty());
    };
    const json all = json::parse(run(lesson_answers("all --json")).out);
    CHECK(all["record"] == "answer_keys");
    has_tool(all);
    REQUIRE(all["keys"].size() == static_cast<std::size_t>(kLessons));
    for (int n = 1; n <= kLessons; ++n) {
        CAPTURE(n);
        const Run help = run(lesson(n, "--help"));
        REQUIRE(help.exit_code == 0);
        CHECK(help.out.find("--answer") == std::string::npos);  // no option that prints answers
        char nn[8];
        std::snprintf(nn, sizeof nn, "%02d", n);
        const Run key = run(lesson_answers(std::string(nn) + " --json"));
        REQUIRE(key.exit_code == 0);
        const json k = json::parse(key.out);
        CHECK(k["record"] == "answer_key");
        has_tool(k);
        CHECK(k["lesson"] == n);
        CHECK(k["parameters"]["gpu"] == default_gpu_of(n));
        CHECK(k == all["keys"][static_cast<std::size_t>(n - 1)]);
        CHECK(k["answers"].size() == lesson_json(n)["exercises"].size());
        has_tool(lesson_json(n));
    }
    // The key follows the flags, as the grading does.
    const json h100 = json::parse(run(lesson_answers("05 --gpu H100-SXM --json")).out);
    CHECK(h100["parameters"]["gpu"] == "H100-SXM");
    const Run graded = run(lesson(5, "--gpu H100-SXM --check bc=" + std::to_string(h100["answers"][0]["answer"].get<long long>())));
    CHECK(graded.exit_code == 0);
    // lesson-answers takes no lesson modes; a bad lesson number is a usage error.
    CHECK(run(lesson_answers("05 --check bc=1")).exit_code == 2);
    CHECK(run(lesson_answers("12")).exit_code == 2);
    CHECK(run(lesson_answers("all --N 1024")).exit_code == 2);
}

TEST_CASE("a graded record (--check with --json) with the tool version and commit and no answers", "[lessons][check][json]") {
    const json key = json::parse(run(lesson_answers("07 --json")).out);
    std::string right;
    for (const auto& a : key["answers"])
        if (a["id"] == "fa2_blocks") right = std::to_string(a["answer"].get<long long>());
    REQUIRE(!right.empty());
    const Run r = run(lesson(7, "--check fa2_blocks=" + right + " --check fa1_idle=1 --json"));
    CHECK(r.exit_code == 1);  // one wrong: as --check alone
    const json g = json::parse(r.out);
    CHECK(g["schema_version"] == 1);
    CHECK(g["record"] == "graded");
    CHECK(g["tool"]["name"] == "fa-sim");
    CHECK(!g["tool"]["commit"].get<std::string>().empty());
    CHECK(g["lesson"] == 7);
    CHECK(g["parameters"]["gpu"] == fasim::default_gpu_name());
    REQUIRE(g["results"].size() == 2);
    CHECK(g["results"][0]["id"] == "fa2_blocks");
    CHECK(g["results"][0]["answer"] == right);
    CHECK(g["results"][0]["correct"] == true);
    CHECK(g["results"][1]["correct"] == false);
    CHECK(g["results"][1]["feedback"].get<std::string>().find("Hint:") != std::string::npos);
    CHECK(g["correct"] == 1);
    CHECK(g["total"] == 2);
    CHECK(g["all_correct"] == false);
    // The right answer of the wrong one is nowhere in the record.
    std::string idle;
    for (const auto& a : key["answers"])
        if (a["id"] == "fa1_idle") idle = std::to_string(a["answer"].get<long long>());
    for (const auto& res : g["results"])
        for (const auto& [field, value] : res.items()) {
            CAPTURE(field);
            CHECK(!(res["id"] == "fa1_idle" && value.is_string() && value.get<std::string>() == idle));
            CHECK(field != "expected");
        }
    const Run again = run(lesson(7, "--check fa2_blocks=" + right + " --check fa1_idle=1 --json"));
    CHECK(again.out == r.out);  // deterministic
}

TEST_CASE("lesson 05 counts O_acc in O's round trips - lesson 09 prints its table before the files it read", "[lessons][facts]") {
    const json r = lesson_json(5)["results"];
    const double oml = num(r["limits"]["o_l_m_bytes"]), acc = num(r["limits"]["o_acc_bytes"]);
    CHECK(acc > 0);
    CHECK(acc < oml);
    CHECK(oml > 0.5 * (num(r["traffic"]["hbm_read_bytes"]) + num(r["traffic"]["hbm_write_bytes"])));  // O_acc dominates
    const Run text = run(lesson(5, "--only limits --no-prose"));
    CHECK(text.out.find("O_acc, O, ℓ and m") != std::string::npos);

    const std::string fixture = std::string(FASIM_SOURCE_DIR) + "/tests/lessons/fixtures";
    const Run nine = run(lesson(9, "--results " + fixture + " --only measured --no-prose"));
    REQUIRE(nine.exit_code == 0);
    CHECK(nine.err.empty());  // no progress unless stderr is a terminal
    const auto table = nine.out.find("kernel"), files = nine.out.find("The measurements come from");
    REQUIRE(table != std::string::npos);
    REQUIRE(files != std::string::npos);
    CHECK(table < files);
    const auto device = nine.out.find("TEST FIXTURE (not a measurement), driver n/a");
    REQUIRE(device != std::string::npos);
    CHECK(device > files);
}
