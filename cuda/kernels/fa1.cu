// FlashAttention-1 forward (Dao et al. 2022, Algorithm 1), on the CUDA cores: fp32 FMAs, no tensor cores.
//
// What it adds over tiled_two_pass.cu: one pass. The online softmax keeps a running row max m and
// row sum l and rescales the partial output, so each K/V tile is loaded once; the price is that O, l
// and m live in global memory and are read and rewritten for every (Q tile, K/V tile) pair.
//   init kernel: O = 0, l = 0, m = -inf in global memory (line 2 of the paper).
//   main kernel: grid = B*H blocks (one per batch*head), block = 128 threads = 4 warps.
//     for each K/V tile j (Bc rows):  load K_j, V_j into shared memory                   (lines 5-6)
//       for each Q tile i (Br rows):  load Q_i; read O_i, l_i, m_i from global           (lines 7-8)
//         S = Q_i K_j^T; m~ = rowmax S; P~ = exp(S - m~); l~ = rowsum P~                  (lines 9-10)
//         m_new = max(m_i, m~); l_new = e^(m_i - m_new) l_i + e^(m~ - m_new) l~           (line 11)
//         O_i = (l_i e^(m_i - m_new) O_i + e^(m~ - m_new) P~ V_j) / l_new -> global        (line 12)
//         l_i = l_new, m_i = m_new -> global                                             (line 13)
//   Causal: (i, j) pairs whose tile lies entirely above the diagonal are skipped (O_i, l_i, m_i not
//   touched); pairs crossing it are masked element-wise.
//   Warps split K ("split-K"): warp w owns a quarter of the K/V tile's rows (quarters start at
//   multiples of 4; the last warp takes the rest). Each warp computes S for its keys, its partial row
//   max, its P~ and partial row sums, and its partial product P~_w V_w; partial maxima, sums and
//   products are exchanged and summed through shared memory with __syncthreads.
//   The Q tile is processed in chunks of 16 rows so that the four partial products (4 x 16 x d fp32)
//   fit in shared memory next to the K, V and Q tiles.
// Tiles (host, fa1_tiles): Bc = ceil(M / 4d), Br = min(Bc, d), M = shared memory per block in elements
// of the storage dtype; floor(M / 4d) when the kernel's shared memory with the ceiling does not fit.
//
// Where things live (smem_layouts.hpp, Fa1SmemLayout):
//   registers      per lane: S micro-tile (4 rows x up to 4 keys) while scoring, partial O micro-tile
//                  (4 rows x d/8 columns) while multiplying by V
//   shared memory  K_j, V_j, Q_i tiles (storage dtype); S/P of a 16-row chunk (fp32), reused for the
//                  four partial P~V products (fp32); partial row max/sum per warp; line-12 factors
//   global         running O_i, m_i, l_i (fp32, m in natural-log units), read and written every (i, j).
//                  With fp16/bf16 storage the running O_i is a separate fp32 buffer (o_acc, FlashAttention-1's
//                  o_tmp): rounding it to 16 bits on each of its Tc round trips compounds the error (bf16,
//                  N=8192: 1.2x over the 2x-naive bound). The last K/V tile a Q tile sees writes O_i in the
//                  storage dtype to O. fp32 storage accumulates in O itself.
//
// Run:  build/cuda/cuda-check --algo fa1
#include <cmath>

#include "common/dispatch.hpp"
#include "common/launch.cuh"
#include "kernels/flash_common.cuh"
#include "kernels/launchers.hpp"
#include "kernels/smem_layouts.hpp"

namespace fasim::cuda_detail {

namespace {

// Zeroes the running O (fp32) and, with a separate accumulator, the first `hidden_rows` rows of every
// head of O: causal masking hides every key from them, so the main kernel never writes them.
template <typename T>
__global__ void __launch_bounds__(256) fa1_init_kernel(float* o_acc, T* O, float* m, float* l, long long o_elems,
                                                       long long rows, int N, int d, int hidden_rows) {
    const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
    const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    for (long long i = tid; i < o_elems; i += stride) o_acc[i] = 0.f;
    if (hidden_rows > 0 && static_cast<void*>(O) != static_cast<void*>(o_acc)) {
        const long long head_elems = static_cast<long long>(hidden_rows) * d;
        for (long long i = tid; i < rows / N * head_elems; i += stride) {
            O[(i / head_elems) * static_cast<long long>(N) * d + i % head_elems] = from_f<T>(0.f);
        }
    }
    for (long long i = tid; i < rows; i += stride) {
        m[i] = -INFINITY;
        l[i] = 0.f;
    }
}

struct Fa1Params {
    const void* Q;
    const void* K;
    const void* V;
    void* O;
    float* o_acc;  // running O in fp32 (== O for fp32 storage)
    float* m;
    float* l;
    int N, Nk, Br, Bc;
    int causal;
    float scale_log2;
};

template <typename T, int D>
__global__ void __launch_bounds__(kFlashThreads) fa1_forward_kernel(Fa1Params p) {
    constexpr int RC = kFa1RowChunk;  // rows per chunk
    constexpr int TM = RC / 4;        // rows per lane
    const int tid = static_cast<int>(threadIdx.x);
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const int lr = lane >> 3;
    const int lc = lane & 7;
    const int bh = static_cast<int>(blockIdx.x);

    const Fa1SmemLayout L = fa1_smem_layout(p.Br, p.Bc, D, static_cast<int>(sizeof(T)));
    unsigned char* smem = dynamic_smem();
    T* Ks = reinterpret_cast<T*>(smem + L.k);
    T* Vs = reinterpret_cast<T*>(smem + L.v);
    T* Qs = reinterpret_cast<T*>(smem + L.q);
    float* U = reinterpret_cast<float*>(smem + L.u);
    float* red_m = reinterpret_cast<float*>(smem + L.red_m);
    float* red_l = reinterpret_cast<float*>(smem + L.red_l);
    float* coef_a = reinterpret_cast<float*>(smem + L.coef_a);
    float* coef_b = reinterpret_cast<float*>(smem + L.coef_b);

    // This warp's quarter of the K/V tile: columns [kb, ke), both multiples of 4.
    const int kb = ((warp * p.Bc) / 4) & ~3;
    const int ke = warp == kFlashWarps - 1 ? L.kv_rows : ((((warp + 1) * p.Bc) / 4) & ~3);

    const T* Qg = static_cast<const T*>(p.Q) + static_cast<long long>(bh) * p.N * D;
    const T* Kg = static_cast<const T*>(p.K) + static_cast<long long>(bh) * p.Nk * D;
    const T* Vg = static_cast<const T*>(p.V) + static_cast<long long>(bh) * p.Nk * D;
    T* Og = static_cast<T*>(p.O) + static_cast<long long>(bh) * p.N * D;
    float* Oacc = p.o_acc + static_cast<long long>(bh) * p.N * D;
    float* mg = p.m + static_cast<long long>(bh) * p.N;
    float* lg = p.l + static_cast<long long>(bh) * p.N;

    const int diag = p.Nk - p.N;
    const int Tc = ceil_div(p.Nk, p.Bc);
    const int Tr = ceil_div(p.N, p.Br);

    for (int j = 0; j < Tc; ++j) {  // outer loop: K/V tiles
        const int k0 = j * p.Bc;
        const int kv_valid = imin(p.Bc, p.Nk - k0);
        __syncthreads();  // nobody still reads the previous K_j, V_j
        load_tile<T, D>(Ks, L.ldk, Kg, k0, L.kv_rows, kv_valid);
        load_tile<T, D>(Vs, L.ldv, Vg, k0, L.kv_rows, kv_valid);

        for (int i = 0; i < Tr; ++i) {  // inner loop: Q tiles
            const int q0 = i * p.Br;
            const int q_rows = imin(p.Br, p.N - q0);
            if (p.causal != 0 && q0 + q_rows - 1 + diag < k0) continue;  // tile above the diagonal: skipped
            // The last K/V tile this Q tile sees writes O_i in the storage dtype; earlier ones the fp32 O_acc.
            const int j_last = p.causal != 0 ? imin(Tc - 1, (q0 + q_rows - 1 + diag) / p.Bc) : Tc - 1;
            const bool final_write = j == j_last;
            ScoreMask mask;
            mask.k0 = k0;
            mask.kv_valid = kv_valid;
            mask.diag = diag;
            mask.causal = p.causal != 0;
            mask.active = kv_valid < L.kv_rows || (p.causal != 0 && k0 + L.kv_rows - 1 > q0 + diag);

            __syncthreads();  // nobody still reads the previous Q_i (K_j, V_j loads also complete here)
            load_tile<T, D>(Qs, L.ldq, Qg, q0, q_rows, q_rows);
            __syncthreads();

            for (int rc0 = 0; rc0 < q_rows; rc0 += RC) {
                const int nr = imin(RC, q_rows - rc0);
                mask.q0 = q0 + rc0;

                // 1. S for this warp's keys: U[r][kb..ke), r < nr.
                if (ke > kb) {
                    compute_scores<T, D, TM>(Qs + rc0 * L.ldq, L.ldq, nr, Ks, L.ldk, L.kv_rows, kb, ke, U, L.lds,
                                             p.scale_log2, mask);
                }
                __syncwarp();

                // 2. partial row max over this warp's keys; two lanes per row (halves interleaved by float4).
                const int r = lane & 15;
                const int half = lane >> 4;
                float mx = -INFINITY;
                if (r < nr) {
                    for (int c = kb + 4 * half; c < ke; c += 8) {
                        mx = fmaxf(mx, max4(*reinterpret_cast<const float4*>(U + r * L.lds + c)));
                    }
                }
                mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 16));
                if (half == 0) red_m[warp * RC + r] = mx;
                __syncthreads();

                // 3. tile row max m~ (over the four warps); P~ = exp(S - m~) on this warp's keys; partial sums.
                const float mt = fmaxf(fmaxf(red_m[r], red_m[RC + r]), fmaxf(red_m[2 * RC + r], red_m[3 * RC + r]));
                const float m_use = mt == -INFINITY ? 0.f : mt;
                float sum = 0.f;
                if (r < nr) {
                    for (int c = kb + 4 * half; c < ke; c += 8) {
                        float4* sp = reinterpret_cast<float4*>(U + r * L.lds + c);
                        const float4 s = *sp;
                        const float4 pr = make_float4(exp2f(s.x - m_use), exp2f(s.y - m_use), exp2f(s.z - m_use),
                                                      exp2f(s.w - m_use));
                        sum += (pr.x + pr.y) + (pr.z + pr.w);
                        *sp = make_float4(round_through<T>(pr.x), round_through<T>(pr.y), round_through<T>(pr.z),
                                          round_through<T>(pr.w));
                    }
                }
                sum += __shfl_xor_sync(kFullMask, sum, 16);
                if (half == 0) red_l[warp * RC + r] = sum;
                __syncwarp();

                // 4. partial product P~_w V_w over this warp's keys (registers).
                float o[TM][D / 8];
#pragma unroll
                for (int ii = 0; ii < TM; ++ii) {
#pragma unroll
                    for (int c = 0; c < D / 8; ++c) o[ii][c] = 0.f;
                }
                pv_accumulate<T, D, TM>(o, U, L.lds, nr, Vs, L.ldv, kb, ke);
                __syncthreads();  // every warp is done reading P~ from U: U now takes the partial products

                // 5. partial products -> U[w][16][d]; row statistics (line 11) for the chunk's rows.
#pragma unroll
                for (int ii = 0; ii < TM; ++ii) {
                    const int rr = lr + 4 * ii;  // < RC
#pragma unroll
                    for (int jj = 0; jj < D / 32; ++jj) {
                        *reinterpret_cast<float4*>(U + (warp * RC + rr) * D + lc * 4 + 32 * jj) =
                            make_float4(o[ii][4 * jj], o[ii][4 * jj + 1], o[ii][4 * jj + 2], o[ii][4 * jj + 3]);
                    }
                }
                if (tid < nr) {
                    const int qi = q0 + rc0 + tid;
                    const float m_old = mg[qi] * kLog2e;  // -inf stays -inf
                    const float l_old = lg[qi];
                    const float m_t = fmaxf(fmaxf(red_m[tid], red_m[RC + tid]), fmaxf(red_m[2 * RC + tid], red_m[3 * RC + tid]));
                    const float l_t = (red_l[tid] + red_l[RC + tid]) + (red_l[2 * RC + tid] + red_l[3 * RC + tid]);
                    const float m_new = fmaxf(m_old, m_t);
                    const float mu = m_new == -INFINITY ? 0.f : m_new;
                    const float e_old = exp2f(m_old - mu);  // 0 when m_old = -inf
                    const float e_t = exp2f(m_t - mu);      // 0 when nothing in this tile is visible
                    const float l_new = e_old * l_old + e_t * l_t;
                    coef_a[tid] = l_new > 0.f ? e_old * l_old / l_new : 0.f;
                    coef_b[tid] = l_new > 0.f ? e_t / l_new : 0.f;
                    mg[qi] = m_new == -INFINITY ? -INFINITY : m_new * kLn2;
                    lg[qi] = l_new;
                }
                __syncthreads();

                // 6. O_i rows = a * O_i + b * sum_w (P~_w V_w)   (line 12), read and written in global memory.
                for (int e = tid * 4; e < nr * D; e += kFlashThreads * 4) {
                    const int rr = e / D;
                    const int c = e - rr * D;
                    const float4 s0 = *reinterpret_cast<const float4*>(U + (0 * RC + rr) * D + c);
                    const float4 s1 = *reinterpret_cast<const float4*>(U + (1 * RC + rr) * D + c);
                    const float4 s2 = *reinterpret_cast<const float4*>(U + (2 * RC + rr) * D + c);
                    const float4 s3 = *reinterpret_cast<const float4*>(U + (3 * RC + rr) * D + c);
                    const long long off = static_cast<long long>(q0 + rc0 + rr) * D + c;
                    const float4 old = ldcg4(Oacc + off);
                    const float a = coef_a[rr];
                    const float b = coef_b[rr];
                    const float4 o_new = make_float4(a * old.x + b * ((s0.x + s1.x) + (s2.x + s3.x)),
                                                     a * old.y + b * ((s0.y + s1.y) + (s2.y + s3.y)),
                                                     a * old.z + b * ((s0.z + s1.z) + (s2.z + s3.z)),
                                                     a * old.w + b * ((s0.w + s1.w) + (s2.w + s3.w)));
                    if (final_write) st4(Og + off, o_new);
                    else st4(Oacc + off, o_new);
                }
                __syncthreads();  // U, red_m, red_l, coef_* are reused by the next chunk
            }
        }
    }
}

}  // namespace

CudaKernelLaunch launch_fa1_init(const FlashArgs& a, float* o_acc, cudaStream_t stream) {
    // Rows of each head that causal masking hides from every key: the leading Q tiles whose last row
    // sees no key. The main kernel never visits them, so the init kernel writes their O.
    int hidden_rows = 0;
    if (a.causal) {
        for (int q0 = 0; q0 < a.N && q0 + imin(a.Br, a.N - q0) - 1 + (a.Nk - a.N) < 0; q0 += a.Br) {
            hidden_rows = imin(a.N, q0 + a.Br);
        }
    }
    CudaKernelLaunch init;
    const long long rows = static_cast<long long>(a.BH) * a.N;
    const long long o_elems = rows * a.d;
    init.name = "fa1_init";
    init.block_threads = 256;
    const long long init_blocks = (o_elems + 255) / 256;
    const dim3 init_grid(static_cast<unsigned>(init_blocks < 65536 ? init_blocks : 65536));
    init.grid = {init_grid.x, 1, 1};
    with_dtype(a.dtype, [&](auto tag) {
        using T = decltype(tag);
        launch_kernel("fa1_init", fa1_init_kernel<T>, init_grid, dim3(256), 0, stream, o_acc, static_cast<T*>(a.O),
                      a.m, a.l, o_elems, rows, a.N, a.d, hidden_rows);
    });
    return init;
}

std::vector<CudaKernelLaunch> launch_fa1(const FlashArgs& a, cudaStream_t stream) {
    if (a.Br <= 0 || a.Bc <= 0) {
        throw std::invalid_argument("fa1: tile " + std::to_string(a.Br) + "x" + std::to_string(a.Bc) +
                                    " unsupported: Br and Bc must be positive");
    }
    if (a.O == nullptr || a.m == nullptr || a.l == nullptr || a.Q == nullptr || a.K == nullptr || a.V == nullptr) {
        throw std::invalid_argument("fa1: Q, K, V, O, m and l buffers are required");
    }
    if (a.dtype != DType::fp32 && a.o_acc == nullptr) {
        throw std::invalid_argument("fa1: fp16/bf16 storage needs the fp32 running-O buffer o_acc (B*H*N*d floats)");
    }
    float* o_acc = a.dtype == DType::fp32 ? static_cast<float*>(a.O) : a.o_acc;
    std::vector<CudaKernelLaunch> infos(2);
    infos[0] = launch_fa1_init(a, o_acc, stream);
    CudaKernelLaunch& main = infos[1];
    main.name = "fa1_forward";
    main.block_threads = kFlashThreads;
    main.Br = a.Br;
    main.Bc = a.Bc;
    const dim3 grid(static_cast<unsigned>(a.BH), 1, 1);
    main.grid = {grid.x, grid.y, grid.z};
    Fa1Params p{a.Q, a.K, a.V, a.O, o_acc, a.m, a.l, a.N, a.Nk, a.Br, a.Bc, a.causal ? 1 : 0,
                static_cast<float>(static_cast<double>(a.scale) * 1.4426950408889634)};
    with_dtype(a.dtype, [&](auto tag) {
        using T = decltype(tag);
        with_head_dim(a.d, [&](auto dc) {
            constexpr int D = decltype(dc)::value;
            main.dynamic_smem_bytes = fa1_smem_layout(a.Br, a.Bc, D, static_cast<int>(sizeof(T))).total;
            main.registers_per_thread = launch_kernel("fa1_forward", fa1_forward_kernel<T, D>, grid, dim3(kFlashThreads),
                                                      main.dynamic_smem_bytes, stream, p);
        });
    });
    return infos;
}

namespace {
// The launch table's entry for "fa1" (kernels/launchers.hpp): tiles by fa1_tiles (kernels/tile_rules.hpp).
CudaLaunchInfo run_fa1(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    FlashArgs f = flash_args(p, t, "fa1");
    set_fa1_state(f, p, t, "fa1");
    const TileChoice tiles = fa1_tiles(p.d, p.dtype, device_smem_per_block());
    f.Br = tiles.Br;
    f.Bc = tiles.Bc;
    return {launch_fa1(f, stream)};
}
FASIM_REGISTER_KERNEL("fa1", run_fa1, fa1_tiles);
}  // namespace

}  // namespace fasim::cuda_detail
