// Sub-steps the fused algorithms share. Each algorithm keeps its own loop nest;
// only these pieces are common to them.
#pragma once

#include <functional>
#include <string>

#include "algorithms/algorithm.hpp"
#include "algorithms/causal.hpp"

namespace fasim {

// The tile mapping of the algorithms that give each Q tile its own block (tiled, FA2): FlashAttention-2's
// forward defaults (d <= 64: 128 x 128; d <= 128: 128 x 64; larger d: 64 x 64), halved until the Q,
// K and V tiles (and S with its row statistics, where the kernel stages S in shared memory) fit.
std::int64_t q_tile_smem_bytes(const AttentionProblem& p, std::int64_t Br, std::int64_t Bc, const TileConfig& cfg);
TileConfig choose_q_tiles(std::string_view algo_id, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req);
// " = B·H × ⌈N/Br⌉ = 16 × 32": one block per Q tile of every batch·head.
std::string q_tile_grid_text(const AttentionProblem& p, const TileConfig& t);

// A kernel of one block per tile of a sequence (a Q tile, or a K/V tile of the backward), whose block i loops
// over tiles of the other sequence in runs of alike iterations bounded by loop_shape(i) (LoopShape). Without
// the mask its blocks are alike but the last (the ragged tile). With the causal mask they are staircases
// (KernelDesc::runs_grow): each bound moves by the same step from block to block. A run is cut wherever a
// step changes (blocks that see no tile yet or every tile, the diagonal reaching the first tile or the
// ragged last one; Q tiles of half a K/V tile step only every second block), and the first and the last
// block stand apart (the ragged tile: launched last, or first by a kernel that launches the heaviest first).
inline KernelDesc tile_grid(KernelDesc k, std::int64_t tiles, bool causal, const std::function<LoopShape(std::int64_t)>& loop_shape) {
    k.blocks_per_head = tiles;
    k.runs_grow = causal;
    std::vector<std::int64_t> cuts{tiles - 1};
    if (causal) {
        cuts = staircase_cuts(0, tiles, loop_shape);
        cuts.insert(cuts.end(), {1, tiles - 1});
    }
    k.run_starts = run_starts(tiles, cuts);
    return k;
}

// A loop over [begin, end) whose iterations are staircases in units of `period` (Block::repeat_growing),
// cut where the bounds of the loops inside (shape_of(i): LoopShape) stop moving by the same steps.
template <class ShapeOf>
void for_each_staircase(Block& b, std::int64_t begin, std::int64_t end, std::int64_t period, ShapeOf&& shape_of,
                        const std::function<void(std::int64_t)>& body) {
    std::vector<std::int64_t> starts = staircase_cuts(begin, end, shape_of, period);
    starts.insert(starts.begin(), begin);
    for (std::size_t r = 0; r < starts.size(); ++r) {
        const std::int64_t stop = r + 1 < starts.size() ? starts[r + 1] : end;
        if (stop > starts[r]) b.repeat_growing(starts[r], stop - starts[r], period, body);
    }
}

// Q, K, V, O and LSE of a fused algorithm whose Q tiles have Br rows and K/V tiles Bc.
struct FusedTensors {
    GlobalTensor Q, K, V, O, LSE;
};

inline FusedTensors fused_tensors(Executor& x, const AttentionProblem& p, std::int64_t Br, std::int64_t Bc) {
    const std::int64_t BH = p.batch_heads(), e = p.elem_bytes();
    const std::int64_t BKV = p.batch_kv_heads();  // BH, or fewer with grouped-query attention
    return {x.declare({"Q", BH, p.N, p.d, e, Br, p.d}),
            x.declare({"K", BKV, p.Nk, p.d, e, Bc, p.d}),
            x.declare({"V", BKV, p.Nk, p.d, e, Bc, p.d}),
            x.declare({"O", BH, p.N, p.d, e, Br, p.d}),
            x.declare({"LSE", BH, 1, p.N, 4, 1, Br, true})};
}

// S_ij = Q_i·K_jᵀ for the tile whose top-left element is S[q0][k0], masked where it
// crosses the causal diagonal. `split` says how the warps divide the product; `space`
// where the tile lives (TileConfig::scores).
inline Tile score_tile(Block& b, const Tile& Qi, const Tile& Kj, std::int64_t q0, std::int64_t k0,
                       const AttentionProblem& p, Split split, Space space = Space::Registers) {
    Tile S = b.alloc(Qi.rows(), Kj.rows(), space, Fill::Zero, "S_ij");
    b.matmul(S, Qi, Kj, {.transpose_b = true, .split = split});
    if (tile_crosses_diagonal(q0, k0, Kj.rows(), p.N, p.Nk, p.causal)) b.mask(S, {q0, k0, p.N, p.Nk, p.causal});
    return S;
}

}  // namespace fasim
