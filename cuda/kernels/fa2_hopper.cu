// FlashAttention-2 forward on Hopper (sm_90a): the fourth rung of the kernel ladder (fa2.cu ->
// fa2_tensor_core.cu -> fa2_tensor_core_tuned.cu -> this file). The algorithm is still FA2's (one block
// per Q tile, the online softmax, O divided by l once); what changes is how the chip is driven, with the
// ideas of FlashAttention-3 (Shah et al., 2024):
//
//   - wgmma: a warpgroup (4 warps) multiplies a 64-row tile at once, its B operand (and for S = Q K^T its
//     A operand too) read by the tensor cores straight from shared memory through a descriptor: no
//     ldmatrix, no per-warp fragment loads. P stays in registers as the A operand of O = P V.
//   - TMA: the copy engine moves whole tiles (Q, K_j, V_j) from global to shared memory, 128-byte-swizzled
//     as wgmma reads them, and signals an mbarrier with the bytes it delivered. No thread computes addresses.
//   - warp specialisation: warpgroup 0 is the producer (one thread issues the copies, two stages ahead);
//     warpgroups 1 and 2 are consumers, each owning 64 rows of the 128-row Q tile. The producer gives its
//     registers away (setmaxnreg: 24 per thread) so that each consumer thread can hold S (64 fp32), O
//     (up to 64 fp32) and P (32 registers) at once (240 per thread).
//   - asynchronous overlap, twice: at d = 128 the two consumer warpgroups take turns issuing their products
//     (named barriers, FlashAttention-3's "ping-pong"), so that one warpgroup's softmax runs on the CUDA cores
//     and SFUs while the other's products run on the tensor cores; and inside a warpgroup, S_j = Q K_j^T is
//     issued together with O += P_{j-1} V_{j-1}, so that the softmax of S_j overlaps its own previous P V.
//     (The first version of this rung had neither: its two warpgroups waited for the same tiles and ran in
//     step, the tensor cores idle during both softmaxes: 405-630 TFLOP/s on an H200, cuda/results/
//     2026-11-26-h200-ladder.)
//
//   grid  = (ceil(N/128), B*H); block = 384 threads = 3 warpgroups; tiles Br = 128, Bc = 128, 2 stages.
//   shared memory: Q (128 x d), K and V (2 stages x 128 x d), as slabs of 64 columns, + 9 mbarriers:
//   160 KB at d = 128, 80 KB at d = 64.
//
// Barriers (parity = how many times the barrier completed before, mod 2):
//   q_full              the producer's expect_tx + the copy of Q
//   k_full[s], v_full[s]  the producer's expect_tx + the copies of K_j / V_j into stage s = j % 2
//   k_empty[s], v_empty[s] every consumer thread arrives once its products have read stage s
// Run:  build/cuda/cuda-check --algo fa2_wgmma   (an H100 or H200; other GPUs refuse it)
#include <cuda.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/launch.cuh"
#include "kernels/flash_common.cuh"
#include "kernels/hopper_primitives.cuh"
#include "kernels/launchers.hpp"
#include "kernels/mma_fragments.cuh"
#include "kernels/tensor_maps.hpp"
#include "kernels/tile_rules.hpp"

namespace fasim::cuda_detail {

namespace {

// The compilation passes for sm_75 and sm_80 see the kernel's body compiled out (it traps): they would call
// the constants below unreferenced.
#pragma nv_diag_suppress 177
constexpr int kBr = tile_rules::kFa2WgmmaBr;  // 2 consumer warpgroups x 64 rows
constexpr int kBc = tile_rules::kFa2WgmmaBc;
constexpr int kStages = tile_rules::kFa2WgmmaStages;
constexpr int kThreads = 3 * 128;
constexpr int kConsumerThreads = 2 * 128;
constexpr int kSlabCols = kTensorMapBoxCols;  // 16-bit elements per 128-byte swizzled row (a box)

struct WgmmaParams {
    void* O;
    float* lse;
    int N, Nk;
    int causal;
    float scale_log2;  // scale * log2(e)
};

// Byte offsets in the block's shared memory, from a 1 KB-aligned base.
template <int D>
struct SmemLayout {
    static constexpr int kQSlab = kBr * 128;             // one 64-column slab of the Q tile
    static constexpr int kKVSlab = kBc * 128;            // one 64-column slab of a K or V tile
    static constexpr int kQBytes = kBr * D * 2;
    static constexpr int kKVBytes = kBc * D * 2;         // a K or a V tile
    static constexpr int kQ = 0;
    static constexpr int kK = kQBytes;                   // + stage * kKVBytes
    static constexpr int kV = kK + kStages * kKVBytes;   // + stage * kKVBytes
    static constexpr int kBarriers = kV + kStages * kKVBytes;
    static constexpr int kBytes = kBarriers + 9 * 8;
};
#pragma nv_diag_default 177
static_assert(SmemLayout<128>::kBytes + 1024 == static_cast<int>(tile_rules::fa2_wgmma_smem_bytes(128)),
              "the tile rule's shared memory is the kernel's");
static_assert(SmemLayout<64>::kBytes + 1024 == static_cast<int>(tile_rules::fa2_wgmma_smem_bytes(64)),
              "the tile rule's shared memory is the kernel's");

template <typename T, int D>
__global__ void __launch_bounds__(kThreads, 1)
    fa2_wgmma_kernel(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
                     const __grid_constant__ CUtensorMap tv, WgmmaParams p) {
#if !defined(__CUDA_ARCH_FEAT_SM90_ALL)
    // wgmma, setmaxnreg and this use of the copy engine exist on sm_90a only; the host launches this kernel
    // on compute capability 9.0 alone, where the sm_90a code is what runs.
    (void)tq, (void)tk, (void)tv, (void)p;
    __trap();
#else
    using namespace hopper;
    using L = SmemLayout<D>;
    constexpr int kSlabs = D / kSlabCols;
    unsigned char* base = reinterpret_cast<unsigned char*>(
        (reinterpret_cast<std::uintptr_t>(dynamic_smem()) + 1023) & ~std::uintptr_t{1023});
    std::uint64_t* bars = reinterpret_cast<std::uint64_t*>(base + L::kBarriers);
    std::uint64_t* q_full = bars;
    std::uint64_t* k_full = bars + 1;   // [kStages]
    std::uint64_t* v_full = bars + 3;
    std::uint64_t* k_empty = bars + 5;
    std::uint64_t* v_empty = bars + 7;

    const int warpgroup = static_cast<int>(threadIdx.x) / 128;
    const int bh = static_cast<int>(blockIdx.y);
    const int q0 = static_cast<int>(blockIdx.x) * kBr;
    const int q_rows = imin(kBr, p.N - q0);
    const int n_tiles = visible_kv_tiles(q0, q_rows, p.N, p.Nk, kBc, p.causal != 0);

    if (threadIdx.x == 0) {
        mbarrier_init(q_full, 1);
        for (int s = 0; s < kStages; ++s) {
            mbarrier_init(&k_full[s], 1);
            mbarrier_init(&v_full[s], 1);
            mbarrier_init(&k_empty[s], kConsumerThreads);
            mbarrier_init(&v_empty[s], kConsumerThreads);
        }
        mbarrier_init_fence();
    }
    __syncthreads();

    if (warpgroup == 0) {
        // ---- producer: one thread keeps the copy engine two stages ahead of the consumers.
        setmaxnreg_dec<24>();
        if (threadIdx.x == 0) {
            mbarrier_arrive_expect_tx(q_full, L::kQBytes);
            for (int s = 0; s < kSlabs; ++s) tma_load_3d(base + L::kQ + s * L::kQSlab, &tq, q_full, s * kSlabCols, q0, bh);
            for (int j = 0; j < n_tiles; ++j) {
                const int st = j % kStages;
                const unsigned use = static_cast<unsigned>(j / kStages);  // how many times stage st was filled before
                if (use > 0) mbarrier_wait(&k_empty[st], (use - 1) & 1);
                mbarrier_arrive_expect_tx(&k_full[st], L::kKVBytes);
                for (int s = 0; s < kSlabs; ++s)
                    tma_load_3d(base + L::kK + st * L::kKVBytes + s * L::kKVSlab, &tk, &k_full[st], s * kSlabCols, j * kBc, bh);
                if (use > 0) mbarrier_wait(&v_empty[st], (use - 1) & 1);
                mbarrier_arrive_expect_tx(&v_full[st], L::kKVBytes);
                for (int s = 0; s < kSlabs; ++s)
                    tma_load_3d(base + L::kV + st * L::kKVBytes + s * L::kKVSlab, &tv, &v_full[st], s * kSlabCols, j * kBc, bh);
            }
        }
        return;
    }

    // ---- consumers: warpgroup c = 0, 1 owns rows [64c, 64c + 64) of the Q tile.
    setmaxnreg_inc<240>();
    const int c = warpgroup - 1;
    const int tid = static_cast<int>(threadIdx.x) - 128 * warpgroup;
    const int warp = tid >> 5, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3;
    const int wq0 = q0 + 64 * c;               // the warpgroup's first query row
    const int row0 = wq0 + 16 * warp + g;      // this thread's rows: row0 and row0 + 8
    const int diag = p.Nk - p.N;               // key k visible to query q iff k <= q + diag

    float o[D / 2];
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
    float m[2] = {-INFINITY, -INFINITY};  // rows row0 + 8h, log2 units
    float l[2] = {0.f, 0.f};              // over this lane's columns only; the quad's sums are added at the end
    float s[kBc / 2];                     // S_j, then P_j unrounded (the accumulator layout above)
    unsigned pf[kBc / 16][4];             // P_j rounded to the storage dtype: the A operand of O += P_j V_j

    const unsigned char* Qw = base + L::kQ + 64 * c * 128;  // the warpgroup's 64 rows of every Q slab

    // Ping-pong: the two warpgroups take turns issuing their products (named barriers 1 and 2), so that one
    // warpgroup's softmax runs while the other's products keep the tensor cores busy; left to themselves they
    // would march in step (both wait for the same K/V tile) and leave the tensor cores idle during both
    // softmaxes. Warpgroup 0 goes first: warpgroup 1 passes it the first turn. Each turn is taken once per tile
    // and once more for the last P V; warpgroup 1 does not pass its last turn (nobody would take it). No branch
    // may sit between a product's issue and its wait (ptxas would serialize the products, warning C7520), so the
    // turn is passed unconditionally there, and the last one after the wait.
    // Only at d = 128: at d = 64 the products are half as long and the softmax is the longer part, so waiting for
    // the other warpgroup's turn serializes the softmaxes instead; there the two warpgroups run freely (ping-pong
    // at d = 64 measured 1-5% slower, cuda/results/2026-11-26-h200-ladder-b), one tile at a time (below).
    constexpr bool kPipelined = D >= 128;
    constexpr bool kPingPong = kPipelined;
    const int my_turn = 1 + c, other_turn = 2 - c;
    auto take_turn = [&] {
        if constexpr (kPingPong) named_barrier_sync(my_turn, kConsumerThreads);
    };
    auto pass_turn = [&] {
        if constexpr (kPingPong) named_barrier_arrive(other_turn, kConsumerThreads);
    };
    if (n_tiles > 0 && c == 1) pass_turn();

    // S_j = Q K_j^T: 64 x 128 per warpgroup, d / 16 products of k = 16 (4 per 64-column slab); one wgmma group.
    auto issue_scores = [&](int st) {
        const unsigned char* Kt = base + L::kK + st * L::kKVBytes;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const int slab = kk / 4, within = 32 * (kk % 4);
            const std::uint64_t a = smem_desc(Qw + slab * L::kQSlab + within, 16, 1024);
            const std::uint64_t b = smem_desc(Kt + slab * L::kKVSlab + within, 16, 1024);
            wgmma_ss<T, kBc>(s, a, b, kk > 0 ? 1 : 0);
        }
        wgmma_commit();
    };
    // O += P V_j: 64 x d per warpgroup, 128 / 16 products of k = 16, V read N-major (transposed); one group.
    auto issue_pv = [&](int st) {
        const unsigned char* Vt = base + L::kV + st * L::kKVBytes;
#pragma unroll
        for (int kk = 0; kk < kBc / 16; ++kk) wgmma_rs_trans_b<T, D>(o, pf[kk], smem_desc(Vt + kk * 16 * 128, L::kKVSlab, 1024));
        wgmma_commit();
    };
    // The mask and the online softmax of S_j in place (s becomes P_j, unrounded); returns each row's rescale
    // factor alpha = exp(m_old - m_new) for O, which the caller applies once O's pending products are done.
    auto softmax = [&](int j, float (&alpha)[2]) {
        const int k0 = j * kBc;
        // s[4i + e] is row row0 + 8 (e >> 1), key k0 + 8i + 2t + (e & 1).
        if (k0 + kBc > p.Nk || (p.causal != 0 && k0 + kBc - 1 > wq0 + diag)) {
#pragma unroll
            for (int i = 0; i < kBc / 8; ++i)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int q = row0 + 8 * (e >> 1);
                    const int k = k0 + 8 * i + 2 * t + (e & 1);
                    if (k >= p.Nk || (p.causal != 0 && k > q + diag)) s[4 * i + e] = -INFINITY;
                }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // a row's 128 scores are spread over the 4 lanes of a quad
            float mx = -INFINITY;
#pragma unroll
            for (int i = 0; i < kBc / 8; ++i) mx = fmaxf(mx, fmaxf(s[4 * i + 2 * h], s[4 * i + 2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 2));
            const float m_new = fmaxf(m[h], mx * p.scale_log2);
            const float m_use = m_new == -INFINITY ? 0.f : m_new;  // nothing visible yet: P = 0, no NaN
            alpha[h] = fast_exp2(m[h] - m_use);
            float sum = 0.f;
#pragma unroll
            for (int i = 0; i < kBc / 8; ++i) {
                s[4 * i + 2 * h] = fast_exp2(fmaf(s[4 * i + 2 * h], p.scale_log2, -m_use));
                s[4 * i + 2 * h + 1] = fast_exp2(fmaf(s[4 * i + 2 * h + 1], p.scale_log2, -m_use));
                sum += s[4 * i + 2 * h] + s[4 * i + 2 * h + 1];
            }
            l[h] = l[h] * alpha[h] + sum;
            m[h] = m_new;
        }
    };
    // O rescaled by alpha, and P_j rounded into the A fragments of each k-step of 16 keys (slices 2kk, 2kk + 1).
    auto rescale_and_pack = [&](const float (&alpha)[2]) {
#pragma unroll
        for (int i = 0; i < D / 8; ++i) {
            o[4 * i + 0] *= alpha[0];
            o[4 * i + 1] *= alpha[0];
            o[4 * i + 2] *= alpha[1];
            o[4 * i + 3] *= alpha[1];
        }
#pragma unroll
        for (int kk = 0; kk < kBc / 16; ++kk) {
            pf[kk][0] = pack2<T>(s[8 * kk + 0], s[8 * kk + 1]);
            pf[kk][1] = pack2<T>(s[8 * kk + 2], s[8 * kk + 3]);
            pf[kk][2] = pack2<T>(s[8 * kk + 4], s[8 * kk + 5]);
            pf[kk][3] = pack2<T>(s[8 * kk + 6], s[8 * kk + 7]);
        }
    };

    mbarrier_wait(q_full, 0);
    float alpha[2];
    if constexpr (kPipelined) {
        // Tile 0: its scores and softmax (O is still zero).
        if (n_tiles > 0) {
            mbarrier_wait(&k_full[0], 0);
            take_turn();
            wgmma_fence();
            issue_scores(0);
            pass_turn();
            wgmma_wait<0>();
            fence_registers(s);
            mbarrier_arrive(&k_empty[0]);
            softmax(0, alpha);
            rescale_and_pack(alpha);
        }
        // Tile j: S_j = Q K_j^T and O += P_{j-1} V_{j-1} issued together in this warpgroup's turn; the softmax of
        // S_j runs while P_{j-1} V_{j-1} (and the other warpgroup's products) are still on the tensor cores.
        for (int j = 1; j < n_tiles; ++j) {
            const int st = j % kStages, prev = (j - 1) % kStages;
            mbarrier_wait(&k_full[st], static_cast<unsigned>(j / kStages) & 1);
            mbarrier_wait(&v_full[prev], static_cast<unsigned>((j - 1) / kStages) & 1);  // long since there, as a rule
            take_turn();
            wgmma_fence();  // no waiting loop between here and the products: ptxas would add a fence of its own
            issue_scores(st);
            issue_pv(prev);
            pass_turn();
            wgmma_wait<1>();  // S_j is done; P_{j-1} V_{j-1} may still run
            fence_registers(s);
            mbarrier_arrive(&k_empty[st]);
            softmax(j, alpha);
            wgmma_wait<0>();  // P_{j-1} V_{j-1} is done: O and the old P fragments are free
            fence_registers(o);
            fence_registers(pf);
            mbarrier_arrive(&v_empty[prev]);
            rescale_and_pack(alpha);
        }
        // The last tile's P V.
        if (n_tiles > 0) {
            const int last = (n_tiles - 1) % kStages;
            mbarrier_wait(&v_full[last], static_cast<unsigned>((n_tiles - 1) / kStages) & 1);
            take_turn();
            wgmma_fence();
            issue_pv(last);
            wgmma_wait<0>();
            fence_registers(o);
            mbarrier_arrive(&v_empty[last]);
            if (c == 0) pass_turn();
        }
    } else {
        // d = 64: one tile at a time, products and softmax in turn: the first version's loop, as it was (issuing S_j
        // with P_{j-1} V_{j-1} made this head dim 10-20% slower on an H200, cuda/results/2026-11-26-h200-ladder-c, and
        // the same schedule written with the pipelined path's helpers 7% slower, -d).
        for (int j = 0; j < n_tiles; ++j) {
            const int st = j % kStages;
            const unsigned parity = static_cast<unsigned>(j / kStages) & 1;
            const int k0 = j * kBc;
            const unsigned char* Kt = base + L::kK + st * L::kKVBytes;
            const unsigned char* Vt = base + L::kV + st * L::kKVBytes;

            // ---- S = Q K_j^T: 64 x 128 per warpgroup, d / 16 products of k = 16 (4 per 64-column slab).
            float s[kBc / 2];  // (this schedule's own: declared here, as the first version did)
            mbarrier_wait(&k_full[st], parity);
            wgmma_fence();
    #pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
                const int slab = kk / 4, within = 32 * (kk % 4);
                const std::uint64_t a = smem_desc(Qw + slab * L::kQSlab + within, 16, 1024);
                const std::uint64_t b = smem_desc(Kt + slab * L::kKVSlab + within, 16, 1024);
                wgmma_ss<T, kBc>(s, a, b, kk > 0 ? 1 : 0);
            }
            wgmma_commit();
            wgmma_wait<0>();
            fence_registers(s);
            mbarrier_arrive(&k_empty[st]);  // this thread's part of the products has read K_j

            // ---- mask: s[4i + e] is row row0 + 8 (e >> 1), key k0 + 8i + 2t + (e & 1).
            const bool need_mask = k0 + kBc > p.Nk || (p.causal != 0 && k0 + kBc - 1 > wq0 + diag);
            if (need_mask) {
    #pragma unroll
                for (int i = 0; i < kBc / 8; ++i)
    #pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int q = row0 + 8 * (e >> 1);
                        const int k = k0 + 8 * i + 2 * t + (e & 1);
                        if (k >= p.Nk || (p.causal != 0 && k > q + diag)) s[4 * i + e] = -INFINITY;
                    }
            }

            // ---- online softmax, rows h = 0, 1 (a row's 128 scores are spread over the 4 lanes of a quad).
    #pragma unroll
            for (int h = 0; h < 2; ++h) {
                float mx = -INFINITY;
    #pragma unroll
                for (int i = 0; i < kBc / 8; ++i) mx = fmaxf(mx, fmaxf(s[4 * i + 2 * h], s[4 * i + 2 * h + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 2));
                const float m_new = fmaxf(m[h], mx * p.scale_log2);
                const float m_use = m_new == -INFINITY ? 0.f : m_new;  // nothing visible yet: P = 0, no NaN
                const float alpha = fast_exp2(m[h] - m_use);
                float sum = 0.f;
    #pragma unroll
                for (int i = 0; i < kBc / 8; ++i) {
                    s[4 * i + 2 * h] = fast_exp2(fmaf(s[4 * i + 2 * h], p.scale_log2, -m_use));
                    s[4 * i + 2 * h + 1] = fast_exp2(fmaf(s[4 * i + 2 * h + 1], p.scale_log2, -m_use));
                    sum += s[4 * i + 2 * h] + s[4 * i + 2 * h + 1];
                }
                l[h] = l[h] * alpha + sum;
                m[h] = m_new;
    #pragma unroll
                for (int i = 0; i < D / 8; ++i) {
                    o[4 * i + 2 * h] *= alpha;
                    o[4 * i + 2 * h + 1] *= alpha;
                }
            }
            // P, rounded to the storage dtype, as the A operand of each k-step of 16 keys.
            unsigned pf[kBc / 16][4];  // likewise
    #pragma unroll
            for (int kk = 0; kk < kBc / 16; ++kk) {
                pf[kk][0] = pack2<T>(s[8 * kk + 0], s[8 * kk + 1]);
                pf[kk][1] = pack2<T>(s[8 * kk + 2], s[8 * kk + 3]);
                pf[kk][2] = pack2<T>(s[8 * kk + 4], s[8 * kk + 5]);
                pf[kk][3] = pack2<T>(s[8 * kk + 6], s[8 * kk + 7]);
            }

            // ---- O += P V_j: 64 x d per warpgroup, 128 / 16 products of k = 16, V read N-major (transposed).
            mbarrier_wait(&v_full[st], parity);
            wgmma_fence();
    #pragma unroll
            for (int kk = 0; kk < kBc / 16; ++kk) {
                const std::uint64_t b = smem_desc(Vt + kk * 16 * 128, L::kKVSlab, 1024);
                wgmma_rs_trans_b<T, D>(o, pf[kk], b);
            }
            wgmma_commit();
            wgmma_wait<0>();
            fence_registers(o);
            mbarrier_arrive(&v_empty[st]);
        }
    }

    // ---- epilogue: O / l in the storage dtype and LSE, written once; rows past N are not stored.
    T* Og = static_cast<T*>(p.O) + static_cast<long long>(bh) * p.N * D;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float lsum = l[h];
        lsum += __shfl_xor_sync(kFullMask, lsum, 1);
        lsum += __shfl_xor_sync(kFullMask, lsum, 2);
        const float inv = lsum > 0.f ? 1.f / lsum : 0.f;  // a row that saw no key: O = 0, LSE = -inf
        const int q = row0 + 8 * h;
        if (q < p.N) {
            T* orow = Og + static_cast<long long>(q) * D + 2 * t;
#pragma unroll
            for (int i = 0; i < D / 8; ++i)
                *reinterpret_cast<unsigned*>(orow + 8 * i) = pack2<T>(o[4 * i + 2 * h] * inv, o[4 * i + 2 * h + 1] * inv);
            if (t == 0) p.lse[static_cast<long long>(bh) * p.N + q] = lsum > 0.f ? (m[h] + log2f(lsum)) * kLn2 : -INFINITY;
        }
    }
#endif
}

template <typename T, int D>
CudaKernelLaunch launch_dtype_dim(const FlashArgs& a, cudaStream_t stream) {
    CudaKernelLaunch info;
    info.name = "fa2_wgmma_forward";
    info.block_threads = kThreads;
    info.Br = kBr;
    info.Bc = kBc;
    info.grid = {static_cast<unsigned>(ceil_div(a.N, kBr)), static_cast<unsigned>(a.BH), 1u};
    info.dynamic_smem_bytes = tile_rules::fa2_wgmma_smem_bytes(D);
    const CUtensorMap tq = tensor_map_16bit("fa2_wgmma", a.Q, a.BH, a.N, D, kBr, a.dtype);
    const CUtensorMap tk = tensor_map_16bit("fa2_wgmma", a.K, a.BH, a.Nk, D, kBc, a.dtype);
    const CUtensorMap tv = tensor_map_16bit("fa2_wgmma", a.V, a.BH, a.Nk, D, kBc, a.dtype);
    const WgmmaParams p{a.O, a.lse, a.N, a.Nk, a.causal ? 1 : 0,
                        static_cast<float>(static_cast<double>(a.scale) * 1.4426950408889634)};
    info.registers_per_thread = launch_kernel("fa2_wgmma_forward", fa2_wgmma_kernel<T, D>, dim3(info.grid[0], info.grid[1]),
                                              dim3(kThreads), info.dynamic_smem_bytes, stream, tq, tk, tv, p);
    return info;
}

CudaKernelLaunch launch_fa2_wgmma(const FlashArgs& a, cudaStream_t stream) {
    const std::string unsupported = cuda_kernel("fa2_wgmma").unsupported(a.dtype, a.d, "--algo");
    if (!unsupported.empty()) throw std::invalid_argument(unsupported);
    if (a.O == nullptr || a.lse == nullptr || a.Q == nullptr || a.K == nullptr || a.V == nullptr)
        throw std::invalid_argument("fa2_wgmma: Q, K, V, O and LSE buffers are required");
#if !defined(FASIM_CUDA_SM90A)
    throw std::runtime_error("fa2_wgmma was built without sm_90a code (CMAKE_CUDA_ARCHITECTURES has no 90a): configure "
                             "with -DCMAKE_CUDA_ARCHITECTURES=\"75;80;90a\" (the default) or \"90a\"; or use --algo fa2_tc_tuned");
#endif
    const int cc = device_compute_capability();
    if (cc != 90)
        throw std::runtime_error("fa2_wgmma needs a Hopper GPU (compute capability 9.0: wgmma, TMA); this GPU is " +
                                 std::to_string(cc / 10) + "." + std::to_string(cc % 10) + "; use --algo fa2_tc_tuned");
    const bool fp16 = a.dtype == DType::fp16;
    if (a.d == 64) return fp16 ? launch_dtype_dim<__half, 64>(a, stream) : launch_dtype_dim<__nv_bfloat16, 64>(a, stream);
    return fp16 ? launch_dtype_dim<__half, 128>(a, stream) : launch_dtype_dim<__nv_bfloat16, 128>(a, stream);
}

// The launch table's entry (kernels/launchers.hpp): the catalog row's rule, the one the simulator applies.
TileChoice fa2_wgmma_tiles(int d, DType dtype, std::size_t smem_per_block) {
    return kernel_tiles(cuda_kernel("fa2_wgmma"), d, dtype, smem_per_block);
}
CudaLaunchInfo run_fa2_wgmma(const CudaProblem& p, const DeviceTensors& t, cudaStream_t stream) {
    FlashArgs f = flash_args(p, t, "fa2_wgmma");
    set_lse(f, p, t, "fa2_wgmma");
    return {{launch_fa2_wgmma(f, stream)}};
}
FASIM_REGISTER_KERNEL("fa2_wgmma", run_fa2_wgmma, fa2_wgmma_tiles);

}  // namespace

}  // namespace fasim::cuda_detail
