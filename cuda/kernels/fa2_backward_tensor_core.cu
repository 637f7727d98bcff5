// FlashAttention-2 backward (Dao 2023, Algorithm 2) on the tensor cores: the five products of a tile
// pair with mma.sync.m16n8k16 (fp16/bf16 operands, fp32 accumulation). sm_80+ (A100, L4, H100, H200);
// storage fp16 or bf16, d 64 or 128. The tile program of sim/algorithms/flash_attention_2_backward.cpp:
//
//   fa2_bwd_preprocess  (fa2_backward_common.cu)  D = rowsum(dO * O), dq_acc = 0
//   fa2_backward        (this file)               one block per K/V tile j, loop over the Q tiles i
//   fa2_bwd_convert_dq  (fa2_backward_common.cu)  dQ = dq_acc in the storage dtype
//   fa2_bwd_sum_groups  (fa2_backward_common.cu)  grouped K/V heads only: dK, dV = sums over each group
//
// Grouped-query attention (GQA/MQA: KV K/V heads, KV dividing H), as flash-attention 2's mha_bwd does it
// (flash_api.cpp: dk_expanded, dv_expanded, then at::sum_out over the group): the block of query head h of
// batch b reads K_j, V_j of K/V head b*KV + h/(H/KV) and writes its dK_j, dV_j (storage dtype, as always)
// into per-query-head buffers dK_expanded, dV_expanded [B*H][Nk][d]; then fa2_bwd_sum_groups adds each
// group's H/KV heads in fp32 and writes dK, dV [B*KV][Nk][d] once. No block owns a K/V head's gradients
// alone, so this costs a write and a read of B*H*Nk*d elements twice over instead of atomics on dK, dV.
// KV = H: no expanded buffers, no sum kernel, dK_j, dV_j written straight into dK, dV.
//
//   grid  = (ceil(Nk/128), B*H): blockIdx.x = K/V tile j (fastest), blockIdx.y = batch*head.
//   block = 256 threads = 8 warps. Warp w owns keys [16w, 16w + 16) of the K/V tile (one m16 row block)
//           for S, dP, dV and dK; the eight warps split (query rows x head dim) 2 x 4 for dQ.
//   tiles = Bc = 128 keys per block (kept for the whole block), Br = 64 query rows per step, fixed
//           (tile_rules::kFa2BwdTcBc, kFa2BwdTcBr).
//
// Per Q tile i that sees K_j (causal: Q tiles with no row seeing any key of the block are not visited;
// a warp masks element-wise only when its 16 keys x 64 rows cross the diagonal, the end of Nk or the
// end of N; a warp none of whose keys any row of the tile sees skips its products and writes dS = 0):
//
//   phase 1, each warp alone, for the 64 rows of the tile at once (CH = 64: 8 independent mma chains):
//     S^T  = K_w Q_i^T                  16 keys x 64 rows, A = K_w (ldmatrix; d = 64: held in registers
//                                       for the whole block), B = Q rows (ldmatrix)
//     P^T  = exp(scale S^T - LSE)       rounded to the dtype, packed straight into A fragments
//     dV_w += P^T dO_i                  16 keys x d, A = P^T (registers), B = dO rows (ldmatrix.trans)
//     dP^T = V_w dO_i^T                 16 keys x 64 rows, A = V_w (as K_w), B = dO rows (ldmatrix)
//     dS^T = P^T o (dP^T - D)           rounded, packed into A fragments
//     dK_w += dS^T Q_i                  16 keys x d, A = dS^T (registers), B = Q rows (ldmatrix.trans)
//     dS^T -> shared memory             [key][query row], 32-bit stores
//   __syncthreads                       (every warp's keys of dS^T in place)
//   phase 2, warp (wr, wc) = (w / 4, w % 4):
//     dQ_i(part) = scale dS K_j         rows 32wr..32wr+31 x dims wc*d/4.., k = 128 keys,
//                                       A = dS (ldmatrix.trans of dS^T), B = K rows (ldmatrix.trans)
//     added to dq_acc (fp32) with red.global.add (.v2.f32 on sm_90: the two columns a lane holds)
// At the end: dK_w *= scale; dK_w, dV_w written once (keys past Nk not stored; zeros for keys no
// query sees, including blocks no Q tile visits).
//
// Why the transposed products: computing S^T and dP^T (keys as the mma M dimension) leaves P^T and dS^T
// in the C-fragment layout that IS the A-fragment layout of P^T dO and dS^T Q (as P is reused for P V in
// fa2_tensor_core.cu), so the warp that owns a key also owns that key's dV and dK rows and needs nothing
// from the other warps for them: P never goes through shared memory, and only dS does (every warp's
// keys are needed for dQ). The price: every warp reads the whole Q and dO tiles, twice (as B and as
// B^T), about 1.2x the shared-memory reads of FlashAttention-2's own 2 x 4 / 4 x 2 warp split, which
// stages P and dS and needs dV, dK warp tiles of 32 keys.
//
// Why 8 warps: 16 keys per warp (one m16 block) with Bc = 128 keys per block keeps the Q, dO, LSE and D
// re-reads from L2 and the dQ atomics at N*d*Nk/128 per head (Bc = 64 doubles both); with 4 warps a
// warp would hold 32 keys of dK and dV (d = 128: 256 fp32 registers). At d = 128 a thread holds 128
// fp32 accumulators (dK_w, dV_w), so one block (8 warps, 255 registers) runs per SM, as
// FlashAttention-2's does. d = 64 runs one block per SM too: two need <= 128 registers, which ptxas
// reaches without spills only with 16-row chunks and K_w, V_w re-read from shared memory, i.e. 1.4x
// the ldmatrix per mma, and the kernel is bound by shared-memory bandwidth (below).
//
// Shared-memory traffic per warp and Q tile (ldmatrix.x4, 512 B each, 4 cycles of the SM's 128 B/cycle):
// d = 128: 40 (S^T) + 40 (dP^T) + 32 (dV) + 32 (dK) + 32 (dQ) = 176 for 320 mma; d = 64: 16 + 16 + 16 +
// 16 + 24 = 88 for 160 mma. An H100 SM retires an m16n8k16 about every 1.6 cycles (mma.sync, ~640
// TFLOP/s), so both head dims are bound by shared-memory reads before the tensor cores (~1.8 mma per
// ldmatrix where ~2.5 would balance them).
//
// Pipeline and barriers (two per Q tile): the Q, dO, LSE and D tiles are double-buffered with cp.async.
// Tile it + 2 is issued right after the barrier that ends phase 1 of step it (the last reader of its
// buffer), so it has one and a half steps to land; K_j, V_j and the first two Q tiles are the prologue.
//   top of step it:  cp.async.wait_group 1 (tile it landed) + __syncthreads   [also: dS^T free again]
//   end of phase 1:  __syncthreads                                            [dS^T complete; buffer
//                                                                              it & 1 free for tile it+2]
//
// Where things live:
//   registers      dK_w, dV_w accumulators (d/2 + d/2 floats), S^T and dP^T (32 floats each), P^T and
//                  dS^T as A fragments (16 registers each), the dQ accumulator (d/4 floats); d = 64:
//                  K_w and V_w A fragments (16 registers each)
//   shared memory  K_j, V_j (128 rows each), Q_i, dO_i (2 buffers x 64 rows each), storage dtype, rows
//                  padded by 8 elements (row stride an odd number of 16-byte units: d = 64: 9, d = 128:
//                  17, so the 8 row addresses of an ldmatrix phase hit 8 different 16-byte bank groups);
//                  dS^T [128 keys][64 + 8] (stride 9 x 16 bytes); LSE, D [2][64] fp32.
//                  d = 64: 93,184 B; d = 128: 158,720 B (fits the A100's 163 KiB, not the L4's 99 KiB).
//   global         K, V read once per block; Q, dO, LSE, D once per (block, Q tile) through L2
//                  (cp.async.cg; LSE and D 4 bytes at a time, cp.async.ca, any N); dq_acc added to
//                  with fp32 atomics; dK, dV written once.
//
// Run:  build/cuda/cuda-check --algo fa2_bwd_tc        (fp32 problems are skipped: use --algo fa2_bwd)
#include <climits>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "common/launch.cuh"
#include "kernels/fa2_backward_step.cuh"
#include "kernels/flash_common.cuh"
#include "kernels/launchers.hpp"
#include "kernels/mma_fragments.cuh"
#include "kernels/tile_rules.hpp"

namespace fasim::cuda_detail {

namespace {

// One block per SM at d = 128 (128 fp32 accumulators per thread: ptxas takes all 255 registers) and, at
// d = 64, too: two would need <= 128 registers, which ptxas reaches only with smaller phase-1 chunks
// (16 rows: more ldmatrix per mma, and the kernel is bound by shared-memory bandwidth) or spills.
constexpr int bwd_min_blocks_per_sm(int) { return 1; }

// Dynamic shared memory, in this order (every part a multiple of 16 bytes):
//   K_j [kBwdBc][d + 8], V_j [kBwdBc][d + 8], Q [2][kBwdBr][d + 8], dO [2][kBwdBr][d + 8]  (dtype)
//   dS^T [kBwdBc][kLdDs] (dtype), LSE [2][kBwdBr], D [2][kBwdBr] (fp32)
// (tile_rules::fa2_bwd_tc_smem_bytes, which the simulator reads too.)
constexpr std::size_t bwd_tc_smem_bytes(int d, int elem_bytes) { return tile_rules::fa2_bwd_tc_smem_bytes(d, elem_bytes); }

struct Fa2BwdTcParams {
    const void* Q;
    const void* K;
    const void* V;
    const void* dO;
    const float* lse;  // natural log; -inf for a row that sees no key
    const float* Dr;   // rowsum(dO * O)
    float* dq_acc;
    void* dK;  // [B*H][Nk][d]: dK itself, or dK_expanded with grouped K/V heads
    void* dV;
    int N, Nk;
    int group;  // query heads per K/V head (H / KV): K, V hold B*KV heads
    int causal;
    float scale;       // 1/sqrt(d)
    float scale_log2;  // scale * log2(e): exp(scale s - lse) = exp2(scale_log2 s - lse log2(e))
};

// Device helpers of the kernel body, which the sm_75 build leaves out (it compiles the kernel's stub).
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800

// 4 bytes global -> shared, asynchronous (cp.async.ca: the only cp.async of 4 bytes); valid = false
// writes 4 zero bytes and reads nothing. For LSE and D, whose rows are 4-byte aligned only.
__device__ __forceinline__ void cp_async_4(void* smem_dst, const void* gmem_src, bool valid) {
    const unsigned src_bytes = valid ? 4u : 0u;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(smem_dst)), "l"(gmem_src),
                 "r"(src_bytes)
                 : "memory");
}

#endif  // !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800

template <typename T, int D>
__global__ void __launch_bounds__(kBwdThreads, bwd_min_blocks_per_sm(D)) fa2_bwd_tc_kernel(Fa2BwdTcParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
    // Built for sm_75 too (the project's oldest target) but never launched there: the host refuses
    // devices below 8.0. Trap rather than return garbage should that check ever be bypassed.
    (void)p;
    __trap();
#else
    constexpr int LD = D + kBwdPad;  // row stride of K, V, Q, dO tiles, elements
    constexpr int KS_D = D / 16;     // k-steps over the head dim (S^T, dP^T)
    constexpr int NT_D = D / 8;      // n-tiles over the head dim (dV, dK)
    constexpr int DQ_COLS = D / 4;   // head-dim columns of a warp's dQ tile

    const int tid = static_cast<int>(threadIdx.x);
    const int warp = tid >> 5;
    const int lane = tid & 31;
    const int g = lane >> 2;  // groupID: C-fragment rows g and g + 8
    const int t = lane & 3;   // threadID_in_group: C-fragment columns 2t and 2t + 1 (of each 8)
    const int bh = static_cast<int>(blockIdx.y);
    const int k0 = static_cast<int>(blockIdx.x) * kBwdBc;  // first key of the block
    const int kw = k0 + 16 * warp;                         // first key of the warp (phase 1)
    const int diag = p.Nk - p.N;  // key k visible to query q iff k <= q + diag (bottom-right causal)
    const bool causal = p.causal != 0;

    // Q tiles that see the block: all, or (causal) those from the one holding the first row that sees key
    // k0 (row k0 - diag) to the last; none when even row N - 1 does not see it.
    const int n_q_tiles = ceil_div(p.N, kBwdBr);
    int i_begin = 0;
    if (causal) {
        const int first_row = k0 - diag;
        i_begin = first_row > p.N - 1 ? n_q_tiles : (first_row > 0 ? first_row / kBwdBr : 0);
    }
    const int n_iter = n_q_tiles - i_begin;

    float dv[NT_D][4];  // dV_w: dv[nt] = C fragment of keys kw + g (+8), dims 8nt + 2t (+1)
    float dk[NT_D][4];  // dK_w, the same layout (unscaled until the end)
#pragma unroll
    for (int nt = 0; nt < NT_D; ++nt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            dv[nt][i] = 0.f;
            dk[nt][i] = 0.f;
        }
    }

    T* Ks = reinterpret_cast<T*>(dynamic_smem());
    T* Vs = Ks + kBwdBc * LD;
    T* Qs = Vs + kBwdBc * LD;        // buffer b at Qs + b * kBwdBr * LD
    T* dOs = Qs + 2 * kBwdBr * LD;   // buffer b at dOs + b * kBwdBr * LD
    T* dsT = dOs + 2 * kBwdBr * LD;  // dS^T [kBwdBc][kLdDs]
    float* lse_s = reinterpret_cast<float*>(dsT + kBwdBc * kLdDs);  // [2][kBwdBr]
    float* dd_s = lse_s + 2 * kBwdBr;                                // [2][kBwdBr]

    const long long q_head = static_cast<long long>(bh) * p.N;   // first row of this head in Q, dO, LSE, D
    const long long k_head = static_cast<long long>(bh) * p.Nk;  // ... in dK, dV (expanded when grouped)
    // ... in K, V: the group's K/V head
    // (b * KV + h / group, which is bh / group since H = group * KV: one division)
    const long long kv_head = static_cast<long long>(bh / p.group) * p.Nk;
    const T* Qg = static_cast<const T*>(p.Q) + q_head * D;
    const T* dOg = static_cast<const T*>(p.dO) + q_head * D;
    const float* lse_g = p.lse + q_head;
    const float* dd_g = p.Dr + q_head;

    if (n_iter > 0) {
        // Copies of Q tile i (rows past N zero-filled) into buffer `buf`: Q, dO by all threads, LSE by
        // threads 0..63 and D by threads 64..127, one 4-byte row each.
        auto load_q_tile = [&](int i, int buf) {
            const int q0 = i * kBwdBr;
            const int rows = imin(kBwdBr, p.N - q0);
            load_tile_async<T, D, kBwdBr, LD, kBwdThreads>(Qs + buf * kBwdBr * LD, Qg, q0, rows);
            load_tile_async<T, D, kBwdBr, LD, kBwdThreads>(dOs + buf * kBwdBr * LD, dOg, q0, rows);
            if (tid < 2 * kBwdBr) {
                const int r = tid & (kBwdBr - 1);
                const bool valid = r < rows;
                const float* src = (tid < kBwdBr ? lse_g : dd_g) + (valid ? q0 + r : 0);
                float* dst = (tid < kBwdBr ? lse_s : dd_s) + buf * kBwdBr + r;
                cp_async_4(dst, src, valid);
            }
        };

        // Prologue. cp.async groups in issue order: {K_j, V_j, Q tile i_begin}, {Q tile i_begin + 1}
        // (possibly empty); then one group per step, committed after phase 1 of step it: Q tile it + 2
        // (possibly empty). So at the top of step it the newest group is tile it + 1's, and
        // wait_group 1 means tile it (and K_j, V_j) has landed.
        const int kv_rows = imin(kBwdBc, p.Nk - k0);
        load_tile_async<T, D, kBwdBc, LD, kBwdThreads>(Ks, static_cast<const T*>(p.K) + kv_head * D, k0, kv_rows);
        load_tile_async<T, D, kBwdBc, LD, kBwdThreads>(Vs, static_cast<const T*>(p.V) + kv_head * D, k0, kv_rows);
        load_q_tile(i_begin, 0);
        cp_async_commit();
        if (n_iter > 1) load_q_tile(i_begin + 1, 1);
        cp_async_commit();

        // Lane address offsets (elements) of the two ldmatrix patterns (BwdTcLane, fa2_backward_step.cuh): the
        // _a pattern for A operands and row-major B operands read with .trans (x4 = rows 0-7 / 8-15 of columns
        // 0-7, then of columns 8-15: b0, b1 of n-tile 2dp, then of 2dp+1), the _b pattern for B = Y^T operands
        // and the dS A operand read with .trans from dS^T (below).
        const BwdTcLane frag = bwd_tc_lane(lane);
        const int lrow_a = frag.lrow_a, lcol_a = frag.lcol_a, lrow_b = frag.lrow_b, lcol_b = frag.lcol_b;
        const T* k_arow = Ks + (16 * warp + lrow_a) * LD + lcol_a;  // K_w as the A operand of S^T
        const T* v_arow = Vs + (16 * warp + lrow_a) * LD + lcol_a;  // V_w as the A operand of dP^T
        // d = 64: K_w, V_w A fragments of the KS_D k-steps, loaded once (step 0, after K_j, V_j landed).
        // d = 128 has no room for them (2 x 32 registers) next to the 128 accumulators.
        constexpr bool kKvRegs = D == 64;
        unsigned kf[kKvRegs ? KS_D : 1][4];
        unsigned vf[kKvRegs ? KS_D : 1][4];
        // dS^T stores: this lane's C-fragment rows are keys 16w + g and 16w + g + 8, columns 2t, 2t+1.
        T* ds_row = dsT + (16 * warp + g) * kLdDs + 2 * t;

        // Phase 2's warp tile: query rows 32 wr .. 32 wr + 31, head-dim columns wc DQ_COLS .. + DQ_COLS.
        const int wr = warp >> 2, wc = warp & 3;
        // A = dS (16 query rows x 16 keys) from dS^T [key][row] by ldmatrix .trans: matrix i must be the
        // quarter (rows + 8 (i & 1), keys + 8 (i >> 1)) of A, i.e. the dS^T block of keys + 8 (i >> 1),
        // rows + 8 (i & 1); .trans gives lane 4g+t  M_i[2t][g], M_i[2t+1][g] = dS^T[key 2t, 2t+1][row g]
        // = A[g][2t, 2t+1]: the _b pattern with keys as rows.
        const T* ds_arow = dsT + lrow_b * kLdDs + 32 * wr + lcol_b;
        // B = K_j rows (row-major [key][dim] = [k][n]) by ldmatrix .trans: the _a pattern, as V in
        // pv_accumulate.
        const T* k_btrow = Ks + lrow_a * LD + wc * DQ_COLS + lcol_a;

        for (int it = 0; it < n_iter; ++it) {
            const int buf = it & 1;
            const int q0 = (i_begin + it) * kBwdBr;
            const T* Qb = Qs + buf * kBwdBr * LD;
            const T* dOb = dOs + buf * kBwdBr * LD;
            const float* lse_b = lse_s + buf * kBwdBr;
            const float* dd_b = dd_s + buf * kBwdBr;

            cp_async_wait<1>();  // this thread's copies of tile it (and K_j, V_j) have landed ...
            __syncthreads();     // ... and every thread's; every warp is done with step it - 1's dS^T
            if constexpr (kKvRegs) {
                if (it == 0) {
#pragma unroll
                    for (int ks = 0; ks < KS_D; ++ks) {
                        ldmatrix_x4(kf[ks], k_arow + 16 * ks);
                        ldmatrix_x4(vf[ks], v_arow + 16 * ks);
                    }
                }
            }

            // ---------------- phase 1: this warp's 16 keys against the 64 rows of Q tile it.
            // Warp-uniform: no row of the tile sees any of the warp's keys / some element is masked.
            const bool idle = kw >= p.Nk || (causal && kw > imin(q0 + kBwdBr, p.N) - 1 + diag);
            const bool need_mask = kw + 16 > p.Nk || q0 + kBwdBr > p.N || (causal && kw + 15 > q0 + diag);

            auto phase1 = [&](auto masked) {
                bwd_tc_phase1<T, D, decltype(masked)::value>(dv, dk, kf, vf, k_arow, v_arow, Qb, dOb, lse_b, dd_b, ds_row, frag,
                                                             BwdTcMask{kw, q0, p.N, p.Nk, diag, causal}, p.scale_log2);
            };
            if (idle) {
                // dS^T = 0 for the warp's 16 keys x 64 rows: lane -> key row lane / 2, 32 columns from
                // 32 (lane & 1), four 16-byte stores.
                T* dst = dsT + (16 * warp + (lane >> 1)) * kLdDs + 32 * (lane & 1);
#pragma unroll
                for (int v = 0; v < 4; ++v) *reinterpret_cast<uint4*>(dst + 8 * v) = make_uint4(0u, 0u, 0u, 0u);
            } else if (need_mask) {
                phase1(std::true_type{});
            } else {
                phase1(std::false_type{});
            }

            __syncthreads();  // every warp's dS^T in place; every warp done with Q, dO, LSE, D buffer `buf`

            // Q tile it + 2 into the buffer phase 1 just finished with (an empty group if none).
            if (it + 2 < n_iter) load_q_tile(i_begin + it + 2, buf);
            cp_async_commit();

            // ---------------- phase 2: dQ(part) = scale dS K_j for rows 32 wr .. + 31, dims wc d/4 .., added to dq_acc.
            float dq[2][D / 32][4];
            bwd_tc_dq_part<T, D>(dq, ds_arow, k_btrow);
            bwd_tc_add_dq<D>(dq, p.dq_acc, q_head, q0, p.N, wr, wc, frag, p.scale);
        }
        cp_async_wait<0>();  // nothing left in flight (only empty groups can be, but say so)
    }

    // ---- dK_j = scale dK, dV_j, written once; keys past Nk are not stored. dk[nt][2h], [2h+1] = key
    // kw + g + 8h, dims 8nt + 2t, 8nt + 2t + 1: one 32-bit store of two T.
    T* dKg = static_cast<T*>(p.dK) + k_head * D;
    T* dVg = static_cast<T*>(p.dV) + k_head * D;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int k = kw + g + 8 * h;
        if (k < p.Nk) {
            const long long row = static_cast<long long>(k) * D + 2 * t;
#pragma unroll
            for (int nt = 0; nt < NT_D; ++nt) {
                *reinterpret_cast<unsigned*>(dKg + row + 8 * nt) =
                    pack2<T>(p.scale * dk[nt][2 * h], p.scale * dk[nt][2 * h + 1]);
                *reinterpret_cast<unsigned*>(dVg + row + 8 * nt) = pack2<T>(dv[nt][2 * h], dv[nt][2 * h + 1]);
            }
        }
    }
#endif
}

template <typename T>
void launch_fa2_bwd_tc_dtype(const BackwardArgs& a, const Fa2BwdTcParams& p, CudaKernelLaunch& info,
                             cudaStream_t stream) {
    const dim3 grid(info.grid[0], info.grid[1], info.grid[2]);
    auto go = [&](auto kernel, int d) {
        info.dynamic_smem_bytes = bwd_tc_smem_bytes(d, static_cast<int>(sizeof(T)));
        info.registers_per_thread =
            launch_kernel("fa2_backward", kernel, grid, dim3(kBwdThreads), info.dynamic_smem_bytes, stream, p);
    };
    switch (a.d) {  // only d = 64 and 128 are instantiated (compile time)
        case 64: go(fa2_bwd_tc_kernel<T, 64>, 64); return;
        case 128: go(fa2_bwd_tc_kernel<T, 128>, 128); return;
        default: break;
    }
    throw std::invalid_argument(cuda_kernel("fa2_bwd_tc").unsupported(a.dtype, a.d, "--algo"));
}

// The main kernel: grid (ceil(Nk / Bc), B*H), 256 threads. With grouped K/V heads it writes dK_expanded,
// dV_expanded.
CudaKernelLaunch launch_fa2_bwd_tc_main(const BackwardArgs& a, cudaStream_t stream) {
    CudaKernelLaunch info;
    info.name = "fa2_backward";
    info.block_threads = kBwdThreads;
    info.Br = kBwdBr;
    info.Bc = kBwdBc;
    info.grid = {static_cast<unsigned>(ceil_div(a.Nk, kBwdBc)), static_cast<unsigned>(a.BH), 1u};
    const bool grouped = a.KV != a.H;
    if (a.H <= 0 || a.KV <= 0 || a.H % a.KV != 0 || a.BH % a.H != 0)
        throw std::invalid_argument("fa2_bwd_tc: " + std::to_string(a.KV) + " K/V heads must divide H = " +
                                    std::to_string(a.H) + " query heads, and H the " + std::to_string(a.BH) + " batch*heads");
    if (grouped && (a.dk_expanded == nullptr || a.dv_expanded == nullptr))
        throw std::invalid_argument("fa2_bwd_tc: grouped K/V heads need the dK_expanded and dV_expanded buffers. Fix: allocate "
                                    "the tensors with allocate_tensors(problem, kernel)");
    const Fa2BwdTcParams p{a.Q, a.K, a.V, a.dO, a.lse, a.D,
                           a.dq_acc, grouped ? a.dk_expanded : a.dK, grouped ? a.dv_expanded : a.dV,
                           a.N, a.Nk, a.H / a.KV, a.causal ? 1 : 0,
                           a.scale, static_cast<float>(static_cast<double>(a.scale) * 1.4426950408889634)};
    if (a.dtype == DType::fp16) {
        launch_fa2_bwd_tc_dtype<__half>(a, p, info, stream);
    } else {
        launch_fa2_bwd_tc_dtype<__nv_bfloat16>(a, p, info, stream);
    }
    return info;
}

// The launch table's entry for "fa2_bwd_tc" (kernels/launchers.hpp): fixed tiles, no choice.
TileChoice fa2_bwd_tc_tiles(int d, DType dtype, std::size_t smem_per_block) {
    const std::size_t need = bwd_tc_smem_bytes(d, static_cast<int>(dtype_bytes(dtype)));
    if (need > smem_per_block)
        throw std::invalid_argument("fa2_bwd_tc: its " + std::to_string(need) + " B of shared memory at d = " +
                                    std::to_string(d) + " do not fit the device's " + std::to_string(smem_per_block) +
                                    " B per block");
    return {kBwdBr, kBwdBc, need};
}

CudaLaunchInfo run_fa2_bwd_tc(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    BackwardArgs a = backward_args(p, t, "fa2_bwd_tc");
    // What the catalog says this kernel has code for (a guard for callers that bypass run_attention).
    const std::string unsupported = cuda_kernel("fa2_bwd_tc").unsupported(a.dtype, a.d, "--algo");
    if (!unsupported.empty()) throw std::invalid_argument(unsupported);
    const int cc = device_compute_capability();
    if (cc < 80) {
        throw std::runtime_error("fa2_bwd_tc needs compute capability 8.0+ (mma.m16n8k16 bf16); this GPU is " +
                                 std::to_string(cc / 10) + "." + std::to_string(cc % 10) + "; use --algo fa2_bwd");
    }
    (void)fa2_bwd_tc_tiles(a.d, a.dtype, device_smem_per_block());  // throws when the shared memory does not fit
    a.Br = tile_rules::kFa2BwdTcBr;
    a.Bc = tile_rules::kFa2BwdTcBc;
    CudaLaunchInfo info;
    info.kernels.push_back(launch_fa2_bwd_preprocess(a, a.Br, stream));
    info.kernels.push_back(launch_fa2_bwd_tc_main(a, stream));
    info.kernels.push_back(launch_fa2_bwd_convert_dq(a, a.Br, stream));
    if (p.grouped()) info.kernels.push_back(launch_fa2_bwd_sum_groups(a, stream));  // dK, dV over each group
    return info;
}
FASIM_REGISTER_KERNEL("fa2_bwd_tc", run_fa2_bwd_tc, fa2_bwd_tc_tiles);

}  // namespace

}  // namespace fasim::cuda_detail
