// Standard attention, softmax step: P = softmax(S) row by row, on the CUDA cores (fp32 arithmetic).
//
// One block of 128 threads per row of S (grid = B*H*N blocks). S arrives already scaled (the first
// GEMM multiplies by 1/sqrt(d)) and stored in the storage dtype; P is written in the storage dtype.
// Causal masking happens here (standard attention computes all of S): column j of query row i is
// visible iff j <= i + Nk - N; masked entries get P = 0; a row that sees nothing is all zeros.
//   - When the row fits in shared memory (Nk * sizeof(elem) <= the device's per-block limit) it is
//     read from global memory once (16-byte ld.global.cg where rows are 16-byte aligned) into shared
//     memory; max, sum and the normalised output are computed from there. Where rows are 16-byte
//     aligned each thread takes four elements per step (one 8- or 16-byte shared load, one global
//     store) and exponentials use ex2.approx: ncu on the H200 counted 40 instructions per element
//     with one element per step and exp2f, enough to make the kernel issue-bound (94% of cycles)
//     instead of DRAM-bound (cuda/results/2026-11-23-h200/profile_cublas_fp16_d64).
//   - Otherwise it is read twice: pass 1 computes the row max and sum online (each thread its running
//     max and rescaled sum, then combined across the block), pass 2 re-reads it and writes P.
// Every element of the row is read (masked or not), as the tile program counts it.
//
// Run:  build/cuda/cuda-check --algo standard_tiled      (or standard_naive, standard_cublas)
#include <cmath>

#include "common/block_reduce.cuh"
#include "common/dispatch.hpp"
#include "common/dtype_traits.cuh"
#include "common/fast_math.cuh"
#include "common/launch.cuh"
#include "kernels/launchers.hpp"

namespace fasim::cuda_detail {

namespace {

constexpr int kSoftmaxThreads = 128;
constexpr float kLog2eS = 1.4426950408889634f;

// x with the elements at column c + k >= limit replaced by `fill` (x holds columns c .. c+3).
__device__ __forceinline__ float4 visible4(float4 x, int c, int limit, float fill) {
    if (c + 4 <= limit) return x;
    return make_float4(c < limit ? x.x : fill, c + 1 < limit ? x.y : fill, c + 2 < limit ? x.z : fill,
                       c + 3 < limit ? x.w : fill);
}

struct SoftmaxParams {
    const void* S;
    void* P;
    int N, Nk;
    int causal;
    int use_smem;  // stage the row in shared memory (read once)
    int vec;       // rows are 16-byte aligned: 16-byte loads
};

template <typename T>
__global__ void __launch_bounds__(kSoftmaxThreads) softmax_rows_kernel(SoftmaxParams p) {
    __shared__ float scratch[4];
    const long long row = blockIdx.x;
    const int i = static_cast<int>(row % p.N);  // query index within its head
    const int Nk = p.Nk;
    const int limit = p.causal != 0 ? imax(0, imin(Nk, i + Nk - p.N + 1)) : Nk;  // visible: [0, limit)
    const T* s = static_cast<const T*>(p.S) + row * Nk;
    T* out = static_cast<T*>(p.P) + row * Nk;
    const int tid = static_cast<int>(threadIdx.x);

    if (p.use_smem != 0) {
        T* buf = reinterpret_cast<T*>(dynamic_smem());
        if (p.vec != 0) {
            constexpr int kVec = 16 / static_cast<int>(sizeof(T));
            for (int c = tid * kVec; c < Nk; c += kSoftmaxThreads * kVec) cp16_cg(buf + c, s + c);
        } else {
            for (int c = tid; c < Nk; c += kSoftmaxThreads) buf[c] = from_f<T>(ldcg_f(s + c));
        }
        __syncthreads();
        if (p.vec != 0) {  // four consecutive elements per step (Nk is a multiple of 8 here)
            float mx = -INFINITY;
            for (int c = 4 * tid; c < limit; c += 4 * kSoftmaxThreads) {
                const float4 x = visible4(lds4(buf + c), c, limit, -INFINITY);
                mx = fmaxf(mx, fmaxf(fmaxf(x.x, x.y), fmaxf(x.z, x.w)));
            }
            mx = block_max(mx, scratch);
            const float shift = (mx == -INFINITY ? 0.f : mx) * kLog2eS;  // e^(x - m) = 2^(x log2e - m log2e)
            float sum = 0.f;
            for (int c = 4 * tid; c < limit; c += 4 * kSoftmaxThreads) {
                const float4 x = lds4(buf + c);
                const float4 e = visible4(make_float4(fast_exp2(fmaf(x.x, kLog2eS, -shift)), fast_exp2(fmaf(x.y, kLog2eS, -shift)),
                                                      fast_exp2(fmaf(x.z, kLog2eS, -shift)), fast_exp2(fmaf(x.w, kLog2eS, -shift))),
                                          c, limit, 0.f);
                sum += (e.x + e.y) + (e.z + e.w);
            }
            sum = block_sum(sum, scratch);
            const float inv = sum > 0.f ? 1.f / sum : 0.f;
            for (int c = 4 * tid; c < Nk; c += 4 * kSoftmaxThreads) {
                float4 e = make_float4(0.f, 0.f, 0.f, 0.f);
                if (c < limit) {
                    const float4 x = lds4(buf + c);
                    e = visible4(make_float4(fast_exp2(fmaf(x.x, kLog2eS, -shift)) * inv, fast_exp2(fmaf(x.y, kLog2eS, -shift)) * inv,
                                             fast_exp2(fmaf(x.z, kLog2eS, -shift)) * inv, fast_exp2(fmaf(x.w, kLog2eS, -shift)) * inv),
                                 c, limit, 0.f);
                }
                st4(out + c, e);
            }
            return;
        }
        float mx = -INFINITY;
        for (int c = tid; c < limit; c += kSoftmaxThreads) mx = fmaxf(mx, to_f(buf[c]));
        mx = block_max(mx, scratch);
        const float m_use = mx == -INFINITY ? 0.f : mx;
        float sum = 0.f;
        for (int c = tid; c < limit; c += kSoftmaxThreads) sum += exp2f((to_f(buf[c]) - m_use) * kLog2eS);
        sum = block_sum(sum, scratch);
        const float inv = sum > 0.f ? 1.f / sum : 0.f;
        for (int c = tid; c < Nk; c += kSoftmaxThreads) {
            out[c] = from_f<T>(c < limit ? exp2f((to_f(buf[c]) - m_use) * kLog2eS) * inv : 0.f);
        }
    } else {
        // pass 1: per-thread online max and sum, then combined across the block
        float m_t = -INFINITY;
        float l_t = 0.f;
        for (int c = tid; c < Nk; c += kSoftmaxThreads) {
            const float x = ldcg_f(s + c);
            if (c < limit) {
                if (x > m_t) {
                    l_t = (m_t == -INFINITY ? 0.f : l_t * exp2f((m_t - x) * kLog2eS)) + 1.f;
                    m_t = x;
                } else {
                    l_t += exp2f((x - m_t) * kLog2eS);
                }
            }
        }
        const float mx = block_max(m_t, scratch);
        const float m_use = mx == -INFINITY ? 0.f : mx;
        const float sum = block_sum(m_t == -INFINITY ? 0.f : l_t * exp2f((m_t - m_use) * kLog2eS), scratch);
        const float inv = sum > 0.f ? 1.f / sum : 0.f;
        // pass 2: read again, write P
        for (int c = tid; c < Nk; c += kSoftmaxThreads) {
            const float x = ldcg_f(s + c);
            out[c] = from_f<T>(c < limit ? exp2f((x - m_use) * kLog2eS) * inv : 0.f);
        }
    }
}

}  // namespace

CudaKernelLaunch launch_softmax(const SoftmaxArgs& a, cudaStream_t stream) {
    if (a.rows <= 0 || a.rows > 2147483647LL) {
        throw std::invalid_argument("softmax: " + std::to_string(a.rows) + " rows: must be 1..2^31-1 (one block per row)");
    }
    CudaKernelLaunch info;
    info.name = "softmax_rows";
    info.block_threads = kSoftmaxThreads;
    const dim3 grid(static_cast<unsigned>(a.rows), 1, 1);
    info.grid = {grid.x, 1, 1};
    with_dtype(a.dtype, [&](auto tag) {
        using T = decltype(tag);
        const std::size_t row_bytes = static_cast<std::size_t>(a.Nk) * sizeof(T);
        const bool use_smem = row_bytes + 64 <= a.smem_per_block;  // 64: static scratch and margin
        const bool vec = (row_bytes % 16) == 0;
        info.dynamic_smem_bytes = use_smem ? (row_bytes + 15) / 16 * 16 : 0;
        const SoftmaxParams p{a.S, a.P, a.N, a.Nk, a.causal ? 1 : 0, use_smem ? 1 : 0, vec ? 1 : 0};
        launch_kernel("softmax_rows", softmax_rows_kernel<T>, grid, dim3(kSoftmaxThreads), info.dynamic_smem_bytes,
                      stream, p);
    });
    return info;
}

}  // namespace fasim::cuda_detail
