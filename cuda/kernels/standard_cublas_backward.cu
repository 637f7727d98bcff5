// Standard attention's backward on cuBLAS: the library baseline for training without FlashAttention.
// It reads the P the forward stored (standard_cublas) and sends two more N x Nk matrices through HBM,
// in the order of the simulator's program (sim/algorithms/standard_attention_backward.cpp):
//
//   dV = P^T dO           cuBLAS, P read back from HBM (transposed operand)
//   dP = dO V^T           cuBLAS, written to HBM
//   dS = P o (dP - D)     fa-sim's row kernel (standard_softmax_backward.cu), D = rowsum(P o dP)
//   dQ = scale dS K       cuBLAS, dS read back
//   dK = scale dS^T Q     cuBLAS, dS read back again (transposed operand)
//
// The GEMMs are launch_gemm_cublas's (standard_cublas.cu): fp32 accumulation, no TF32, tensor cores
// for fp16/bf16 inputs.
//
// Run:  build/cuda/cuda-check --algo standard_cublas_bwd
#include <cmath>

#include "kernels/launchers.hpp"

namespace fasim::cuda_detail {

namespace {

// C[b] = alpha op(A[b]) op(B[b]) for every batch*head, row-major, C [M][N].
GemmArgs gemm(DType t, const void* A, bool trans_a, const void* B, bool trans_b, void* C, int M, int N, int K, float alpha,
              int batch) {
    GemmArgs g;
    g.dtype = t;
    g.A = A;
    g.B = B;
    g.C = C;
    g.M = M;
    g.N = N;
    g.K = K;
    g.alpha = alpha;
    g.strideA = static_cast<long long>(M) * K;
    g.strideB = static_cast<long long>(K) * N;
    g.strideC = static_cast<long long>(M) * N;
    g.batch = batch;
    g.trans_a = trans_a;
    g.trans_b = trans_b;
    return g;
}

CudaLaunchInfo run_standard_cublas_bwd(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    constexpr const char* kName = "standard_cublas_bwd";
    const std::size_t e = static_cast<std::size_t>(dtype_bytes(p.dtype));
    const std::size_t BH = static_cast<std::size_t>(p.B) * static_cast<std::size_t>(p.H);
    const std::size_t q_bytes = BH * static_cast<std::size_t>(p.N) * static_cast<std::size_t>(p.d) * e;
    const std::size_t kv_bytes = BH * static_cast<std::size_t>(p.Nk) * static_cast<std::size_t>(p.d) * e;
    const std::size_t s_bytes = BH * static_cast<std::size_t>(p.N) * static_cast<std::size_t>(p.Nk) * e;
    for (const auto& [buf, name] : {std::pair{&t.Q, "Q"}, {&t.dO, "dO"}, {&t.dQ, "dQ"}})
        check_buffer(*buf, q_bytes, name, kName);
    for (const auto& [buf, name] : {std::pair{&t.K, "K"}, {&t.V, "V"}, {&t.dK, "dK"}, {&t.dV, "dV"}})
        check_buffer(*buf, kv_bytes, name, kName);
    for (const auto& [buf, name] : {std::pair{&t.P, "P"}, {&t.dP, "dP"}, {&t.dS, "dS"}}) check_buffer(*buf, s_bytes, name, kName);
    const int BHi = p.B * p.H;
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.d)));
    CudaLaunchInfo info;
    info.kernels.push_back(
        launch_gemm_cublas(gemm(p.dtype, t.P.get(), true, t.dO.get(), false, t.dV.get(), p.Nk, p.d, p.N, 1.f, BHi), stream));
    info.kernels.push_back(
        launch_gemm_cublas(gemm(p.dtype, t.dO.get(), false, t.V.get(), true, t.dP.get(), p.N, p.Nk, p.d, 1.f, BHi), stream));
    SoftmaxBackwardArgs sm;
    sm.dtype = p.dtype;
    sm.P = t.P.get();
    sm.dP = t.dP.get();
    sm.dS = t.dS.get();
    sm.rows = static_cast<long long>(BHi) * p.N;
    sm.Nk = p.Nk;
    sm.smem_per_block = device_smem_per_block();
    info.kernels.push_back(launch_softmax_backward(sm, stream));
    info.kernels.push_back(
        launch_gemm_cublas(gemm(p.dtype, t.dS.get(), false, t.K.get(), false, t.dQ.get(), p.N, p.d, p.Nk, scale, BHi), stream));
    info.kernels.push_back(
        launch_gemm_cublas(gemm(p.dtype, t.dS.get(), true, t.Q.get(), false, t.dK.get(), p.Nk, p.d, p.N, scale, BHi), stream));
    return info;
}

TileChoice cublas_tiles(int, DType, std::size_t) { return {}; }  // cuBLAS picks its own
FASIM_REGISTER_KERNEL("standard_cublas_bwd", run_standard_cublas_bwd, cublas_tiles);

}  // namespace

}  // namespace fasim::cuda_detail
