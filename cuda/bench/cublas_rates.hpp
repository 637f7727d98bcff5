// cuBLAS GEMM rates of the GPU at hand: what standard attention's products (a library GEMM) reach.
#pragma once

namespace fasim::bench {

enum class GemmType { fp16, bf16, fp32 };

// FLOP/s of C = A B with n x n x n operands of this type (fp32 accumulation; fp32 on the CUDA cores,
// no TF32), best of 3 timed batches of 20 products after 3 untimed ones. Throws std::runtime_error on
// a CUDA or cuBLAS error.
double cublas_gemm_flops_per_s(GemmType type, int n = 8192);

}  // namespace fasim::bench
