// FlashAttention-2 forward (Dao 2023, Algorithm 1) on the tensor cores: fp16/bf16 products with
// mma.sync.m16n8k16, fp32 accumulation. sm_80+ (A100, L4, H100, H200); storage fp16 or bf16, d 64 or 128.
//
// What it adds over fa2.cu (same algorithm, same grid, same results up to rounding):
//   - Q K^T and P V run on the tensor cores (mma_fragments.cuh has the instructions and their
//     register layouts) instead of fp32 FMAs;
//   - S and P never touch shared memory: S is accumulated in registers, the online softmax runs on
//     those registers (a row is spread over the 4 lanes of a quad: row max and row sum by shuffles),
//     and P, rounded to the storage dtype, is used straight away as the A operand of P V;
//   - Q is loaded to shared memory once and then held in registers as A fragments;
//   - K tiles are double-buffered with cp.async (K_{j+1} is copied while tile j is computed); V_j has
//     one buffer and is copied while S_j = Q K_j^T and its softmax are computed. Q + 2 K + V is 68 KiB
//     at d = 128, so three blocks fit an H100/H200 SM; with two V buffers (85 KiB) two did, and ncu
//     found those 2 warps per scheduler issuing once per 6.4 cycles each (latency-bound).
//
//   grid  = (ceil(N/64), B*H): blockIdx.x = Q tile (fastest), blockIdx.y = batch*head, like fa2.cu.
//   GQA/MQA: K and V hold B*KV heads (KV dividing H); query head h of batch b reads K/V head
//           b*KV + h/(H/KV), as flash-attention 2's forward does (a group's blocks read the same K/V
//           tiles, which L2 then serves more than once); nothing else changes. KV = H: one each.
//   block = 128 threads = 4 warps, split-Q: warp w owns Q-tile rows [16w, 16w + 16) (one m16 row block)
//           and exchanges nothing with the other warps (they share only the K/V tile loads).
//   tiles = Br = 64 query rows, Bc = 64 keys, fixed (the host does not choose them).
//
// Per warp, per K/V tile j (causal: tiles entirely above the diagonal are skipped, tiles crossing it
// are masked element-wise; keys past Nk are zero-filled and masked):
//   S = Q K_j^T                             16 x 64 fp32, 8 mma n-tiles of 8 keys, in registers
//   m_new = max(m, c rowmax S);  P = exp2(c S - m_new);  l = exp2(m - m_new) l + rowsum P
//                                           (c = scale * log2(e); m in log2 units)
//   O = exp2(m - m_new) O + round(P) V      16 x d fp32, d/8 n-tiles, unnormalised, in registers
// At the end O / l (in the storage dtype) and LSE = (m + log2 l) ln 2 are written once.
// The softmax is what the CUDA cores issue between the mma's, so it is kept to the minimum per score:
// one FMNMX, one FFMA + one MUFU.EX2 (ex2.approx.ftz, as --use_fast_math builds of FlashAttention
// use), one FADD and half an F2FP pack. Only tiles crossing the diagonal or the end of K run the
// masked copy of the step (nvcc otherwise predicates the mask, and predicated-off instructions still
// issue: ncu counted 21 instructions per score before, cuda/results/2026-11-22-h200-b/profile).
//
// Where things live:
//   registers      Q fragments (d/4 regs), S/P (32 floats), O accumulator (d/2 floats), m and l of
//                  the lane's two rows g and g+8
//   shared memory  Q tile (64 rows), K tiles (2 buffers x 64 rows), V tile (64 rows), storage dtype, each
//                  row padded by 8 elements (16 bytes): the row stride is an odd number of 16-byte
//                  units (d = 64: 9, d = 128: 17), so the 8 row addresses of each ldmatrix phase hit
//                  8 different 16-byte bank groups (no bank conflicts, no swizzle needed)
//   global         Q, K, V read once per block through L2 (cp.async.cg); O and LSE written once
//
// Run:  build/cuda/cuda-check --algo fa2_tc            (fp32 problems are skipped: use --algo fa2)
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

constexpr int kTcBr = tile_rules::kFa2TcBr;  // query rows per block: 4 warps x 16
constexpr int kTcBc = tile_rules::kFa2TcBc;  // keys per K/V tile
constexpr int kTcPad = 8;   // padding per shared-memory row, elements (16 bytes)
static_assert(kTcBr == 16 * kFlashWarps, "one m16 row block per warp");

// Dynamic shared memory: Q tile, then K buffers 0 and 1, then the V buffer; rows of d + 8 elements.
constexpr std::size_t fa2_tc_smem_bytes(int d, int elem_bytes) {
    return static_cast<std::size_t>(kTcBr + 3 * kTcBc) * static_cast<std::size_t>(d + kTcPad) *
           static_cast<std::size_t>(elem_bytes);
}
// Blocks per SM the kernel is compiled for. At d = 128 shared memory allows three, but ptxas's
// unbounded choice (192 registers per thread) would allow only two; three need at most 168.
constexpr int fa2_tc_min_blocks_per_sm(int d) { return d == 128 ? 3 : 1; }

struct Fa2TcParams {
    const void* Q;
    const void* K;
    const void* V;
    void* O;
    float* lse;
    int N, Nk;
    int group;  // query heads per K/V head (H / KV)
    int causal;
    float scale_log2;  // scale * log2(e): exp(scale s - m) = exp2(scale_log2 s - m2)
};

// This kernel's tile copies: ROWS x D, row stride D + kTcPad, all kFlashThreads threads, one address per
// whole tile (kernels/mma_fragments.cuh, TileAddresses: at d = 128 the per-chunk addresses spilled
// registers, and the kernel ran 9-12% slower on an H200).
template <typename T, int D, int ROWS>
__device__ __forceinline__ void load_padded_tile(T* dst, const T* head, int row0, int nvalid) {
    load_tile_async<T, D, ROWS, D + kTcPad, kFlashThreads, 0, TileAddresses::one_per_tile>(dst, head, row0, nvalid);
}

template <typename T, int D>
__global__ void __launch_bounds__(kFlashThreads, fa2_tc_min_blocks_per_sm(D)) fa2_tc_forward_kernel(Fa2TcParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    // Built for sm_75 too (the project's oldest target) but never launched there: the host refuses
    // devices below 8.0. Trap rather than return garbage should that check ever be bypassed.
    (void)p;
    __trap();
#else
    constexpr int LD = D + kTcPad;     // shared-memory row stride, elements
    constexpr int KS_D = D / 16;       // k-steps of S = Q K^T (over the head dim)
    constexpr int NT_S = kTcBc / 8;    // n-tiles of S (8 keys each)
    constexpr int KS_KV = kTcBc / 16;  // k-steps of O = P V (over the keys)
    constexpr int NT_O = D / 8;        // n-tiles of O (8 columns each)

    const int tid = static_cast<int>(threadIdx.x);
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const int g = lane >> 2;  // groupID: this lane's fragment rows are g and g + 8
    const int t = lane & 3;   // threadID_in_group: its fragment columns are 2t and 2t + 1 (of each 8)
    const int bh = static_cast<int>(blockIdx.y);
    // The group's K/V head: b * KV + h / group, which is bh / group since H = group * KV (one division;
    // the form with H and KV cost the d = 128 step spills under the 168-register launch bound).
    const int kv_bh = bh / p.group;
    const int q0 = static_cast<int>(blockIdx.x) * kTcBr;
    const int q_rows = imin(kTcBr, p.N - q0);
    const int wq0 = q0 + 16 * warp;              // global query index of the warp's first row
    const bool warp_active = wq0 < p.N;          // uniform per warp: rows past N are never computed

    T* Qs = reinterpret_cast<T*>(dynamic_smem());
    T* Ks = Qs + kTcBr * LD;   // buffer b at Ks + b * kTcBc * LD
    T* Vs = Ks + 2 * kTcBc * LD;  // one buffer

    const T* Qg = static_cast<const T*>(p.Q) + static_cast<long long>(bh) * p.N * D;
    const T* Kg = static_cast<const T*>(p.K) + static_cast<long long>(kv_bh) * p.Nk * D;
    const T* Vg = static_cast<const T*>(p.V) + static_cast<long long>(kv_bh) * p.Nk * D;

    const int diag = p.Nk - p.N;  // key k visible to query q iff k <= q + diag (bottom-right causal)
    const int n_tiles = visible_kv_tiles(q0, q_rows, p.N, p.Nk, kTcBc, p.causal != 0);

    // Prologue: Q (group 1), K_0 into K buffer 0 (group 2).
    load_padded_tile<T, D, kTcBr>(Qs, Qg, q0, q_rows);
    cp_async_commit();
    if (n_tiles > 0) load_padded_tile<T, D, kTcBc>(Ks, Kg, 0, imin(kTcBc, p.Nk));
    cp_async_commit();
    cp_async_wait<1>();  // Q has landed (K_0 may still be in flight) ...
    __syncthreads();     // ... for every thread's part of it

    // Q as A fragments, held in registers for the whole block: qf[ks] = the warp's 16 rows x head-dim
    // columns 16ks .. 16ks+15. Matrix i of the ldmatrix_x4 is the quarter (rows + 8*(i & 1), columns
    // + 8*(i >> 1)) of that 16x16 block (a[0..3] order), so lane L gives the address of row
    // (L & 7) + 8*((L >> 3) & 1), column 8*(L >> 4).
    unsigned qf[KS_D][4];
    if (warp_active) {
        const T* qrow = Qs + (16 * warp + (lane & 7) + 8 * ((lane >> 3) & 1)) * LD + 8 * (lane >> 4);
#pragma unroll
        for (int ks = 0; ks < KS_D; ++ks) ldmatrix_x4(qf[ks], qrow + 16 * ks);
    }

    float o[NT_O][4];  // O accumulator: o[nt] = C fragment of rows g, g+8, columns 8nt + 2t, 8nt + 2t + 1
#pragma unroll
    for (int nt = 0; nt < NT_O; ++nt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) o[nt][i] = 0.f;
    }
    float m[2] = {-INFINITY, -INFINITY};  // running max of rows g (h = 0) and g + 8 (h = 1), log2 units
    float l[2] = {0.f, 0.f};              // running sum of the same rows over THIS lane's columns only;
                                          // the quad's four partial sums are added once, at the end

    // The first half of one K/V tile for this warp: S = Q K_j^T, online softmax (m, l and O rescaled),
    // and P as A fragments in pf. `masked` (a type, so that the unmasked copy carries no masking
    // instructions at all: predicated-off instructions still issue) selects the element-wise mask.
    // The second half, O += P V_j, runs after the barrier that makes V_j visible.
    auto scores_and_softmax = [&](unsigned (&pf)[KS_KV][4], int buf, int k0, auto masked) {
        constexpr bool kMasked = decltype(masked)::value;
        const T* Kt = Ks + buf * kTcBc * LD;

        // ---- S = Q K_j^T (raw scores: the scale is folded into the exponent below).
        float s[NT_S][4];
#pragma unroll
        for (int nt = 0; nt < NT_S; ++nt) {
#pragma unroll
            for (int i = 0; i < 4; ++i) s[nt][i] = 0.f;
        }
        qk_scores<T>(s, qf, Kt + ((lane & 7) + 8 * (lane >> 4)) * LD + 8 * ((lane >> 3) & 1), LD);

        // ---- mask. s[nt][i] is row g + 8*(i >> 1), key k0 + 8nt + 2t + (i & 1).
        if constexpr (kMasked) {
#pragma unroll
            for (int nt = 0; nt < NT_S; ++nt) {
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int q = wq0 + g + 8 * (i >> 1);
                    const int k = k0 + 8 * nt + 2 * t + (i & 1);
                    if (k >= p.Nk || (p.causal != 0 && k > q + diag)) s[nt][i] = -INFINITY;
                }
            }
        }

        // ---- online softmax (warp_tile_products.cuh): s becomes P, m, l and o rescaled.
        online_softmax_step(s, m, l, o, p.scale_log2);

        // ---- round(P): from the score accumulators straight into A fragments.
        p_fragments<T>(pf, s);
    };
    const T* vrow = Vs + ((lane & 7) + 8 * ((lane >> 3) & 1)) * LD + 8 * (lane >> 4);

    // Per tile j, cp.async groups in issue order: V_j, then K_{j+1} (possibly empty, so that the wait
    // counts below hold); K_j was the newest group of iteration j - 1 (of the prologue for j = 0).
    // Every warp, active or not, reaches all three barriers (warp_active is false only past N).
    for (int j = 0; j < n_tiles; ++j) {
        const int buf = j & 1;
        const int k0 = j * kTcBc;
        // V_j into the V buffer and K_{j+1} into the other K buffer: the barrier that ended iteration
        // j - 1 freed both.
        load_padded_tile<T, D, kTcBc>(Vs, Vg, k0, imin(kTcBc, p.Nk - k0));
        cp_async_commit();
        if (j + 1 < n_tiles) {
            load_padded_tile<T, D, kTcBc>(Ks + (buf ^ 1) * kTcBc * LD, Kg, k0 + kTcBc, imin(kTcBc, p.Nk - (k0 + kTcBc)));
        }
        cp_async_commit();
        cp_async_wait<2>();   // this thread's copy of K_j has landed (V_j, K_{j+1} may be in flight) ...
        __syncthreads();      // ... and every other thread's

        // A tile crossing the causal diagonal or the end of K needs the element-wise mask; the others
        // (all but one or two per block) run a copy of the step without it. Warp-uniform branch.
        const bool need_mask = k0 + kTcBc > p.Nk || (p.causal != 0 && k0 + kTcBc - 1 > wq0 + diag);
        unsigned pf[KS_KV][4];
        if (warp_active) {
            if (need_mask) scores_and_softmax(pf, buf, k0, std::true_type{});
            else scores_and_softmax(pf, buf, k0, std::false_type{});
        }
        cp_async_wait<1>();   // this thread's copy of V_j has landed ...
        __syncthreads();      // ... and every other thread's

        // ---- O += round(P) V_j.
        if (warp_active) pv_accumulate<T>(o, pf, vrow, LD);
        __syncthreads();  // every warp is done with V_j and K buffer `buf` before iteration j + 1 refills them
    }
    cp_async_wait<0>();  // nothing left in flight (only empty groups can be, but say so)

    // ---- epilogue: O / l and LSE, written once. Rows past N are not stored.
    if (!warp_active) return;
    T* Og = static_cast<T*>(p.O) + static_cast<long long>(bh) * p.N * D;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float lsum = l[h];
        lsum += __shfl_xor_sync(kFullMask, lsum, 1);
        lsum += __shfl_xor_sync(kFullMask, lsum, 2);
        const float inv = lsum > 0.f ? 1.f / lsum : 0.f;  // a row that saw no key: O = 0, LSE = -inf
        const int q = wq0 + g + 8 * h;
        if (q < p.N) {
            T* orow = Og + static_cast<long long>(q) * D + 2 * t;
#pragma unroll
            for (int nt = 0; nt < NT_O; ++nt) {
                *reinterpret_cast<unsigned*>(orow + 8 * nt) = pack2<T>(o[nt][2 * h] * inv, o[nt][2 * h + 1] * inv);
            }
            if (t == 0) {
                p.lse[static_cast<long long>(bh) * p.N + q] = lsum > 0.f ? (m[h] + log2f(lsum)) * kLn2 : -INFINITY;
            }
        }
    }
#endif
}

template <typename T>
void launch_fa2_tc_dtype(const FlashArgs& a, const Fa2TcParams& p, CudaKernelLaunch& info, cudaStream_t stream) {
    const dim3 grid(info.grid[0], info.grid[1], info.grid[2]);
    auto go = [&](auto kernel, int d) {
        info.dynamic_smem_bytes = fa2_tc_smem_bytes(d, static_cast<int>(sizeof(T)));
        info.registers_per_thread =
            launch_kernel("fa2_tc_forward", kernel, grid, dim3(kFlashThreads), info.dynamic_smem_bytes, stream, p);
    };
    switch (a.d) {  // only d = 64 and 128 are instantiated (compile time)
        case 64: go(fa2_tc_forward_kernel<T, 64>, 64); return;
        case 128: go(fa2_tc_forward_kernel<T, 128>, 128); return;
        default: break;
    }
    throw std::invalid_argument(fa2_tc_unsupported_reason(a.dtype, a.d));
}

}  // namespace

// What the catalog says this kernel has code for (kernels/kernel_catalog.cpp): a guard for callers that
// bypass run_attention.
std::string fa2_tc_unsupported_reason(DType dtype, int d) { return cuda_kernel("fa2_tc").unsupported(dtype, d, "--algo"); }

CudaKernelLaunch launch_fa2_tc(const FlashArgs& a, cudaStream_t stream) {
    const std::string unsupported = fa2_tc_unsupported_reason(a.dtype, a.d);
    if (!unsupported.empty()) throw std::invalid_argument(unsupported);
    if (a.O == nullptr || a.lse == nullptr || a.Q == nullptr || a.K == nullptr || a.V == nullptr) {
        throw std::invalid_argument("fa2_tc: Q, K, V, O and LSE buffers are required");
    }
    const int cc = device_compute_capability();
    if (cc < 80) {
        throw std::runtime_error("fa2_tc needs compute capability 8.0+ (mma.m16n8k16 bf16); this GPU is " +
                                 std::to_string(cc / 10) + "." + std::to_string(cc % 10) + "; use --algo fa2");
    }
    CudaKernelLaunch info;
    info.name = "fa2_tc_forward";
    info.block_threads = kFlashThreads;
    info.Br = kTcBr;
    info.Bc = kTcBc;
    info.one_address_per_tile = true;  // load_padded_tile
    info.grid = {static_cast<unsigned>(ceil_div(a.N, kTcBr)), static_cast<unsigned>(a.BH), 1u};
    if (a.H <= 0 || a.KV <= 0 || a.H % a.KV != 0 || a.BH % a.H != 0)
        throw std::invalid_argument("fa2_tc: " + std::to_string(a.KV) + " K/V heads must divide H = " + std::to_string(a.H) +
                                    " query heads, and H the " + std::to_string(a.BH) + " batch*heads");
    const Fa2TcParams p{a.Q, a.K, a.V, a.O, a.lse, a.N, a.Nk, a.H / a.KV, a.causal ? 1 : 0,
                        static_cast<float>(static_cast<double>(a.scale) * 1.4426950408889634)};
    if (a.dtype == DType::fp16) {
        launch_fa2_tc_dtype<__half>(a, p, info, stream);
    } else {
        launch_fa2_tc_dtype<__nv_bfloat16>(a, p, info, stream);
    }
    return info;
}

namespace {
// The launch table's entry for "fa2_tc" (kernels/launchers.hpp): fixed tiles, no choice.
TileChoice fa2_tc_tiles(int d, DType dtype, std::size_t smem_per_block) {
    const std::size_t need = fa2_tc_smem_bytes(d, static_cast<int>(dtype_bytes(dtype)));
    if (need > smem_per_block)
        throw std::invalid_argument("fa2_tc: its " + std::to_string(need) + " B of shared memory at d = " + std::to_string(d) +
                                    " do not fit the device's " + std::to_string(smem_per_block) + " B per block");
    return {kTcBr, kTcBc, need};
}
CudaLaunchInfo run_fa2_tc(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    FlashArgs f = flash_args(p, t, "fa2_tc");
    set_lse(f, p, t, "fa2_tc");
    return {{launch_fa2_tc(f, stream)}};
}
FASIM_REGISTER_KERNEL("fa2_tc", run_fa2_tc, fa2_tc_tiles);
}  // namespace

}  // namespace fasim::cuda_detail
