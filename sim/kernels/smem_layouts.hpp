// Shared-memory layouts of the flash kernels, computed the same way on the host (to size the launch and
// choose tiles) and on the device (to carve the dynamic shared memory). Byte offsets, 16-byte aligned.
//
// Strides are chosen for bank-conflict-free access by the lane layouts of flash_common.cuh:
//   Q and K tiles: d + 16 bytes per row, so 8 lanes reading 8 consecutive rows at the same column
//                  land in 8 different 16-byte bank groups;
//   S/P tile:      a multiple of 4 floats (float4 rows) with an odd number of 16-byte units, for the
//                  same reason when 8 lanes each walk one row;
//   V tile:        d elements per row (lanes read contiguous 128-byte runs of one row).
#pragma once

#include <cstddef>

#if defined(__CUDACC__)
#define FASIM_HD __host__ __device__
#else
#define FASIM_HD
#endif

namespace fasim::cuda_detail {

constexpr int kFlashThreads = 128;  // 4 warps, every flash kernel
constexpr int kFlashWarps = 4;
constexpr int kFa1RowChunk = 16;    // FA1 processes a Q tile in chunks of 16 rows (see fa1.cu)

FASIM_HD constexpr std::size_t align16(std::size_t x) { return (x + 15u) / 16u * 16u; }
FASIM_HD constexpr int round_up4(int x) { return (x + 3) / 4 * 4; }
// Row stride (floats) of an S/P tile `cols` wide.
FASIM_HD constexpr int score_stride(int cols) {
    const int r4 = round_up4(cols);
    return (r4 / 4) % 2 == 0 ? r4 + 4 : r4;
}
// Row stride (elements) of a Q or K tile.
FASIM_HD constexpr int qk_stride(int d, int elem_bytes) { return d + 16 / elem_bytes; }

// fa2 and tiled (two-pass): one block = one Q tile of Br rows; K_j, V_j tiles of Bc rows.
struct FlashSmemLayout {
    int ldq, ldk, ldv, lds;              // row strides: elements (Q, K, V), floats (S)
    std::size_t q, k, v, s, m, l, a;     // byte offsets
    std::size_t total;                   // bytes of dynamic shared memory
};

//   Q tile  Br x ldq  (storage dtype)      loaded once per block
//   K tile  Bc x ldk  (storage dtype)      reloaded per K/V tile
//   V tile  Bc x ldv  (storage dtype)      reloaded per K/V tile
//   S/P     Br x lds  float                scores, then probabilities (each warp its own Br/4 rows)
//   m, l, a Br floats each                 running row max (log2 units), row sum, per-row factor
FASIM_HD inline FlashSmemLayout flash_smem_layout(int Br, int Bc, int d, int elem_bytes) {
    FlashSmemLayout L{};
    L.ldq = qk_stride(d, elem_bytes);
    L.ldk = L.ldq;
    L.ldv = d;
    L.lds = score_stride(Bc);
    const std::size_t e = static_cast<std::size_t>(elem_bytes);
    std::size_t off = 0;
    L.q = off; off = align16(off + static_cast<std::size_t>(Br) * L.ldq * e);
    L.k = off; off = align16(off + static_cast<std::size_t>(Bc) * L.ldk * e);
    L.v = off; off = align16(off + static_cast<std::size_t>(Bc) * L.ldv * e);
    L.s = off; off = align16(off + static_cast<std::size_t>(Br) * L.lds * 4u);
    L.m = off; off = align16(off + static_cast<std::size_t>(Br) * 4u);
    L.l = off; off = align16(off + static_cast<std::size_t>(Br) * 4u);
    L.a = off; off = align16(off + static_cast<std::size_t>(Br) * 4u);
    L.total = off;
    return L;
}

// fa1: one block per batch*head; K_j, V_j resident while the block walks the Q tiles.
struct Fa1SmemLayout {
    int ldq, ldk, ldv, lds;   // row strides: elements (Q, K, V), floats (S)
    int kv_rows;              // Bc rounded up to a multiple of 4 (the extra rows are zero)
    std::size_t k, v, q, u, red_m, red_l, coef_a, coef_b;  // byte offsets
    std::size_t total;
};

//   K tile   kv_rows x ldk (storage dtype)                  resident for one outer iteration j
//   V tile   kv_rows x ldv (storage dtype)                  resident for one outer iteration j
//   Q tile   Br x ldq (storage dtype)                       reloaded for every (i, j)
//   U        max(16 x lds, 4 x 16 x d) floats               S/P of one 16-row chunk (each warp writes
//                                                           its quarter of the columns), then reused
//                                                           for the four warps' partial P*V products
//   red_m, red_l  4 x 16 floats                             per-warp partial row max / row sum
//   coef_a, coef_b 16 floats                                per-row factors of the O update (line 12)
FASIM_HD inline Fa1SmemLayout fa1_smem_layout(int Br, int Bc, int d, int elem_bytes) {
    constexpr int RC = kFa1RowChunk;
    Fa1SmemLayout L{};
    L.kv_rows = round_up4(Bc);
    L.ldq = qk_stride(d, elem_bytes);
    L.ldk = L.ldq;
    L.ldv = d;
    L.lds = score_stride(L.kv_rows);
    const std::size_t e = static_cast<std::size_t>(elem_bytes);
    const std::size_t s_floats = static_cast<std::size_t>(RC) * L.lds;
    const std::size_t red_floats = static_cast<std::size_t>(kFlashWarps) * RC * d;
    std::size_t off = 0;
    L.k = off; off = align16(off + static_cast<std::size_t>(L.kv_rows) * L.ldk * e);
    L.v = off; off = align16(off + static_cast<std::size_t>(L.kv_rows) * L.ldv * e);
    L.q = off; off = align16(off + static_cast<std::size_t>(Br) * L.ldq * e);
    L.u = off; off = align16(off + (s_floats > red_floats ? s_floats : red_floats) * 4u);
    L.red_m = off; off = align16(off + static_cast<std::size_t>(kFlashWarps) * RC * 4u);
    L.red_l = off; off = align16(off + static_cast<std::size_t>(kFlashWarps) * RC * 4u);
    L.coef_a = off; off = align16(off + static_cast<std::size_t>(RC) * 4u);
    L.coef_b = off; off = align16(off + static_cast<std::size_t>(RC) * 4u);
    L.total = off;
    return L;
}

// fa2_bwd (CUDA cores, fa2_backward.cu): one block per K/V tile of Bc keys, stepping over Q tiles of
// Br rows; Br and Bc are 16, 32 or 64 (the kernel's lane layouts cover 64 x 64 at most).
// (Owned by fa2_backward.cu: its kernel carves its dynamic shared memory by this layout.)
struct Fa2BwdSmemLayout {
    int ldq, ldk, lds;                       // row strides: elements (Q, dO; K, V), floats (P / dS)
    std::size_t k, v, q, dO, pds, lse, D;    // byte offsets
    std::size_t dk, dv;                      // fp32 dK_j, dV_j accumulators, row stride d floats
    std::size_t total;                       // bytes of dynamic shared memory
};

//   K_j, V_j   Bc x ldk (storage dtype)    loaded once per block
//   Q_i, dO_i  Br x ldq (storage dtype)    reloaded for every Q tile
//   P / dS     Br x lds float              P_ij, then dS_ij in its place (each warp its Bc/4 key columns);
//                                          the values are already rounded to the storage dtype
//   lse, D     Br floats each              LSE_i in log2 units (+inf for a row that gets P = 0), D_i
//   dK, dV     Bc x d float each           the block's accumulators (each warp its Bc/4 key rows)
FASIM_HD inline Fa2BwdSmemLayout fa2_bwd_smem_layout(int Br, int Bc, int d, int elem_bytes) {
    Fa2BwdSmemLayout L{};
    L.ldq = qk_stride(d, elem_bytes);
    L.ldk = L.ldq;
    L.lds = score_stride(Bc);
    const std::size_t e = static_cast<std::size_t>(elem_bytes);
    std::size_t off = 0;
    L.k = off; off = align16(off + static_cast<std::size_t>(Bc) * L.ldk * e);
    L.v = off; off = align16(off + static_cast<std::size_t>(Bc) * L.ldk * e);
    L.q = off; off = align16(off + static_cast<std::size_t>(Br) * L.ldq * e);
    L.dO = off; off = align16(off + static_cast<std::size_t>(Br) * L.ldq * e);
    L.pds = off; off = align16(off + static_cast<std::size_t>(Br) * L.lds * 4u);
    L.lse = off; off = align16(off + static_cast<std::size_t>(Br) * 4u);
    L.D = off; off = align16(off + static_cast<std::size_t>(Br) * 4u);
    L.dk = off; off = align16(off + static_cast<std::size_t>(Bc) * d * 4u);
    L.dv = off; off = align16(off + static_cast<std::size_t>(Bc) * d * 4u);
    L.total = off;
    return L;
}

}  // namespace fasim::cuda_detail
