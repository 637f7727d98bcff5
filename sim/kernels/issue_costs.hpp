// Instructions a tile operation costs in a kernel written the FlashAttention way: products on
// the tensor cores with warp-level mma.sync, S/P and O held in registers in the mma accumulator
// layout (a row of a 16-row block is spread over the 4 lanes of a quad), tiles copied into shared
// memory with cp.async. The runtime model needs them because such kernels are latency-bound:
// time follows the instructions a warp issues, not the FLOPs (docs/model.md, "Issue").
//
// Counted in thread-instructions (a warp instruction is 32 of them), so per-element costs stay
// integers; KernelRecord reports warp instructions. Every constant was read off the SASS of
// fa-sim's own tensor-core kernels (sm_90, nvcc 13.0; the listings and how they were made are in
// cuda/sass/), per loop step of one warp; tests/sim/test_issue_costs.cpp checks the counts against
// those per-step totals (fa2_tc d=64: 442 against 436 here; out of sample, fa1_tc: 576 against 508),
// tests/cuda/test_results_agreement.cpp whole kernels against Nsight Compute.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tile/elementwise.hpp"

namespace fasim::issue_cost {

constexpr std::int64_t kLanes = 32;

// One mma.sync.m16n8k16 (HMMA.16816) is 16x8x16 multiply-adds = 4096 FLOPs, one warp instruction.
inline std::int64_t mma(std::int64_t matmul_flops) { return matmul_flops / 4096 * kLanes; }

// Operand fragments from shared memory: ldmatrix.x4 moves 16 bytes per lane (LDSM: 16 per K or V
// tile of 64x64 fp16 per warp in fa2_tc, 8 KB / 512 B).
inline std::int64_t fragment_loads(std::int64_t smem_bytes) { return smem_bytes / 16; }

// Lanes that hold one row of a register tile: a quad (4) in the mma layout, or more when the block
// has more threads than the tile has rows (fa1_tc: 128 threads update 16 rows of O, 8 per row).
inline std::int64_t lanes_per_row(std::int64_t rows, std::int64_t threads) {
    return std::max<std::int64_t>(4, rows > 0 ? threads / rows : 4);
}

// Row max / row sum: one FMNMX or FADD per element, then a quad reduction (2 SHFL + 2 ops on each of
// the row's 4 lanes) in every warp that holds part of the row (all warps under split-K).
inline std::int64_t row_reduce(std::int64_t elems, std::int64_t rows, std::int64_t warps_holding_rows) {
    return elems + 16 * rows * warps_holding_rows;
}

// An element-wise map (tile/elementwise.hpp), per element it computes:
//   exp (P = exp2(s * scale_log2 - m)): one FFMA and one MUFU.EX2;
//   add, sub, mul, max, fma: one FADD / FMUL / FMNMX / FFMA; seen: one FSETP (its select is the store's);
//   divide: one FMUL by the divisor's reciprocal, which costs more (divide_reciprocals);
//   expdiff and lse: FADD + MUFU and the -inf guard (FSETP + FSEL): 4.
inline std::int64_t map_per_element(Fn f) {
    switch (f) {
        case Fn::exp_shifted: return 2;
        case Fn::exp_diff:
        case Fn::lse: return 4;
        case Fn::add:
        case Fn::sub:
        case Fn::mul:
        case Fn::fma:
        case Fn::max:
        case Fn::seen:
        case Fn::div: return 1;
    }
    return 1;
}

// A map computes each element of a tile once, and each value of a row statistic (m, l, alpha, LSE:
// Tile::statistic) on every lane that holds the row (lanes_per_row).

// A division computes its divisor's reciprocal (IEEE division: MUFU.RCP, FFMA refinement, FCHK for the
// slow path: 9-10 instructions in fa1_tc) on each lane that uses it: a divisor broadcast along the rows
// once per row and lane, any other once per element.
inline std::int64_t divide_reciprocals(std::int64_t divisor_values) { return 10 * divisor_values; }

// P rounded to fp16/bf16 pairs for the next mma: one F2FP.PACK_AB per two elements.
inline std::int64_t round_to_storage(std::int64_t elems) { return elems / 2; }

// The element-wise causal/ragged mask: the masked copy of the step compares each score's row and
// column with the diagonal and the end of K and selects -inf: for a 16 x 64 tile (32 scores per lane)
// 48 ISETP, 32 FSEL and 16 VIADD, 3 instructions per score.
inline std::int64_t mask(std::int64_t elems) { return 3 * elems; }

// Global -> shared tile copy with cp.async (LDGSTS.128, 16 bytes per lane) and its address and
// bounds arithmetic, per chunk (cuda/kernels/mma_fragments.cuh, TileAddresses::per_chunk): fa2_tc
// issued 96 instructions for the 8 LDGSTS that copied V_j and K_{j+1} per warp (LEA, SEL, IADD3, IMAD:
// row clamps for ragged tiles, the padded row stride): 12 each.
inline std::int64_t async_copy(std::int64_t bytes) { return 12 * (bytes / 16); }

// The same copy with one address per whole tile (TileAddresses::one_per_tile: fa2_tc, FlashDecoding's
// split kernel): per warp 16 instructions (the thread's source and destination, the whole-tile test and
// branch, 64-bit offsets where they pass the LDGSTS immediate) and 2 per LDGSTS. fa2_tc: 23 and 26 for
// its K and V tiles of 4 LDGSTS per thread at d = 64; FlashDecoding at d = 128: 33 per tile of 8.
inline std::int64_t async_copy_one_address_per_tile(std::int64_t bytes, std::int64_t warps) {
    return 2 * (bytes / 16) + 16 * kLanes * warps;
}

// The barrier that publishes a copied tile to the block and the loop bookkeeping around it
// (BAR.SYNC, DEPBAR for the cp.async wait, WARPSYNC, the tile counter, the branch): fa2_tc spends
// 36 warp instructions per K/V iteration outside the operations, charged 18 to each of K_j and V_j.
inline std::int64_t tile_sync(std::int64_t warps) { return 18 * kLanes * warps; }

// Global -> registers (fa1's O_i): 16-byte loads (LDG.128) and an address each.
inline std::int64_t register_load(std::int64_t bytes) { return 2 * ((bytes + 15) / 16); }

// Registers -> global: the accumulator layout gives each lane 2 adjacent elements (a 4- or 8-byte
// store) and an address each.
inline std::int64_t register_store(std::int64_t elems) { return 2 * ((elems + 1) / 2); }

// Split-K exchange of a partial held by each of W warps (every warp holds all rows).
//   A rows x cols tile (fa1_tc's partial P V): each warp stores its partial (8-byte STS per lane: 2
//   accumulator elements), the partials are read back 16 bytes per lane (LDS.128) and the W - 1
//   additions done once per element: 16 STS, 8 LDS and 24 FADD per warp for fa1_tc's 16 x 64 tile.
//   A row statistic (rows x 1: partial max or sum): one lane of a quad stores each of its rows, then
//   every lane reads the W partials of each row it holds (rows / 8 per lane in the mma layout) and
//   combines them: fa1_tc stores 2, reads 8 and combines with 6 per warp for its 16 rows.
inline std::int64_t exchange(std::int64_t elems, std::int64_t warps, bool row_statistic) {
    if (row_statistic) {
        const std::int64_t rows_per_lane = (elems + 7) / 8;
        return warps * kLanes * rows_per_lane + (2 * warps - 1) * warps * kLanes * rows_per_lane;
    }
    return warps * (elems / 2) + warps * (elems / 4) + (warps - 1) * elems;
}

// An explicit barrier (the split-K exchange's, Block::barrier()): the same 36 instructions as above
// counted per barrier instead of per tile (fa2_tc has 3 per K/V iteration): 12 per barrier per warp.
inline std::int64_t barrier(std::int64_t warps) { return 12 * kLanes * warps; }

}  // namespace fasim::issue_cost
