// fa-sim's command line: every bad input gets one line naming the value, the
// allowed range and a fix, and exit code 2; good input gets the report.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "run_command.hpp"

using namespace fasim::test;

namespace {

void expect_usage_error(const std::string& args, const std::string& names_value) {
    CAPTURE(args);
    const auto r = run_command(fa_sim(args));
    CAPTURE(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("fa-sim: error: ", 0) == 0);
    CHECK(r.err.find(names_value) != std::string::npos);
    CHECK(r.err.find("Fix:") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

}  // namespace

TEST_CASE("bad sizes name the value, the range and a fix", "[cli][errors]") {
    expect_usage_error("--N 0", "--N 0 is out of range");
    expect_usage_error("--N -5", "--N -5");
    expect_usage_error("--N abc", "'abc' is not a whole number");
    expect_usage_error("--N 16777217", "1..16777216");  // N up to 2^24 (issue 24)
    expect_usage_error("--N 99999999999999999999", "too large");
    expect_usage_error("--Nk 0", "--Nk 0");
    expect_usage_error("--d 65", "--d 65 is not a supported head dimension");
    expect_usage_error("--heads 0", "--heads 0");
    expect_usage_error("--batch 65537", "--batch 65537 is out of range: batch must be a whole number 1..65536");
    expect_usage_error("--heads 65537", "--heads 65537 is out of range: heads must be a whole number 1..65536");
    expect_usage_error("--batch 2 --heads 32769", "--batch 2 x --heads 32769 = 65538 is too many: batch*heads must be at most 65536");
    expect_usage_error("--batch 65536 --heads 65536", "= 4294967296 is too many");
}

TEST_CASE("batch*heads = 65536 runs - its counts exact in JSON and CSV", "[cli][limits]") {
    // 256 x 256 heads of FA2 at N = 4096, d = 128, fp16: HBM reads B·H·e·(N·d + (N/Br)·2·N·d), writes
    // B·H·(e·N·d + 4·N), matmul FLOPs 4·B·H·N²·d (Br = 128 here).
    const auto json = run_command(fa_sim("--algo fa2 --batch 256 --heads 256 --N 4096 --d 128 --json"));
    REQUIRE(json.exit_code == 0);
    const auto a = nlohmann::json::parse(json.out).at("algorithms").at(0);
    REQUIRE(a.at("tiles").at("Br") == 128);
    const std::int64_t BH = 65536, N = 4096, d = 128, e = 2;
    CHECK(a.at("hbm").at("read_bytes").get<std::int64_t>() == BH * e * (N * d + N / 128 * 2 * N * d));
    CHECK(a.at("hbm").at("write_bytes").get<std::int64_t>() == BH * (e * N * d + 4 * N));
    CHECK(a.at("flops").at("matmul").get<std::int64_t>() == 4 * BH * N * N * d);  // 2^49
    CHECK(a.at("kernels").at(0).at("grid") == BH * 32);
    const auto csv = run_command(fa_sim("--algo fa2 --batch 256 --heads 256 --N 4096 --d 128 --csv"));
    REQUIRE(csv.exit_code == 0);
    CHECK(csv.out.find(",fa2,256,256,4096,4096,128,fp16,0,128,") != std::string::npos);
    const std::string matmul = std::to_string(4 * BH * N * N * d);
    CHECK(csv.out.find("," + matmul + ",") != std::string::npos);
}

TEST_CASE("bad choices name the value and the choices", "[cli][errors]") {
    expect_usage_error("--dtype fp8", "--dtype 'fp8'");
    expect_usage_error("--algo fa3", "--algo 'fa3'");
    expect_usage_error("--matmul fast", "--matmul 'fast'");
    expect_usage_error("--matmul fast", "choose tiled, naive or library");
    expect_usage_error("--gpu B200", "B200");
    expect_usage_error("--gpu A100-SXM4-40GB --gpu-file x.json", "both given");
    expect_usage_error("--json --csv", "both given");
    expect_usage_error("--no-such-flag", "no-such-flag");
}

TEST_CASE("trace, plot and seed flags are checked too", "[cli][errors]") {
    expect_usage_error("--trace --N 4096", "would print too many steps");
    expect_usage_error("--trace --algo all --N 8", "--trace was combined");
    expect_usage_error("--seed abc --trace --N 8", "--seed 'abc'");
    expect_usage_error("--measured r.json", "without --plot");
    expect_usage_error("--plot /nonexistent/figures --N 512", "/nonexistent/figures");
}

TEST_CASE("tiles that do not fit in shared memory are refused, never clamped", "[cli][errors]") {
    expect_usage_error("--Br 100000", "--Br 100000");
    expect_usage_error("--Br 0", "--Br 0");
    expect_usage_error("--algo fa2 --Br 1024 --Bc 1024", "--Br 1024 --Bc 1024 need");
    expect_usage_error("--algo fa1 --Br 512 --Bc 2048 --d 128", "allows at most");
}

TEST_CASE("FA1's --q-splits must be 1..ceil(N/Br) and is refused for other algorithms", "[cli][errors][q-splits]") {
    expect_usage_error("--algo fa1 --q-splits 0", "--q-splits 0 is out of range");
    expect_usage_error("--algo fa1 --q-splits two", "--q-splits 'two' is not a whole number");
    expect_usage_error("--algo fa1 --N 200 --Br 16 --q-splits 14", "--q-splits 14 is out of range for fa1 with N=200, Br=16");
    expect_usage_error("--algo fa1 --N 200 --Br 16 --q-splits 14", "q-splits must be 1..Tr = ceil(N/Br) = 13");
    expect_usage_error("--algo fa2 --q-splits 2", "--q-splits 2 does not apply to fa2");
    expect_usage_error("--algo all --q-splits 2", "use --algo fa1, or drop --q-splits");
    expect_usage_error("--algo fa1 --q-splits 2 --plot /tmp/fasim-q-splits", "--q-splits 2 was combined with --plot");
}

TEST_CASE("FA1 with --q-splits reports the splits and launches that many blocks per batch*head", "[cli][q-splits]") {
    const auto text = run_command(fa_sim("--algo fa1 --N 200 --Br 16 --q-splits 3"));
    REQUIRE(text.exit_code == 0);
    CHECK(text.out.find("Br=16, Bc=") != std::string::npos);
    CHECK(text.out.find(", q_splits=3") != std::string::npos);
    CHECK(text.out.find("(16 heads x 3 per head)") != std::string::npos);
    const auto r = run_command(fa_sim("--algo fa1 --N 200 --Br 16 --q-splits 3 --json"));
    REQUIRE(r.exit_code == 0);
    const auto a = nlohmann::json::parse(r.out).at("algorithms").at(0);
    CHECK(a.at("tiles").at("q_splits") == 3);
    CHECK(a.at("kernels").back().at("blocks_per_head") == 3);
    const auto plain = run_command(fa_sim("--algo fa1 --N 200 --Br 16 --json"));  // no key when there is one block
    REQUIRE(plain.exit_code == 0);
    CHECK(!nlohmann::json::parse(plain.out).at("algorithms").at(0).at("tiles").contains("q_splits"));
}

TEST_CASE("fa-sim --registers takes the compiled kernel's count for occupancy and the issue rate", "[cli][registers]") {
    expect_usage_error("--registers 0", "--registers 0 is out of range");
    expect_usage_error("--registers 256", "1..255");
    expect_usage_error("--registers many", "--registers 'many' is not a whole number");
    // fa2_tc at d=128 on the H200: 168 registers per thread leave room for three 128-thread blocks per SM.
    const auto r = run_command(fa_sim("--gpu H200 --d 128 --Br 64 --Bc 64 --registers 168 --json"));
    REQUIRE(r.exit_code == 0);
    const auto k = nlohmann::json::parse(r.out).at("algorithms").at(0).at("kernels").at(0);
    CHECK(k.at("registers_per_thread") == 168);
    CHECK(k.at("registers_given") == true);
    CHECK(k.at("blocks_per_sm") == 3);
    CHECK(k.at("time").at("issue_s").get<double>() > 0);
    const auto text = run_command(fa_sim("--gpu H200 --d 128 --Br 64 --Bc 64 --registers 168"));
    REQUIRE(text.exit_code == 0);
    CHECK(text.out.find("3 blocks/SM (limited by registers), 48 KiB shared memory and 168 registers/thread") != std::string::npos);
    // FA2's step measured alone on the H200 at 3 blocks per scheduler, d = 128 (the readiness law: 1 - 0.83^3 = 43%)
    CHECK(text.out.find("3 warps per scheduler issue in 37% of cycles (FA2's step timed alone: the GPU file's table)") != std::string::npos);
    CHECK(k.at("issue_law") == "fa2_step");
}

TEST_CASE("a bad sweep says how to write one", "[cli][errors]") {
    expect_usage_error("--sweep N=500:1000", "not a power of two");
    expect_usage_error("--sweep N=1024:512", "runs backwards");
    expect_usage_error("--sweep d=16:64", "not supported");
    expect_usage_error("--sweep 512-1024", "not of the form");
}

TEST_CASE("GPU files: missing and malformed files are named", "[cli][errors]") {
    expect_usage_error("--gpu-file /nonexistent/gpu.json", "/nonexistent/gpu.json");
    const std::string bad = "/tmp/fasim_bad_gpu.json";
    std::ofstream(bad) << "{ \"format\": \"fa-sim-gpu/1\", \"name\": ";
    expect_usage_error("--gpu-file " + bad, bad);
}

TEST_CASE("the flagship command prints the report", "[cli]") {
    const auto r = run_command(fa_sim("--algo fa2 --N 4096"));
    REQUIRE(r.exit_code == 0);
    for (const char* s : {"FlashAttention-2", "A100-SXM4-40GB", "Br=128, Bc=128", "grid       512 blocks", "HBM (loads+stores issued)",
                          "DRAM (after L2)", "L2 (32-byte sectors)", "shared memory", "matmul FLOPs", "non-matmul FLOPs",
                          "intensity", "Predicted time", "bound"})
        CHECK(r.out.find(s) != std::string::npos);
}

TEST_CASE("algo all shows the idle SMs of FA1 at B*H=16 on an A100", "[cli]") {
    const auto r = run_command(fa_sim("--algo all --N 4096"));
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("speedup vs standard") != std::string::npos);
    CHECK(r.out.find("idle SMs (main kernel)            0            0           92            0") != std::string::npos);
}

TEST_CASE("json output carries the versioned schema's required keys for each algorithm", "[cli][json]") {
    const auto r = run_command(fa_sim("--algo all --N 1024 --json"));
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    CHECK(j.at("schema_version") == 2);
    REQUIRE(j.at("algorithms").size() == 4);
    for (const auto& a : j.at("algorithms")) {
        for (const char* level : {"hbm", "dram", "l2"}) {
            CHECK(a.at(level).at("read_bytes").get<long long>() > 0);
            CHECK(a.at(level).at("write_bytes").get<long long>() > 0);
        }
        CHECK(a.at("smem").at("read_bytes").get<long long>() > 0);
        CHECK(a.at("flops").at("matmul").get<long long>() > 0);
        CHECK(a.at("flops").at("nonmatmul").get<long long>() > 0);
        CHECK(a.at("time").at("predicted_s").get<double>() > 0);
    }
}

TEST_CASE("csv output gives one row per algorithm and N, deterministically", "[cli][csv]") {
    const auto a = run_command(fa_sim("--algo all --sweep N=512:2048 --csv"));
    const auto b = run_command(fa_sim("--algo all --sweep N=512:2048 --csv"));
    REQUIRE(a.exit_code == 0);
    CHECK(a.out == b.out);
    CHECK(std::count(a.out.begin(), a.out.end(), '\n') == 1 + 3 * 4);
}

TEST_CASE("fa-sim --list-algos prints one line per registered algorithm: its id, then its title", "[cli][registry]") {
    const auto r = run_command(fa_sim("--list-algos"));
    REQUIRE(r.exit_code == 0);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 10);  // six forward passes, four backward
    CHECK(r.out.rfind("standard ", 0) == 0);
    // One line each: the id, spaces, the title.
    auto line_of = [&](const std::string& id) {
        const auto at = r.out.find("\n" + id + " ");
        return at == std::string::npos ? std::string() : r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
    };
    CHECK(line_of("fa2").find("FlashAttention-2 (Q outer loop") != std::string::npos);
    CHECK(line_of("fa2_bwd").find("FlashAttention-2 backward") != std::string::npos);
    CHECK(line_of("flash_decoding").find("FlashDecoding (keys split") != std::string::npos);
    CHECK(line_of("torch_math").find("PyTorch's math SDPA backend") != std::string::npos);
}

TEST_CASE("fa-sim --list-kernels --json is the kernel catalog: every kernel names a registered algorithm", "[cli][catalog]") {
    const auto r = run_command(fa_sim("--list-kernels --json"));
    REQUIRE(r.exit_code == 0);
    const auto doc = nlohmann::json::parse(r.out);
    std::set<std::string> ids;
    for (const auto& a : doc.at("algorithms")) ids.insert(a.at("id").get<std::string>());
    REQUIRE(doc.at("kernels").size() >= 10);
    for (const auto& k : doc.at("kernels")) {
        CAPTURE(k.at("name"));
        CHECK(ids.count(k.at("algorithm").get<std::string>()) == 1);
        CHECK(!k.at("dtypes").empty());
        CHECK(!k.at("head_dims").empty());
    }
    CHECK(doc.at("kernels")[7].at("name") == "fa2_tc");
    CHECK(doc.at("kernels")[7].at("tiles") == "fixed 64x64");
}

TEST_CASE("fa-sim --kernel models a catalog kernel as it runs, and refuses what it has no code for", "[cli][catalog]") {
    const auto r = run_command(fa_sim("--kernel fa2_tc --gpu H200 --d 128 --json"));
    REQUIRE(r.exit_code == 0);
    const auto a = nlohmann::json::parse(r.out).at("algorithms").at(0);
    CHECK(a.at("algo") == "fa2");
    CHECK(a.at("tiles").at("Br") == 64);  // its fixed tiles, not FA2's paper default of 128 rows
    CHECK(a.at("kernels").at(0).at("registers_per_thread") == 168);  // ptxas's count, from the catalog
    expect_usage_error("--kernel fa9", "--kernel 'fa9' is not in the kernel catalog");
    expect_usage_error("--kernel fa2_tc --dtype fp32", "fa2_tc has no fp32 kernel");
    expect_usage_error("--kernel fa1_tc --d 32", "no kernel for head dim d = 32");
    expect_usage_error("--kernel fa2_tc --gpu T4", "needs compute capability 8.0");
    expect_usage_error("--kernel fa2 --algo fa1", "implements fa2, not --algo fa1");
    expect_usage_error("--kernel fa2 --cuda-cores", "combined with --cuda-cores");
}

TEST_CASE("fa-sim --kernel --tile-addresses: a run's copies as it recorded them, the catalog's by default, whatever tiles "
          "are given",
          "[cli][catalog]") {
    // fa2_tc copies a whole tile from one address since 2026-11-30; runs before copied per 16-byte chunk, with
    // 12 instructions each (sim/kernels/issue_costs.hpp). Scripts pass a run's record (--Br, --Bc, --registers)
    // and how it copied; the tiles alone no longer switch the copies to per chunk.
    auto instructions = [](const std::string& extra) {
        const auto r = run_command(fa_sim("--kernel fa2_tc --gpu H200 --d 128 --N 2048 --batch 8 --json " + extra));
        REQUIRE(r.exit_code == 0);
        return nlohmann::json::parse(r.out).at("algorithms").at(0).at("kernels").at(0).at("warp_instructions").get<double>();
    };
    const double catalog = instructions(""), with_tiles = instructions("--Br 64 --Bc 64 --registers 168");
    const double per_tile = instructions("--Br 64 --Bc 64 --registers 168 --tile-addresses one_per_tile");
    const double per_chunk = instructions("--Br 64 --Bc 64 --registers 168 --tile-addresses per_chunk");
    CHECK(with_tiles == catalog);
    CHECK(per_tile == catalog);
    CHECK(instructions("--tile-addresses per_chunk") == per_chunk);
    CHECK(per_chunk > 1.2 * per_tile);  // d = 128: 16 LDGSTS per thread per K/V tile pair, 12 instructions each, not 2
    expect_usage_error("--kernel fa2_tc --tile-addresses sideways", "--tile-addresses 'sideways' is not a way to copy tiles");
    expect_usage_error("--algo fa2 --tile-addresses per_chunk", "--tile-addresses per_chunk was given without --kernel");
}

TEST_CASE("fa-sim --pass bwd and fwd+bwd report the backward, and bad passes are refused", "[cli][backward]") {
    const auto r = run_command(fa_sim("--algo all --pass fwd+bwd --N 1024 --json"));
    REQUIRE(r.exit_code == 0);
    const auto algos = nlohmann::json::parse(r.out).at("algorithms");
    REQUIRE(algos.size() == 3);  // standard, fa1, fa2: tiled has no backward
    for (const auto& a : algos) {
        CAPTURE(a.at("algo"));
        CHECK(a.at("pass") == "fwd+bwd");
        CHECK(a.at("programs").size() == 2);
        CHECK(a.at("memory").at("held_between_passes_bytes").get<std::int64_t>() > 0);
    }
    CHECK(algos[2].at("flops").at("recomputed_matmul").get<std::int64_t>() == 2LL * 16 * 1024 * 1024 * 64);
    const auto csv = run_command(fa_sim("--algo fa2 --pass bwd --N 1024 --csv"));
    CHECK(csv.out.find("\n2,A100-SXM4-40GB,fa2_bwd,") != std::string::npos);
    const auto bwd = run_command(fa_sim("--algo fa2_bwd --N 1024"));
    CHECK(bwd.exit_code == 0);
    CHECK(bwd.out.find("Pass     backward") != std::string::npos);
    expect_usage_error("--pass sideways", "--pass 'sideways' is not a pass");
    expect_usage_error("--algo tiled --pass bwd", "tiled has no backward pass");
    expect_usage_error("--algo fa2_bwd --pass fwd", "is a backward pass");
}

TEST_CASE("fa-sim --dq separate gives FA2's backward a dQ kernel of its own in every output, and bad values are refused",
          "[cli][backward][dq]") {
    const auto r = run_command(fa_sim("--algo all --pass bwd --N 1024 --dq separate --json"));
    REQUIRE(r.exit_code == 0);
    const nlohmann::json report = nlohmann::json::parse(r.out);  // kept alive: the loop below walks into it
    for (const auto& a : report.at("algorithms")) {
        CAPTURE(a.at("algo"));
        if (a.at("algo") != "fa2") {
            CHECK_FALSE(a.at("tiles").contains("dq"));  // no choice: the others are unchanged
            continue;
        }
        CHECK(a.at("tiles").at("dq") == "separate");
        CHECK_FALSE(a.at("hbm").at("by_tensor").contains("dQ_acc"));
        CHECK(a.at("hbm").at("by_tensor").at("dQ").at("write_bytes") == 16 * 1024 * 64 * 2);
        const auto& kernels = a.at("kernels");
        CHECK(std::any_of(kernels.begin(), kernels.end(), [](const nlohmann::json& k) {
            return k.at("name") == "fa2_bwd_dq" && k.at("flops").at("matmul").get<std::int64_t>() == 6LL * 16 * 1024 * 1024 * 64 &&
                   k.at("time").at("predicted_s").get<double>() > 0;
        }));
    }
    const auto csv = run_command(fa_sim("--algo fa2 --pass fwd+bwd --N 1024 --csv --dq separate"));
    CHECK(csv.out.rfind(",kv_heads,dq\n") != std::string::npos);
    CHECK(csv.out.find(",fa2+fa2_bwd,") != std::string::npos);
    CHECK(csv.out.find(",16,separate\n") != std::string::npos);
    const auto text = run_command(fa_sim("--algo fa2 --pass bwd --N 1024 --dq SEPARATE"));
    CHECK(text.out.find("Kernel fa2_bwd_dq") != std::string::npos);
    CHECK(text.out.find("(= 14*B*H*N*Nk*d)") != std::string::npos);
    const auto atomic = run_command(fa_sim("--algo fa2 --pass bwd --N 1024 --csv"));
    CHECK(atomic.out.find(",16,atomic\n") != std::string::npos);
    expect_usage_error("--algo fa2 --pass bwd --dq sideways", "--dq 'sideways' is not a dQ mode");
    expect_usage_error("--algo fa2 --dq separate", "--dq separate was given for the forward pass");
    expect_usage_error("--algo fa1 --pass bwd --dq separate", "--dq separate does not apply to --algo fa1");
}

TEST_CASE("fa-sim --trace --pass bwd follows the backward and ends with the gradients' check", "[cli][backward]") {
    const auto r = run_command(fa_sim("--algo fa2 --pass bwd --N 8 --d 4 --trace"));
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("atomic add dQ_i (part) -> dQ_acc[0:4, 0:4]") != std::string::npos);
    CHECK(r.out.find("max |dK - dK_exact|") != std::string::npos);
    CHECK(r.out.find("DIFFERS") == std::string::npos);
}

TEST_CASE("training with grouped-query attention: fwd+bwd compares standard, FA1 and FA2, whose backwards sum each "
          "group's dK, dV, and the trace checks each K/V head's summed gradients", "[cli][backward][grouped]") {
    const auto r = run_command(fa_sim("--algo all --pass fwd+bwd --N 4096 --heads 32 --kv-heads 8 --json"));
    REQUIRE(r.exit_code == 0);
    const nlohmann::json doc = nlohmann::json::parse(r.out);
    std::map<std::string, std::string> last_kernel;
    for (const auto& a : doc.at("algorithms")) last_kernel[a.at("algo")] = a.at("kernels").back().at("name");
    CHECK(last_kernel == std::map<std::string, std::string>{
                             {"standard", "sum_groups"}, {"fa1", "fa1_bwd_sum_groups"}, {"fa2", "fa2_bwd_sum_groups"}});
    const auto trace = run_command(fa_sim("--algo fa2 --pass bwd --N 8 --d 4 --heads 4 --kv-heads 2 --trace"));
    CHECK(trace.exit_code == 0);
    CHECK(trace.out.find("== kernel fa2_bwd_sum_groups") != std::string::npos);
    CHECK(trace.out.find("K/V head 1: max |dV - dV_exact|") != std::string::npos);
    CHECK(trace.out.find("DIFFERS") == std::string::npos);
    expect_usage_error("--algo torch_math --pass bwd --heads 4 --kv-heads 2", "--kv-heads 2 (grouped-query attention) is not modelled");
}

// ---- Decoding: FlashDecoding, grouped-query attention, sweeps over the cache length ----

TEST_CASE("a decode step with grouped-query attention: the issue's command runs split and combine kernels", "[cli][decode]") {
    const auto r = run_command(fa_sim("--algo flash_decoding --N 1 --Nk 65536 --batch 1 --heads 32 --kv-heads 8 --d 128"));
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("B=1 H=32 KV=8 N=1 Nk=65536 d=128") != std::string::npos);
    CHECK(r.out.find("Kernel flash_decoding_split") != std::string::npos);
    CHECK(r.out.find("Kernel flash_decoding_combine") != std::string::npos);
    CHECK(r.out.find("4 query heads per K/V head") != std::string::npos);
    CHECK(r.out.find("heuristic picks") != std::string::npos);
    CHECK(r.out.find("O_partial") != std::string::npos);
}

TEST_CASE("algo all on a decode shape lists FlashDecoding beside FA2, and only algorithms that share K/V heads (not PyTorch's "
          "math backend)", "[cli][decode]") {
    const auto gqa = run_command(fa_sim("--algo all --N 1 --Nk 65536 --heads 32 --kv-heads 8 --d 128 --json"));
    REQUIRE(gqa.exit_code == 0);
    const nlohmann::json doc = nlohmann::json::parse(gqa.out);
    std::set<std::string> algos;
    for (const auto& r : doc.at("algorithms")) algos.insert(r.at("algo").get<std::string>());
    CHECK(algos == std::set<std::string>{"standard", "tiled", "fa1", "fa2", "flash_decoding"});
    // Training shapes (N = Nk) keep the forward comparison of the papers.
    const auto training = run_command(fa_sim("--algo all --N 1024 --json"));
    REQUIRE(training.exit_code == 0);
    CHECK(training.out.find("flash_decoding") == std::string::npos);
}

TEST_CASE("sweep over Nk: one row per cache length, N fixed, FlashDecoding's time growing with the cache", "[cli][decode][sweep]") {
    const auto r = run_command(fa_sim("--algo all --sweep Nk=1024:262144 --N 1 --heads 32 --kv-heads 8 --d 128 --csv"));
    REQUIRE(r.exit_code == 0);
    // header, 9 lengths x 5 algorithms: standard, tiled, fa1, fa2 and flash_decoding take grouped K/V heads
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1 + 9 * 5);
    const auto text = run_command(fa_sim("--algo all --sweep Nk=1024:4096 --N 1 --heads 32 --kv-heads 8 --d 128"));
    REQUIRE(text.exit_code == 0);
    CHECK(text.out.find("sweep over Nk") != std::string::npos);
    CHECK(text.out.find("fa2  flash_decoding") != std::string::npos);  // columns as wide as their names
}

TEST_CASE("bad decode options are refused on one line with a fix", "[cli][decode][errors]") {
    expect_usage_error("--kv-heads 5 --heads 32", "--kv-heads 5 does not divide --heads 32");
    expect_usage_error("--algo torch_math --kv-heads 8 --heads 32", "not modelled for torch_math");
    expect_usage_error("--algo flash_decoding --causal --N 8 --Nk 4", "N = 8 > Nk = 4");
    expect_usage_error("--algo flash_decoding --kv-splits 0", "--kv-splits 0");
    expect_usage_error("--algo flash_decoding --N 1 --Nk 1024 --d 128 --kv-splits 100", "--kv-splits 100 is out of range");
    expect_usage_error("--algo fa2 --kv-splits 3", "does not apply to fa2");
    expect_usage_error("--algo all --sweep Nk=1024:4096 --N 1 --plot /tmp/fa-sim-never-written", "--sweep Nk=1024:4096 was combined with --plot");
    expect_usage_error("--sweep K=1:4", "--sweep parameter 'K'");
}

// ---- Hardening (issue 25): no crash on any input, every refusal on one line ----

namespace {

std::string temp_path(const std::string& name) {
    return "/tmp/fasim_cli_" + std::to_string(::getpid()) + "_" + name;
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A valid GPU file (the A100 preset), as JSON to edit.
nlohmann::json preset_json() {
    return nlohmann::json::parse(slurp(std::string(FASIM_SOURCE_DIR) + "/sim/gpu/presets/A100-SXM4-40GB.json"), nullptr, true,
                                 /*ignore_comments=*/true);
}

}  // namespace

TEST_CASE("deeply nested JSON is refused before anything recurses over it", "[cli][errors][hardening]") {
    const std::string deep = temp_path("deep.json");
    write_text(deep, std::string(100000, '[') + std::string(100000, ']'));
    expect_usage_error("--gpu-file " + deep, "nests objects and arrays more than 64 deep");
    const std::string deep_measured = temp_path("deep_measured.json");
    write_text(deep_measured, "{\"schema_version\": 1, \"gpu\": \"x\", \"results\": " + std::string(100000, '[') +
                                  std::string(100000, ']') + "}");
    const std::string dir = temp_path("deep_plots");
    std::filesystem::create_directories(dir);
    expect_usage_error("--plot " + dir + " --N 512 --measured " + deep_measured, "nests objects and arrays more than 64 deep");
    expect_usage_error("--plot " + dir + " --N 512 --measured " + deep, "nests objects and arrays more than 64 deep");
    std::filesystem::remove_all(dir);
    std::filesystem::remove(deep);
    std::filesystem::remove(deep_measured);
}

TEST_CASE("a measured rate far below the datasheet is refused, not turned into an infinite time", "[cli][errors][hardening]") {
    for (const char* key : {"hbm_bandwidth_bytes_per_s", "mma_sync_fp16_flops_per_s", "fp32_flops_per_s", "tensor_fp16_flops_per_s",
                            "l2_requests_per_s"})
        for (const char* value : {"5e-324", "1e-300"}) {
            CAPTURE(key, value);
            nlohmann::json g = preset_json();
            g["measured"] = {{key, nlohmann::json::parse(value)}, {"source", "a test"}};  // (std::stod refuses subnormals)
            const std::string path = temp_path("tiny.json");
            write_text(path, g.dump());
            expect_usage_error("--gpu-file " + path, "\"measured." + std::string(key) + "\" = " + value);
            expect_usage_error("--gpu-file " + path, "0.1 to 1.5x the datasheet");
            std::filesystem::remove(path);
        }
}

TEST_CASE("plot and measured paths: over-long paths, symlink loops and missing files are refused with exit code 2", "[cli][errors][hardening]") {
    const std::string dir = temp_path("paths");
    std::filesystem::create_directories(dir);
    const std::string too_long = dir + "/" + std::string(300, 'a');
    const std::string loop = dir + "/loop1";
    std::filesystem::create_symlink(dir + "/loop2", loop);
    std::filesystem::create_symlink(loop, dir + "/loop2");
    expect_usage_error("--plot " + too_long + " --N 512", "File name too long");
    expect_usage_error("--plot " + loop + " --N 512", "Too many levels of symbolic links");
    expect_usage_error("--plot " + dir + " --N 512 --measured " + too_long, "File name too long");
    expect_usage_error("--plot " + dir + " --N 512 --measured " + loop, "Too many levels of symbolic links");
    // A missing --measured file is an error now (it was a note and exit code 0).
    expect_usage_error("--plot " + dir + " --N 512 --measured /nonexistent.json", "/nonexistent.json does not exist");
    expect_usage_error("--plot " + dir + " --N 512 --measured /dev/zero", "is not a regular file");
    std::filesystem::remove_all(dir);
}

TEST_CASE("control characters in values are escaped: every error stays on one line", "[cli][errors][hardening]") {
    // /bin/sh (dash) has no $'...': printf makes the newline.
    expect_usage_error("--algo \"$(printf 'fa2\\nx')\"", "--algo 'fa2\\nx'");
    expect_usage_error("--gpu \"$(printf 'H1\\03300')\"", "H1\\x1b00");
    expect_usage_error("--N \"$(printf '1\\r2')\"", "'1\\r2'");
    // A JSON key with a newline (written \n in the file) and a measured file's string with a bell.
    nlohmann::json g = preset_json();
    g["sm\ncount"] = 1;
    const std::string gpu = temp_path("key.json");
    write_text(gpu, g.dump());
    expect_usage_error("--gpu-file " + gpu, "\"sm\\ncount\"");
    const std::string measured = temp_path("bell.json");
    write_text(measured, R"({"schema_version": 1, "gpu": "x", "results": [{"algo": "k", "sim_algo": "fa2\u0007"}]})");
    const std::string dir = temp_path("bell_plots");
    std::filesystem::create_directories(dir);
    expect_usage_error("--plot " + dir + " --N 512 --measured " + measured, "fa2\\x07");
    std::filesystem::remove_all(dir);
    std::filesystem::remove(gpu);
    std::filesystem::remove(measured);
}

TEST_CASE("plot checks its directory before simulating, with a fix that fits", "[cli][errors][hardening]") {
    const auto start = std::chrono::steady_clock::now();
    const auto r = run_command(fa_sim("--plot /proc --algo all"));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CAPTURE(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("/proc") != std::string::npos);
    CHECK(r.err.find("chmod") == std::string::npos);  // nobody can chmod /proc into accepting files
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(seconds < 10);  // before any simulation (all of them take about 20 s)
}

TEST_CASE("a bare --plot creates its default folder", "[cli][plot]") {
    const std::string dir = temp_path("bare");
    std::filesystem::create_directories(dir);
    const auto r = run_command("cd " + dir + " && " + fa_sim("--plot --algo fa2 --N 512"));
    CAPTURE(r.err);
    CHECK(r.exit_code == 0);
    CHECK(std::filesystem::is_regular_file(dir + "/fa-sim-plots/roofline.svg"));
    CHECK(r.out.find("wrote fa-sim-plots/roofline.svg") != std::string::npos);
    std::filesystem::remove_all(dir);
}

TEST_CASE("a directory moved while the figures are written: exit code 2, no temporary file left, nothing listed", "[cli][plot][hardening]") {
    const std::string base = temp_path("moved");
    std::filesystem::create_directories(base + "/bin");
    std::filesystem::create_directories(base + "/out");
    // A PNG converter that moves the output directory away while it "converts".
    write_text(base + "/bin/rsvg-convert", "#!/bin/sh\n[ -d " + base + "/out ] && mv " + base + "/out " + base +
                                               "/moved\nfor a in \"$@\"; do case \"$a\" in --output=*) o=\"${a#--output=}\";; esac; done\n"
                                               "printf PNG > \"$o\"\n");
    std::filesystem::permissions(base + "/bin/rsvg-convert", std::filesystem::perms::owner_all);
    const auto r = run_command("PATH=" + base + "/bin:/usr/bin:/bin " + fa_sim("--plot " + base + "/out --algo fa2 --N 512"));
    CAPTURE(r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err.find("is gone after it was written") != std::string::npos);
    std::size_t leftovers = 0;
    for (const auto& e : std::filesystem::directory_iterator(base + "/moved"))
        leftovers += e.path().filename().string().find(".tmp-") != std::string::npos ? 1 : 0;
    CHECK(leftovers == 0);
    std::filesystem::remove_all(base);
}

TEST_CASE("after a failed PNG conversion only the files written are listed, and old PNGs are not left beside new SVGs", "[cli][plot][hardening]") {
    const std::string base = temp_path("pngfail");
    std::filesystem::create_directories(base + "/bin");
    std::filesystem::create_directories(base + "/out");
    write_text(base + "/out/roofline.png", "an old PNG");
    write_text(base + "/bin/rsvg-convert", "#!/bin/sh\necho broken >&2\nexit 3\n");
    std::filesystem::permissions(base + "/bin/rsvg-convert", std::filesystem::perms::owner_all);
    const auto r = run_command("PATH=" + base + "/bin:/usr/bin:/bin " + fa_sim("--plot " + base + "/out --algo fa2 --N 512"));
    CAPTURE(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find(".png") == std::string::npos);
    CHECK(r.out.find("wrote " + base + "/out/roofline.svg") != std::string::npos);
    CHECK(r.err.find("only SVG written") != std::string::npos);
    CHECK(!std::filesystem::exists(base + "/out/roofline.png"));
    std::filesystem::remove_all(base);
}

TEST_CASE("a report that cannot be written is an error: > /dev/full", "[cli][errors][hardening]") {
    for (const char* args : {"--N 512", "--algo all --N 512 --json", "--help", "--list-gpus"}) {
        CAPTURE(args);
        const int status = std::system((fa_sim(args) + " > /dev/full 2>/dev/null").c_str());
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 2);
    }
    const auto r = run_command("( " + fa_sim("--N 512") + " > /dev/full )");
    CHECK(r.err.find("fa-sim: error: writing standard output failed") == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

// ---- issue 23, the command line: type names, lists, case, --plot's folder, --version ----

TEST_CASE("help names the type of every numeric option", "[cli][help]") {
    const auto r = run_command(fa_sim("--help"));
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("TEXT") == std::string::npos);
    for (const char* s : {"--N INT", "--Nk INT", "--d INT", "--heads INT", "--batch INT", "--kv-heads INT", "--Br INT", "--Bc INT",
                          "--q-splits INT", "--kv-splits INT", "--registers INT", "--seed INT", "--algo ALGO[,ALGO...]",
                          "--dtype DTYPE", "--gpu-file FILE", "--plot [DIR]", "--sweep N=FROM:TO", "--version"})
        CHECK(r.out.find(s) != std::string::npos);
}

TEST_CASE("algo takes a comma-separated list, and ids are case-insensitive", "[cli][algo]") {
    const auto list = run_command(fa_sim("--algo fa2,fa1 --N 1024 --json"));
    REQUIRE(list.exit_code == 0);
    const auto algos = nlohmann::json::parse(list.out).at("algorithms");
    REQUIRE(algos.size() == 2);
    CHECK(algos[0].at("algo") == "fa2");
    CHECK(algos[1].at("algo") == "fa1");
    const auto upper = run_command(fa_sim("--algo FA2 --dtype FP16 --pass FWD --matmul TILED --N 1024 --json"));
    REQUIRE(upper.exit_code == 0);
    const auto lower = run_command(fa_sim("--algo fa2 --dtype fp16 --N 1024 --json"));
    CHECK(upper.out == lower.out);
    CHECK(run_command(fa_sim("--algo Standard,TILED --N 512 --csv")).exit_code == 0);
    CHECK(run_command(fa_sim("--kernel FA2_TC --gpu h200 --N 1024")).exit_code == 0);
    CHECK(run_command(fa_sim("--algo fa2 --sweep n=512:1024 --csv")).exit_code == 0);
    CHECK(run_command(fa_sim("--algo FA2_BWD --N 512")).exit_code == 0);
    expect_usage_error("--algo fa2,", "has an empty name");
    expect_usage_error("--algo fa2,fa9", "--algo 'fa9' is not an algorithm");
    expect_usage_error("--algo all,fa2", "lists all beside other algorithms");
    expect_usage_error("--algo fa2,fa2_bwd", "lists the backward pass fa2_bwd");
    expect_usage_error("--algo fa2,fa1 --trace --N 8", "--trace was combined");
}

TEST_CASE("version prints the project version and the git commit", "[cli][version]") {
    const auto r = run_command(fa_sim("--version"));
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.rfind("fa-sim ", 0) == 0);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
    // project(fa_sim VERSION x.y.z) in CMakeLists.txt.
    const std::string cmake = slurp(std::string(FASIM_SOURCE_DIR) + "/CMakeLists.txt");
    const auto at = cmake.find("project(fa_sim VERSION ");
    REQUIRE(at != std::string::npos);
    const std::string version = cmake.substr(at + 23, cmake.find(' ', at + 23) - at - 23);
    CHECK(r.out.rfind("fa-sim " + version, 0) == 0);
    if (std::filesystem::exists(std::string(FASIM_SOURCE_DIR) + "/.git")) CHECK(r.out.find("(git ") != std::string::npos);
}

TEST_CASE("the lesson executables: --version, a checked standard output, no notebook temporary file left", "[cli][lessons][hardening]") {
    const std::string lesson = std::string(FASIM_BINARY_DIR) + "/lessons/lesson-05";
    if (!std::filesystem::exists(lesson)) {
        WARN("lessons not built; skipped");
        return;
    }
    const auto v = run_command(lesson + " --version");
    CHECK(v.exit_code == 0);
    CHECK(v.out.rfind("lesson-05 ", 0) == 0);
    CHECK(v.out.substr(10) == run_command(fa_sim("--version")).out.substr(7));  // the same version text as fa-sim's
    const auto full = run_command("( " + lesson + " --only 1 > /dev/full )");
    CHECK(full.exit_code == 2);
    CHECK(full.err.rfind("lesson-05: error: writing standard output failed", 0) == 0);
    CHECK(std::count(full.err.begin(), full.err.end(), '\n') == 1);
    // Export into a directory that exists but refuses the file name: one line, nothing left behind.
    const std::string dir = temp_path("nb");
    std::filesystem::create_directories(dir);
    const auto bad = run_command(lesson + " --export-notebook " + dir + "/" + std::string(300, 'n') + ".ipynb");
    CAPTURE(bad.err);
    CHECK(bad.exit_code == 2);
    CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
    const auto ok = run_command(lesson + " --export-notebook " + dir + "/x.ipynb");
    CHECK(ok.exit_code == 0);
    std::size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        ++files;
        CHECK(e.path().filename() == "x.ipynb");
    }
    CHECK(files == 1);
    std::filesystem::remove_all(dir);
}

TEST_CASE("long kernels: the time table keeps its columns apart, and a schedule past the budget says how exact it is",
          "[cli][report]") {
    // PyTorch's math backend at an odd length: its row kernels' rows never fall into a repeating schedule, so
    // the blocks past the scheduler's budget are spread evenly (model/block_scheduler.hpp); its times run to
    // hundreds of ms, wider than the table's 7 characters.
    const auto text = run_command(fa_sim("--algo torch_math --N 300007"));
    REQUIRE(text.exit_code == 0);
    std::istringstream lines(text.out);
    std::string line;
    int rows = 0;
    bool in_table = false;
    while (std::getline(lines, line)) {
        if (line.find("kernel (ms)") != std::string::npos) {
            in_table = true;
            continue;
        }
        if (!in_table || line.rfind("  ", 0) != 0 || line.size() < 3 || line[2] == ' ') continue;  // a kernel's row
        if (line.find("Legend") != std::string::npos) break;
        std::istringstream fields(line);
        std::vector<std::string> f{std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>()};
        CAPTURE(line);
        CHECK(f.size() == 11);  // the kernel and ten times
        ++rows;
    }
    CHECK(rows >= 10);
    CHECK(text.out.find("sched is within") != std::string::npos);
    const auto json_run = run_command(fa_sim("--algo torch_math --N 300007 --json"));
    REQUIRE(json_run.exit_code == 0);
    const auto doc = nlohmann::json::parse(json_run.out);
    int spread = 0;
    for (const auto& k : doc.at("algorithms").at(0).at("kernels")) {
        const double bound = k.at("time").at("schedule_bound_s"), sched = k.at("time").at("schedule_s");
        CHECK(bound >= 0);
        CHECK(bound <= sched / 20000);
        spread += bound > 0;
    }
    CHECK(spread >= 3);
}
