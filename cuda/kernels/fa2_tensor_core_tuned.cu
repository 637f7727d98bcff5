// FlashAttention-2 forward on the tensor cores, tuned: the third rung of the kernel ladder
// (fa2.cu -> fa2_tensor_core.cu -> this file -> fa2_hopper.cu). Same algorithm, instructions and
// results as fa2_tensor_core.cu (mma.sync.m16n8k16, fp32 accumulation, S and P in registers); what
// changes is how much each operand fetched from shared memory is used, and how far ahead the copies run:
//
//   - 128 query rows per block, 32 per warp (two m16 row blocks): every K or V fragment a warp loads
//     with ldmatrix feeds two mma.sync instead of one, so a warp issues half the ldmatrix per product
//     that fa2_tc does, and has two independent accumulator chains to hide the mma latency with;
//   - K and V both double-buffered: K_{j+1} is copied while S_j and its softmax are computed, V_{j+1}
//     while O += P V_j is; fa2_tc's single V buffer made every step wait for V_j once;
//   - K/V tiles of 64 keys at d = 128 and 128 at d = 64 (FlashAttention-2's own forward tiles): the
//     accumulators are S 32 x Bc and O 32 x d per warp, 192 fp32 registers at both head dims;
//   - Q is not held in registers (32 x 128 of it would not fit beside O): each k-step reloads the
//     warp's two Q fragments from shared memory, once for all the K fragments of that k-step;
//   - a whole K or V tile is copied with addresses each thread computes once (FullTileCopy: 8 cp.async
//     and a few instructions instead of ~120 of bounds checks and 64-bit address arithmetic per tile
//     at 255 registers); only a tile that runs past the end of K takes the checked copy;
//   - the lazy rescale (FlashAttention-4's): a warp moves its rows' running maxima, and rescales O and l,
//     only when some row's maximum grows by more than 2^8; otherwise P = exp2(s - m) with the old m
//     (at most 2^8) and the 64 (d = 64) or 128 (d = 128) multiplies of O per tile are skipped;
//   - causal: the heaviest Q tiles launch first (block x takes Q tile gridDim.x - 1 - x), and a warp
//     skips a K/V tile that all of its rows have masked out (it still takes part in the barriers).
// What each of these bought, measured on an H100 (cuda/results/2026-11-28-h100-tuned-variants): the copies
// +3-6%, the lazy rescale +2-8% (more at d = 64), the causal launch order and the skipped tiles +0-3%.
// Two blocks of 4 warps share an SM (shared memory 104 KB at d = 128, 92 KB at d = 64; at most 255
// registers per thread), as FlashAttention-2's kernel runs. The online softmax per score is fa2_tc's:
// one FMNMX, one FFMA + one MUFU.EX2, one FADD, half an F2FP pack.
//
//   grid  = (ceil(N/128), B*H); block = 128 threads; warp w owns Q-tile rows [32w, 32w + 32);
//   causal: block x takes Q tile ceil(N/128) - 1 - x (the simulator's model launches them so too).
//   tiles = Br = 128, Bc = tile_rules::fa2_tc_tuned_bc(d), fixed.
//
// Measured throughput: cuda/results/ (the ladder runs; docs/kernel-ladder.md).
// Run:  build/cuda/cuda-check --algo fa2_tc_tuned
#include <cmath>
#include <stdexcept>
#include <string>

#include "common/launch.cuh"
#include "kernels/flash_common.cuh"
#include "kernels/launchers.hpp"
#include "kernels/mma_fragments.cuh"
#include "kernels/tile_rules.hpp"

namespace fasim::cuda_detail {

namespace {

constexpr int kBr = tile_rules::kFa2TcTunedBr;  // query rows per block
constexpr int kRowBlocks = kBr / (16 * kFlashWarps);  // m16 row blocks per warp
static_assert(kRowBlocks == 2, "two m16 row blocks per warp");

struct TunedParams {
    const void* Q;
    const void* K;
    const void* V;
    void* O;
    float* lse;
    int N, Nk;
    int causal;
    float scale_log2;  // scale * log2(e)
};

// The online softmax's lazy rescale: a warp moves its rows' maxima m (and rescales O and l) only when some
// row's maximum grows by more than this, in log2 units; otherwise P = exp2(s - m) <= 2^8 with the old m.
// (maybe_unused: nvcc's host pass sees only the launch code, not the device code that uses these two.)
[[maybe_unused]] constexpr float kLazyRescaleLog2 = 8.f;

// cp.async of 16 bytes, always valid (no src-size operand).
[[maybe_unused]] __device__ __forceinline__ void cp_async_16_full(unsigned smem_dst, const void* gmem_src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_dst), "l"(gmem_src) : "memory");
}

// A whole ROWS x D tile (no row past the end) by cp.async, each thread's addresses computed once:
// thread tid copies the 16-byte chunk (tid % kChunks) of rows tid / kChunks + kRowStep * it.
template <typename T, int D, int ROWS, int LD, int THREADS>
struct FullTileCopy {
    static constexpr int kChunks = D * static_cast<int>(sizeof(T)) / 16;
    static constexpr int kRowStep = THREADS / kChunks;
    static_assert(THREADS % kChunks == 0 && ROWS % kRowStep == 0, "whole rows per pass");
    unsigned dst;   // shared byte address of this thread's first chunk in a tile at offset 0
    const T* src;   // this thread's first chunk of row 0
    __device__ __forceinline__ FullTileCopy(const T* smem_tile0, const T* head, int tid) {
        const int r = tid / kChunks, c = (tid % kChunks) * (16 / static_cast<int>(sizeof(T)));
        dst = smem_addr(smem_tile0 + r * LD + c);
        src = head + r * D + c;
    }
    __device__ __forceinline__ void issue(unsigned dst_offset_bytes, int row0) const {
        const T* s = src + static_cast<long long>(row0) * D;
#pragma unroll
        for (int it = 0; it < ROWS / kRowStep; ++it)
            cp_async_16_full(dst + dst_offset_bytes + it * kRowStep * LD * static_cast<unsigned>(sizeof(T)), s + it * kRowStep * D);
    }
};

template <typename T, int D, int BC>
__global__ void __launch_bounds__(kFlashThreads, 2) fa2_tc_tuned_kernel(TunedParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    (void)p;
    __trap();  // built for sm_75 too, never launched there (the host refuses devices below 8.0)
#else
    constexpr int LD = D + tile_rules::kFa2TcTunedPad;  // padded rows: conflict-free ldmatrix
    constexpr int KS_D = D / 16;       // k-steps of S = Q K^T
    constexpr int NT_S = BC / 8;       // n-tiles of S (8 keys each)
    constexpr int KS_KV = BC / 16;     // k-steps of O = P V
    constexpr int NT_O = D / 8;        // n-tiles of O
    constexpr int RB = kRowBlocks;

    const int tid = static_cast<int>(threadIdx.x);
    const int warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3;
    const int bh = static_cast<int>(blockIdx.y);
    // With the causal mask the heaviest Q tiles (the last ones: they see the most keys) launch first, so that
    // the lightest fill the tail of the grid.
    const int q_tile = p.causal != 0 ? static_cast<int>(gridDim.x - 1 - blockIdx.x) : static_cast<int>(blockIdx.x);
    const int q0 = q_tile * kBr;
    const int q_rows = imin(kBr, p.N - q0);
    const int wq0 = q0 + 32 * warp;  // the warp's first query row; row block r starts at wq0 + 16r
    const bool warp_active = wq0 < p.N;

    T* Qs = reinterpret_cast<T*>(dynamic_smem());
    T* Ks = Qs + kBr * LD;          // buffer b at Ks + b * BC * LD
    T* Vs = Ks + 2 * BC * LD;       // buffer b at Vs + b * BC * LD

    const T* Qg = static_cast<const T*>(p.Q) + static_cast<long long>(bh) * p.N * D;
    const T* Kg = static_cast<const T*>(p.K) + static_cast<long long>(bh) * p.Nk * D;
    const T* Vg = static_cast<const T*>(p.V) + static_cast<long long>(bh) * p.Nk * D;
    const int diag = p.Nk - p.N;  // key k visible to query q iff k <= q + diag
    const int n_tiles = visible_kv_tiles(q0, q_rows, p.N, p.Nk, BC, p.causal != 0);

    // cp.async groups, in issue order: (Q, K_0), V_0, then per tile j: K_{j+1}, V_{j+1} (possibly empty,
    // so that "all but the newest group" always means the tile that is needed next).
    load_tile_async<T, D, kBr, LD, kFlashThreads>(Qs, Qg, q0, q_rows);
    if (n_tiles > 0) load_tile_async<T, D, BC, LD, kFlashThreads>(Ks, Kg, 0, imin(BC, p.Nk));
    cp_async_commit();
    if (n_tiles > 0) load_tile_async<T, D, BC, LD, kFlashThreads>(Vs, Vg, 0, imin(BC, p.Nk));
    cp_async_commit();

    float o[RB][NT_O][4];
#pragma unroll
    for (int r = 0; r < RB; ++r)
#pragma unroll
        for (int nt = 0; nt < NT_O; ++nt)
#pragma unroll
            for (int i = 0; i < 4; ++i) o[r][nt][i] = 0.f;
    float m[RB][2], l[RB][2];  // rows wq0 + 16r + g + 8h, m in log2 units; l over this lane's columns only
#pragma unroll
    for (int r = 0; r < RB; ++r) {
        m[r][0] = m[r][1] = -INFINITY;
        l[r][0] = l[r][1] = 0.f;
    }

    // ldmatrix row addresses of this lane: Q's A fragments (rows + (lane & 7) + 8 ((lane >> 3) & 1), column
    // 8 (lane >> 4)), K's B fragments (keys + (lane & 7) + 8 (lane >> 4), column 8 ((lane >> 3) & 1)), V's
    // transposed B fragments (keys + (lane & 7) + 8 ((lane >> 3) & 1), column 8 (lane >> 4)).
    const T* qrow = Qs + (32 * warp + (lane & 7) + 8 * ((lane >> 3) & 1)) * LD + 8 * (lane >> 4);
    const int krow = ((lane & 7) + 8 * (lane >> 4)) * LD + 8 * ((lane >> 3) & 1);
    const int vrow = ((lane & 7) + 8 * ((lane >> 3) & 1)) * LD + 8 * (lane >> 4);

    // S = Q K_j^T for both row blocks, its mask, the online softmax, and P as A fragments. Called with a
    // literal `masked`, so that the unmasked copy (all tiles but those crossing the diagonal or the end of K)
    // carries no masking instructions once inlined. (A generic lambda taking std::true_type, fa2_tc's way,
    // crashes nvcc 13.0's front end with these three-dimensional register arrays.)
    auto scores_and_softmax = [&](unsigned (&pf)[RB][KS_KV][4], const T* Kt, int k0, const bool masked) {
        float s[RB][NT_S][4];
#pragma unroll
        for (int r = 0; r < RB; ++r)
#pragma unroll
            for (int nt = 0; nt < NT_S; ++nt)
#pragma unroll
                for (int i = 0; i < 4; ++i) s[r][nt][i] = 0.f;
#pragma unroll
        for (int ks = 0; ks < KS_D; ++ks) {
            unsigned qf[RB][4];
#pragma unroll
            for (int r = 0; r < RB; ++r) ldmatrix_x4(qf[r], qrow + 16 * r * LD + 16 * ks);
#pragma unroll
            for (int np = 0; np < NT_S / 2; ++np) {
                unsigned b[4];
                ldmatrix_x4(b, Kt + krow + 16 * np * LD + 16 * ks);
#pragma unroll
                for (int r = 0; r < RB; ++r) {
                    mma_16816<T>(s[r][2 * np], qf[r], b[0], b[1]);
                    mma_16816<T>(s[r][2 * np + 1], qf[r], b[2], b[3]);
                }
            }
        }
        // s[r][nt][i]: row wq0 + 16r + g + 8 (i >> 1), key k0 + 8nt + 2t + (i & 1).
        if (masked) {
#pragma unroll
            for (int r = 0; r < RB; ++r)
#pragma unroll
                for (int nt = 0; nt < NT_S; ++nt)
#pragma unroll
                    for (int i = 0; i < 4; ++i) {
                        const int q = wq0 + 16 * r + g + 8 * (i >> 1);
                        const int k = k0 + 8 * nt + 2 * t + (i & 1);
                        if (k >= p.Nk || (p.causal != 0 && k > q + diag)) s[r][nt][i] = -INFINITY;
                    }
        }
        // Lazy rescale (FlashAttention-4's way): the row maxima m move, and O and l are rescaled, only when
        // some row of the warp sees its maximum grow by more than 2^8 (a warp-uniform branch); otherwise
        // P = exp2(s - m) with the old m, at most 2^8, well inside fp16's and bf16's range, and O and l keep
        // their common scale: O / l and m + log2(l) are the same.
        float m_new[RB][2];
        bool grow = false;
#pragma unroll
        for (int r = 0; r < RB; ++r)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float mx = -INFINITY;
#pragma unroll
                for (int nt = 0; nt < NT_S; ++nt) mx = fmaxf(mx, fmaxf(s[r][nt][2 * h], s[r][nt][2 * h + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 2));
                m_new[r][h] = fmaxf(m[r][h], mx * p.scale_log2);
                grow |= m_new[r][h] > m[r][h] + kLazyRescaleLog2;
            }
        if (__any_sync(kFullMask, grow)) {
#pragma unroll
            for (int r = 0; r < RB; ++r)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const float m_use = m_new[r][h] == -INFINITY ? 0.f : m_new[r][h];
                    const float alpha = fast_exp2(m[r][h] - m_use);
                    l[r][h] *= alpha;
                    m[r][h] = m_new[r][h];
#pragma unroll
                    for (int nt = 0; nt < NT_O; ++nt) {
                        o[r][nt][2 * h] *= alpha;
                        o[r][nt][2 * h + 1] *= alpha;
                    }
                }
        }
#pragma unroll
        for (int r = 0; r < RB; ++r)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float m_use = m[r][h] == -INFINITY ? 0.f : m[r][h];  // nothing visible yet: P = 0
                float sum = 0.f;
#pragma unroll
                for (int nt = 0; nt < NT_S; ++nt) {
                    s[r][nt][2 * h] = fast_exp2(fmaf(s[r][nt][2 * h], p.scale_log2, -m_use));
                    s[r][nt][2 * h + 1] = fast_exp2(fmaf(s[r][nt][2 * h + 1], p.scale_log2, -m_use));
                    sum += s[r][nt][2 * h] + s[r][nt][2 * h + 1];
                }
                l[r][h] += sum;
            }
#pragma unroll
        for (int r = 0; r < RB; ++r) {
            // P as A fragments of k-step ks: n-tiles 2ks and 2ks + 1 of the score accumulators.
#pragma unroll
            for (int ks = 0; ks < KS_KV; ++ks) {
                pf[r][ks][0] = pack2<T>(s[r][2 * ks][0], s[r][2 * ks][1]);
                pf[r][ks][1] = pack2<T>(s[r][2 * ks][2], s[r][2 * ks][3]);
                pf[r][ks][2] = pack2<T>(s[r][2 * ks + 1][0], s[r][2 * ks + 1][1]);
                pf[r][ks][3] = pack2<T>(s[r][2 * ks + 1][2], s[r][2 * ks + 1][3]);
            }
        }
    };

    using TileCopy = FullTileCopy<T, D, BC, LD, kFlashThreads>;
    const TileCopy kcopy(Ks, Kg, tid);
    const TileCopy vcopy(Vs, Vg, tid);
    constexpr unsigned kBufBytes = BC * LD * static_cast<unsigned>(sizeof(T));
    // The last key row any row of this warp may see (causal); a tile past it is all masked for the warp.
    const int warp_last_key = wq0 + 31 + diag;

    for (int j = 0; j < n_tiles; ++j) {
        const int buf = j & 1;
        const int k0 = j * BC;
        cp_async_wait<1>();  // K_j (with Q at j = 0) has landed for this thread; V_j may still be in flight ...
        __syncthreads();     // ... and for every thread; every warp is also done with S_{j-1}, so K buffer buf ^ 1 is free
        const bool next_full = k0 + 2 * BC <= p.Nk;  // K_{j+1}, V_{j+1} have no row past the end
        if (j + 1 < n_tiles) {
            if (next_full) kcopy.issue((buf ^ 1) * kBufBytes, k0 + BC);
            else load_tile_async<T, D, BC, LD, kFlashThreads>(Ks + (buf ^ 1) * BC * LD, Kg, k0 + BC, imin(BC, p.Nk - k0 - BC));
        }
        cp_async_commit();

        unsigned pf[RB][KS_KV][4];
        const bool need_mask = k0 + BC > p.Nk || (p.causal != 0 && k0 + BC - 1 > wq0 + diag);
        const bool warp_computes = warp_active && (p.causal == 0 || k0 <= warp_last_key);
        if (warp_computes) {
            if (need_mask) scores_and_softmax(pf, Ks + buf * BC * LD, k0, true);
            else scores_and_softmax(pf, Ks + buf * BC * LD, k0, false);
        }

        cp_async_wait<1>();  // V_j has landed (K_{j+1} may be in flight) ...
        __syncthreads();     // ... for every thread; every warp is done with P V_{j-1}, so V buffer buf ^ 1 is free
        if (j + 1 < n_tiles) {
            if (next_full) vcopy.issue((buf ^ 1) * kBufBytes, k0 + BC);
            else load_tile_async<T, D, BC, LD, kFlashThreads>(Vs + (buf ^ 1) * BC * LD, Vg, k0 + BC, imin(BC, p.Nk - k0 - BC));
        }
        cp_async_commit();

        if (warp_computes) {
            const T* Vt = Vs + buf * BC * LD + vrow;
#pragma unroll
            for (int ks = 0; ks < KS_KV; ++ks) {
#pragma unroll
                for (int dp = 0; dp < NT_O / 2; ++dp) {
                    unsigned b[4];
                    ldmatrix_x4_trans(b, Vt + 16 * ks * LD + 16 * dp);
#pragma unroll
                    for (int r = 0; r < RB; ++r) {
                        mma_16816<T>(o[r][2 * dp], pf[r][ks], b[0], b[1]);
                        mma_16816<T>(o[r][2 * dp + 1], pf[r][ks], b[2], b[3]);
                    }
                }
            }
        }
    }
    cp_async_wait<0>();

    if (!warp_active) return;
    // O / l straight from the fragments (4-byte stores). Staging it through shared memory for 16-byte coalesced
    // stores made the kernel 4-5% slower on an H200 (cuda/results/2026-11-26-h200-ladder-b): the main loop,
    // at 255 registers, was scheduled worse.
    T* Og = static_cast<T*>(p.O) + static_cast<long long>(bh) * p.N * D;
#pragma unroll
    for (int r = 0; r < RB; ++r) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float lsum = l[r][h];
            lsum += __shfl_xor_sync(kFullMask, lsum, 1);
            lsum += __shfl_xor_sync(kFullMask, lsum, 2);
            const float inv = lsum > 0.f ? 1.f / lsum : 0.f;  // a row that saw no key: O = 0, LSE = -inf
            const int q = wq0 + 16 * r + g + 8 * h;
            if (q < p.N) {
                T* orow = Og + static_cast<long long>(q) * D + 2 * t;
#pragma unroll
                for (int nt = 0; nt < NT_O; ++nt)
                    *reinterpret_cast<unsigned*>(orow + 8 * nt) = pack2<T>(o[r][nt][2 * h] * inv, o[r][nt][2 * h + 1] * inv);
                if (t == 0) p.lse[static_cast<long long>(bh) * p.N + q] = lsum > 0.f ? (m[r][h] + log2f(lsum)) * kLn2 : -INFINITY;
            }
        }
    }
#endif
}

template <typename T>
void launch_dtype(const FlashArgs& a, const TunedParams& p, CudaKernelLaunch& info, cudaStream_t stream) {
    const dim3 grid(info.grid[0], info.grid[1], info.grid[2]);
    auto go = [&](auto kernel) {
        info.dynamic_smem_bytes = tile_rules::fa2_tc_tuned_smem_bytes(a.d, static_cast<int>(sizeof(T)));
        info.registers_per_thread =
            launch_kernel("fa2_tc_tuned_forward", kernel, grid, dim3(kFlashThreads), info.dynamic_smem_bytes, stream, p);
    };
    switch (a.d) {  // the head dims with code (the catalog row's)
        case 64: go(fa2_tc_tuned_kernel<T, 64, tile_rules::fa2_tc_tuned_bc(64)>); return;
        case 128: go(fa2_tc_tuned_kernel<T, 128, tile_rules::fa2_tc_tuned_bc(128)>); return;
        default: break;
    }
    throw std::invalid_argument(cuda_kernel("fa2_tc_tuned").unsupported(a.dtype, a.d, "--algo"));
}

CudaKernelLaunch launch_fa2_tc_tuned(const FlashArgs& a, cudaStream_t stream) {
    const std::string unsupported = cuda_kernel("fa2_tc_tuned").unsupported(a.dtype, a.d, "--algo");
    if (!unsupported.empty()) throw std::invalid_argument(unsupported);
    if (a.O == nullptr || a.lse == nullptr || a.Q == nullptr || a.K == nullptr || a.V == nullptr)
        throw std::invalid_argument("fa2_tc_tuned: Q, K, V, O and LSE buffers are required");
    const int cc = device_compute_capability();
    if (cc < 80)
        throw std::runtime_error("fa2_tc_tuned needs compute capability 8.0+ (mma.m16n8k16 bf16); this GPU is " +
                                 std::to_string(cc / 10) + "." + std::to_string(cc % 10) + "; use --algo fa2");
    CudaKernelLaunch info;
    info.name = "fa2_tc_tuned_forward";
    info.block_threads = kFlashThreads;
    info.Br = kBr;
    info.Bc = tile_rules::fa2_tc_tuned_bc(a.d);
    info.grid = {static_cast<unsigned>(ceil_div(a.N, kBr)), static_cast<unsigned>(a.BH), 1u};
    const TunedParams p{a.Q, a.K, a.V, a.O, a.lse, a.N, a.Nk, a.causal ? 1 : 0,
                        static_cast<float>(static_cast<double>(a.scale) * 1.4426950408889634)};
    if (a.dtype == DType::fp16) launch_dtype<__half>(a, p, info, stream);
    else launch_dtype<__nv_bfloat16>(a, p, info, stream);
    return info;
}

// The launch table's entry (kernels/launchers.hpp): the catalog row's rule, the one the simulator applies.
TileChoice fa2_tc_tuned_tiles(int d, DType dtype, std::size_t smem_per_block) {
    return kernel_tiles(cuda_kernel("fa2_tc_tuned"), d, dtype, smem_per_block);
}
CudaLaunchInfo run_fa2_tc_tuned(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    FlashArgs f = flash_args(p, t, "fa2_tc_tuned");
    set_lse(f, p, t, "fa2_tc_tuned");
    return {{launch_fa2_tc_tuned(f, stream)}};
}
FASIM_REGISTER_KERNEL("fa2_tc_tuned", run_fa2_tc_tuned, fa2_tc_tuned_tiles);

}  // namespace

}  // namespace fasim::cuda_detail
