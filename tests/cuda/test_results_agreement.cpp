// The simulator against the committed measurements of a real GPU (cuda/results/):
// a change to the model that breaks agreement with hardware fails here, on any
// machine, GPU or not. What is asserted is what agrees today (see
// cuda/results/README.md for what does not, and by how much).
// Six runs on one H200. The first (2026-11-22) timed the fp32 grid; the second (-b) read the
// counters with write-back and SM-side L2 sectors and timed the tensor-core FA2; the third (-c)
// re-ran the fp16/bf16 grid after FA1's running O moved to fp32; the fourth (2026-11-23) added the
// tensor-core FA1 (fa1_tc) and profiled cuBLAS; the fifth (-23-h200-b) had the leaner softmax. The
// sixth (2026-11-25) ran every step again with the kernels as they are now (fa2_tc with one V buffer
// and three blocks per SM at d=128), recorded each kernel's registers, and profiled both tensor-core
// kernels and PyTorch's FA2 at d=64 and 128: most checks read it. The seventh (-25-h200-b) profiled
// the CUDA-core kernels at d=64 and 128 after the lane model (shared-memory wavefronts, executed FLOPs).
// The eighth (-c) profiled the naive GEMMs in fp32; the ninth (-d) measured the L2's request rate and
// timed and profiled the naive GEMM in fp16/bf16.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>
#include <vector>

#include "gpu/gpu_catalog.hpp"
#include "kernels/tile_rules.hpp"
#include "model/kernel_setup.hpp"
#include "model/simulation.hpp"

using namespace fasim;
using nlohmann::json;

namespace {

const std::string kResults = std::string(FASIM_SOURCE_DIR) + "/cuda/results/";
const std::string kRunA = kResults + "2026-11-22-h200/";
const std::string kRunB = kResults + "2026-11-22-h200-b/";
const std::string kRunC = kResults + "2026-11-22-h200-c/";
const std::string kRunD = kResults + "2026-11-23-h200/";
const std::string kRunF = kResults + "2026-11-25-h200/";
const std::string kRunG = kResults + "2026-11-25-h200-b/";
const std::string kRunH = kResults + "2026-11-25-h200-c/";
const std::string kRunI = kResults + "2026-11-25-h200-d/";
const std::string kRunBwd = kResults + "2026-11-25-h100-b/";  // the backward kernels, on an H100
const std::string kRunDecode = kResults + "2026-11-25-h100-decode/";  // decode shapes, on an H100
const std::string kRunCalibrated = kResults + "2026-11-25-h100-c/";   // fa-calibrate, then decode shapes, on an H100

json load(const std::string& path) {
    std::ifstream in(path);
    REQUIRE(in.good());
    return json::parse(in);
}

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    REQUIRE(in.good());
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// sanitize.sh's summary of one run: memcheck, racecheck and synccheck found nothing.
void check_sanitizer_clean(const std::string& summary) {
    CHECK(summary.find("memcheck: exit 0  ========= ERROR SUMMARY: 0 errors") != std::string::npos);
    CHECK(summary.find("RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)") != std::string::npos);
    CHECK(summary.find("synccheck: exit 0  ========= ERROR SUMMARY: 0 errors") != std::string::npos);
}

// The simulator's view of one fa-validate result: the same problem, tiles and GPU, the kernel
// modelled as fa-validate models it (model/kernel_setup.hpp). counted_smem: a block holds the shared memory
// its tile program counts, not what the kernel launched with. one_address_per_tile: how the kernel copied its
// tiles, where the run did not record it (an fa-validate older than the record, 2026-11-30-h200-tile-copies*).
AlgorithmResult predict(const json& r, const GpuSpec& gpu, bool counted_smem = false,
                        std::optional<bool> one_address_per_tile = std::nullopt) {
    AttentionProblem p;
    p.batch = r.at("batch");
    p.heads = r.at("heads");
    p.N = r.at("N");
    p.Nk = r.at("Nk");
    p.d = r.at("d");
    p.dtype = *parse_dtype(r.at("dtype").get<std::string>());
    p.causal = r.at("causal");
    if (r.contains("kv_heads")) p.kv_heads = r.at("kv_heads");
    const KernelVariant* k = find_kernel(r.at("algo").get<std::string>());
    REQUIRE(k);
    // PyTorch's kernels record no launches: the simulator's own tiles, the table's registers.
    KernelSetup s = kernel_setup(*k, p, gpu, measured_launch(r));
    if (counted_smem) s.tiles.launched_smem_bytes = 0;
    if (one_address_per_tile) s.tiles.one_address_per_tile = *one_address_per_tile;
    return simulate(*s.algorithm, p, gpu, s.tiles, s.options);
}

double ratio(double predicted, double measured) { return predicted / measured; }

// Measured times of one FA2-paper configuration of a run (fa-validate's and torch_sdpa.py's files),
// by (kernel, causal).
using PaperTimes = std::map<std::pair<std::string, bool>, double>;
PaperTimes paper_times(const std::string& run, int d, int N) {
    const std::string tag = "_d" + std::to_string(d) + "_N" + std::to_string(N) + ".json";
    PaperTimes t;
    for (const std::string& file : {"paper" + tag, "paper_torch" + tag}) {
        const json doc = load(run + file);
        for (const json& r : doc.at("results"))
            if (r.contains("measured_s"))
                t[{r.at("algo").get<std::string>(), r.at("causal").get<bool>()}] = r.at("measured_s").get<double>();
    }
    return t;
}

// fa1 at N = 4096 is left out of the DRAM checks (README): its 16 heads' Q and O fit the 60 MiB L2 by
// LRU while the hardware re-reads part of them (L2 is two partitions, not one LRU).
bool dram_claimed(const std::string& algo, int N) { return !(algo == "fa1" && N == 4096); }

// Calls check(result, predicted / measured time) for every measured result at N >= 2048 of the given
// kernels (all when empty), with the configuration captured for the failure message.
template <class Check>
void for_each_timed_result(const json& doc, const GpuSpec& gpu, const std::vector<std::string>& kernels, Check&& check) {
    for (const json& r : doc.at("results")) {
        const std::string algo = r.at("algo");
        if (!kernels.empty() && std::find(kernels.begin(), kernels.end(), algo) == kernels.end()) continue;
        if (!r.contains("measured_s") || r.at("N").get<int>() < 2048) continue;
        CAPTURE(algo, r.at("N").get<int>(), r.at("d").get<int>(), r.at("dtype").get<std::string>(), r.at("causal").get<bool>());
        check(r, ratio(predict(r, gpu).time_s, r.at("measured_s")));
    }
}

// Checks the predicted time of every measured result at N >= 2048 of the given kernels (all when
// empty) within 25% of the measured one; returns how many were checked per kernel.
std::map<std::string, int> check_time_within_25_percent(const json& doc, const GpuSpec& gpu,
                                                        const std::vector<std::string>& kernels = {}) {
    std::map<std::string, int> checked;
    for_each_timed_result(doc, gpu, kernels, [&](const json& r, double rt) {
        CHECK(rt == Approx(1.0).epsilon(0.25));
        ++checked[r.at("algo").get<std::string>()];
    });
    return checked;
}

}  // namespace

TEST_CASE("DRAM reads and writes (with the write-back of dirty lines) match the H200's counters within 10%",
          "[hardware][dram]") {
    const json doc = load(kRunF + "validate_ncu.json");
    const GpuSpec gpu = find_gpu_preset(doc.at("gpu_preset"));
    int checked = 0;
    for (const json& r : doc.at("results")) {
        const std::string algo = r.at("algo");
        const int N = r.at("N");
        if (!r.contains("ncu") || !dram_claimed(algo, N)) continue;
        CAPTURE(algo, N);
        const AlgorithmResult p = predict(r, gpu);
        const json& m = r.at("ncu").at("measured");
        CHECK(ratio(static_cast<double>(p.dram.read_bytes()), m.at("dram_read_bytes")) == Approx(1.0).epsilon(0.10));
        // fa1 at N=2048 writes 9.9 MB (most of it written back after the kernels): the model's 8.7 MB
        // is 12% low (README; 11% in the second run), outside the 10%; every other write is within it.
        if (!(algo == "fa1" && N == 2048))
            CHECK(ratio(static_cast<double>(p.dram.write_bytes()), m.at("dram_write_bytes")) == Approx(1.0).epsilon(0.10));
        ++checked;
    }
    CHECK(checked == 14);
}

TEST_CASE("L2 reads at the SMs match the counters within 10%, and Hopper's coalescer cuts fa2's slice reads", "[hardware][l2]") {
    const json doc = load(kRunF + "validate_ncu.json");
    const GpuSpec gpu = find_gpu_preset(doc.at("gpu_preset"));
    int checked = 0;
    for (const json& r : doc.at("results")) {
        const std::string algo = r.at("algo");
        if (!r.contains("ncu")) continue;
        CAPTURE(algo, r.at("N").get<int>());
        const AlgorithmResult p = predict(r, gpu);
        const json& m = r.at("ncu").at("measured");
        CHECK(ratio(static_cast<double>(p.l2.read_bytes()), m.at("l2_read_bytes")) == Approx(1.0).epsilon(0.10));
        // The L2 request coalescer merges the K/V reads that fa2's concurrent blocks issue together:
        // the slices see at most half of what the SMs asked for.
        if (algo == "fa2") CHECK(m.at("l2_slice_read_bytes").get<double>() < 0.5 * m.at("l2_read_bytes").get<double>());
        ++checked;
    }
    CHECK(checked == 15);
}

TEST_CASE("L2 writes match the counters within 10% for the flash kernels", "[hardware][l2]") {
    const json doc = load(kRunF + "validate_ncu.json");
    const GpuSpec gpu = find_gpu_preset(doc.at("gpu_preset"));
    int checked = 0;
    for (const json& r : doc.at("results")) {
        const std::string algo = r.at("algo");
        if (!r.contains("ncu") || (algo != "fa1" && algo != "fa2" && algo != "tiled")) continue;
        CAPTURE(algo, r.at("N").get<int>());
        const AlgorithmResult p = predict(r, gpu);
        CHECK(ratio(static_cast<double>(p.l2.write_bytes()), r.at("ncu").at("measured").at("l2_write_bytes")) ==
              Approx(1.0).epsilon(0.10));
        ++checked;
    }
    CHECK(checked == 9);
}

TEST_CASE("predicted time is within 25% at N >= 2048 for cuBLAS, fa-sim's tiled GEMMs and its fp32 flash kernels",
          "[hardware][time]") {
    // The flash kernels hold one 4-warp block per SM: the model's issue term (a lone warp issues in
    // 37% of cycles) is what brings them within 25%. The tiled GEMMs are bound by shared-memory
    // wavefronts: each lane loads its own 4x4 micro-tile's operands (kernels/cuda_core_products.hpp);
    // counted by the bytes they fill, they were 32-39% fast. FA1's lanes compute whole micro-tiles: at d=128
    // its 114 x 114 tiles cost 26% more than their FLOPs (cuda_core_products.hpp); counted as the tile's
    // FLOPs, it was 22-33% fast.
    const json doc = load(kRunF + "validate_fp32.json");
    auto checked = check_time_within_25_percent(doc, find_gpu_preset(doc.at("gpu_preset")));
    CHECK(checked["standard_cublas"] == 16);
    CHECK(checked["standard_tiled"] == 16);
    CHECK(checked["fa2"] == 16);
    CHECK(checked["tiled"] == 16);
    CHECK(checked["fa1"] == 16);
}

TEST_CASE("standard attention on the naive GEMM: within 25% at d=64, up to 36% slow at d=128 (N >= 2048)",
          "[hardware][time]") {
    // Every warp load of the naive GEMM touches 1 to 16 lines, one or two sectors each, and the L2 slices
    // look each line's request up on its own: 144 G/s on the H200 (peak-rates' L2 probe under ncu, ninth
    // run). Timed by its sectors at the L2 bandwidth it was 46-51% fast (fp32) and 74-81% (fp16). The
    // model counts the requests the SMs send; Hopper's request coalescer merges 20-32% of them before the
    // slices (eighth and ninth runs, N=4096, d=64 and 128), so the model is slow, never fast. At d=64 the
    // kernels also run a little below the slices' rate (116-142 G/s), at d=128 at it (137-147 G/s): the
    // error is larger at d=128.
    const json fp32 = load(kRunF + "validate_fp32_naive.json");
    const json half = load(kRunI + "validate_half_naive.json");
    const GpuSpec gpu = find_gpu_preset(fp32.at("gpu_preset"));
    int within_25 = 0, slow_at_d128 = 0;
    for (const json* doc : {&fp32, &half}) {
        for_each_timed_result(*doc, gpu, {"standard_naive"}, [&](const json& r, double rt) {
            if (r.at("d").get<int>() == 64) {
                CHECK(rt == Approx(1.0).epsilon(0.25));
                ++within_25;
            } else {
                CHECK(rt >= 1.0);
                CHECK(rt <= 1.40);
                ++slow_at_d128;
            }
        });
    }
    CHECK(within_25 == 12);
    CHECK(slow_at_d128 == 12);
}

TEST_CASE("fa-sim's CUDA-core tiled GEMMs, tiled and FA1 kernels are predicted within 25% in fp16/bf16 too (N >= 2048)",
          "[hardware][time]") {
    // Third run's grid. The GEMM stages fp16/bf16 operands as fp32, so its shared memory is fp32's. The
    // tiled kernel at d=64 holds one block per SM because its Q, K and S rows are padded (119.5 KB a
    // block, LaneGrid::padded_rows); unpadded, the model fitted two and was 9-32% fast. FA2 at d=64 is
    // 11-26% slow (README): not asserted.
    const json doc = load(kRunC + "validate_half.json");
    auto checked = check_time_within_25_percent(doc, find_gpu_preset(doc.at("gpu_preset")), {"standard_tiled", "tiled", "fa1"});
    CHECK(checked["standard_tiled"] == 32);
    CHECK(checked["tiled"] == 32);
    CHECK(checked["fa1"] == 32);
}

TEST_CASE("measured and predicted rank standard (cuBLAS and tiled GEMMs), FA2, tiled and FA1 alike (fp32, N >= 2048)",
          "[hardware][order]") {
    const json doc = load(kRunF + "validate_fp32.json");
    const GpuSpec gpu = find_gpu_preset(doc.at("gpu_preset"));
    std::map<std::string, std::map<std::string, std::pair<double, double>>> by_config;
    for (const json& r : doc.at("results")) {
        if (!r.contains("measured_s") || r.at("N").get<int>() < 2048) continue;
        const std::string algo = r.at("algo");
        if (algo != "standard_cublas" && algo != "standard_tiled" && algo != "fa1" && algo != "fa2" && algo != "tiled")
            continue;
        const std::string key = std::to_string(r.at("N").get<int>()) + " d" + std::to_string(r.at("d").get<int>()) +
                                (r.at("causal").get<bool>() ? " causal" : "");
        by_config[key][algo] = {r.at("measured_s").get<double>(), predict(r, gpu).time_s};
    }
    int pairs = 0;
    std::vector<std::string> swapped;
    const char* algos[] = {"standard_cublas", "standard_tiled", "fa2", "tiled", "fa1"};
    for (const auto& [key, v] : by_config) {
        REQUIRE(v.size() == 5);
        for (const char* a : algos)
            for (const char* b : algos) {
                const auto [ma, pa] = v.at(a);
                const auto [mb, pb] = v.at(b);
                if (ma >= mb) continue;
                ++pairs;
                if (pa > pb) swapped.push_back(key + ": " + a + " < " + b);
            }
    }
    CHECK(pairs == 16 * 10);
    // Where the order differs (README): causal FA2 and tiled, which skip the masked half, against standard
    // attention on long sequences, where they are close: FA2 against cuBLAS 13% and 23% apart at d = 64
    // (predicted +19..+22% and -9..-15% off) and tied (0.3%) at N = 16384, d = 128; tiled against the tiled
    // GEMMs at d = 64, measured 2% and 12% apart (tiled predicted 19-20% slow, the GEMMs 5-12% fast).
    CHECK(swapped == std::vector<std::string>{"16384 d128 causal: fa2 < standard_cublas", "16384 d64 causal: fa2 < standard_cublas",
                                              "16384 d64 causal: tiled < standard_tiled", "8192 d64 causal: fa2 < standard_cublas",
                                              "8192 d64 causal: tiled < standard_tiled"});
}

TEST_CASE("papers' direction on the H200 (FA2 paper's setting, fp16): FA2 beats FA1, tensor-core FA2 beats standard",
          "[hardware][papers]") {
    int checked = 0;
    for (int d : {64, 128}) {
        for (int N : {2048, 4096, 8192, 16384}) {
            const PaperTimes t = paper_times(kRunF, d, N);
            for (bool causal : {false, true}) {
                CAPTURE(d, N, causal);
                auto at = [&](const char* a) { return t.at({a, causal}); };
                CHECK(at("fa2") < at("fa1"));                   // same CUDA-core arithmetic, FA2's parallelism
                CHECK(at("fa2_tc") < at("fa1"));
                CHECK(at("torch_flash") < at("standard_cublas"));
                CHECK(at("fa2_tc") < at("standard_cublas"));  // d=128: 1.04-1.22x, causal 1.9-2.0x measured
                if (d == 64) CHECK(at("fa2_tc") * 2.0 < at("standard_cublas"));  // 2.2-4.3x measured
                if (t.count({"torch_math", causal})) CHECK(at("torch_flash") * 10 < at("torch_math"));
                ++checked;
            }
        }
    }
    CHECK(checked == 16);
}

TEST_CASE("every fp16/bf16 kernel meets the accuracy rule (third run: FA1's running O in fp32)", "[hardware][accuracy]") {
    // The second run failed one: FA1 bf16 N=8192 d=128, 1.39e-3 against 1.17e-3 allowed, when FA1 rounded
    // its O to bf16 on each of its Tc round trips through HBM.
    const json doc = load(kRunC + "validate_half.json");
    int failed = 0, tc = 0;
    for (const json& r : doc.at("results")) {
        if (!r.contains("accuracy")) continue;
        if (r.at("algo") == "fa2_tc") {
            ++tc;
            CHECK(r.at("accuracy").at("pass").get<bool>());
        }
        if (!r.at("accuracy").at("pass").get<bool>()) {
            ++failed;
            CAPTURE(r.at("algo").get<std::string>(), r.at("N").get<int>(), r.at("d").get<int>(), r.at("dtype").get<std::string>());
        }
    }
    CHECK(tc == 48);
    CHECK(failed == 0);
}

TEST_CASE("predicted time is within 25% at N >= 2048 for the tensor-core kernels (fa-sim's FA1 and FA2, PyTorch's FA2)",
          "[hardware][time]") {
    // The model times mma.sync kernels by the instructions their warps issue at a latency-bound rate (each
    // warp ready in 17% of cycles, from six ncu profiles: 14-20%) when that exceeds the pipes' work. Sixth run:
    // fa2_tc +4..+20% (d=64), -20..-9% (d=128); fa1_tc -16..-6% and -24..-19%; PyTorch's FA2 -16..+10%.
    // With the pipes alone (no issue term) fa1_tc was predicted 45-54% fast.
    const GpuSpec gpu = find_gpu_preset("H200");
    std::map<std::string, int> checked;
    std::vector<std::string> files{"validate_half.json"};
    for (int d : {64, 128})
        for (int N : {2048, 4096, 8192, 16384})
            for (const char* kind : {"paper", "paper_torch"})
                files.push_back(std::string(kind) + "_d" + std::to_string(d) + "_N" + std::to_string(N) + ".json");
    for (const std::string& file : files) {
        const json doc = load(kRunF + file);
        REQUIRE(doc.at("gpu").get<std::string>().find("H200") != std::string::npos);  // torch_sdpa.py names no preset
        CAPTURE(file);
        for (const auto& [algo, n] : check_time_within_25_percent(doc, gpu, {"fa1_tc", "fa2_tc", "torch_flash"}))
            checked[algo] += n;
    }
    CHECK(checked["fa1_tc"] == 32 + 16);
    CHECK(checked["fa2_tc"] == 32 + 16);
    CHECK(checked["torch_flash"] == 16);
}

TEST_CASE("the tensor-core FA1 meets the accuracy rule on the whole fp16/bf16 grid and in the paper's setting",
          "[hardware][accuracy]") {
    int checked = 0;
    std::vector<std::string> files{"validate_half.json"};
    for (int d : {64, 128})
        for (int N : {2048, 4096, 8192, 16384}) files.push_back("paper_d" + std::to_string(d) + "_N" + std::to_string(N) + ".json");
    for (const std::string& file : files) {
        const json doc = load(kRunF + file);
        for (const json& r : doc.at("results")) {
            if (!r.contains("accuracy")) continue;
            CAPTURE(file, r.at("algo").get<std::string>(), r.at("N").get<int>(), r.at("d").get<int>(), r.at("dtype").get<std::string>());
            CHECK(r.at("accuracy").at("pass").get<bool>());
            checked += r.at("algo") == "fa1_tc";
        }
    }
    CHECK(checked == 48 + 8 * 2);
}

TEST_CASE("papers' direction with both tensor-core kernels (FA2 paper's setting, fp16): FA2 about 2x FA1, FA1 far "
          "faster than PyTorch's standard attention",
          "[hardware][papers]") {
    // The FlashAttention-2 paper (section 4.1) reports FA2 about 2x faster than FA1; measured here 1.9-2.2x.
    // Against standard attention with cuBLAS GEMMs fa1_tc is 1.14-2.19x faster at d=64 but 0.47-0.92x at
    // d=128 (README); against PyTorch's math backend, the papers' baseline, 4.3-19x where that ran.
    int checked = 0;
    for (int d : {64, 128}) {
        for (int N : {2048, 4096, 8192, 16384}) {
            const PaperTimes t = paper_times(kRunF, d, N);
            for (bool causal : {false, true}) {
                CAPTURE(d, N, causal);
                auto at = [&](const char* a) { return t.at({a, causal}); };
                CHECK(at("fa2_tc") * 1.7 < at("fa1_tc"));
                CHECK(at("fa1_tc") < at("fa1"));  // tensor cores against the CUDA-core FA1
                if (d == 64) CHECK(at("fa1_tc") * 1.1 < at("standard_cublas"));
                if (t.count({"torch_math", causal})) CHECK(at("fa1_tc") * 4 < at("torch_math"));
                ++checked;
            }
        }
    }
    CHECK(checked == 16);
}

namespace {

// The kernels of an `ncu --csv --page raw` file: column name -> value (thousands separators removed
// from numbers). cuda/scripts/profile_bottlenecks.sh writes these.
std::vector<std::map<std::string, std::string>> ncu_raw_kernels(const std::string& path) {
    std::ifstream in(path);
    REQUIRE(in.good());
    auto fields = [](const std::string& line) {
        std::vector<std::string> f;
        std::string cur;
        bool quoted = false;
        for (char ch : line) {
            if (ch == '"') quoted = !quoted;
            else if (ch == ',' && !quoted) f.push_back(std::move(cur)), cur.clear();
            else cur += ch;
        }
        f.push_back(cur);
        return f;
    };
    std::vector<std::string> header;
    std::vector<std::map<std::string, std::string>> kernels;
    for (std::string line; std::getline(in, line);) {
        const auto f = fields(line);
        if (header.empty()) {
            if (!f.empty() && f[0] == "ID") header = f;
            continue;
        }
        if (f.size() != header.size() || f[0].empty()) continue;  // the units row
        std::map<std::string, std::string> k;
        for (std::size_t i = 0; i < f.size(); ++i) k[header[i]] = f[i];
        kernels.push_back(std::move(k));
    }
    return kernels;
}

double ncu_number(const std::map<std::string, std::string>& k, const std::string& metric) {
    std::string digits;
    for (char c : k.at(metric))
        if (c != ',') digits += c;
    return std::stod(digits);
}

}  // namespace

TEST_CASE("cuBLAS's fp16 GEMMs: the library-tile model's L2 reads at the SMs and DRAM reads match ncu within 5%",
          "[hardware][l2][cublas]") {
    // ncu on the H200 (2026-11-23-h200/profile_cublas_fp16_d*, N=4096, B=2, H=8): cuBLAS runs S = QK^T with
    // 256x128 output tiles and O = PV with 256x128 (d=128) or 512x64 (d=64) tiles, 384-thread persistent
    // blocks. The model's 64x64 tiles read 2.7x (d=128) more operand bytes and predicted cuBLAS 11-47% slow.
    const GpuSpec gpu = find_gpu_preset("H200");
    for (int d : {64, 128}) {
        std::vector<std::map<std::string, std::string>> gemms;
        for (auto& k : ncu_raw_kernels(kRunD + "profile_cublas_fp16_d" + std::to_string(d) + "/raw_standard_cublas.csv"))
            if (k.at("Kernel Name").find("nvjet") != std::string::npos) gemms.push_back(std::move(k));
        REQUIRE(gemms.size() == 2);  // S = QK^T, then O = PV
        const json r = {{"batch", 2}, {"heads", 8}, {"N", 4096}, {"Nk", 4096}, {"d", d}, {"dtype", "fp16"},
                        {"causal", false}, {"algo", "standard_cublas"}};
        const AlgorithmResult sim = predict(r, gpu);
        REQUIRE(sim.kernels.size() == 3);
        const KernelRecord& qk = sim.kernels[0];
        const KernelRecord& pv = sim.kernels[2];
        CAPTURE(d);
        const double qk_l2 = ncu_number(gemms[0], "l1tex__m_xbar2l1tex_read_sectors.sum") * 32;
        const double pv_l2 = ncu_number(gemms[1], "l1tex__m_xbar2l1tex_read_sectors.sum") * 32;
        CHECK(ratio(static_cast<double>(qk.l2.read_bytes()), qk_l2) == Approx(1.0).epsilon(0.05));
        CHECK(ratio(static_cast<double>(pv.l2.read_bytes()), pv_l2) == Approx(1.0).epsilon(0.05));
        CHECK(ratio(static_cast<double>(pv.dram.read_bytes()), ncu_number(gemms[1], "dram__bytes_read.sum")) ==
              Approx(1.0).epsilon(0.05));
    }
}

TEST_CASE("the naive GEMM's L2 sectors and requests are each warp load's own: ncu's counts, exactly (fp32, fp16, d=64, 128)",
          "[hardware][l2]") {
    // N=4096, B=2, H=8: eighth run (fp32, d=64) and ninth run (the others). A warp is 2 x 16 threads; per
    // k it loads A at its 2 rows (2 lines, a sector each) and B at its 16 columns: 16 rows of K (16 lines,
    // a sector each) or 16 consecutive elements of a row of V (one line: 2 sectors in fp32, 1 in fp16).
    // Per block of 8 warps and k: 144 sectors and requests for S = QK^T; 32 sectors (fp32) or 24 (fp16)
    // and 24 requests for O = PV. The slices then see 68-80% of those requests: the coalescer merges
    // what the model counts, and that is the model's error on these kernels' time (README).
    const GpuSpec gpu = find_gpu_preset("H200");
    struct Profile {
        std::string dir;
        const char* dtype;
        int d;
    };
    const Profile runs[] = {{kRunH + "profile_fp32/", "fp32", 64},
                            {kRunI + "profile/", "fp16", 64},
                            {kRunI + "profile_d128_fp32/", "fp32", 128},
                            {kRunI + "profile_d128_fp16/", "fp16", 128}};
    for (const auto& [dir, dtype, d] : runs) {
        std::vector<std::map<std::string, std::string>> gemms;
        for (auto& k : ncu_raw_kernels(dir + "raw_standard_naive.csv"))
            if (k.at("Kernel Name").find("gemm_naive_kernel") != std::string::npos) gemms.push_back(std::move(k));
        REQUIRE(gemms.size() == 2);  // S = QK^T, then O = PV
        const json r = {{"batch", 2}, {"heads", 8}, {"N", 4096}, {"Nk", 4096}, {"d", d}, {"dtype", dtype},
                        {"causal", false}, {"algo", "standard_naive"}};
        const AlgorithmResult sim = predict(r, gpu);
        REQUIRE(sim.kernels.size() == 3);
        CAPTURE(dtype, d);
        for (const auto& [record, ncu] : {std::pair{&sim.kernels[0], &gemms[0]}, std::pair{&sim.kernels[2], &gemms[1]}}) {
            CAPTURE(record->desc.name);
            CHECK(record->l2.read_bytes() == static_cast<std::int64_t>(ncu_number(*ncu, "l1tex__m_xbar2l1tex_read_sectors.sum")) * 32);
            CHECK(record->l2_read_requests == static_cast<std::int64_t>(ncu_number(*ncu, "lrc__xbar2lrc_requests_op_read.sum")));
            const double at_slices = ncu_number(*ncu, "lts__t_requests_srcunit_tex_op_read.sum") / static_cast<double>(record->l2_read_requests);
            CHECK(at_slices > 0.65);
            CHECK(at_slices < 0.82);
        }
    }
}

TEST_CASE("mma.sync kernels: warp instructions and issue rate match ncu (fa-sim's FA1 and FA2 on the tensor cores, "
          "PyTorch's FA2)",
          "[hardware][issue]") {
    // Sixth run, profile/ (d=64) and profile_d128/: N=4096, B=2, H=8, fp16, non-causal. The per-operation
    // instruction costs (sim/kernels/issue_costs.hpp) were read off fa2_tc's SASS at d=64: there the count is
    // within 5%; elsewhere it is out of sample (fa1_tc 11-12% and fa2_tc at d=128 10% low: README).
    // PyTorch's FA2 issues 15-25% more instructions than the costs say (other code), so only its issue
    // rate is checked. The issue rate, 1 - (1 - 0.17)^(W R), is within 20% of ncu's issue-active for all six.
    struct Profiled {
        const char* config;  // profile_bottlenecks.sh's name, and what the kernel's name contains
        const char* kernel;
        const Algorithm& algo;
        std::int64_t Br, Bc, q_splits;  // the kernel's tiles (fixed in the kernel; 0: the simulator's own)
        double instructions_tolerance;  // 0: not compared
    };
    const Profiled kernels[] = {{"fa2_tc", "fa2_tc_forward", algorithm("fa2"), 64, 64, 0, 0.05},
                                {"fa1_tc", "fa1_tc_forward", algorithm("fa1"), 16, 0, 16, 0.15},
                                {"torch_flash", "flash_fwd", algorithm("fa2"), 0, 0, 0, 0}};
    const GpuSpec gpu = find_gpu_preset("H200");
    int checked = 0;
    for (int d : {64, 128}) {
        const std::string dir = kRunF + (d == 64 ? "profile/" : "profile_d128/");
        for (const Profiled& pk : kernels) {
            std::vector<std::map<std::string, std::string>> found;
            for (auto& k : ncu_raw_kernels(dir + "raw_" + pk.config + ".csv"))
                if (k.at("Kernel Name").find(pk.kernel) != std::string::npos) found.push_back(std::move(k));
            REQUIRE(found.size() == 1);
            const auto& ncu = found.front();
            TileRequest req;
            if (pk.Br > 0) req.Br = pk.Br;
            if (pk.algo.id == "fa1") req.Bc = d == 64 ? 256 : 128;  // fa1_tc: K/V tiles of 256 keys at d=64, 128 at d=128
            else if (pk.Bc > 0) req.Bc = pk.Bc;
            if (pk.q_splits > 0) req.q_splits = pk.q_splits;
            req.registers_per_thread = static_cast<int>(ncu_number(ncu, "launch__registers_per_thread"));
            AttentionProblem p;
            p.batch = 2;
            p.heads = 8;
            p.N = p.Nk = 4096;
            p.d = d;
            p.dtype = DType::fp16;
            const AlgorithmResult sim = simulate(pk.algo, p, gpu, req, {});
            const KernelRecord& k = sim.kernels.back();
            const KernelTiming& t = sim.timing.back();
            CAPTURE(pk.config, d);
            // Same launch: grid and block size as ncu saw them.
            int gx = 0, gy = 0, gz = 0;
            REQUIRE(std::sscanf(ncu.at("Grid Size").c_str(), "(%d, %d, %d)", &gx, &gy, &gz) == 3);
            CHECK(gx == k.desc.blocks_per_head);
            CHECK(static_cast<std::int64_t>(gy) * gz == k.desc.heads);
            int bx = 0, by = 0, bz = 0;
            REQUIRE(std::sscanf(ncu.at("Block Size").c_str(), "(%d, %d, %d)", &bx, &by, &bz) == 3);
            CHECK(bx * by * bz == 32 * k.desc.warps);
            if (pk.instructions_tolerance > 0) {
                const double tolerance = d == 64 ? pk.instructions_tolerance : 0.15;
                CHECK(ratio(static_cast<double>(k.warp_instructions), ncu_number(ncu, "smsp__inst_executed.sum")) ==
                      Approx(1.0).epsilon(tolerance));
            }
            const double issue_active = ncu_number(ncu, "smsp__issue_active.avg.pct_of_peak_sustained_active") / 100;
            CHECK(ratio(t.issue_fraction, issue_active) == Approx(1.0).epsilon(0.20));
            ++checked;
        }
    }
    CHECK(checked == 6);
}

TEST_CASE("cuBLAS standard attention (fp16/bf16, library tiles) is predicted within 25% at N >= 2048, grid and paper "
          "setting",
          "[hardware][time][cublas]") {
    // Fifth run: with the softmax at four elements per step (87% issue, near the copy bandwidth) the
    // prediction is 5-23% fast; the 64x64-tile model had been 11-47% slow at d=128.
    const GpuSpec gpu = find_gpu_preset("H200");
    int checked = 0;
    std::vector<std::string> files{"validate_half.json"};
    for (int d : {64, 128})
        for (int N : {2048, 4096, 8192, 16384}) files.push_back("paper_d" + std::to_string(d) + "_N" + std::to_string(N) + ".json");
    for (const std::string& file : files) {
        CAPTURE(file);
        checked += check_time_within_25_percent(load(kRunF + file), gpu, {"standard_cublas"})["standard_cublas"];
    }
    CHECK(checked == 32 + 16);
}

TEST_CASE("CUDA-core kernels: FFMAs and shared-memory wavefronts match ncu (fp32 tiled GEMMs, tiled, FA2 and FA1 at d = 64 and 128)",
          "[hardware][smem][flops]") {
    // Seventh run: ncu on the fp32 CUDA-core kernels, N=4096, B=2, H=8, d=64 (profile/) and d=128
    // (profile_d128/, out of sample: the rule was checked at d=64 first). kernels/cuda_core_products.hpp
    // says what a product's lanes do:
    // - they execute whole micro-tiles: one FFMA per multiply-add of lane_matmul_flops. ncu's FFMA
    //   count equals it for the GEMMs, tiled and FA2 (their tiles fill the lanes) and is within 4% for
    //   FA1, whose 114 x 114 tiles at d=128 execute 26% more than they hold (its softmax's FFMAs are
    //   counted by ncu too);
    // - each lane loads its own operands: l1tex__data_pipe_lsu_wavefronts_mem_shared, 128-byte passes of
    //   the shared-memory pipe. The model has 0.98 of them for the GEMMs (with their transposing copies'
    //   4-way bank conflicts), 0.81-0.82 for tiled and 0.76-0.78 for FA2 (their scattered score writes'
    //   conflicts are left out), where bytes / 128 gave 0.34-0.37. FA1's own layout (16-row chunks
    //   through its U buffer) is not modelled: 0.50 and 0.64, not asserted.
    struct Profiled {
        const char* config;  // profile_bottlenecks.sh's name
        const char* kernel;  // what the kernel's name contains
        const Algorithm& algo;
        std::size_t sim_kernel;       // index of the simulator's kernel
        std::int64_t Br, Bc, Br128, Bc128;  // the kernel's tiles at d=64 and d=128 (0: the simulator's)
        double wavefronts_tolerance;  // 0: not checked
    };
    const Profiled kernels[] = {{"standard_tiled", "gemm_tiled_kernel<float, 1>", algorithm("standard"), 0, 0, 0, 0, 0, 0.05},
                                {"standard_tiled", "gemm_tiled_kernel<float, 0>", algorithm("standard"), 2, 0, 0, 0, 0, 0.05},
                                {"tiled", "tiled_two_pass", algorithm("tiled"), 0, 128, 128, 128, 64, 0.25},
                                {"fa2", "fa2_forward", algorithm("fa2"), 0, 128, 128, 128, 64, 0.25},
                                {"fa1", "fa1_forward", algorithm("fa1"), 1, 64, 227, 114, 114, 0}};
    const GpuSpec gpu = find_gpu_preset("H200");
    ModelOptions cuda_cores;
    cuda_cores.tensor_cores = false;
    int checked = 0;
    for (int d : {64, 128})
        for (const Profiled& pk : kernels) {
            const std::string dir = kRunG + (d == 64 ? "profile/" : "profile_d128/");
            std::vector<std::map<std::string, std::string>> found;
            for (auto& k : ncu_raw_kernels(dir + "raw_" + pk.config + ".csv"))
                if (k.at("Kernel Name").find(pk.kernel) != std::string::npos) found.push_back(std::move(k));
            REQUIRE(found.size() == 1);
            TileRequest req;
            const std::int64_t Br = d == 64 ? pk.Br : pk.Br128, Bc = d == 64 ? pk.Bc : pk.Bc128;
            if (Br > 0) req.Br = Br, req.Bc = Bc;
            AttentionProblem p;
            p.batch = 2;
            p.heads = 8;
            p.N = p.Nk = 4096;
            p.d = d;
            p.dtype = DType::fp32;
            const AlgorithmResult sim = simulate(pk.algo, p, gpu, req, cuda_cores);
            const KernelRecord& k = sim.kernels.at(pk.sim_kernel);
            const double ffma = ncu_number(found.front(), "sm__sass_thread_inst_executed_op_ffma_pred_on.sum");
            const double wavefronts = ncu_number(found.front(), "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum");
            CAPTURE(pk.config, pk.kernel, d, k.lane_matmul_flops / 2, ffma, k.smem_wavefronts, wavefronts);
            CHECK(ratio(static_cast<double>(k.lane_matmul_flops) / 2, ffma) == Approx(1.0).epsilon(pk.algo.id == "fa1" ? 0.05 : 0.005));
            if (pk.wavefronts_tolerance > 0) {
                CHECK(ratio(static_cast<double>(k.smem_wavefronts), wavefronts) == Approx(1.0).epsilon(pk.wavefronts_tolerance));
                // The data bytes alone would say far fewer: the per-lane loads are the point.
                CHECK(static_cast<double>(k.smem_read + k.smem_write) / 128 < 0.5 * wavefronts);
            }
            ++checked;
        }
    CHECK(checked == 10);
}

TEST_CASE("CUDA-core FA2 and tiled hold the shared memory their kernels launch with (padded rows)", "[hardware][smem]") {
    // fa-validate records each launch's dynamic shared memory (smem_layouts.hpp: Q and K rows d + 16
    // bytes, S rows an odd number of 16-byte units, V unpadded). FA2's tile program holds exactly that;
    // tiled's two row vectors less (the kernel shares FA2's layout, whose rescale factors it does not
    // use in its second pass, and the tile program keeps the row max in registers).
    const GpuSpec gpu = find_gpu_preset("H200");
    std::map<std::string, int> checked;
    for (const std::string& file : {kRunF + "validate_fp32.json", kRunC + "validate_half.json"}) {
        const json doc = load(file);
        for (const json& r : doc.at("results")) {
            const std::string algo = r.at("algo");
            if (algo != "fa2" && algo != "tiled") continue;
            const std::int64_t launched = r.at("launches").back().at("dynamic_smem_bytes");
            const AlgorithmResult sim = predict(r, gpu, /*counted_smem=*/true);  // the tile program's own count
            CAPTURE(algo, r.at("N").get<int>(), r.at("d").get<int>(), r.at("dtype").get<std::string>());
            const std::int64_t unused = algo == "tiled" ? 8 * r.at("launches").back().at("Br").get<std::int64_t>() : 0;
            CHECK(sim.kernels.back().smem_bytes_per_block == launched - unused);
            // The prediction itself takes its occupancy from what the run launched with.
            CHECK(predict(r, gpu).kernels.back().smem_bytes_per_block == launched);
            ++checked[algo];
        }
    }
    CHECK(checked["fa2"] == 24 + 48);  // N = 512..16384, d = 64 and 128, causal or not; fp32, fp16 and bf16
    CHECK(checked["tiled"] == 24 + 48);
}

// ---- The backward pass (an H100: the card the model's constants were not read on) ----

TEST_CASE("the backward kernels meet the gradient rule on the H100: cuda-check's whole grid, and every timed "
          "configuration's sampled dQ rows",
          "[hardware][backward][accuracy]") {
    CHECK(read_text(kRunBwd + "bwd_check.txt").find("338 passed, 0 failed") != std::string::npos);
    int timed = 0;
    for (const char* file : {"validate_bwd_half.json", "validate_bwd_fp32.json", "validate_fwd_bwd.json"}) {
        const json doc = load(kRunBwd + file);
        REQUIRE(doc.at("gpu").get<std::string>().find("H100") != std::string::npos);
        for (const json& r : doc.at("results")) {
            CAPTURE(file, r.at("algo").get<std::string>(), r.at("N").get<int>(), r.at("d").get<int>());
            REQUIRE(r.contains("measured_s"));
            CHECK(r.at("accuracy").at("pass").get<bool>());
            ++timed;
        }
    }
    CHECK(timed == 120 + 16 + 8);
}

TEST_CASE("backward kernels on the H100 from 2k tokens: cuBLAS within 16%, fa2_bwd_tc within 10% by its step's rate "
          "measured on the H200 (held out: no H100 timing entered it), the CUDA-core FA2 within 15% at d=64 and 7-33% slow "
          "at d=128",
          "[hardware][backward][time]") {
    // The issue's target is 20% for every backward kernel. fa2_bwd_tc was -25..-13% here while the model took its issue
    // rate from the readiness law (1 - 0.83^n, read from forward kernels): its step, timed alone in its own shape on the
    // H200 (peak-rates --backward-step, 2026-12-01-h200-backward-step/), issues in 26% (d=64) and 22% (d=128) of cycles,
    // and the H100 has the same SM. The CUDA-core kernels run at the SGEMM rate, which the preset takes as Hopper's 0.76 of
    // the datasheet FP32 rate (the H200's cuBLAS; at the datasheet rate fa2_bwd was -29..-13% at d=64, cuBLAS fp32 -28%):
    // fa2_bwd -8..+14% at d=64 and +7..+32% at d=128 (1 block of 4 warps per SM at the lone forward warp's issue rate,
    // 37%, as on the H200).
    const GpuSpec gpu = find_gpu_preset("H100-SXM");
    std::map<std::string, int> checked, within_20;
    for (const char* file : {"validate_bwd_half.json", "validate_bwd_fp32.json"}) {
        const json doc = load(kRunBwd + file);
        for_each_timed_result(doc, gpu, {}, [&](const json& r, double rt) {
            const std::string algo = r.at("algo");
            // -15..+0% at d=64, -16..+15% at d=128 (fp32 at d=128 the slow end, +11..+15%).
            if (algo == "standard_cublas_bwd") CHECK(rt == Approx(1.0).epsilon(0.16));
            // -9..+6% at d=64, -8..+1% at d=128 (N=2048, one to two waves of 1 block per SM, the most fast).
            if (algo == "fa2_bwd_tc") CHECK(rt == Approx(1.0).epsilon(0.10));
            if (algo == "fa2_bwd") CHECK(rt == Approx(1.0).epsilon(r.at("d").get<int>() == 64 ? 0.15 : 0.33));
            ++checked[algo];
            within_20[algo] += std::abs(rt - 1.0) <= 0.20;
        });
    }
    CHECK(checked["standard_cublas_bwd"] == 32 + 8);
    CHECK(checked["fa2_bwd_tc"] == 32);
    CHECK(checked["fa2_bwd"] == 32 + 8);
    CHECK(within_20["fa2_bwd_tc"] == 32);
    CHECK(within_20["standard_cublas_bwd"] == 40);
    CHECK(within_20["fa2_bwd"] == 20 + 4);
}

TEST_CASE("tensor-core FA2 backward at 88-108% of PyTorch's at d=128 and N >= 4096 (the issue asks 70%), and a "
          "training step at N=4096 1.1-3.1x faster than with cuBLAS standard attention",
          "[hardware][backward][yardstick]") {
    std::map<std::tuple<int, int, std::string, bool>, double> ours, torch;
    const json half = load(kRunBwd + "validate_bwd_half.json"), pytorch = load(kRunBwd + "torch_bwd.json");
    const json training = load(kRunBwd + "validate_fwd_bwd.json");  // (a loop over load(...).at(...) would outlive it)
    for (const json& r : half.at("results"))
        if (r.at("algo").get<std::string>() == "fa2_bwd_tc")
            ours[{r.at("N").get<int>(), r.at("d").get<int>(), r.at("dtype").get<std::string>(), r.at("causal").get<bool>()}] =
                r.at("measured_s");
    for (const json& r : pytorch.at("results"))
        if (r.at("algo").get<std::string>() == "torch_flash_bwd")
            torch[{r.at("N").get<int>(), r.at("d").get<int>(), r.at("dtype").get<std::string>(), r.at("causal").get<bool>()}] =
                r.at("measured_s");
    int compared = 0;
    for (const auto& [key, t] : ours) {
        if (std::get<0>(key) < 4096 || std::get<1>(key) != 128) continue;
        CAPTURE(std::get<0>(key), std::get<2>(key), std::get<3>(key));
        REQUIRE(torch.count(key));
        CHECK(torch.at(key) / t >= 0.7);
        ++compared;
    }
    CHECK(compared == 12);
    // Training: the forward and backward kernels timed together.
    std::map<std::pair<std::string, std::pair<int, bool>>, double> step;
    for (const json& r : training.at("results"))
        step[{r.at("algo").get<std::string>(), {r.at("d").get<int>(), r.at("causal").get<bool>()}}] = r.at("measured_s");
    for (int d : {64, 128})
        for (bool causal : {false, true}) {
            CAPTURE(d, causal);
            const double speedup = step.at({"standard_cublas_bwd", {d, causal}}) / step.at({"fa2_bwd_tc", {d, causal}});
            CHECK(speedup > 1.05);
            if (d == 64) CHECK(speedup > 2.0);
        }
}


// ---- Decoding: one query row against a long K/V cache (an H100; the model's constants are its datasheet's) ----

namespace {
using DecodeShape = std::tuple<int, int, int>;  // batch, K/V heads, Nk
DecodeShape decode_shape(const json& r) { return {r.at("batch").get<int>(), r.at("kv_heads").get<int>(), r.at("Nk").get<int>()}; }
// K/V GB/s of PyTorch's fastest SDPA backend per decode shape (torch_sdpa.py's file; math left out).
std::map<DecodeShape, double> fastest_torch_kv_gbps(const json& torch) {
    std::map<DecodeShape, double> fastest;
    for (const json& r : torch.at("results"))
        if (r.contains("measured_s") && r.at("backend") != "math") {
            double& best = fastest[decode_shape(r)];
            best = std::max(best, r.at("kv_bytes").get<double>() / r.at("measured_s").get<double>() / 1e9);
        }
    return fastest;
}
}  // namespace

TEST_CASE("decode run: the split-KV kernel is exact and sanitizer-clean, every timed configuration accurate", "[hardware][decode][accuracy]") {
    CHECK(read_text(kRunDecode + "decode_check.txt").find("794 passed, 0 failed") != std::string::npos);
    check_sanitizer_clean(read_text(kRunDecode + "decode_sanitizer.txt"));
    const json doc = load(kRunDecode + "validate_decode.json");
    REQUIRE(doc.at("gpu").get<std::string>().find("H100") != std::string::npos);
    std::map<std::string, int> timed;
    for (const json& r : doc.at("results")) {
        if (!r.contains("measured_s")) continue;
        CAPTURE(r.at("algo").get<std::string>(), r.at("batch").get<int>(), r.at("kv_heads").get<int>(), r.at("Nk").get<int>());
        CHECK(r.at("accuracy").at("pass").get<bool>());
        ++timed[r.at("algo").get<std::string>()];
    }
    CHECK(timed["flash_decoding"] == 44);  // 45 shapes; batch 64 x 32 K/V heads x 128k keys needs 138 GB
    CHECK(timed["fa2_tc"] == 14);          // 32 K/V heads only: fa2_tc has no grouped kernel
}

TEST_CASE("decode run: K and V streamed at 80% of the copy bandwidth with 32 K/V heads, FA2 without a split 4x slower",
          "[hardware][decode][yardstick]") {
    const double copy = load(kRunDecode + "decode_copy.json").at("d2d_copy_bytes_per_s");
    const json doc = load(kRunDecode + "validate_decode.json");
    std::map<DecodeShape, double> fd, fa2;
    for (const json& r : doc.at("results")) {
        if (!r.contains("measured_s")) continue;
        const std::string algo = r.at("algo");
        (algo == "flash_decoding" ? fd : fa2)[decode_shape(r)] = r.at("measured_s");
        const double kv_bytes = r.at("kv_bytes");
        CHECK(r.at("kv_bandwidth_gbps").get<double>() * 1e9 == Approx(kv_bytes / r.at("measured_s").get<double>()).epsilon(1e-6));
        if (algo == "flash_decoding" && r.at("batch") == 1 && r.at("kv_heads") == 32 && r.at("Nk") >= 16384) {
            CAPTURE(r.at("Nk").get<int>());
            CHECK(kv_bytes / r.at("measured_s").get<double>() >= 0.8 * copy);
        }
    }
    for (int nk : {4096, 16384, 65536, 131072}) {
        CAPTURE(nk);
        CHECK(fa2.at({1, 32, nk}) / fd.at({1, 32, nk}) > 3.8);  // 32 blocks on 132 SMs against the splits
        CHECK(fa2.at({8, 32, nk}) / fd.at({8, 32, nk}) == Approx(1.0).epsilon(0.03));  // the grid fills the GPU
    }
    // PyTorch's fastest backend on the same shape: ours as fast or faster on 33 of 44, at most 7% slower on the rest.
    const json torch = load(kRunDecode + "torch_decode.json");
    std::map<DecodeShape, double> fastest;
    for (const json& r : torch.at("results"))
        if (r.contains("measured_s")) {
            const auto k = decode_shape(r);
            if (!fastest.count(k) || r.at("measured_s").get<double>() < fastest[k]) fastest[k] = r.at("measured_s");
        }
    int as_fast = 0;
    for (const auto& [shape, t] : fd) {
        REQUIRE(fastest.count(shape));
        CHECK(fastest.at(shape) / t > 0.93);
        as_fast += fastest.at(shape) >= t;
    }
    CHECK(as_fast == 33);
}

TEST_CASE("decode run: FA2 without a split and FlashDecoding predicted within 20%, but MQA's two-warp blocks at batch 1",
          "[hardware][decode][time]") {
    // The H100 preset's HBM is the datasheet's 3.35 TB/s; the card copies at 3.01 (decode_copy.txt), which
    // makes most predictions 11-18% fast. FA2 at batch 1: 32 blocks on 132 SMs, each with one query row, so
    // one warp of four computes (a whole 16-row mma fragment) on one scheduler (KernelExecution::warp_rows,
    // docs/model.md "Split-Q blocks with few rows"): 8% slow. Until the model knew that, it spread a 1-row
    // tile's work over the four warps and predicted these 46-51% fast. MQA at batch 1 packs the 32 query
    // heads as the rows of one tile: two computing warps per block, predicted -9..+34% (a lone warp
    // issues more often than the readiness measured on whole kernels says: docs/model.md). Since the
    // computing warps of the two blocks an SM holds sit on two schedulers (cuda/results/2026-11-28-h200-slots),
    // FlashDecoding is no longer issue-bound at batch 1 and 8 where the datasheet's DRAM rate makes it fast:
    // -21..-16% with one K/V head at batch 8 and with 8 at batch 1.
    //
    // Batch 64 x 32 heads (B*H = 2048) was over the simulator's batch*heads limit (1024) when the run was
    // made and first predicted with the limit at 65536: every configuration 11-26% fast on the preset, as
    // the datasheet bandwidth makes it (FlashDecoding 0.74-0.88, FA2 0.85-0.89: at batch 64 the grid fills
    // the SMs without a split).
    const GpuSpec gpu = find_gpu_preset("H100-SXM");
    const json doc = load(kRunDecode + "validate_decode.json");
    int fd_within_20 = 0, predicted = 0, predicted_64 = 0, fd_within_20_64 = 0;
    for (const json& r : doc.at("results")) {
        if (!r.contains("measured_s")) continue;
        REQUIRE(r.at("batch").get<int>() * r.at("heads").get<int>() <= ProblemLimits::max_batch_heads);
        const std::string algo = r.at("algo");
        CAPTURE(algo, r.at("batch").get<int>(), r.at("kv_heads").get<int>(), r.at("Nk").get<int>());
        const double rt = ratio(predict(r, gpu).time_s, r.at("measured_s"));
        if (r.at("batch") == 64) {
            ++predicted_64;
            CHECK(rt > 0.73);
            CHECK(rt < 0.90);
            if (algo == "flash_decoding") fd_within_20_64 += std::abs(rt - 1) <= 0.20;
            else CHECK(rt > 0.85);
            continue;
        }
        ++predicted;
        if (algo == "flash_decoding") {
            const bool mqa_batch_1 = r.at("batch") == 1 && r.at("kv_heads") == 1;
            // (+37% at most since a lone block's fill and drain is counted: BlockTerms::fill, 2026-11-29)
            if (mqa_batch_1) CHECK(rt == Approx(1.0).epsilon(0.40));
            else {
                CHECK(rt > 0.79);
                CHECK(rt < 1.20);
            }
            fd_within_20 += std::abs(rt - 1) <= 0.20;
        } else if (r.at("batch") == 8) {
            CHECK(rt == Approx(1.0).epsilon(0.20));
        } else {
            CHECK(rt > 1.0);
            CHECK(rt < 1.10);
        }
    }
    CHECK(predicted == 30 + 10);
    // All but MQA at batch 1 with 1k keys (+26%: a 9 us kernel whose launches the model overstates, and whose
    // blocks, alone on their SMs, also wait for their first tiles) and at batch 8 with 16k and 64k keys (-21%,
    // -20%). 26 before the fill and drain; 25 until the model counted FlashDecoding's key groups (90b06f9: all
    // four warps of a few-row block compute), when MQA at batch 1 with 64k and 128k keys came in from +25% and
    // +37% to -2% and +2%. This run's kernel did not have the key groups yet: its two computing warps issued
    // more often than the model's readiness says, which made up for it (docs/model.md). 29 since each split's
    // partial outputs have L2 tiles of their own (exec/kv_head_units.hpp, 2026-11-30; the splits' partials had
    // shared one head's tiles, so most of their writes looked like re-stores of dirty lines): MQA at batch 8 with
    // 16k and 64k keys from -21% and -20% to -18% and -19%; every grouped shape of this run moved towards the
    // measurement.
    CHECK(fd_within_20 == 29);
    CHECK(predicted_64 == 14 + 4);
    CHECK(fd_within_20_64 == 13);  // all but MHA with a 1k cache (0.74)
}

namespace {
// A decode run's predictions written before it, by (kernel, batch, K/V heads, Nk).
std::map<std::tuple<std::string, int, int, int>, double> decode_predictions(const json& doc) {
    std::map<std::tuple<std::string, int, int, int>, double> p;
    for (const json& r : doc.at("results"))
        if (r.contains("predicted_s"))
            p[{r.at("algo").get<std::string>(), r.at("batch").get<int>(), r.at("kv_heads").get<int>(), r.at("Nk").get<int>()}] =
                r.at("predicted_s");
    return p;
}

// Calls check(result, algo, batch, K/V heads, Nk, measured seconds) for every timed result of a decode run, its
// configuration captured and its accuracy checked.
template <class Check>
void for_each_timed_decode(const json& doc, Check&& check) {
    for (const json& r : doc.at("results")) {
        if (!r.contains("measured_s")) continue;
        const std::string algo = r.at("algo");
        const int batch = r.at("batch"), kv = r.at("kv_heads"), nk = r.at("Nk");
        CAPTURE(algo, batch, kv, nk);
        CHECK(r.at("accuracy").at("pass").get<bool>());
        check(r, algo, batch, kv, nk, r.at("measured_s").get<double>());
    }
}

// The decode step's files every run has: cuda-check (794 configurations until cuda-check's decode shapes grew to
// 810), compute-sanitizer, the copy bandwidth.
void check_decode_run_files(const std::string& run, double copy_bytes_per_s, int checked = 794) {
    CHECK(read_text(run + "decode_check.txt").find(std::to_string(checked) + " passed, 0 failed") != std::string::npos);
    check_sanitizer_clean(read_text(run + "decode_sanitizer.txt"));
    CHECK(load(run + "decode_copy.json").at("d2d_copy_bytes_per_s").get<double>() == Approx(copy_bytes_per_s).epsilon(0.01));
}
}  // namespace

TEST_CASE("decode run on the H200: K and V at 82-98% of its copy bandwidth with 32 K/V heads, FlashDecoding predicted "
          "18-26% slow before the run and within 20% on 42 of 45 once co-resident blocks' computing warps use two schedulers",
          "[hardware][decode][time]") {
    // cuda/results/2026-11-28-h200-decode: the first decode run on an H200, one call, the predictions committed
    // before it (0ef7fb4, the H200 preset). The card copies at 4.22 TB/s. The H200 preset holds this card's
    // measured copy rate, and before the run FlashDecoding came out slow where the grid is small (+22..+26% at
    // batch 1 with 32 or 8 K/V heads from 4k keys) and at batch 64 (+18..+20%): 35 of 45 within 20%. The
    // model put both blocks' computing warps on one scheduler; the warp-slot probe (2026-11-28-h200-slots) shows
    // them on two, and with that (669dbb0) 42 of 45 are within 20%: the misses are MQA at batch 1 with 64k and
    // 128k keys (+29%, +44%: two computing warps that issue more often than the model's readiness) and MQA at
    // batch 64 with 1k keys (-21%). fa2_tc at batch 8 moved from -4..+5% to -17..-10% (its lone warp waits for V
    // each step: cuda/results/README.md).
    const std::string run = kResults + "2026-11-28-h200-decode/";
    check_decode_run_files(run, 4.22e12);
    const double copy = load(run + "decode_copy.json").at("d2d_copy_bytes_per_s");
    const json doc = load(run + "validate_decode.json");
    REQUIRE(doc.at("gpu").get<std::string>().find("H200") != std::string::npos);
    const json before = load(run + "predicted_before_decode.json");
    CHECK(before.at("simulator_commit").get<std::string>().rfind("0ef7fb4", 0) == 0);
    const auto predicted_before = decode_predictions(before);
    const GpuSpec gpu = find_gpu_preset("H200");
    int fd = 0, fd_within_20 = 0, fd_within_20_before = 0, fa2 = 0;
    for_each_timed_decode(doc, [&](const json& r, const std::string& algo, int batch, int kv, int nk, double measured) {
        // The run's own predictions are those written before it: nothing was refitted between them.
        CHECK(r.at("predicted_s").get<double>() == Approx(predicted_before.at({algo, batch, kv, nk})).epsilon(1e-6));
        const double rt = ratio(predict(r, gpu).time_s, measured);
        if (algo == "fa2_tc") {
            ++fa2;
            CHECK(std::abs(rt - 1) <= 0.18);
            return;
        }
        ++fd;
        fd_within_20 += std::abs(rt - 1) <= 0.20;
        fd_within_20_before += std::abs(ratio(predicted_before.at({algo, batch, kv, nk}), measured) - 1) <= 0.20;
        CHECK(rt > 0.78);
        // 1k keys at batch 1 or 8 with few K/V heads: 10 us kernels of one round, where a lone block's fill and drain
        // (BlockTerms::fill, 2026-11-29) adds a microsecond to what the launches already overstate: up to +18%.
        CHECK(rt < (batch == 1 && kv == 1 ? 1.50 : nk == 1024 && batch <= 8 ? 1.20 : 1.10));
        if (batch == 1 && kv == 32 && nk >= 16384) CHECK(r.at("kv_bytes").get<double>() / measured >= 0.8 * copy);
    });
    CHECK(fd == 45);
    CHECK(fa2 == 15);
    CHECK(fd_within_20_before == 35);
    // 42 before the fill and drain (MQA at batch 1 with 1k and 4k keys left the 20%); 40 until the model counted
    // FlashDecoding's key groups (90b06f9), which brought MQA at batch 1 with 4k, 64k and 128k keys from +25%,
    // +35% and +48% to +16%, +5% and +9%, though this run's kernel had no key groups (see the H100 run's test).
    // 44 since each split's partials have L2 tiles of their own (2026-11-30): batch 64, one K/V head, 1k keys
    // from -21% to -17%.
    CHECK(fd_within_20 == 44);
}

TEST_CASE("decode shapes no run had timed (H200): FlashDecoding predicted before the run within 15% on all 27, the "
          "previous model 23 of 27 within 20%, fa2_tc at batch 16 27% fast",
          "[hardware][decode][time]") {
    // cuda/results/2026-11-28-h200-decode-b: batch 2, 4, 16; Nk 2k, 8k, 32k; 32, 8 or 4 K/V heads, predicted by
    // the model with the warp-slot change (669dbb0) and without it (e96ec4c), both committed before the run.
    // fa2_tc at batch 16 (512 blocks, 3 per SM, two rounds): each block's one computing warp waits for V every
    // step, so the second round's blocks stream at their own rate while the model takes DRAM over the whole
    // kernel: -26..-27% (cuda/results/README.md); the previous model was within 7% there for a wrong reason.
    const std::string run = kResults + "2026-11-28-h200-decode-b/";
    check_decode_run_files(run, 4.23e12);
    const json doc = load(run + "validate_decode.json");
    REQUIRE(doc.at("gpu").get<std::string>().find("H200") != std::string::npos);
    const json before = load(run + "predicted_before_decode.json");
    const json previous = load(run + "predicted_before_decode_previous_model.json");
    CHECK(before.at("simulator_commit").get<std::string>().rfind("669dbb0", 0) == 0);
    CHECK(previous.at("simulator_commit").get<std::string>().rfind("e96ec4c", 0) == 0);
    const auto predicted_before = decode_predictions(before), predicted_previous = decode_predictions(previous);
    std::map<DecodeShape, double> fastest_torch;
    const json torch = load(run + "torch_decode.json");  // (a loop over load(...).at(...) would outlive it)
    for (const json& r : torch.at("results"))
        if (r.contains("measured_s")) {
            const auto k = decode_shape(r);
            if (!fastest_torch.count(k) || r.at("measured_s").get<double>() < fastest_torch[k]) fastest_torch[k] = r.at("measured_s");
        }
    const GpuSpec gpu = find_gpu_preset("H200");
    int fd = 0, fd_within_15 = 0, previous_within_20 = 0, fa2 = 0, as_fast_as_torch = 0;
    double abs_error = 0;
    for_each_timed_decode(doc, [&](const json& r, const std::string& algo, int batch, int kv, int nk, double measured) {
        const double written = predicted_before.at({algo, batch, kv, nk});
        CHECK(r.at("predicted_s").get<double>() == Approx(written).epsilon(1e-6));  // the run's own: the same numbers
        // and today's, but for a lone block's fill and drain (BlockTerms::fill, 2026-11-29): fa2_tc at batch 2 and 4,
        // 64 and 128 blocks alone on their SMs, +0.1..+1.2%; and FlashDecoding's key groups (90b06f9): batch 4, 8 K/V
        // heads, 2k keys, the one shape here that was issue-bound, -1.1%; and FlashDecoding's partials with L2
        // tiles of their own per split (exec/kv_head_units.hpp, 2026-11-30): every shape with 8 or 4 K/V heads,
        // +0.05..+2.4%
        const bool moved = (algo == "fa2_tc" && batch <= 4) || (algo == "flash_decoding" && batch == 4 && kv == 8 && nk == 2048);
        const bool partials_moved = algo == "flash_decoding" && kv < 32;
        // And fa2_tc at batch 16 since one computing warp's instructions bound its blocks (BlockTerms::chain,
        // 2026-11-30): the second round's blocks no longer stream at the whole kernel's DRAM rate, +8..+9%.
        const bool chain_moved = algo == "fa2_tc" && batch == 16;
        const double today = predict(r, gpu).time_s;
        CHECK(today == Approx(written).epsilon(chain_moved ? 0.1 : partials_moved ? 0.025 : moved ? 0.013 : 1e-6));
        const double rt = ratio(written, measured);
        if (algo == "fa2_tc") {
            ++fa2;
            if (batch == 16) {
                CHECK(rt > 0.72);
                CHECK(rt < 0.75);
                CHECK(ratio(today, measured) > 0.78);  // today's: -20..-21%
                CHECK(ratio(today, measured) < 0.81);
            } else {
                CHECK(std::abs(rt - 1) <= 0.07);
            }
            return;
        }
        ++fd;
        fd_within_15 += std::abs(rt - 1) <= 0.15;
        abs_error += std::abs(rt - 1);
        previous_within_20 += std::abs(ratio(predicted_previous.at({algo, batch, kv, nk}), measured) - 1) <= 0.20;
        as_fast_as_torch += fastest_torch.at(decode_shape(r)) >= measured;
    });
    CHECK(fd == 27);
    CHECK(fa2 == 9);
    CHECK(fd_within_15 == 27);
    CHECK(abs_error / fd == Approx(0.056).margin(0.001));
    CHECK(previous_within_20 == 23);
    CHECK(as_fast_as_torch == 26);
}

namespace {
// The K/V GB/s of every flash_decoding row of a printed fa-validate --grid decode table (the passes of the prefetch
// experiment that ran out of time printed their rows but wrote no JSON): "flash_decoding B=.. H=.. KV=.. Nk=.. d=..
// dtype ok measured predicted error splits GB/s bound".
std::map<DecodeShape, double> printed_kv_gbps(const std::string& path) {
    std::map<DecodeShape, double> out;
    std::istringstream text(read_text(path));
    for (std::string line; std::getline(text, line);) {
        if (line.rfind("flash_decoding B=", 0) != 0) continue;
        int batch = 0, heads = 0, kv = 0, nk = 0;
        REQUIRE(std::sscanf(line.c_str(), "flash_decoding B=%d H=%d KV=%d Nk=%d", &batch, &heads, &kv, &nk) == 4);
        std::istringstream fields(line);
        std::vector<std::string> f{std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>()};
        REQUIRE(f.size() > 12);
        CHECK(f[7] == "ok");
        out[{batch, kv, nk}] = std::stod(f[12]);
    }
    return out;
}
}  // namespace

TEST_CASE("decode on the H200: asking L2 for each copy's whole 128-byte line streams K/V 1.9-3.3% faster where the split "
          "kernel reads at 4 TB/s or more, 256 bytes no faster",
          "[hardware][decode][time]") {
    // cuda/results/2026-11-29-h200-decode-prefetch: the split kernel's K/V copies with no L2 prefetch, .L2::128B and
    // .L2::256B, the decode grid timed twice per variant in one call (0 256 128 128 256 0), PyTorch's SDPA beside.
    const std::string run = kResults + "2026-11-29-h200-decode-prefetch/";
    CHECK(read_text(run + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    for (const char* v : {"128", "256"}) {
        CHECK(read_text(run + "check_pf" + v + ".txt").find("794 passed, 0 failed") != std::string::npos);
        check_sanitizer_clean(read_text(run + "sanitizer_pf" + v + ".txt"));
    }
    CHECK(load(run + "copy.json").at("d2d_copy_bytes_per_s").get<double>() == Approx(4.228e12).epsilon(0.001));
    std::map<std::string, std::map<DecodeShape, double>> pass;
    for (const char* name : {"pass1_pf0", "pass2_pf256", "pass3_pf128", "pass4_pf128", "pass5_pf256", "pass6_pf0"})
        pass[name] = printed_kv_gbps(run + "validate_" + name + ".txt");
    CHECK(pass["pass6_pf0"].size() == 45);
    CHECK(pass["pass3_pf128"].size() == 44);  // the timeout stopped it before batch 64, one K/V head, 128k keys
    // The two passes that finished wrote their JSON: the same rows, every one accurate.
    for (const char* name : {"pass5_pf256", "pass6_pf0"}) {
        const json doc = load(run + "validate_" + name + ".json");
        int rows = 0;
        for (const json& r : doc.at("results")) {
            ++rows;
            CHECK(r.at("accuracy").at("pass").get<bool>());
            CHECK(r.at("kv_bandwidth_gbps").get<double>() == Approx(pass[name].at(decode_shape(r))).margin(0.5));
        }
        CHECK(rows == 45);
    }
    int streaming = 0;
    for (const auto& [shape, none1] : pass["pass1_pf0"]) {
        const double none_lo = std::min(none1, pass["pass6_pf0"].at(shape)), none_hi = std::max(none1, pass["pass6_pf0"].at(shape));
        if (none_lo < 4000 || !pass["pass3_pf128"].count(shape)) continue;
        ++streaming;
        const double l128 = std::min(pass["pass3_pf128"].at(shape), pass["pass4_pf128"].at(shape));
        CHECK(l128 / none_hi - 1 > 0.019);  // the slower 128-byte pass against the faster pass without
        CHECK(l128 / none_hi - 1 < 0.034);
        const double l256 = std::max(pass["pass2_pf256"].at(shape), pass["pass5_pf256"].at(shape));
        CHECK(std::abs(l256 / none_lo - 1) < 0.008);
    }
    CHECK(streaming == 15);
    // Against PyTorch's fastest backend of the same call (cuDNN or flash; math left out), each variant's mean pass:
    // still slower on 11 shapes with the 128-byte prefetch (13 without), by at most 5.0% (7.5%).
    const std::map<DecodeShape, double> fastest_torch = fastest_torch_kv_gbps(load(run + "torch_decode.json"));
    for (const auto& [a, b, slower, worst] : {std::tuple{"pass1_pf0", "pass6_pf0", 13, 0.925}, std::tuple{"pass3_pf128", "pass4_pf128", 11, 0.950}}) {
        int below = 0;
        double lowest = 2;
        for (const auto& [shape, gbps] : pass[a]) {
            const double ours = (gbps + pass[b].at(shape)) / 2, ratio_to_torch = ours / fastest_torch.at(shape);
            below += ratio_to_torch < 1;
            lowest = std::min(lowest, ratio_to_torch);
        }
        CHECK(below == slower);
        CHECK(lowest == Approx(worst).margin(0.003));
    }
}

TEST_CASE("decode on the H200: splits past one block per SM make batch-1 FlashDecoding slower", "[hardware][decode][time]") {
    // cuda/results/2026-11-29-h200-decode-splits: batch 1, 32 query heads with one or 8 K/V heads, 16k-128k keys,
    // fa-validate --kv-splits 0 (the heuristic), 132, 264, 396, 528 (1 to 4 blocks per SM; counts past a problem's
    // K/V tiles skipped), fa-sim's prediction at each count beside it.
    const std::string run = kResults + "2026-11-29-h200-decode-splits/";
    CHECK(read_text(run + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    CHECK(read_text(run + "copy.txt").find("copy 4.25 TB/s") != std::string::npos);
    const json doc = load(run + "decode_splits.json");
    std::map<std::pair<int, int>, std::vector<json>> by_shape;  // (K/V heads, Nk): rows in --kv-splits order
    for (const json& r : doc.at("results")) {
        CHECK(r.at("accuracy").at("pass").get<bool>());
        by_shape[{r.at("kv_heads").get<int>(), r.at("Nk").get<int>()}].push_back(r);
    }
    CHECK(by_shape.size() == 6);
    CHECK(doc.at("results").size() == 24);
    double mqa_best_gbps = 0;
    for (const auto& [shape, rows] : by_shape) {
        INFO("K/V heads " << shape.first << ", Nk " << shape.second);
        double one_per_sm = 1;  // the fastest at most one block per SM (the heuristic's count among them)
        for (const json& r : rows)
            if (r.at("kv_splits").get<int>() <= 132) one_per_sm = std::min(one_per_sm, r.at("measured_s").get<double>());
        for (const json& r : rows) {
            const int splits = r.at("kv_splits").get<int>();
            if (splits > 132) CHECK(r.at("measured_s").get<double>() > one_per_sm);
            const double error = r.at("error_pct").get<double>();
            // The model's miss on one K/V head: +30..+47% at one block per SM from 64k keys (issue-bound there),
            // -21..-38% at two to four (DRAM-bound there); with 8 K/V heads -22..-2%.
            if (shape.first == 1 && shape.second >= 65536) CHECK((splits > 132 ? (error > -39 && error < -20) : (error > 29 && error < 48)));
            if (shape.first == 8) CHECK((error > -23 && error < -1));
            if (shape.first == 1) mqa_best_gbps = std::max(mqa_best_gbps, r.at("kv_bandwidth_gbps").get<double>());
        }
    }
    // One K/V head streams at most half the copy rate, whatever the count: the splits are not what holds it back.
    CHECK(mqa_best_gbps == Approx(2145).margin(1));
    CHECK(mqa_best_gbps / 4250 < 0.51);
}

TEST_CASE("decode on the H200: with key groups, splits past one block per SM are still slower, and 128 splits beat "
          "the heuristic's 114 by 3-4.5% with one K/V head",
          "[hardware][decode][time]") {
    // cuda/results/2026-11-30-h200-decode-splits: the counts of the run above again (--kv-splits 0, 132, 264, 396,
    // 528), with the kernel whose warps share each K/V tile's keys (90b06f9).
    const std::string run = kResults + "2026-11-30-h200-decode-splits/";
    CHECK(read_text(run + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    CHECK(read_text(run + "copy.txt").find("copy 4.23 TB/s") != std::string::npos);
    const json doc = load(run + "decode_splits.json");
    CHECK(doc.at("results").size() == 24);
    std::map<std::pair<int, int>, std::map<int, const json*>> by_shape;  // (K/V heads, Nk) -> splits used -> row
    for (const json& r : doc.at("results")) {
        CHECK(r.at("accuracy").at("pass").get<bool>());
        by_shape[{r.at("kv_heads").get<int>(), r.at("Nk").get<int>()}][r.at("kv_splits").get<int>()] = &r;
    }
    REQUIRE(by_shape.size() == 6);
    auto time_us = [&](int kv, int nk, int splits) { return by_shape.at({kv, nk}).at(splits)->at("measured_s").get<double>() * 1e6; };
    double mqa_best_gbps = 0;
    for (const auto& [shape, rows] : by_shape) {
        INFO("K/V heads " << shape.first << ", Nk " << shape.second);
        const double one_per_sm = time_us(shape.first, shape.second, 128);
        for (const auto& [splits, r] : rows) {
            if (splits > 132) CHECK(r->at("measured_s").get<double>() * 1e6 > 1.04 * one_per_sm);  // at least 4% slower
            const double error = r->at("error_pct").get<double>();
            // The model on one K/V head from 64k keys: +18..+28% at one block per SM (issue-bound), -10..-25% at two
            // to four (DRAM-bound); on 8 K/V heads -20..+0%.
            if (shape.first == 1 && shape.second >= 65536) CHECK((splits > 132 ? (error > -26 && error < -10) : (error > 17 && error < 29)));
            if (shape.first == 8) CHECK((error > -21 && error < 1));
            if (shape.first == 1) mqa_best_gbps = std::max(mqa_best_gbps, r->at("kv_bandwidth_gbps").get<double>());
        }
    }
    // 128 splits (one block on 128 SMs) against the heuristic's 114, one K/V head: 3.3% and 4.5% faster.
    CHECK(time_us(1, 65536, 128) / time_us(1, 65536, 114) == Approx(0.967).margin(0.002));
    CHECK(time_us(1, 131072, 128) / time_us(1, 131072, 114) == Approx(0.955).margin(0.002));
    // One K/V head streams at most 58% of the copy rate.
    CHECK(mqa_best_gbps == Approx(2464).margin(1));
    CHECK(mqa_best_gbps / 4230 < 0.59);
}

namespace {
// The gpu__time_duration.sum values of an ncu text report, in the order of its kernels (microseconds).
std::vector<double> ncu_durations_us(const std::string& text) {
    std::vector<double> out;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        if (line.find("gpu__time_duration.sum") == std::string::npos) continue;
        REQUIRE(line.find(" us ") != std::string::npos);
        out.push_back(std::stod(line.substr(line.find_last_of(' ') + 1)));
    }
    return out;
}
}  // namespace

TEST_CASE("decode on the H200: the combine is half of batch-1 MQA's 14 us, and warps in key groups and the combine's early "
          "loads make MQA at batch 1 8-14% faster in one call, every other shape within 1.2%",
          "[hardware][decode][time]") {
    // cuda/results/2026-11-29-h200-decode-mqa (the kernel of 50ff63c): Nsight Compute's own durations of the split
    // and combine kernels. MQA at batch 1: 128 or 114 blocks, each one 4-warp block per SM with two computing warps
    // issuing every 5.1 cycles; the combine of 32 rows x 114-128 splits a chain of L2 round trips.
    const std::string mqa = kResults + "2026-11-29-h200-decode-mqa/";
    CHECK(read_text(mqa + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    const std::vector<double> before_16k = ncu_durations_us(read_text(mqa + "ncu_mqa_16k.txt"));
    const std::vector<double> before_128k = ncu_durations_us(read_text(mqa + "ncu_mqa_128k.txt"));
    REQUIRE(before_16k.size() == 2);  // split, combine
    REQUIRE(before_128k.size() == 2);
    CHECK(before_16k[0] == Approx(7.78));   // split, 16k keys
    CHECK(before_16k[1] == Approx(7.14));   // combine: as long as the split
    CHECK(before_128k[0] == Approx(26.69));
    CHECK(before_128k[1] == Approx(7.33));
    const std::vector<double> kv32 = ncu_durations_us(read_text(mqa + "ncu_kv32_128k.txt"));
    REQUIRE(kv32.size() == 2);
    CHECK(kv32[1] == Approx(4.38));  // the floor: a combine of 8 splits

    // cuda/results/2026-11-29-h200-decode-key-groups (90b06f9): cuda-check (two key groups covered), sanitizers, and
    // the same durations with the warps in key groups and the combine's first loads before its reductions.
    const std::string kg = kResults + "2026-11-29-h200-decode-key-groups/";
    CHECK(read_text(kg + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    CHECK(read_text(kg + "check.txt").find("810 passed, 0 failed") != std::string::npos);
    check_sanitizer_clean(read_text(kg + "sanitizer.txt"));
    const std::vector<double> after_16k = ncu_durations_us(read_text(kg + "ncu_mqa_16384.txt"));
    const std::vector<double> after_128k = ncu_durations_us(read_text(kg + "ncu_mqa_131072.txt"));
    REQUIRE(after_16k.size() == 2);
    REQUIRE(after_128k.size() == 2);
    CHECK(after_16k[1] == Approx(5.15));   // combine 7.14 -> 5.15 us
    CHECK(after_128k[0] == Approx(24.86)); // split 26.69 -> 24.86 us
    CHECK(after_128k[1] == Approx(4.90));  // combine 7.33 -> 4.90 us
    // Predicted before the run (the model with the key groups): 16 of 18 within 20%; the misses are MQA at batch 1
    // with 64k and 128k keys, +21% and +27%, issue-bound in the model while the four warps issue in 23% of cycles.
    const json before = load(kg + "predicted_before.json");
    CHECK(before.at("simulator_commit").get<std::string>().rfind("90b06f9", 0) == 0);
    const auto predicted_before = decode_predictions(before);
    int timed = 0, within_20 = 0;
    for_each_timed_decode(load(kg + "decode.json"), [&](const json& r, const std::string& algo, int batch, int kv, int nk, double measured) {
        const double written = predicted_before.at({algo, batch, kv, nk});
        CHECK(r.at("predicted_s").get<double>() == Approx(written).epsilon(1e-6));
        const double error = written / measured - 1;
        ++timed;
        within_20 += std::abs(error) <= 0.20;
        if (batch == 1 && kv == 1 && nk >= 65536) CHECK((error > 0.20 && error < 0.28));
        else CHECK(std::abs(error) <= 0.11);
    });
    CHECK(timed == 18);
    CHECK(within_20 == 16);

    // cuda/results/2026-11-29-h200-decode-ab: both kernels built in one call and timed old, new, old, new.
    const std::string ab = kResults + "2026-11-29-h200-decode-ab/";
    CHECK(read_text(ab + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    std::map<std::string, std::map<DecodeShape, double>> pass;  // measured seconds
    for (const char* name : {"old_1", "new_1", "old_2", "new_2"}) {
        const json doc = load(ab + name + ".json");
        for (const json& r : doc.at("results")) {
            CHECK(r.at("accuracy").at("pass").get<bool>());
            pass[name][decode_shape(r)] = r.at("measured_s").get<double>();
        }
        CHECK(pass[name].size() == 18);
    }
    for (const auto& [shape, old_1] : pass["old_1"]) {
        const auto [batch, kv, nk] = shape;
        CAPTURE(batch, kv, nk);
        const double ratio_new_old = (pass["new_1"].at(shape) + pass["new_2"].at(shape)) / (old_1 + pass["old_2"].at(shape));
        if (kv == 1 && batch == 1) CHECK(ratio_new_old < (nk >= 65536 ? 0.88 : 0.93));  // 0.92, 0.87, 0.86
        else if (kv == 1) CHECK(ratio_new_old < 0.97);                                  // batch 8: 0.94, 0.96, 0.97
        else CHECK(std::abs(ratio_new_old - 1) < 0.013);  // -0.8..+1.2% (32 K/V heads at 16k keys +1.2%)
    }
    // Batch-1 MQA streams K and V at 15/41/56% of the copy rate (4.22 TB/s in the key-groups call), from 14/35/48%.
    const auto kv_share = [&](const char* name, int nk) {
        const json doc = load(ab + name + ".json");
        for (const json& r : doc.at("results"))
            if (r.at("batch") == 1 && r.at("kv_heads") == 1 && r.at("Nk") == nk) return r.at("kv_bandwidth_gbps").get<double>() / 4220;
        return 0.0;
    };
    CHECK(kv_share("new_2", 16384) == Approx(0.153).margin(0.002));
    CHECK(kv_share("new_2", 65536) == Approx(0.409).margin(0.002));
    CHECK(kv_share("new_2", 131072) == Approx(0.562).margin(0.002));
}

TEST_CASE("decode on the H200: a third K/V stage (Q kept in it until its fragments are in registers) streams no "
          "faster than two, 0.2-4.5% slower where the split kernel reads at 4 TB/s or more",
          "[hardware][decode][time]") {
    // cuda/results/2026-11-29-h200-decode-stages: the split kernel with two or three K/V stages (a switch of fbf3d5f,
    // removed after the run), the decode grid timed twice per variant in one call (2 3 3 2), PyTorch's SDPA beside.
    const std::string run = kResults + "2026-11-29-h200-decode-stages/";
    CHECK(read_text(run + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    for (const char* v : {"2", "3"}) CHECK(read_text(run + "check_stages" + v + ".txt").find("794 passed, 0 failed") != std::string::npos);
    check_sanitizer_clean(read_text(run + "sanitizer_stages3.txt"));
    const double copy = load(run + "copy.json").at("d2d_copy_bytes_per_s").get<double>();
    CHECK(copy == Approx(4.252e12).epsilon(0.001));
    std::map<std::string, std::map<DecodeShape, double>> pass;  // K/V GB/s
    for (const char* name : {"pass1_stages2", "pass2_stages3", "pass3_stages3", "pass4_stages2"}) {
        const json doc = load(run + "validate_" + name + ".json");
        for (const json& r : doc.at("results")) {
            CHECK(r.at("accuracy").at("pass").get<bool>());
            pass[name][decode_shape(r)] = r.at("kv_bandwidth_gbps").get<double>();
        }
        CHECK(pass[name].size() == 45);
    }
    int streaming = 0;
    for (const auto& [shape, two_a] : pass["pass1_stages2"]) {
        const double two_lo = std::min(two_a, pass["pass4_stages2"].at(shape)), two_hi = std::max(two_a, pass["pass4_stages2"].at(shape));
        const double three_lo = std::min(pass["pass2_stages3"].at(shape), pass["pass3_stages3"].at(shape));
        const double three_hi = std::max(pass["pass2_stages3"].at(shape), pass["pass3_stages3"].at(shape));
        CAPTURE(std::get<0>(shape), std::get<1>(shape), std::get<2>(shape));
        CHECK(three_lo / two_hi - 1 < -0.001);  // the worst pair of passes: three stages slower on every shape
        CHECK(three_lo / two_hi - 1 > -0.072);
        if (two_lo < 4000) continue;
        ++streaming;
        CHECK(three_lo / two_hi - 1 > -0.046);
        CHECK(three_hi / two_lo - 1 < 0.007);  // the best pair: at most 0.6% faster
    }
    CHECK(streaming == 17);
    // Two stages, the kernel as it is, against PyTorch's fastest backend of the same call (math left out), the mean of
    // the two passes: slower on 7 of 45 shapes; batch-1 streaming from 16k keys, against this call's copy rate.
    const std::map<DecodeShape, double> fastest_torch = fastest_torch_kv_gbps(load(run + "torch_decode.json"));
    int below = 0;
    for (const auto& [shape, a] : pass["pass1_stages2"]) below += (a + pass["pass4_stages2"].at(shape)) / 2 < fastest_torch.at(shape);
    CHECK(below == 7);
    const auto streamed = [&](int kv, int nk) {
        const DecodeShape k = decode_shape(json{{"batch", 1}, {"kv_heads", kv}, {"Nk", nk}});
        return (pass["pass1_stages2"].at(k) + pass["pass4_stages2"].at(k)) / 2 * 1e9 / copy;
    };
    CHECK(streamed(32, 16384) == Approx(0.82).margin(0.01));
    CHECK(streamed(8, 16384) == Approx(0.60).margin(0.01));
    CHECK(streamed(1, 131072) == Approx(0.48).margin(0.01));
}

TEST_CASE("calibrated H100: fa-calibrate's GPU file brings FlashDecoding from 13% to 12% mean error, 7% but for MQA at batch 1",
          "[hardware][decode][calibrate]") {
    // The hold-out rule: the file holds microbenchmarks only (copy 3.01 TB/s, launch 5.1 us, mma.sync, cuBLAS,
    // exp2, L2), measured by fa-calibrate on the card before these decode timings; no attention timing went in.
    // With the preset's datasheet rates the same run's FlashDecoding errors average 13% (12.6% at batch 1,
    // 14.4% at batch 8), nearly all fast. What stays off: MQA at batch 1 (+4..+51%: two computing warps
    // per block, which issue more often than the model's readiness says, and at 1k keys 9 us kernels where
    // the two launches' overhead dominates); without it the file's mean error is 6.0%. Since a block alone on its
    // SM also waits for its first tiles and stores its output alone (BlockTerms::fill, 2026-11-29), the kernels of
    // one round with 1k keys gain a microsecond each: MQA at batch 1 up to +66%, 1k keys with 8 K/V heads at
    // batch 1 +40% and with one at batch 8 +29%; the file's mean error 12.3%, 6.9% without MQA at batch 1.
    const GpuSpec preset = find_gpu_preset("H100-SXM");
    const GpuSpec calibrated = load_gpu_file(kRunCalibrated + "calibrated-gpu.json");
    CHECK(calibrated.hbm_bandwidth == preset.hbm_bandwidth);  // the datasheet figure stays; the copy rate is measured
    CHECK(calibrated.measured.hbm_bandwidth > 2.9e12);
    const json doc = load(kRunCalibrated + "validate_decode.json");
    double abs_error_calibrated = 0, abs_error_preset = 0, abs_error_but_mqa_1 = 0;
    int n = 0, within_10 = 0, n_but_mqa_1 = 0;
    // Batch 64 (B*H = 2048, over the batch*heads limit when the run was made; predicted since the limit is
    // 65536): the file brings FlashDecoding's mean error from 14% to 5%, every configuration still fast.
    double abs_error_calibrated_64 = 0, abs_error_preset_64 = 0;
    int n_64 = 0;
    for (const json& r : doc.at("results")) {
        if (!r.contains("measured_s") || r.at("algo") != "flash_decoding") continue;
        CAPTURE(r.at("batch").get<int>(), r.at("kv_heads").get<int>(), r.at("Nk").get<int>());
        const double e = ratio(predict(r, calibrated).time_s, r.at("measured_s")) - 1;
        if (r.at("batch") == 64) {
            abs_error_calibrated_64 += std::abs(e);
            abs_error_preset_64 += std::abs(ratio(predict(r, preset).time_s, r.at("measured_s")) - 1);
            ++n_64;
            CHECK(e > -0.19);  // MHA with a 1k cache: -18%; the rest -7..-2%
            CHECK(e < 0);
            continue;
        }
        abs_error_calibrated += std::abs(e);
        abs_error_preset += std::abs(ratio(predict(r, preset).time_s, r.at("measured_s")) - 1);
        within_10 += std::abs(e) <= 0.10;
        ++n;
        CHECK(e > -0.11);
        CHECK(e < 0.67);
        if (r.at("batch") == 1 && r.at("kv_heads") == 1) continue;
        abs_error_but_mqa_1 += std::abs(e);
        ++n_but_mqa_1;
    }
    CHECK(n == 30);
    CHECK(abs_error_calibrated / n < 0.125);
    CHECK(abs_error_but_mqa_1 / n_but_mqa_1 < 0.07);
    CHECK(abs_error_preset / n > 0.12);
    CHECK(within_10 >= 22);
    CHECK(n_64 == 14);
    CHECK(abs_error_calibrated_64 / n_64 < 0.055);
    CHECK(abs_error_preset_64 / n_64 > 0.13);
}

TEST_CASE("fa1_tc's launcher rule, applied before a run, gives the q_splits the runs launched", "[hardware][paper][fa1_tc]") {
    // A prediction written before a run has no launch record: fa-sim applies the launcher's rule
    // (tile_rules::fa1_tc_q_splits) to its own occupancy. Without it (fixed after the 2026-11-25-h100-d run's
    // predictions), fa1_tc with few batch*heads was modelled with one block per batch*head: up to 11x slow.
    struct Run {
        std::string folder, preset;
    };
    int checked = 0;
    for (const Run& run : {Run{kResults + "2026-11-25-h100-d/", "H100-SXM"}, Run{kRunF, "H200"}}) {
        const GpuSpec gpu = find_gpu_preset(run.preset);
        for (const int d : {64, 128})
            for (const int N : {2048, 4096, 8192, 16384}) {
                const json doc = load(run.folder + "paper_d" + std::to_string(d) + "_N" + std::to_string(N) + ".json");
                for (const json& r : doc.at("results")) {
                    if (r.at("algo") != "fa1_tc" || !r.contains("measured_s")) continue;
                    CAPTURE(run.folder, d, N);
                    const MeasuredLaunch launched = measured_launch(r);
                    REQUIRE(launched.q_splits > 0);
                    AttentionProblem p;
                    p.batch = r.at("batch");
                    p.heads = r.at("heads");
                    p.N = p.Nk = N;
                    p.d = d;
                    p.dtype = DType::fp16;
                    const KernelSetup before = kernel_setup(*find_kernel("fa1_tc"), p, gpu, MeasuredLaunch{});
                    CHECK(std::max<std::int64_t>(before.tiles.q_splits, 1) == launched.q_splits);
                    ++checked;
                }
            }
    }
    CHECK(checked == 32);
}

TEST_CASE("calibrated H100: the FA2 paper's setting predicted from fa-calibrate's file", "[hardware][paper][calibrate]") {
    // The run 2026-11-25-h100-d timed the paper's setting after the card's calibration (2026-11-25-h100-c); the
    // predictions written before it are in the run's folder. Mean absolute errors, calibrated file against the
    // H100-SXM preset's datasheet rates, as measured (SUMMARY.md): cuBLAS standard 6.5/7.7% against 16.0/16.5%
    // (d = 64/128), fa1 4.7/14.8% against 18.8/33.2%, fa2 d = 128 7.2% against 27.3%, PyTorch's flash 6.9/10.9%
    // against 6.9/14.2%. Worse: the CUDA-core fa2 at d = 64, 21% against 4.4%. The file's FP32 ceiling is
    // cuBLAS's SGEMM, 52 TFLOP/s, below the FFMA peak of 61.7 the same run measured; run at that peak (the
    // test below), fa2 d = 64 falls to 3.8% but fa1 d = 128 rises to 27.9% and fa2 d = 128 to 21.5%, so the
    // FFMA peak is recorded, not used (docs/gpu-file.md). Unchanged: fa2_tc (instruction issue: 8.5/18.4%).
    // Since 2026-12-02 a Hopper preset without a measured FP32 rate takes 0.76 of its datasheet rate (the H200's SGEMM,
    // model.fp32_peak_fraction), 50.8 where this file has 52.0: the preset's CUDA-core errors are now the file's within
    // 3 points (fa1 6.0/12.8% at d = 64/128).
    const std::string run = kResults + "2026-11-25-h100-d/";
    const GpuSpec preset = find_gpu_preset("H100-SXM");
    const GpuSpec calibrated = load_gpu_file(kRunCalibrated + "calibrated-gpu.json");
    std::map<std::pair<std::string, int>, std::pair<double, double>> mape;  // (kernel, d) -> (calibrated, preset)
    std::map<std::pair<std::string, int>, int> count;
    for (const int d : {64, 128})
        for (const int N : {2048, 4096, 8192, 16384}) {
            const json doc = load(run + "paper_d" + std::to_string(d) + "_N" + std::to_string(N) + ".json");
            for (const json& r : doc.at("results")) {
                if (!r.contains("measured_s")) continue;
                const std::string algo = r.at("algo");
                const auto key = std::make_pair(algo, d);
                mape[key].first += std::abs(ratio(predict(r, calibrated).time_s, r.at("measured_s")) - 1);
                mape[key].second += std::abs(ratio(predict(r, preset).time_s, r.at("measured_s")) - 1);
                ++count[key];
            }
        }
    auto calibrated_mape = [&](const std::string& k, int d) { return mape[{k, d}].first / count[{k, d}]; };
    auto preset_mape = [&](const std::string& k, int d) { return mape[{k, d}].second / count[{k, d}]; };
    for (const auto& [key, n] : count) CHECK(n == 8);
    CHECK(count.size() == 10);  // standard_cublas, fa1, fa2, fa1_tc, fa2_tc at d = 64 and 128
    for (const int d : {64, 128}) {
        CAPTURE(d);
        CHECK(calibrated_mape("standard_cublas", d) < 0.10);
        CHECK(preset_mape("standard_cublas", d) > 0.15);
        CHECK(calibrated_mape("fa1", d) == Approx(preset_mape("fa1", d)).margin(0.03));
        CHECK(calibrated_mape("fa2", d) == Approx(preset_mape("fa2", d)).margin(0.03));
        CHECK(calibrated_mape("fa2_tc", d) == Approx(preset_mape("fa2_tc", d)).margin(0.01));
    }
    CHECK(calibrated_mape("fa1", 64) < 0.06);
    CHECK(calibrated_mape("fa2", 128) < 0.08);
    CHECK(calibrated_mape("fa2", 64) > 0.18);  // the FP32 ceiling above: a known gap, not hidden
    CHECK(calibrated_mape("fa1_tc", 64) < 0.08);  // with the launcher's recorded q_splits
}

TEST_CASE("calibrated H100: the FFMA peak fa-calibrate measured loads beside the SGEMM rate and moves no prediction",
          "[hardware][paper][calibrate]") {
    // calibrated-gpu.json is the committed result of 2026-11-25-h100-c, written before fa-calibrate put the FFMA
    // peak into its files: the test adds the same run's FFMA figure (calibrate_raw.json) when it loads the file.
    const json raw = load(kRunCalibrated + "calibrate_raw.json");
    std::ifstream in(kRunCalibrated + "calibrated-gpu.json");
    json file = json::parse(in);
    REQUIRE(!file.at("measured").contains("ffma_flops_per_s"));
    file["measured"]["ffma_flops_per_s"] = raw.at("ffma_flops_per_s");
    const GpuSpec with_ffma = parse_gpu_json(file.dump(), "calibrated-gpu.json + calibrate_raw.json's FFMA");
    const GpuSpec as_committed = load_gpu_file(kRunCalibrated + "calibrated-gpu.json");
    // One run: the file's SGEMM ceiling is the raw cuBLAS fp32 rate; the FFMA peak is 19% above it (61.7 vs 52.0).
    CHECK(as_committed.measured.fp32_flops == raw.at("cublas_fp32_flops_per_s").get<double>());
    CHECK(with_ffma.measured.ffma_flops == Approx(61.69e12).epsilon(0.001));
    CHECK(with_ffma.measured.ffma_flops / with_ffma.measured.fp32_flops == Approx(1.187).epsilon(0.002));
    // Recorded, not used: every prediction of the paper run is the same with and without it.
    int compared = 0;
    for (const int d : {64, 128}) {
        const json doc = load(kResults + "2026-11-25-h100-d/paper_d" + std::to_string(d) + "_N4096.json");
        for (const json& r : doc.at("results")) {
            if (!r.contains("measured_s")) continue;
            CAPTURE(r.at("algo").get<std::string>(), d);
            CHECK(predict(r, with_ffma).time_s == predict(r, as_committed).time_s);
            ++compared;
        }
    }
    CHECK(compared == 20);
}

// ---- The H200 run of 2026-11-26: the second card of the backward and of the calibration ----------------

namespace {
const std::string kRunH200 = kResults + "2026-11-26-h200/";  // fa-calibrate, the paper's setting, the backward
}  // namespace

TEST_CASE("H200 backward: every timed configuration meets the gradient rule", "[hardware][backward][accuracy]") {
    int timed = 0;
    for (const char* file : {"validate_bwd_half.json", "validate_bwd_fp32.json", "validate_fwd_bwd.json"}) {
        const json doc = load(kRunH200 + file);
        REQUIRE(doc.at("gpu").get<std::string>().find("H200") != std::string::npos);
        for (const json& r : doc.at("results")) {
            CAPTURE(file, r.at("algo").get<std::string>(), r.at("N").get<int>(), r.at("d").get<int>());
            REQUIRE(r.contains("measured_s"));
            CHECK(r.at("accuracy").at("pass").get<bool>());
            ++timed;
        }
    }
    CHECK(timed == 120 + 16 + 8);
}

TEST_CASE("H200 backward from 2k tokens: cuBLAS within 18% as predicted before the run, fa2_bwd_tc within 10% since its "
          "step's issue rate is measured, the CUDA-core FA2 not within 20% at d=128",
          "[hardware][backward][time]") {
    // The issue's target is 20% for every backward kernel on both cards. On the H200 (predictions written on the card
    // before it timed anything, cuda/results/2026-11-26-h200/predicted_before_bwd_*.json): cuBLAS standard -17..+2%
    // (fp32 d=128 +13..+17%); fa2_bwd_tc -26..-14%, fast as on the H100 (ncu in profile_bwd_d128/: its 8 warps per SM
    // issue in 22% of cycles at a 1.8 GHz clock, where the model has them bound by shared memory at 1.98 GHz); the
    // CUDA-core fa2_bwd d=64 -8..+9%, d=128 +7..+33% (slow: 1 block of 4 warps per SM at the lone warp's issue rate).
    // Since 2026-12-02 fa2_bwd_tc issues at its step's rate, timed alone on an H200 days later (2026-12-01-h200-backward-
    // step/; the calibrated file of this run predates the probe and takes the Hopper default, the same numbers):
    // -7..+5% at d=64, -9..-1% at d=128.
    const GpuSpec preset = find_gpu_preset("H200");
    const GpuSpec calibrated = load_gpu_file(kRunH200 + "calibrated-gpu.json");
    std::map<std::string, int> checked, within_20;
    for (const char* file : {"validate_bwd_half.json", "validate_bwd_fp32.json"}) {
        const json doc = load(kRunH200 + file);
        for (const GpuSpec* gpu : {&preset, &calibrated}) {
            for_each_timed_result(doc, *gpu, {}, [&](const json& r, double rt) {
                const std::string algo = r.at("algo");
                const int d = r.at("d");
                if (algo == "standard_cublas_bwd") CHECK(rt == Approx(1.0).epsilon(0.18));
                if (algo == "fa2_bwd_tc") CHECK((rt > 0.90 && rt < 1.06));
                if (algo == "fa2_bwd") CHECK(rt == Approx(1.0).epsilon(d == 64 ? 0.14 : 0.34));
                if (gpu == &calibrated) {
                    ++checked[algo];
                    within_20[algo] += std::abs(rt - 1.0) <= 0.20;
                }
            });
        }
    }
    CHECK(checked["standard_cublas_bwd"] == 32 + 8);
    CHECK(checked["fa2_bwd_tc"] == 32);
    CHECK(checked["fa2_bwd"] == 32 + 8);
    CHECK(within_20["standard_cublas_bwd"] == 40);
    // 21 as predicted before the run; 27 since a block alone on its SM (fa2_bwd_tc holds 155 KB of shared memory)
    // pays its fill and drain: K_j, V_j and the first Q, dO tiles before its first product, dK_j and dV_j after
    // its last (BlockTerms::fill, 2026-11-29); all 32 at the step's measured rate.
    CHECK(within_20["fa2_bwd_tc"] == 32);
}

TEST_CASE("H200: the tensor-core FA2 backward at 87-123% of PyTorch's at d=128 and N >= 4096 (the issue asks 70%)",
          "[hardware][backward][yardstick]") {
    std::map<std::tuple<int, int, std::string, bool>, double> ours, torch;
    const json half = load(kRunH200 + "validate_bwd_half.json"), pytorch = load(kRunH200 + "torch_bwd.json");
    for (const json& r : half.at("results"))
        if (r.at("algo").get<std::string>() == "fa2_bwd_tc")
            ours[{r.at("N").get<int>(), r.at("d").get<int>(), r.at("dtype").get<std::string>(), r.at("causal").get<bool>()}] =
                r.at("measured_s");
    for (const json& r : pytorch.at("results"))
        if (r.at("algo").get<std::string>() == "torch_flash_bwd")
            torch[{r.at("N").get<int>(), r.at("d").get<int>(), r.at("dtype").get<std::string>(), r.at("causal").get<bool>()}] =
                r.at("measured_s");
    int compared = 0;
    for (const auto& [key, t] : ours) {
        if (std::get<0>(key) < 4096 || std::get<1>(key) != 128) continue;
        CAPTURE(std::get<0>(key), std::get<2>(key), std::get<3>(key));
        REQUIRE(torch.count(key));
        CHECK(torch.at(key) / t >= 0.85);
        ++compared;
    }
    CHECK(compared == 12);
}

TEST_CASE("H200: the FA2 paper's setting predicted before it was timed, from the card's fa-calibrate file and its preset",
          "[hardware][paper][calibrate]") {
    // The second card of the hold-out (the H100's is above): fa-calibrate ran first in the same call, then fa-sim
    // wrote its predictions with the file it measured and with the H200 preset, then the paper's setting was timed
    // (session_call1.log has the order). Mean absolute errors, calibrated / preset (d = 64; 128): cuBLAS 13.3/12.0%;
    // 9.1/9.2%, fa1 5.5/5.9%; 13.0/12.5%, fa1_tc 7.4%; 19.9%, fa2 22.8/23.8%; 6.3/5.7%, fa2_tc 8.3%; 18.6%, PyTorch's
    // flash 4.6/6.4%; 7.9/6.7%. The H200 preset already carries this card's earlier microbenchmarks, so calibration
    // moves little here; the misses are the H100's too: the CUDA-core fa2 at d = 64 (+23%) and the mma.sync kernels
    // at d = 128 (-19..-20%: instruction issue at 1.98 GHz, where ncu reads 1.78-1.80 GHz under this load).
    const GpuSpec preset = find_gpu_preset("H200");
    const GpuSpec calibrated = load_gpu_file(kRunH200 + "calibrated-gpu.json");
    std::map<std::pair<std::string, int>, std::pair<double, double>> mape;  // (kernel, d) -> (calibrated, preset)
    std::map<std::pair<std::string, int>, int> count;
    for (const int d : {64, 128})
        for (const int N : {2048, 4096, 8192, 16384}) {
            const json doc = load(kRunH200 + "paper_d" + std::to_string(d) + "_N" + std::to_string(N) + ".json");
            for (const json& r : doc.at("results")) {
                if (!r.contains("measured_s")) continue;
                const auto key = std::make_pair(r.at("algo").get<std::string>(), d);
                mape[key].first += std::abs(ratio(predict(r, calibrated).time_s, r.at("measured_s")) - 1);
                mape[key].second += std::abs(ratio(predict(r, preset).time_s, r.at("measured_s")) - 1);
                ++count[key];
            }
        }
    auto calibrated_mape = [&](const std::string& k, int d) { return mape[{k, d}].first / count[{k, d}]; };
    for (const auto& [key, n] : count) CHECK(n == 8);
    CHECK(count.size() == 10);
    for (const int d : {64, 128}) {
        CAPTURE(d);
        CHECK(calibrated_mape("standard_cublas", d) < 0.14);
        CHECK(calibrated_mape("fa1", d) < 0.14);
        CHECK(calibrated_mape("fa1_tc", d) < (d == 64 ? 0.08 : 0.21));
        CHECK(calibrated_mape("fa2_tc", d) < (d == 64 ? 0.09 : 0.19));
        CHECK(std::abs(mape[{"fa2_tc", d}].first - mape[{"fa2_tc", d}].second) / 8 < 0.01);  // calibration moves little here
    }
    CHECK(calibrated_mape("fa2", 128) < 0.07);
    CHECK(calibrated_mape("fa2", 64) > 0.20);  // the FP32 ceiling (SGEMM's, not the FFMA peak): the H100's gap too
}

// ---- The kernel ladder (docs/kernel-ladder.md): fa2 -> fa2_tc -> fa2_tc_tuned -> fa2_wgmma, on an H200 and an H100 -----
// H200: five runs of 2026-11-26 (cuda/results/README.md); the kernels as they are now are those of run -c at d = 128
// (its fa2_wgmma with ping-pong) and run -e at d = 64 (fa2_wgmma one tile at a time). H100: one run of 2026-11-27
// (2026-11-27-h100-ladder), both head dims, the same kernels, with fa-sim's predictions committed before it (the
// hold-out). Each run timed every rung and PyTorch's flash and cuDNN backends together, so every comparison with
// them below is within one run.

namespace {

struct LadderRun {
    std::string folder;
    int d;
    std::string gpu;    // in the files' "gpu"
    std::string check;  // cuda-check's closing line for the two new rungs (d = 64 alone in run -e)
};
const LadderRun kLadderRuns[] = {{kResults + "2026-11-26-h200-ladder-c/", 128, "H200", "620 passed, 0 failed"},
                                 {kResults + "2026-11-26-h200-ladder-e/", 64, "H200", "310 passed, 0 failed"}};
const std::string kLadderH100 = kResults + "2026-11-27-h100-ladder/";
const LadderRun kLadderRunsH100[] = {{kLadderH100, 128, "H100 80GB HBM3", "620 passed, 0 failed"},
                                     {kLadderH100, 64, "H100 80GB HBM3", "620 passed, 0 failed"}};
// Every run above, both cards.
std::vector<LadderRun> all_ladder_runs() {
    std::vector<LadderRun> runs(std::begin(kLadderRuns), std::end(kLadderRuns));
    runs.insert(runs.end(), std::begin(kLadderRunsH100), std::end(kLadderRunsH100));
    return runs;
}

// Measured seconds of one run's ladder, by (kernel, dtype, N, causal), for its head dim.
using LadderKey = std::tuple<std::string, std::string, int, bool>;
std::map<LadderKey, double> ladder_times(const LadderRun& run) {
    std::map<LadderKey, double> t;
    for (const int N : {2048, 4096, 8192, 16384}) {
        const std::string tag = "_d" + std::to_string(run.d) + "_N" + std::to_string(N) + ".json";
        for (const std::string& file : {"ladder_fp16" + tag, "ladder_bf16" + tag, "ladder_torch" + tag}) {
            const json doc = load(run.folder + file);
            for (const json& r : doc.at("results"))
                if (r.contains("measured_s"))
                    t[{r.at("algo").get<std::string>(), r.at("dtype").get<std::string>(), r.at("N").get<int>(), r.at("causal").get<bool>()}] =
                        r.at("measured_s").get<double>();
        }
    }
    return t;
}

// The paper's setting: batch x N = 16k tokens, hidden 2048; FLOPs 4 N^2 d per head, halved when causal.
double ladder_tflops(int N, bool causal, double seconds) {
    const double flops = 4.0 * 16384.0 * 2048.0 * N * (causal ? 0.5 : 1.0);
    return flops / seconds / 1e12;
}

}  // namespace

TEST_CASE("kernel ladder on the H200 and the H100: the new rungs pass cuda-check and compute-sanitizer, and every timed "
          "configuration is accurate", "[hardware][ladder][accuracy]") {
    // Issue 22: every rung checked against fp64 in fp16 and bf16, compute-sanitizer clean, on each card it was timed on.
    for (const LadderRun& run : all_ladder_runs()) {
        CAPTURE(run.folder, run.d);
        CHECK(read_text(run.folder + "ladder_check.txt").find(run.check) != std::string::npos);
        check_sanitizer_clean(read_text(run.folder + "ladder_sanitizer.txt"));
        int timed = 0;
        for (const int N : {2048, 4096, 8192, 16384})
            for (const char* dtype : {"fp16", "bf16"}) {
                const json doc = load(run.folder + "ladder_" + dtype + "_d" + std::to_string(run.d) + "_N" + std::to_string(N) + ".json");
                REQUIRE(doc.at("gpu").get<std::string>().find(run.gpu) != std::string::npos);
                for (const json& r : doc.at("results")) {
                    CAPTURE(r.at("algo").get<std::string>(), N, dtype, r.at("causal").get<bool>());
                    CHECK(r.at("accuracy").at("pass").get<bool>());
                    ++timed;
                }
            }
        CHECK(timed == 4 * (8 + 6));  // fp16: 4 rungs, bf16: the 3 tensor-core rungs, causal or not
    }
}

TEST_CASE("kernel ladder on the H200 and the H100: each rung is faster than the one below it, in every configuration of "
          "the same run", "[hardware][ladder]") {
    for (const LadderRun& run : all_ladder_runs()) {
        CAPTURE(run.folder);
        const auto t = ladder_times(run);
        for (const int N : {2048, 4096, 8192, 16384})
            for (const bool causal : {false, true}) {
                CAPTURE(run.d, N, causal);
                CHECK(t.at({"fa2_tc", "fp16", N, causal}) < t.at({"fa2", "fp16", N, causal}) / 5);  // tensor cores: 9-13x
                for (const char* dtype : {"fp16", "bf16"}) {
                    CAPTURE(dtype);
                    CHECK(t.at({"fa2_tc_tuned", dtype, N, causal}) < t.at({"fa2_tc", dtype, N, causal}));
                    CHECK(t.at({"fa2_wgmma", dtype, N, causal}) < t.at({"fa2_tc_tuned", dtype, N, causal}));
                }
            }
    }
}

TEST_CASE("kernel ladder on the H200: the Hopper rung reaches 627-683 TFLOP/s at d=128 from N=4096 and 85-102% of cuDNN at every N >= 2048, "
          "the tuned mma.sync rung 94-116% of PyTorch's FlashAttention-2",
          "[hardware][ladder][yardstick]") {
    // The issue's targets: the Hopper rung >= 550 TFLOP/s at d = 128, N >= 4096, non-causal, and >= 85% of the cuDNN
    // backend in the same run at every N >= 2048 (met: the lowest, 0.851, is d=64 causal bf16 at N = 2048); the tuned
    // mma.sync rung >= 100% of PyTorch's flash backend at N >= 2048 for every d and causal setting (not met: 0.96-1.01 at
    // d = 128 without the causal mask, 0.94-1.16 with it, 0.95-1.08 at d = 64; it has FlashAttention-2's kernel's tiles,
    // not its swizzled shared memory or its hand-pipelined fragment loads).
    double lowest_cudnn = 10, lowest_flash = 10, highest_flash = 0;
    for (const LadderRun& run : kLadderRuns) {
        const auto t = ladder_times(run);
        for (const int N : {2048, 4096, 8192, 16384})
            for (const bool causal : {false, true})
                for (const char* dtype : {"fp16", "bf16"}) {
                    CAPTURE(run.d, N, causal, dtype);
                    const double wgmma = t.at({"fa2_wgmma", dtype, N, causal});
                    const double cudnn_share = t.at({"torch_cudnn", dtype, N, causal}) / wgmma;
                    CHECK(cudnn_share >= 0.85);
                    lowest_cudnn = std::min(lowest_cudnn, cudnn_share);
                    if (run.d == 128 && N >= 4096 && !causal) CHECK(ladder_tflops(N, causal, wgmma) >= 620);
                    const double flash_share = t.at({"torch_flash", dtype, N, causal}) / t.at({"fa2_tc_tuned", dtype, N, causal});
                    CHECK(flash_share >= 0.93);
                    lowest_flash = std::min(lowest_flash, flash_share);
                    highest_flash = std::max(highest_flash, flash_share);
                }
    }
    CHECK(lowest_cudnn < 0.86);   // the margin is thin, and said so
    CHECK(lowest_flash < 1.0);    // the tuned rung's target is not met everywhere
    CHECK(highest_flash > 1.1);
}

TEST_CASE("kernel ladder on the H100: the Hopper rung reaches 630-681 TFLOP/s at d=128 from N=4096 and 87-104% of cuDNN "
          "at every N >= 2048, the tuned mma.sync rung 93-112% of PyTorch's FlashAttention-2",
          "[hardware][ladder][yardstick]") {
    // Issue 22's targets on the second card, as measured (ladder_table.py): the Hopper rung >= 550 TFLOP/s at d = 128,
    // N >= 4096, non-causal (met: 630-681) and >= 85% of the cuDNN backend in the same run at every N >= 2048 (met: the
    // lowest, 0.873, is d=64 causal fp16 at N = 2048); the tuned mma.sync rung >= 100% of PyTorch's flash backend at
    // N >= 2048 for every d and causal setting (not met: below 1.0 in 18 of the 32 configurations, 0.935 at worst,
    // d=128 causal fp16 N = 2048; on the H200 24 of 32).
    double lowest_cudnn = 10, highest_cudnn = 0, lowest_flash = 10, highest_flash = 0, lowest_tflops = 1e4, highest_tflops = 0;
    int configurations = 0, below_flash = 0;
    for (const LadderRun& run : kLadderRunsH100) {
        const auto t = ladder_times(run);
        for (const int N : {2048, 4096, 8192, 16384})
            for (const bool causal : {false, true})
                for (const char* dtype : {"fp16", "bf16"}) {
                    CAPTURE(run.d, N, causal, dtype);
                    const double wgmma = t.at({"fa2_wgmma", dtype, N, causal});
                    const double cudnn_share = t.at({"torch_cudnn", dtype, N, causal}) / wgmma;
                    CHECK(cudnn_share >= 0.87);
                    lowest_cudnn = std::min(lowest_cudnn, cudnn_share);
                    highest_cudnn = std::max(highest_cudnn, cudnn_share);
                    if (run.d == 128 && N >= 4096 && !causal) {
                        const double tflops = ladder_tflops(N, causal, wgmma);
                        CHECK(tflops >= 550);
                        lowest_tflops = std::min(lowest_tflops, tflops);
                        highest_tflops = std::max(highest_tflops, tflops);
                    }
                    const double flash_share = t.at({"torch_flash", dtype, N, causal}) / t.at({"fa2_tc_tuned", dtype, N, causal});
                    CHECK(flash_share >= 0.93);
                    lowest_flash = std::min(lowest_flash, flash_share);
                    highest_flash = std::max(highest_flash, flash_share);
                    below_flash += flash_share < 1.0;
                    ++configurations;
                }
    }
    CHECK(configurations == 32);
    CHECK(lowest_tflops > 629);  // 630.0: fp16 at N = 4096
    CHECK(highest_tflops < 682);
    CHECK(lowest_cudnn < 0.88);  // met, by 2 points
    CHECK(highest_cudnn > 1.03);
    CHECK(lowest_flash < 0.94);  // the tuned rung's target is not met:
    CHECK(below_flash == 18);    // 18 of 32 below PyTorch's flash backend
    CHECK(highest_flash > 1.1);
}

namespace {

// A ladder run of fa2_tc_tuned as of 40d8ea4 (full-tile copies, the lazy rescale, causal Q tiles heaviest first):
// cuda-check and compute-sanitizer clean, every timed configuration accurate, every rung faster than the one
// below it; fa2_tc_tuned against PyTorch's flash backend in [lowest, highest], below 1.0 in `below` of 32; the
// Hopper rung's targets (>= 550 TFLOP/s at d = 128, N >= 4096, non-causal; >= 85% of cuDNN at every N >= 2048);
// the predictions written before the run (simulator `commit`) within 15% for fa2_tc_tuned, with the card's
// fa-calibrate file and with the preset.
void check_tuned_ladder_run(const std::string& folder, const std::string& gpu, int below_expected, double lowest_expected,
                            double highest_expected, const std::string& commit) {
    const std::string check_text = read_text(folder + "ladder_check.txt");
    CHECK(check_text.find("310 passed, 0 failed") != std::string::npos);
    CHECK(check_text.find("exit 0") != std::string::npos);
    check_sanitizer_clean(read_text(folder + "ladder_sanitizer.txt"));
    double lowest = 10, highest = 0;
    int configurations = 0, below = 0, accurate = 0;
    for (const int d : {64, 128}) {
        const LadderRun run{folder, d, gpu, "310 passed, 0 failed"};
        const auto t = ladder_times(run);
        for (const int N : {2048, 4096, 8192, 16384})
            for (const char* dtype : {"fp16", "bf16"}) {
                const json doc = load(folder + "ladder_" + std::string(dtype) + "_d" + std::to_string(d) + "_N" + std::to_string(N) + ".json");
                CHECK(doc.at("gpu").get<std::string>().find(run.gpu) != std::string::npos);
                for (const json& r : doc.at("results"))
                    if (r.contains("accuracy")) accurate += r.at("accuracy").at("pass").get<bool>() ? 1 : -1000;
                for (const bool causal : {false, true}) {
                    CAPTURE(d, N, causal, dtype);
                    const double share = t.at({"torch_flash", dtype, N, causal}) / t.at({"fa2_tc_tuned", dtype, N, causal});
                    CHECK(share >= lowest_expected);
                    CHECK(share <= highest_expected);
                    lowest = std::min(lowest, share);
                    highest = std::max(highest, share);
                    below += share < 1.0;
                    ++configurations;
                    CHECK(t.at({"fa2_tc_tuned", dtype, N, causal}) < t.at({"fa2_tc", dtype, N, causal}));
                    const double wgmma = t.at({"fa2_wgmma", dtype, N, causal});
                    CHECK(wgmma < t.at({"fa2_tc_tuned", dtype, N, causal}));
                    CHECK(t.at({"torch_cudnn", dtype, N, causal}) / wgmma >= 0.85);
                    if (d == 128 && N >= 4096 && !causal) CHECK(ladder_tflops(N, causal, wgmma) >= 550);
                }
            }
    }
    CHECK(accurate == 112);
    CHECK(configurations == 32);
    CHECK(below == below_expected);
    CHECK(lowest < lowest_expected + 0.01);
    CHECK(highest > highest_expected - 0.02);
    for (const char* which : {"calibrated", "preset"}) {
        const json doc = load(folder + "predicted_before_ladder_" + std::string(which) + ".json");
        CHECK(doc.at("simulator_commit").get<std::string>().rfind(commit, 0) == 0);
        int compared = 0;
        for (const json& p : doc.at("results")) {
            if (p.at("algo") != "fa2_tc_tuned") continue;
            const int N = p.at("N"), d = p.at("d");
            const json m = load(folder + "ladder_fp16_d" + std::to_string(d) + "_N" + std::to_string(N) + ".json");
            for (const json& r : m.at("results"))
                if (r.at("algo") == "fa2_tc_tuned" && r.at("causal") == p.at("causal")) {
                    const double e = (p.at("predicted_s").get<double>() - r.at("measured_s").get<double>()) / r.at("measured_s").get<double>();
                    CAPTURE(which, N, d, e);
                    CHECK(std::abs(e) <= 0.15);
                    ++compared;
                }
        }
        CHECK(compared == 16);
    }
}

}  // namespace

TEST_CASE("kernel ladder on the H100, run 2 (2026-11-28): fa2_tc_tuned with full-tile copies, the lazy rescale and causal Q "
          "tiles heaviest first passes cuda-check and compute-sanitizer and reaches 98-117% of PyTorch's FlashAttention-2",
          "[hardware][ladder][yardstick]") {
    // Issue 22's tuned-rung target after the changes of 40d8ea4 (cuda/results/2026-11-28-h100-ladder, one call, the
    // predictions committed before it in 060d6a2): >= 100% of PyTorch's flash backend at N >= 2048, every d and causal
    // setting. Not met: 6 of 32 configurations below 1.0 (d=64 causal at N = 2048..8192, d=128 non-causal at N = 2048),
    // the lowest 0.982 (d=64 causal bf16 N = 2048); it was 18 of 32 and 0.935 in 2026-11-27-h100-ladder.
    check_tuned_ladder_run(kResults + "2026-11-28-h100-ladder/", "H100 80GB HBM3", 6, 0.98, 1.18, "c4f464d");
}

TEST_CASE("kernel ladder on the H200, run 2 (2026-11-28): the same fa2_tc_tuned reaches 99.7-113% of PyTorch's "
          "FlashAttention-2, the Hopper rung 629-683 TFLOP/s",
          "[hardware][ladder][yardstick]") {
    // The second card of the same kernels (cuda/results/2026-11-28-h200-ladder, one call, the predictions committed before
    // it in 0c7a70c with the H200 preset and the H200's fa-calibrate file of 2026-11-26). The tuned rung's target is still
    // not met, by 0.3%: 2 of 32 configurations at 0.997 (d=128 non-causal, fp16 N = 4096 and bf16 N = 8192).
    check_tuned_ladder_run(kResults + "2026-11-28-h200-ladder/", "H200", 2, 0.99, 1.13, "8e047fe");
}

TEST_CASE("kernel ladder: every rung runs within 4% of its H200 time on the H100, configuration by configuration",
          "[hardware][ladder]") {
    // The same kernels (runs -c and -e on the H200, 2026-11-27-h100-ladder): compute-bound, on two cards with the same
    // 132 SMs and clocks, the H200's faster HBM does not enter (0.97-1.03x). PyTorch's backends moved more between the
    // two runs (flash 0.90-1.07x), so the ratios against them differ from card to card.
    int compared = 0;
    double lowest = 10, highest = 0;
    for (std::size_t i = 0; i < std::size(kLadderRuns); ++i) {
        const auto h200 = ladder_times(kLadderRuns[i]);
        const LadderRun& h100_run = kLadderRunsH100[kLadderRuns[i].d == kLadderRunsH100[0].d ? 0 : 1];
        REQUIRE(h100_run.d == kLadderRuns[i].d);
        const auto h100 = ladder_times(h100_run);
        for (const auto& [key, seconds] : h100) {
            const std::string& algo = std::get<0>(key);
            if (algo.rfind("fa2", 0) != 0) continue;  // the rungs, not PyTorch's backends
            CAPTURE(algo, std::get<1>(key), std::get<2>(key), std::get<3>(key), h100_run.d);
            const double r = seconds / h200.at(key);
            CHECK(std::abs(r - 1) < 0.04);
            lowest = std::min(lowest, r);
            highest = std::max(highest, r);
            ++compared;
        }
    }
    CHECK(compared == 2 * 4 * (8 + 6));
    CHECK(lowest < 0.97);
    CHECK(highest > 1.02);
}

TEST_CASE("kernel ladder on the H100, predicted before the run: fa2_tc_tuned and PyTorch's flash within 15% with the "
          "card's fa-calibrate file, fa2_wgmma 11-36% fast (9-30% with a lone block's fill and drain), fa2_tc within 9% with "
          "the H200's step table",
          "[hardware][ladder][calibrate]") {
    // Issue 22: every rung predicted within 15% from microbenchmarked ceilings, never from the rung's own timings. The
    // predictions were committed before the run (3e4b8e5) with the H100-SXM preset and with the H100's fa-calibrate
    // file of 2026-11-25-h100-c (summarize_predictions.py, SUMMARY.md). Met for fa2_tc_tuned and PyTorch's flash with
    // the calibrated file; not for fa2_wgmma (the products at the dense rate cuBLAS reaches, the softmax hidden behind
    // them), fa2_tc at d = 128 (instruction costs read at d = 64) or the CUDA-core fa2 at d = 64 with the calibrated
    // file (its FP32 ceiling is SGEMM's), nor for fa2_tc_tuned at d = 128 with the preset. Each (file, kernel, d): the
    // range of the errors in percent, rounded outwards, and how many of the 8 configurations are within 15%, for the
    // predictions written before the run and for today's simulator from the same GPU file or preset.
    // Today's simulator adds a lone block's fill and drain (BlockTerms::fill, 2026-11-29): fa2_wgmma, one
    // block per SM, moves; its errors now have a band of their own (now_lo, now_hi, now_within_15). So do the
    // kernels whose loop is FA2's step, which now issue at the step's rate measured alone on the H200 (2026-12-01,
    // model.fa2_step_issue_*, Hopper's default): fa2_tc at d = 128, 0 of 8 within 15% before, is 8 of 8 on this
    // card, which no number of the table came from; where nothing moved, the band is the one written before. And the
    // preset's FP32 rate is Hopper's 0.76 of the datasheet rate since 2026-12-02 (the H200's SGEMM, model.
    // fp32_peak_fraction), as the calibrated file's measured 52.0 TFLOP/s: the CUDA-core fa2 moves as it did with that
    // file (d = 64 +16..+29%, d = 128 -8..-1%), and so do the d = 64 kernels whose softmax the FP32 rate times.
    struct Band {
        const char* file;
        const char* algo;
        int d;
        double lo, hi;
        int within_15;
        double now_lo = 0, now_hi = 0;
        int now_within_15 = -1;  // -1: today's errors are in the same band as those written before the run
    };
    const Band bands[] = {
        {"calibrated", "fa2", 64, 12, 26, 1},           {"calibrated", "fa2", 128, -10, -3, 8},
        {"calibrated", "fa2_tc", 64, 6, 12, 8, -1, 5, 8}, {"calibrated", "fa2_tc", 128, -21, -16, 0, -9, -3, 8},
        {"calibrated", "fa2_tc_tuned", 64, -3, 8, 8},   {"calibrated", "fa2_tc_tuned", 128, -15, -5, 8, -5, 1, 8},
        {"calibrated", "fa2_wgmma", 64, -31, -10, 3, -19, -9, 6}, {"calibrated", "fa2_wgmma", 128, -37, -23, 0, -23, -21, 0},
        {"calibrated", "torch_flash", 64, -1, 8, 8},    {"calibrated", "torch_flash", 128, -15, -2, 8, -8, 6, 8},
        {"preset", "fa2", 64, -11, 0, 8, 16, 29, 0},    {"preset", "fa2", 128, -30, -24, 0, -8, -1, 8},
        {"preset", "fa2_tc", 64, 6, 12, 8, -1, 5, 8},   {"preset", "fa2_tc", 128, -21, -16, 0, -9, -3, 8},
        {"preset", "fa2_tc_tuned", 64, -7, 3, 8, -1, 10, 8}, {"preset", "fa2_tc_tuned", 128, -18, -9, 6, -6, 1, 8},
        {"preset", "fa2_wgmma", 64, -36, -16, 0, -17, -5, 7}, {"preset", "fa2_wgmma", 128, -39, -30, 0, -30, -24, 0},
        {"preset", "torch_flash", 64, -5, 4, 8, 1, 11, 8},        {"preset", "torch_flash", 128, -18, -6, 6, -8, 6, 8},
    };
    // The run's fp16 timings (what --paper predicts), each with its record for the current simulator.
    std::map<std::tuple<std::string, int, int, bool>, json> measured;
    for (const int d : {64, 128})
        for (const int N : {2048, 4096, 8192, 16384}) {
            const std::string tag = "_d" + std::to_string(d) + "_N" + std::to_string(N) + ".json";
            for (const std::string& file : {"ladder_fp16" + tag, "ladder_torch" + tag}) {
                const json doc = load(kLadderH100 + file);
                for (const json& r : doc.at("results"))
                    if (r.at("dtype") == "fp16" && r.at("algo") != "torch_cudnn" && r.contains("measured_s"))
                        measured[{r.at("algo").get<std::string>(), N, d, r.at("causal").get<bool>()}] = r;
            }
        }
    REQUIRE(measured.size() == 2 * 4 * 2 * 5);
    const GpuSpec preset = find_gpu_preset("H100-SXM");
    const GpuSpec calibrated = load_gpu_file(kRunCalibrated + "calibrated-gpu.json");
    for (const char* which : {"calibrated", "preset"}) {
        const json doc = load(kLadderH100 + "predicted_before_ladder_" + which + ".json");
        CHECK(doc.at("simulator_commit").get<std::string>().rfind("6c783dd", 0) == 0);
        if (std::string(which) == "calibrated")
            CHECK(doc.at("gpu_file") == "cuda/results/2026-11-25-h100-c/calibrated-gpu.json");
        else
            CHECK(doc.at("gpu_preset") == "H100-SXM");
        std::map<std::pair<std::string, int>, std::vector<std::pair<double, double>>> errors;  // (before, now) in %
        for (const json& p : doc.at("results")) {
            const std::string algo = p.at("algo");
            const int N = p.at("N"), d = p.at("d");
            const json& r = measured.at({algo, N, d, p.at("causal").get<bool>()});
            const double m = r.at("measured_s");
            const double now = predict(r, std::string(which) == "calibrated" ? calibrated : preset).time_s;
            errors[{algo, d}].push_back({100 * (p.at("predicted_s").get<double>() - m) / m, 100 * (now - m) / m});
        }
        CHECK(errors.size() == 10);
        for (const Band& b : bands) {
            if (std::string(b.file) != which) continue;
            CAPTURE(b.file, b.algo, b.d);
            const auto& e = errors.at({b.algo, b.d});
            REQUIRE(e.size() == 8);
            int within = 0, within_now = 0;
            for (const auto& [before, now] : e) {
                CAPTURE(before, now);
                CHECK(before >= b.lo);
                CHECK(before <= b.hi);
                const bool moved = b.now_within_15 >= 0;
                CHECK(now >= (moved ? b.now_lo : b.lo));  // today's simulator, from the same GPU file or preset
                CHECK(now <= (moved ? b.now_hi : b.hi));
                within += std::abs(before) <= 15;
                within_now += std::abs(now) <= 15;
            }
            CHECK(within == b.within_15);
            CHECK(within_now == (b.now_within_15 >= 0 ? b.now_within_15 : b.within_15));
        }
    }
}

namespace {
const std::string kRunFill = kResults + "2026-11-29-h200-fill/";  // unseen shapes after the fill-and-drain change

// Measured seconds of a run's timings by (kernel, N, d, dtype, causal): the ladder's fp16 files (fa-validate and
// PyTorch's flash backend) and the backward's fp16/bf16 (fa-validate and PyTorch's flash backward).
using TimingKey = std::tuple<std::string, int, int, std::string, bool>;
std::map<TimingKey, double> fill_run_timings() {
    std::map<TimingKey, double> t;
    auto add = [&](const json& doc, bool fp16_only) {
        for (const json& r : doc.at("results"))
            if (r.contains("measured_s") && (!fp16_only || r.at("dtype") == "fp16")) {
                CHECK(r.value("accuracy", json::object()).value("pass", true));  // every timed output passes the rule
                t[{r.at("algo"), r.at("N"), r.at("d"), r.at("dtype"), r.at("causal")}] = r.at("measured_s");
            }
    };
    for (const int d : {64, 128})
        for (const int N : {1024, 3072, 6144}) {
            const std::string tag = "_d" + std::to_string(d) + "_N" + std::to_string(N) + ".json";
            add(load(kRunFill + "ladder_fp16" + tag), true);
            add(load(kRunFill + "ladder_torch" + tag), true);
        }
    add(load(kRunFill + "validate_bwd_half.json"), false);
    add(load(kRunFill + "torch_bwd.json"), false);
    return t;
}

// A predictions file's errors (predicted / measured - 1) by (kernel, d), and every prediction by its key.
struct PredictedErrors {
    std::map<std::pair<std::string, int>, std::vector<double>> by_kernel;
    std::map<TimingKey, double> predicted;
};
PredictedErrors fill_run_errors(const std::string& file, const std::map<TimingKey, double>& measured) {
    PredictedErrors out;
    const json doc = load(kRunFill + file);
    for (const json& p : doc.at("results")) {
        const TimingKey k{p.at("algo"), p.at("N"), p.at("d"), p.at("dtype"), p.at("causal")};
        out.predicted[k] = p.at("predicted_s");
        if (measured.count(k)) out.by_kernel[{p.at("algo"), p.at("d")}].push_back(p.at("predicted_s").get<double>() / measured.at(k) - 1);
    }
    return out;
}
double mean_abs(const std::vector<double>& e) {
    double s = 0;
    for (const double x : e) s += std::abs(x);
    return s / static_cast<double>(e.size());
}
int within(const std::vector<double>& e, double tolerance) {
    return static_cast<int>(std::count_if(e.begin(), e.end(), [&](double x) { return std::abs(x) <= tolerance; }));
}
}  // namespace

TEST_CASE("shapes no run had timed (H200, N = 1024, 3072, 6144): a lone block's fill and drain, predicted before the "
          "run, brings fa2_wgmma from 23%/20% to 15%/10% mean error and leaves kernels with two blocks per SM as they were",
          "[hardware][ladder][backward][time]") {
    // cuda/results/2026-11-29-h200-fill: the forward ladder in the FA2 paper's setting and the backward kernels at
    // sequence lengths the committed runs never timed, predicted (e492741) by the model with the fill and drain
    // (0b5d423) and by the one before it (9255fa0), both from the H200 preset, before the run.
    const std::map<TimingKey, double> measured = fill_run_timings();
    // 6 (d, N): 4 rungs and PyTorch's flash and cuDNN, causal or not; 16 backward problems: 3 kernels and PyTorch's two.
    CHECK(measured.size() == 6 * (4 + 2) * 2 + 16 * (3 + 2));
    for (const char* f : {"predicted_before_ladder_preset.json", "predicted_before_bwd_preset.json"})
        CHECK(load(kRunFill + f).at("simulator_commit").get<std::string>().rfind("0b5d423", 0) == 0);
    for (const char* f : {"predicted_before_ladder_preset_previous_model.json", "predicted_before_bwd_preset_previous_model.json"})
        CHECK(load(kRunFill + f).at("simulator_commit").get<std::string>().rfind("9255fa0", 0) == 0);
    const PredictedErrors ladder = fill_run_errors("predicted_before_ladder_preset.json", measured);
    const PredictedErrors ladder_before = fill_run_errors("predicted_before_ladder_preset_previous_model.json", measured);
    const PredictedErrors bwd = fill_run_errors("predicted_before_bwd_preset.json", measured);
    const PredictedErrors bwd_before = fill_run_errors("predicted_before_bwd_preset_previous_model.json", measured);

    // fa2_wgmma (one block per SM): mean absolute error and how many of 6 within 15%, before the change and with it.
    const auto& w64 = ladder.by_kernel.at({"fa2_wgmma", 64});
    const auto& w128 = ladder.by_kernel.at({"fa2_wgmma", 128});
    REQUIRE(w64.size() == 6);
    REQUIRE(w128.size() == 6);
    CHECK(mean_abs(ladder_before.by_kernel.at({"fa2_wgmma", 64})) == Approx(0.229).margin(0.001));
    CHECK(mean_abs(ladder_before.by_kernel.at({"fa2_wgmma", 128})) == Approx(0.196).margin(0.001));
    CHECK(mean_abs(w64) == Approx(0.152).margin(0.001));
    CHECK(mean_abs(w128) == Approx(0.103).margin(0.001));
    CHECK(within(ladder_before.by_kernel.at({"fa2_wgmma", 64}), 0.15) == 1);
    CHECK(within(w64, 0.15) == 3);
    CHECK(within(ladder_before.by_kernel.at({"fa2_wgmma", 128}), 0.15) == 3);
    CHECK(within(w128, 0.15) == 5);
    // Still fast: the rung's softmax and products wait on each other more than max(M, S) says (docs/model.md).
    for (const double e : w64) CHECK(e < -0.09);
    for (const double e : w128) CHECK(e < -0.05);

    // The tensor-core FA2 backward (one block per SM): 10 of 16 within 20% before, 12 with it; still 15-22% fast.
    std::vector<double> tc, tc_before;
    for (const int d : {64, 128}) {
        for (const double e : bwd.by_kernel.at({"fa2_bwd_tc", d})) tc.push_back(e);
        for (const double e : bwd_before.by_kernel.at({"fa2_bwd_tc", d})) tc_before.push_back(e);
    }
    REQUIRE(tc.size() == 16);
    CHECK(within(tc_before, 0.20) == 10);
    CHECK(within(tc, 0.20) == 12);
    for (const double e : tc) CHECK((e > -0.23 && e < -0.14));

    // Kernels whose blocks share an SM (fa2_tc: 3, fa2_tc_tuned: 2) or that run as a library's GEMMs: the same
    // predictions from both models.
    for (const auto* p : {&ladder, &bwd}) {
        const auto& before = p == &ladder ? ladder_before : bwd_before;
        for (const auto& [k, s] : p->predicted) {
            const std::string& algo = std::get<0>(k);
            if (algo == "fa2_tc" || algo == "fa2_tc_tuned" || algo == "standard_cublas_bwd") CHECK(s == before.predicted.at(k));
        }
    }
}

namespace {

// A profiled kernel name (torch.profiler) or one of fa-sim's, as the step of PyTorch's math backend it is
// (the first pattern that matches).
std::string math_backend_step(const std::string& name) {
    const std::pair<const char*, const char*> steps[] = {
        {"direct_copy", "to fp32"},   {"_fp32", "to fp32"},         {"float16_copy", "to fp16"},   {"_half", "to fp16"},
        {"BinaryFunctor", "rows"},    {"mul_rows", "rows"},         {"MulFunctor", "scale"},       {"mul_", "scale"},
        {"FillFunctor<bool>", "ones"}, {"mask_ones", "ones"},       {"triu_tril", "tril"},         {"mask_tril", "tril"},
        {"FillFunctor", "fill"},      {"fill_zero", "fill"},        {"Memset", "fill"},            {"CUDAFunctor_add", "add"},
        {"add_mask", "add"},          {"gemv", "GEMM"},             {"gemm", "GEMM"},              {"softmax", "softmax"},
        {"SoftMax", "softmax"},       {"isneginf", "isneginf"},     {"and_kernel", "all"},         {"all_rows", "all"},
        {"where", "where"}};
    for (const auto& [pattern, step] : steps)
        if (name.find(pattern) != std::string::npos) return step;
    return "? " + name;
}

// A kernel list as its steps, without the scalar fills (one-element tensors) and with ATen's launches of one
// operation in several parts (a tensor past 2^31 bytes) counted once.
std::vector<std::string> math_backend_steps(const std::vector<std::string>& names) {
    std::vector<std::string> steps;
    for (const std::string& n : names) {
        const std::string step = math_backend_step(n);
        if (step != "fill" && (steps.empty() || steps.back() != step)) steps.push_back(step);
    }
    return steps;
}

}  // namespace

// PyTorch's math backend, modelled as the kernels it runs (fp16 copied to fp32, SGEMMs, ATen's element-wise kernels)
// rather than as standard attention, which predicted it 80-92% fast.
TEST_CASE("PyTorch's math backend: the kernels torch 2.11 profiled, forward and backward, and timings -31..+8% on the H200 and H100",
          "[hardware][torch_math]") {
    // torch 2.11's profiler on the H200 (decode grid, one query row, 32 K/V heads: no GQA copies, tensors small
    // enough for one launch each): the forward's 14 kernels, in fa-sim's order.
    const json decode = load(kResults + "2026-11-29-h200-decode-stages/torch_decode.json");
    int compared = 0;
    for (const json& r : decode.at("results")) {
        if (r.at("algo") != "torch_math" || r.at("kv_heads") != r.at("heads") || r.value("kernels", json::array()).size() != 14) continue;
        CAPTURE(r.at("batch").get<int>(), r.at("Nk").get<int>());
        AttentionProblem p;
        p.batch = r.at("batch");
        p.heads = r.at("heads");
        p.N = r.at("N");
        p.Nk = r.at("Nk");
        p.d = r.at("d");
        std::vector<std::string> modelled;
        for (const KernelRecord& k : simulate(algorithm("torch_math"), p, find_gpu_preset("H200")).kernels)
            modelled.push_back(k.desc.name);
        CHECK(math_backend_steps(r.at("kernels").get<std::vector<std::string>>()) == math_backend_steps(modelled));
        ++compared;
    }
    CHECK(compared == 8);
    // The FA2 paper's shapes at N = 2048 (d = 64 and 128, causal or not), forward and backward
    // (cuda/scripts/torch_math_kernels.py on the H200, 2026-11-29).
    const json profiled = load(kResults + "2026-11-29-h200-gemm-shapes/torch_math_kernels.json");
    REQUIRE(profiled.at("runs").size() == 4);
    for (const json& r : profiled.at("runs")) {
        CAPTURE(r.at("d").get<int>(), r.at("causal").get<bool>());
        AttentionProblem p;
        p.batch = r.at("batch");
        p.heads = r.at("heads");
        p.N = p.Nk = r.at("N");
        p.d = r.at("d");
        p.causal = r.at("causal");
        for (const PassSelection pass : {PassSelection::fwd, PassSelection::bwd}) {
            std::vector<std::string> modelled;
            for (const KernelRecord& k : simulate(algorithm("torch_math"), pass, p, find_gpu_preset("H200"), TileRequest{}, ModelOptions{}).kernels)
                modelled.push_back(k.desc.name);
            const json& names = r.at(pass == PassSelection::fwd ? "forward" : "backward");
            CHECK(math_backend_steps(names.get<std::vector<std::string>>()) == math_backend_steps(modelled));
        }
    }

    // Timings at N >= 2048, predicted / measured - 1, per card and pass: [lo, hi] over every configuration.
    auto errors = [](const std::string& file, const GpuSpec& gpu, const char* kernel) {
        std::vector<double> e;
        const json doc = load(file);  // kept: the loop below reads into it
        for_each_timed_result(doc, gpu, {kernel}, [&](const json&, double rt) { e.push_back(rt - 1); });
        return e;
    };
    const GpuSpec h200 = find_gpu_preset("H200");
    const GpuSpec h100 = load_gpu_file(kRunCalibrated + "calibrated-gpu.json");
    struct Group {
        std::vector<double> e;
        double lo, hi;
    };
    std::vector<Group> groups;
    // The FA2 paper setting's files of a run (those the math backend ran in), appended to `into`.
    auto paper_errors = [&](const std::string& run, const GpuSpec& gpu, std::vector<double> into) {
        for (const int d : {64, 128})
            for (const int n : {2048, 4096, 8192}) {
                const std::string f = run + "paper_torch_d" + std::to_string(d) + "_N" + std::to_string(n) + ".json";
                if (std::ifstream(f).good())
                    for (const double x : errors(f, gpu, "torch_math")) into.push_back(x);
            }
        return into;
    };
    // H200: the first run's grid (fp32 too: no copies) and the 2026-11-26 paper setting.
    groups.push_back({paper_errors(kResults + "2026-11-26-h200/", h200, errors(kRunA + "torch_sdpa.json", h200, "torch_math")),
                      -0.31, -0.08});
    groups.push_back({paper_errors(kResults + "2026-11-25-h100-d/", h100, {}), -0.17, -0.08});
    {
        std::vector<double> bwd_h200 = errors(kResults + "2026-11-26-h200/torch_bwd.json", h200, "torch_math_bwd");
        for (const double x : errors(kResults + "2026-11-29-h200-fill/torch_bwd.json", h200, "torch_math_bwd")) bwd_h200.push_back(x);
        groups.push_back({bwd_h200, -0.23, 0.09});
        groups.push_back({errors(kRunBwd + "torch_bwd.json", h100, "torch_math_bwd"), -0.32, 0.05});
    }
    const std::size_t sizes[] = {46, 10, 40, 24};
    for (std::size_t g = 0; g < groups.size(); ++g) {
        CAPTURE(g);
        CHECK(groups[g].e.size() == sizes[g]);
        for (const double x : groups[g].e) CHECK((x > groups[g].lo && x < groups[g].hi));
    }
}

namespace {
// Measured time of each result of fa-validate files, by (algo, d, N, causal) or, for the decode grid, by
// (algo, batch, K/V heads, Nk): min over the files given (one per pass). The rows point into `docs`.
using TimedRows = std::map<std::tuple<std::string, int, int, int>, const json*>;
TimedRows rows_by_shape(const std::vector<json>& docs, bool decode) {
    TimedRows out;
    for (const json& doc : docs)
        for (const json& r : doc.at("results")) {
            const auto key = decode ? std::tuple{r.at("algo").get<std::string>(), r.at("batch").get<int>(), r.at("kv_heads").get<int>(),
                                                 r.at("Nk").get<int>()}
                                    : std::tuple{r.at("algo").get<std::string>(), r.at("d").get<int>(), r.at("N").get<int>(),
                                                 static_cast<int>(r.at("causal").get<bool>())};
            auto it = out.find(key);
            if (it == out.end() || r.at("measured_s").get<double>() < it->second->at("measured_s").get<double>()) out[key] = &r;
        }
    return out;
}
double seconds(const json* r) { return r->at("measured_s").get<double>(); }

// The decode grid one build of an A/B run timed (decode_BUILD_1.json and _2.json): the files, held, and each
// shape's faster pass.
struct DecodePasses {
    std::vector<json> docs;
    TimedRows rows;
};
DecodePasses decode_passes(const std::string& run, const std::string& build) {
    DecodePasses p{{load(run + "decode_" + build + "_1.json"), load(run + "decode_" + build + "_2.json")}, {}};
    p.rows = rows_by_shape(p.docs, true);  // points into p.docs' elements, which moving p keeps where they are
    return p;
}

// fa-sim's prediction of a result whose kernel copied whole tiles with one address per thread, run by an
// fa-validate that did not yet record it ("tile_addresses": cuda/results/2026-11-30-h200-tile-copies*).
double predicted_one_address_per_tile(const json& r, const GpuSpec& gpu) { return predict(r, gpu, false, true).time_s; }
// The GPU as the model took it before FA2's step table (2026-12-01): every mma.sync kernel at the readiness law.
GpuSpec without_step_table(GpuSpec gpu) {
    gpu.model.fa2_step_issue_d64.clear();
    gpu.model.fa2_step_issue_d128.clear();
    return gpu;
}
}  // namespace

TEST_CASE("tile copies with one address per whole tile (H200, 2026-11-30): fa2_tc 9-12% faster at d = 128, its spills gone, "
          "FlashDecoding's batch-1 MQA 3% faster with four stages, fa1_tc, fa2_tc_tuned and the backward 1-3% slower with "
          "them (kept per chunk), and the model, counting the copies, predicts every decode shape within 10%, batch-1 MQA "
          "within 6%",
          "[hardware][decode][time]") {
    const GpuSpec gpu = find_gpu_preset("H200");
    // Call a (the copies alone, c359e2c): cuda-check of the five kernels that copy with load_tile_async. Its one
    // failure is fa2_bwd_tc's bf16 case with one query and one key, where dQ = 0 and the kernel's fp32 D and dP
    // differ in summation order: the floor then followed |dP| + |D|, now the sums of their terms' absolute
    // values (reference/attention_backward.cpp), which that difference is well inside.
    const std::string a = kResults + "2026-11-30-h200-tile-copies/";
    CHECK(read_text(a + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    const std::string check_a = read_text(a + "check.txt");
    CHECK(check_a.find("2081 passed, 1 failed") != std::string::npos);
    CHECK(check_a.find("fa2_bwd_tc       bf16   2   8   8     1     1   64 yes    64x128        -  3.539e-07  2.959e-07  "
                       "0.000e+00   1.196         -  1.978e-06  FAIL  dQ out of tolerance in head 12") != std::string::npos);
    check_sanitizer_clean(read_text(a + "sanitizer.txt"));
    const DecodePasses old_pa = decode_passes(a, "old"), new_pa = decode_passes(a, "new");
    const TimedRows &old_a = old_pa.rows, &new_a = new_pa.rows;
    REQUIRE(old_a.size() == 18);
    for (const auto& [shape, r] : new_a) {
        CAPTURE(std::get<1>(shape), std::get<2>(shape), std::get<3>(shape));
        const double ratio = seconds(r) / seconds(old_a.at(shape));  // 23% fewer instructions per tile, ~no time
        CHECK((ratio > 0.98 && ratio < 1.022));
    }

    // Call b (8f09459: the copies, and four K/V stages where the split grid fits one block per SM).
    const std::string b = kResults + "2026-11-30-h200-tile-copies-b/";
    CHECK(read_text(b + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    CHECK(read_text(b + "check.txt").find("810 passed, 0 failed") != std::string::npos);
    check_sanitizer_clean(read_text(b + "sanitizer.txt"));
    const DecodePasses old_pb = decode_passes(b, "old"), new_pb = decode_passes(b, "new");
    const TimedRows &old_b = old_pb.rows, &new_b = new_pb.rows;
    REQUIRE(new_b.size() == 18);
    for (const auto& [shape, r] : new_b) {
        const auto [algo, batch, kv, nk] = shape;
        CAPTURE(batch, kv, nk);
        const double ratio = seconds(r) / seconds(old_b.at(shape));
        if (batch == 1 && kv == 1 && nk >= 65536) CHECK((ratio > 0.96 && ratio < 0.975));  // four stages
        else CHECK((ratio > 0.985 && ratio < 1.01));
        // The model with the copies' instructions: batch-1 MQA within 6% (+7..+32% with them counted per chunk,
        // fa-validate's error_pct in these files); every shape within 10%.
        const double error = predicted_one_address_per_tile(*r, gpu) / seconds(r) - 1;
        if (batch == 1 && kv == 1) CHECK(std::abs(error) < 0.06);
        CHECK(std::abs(error) < 0.1);
    }
    // Batch-1 MQA still streams K and V at 58% of the copy rate at most.
    CHECK(new_b.at({"flash_decoding", 1, 1, 131072})->at("kv_bandwidth_gbps").get<double>() / 4250 < 0.58);

    // The FA2 paper's setting, fp16, N = 2048 and 8192, one pass each.
    std::vector<json> old_docs, new_docs;
    for (const std::string kind : {"ladder", "bwd"})
        for (const std::string tag : {"_d64_N2048", "_d64_N8192", "_d128_N2048", "_d128_N8192"}) {
            old_docs.push_back(load(b + kind + "_old_1" + tag + ".json"));
            new_docs.push_back(load(b + kind + "_new_1" + tag + ".json"));
        }
    const TimedRows old_p = rows_by_shape(old_docs, false), new_p = rows_by_shape(new_docs, false);
    REQUIRE(new_p.size() == 32);  // fa2_tc, fa2_tc_tuned, fa1_tc, fa2_bwd_tc x 2 d x 2 N x causal or not
    std::map<std::pair<std::string, int>, std::pair<double, double>> range;  // (kernel, d) -> new / old, lowest and highest
    for (const auto& [shape, r] : new_p) {
        const double ratio = seconds(r) / seconds(old_p.at(shape));
        auto& [lo, hi] = range.try_emplace({std::get<0>(shape), std::get<1>(shape)}, 9.0, 0.0).first->second;
        lo = std::min(lo, ratio);
        hi = std::max(hi, ratio);
        // fa2_tc, kept with one address per tile, against the model that counts its copies so. With the readiness
        // law: -7..-2% at d = 64 (+5..+10% with the copies counted per chunk), -22..-17% at d = 128, the miss the
        // earlier runs showed against the spilling kernel (-20..-18%): the model's step matches the SASS at both
        // head dims (tests/sim/test_issue_costs.cpp), so the gap between them lies elsewhere. With FA2's step
        // measured alone (model.fa2_step_issue_*, 2026-12-01): -11..-4% at d = 64, -19..-14% at d = 128, the rest
        // being the kernel's own waits at its barriers, which the step alone has none of (docs/model.md).
        if (std::get<0>(shape) == "fa2_tc") {
            CAPTURE(std::get<1>(shape), std::get<2>(shape), std::get<3>(shape));
            const double error = predicted_one_address_per_tile(*r, gpu) / seconds(r) - 1;
            const double law = predicted_one_address_per_tile(*r, without_step_table(gpu)) / seconds(r) - 1;
            if (std::get<1>(shape) == 64) {
                CHECK((law > -0.08 && law < -0.01));
                CHECK((error > -0.12 && error < -0.03));
            } else {
                CHECK((law > -0.23 && law < -0.16));
                CHECK((error > -0.19 && error < -0.14));
            }
        }
    }
    auto within = [&](const char* kernel, int d, double lo, double hi) {
        CAPTURE(kernel, d, range.at({kernel, d}).first, range.at({kernel, d}).second);
        CHECK(range.at({kernel, d}).first > lo);
        CHECK(range.at({kernel, d}).second < hi);
    };
    within("fa2_tc", 128, 0.88, 0.92);        // the spills gone
    within("fa2_tc", 64, 0.985, 1.001);
    within("fa1_tc", 64, 1.02, 1.035);        // slower: fa1_tc copies per chunk again
    within("fa1_tc", 128, 0.98, 0.995);
    within("fa2_tc_tuned", 64, 1.0, 1.008);
    within("fa2_tc_tuned", 128, 1.0, 1.02);   // slower: per chunk again
    within("fa2_bwd_tc", 64, 1.015, 1.03);    // slower: per chunk again
    within("fa2_bwd_tc", 128, 0.985, 0.995);

    // Call c (62899a3): the kernels as kept pass cuda-check, the one-key backward case included; fa-validate records
    // the copies, and predict() models them from that record.
    const std::string c = kResults + "2026-11-30-h200-tile-copies-c/";
    CHECK(read_text(c + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    CHECK(read_text(c + "check.txt").find("2082 passed, 0 failed") != std::string::npos);
    for (const std::string file : {"decode.json", "fa2_tc.json"}) {
        const json doc = load(c + file);  // held: the loop walks one of its members
        for (const json& r : doc.at("results")) {
            CAPTURE(file, r.at("Nk").get<int>(), r.value("kv_heads", 0));
            REQUIRE(measured_launch(r).one_address_per_tile);
            const double error = ratio(predict(r, gpu).time_s, r.at("measured_s")) - 1;
            // fa-validate's own prediction, made with the readiness law; with fewer K/V heads than heads,
            // FlashDecoding's partials have L2 tiles of their own per split since (2026-11-30): up to 0.5 points slower
            const double law = ratio(predict(r, without_step_table(gpu)).time_s, r.at("measured_s")) - 1;
            const bool partials_moved = file == "decode.json" && r.value("kv_heads", 32) < r.value("heads", 32);
            CHECK(law == Approx(r.at("error_pct").get<double>() / 100).margin(partials_moved ? 6e-3 : 1e-3));
            if (file == "decode.json") {
                CHECK(error == law);  // decode blocks run alone on their SMs: the readiness law either way
                CHECK(std::abs(error) < 0.09);
            } else {
                CHECK((law > -0.2 && law < -0.16));
                CHECK((error > -0.17 && error < -0.15));  // FA2's step table (d = 128, N = 8192): -16%
            }
        }
    }
}

TEST_CASE("one read of K and V from DRAM (H200): below 64 MiB no kernel streams at 80% of the copy rate, so batch-1 MQA "
          "decoding cannot reach issue 20's 80% at 16k or 64k keys, and takes 1.5-2.1x a bare read",
          "[hardware][decode][time]") {
    const std::string run = kResults + "2026-11-30-h200-read-once/";
    CHECK(read_text(run + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    const json doc = load(run + "read_once.json");
    const double copy = doc.at("d2d_copy_bytes_per_s");
    CHECK(copy == Approx(4.225e12).epsilon(0.001));
    std::map<std::int64_t, double> seconds;  // MiB -> one read
    for (const json& r : doc.at("read_once")) {
        const std::int64_t mib = r.at("bytes").get<std::int64_t>() >> 20;
        seconds[mib] = r.at("seconds");
        CHECK(r.at("bytes_per_s").get<double>() == Approx(r.at("bytes").get<double>() / r.at("seconds").get<double>()).epsilon(0.002));
    }
    REQUIRE(seconds.size() == 6);
    auto share = [&](std::int64_t mib) { return static_cast<double>(mib << 20) / seconds.at(mib) / copy; };
    CHECK(share(8) < 0.35);   // one K/V head, 16k keys
    CHECK(share(32) < 0.80);  // 64k keys
    CHECK(share(64) > 0.80);  // 128k keys: reachable by a bare read
    CHECK(share(256) > 1.0);  // one-way reads outrun the half-read, half-write copy
    // A launch, ramp and drain of about 4-5 us whatever the size: 8 MiB takes 6.1 us, where 2 us would be the copy rate.
    CHECK(seconds.at(8) - static_cast<double>(8 << 20) / copy > 4e-6);
    // Batch-1 MQA decoding on the same card (the kernels as kept, 2026-11-30-h200-tile-copies-b), against the read
    // of its K and V.
    const json decode = load(kResults + "2026-11-30-h200-tile-copies-b/decode_new_2.json");
    for (const json& r : decode.at("results")) {
        if (r.at("batch").get<int>() != 1 || r.at("kv_heads").get<int>() != 1) continue;
        const std::int64_t mib = r.at("kv_bytes").get<std::int64_t>() >> 20;
        CAPTURE(mib);
        const double over_read = r.at("measured_s").get<double>() / seconds.at(mib);
        CHECK((over_read > 1.4 && over_read < 2.2));
    }
}

namespace {
// K/V GB/s per decode shape of one pass of decode_copies_session.sh: its two fa-validate files (batch 1 and 8; 64).
std::map<DecodeShape, double> copies_pass(const std::string& call, const std::string& pass) {
    std::map<DecodeShape, double> gbps;
    for (const char* part : {"_b1-8.json", "_b64.json"}) {
        const json doc = load(call + "decode_" + pass + part);  // held: the loop walks a reference into it
        for (const json& r : doc.at("results")) {
            CHECK(r.at("accuracy").at("pass").get<bool>());
            gbps[decode_shape(r)] = r.at("kv_bandwidth_gbps").get<double>();
        }
    }
    return gbps;
}
}  // namespace

TEST_CASE("decode on the H200: K/V by the copy engine, a bulk copy per key row slower on every shape, TMA boxes 2.5-11% "
          "faster but for batch-1 MQA and no slower than PyTorch's fastest backend on any",
          "[hardware][decode][time]") {
    // cuda/results/2026-11-30-h200-decode-copies: per-thread cp.async against the copy engine, two calls of
    // decode_copies_session.sh, four passes each (per_thread, new, per_thread, new), PyTorch's SDPA beside.
    const std::string run = kResults + "2026-11-30-h200-decode-copies/";
    for (const auto& [call, variant, faster, slower_than_torch] :
         {std::tuple{"call1-bulk-rows/", "bulk_rows", 0, 7}, std::tuple{"call2-tensor-tiles/", "tensor_tiles", 21, 0}}) {
        CAPTURE(call);
        const std::string dir = run + call;
        CHECK(read_text(dir + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
        CHECK(read_text(dir + "check_bulk.txt").find("810 passed, 0 failed") != std::string::npos);  // either call's copies
        check_sanitizer_clean(read_text(dir + "sanitizer.txt"));
        const auto base1 = copies_pass(dir, "per_thread_1"), base2 = copies_pass(dir, "per_thread_2");
        const auto new1 = copies_pass(dir, std::string(variant) + "_1"), new2 = copies_pass(dir, std::string(variant) + "_2");
        CHECK(new1.size() == 24);
        std::map<DecodeShape, double> fastest_torch = fastest_torch_kv_gbps(load(dir + "torch_decode_b1-8.json"));
        fastest_torch.merge(fastest_torch_kv_gbps(load(dir + "torch_decode_b64.json")));
        int gains = 0, new_below_torch = 0, base_below_torch = 0;
        double lowest = 2, highest = -2;
        for (const auto& [shape, a] : new1) {
            const auto [batch, kv, nk] = shape;
            CAPTURE(batch, kv, nk);
            const double base = (base1.at(shape) + base2.at(shape)) / 2, mean = (a + new2.at(shape)) / 2;
            const double change = mean / base - 1;
            lowest = std::min(lowest, change);
            highest = std::max(highest, change);
            gains += change > 0;
            if (std::string(variant) == "tensor_tiles") CHECK((change > 0) == !(batch == 1 && kv == 1));  // MQA: the deep pipeline
            base_below_torch += base < fastest_torch.at(shape);
            new_below_torch += mean < fastest_torch.at(shape);
        }
        CHECK(gains == faster);
        CHECK(new_below_torch == slower_than_torch);
        if (std::string(variant) == "bulk_rows") {
            CHECK(lowest == Approx(-0.355).margin(0.003));  // batch-1 MQA at 128k keys
            CHECK(highest == Approx(-0.011).margin(0.002));
            CHECK(base_below_torch == 5);
        } else {
            CHECK(lowest == Approx(-0.047).margin(0.002));
            CHECK(highest == Approx(0.111).margin(0.002));
            CHECK(base_below_torch == 9);
        }
    }
}

TEST_CASE("decode on the H200 with K/V through TMA: FlashDecoding at least as fast as PyTorch's fastest backend on all 45 "
          "shapes and predicted within 20% on 44, fa2_tc at batch 1 predicted 32% slow",
          "[hardware][decode][time]") {
    // cuda/results/2026-11-30-h200-decode-tma: gpu_session.sh build predict decode with the kernel as kept (77759c5);
    // the predictions written before it by the same simulator.
    const std::string run = kResults + "2026-11-30-h200-decode-tma/";
    check_decode_run_files(run, 4.246e12, 810);
    const double copy = load(run + "decode_copy.json").at("d2d_copy_bytes_per_s");
    const json doc = load(run + "validate_decode.json");
    REQUIRE(doc.at("gpu").get<std::string>().find("H200") != std::string::npos);
    const std::map<DecodeShape, double> fastest_torch = fastest_torch_kv_gbps(load(run + "torch_decode.json"));
    const GpuSpec gpu = find_gpu_preset("H200");
    int fd = 0, fd_within_20 = 0, fa2 = 0, below_torch = 0, copy_engine = 0;
    double fd_abs_error = 0;
    for_each_timed_decode(doc, [&](const json& r, const std::string& algo, int batch, int kv, int nk, double measured) {
        const double rt = ratio(predict(r, gpu).time_s, measured);
        if (algo == "fa2_tc") {
            ++fa2;
            // One block per head at batch 1: its one warp with a row takes 35% less time since its copies took one
            // address per tile (2026-11-30-h200-tile-copies) and issues 0.23 per cycle (2026-11-30-h200-lone-warps);
            // the model's readiness, 0.17, is a mean of per-chunk kernels'.
            if (batch == 1) CHECK(rt == Approx(1.32).margin(0.015));
            else CHECK(std::abs(rt - 1) <= 0.12);
            return;
        }
        ++fd;
        fd_within_20 += std::abs(rt - 1) <= 0.20;
        fd_abs_error += std::abs(rt - 1);
        const double gbps = r.at("kv_bandwidth_gbps").get<double>();
        below_torch += gbps < fastest_torch.at({batch, kv, nk});
        copy_engine += r.at("launches").at(0).value("kv_copies", "") == "copy_engine";
        if (batch == 1 && kv == 32 && nk >= 16384) CHECK(gbps * 1e9 >= 0.89 * copy);
        // Above the copy rate, which is the model's DRAM term: predicted up to 9% slow.
        if (gbps * 1e9 > copy) CHECK(rt < 1.10);
    });
    CHECK(fd == 45);
    CHECK(fa2 == 15);
    CHECK(below_torch == 0);
    // The deep pipeline keeps per-thread copies: split grids of one block per SM, batch-1 MQA's five and 1k keys at
    // batch 1 with 8 K/V heads and at batch 8 with one.
    CHECK(copy_engine == 38);
    CHECK(fd_within_20 == 44);
    // 7.2% until each split's partials had L2 tiles of their own (2026-11-30): grouped shapes 0.1-7 points closer
    CHECK(fd_abs_error / fd == Approx(0.069).margin(0.002));
}

namespace {
// A counter of Nsight Compute's text report: the value after the metric's name and unit, thousands separators
// removed ("smsp__inst_executed.max  inst  140,001"; a ratio has no unit: pass unit = false).
double ncu_text_counter(const std::string& text, const std::string& name, bool unit = true) {
    const std::size_t at = text.find(name + " ");
    REQUIRE(at != std::string::npos);
    std::istringstream line(text.substr(at + name.size(), 200));
    std::string skipped, value;
    if (unit) line >> skipped;
    line >> value;
    value.erase(std::remove(value.begin(), value.end(), ','), value.end());
    return std::stod(value);
}
}  // namespace

TEST_CASE("lone warps on the H200: fa2_tc's one warp with a row issues 0.23 instructions per cycle, 547 per K/V tile, "
          "above the model's mma.sync readiness of 0.17",
          "[hardware][decode][issue]") {
    // cuda/results/2026-11-30-h200-lone-warps: profile_lone_warps.sh, the busiest scheduler of each launch.
    const std::string run = kResults + "2026-11-30-h200-lone-warps/lone_warps/";
    const std::string one_row = read_text(run + "fa2_tc_one_row.txt");
    const double instructions = ncu_text_counter(one_row, "smsp__inst_executed.max"),
                 cycles = ncu_text_counter(one_row, "smsp__cycles_active.max");
    CHECK(instructions / cycles == Approx(0.230).margin(0.001));
    CHECK(instructions / (16384 / 64) == Approx(547).margin(1));  // the busiest scheduler's warp: 256 K/V tiles of 64 keys
    CHECK(find_gpu_preset("H200").model.mma_sync_warp_ready == Approx(0.17));
}

TEST_CASE("the FA2 step alone on the H200 (peak-rates --attention-step): a lone warp issues in a third of cycles, more "
          "warps add little (the pipes saturate), and whole kernels issue 11-16% less than the step",
          "[hardware][issue]") {
    // cuda/results/2026-11-30-h200-attention-step: the step's cycles (clock64) and Nsight Compute on the same launches.
    const std::string run = kResults + "2026-11-30-h200-attention-step/";
    CHECK(read_text(run + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    std::map<std::tuple<int, int, int>, double> cycles;  // (d, row blocks, warps per scheduler) -> cycles a step
    const json doc = load(run + "attention_step.json");
    for (const json& a : doc.at("attention_step"))
        if (a.at("ran").get<bool>())
            cycles[{a.at("d").get<int>(), a.at("row_blocks").get<int>(), a.at("warps_per_scheduler").get<int>()}] = a.at("cycles_per_step");
    REQUIRE(cycles.size() == 9);
    // The scheduler's rate at W warps against one warp, from the cycles alone: W c(1) / c(W).
    auto rate_vs_lone = [&](int d, int w) { return w * cycles.at({d, 1, 1}) / cycles.at({d, 1, w}); };
    const double p = find_gpu_preset("H200").model.mma_sync_warp_ready;
    REQUIRE(p == Approx(0.17));
    auto law_vs_lone = [&](int n) { return (1 - std::pow(1 - p, n)) / p; };  // the model's independence law
    CHECK(rate_vs_lone(128, 3) == Approx(1.17).margin(0.01));
    CHECK(rate_vs_lone(64, 3) == Approx(1.30).margin(0.01));
    CHECK(rate_vs_lone(64, 4) == Approx(1.34).margin(0.01));
    CHECK(law_vs_lone(3) > 2 * rate_vs_lone(128, 3));  // the law: 2.5x the lone rate at three warps
    CHECK(law_vs_lone(4) > 2 * rate_vs_lone(64, 4));
    // Nsight Compute on the timed launches (each configuration's second): issue fraction per scheduler.
    const auto launches = ncu_raw_kernels(run + "attention_step_ncu.csv");
    REQUIRE(launches.size() == 18);
    std::vector<double> issue;
    for (std::size_t i = 1; i < launches.size(); i += 2) issue.push_back(ncu_number(launches[i], "smsp__issue_active.avg.per_cycle_active"));
    // Order of the runs: d = 64 (W = 1..4), d = 64 with two row blocks (W = 1, 2), d = 128 (W = 1..3).
    const double lone64 = issue[0], lone128 = issue[6], three64 = issue[2], three128 = issue[8];
    CHECK(lone64 == Approx(0.35).margin(0.005));
    CHECK(lone128 == Approx(0.32).margin(0.005));
    CHECK(lone128 > 1.8 * p);  // a lone warp's step: about twice the model's readiness
    CHECK(three128 < 1 - std::pow(1 - p, 3));  // three warps: below the model's law
    // Two row blocks in one warp issue as two warps do (n = 2 and 4 row blocks per scheduler).
    CHECK(issue[4] == Approx(issue[1]).margin(0.015));
    CHECK(issue[5] == Approx(issue[3]).margin(0.025));
    // fa2_tc at N = 4096, three blocks of 4 warps per SM: 11-16% below the step alone at three warps per scheduler.
    const double kernel64 = ncu_text_counter(read_text(run + "fa2_tc_d64.txt"), "smsp__issue_active.avg.per_cycle_active", false);
    const double kernel128 = ncu_text_counter(read_text(run + "fa2_tc_d128.txt"), "smsp__issue_active.avg.per_cycle_active", false);
    CHECK(kernel64 / three64 == Approx(0.89).margin(0.01));
    CHECK(kernel128 / three128 == Approx(0.84).margin(0.01));
    // fa-calibrate --raw runs the same probe (2026-12-01-h200-calibrate, the same machine 27 minutes later): it repeats.
    const std::string calibrate = kResults + "2026-12-01-h200-calibrate/";
    CHECK(read_text(calibrate + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    const json raw = load(calibrate + "calibrate_raw.json");
    REQUIRE(raw.at("attention_step").size() == cycles.size());
    for (const json& a : raw.at("attention_step")) {
        const std::tuple<int, int, int> key{a.at("d").get<int>(), a.at("row_blocks").get<int>(), a.at("warps_per_scheduler").get<int>()};
        CHECK(a.at("cycles_per_step").get<double>() == Approx(cycles.at(key)).epsilon(0.001));
    }
}

TEST_CASE("the H200's FA2 step issue table is the probe's measurement: Nsight Compute's instructions per step x warps "
          "over the clock64 cycles per step",
          "[hardware][issue]") {
    // The H200 preset's (and Hopper's default) model.fa2_step_issue_d64/_d128 come from this run
    // (cuda/results/2026-11-30-h200-attention-step/): each entry is W warps per scheduler x the warp instructions
    // one warp issues per step (ncu: smsp__inst_executed over 132 SMs x 4 schedulers x W warps x 2000 steps) over
    // the cycles one step takes (clock64). Rounded to three decimals in the preset.
    const std::string run = kResults + "2026-11-30-h200-attention-step/";
    const json doc = load(run + "attention_step.json");
    const auto launches = ncu_raw_kernels(run + "attention_step_ncu.csv");
    REQUIRE(launches.size() == 18);
    const GpuSpec h200 = find_gpu_preset("H200");
    std::size_t launch = 1;  // each configuration's timed launch (its second), in the order of the JSON's runs
    std::map<int, std::vector<double>> measured;
    for (const json& a : doc.at("attention_step")) {
        if (!a.at("ran").get<bool>()) continue;
        const int d = a.at("d").get<int>(), w = a.at("warps_per_scheduler").get<int>();
        const double instructions_per_step =
            ncu_number(launches.at(launch), "smsp__inst_executed.sum") / (132.0 * 4 * w * a.at("steps").get<double>());
        launch += 2;
        if (a.at("row_blocks").get<int>() != 1) continue;  // two row blocks a warp: the same issue as two warps
        CHECK(instructions_per_step == Approx(d == 64 ? 300.4 : 429.8).margin(0.5));
        measured[d].push_back(w * instructions_per_step / a.at("cycles_per_step").get<double>());
    }
    REQUIRE(measured[64].size() == 4);
    REQUIRE(measured[128].size() == 3);  // 4 warps per scheduler of the d = 128 step do not fit the register file
    for (const auto& [d, rates] : measured) {
        const std::vector<double>& table = d == 64 ? h200.model.fa2_step_issue_d64 : h200.model.fa2_step_issue_d128;
        REQUIRE(table.size() == rates.size());
        for (std::size_t i = 0; i < rates.size(); ++i) {
            CAPTURE(d, i + 1);
            CHECK(table[i] == Approx(rates[i]).margin(0.0006));
        }
    }
    // The H100 has the same SM (GH100): its preset takes the table as Hopper's default.
    CHECK(find_gpu_preset("H100-SXM").model.fa2_step_issue_d128 == h200.model.fa2_step_issue_d128);
}

TEST_CASE("fa-calibrate writes FA2's step issue table on the H200: the preset's within 0.001, from the probe's cycles",
          "[hardware][issue][calibrate]") {
    // cuda/results/2026-12-01-h200-calibrate-b: calibrate_session.sh with fa-calibrate writing model.fa2_step_issue_*.
    const std::string run = kResults + "2026-12-01-h200-calibrate-b/";
    CHECK(read_text(run + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    const GpuSpec calibrated = load_gpu_file(run + "calibrated-gpu.json");
    const GpuSpec preset = find_gpu_preset("H200");
    REQUIRE(calibrated.model.fa2_step_issue_d64.size() == 4);
    REQUIRE(calibrated.model.fa2_step_issue_d128.size() == 3);  // 4 warps per scheduler of the d = 128 step do not fit
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK(calibrated.model.fa2_step_issue_d64[i] == Approx(preset.model.fa2_step_issue_d64[i]).margin(0.001));
        if (i < 3) CHECK(calibrated.model.fa2_step_issue_d128[i] == Approx(preset.model.fa2_step_issue_d128[i]).margin(0.001));
    }
    // Each entry is W x the step's warp instructions (300 at d = 64, 430 at d = 128) over the cycles --raw recorded.
    const json raw = load(run + "calibrate_raw.json");
    int entries = 0;
    for (const json& a : raw.at("attention_step")) {
        if (a.at("row_blocks").get<int>() != 1) continue;
        const int d = a.at("d").get<int>(), w = a.at("warps_per_scheduler").get<int>();
        const std::vector<double>& table = d == 64 ? calibrated.model.fa2_step_issue_d64 : calibrated.model.fa2_step_issue_d128;
        CAPTURE(d, w);
        CHECK(table.at(static_cast<std::size_t>(w - 1)) == Approx(w * (d == 64 ? 300.0 : 430.0) / a.at("cycles_per_step").get<double>()));
        ++entries;
    }
    CHECK(entries == 7);
    for (const auto& [key, text] : calibrated.sources)
        if (key.rfind("model.fa2_step_issue_d", 0) == 0) CHECK(text.rfind("measured by fa-calibrate on this NVIDIA H200", 0) == 0);
}

TEST_CASE("CUDA-core flash kernels on the H200: a lone warp per scheduler issues in 40-50% of cycles, not the "
          "model's 37%", "[hardware][issue]") {
    // cuda/results/2026-12-02-h200-cuda-core-issue: Nsight Compute on the forward kernels at N = 4096 (batch 4, 2048 / d
    // heads). The model's lone-warp readiness was read from fa2 fp32 d = 64 on 2026-11-22 (37%); the kernel as it is
    // issues in 40%, the fp16 kernels in 43-50%. Recorded, not used: the share alone does not explain the misses.
    const std::string run = kResults + "2026-12-02-h200-cuda-core-issue/";
    CHECK(read_text(run + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    const GpuSpec h200 = find_gpu_preset("H200");
    REQUIRE(h200.model.cuda_core_warp_ready == Approx(0.37));
    struct Reading {
        const char* file;
        double warps, issue;
    };
    for (const Reading& r : {Reading{"ncu_fa2_d64_fp16.txt", 1.0, 0.50}, Reading{"ncu_fa2_d128_fp16.txt", 1.95, 0.67},
                             Reading{"ncu_fa1_d64_fp16.txt", 1.0, 0.50}, Reading{"ncu_fa1_d128_fp16.txt", 1.0, 0.43},
                             Reading{"ncu_fa2_d64_fp32.txt", 1.0, 0.40}}) {
        CAPTURE(r.file);
        const std::string text = read_text(run + r.file);
        CHECK(ncu_text_counter(text, "smsp__warps_active.avg.per_cycle_active") == Approx(r.warps));
        const double issue = ncu_text_counter(text, "smsp__issue_active.avg.per_cycle_active", false);
        CHECK(issue == Approx(r.issue));
        // Above the model's law for the warps it holds: 1 - 0.63^W.
        CHECK(issue > 1 - std::pow(1 - h200.model.cuda_core_warp_ready, std::round(r.warps)));
    }
}

TEST_CASE("backward kernels at unseen shapes on the H200, predicted before the run: fa2_bwd_tc and cuBLAS within 5%, "
          "the CUDA-core fa2_bwd 28-31% slow at d=128 (its lone warp issues in 54% of cycles, the model takes 37%)",
          "[hardware][backward][time]") {
    // cuda/results/2026-12-02-h200-backward-unseen: N = 3072 and 6144, batch 3, 12 heads (36 heads a grid), fp16.
    const std::string run = kResults + "2026-12-02-h200-backward-unseen/";
    CHECK(read_text(run + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    const json before = load(run + "predicted_before.json");
    CHECK(before.at("simulator_commit").get<std::string>().rfind("0bb06c9", 0) == 0);
    CHECK(before.at("gpu_preset") == "H200");
    using Key = std::tuple<std::string, int, int, bool>;  // algo, N, d, causal
    auto key = [](const json& r) { return Key{r.at("algo"), r.at("N"), r.at("d"), r.at("causal")}; };
    std::map<Key, double> written;
    for (const json& p : before.at("results")) written[key(p)] = p.at("predicted_s");
    REQUIRE(written.size() == 32);
    std::map<Key, double> measured;
    for (const char* file : {"validate_bwd_half.json", "torch_bwd.json"}) {
        const json doc = load(run + file);  // held: a loop over load(...).at(...) would outlive it
        for (const json& r : doc.at("results")) {
            if (!r.contains("measured_s")) continue;
            if (r.contains("accuracy")) CHECK(r.at("accuracy").at("pass").get<bool>());
            measured[key(r)] = r.at("measured_s");
        }
    }
    int checked = 0;
    for (const auto& [k, p] : written) {
        const auto& [algo, N, d, causal] = k;
        CAPTURE(algo, N, d, causal);
        REQUIRE(measured.count(k));
        const double e = p / measured.at(k) - 1;
        if (algo == "fa2_bwd_tc" || algo == "standard_cublas_bwd") CHECK(std::abs(e) <= 0.05);
        if (algo == "fa2_bwd") CHECK((d == 64 ? std::abs(e) <= 0.05 : (e > 0.27 && e < 0.31)));
        if (algo == "torch_flash_bwd") CHECK((d == 64 ? (e > -0.34 && e < -0.23) : (e >= 0 && e < 0.12)));
        ++checked;
    }
    CHECK(checked == 32);
    // fa2_bwd_tc at 0.88-0.97x PyTorch's flash backward at d = 128 (the issue asks 70%).
    for (const int N : {3072, 6144})
        for (const bool causal : {false, true}) {
            const double against = measured.at({"torch_flash_bwd", N, 128, causal}) / measured.at({"fa2_bwd_tc", N, 128, causal});
            CHECK((against > 0.87 && against < 0.98));
        }
    // Nsight Compute on fa2_bwd: d = 128, one warp per scheduler issuing in 54% of cycles against the model's 37%
    // (the 30% it predicts slow); d = 64, 1.91 warps issuing in 69%, near the law's 1 - 0.63^2.
    const GpuSpec h200 = find_gpu_preset("H200");
    const double lone = ncu_text_counter(read_text(run + "ncu_fa2_bwd_d128.txt"), "smsp__issue_active.avg.per_cycle_active", false);
    CHECK(ncu_text_counter(read_text(run + "ncu_fa2_bwd_d128.txt"), "smsp__warps_active.avg.per_cycle_active") == Approx(1.0));
    CHECK(lone == Approx(0.54));
    CHECK(lone / h200.model.cuda_core_warp_ready == Approx(1.46).margin(0.02));
    CHECK(ncu_text_counter(read_text(run + "ncu_fa2_bwd_d64.txt"), "smsp__issue_active.avg.per_cycle_active", false) == Approx(0.69));
}

TEST_CASE("the FA2 backward step alone on the H200 (peak-rates --backward-step): 2 warps per scheduler issue in 26% of "
          "cycles at d=64 and 22% at d=128, the preset's rates, dQ atomics into shared rows cost nothing, fa-calibrate "
          "writes the same rates, and fa2_bwd_tc with its step in a header is within 2% of the kernel before",
          "[hardware][issue][backward]") {
    // cuda/results/2026-12-01-h200-backward-step: the probe (clock64) and Nsight Compute on its launches.
    const std::string run = kResults + "2026-12-01-h200-backward-step/";
    CHECK(read_text(run + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    CHECK(read_text(run + "check.txt").find("390 passed, 0 failed") != std::string::npos);
    std::map<std::pair<int, bool>, double> cycles;  // (d, every block's dQ into the same rows) -> cycles a step
    const json doc = load(run + "backward_step.json");
    for (const json& b : doc.at("backward_step")) {
        REQUIRE(b.at("ran").get<bool>());
        CHECK(b.at("steps").get<int>() == 1000);
        cycles[{b.at("d").get<int>(), b.at("shared_dq").get<bool>()}] = b.at("cycles_per_step");
    }
    REQUIRE(cycles.size() == 4);
    for (const int d : {64, 128}) CHECK(cycles.at({d, true}) == Approx(cycles.at({d, false})).epsilon(0.002));
    // Nsight Compute: each configuration's second launch is the timed one; one block of 8 warps on each of 132 SMs.
    const auto launches = ncu_raw_kernels(run + "backward_step_ncu.csv");
    REQUIRE(launches.size() == 8);
    const GpuSpec h200 = find_gpu_preset("H200");
    for (const auto& [launch, d] : std::vector<std::pair<std::size_t, int>>{{1, 64}, {5, 128}}) {
        CAPTURE(d);
        const double per_warp_step = ncu_number(launches[launch], "smsp__inst_executed.sum") / (132.0 * 8 * 1000);
        CHECK(per_warp_step == Approx(d == 64 ? 610.2 : 919.0).margin(0.1));
        const double rate = 2 * per_warp_step / cycles.at({d, false});  // 2 warps per scheduler
        CHECK(ncu_number(launches[launch], "smsp__issue_active.avg.per_cycle_active") == Approx(rate).margin(0.006));
        CHECK(h200.model.fa2_bwd_step_issue(d) == Approx(rate).margin(0.001));
        CHECK(find_gpu_preset("H100-SXM").model.fa2_bwd_step_issue(d) == h200.model.fa2_bwd_step_issue(d));  // GH100
    }
    // The whole kernel at N = 4096 issues near its step's rate at d = 128 (0.22) and above it at d = 64 (0.30: its
    // copies' instructions issue while the step's products wait).
    CHECK(ncu_text_counter(read_text(run + "fa2_bwd_tc_d128.txt"), "smsp__issue_active.avg.per_cycle_active", false) ==
          Approx(0.22).margin(0.005));
    CHECK(ncu_text_counter(read_text(run + "fa2_bwd_tc_d64.txt"), "smsp__issue_active.avg.per_cycle_active", false) ==
          Approx(0.30).margin(0.005));

    // cuda/results/2026-12-02-h200-backward-calibrate: fa-calibrate writing the rates, then fa2_bwd_tc as it is (its
    // phase 1 through a lambda again) against commit 1d8de9e (the kernel before its step moved), old, new, old, new.
    const std::string calibrate = kResults + "2026-12-02-h200-backward-calibrate/";
    CHECK(read_text(calibrate + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    CHECK(read_text(calibrate + "check.txt").find("390 passed, 0 failed") != std::string::npos);
    const GpuSpec calibrated = load_gpu_file(calibrate + "calibrated-gpu.json");
    const json raw = load(calibrate + "calibrate_raw.json");
    REQUIRE(raw.at("backward_step").size() == 2);
    for (const json& b : raw.at("backward_step")) {
        const int d = b.at("d");
        CAPTURE(d);
        CHECK(b.at("cycles_per_step").get<double>() == Approx(cycles.at({d, false})).epsilon(0.002));  // a day later
        CHECK(calibrated.model.fa2_bwd_step_issue(d) == Approx(2 * (d == 64 ? 610.2 : 919.0) / b.at("cycles_per_step").get<double>()));
        CHECK(calibrated.model.fa2_bwd_step_issue(d) == Approx(h200.model.fa2_bwd_step_issue(d)).margin(0.001));
    }
    for (const auto& [key, text] : calibrated.sources)
        if (key.rfind("model.fa2_bwd_step_issue_d", 0) == 0) CHECK(text.rfind("measured by fa-calibrate on this NVIDIA H200", 0) == 0);
    int compared = 0;
    for (const int d : {64, 128})
        for (const int N : {2048, 8192}) {
            std::map<std::string, std::map<bool, double>> t;  // build -> causal -> measured
            for (const char* build : {"old", "new", "old2", "new2"}) {
                const json v = load(calibrate + "bwd_" + build + "_d" + std::to_string(d) + "_N" + std::to_string(N) + ".json");
                for (const json& r : v.at("results")) {
                    CHECK(r.at("accuracy").at("pass").get<bool>());
                    t[build][r.at("causal").get<bool>()] = r.at("measured_s");
                }
            }
            for (const bool causal : {false, true}) {
                CAPTURE(d, N, causal);
                const double before = t["old"][causal] + t["old2"][causal], after = t["new"][causal] + t["new2"][causal];
                // d = 64: 0.0-0.8% faster; d = 128: 0.9-1.6% slower (its fp16 SASS has one instruction more).
                CHECK(after / before == Approx(1.0).margin(0.02));
                ++compared;
            }
        }
    CHECK(compared == 8);
}

TEST_CASE("one online-softmax step for fa2_tc, FlashDecoding and the step probe on the H200: exact, sanitizer-clean, "
          "timed as the build before it",
          "[hardware][accuracy][time]") {
    const std::string run = kResults + "2026-12-01-h200-online-softmax/";
    CHECK(read_text(run + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    CHECK(read_text(run + "check.txt").find("1720 passed, 0 failed") != std::string::npos);
    const std::string sanitizer = read_text(run + "sanitizer.txt");
    CHECK(sanitizer.find("memcheck: exit 0") != std::string::npos);
    CHECK(sanitizer.find("racecheck: exit 0") != std::string::npos);
    CHECK(sanitizer.find("synccheck: exit 0") != std::string::npos);
    // Old (251fbe5, three copies of the block) and new timed in one call: fa2_tc in the FA2 paper's setting once,
    // FlashDecoding in two rounds (old, new, old, new).
    using Key = std::tuple<std::string, int, std::int64_t, std::int64_t, int, int, bool>;
    auto times = [&](const std::vector<std::string>& files) {
        std::map<Key, double> out;
        for (const std::string& f : files) {
            const json doc = load(run + f);  // held: a range over a temporary's member would dangle
            for (const json& r : doc.at("results")) {
                CHECK(r.at("accuracy").at("pass").get<bool>());
                out[{r.at("algo").get<std::string>(), r.at("d").get<int>(), r.at("N").get<std::int64_t>(), r.at("Nk").get<std::int64_t>(),
                     r.at("batch").get<int>(), r.at("kv_heads").get<int>(), r.at("causal").get<bool>()}] = r.at("measured_s").get<double>();
            }
        }
        return out;
    };
    // New over old, sorted; only the kernels `algo` names (all where empty).
    auto ratios = [&](const std::map<Key, double>& old_times, const std::map<Key, double>& new_times, const std::string& algo = "") {
        std::vector<double> r;
        for (const auto& [k, t] : old_times)
            if (algo.empty() || std::get<0>(k) == algo) r.push_back(new_times.at(k) / t);
        std::sort(r.begin(), r.end());
        return r;
    };
    std::vector<std::string> ladder_old, ladder_new;
    for (const char* shape : {"d64_N2048", "d64_N8192", "d128_N2048", "d128_N8192"}) {
        ladder_old.push_back(std::string("ladder_old_1_") + shape + ".json");
        ladder_new.push_back(std::string("ladder_new_1_") + shape + ".json");
    }
    // The session times fa2_tc_tuned and fa1_tc beside it, which the change did not touch: they drift alike
    // (the new build ran second), so fa2_tc is compared with them.
    const auto ladder_old_times = times(ladder_old), ladder_new_times = times(ladder_new);
    const std::vector<double> all = ratios(ladder_old_times, ladder_new_times);
    REQUIRE(all.size() == 24);
    CHECK(all.front() > 0.98);
    CHECK(all.back() < 1.01);
    const std::vector<double> changed = ratios(ladder_old_times, ladder_new_times, "fa2_tc");
    const std::vector<double> tuned = ratios(ladder_old_times, ladder_new_times, "fa2_tc_tuned");
    const std::vector<double> fa1 = ratios(ladder_old_times, ladder_new_times, "fa1_tc");
    REQUIRE(changed.size() == 8);
    auto median = [](const std::vector<double>& v) { return (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2; };
    CHECK(median(changed) == Approx(median(tuned)).margin(0.005));
    CHECK(median(changed) == Approx(median(fa1)).margin(0.005));
    for (const char* round : {"1", "2"}) {
        const std::vector<double> decode =
            ratios(times({std::string("decode_old_") + round + ".json"}), times({std::string("decode_new_") + round + ".json"}));
        REQUIRE(decode.size() == 18);
        CHECK((decode[decode.size() / 2 - 1] + decode[decode.size() / 2]) / 2 == Approx(1.0).margin(0.01));  // the median
        CHECK(decode.front() > 0.95);
        CHECK(decode.back() < 1.04);
    }
    // The step probe repeats 2026-11-30's cycles per step, configuration by configuration.
    std::map<std::tuple<int, int, int>, double> before;
    const json step_before = load(kResults + "2026-11-30-h200-attention-step/attention_step.json");
    for (const json& a : step_before.at("attention_step"))
        if (a.at("ran").get<bool>())
            before[{a.at("d").get<int>(), a.at("row_blocks").get<int>(), a.at("warps_per_scheduler").get<int>()}] = a.at("cycles_per_step");
    std::istringstream lines(read_text(run + "attention_step.txt"));
    std::string line;
    int compared = 0;
    while (std::getline(lines, line)) {
        int d = 0, rows = 0, warps = 0;
        double cycles = 0;
        if (std::sscanf(line.c_str(), " d=%d, %d row block(s) a warp, %d warp(s) per scheduler: %lf cycles a step", &d, &rows, &warps,
                        &cycles) != 4)
            continue;
        CAPTURE(line);
        CHECK(cycles == Approx(before.at({d, rows, warps})).epsilon(0.002));
        ++compared;
    }
    CHECK(compared == 9);
}

TEST_CASE("the Hopper rung with the shared tensor-map encoder (kernels/tensor_maps.cu) passes cuda-check on the H200",
          "[hardware][ladder][accuracy]") {
    const std::string run = kResults + "2026-11-30-h200-wgmma-check/";
    CHECK(read_text(run + "device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    CHECK(read_text(run + "check_wgmma.txt").find("318 passed, 0 failed") != std::string::npos);
}

namespace {

// One grouped-backward call of cuda/scripts/gqa_backward_session.sh (2026-11-30-h200-gqa-backward): the H200, cuda-check
// of fa2_tc and fa2_bwd_tc with nothing failed, the sanitizers clean.
const std::string kRunGqa = kResults + "2026-11-30-h200-gqa-backward/";
void check_gqa_call_clean(const std::string& check_call, const std::string& sanitizer_call) {
    CHECK(read_text(kRunGqa + check_call + "/device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);
    CHECK(read_text(kRunGqa + check_call + "/check.txt").find("1236 passed, 0 failed") != std::string::npos);
    for (const char* tool : {"memcheck", "racecheck", "synccheck"})
        CHECK(read_text(kRunGqa + sanitizer_call + "/sanitizer/" + tool + ".stdout").find("12 passed, 0 failed") != std::string::npos);
}

// Measured times by problem: fa-validate's fa2_bwd_tc (every result accurate) or PyTorch's flash backward.
using GqaKey = std::tuple<int, int, std::string, bool, int>;  // N, d, dtype, causal, K/V heads
std::map<GqaKey, double> gqa_times(const std::string& call, const std::vector<std::string>& files, const std::string& algo) {
    std::map<GqaKey, double> times;
    for (const std::string& file : files) {
        const json doc = load(kRunGqa + call + "/" + file);  // held: a loop over a temporary's member would dangle
        for (const json& r : doc.at("results")) {
            if (r.at("algo") != algo) continue;
            const GqaKey k{r.at("N").get<int>(), r.at("d").get<int>(), r.at("dtype").get<std::string>(), r.at("causal").get<bool>(),
                           r.at("kv_heads").get<int>()};
            CAPTURE(file, std::get<0>(k), std::get<1>(k), std::get<3>(k), std::get<4>(k));
            if (r.contains("accuracy")) CHECK(r.at("accuracy").at("pass").get<bool>());
            times[k] = r.at("measured_s");
        }
    }
    return times;
}

// Each problem's time over the same problem without grouping (16 K/V heads) within [lo, hi], and PyTorch's over ours
// within [torch_lo, torch_hi].
void check_gqa_times(const std::map<GqaKey, double>& ours, const std::map<GqaKey, double>& torch, double lo, double hi,
                     double torch_lo, double torch_hi) {
    for (const auto& [k, t] : ours) {
        const auto& [N, d, dtype, causal, kv] = k;
        CAPTURE(N, d, dtype, causal, kv);
        const double overhead = t / ours.at(GqaKey{N, d, dtype, causal, 16});
        CHECK((overhead >= lo && overhead <= hi));
        REQUIRE(torch.count(k));
        const double against = torch.at(k) / t;
        CHECK((against >= torch_lo && against <= torch_hi));
    }
}

// Today's model re-predicts each fa2_bwd_tc result of a call within (lo, hi) of the measured time.
void check_gqa_predictions(const std::string& call, const std::vector<std::string>& files, double lo, double hi) {
    const GpuSpec h200 = find_gpu_preset("H200");
    for (const std::string& file : files) {
        const json doc = load(kRunGqa + call + "/" + file);
        for_each_timed_result(doc, h200, {"fa2_bwd_tc"}, [&](const json&, double rt) {
            CAPTURE(rt);
            CHECK((rt > lo && rt < hi));
        });
    }
}

}  // namespace

TEST_CASE("grouped-query attention in training on the H200 (2026-11-30): fa2_tc and fa2_bwd_tc pass cuda-check and the "
          "sanitizers with grouped K/V heads, summing each group's dK, dV costs 0.2-12%, the backward runs at 0.88-1.21x "
          "PyTorch's flash GQA backward, and the model is -13..+2% as without grouping",
          "[hardware][backward][grouped]") {
    check_gqa_call_clean("call2", "call1");
    // Ours (call 2) and PyTorch's flash backend with enable_gqa (call 1, the same machine minutes before), by problem.
    const std::vector<std::string> validate{"validate_bwd_d128.json", "validate_bwd_d64.json"};
    const std::map<GqaKey, double> ours = gqa_times("call2", validate, "fa2_bwd_tc");
    REQUIRE(ours.size() == 48);
    CHECK(std::count_if(ours.begin(), ours.end(), [](const auto& x) { return std::get<4>(x.first) != 16; }) == 32);
    check_gqa_times(ours, gqa_times("call1", {"torch_bwd_d128.json", "torch_bwd_d64.json"}, "torch_flash_bwd"), 1.0, 1.125,
                    0.87, 1.22);
    // -13..+2%, as the ungrouped rows of this run: fast by 16-28% until fa2_bwd_tc's step took its measured issue
    // rate (2026-12-02). The run's group sum gave a block 128 keys; the model's follows the kernel since (16 or 32
    // keys a block), so it finds one K/V head 1-2 points faster.
    check_gqa_predictions("call2", validate, 0.86, 1.02);
}

TEST_CASE("grouped-query attention on the H200, call 3: with 16-32 keys a block the group sum costs 0.6-3.3% (one K/V head "
          "at N = 2048 was 12%), the backward runs at 0.92-1.32x PyTorch's flash GQA backward timed in the same call",
          "[hardware][backward][grouped]") {
    check_gqa_call_clean("call3", "call3");
    const std::vector<std::string> validate{"validate_bwd_d128.json", "validate_bwd_d64.json"};
    const std::map<GqaKey, double> ours = gqa_times("call3", validate, "fa2_bwd_tc");
    REQUIRE(ours.size() == 36);
    // The group sum's launch as the model gives it: 16 keys a block at d = 128, 32 at d = 64.
    for (const std::string& file : validate) {
        const json doc = load(kRunGqa + "call3/" + file);
        for (const json& r : doc.at("results"))
            if (r.at("kv_heads") != r.at("heads")) {
                const json& sum = r.at("launches").back();
                CHECK(sum.at("name") == "fa2_bwd_sum_groups");
                CHECK(sum.at("Bc").get<int>() == tile_rules::group_sum_rows(r.at("d").get<int>(), 2));
            }
    }
    check_gqa_times(ours, gqa_times("call3", {"torch_bwd_d128.json", "torch_bwd_d64.json"}, "torch_flash_bwd"), 0.998, 1.035,
                    0.91, 1.33);
    check_gqa_predictions("call3", validate, 0.93, 1.02);  // -7..+2%
}

namespace {

// 2026-11-30-h200-gqa-l2: three calls of cuda/scripts/gqa_l2_session.sh on an H200.
const std::string kRunGqaL2 = kResults + "2026-11-30-h200-gqa-l2/";

// Nsight Compute's DRAM bytes read by one fa2_tc launch, by the session's shape name ("decode B=8 KV=1 Nk=16384",
// "prefill N=4096 B=2 H=32 KV=8"): the CSV rows under each "== NAME: ..." line of ncu_dram.txt.
std::map<std::string, double> ncu_dram_reads(const std::string& path) {
    std::map<std::string, double> reads;
    std::istringstream in(read_text(path));
    std::string line, name;
    int column = -1;
    auto fields = [](const std::string& csv) {
        std::vector<std::string> out;
        for (std::size_t i = 0; i < csv.size();) {
            const std::size_t open = csv.find('"', i), close = csv.find('"', open + 1);
            if (open == std::string::npos || close == std::string::npos) break;
            out.push_back(csv.substr(open + 1, close - open - 1));
            i = close + 1;
        }
        return out;
    };
    while (std::getline(in, line)) {
        if (line.rfind("== ", 0) == 0) {
            name = line.substr(3, line.find(':') - 3);
            column = -1;
        } else if (line.rfind("\"ID\"", 0) == 0) {
            const std::vector<std::string> header = fields(line);
            column = static_cast<int>(std::find(header.begin(), header.end(), "dram__bytes_read.sum") - header.begin());
        } else if (column >= 0 && line.rfind("\"0\"", 0) == 0) {  // the one profiled launch (the units row comes first)
            std::string v = fields(line).at(static_cast<std::size_t>(column));
            v.erase(std::remove(v.begin(), v.end(), ','), v.end());
            reads[name] = std::stod(v);
        }
    }
    return reads;
}

}  // namespace

TEST_CASE("grouped K/V heads in L2 on the H200 (2026-11-30): fa2_tc reads K and V from DRAM once per K/V head as "
          "predicted before the run, its d = 128 spill mended, one warp's chain bounds one-row blocks on shapes no run "
          "had timed within 20%",
          "[hardware][decode][grouped]") {
    const GpuSpec gpu = find_gpu_preset("H200");
    for (const char* call : {"call1", "call2", "call3"})
        CHECK(read_text(kRunGqaL2 + call + "/device.txt").find("NVIDIA H200, 580.159.04") != std::string::npos);

    // Call 1: ncu's DRAM reads against the predictions written before it (3b41e25), 15 launches.
    const json before_decode = load(kRunGqaL2 + "predicted_before_decode.json"), before_gqa = load(kRunGqaL2 + "predicted_before_gqa.json");
    CHECK(before_decode.at("simulator_commit").get<std::string>().rfind("3b41e25", 0) == 0);
    std::map<std::string, double> predicted;
    for (const json& r : before_decode.at("results"))
        if (r.at("algo") == "fa2_tc")
            predicted["decode B=" + std::to_string(r.at("batch").get<int>()) + " KV=" + std::to_string(r.at("kv_heads").get<int>()) +
                      " Nk=" + std::to_string(r.at("Nk").get<int>())] = r.at("predicted_dram_read_bytes").get<double>();
    for (const json& r : before_gqa.at("results"))
        if (!r.at("causal").get<bool>())
            predicted["prefill N=" + std::to_string(r.at("N").get<int>()) + " B=2 H=32 KV=" + std::to_string(r.at("kv_heads").get<int>())] =
                r.at("predicted_dram_read_bytes").get<double>();
    const std::map<std::string, double> reads = ncu_dram_reads(kRunGqaL2 + "call1/ncu_dram.txt");
    REQUIRE(reads.size() == 15);
    int within_5 = 0;
    for (const auto& [name, bytes] : reads) {
        CAPTURE(name, bytes, predicted.at(name));
        const double error = predicted.at(name) / bytes - 1;
        within_5 += std::abs(error) <= 0.05;
        CHECK(std::abs(error) <= 0.27);  // batch 8 with 8 K/V heads: the card read 35% more than once per K/V head
    }
    CHECK(within_5 == 12);
    // What sharing saves: with 8 and 1 K/V heads of 32, the decode launches read a quarter and a 32nd (batch 1).
    CHECK(reads.at("decode B=1 KV=8 Nk=65536") / reads.at("decode B=1 KV=32 Nk=65536") == Approx(0.25).epsilon(0.01));
    CHECK(reads.at("decode B=1 KV=1 Nk=65536") / reads.at("decode B=1 KV=32 Nk=65536") == Approx(1.0 / 32).epsilon(0.01));

    // Call 2: the spill mended. cuda-check and the sanitizers of fa2_tc and fa2_bwd_tc; batch 1 back to its time before
    // GQA (2026-11-30-h200-decode-tma: 0.341 ms at 16k keys) from call 1's 1.23x.
    CHECK(read_text(kRunGqaL2 + "call2/check.txt").find("1236 passed, 0 failed") != std::string::npos);
    for (const char* tool : {"memcheck", "racecheck", "synccheck"})
        CHECK(read_text(kRunGqaL2 + "call2/sanitizer/" + tool + ".stdout").find("12 passed, 0 failed") != std::string::npos);
    CHECK(read_text(kRunGqaL2 + "call2/sanitizer/racecheck.log").find("RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)") !=
          std::string::npos);
    std::map<std::tuple<std::string, int, int, int>, double> call1, call2;
    for (auto [call, into] : {std::pair{"call1", &call1}, std::pair{"call2", &call2}}) {
        const json doc = load(kRunGqaL2 + call + "/validate_decode.json");
        for_each_timed_decode(doc, [&, into = into](const json&, const std::string& algo, int batch, int kv, int nk, double measured) {
            (*into)[{algo, batch, kv, nk}] = measured;
        });
    }
    REQUIRE(call2.size() == 27);
    for (int kv : {32, 8, 1}) {
        CAPTURE(kv);
        CHECK(call2.at({"fa2_tc", 1, kv, 16384}) == Approx(0.341e-3).epsilon(0.03));
        CHECK(call1.at({"fa2_tc", 1, kv, 16384}) / call2.at({"fa2_tc", 1, kv, 16384}) > 1.18);
    }

    // Calls 2 and 3 against today's model (with one warp's chain, 0d294c9): one block per SM (batch 1 to 4) +24..+30%,
    // the lone-warp readiness miss; two or three one-row blocks per SM with 8 or 1 K/V heads, where the chain binds,
    // -18..+4%; the DRAM-bound 32-head shapes -19..+4%.
    const json before_call3 = load(kRunGqaL2 + "predicted_before_call3.json");
    CHECK(before_call3.at("simulator_commit").get<std::string>().rfind("0d294c9", 0) == 0);
    std::map<std::tuple<int, int, int>, double> written;
    for (const json& r : before_call3.at("results")) written[{r.at("batch"), r.at("kv_heads"), r.at("Nk")}] = r.at("predicted_s");
    int chain_bound = 0, chain_within_20 = 0;
    for (const char* call : {"call2", "call3"}) {
        const json doc = load(kRunGqaL2 + call + "/validate_decode.json");
        for_each_timed_decode(doc, [&](const json& r, const std::string&, int batch, int kv, int nk, double measured) {
            const AlgorithmResult p = predict(r, gpu);
            if (std::string(call) == "call3") {
                CHECK(p.time_s == Approx(written.at({batch, kv, nk})).epsilon(1e-6));  // what was written before
                CHECK(r.at("predicted_s").get<double>() == Approx(p.time_s).epsilon(1e-6));  // and fa-validate's own
            }
            const double rt = ratio(p.time_s, measured);
            if (batch <= 4) CHECK((rt > 1.23 && rt < 1.31));
            else if (kv == 32) CHECK((rt > 0.80 && rt < 1.05));
            else {
                CHECK((rt > 0.81 && rt < 1.05));
                chain_bound += p.timing.front().bound.rfind("one warp's instructions", 0) == 0;
                chain_within_20 += std::abs(rt - 1) <= 0.20;
            }
        });
    }
    CHECK(chain_bound == 12 + 12);  // call 2's batch 8 and 64, call 3's 16 and 32
    CHECK(chain_within_20 == 12 + 12);
}
