// Standard attention's backward, row step: dS = P o (dP - D) with D = rowsum(P o dP), row by row, on the
// CUDA cores (fp32 arithmetic). The softmax's Jacobian applied to dP: for P = softmax(S),
// dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik).
//
// One block of 128 threads per row (grid = B*H*N blocks). P (the forward's, masked entries 0) and dP
// (dO V^T from the GEMM before) arrive in the storage dtype; dS is written in the storage dtype.
// No mask is needed: P is 0 where the forward masked, so dS is 0 there too.
//   - When the row's P, dP and their fp32 product fit in shared memory (Nk * (2e + 4) bytes, the switch the
//     simulator's row kernel uses, sim/algorithms/standard_attention_backward.cpp) P and dP are read from
//     global memory once into shared memory (16-byte loads where rows are 16-byte aligned);
//   - otherwise they are read twice: pass 1 sums D, pass 2 re-reads them and writes dS.
//
// Run:  build/cuda/cuda-check --algo standard_cublas_bwd
#include "common/block_reduce.cuh"
#include "common/dispatch.hpp"
#include "common/dtype_traits.cuh"
#include "common/launch.cuh"
#include "kernels/launchers.hpp"

namespace fasim::cuda_detail {

namespace {

constexpr int kThreads = 128;

struct SoftmaxBackwardParams {
    const void* P;
    const void* dP;
    void* dS;
    int Nk;
    int use_smem;  // stage the row of P and dP in shared memory (read once)
    int vec;       // rows are 16-byte aligned: four elements per step
};

template <typename T>
__global__ void __launch_bounds__(kThreads) softmax_backward_rows_kernel(SoftmaxBackwardParams a) {
    __shared__ float scratch[4];
    const long long row = blockIdx.x;
    const int Nk = a.Nk, tid = static_cast<int>(threadIdx.x);
    const T* P = static_cast<const T*>(a.P) + row * Nk;
    const T* dP = static_cast<const T*>(a.dP) + row * Nk;
    T* dS = static_cast<T*>(a.dS) + row * Nk;
    if (a.use_smem != 0) {  // stage both rows, then work from shared memory
        T* p_s = reinterpret_cast<T*>(dynamic_smem());
        T* dp_s = p_s + round_up(Nk, 8);
        if (a.vec != 0) {
            constexpr int kVec = 16 / static_cast<int>(sizeof(T));
            for (int c = tid * kVec; c < Nk; c += kThreads * kVec) {
                cp16_cg(p_s + c, P + c);
                cp16_cg(dp_s + c, dP + c);
            }
        } else {
            for (int c = tid; c < Nk; c += kThreads) {
                p_s[c] = from_f<T>(ldcg_f(P + c));
                dp_s[c] = from_f<T>(ldcg_f(dP + c));
            }
        }
        __syncthreads();
        P = p_s;
        dP = dp_s;
    }
    // D = rowsum(P o dP) (pass 1 reads global memory when the row was not staged)
    float part = 0.f;
    if (a.vec != 0) {
        for (int c = 4 * tid; c < Nk; c += 4 * kThreads) {
            const float4 p = a.use_smem != 0 ? lds4(P + c) : ldcg4(P + c);
            const float4 g = a.use_smem != 0 ? lds4(dP + c) : ldcg4(dP + c);
            part += (p.x * g.x + p.y * g.y) + (p.z * g.z + p.w * g.w);
        }
    } else {
        for (int c = tid; c < Nk; c += kThreads)
            part = fmaf(a.use_smem != 0 ? to_f(P[c]) : ldcg_f(P + c), a.use_smem != 0 ? to_f(dP[c]) : ldcg_f(dP + c), part);
    }
    const float D = block_sum(part, scratch);
    // dS = P o (dP - D) (pass 2)
    if (a.vec != 0) {
        for (int c = 4 * tid; c < Nk; c += 4 * kThreads) {
            const float4 p = a.use_smem != 0 ? lds4(P + c) : ldcg4(P + c);
            const float4 g = a.use_smem != 0 ? lds4(dP + c) : ldcg4(dP + c);
            st4(dS + c, make_float4(p.x * (g.x - D), p.y * (g.y - D), p.z * (g.z - D), p.w * (g.w - D)));
        }
    } else {
        for (int c = tid; c < Nk; c += kThreads) {
            const float p = a.use_smem != 0 ? to_f(P[c]) : ldcg_f(P + c);
            const float g = a.use_smem != 0 ? to_f(dP[c]) : ldcg_f(dP + c);
            dS[c] = from_f<T>(p * (g - D));
        }
    }
}

}  // namespace

CudaKernelLaunch launch_softmax_backward(const SoftmaxBackwardArgs& a, cudaStream_t stream) {
    if (a.rows <= 0 || a.rows > 2147483647LL)
        throw std::invalid_argument("softmax_backward: " + std::to_string(a.rows) +
                                    " rows: must be 1..2^31-1 (one block per row)");
    if (a.P == nullptr || a.dP == nullptr || a.dS == nullptr)
        throw std::invalid_argument("softmax_backward: P, dP and dS buffers are required");
    CudaKernelLaunch info;
    info.name = "softmax_backward_rows";
    info.block_threads = kThreads;
    const dim3 grid(static_cast<unsigned>(a.rows), 1, 1);
    info.grid = {grid.x, 1, 1};
    with_dtype(a.dtype, [&](auto tag) {
        using T = decltype(tag);
        const std::size_t e = sizeof(T), nk = static_cast<std::size_t>(a.Nk);
        const bool use_smem = nk * (2 * e + 4) <= a.smem_per_block;
        const bool vec = (nk * e) % 16 == 0;
        info.dynamic_smem_bytes = use_smem ? 2 * static_cast<std::size_t>(round_up(a.Nk, 8)) * e : 0;
        const SoftmaxBackwardParams p{a.P, a.dP, a.dS, a.Nk, use_smem ? 1 : 0, vec ? 1 : 0};
        info.registers_per_thread = launch_kernel("softmax_backward_rows", softmax_backward_rows_kernel<T>, grid,
                                                  dim3(kThreads), info.dynamic_smem_bytes, stream, p);
    });
    return info;
}

}  // namespace fasim::cuda_detail
