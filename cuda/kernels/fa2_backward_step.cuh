// FlashAttention-2's backward step on the tensor cores: what one warp of fa2_bwd_tc does for one Q tile,
// shared by the kernel (fa2_backward_tensor_core.cu, whose opening says what each product is, where every
// operand lives and why) and the backward-step probe (bench/backward_step.cu), which times the same step
// apart from the kernel's copies, so that the simulator's issue rate for it comes from a microbenchmark.
//
//   phase 1 (bwd_tc_phase1)   the warp's 16 keys against the tile's 64 query rows: S^T, P^T, dV_w += P^T dO,
//                             dP^T, dS^T, dK_w += dS^T Q, dS^T into shared memory
//   phase 2 (bwd_tc_dq_part)  after a barrier, the warp's part of dQ = dS K_j (32 rows x d/4 dims),
//           (bwd_tc_add_dq)   added to dq_acc with fp32 atomics
#pragma once

#include <climits>

#include "kernels/flash_common.cuh"
#include "kernels/mma_fragments.cuh"
#include "kernels/tile_rules.hpp"
#include "kernels/warp_tile_products.cuh"

namespace fasim::cuda_detail {

inline constexpr int kBwdBr = tile_rules::kFa2BwdTcBr;  // query rows per step
inline constexpr int kBwdBc = tile_rules::kFa2BwdTcBc;  // keys per block
inline constexpr int kBwdWarps = 8;
inline constexpr int kBwdThreads = 32 * kBwdWarps;
inline constexpr int kBwdPad = tile_rules::kFa2BwdTcPad;  // padding per shared-memory row, elements (16 bytes)
inline constexpr int kLdDs = kBwdBr + kBwdPad;            // row stride of the dS^T tile [key][query row], elements
static_assert(kBwdBc == 16 * kBwdWarps, "one m16 block of keys per warp");
static_assert(kBwdBr == 64, "dQ: 2 x 4 warps of 32 rows; LSE and D: one 4-byte copy per thread");
static_assert((kLdDs * 2 / 16) % 2 == 1, "dS^T rows: an odd number of 16-byte units");

// The lane's place in the mma fragments and its ldmatrix address offsets (elements):
//   lrow_a, lcol_a: row (lane & 7) + 8 ((lane >> 3) & 1), column 8 (lane >> 4)  -- A operands (x4 = the
//          four quarters in a[0..3] order) and row-major B operands read with .trans
//   lrow_b, lcol_b: row (lane & 7) + 8 (lane >> 4), column 8 ((lane >> 3) & 1)  -- B = Y^T operands, and the
//          dS A operand read with .trans from dS^T
//   g, t: groupID (C-fragment rows g and g + 8) and threadID_in_group (columns 2t and 2t + 1 of each 8)
struct BwdTcLane {
    int lrow_a, lcol_a, lrow_b, lcol_b, g, t;
};
__device__ __forceinline__ BwdTcLane bwd_tc_lane(int lane) {
    return {(lane & 7) + 8 * ((lane >> 3) & 1), 8 * (lane >> 4), (lane & 7) + 8 * (lane >> 4), 8 * ((lane >> 3) & 1),
            lane >> 2, lane & 3};
}

// What phase 1's mask needs: the warp's first key, the tile's first query row, the lengths, and the causal
// diagonal (key k visible to query q iff k <= q + diag).
struct BwdTcMask {
    int kw, q0, N, Nk, diag;
    bool causal;
};

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800

// The inverse of pack2: one register of two T -> two floats (lo = bits 0..15), exact.
template <typename T>
__device__ __forceinline__ float2 unpack2(unsigned u);
template <>
__device__ __forceinline__ float2 unpack2<__half>(unsigned u) {
    return __half22float2(*reinterpret_cast<const __half2*>(&u));
}
template <>
__device__ __forceinline__ float2 unpack2<__nv_bfloat16>(unsigned u) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u));
}

// dq_acc[0..1] += (a, b): one red.global.add.v2.f32 on sm_90 (the address is 8-byte aligned: an even
// column of an fp32 row of even length), two red.global.add.f32 before.
__device__ __forceinline__ void red_add2(float* addr, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd(reinterpret_cast<float2*>(addr), make_float2(a, b));
#else
    atomicAdd(addr, a);
    atomicAdd(addr + 1, b);
#endif
}

// c[nt] += A B for one warp, A = 16 rows of X (row-major [m][k] in shared memory), B = Y^T (Y row-major
// [n][k]): 16 x 8NT, over k = 16 KS. Both ldmatrix without .trans.
//   arow: the lane's A address: X row (lane & 7) + 8 ((lane >> 3) & 1), column 8 (lane >> 4), so that
//         matrix i of the x4 is the quarter (rows + 8 (i & 1), columns + 8 (i >> 1)): a[0..3] order.
//   brow: the lane's B address: Y row (lane & 7) + 8 (lane >> 4), column 8 ((lane >> 3) & 1); one x4 is
//         Y rows 16np..16np+15 x k 16ks..16ks+15: matrix 0 = b0 of n-tile 2np (rows +0..7, k +0..7),
//         1 = b1 of 2np (rows +0..7, k +8..15), 2 = b0 of 2np+1 (rows +8..15), 3 = b1 of 2np+1
//         (b0 = B[2t, 2t+1][g] = Y[g][2t, 2t+1]: ldmatrix gives lane 4g+t  M[g][2t, 2t+1]).
// k-steps outermost: each A fragment is loaded once and used for all NT n-tiles (NT independent
// accumulation chains).
template <typename T, int KS, int NT>
__device__ __forceinline__ void mma_a_bt(float (&c)[NT][4], const T* arow, const T* brow, int ld) {
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
        unsigned a[4];
        ldmatrix_x4(a, arow + 16 * ks);
#pragma unroll
        for (int np = 0; np < NT / 2; ++np) {
            unsigned b[4];
            ldmatrix_x4(b, brow + 16 * np * ld + 16 * ks);
            mma_16816<T>(c[2 * np], a, b[0], b[1]);
            mma_16816<T>(c[2 * np + 1], a, b[2], b[3]);
        }
    }
}


// Phase 1 of one Q tile for the warp's 16 keys (kw ..): dv, dk accumulate; dS^T (rounded) goes to ds_row
// (this lane's first element of the warp's dS^T rows). d = 64 holds K_w, V_w as A fragments (kf, vf); d = 128
// reads them from shared memory each time (k_arow, v_arow). kMasked: some element of the warp's 16 keys x 64
// rows is masked (causal diagonal, end of Nk or of N); the caller tells.
template <typename T, int D, bool kMasked>
__device__ __forceinline__ void bwd_tc_phase1(float (&dv)[D / 8][4], float (&dk)[D / 8][4],
                                              const unsigned (&kf)[D == 64 ? D / 16 : 1][4],
                                              const unsigned (&vf)[D == 64 ? D / 16 : 1][4], const T* k_arow,
                                              const T* v_arow, const T* Qb, const T* dOb, const float* lse_b,
                                              const float* dd_b, T* ds_row, const BwdTcLane& lane, const BwdTcMask& m,
                                              float scale_log2) {
    constexpr int LD = D + kBwdPad;  // row stride of K, V, Q, dO tiles, elements
    constexpr int KS_D = D / 16;     // k-steps over the head dim (S^T, dP^T)
    constexpr int NT_D = D / 8;      // n-tiles over the head dim (dV, dK)
    // Query rows per phase-1 chunk: S^T and dP^T of CH rows live at once (CH/2 fp32 registers each).
    // The whole tile: each K_w / V_w fragment is used for 8 n-tiles (8 independent mma chains). CH = 32
    // saves registers (d = 128: 248 instead of 255) for 16 more ldmatrix per warp and Q tile.
    constexpr int CH = kBwdBr;
    constexpr int NT_C = CH / 8;   // n-tiles of S^T, dP^T per chunk
    constexpr int KS_C = CH / 16;  // k-steps of dV, dK per chunk
    constexpr bool kKvRegs = D == 64;
    // The mask, per C-fragment row h (key kw + g + 8h): query q sees that key iff q < N and
    // q >= q_min[h] (causal: key - diag; else 0; a key past Nk: never).
    int q_min[2] = {0, 0};
    if constexpr (kMasked) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int k = m.kw + lane.g + 8 * h;
            q_min[h] = k >= m.Nk ? INT_MAX : (m.causal ? k - m.diag : 0);
        }
    }
#pragma unroll
    for (int c = 0; c < kBwdBr / CH; ++c) {
        const int r0 = c * CH;  // first tile row of the chunk
        // ---- S^T = K_w Q^T: s[nt][i] = key kw + g + 8 (i >> 1), tile row r0 + 8nt + 2t + (i & 1).
        float s[NT_C][4];
#pragma unroll
        for (int nt = 0; nt < NT_C; ++nt) {
#pragma unroll
            for (int i = 0; i < 4; ++i) s[nt][i] = 0.f;
        }
        if constexpr (kKvRegs) qk_scores<T, KS_D, NT_C>(s, kf, Qb + (r0 + lane.lrow_b) * LD + lane.lcol_b, LD);
        else mma_a_bt<T, KS_D, NT_C>(s, k_arow, Qb + (r0 + lane.lrow_b) * LD + lane.lcol_b, LD);

        // ---- P^T = exp2(scale_log2 S^T - LSE log2 e); the LSE of a column (query row) is read
        // as a float2 (rows 2t, 2t+1 of the n-tile; 4 addresses per warp, broadcast).
        // Masked elements are set to 0 (not exp of -inf: a row that sees no key has LSE = -inf).
#pragma unroll
        for (int nt = 0; nt < NT_C; ++nt) {
            const int r = r0 + 8 * nt + 2 * lane.t;
            const float2 l = *reinterpret_cast<const float2*>(lse_b + r);
            const float nl[2] = {-l.x * kLog2e, -l.y * kLog2e};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                float pv = fast_exp2(fmaf(s[nt][i], scale_log2, nl[i & 1]));
                if constexpr (kMasked) {
                    const int q = m.q0 + r + (i & 1);
                    if (q < q_min[i >> 1] || q >= m.N) pv = 0.f;
                }
                s[nt][i] = pv;
            }
        }
        // round(P^T) as A fragments of k-steps over the chunk's rows: pf[ks] = rows 16ks..16ks+15
        // = n-tiles 2ks, 2ks+1 (p_fragments: a[0] = C_2ks[0,1] = A[g][2t, 2t+1], ...).
        unsigned pf[KS_C][4];
        p_fragments<T, KS_C>(pf, s);

        // ---- dV_w += P^T dO (B = dO rows of the chunk, row-major [row][dim]: ldmatrix .trans).
        pv_accumulate<T, KS_C, NT_D>(dv, pf, dOb + (r0 + lane.lrow_a) * LD + lane.lcol_a, LD);

        // ---- dP^T = V_w dO^T, the same layout as s.
        float dp[NT_C][4];
#pragma unroll
        for (int nt = 0; nt < NT_C; ++nt) {
#pragma unroll
            for (int i = 0; i < 4; ++i) dp[nt][i] = 0.f;
        }
        if constexpr (kKvRegs) qk_scores<T, KS_D, NT_C>(dp, vf, dOb + (r0 + lane.lrow_b) * LD + lane.lcol_b, LD);
        else mma_a_bt<T, KS_D, NT_C>(dp, v_arow, dOb + (r0 + lane.lrow_b) * LD + lane.lcol_b, LD);

        // ---- dS^T = round(P^T) o (dP^T - D): the rounded P of n-tile nt, elements 0, 1 (key g) are
        // pf[nt / 2][2 (nt & 1)], elements 2, 3 (key g + 8) pf[nt / 2][2 (nt & 1) + 1]. Masked
        // elements have P = 0, hence dS = 0 (dP and D are finite; D = 0 past N).
#pragma unroll
        for (int nt = 0; nt < NT_C; ++nt) {
            const int r = r0 + 8 * nt + 2 * lane.t;
            const float2 dd = *reinterpret_cast<const float2*>(dd_b + r);
            const float2 p01 = unpack2<T>(pf[nt >> 1][2 * (nt & 1)]);
            const float2 p23 = unpack2<T>(pf[nt >> 1][2 * (nt & 1) + 1]);
            dp[nt][0] = p01.x * (dp[nt][0] - dd.x);
            dp[nt][1] = p01.y * (dp[nt][1] - dd.y);
            dp[nt][2] = p23.x * (dp[nt][2] - dd.x);
            dp[nt][3] = p23.y * (dp[nt][3] - dd.y);
        }
        unsigned dsf[KS_C][4];
        p_fragments<T, KS_C>(dsf, dp);

        // ---- dK_w += dS^T Q (B = Q rows of the chunk: ldmatrix .trans).
        pv_accumulate<T, KS_C, NT_D>(dk, dsf, Qb + (r0 + lane.lrow_a) * LD + lane.lcol_a, LD);

        // ---- dS^T to shared memory, [key][row]: dsf[ks][0] = dS^T[key g][rows r0 + 16ks + 2t, +1],
        // [1] = key g + 8, same rows; [2], [3] = rows + 8. Word address (g * 36 + t + const) mod 32
        // = 4g + t + const: the 32 lanes hit 32 different banks.
#pragma unroll
        for (int ks = 0; ks < KS_C; ++ks) {
            T* dst = ds_row + r0 + 16 * ks;
            *reinterpret_cast<unsigned*>(dst) = dsf[ks][0];
            *reinterpret_cast<unsigned*>(dst + 8 * kLdDs) = dsf[ks][1];
            *reinterpret_cast<unsigned*>(dst + 8) = dsf[ks][2];
            *reinterpret_cast<unsigned*>(dst + 8 * kLdDs + 8) = dsf[ks][3];
        }
    }
}

// Phase 2: the warp's part of dQ_i, dq = dS K_j for tile rows 32 wr .. 32 wr + 31 and head-dim columns
// wc d/4 .., unscaled: dq[mb][nt] = C fragment of tile rows 32 wr + 16 mb + g (+8), dims wc d/4 + 8nt + 2t
// (+1). ds_arow: this lane's A address in dS^T (ldmatrix .trans); k_btrow: its B address in K_j.
template <typename T, int D>
__device__ __forceinline__ void bwd_tc_dq_part(float (&dq)[2][D / 32][4], const T* ds_arow, const T* k_btrow) {
    constexpr int LD = D + kBwdPad;
    constexpr int NT_Q = D / 32;  // n-tiles of a warp's d/4 dQ columns
    static_assert(NT_Q % 2 == 0, "dQ columns in pairs of n-tiles");
#pragma unroll
    for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
        for (int nt = 0; nt < NT_Q; ++nt) {
#pragma unroll
            for (int i = 0; i < 4; ++i) dq[mb][nt][i] = 0.f;
        }
    }
#pragma unroll
    for (int ks = 0; ks < kBwdBc / 16; ++ks) {  // keys 16ks .. 16ks + 15
        unsigned a[2][4];
#pragma unroll
        for (int mb = 0; mb < 2; ++mb) ldmatrix_x4_trans(a[mb], ds_arow + 16 * ks * kLdDs + 16 * mb);
#pragma unroll
        for (int dp2 = 0; dp2 < NT_Q / 2; ++dp2) {
            unsigned b[4];
            ldmatrix_x4_trans(b, k_btrow + 16 * ks * LD + 16 * dp2);
#pragma unroll
            for (int mb = 0; mb < 2; ++mb) {
                mma_16816<T>(dq[mb][2 * dp2], a[mb], b[0], b[1]);
                mma_16816<T>(dq[mb][2 * dp2 + 1], a[mb], b[2], b[3]);
            }
        }
    }
}

// dq_acc rows q0 + 32 wr .., columns wc d/4 .. of the head starting at row q_head += scale dq.
template <int D>
__device__ __forceinline__ void bwd_tc_add_dq(const float (&dq)[2][D / 32][4], float* dq_acc, long long q_head, int q0,
                                              int N, int wr, int wc, const BwdTcLane& lane, float scale) {
    constexpr int DQ_COLS = D / 4;
    constexpr int NT_Q = DQ_COLS / 8;
    // Rows past N are not added (dq_acc has N rows per head).
#pragma unroll
    for (int mb = 0; mb < 2; ++mb) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int q = q0 + 32 * wr + 16 * mb + lane.g + 8 * h;
            if (q < N) {
                float* dst = dq_acc + (q_head + q) * D + wc * DQ_COLS + 2 * lane.t;
#pragma unroll
                for (int nt = 0; nt < NT_Q; ++nt) {
                    red_add2(dst + 8 * nt, scale * dq[mb][nt][2 * h], scale * dq[mb][nt][2 * h + 1]);
                }
            }
        }
    }
}

#endif  // !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800

}  // namespace fasim::cuda_detail
