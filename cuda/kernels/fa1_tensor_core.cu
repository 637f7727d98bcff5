// FlashAttention-1 forward (Dao et al. 2022, Algorithm 1) on the tensor cores: fp16/bf16 products
// with mma.sync.m16n8k16, fp32 accumulation. sm_80+; storage fp16 or bf16, d 64 or 128.
//
// What it adds over fa1.cu (same algorithm, same results up to rounding), following the structure of
// FlashAttention-1's own CUDA code:
//   - Q K^T and P V run on the tensor cores (mma_fragments.cuh), like fa2_tensor_core.cu;
//   - a Q tile is one m16 row block (Br = 16) shared by the 4 warps, and a K/V tile is wide
//     (Bc = 256 keys at d = 64, 128 at d = 128): FlashAttention-1's 16-row "step" over a 4-warp split
//     of the keys;
//   - several blocks per batch*head when batch*heads alone would leave SMs idle (FlashAttention-1's
//     num_splits): block (s, bh) visits the Q tiles i = s, s + q_splits, ... (round-robin, so causal
//     work is balanced) and loads every K/V tile one of them sees.
// What it keeps from FA1, and what FlashAttention-2 then removed (compare fa2_tensor_core.cu):
//   - split-K warps: warp w owns keys [w Bc/4, (w+1) Bc/4) of the K/V tile, so the row maxima, the
//     row sums and the four partial products P_w V_w (16 x d fp32 each) are exchanged and summed
//     through shared memory, with three barriers per (Q tile, K/V tile) pair;
//   - the running O_i, l_i, m_i live in global memory (O_i in fp32, FlashAttention-1's o_tmp) and are
//     read and rewritten for every pair (lines 8, 12, 13), and O_i is normalised every time.
//
//   init kernel  O_acc = 0, l = 0, m = -inf (fa1.cu's, line 2)
//   main kernel  grid = (q_splits, B*H), block = 128 threads = 4 warps
//     for each K/V tile j that one of the block's Q tiles sees:  K_j, V_j -> shared (cp.async)
//       for each of the block's Q tiles i that sees tile j (Q_{i+q_splits} is prefetched meanwhile):
//         O_i, l_i, m_i -> registers (issued first, used last)
//         warp w: S_w = Q_i K_w^T (16 x Bc/4); mask; partial row max -> shared       barrier
//                 m~ = max over the 4 warps; P_w = exp(S_w - m~); partial row sums -> shared
//                 U_w = round(P_w) V_w (16 x d fp32, registers) -> shared            barrier
//         all:    m_new, l_new (line 11); O_i = (l_i e^(m_i-m_new) O_i + e^(m~-m_new) sum_w U_w) / l_new
//                 -> O_acc (fp32), or O (storage dtype) on the last K/V tile the Q tile sees; l_i, m_i
//
// Where things live:
//   registers      Q fragments (d/4 regs), S/P (Bc/8 floats), the warp's partial product (d/2 floats),
//                  the thread's share of O_i (d/8 floats)
//   shared memory  K_j, V_j (Bc rows each), Q_i (2 buffers x 16 rows), storage dtype, rows padded by
//                  8 elements as in fa2_tensor_core.cu; the partial products (4 x 16 x (d + 8) fp32);
//                  partial row maxima and sums (4 x 16 fp32 each)
//   global         Q read once per (Q tile, K/V tile) pair, K and V once per block; O_acc, l, m read and
//                  written once per pair; O written once
//
// Run:  build/cuda/cuda-check --algo fa1_tc            (fp32 problems are skipped: use --algo fa1)
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/launch.cuh"
#include "kernels/flash_common.cuh"
#include "kernels/launchers.hpp"
#include "kernels/mma_fragments.cuh"
#include "kernels/smem_layouts.hpp"
#include "kernels/tile_rules.hpp"
#include "kernels/warp_tile_products.cuh"

namespace fasim::cuda_detail {

namespace {

constexpr int kT1Br = tile_rules::kFa1TcBr;  // query rows per Q tile: one m16 row block, shared by the 4 warps
constexpr int kT1Pad = 8;   // padding per shared-memory row, elements (16 bytes), as in fa2_tc
constexpr int kT1UPad = 8;  // padding per partial-product row, floats: float2 stores of 4 rows hit 32 banks

// Keys per K/V tile: FlashAttention-1's tile widths (256 at d = 64, 128 at d = 128, tile_rules.hpp), so
// each warp scores 64 or 32 keys.
using tile_rules::fa1_tc_bc;

struct Fa1TcSmem {
    std::size_t k, v, q, u, red_m, red_l, total;
};
// Offsets in bytes: K_j, V_j, Q (2 buffers), partial products, partial row maxima, partial row sums.
__host__ __device__ constexpr Fa1TcSmem fa1_tc_smem(int d, int elem_bytes) {
    const std::size_t row = static_cast<std::size_t>(d + kT1Pad) * static_cast<std::size_t>(elem_bytes);
    const std::size_t bc = static_cast<std::size_t>(fa1_tc_bc(d));
    Fa1TcSmem s{};
    s.k = 0;
    s.v = s.k + bc * row;
    s.q = s.v + bc * row;
    s.u = s.q + 2 * kT1Br * row;
    s.red_m = s.u + static_cast<std::size_t>(kFlashWarps * kT1Br * (d + kT1UPad)) * sizeof(float);
    s.red_l = s.red_m + kFlashWarps * kT1Br * sizeof(float);
    s.total = s.red_l + kFlashWarps * kT1Br * sizeof(float);
    return s;
}

struct Fa1TcParams {
    const void* Q;
    const void* K;
    const void* V;
    void* O;
    float* o_acc;  // running O, fp32
    float* m;      // natural-log units, as fa1.cu
    float* l;
    int N, Nk;
    int causal;
    float scale_log2;  // scale * log2(e)
};

template <typename T, int D>
__global__ void __launch_bounds__(kFlashThreads) fa1_tc_forward_kernel(Fa1TcParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    (void)p;  // built for sm_75 too but never launched there (the host refuses devices below 8.0)
    __trap();
#else
    constexpr int BC = fa1_tc_bc(D);
    constexpr int LD = D + kT1Pad;    // shared-memory row stride, elements
    constexpr int LDU = D + kT1UPad;  // partial-product row stride, floats
    constexpr int KW = BC / kFlashWarps;  // keys per warp
    constexpr int KS_D = D / 16;      // k-steps of S = Q K^T
    constexpr int NT_S = KW / 8;      // n-tiles of the warp's S
    constexpr int KS_KV = KW / 16;    // k-steps of U = P V
    constexpr int NT_O = D / 8;       // n-tiles of U
    constexpr int TPR = kFlashThreads / kT1Br;  // threads per row in the line-12 update (8)
    constexpr int CPT = D / TPR;                // O columns per thread there (d/8, float4 groups of 4)
    static_assert(CPT % 4 == 0 && KW % 16 == 0, "tile shapes");

    const int tid = static_cast<int>(threadIdx.x);
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const int g = lane >> 2;  // fragment rows g and g + 8
    const int t = lane & 3;   // fragment columns 2t, 2t + 1 of each 8
    const int split = static_cast<int>(blockIdx.x);
    const int q_splits = static_cast<int>(gridDim.x);
    const int bh = static_cast<int>(blockIdx.y);
    const int kw0 = warp * KW;  // the warp's first key in the K/V tile

    constexpr Fa1TcSmem L = fa1_tc_smem(D, static_cast<int>(sizeof(T)));
    unsigned char* smem = dynamic_smem();
    T* Ks = reinterpret_cast<T*>(smem + L.k);
    T* Vs = reinterpret_cast<T*>(smem + L.v);
    T* Qs = reinterpret_cast<T*>(smem + L.q);  // buffer b at Qs + b * kT1Br * LD
    float* U = reinterpret_cast<float*>(smem + L.u);
    float* red_m = reinterpret_cast<float*>(smem + L.red_m);
    float* red_l = reinterpret_cast<float*>(smem + L.red_l);

    const T* Qg = static_cast<const T*>(p.Q) + static_cast<long long>(bh) * p.N * D;
    const T* Kg = static_cast<const T*>(p.K) + static_cast<long long>(bh) * p.Nk * D;
    const T* Vg = static_cast<const T*>(p.V) + static_cast<long long>(bh) * p.Nk * D;
    T* Og = static_cast<T*>(p.O) + static_cast<long long>(bh) * p.N * D;
    float* Oacc = p.o_acc + static_cast<long long>(bh) * p.N * D;
    float* mg = p.m + static_cast<long long>(bh) * p.N;
    float* lg = p.l + static_cast<long long>(bh) * p.N;

    const int diag = p.Nk - p.N;  // key k visible to query q iff k <= q + diag
    const int Tc = ceil_div(p.Nk, BC);
    const int Tr = ceil_div(p.N, kT1Br);
    // Last key Q tile i's last row may see (causal); the tile sees K/V tile j iff this is >= j * BC.
    auto last_key = [&](int i) { return imin(p.N, (i + 1) * kT1Br) - 1 + diag; };
    // The block's first Q tile seeing K/V tile j (Tr when none): visibility grows with i.
    auto first_tile_seeing = [&](int k0) {
        int i = split;
        if (p.causal != 0) {
            while (i < Tr && last_key(i) < k0) i += q_splits;
        }
        return i;
    };

    // Line 12 work split: thread tid updates row ur, columns uc + 4 * (0 .. CPT/4) * TPR.
    const int ur = tid / TPR;
    const int uc = 4 * (tid % TPR);

    for (int j = 0; j < Tc; ++j) {  // outer loop: K/V tiles
        const int k0 = j * BC;
        const int i_first = first_tile_seeing(k0);
        if (i_first >= Tr) continue;  // none of this block's Q tiles sees tile j (block-uniform)
        const int kv_valid = imin(BC, p.Nk - k0);
        __syncthreads();  // nobody still reads the previous K_j, V_j, Q buffers or U
        load_tile_async<T, D, BC, LD, kFlashThreads>(Ks, Kg, k0, kv_valid);
        load_tile_async<T, D, BC, LD, kFlashThreads>(Vs, Vg, k0, kv_valid);
        load_tile_async<T, D, kT1Br, LD, kFlashThreads>(Qs, Qg, i_first * kT1Br, imin(kT1Br, p.N - i_first * kT1Br));
        cp_async_commit();

        int buf = 0;
        for (int i = i_first; i < Tr; i += q_splits, buf ^= 1) {  // inner loop: this block's Q tiles
            const int q0 = i * kT1Br;
            // Prefetch the block's next Q tile into the other buffer (its last reader finished before
            // the second barrier of the previous step).
            if (i + q_splits < Tr) {
                const int qn = q0 + q_splits * kT1Br;
                load_tile_async<T, D, kT1Br, LD, kFlashThreads>(Qs + (buf ^ 1) * kT1Br * LD, Qg, qn, imin(kT1Br, p.N - qn));
            }
            cp_async_commit();

            // O_i, m_i, l_i of this thread's row (lines 8): issued now, used after the products. Nothing
            // touches them before the third barrier (ncu: converting m to log2 units here made every warp
            // wait for the load at the top of the step).
            const int uq = q0 + ur;
            const bool urow_valid = uq < p.N;
            float4 o_old[CPT / 4];
            float m_old_ln = -INFINITY;  // natural-log units, as stored
            float l_old = 0.f;
            if (urow_valid) {
#pragma unroll
                for (int c = 0; c < CPT / 4; ++c) o_old[c] = ldcg4(Oacc + static_cast<long long>(uq) * D + uc + 4 * TPR * c);
                m_old_ln = __ldcg(mg + uq);
                l_old = __ldcg(lg + uq);
            }

            cp_async_wait<1>();  // Q_i (and K_j, V_j) have landed for this thread ...
            __syncthreads();     // ... and for every other thread

            // ---- S_w = Q_i K_w^T over the warp's KW keys (raw scores; the scale goes into the exponent).
            // Fragment layouts and ldmatrix addressing: mma_fragments.cuh, warp_tile_products.cuh.
            unsigned qf[KS_D][4];
            {
                const T* qrow = Qs + buf * kT1Br * LD + ((lane & 7) + 8 * ((lane >> 3) & 1)) * LD + 8 * (lane >> 4);
#pragma unroll
                for (int ks = 0; ks < KS_D; ++ks) ldmatrix_x4(qf[ks], qrow + 16 * ks);
            }
            float s[NT_S][4];
#pragma unroll
            for (int nt = 0; nt < NT_S; ++nt) {
#pragma unroll
                for (int e = 0; e < 4; ++e) s[nt][e] = 0.f;
            }
            qk_scores<T>(s, qf, Ks + (kw0 + (lane & 7) + 8 * (lane >> 4)) * LD + 8 * ((lane >> 3) & 1), LD);
            // Mask only where the warp's keys cross the diagonal or the end of K (warp-uniform).
            const int wk0 = k0 + kw0;
            if (wk0 + KW > p.Nk || (p.causal != 0 && wk0 + KW - 1 > q0 + diag)) {
#pragma unroll
                for (int nt = 0; nt < NT_S; ++nt) {
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int q = q0 + g + 8 * (e >> 1);
                        const int k = wk0 + 8 * nt + 2 * t + (e & 1);
                        if (k >= p.Nk || (p.causal != 0 && k > q + diag)) s[nt][e] = -INFINITY;
                    }
                }
            }

            // ---- partial row max over the warp's keys (log2 units), exchanged through shared memory.
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float mx = -INFINITY;
#pragma unroll
                for (int nt = 0; nt < NT_S; ++nt) mx = fmaxf(mx, fmaxf(s[nt][2 * h], s[nt][2 * h + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 2));
                if (t == 0) red_m[warp * kT1Br + g + 8 * h] = mx * p.scale_log2;
            }
            __syncthreads();

            // ---- m~ over the 4 warps; P_w = 2^(c s - m~); partial row sums -> shared (line 10).
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = g + 8 * h;
                const float mt = fmaxf(fmaxf(red_m[r], red_m[kT1Br + r]), fmaxf(red_m[2 * kT1Br + r], red_m[3 * kT1Br + r]));
                const float m_use = mt == -INFINITY ? 0.f : mt;  // nothing visible: P = 0, no NaN
                float sum = 0.f;
#pragma unroll
                for (int nt = 0; nt < NT_S; ++nt) {
                    s[nt][2 * h] = fast_exp2(fmaf(s[nt][2 * h], p.scale_log2, -m_use));
                    s[nt][2 * h + 1] = fast_exp2(fmaf(s[nt][2 * h + 1], p.scale_log2, -m_use));
                    sum += s[nt][2 * h] + s[nt][2 * h + 1];  // unrounded P, as fa1.cu sums it
                }
                sum += __shfl_xor_sync(kFullMask, sum, 1);
                sum += __shfl_xor_sync(kFullMask, sum, 2);
                if (t == 0) red_l[warp * kT1Br + r] = sum;
            }

            // ---- U_w = round(P_w) V_w: P's C fragments become the A fragments; V's rows are the
            // warp's keys.
            unsigned pf[KS_KV][4];
            p_fragments<T>(pf, s);
            float u[NT_O][4];
#pragma unroll
            for (int nt = 0; nt < NT_O; ++nt) {
#pragma unroll
                for (int e = 0; e < 4; ++e) u[nt][e] = 0.f;
            }
            pv_accumulate<T>(u, pf, Vs + (kw0 + (lane & 7) + 8 * ((lane >> 3) & 1)) * LD + 8 * (lane >> 4), LD);
            float* Uw = U + warp * kT1Br * LDU;
#pragma unroll
            for (int nt = 0; nt < NT_O; ++nt) {
                *reinterpret_cast<float2*>(Uw + g * LDU + 8 * nt + 2 * t) = make_float2(u[nt][0], u[nt][1]);
                *reinterpret_cast<float2*>(Uw + (g + 8) * LDU + 8 * nt + 2 * t) = make_float2(u[nt][2], u[nt][3]);
            }
            __syncthreads();

            // ---- lines 11-13 for row ur: the 8 threads of a row each compute its statistics (cheap)
            // and update their CPT columns of O_i.
            if (urow_valid) {
                const float m_t = fmaxf(fmaxf(red_m[ur], red_m[kT1Br + ur]), fmaxf(red_m[2 * kT1Br + ur], red_m[3 * kT1Br + ur]));
                const float l_t = (red_l[ur] + red_l[kT1Br + ur]) + (red_l[2 * kT1Br + ur] + red_l[3 * kT1Br + ur]);
                const float m_old = m_old_ln * kLog2e;  // -inf stays -inf
                const float m_new = fmaxf(m_old, m_t);
                const float mu = m_new == -INFINITY ? 0.f : m_new;
                const float e_old = fast_exp2(m_old - mu);  // 0 when m_old = -inf
                const float e_t = fast_exp2(m_t - mu);      // 0 when nothing in this tile is visible
                const float l_new = e_old * l_old + e_t * l_t;
                const float a = l_new > 0.f ? e_old * l_old / l_new : 0.f;
                const float b = l_new > 0.f ? e_t / l_new : 0.f;
                const int j_last = p.causal != 0 ? imin(Tc - 1, last_key(i) / BC) : Tc - 1;
#pragma unroll
                for (int c = 0; c < CPT / 4; ++c) {
                    const int col = uc + 4 * TPR * c;
                    float4 acc = *reinterpret_cast<const float4*>(U + ur * LDU + col);
#pragma unroll
                    for (int w = 1; w < kFlashWarps; ++w) {
                        const float4 x = *reinterpret_cast<const float4*>(U + (w * kT1Br + ur) * LDU + col);
                        acc = make_float4(acc.x + x.x, acc.y + x.y, acc.z + x.z, acc.w + x.w);
                    }
                    const float4 o_new = make_float4(a * o_old[c].x + b * acc.x, a * o_old[c].y + b * acc.y,
                                                     a * o_old[c].z + b * acc.z, a * o_old[c].w + b * acc.w);
                    const long long off = static_cast<long long>(uq) * D + col;
                    if (j == j_last) st4(Og + off, o_new);  // the last K/V tile this Q tile sees
                    else st4(Oacc + off, o_new);
                }
                if (tid % TPR == 0) {
                    mg[uq] = m_new == -INFINITY ? -INFINITY : m_new * kLn2;
                    lg[uq] = l_new;
                }
            }
            // The next step's first barrier orders these reads of U, red_m and red_l before any rewrite.
        }
        cp_async_wait<0>();  // only the (empty) last prefetch group can be in flight; say so
    }
#endif
}

template <typename T>
void launch_fa1_tc_main(const Fa1TcParams& p, const dim3& grid, CudaKernelLaunch& info, int d, cudaStream_t stream) {
    auto go = [&](auto kernel, auto dc) {
        constexpr int D = decltype(dc)::value;
        info.dynamic_smem_bytes = fa1_tc_smem(D, static_cast<int>(sizeof(T))).total;
        info.registers_per_thread =
            launch_kernel("fa1_tc_forward", kernel, grid, dim3(kFlashThreads), info.dynamic_smem_bytes, stream, p);
    };
    if (d == 64) go(fa1_tc_forward_kernel<T, 64>, std::integral_constant<int, 64>{});
    else go(fa1_tc_forward_kernel<T, 128>, std::integral_constant<int, 128>{});
}

// Blocks of this kernel one SM holds at once (registers, shared memory), for the split heuristic.
template <typename T>
int fa1_tc_blocks_per_sm(int d) {
    int blocks = 0;
    const std::size_t smem = fa1_tc_smem(d, static_cast<int>(sizeof(T))).total;
    if (d == 64) {
        ensure_dynamic_smem(reinterpret_cast<const void*>(fa1_tc_forward_kernel<T, 64>), smem);
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fa1_tc_forward_kernel<T, 64>, kFlashThreads, smem));
    } else {
        ensure_dynamic_smem(reinterpret_cast<const void*>(fa1_tc_forward_kernel<T, 128>), smem);
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fa1_tc_forward_kernel<T, 128>, kFlashThreads, smem));
    }
    return blocks;
}

}  // namespace

// What the catalog says this kernel has code for (kernels/kernel_catalog.cpp): a guard for callers that
// bypass run_attention.
std::string fa1_tc_unsupported_reason(DType dtype, int d) { return cuda_kernel("fa1_tc").unsupported(dtype, d, "--algo"); }

std::vector<CudaKernelLaunch> launch_fa1_tc(const FlashArgs& a, cudaStream_t stream) {
    const std::string unsupported = fa1_tc_unsupported_reason(a.dtype, a.d);
    if (!unsupported.empty()) throw std::invalid_argument(unsupported);
    if (a.O == nullptr || a.m == nullptr || a.l == nullptr || a.o_acc == nullptr || a.Q == nullptr || a.K == nullptr ||
        a.V == nullptr) {
        throw std::invalid_argument("fa1_tc: Q, K, V, O, m, l and the fp32 running-O buffer o_acc are required");
    }
    int device = 0, major = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    if (major < 8) {
        throw std::runtime_error("fa1_tc needs compute capability 8.0+ (mma.m16n8k16 bf16); use --algo fa1");
    }
    FlashArgs tiles = a;  // the init kernel's hidden rows are counted in Q tiles of 16
    tiles.Br = kT1Br;
    tiles.Bc = fa1_tc_bc(a.d);
    std::vector<CudaKernelLaunch> infos(2);
    infos[0] = launch_fa1_init(tiles, a.o_acc, stream);
    CudaKernelLaunch& main = infos[1];
    main.name = "fa1_tc_forward";
    main.block_threads = kFlashThreads;
    main.Br = tiles.Br;
    main.Bc = tiles.Bc;
    const int per_sm = a.dtype == DType::fp16 ? fa1_tc_blocks_per_sm<__half>(a.d) : fa1_tc_blocks_per_sm<__nv_bfloat16>(a.d);
    main.q_splits = tile_rules::fa1_tc_q_splits(a.BH, a.N, sms, per_sm);  // kernels/tile_rules.hpp
    const dim3 grid(static_cast<unsigned>(main.q_splits), static_cast<unsigned>(a.BH), 1);
    main.grid = {grid.x, grid.y, grid.z};
    const Fa1TcParams p{a.Q, a.K, a.V, a.O, a.o_acc, a.m, a.l, a.N, a.Nk, a.causal ? 1 : 0,
                        static_cast<float>(static_cast<double>(a.scale) * 1.4426950408889634)};
    if (a.dtype == DType::fp16) launch_fa1_tc_main<__half>(p, grid, main, a.d, stream);
    else launch_fa1_tc_main<__nv_bfloat16>(p, grid, main, a.d, stream);
    return infos;
}

namespace {
// The launch table's entry for "fa1_tc" (kernels/launchers.hpp): fixed tiles, no choice.
TileChoice fa1_tc_tiles(int d, DType dtype, std::size_t smem_per_block) {
    const std::size_t need = fa1_tc_smem(d, static_cast<int>(dtype_bytes(dtype))).total;
    if (need > smem_per_block)
        throw std::invalid_argument("fa1_tc: its " + std::to_string(need) + " B of shared memory at d = " + std::to_string(d) +
                                    " do not fit the device's " + std::to_string(smem_per_block) + " B per block");
    return {kT1Br, fa1_tc_bc(d), need};
}
CudaLaunchInfo run_fa1_tc(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    FlashArgs f = flash_args(p, t, "fa1_tc");
    set_fa1_state(f, p, t, "fa1_tc");
    return {launch_fa1_tc(f, stream)};
}
FASIM_REGISTER_KERNEL("fa1_tc", run_fa1_tc, fa1_tc_tiles);
}  // namespace

}  // namespace fasim::cuda_detail
