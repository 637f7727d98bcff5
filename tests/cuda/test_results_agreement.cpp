// The simulator against the committed measurements of a real GPU (cuda/results/):
// a change to the model that breaks agreement with hardware fails here, on any
// machine, GPU or not. What is asserted is what agrees today (see
// cuda/results/README.md for what does not, and by how much).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

#include "gpu/gpu_catalog.hpp"
#include "model/simulation.hpp"

using namespace fasim;
using nlohmann::json;

namespace {

const std::string kRun = std::string(FASIM_SOURCE_DIR) + "/cuda/results/2026-11-22-h200/";

json load(const std::string& file) {
    std::ifstream in(kRun + file);
    REQUIRE(in.good());
    return json::parse(in);
}

// The simulator's view of one fa-validate result: the same problem, tiles and GPU,
// every product on the CUDA cores (as fa-sim's kernels compute).
AlgorithmResult predict(const json& r, const GpuSpec& gpu) {
    const std::string algo = r.at("algo");
    AttentionProblem p;
    p.batch = r.at("batch");
    p.heads = r.at("heads");
    p.N = r.at("N");
    p.Nk = r.at("Nk");
    p.d = r.at("d");
    p.dtype = *parse_dtype(r.at("dtype").get<std::string>());
    p.causal = r.at("causal");
    TileRequest req;
    Algo a = Algo::standard;
    if (algo == "standard_naive") req.matmul = MatmulMode::naive;
    else if (algo == "tiled" || algo == "fa1" || algo == "fa2") {
        a = *parse_algo(algo);
        const json& main = r.at("launches").back();
        req.Br = main.at("Br").get<std::int64_t>();
        req.Bc = main.at("Bc").get<std::int64_t>();
    }
    ModelOptions model;
    model.tensor_cores = false;
    return simulate(a, p, gpu, req, model);
}

double ratio(double predicted, double measured) { return predicted / measured; }

}  // namespace

TEST_CASE("DRAM reads match the H200's counters within 10% where the L2 model claims them", "[hardware][dram]") {
    const json doc = load("validate_ncu.json");
    const GpuSpec gpu = find_gpu_preset(doc.at("gpu_preset"));
    int checked = 0;
    for (const json& r : doc.at("results")) {
        const std::string algo = r.at("algo");
        const int N = r.at("N");
        // fa1 at N <= 4096: 16 heads' Q and O (48 MB at 4096) fit the 60 MiB L2 by LRU, but the
        // hardware re-reads part of them (README: L2 is two partitions). Not claimed.
        if (!r.contains("ncu") || algo == "standard_naive" || (algo == "fa1" && N < 8192)) continue;
        CAPTURE(algo, N);
        const AlgorithmResult p = predict(r, gpu);
        const json& m = r.at("ncu").at("measured");
        CHECK(ratio(static_cast<double>(p.dram.read_bytes()), m.at("dram_read_bytes")) == Approx(1.0).epsilon(0.10));
        ++checked;
    }
    CHECK(checked == 10);
}

TEST_CASE("L2 requests match the counters within 10% for kernels whose loads are not coalesced by L2", "[hardware][l2]") {
    // fa2 and tiled are excluded: Hopper's L2 request coalescer merges the identical K/V requests
    // that their concurrent blocks issue in lockstep (README), so L2 sees about a third of them.
    const json doc = load("validate_ncu.json");
    const GpuSpec gpu = find_gpu_preset(doc.at("gpu_preset"));
    int checked = 0;
    for (const json& r : doc.at("results")) {
        const std::string algo = r.at("algo");
        if (!r.contains("ncu") || algo == "fa2" || algo == "tiled") continue;
        CAPTURE(algo, r.at("N").get<int>());
        const AlgorithmResult p = predict(r, gpu);
        const json& m = r.at("ncu").at("measured");
        CHECK(ratio(static_cast<double>(p.l2.read_bytes()), m.at("l2_read_bytes")) == Approx(1.0).epsilon(0.10));
        ++checked;
    }
    CHECK(checked == 9);
}

TEST_CASE("L2 writes match the counters within 10% for the flash kernels", "[hardware][l2]") {
    const json doc = load("validate_ncu.json");
    const GpuSpec gpu = find_gpu_preset(doc.at("gpu_preset"));
    for (const json& r : doc.at("results")) {
        const std::string algo = r.at("algo");
        if (!r.contains("ncu") || (algo != "fa1" && algo != "fa2" && algo != "tiled")) continue;
        CAPTURE(algo, r.at("N").get<int>());
        const AlgorithmResult p = predict(r, gpu);
        CHECK(ratio(static_cast<double>(p.l2.write_bytes()), r.at("ncu").at("measured").at("l2_write_bytes")) ==
              Approx(1.0).epsilon(0.10));
    }
}

TEST_CASE("predicted time of cuBLAS-based standard attention is within 25% at N >= 2048", "[hardware][time]") {
    const json doc = load("validate_fp32.json");
    const GpuSpec gpu = find_gpu_preset(doc.at("gpu_preset"));
    int checked = 0;
    for (const json& r : doc.at("results")) {
        if (r.at("algo") != "standard_cublas" || r.at("N").get<int>() < 2048) continue;
        CAPTURE(r.at("N").get<int>(), r.at("d").get<int>(), r.at("causal").get<bool>());
        CHECK(ratio(predict(r, gpu).time_s, r.at("measured_s")) == Approx(1.0).epsilon(0.25));
        ++checked;
    }
    CHECK(checked == 16);
}

TEST_CASE("measured and predicted agree that FA2 beats tiled beats FA1 (fp32, CUDA cores)", "[hardware][order]") {
    const json doc = load("validate_fp32.json");
    const GpuSpec gpu = find_gpu_preset(doc.at("gpu_preset"));
    std::map<std::string, std::map<std::string, std::pair<double, double>>> by_config;
    for (const json& r : doc.at("results")) {
        if (!r.contains("measured_s") || r.at("N").get<int>() < 2048) continue;
        const std::string algo = r.at("algo");
        if (algo != "fa1" && algo != "fa2" && algo != "tiled") continue;
        const std::string key = std::to_string(r.at("N").get<int>()) + " d" + std::to_string(r.at("d").get<int>()) +
                                (r.at("causal").get<bool>() ? " causal" : "");
        by_config[key][algo] = {r.at("measured_s").get<double>(), predict(r, gpu).time_s};
    }
    int checked = 0;
    for (const auto& [key, v] : by_config) {
        if (v.size() != 3) continue;  // fa1 at d=128 (kernel tiles the model does not hold: README)
        CAPTURE(key);
        CHECK(v.at("fa2").first < v.at("tiled").first);
        CHECK(v.at("tiled").first < v.at("fa1").first);
        CHECK(v.at("fa2").second < v.at("tiled").second);
        CHECK(v.at("tiled").second < v.at("fa1").second);
        ++checked;
    }
    CHECK(checked == 8);
}
