// Shared-memory wavefronts: what the shared-memory pipe of an SM actually spends. It serves one
// 128-byte wavefront per clock (32 banks x 4 bytes); an instruction whose lanes touch more than 128
// distinct bytes, or whose accesses are split into several passes, takes several. The runtime model
// times CUDA-core kernels by wavefronts, not by the bytes their data occupies: a CUDA-core product
// re-reads its operands from shared memory into every lane that multiplies with them, 16 bytes at a
// time, and that, not the operand tiles' size, is what bounds a register-tiled GEMM.
//
// Measured on the H200 (ncu, l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld and
// smsp__sass_inst_executed_op_shared_ld; cuda/results/2026-11-22-h200-b/profile/raw_standard_tiled.csv,
// fp32 N=4096 d=64): fa-sim's tiled GEMM issues 3.03 wavefronts per 16-byte shared load (2 loads per
// k-step per warp: 6.06 per k-step), while its loads carry 288 distinct bytes per k-step per warp
// (2.25 wavefronts' worth). The rule below gives 6.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tile/tile_program.hpp"

namespace fasim::smem_wavefront {

constexpr std::int64_t kBytes = 128;  // one wavefront: 32 banks x 4 bytes

// Loads and stores that are not products' operand reads: conflict-free accesses of consecutive
// 4-byte words, so a wavefront per 128 bytes (at least one per access).
inline std::int64_t plain(std::int64_t bytes) { return bytes > 0 ? (bytes + kBytes - 1) / kBytes : 0; }

// Wavefronts one warp spends reading the operands of its share of a CUDA-core product (rows x cols
// of C, over k) from shared memory, its lanes laid out as the kernel's LaneGrid (tile_program.hpp)
// says. Each lane loads its operands 4 at a time (a 16-byte float4, or 8 bytes of fp16
// widened after the load): per 4 k-steps a lane issues one load per micro-tile row (A) and column
// (B). A load is served half a warp at a time, and a half-warp's load takes one wavefront per 128
// distinct bytes, at least one: A's values are shared by the lanes of a lane row (half a warp holds
// lane_rows / 2 of them: a broadcast), B's by the lanes of a lane column (half a warp reads all
// lane_cols of them). A C tile taller than max_rows or wider than max_cols per lane is computed in
// passes, each re-reading the other operand.
inline std::int64_t product_operands(std::int64_t rows, std::int64_t cols, std::int64_t k, const LaneGrid& g,
                                     std::int64_t max_cols, std::int64_t a_elem_bytes, std::int64_t b_elem_bytes,
                                     bool a_shared, bool b_shared) {
    if (rows <= 0 || cols <= 0 || k <= 0) return 0;
    const std::int64_t per_lane_rows = (rows + g.lane_rows - 1) / g.lane_rows;
    const std::int64_t per_lane_cols = (cols + g.lane_cols - 1) / g.lane_cols;
    const std::int64_t tm = std::min(per_lane_rows, g.max_rows), tn = std::min(per_lane_cols, max_cols);
    const std::int64_t passes = ((per_lane_rows + tm - 1) / tm) * ((per_lane_cols + tn - 1) / tn);
    const auto per_load = [](std::int64_t distinct_bytes) { return std::max<std::int64_t>(1, (distinct_bytes + kBytes - 1) / kBytes); };
    const std::int64_t a_bytes = g.operand_bytes > 0 ? g.operand_bytes : a_elem_bytes;
    const std::int64_t b_bytes = g.operand_bytes > 0 ? g.operand_bytes : b_elem_bytes;
    const std::int64_t a_load = per_load(std::max(1, g.lane_rows / 2) * 4 * a_bytes);
    const std::int64_t b_load = per_load(std::min(16, g.lane_cols) * 4 * b_bytes);
    const std::int64_t per_four_k = 2 * ((a_shared ? tm * a_load : 0) + (b_shared ? tn * b_load : 0));  // 2 half-warps
    return passes * per_four_k * ((k + 3) / 4);
}

}  // namespace fasim::smem_wavefront
