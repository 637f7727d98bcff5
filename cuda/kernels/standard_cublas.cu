// Standard attention, GEMM step, through cuBLAS (cublasGemmStridedBatchedEx): the library baseline
// for the two GEMMs of standard attention (the softmax between them is standard_softmax.cu).
//
// Compute type CUBLAS_COMPUTE_32F with math mode CUBLAS_DEFAULT_MATH: fp32 accumulation, and for fp32
// inputs no TF32 (TF32 needs CUBLAS_COMPUTE_32F_FAST_TF32 or CUBLAS_TF32_TENSOR_OP_MATH), so fp32
// results match fp32 arithmetic. For fp16/bf16 inputs cuBLAS may use tensor cores (fp32 accumulate):
// unlike every other kernel in cuda/, this one is not CUDA-cores-only.
//
// Row-major C [M][N] = alpha A [M][K] op(B) is computed as the column-major C^T = op(B)^T A^T.
// One cuBLAS handle per device, created on first use and deliberately never destroyed (destroying it
// from a static destructor after the CUDA context is torn down can crash at exit).
//
// Run:  build/cuda/cuda-check --algo standard_cublas
#include <cublas_v2.h>

#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "common/check.hpp"
#include "kernels/launchers.hpp"

#define CUBLAS_CHECK(expr)                                                                              \
    do {                                                                                                \
        const cublasStatus_t fasim_st_ = (expr);                                                        \
        if (fasim_st_ != CUBLAS_STATUS_SUCCESS) {                                                       \
            throw std::runtime_error(std::string(__FILE__) + ":" + std::to_string(__LINE__) +          \
                                     ": cuBLAS error " + cublasGetStatusName(fasim_st_) + " (" +        \
                                     cublasGetStatusString(fasim_st_) + ") in " #expr);                 \
        }                                                                                               \
    } while (0)

namespace fasim::cuda_detail {

namespace {

cublasHandle_t cublas_handle() {
    static std::mutex mutex;
    static std::map<int, cublasHandle_t> handles;
    int device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    const std::lock_guard<std::mutex> lock(mutex);
    auto it = handles.find(device);
    if (it != handles.end()) return it->second;
    cublasHandle_t h = nullptr;
    CUBLAS_CHECK(cublasCreate(&h));
    CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));  // no TF32 with CUBLAS_COMPUTE_32F
    handles.emplace(device, h);
    return h;
}

cudaDataType_t cuda_type(DType t) {
    switch (t) {
        case DType::fp32: return CUDA_R_32F;
        case DType::fp16: return CUDA_R_16F;
        case DType::bf16: return CUDA_R_16BF;
    }
    throw std::invalid_argument("unknown dtype");
}

}  // namespace

CudaKernelLaunch launch_gemm_cublas(const GemmArgs& a, cudaStream_t stream) {
    CudaKernelLaunch info;
    info.name = std::string("cublasGemmStridedBatchedEx_") + (a.trans_a ? "t" : "n") + (a.trans_b ? "t" : "n");
    cublasHandle_t h = cublas_handle();
    CUBLAS_CHECK(cublasSetStream(h, stream));
    const cudaDataType_t t = cuda_type(a.dtype);
    const float alpha = a.alpha;
    const float beta = 0.f;
    // column-major: C^T (N x M, ld N) = op(B)^T (N x K) * op(A)^T (K x M); row-major A [M][K] is the
    // column-major K x M (ld K), and with trans_a row-major A [K][M] is the column-major M x K (ld M), transposed.
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, a.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, a.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                            a.N, a.M, a.K, &alpha, a.B, t, a.trans_b ? a.K : a.N, a.strideB, a.A, t,
                                            a.trans_a ? a.M : a.K, a.strideA,
                                            &beta, a.C, t, a.N, a.strideC, a.batch, CUBLAS_COMPUTE_32F,
                                            CUBLAS_GEMM_DEFAULT));
    CUDA_CHECK_LAUNCH(info.name.c_str(), stream);
    return info;
}

namespace {
// The launch table's entry for "standard_cublas" (kernels/launchers.hpp): standard attention on cuBLAS's GEMMs.
CudaLaunchInfo run_standard_cublas(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    return run_standard(p, t, stream, launch_gemm_cublas, "standard_cublas");
}
TileChoice cublas_tiles(int, DType, std::size_t) { return {}; }  // cuBLAS picks its own
FASIM_REGISTER_KERNEL("standard_cublas", run_standard_cublas, cublas_tiles);
}  // namespace

}  // namespace fasim::cuda_detail
