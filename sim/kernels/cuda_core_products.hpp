// What a product costs when its lanes compute it on the CUDA cores, given how the kernel lays a warp's
// share of C over its 32 lanes (LaneGrid, kernels/kernel_execution.hpp): the shared-memory wavefronts of
// the operand loads, and the FLOPs the lanes execute (whole micro-tiles, padding included).
//
// Wavefronts: the shared-memory pipe of an SM serves one 128-byte wavefront per clock (32 banks x 4
// bytes); an instruction whose lanes touch more than 128 distinct bytes, or whose accesses are split
// into several passes, takes several. A CUDA-core product re-reads its operands into every lane that
// multiplies with them, 16 bytes at a time, and that, not the operand tiles' size, is what bounds a
// register-tiled GEMM. Measured on the H200 (ncu, l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld
// and smsp__sass_inst_executed_op_shared_ld; cuda/results/2026-11-22-h200-b/profile/
// raw_standard_tiled.csv, fp32 N=4096 d=64): fa-sim's tiled GEMM issues 3.03 wavefronts per 16-byte
// shared load (2 loads per k-step per warp: 6.06 per k-step), while its loads carry 288 distinct bytes
// per k-step per warp (2.25 wavefronts' worth). The rule below gives 6.
//
// Executed FLOPs: a lane computes its whole micro-tile, rows past the tile's end included (the
// kernels clamp the row and discard the result), and steps k four at a time. FA1 at d=128 has
// 114-row Q tiles in 16-row chunks (128 rows computed) and 114-key tiles split over 4 warps (the
// last warp's 30 keys scored in passes of 16 and multiplied in steps of 4: 32): 26% more than the
// tile's FLOPs, on the critical path of every block.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/kernel_execution.hpp"

namespace fasim::cuda_core {

constexpr std::int64_t kWavefrontBytes = 128;  // one wavefront: 32 banks x 4 bytes

// Loads and stores that are not products' operand reads: conflict-free accesses of consecutive
// 4-byte words, so a wavefront per 128 bytes (at least one per access).
inline std::int64_t plain_wavefronts(std::int64_t bytes) {
    return bytes > 0 ? (bytes + kWavefrontBytes - 1) / kWavefrontBytes : 0;
}

// One warp's share of a product on its lanes: rows x cols of C over k, with at most max_cols columns
// per lane at a time (the kernel's score_cols for S = Q K^T, else all of them).
struct WarpProduct {
    std::int64_t rows = 0, cols = 0, k = 0;
    std::int64_t max_cols = std::int64_t{1} << 30;
};

// A micro-tile dimension: per lane, per pass, and the passes it takes.
struct LaneSplit {
    std::int64_t per_pass = 0, passes = 0;
    LaneSplit(std::int64_t extent, int lanes, std::int64_t max_per_pass) {
        const std::int64_t per_lane = (extent + lanes - 1) / lanes;
        per_pass = std::max<std::int64_t>(1, std::min(per_lane, max_per_pass));
        passes = (per_lane + per_pass - 1) / per_pass;
    }
};

// Wavefronts one warp spends reading its operands from shared memory. Each lane loads its operands
// 4 at a time (a 16-byte float4, or 8 bytes of fp16 widened after the load): per 4 k-steps a lane
// issues one load per micro-tile row (A) and column (B). A load is served half a warp at a time, and a
// half-warp's load takes one wavefront per 128 distinct bytes, at least one: A's values are shared by
// the lanes of a lane row (half a warp holds lane_rows / 2 of them: a broadcast), B's by the lanes of a
// lane column (half a warp reads all lane_cols of them). A C tile taller than max_rows or wider than
// max_cols per lane is computed in passes, each re-reading the other operand.
inline std::int64_t operand_wavefronts(const WarpProduct& w, const LaneGrid& g, std::int64_t a_elem_bytes,
                                       std::int64_t b_elem_bytes, bool a_shared, bool b_shared) {
    if (w.rows <= 0 || w.cols <= 0 || w.k <= 0) return 0;
    const LaneSplit r(w.rows, g.lane_rows, g.max_rows), c(w.cols, g.lane_cols, w.max_cols);
    const auto per_load = [](std::int64_t distinct_bytes) {
        return std::max<std::int64_t>(1, (distinct_bytes + kWavefrontBytes - 1) / kWavefrontBytes);
    };
    const std::int64_t a_bytes = g.operand_bytes > 0 ? g.operand_bytes : a_elem_bytes;
    const std::int64_t b_bytes = g.operand_bytes > 0 ? g.operand_bytes : b_elem_bytes;
    const std::int64_t a_load = per_load(std::max(1, g.lane_rows / 2) * 4 * a_bytes);
    const std::int64_t b_load = per_load(std::min(16, g.lane_cols) * 4 * b_bytes);
    const std::int64_t per_four_k =
        2 * ((a_shared ? r.per_pass * a_load : 0) + (b_shared ? c.per_pass * b_load : 0));  // 2 half-warps
    return r.passes * c.passes * per_four_k * ((w.k + 3) / 4);
}

// FLOPs one warp's lanes execute: whole micro-tiles of every pass, k in steps of 4.
inline std::int64_t executed_flops(const WarpProduct& w, const LaneGrid& g) {
    if (w.rows <= 0 || w.cols <= 0 || w.k <= 0) return 0;
    const LaneSplit r(w.rows, g.lane_rows, g.max_rows), c(w.cols, g.lane_cols, w.max_cols);
    return 2 * (r.passes * r.per_pass * g.lane_rows) * (c.passes * c.per_pass * g.lane_cols) * ((w.k + 3) / 4 * 4);
}

}  // namespace fasim::cuda_core
