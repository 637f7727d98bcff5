// The tile grids the programs of one run share. Each program declares the tensors it reads on its own
// tiles, and the L2 model follows a tensor on one grid. On the first program's grid, a later program
// whose tiles do not line up with it would touch parts of tiles: the L2 model keeps a tile's residency
// whole, so the part one loop item reads would be a hit for the next item that reads the rest (FA1's
// backward read O, on the forward's 128-row tiles, from DRAM a third as often as dO, read alike), and two
// items touching one tile keep a loop from being carried over (every item played: FA1's forward and
// backward at d = 128 took 48 s at N = 2^20 where each pass alone takes milliseconds). So the grid is the
// finest both line up with: rows and columns the greatest common divisor of the programs' tiles
// (FlashAttention-2's backward at d = 128 on Hopper reads Q in 64-row tiles that its forward wrote in
// 128-row ones: 64; FA1's 163-key and 83-key K/V tiles on the A100: one row).
#pragma once

#include <utility>
#include <vector>

#include "algorithms/algorithm.hpp"

namespace fasim {

// The grids for Executor::use_grids: each tensor that programs of `programs` access on different tiles, at
// the greatest common divisor of their rows and of their columns. Runs the programs' declarations only.
std::vector<Executor::TensorGrid> shared_grids(const std::vector<std::pair<const Algorithm*, TileConfig>>& programs,
                                               const AttentionProblem& p);

}  // namespace fasim
