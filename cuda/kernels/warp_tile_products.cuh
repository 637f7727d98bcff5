// The two products of a tensor-core attention step, for one warp and one 16-row block of queries,
// with operands in shared memory (rows padded to stride LD) and fragments as mma_fragments.cuh lays
// them out, and FlashAttention-2's online softmax between them. The mma.sync kernels (fa1_tensor_core.cu,
// fa2_tensor_core.cu, fa2_backward_tensor_core.cu, flash_decoding.cu) and the attention-step probe
// (bench/attention_step.cu) build their steps from these; FA1's softmax, with its per-tile statistics, is
// its own.
//
//   qk_scores<T, KS_D, NT_S>(s, qf, krow, LD)     s += Q K^T: 16 rows x 8*NT_S keys, over 16*KS_D dims
//   p_fragments<T, KS_KV>(pf, s)                  P (the exponentiated s) rounded to T, as A fragments
//   online_softmax_step<NT_S, NT_O>(s, m, l, o, scale_log2)
//                                                 FlashAttention-2's softmax between them: s becomes P, m, l
//                                                 and o rescaled
//   pv_accumulate<T, KS_KV, NT_O>(o, pf, vrow, LD) o += P V: 16 rows x 8*NT_O dims, over 16*KS_KV keys
//   swizzled_chunk<ROWS>(tile, row, chunk)         an address in a tile the copy engine wrote 128-byte-swizzled
//
// krow and vrow are this lane's ldmatrix row addresses (see each function); the products also take a
// function of the step that gives the address, for tiles in other layouts. Call only from code
// compiled for __CUDA_ARCH__ >= 800.
#pragma once

#include <cmath>

#include "kernels/mma_fragments.cuh"

namespace fasim::cuda_detail {

// s[nt] += the C fragment of Q K^T for keys 8nt .. 8nt+7. qf[ks] = Q's A fragment of dims 16ks ..
// 16ks+15 (held in registers). B = K^T, so B fragments are ldmatrix (no .trans) of K's rows; one x4
// covers keys 16np .. 16np+15 x dims 16ks .. 16ks+15: matrix 0 = keys +0..7 / dims +0..7 (b0 of n-tile
// 2np), 1 = keys +0..7 / dims +8..15 (b1 of 2np), 2 = keys +8..15 / dims +0..7 (b0 of 2np+1),
// 3 = keys +8..15 / dims +8..15 (b1 of 2np+1). krow = the warp's first key row + (lane & 7) +
// 8 * (lane >> 4), column 8 * ((lane >> 3) & 1).
// k_at(np, ks): this lane's ldmatrix address for keys 16np.. and dims 16ks.. (the overload below: padded rows).
template <typename T, int KS_D, int NT_S, typename KAddress>
__device__ __forceinline__ void qk_scores(float (&s)[NT_S][4], const unsigned (&qf)[KS_D][4], KAddress k_at) {
#pragma unroll
    for (int np = 0; np < NT_S / 2; ++np) {
#pragma unroll
        for (int ks = 0; ks < KS_D; ++ks) {
            unsigned b[4];
            ldmatrix_x4(b, k_at(np, ks));
            mma_16816<T>(s[2 * np], qf[ks], b[0], b[1]);
            mma_16816<T>(s[2 * np + 1], qf[ks], b[2], b[3]);
        }
    }
}
template <typename T, int KS_D, int NT_S>
__device__ __forceinline__ void qk_scores(float (&s)[NT_S][4], const unsigned (&qf)[KS_D][4], const T* krow, int ld) {
    qk_scores<T>(s, qf, [&](int np, int ks) { return krow + 16 * np * ld + 16 * ks; });
}

// One step's online softmax (FlashAttention-2's), rows h = 0 (g) and h = 1 (g + 8) of the 16-row block. Row
// g + 8h is held by the quad of lanes 4g .. 4g+3, elements s[.][2h], s[.][2h+1]; xor-shuffles 1 and 2 stay
// inside the quad. m is in log2 units (scale * log2 e applied); the max is taken on raw scores (scale > 0),
// and P = 2^(s * scale_log2 - m) is one FFMA and one ex2 per element. s becomes the unrounded P, l (this
// lane's columns' running sum) and o (the running output, C fragments of rows g, g + 8) are rescaled by
// exp(m_old - m_new) and l gains P's sum.
template <int NT_S, int NT_O>
__device__ __forceinline__ void online_softmax_step(float (&s)[NT_S][4], float (&m)[2], float (&l)[2], float (&o)[NT_O][4],
                                                    float scale_log2) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < NT_S; ++nt) mx = fmaxf(mx, fmaxf(s[nt][2 * h], s[nt][2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m[h], mx * scale_log2);
        const float m_use = m_new == -INFINITY ? 0.f : m_new;  // nothing visible yet: P = 0, no NaN
        const float alpha = fast_exp2(m[h] - m_use);          // exp(m_old - m_new); 0 when m_old = -inf
        float sum = 0.f;
#pragma unroll
        for (int nt = 0; nt < NT_S; ++nt) {
            s[nt][2 * h] = fast_exp2(fmaf(s[nt][2 * h], scale_log2, -m_use));
            s[nt][2 * h + 1] = fast_exp2(fmaf(s[nt][2 * h + 1], scale_log2, -m_use));
            sum += s[nt][2 * h] + s[nt][2 * h + 1];  // the unrounded P, as fa2.cu sums it
        }
        l[h] = l[h] * alpha + sum;
        m[h] = m_new;
#pragma unroll
        for (int nt = 0; nt < NT_O; ++nt) {
            o[nt][2 * h] *= alpha;
            o[nt][2 * h + 1] *= alpha;
        }
    }
}

// P as A fragments, straight from the score accumulators (no shared memory): the C fragments of
// n-tiles 2ks and 2ks+1 hold rows g, g+8 x keys 16ks + {2t, 2t+1} and 16ks + 8 + {2t, 2t+1}, exactly
// the A fragment of k-step ks: a[0] = C_2ks[0,1], a[1] = C_2ks[2,3], a[2] = C_2ks+1[0,1],
// a[3] = C_2ks+1[2,3]. pack2 rounds P to the storage dtype.
template <typename T, int KS_KV>
__device__ __forceinline__ void p_fragments(unsigned (&pf)[KS_KV][4], const float (&s)[2 * KS_KV][4]) {
#pragma unroll
    for (int ks = 0; ks < KS_KV; ++ks) {
        pf[ks][0] = pack2<T>(s[2 * ks][0], s[2 * ks][1]);
        pf[ks][1] = pack2<T>(s[2 * ks][2], s[2 * ks][3]);
        pf[ks][2] = pack2<T>(s[2 * ks + 1][0], s[2 * ks + 1][1]);
        pf[ks][3] = pack2<T>(s[2 * ks + 1][2], s[2 * ks + 1][3]);
    }
}

// o[nt] += the C fragment of P V for dims 8nt .. 8nt+7. V is row-major [key][dim] = B itself, so B
// fragments are ldmatrix .trans of V's rows; one x4 covers keys 16ks .. 16ks+15 x dims 16dp ..
// 16dp+15: matrix 0 = keys +0..7 / dims +0..7 (b0 of n-tile 2dp), 1 = keys +8..15 / dims +0..7 (b1 of
// 2dp), 2 = keys +0..7 / dims +8..15 (b0 of 2dp+1), 3 = keys +8..15 / dims +8..15 (b1 of 2dp+1).
// vrow = the warp's first key row + (lane & 7) + 8 * ((lane >> 3) & 1), column 8 * (lane >> 4).
// v_at(ks, dp): this lane's ldmatrix address for keys 16ks.. and dims 16dp.. (the overload below: padded rows).
template <typename T, int KS_KV, int NT_O, typename VAddress>
__device__ __forceinline__ void pv_accumulate(float (&o)[NT_O][4], const unsigned (&pf)[KS_KV][4], VAddress v_at) {
#pragma unroll
    for (int ks = 0; ks < KS_KV; ++ks) {
#pragma unroll
        for (int dp = 0; dp < NT_O / 2; ++dp) {
            unsigned b[4];
            ldmatrix_x4_trans(b, v_at(ks, dp));
            mma_16816<T>(o[2 * dp], pf[ks], b[0], b[1]);
            mma_16816<T>(o[2 * dp + 1], pf[ks], b[2], b[3]);
        }
    }
}
template <typename T, int KS_KV, int NT_O>
__device__ __forceinline__ void pv_accumulate(float (&o)[NT_O][4], const unsigned (&pf)[KS_KV][4], const T* vrow, int ld) {
    pv_accumulate<T>(o, pf, [&](int ks, int dp) { return vrow + 16 * ks * ld + 16 * dp; });
}

// A tile of ROWS rows of 16-bit elements as the copy engine writes it with the 128-byte swizzle
// (hopper_primitives.cuh): slabs of 64 columns one after the other, 128 bytes a row, the 16-byte chunk c of
// row r at chunk c ^ (r % 8) of its row. The address of chunk `chunk` (8 columns) of row `row`.
template <int ROWS>
__device__ __forceinline__ const void* swizzled_chunk(const void* tile, int row, int chunk) {
    return static_cast<const char*>(tile) + (chunk >> 3) * ROWS * 128 + row * 128 + (((chunk & 7) ^ (row & 7)) << 4);
}

}  // namespace fasim::cuda_detail
