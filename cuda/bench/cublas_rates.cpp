#include "bench/cublas_rates.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "common/check.hpp"

namespace fasim::bench {

namespace {

void check_cublas(cublasStatus_t s, const char* what) {
    if (s != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error(std::string("cuBLAS error ") + cublasGetStatusString(s) + " in " + what);
}

cudaDataType_t data_type(GemmType type) {
    return type == GemmType::fp16 ? CUDA_R_16F : type == GemmType::bf16 ? CUDA_R_16BF : CUDA_R_32F;
}

// The best of 3 timed batches of kPerBatch calls after 3 untimed ones, in milliseconds per batch.
constexpr int kPerBatch = 20;
template <class Call>
float best_batch_ms(Call&& call) {
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < 3; ++i) call();
    CUDA_CHECK(cudaDeviceSynchronize());
    float best_ms = 0;
    for (int r = 0; r < 3; ++r) {
        CUDA_CHECK(cudaEventRecord(start));
        for (int i = 0; i < kPerBatch; ++i) call();
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (r == 0 || ms < best_ms) best_ms = ms;
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return best_ms;
}

}  // namespace

double cublas_gemm_flops_per_s(GemmType type, int n) {
    const cudaDataType_t dt = data_type(type);
    const std::size_t elem = type == GemmType::fp32 ? 4 : 2;
    const std::size_t bytes = static_cast<std::size_t>(n) * n * elem;
    void *a = nullptr, *b = nullptr, *c = nullptr;
    CUDA_CHECK(cudaMalloc(&a, bytes));
    CUDA_CHECK(cudaMalloc(&b, bytes));
    CUDA_CHECK(cudaMalloc(&c, bytes));
    CUDA_CHECK(cudaMemset(a, 0, bytes));  // zeros: the rate does not depend on the values
    CUDA_CHECK(cudaMemset(b, 0, bytes));
    cublasHandle_t h = nullptr;
    check_cublas(cublasCreate(&h), "cublasCreate");
    // The default math mode: no TF32 for fp32 (cuBLAS uses it only when asked).
    check_cublas(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    const float alpha = 1.f, beta = 0.f;
    auto gemm = [&] {
        check_cublas(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, dt, n, b, dt, n, &beta, c, dt, n,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     "cublasGemmEx");
    };
    const float best_ms = best_batch_ms(gemm);
    check_cublas(cublasDestroy(h), "cublasDestroy");
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(c));
    return 2.0 * n * static_cast<double>(n) * n * kPerBatch / (best_ms * 1e-3);
}

double cublas_batched_gemm_flops_per_s(GemmType type, int m, int n, int k, int batch, bool b_transposed) {
    const cudaDataType_t dt = data_type(type);
    const std::size_t elem = type == GemmType::fp32 ? 4 : 2;
    const long long sa = static_cast<long long>(m) * k, sb = static_cast<long long>(k) * n, sc = static_cast<long long>(m) * n;
    void *a = nullptr, *b = nullptr, *c = nullptr;
    CUDA_CHECK(cudaMalloc(&a, static_cast<std::size_t>(sa) * batch * elem));
    CUDA_CHECK(cudaMalloc(&b, static_cast<std::size_t>(sb) * batch * elem));
    CUDA_CHECK(cudaMalloc(&c, static_cast<std::size_t>(sc) * batch * elem));
    CUDA_CHECK(cudaMemset(a, 0, static_cast<std::size_t>(sa) * batch * elem));
    CUDA_CHECK(cudaMemset(b, 0, static_cast<std::size_t>(sb) * batch * elem));
    cublasHandle_t h = nullptr;
    check_cublas(cublasCreate(&h), "cublasCreate");
    check_cublas(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    const float alpha = 1.f, beta = 0.f;
    // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS multiplies B's columns (n) by A's (m). B stored
    // row-major k x n is column-major n x k (ld n, no transpose); stored n x k it is k x n (ld k, transposed).
    auto gemm = [&] {
        check_cublas(cublasGemmStridedBatchedEx(h, b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, dt,
                                                b_transposed ? k : n, sb, a, dt, k, sa, &beta, c, dt, n, sc, batch,
                                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     "cublasGemmStridedBatchedEx");
    };
    const float best_ms = best_batch_ms(gemm);
    check_cublas(cublasDestroy(h), "cublasDestroy");
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(c));
    return 2.0 * m * static_cast<double>(n) * k * batch * kPerBatch / (best_ms * 1e-3);
}

}  // namespace fasim::bench
