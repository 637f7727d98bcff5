// The microbenchmarks behind peak-rates and fa-calibrate (bench/microbench.hpp says what each measures).
// Arithmetic operands live in registers (no memory traffic); every warp keeps several independent
// accumulators so that the pipeline, not the dependency latency, sets the rate. One resident grid of
// 4 blocks x 256 threads per SM (the L2 request probe: 8, as many warps as the naive GEMM keeps); time
// with CUDA events, median of 20 runs.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/microbench.hpp"
#include "common/check.hpp"
#include "kernels/hopper_primitives.cuh"

namespace fasim::bench {

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



// exp2 on the SFUs: ex2.approx.ftz.f32 (MUFU.EX2), what the flash kernels' softmax issues
// (exp2f(s * scale_log2 - m)). Independent chains; the result feeds the next input so that nothing is
// hoisted, and stays finite (2^x of x in [-1, 0) lies in [0.5, 1)).
__global__ void exp2_kernel(float* sink, float bias) {
    float x[kChains];
#pragma unroll
    for (int c = 0; c < kChains; ++c) x[c] = -0.5f - 0.01f * static_cast<float>(c);
    for (int i = 0; i < kIters; ++i) {
#pragma unroll
        for (int c = 0; c < kChains; ++c) {
            float y;
            asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x[c]));
            x[c] = y - bias;  // in [-0.5 - bias, 1 - bias): stays in [-1, 0) for bias = 1
        }
    }
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < kChains; ++c) s += x[c];
    if (s == 1234.5f) sink[threadIdx.x] = s;
}

// L2 read bandwidth: every thread re-reads a buffer that fits in L2 with 16-byte ld.global.cg loads
// (bypassing L1), as the presets' L2 figures were measured (docs/gpu-file.md, "L2 read probe").
__global__ void l2_read_kernel(const float4* __restrict__ a, size_t n, int reps, float* sink) {
    float s = 0.f;
    const size_t tid = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (int r = 0; r < reps; ++r)
        for (size_t i = tid; i < n; i += stride) {
            const float4 v = __ldcg(a + i);
            s += v.x + v.y + v.z + v.w;
        }
    if (s == 1234.5f) sink[0] = s;  // the buffer is zero: never true
}

// DRAM latency: one thread follows a chain of indices through a buffer 4x larger than L2, one hop per
// 128-byte line, the lines in a random cycle, so every load misses L1 and L2 and waits for the one
// before. Each launch continues where the last one stopped (`at`), so no launch revisits a line.
__global__ void chase_kernel(const unsigned* __restrict__ next, int hops, unsigned* at_io) {
    unsigned at = at_io[0];
    for (int i = 0; i < hops; ++i) at = __ldcg(next + at);
    at_io[0] = at;
}

// Streaming reads of one block (its loads in flight set its bandwidth: Little's law, bytes in flight =
// bandwidth x latency): each thread keeps kStreamUnroll 16-byte loads in flight.
constexpr int kStreamUnroll = 4;
__global__ void stream_kernel(const float4* __restrict__ a, size_t n, float* sink) {
    float s = 0.f;
    const size_t step = static_cast<size_t>(blockDim.x) * kStreamUnroll;
    for (size_t base = threadIdx.x; base + (kStreamUnroll - 1) * blockDim.x < n; base += step) {
        float4 v[kStreamUnroll];
#pragma unroll
        for (int u = 0; u < kStreamUnroll; ++u) v[u] = __ldcg(a + base + u * blockDim.x);
#pragma unroll
        for (int u = 0; u < kStreamUnroll; ++u) s += v[u].x + v[u].y + v[u].z + v[u].w;
    }
    if (s == 1234.5f) sink[0] = s;
}

// Every SM streaming one way over a buffer far larger than L2: each thread keeps kStreamUnroll 16-byte
// loads in flight over a grid-stride loop (reads), or stores a 16-byte element per step (writes).
__global__ void read_all_kernel(const float4* __restrict__ a, size_t n, float* sink) {
    float s = 0.f;
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; i + (kStreamUnroll - 1) * stride < n; i += kStreamUnroll * stride) {
        float4 v[kStreamUnroll];
#pragma unroll
        for (int u = 0; u < kStreamUnroll; ++u) v[u] = __ldcg(a + i + u * stride);
#pragma unroll
        for (int u = 0; u < kStreamUnroll; ++u) s += v[u].x + v[u].y + v[u].z + v[u].w;
    }
    for (; i < n; i += stride) s += __ldcg(a + i).x;
    if (s == 1234.5f) sink[0] = s;
}
__global__ void write_all_kernel(float4* a, size_t n) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
        const float x = static_cast<float>(i);
        a[i] = make_float4(x, x + 1.f, x + 2.f, x + 3.f);
    }
}

// The SM clock while the tensor pipe works: the mma.sync loop of mma_kernel, with thread 0 of each block
// reading the SM's cycle counter (clock64) and the global nanosecond timer (%globaltimer) around it.
// Cycles over nanoseconds is the clock the block ran at, whatever the boost and power management chose.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
__device__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#endif

__global__ void clocked_mma_kernel(unsigned long long* cycles_ns, int iters, float* sink) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    __syncthreads();
    const long long c0 = clock64();
    const unsigned long long t0 = global_ns();
    float d[kChains][4];
#pragma unroll
    for (int c = 0; c < kChains; ++c)
        for (int k = 0; k < 4; ++k) d[c][k] = 0.f;
    const unsigned a0 = 0x3c003c00u ^ threadIdx.x, a1 = 0x3c003c00u, b0 = 0x3c003c00u ^ threadIdx.x;
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int c = 0; c < kChains; ++c)
            asm volatile(
                "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
                : "r"(a0), "r"(a1), "r"(a1), "r"(a0), "r"(b0), "r"(a1));
    }
    __syncthreads();
    const long long c1 = clock64();
    const unsigned long long t1 = global_ns();
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < kChains; ++c) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
    if (s == 1234.5f) sink[threadIdx.x] = s;
    if (threadIdx.x == 0) {
        cycles_ns[2 * blockIdx.x] = static_cast<unsigned long long>(c1 - c0);
        cycles_ns[2 * blockIdx.x + 1] = t1 - t0;
    }
#else
    (void)cycles_ns; (void)iters; (void)sink;
#endif
}

__global__ void empty_kernel() {}

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
    return {32 / kGroup, requests / (ms * 1e-3), requests * sectors_per_line / (ms * 1e-3)};
}

// Which scheduler a block's first warp lands on when several blocks share an SM. Warp 0 of each block
// runs FFMA chains (one warp can issue about one per cycle); the other warps only record where they
// are. Every warp's lane 0 writes its SM (%smid) and its warp slot in the SM (%warpid; a slot's
// scheduler is the slot mod 4 on Volta and later), and the dynamic shared memory keeps exactly
// blocks_per_sm blocks on each SM.
__global__ void warp_slot_kernel(unsigned* where, float* sink, int iters) {
    extern __shared__ float pad[];
    const unsigned warp = threadIdx.x / 32;
    unsigned sm = 0, slot = 0;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    asm volatile("mov.u32 %0, %%warpid;" : "=r"(slot));
    if (threadIdx.x % 32 == 0) {
        where[2 * (blockIdx.x * (blockDim.x / 32) + warp)] = sm;
        where[2 * (blockIdx.x * (blockDim.x / 32) + warp) + 1] = slot;
    }
    if (warp != 0) return;
    float acc[kChains];
#pragma unroll
    for (int c = 0; c < kChains; ++c) acc[c] = static_cast<float>(threadIdx.x + c);
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int c = 0; c < kChains; ++c) acc[c] = fmaf(acc[c], 0.999f, 0.001f);
    }
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < kChains; ++c) s += acc[c];
    if (s == 1234.5f) { pad[0] = s; sink[0] = pad[0]; }
}

// wgmma (Hopper, sm_90a) in the shapes fa2_wgmma issues: each of two warpgroups per block (one block per SM, as
// the rung's two consumers) issues groups of 4 m64nNk16 products (64 keys or a 64-wide slab of d) and keeps one
// group in flight while the next is issued (two accumulator sets, wgmma.wait_group 1). A and B from shared
// memory (ss: S = Q K^T) or A from registers and B transposed (rs: O += P V). Operands are fixed pseudo-random
// fp16 values in [-0.5, 0.5) (zeros would let the tensor cores draw less power and clock higher).
constexpr int kWgmmaThreads = 256;
constexpr int kWgmmaGroups = 4096;  // per warpgroup
template <int N, bool RegistersA>
__global__ void __launch_bounds__(kWgmmaThreads, 1) wgmma_rate_kernel(float* sink, int* ran) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using namespace fasim::cuda_detail::hopper;
    // A: 64 rows x 64 k (one 128-byte-swizzled slab, 8 KB). B: 128 x 64 for ss (n rows, k contiguous), or 64 keys x
    // 128 n for rs (two 64-column slabs, n contiguous); 16 KB either way.
    __shared__ __align__(1024) __half a_tile[64 * 64];
    __shared__ __align__(1024) __half b_tile[128 * 64];
    for (int i = threadIdx.x; i < 64 * 64; i += blockDim.x) a_tile[i] = __float2half(static_cast<float>((i * 2654435761u >> 13) & 255) / 256.f - 0.5f);
    for (int i = threadIdx.x; i < 128 * 64; i += blockDim.x) b_tile[i] = __float2half(static_cast<float>((i * 2246822519u >> 13) & 255) / 256.f - 0.5f);
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // the generic-proxy stores, visible to wgmma
    __syncthreads();
    float d0[N / 2], d1[N / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) d0[i] = d1[i] = 0.f;
    unsigned a_regs[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) a_regs[i] = 0x38003800u ^ (threadIdx.x * 0x00010001u & 0x03ff03ffu);
    auto group = [&](float (&acc)[N / 2]) {
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            if constexpr (RegistersA) {
                wgmma_rs_trans_b<__half, N>(acc, a_regs, smem_desc(reinterpret_cast<unsigned char*>(b_tile) + kk * 2048, 8192, 1024));
            } else {
                wgmma_ss<__half, N>(acc, smem_desc(reinterpret_cast<unsigned char*>(a_tile) + kk * 32, 16, 1024),
                                    smem_desc(reinterpret_cast<unsigned char*>(b_tile) + kk * 32, 16, 1024), 1);
            }
        }
        wgmma_commit();
    };
    for (int g = 0; g < kWgmmaGroups; g += 2) {
        group(d0);
        wgmma_wait<1>();
        group(d1);
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
    fence_registers(d0);
    fence_registers(d1);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < N / 2; ++i) s += d0[i] + d1[i];
    if (s == 1234.5f) sink[threadIdx.x] = s;
    if (threadIdx.x == 0 && blockIdx.x == 0) *ran = 1;
#else
    (void)sink; (void)ran;
#endif
}

}  // namespace

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


double dram_stream_bytes_per_s(int sms, bool write) {
    // 1 GiB (far more than any L2) read or written once per launch by every SM at full occupancy.
    const std::size_t n = (std::size_t{1} << 30) / 16;
    constexpr int kThreadsPerBlock = 256;
    int fits = 0;
    if (write) CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, write_all_kernel, kThreadsPerBlock, 0));
    else CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, read_all_kernel, kThreadsPerBlock, 0));
    const unsigned grid = static_cast<unsigned>(sms * std::max(fits, 1));
    float4* a = nullptr;
    float* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&a, n * 16));
    CUDA_CHECK(cudaMalloc(&sink, sizeof(float)));
    CUDA_CHECK(cudaMemset(a, 0, n * 16));
    const double ms = median_ms([&] {
        if (write) write_all_kernel<<<grid, kThreadsPerBlock>>>(a, n);
        else read_all_kernel<<<grid, kThreadsPerBlock>>>(a, n, sink);
        CUDA_CHECK(cudaGetLastError());
    });
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(sink));
    return static_cast<double>(n) * 16 / (ms * 1e-3);
}

double dram_read_once_seconds(int sms, std::size_t bytes, std::size_t l2_bytes) {
    constexpr int kThreadsPerBlock = 256;
    int fits = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, read_all_kernel, kThreadsPerBlock, 0));
    const unsigned grid = static_cast<unsigned>(sms * std::max(fits, 1));
    const std::size_t n = bytes / 16, flush_n = 2 * l2_bytes / 16;
    float4 *a = nullptr, *flush = nullptr;
    float* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&a, n * 16));
    CUDA_CHECK(cudaMalloc(&flush, flush_n * 16));
    CUDA_CHECK(cudaMalloc(&sink, sizeof(float)));
    CUDA_CHECK(cudaMemset(a, 0, n * 16));
    CUDA_CHECK(cudaMemset(flush, 0, flush_n * 16));
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    std::vector<float> ms;
    for (int r = 0; r < 23; ++r) {  // 3 warm-ups, then 20 timed
        // A read of twice L2 first, outside the timed region: the buffer comes from DRAM, as in fa-validate.
        read_all_kernel<<<grid, kThreadsPerBlock>>>(flush, flush_n, sink);
        CUDA_CHECK(cudaEventRecord(start));
        read_all_kernel<<<grid, kThreadsPerBlock>>>(a, n, sink);
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float t = 0;
        CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
        if (r >= 3) ms.push_back(t);
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(flush));
    CUDA_CHECK(cudaFree(sink));
    std::sort(ms.begin(), ms.end());
    return 0.5e-3 * (ms[9] + ms[10]);
}

double ffma_flops_per_s(int sms) {
    float* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&sink, kThreads * sizeof(float)));
    const dim3 grid(static_cast<unsigned>(sms * kBlocksPerSm));
    const double ms = median_ms([&] {
        ffma_kernel<<<grid, kThreads>>>(sink, 0.999f, 1e-3f);
        CUDA_CHECK(cudaGetLastError());
    });
    CUDA_CHECK(cudaFree(sink));
    return static_cast<double>(grid.x) * kThreads * kIters * kChains * 2.0 / (ms * 1e-3);
}

double mma_sync_flops_per_s(int sms, bool bf16) {
    float* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&sink, kThreads * sizeof(float)));
    const dim3 grid(static_cast<unsigned>(sms * kBlocksPerSm));
    const double ms = median_ms([&] {
        if (bf16) mma_kernel<true><<<grid, kThreads>>>(sink, 0x3f803f80u, 0x3f803f80u);
        else mma_kernel<false><<<grid, kThreads>>>(sink, 0x3c003c00u, 0x3c003c00u);
        CUDA_CHECK(cudaGetLastError());
    });
    CUDA_CHECK(cudaFree(sink));
    const double warps = static_cast<double>(grid.x) * kThreads / 32.0;
    return warps * kIters * kChains * 2.0 * 16 * 8 * 16 / (ms * 1e-3);
}

double sm_clock_under_mma_hz(int sms, bool whole_gpu) {
    // Whole GPU: 4 blocks of 256 threads per SM, as mma_sync_flops_per_s, run for about two seconds first so
    // the clock settles where power and temperature hold it; then the mean over every block of 5 launches.
    // One block: a single block on an otherwise idle GPU (a decoding step's few busy SMs).
    const unsigned blocks = whole_gpu ? static_cast<unsigned>(sms * kBlocksPerSm) : 1u;
    const int iters = whole_gpu ? 65536 : 16384;
    unsigned long long* cycles_ns = nullptr;
    float* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&cycles_ns, 2 * sizeof(unsigned long long) * blocks));
    CUDA_CHECK(cudaMalloc(&sink, kThreads * sizeof(float)));
    auto launch = [&] {
        clocked_mma_kernel<<<blocks, kThreads>>>(cycles_ns, iters, sink);
        CUDA_CHECK(cudaGetLastError());
    };
    const auto warm_until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (whole_gpu && std::chrono::steady_clock::now() < warm_until) {
        launch();
        CUDA_CHECK(cudaDeviceSynchronize());
    }
    double cycles = 0, ns = 0;
    std::vector<unsigned long long> host(2 * blocks);
    for (int r = 0; r < 5; ++r) {
        launch();
        CUDA_CHECK(cudaMemcpy(host.data(), cycles_ns, host.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
        for (unsigned b = 0; b < blocks; ++b) {
            cycles += static_cast<double>(host[2 * b]);
            ns += static_cast<double>(host[2 * b + 1]);
        }
    }
    CUDA_CHECK(cudaFree(cycles_ns));
    CUDA_CHECK(cudaFree(sink));
    return ns > 0 ? cycles / (ns * 1e-9) : 0;
}

std::vector<L2Rate> l2_request_rates(int sms) {
    float* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&sink, kThreads * sizeof(float)));
    const size_t l2_floats = static_cast<size_t>(sms) * kL2ProbeBlocksPerSm * kL2SliceLines * kFloatsPerLine;
    float* l2_buf = nullptr;
    CUDA_CHECK(cudaMalloc(&l2_buf, l2_floats * sizeof(float)));
    CUDA_CHECK(cudaMemset(l2_buf, 0, l2_floats * sizeof(float)));
    // Iterations scaled so that every probe moves about the same number of bytes.
    std::vector<L2Rate> rates = {measure_l2_requests<1>(l2_buf, sink, sms, 512), measure_l2_requests<8>(l2_buf, sink, sms, 4096),
                                 measure_l2_requests<16>(l2_buf, sink, sms, 4096),
                                 measure_l2_requests<32>(l2_buf, sink, sms, 8192)};
    CUDA_CHECK(cudaFree(l2_buf));
    CUDA_CHECK(cudaFree(sink));
    return rates;
}

double exp2_per_s(int sms) {
    float* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&sink, kThreads * sizeof(float)));
    const dim3 grid(static_cast<unsigned>(sms * kBlocksPerSm));
    const double ms = median_ms([&] {
        exp2_kernel<<<grid, kThreads>>>(sink, 1.0f);
        CUDA_CHECK(cudaGetLastError());
    });
    CUDA_CHECK(cudaFree(sink));
    return static_cast<double>(grid.x) * kThreads * kIters * kChains / (ms * 1e-3);
}

double l2_read_bytes_per_s(int sms, std::size_t l2_bytes) {
    // Three quarters of L2, in 16-byte elements, re-read 100 times by 4 blocks of 1024 threads per SM.
    const std::size_t n = l2_bytes * 3 / 4 / 16;
    constexpr int kReps = 100;
    float4* a = nullptr;
    float* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&a, n * 16));
    CUDA_CHECK(cudaMalloc(&sink, sizeof(float)));
    CUDA_CHECK(cudaMemset(a, 0, n * 16));
    const double ms = median_ms([&] {
        l2_read_kernel<<<static_cast<unsigned>(sms * 4), 1024>>>(a, n, kReps, sink);
        CUDA_CHECK(cudaGetLastError());
    });
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(sink));
    return static_cast<double>(n) * 16 * kReps / (ms * 1e-3);
}

double dram_latency_s(std::size_t l2_bytes) {
    // One 128-byte line per hop over 4 x L2 (at least 256 MiB), in a random cycle (fixed seed).
    const std::size_t bytes = std::max<std::size_t>(4 * l2_bytes, std::size_t{256} << 20);
    constexpr std::size_t kStride = 128 / sizeof(unsigned);
    const std::size_t lines = bytes / 128;
    std::vector<unsigned> order(lines);
    for (std::size_t i = 0; i < lines; ++i) order[i] = static_cast<unsigned>(i);
    std::uint64_t state = 0x9e3779b97f4a7c15ull;
    for (std::size_t i = lines - 1; i > 0; --i) {  // Fisher-Yates with a 64-bit LCG
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        std::swap(order[i], order[(state >> 33) % (i + 1)]);
    }
    std::vector<unsigned> next(lines * kStride, 0);
    for (std::size_t i = 0; i < lines; ++i)
        next[order[i] * kStride] = static_cast<unsigned>(order[(i + 1) % lines] * kStride);
    unsigned* d_next = nullptr;
    unsigned* at = nullptr;
    void* scratch = nullptr;
    CUDA_CHECK(cudaMalloc(&d_next, next.size() * sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&at, sizeof(unsigned)));
    CUDA_CHECK(cudaMalloc(&scratch, 2 * l2_bytes));
    CUDA_CHECK(cudaMemcpy(d_next, next.data(), next.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(at, 0, sizeof(unsigned)));
    CUDA_CHECK(cudaMemset(scratch, 0, 2 * l2_bytes));  // evicts what the copy left in L2
    // 21 launches (median_ms) x hops stay below the lines of the cycle: every hop is a line not yet read.
    const int hops = static_cast<int>(std::min<std::size_t>(lines / 32, 20000));
    const double ms = median_ms([&] {
        chase_kernel<<<1, 1>>>(d_next, hops, at);
        CUDA_CHECK(cudaGetLastError());
    });
    CUDA_CHECK(cudaFree(d_next));
    CUDA_CHECK(cudaFree(at));
    CUDA_CHECK(cudaFree(scratch));
    return ms * 1e-3 / hops;
}

double one_block_stream_bytes_per_s(int threads) {
    // 1 GiB read by a single block: DRAM bandwidth is far above what one block's loads in flight sustain.
    const std::size_t n = (std::size_t{1} << 30) / 16;
    float4* a = nullptr;
    float* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&a, n * 16));
    CUDA_CHECK(cudaMalloc(&sink, sizeof(float)));
    CUDA_CHECK(cudaMemset(a, 0, n * 16));
    const double ms = median_ms([&] {
        stream_kernel<<<1, threads>>>(a, n, sink);
        CUDA_CHECK(cudaGetLastError());
    });
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(sink));
    return static_cast<double>(n) * 16 / (ms * 1e-3);
}

double launch_overhead_s() {
    // 1000 empty kernels back to back: what each launch adds to a sequence of kernels.
    constexpr int kLaunches = 1000;
    const double ms = median_ms([&] {
        for (int i = 0; i < kLaunches; ++i) empty_kernel<<<1, 32>>>();
        CUDA_CHECK(cudaGetLastError());
    });
    return ms * 1e-3 / kLaunches;
}

WarpSlots warp_slots(int sms, int blocks_per_sm, int threads) {
    const int warps = threads / 32;
    int smem_per_sm = 0, reserved = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
    CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0));
    // Enough shared memory per block that one more block would not fit on an SM.
    const int smem = (smem_per_sm / (blocks_per_sm + 1) - reserved) + 1024;
    CUDA_CHECK(cudaFuncSetAttribute(warp_slot_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int fits = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, warp_slot_kernel, threads, smem));
    WarpSlots r{blocks_per_sm, fits, 0, 0, 0};
    if (fits != blocks_per_sm) return r;
    const int grid = sms * blocks_per_sm;
    unsigned* where = nullptr;
    float* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&where, sizeof(unsigned) * 2 * grid * warps));
    CUDA_CHECK(cudaMalloc(&sink, sizeof(float)));
    constexpr int kSlotIters = 1 << 16;
    r.seconds = median_ms([&] {
        warp_slot_kernel<<<grid, threads, smem>>>(where, sink, kSlotIters);
        CUDA_CHECK(cudaGetLastError());
    }) * 1e-3;
    std::vector<unsigned> h(2 * static_cast<std::size_t>(grid) * warps);
    CUDA_CHECK(cudaMemcpy(h.data(), where, sizeof(unsigned) * h.size(), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(where));
    CUDA_CHECK(cudaFree(sink));
    // Per SM, how many first warps each of the 4 schedulers holds; the busiest one's count, averaged. %smid is
    // not promised to be below the SM count (ids may have gaps): room for four times as many, the rest skipped.
    std::vector<std::vector<int>> per_sm(static_cast<std::size_t>(sms) * 4 + 4, std::vector<int>(4, 0));
    int max_sm = 0;
    for (int b = 0; b < grid; ++b) {
        const unsigned sm = h[2 * (static_cast<std::size_t>(b) * warps)], slot = h[2 * (static_cast<std::size_t>(b) * warps) + 1];
        if (sm >= per_sm.size()) continue;
        ++per_sm[sm][slot % 4];
        max_sm = std::max<int>(max_sm, static_cast<int>(sm));
    }
    int sms_seen = 0;
    double busiest = 0, distinct = 0;
    for (int sm = 0; sm <= max_sm; ++sm) {
        const auto& c = per_sm[sm];
        if (c[0] + c[1] + c[2] + c[3] == 0) continue;
        ++sms_seen;
        busiest += *std::max_element(c.begin(), c.end());
        distinct += static_cast<double>(std::count_if(c.begin(), c.end(), [](int n) { return n > 0; }));
    }
    r.first_warps_on_busiest_scheduler = sms_seen ? busiest / sms_seen : 0;
    r.schedulers_with_first_warps = sms_seen ? distinct / sms_seen : 0;
    return r;
}

double wgmma_flops_per_s(int sms, int n, bool registers_a) {
    float* sink = nullptr;
    int* ran = nullptr;
    CUDA_CHECK(cudaMalloc(&sink, kWgmmaThreads * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&ran, sizeof(int)));
    CUDA_CHECK(cudaMemset(ran, 0, sizeof(int)));
    const dim3 grid(static_cast<unsigned>(sms));
    const double ms = median_ms([&] {
        if (n == 128 && registers_a) wgmma_rate_kernel<128, true><<<grid, kWgmmaThreads>>>(sink, ran);
        else if (n == 128) wgmma_rate_kernel<128, false><<<grid, kWgmmaThreads>>>(sink, ran);
        else if (registers_a) wgmma_rate_kernel<64, true><<<grid, kWgmmaThreads>>>(sink, ran);
        else wgmma_rate_kernel<64, false><<<grid, kWgmmaThreads>>>(sink, ran);
        CUDA_CHECK(cudaGetLastError());
    });
    int h_ran = 0;
    CUDA_CHECK(cudaMemcpy(&h_ran, ran, sizeof(int), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(sink));
    CUDA_CHECK(cudaFree(ran));
    if (!h_ran) return 0;  // no sm_90a code in this build, or not a Hopper GPU
    const double products = static_cast<double>(sms) * (kWgmmaThreads / 128) * kWgmmaGroups * 4;
    return products * 2.0 * 64 * n * 16 / (ms * 1e-3);
}

}  // namespace fasim::bench
