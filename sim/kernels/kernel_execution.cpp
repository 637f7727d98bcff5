#include "kernels/kernel_execution.hpp"

#include "algorithms/algorithm.hpp"
#include "kernels/tile_rules.hpp"

namespace fasim {

namespace {

// fa-sim's CUDA-core flash kernels (flash_common.cuh): 4 x 8 lanes, each scoring 4 keys at a time (2 at
// d = 128, where O holds 128 registers per lane); FA1 works in 16-row chunks of the Q tile (4 rows per
// lane). FA2 and tiled, when they stage S in shared memory (the CUDA-core kernels), pad its rows and
// Q's and K's, not V's, whose rows the lanes read along (smem_layouts.hpp); FA1's own layout (its U
// buffer) is not modelled.
LaneGrid flash_lanes(const AttentionProblem& p, std::int64_t max_rows_per_lane, bool padded_rows) {
    LaneGrid g;
    g.max_rows = max_rows_per_lane;
    g.score_cols = p.d >= 128 ? 2 : 4;
    g.padded_rows = padded_rows;
    g.unpadded_tensors = {"V"};
    return g;
}

// Standard attention's GEMMs. fa-sim's tiled GEMM: 2 x 16 lanes per warp, each a 4 x 4 micro-tile,
// operands staged k-major as fp32 (cuda/kernels/standard_gemm_tiled.cu). A library GEMM tiles its
// registers its own way (its measured rate includes it); the naive GEMM computes one output per
// thread, each reading its own operands, its warps 2 thread rows x 16 columns
// (cuda/kernels/standard_gemm_naive.cu).
KernelExecution gemm(MatmulMode mode) {
    KernelExecution e;
    e.instruction = MatrixInstruction::library_gemm;
    e.lanes = LaneGrid{2, 16, 4, 4, 4};
    e.lanes.transposed_store_wavefronts = 4;
    e.lanes.lane_tiled = mode == MatmulMode::tiled;
    if (mode == MatmulMode::naive) {
        e.lanes.transposed_store_wavefronts = 1;  // nothing is staged in shared memory
        e.gather_warp_cols = 16;
    }
    return e;
}

// Bytes of global loads a block keeps in flight, from the kernels' code: one K and one V tile of Bc keys.
// fa2_tc and FlashAttention-2's kernel issue V_j with K_{j+1} (K double-buffered) and wait for V_j within
// the step; fa-sim's CUDA-core fa2 loads K_j and V_j together, then waits; flash_decoding's split kernel
// issues tile j + 1's K and V while it works on tile j (cuda/kernels/fa2_tensor_core.cu, fa2.cu,
// flash_decoding.cu). Other kernels: not modelled (0).
std::int64_t kv_tiles_in_flight(const AttentionProblem& p, std::int64_t Bc) {
    return 2 * Bc * p.d * p.elem_bytes();
}

// The rows each warp owns in the tensor-core split-Q kernels (S in registers): Br / warps, when that is
// whole 16-row mma fragments (the kernels' tile rules make it so: fa2_tc 64 / 4, FlashDecoding 64 / 4,
// flash-attention 128 / 8); otherwise 0, rows spread evenly.
std::int64_t warp_row_band(std::int64_t Br, int warps) {
    if (warps <= 0 || Br % warps != 0 || (Br / warps) % 16 != 0) return 0;
    return Br / warps;
}

}  // namespace

ExecutionModel fasim_kernel_executions(const AttentionProblem& p, const TileConfig& tiles) {
    return [p, scores = tiles.scores, matmul = tiles.matmul, Br = tiles.Br, Bc = tiles.Bc,
            one_address_per_tile = tiles.one_address_per_tile](const KernelDesc& k) {
        KernelExecution e;
        e.one_address_per_tile = one_address_per_tile;
        if (k.name == "fa2_forward" || k.name == "flash_decoding_split") {
            e.bytes_in_flight = kv_tiles_in_flight(p, Bc);
            if (scores == Space::Registers) {  // the tensor-core kernels: split-Q warps, FA2's step in registers
                e.warp_rows = warp_row_band(Br, k.warps);
                e.fa2_step_d = static_cast<int>(p.d);
            }
        }
        // fa2_bwd_tc's shape (tile_rules::kFa2BwdTcBr x kFa2BwdTcBc, 8 warps), which FlashAttention-2's own
        // backward also takes at d = 128: the backward step the probe times.
        if (k.name == "fa2_backward" && k.warps == 8 && Br == tile_rules::kFa2BwdTcBr && Bc == tile_rules::kFa2BwdTcBc)
            e.fa2_bwd_step_d = static_cast<int>(p.d);
        if (k.name == "flash_decoding_split" && e.warp_rows > 0)  // rows per row head: a packed group, or N
            e.key_groups = tile_rules::flash_decoding_key_groups(p.N == 1 && p.grouped() ? p.group_size() : p.N);
        if (k.name == "fa2_forward" || k.name == "tiled_two_pass")
            e.lanes = flash_lanes(p, std::int64_t{1} << 30, scores == Space::Shared);
        else if (k.name == "fa1_forward")
            e.lanes = flash_lanes(p, /*max_rows_per_lane=*/4, false);
        else if (k.name.rfind("gemm_", 0) == 0)  // standard attention's GEMMs, forward and backward
            e = gemm(matmul);
        return e;
    };
}

}  // namespace fasim
