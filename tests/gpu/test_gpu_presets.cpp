// GPU presets, the GPU-file loader and its validation (sim/gpu).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "gpu/gpu_catalog.hpp"

using fasim::DType;
using fasim::GpuSpec;
using fasim::UsageError;
using nlohmann::json;

namespace {

const std::vector<std::string> kNumericKeys = {
    "compute_capability", "sm_count", "max_warps_per_sm", "max_blocks_per_sm", "registers_per_sm",
    "max_registers_per_thread", "smem_per_sm_bytes", "smem_per_block_bytes", "clock_hz", "hbm_bytes",
    "hbm_bandwidth_bytes_per_s", "l2_bytes", "l2_bandwidth_bytes_per_s", "smem_bandwidth_per_sm_bytes_per_s",
    "tensor_fp16_flops_per_s", "tensor_bf16_flops_per_s", "tensor_tf32_flops_per_s", "fp32_flops_per_s",
    "sfu_ops_per_s", "launch_overhead_s"};

// A small user file as docs/gpu-file.md shows it: no sources, nothing measured.
const char* kUserFile = R"({
  "format": "fa-sim-gpu/1",
  "name": "my-gpu",
  "description": "a test GPU",
  "architecture": "Ada",
  "compute_capability": 89,
  "sm_count": 128,
  "max_warps_per_sm": 48,
  "max_blocks_per_sm": 24,
  "registers_per_sm": 65536,
  "max_registers_per_thread": 255,
  "smem_per_sm_bytes": 102400,
  "smem_per_block_bytes": 101376,
  "clock_hz": 2.52e9,
  "hbm_bytes": 25769803776,
  "hbm_bandwidth_bytes_per_s": 1.008e12,
  "l2_bytes": 75497472,
  "l2_bandwidth_bytes_per_s": 1.032e13,
  "smem_bandwidth_per_sm_bytes_per_s": 3.2256e11,
  "tensor_fp16_flops_per_s": 165.2e12,
  "tensor_bf16_flops_per_s": 165.2e12,
  "tensor_tf32_flops_per_s": 82.6e12,
  "fp32_flops_per_s": 82.6e12,
  "sfu_ops_per_s": 5.16e12,
  "launch_overhead_s": 4e-6
})";

json user_json() { return json::parse(kUserFile); }

// The message of the UsageError that parsing `doc` throws (fails the test if none).
std::string error_of_text(const std::string& text) {
    try {
        fasim::parse_gpu_json(text, "test.json");
    } catch (const UsageError& e) {
        return e.what();
    }
    FAIL("no UsageError for: " << text);
    return {};
}

std::string error_of(const json& doc) { return error_of_text(doc.dump(2)); }

// Every error message: one line, names the file, carries a fix.
void check_message_shape(const std::string& msg) {
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.find("test.json") != std::string::npos);
    CHECK(msg.find("Fix:") != std::string::npos);
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

std::filesystem::path temp_file(const std::string& stem) {
    return std::filesystem::temp_directory_path() / ("fasim_test_gpu_" + stem + ".json");
}

void write_file(const std::filesystem::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << text;
    REQUIRE(out.good());
}

double relative_gap(double a, double b) { return std::fabs(a - b) / std::fabs(b); }

void check_same_spec(const GpuSpec& a, const GpuSpec& b) {
    CHECK(a.description == b.description);
    CHECK(a.architecture == b.architecture);
    CHECK(a.compute_capability == b.compute_capability);
    CHECK(a.sm_count == b.sm_count);
    CHECK(a.max_warps_per_sm == b.max_warps_per_sm);
    CHECK(a.max_blocks_per_sm == b.max_blocks_per_sm);
    CHECK(a.registers_per_sm == b.registers_per_sm);
    CHECK(a.max_registers_per_thread == b.max_registers_per_thread);
    CHECK(a.smem_per_sm_bytes == b.smem_per_sm_bytes);
    CHECK(a.smem_per_block_bytes == b.smem_per_block_bytes);
    CHECK(a.clock_hz == b.clock_hz);
    CHECK(a.hbm_bytes == b.hbm_bytes);
    CHECK(a.hbm_bandwidth == b.hbm_bandwidth);
    CHECK(a.l2_bytes == b.l2_bytes);
    CHECK(a.l2_bandwidth == b.l2_bandwidth);
    CHECK(a.smem_bandwidth_per_sm == b.smem_bandwidth_per_sm);
    CHECK(a.tensor_fp16_flops == b.tensor_fp16_flops);
    CHECK(a.tensor_bf16_flops == b.tensor_bf16_flops);
    CHECK(a.tensor_tf32_flops == b.tensor_tf32_flops);
    CHECK(a.fp32_flops == b.fp32_flops);
    CHECK(a.sfu_ops == b.sfu_ops);
    CHECK(a.launch_overhead_s == b.launch_overhead_s);
    CHECK(a.measured.hbm_bandwidth == b.measured.hbm_bandwidth);
    CHECK(a.measured.tensor_fp16_flops == b.measured.tensor_fp16_flops);
    CHECK(a.measured.tensor_bf16_flops == b.measured.tensor_bf16_flops);
    CHECK(a.measured.fp32_flops == b.measured.fp32_flops);
    CHECK(a.measured.ffma_flops == b.measured.ffma_flops);
    CHECK(a.measured.sfu_ops == b.measured.sfu_ops);
    CHECK(a.measured.l2_requests == b.measured.l2_requests);
    CHECK(a.measured.source == b.measured.source);
    CHECK(a.model.schedulers_per_sm == b.model.schedulers_per_sm);
    CHECK(a.model.cuda_core_warp_ready == b.model.cuda_core_warp_ready);
    CHECK(a.model.mma_sync_warp_ready == b.model.mma_sync_warp_ready);
    CHECK(a.model.l2_bytes_per_request == b.model.l2_bytes_per_request);
    CHECK(a.model.library_gemm_s_rows == b.model.library_gemm_s_rows);
    CHECK(a.model.library_gemm_s_cols == b.model.library_gemm_s_cols);
    CHECK(a.model.library_gemm_o_outputs == b.model.library_gemm_o_outputs);
    CHECK(a.model.library_gemm_o_max_rows == b.model.library_gemm_o_max_rows);
    CHECK(a.model.library_gemm_k_step_bytes == b.model.library_gemm_k_step_bytes);
    CHECK(a.model.library_gemm_warps == b.model.library_gemm_warps);
    CHECK(a.model.mma_sync_peak_fraction == b.model.mma_sync_peak_fraction);
    CHECK(a.model.fp32_peak_fraction == b.model.fp32_peak_fraction);
    CHECK(a.model.dram_latency_s == b.model.dram_latency_s);
    CHECK(a.model.fa2_step_issue_d64 == b.model.fa2_step_issue_d64);
    CHECK(a.model.fa2_step_issue_d128 == b.model.fa2_step_issue_d128);
    CHECK(a.model.fa2_bwd_step_issue_d64 == b.model.fa2_bwd_step_issue_d64);
    CHECK(a.model.fa2_bwd_step_issue_d128 == b.model.fa2_bwd_step_issue_d128);
    CHECK(a.sources == b.sources);
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Presets

TEST_CASE("every preset loads and validates", "[gpu]") {
    const auto& presets = fasim::gpu_presets();
    const std::vector<std::string> expected = {"A100-SXM4-40GB", "A100-SXM4-80GB", "H100-SXM", "H200", "L4", "T4"};
    REQUIRE(fasim::gpu_preset_names() == expected);
    for (const GpuSpec& g : presets) {
        INFO(g.name);
        CHECK(!g.description.empty());
        CHECK(!g.architecture.empty());
        // Every number carries its source (a preset never falls back to "no source stated").
        for (const std::string& key : kNumericKeys) {
            INFO(key);
            bool found = false;
            for (const auto& [k, text] : g.sources) {
                if (k == key) {
                    found = true;
                    CHECK(text.size() > 10);
                    CHECK(!contains(text, "no source stated"));
                }
            }
            CHECK(found);
        }
        // Re-parsing the serialised preset gives the same spec.
        check_same_spec(fasim::parse_gpu_json(fasim::gpu_spec_to_json(g), "round trip"), g);
    }
    CHECK(fasim::find_gpu_preset(fasim::default_gpu_name()).name == "A100-SXM4-40GB");
}

TEST_CASE("preset numbers are internally consistent", "[gpu]") {
    const GpuSpec a40 = fasim::find_gpu_preset("A100-SXM4-40GB");
    const GpuSpec a80 = fasim::find_gpu_preset("A100-SXM4-80GB");
    const GpuSpec h100 = fasim::find_gpu_preset("H100-SXM");
    const GpuSpec h200 = fasim::find_gpu_preset("H200");
    const GpuSpec l4 = fasim::find_gpu_preset("L4");
    const GpuSpec t4 = fasim::find_gpu_preset("T4");

    CHECK(a40.sm_count == 108);
    CHECK(a80.sm_count == 108);
    CHECK(h100.sm_count == 132);
    CHECK(h200.sm_count == 132);
    CHECK(l4.sm_count == 58);
    CHECK(t4.sm_count == 40);

    CHECK(a40.compute_capability == 80);
    CHECK(h100.compute_capability == 90);
    CHECK(l4.compute_capability == 89);
    CHECK(t4.compute_capability == 75);

    CHECK(h200.hbm_bandwidth > h100.hbm_bandwidth);
    CHECK(h200.hbm_bytes > h100.hbm_bytes);
    CHECK(a80.hbm_bandwidth > a40.hbm_bandwidth);
    CHECK(a80.hbm_bytes == 2 * a40.hbm_bytes);
    CHECK(h200.l2_bytes >= h100.l2_bytes);
    CHECK(h100.l2_bytes > a40.l2_bytes);
    CHECK(h100.tensor_bf16_flops > a40.tensor_bf16_flops);

    // Occupancy limits of each compute capability (CUDA programming guide table).
    struct Limits { int cc, warps, blocks; std::int64_t smem_sm, smem_block; };
    const std::vector<Limits> limits = {{75, 32, 16, 65536, 65536},
                                        {80, 64, 32, 167936, 166912},
                                        {89, 48, 24, 102400, 101376},
                                        {90, 64, 32, 233472, 232448}};

    for (const GpuSpec& g : fasim::gpu_presets()) {
        INFO(g.name);
        CHECK(g.smem_per_block_bytes <= g.smem_per_sm_bytes);
        CHECK(g.registers_per_sm == 65536);
        CHECK(g.max_registers_per_thread == 255);
        bool cc_known = false;
        for (const Limits& l : limits) {
            if (l.cc != g.compute_capability) continue;
            cc_known = true;
            CHECK(g.max_warps_per_sm == l.warps);
            CHECK(g.max_blocks_per_sm == l.blocks);
            CHECK(g.smem_per_sm_bytes == l.smem_sm);
            CHECK(g.smem_per_block_bytes == l.smem_block);
        }
        CHECK(cc_known);
        // Derived rates: 128 bytes/clk/SM of shared memory, 16 exp/clk/SM.
        CHECK(relative_gap(g.smem_bandwidth_per_sm, 128.0 * g.clock_hz) < 1e-9);
        CHECK(relative_gap(g.sfu_ops, 16.0 * g.sm_count * g.clock_hz) < 1e-9);
        // The memory hierarchy gets faster towards the SMs.
        CHECK(g.l2_bandwidth > g.hbm_bandwidth);
        CHECK(g.smem_bandwidth_per_sm * g.sm_count > g.l2_bandwidth);
        // Tensor cores beat the CUDA cores; sparsity is not counted (dense rates).
        CHECK(g.tensor_fp16_flops >= 3.9 * g.fp32_flops);
        CHECK(g.tensor_fp16_flops < 20 * g.fp32_flops);
        CHECK(g.launch_overhead_s > 1e-6);
        CHECK(g.launch_overhead_s < 1e-5);
    }

    // Dense fp16 tensor rate = SMs x FLOP/clk/SM x clock (whitepaper figures, within 2%).
    CHECK(relative_gap(a40.tensor_fp16_flops, 108 * 2048 * a40.clock_hz) < 0.02);
    CHECK(relative_gap(h100.tensor_fp16_flops, 132 * 4096 * h100.clock_hz) < 0.02);
    CHECK(relative_gap(l4.tensor_fp16_flops, 58 * 1024 * l4.clock_hz) < 0.02);
    CHECK(relative_gap(t4.tensor_fp16_flops, 40 * 1024 * t4.clock_hz) < 0.02);
    // fp32 CUDA-core rate = SMs x cores x 2 x clock.
    CHECK(relative_gap(a40.fp32_flops, 108 * 64 * 2 * a40.clock_hz) < 0.02);
    CHECK(relative_gap(l4.fp32_flops, 58 * 128 * 2 * l4.clock_hz) < 0.02);
    CHECK(relative_gap(t4.fp32_flops, 40 * 64 * 2 * t4.clock_hz) < 0.02);
    CHECK(relative_gap(h100.fp32_flops, 132 * 128 * 2 * 1.98e9) < 0.02);  // FP32 quoted at 1.98 GHz
}

TEST_CASE("measured ceilings: only the H200 has them", "[gpu]") {
    for (const GpuSpec& g : fasim::gpu_presets()) {
        INFO(g.name);
        if (g.name == "H200") {
            CHECK(g.measured.hbm_bandwidth == 4.19e12);
            CHECK(g.measured.tensor_bf16_flops == 759e12);
            CHECK(g.measured.fp32_flops == 50.8e12);
            CHECK(g.measured.ffma_flops == 62.5e12);  // peak-rates, cuda/results/2026-11-22-h200-b/peak_rates.txt
            CHECK(g.measured.tensor_fp16_flops == 725e12);
            CHECK(g.measured.mma_sync_fp16_flops == 641.7e12);
            CHECK(g.measured.mma_sync_bf16_flops == 639.4e12);
            CHECK(g.measured.l2_requests == 1.44e11);
            CHECK(g.l2_request_rate() == 1.44e11);
            CHECK(contains(g.measured.source, "measured on an H200, torch 2.11"));
            CHECK(contains(g.measured.source, "build/cuda/peak-rates"));
        } else {
            CHECK(g.measured.hbm_bandwidth == 0);
            CHECK(g.measured.tensor_fp16_flops == 0);
            CHECK(g.measured.tensor_bf16_flops == 0);
            CHECK(g.measured.fp32_flops == 0);
            CHECK(g.measured.ffma_flops == 0);
            CHECK(g.measured.mma_sync_fp16_flops == 0);
            CHECK(g.measured.l2_requests == 0);
            CHECK(g.l2_request_rate() == g.l2_bandwidth / 64);  // the H200's ratio (model_defaults.json)
            CHECK(g.measured.source.empty());
        }
    }
}

TEST_CASE("the FFMA peak is read and range-checked and written back while no rate uses it", "[gpu]") {
    json doc = user_json();
    doc["measured"] = {{"fp32_flops_per_s", 60e12}, {"ffma_flops_per_s", 75e12}, {"source", "a test, 2026-11-25"}};
    const GpuSpec g = fasim::parse_gpu_json(doc.dump(), "test.json");
    CHECK(g.measured.ffma_flops == 75e12);
    CHECK(g.effective_fp32_flops() == 60e12);
    CHECK(g.matmul_flops(DType::fp32) == 60e12);
    CHECK(g.mma_sync_flops(DType::fp32) == 60e12);
    CHECK(!contains(g.measured_ceilings_text(), "75"));  // the report's "measured ceilings used" names it not
    CHECK(fasim::parse_gpu_json(fasim::gpu_spec_to_json(g), "round trip").measured.ffma_flops == 75e12);
    // GFLOP/s written for FLOP/s: one line with the value, the allowed range and a fix.
    doc["measured"]["ffma_flops_per_s"] = 82.6e3;
    const std::string msg = error_of(doc);
    check_message_shape(msg);
    CHECK(contains(msg, "\"measured.ffma_flops_per_s\" = 82600"));
    CHECK(contains(msg, "1.239e+14 FLOP/s, 0.1 to 1.5x the datasheet \"fp32_flops_per_s\""));
    CHECK(contains(msg, "Fix: "));
}

TEST_CASE("matmul rates per dtype", "[gpu]") {
    const GpuSpec a40 = fasim::find_gpu_preset("A100-SXM4-40GB");
    CHECK(a40.matmul_flops(DType::fp16) == 312e12);
    CHECK(a40.matmul_flops(DType::bf16) == 312e12);
    CHECK(a40.matmul_flops(DType::fp32) == 19.5e12);  // CUDA cores, not TF32
    CHECK(a40.effective_fp32_flops() == 19.5e12);
    CHECK(a40.effective_hbm_bandwidth() == 1.555e12);

    const GpuSpec h200 = fasim::find_gpu_preset("H200");
    CHECK(h200.matmul_flops(DType::bf16) == 759e12);  // measured beats datasheet
    CHECK(h200.matmul_flops(DType::fp16) == 725e12);
    CHECK(h200.matmul_flops(DType::fp32) == 50.8e12);
    CHECK(h200.effective_hbm_bandwidth() == 4.19e12);
    CHECK(h200.hbm_bandwidth == 4.8e12);

    // Hopper: warp-level mma.sync (hand-written flash kernels) peaks below cuBLAS's wgmma path.
    CHECK(h200.mma_sync_flops(DType::fp16) == 641.7e12);
    CHECK(h200.mma_sync_flops(DType::bf16) == 639.4e12);
    CHECK(h200.mma_sync_flops(DType::fp32) == 50.8e12);  // fp32 products stay on the CUDA cores
    // The FFMA peak is recorded, not used: every FP32 rate stays SGEMM's (docs/gpu-file.md says why).
    CHECK(h200.measured.ffma_flops == 62.5e12);
    CHECK(h200.effective_fp32_flops() == 50.8e12);

    const GpuSpec h100 = fasim::find_gpu_preset("H100-SXM");
    CHECK(h100.matmul_flops(DType::bf16) == 989.4e12);
    // Not measured there: Hopper's mma.sync share of the dense peak (wgmma alone reaches it).
    CHECK(h100.mma_sync_flops(DType::bf16) == Approx(0.65 * 989.4e12));
    CHECK(a40.mma_sync_flops(DType::fp16) == a40.matmul_flops(DType::fp16));  // Ampere: one instruction
    CHECK(h100.effective_hbm_bandwidth() == 3.35e12);

    // T4: no bf16 tensor cores, so bf16 runs at the fp32 rate, and the loader says so.
    const GpuSpec t4 = fasim::find_gpu_preset("T4");
    CHECK(t4.tensor_bf16_flops == 0);
    CHECK(t4.tensor_tf32_flops == 0);
    CHECK(t4.matmul_flops(DType::bf16) == t4.fp32_flops);
    CHECK(t4.matmul_flops(DType::fp16) == 65e12);
    bool explained = false;
    for (const auto& [key, text] : t4.sources) {
        if (key == "tensor_bf16_flops_per_s") {
            explained = contains(text, "no bf16 tensor cores") && contains(text, "fp32 CUDA-core rate");
        }
    }
    CHECK(explained);
}

TEST_CASE("preset names are case-insensitive, unknown names are usage errors", "[gpu]") {
    CHECK(fasim::find_gpu_preset("h100-sxm").name == "H100-SXM");
    CHECK(fasim::find_gpu_preset("a100-sxm4-40gb").name == "A100-SXM4-40GB");
    CHECK(fasim::find_gpu_preset("t4").name == "T4");

    std::string msg;
    try {
        fasim::find_gpu_preset("RTX-9090");
    } catch (const UsageError& e) {
        msg = e.what();
    }
    REQUIRE(!msg.empty());
    CHECK(contains(msg, "RTX-9090"));
    for (const std::string& n : fasim::gpu_preset_names()) CHECK(contains(msg, n));
    CHECK(contains(msg, "--list-gpus"));
    CHECK(contains(msg, "--gpu-file"));
    CHECK(msg.find('\n') == std::string::npos);

    // A unique prefix is suggested.
    try {
        fasim::find_gpu_preset("H100");
        FAIL("H100 alone must not match");
    } catch (const UsageError& e) {
        CHECK(contains(e.what(), "did you mean H100-SXM"));
    }
    CHECK_THROWS_AS(fasim::find_gpu_preset(""), UsageError);
}

// ---------------------------------------------------------------------------------------
// User files

TEST_CASE("a user GPU file round-trips through a temporary file", "[gpu]") {
    // A preset, renamed, written out and read back.
    GpuSpec original = fasim::find_gpu_preset("H200");
    original.name = "my-h200";
    const auto path = temp_file("roundtrip");
    write_file(path, fasim::gpu_spec_to_json(original));
    const GpuSpec loaded = fasim::load_gpu_file(path.string());
    std::filesystem::remove(path);
    CHECK(loaded.name == "my-h200");
    check_same_spec(loaded, original);

    // A minimal file: no sources, nothing measured.
    const auto path2 = temp_file("minimal");
    write_file(path2, kUserFile);
    const GpuSpec mine = fasim::load_gpu_file(path2.string());
    std::filesystem::remove(path2);
    CHECK(mine.name == "my-gpu");
    CHECK(mine.sm_count == 128);
    CHECK(mine.clock_hz == 2.52e9);
    CHECK(mine.hbm_bytes == 25769803776);
    CHECK(mine.measured.source.empty());
    CHECK(mine.effective_hbm_bandwidth() == 1.008e12);
    CHECK(mine.matmul_flops(DType::bf16) == 165.2e12);
    REQUIRE(mine.sources.size() == kNumericKeys.size() + 17);  // and the 17 model constants, defaulted
    for (const auto& [key, text] : mine.sources) {
        INFO(key);
        if (key.rfind("model.", 0) == 0) {
            CHECK(contains(text, "default for"));
            continue;
        }
        CHECK(contains(text, "no source stated"));
        CHECK(contains(text, path2.string()));
    }

    // Comments are allowed (human-edited files).
    json doc = user_json();
    std::string with_comment = doc.dump(2);
    with_comment.insert(with_comment.find('\n'), "  // my card");
    CHECK(fasim::parse_gpu_json(with_comment, "test.json").name == "my-gpu");
}

TEST_CASE("a missing or unreadable GPU file is a usage error", "[gpu]") {
    const std::string path = (std::filesystem::temp_directory_path() / "fasim_test_gpu_does_not_exist.json").string();
    std::string msg;
    try {
        fasim::load_gpu_file(path);
    } catch (const UsageError& e) {
        msg = e.what();
    }
    CHECK(contains(msg, path));
    CHECK(contains(msg, "does not exist"));
    CHECK(contains(msg, "Fix:"));

    std::string dir_msg;
    try {
        fasim::load_gpu_file(std::filesystem::temp_directory_path().string());
    } catch (const UsageError& e) {
        dir_msg = e.what();
    }
    CHECK(contains(dir_msg, "not a regular file"));
}

TEST_CASE("validation: missing field", "[gpu]") {
    for (const std::string& key : kNumericKeys) {
        INFO(key);
        json doc = user_json();
        doc.erase(key);
        const std::string msg = error_of(doc);
        check_message_shape(msg);
        CHECK(contains(msg, "missing field \"" + key + "\""));
        CHECK(contains(msg, "(absent)"));
    }
    for (const char* key : {"format", "name", "description", "architecture"}) {
        INFO(key);
        json doc = user_json();
        doc.erase(key);
        const std::string msg = error_of(doc);
        check_message_shape(msg);
        CHECK(contains(msg, "missing field \"" + std::string(key) + "\""));
    }
}

TEST_CASE("validation: wrong type", "[gpu]") {
    json doc = user_json();
    doc["sm_count"] = "108";
    std::string msg = error_of(doc);
    check_message_shape(msg);
    CHECK(contains(msg, "\"sm_count\" = \"108\""));
    CHECK(contains(msg, "wrong type (string)"));
    CHECK(contains(msg, "1..1024"));

    doc = user_json();
    doc["clock_hz"] = true;
    msg = error_of(doc);
    CHECK(contains(msg, "\"clock_hz\" = true"));
    CHECK(contains(msg, "wrong type (boolean)"));

    doc = user_json();
    doc["name"] = 42;
    msg = error_of(doc);
    CHECK(contains(msg, "\"name\" = 42"));
    CHECK(contains(msg, "wrong type"));

    doc = user_json();
    doc["sm_count"] = 108.5;
    msg = error_of(doc);
    CHECK(contains(msg, "\"sm_count\" = 108.5 is not an integer"));

    doc = user_json();
    doc["measured"] = json::array();
    msg = error_of(doc);
    CHECK(contains(msg, "\"measured\" = []"));

    doc = user_json();
    doc["sources"] = "datasheet";
    msg = error_of(doc);
    CHECK(contains(msg, "\"sources\" = \"datasheet\""));

    // An integral float is fine for an integer field.
    doc = user_json();
    doc["hbm_bytes"] = 2.5769803776e10;
    CHECK(fasim::parse_gpu_json(doc.dump(), "test.json").hbm_bytes == 25769803776);
}

TEST_CASE("validation: zero, negative and out-of-range values", "[gpu]") {
    json doc = user_json();
    doc["sm_count"] = -4;
    std::string msg = error_of(doc);
    check_message_shape(msg);
    CHECK(contains(msg, "\"sm_count\" = -4 is negative"));
    CHECK(contains(msg, "sm_count must be an integer in 1..1024"));

    doc = user_json();
    doc["hbm_bandwidth_bytes_per_s"] = 0;
    msg = error_of(doc);
    CHECK(contains(msg, "\"hbm_bandwidth_bytes_per_s\" = 0 is zero"));

    doc = user_json();
    doc["clock_hz"] = -1.41e9;
    msg = error_of(doc);
    CHECK(contains(msg, "\"clock_hz\" = -1.41e+09"));

    doc = user_json();
    doc["clock_hz"] = 1410;  // MHz instead of Hz
    msg = error_of(doc);
    CHECK(contains(msg, "\"clock_hz\" = 1410 is out of range"));
    CHECK(contains(msg, "1e+08..1e+10 Hz"));

    doc = user_json();
    doc["sm_count"] = 5000;
    msg = error_of(doc);
    CHECK(contains(msg, "\"sm_count\" = 5000 is out of range"));

    doc = user_json();
    doc["max_registers_per_thread"] = 256;
    msg = error_of(doc);
    CHECK(contains(msg, "\"max_registers_per_thread\" = 256"));
    CHECK(contains(msg, "1..255"));

    doc = user_json();
    doc["smem_per_block_bytes"] = 240000;
    msg = error_of(doc);
    check_message_shape(msg);
    CHECK(contains(msg, "\"smem_per_block_bytes\" = 240000"));
    CHECK(contains(msg, "\"smem_per_sm_bytes\" = 102400"));

    // Tensor rates may be 0 (no such tensor cores) but not negative.
    doc = user_json();
    doc["tensor_bf16_flops_per_s"] = 0;
    const GpuSpec no_bf16 = fasim::parse_gpu_json(doc.dump(), "test.json");
    CHECK(no_bf16.matmul_flops(DType::bf16) == no_bf16.fp32_flops);
    doc["tensor_bf16_flops_per_s"] = -1e12;
    msg = error_of(doc);
    CHECK(contains(msg, "\"tensor_bf16_flops_per_s\" = -1e+12 is negative"));

    // Not a finite number: JSON cannot spell inf, and overflow is a parse error.
    msg = error_of_text(std::string(kUserFile).replace(std::string(kUserFile).find("2.52e9"), 6, "1e400"));
    check_message_shape(msg);
    CHECK(contains(msg, "1e400"));
}

TEST_CASE("validation: unknown keys are errors, with a suggestion", "[gpu]") {
    json doc = user_json();
    doc["sm_cuont"] = 108;
    std::string msg = error_of(doc);
    check_message_shape(msg);
    CHECK(contains(msg, "unknown key \"sm_cuont\" = 108"));
    CHECK(contains(msg, "did you mean \"sm_count\""));

    doc = user_json();
    doc["measured"] = {{"hbm_bandwith_bytes_per_s", 1e12}, {"source", "x"}};
    msg = error_of(doc);
    CHECK(contains(msg, "\"measured.hbm_bandwith_bytes_per_s\" = 1e+12"));
    CHECK(contains(msg, "did you mean \"hbm_bandwidth_bytes_per_s\""));

    doc = user_json();
    doc["sources"] = {{"clock_mhz", "datasheet"}};
    msg = error_of(doc);
    CHECK(contains(msg, "\"sources.clock_mhz\""));

    // A key given twice would silently keep the last value.
    std::string twice = kUserFile;
    twice.insert(twice.find("\"sm_count\""), "\"sm_count\": 64,\n  ");
    msg = error_of_text(twice);
    check_message_shape(msg);
    CHECK(contains(msg, "\"sm_count\" appears twice"));
}

TEST_CASE("validation: malformed JSON reports the parser's position", "[gpu]") {
    std::string broken = kUserFile;
    broken.erase(broken.find(",\n  \"sm_count\""), 1);  // drop a comma: line 7
    std::string msg = error_of_text(broken);
    check_message_shape(msg);
    CHECK(contains(msg, "malformed JSON"));
    CHECK(contains(msg, "line 7"));
    CHECK(contains(msg, "column"));

    msg = error_of_text("");
    CHECK(contains(msg, "malformed JSON"));

    msg = error_of_text("[1, 2]");
    CHECK(contains(msg, "JSON array"));
}

TEST_CASE("validation: format, names and measured numbers", "[gpu]") {
    json doc = user_json();
    doc["format"] = "fa-sim-gpu/2";
    std::string msg = error_of(doc);
    check_message_shape(msg);
    CHECK(contains(msg, "\"format\" = \"fa-sim-gpu/2\""));
    CHECK(contains(msg, "fa-sim-gpu/1"));

    doc = user_json();
    doc["name"] = "my gpu";
    msg = error_of(doc);
    CHECK(contains(msg, "\"name\" = \"my gpu\""));

    doc = user_json();
    doc["name"] = "";
    msg = error_of(doc);
    CHECK(contains(msg, "\"name\" = \"\""));

    // Measured numbers need a source.
    doc = user_json();
    doc["measured"] = {{"hbm_bandwidth_bytes_per_s", 0.9e12}};
    msg = error_of(doc);
    check_message_shape(msg);
    CHECK(contains(msg, "measured.source"));

    doc["measured"]["source"] = "copy benchmark, 2026-01-01";
    const GpuSpec g = fasim::parse_gpu_json(doc.dump(), "test.json");
    CHECK(g.effective_hbm_bandwidth() == 0.9e12);

    // A measurement far above the datasheet is a unit mistake.
    doc["measured"]["hbm_bandwidth_bytes_per_s"] = 9e12;
    msg = error_of(doc);
    CHECK(contains(msg, "\"measured.hbm_bandwidth_bytes_per_s\" = 9e+12"));
    CHECK(contains(msg, "1.5x"));

    doc["measured"]["hbm_bandwidth_bytes_per_s"] = -1;
    msg = error_of(doc);
    CHECK(contains(msg, "\"measured.hbm_bandwidth_bytes_per_s\" = -1"));

    // mma.sync has no datasheet figure: it is checked against the tensor-core one.
    doc = user_json();
    doc["measured"] = {{"mma_sync_fp16_flops_per_s", 1e18}, {"source", "peak-rates, 2026-01-01"}};
    msg = error_of(doc);
    check_message_shape(msg);
    CHECK(contains(msg, "\"measured.mma_sync_fp16_flops_per_s\" = 1e+18"));
    CHECK(contains(msg, "tensor_fp16_flops_per_s"));

    // L2 requests have no datasheet figure either: at most 1.5 x one 32-byte sector each at the L2
    // bandwidth. A value in bytes/s instead of requests/s is caught.
    doc = user_json();
    doc["measured"] = {{"l2_requests_per_s", doc["l2_bandwidth_bytes_per_s"]}, {"source", "peak-rates, 2026-01-01"}};
    msg = error_of(doc);
    check_message_shape(msg);
    CHECK(contains(msg, "measured.l2_requests_per_s"));
    CHECK(contains(msg, "l2_bandwidth_bytes_per_s / 32"));
    CHECK(contains(msg, "requests/s"));
    doc["measured"]["l2_requests_per_s"] = doc["l2_bandwidth_bytes_per_s"].get<double>() / 64;
    CHECK(fasim::parse_gpu_json(doc.dump(), "test.json").l2_request_rate() == Approx(doc["l2_bandwidth_bytes_per_s"].get<double>() / 64));
}

// ---- Hardening (issue 25) ----

TEST_CASE("measured rates must lie within 0.1x..1.5x their datasheet number", "[gpu][hardening]") {
    // Tiny rates passed "positive" and gave infinite predicted times (5e-324) or 3.4e307 s (1e-300).
    const std::pair<const char*, const char*> keys[] = {{"hbm_bandwidth_bytes_per_s", "hbm_bandwidth_bytes_per_s"},
                                                        {"tensor_fp16_flops_per_s", "tensor_fp16_flops_per_s"},
                                                        {"tensor_bf16_flops_per_s", "tensor_bf16_flops_per_s"},
                                                        {"fp32_flops_per_s", "fp32_flops_per_s"},
                                                        {"ffma_flops_per_s", "fp32_flops_per_s"},
                                                        {"mma_sync_fp16_flops_per_s", "tensor_fp16_flops_per_s"},
                                                        {"mma_sync_bf16_flops_per_s", "tensor_bf16_flops_per_s"},
                                                        {"l2_requests_per_s", "l2_bandwidth_bytes_per_s"}};
    for (const auto& [key, paired] : keys) {
        const double datasheet = user_json()[paired].get<double>() / (std::string(key) == "l2_requests_per_s" ? 32 : 1);
        for (const double value : {5e-324, 1e-300, 1.0, 0.099 * datasheet}) {
            CAPTURE(key, value);
            json doc = user_json();
            doc["measured"] = {{key, value}, {"source", "a test, 2026-11-25"}};
            const std::string msg = error_of(doc);
            check_message_shape(msg);
            CHECK(contains(msg, std::string("\"measured.") + key + "\" = "));
            CHECK(contains(msg, "is less than 0.1x the datasheet value"));
            CHECK(contains(msg, "0.1 to 1.5x the datasheet"));
        }
        json doc = user_json();
        doc["measured"] = {{key, 0.11 * datasheet}, {"source", "a test, 2026-11-25"}};
        CHECK_NOTHROW(fasim::parse_gpu_json(doc.dump(), "test.json"));
    }
    // A measured rate for a unit the datasheet says the card lacks (0) is refused, not left unbounded.
    json doc = user_json();
    doc["tensor_bf16_flops_per_s"] = 0;
    doc["measured"] = {{"mma_sync_bf16_flops_per_s", 1e18}, {"source", "a test, 2026-11-25"}};
    const std::string msg = error_of(doc);
    check_message_shape(msg);
    CHECK(contains(msg, "\"tensor_bf16_flops_per_s\" = 0"));
}

TEST_CASE("every preset's measured numbers pass the bounds", "[gpu][hardening]") {
    for (const GpuSpec& g : fasim::gpu_presets()) {
        CAPTURE(g.name);
        CHECK_NOTHROW(fasim::parse_gpu_json(fasim::gpu_spec_to_json(g), "round trip"));
    }
}

TEST_CASE("JSON nesting is bounded while parsing, control characters in keys are escaped", "[gpu][hardening]") {
    std::string msg = error_of_text(std::string(100000, '[') + std::string(100000, ']'));
    check_message_shape(msg);
    CHECK(contains(msg, "nests objects and arrays more than 64 deep"));
    msg = error_of_text("{\"measured\": " + std::string(70, '[') + std::string(70, ']') + "}");
    CHECK(contains(msg, "more than 64 deep"));
    // Comments may hold brackets: they are not nesting.
    json ok = user_json();
    std::string text = ok.dump(2);
    text.insert(text.find('\n'), " // [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[");
    CHECK_NOTHROW(fasim::parse_gpu_json(text, "test.json"));
    json doc = user_json();
    doc["sm_cou\nnt"] = 1;
    msg = error_of(doc);
    check_message_shape(msg);
    CHECK(contains(msg, "\"sm_cou\\nnt\""));
}

TEST_CASE("a GPU file path that is too long or a symlink loop is a usage error", "[gpu][hardening]") {
    const std::filesystem::path dir = std::filesystem::temp_directory_path() / "fasim_test_gpu_paths";
    std::filesystem::create_directories(dir);
    std::filesystem::remove(dir / "a");
    std::filesystem::remove(dir / "b");
    std::filesystem::create_symlink(dir / "b", dir / "a");
    std::filesystem::create_symlink(dir / "a", dir / "b");
    for (const std::string& path : {(dir / "a").string(), (dir / std::string(300, 'x')).string(), std::string("/dev/zero")}) {
        CAPTURE(path);
        try {
            fasim::load_gpu_file(path);
            FAIL("no UsageError");
        } catch (const UsageError& e) {
            const std::string m = e.what();
            CHECK(contains(m, "Fix:"));
            CHECK(m.find('\n') == std::string::npos);
        }
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("model constants a GPU file omits take the architecture default", "[gpu][model]") {
    const GpuSpec g = fasim::parse_gpu_json(kUserFile, "test.json");
    CHECK(g.model.schedulers_per_sm == 4);
    CHECK(g.model.cuda_core_warp_ready == 0.37);
    CHECK(g.model.mma_sync_warp_ready == 0.17);
    CHECK(g.model.l2_bytes_per_request == 64);
    CHECK(g.model.library_gemm_s_rows == 256);
    CHECK(g.model.library_gemm_o_outputs == 32768);
    CHECK(g.model.library_gemm_warps == 12);
    bool said_default = false;
    for (const auto& [key, text] : g.sources) {
        if (key == "model.mma_sync_warp_ready_fraction") said_default = contains(text, "default for") && contains(text, "model_defaults.json");
    }
    CHECK(said_default);
}

TEST_CASE("a GPU file sets every model constant", "[gpu][model]") {
    json doc = user_json();
    doc["model"] = {{"schedulers_per_sm", 2},          {"cuda_core_warp_ready_fraction", 0.5},
                    {"mma_sync_warp_ready_fraction", 0.25}, {"l2_bytes_per_request", 32},
                    {"library_gemm_s_tile_rows", 128},  {"library_gemm_s_tile_cols", 64},
                    {"library_gemm_o_tile_outputs", 8192}, {"library_gemm_o_tile_max_rows", 256},
                    {"library_gemm_k_step_bytes", 64},  {"library_gemm_warps_per_block", 8},
                    {"mma_sync_peak_fraction", 0.5},    {"dram_latency_s", 7e-7}, {"fp32_peak_fraction", 0.8},
                    {"fa2_step_issue_d64", {0.3, 0.4}}, {"fa2_step_issue_d128", json::array()},
                    {"fa2_bwd_step_issue_d64", 0.27},   {"fa2_bwd_step_issue_d128", 0}};
    doc["sources"] = {{"model.schedulers_per_sm", "a test"}};
    const GpuSpec g = fasim::parse_gpu_json(doc.dump(), "test.json");
    CHECK(g.model.schedulers_per_sm == 2);
    CHECK(g.model.cuda_core_warp_ready == 0.5);
    CHECK(g.model.mma_sync_warp_ready == 0.25);
    CHECK(g.model.l2_bytes_per_request == 32);
    CHECK(g.l2_request_rate() == g.l2_bandwidth / 32);
    CHECK(g.model.library_gemm_s_rows == 128);
    CHECK(g.model.library_gemm_s_cols == 64);
    CHECK(g.model.library_gemm_o_outputs == 8192);
    CHECK(g.model.library_gemm_o_max_rows == 256);
    CHECK(g.model.library_gemm_k_step_bytes == 64);
    CHECK(g.model.library_gemm_warps == 8);
    CHECK(g.model.mma_sync_peak_fraction == 0.5);
    CHECK(g.model.fp32_peak_fraction == 0.8);
    CHECK(g.effective_fp32_flops() == Approx(0.8 * g.fp32_flops));  // no measured.fp32_flops_per_s in this file
    CHECK(g.model.dram_latency_s == 7e-7);
    CHECK(g.model.fa2_step_issue_d64 == std::vector<double>{0.3, 0.4});
    CHECK(g.model.fa2_step_issue_d128.empty());
    CHECK(g.model.fa2_bwd_step_issue_d64 == 0.27);
    CHECK(g.model.fa2_bwd_step_issue_d128 == 0);
    for (const auto& [key, text] : g.sources) {
        if (key == "model.schedulers_per_sm") CHECK(text == "a test");
        if (key == "model.l2_bytes_per_request") CHECK(contains(text, "no source stated"));
    }
    // The written file gives the same spec back, model constants included.
    check_same_spec(fasim::parse_gpu_json(fasim::gpu_spec_to_json(g), "round trip"), g);
}

TEST_CASE("model constants out of range are usage errors naming key and range", "[gpu][model]") {
    const std::vector<std::pair<std::string, json>> bad = {
        {"mma_sync_warp_ready_fraction", 17},     {"cuda_core_warp_ready_fraction", 0},
        {"schedulers_per_sm", 2.5},               {"l2_bytes_per_request", 4096},
        {"library_gemm_o_tile_outputs", "32768"}, {"library_gemm_warps_per_block", -1},
        {"mma_sync_peak_fraction", 1.5},          {"dram_latency_s", 500}, {"fp32_peak_fraction", 0},
        {"fa2_step_issue_d64", 0.35},             {"fa2_step_issue_d128", {0.3, 1.5}},
        {"fa2_step_issue_d64", {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}}, {"fa2_step_issue_d128", {"0.3"}},
        {"fa2_bwd_step_issue_d64", 1.5},          {"fa2_bwd_step_issue_d128", -0.2},
        {"fa2_bwd_step_issue_d128", {0.2}}};
    for (const auto& [key, value] : bad) {
        json doc = user_json();
        doc["model"] = {{key, value}};
        const std::string msg = error_of(doc);
        check_message_shape(msg);
        CHECK(contains(msg, "model." + key));
        CHECK(contains(msg, "must be"));
    }
    json doc = user_json();
    doc["model"] = {{"schedulers_per_sm_typo", 4}};
    CHECK(contains(error_of(doc), "did you mean \"schedulers_per_sm\""));
}

TEST_CASE("the H200 preset states its own model constants, all but the unmeasured DRAM latency", "[gpu][model]") {
    const GpuSpec h200 = fasim::find_gpu_preset("H200");
    for (const auto& [key, text] : h200.sources) {
        INFO(key);
        if (key == "model.dram_latency_s") CHECK(contains(text, "default for Hopper"));
        else if (key.rfind("model.", 0) == 0) CHECK_FALSE(contains(text, "default for"));
    }
    const GpuSpec h100 = fasim::find_gpu_preset("H100-SXM");
    CHECK(h100.model.mma_sync_warp_ready == h200.model.mma_sync_warp_ready);  // the default is the H200's reading
}

TEST_CASE("FA2's step issue table: Hopper's from the H200's probe, none before Hopper, read between its entries",
          "[gpu][model]") {
    // The probe ran on an H200 only (cuda/results/2026-11-30-h200-attention-step/): Hopper takes its table (the
    // H100 has the same SM), older architectures have none and keep the readiness law.
    const GpuSpec h200 = fasim::find_gpu_preset("H200");
    CHECK(h200.model.fa2_step_issue_d64 == std::vector<double>{0.355, 0.419, 0.459, 0.474});
    CHECK(h200.model.fa2_step_issue_d128 == std::vector<double>{0.318, 0.365, 0.372});
    for (const GpuSpec& g : fasim::gpu_presets()) {
        INFO(g.name);
        const bool hopper = g.compute_capability >= 90;
        CHECK(g.model.fa2_step_issue_d64.empty() == !hopper);
        CHECK(g.model.fa2_step_issue_d128.empty() == !hopper);
        if (hopper) CHECK(g.model.fa2_step_issue_d128 == h200.model.fa2_step_issue_d128);
    }
    // The table for a head dimension: the nearer of d = 64 and 128 (either, where only one is measured).
    CHECK(&h200.model.fa2_step_issue(32) == &h200.model.fa2_step_issue_d64);
    CHECK(&h200.model.fa2_step_issue(96) == &h200.model.fa2_step_issue_d64);
    CHECK(&h200.model.fa2_step_issue(97) == &h200.model.fa2_step_issue_d128);
    CHECK(&h200.model.fa2_step_issue(256) == &h200.model.fa2_step_issue_d128);
    GpuSpec only64 = h200;
    only64.model.fa2_step_issue_d128.clear();
    CHECK(&only64.model.fa2_step_issue(128) == &only64.model.fa2_step_issue_d64);
    // Entry n - 1 is n blocks per scheduler; linear between entries and from 0 at n = 0; the last past the end.
    const std::vector<double>& t = h200.model.fa2_step_issue_d128;
    CHECK(GpuSpec::step_issue_fraction(t, 1) == Approx(0.318));
    CHECK(GpuSpec::step_issue_fraction(t, 0.5) == Approx(0.159));
    CHECK(GpuSpec::step_issue_fraction(t, 1.5) == Approx((0.318 + 0.365) / 2));
    CHECK(GpuSpec::step_issue_fraction(t, 3) == Approx(0.372));
    CHECK(GpuSpec::step_issue_fraction(t, 6) == Approx(0.372));
    CHECK(GpuSpec::step_issue_fraction({}, 2) == 0);
}

TEST_CASE("FA2 backward step's issue rate: Hopper's from the H200's probe, none before Hopper, the nearer d",
          "[gpu][model]") {
    // peak-rates --backward-step ran on an H200 only (cuda/results/2026-12-01-h200-backward-step/): 2 warps per
    // scheduler x 610.2 (d = 64) and 919.0 (d = 128) warp instructions per step over 4631.6 and 8431.1 cycles.
    const GpuSpec h200 = fasim::find_gpu_preset("H200");
    CHECK(h200.model.fa2_bwd_step_issue_d64 == Approx(2 * 610.2 / 4631.6).margin(0.0005));
    CHECK(h200.model.fa2_bwd_step_issue_d128 == Approx(2 * 919.0 / 8431.1).margin(0.0005));
    for (const GpuSpec& g : fasim::gpu_presets()) {
        INFO(g.name);
        const bool hopper = g.compute_capability >= 90;
        CHECK((g.model.fa2_bwd_step_issue_d64 > 0) == hopper);
        CHECK((g.model.fa2_bwd_step_issue_d128 > 0) == hopper);
        if (hopper) CHECK(g.model.fa2_bwd_step_issue_d128 == h200.model.fa2_bwd_step_issue_d128);
    }
    CHECK(h200.model.fa2_bwd_step_issue(64) == h200.model.fa2_bwd_step_issue_d64);
    CHECK(h200.model.fa2_bwd_step_issue(96) == h200.model.fa2_bwd_step_issue_d64);
    CHECK(h200.model.fa2_bwd_step_issue(97) == h200.model.fa2_bwd_step_issue_d128);
    GpuSpec only128 = h200;
    only128.model.fa2_bwd_step_issue_d64 = 0;
    CHECK(only128.model.fa2_bwd_step_issue(64) == h200.model.fa2_bwd_step_issue_d128);
    CHECK(fasim::find_gpu_preset("A100-SXM4-40GB").model.fa2_bwd_step_issue(128) == 0);
}

TEST_CASE("a preset without a measured FP32 rate gets its architecture's share of the datasheet rate, with its source",
          "[gpu][model]") {
    // Hopper: cuBLAS's SGEMM reaches 0.76 of the datasheet FP32 rate on the H200 (50.8 of 66.9 TFLOP/s), a
    // microbenchmark; before Hopper nothing was measured and the datasheet rate stands.
    for (const GpuSpec& g : fasim::gpu_presets()) {
        INFO(g.name);
        const bool hopper = g.compute_capability >= 90;
        CHECK(g.model.fp32_peak_fraction == (hopper ? 0.76 : 1.0));
        if (g.measured.fp32_flops == 0) CHECK(g.effective_fp32_flops() == Approx(g.model.fp32_peak_fraction * g.fp32_flops));
        for (const auto& [key, text] : g.sources)
            if (key == "model.fp32_peak_fraction" && g.name != "H200")
                CHECK(contains(text, hopper ? "50.8 TFLOP/s" : "not measured"));
    }
    // The H200 states the SGEMM rate it measured, and the H100, on the same SM, gets about that rate from its datasheet.
    const GpuSpec h200 = fasim::find_gpu_preset("H200"), h100 = fasim::find_gpu_preset("H100-SXM");
    CHECK(h200.model.fp32_peak_fraction == Approx(h200.measured.fp32_flops / h200.fp32_flops).margin(0.005));
    CHECK(h100.effective_fp32_flops() == Approx(h200.effective_fp32_flops()).epsilon(0.01));
}

TEST_CASE("a preset without measured mma.sync gets its architecture's share of the tensor peak, with its source",
          "[gpu][model]") {
    // sm_90: mma.sync reaches about two thirds of the dense peak (wgmma reaches the rest); sm_75..sm_89:
    // mma.sync is the tensor cores' full path. --list-gpus prints these sources.
    for (const GpuSpec& g : fasim::gpu_presets()) {
        INFO(g.name);
        const bool hopper = g.compute_capability >= 90;
        CHECK(g.model.mma_sync_peak_fraction == (hopper ? 0.65 : 1.0));
        CHECK(g.model.dram_latency_s == (hopper ? 3.52e-7 : 5e-7));  // Hopper's: fa-calibrate on the H100
        for (const auto& [key, text] : g.sources) {
            if (key == "model.dram_latency_s") CHECK(contains(text, hopper ? "measured by fa-calibrate" : "awaits fa-calibrate"));
            if (key != "model.mma_sync_peak_fraction" || g.name == "H200") continue;
            CHECK(contains(text, hopper ? "default for Hopper" : "ISA fact"));
            if (hopper) CHECK(contains(text, "641.7"));
        }
        if (g.measured.mma_sync_fp16_flops == 0 && g.tensor_fp16_flops > 0)
            CHECK(g.mma_sync_flops(DType::fp16) == Approx(g.model.mma_sync_peak_fraction * g.tensor_fp16_flops));
    }
}
