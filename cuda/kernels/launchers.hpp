// Host entry points of the kernel files (internal to fasim_cuda; run_attention is the public API).
// Each launcher dispatches on dtype (and head dim), launches, checks the launch, and describes it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "attention_kernels.hpp"

namespace fasim::cuda_detail {

// Batched row-major GEMM: C[b] = alpha * A[b] * op(B[b]), A [M][K], C [M][N];
// op(B) = B^T with B [N][K] when trans_b, else B with B [K][N]. C stored rounded to the dtype.
struct GemmArgs {
    DType dtype = DType::fp32;
    const void* A = nullptr;
    const void* B = nullptr;
    void* C = nullptr;
    int M = 0, N = 0, K = 0;
    float alpha = 1.f;
    long long strideA = 0, strideB = 0, strideC = 0;  // elements between batches
    int batch = 1;
    bool trans_b = false;
};
CudaKernelLaunch launch_gemm_naive(const GemmArgs& args, cudaStream_t stream);
CudaKernelLaunch launch_gemm_tiled(const GemmArgs& args, cudaStream_t stream);
CudaKernelLaunch launch_gemm_cublas(const GemmArgs& args, cudaStream_t stream);

// Row-wise softmax of S [rows][Nk] into P (rows = B*H*N; query index = row % N for the causal mask).
struct SoftmaxArgs {
    DType dtype = DType::fp32;
    const void* S = nullptr;
    void* P = nullptr;
    long long rows = 0;
    int N = 0, Nk = 0;
    bool causal = false;
    std::size_t smem_per_block = 0;  // device opt-in limit: a row is staged in shared memory if it fits
};
CudaKernelLaunch launch_softmax(const SoftmaxArgs& args, cudaStream_t stream);

struct FlashArgs {
    DType dtype = DType::fp32;
    int d = 64;
    const void* Q = nullptr;
    const void* K = nullptr;
    const void* V = nullptr;
    void* O = nullptr;
    float* lse = nullptr;  // tiled, fa2
    float* m = nullptr;    // fa1
    float* l = nullptr;    // fa1
    float* o_acc = nullptr; // fa1 with fp16/bf16 storage: the running O in fp32 (fp32 accumulates in O)
    int BH = 1, N = 1, Nk = 1;
    int Br = 0, Bc = 0;
    bool causal = false;
    float scale = 1.f;
};
CudaKernelLaunch launch_tiled_two_pass(const FlashArgs& args, cudaStream_t stream);
std::vector<CudaKernelLaunch> launch_fa1(const FlashArgs& args, cudaStream_t stream);  // init, then main
// FA1's init kernel (line 2): o_acc = 0, l = 0, m = -inf, and O = 0 in the rows causal masking hides
// from every key (counted in Q tiles of args.Br rows). Used by launch_fa1 and launch_fa1_tc.
CudaKernelLaunch launch_fa1_init(const FlashArgs& args, float* o_acc, cudaStream_t stream);
// fa1 on the tensor cores (fa1_tensor_core.cu): fixed tiles Br = 16, Bc = 256 (d = 64) or 128 (d = 128)
// (args.Br, args.Bc are ignored), fp16/bf16 with the fp32 o_acc, d 64 or 128, (q_splits, B*H) blocks.
// Init, then main. Throws like launch_fa2_tc.
std::vector<CudaKernelLaunch> launch_fa1_tc(const FlashArgs& args, cudaStream_t stream);
std::string fa1_tc_unsupported_reason(DType dtype, int d);
CudaKernelLaunch launch_fa2(const FlashArgs& args, cudaStream_t stream);
// fa2 on the tensor cores (fa2_tensor_core.cu): fixed 64x64 tiles (args.Br, args.Bc are ignored), fp16/bf16,
// d 64 or 128. Throws std::invalid_argument for another dtype or head dim, std::runtime_error on a
// device below compute capability 8.0.
CudaKernelLaunch launch_fa2_tc(const FlashArgs& args, cudaStream_t stream);
// Empty when fa2_tc has a kernel for (dtype, d); otherwise what is wrong, the allowed values and the fix.
std::string fa2_tc_unsupported_reason(DType dtype, int d);

}  // namespace fasim::cuda_detail
