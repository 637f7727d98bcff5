// Standard attention, GEMM step, tiled version, on the CUDA cores (fp32 FMAs, no tensor cores).
//
// What it adds over standard_gemm_naive.cu: reuse on chip. Each block computes a 64 x 64 tile of C,
// stepping through K 32 at a time; the 64 x 32 slice of A and the 32 x 64 slice of B are staged in
// shared memory (as fp32, k-major) and every element staged is used 64 times. 256 threads, each a
// 4 x 4 micro-tile of C in registers (thread (tx, ty) = (t % 16, t / 16): rows 4ty..4ty+3, columns
// 4tx..4tx+3). Global loads: 16 bytes per thread through L2 only (ld.global.cg) where the rows are
// 16-byte aligned, else one element per thread; both coalesced. Ragged edges are zero-filled.
// Grid = (ceil(N/64), ceil(M/64), batch). Used for S = scale * Q K^T (B transposed) and O = P V.
//
// Shared memory (static, 17 KB): A slice [32][64+4] fp32 (transposed: As[k][m]), B slice [32][64+4] fp32.
//
// Run:  build/cuda/cuda-check --algo standard_tiled
#include "common/dispatch.hpp"
#include "common/dtype_traits.cuh"
#include "common/launch.cuh"
#include "kernels/launchers.hpp"

namespace fasim::cuda_detail {

namespace {

constexpr int kBM = 64;
constexpr int kBN = 64;
constexpr int kBK = 32;
constexpr int kGemmThreads = 256;
constexpr int kLdA = kBM + 4;
constexpr int kLdB = kBN + 4;

struct TiledGemmParams {
    const void* A;
    const void* B;
    void* C;
    int M, N, K;
    float alpha;
    long long strideA, strideB, strideC;
    int vecA, vecB;  // rows of A / B are 16-byte aligned: 16-byte loads allowed
};

template <typename T>
__device__ __forceinline__ void unpack16(const uint4& u, float* out) {
    if constexpr (sizeof(T) == 4) {
        const float4 f = *reinterpret_cast<const float4*>(&u);
        out[0] = f.x;
        out[1] = f.y;
        out[2] = f.z;
        out[3] = f.w;
    } else {
        const float4 lo = unpack4<T>(make_uint2(u.x, u.y));
        const float4 hi = unpack4<T>(make_uint2(u.z, u.w));
        out[0] = lo.x;
        out[1] = lo.y;
        out[2] = lo.z;
        out[3] = lo.w;
        out[4] = hi.x;
        out[5] = hi.y;
        out[6] = hi.z;
        out[7] = hi.w;
    }
}

// Stages a ROWS x COLS window of a row-major matrix (leading dimension ld; element (r, c) of the
// window is src[(row0 + r) * ld + col0 + c], zero outside row_limit x col_limit) into shared memory as
// fp32: dst[c * ldd + r] when TRANSPOSE, else dst[r * ldd + c].
template <typename T, int ROWS, int COLS, bool TRANSPOSE>
__device__ __forceinline__ void stage(float* __restrict__ dst, int ldd, const T* __restrict__ src, long long ld, int row0,
                                      int row_limit, int col0, int col_limit, bool vec) {
    const int tid = static_cast<int>(threadIdx.x);
    auto put = [&](int r, int c, float v) {
        if (TRANSPOSE) {
            dst[c * ldd + r] = v;
        } else {
            dst[r * ldd + c] = v;
        }
    };
    if (vec) {
        constexpr int kVec = 16 / static_cast<int>(sizeof(T));
        constexpr int kChunks = COLS / kVec;
        for (int q = tid; q < ROWS * kChunks; q += kGemmThreads) {
            const int r = q / kChunks;
            const int c = (q - r * kChunks) * kVec;
            const int gr = row0 + r;
            const int gc = col0 + c;
            float v[kVec];
            if (gr < row_limit && gc + kVec <= col_limit) {
                unpack16<T>(__ldcg(reinterpret_cast<const uint4*>(src + gr * ld + gc)), v);
            } else {
#pragma unroll
                for (int t = 0; t < kVec; ++t) {
                    v[t] = (gr < row_limit && gc + t < col_limit) ? ldcg_f(src + gr * ld + gc + t) : 0.f;
                }
            }
#pragma unroll
            for (int t = 0; t < kVec; ++t) put(r, c + t, v[t]);
        }
    } else {
        for (int e = tid; e < ROWS * COLS; e += kGemmThreads) {
            const int r = e / COLS;
            const int c = e - r * COLS;
            const int gr = row0 + r;
            const int gc = col0 + c;
            put(r, c, (gr < row_limit && gc < col_limit) ? ldcg_f(src + gr * ld + gc) : 0.f);
        }
    }
}

template <typename T, bool TRANS_B>
__global__ void __launch_bounds__(kGemmThreads) gemm_tiled_kernel(TiledGemmParams g) {
    __shared__ __align__(16) float As[kBK * kLdA];  // As[k][m]
    __shared__ __align__(16) float Bs[kBK * kLdB];  // Bs[k][n]
    const int tid = static_cast<int>(threadIdx.x);
    const int tx = tid % 16;
    const int ty = tid / 16;
    const int m0 = static_cast<int>(blockIdx.y) * kBM;
    const int n0 = static_cast<int>(blockIdx.x) * kBN;
    const long long b = blockIdx.z;
    const T* A = static_cast<const T*>(g.A) + b * g.strideA;
    const T* B = static_cast<const T*>(g.B) + b * g.strideB;
    T* C = static_cast<T*>(g.C) + b * g.strideC;

    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;
    }

    for (int k0 = 0; k0 < g.K; k0 += kBK) {
        // A window: rows m0.., columns k0.. of A [M][K] -> As[k][m]
        stage<T, kBM, kBK, true>(As, kLdA, A, g.K, m0, g.M, k0, g.K, g.vecA != 0);
        if (TRANS_B) {
            // B is [N][K]: rows n0.., columns k0.. -> Bs[k][n]
            stage<T, kBN, kBK, true>(Bs, kLdB, B, g.K, n0, g.N, k0, g.K, g.vecB != 0);
        } else {
            // B is [K][N]: rows k0.., columns n0.. -> Bs[k][n]
            stage<T, kBK, kBN, false>(Bs, kLdB, B, g.N, k0, g.K, n0, g.N, g.vecB != 0);
        }
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < kBK; ++k) {
            const float4 a = *reinterpret_cast<const float4*>(As + k * kLdA + ty * 4);
            const float4 bv = *reinterpret_cast<const float4*>(Bs + k * kLdB + tx * 4);
            const float av[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                acc[i][0] = fmaf(av[i], bv.x, acc[i][0]);
                acc[i][1] = fmaf(av[i], bv.y, acc[i][1]);
                acc[i][2] = fmaf(av[i], bv.z, acc[i][2]);
                acc[i][3] = fmaf(av[i], bv.w, acc[i][3]);
            }
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int m = m0 + ty * 4 + i;
        if (m >= g.M) continue;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int n = n0 + tx * 4 + j;
            if (n < g.N) C[static_cast<long long>(m) * g.N + n] = from_f<T>(g.alpha * acc[i][j]);
        }
    }
}

}  // namespace

CudaKernelLaunch launch_gemm_tiled(const GemmArgs& a, cudaStream_t stream) {
    CudaKernelLaunch info;
    if (a.trans_a) throw std::invalid_argument("gemm_tiled: a transposed first operand is cuBLAS's only (launch_gemm_cublas)");
    info.name = a.trans_b ? "gemm_tiled_nt" : "gemm_tiled_nn";
    info.block_threads = kGemmThreads;
    info.Br = kBM;
    info.Bc = kBN;
    const dim3 grid(static_cast<unsigned>(ceil_div(a.N, kBN)), static_cast<unsigned>(ceil_div(a.M, kBM)),
                    static_cast<unsigned>(a.batch));
    info.grid = {grid.x, grid.y, grid.z};
    with_dtype(a.dtype, [&](auto tag) {
        using T = decltype(tag);
        constexpr int kVec = 16 / static_cast<int>(sizeof(T));
        // 16-byte loads need every row start 16-byte aligned (cudaMalloc'd bases are).
        const int ldB = a.trans_b ? a.K : a.N;
        const TiledGemmParams p{a.A, a.B, a.C, a.M, a.N, a.K, a.alpha, a.strideA, a.strideB, a.strideC,
                                (a.K % kVec == 0 && a.strideA % kVec == 0) ? 1 : 0,
                                (ldB % kVec == 0 && a.strideB % kVec == 0) ? 1 : 0};
        if (a.trans_b) {
            launch_kernel(info.name.c_str(), gemm_tiled_kernel<T, true>, grid, dim3(kGemmThreads), 0, stream, p);
        } else {
            launch_kernel(info.name.c_str(), gemm_tiled_kernel<T, false>, grid, dim3(kGemmThreads), 0, stream, p);
        }
    });
    return info;
}

namespace {
// The launch table's entry for "standard_tiled" (kernels/launchers.hpp): standard attention on this GEMM.
CudaLaunchInfo run_standard_tiled(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    return run_standard(p, t, stream, launch_gemm_tiled, "standard_tiled");
}
TileChoice tiled_gemm_tiles(int, DType, std::size_t) { return {kBM, kBN, 0}; }  // the output tile
FASIM_REGISTER_KERNEL("standard_tiled", run_standard_tiled, tiled_gemm_tiles);
}  // namespace

}  // namespace fasim::cuda_detail
