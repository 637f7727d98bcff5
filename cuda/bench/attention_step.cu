// The attention step's issue rate: how many cycles one FlashAttention-2 step takes a warp when W warps
// share each scheduler, with nothing but the step to do (bench/attention_step.hpp says why).
//
// The step is fa2_tensor_core.cu's, built from the same functions (warp_tile_products.cuh): S = Q K^T for
// one 16-row block against a 64-key K tile, the online softmax (row max over the quad, m, alpha, P =
// exp2, row sum, O rescaled), P rounded into A fragments, O += P V. K and V sit in shared memory, loaded
// once; Q's fragments and O stay in registers. No copies, no barriers, no masks: what is left is the
// chain of products, reductions and exponentials a warp waits on.
#include "bench/attention_step.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/step_cycles.hpp"
#include "common/check.hpp"
#include "kernels/warp_tile_products.cuh"

namespace fasim::bench {

namespace {

using namespace fasim::cuda_detail;

constexpr int kKeys = 64;  // keys per K/V tile (fa2_tc's Bc)

// The most threads a block of the step launches with: as many warps per scheduler as fa2_tc's register
// budget allows (3 at d = 128: 168 registers; 4 at d = 64), 2 with two row blocks a warp.
template <int D, int R>
constexpr int kMaxThreads = R == 1 ? (D == 128 ? 384 : 512) : 256;

// grid = one block per SM; block = 4 W warps (warp w on scheduler w % 4: W per scheduler). Each warp
// runs `steps` steps on R row blocks of its own; cycles[warp] = its clock64 span.
template <typename T, int D, int R>
__global__ void __launch_bounds__(kMaxThreads<D, R>, 1) attention_step_kernel(int steps, float scale_log2, long long* cycles, float* sink) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    constexpr int LD = D + 8;  // padded rows, as fa2_tc's
    constexpr int KS_D = D / 16, NT_S = kKeys / 8, KS_KV = kKeys / 16, NT_O = D / 8;
    extern __shared__ __align__(16) unsigned char smem[];
    T* Ks = reinterpret_cast<T*>(smem);
    T* Vs = Ks + kKeys * LD;
    T* Qs = Vs + kKeys * LD;  // 16 rows per row block, shared by every warp (the values do not matter)
    for (int i = threadIdx.x; i < (2 * kKeys + 16 * R) * LD; i += blockDim.x)
        Ks[i] = static_cast<T>(0.01f * static_cast<float>((i * 37 + blockIdx.x) % 97) - 0.45f);
    __syncthreads();
    const int lane = threadIdx.x & 31;

    unsigned qf[R][KS_D][4];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int ks = 0; ks < KS_D; ++ks)
            ldmatrix_x4(qf[r][ks], Qs + (16 * r + (lane & 15)) * LD + 16 * ks + 8 * (lane >> 4));
    float o[R][NT_O][4], m[R][2], l[R][2];
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
        for (int nt = 0; nt < NT_O; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) o[r][nt][i] = 0.f;
        m[r][0] = m[r][1] = -INFINITY;
        l[r][0] = l[r][1] = 0.f;
    }
    const T* krow = Ks + ((lane & 7) + 8 * (lane >> 4)) * LD + 8 * ((lane >> 3) & 1);
    const T* vrow = Vs + ((lane & 7) + 8 * ((lane >> 3) & 1)) * LD + 8 * (lane >> 4);

    __syncwarp();
    const long long start = clock64();
    for (int step = 0; step < steps; ++step) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
            float s[NT_S][4];
#pragma unroll
            for (int nt = 0; nt < NT_S; ++nt)
#pragma unroll
                for (int i = 0; i < 4; ++i) s[nt][i] = 0.f;
            qk_scores<T>(s, qf[r], krow, LD);
            online_softmax_step(s, m[r], l[r], o[r], scale_log2);
            unsigned pf[KS_KV][4];
            p_fragments<T>(pf, s);
            pv_accumulate<T>(o[r], pf, vrow, LD);
        }
    }
    const long long end = clock64();

    float keep = 0.f;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        keep += l[r][0] + l[r][1];
#pragma unroll
        for (int nt = 0; nt < NT_O; ++nt) keep += o[r][nt][0] + o[r][nt][3];
    }
    const int warp = blockIdx.x * (blockDim.x / 32) + static_cast<int>(threadIdx.x / 32);
    if (lane == 0) cycles[warp] = end - start;
    if (keep == 12345.f) sink[warp] = keep;  // never true: keeps the step from being optimised away
#else
    (void)steps, (void)scale_log2, (void)cycles, (void)sink;
#endif
}

template <typename T, int D, int R>
AttentionStepIssue run(int sms, int warps_per_scheduler, int steps) {
    const auto kernel = attention_step_kernel<T, D, R>;
    const int threads = 128 * warps_per_scheduler;
    const std::size_t smem = static_cast<std::size_t>(2 * kKeys + 16 * R) * (D + 8) * sizeof(T);
    cudaFuncAttributes attributes{};
    CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    AttentionStepIssue out{D, R, warps_per_scheduler, attributes.numRegs, false, 0, 0, 0, steps};
    int fits = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, kernel, threads, smem));
    if (fits < 1 || threads > attributes.maxThreadsPerBlock) return out;  // the register file holds fewer warps
    const int warps = sms * threads / 32;
    long long* cycles = nullptr;
    float* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&cycles, sizeof(long long) * warps));
    CUDA_CHECK(cudaMalloc(&sink, sizeof(float) * warps));
    kernel<<<sms, threads, smem>>>(steps / 10, 0.18f, cycles, sink);  // warm-up: clocks up, code cached
    CUDA_CHECK(cudaGetLastError());
    kernel<<<sms, threads, smem>>>(steps, 0.18f, cycles, sink);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<long long> host(static_cast<std::size_t>(warps));
    CUDA_CHECK(cudaMemcpy(host.data(), cycles, sizeof(long long) * host.size(), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(cycles));
    CUDA_CHECK(cudaFree(sink));
    const StepCycles c = step_cycles(host, steps);
    out.ran = true;
    out.cycles_per_step = c.mean;
    out.min_cycles_per_step = c.min;
    out.max_cycles_per_step = c.max;
    return out;
}

}  // namespace

AttentionStepIssue attention_step_issue(int sms, int d, int row_blocks, int warps_per_scheduler, int steps) {
    if (warps_per_scheduler < 1 || warps_per_scheduler > 8)
        throw std::invalid_argument("attention step: warps per scheduler " + std::to_string(warps_per_scheduler) +
                                    " is out of range 1..8");
    if (d == 64 && row_blocks == 1) return run<__half, 64, 1>(sms, warps_per_scheduler, steps);
    if (d == 64 && row_blocks == 2) return run<__half, 64, 2>(sms, warps_per_scheduler, steps);
    if (d == 128 && row_blocks == 1) return run<__half, 128, 1>(sms, warps_per_scheduler, steps);
    // d = 128 with two row blocks a warp needs more than 255 registers: it would measure its spills.
    throw std::invalid_argument("attention step: d = " + std::to_string(d) + ", row blocks = " + std::to_string(row_blocks) +
                                " is not built; d = 64 with 1 or 2 row blocks, d = 128 with 1");
}

}  // namespace fasim::bench
