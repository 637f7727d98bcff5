// peak-rates: the ceilings a kernel of this project can reach on the GPU at hand, measured, not taken
// from a datasheet (bench/microbench.hpp says what each probe does); fa-calibrate runs the same probes
// and writes a GPU file.
//
//   build/cuda/peak-rates                  prints the rates (JSON with --json)
//   build/cuda/peak-rates --copy [--json]  the copy bandwidth alone
//   build/cuda/peak-rates --warp-slots     which schedulers the first warps of co-resident blocks use
//   build/cuda/peak-rates --attention-step cycles per FA2 step of a warp, 1 to 4 warps per scheduler, d 64 and
//                                          128, 1 or 2 row blocks a warp (bench/attention_step.hpp)
//   build/cuda/peak-rates --backward-step  cycles per FA2 backward step (fa2_bwd_tc's) of a warp, one block of 8
//                                          warps per SM, d 64 and 128 (bench/backward_step.hpp)
//   build/cuda/peak-rates --read-once 8,64 one read of 8 and of 64 MiB from DRAM, timed as fa-validate times a
//                                          kernel: the least a decode step reading that much K and V takes
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "bench/attention_step.hpp"
#include "bench/backward_step.hpp"
#include "bench/microbench.hpp"
#include "common/check.hpp"

int main(int argc, char** argv) {
    namespace bench = fasim::bench;
    bool json = false, copy_only = false, warp_slots_only = false, attention_step_only = false, backward_step_only = false;
    std::vector<long> read_once_mib;  // --read-once: buffer sizes, MiB
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (std::strcmp(argv[i], "--copy") == 0) {
            copy_only = true;
        } else if (std::strcmp(argv[i], "--warp-slots") == 0) {
            warp_slots_only = true;
        } else if (std::strcmp(argv[i], "--attention-step") == 0) {
            attention_step_only = true;
        } else if (std::strcmp(argv[i], "--backward-step") == 0) {
            backward_step_only = true;
        } else if (std::strcmp(argv[i], "--read-once") == 0 && i + 1 < argc) {
            for (const char* p = argv[++i]; *p != '\0';) {
                char* end = nullptr;
                const long mib = std::strtol(p, &end, 10);
                if (end == p || mib < 1 || mib > 16384 || (*end != ',' && *end != '\0')) {
                    std::fprintf(stderr, "peak-rates: --read-once %s: sizes must be whole MiB, 1..16384, comma-separated. "
                                         "Fix: e.g. --read-once 8,32,64\n", argv[i]);
                    return 2;
                }
                read_once_mib.push_back(mib);
                p = *end == ',' ? end + 1 : end;
            }
        } else {
            std::fprintf(stderr, "usage: peak-rates [--copy | --warp-slots | --attention-step | --backward-step | --read-once MIB[,MIB...]] [--json]\n");
            return 2;
        }
    }
    try {
        int count = 0;
        if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
            std::fprintf(stderr, "peak-rates: SKIPPED: no CUDA device\n");
            return 77;
        }
        cudaDeviceProp prop{};
        CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
        int clock_khz = 0;
        CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
        if (!read_once_mib.empty()) {
            // What reading a decode step's K and V once costs at least, timed as fa-validate times a kernel.
            const double copy = bench::copy_bytes_per_s();
            if (json) std::printf("{\"gpu\": \"%s\", \"d2d_copy_bytes_per_s\": %.4g, \"read_once\": [", prop.name, copy);
            else std::printf("%s: one read of a buffer from DRAM (every SM, L2 flushed first, events, median of 20); copy %.2f TB/s\n",
                             prop.name, copy * 1e-12);
            for (std::size_t k = 0; k < read_once_mib.size(); ++k) {
                const std::size_t bytes = static_cast<std::size_t>(read_once_mib[k]) << 20;
                const double s = bench::dram_read_once_seconds(prop.multiProcessorCount, bytes, static_cast<std::size_t>(prop.l2CacheSize));
                const double rate = static_cast<double>(bytes) / s;
                if (json)
                    std::printf("%s{\"bytes\": %zu, \"seconds\": %.4g, \"bytes_per_s\": %.4g}", k ? ", " : "", bytes, s, rate);
                else
                    std::printf("  %6ld MiB: %8.2f us, %.2f TB/s = %3.0f%% of the copy\n", read_once_mib[k], s * 1e6,
                                rate * 1e-12, 100 * rate / copy);
            }
            if (json) std::printf("]}\n");
            return 0;
        }
        if (attention_step_only) {
            if (prop.major < 8) {
                std::fprintf(stderr, "peak-rates: SKIPPED: --attention-step needs mma.sync with 16-bit operands (sm_80 and later); %s is sm_%d%d\n",
                             prop.name, prop.major, prop.minor);
                return 77;
            }
            // Each configuration's launch is its own (under Nsight Compute, one launch each after a warm-up).
            std::printf(json ? "{\"gpu\": \"%s\", \"attention_step\": [" : "%s: one FA2 step (64 keys, fp16) per warp, one block per SM\n", prop.name);
            bool first = true;
            for (const auto& [d, rb] : bench::kAttentionStepShapes)
                for (int w = 1; w <= 4; ++w) {
                    const bench::AttentionStepIssue a = bench::attention_step_issue(prop.multiProcessorCount, d, rb, w);
                    if (json)
                        std::printf("%s{\"d\": %d, \"row_blocks\": %d, \"warps_per_scheduler\": %d, \"registers\": %d, \"ran\": %s, "
                                    "\"steps\": %d, \"cycles_per_step\": %.2f, \"min_cycles_per_step\": %.2f, \"max_cycles_per_step\": %.2f}",
                                    first ? "" : ", ", d, rb, w, a.registers, a.ran ? "true" : "false", a.steps, a.cycles_per_step,
                                    a.min_cycles_per_step, a.max_cycles_per_step);
                    else if (!a.ran)
                        std::printf("  d=%3d, %d row block(s) a warp, %d warp(s) per scheduler: not run (%d registers a thread)\n", d, rb,
                                    w, a.registers);
                    else
                        std::printf("  d=%3d, %d row block(s) a warp, %d warp(s) per scheduler: %8.1f cycles a step (%.1f..%.1f), "
                                    "%d registers\n", d, rb, w, a.cycles_per_step, a.min_cycles_per_step, a.max_cycles_per_step,
                                    a.registers);
                    first = false;
                }
            if (json) std::printf("]}\n");
            return 0;
        }
        if (backward_step_only) {
            if (prop.major < 8) {
                std::fprintf(stderr, "peak-rates: SKIPPED: --backward-step needs mma.sync with 16-bit operands (sm_80 and later); %s is sm_%d%d\n",
                             prop.name, prop.major, prop.minor);
                return 77;
            }
            // Each configuration's launch is its own (under Nsight Compute, one launch each after a warm-up).
            std::printf(json ? "{\"gpu\": \"%s\", \"backward_step\": ["
                             : "%s: one FA2 backward step (fa2_bwd_tc's: 128 keys x 64 query rows, fp16), one block of 8 warps per SM\n",
                        prop.name);
            bool first = true;
            for (const int d : bench::kBackwardStepDims)
                for (const bool shared_dq : {false, true}) {
                    const bench::BackwardStepIssue b = bench::backward_step_issue(prop.multiProcessorCount, d, shared_dq);
                    const char* dq = shared_dq ? "every block's dQ into the same rows" : "each block's dQ into rows of its own";
                    if (json)
                        std::printf("%s{\"d\": %d, \"shared_dq\": %s, \"registers\": %d, \"ran\": %s, \"steps\": %d, "
                                    "\"cycles_per_step\": %.2f, \"min_cycles_per_step\": %.2f, \"max_cycles_per_step\": %.2f}",
                                    first ? "" : ", ", d, shared_dq ? "true" : "false", b.registers, b.ran ? "true" : "false", b.steps,
                                    b.cycles_per_step, b.min_cycles_per_step, b.max_cycles_per_step);
                    else if (!b.ran)
                        std::printf("  d=%3d, %s: not run (the block does not fit)\n", d, dq);
                    else
                        std::printf("  d=%3d, %s: %8.1f cycles a step (%.1f..%.1f), %d registers\n", d, dq, b.cycles_per_step,
                                    b.min_cycles_per_step, b.max_cycles_per_step, b.registers);
                    first = false;
                }
            if (json) std::printf("]}\n");
            return 0;
        }
        if (warp_slots_only) {
            // Blocks of 128 threads (4 warps, fa-sim's decode and FA2 blocks), 1 to 4 per SM.
            std::printf(json ? "{\"gpu\": \"%s\", \"warp_slots\": [" : "%s: first warps of 4-warp blocks sharing an SM\n", prop.name);
            double alone = 0;
            for (int bps = 1; bps <= 4; ++bps) {
                const bench::WarpSlots w = bench::warp_slots(prop.multiProcessorCount, bps, 128);
                if (bps == 1) alone = w.seconds;
                if (json)
                    std::printf("%s{\"blocks_per_sm\": %d, \"fits\": %d, \"first_warps_on_busiest_scheduler\": %.3f, "
                                "\"schedulers_with_first_warps\": %.3f, \"seconds\": %.4g}", bps > 1 ? ", " : "", bps, w.fits,
                                w.first_warps_on_busiest_scheduler, w.schedulers_with_first_warps, w.seconds);
                else if (w.fits != bps)
                    std::printf("  %d blocks per SM: not placed (the occupancy calculator fits %d)\n", bps, w.fits);
                else
                    std::printf("  %d blocks per SM: %.2f first warps on the busiest scheduler, %.2f schedulers hold one; "
                                "FFMA on the first warps %.3f ms (%.2fx one block per SM)\n", bps,
                                w.first_warps_on_busiest_scheduler, w.schedulers_with_first_warps, w.seconds * 1e3,
                                alone > 0 ? w.seconds / alone : 0);
            }
            if (json) std::printf("]}\n");
            return 0;
        }
        const double copy = bench::copy_bytes_per_s();
        if (copy_only) {
            if (json)
                std::printf("{\"gpu\": \"%s\", \"d2d_copy_bytes_per_s\": %.4g}\n", prop.name, copy);
            else
                std::printf("%s: device-to-device copy %.2f TB/s (read+write bytes per second, cudaMemcpyAsync of 1 GiB, best "
                            "of 10)\n", prop.name, copy * 1e-12);
            return 0;
        }
        const int sms = prop.multiProcessorCount;
        struct Row { std::string name; double tflops; };
        std::vector<Row> rows;
        rows.push_back({"ffma_fp32", bench::ffma_flops_per_s(sms) / 1e12});
        if (prop.major >= 8) {
            rows.push_back({"mma_sync_fp16", bench::mma_sync_flops_per_s(sms, false) / 1e12});
            rows.push_back({"mma_sync_bf16", bench::mma_sync_flops_per_s(sms, true) / 1e12});
        }
        if (prop.major == 9) {  // fa2_wgmma's products: S = Q K^T (ss, n = 128 keys), O += P V (rs, n = d)
            for (const int n : {128, 64})
                for (const bool rs : {false, true}) {
                    const double f = bench::wgmma_flops_per_s(sms, n, rs);
                    if (f > 0) rows.push_back({std::string("wgmma_") + (rs ? "rs" : "ss") + "_n" + std::to_string(n) + "_fp16", f / 1e12});
                }
        }
        const std::vector<bench::L2Rate> l2 = bench::l2_request_rates(sms);
        const double dram_read = bench::dram_stream_bytes_per_s(sms, false);
        const double dram_write = bench::dram_stream_bytes_per_s(sms, true);
        if (json) {
            std::printf("{\"gpu\": \"%s\", \"sm_count\": %d, \"max_clock_mhz\": %d", prop.name, sms, clock_khz / 1000);
            for (const auto& r : rows) std::printf(", \"%s_tflops\": %.1f", r.name.c_str(), r.tflops);
            for (const auto& r : l2)
                std::printf(", \"l2_lines_per_load_%d\": {\"requests_per_s\": %.4g, \"sectors_per_s\": %.4g}", r.lines_per_load,
                            r.requests_per_s, r.sectors_per_s);
            std::printf(", \"d2d_copy_bytes_per_s\": %.4g, \"dram_read_stream_bytes_per_s\": %.4g, "
                        "\"dram_write_stream_bytes_per_s\": %.4g}\n", copy, dram_read, dram_write);
        } else {
            std::printf("%s, %d SMs, max SM clock %d MHz\n", prop.name, sms, clock_khz / 1000);
            for (const auto& r : rows) std::printf("  %-14s %8.1f TFLOP/s\n", r.name.c_str(), r.tflops);
            std::printf("  L2 reads (ld.global.cg, 64 warps per SM):\n");
            for (const auto& r : l2)
                std::printf("    %2d line(s) per warp load: %7.1f G requests/s, %7.1f G sectors/s (%.2f TB/s)\n", r.lines_per_load,
                            r.requests_per_s / 1e9, r.sectors_per_s / 1e9, r.sectors_per_s * 32 / 1e12);
            std::printf("  device-to-device copy %.2f TB/s (read+write bytes per second, cudaMemcpyAsync of 1 GiB, best of 10)\n",
                        copy * 1e-12);
            std::printf("  DRAM streams, every SM, 1 GiB: read only %.2f TB/s, write only %.2f TB/s\n", dram_read * 1e-12,
                        dram_write * 1e-12);
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "peak-rates: %s\n", e.what());
        return 1;
    }
}
