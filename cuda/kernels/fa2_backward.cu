// FlashAttention-2 backward (Dao 2023, Algorithm 2), on the CUDA cores: fp32 FMAs, no tensor cores.
//
// Three launches, as in the simulator's tile program (sim/algorithms/flash_attention_2_backward.cpp):
//   fa2_bwd_preprocess   D = rowsum(dO * O) (fp32), dq_acc = 0                (fa2_backward_common.cu)
//   fa2_backward         the main kernel, this file
//   fa2_bwd_convert_dq   dQ = dq_acc in the storage dtype                     (fa2_backward_common.cu)
//
// The main kernel turns the forward inside out: the K/V sequence is split across blocks, and each block
// walks the Q tiles.
//   grid  = (ceil(Nk/Bc), B*H): blockIdx.x = K/V tile j (fastest), blockIdx.y = batch*head.
//   block = 128 threads = 4 warps (as every flash kernel here: kFlashThreads).
//   per block: K_j, V_j loaded once; dK_j = dV_j = 0; for each Q tile i that sees K_j (causal: Q tiles
//           entirely above the diagonal skipped, only tiles crossing it masked element-wise):
//             load Q_i, dO_i, LSE_i, D_i;
//             S = Q_i K_j^T;  P = exp(scale*S - LSE) (0 where masked), rounded to the storage dtype;
//             dV_j += P^T dO_i;  dP = dO_i V_j^T;  dS = P o (dP - D_i), rounded;  dK_j += dS^T Q_i;
//             dq_acc_i += scale * dS K_j   (fp32 atomicAdd: every K/V block adds its part of dQ_i).
//           At the end dK_j * scale and dV_j are written once.
//
// Who computes what, per Q tile (warp w, KW = Bc/4 keys and WR = Br/4 rows per warp):
//   load      all threads: Q_i, dO_i (rows past N zero-filled), LSE_i (log2 units), D_i
//   __syncthreads
//   phase 1   warp w: the columns [w*KW, (w+1)*KW) of S, P, dP, dS, all Br rows ("split keys", as the
//             simulator's Split::Cols). Lane (rg, kg) = (lane/4, lane%4) holds rows rg + 8i (i < 8) and
//             keys kg + 4j (j < 4) of them in registers: S -> P, then dP -> dS. P goes to the shared
//             P/dS buffer, in the warp's own columns.
//   __syncwarp
//   phase 2   warp w, the same keys: dV_j[keys] += P^T dO_i (reads only the P columns it wrote);
//   __syncwarp  (every lane done reading P) ... dS, kept in registers, overwrites P ... __syncwarp
//             dK_j[keys] += dS^T Q_i. The dK_j, dV_j rows of the warp's keys (fp32, shared memory) are
//             read and written by that warp only: no block barrier guards them.
//   __syncthreads  (every warp's dS columns in place)
//   phase 3   warp w: Q rows [w*WR, (w+1)*WR): dQ_i part = scale * dS K_j over all Bc keys, added to
//             dq_acc with fp32 atomics (float4 atomics on sm_90).
//   The next tile's load writes only Q, dO, LSE and D, whose last readers (phases 1-2) were before the
//   __syncthreads above, and phase 1 writes P/dS only after the next load's __syncthreads, which every
//   phase-3 reader of the buffer has passed: two block barriers per Q tile.
// Tiles (host, fa2_bwd_tiles in sim/kernels/tile_rules.hpp): Br = Bc = 64, which the lane layouts above
//   cover exactly (phase 1: 4 warps x 16 keys, 8 lane rows x 8 rows; phases 2, 3: 4 lanes x 4 keys or
//   rows per warp); halved, Bc first, while the shared memory does not fit (never on H100/H200;
//   A100 fp32 d=128: 64x32; T4 down to 16x16). Br, Bc = 16 or 32 work, but some lanes then compute
//   clamped duplicate rows or keys that are never stored (idle FMAs).
// Why P and dS share one buffer: two fp32 tiles would not fit fp32 d=128 at 64x64 on H100/H200.
// Why dK_j, dV_j accumulate in shared memory: in registers they would take Bc*d/64 floats per lane
//   (128 at d=128) on top of the phase-1 micro-tiles; the read-add-write of a warp's rows once per Q
//   tile costs 1/Br of the FMAs that produce them.
//
// Where things live:
//   registers      phase 1: S/P and dP/dS micro-tiles (8 x 4 each per lane); phases 2, 3: one
//                  4-row x d/8-column micro-tile of dV_j, dK_j or dQ_i per lane; operand fragments
//   shared memory  K_j, V_j, Q_i, dO_i tiles (storage dtype), one fp32 P/dS tile (P, then dS in its
//                  place), LSE_i and D_i, the fp32 dK_j and dV_j accumulators; layout in
//                  smem_layouts.hpp (fa2_bwd_smem_layout)
//   global         K, V read once per block; Q, dO (through L2 only: ld.global.cg), LSE, D once per
//                  visited Q tile; dq_acc added to atomically; dK, dV written once
//
// Run:  build/cuda/cuda-check --algo fa2_bwd
#include <cmath>

#include "common/dispatch.hpp"
#include "common/launch.cuh"
#include "kernels/flash_common.cuh"
#include "kernels/launchers.hpp"
#include "kernels/smem_layouts.hpp"
#include "kernels/tile_rules.hpp"

namespace fasim::cuda_detail {

namespace {

constexpr int kMaxTile = 64;  // Br, Bc <= 64: the phase-1 micro-tiles cover 64 rows x 16 keys per warp
constexpr int kRows1 = 8;     // phase 1: rows per lane (rg + 8i)
constexpr int kKeys1 = 4;     // phase 1: keys per lane (kg + 4j)
constexpr int kRows23 = 4;    // phases 2, 3: micro-tile rows (keys of dV/dK, Q rows of dQ) per lane

struct Fa2BwdParams {
    const void* Q;
    const void* K;
    const void* V;
    const void* dO;
    const float* lse;
    const float* D;
    float* dq_acc;
    void* dK;
    void* dV;
    int N, Nk, Br, Bc;
    int causal;
    float scale;       // 1/sqrt(d)
    float scale_log2;  // scale * log2(e): S in log2 units
};

// One lane: acc[i][j] = A_row(i) . B_row(j) over the head dimension, rows of A at A + a_off[i] and rows
// of B at B + b_off[j] (shared memory, storage dtype). 16-byte (fp32) or 8-byte (fp16/bf16) loads.
template <typename T, int D, int TI, int TJ>
__device__ __forceinline__ void dot_rows(float (&acc)[TI][TJ], const T* __restrict__ A, const int (&a_off)[TI],
                                         const T* __restrict__ B, const int (&b_off)[TJ]) {
#pragma unroll
    for (int i = 0; i < TI; ++i) {
#pragma unroll
        for (int j = 0; j < TJ; ++j) acc[i][j] = 0.f;
    }
#pragma unroll 4
    for (int k = 0; k < D; k += 4) {
        float4 b[TJ];
#pragma unroll
        for (int j = 0; j < TJ; ++j) b[j] = lds4(B + b_off[j] + k);
#pragma unroll
        for (int i = 0; i < TI; ++i) {
            const float4 a = lds4(A + a_off[i] + k);
#pragma unroll
            for (int j = 0; j < TJ; ++j) {
                acc[i][j] = fmaf(a.x, b[j].x, acc[i][j]);
                acc[i][j] = fmaf(a.y, b[j].y, acc[i][j]);
                acc[i][j] = fmaf(a.z, b[j].z, acc[i][j]);
                acc[i][j] = fmaf(a.w, b[j].w, acc[i][j]);
            }
        }
    }
}

// One warp: acc[k][.] += sum_{r < nred} A[r][k] * B[r][.] for the keys k in [k_begin, k_begin + nkeys)
// (nkeys <= 16, a multiple of 4): dV_j += P^T dO_i and dK_j += dS^T Q_i. A is the fp32 P/dS tile (row
// stride lda), B the dO or Q tile (storage dtype, row stride ldb), acc the fp32 accumulator in shared
// memory (row stride D). Lane (lr, lc) = (lane/8, lane%8) takes the 4 keys k_begin + 4*lr + (0..3), read
// as one float4 per row r (a broadcast within the 8 lanes of lr), and the columns lc*4 + 32*jj + (0..3).
// Lanes whose keys are past nkeys have nothing to do (Bc < 64).
template <typename T, int D>
__device__ __forceinline__ void accumulate_transposed(float* __restrict__ acc, const float* __restrict__ A, int lda,
                                                      int k_begin, int nkeys, const T* __restrict__ B, int ldb,
                                                      int nred) {
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int lr = lane >> 3;
    const int lc = lane & 7;
    const int key = k_begin + kRows23 * lr;  // the lane's first key
    if (kRows23 * lr >= nkeys) return;
    float o[kRows23][D / 8];
#pragma unroll
    for (int i = 0; i < kRows23; ++i) {
#pragma unroll
        for (int c = 0; c < D / 8; ++c) o[i][c] = 0.f;
    }
    const float* a_col = A + key;
    const T* b_col = B + lc * 4;
#pragma unroll 2
    for (int r = 0; r < nred; ++r) {
        const float4 a = *reinterpret_cast<const float4*>(a_col + r * lda);
#pragma unroll
        for (int jj = 0; jj < D / 32; ++jj) {
            const float4 b = lds4(b_col + r * ldb + 32 * jj);
#pragma unroll
            for (int i = 0; i < kRows23; ++i) {
                const float ai = f4_get(a, i);
                o[i][4 * jj + 0] = fmaf(ai, b.x, o[i][4 * jj + 0]);
                o[i][4 * jj + 1] = fmaf(ai, b.y, o[i][4 * jj + 1]);
                o[i][4 * jj + 2] = fmaf(ai, b.z, o[i][4 * jj + 2]);
                o[i][4 * jj + 3] = fmaf(ai, b.w, o[i][4 * jj + 3]);
            }
        }
    }
#pragma unroll
    for (int i = 0; i < kRows23; ++i) {
#pragma unroll
        for (int jj = 0; jj < D / 32; ++jj) {
            float4* dst = reinterpret_cast<float4*>(acc + (key + i) * D + lc * 4 + 32 * jj);
            float4 v = *dst;
            v.x += o[i][4 * jj + 0];
            v.y += o[i][4 * jj + 1];
            v.z += o[i][4 * jj + 2];
            v.w += o[i][4 * jj + 3];
            *dst = v;
        }
    }
}

// dst[0..3] += v in global memory, atomically per element: one 16-byte atomic on sm_90, four 4-byte
// ones before.
__device__ __forceinline__ void atomic_add4(float* dst, float4 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd(reinterpret_cast<float4*>(dst), v);
#else
    atomicAdd(dst + 0, v.x);
    atomicAdd(dst + 1, v.y);
    atomicAdd(dst + 2, v.z);
    atomicAdd(dst + 3, v.w);
#endif
}

template <typename T, int D>
__global__ void __launch_bounds__(kFlashThreads) fa2_backward_kernel(Fa2BwdParams p) {
    const int tid = static_cast<int>(threadIdx.x);
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const int bh = static_cast<int>(blockIdx.y);
    const int k0 = static_cast<int>(blockIdx.x) * p.Bc;
    const int kv_valid = imin(p.Bc, p.Nk - k0);  // keys of this tile inside the sequence
    const int KW = p.Bc / kFlashWarps;           // keys per warp (phases 1, 2)
    const int kw0 = warp * KW;                   // the warp's first key in the tile
    const int WR = p.Br / kFlashWarps;           // Q rows per warp (phase 3)
    const int wr0 = warp * WR;                   // the warp's first row in the Q tile

    const Fa2BwdSmemLayout L = fa2_bwd_smem_layout(p.Br, p.Bc, D, static_cast<int>(sizeof(T)));
    unsigned char* smem = dynamic_smem();
    T* Ks = reinterpret_cast<T*>(smem + L.k);
    T* Vs = reinterpret_cast<T*>(smem + L.v);
    T* Qs = reinterpret_cast<T*>(smem + L.q);
    T* dOs = reinterpret_cast<T*>(smem + L.dO);
    float* PdS = reinterpret_cast<float*>(smem + L.pds);  // P_ij, then dS_ij (row stride L.lds)
    float* lse_log2 = reinterpret_cast<float*>(smem + L.lse);
    float* D_row = reinterpret_cast<float*>(smem + L.D);
    float* dK_acc = reinterpret_cast<float*>(smem + L.dk);  // [Bc][D]
    float* dV_acc = reinterpret_cast<float*>(smem + L.dv);  // [Bc][D]

    const long long q_head = static_cast<long long>(bh) * p.N;    // first row of this head in Q, dO, LSE, D
    const long long kv_head = static_cast<long long>(bh) * p.Nk;  // first row of this head in K, V, dK, dV
    const T* Qg = static_cast<const T*>(p.Q) + q_head * D;
    const T* dOg = static_cast<const T*>(p.dO) + q_head * D;
    const T* Kg = static_cast<const T*>(p.K) + kv_head * D;
    const T* Vg = static_cast<const T*>(p.V) + kv_head * D;

    // K_j, V_j once (all Bc rows: those past Nk zero-filled); dK_j = dV_j = 0.
    load_tile<T, D>(Ks, L.ldk, Kg, k0, p.Bc, kv_valid);
    load_tile<T, D>(Vs, L.ldk, Vg, k0, p.Bc, kv_valid);
    for (int x = 4 * tid; x < p.Bc * D; x += 4 * kFlashThreads) {
        *reinterpret_cast<float4*>(dK_acc + x) = make_float4(0.f, 0.f, 0.f, 0.f);
        *reinterpret_cast<float4*>(dV_acc + x) = make_float4(0.f, 0.f, 0.f, 0.f);
    }

    // Phase-1 lane layout: rows rg + 8i, keys kw0 + kg + 4j (clamped inside the tile: with Br or Bc
    // below 64 the extra lanes compute duplicates, never stored).
    const int rg = lane >> 2;
    const int kg = lane & 3;
    int row_off[kRows1];  // element offsets of the lane's rows in the Q and dO tiles
    int key_off[kKeys1];  // element offsets of the lane's keys in the K and V tiles
#pragma unroll
    for (int i = 0; i < kRows1; ++i) row_off[i] = imin(rg + 8 * i, p.Br - 1) * L.ldq;
#pragma unroll
    for (int j = 0; j < kKeys1; ++j) key_off[j] = (kw0 + imin(kg + 4 * j, KW - 1)) * L.ldk;

    const int diag = p.Nk - p.N;  // key k is visible to query q iff k <= q + diag
    const int n_q_tiles = ceil_div(p.N, p.Br);
    // Causal: the first Q tile with a row that sees key k0 (the one holding row k0 - diag); every later
    // tile sees it too.
    const int first_q_tile = p.causal != 0 ? imax(0, k0 - diag) / p.Br : 0;

    for (int qt = first_q_tile; qt < n_q_tiles; ++qt) {
        const int q0 = qt * p.Br;
        const int q_rows = imin(p.Br, p.N - q0);  // rows of this tile inside the sequence

        // ---- load Q_i, dO_i, LSE_i, D_i ----
        load_tile<T, D>(Qs, L.ldq, Qg, q0, p.Br, q_rows);
        load_tile<T, D>(dOs, L.ldq, dOg, q0, p.Br, q_rows);
        for (int r = tid; r < p.Br; r += kFlashThreads) {
            float l2 = INFINITY;  // P = exp2(s - inf) = 0: rows past N and rows that see no key
            float dr = 0.f;
            if (r < q_rows) {
                const float lse = p.lse[q_head + q0 + r];
                if (lse > -INFINITY) l2 = lse * kLog2e;
                dr = p.D[q_head + q0 + r];
            }
            lse_log2[r] = l2;
            D_row[r] = dr;
        }
        __syncthreads();

        // ---- phase 1: S, P, dP, dS for the warp's keys ----
        ScoreMask mask;
        mask.q0 = q0;
        mask.k0 = k0;
        mask.kv_valid = kv_valid;
        mask.diag = diag;
        mask.causal = p.causal != 0;
        mask.active = kv_valid < p.Bc || (p.causal != 0 && k0 + kv_valid - 1 > q0 + diag);  // crosses it

        float pr[kRows1][kKeys1];  // S, then P
        float ds[kRows1][kKeys1];  // dP, then dS
        dot_rows<T, D>(pr, Qs, row_off, Ks, key_off);  // S = Q_i K_j^T
#pragma unroll
        for (int i = 0; i < kRows1; ++i) {
            const int r = rg + 8 * i;
            const float l2 = lse_log2[imin(r, p.Br - 1)];
#pragma unroll
            for (int j = 0; j < kKeys1; ++j) {
                const int c = kw0 + kg + 4 * j;
                float pv = 0.f;
                if (!mask.active || mask.visible(r, c)) pv = round_through<T>(exp2f(pr[i][j] * p.scale_log2 - l2));
                pr[i][j] = pv;
                if (r < p.Br && kg + 4 * j < KW) PdS[r * L.lds + c] = pv;
            }
        }
        dot_rows<T, D>(ds, dOs, row_off, Vs, key_off);  // dP = dO_i V_j^T
#pragma unroll
        for (int i = 0; i < kRows1; ++i) {
            const float dr = D_row[imin(rg + 8 * i, p.Br - 1)];
#pragma unroll
            for (int j = 0; j < kKeys1; ++j) ds[i][j] = round_through<T>(pr[i][j] * (ds[i][j] - dr));
        }
        __syncwarp();

        // ---- phase 2: dV_j += P^T dO_i, then dK_j += dS^T Q_i, the warp's keys ----
        accumulate_transposed<T, D>(dV_acc, PdS, L.lds, kw0, KW, dOs, L.ldq, q_rows);
        __syncwarp();  // the warp's lanes are done with its P columns
#pragma unroll
        for (int i = 0; i < kRows1; ++i) {
            const int r = rg + 8 * i;
#pragma unroll
            for (int j = 0; j < kKeys1; ++j) {
                if (r < p.Br && kg + 4 * j < KW) PdS[r * L.lds + kw0 + kg + 4 * j] = ds[i][j];
            }
        }
        __syncwarp();
        accumulate_transposed<T, D>(dK_acc, PdS, L.lds, kw0, KW, Qs, L.ldq, q_rows);
        __syncthreads();  // every warp's dS columns in place

        // ---- phase 3: dq_acc_i += scale * dS K_j, the warp's rows ----
        const int w_rows = imin(WR, q_rows - wr0);  // rows of this warp inside the sequence
        if (w_rows > 0) {                           // uniform per warp
            float o[kRows23][D / 8];
#pragma unroll
            for (int i = 0; i < kRows23; ++i) {
#pragma unroll
                for (int c = 0; c < D / 8; ++c) o[i][c] = 0.f;
            }
            // Keys past kv_valid have dS = 0 and zero K rows: the sum stops at the first multiple of 4.
            pv_accumulate<T, D, kRows23>(o, PdS + wr0 * L.lds, L.lds, WR, Ks, L.ldk, 0, round_up(kv_valid, 4));
            const int lr = lane >> 3;
            const int lc = lane & 7;
            float* dq = p.dq_acc + (q_head + q0 + wr0) * D + lc * 4;
#pragma unroll
            for (int i = 0; i < kRows23; ++i) {
                const int r = lr + 4 * i;
                if (r < w_rows) {
#pragma unroll
                    for (int jj = 0; jj < D / 32; ++jj) {
                        atomic_add4(dq + static_cast<long long>(r) * D + 32 * jj,
                                    make_float4(o[i][4 * jj + 0] * p.scale, o[i][4 * jj + 1] * p.scale,
                                                o[i][4 * jj + 2] * p.scale, o[i][4 * jj + 3] * p.scale));
                    }
                }
            }
        }
    }

    // ---- epilogue: dK_j = scale * dK_j and dV_j, written once (keys inside the sequence) ----
    __syncthreads();  // every warp's accumulator rows final (and the zeroing done, if no Q tile was visited)
    T* dKg = static_cast<T*>(p.dK) + (kv_head + k0) * D;
    T* dVg = static_cast<T*>(p.dV) + (kv_head + k0) * D;
    for (int x = 4 * tid; x < kv_valid * D; x += 4 * kFlashThreads) {
        const float4 dk = *reinterpret_cast<const float4*>(dK_acc + x);
        st4(dKg + x, make_float4(dk.x * p.scale, dk.y * p.scale, dk.z * p.scale, dk.w * p.scale));
        st4(dVg + x, *reinterpret_cast<const float4*>(dV_acc + x));
    }
}

bool fa2_bwd_tile_ok(int t) { return t == 16 || t == 32 || t == kMaxTile; }

CudaKernelLaunch launch_fa2_backward(const BackwardArgs& a, cudaStream_t stream) {
    if (!fa2_bwd_tile_ok(a.Br) || !fa2_bwd_tile_ok(a.Bc)) {
        throw std::invalid_argument("fa2_bwd: tile " + std::to_string(a.Br) + "x" + std::to_string(a.Bc) +
                                    " unsupported: Br and Bc must be 16, 32 or 64");
    }
    if (a.Q == nullptr || a.K == nullptr || a.V == nullptr || a.dO == nullptr || a.lse == nullptr || a.D == nullptr ||
        a.dq_acc == nullptr || a.dK == nullptr || a.dV == nullptr) {
        throw std::invalid_argument("fa2_bwd: Q, K, V, dO, LSE, D, dQ_acc, dK and dV buffers are required");
    }
    CudaKernelLaunch info;
    info.name = "fa2_backward";
    info.block_threads = kFlashThreads;
    info.Br = a.Br;
    info.Bc = a.Bc;
    const dim3 grid(static_cast<unsigned>(ceil_div(a.Nk, a.Bc)), static_cast<unsigned>(a.BH), 1);
    info.grid = {grid.x, grid.y, grid.z};
    Fa2BwdParams p{};
    p.Q = a.Q;
    p.K = a.K;
    p.V = a.V;
    p.dO = a.dO;
    p.lse = a.lse;
    p.D = a.D;
    p.dq_acc = a.dq_acc;
    p.dK = a.dK;
    p.dV = a.dV;
    p.N = a.N;
    p.Nk = a.Nk;
    p.Br = a.Br;
    p.Bc = a.Bc;
    p.causal = a.causal ? 1 : 0;
    p.scale = a.scale;
    p.scale_log2 = static_cast<float>(static_cast<double>(a.scale) * 1.4426950408889634);
    with_dtype(a.dtype, [&](auto tag) {
        using T = decltype(tag);
        with_head_dim(a.d, [&](auto dc) {
            constexpr int D = decltype(dc)::value;
            info.dynamic_smem_bytes = fa2_bwd_smem_layout(a.Br, a.Bc, D, static_cast<int>(sizeof(T))).total;
            info.registers_per_thread = launch_kernel("fa2_backward", fa2_backward_kernel<T, D>, grid,
                                                      dim3(kFlashThreads), info.dynamic_smem_bytes, stream, p);
        });
    });
    return info;
}

// The launch table's entry for "fa2_bwd" (kernels/launchers.hpp): tiles by fa2_bwd_tiles
// (kernels/tile_rules.hpp); the preprocessing and the dQ conversion take Br rows per block.
CudaLaunchInfo run_fa2_bwd(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    BackwardArgs a = backward_args(p, t, "fa2_bwd");
    const TileChoice tiles = fa2_bwd_tiles(p.d, p.dtype, device_smem_per_block());
    a.Br = tiles.Br;
    a.Bc = tiles.Bc;
    CudaLaunchInfo info;
    info.kernels.push_back(launch_fa2_bwd_preprocess(a, a.Br, stream));
    info.kernels.push_back(launch_fa2_backward(a, stream));
    info.kernels.push_back(launch_fa2_bwd_convert_dq(a, a.Br, stream));
    return info;
}
FASIM_REGISTER_KERNEL("fa2_bwd", run_fa2_bwd, fa2_bwd_tiles);

}  // namespace

}  // namespace fasim::cuda_detail
