// Standard attention, GEMM step, naive version, on the CUDA cores (fp32 FMAs, no tensor cores).
//
// Standard attention (FlashAttention paper, Algorithm 0) is three launches:
//   S = scale * Q K^T  (this GEMM, B transposed; S stored in the storage dtype)
//   P = softmax(S)     (standard_softmax.cu)
//   O = P V            (this GEMM again)
// This is the baseline every later step improves on: 16 x 16 threads per block, one output element
// per thread, every operand read straight from global memory (ld.global.cg: cached in L2 only, so every
// read reaches L2 as in the tile program) -- 2K loads per output element, no reuse on chip.
// Block (tx, ty) = (column, row); grid = (ceil(N/16), ceil(M/16), batch).
//
// Run:  build/cuda/cuda-check --algo standard_naive
#include "common/dispatch.hpp"
#include "common/dtype_traits.cuh"
#include "common/launch.cuh"
#include "kernels/launchers.hpp"

namespace fasim::cuda_detail {

namespace {

constexpr int kNaiveTile = 16;

struct NaiveGemmParams {
    const void* A;
    const void* B;
    void* C;
    int M, N, K;
    float alpha;
    long long strideA, strideB, strideC;
};

template <typename T, bool TRANS_B>
__global__ void __launch_bounds__(kNaiveTile* kNaiveTile) gemm_naive_kernel(NaiveGemmParams g) {
    const int n = static_cast<int>(blockIdx.x) * kNaiveTile + static_cast<int>(threadIdx.x);
    const int m = static_cast<int>(blockIdx.y) * kNaiveTile + static_cast<int>(threadIdx.y);
    if (m >= g.M || n >= g.N) return;
    const long long b = blockIdx.z;
    const T* a = static_cast<const T*>(g.A) + b * g.strideA + static_cast<long long>(m) * g.K;
    const T* bm = static_cast<const T*>(g.B) + b * g.strideB;
    float acc = 0.f;
    if (TRANS_B) {
        const T* brow = bm + static_cast<long long>(n) * g.K;  // B is [N][K]
        for (int k = 0; k < g.K; ++k) acc = fmaf(ldcg_f(a + k), ldcg_f(brow + k), acc);
    } else {
        const T* bcol = bm + n;  // B is [K][N]
        for (int k = 0; k < g.K; ++k) acc = fmaf(ldcg_f(a + k), ldcg_f(bcol + static_cast<long long>(k) * g.N), acc);
    }
    static_cast<T*>(g.C)[b * g.strideC + static_cast<long long>(m) * g.N + n] = from_f<T>(g.alpha * acc);
}

}  // namespace

CudaKernelLaunch launch_gemm_naive(const GemmArgs& a, cudaStream_t stream) {
    CudaKernelLaunch info;
    if (a.trans_a) throw std::invalid_argument("gemm_naive: a transposed first operand is cuBLAS's only (launch_gemm_cublas)");
    info.name = a.trans_b ? "gemm_naive_nt" : "gemm_naive_nn";
    info.block_threads = kNaiveTile * kNaiveTile;
    info.Br = kNaiveTile;
    info.Bc = kNaiveTile;
    const dim3 grid(static_cast<unsigned>(ceil_div(a.N, kNaiveTile)), static_cast<unsigned>(ceil_div(a.M, kNaiveTile)),
                    static_cast<unsigned>(a.batch));
    info.grid = {grid.x, grid.y, grid.z};
    const NaiveGemmParams p{a.A, a.B, a.C, a.M, a.N, a.K, a.alpha, a.strideA, a.strideB, a.strideC};
    with_dtype(a.dtype, [&](auto tag) {
        using T = decltype(tag);
        if (a.trans_b) {
            launch_kernel(info.name.c_str(), gemm_naive_kernel<T, true>, grid, dim3(kNaiveTile, kNaiveTile), 0, stream, p);
        } else {
            launch_kernel(info.name.c_str(), gemm_naive_kernel<T, false>, grid, dim3(kNaiveTile, kNaiveTile), 0, stream, p);
        }
    });
    return info;
}

namespace {
// The launch table's entry for "standard_naive" (kernels/launchers.hpp): standard attention on this GEMM.
CudaLaunchInfo run_standard_naive(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    return run_standard(p, t, stream, launch_gemm_naive, "standard_naive");
}
TileChoice naive_tiles(int, DType, std::size_t) { return {kNaiveTile, kNaiveTile, 0}; }  // one output per thread
FASIM_REGISTER_KERNEL("standard_naive", run_standard_naive, naive_tiles);
}  // namespace

}  // namespace fasim::cuda_detail
