// The tile grids the programs of one run share. Each program declares the tensors it reads on its own
// tiles, and the L2 model follows a tensor on one grid: the first program's. Where a later program's tiles
// divide the first one's (FlashAttention-2's backward reads Q in 64-row tiles that its forward wrote in
// 128-row ones on Hopper at d = 128), the finer grid serves both: two of the backward's loop items would
// otherwise touch one tile, and no loop over them could be carried over (every item played: minutes at
// N = 2^22 where the passes alone take milliseconds).
#pragma once

#include <utility>
#include <vector>

#include "algorithms/algorithm.hpp"

namespace fasim {

// The grids for Executor::use_grids: each tensor that a later program of `programs` accesses on tiles
// dividing the first program's, at the finer rows and columns. Runs the programs' declarations only.
std::vector<Executor::TensorGrid> shared_grids(const std::vector<std::pair<const Algorithm*, TileConfig>>& programs,
                                               const AttentionProblem& p);

}  // namespace fasim
