// How a kernel of a tile program runs on a GPU, beyond what the program says: which instruction
// its products use on the tensor cores, and, when they run on the CUDA cores, how a warp's lanes
// share them and how its threads fetch their operands. The tile programs name their kernels
// ("fa2_forward", "gemm_qk"); the model of each kernel lives here, on the kernel side, so that
// an algorithm file says what is computed and moved, and nothing about a particular kernel's code.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tile/tile_program.hpp"

namespace fasim {

struct AttentionProblem;
struct TileConfig;

// How a kernel's products run on the tensor cores: mma.sync (a warp at a time, operands through registers:
// FlashAttention-2's kernels), a vendor library's GEMM (its measured rate), or Hopper's wgmma issued by
// warp-specialised warpgroups that overlap one warpgroup's softmax with another's products
// (FlashAttention-3's way: fa2_wgmma). The runtime model takes each its own ceiling.
enum class MatrixInstruction : std::uint8_t { mma_sync, library_gemm, wgmma };

// How a CUDA-core kernel spreads a warp's share of a product C = A B over its 32 lanes: a grid of
// lane_rows x lane_cols lanes, each computing a micro-tile of C in registers, at most max_rows rows
// of it at a time and, for scores S = Q K^T, at most score_cols columns (the rest in further passes
// that re-read the operands). fa-sim's kernels: the tiled GEMM 2 x 16 lanes of 4 x 4, operands
// staged as fp32 (cuda/kernels/standard_gemm_tiled.cu); the flash kernels 4 x 8 lanes, scores in
// passes of 4 columns per lane (2 at d=128, where O takes 128 registers), FA1 in 16-row chunks
// (cuda/kernels/flash_common.cuh, fa1.cu). Only CUDA-core runs are timed by it: their shared-memory
// wavefronts and the FLOPs their lanes execute (kernels/cuda_core_products.hpp).
struct LaneGrid {
    int lane_rows = 4, lane_cols = 8;
    std::int64_t max_rows = std::int64_t{1} << 30, score_cols = std::int64_t{1} << 30;
    std::int64_t operand_bytes = 0;  // bytes per operand element in shared memory; 0: the tile's dtype
    // false: the kernel's products are not register-tiled this way (a library GEMM, whose measured
    // rate already includes its own tiling; the naive GEMM, one output per thread): operand reads cost
    // the wavefronts their data fills and the lanes execute the tile's FLOPs, no more.
    bool lane_tiled = true;
    // Rows of shared tiles padded to an odd number of 16-byte units, so that 8 lanes reading 8 rows at
    // one column hit 8 different bank groups: fa-sim's CUDA-core FA2 and tiled kernels pad Q, K and S
    // this way; V, whose rows lanes read along, is not padded (kernels/smem_layouts.hpp): such
    // tensors are named in unpadded_tensors. Counts toward the shared memory a block holds
    // (occupancy), not toward the bytes it moves.
    bool padded_rows = false;
    std::vector<std::string> unpadded_tensors{};
    bool pads(const std::string& tensor) const {
        return padded_rows && std::find(unpadded_tensors.begin(), unpadded_tensors.end(), tensor) == unpadded_tensors.end();
    }
    // Wavefronts per 128 bytes of the copies that stage a product's operands k-major in shared memory
    // (the first operand always, the second when it is stored n x k). The tiled GEMM's: its 8 lanes of
    // one source row write 4 consecutive k at stride 68 floats, all on 2 of the 32 banks, 4-way
    // conflicts (ncu: 4.19 wavefronts per such store, second run). 1: no transposing copies.
    std::int64_t transposed_store_wavefronts = 1;
};

// A row of `bytes` padded to an odd number of 16-byte units (LaneGrid::padded_rows).
inline std::int64_t padded_row_bytes(std::int64_t bytes) {
    const std::int64_t units = (bytes + 15) / 16;
    return 16 * (units % 2 == 0 ? units + 1 : units);
}

// A kernel whose threads each read the operands of their own outputs straight from global memory
// into registers (the naive GEMM, cuda/kernels/standard_gemm_naive.cu): no shared-memory staging,
// and ld.global.cg keeps nothing in L1. Its threads lie warp_cols to a row of a warp, one output
// each. A warp load at one k covers its rows of A (an element, so a sector, per row) and warp_cols
// elements of B's row or column: L2 serves every warp load's sectors, and every thread asks for its
// own bytes, so what the SMs request is the sectors of each load, not of the tile.
struct ThreadGather {
    std::int64_t warp_cols = 16;
};

struct KernelExecution {
    MatrixInstruction instruction = MatrixInstruction::mma_sync;
    LaneGrid lanes{};
    // Register loads that feed a product are each thread's own operand reads (ThreadGather); 0: no.
    std::int64_t gather_warp_cols = 0;
    // The most bytes of global loads one block has issued and not yet waited for, as the kernel's code
    // issues its tile loads (cp.async stages x tile bytes): with a DRAM latency L the block streams from
    // DRAM at most this / L (Little's law, model/runtime_model.cpp). 0: not modelled for this kernel.
    std::int64_t bytes_in_flight = 0;
    // Split-Q mma.sync kernels (fa2_tc, flash-attention's forward, FlashDecoding's split kernel): warp w
    // owns query rows [w * warp_rows, (w + 1) * warp_rows) of the Q tile and computes them as whole
    // 16-row mma fragments, rows past the tile's end included; a warp with no row left only helps copy
    // K and V. A one-row Q tile (a decoding step) so issues one warp's full 16-row work, on one
    // scheduler. 0: the tile's rows are spread evenly over the warps.
    std::int64_t warp_rows = 0;
    // With warp_rows: the warps share each K/V tile's keys in this many groups, each group's warps owning
    // the row bands (FlashDecoding's split kernel with few rows, tile_rules::flash_decoding_key_groups),
    // so bands x groups warps compute. Their end-of-block merge (a few kB of shared memory) is not counted.
    std::int64_t key_groups = 1;
    // Its cp.async tile copies take one address per whole tile (kernels/issue_costs.hpp,
    // async_copy_one_address_per_tile), not one per 16-byte chunk: the kernel catalog's
    // one_address_per_tile, through TileConfig.
    bool one_address_per_tile = false;
    // Its loop body is FlashAttention-2's forward step on the tensor cores, per warp: S = Q K^T over a K
    // tile, the online softmax, O += P V, S and P in registers (fa2_tc, its tuned rung, flash-attention's
    // forward, FlashDecoding's split kernel): the step the attention-step probe times alone, so the model
    // issues it at the GPU's measured rate for that step at this head dimension (GpuSpec::Model::
    // fa2_step_issue). 0: another loop body.
    int fa2_step_d = 0;
    // Its loop body is fa2_bwd_tc's backward step (one block of 8 warps per K/V tile of 128 keys, 64 query
    // rows a step: five products, dS^T through shared memory between two barriers, dQ added atomically):
    // the step the backward-step probe times alone (cuda/bench/backward_step.hpp), so the model issues it at
    // the GPU's measured rate for that step (GpuSpec::Model::fa2_bwd_step_issue). 0: another loop body.
    int fa2_bwd_step_d = 0;
};

// A kernel's model, by the kernel the program launches.
using ExecutionModel = std::function<KernelExecution(const KernelDesc&)>;

// fa-sim's models of the kernels of the registered programs (their CUDA kernels in cuda/, and the
// papers' tensor-core kernels), for one problem and its tiles: what the simulator runs them with.
ExecutionModel fasim_kernel_executions(const AttentionProblem& p, const TileConfig& tiles);

}  // namespace fasim
