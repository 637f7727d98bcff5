// Building blocks shared by the tiled (two-pass), FA1 and FA2 kernels. CUDA cores only: fp32 FMA
// arithmetic, no tensor cores in this first version.
//
// Lane layout of the register micro-tiles (one warp):
//   lane = 8*lr + lc, lr in 0..3, lc in 0..7
//   rows owned by a lane:     lr + 4*i        (i < TM)       -- rows interleaved across lr
//   S columns (per chunk c0):  c0 + lc + 8*j  (j < NJ)        -- 8 lanes read 8 consecutive K rows
//   O columns:                lc*4 + 32*jj + (0..3)          -- 8 lanes read 128 contiguous bytes of V
// With the strides of smem_layouts.hpp every shared-memory access of a quarter warp is either one
// broadcast address or 8 distinct 16-byte bank groups.
//
// Scores are kept in log2 units: S2 = (q.k) * scale * log2(e), so exp(s - m) = exp2(S2 - m2).
#pragma once

#include <cmath>

#include "common/dtype_traits.cuh"

namespace fasim::cuda_detail {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

__device__ __forceinline__ float f4_get(const float4& v, int k) {
    return k == 0 ? v.x : (k == 1 ? v.y : (k == 2 ? v.z : v.w));
}
__device__ __forceinline__ float max4(const float4& v) { return fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)); }

// Copies rows [row0, row0 + nrows) of a row-major [rows][D] matrix into shared memory (row stride ld
// elements); tile row r < nvalid comes from global row row0 + r, rows nvalid..nrows-1 are zero-filled
// (so that no uninitialised value can reach an FMA). 16-byte loads through L2 only, consecutive
// threads on consecutive 16-byte chunks (coalesced). All threads of the block take part.
template <typename T, int D>
__device__ __forceinline__ void load_tile(T* __restrict__ dst, int ld, const T* __restrict__ src, int row0,
                                          int nrows, int nvalid) {
    constexpr int kVec = 16 / static_cast<int>(sizeof(T));
    constexpr int kChunks = D / kVec;  // 16-byte chunks per row
    static_assert(D % kVec == 0, "head dim must be a multiple of 16 bytes");
    for (int q = static_cast<int>(threadIdx.x); q < nrows * kChunks; q += static_cast<int>(blockDim.x)) {
        const int r = q / kChunks;
        const int c = (q - r * kChunks) * kVec;
        T* d = dst + r * ld + c;
        if (r < nvalid) {
            cp16_cg(d, src + (static_cast<long long>(row0) + r) * D + c);
        } else {
            zero16(d);
        }
    }
}

// Which (row, column) pairs of a score tile are visible. Tile row r is global query q0 + r, tile
// column c is global key k0 + c. Columns >= kv_valid are past the end of K (or of the K tile).
// Causal masking is bottom-right aligned: key k is visible to query q iff k <= q + diag, diag = Nk - N.
struct ScoreMask {
    int q0;
    int k0;
    int kv_valid;
    int diag;
    bool causal;
    bool active;  // false: every element of the tile is visible (no per-element test)
    __device__ __forceinline__ bool visible(int r, int c) const {
        return c < kv_valid && (!causal || k0 + c <= q0 + r + diag);
    }
};

// One warp: S2[r][c] = (Q[r] . K[c]) * scale_log2 for tile rows r < nrows (nrows <= 4*TM, >= 1) and
// columns c in [c_begin, c_end) (multiples of 4), written to Ss (row stride lds); masked -> -inf.
// K rows >= kv_rows_alloc are never read (clamped; those columns are not stored).
// Columns are processed in chunks of 8*NJ (each lane NJ columns of a chunk): NJ = 4 for d <= 64 and
// 2 for d = 128, where the O accumulator already takes 128 registers per lane.
template <typename T, int D, int TM>
__device__ __forceinline__ void compute_scores(const T* __restrict__ Qs, int ldq, int nrows, const T* __restrict__ Ks,
                                               int ldk, int kv_rows_alloc, int c_begin, int c_end,
                                               float* __restrict__ Ss, int lds, float scale_log2,
                                               const ScoreMask& mask) {
    constexpr int NJ = D >= 128 ? 2 : 4;
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int lr = lane >> 3;
    const int lc = lane & 7;
    int q_off[TM];
#pragma unroll
    for (int i = 0; i < TM; ++i) q_off[i] = imin(lr + 4 * i, nrows - 1) * ldq;

    for (int c0 = c_begin; c0 < c_end; c0 += 8 * NJ) {
        int k_off[NJ];
#pragma unroll
        for (int j = 0; j < NJ; ++j) k_off[j] = imin(c0 + lc + 8 * j, kv_rows_alloc - 1) * ldk;
        float acc[TM][NJ];
#pragma unroll
        for (int i = 0; i < TM; ++i) {
#pragma unroll
            for (int j = 0; j < NJ; ++j) acc[i][j] = 0.f;
        }
#pragma unroll 4
        for (int k = 0; k < D; k += 4) {
            float4 kv[NJ];
#pragma unroll
            for (int j = 0; j < NJ; ++j) kv[j] = lds4(Ks + k_off[j] + k);
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                const float4 q = lds4(Qs + q_off[i] + k);
#pragma unroll
                for (int j = 0; j < NJ; ++j) {
                    acc[i][j] = fmaf(q.x, kv[j].x, acc[i][j]);
                    acc[i][j] = fmaf(q.y, kv[j].y, acc[i][j]);
                    acc[i][j] = fmaf(q.z, kv[j].z, acc[i][j]);
                    acc[i][j] = fmaf(q.w, kv[j].w, acc[i][j]);
                }
            }
        }
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int r = lr + 4 * i;
            if (r < nrows) {
#pragma unroll
                for (int j = 0; j < NJ; ++j) {
                    const int c = c0 + lc + 8 * j;
                    if (c < c_end) {
                        float s = acc[i][j] * scale_log2;
                        if (mask.active && !mask.visible(r, c)) s = -INFINITY;
                        Ss[r * lds + c] = s;
                    }
                }
            }
        }
    }
}

// One warp: o[i][.] += sum_{k in [k_begin, k_end)} P[r_i][k] * V[k][.] for the lane's rows r_i = lr + 4i
// (clamped to nrows - 1; rows >= nrows are garbage and never stored) and columns lc*4 + 32*jj + (0..3).
// k_begin, k_end multiples of 4; P rows are float4-aligned.
template <typename T, int D, int TM>
__device__ __forceinline__ void pv_accumulate(float (&o)[TM][D / 8], const float* __restrict__ Ps, int lds, int nrows,
                                              const T* __restrict__ Vs, int ldv, int k_begin, int k_end) {
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int lr = lane >> 3;
    const int lc = lane & 7;
    int p_off[TM];
#pragma unroll
    for (int i = 0; i < TM; ++i) p_off[i] = imin(lr + 4 * i, nrows - 1) * lds;
    const T* vcol = Vs + lc * 4;
#pragma unroll(D >= 128 ? 1 : 2)
    for (int k = k_begin; k < k_end; k += 4) {
        float4 p[TM];
#pragma unroll
        for (int i = 0; i < TM; ++i) p[i] = *reinterpret_cast<const float4*>(Ps + p_off[i] + k);
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {
            const T* vrow = vcol + (k + kk) * ldv;
#pragma unroll
            for (int jj = 0; jj < D / 32; ++jj) {
                const float4 v = lds4(vrow + 32 * jj);
#pragma unroll
                for (int i = 0; i < TM; ++i) {
                    const float pk = f4_get(p[i], kk);
                    o[i][4 * jj + 0] = fmaf(pk, v.x, o[i][4 * jj + 0]);
                    o[i][4 * jj + 1] = fmaf(pk, v.y, o[i][4 * jj + 1]);
                    o[i][4 * jj + 2] = fmaf(pk, v.z, o[i][4 * jj + 2]);
                    o[i][4 * jj + 3] = fmaf(pk, v.w, o[i][4 * jj + 3]);
                }
            }
        }
    }
}

// Number of K/V tiles a Q tile [q0, q0 + q_rows) must visit: all of them, or with causal masking
// only those not entirely above the diagonal (0 when no row of the tile sees any key).
__device__ __forceinline__ int visible_kv_tiles(int q0, int q_rows, int N, int Nk, int Bc, bool causal) {
    const int tiles = ceil_div(Nk, Bc);
    if (!causal) return tiles;
    const int last_key = q0 + q_rows - 1 + (Nk - N);  // last key the tile's last row may see
    return last_key < 0 ? 0 : imin(tiles, last_key / Bc + 1);
}

// Stores a lane's O micro-tile rows (rows r = lr + 4i of the warp's tile, valid if r < nrows_valid),
// multiplied by row_scale[r] (or by 1 when row_scale is null), into global O (row stride D) starting
// at row pointer base.
template <typename T, int D, int TM>
__device__ __forceinline__ void store_o_rows(const float (&o)[TM][D / 8], T* __restrict__ base, int nrows_valid,
                                             const float* __restrict__ row_scale) {
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int lr = lane >> 3;
    const int lc = lane & 7;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = lr + 4 * i;
        if (r < nrows_valid) {
            const float sc = row_scale != nullptr ? row_scale[r] : 1.f;
#pragma unroll
            for (int jj = 0; jj < D / 32; ++jj) {
                st4(base + static_cast<long long>(r) * D + lc * 4 + 32 * jj,
                    make_float4(o[i][4 * jj] * sc, o[i][4 * jj + 1] * sc, o[i][4 * jj + 2] * sc, o[i][4 * jj + 3] * sc));
            }
        }
    }
}

}  // namespace fasim::cuda_detail
