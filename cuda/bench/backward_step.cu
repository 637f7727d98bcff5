// The backward step's cycles: fa2_bwd_tc's loop body (kernels/fa2_backward_step.cuh) run over and over on
// operands that stay in shared memory (bench/backward_step.hpp says why).
#include "bench/backward_step.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "bench/step_cycles.hpp"
#include "common/check.hpp"
#include "kernels/fa2_backward_step.cuh"
#include "kernels/tile_rules.hpp"

namespace fasim::bench {

namespace {

using namespace fasim::cuda_detail;

static_assert(kBwdWarps == 4 * kBackwardStepWarpsPerScheduler, "one block per SM of 4 schedulers, as fa2_bwd_tc runs");

// grid = one block per SM, kBwdThreads threads; shared memory laid out as fa2_bwd_tc's (tile_rules::
// fa2_bwd_tc_smem_bytes). Each step: barrier, phase 1 on Q/dO buffer step & 1, barrier, phase 2 and its dQ
// atomics into rows (step & 1) * 64 .. of the block's 128 rows of dq_acc. cycles[warp] = its clock64 span.
template <typename T, int D>
__global__ void __launch_bounds__(kBwdThreads, 1)
    backward_step_kernel(int steps, int shared_dq, float* dq_acc, long long* cycles, float* sink) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    constexpr int LD = D + kBwdPad;
    constexpr int KS_D = D / 16, NT_D = D / 8;
    extern __shared__ __align__(16) unsigned char smem[];
    T* Ks = reinterpret_cast<T*>(smem);
    T* Vs = Ks + kBwdBc * LD;
    T* Qs = Vs + kBwdBc * LD;
    T* dOs = Qs + 2 * kBwdBr * LD;
    T* dsT = dOs + 2 * kBwdBr * LD;
    float* lse_s = reinterpret_cast<float*>(dsT + kBwdBc * kLdDs);
    float* dd_s = lse_s + 2 * kBwdBr;
    // Values of the size attention sees (scores near 0, P near 1 / keys): the step's work does not depend on
    // them, but denormals or infinities could.
    for (int i = threadIdx.x; i < (2 * kBwdBc + 4 * kBwdBr) * LD; i += blockDim.x)
        Ks[i] = static_cast<T>(0.01f * static_cast<float>((i * 37 + blockIdx.x) % 97) - 0.45f);
    for (int i = threadIdx.x; i < 2 * kBwdBr; i += blockDim.x) {
        lse_s[i] = 4.8f;  // about log(128): P about 1 / 128
        dd_s[i] = 0.01f * static_cast<float>(i % 7);
    }
    __syncthreads();

    const int warp = static_cast<int>(threadIdx.x >> 5);
    const BwdTcLane frag = bwd_tc_lane(static_cast<int>(threadIdx.x & 31));
    const T* k_arow = Ks + (16 * warp + frag.lrow_a) * LD + frag.lcol_a;
    const T* v_arow = Vs + (16 * warp + frag.lrow_a) * LD + frag.lcol_a;
    constexpr bool kKvRegs = D == 64;  // as the kernel: K_w, V_w held in registers at d = 64
    unsigned kf[kKvRegs ? KS_D : 1][4];
    unsigned vf[kKvRegs ? KS_D : 1][4];
    if constexpr (kKvRegs) {
#pragma unroll
        for (int ks = 0; ks < KS_D; ++ks) {
            ldmatrix_x4(kf[ks], k_arow + 16 * ks);
            ldmatrix_x4(vf[ks], v_arow + 16 * ks);
        }
    }
    T* ds_row = dsT + (16 * warp + frag.g) * kLdDs + 2 * frag.t;
    const int wr = warp >> 2, wc = warp & 3;
    const T* ds_arow = dsT + frag.lrow_b * kLdDs + 32 * wr + frag.lcol_b;
    const T* k_btrow = Ks + frag.lrow_a * LD + wc * (D / 4) + frag.lcol_a;
    const long long q_head = shared_dq ? 0 : static_cast<long long>(blockIdx.x) * 2 * kBwdBr;  // 2 tiles of rows
    const BwdTcMask mask{16 * warp, 0, 2 * kBwdBr, kBwdBc, 0, false};  // unmasked: not read
    const float scale = 0.088f, scale_log2 = scale * 1.4426950408889634f;

    float dv[NT_D][4], dk[NT_D][4];
#pragma unroll
    for (int nt = 0; nt < NT_D; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) dv[nt][i] = dk[nt][i] = 0.f;

    __syncthreads();
    const long long start = clock64();
    for (int step = 0; step < steps; ++step) {
        const int buf = step & 1;
        __syncthreads();  // the kernel's barrier at the top of a step (there: after its copies' wait)
        bwd_tc_phase1<T, D, false>(dv, dk, kf, vf, k_arow, v_arow, Qs + buf * kBwdBr * LD, dOs + buf * kBwdBr * LD,
                                   lse_s + buf * kBwdBr, dd_s + buf * kBwdBr, ds_row, frag, mask, scale_log2);
        __syncthreads();  // every warp's dS^T in place
        float dq[2][D / 32][4];
        bwd_tc_dq_part<T, D>(dq, ds_arow, k_btrow);
        bwd_tc_add_dq<D>(dq, dq_acc, q_head, buf * kBwdBr, 2 * kBwdBr, wr, wc, frag, scale);
    }
    const long long end = clock64();

    float keep = 0.f;
#pragma unroll
    for (int nt = 0; nt < NT_D; ++nt) keep += dv[nt][0] + dk[nt][3];
    const int w = static_cast<int>(blockIdx.x) * kBwdWarps + warp;
    if ((threadIdx.x & 31) == 0) cycles[w] = end - start;
    if (keep == 12345.f) sink[w] = keep;  // never true: keeps dK and dV from being optimised away
#else
    (void)steps, (void)shared_dq, (void)dq_acc, (void)cycles, (void)sink;
#endif
}

template <typename T, int D>
BackwardStepIssue run(int sms, bool shared_dq, int steps) {
    const auto kernel = backward_step_kernel<T, D>;
    const std::size_t smem = tile_rules::fa2_bwd_tc_smem_bytes(D, static_cast<int>(sizeof(T)));
    cudaFuncAttributes attributes{};
    CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    BackwardStepIssue out{D, shared_dq, attributes.numRegs, false, 0, 0, 0, steps};
    int device = 0, smem_optin = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    if (smem > static_cast<std::size_t>(smem_optin)) return out;  // the L4's 99 KiB: fa2_bwd_tc does not run there either
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    int fits = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, kernel, kBwdThreads, smem));
    if (fits < 1) return out;
    const int warps = sms * kBwdWarps;
    const std::size_t dq_floats = static_cast<std::size_t>(sms) * 2 * kBwdBr * D;
    float* dq_acc = nullptr;
    long long* cycles = nullptr;
    float* sink = nullptr;
    CUDA_CHECK(cudaMalloc(&dq_acc, sizeof(float) * dq_floats));
    CUDA_CHECK(cudaMemset(dq_acc, 0, sizeof(float) * dq_floats));
    CUDA_CHECK(cudaMalloc(&cycles, sizeof(long long) * warps));
    CUDA_CHECK(cudaMalloc(&sink, sizeof(float) * warps));
    kernel<<<sms, kBwdThreads, smem>>>(steps / 10, shared_dq ? 1 : 0, dq_acc, cycles, sink);  // warm-up
    CUDA_CHECK(cudaGetLastError());
    kernel<<<sms, kBwdThreads, smem>>>(steps, shared_dq ? 1 : 0, dq_acc, cycles, sink);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<long long> host(static_cast<std::size_t>(warps));
    CUDA_CHECK(cudaMemcpy(host.data(), cycles, sizeof(long long) * host.size(), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(dq_acc));
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

BackwardStepIssue backward_step_issue(int sms, int d, bool shared_dq, int steps) {
    if (steps < 10) throw std::invalid_argument("backward step: " + std::to_string(steps) + " steps; at least 10");
    if (d == 64) return run<__half, 64>(sms, shared_dq, steps);
    if (d == 128) return run<__half, 128>(sms, shared_dq, steps);
    throw std::invalid_argument("backward step: d = " + std::to_string(d) + " is not built; d = 64 or 128 (fa2_bwd_tc's)");
}

}  // namespace fasim::bench
