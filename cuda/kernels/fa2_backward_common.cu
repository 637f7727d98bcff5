// FlashAttention-2 backward's first and last kernels, shared by the CUDA-core (fa2_backward.cu) and the
// tensor-core (fa2_backward_tensor_core.cu) main kernels, as the official implementation runs them:
//
//   fa2_bwd_preprocess   D_i = rowsum(dO_i * O_i) in fp32 (dot(dO, O): the row term of dS = P o (dP - D)
//                        that no K/V block could compute alone), and dq_acc = 0, the fp32 buffer the main
//                        kernel's blocks add their parts of dQ to.
//   fa2_bwd_convert_dq   dQ = dq_acc rounded to the storage dtype.
//
// Both: grid (ceil(N / rows), B*H), 128 threads; a warp takes one row at a time, its lanes strided over d.
#include "common/dtype_traits.cuh"
#include "common/dispatch.hpp"
#include "common/launch.cuh"
#include "kernels/launchers.hpp"

namespace fasim::cuda_detail {

namespace {

constexpr int kThreads = 128;

struct RowParams {
    const void* O;
    const void* dO;
    float* D;
    float* dq_acc;
    void* dQ;
    int N, d, rows;
};

template <typename T>
__global__ void __launch_bounds__(kThreads) fa2_bwd_preprocess_kernel(RowParams p) {
    const int warp = static_cast<int>(threadIdx.x) >> 5, lane = static_cast<int>(threadIdx.x) & 31;
    const int bh = static_cast<int>(blockIdx.y), q0 = static_cast<int>(blockIdx.x) * p.rows;
    const int q_end = imin(q0 + p.rows, p.N);
    const long long head = static_cast<long long>(bh) * p.N;
    const T* O = static_cast<const T*>(p.O);
    const T* dO = static_cast<const T*>(p.dO);
    for (int r = q0 + warp; r < q_end; r += kThreads / 32) {
        const long long row = (head + r) * p.d;
        float dot = 0.f;
        for (int c = lane; c < p.d; c += 32) {
            dot = fmaf(to_f(dO[row + c]), to_f(O[row + c]), dot);
            p.dq_acc[row + c] = 0.f;
        }
        for (int off = 16; off > 0; off >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, off);
        if (lane == 0) p.D[head + r] = dot;
    }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) fa2_bwd_convert_dq_kernel(RowParams p) {
    const int bh = static_cast<int>(blockIdx.y), q0 = static_cast<int>(blockIdx.x) * p.rows;
    const long long first = (static_cast<long long>(bh) * p.N + q0) * p.d;
    const long long count = static_cast<long long>(imin(p.rows, p.N - q0)) * p.d;
    T* dQ = static_cast<T*>(p.dQ);
    for (long long i = threadIdx.x; i < count; i += kThreads) dQ[first + i] = from_f<T>(p.dq_acc[first + i]);
}

RowParams row_params(const BackwardArgs& a, int rows, const char* kernel) {
    if (rows <= 0)
        throw std::invalid_argument(std::string(kernel) + ": " + std::to_string(rows) + " rows per block: must be >= 1");
    if (a.O == nullptr || a.dO == nullptr || a.D == nullptr || a.dq_acc == nullptr || a.dQ == nullptr)
        throw std::invalid_argument(std::string(kernel) + ": O, dO, D, dq_acc and dQ buffers are required");
    return {a.O, a.dO, a.D, a.dq_acc, a.dQ, a.N, a.d, rows};
}

}  // namespace

CudaKernelLaunch launch_fa2_bwd_preprocess(const BackwardArgs& a, int rows, cudaStream_t stream) {
    const RowParams p = row_params(a, rows, "fa2_bwd_preprocess");
    CudaKernelLaunch info;
    info.name = "fa2_bwd_preprocess";
    info.block_threads = kThreads;
    info.Br = rows;
    const dim3 grid(static_cast<unsigned>(ceil_div(a.N, rows)), static_cast<unsigned>(a.BH), 1);
    info.grid = {grid.x, grid.y, grid.z};
    with_dtype(a.dtype, [&](auto tag) {
        using T = decltype(tag);
        info.registers_per_thread =
            launch_kernel("fa2_bwd_preprocess", fa2_bwd_preprocess_kernel<T>, grid, dim3(kThreads), 0, stream, p);
    });
    return info;
}

CudaKernelLaunch launch_fa2_bwd_convert_dq(const BackwardArgs& a, int rows, cudaStream_t stream) {
    const RowParams p = row_params(a, rows, "fa2_bwd_convert_dq");
    CudaKernelLaunch info;
    info.name = "fa2_bwd_convert_dq";
    info.block_threads = kThreads;
    info.Br = rows;
    const dim3 grid(static_cast<unsigned>(ceil_div(a.N, rows)), static_cast<unsigned>(a.BH), 1);
    info.grid = {grid.x, grid.y, grid.z};
    with_dtype(a.dtype, [&](auto tag) {
        using T = decltype(tag);
        info.registers_per_thread =
            launch_kernel("fa2_bwd_convert_dq", fa2_bwd_convert_dq_kernel<T>, grid, dim3(kThreads), 0, stream, p);
    });
    return info;
}

}  // namespace fasim::cuda_detail
