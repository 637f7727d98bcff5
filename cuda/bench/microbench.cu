// peak-rates: the ceilings a kernel of this project can reach on the GPU at hand, measured, not
// taken from a datasheet:
//   ffma      fp32 fused multiply-add on the CUDA cores (what cuda/kernels/fa2.cu and friends use)
//   mma.sync  m16n8k16 fp16 and bf16 products with fp32 accumulation (the Ampere-style tensor-core
//             instruction that FlashAttention-2 and cuda/kernels/fa2_tensor_core.cu issue; on Hopper
//             it does not reach the wgmma rate that cuBLAS uses, hence a separate ceiling)
//   L2 requests  ld.global.cg reads served by L2, with the 32 lanes of a warp spread over 32, 4, 2 or
//             1 cache lines (128 B) per load: the L2 counts a request per line a load touches, and
//             the naive GEMM's loads touch 16 lines with one sector each (cuda/results/README.md)
//   copy      device-to-device cudaMemcpyAsync of 1 GiB, best of 10, in read + write bytes per second
//             (how the GPU presets' "device-to-device copy" bandwidth was measured): the streaming
//             ceiling that decoding's K/V reads are held to (flash_decoding, fa-validate --grid decode)
// Arithmetic operands live in registers (no memory traffic); every warp keeps several independent
// accumulators so that the pipeline, not the dependency latency, sets the rate. One resident grid of
// 4 blocks x 256 threads per SM (the L2 probe: 8, as many warps as the naive GEMM keeps); time with
// CUDA events, median of 20 runs.
//
//   build/cuda/peak-rates                  prints the rates (JSON with --json)
//   build/cuda/peak-rates --copy [--json]  the copy bandwidth alone
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/check.hpp"

namespace {

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 4;
constexpr int kIters = 4096;
constexpr int kChains = 8;  // independent accumulators per thread

__global__ void ffma_kernel(float* sink, float a, float b) {
    float acc[kChains];
#pragma unroll
    for (int c = 0; c < kChains; ++c) acc[c] = static_cast<float>(threadIdx.x + c);
    for (int i = 0; i < kIters; ++i) {
#pragma unroll
        for (int c = 0; c < kChains; ++c) acc[c] = fmaf(acc[c], a, b);
    }
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < kChains; ++c) s += acc[c];
    if (s == 1234.5f) sink[threadIdx.x] = s;  // keeps the loop alive; never true for these inputs
}

// D = A*B + D, A 16x16 (4 regs), B 16x8 (2 regs), D 16x8 fp32 (4 regs) per warp.
template <bool kBf16>
__global__ void mma_kernel(float* sink, unsigned a_bits, unsigned b_bits) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    float d[kChains][4];
#pragma unroll
    for (int c = 0; c < kChains; ++c)
        for (int k = 0; k < 4; ++k) d[c][k] = 0.f;
    const unsigned a0 = a_bits ^ threadIdx.x, a1 = a_bits, a2 = a_bits, a3 = a_bits ^ 1u;
    const unsigned b0 = b_bits ^ threadIdx.x, b1 = b_bits;
    for (int i = 0; i < kIters; ++i) {
#pragma unroll
        for (int c = 0; c < kChains; ++c) {
            if constexpr (kBf16) {
                asm volatile(
                    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                    "{%0,%1,%2,%3};\n"
                    : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
                    : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
            } else {
                asm volatile(
                    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                    "{%0,%1,%2,%3};\n"
                    : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
                    : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
            }
        }
    }
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < kChains; ++c) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
    if (s == 1234.5f) sink[threadIdx.x] = s;
#else
    (void)sink; (void)a_bits; (void)b_bits;
#endif
}

// L2 request probe. Each block re-reads its own 16 KB slice of a buffer that stays in L2 (no two SMs
// touch a line); ld.global.cg bypasses L1. A warp's load puts kGroup consecutive floats of one
// 128-byte line in each group of lanes: 32 / kGroup lines per load, kGroup * 4 / 32 sectors per line
// (at least 1). The rates printed are as issued: with 32 lines per load the block's 8 warps cover 256
// lines of its 128, so warps w and w + 4 ask for the same lines at once and the L1 merges about a fifth
// of them; loads still in flight for a line also merge in the request coalescer. What the L2 served
// is ncu's lts__t_requests_srcunit_tex_op_read (gpu_session.sh peaks; cuda/results/README.md, ninth run).
constexpr int kL2ProbeBlocksPerSm = 8;
constexpr int kL2SliceLines = 128;  // lines of 128 B per block: 8 blocks x 132 SMs x 16 KB = 16.5 MiB
constexpr int kL2Unroll = 4;        // independent loads in flight per warp and iteration
constexpr int kFloatsPerLine = 32;

template <int kGroup>
__global__ void l2_request_kernel(const float* __restrict__ buf, int iters, float* sink) {
    constexpr int kLinesPerLoad = 32 / kGroup;
    const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
    const int warps = static_cast<int>(blockDim.x) >> 5;
    const float* slice = buf + static_cast<size_t>(blockIdx.x) * kL2SliceLines * kFloatsPerLine;
    float s = 0.f;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < kL2Unroll; ++u) {
            const int line = (((i * kL2Unroll + u) * warps + warp) * kLinesPerLoad + lane / kGroup) & (kL2SliceLines - 1);
            s += __ldcg(slice + line * kFloatsPerLine + lane % kGroup);
        }
    }
    if (s == 1234.5f) sink[threadIdx.x] = s;  // the buffer is zero: never true
}

struct L2Rate {
    int group;
    double requests_per_s, sectors_per_s;
};

template <int kGroup>
L2Rate measure_l2_requests(const float* buf, float* sink, int sms, int iters);

template <typename Launch>
double median_ms(Launch&& launch) {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    launch();  // warm-up
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> ms;
    for (int r = 0; r < 20; ++r) {
        CUDA_CHECK(cudaEventRecord(start));
        launch();
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float t = 0;
        CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
        ms.push_back(t);
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    std::sort(ms.begin(), ms.end());
    return 0.5 * (ms[9] + ms[10]);
}

template <int kGroup>
L2Rate measure_l2_requests(const float* buf, float* sink, int sms, int iters) {
    const dim3 grid(static_cast<unsigned>(sms * kL2ProbeBlocksPerSm));
    const double ms = median_ms([&] {
        l2_request_kernel<kGroup><<<grid, kThreads>>>(buf, iters, sink);
        CUDA_CHECK(cudaGetLastError());
    });
    const double loads = static_cast<double>(grid.x) * (kThreads / 32) * iters * kL2Unroll;
    const double requests = loads * (32 / kGroup);
    const double sectors_per_line = kGroup * 4 / 32 > 1 ? kGroup * 4 / 32 : 1;
    return {kGroup, requests / (ms * 1e-3), requests * sectors_per_line / (ms * 1e-3)};
}

// Read + write bytes per second of the best of 10 device-to-device copies of 1 GiB (after one untimed).
double copy_bytes_per_s() {
    constexpr std::size_t kBytes = std::size_t{1} << 30;
    void* src = nullptr;
    void* dst = nullptr;
    CUDA_CHECK(cudaMalloc(&src, kBytes));
    CUDA_CHECK(cudaMalloc(&dst, kBytes));
    CUDA_CHECK(cudaMemset(src, 1, kBytes));
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaMemcpyAsync(dst, src, kBytes, cudaMemcpyDeviceToDevice));
    float best_ms = 0;
    for (int r = 0; r < 10; ++r) {
        CUDA_CHECK(cudaEventRecord(start));
        CUDA_CHECK(cudaMemcpyAsync(dst, src, kBytes, cudaMemcpyDeviceToDevice));
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (r == 0 || ms < best_ms) best_ms = ms;
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    CUDA_CHECK(cudaFree(src));
    CUDA_CHECK(cudaFree(dst));
    return 2.0 * static_cast<double>(kBytes) / (best_ms * 1e-3);
}

}  // namespace

int main(int argc, char** argv) {
    bool json = false, copy_only = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (std::strcmp(argv[i], "--copy") == 0) {
            copy_only = true;
        } else {
            std::fprintf(stderr, "usage: peak-rates [--copy] [--json]\n");
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
        const double copy = copy_bytes_per_s();
        if (copy_only) {
            if (json)
                std::printf("{\"gpu\": \"%s\", \"d2d_copy_bytes_per_s\": %.4g}\n", prop.name, copy);
            else
                std::printf("%s: device-to-device copy %.2f TB/s (read+write bytes per second, cudaMemcpyAsync of 1 GiB, best "
                            "of 10)\n", prop.name, copy * 1e-12);
            return 0;
        }
        float* sink = nullptr;
        CUDA_CHECK(cudaMalloc(&sink, kThreads * sizeof(float)));
        const dim3 grid(static_cast<unsigned>(prop.multiProcessorCount * kBlocksPerSm));
        const double threads = static_cast<double>(grid.x) * kThreads;

        struct Row { std::string name; double tflops; };
        std::vector<Row> rows;
        const double ffma_ms = median_ms([&] {
            ffma_kernel<<<grid, kThreads>>>(sink, 0.999f, 1e-3f);
            CUDA_CHECK(cudaGetLastError());
        });
        rows.push_back({"ffma_fp32", threads * kIters * kChains * 2.0 / (ffma_ms * 1e-3) / 1e12});
        if (prop.major >= 8) {
            const double warps = threads / 32.0;
            const double mma_flops = warps * kIters * kChains * 2.0 * 16 * 8 * 16;
            const double f16 = median_ms([&] {
                mma_kernel<false><<<grid, kThreads>>>(sink, 0x3c003c00u, 0x3c003c00u);
                CUDA_CHECK(cudaGetLastError());
            });
            const double b16 = median_ms([&] {
                mma_kernel<true><<<grid, kThreads>>>(sink, 0x3f803f80u, 0x3f803f80u);
                CUDA_CHECK(cudaGetLastError());
            });
            rows.push_back({"mma_sync_fp16", mma_flops / (f16 * 1e-3) / 1e12});
            rows.push_back({"mma_sync_bf16", mma_flops / (b16 * 1e-3) / 1e12});
        }

        const int sms = prop.multiProcessorCount;
        const size_t l2_floats = static_cast<size_t>(sms) * kL2ProbeBlocksPerSm * kL2SliceLines * kFloatsPerLine;
        float* l2_buf = nullptr;
        CUDA_CHECK(cudaMalloc(&l2_buf, l2_floats * sizeof(float)));
        CUDA_CHECK(cudaMemset(l2_buf, 0, l2_floats * sizeof(float)));
        // Iterations scaled so that every probe moves about the same number of bytes.
        const std::vector<L2Rate> l2 = {measure_l2_requests<1>(l2_buf, sink, sms, 512),
                                        measure_l2_requests<8>(l2_buf, sink, sms, 4096),
                                        measure_l2_requests<16>(l2_buf, sink, sms, 4096),
                                        measure_l2_requests<32>(l2_buf, sink, sms, 8192)};
        CUDA_CHECK(cudaFree(l2_buf));
        CUDA_CHECK(cudaFree(sink));
        if (json) {
            std::printf("{\"gpu\": \"%s\", \"sm_count\": %d, \"max_clock_mhz\": %d", prop.name, prop.multiProcessorCount,
                        clock_khz / 1000);
            for (const auto& r : rows) std::printf(", \"%s_tflops\": %.1f", r.name.c_str(), r.tflops);
            for (const auto& r : l2)
                std::printf(", \"l2_lines_per_load_%d\": {\"requests_per_s\": %.4g, \"sectors_per_s\": %.4g}", 32 / r.group,
                            r.requests_per_s, r.sectors_per_s);
            std::printf(", \"d2d_copy_bytes_per_s\": %.4g}\n", copy);
        } else {
            std::printf("%s, %d SMs, max SM clock %d MHz\n", prop.name, prop.multiProcessorCount, clock_khz / 1000);
            for (const auto& r : rows) std::printf("  %-14s %8.1f TFLOP/s\n", r.name.c_str(), r.tflops);
            std::printf("  L2 reads (ld.global.cg, %d warps per SM):\n", kL2ProbeBlocksPerSm * kThreads / 32);
            for (const auto& r : l2)
                std::printf("    %2d line(s) per warp load: %7.1f G requests/s, %7.1f G sectors/s (%.2f TB/s)\n", 32 / r.group,
                            r.requests_per_s / 1e9, r.sectors_per_s / 1e9, r.sectors_per_s * 32 / 1e12);
            std::printf("  device-to-device copy %.2f TB/s (read+write bytes per second, cudaMemcpyAsync of 1 GiB, best of 10)\n",
                        copy * 1e-12);
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "peak-rates: %s\n", e.what());
        return 1;
    }
}
