// cuBLAS GEMM rates of the GPU at hand: what standard attention's products (a library GEMM) reach.
#pragma once

namespace fasim::bench {

enum class GemmType { fp16, bf16, fp32 };

// FLOP/s of C = A B with n x n x n operands of this type (fp32 accumulation; fp32 on the CUDA cores,
// no TF32), best of 3 timed batches of 20 products after 3 untimed ones. Throws std::runtime_error on
// a CUDA or cuBLAS error.
double cublas_gemm_flops_per_s(GemmType type, int n = 8192);

// FLOP/s of `batch` products C_i = A_i B_i with C m x n over k, row-major as attention stores its tensors
// (cublasGemmStridedBatchedEx; fp32 accumulation, no TF32), B stored n x k when b_transposed: S = Q K^T is
// m = N, n = Nk, k = d, B transposed; O = P V is m = N, n = d, k = Nk. Timed as cublas_gemm_flops_per_s.
double cublas_batched_gemm_flops_per_s(GemmType type, int m, int n, int k, int batch, bool b_transposed);

}  // namespace fasim::bench
