// fa-calibrate: measures the ceilings fa-sim's runtime model needs on the GPU at hand and writes a
// complete GPU file (format fa-sim-gpu/1) with a source for every number, for fa-sim --gpu-file.
//
//   build/cuda/fa-calibrate [--out my-gpu.json] [--name my-gpu] [--raw probes.json]
//
// Measured here (bench/microbench.hpp, bench/cublas_rates.hpp): the copy bandwidth, cuBLAS's fp16,
// bf16 and fp32 GEMM rates, mma.sync fp16/bf16, FFMA, exp2 (SFU), the L2 read bandwidth and request
// rate, the launch overhead; the DRAM latency and what one block streams go to --raw only (the model
// does not use them yet). The device's properties (SMs, memory sizes, shared memory, registers) come
// from the CUDA runtime. Datasheet figures come from fa-sim's preset for the card where there is one;
// otherwise from architecture facts (docs/calibrate.md). The model's constants that no microbenchmark
// here measures (warp readiness, cuBLAS's tiles) keep their architecture defaults, and the file says so.
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/attention_step.hpp"
#include "bench/backward_step.hpp"
#include "bench/cublas_rates.hpp"
#include "bench/microbench.hpp"
#include "common/check.hpp"
#include "common/errors.hpp"
#include "gpu/gpu_catalog.hpp"

namespace {

using nlohmann::json;
namespace bench = fasim::bench;

std::string architecture_of(int cc) {
    if (cc >= 100) return "Blackwell";
    if (cc >= 90) return "Hopper";
    if (cc == 89) return "Ada";
    if (cc >= 80) return "Ampere";
    if (cc >= 75) return "Turing";
    return "Volta or older";
}

// FP32 lanes per SM (CUDA C++ Programming Guide, arithmetic-instruction throughput: 32-bit
// floating-point add/multiply/fma results per clock per SM): 64 on sm_75 and sm_80, 128 on sm_86,
// sm_89, sm_90 and later.
int fp32_lanes_per_sm(int cc) { return cc == 75 || cc == 80 || cc < 70 ? 64 : 128; }

// A name fa-sim accepts (A-Z a-z 0-9 - _ . +, at most 64 characters) from the device's.
std::string file_name_of(const std::string& device) {
    std::string out;
    for (char c : device) {
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                        c == '.' || c == '+';
        out += ok ? c : '-';
    }
    return out.substr(0, 64);
}

std::string today() {
    char buf[32];
    const std::time_t t = std::time(nullptr);
    std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
    return buf;
}

std::string fmt(const char* f, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, f, v);
    return buf;
}

// A step's share of cycles (its assumed warp instructions per step over the cycles the probe measured) outside
// 0.01..1 says this build's step has another instruction count than the one assumed: the GPU file leaves model.KEY
// out (the model then takes the readiness law), and fa-calibrate says so.
bool issue_share_plausible(double share, const std::string& step, const std::string& key, double instructions) {
    if (share >= 0.01 && share <= 1.0) return true;
    std::cerr << "fa-calibrate: " << step << " issues " << share << " of cycles by the assumed " << instructions
              << " warp instructions per step, outside 0.01..1: this compiler or GPU builds the step otherwise; model." << key
              << " is left out (count the step's instructions with Nsight Compute and write it by hand)\n";
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"fa-calibrate: measure this GPU's ceilings and write a GPU file for fa-sim --gpu-file"};
    std::string out_path = "calibrated-gpu.json", name, raw_path;
    app.add_option("--out", out_path, "the GPU file to write (default calibrated-gpu.json)")->type_name("PATH");
    app.add_option("--name", name, "the GPU's name in the file (default: the device's name, e.g. NVIDIA-H100-80GB-HBM3)")
        ->type_name("NAME");
    app.add_option("--raw", raw_path, "also write every probe's result as JSON here")->type_name("PATH");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "fa-calibrate: " << e.what() << ". Fix: see fa-calibrate --help\n";
        return 2;
    }

    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        std::cerr << "fa-calibrate: no CUDA device (" << (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices")
                  << "): run it on the machine with the GPU to calibrate, with its NVIDIA driver loaded\n";
        return 1;
    }
    try {
        cudaDeviceProp prop{};
        CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
        int driver = 0, runtime = 0, clock_khz = 0, mem_khz = 0, bus_bits = 0;
        CUDA_CHECK(cudaDriverGetVersion(&driver));
        CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
        CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
        CUDA_CHECK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0));
        CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0));
        const int cc = prop.major * 10 + prop.minor;
        const int sms = prop.multiProcessorCount;
        const std::string device = prop.name;
        const std::string where = "on this " + device + " (driver " + std::to_string(driver / 1000) + "." +
                                  std::to_string(driver % 1000 / 10) + ", CUDA runtime " + std::to_string(runtime / 1000) + "." +
                                  std::to_string(runtime % 1000 / 10) + "), " + today();
        std::cerr << "fa-calibrate: " << device << ", sm_" << cc << ", " << sms << " SMs; measuring (about a minute)\n";

        // The probes.
        json raw = {{"gpu", device}, {"compute_capability", cc}, {"sm_count", sms}, {"max_clock_hz", clock_khz * 1e3}};
        const double copy = bench::copy_bytes_per_s();
        const double dram_read = bench::dram_stream_bytes_per_s(sms, false);
        const double dram_write = bench::dram_stream_bytes_per_s(sms, true);
        const double ffma = bench::ffma_flops_per_s(sms);
        const double exp2 = bench::exp2_per_s(sms);
        const bool has_mma = cc >= 80;
        const double mma16 = has_mma ? bench::mma_sync_flops_per_s(sms, false) : 0;
        const double mma_bf16 = has_mma ? bench::mma_sync_flops_per_s(sms, true) : 0;
        const double gemm16 = cc >= 70 ? bench::cublas_gemm_flops_per_s(bench::GemmType::fp16) : 0;
        const double gemm_bf16 = cc >= 80 ? bench::cublas_gemm_flops_per_s(bench::GemmType::bf16) : 0;
        const double gemm32 = bench::cublas_gemm_flops_per_s(bench::GemmType::fp32, 4096);
        // Attention-shaped GEMMs (batch 16 of N = 4096): S = Q K^T reduces over only d, O = P V writes only d
        // columns; cuBLAS reaches less than its square rate on both (fa-sim's library GEMMs take these rates).
        struct ShapePoint {
            const char* dtype;
            bench::GemmType type;
            int m, n, k;
            bool b_transposed;
            double flops;
        };
        std::vector<ShapePoint> shapes;
        for (const auto& [dtype_name, type] : {std::pair{"fp16", bench::GemmType::fp16}, {"bf16", bench::GemmType::bf16},
                                         {"fp32", bench::GemmType::fp32}}) {
            if ((type == bench::GemmType::fp16 && cc < 70) || (type == bench::GemmType::bf16 && cc < 80)) continue;
            for (const int d : {64, 128}) {
                shapes.push_back({dtype_name, type, 4096, 4096, d, true, bench::cublas_batched_gemm_flops_per_s(type, 4096, 4096, d, 16, true)});
                shapes.push_back({dtype_name, type, 4096, d, 4096, false, bench::cublas_batched_gemm_flops_per_s(type, 4096, d, 4096, 16, false)});
            }
        }
        const double l2_read = bench::l2_read_bytes_per_s(sms, static_cast<std::size_t>(prop.l2CacheSize));
        const auto l2_requests = bench::l2_request_rates(sms);
        const double latency = bench::dram_latency_s(static_cast<std::size_t>(prop.l2CacheSize));
        const double block128 = bench::one_block_stream_bytes_per_s(128);
        const double block1024 = bench::one_block_stream_bytes_per_s(1024);
        const double launch = bench::launch_overhead_s();
        const double clock_loaded = has_mma ? bench::sm_clock_under_mma_hz(sms, true) : 0;
        const double clock_one_block = has_mma ? bench::sm_clock_under_mma_hz(sms, false) : 0;
        // Requests per second the L2 serves: the probes with 4 and 2 lines per warp load, where no two
        // warps of a block ask for a line at once (the 32-line probe's do, and the L1 merges a fifth of
        // them; the 1-line probe moves four sectors per line and is sector-bound).
        double l2_req = 0;
        for (const auto& r : l2_requests)
            if (r.lines_per_load == 4 || r.lines_per_load == 2) l2_req += r.requests_per_s / 2;
        raw["copy_bytes_per_s"] = copy;
        raw["dram_read_stream_bytes_per_s"] = dram_read;
        raw["dram_write_stream_bytes_per_s"] = dram_write;
        raw["ffma_flops_per_s"] = ffma;
        raw["exp2_per_s"] = exp2;
        raw["mma_sync_fp16_flops_per_s"] = mma16;
        raw["mma_sync_bf16_flops_per_s"] = mma_bf16;
        raw["cublas_fp16_flops_per_s"] = gemm16;
        raw["cublas_bf16_flops_per_s"] = gemm_bf16;
        raw["cublas_fp32_flops_per_s"] = gemm32;
        for (const ShapePoint& sp : shapes)
            raw["cublas_batched_shapes"].push_back({{"dtype", sp.dtype}, {"m", sp.m}, {"n", sp.n}, {"k", sp.k}, {"batch", 16},
                                                    {"b_transposed", sp.b_transposed}, {"flops_per_s", sp.flops}});
        raw["l2_read_bytes_per_s"] = l2_read;
        for (const auto& r : l2_requests)
            raw["l2_requests_" + std::to_string(r.lines_per_load) + "_lines_per_load"] = {{"requests_per_s", r.requests_per_s},
                                                                                           {"sectors_per_s", r.sectors_per_s}};
        raw["dram_latency_s"] = latency;
        raw["one_block_128_threads_bytes_per_s"] = block128;
        raw["one_block_128_threads_bytes_in_flight"] = block128 * latency;
        raw["one_block_1024_threads_bytes_per_s"] = block1024;
        raw["one_block_1024_threads_bytes_in_flight"] = block1024 * latency;
        raw["launch_overhead_s"] = launch;
        raw["sm_clock_under_mma_whole_gpu_hz"] = clock_loaded;
        raw["sm_clock_under_mma_one_block_hz"] = clock_one_block;
        // The FA2 step's cycles per warp at 1 to 4 warps per scheduler (bench/attention_step.hpp), and from those
        // with one row block a warp the step's issue rate by warps per scheduler: W x its warp instructions per
        // step over its cycles per step (model.fa2_step_issue_d64/_d128, below). The table stops at the first W
        // the register file does not hold.
        std::map<int, std::vector<double>> step_issue;  // d -> share of cycles at W = 1, 2, ...
        std::map<int, std::vector<double>> step_cycles;
        if (has_mma)
            for (const auto& [d, row_blocks] : bench::kAttentionStepShapes)
                for (int w = 1; w <= 4; ++w) {
                    const bench::AttentionStepIssue a = bench::attention_step_issue(sms, d, row_blocks, w);
                    if (!a.ran) continue;
                    raw["attention_step"].push_back({{"d", d}, {"row_blocks", row_blocks}, {"warps_per_scheduler", w},
                                                     {"registers", a.registers}, {"cycles_per_step", a.cycles_per_step}});
                    if (row_blocks == 1 && a.cycles_per_step > 0 && step_issue[d].size() == static_cast<std::size_t>(w - 1)) {
                        step_issue[d].push_back(w * bench::kAttentionStepWarpInstructions(d) / a.cycles_per_step);
                        step_cycles[d].push_back(a.cycles_per_step);
                    }
                }
        // fa2_bwd_tc's step in its own shape (bench/backward_step.hpp): 2 warps per scheduler x its warp instructions
        // per step over its cycles per step (model.fa2_bwd_step_issue_d64/_d128, below).
        std::map<int, double> bwd_step_issue, bwd_step_cycles;  // d -> share of cycles, cycles per step
        if (has_mma)
            for (const int d : bench::kBackwardStepDims) {
                const bench::BackwardStepIssue b = bench::backward_step_issue(sms, d, /*shared_dq=*/false);
                if (!b.ran) continue;
                raw["backward_step"].push_back({{"d", d}, {"registers", b.registers}, {"cycles_per_step", b.cycles_per_step}});
                if (b.cycles_per_step > 0) {
                    bwd_step_issue[d] = bench::kBackwardStepWarpsPerScheduler * bench::kBackwardStepWarpInstructions(d) / b.cycles_per_step;
                    bwd_step_cycles[d] = b.cycles_per_step;
                }
            }

        // The GPU file: the preset for this card where fa-sim has one (its datasheet numbers and
        // sources), else the device's properties and architecture facts.
        const std::string preset = fasim::preset_for_device(device, prop.totalGlobalMem);
        json doc;
        json sources = json::object();
        if (!preset.empty()) {
            doc = json::parse(fasim::gpu_spec_to_json(fasim::find_gpu_preset(preset)));
            sources = doc["sources"];
            // The preset's model constants stay only where the preset stated them itself (measured on that
            // card); defaults are re-derived when the file is read.
            json model = json::object();
            for (auto& [key, value] : doc["model"].items()) {
                const std::string s = sources.value("model." + key, "");
                if (s.rfind("default for", 0) == 0) sources.erase("model." + key);
                else model[key] = value;
            }
            doc["model"] = model;
            doc["description"] = device + ", calibrated by fa-calibrate " + today() + " (datasheet figures: preset " + preset + ")";
        } else {
            const double clock = clock_khz * 1e3;
            doc = {{"format", fasim::kGpuFileFormat},
                   {"description", device + ", calibrated by fa-calibrate " + today()},
                   {"architecture", architecture_of(cc)},
                   {"compute_capability", cc},
                   {"sm_count", sms},
                   {"max_warps_per_sm", prop.maxThreadsPerMultiProcessor / 32},
                   {"max_blocks_per_sm", prop.maxBlocksPerMultiProcessor},
                   {"registers_per_sm", prop.regsPerMultiprocessor},
                   {"max_registers_per_thread", 255},
                   {"smem_per_sm_bytes", prop.sharedMemPerMultiprocessor},
                   {"smem_per_block_bytes", prop.sharedMemPerBlockOptin},
                   {"clock_hz", clock},
                   {"hbm_bytes", prop.totalGlobalMem},
                   {"hbm_bandwidth_bytes_per_s", 2.0 * mem_khz * 1e3 * bus_bits / 8},
                   {"l2_bytes", prop.l2CacheSize},
                   {"smem_bandwidth_per_sm_bytes_per_s", 128 * clock},
                   {"tensor_fp16_flops_per_s", gemm16},
                   {"tensor_bf16_flops_per_s", gemm_bf16},
                   {"tensor_tf32_flops_per_s", cc >= 80 ? gemm16 / 2 : 0.0},
                   {"fp32_flops_per_s", 2.0 * fp32_lanes_per_sm(cc) * sms * clock},
                   {"sfu_ops_per_s", 16.0 * sms * clock}};
            const std::string props = "cudaGetDeviceProperties " + where;
            for (const char* k : {"compute_capability", "sm_count", "max_warps_per_sm", "max_blocks_per_sm", "registers_per_sm",
                                  "smem_per_sm_bytes", "smem_per_block_bytes", "hbm_bytes", "l2_bytes"})
                sources[k] = props;
            sources["max_registers_per_thread"] = "the ISA's limit, 255 on every GPU since sm_50";
            sources["clock_hz"] = "cudaDevAttrClockRate (the maximum SM clock) " + where;
            sources["hbm_bandwidth_bytes_per_s"] = "derived: 2 x memory clock x bus width (cudaDevAttrMemoryClockRate " +
                                                   std::to_string(mem_khz / 1000) + " MHz, " + std::to_string(bus_bits) +
                                                   " bits) " + where;
            sources["smem_bandwidth_per_sm_bytes_per_s"] = "derived: 128 bytes/clk/SM (32 banks x 4 bytes) x clock_hz";
            const std::string no_sheet = "fa-sim has no datasheet figure for this GPU: the rate fa-calibrate measured (replace it "
                                         "with the datasheet's dense figure if you have it)";
            sources["tensor_fp16_flops_per_s"] = no_sheet;
            sources["tensor_bf16_flops_per_s"] = cc >= 80 ? no_sheet : "0: no bf16 tensor cores before sm_80";
            sources["tensor_tf32_flops_per_s"] = cc >= 80 ? "derived: half the fp16 rate (sm_80 and later; informational)"
                                                          : "0: no TF32 tensor cores before sm_80";
            sources["fp32_flops_per_s"] = "derived: 2 x " + std::to_string(fp32_lanes_per_sm(cc)) +
                                          " FP32 lanes per SM (CUDA C++ Programming Guide, arithmetic-instruction throughput) x "
                                          "sm_count x clock_hz";
            sources["sfu_ops_per_s"] = "derived: 16 exp2 results per clock per SM (CUDA C++ Programming Guide, "
                                       "arithmetic-instruction throughput, sm_75 to sm_90) x sm_count x clock_hz";
        }
        doc["name"] = name.empty() ? file_name_of(device) : name;
        doc["l2_bandwidth_bytes_per_s"] = l2_read;
        sources["l2_bandwidth_bytes_per_s"] = "measured by fa-calibrate " + where + ": 4 blocks x 1024 threads per SM re-reading 3/4 of "
                                              "L2 with 16-byte ld.global.cg loads, median of 20: " + fmt("%.3g", l2_read) + " B/s";
        doc["launch_overhead_s"] = launch;
        sources["launch_overhead_s"] = "measured by fa-calibrate " + where + ": 1000 empty kernels back to back, median of 20";

        // Measured ceilings, each with its own source; a GEMM rate only where the datasheet has the unit.
        json measured = json::object();
        auto put = [&](const char* key, double v, const std::string& how) {
            if (!(v > 0)) return;
            measured[key] = v;
            sources[std::string("measured.") + key] = "measured by fa-calibrate " + where + ": " + how;
        };
        put("hbm_bandwidth_bytes_per_s", copy, "device-to-device cudaMemcpyAsync of 1 GiB, best of 10, read + write bytes per second");
        if (doc["tensor_fp16_flops_per_s"].get<double>() > 0)
            put("tensor_fp16_flops_per_s", gemm16, "cublasGemmEx fp16 8192^3, fp32 accumulate, best of 3 x 20");
        if (doc["tensor_bf16_flops_per_s"].get<double>() > 0)
            put("tensor_bf16_flops_per_s", gemm_bf16, "cublasGemmEx bf16 8192^3, fp32 accumulate, best of 3 x 20");
        put("fp32_flops_per_s", gemm32, "cublasGemmEx fp32 4096^3 (no TF32), best of 3 x 20: every FP32 rate of fa-sim's model");
        put("ffma_flops_per_s", ffma, "FFMA from registers (fmaf), 4 blocks x 256 threads per SM, 8 independent accumulators per "
                                      "thread, median of 20: the FP32 pipe's peak (recorded; fa-sim's model does not use it yet, "
                                      "docs/gpu-file.md)");
        if (doc["tensor_fp16_flops_per_s"].get<double>() > 0)
            put("mma_sync_fp16_flops_per_s", mma16, "mma.sync m16n8k16 fp16, fp32 accumulate, 4 blocks x 8 warps per SM, 8 "
                                                    "independent accumulators per warp, median of 20");
        if (doc["tensor_bf16_flops_per_s"].get<double>() > 0)
            put("mma_sync_bf16_flops_per_s", mma_bf16, "mma.sync m16n8k16 bf16, as fp16");
        put("l2_requests_per_s", l2_req, "the L2 request probe's issued requests per second with 4 and 2 lines per warp load "
                                         "(ld.global.cg, 64 warps per SM), mean; not ncu's count of what the slices served");
        put("sfu_ops_per_s", exp2, "ex2.approx.f32 (MUFU.EX2), 4 blocks x 256 threads per SM, 8 independent chains, median of 20");
        // Each attention-shaped GEMM's rate as a fraction of the same dtype's square rate measured above.
        json shape_rates = json::array();
        for (const ShapePoint& sp : shapes) {
            const double square = sp.type == bench::GemmType::fp16 ? gemm16 : sp.type == bench::GemmType::bf16 ? gemm_bf16 : gemm32;
            if (square > 0 && sp.flops > 0)
                shape_rates.push_back({{"dtype", sp.dtype}, {"m", sp.m}, {"n", sp.n}, {"k", sp.k}, {"efficiency", sp.flops / square}});
        }
        raw["cublas_batched_shape_efficiency"] = shape_rates;  // recorded; the model does not take them yet
        // FA2's step measured alone: the model's issue rate for the kernels built on it (docs/model.md).
        for (const auto& [d, rates] : step_issue) {
            if (rates.empty()) continue;
            const std::string key = "fa2_step_issue_d" + std::to_string(d);
            if (!std::all_of(rates.begin(), rates.end(), [&](double r) {
                    return issue_share_plausible(r, "FA2's step at d = " + std::to_string(d), key,
                                                 bench::kAttentionStepWarpInstructions(d));
                }))
                continue;
            std::string cycles;
            for (double c : step_cycles[d]) cycles += (cycles.empty() ? "" : ", ") + fmt("%.0f", c);
            doc["model"][key] = rates;
            sources["model." + key] = "measured by fa-calibrate " + where + ": FA2's step alone (S = QK^T over 64 keys, the "
                                      "online softmax, O += PV; bench/attention_step.hpp) at d = " + std::to_string(d) + ", 1 to " +
                                      std::to_string(rates.size()) + " warps per scheduler: W x " +
                                      fmt("%.0f", bench::kAttentionStepWarpInstructions(d)) +
                                      " warp instructions per step (Nsight Compute on sm_90a) over clock64 cycles per step (" +
                                      cycles + ")";
        }
        // fa2_bwd_tc's step measured alone, likewise.
        for (const auto& [d, rate] : bwd_step_issue) {
            const std::string key = "fa2_bwd_step_issue_d" + std::to_string(d);
            if (!issue_share_plausible(rate, "fa2_bwd_tc's step at d = " + std::to_string(d), key,
                                       bench::kBackwardStepWarpInstructions(d)))
                continue;
            doc["model"][key] = rate;
            sources["model." + key] = "measured by fa-calibrate " + where + ": fa2_bwd_tc's step alone (five products, dS^T "
                                      "between two barriers, dQ atomics; bench/backward_step.hpp) at d = " + std::to_string(d) +
                                      ", one block of 8 warps per SM: 2 x " + fmt("%.0f", bench::kBackwardStepWarpInstructions(d)) +
                                      " warp instructions per step (Nsight Compute on sm_90a) over " +
                                      fmt("%.0f", bwd_step_cycles[d]) + " clock64 cycles per step";
        }
        measured["source"] = "fa-calibrate " + where + " (each number's method: sources.measured.*)";
        doc["measured"] = measured;
        doc["sources"] = sources;

        // Read back as fa-sim would: the file is valid, its model defaults and their sources filled in.
        const fasim::GpuSpec spec = fasim::parse_gpu_json(doc.dump(), "fa-calibrate's file for " + device);
        const std::string text = fasim::gpu_spec_to_json(spec);
        {
            std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
            out << text;
            if (!out.good()) {
                std::cerr << "fa-calibrate: cannot write --out \"" << out_path << "\": choose a writable path\n";
                return 2;
            }
        }
        if (!raw_path.empty()) {
            std::ofstream out(raw_path, std::ios::binary | std::ios::trunc);
            out << raw.dump(2) << '\n';
            if (!out.good()) {
                std::cerr << "fa-calibrate: cannot write --raw \"" << raw_path << "\": choose a writable path\n";
                return 2;
            }
        }
        std::printf("%s: copy %.2f TB/s, cuBLAS fp16 %.0f / bf16 %.0f / fp32 %.1f TFLOP/s, mma.sync fp16 %.0f / bf16 %.0f TFLOP/s, "
                    "FFMA %.1f TFLOP/s, exp2 %.2f T/s, L2 %.2f TB/s and %.0f G requests/s, DRAM latency %.0f ns, one block "
                    "streams %.0f GB/s (128 threads) / %.0f GB/s (1024), launch %.1f us, SM clock under mma.sync %.0f MHz "
                    "(whole GPU) / %.0f MHz (one block)\n",
                    device.c_str(), copy / 1e12, gemm16 / 1e12, gemm_bf16 / 1e12, gemm32 / 1e12, mma16 / 1e12, mma_bf16 / 1e12,
                    ffma / 1e12, exp2 / 1e12, l2_read / 1e12, l2_req / 1e9, latency * 1e9, block128 / 1e9, block1024 / 1e9,
                    launch * 1e6, clock_loaded / 1e6, clock_one_block / 1e6);
        for (const json& sp : shape_rates)
            std::printf("cuBLAS %s %d x %d over %d (16 of them): %.0f%% of its square rate\n", sp["dtype"].get<std::string>().c_str(),
                        sp["m"].get<int>(), sp["n"].get<int>(), sp["k"].get<int>(), 100 * sp["efficiency"].get<double>());
        std::printf("wrote %s: fa-sim --gpu-file %s --algo fa2 --N 4096\n", out_path.c_str(), out_path.c_str());
        return 0;
    } catch (const fasim::UsageError& e) {
        std::cerr << "fa-calibrate: a measurement is outside what fa-sim accepts: " << e.what() << '\n';
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "fa-calibrate: " << e.what() << '\n';
        return 1;
    }
}
